#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# tests/perf/dp_walk.sh: the walk of a send through viad's files, counted.
# For each source tree named (default: this one) it builds viad with
# -finstrument-functions and the hooks of dp_walk_hook.c (SRC/build-walk/),
# runs vipl_pingpong --loopback on a Reliable Reception VI (default: 4 round
# trips of 64 KiB, no warm-up: 8 Sends) and records every call made under
# dp.c's vi_send. Of the turns of vi_send that frame a message (they call
# via_frame_send) it prints, per message and per file, the entries (calls
# into the file from a function of another file) and the returns (control
# back in the file from a call into another file, after which it calls into
# another file again: the walk went back up to it and down again; the
# unwinding of calls that are done is not counted), for the files of
# daemon/dp/ and for the other .c files (a header's inline function counts
# as its caller's; DPDK's libraries are not instrumented). Asserts nothing; needs root (viad) and the hugepages of
# setup-host.sh. It takes /tmp/via-suite.lock for the run (not the build),
# unless VIA_SUITE_LOCKED=1 says its caller holds it.
#
# With -v it also prints the calls between files of the first message's
# first turn, indented by depth.
#
#   dp_walk.sh [-v] [-n ROUND_TRIPS (4)] [-s SIZE (65536)] [-r LEVEL (rr)] [SRC_DIR...]
set -uo pipefail
trips=4 size=65536 level=rr verbose=0
while getopts vn:s:r: o; do
	case $o in
	v) verbose=1 ;;
	n) trips=$OPTARG ;;
	s) size=$OPTARG ;;
	r) level=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || set -- "$here/../.."
. "$here/viad_lib.sh"
perf_setup dpwalk ""

walk() { # SRC
	local src b root
	src=$(cd "$1" && pwd) || exit 2
	b=$src/build-walk
	cc -O2 -fPIC -c "$here/dp_walk_hook.c" -o "$run/hook.o" || exit 1
	if [ ! -f "$b/build.ninja" ]; then
		CC=gcc meson setup "$b" "$src" -Dbuildtype=debugoptimized -Dwerror=false \
			-Dc_args=-finstrument-functions -Dc_link_args="$run/hook.o -ldl" >"$run/setup.log" 2>&1 ||
			{ cat "$run/setup.log" >&2; exit 1; }
	fi
	# the hooks' object lives in $run: link it again from here
	cp "$run/hook.o" "$b/dp_walk_hook.o"
	meson configure "$b" -Dc_link_args="$b/dp_walk_hook.o -ldl" >/dev/null
	ninja -C "$b" daemon/viad apps/vipl_pingpong >"$run/ninja.log" 2>&1 || { tail -30 "$run/ninja.log" >&2; exit 1; }
	root=$(nm "$b/daemon/viad" | awk '$3 == "vi_send" { print $1 }')
	[ -n "$root" ] || { echo "$src: no vi_send in viad" >&2; exit 1; }
	rm -f "$run/trace"
	# the run only under the shared lock of the tests that start viad
	# (VIA_SUITE_LOCKED=1: the caller holds it)
	exec 9>/tmp/via-suite.lock
	[ "${VIA_SUITE_LOCKED:-0}" = 1 ] || flock 9
	VIA_WALK_ROOT=$root VIA_WALK_OUT=$run/trace perf_viad_start "$b"
	VIAD_SOCKET=$run/viad.sock timeout 60 taskset -c "$A" "$b/apps/vipl_pingpong" --loopback \
		-r "$level" --size "$size" -n "$trips" -w 0 >"$run/pp.log" 2>&1 ||
		{ cat "$run/pp.log" >&2; exit 1; }
	perf_viad_stop
	flock -u 9
	python3 - "$b/daemon/viad" "$run/trace" "$src" "$size" "$verbose" <<'PY'
import collections, os, subprocess, sys
exe, trace, src = sys.argv[1:4]
verbose = sys.argv[5] == '1'
events, invs = [], []
for line in open(trace):
    p = line.split()
    if p[0] == 'B':
        invs.append([])
    elif invs:
        invs[-1].append((p[0], int(p[1], 16)))
offs = sorted({o for inv in invs for _, o in inv})
out = subprocess.run(['addr2line', '-f', '-e', exe] + [hex(o) for o in offs],
                     capture_output=True, text=True, check=True).stdout.splitlines()
fn, fl = {}, {}
for i, o in enumerate(offs):
    fn[o] = out[2 * i]
    path = out[2 * i + 1].rsplit(':', 1)[0]
    rel = os.path.relpath(os.path.normpath(path), src) if path.startswith('/') else path
    fl[o] = rel if not rel.startswith('..') else os.path.basename(path)
ent, ret = collections.Counter(), collections.Counter()
msgs = turns = 0
for inv in invs:
    if not any(fn[o] == 'via_frame_send' for _, o in inv):
        continue
    turns += 1
    # a message's descriptor is fetched once
    msgs += sum(1 for k, o in inv if k == 'E' and fn[o] == 'via_desc_fetch')
    show = verbose and turns == 1
    stack, came_back = [], False
    for k, o in inv:
        top = stack[-1] if stack else None
        # a function of a header (an inline one: DPDK's, wire.h's) runs
        # as part of its caller: its file is the caller's
        f = fl[o] if not fl[o].endswith('.h') or top is None else top
        if k == 'E':
            stack.append(f)
        else:
            stack.pop()
        new = stack[-1] if stack else None
        if top is None or new is None or new == top:
            continue
        if show:
            print('  ' * len(stack) + (f'-> {new} {fn[o]}' if k == 'E' else f'<- {new}'))
        if k == 'E':
            ent[new] += 1
            if came_back:
                ret[top] += 1
        came_back = k == 'X'
msgs = max(msgs, 1)
print(f'{src}: {msgs} messages of {sys.argv[4]} bytes in {turns} turns of vi_send;'
      ' per message:')
dp = sorted(f for f in set(ent) | set(ret) if '/dp/' in f)
other = sorted(f for f in set(ent) | set(ret) if '/dp/' not in f)
print(f'  {"file":28s} {"entries":>8s} {"returns":>8s}')
for f in dp + other:
    print(f'  {f:28s} {ent[f] / msgs:8.1f} {ret[f] / msgs:8.1f}')
tot = lambda fs, c: sum(c[f] for f in fs) / msgs
print(f'  daemon/dp/: {len(dp)} files, {tot(dp, ent):.1f} entries, {tot(dp, ret):.1f} returns;'
      f' all: {len(dp) + len(other)} files, {tot(dp + other, ent):.1f} entries,'
      f' {tot(dp + other, ret):.1f} returns')
PY
}

for src in "$@"; do walk "$src"; done
