#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# tests/perf/icount.sh: instructions per message of the data path, counted
# by callgrind: figures that do not move with the machine's load or speed
# (issue 30), where the timings of a shared or slow machine do. For each
# BUILD_DIR, in turn:
#
#  viad  its viad runs under callgrind (busy polling, --no-huge) while the
#        program runs natively against it; the poll lcore's instructions
#        per message are the inclusive counts of its turns (vi_visit: a
#        descriptor taken, validated, framed, completed) and of its
#        deliveries (rx_deliver: a frame placed in a receive, completed),
#        over the frames delivered, and of the wait words of the
#        completions bumped at the end of an iteration; the rest of
#        via_dp_poll, per iteration, is the cost of looking for work.
#  lib   its viad runs natively and the program under callgrind: the
#        library's instructions per VipPostSend and VipPostRecv, and per
#        VipSendDone/VipRecvDone call (the calls that find nothing count:
#        how many a message takes depends on the speed of each side).
#
#   icount.sh [-n MSGS (20000)] [-s SIZE (64)] [-p 'PROGRAM ARGS'] [-c A,B] BUILD_DIR...
#
# PROGRAM ARGS default to vipl_pingpong --loopback; any option of the
# build's apps (--inline N, --mem heap, ...) goes there; a build whose
# program refuses them is reported so. Prints one table row per build and
# side. Needs valgrind. Asserts nothing.
set -uo pipefail
n=20000 size=64 prog='vipl_pingpong --loopback' cpus=
while getopts n:s:p:c: o; do
	case $o in
	n) n=$OPTARG ;;
	s) size=$OPTARG ;;
	p) prog=$OPTARG ;;
	c) cpus=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-n MSGS] [-s SIZE] [-p 'PROGRAM ARGS'] [-c A,B] BUILD_DIR..." >&2; exit 2; }
command -v valgrind >/dev/null || { echo "icount: valgrind is not installed" >&2; exit 2; }
. "$(dirname "$0")/viad_lib.sh"
perf_setup icount "$cpus"

# the program's own iteration option: round trips (pingpong) or messages (bw)
case $prog in
vipl_pingpong*) count="-n $((n / 2)) -w 100" ;;
*) count="-n $n -w 100" ;;
esac

viad_vg_start() { # BUILD: its viad under callgrind, output $run/viad.cg
	valgrind --tool=callgrind --callgrind-out-file="$run/viad.cg" "$1/daemon/viad" \
		-s "$run/viad.sock" --set "viad.instance=$tag" --set viad.poll_mode=busy \
		-- --lcores="0@$A,1@$B" --file-prefix="$tag" --no-pci --no-huge --no-shconf -m 512 \
		>"$run/viad.log" 2>&1 &
	viad_pid=$!
	for _ in $(seq 1200); do
		[ -S "$run/viad.sock" ] && return 0
		sleep 0.05
	done
	cat "$run/viad.log" >&2
	echo "icount: viad did not start under valgrind" >&2
	exit 1
}

# inclusive Ir and calls of each function NAME in a callgrind file
cg_calls() { # FILE NAME...
	python3 - "$@" <<'PY'
import re, subprocess, sys
path, names = sys.argv[1], sys.argv[2:]
# callgrind_annotate's caller tree: the callers' lines "Ir < file:fn (Nx)",
# then the function's own "Ir * file:fn"; parts of a function inlined
# elsewhere show under other files: the entry of the largest count is it
out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--tree=caller",
                      "--threshold=100", path], capture_output=True, text=True).stdout
best = {k: (0, 0) for k in names}
calls = 0
for line in out.splitlines():
    m = re.match(r"\s*[\d,]+ .*<\s+\S+ \(([\d,]+)x\)", line)
    if m:
        calls += int(m.group(1).replace(",", ""))
        continue
    m = re.match(r"\s*([\d,]+) .*\*\s+\S+:(\S+)", line)
    if m:
        fn, ir = m.group(2), int(m.group(1).replace(",", ""))
        if fn in best and ir > best[fn][0]:
            best[fn] = (ir, calls)
    if not line.strip() or m:
        calls = 0
for k in names:
    print(k, *best[k])
PY
}

printf '%-40s %-5s %s\n' build side "instructions (Ir)"
for b in "$@"; do
	b=$(cd "$b" && pwd) || exit 2
	# viad under callgrind, the program native
	viad_vg_start "$b"
	# shellcheck disable=SC2086
	if ! VIAD_SOCKET=$run/viad.sock timeout 600 taskset -c "$A" "$b/apps/"$prog --size "$size" \
		$count >"$run/prog.out" 2>&1; then
		printf '%-40s viad  the program failed: %s\n' "$b" "$(tail -1 "$run/prog.out")"
		perf_viad_stop
		continue
	fi
	perf_viad_stop
	read -r -a r < <(cg_calls "$run/viad.cg" vi_visit rx_deliver via_dp_complete_flush via_dp_poll |
		awk '{printf "%s %s ", $2, $3}')
	python3 - "$b" "${r[@]}" <<'PY'
import sys
b, (vis, vis_n, rx, rx_n, fl, fl_n, poll, poll_n) = sys.argv[1], map(int, sys.argv[2:10])
msgs = max(rx_n, 1)
# the wait words of an iteration's completions are bumped at its end
# (via_dp_complete_flush, absent from older builds): message work too
print(f"{b:40s} viad  per message {(vis + rx + fl) / msgs:7.0f} (turns {vis / msgs:.0f}, deliveries "
      f"{rx / msgs:.0f}, wait words {fl / msgs:.0f}; {vis_n / msgs:.2f} turns a message), "
      f"per iteration looking for work {(poll - vis - rx - fl) / max(poll_n, 1):.0f}; {msgs} frames")
PY
	rm -f "$run/viad.cg"
	# viad native, the program under callgrind
	perf_viad_start "$b"
	# shellcheck disable=SC2086
	VIAD_SOCKET=$run/viad.sock timeout 600 valgrind --tool=callgrind \
		--callgrind-out-file="$run/prog.cg" "$b/apps/"$prog --size "$size" $count \
		>"$run/prog.out" 2>&1
	perf_viad_stop
	read -r -a r < <(cg_calls "$run/prog.cg" VipPostSend VipPostRecv VipSendDone VipRecvDone | awk '{printf "%s %s ", $2, $3}')
	python3 - "$b" "$n" "${r[@]}" <<'PY'
import sys
b, n = sys.argv[1], int(sys.argv[2])
v = list(map(int, sys.argv[3:11]))
def per(i):
    return f"{v[i] / v[i + 1]:.0f}" if v[i + 1] else "-"
print(f"{b:40s} lib   VipPostSend {per(0)}, VipPostRecv {per(2)}, VipSendDone {per(4)} "
      f"({v[5] / n:.1f} calls a message), VipRecvDone {per(6)} ({v[7] / n:.1f} calls a message)")
PY
	rm -f "$run/prog.cg"
done
