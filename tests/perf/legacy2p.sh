#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# tests/perf/legacy2p.sh: a VIPL program of the 1990s against the project's
# own ping-pong, two processes on one viad, in alternating rounds (issue 29
# part 4). Each round runs, for each build, its own viad (backoff polling
# by default, as a shared machine runs it; control lcore on CPU A, poll
# lcore on CPU B) and, per size:
#   legacy     apps/vipl_legacy server and client, every message SIZE bytes
#              (a Send up to 4 KiB, an RDMA Write with immediate data above),
#              Reliable Reception, one CQ polled 1000 times then VipCQWait,
#              a reply per message: its mean round trip;
#   pingpong   vipl_pingpong -s / -c MAC with the same options (-r rr --mem
#              heap --cq --wait block): its mean and p50.
# The two programs of a pair are not pinned (the scheduler places them on
# the two CPUs, beside the poll lcore), as a user would run them; -c S,C
# pins the server to CPU S and the client to CPU C (a machine with cores
# to spare: each process and viad's lcore on a core of its own). With
# --perf, each client runs under perf stat: instructions (user and kernel)
# and context switches per round trip, which the machine's speed does not
# move. Prints every run, then per build and size the medians over the
# rounds and the median of the per-round ratio legacy / pingpong.
#
#   legacy2p.sh [-r ROUNDS (5)] [-n ITERS (2000)] [-s SIZES (64,4096)] [-p POLL_MODE (backoff)]
#               [-c SERVER_CPU,CLIENT_CPU] [--perf] BUILD_DIR...
#
# Asserts nothing. Load: the script prints the load average at start and
# end; compare builds only within one run.
set -uo pipefail
rounds=5 iters=2000 sizes=64,4096 perf=0 poll=backoff srv_pin=() cli_pin=()
while [ $# -gt 0 ]; do
	case $1 in
	-r) rounds=$2; shift ;;
	-n) iters=$2; shift ;;
	-s) sizes=$2; shift ;;
	-p) poll=$2; shift ;;
	-c) srv_pin=(taskset -c "${2%,*}") cli_pin=(taskset -c "${2#*,}"); shift ;;
	--perf) perf=1 ;;
	-*) echo "legacy2p.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
[ $# -ge 1 ] || { echo "usage: $0 [-r N] [-n N] [-s SIZES] [--perf] BUILD_DIR..." >&2; exit 2; }
builds=()
for b in "$@"; do builds+=("$(cd "$b" && pwd)") || exit 2; done
. "$(dirname "$0")/viad_lib.sh"
perf_setup legacy2p
mac=02:00:00:00:29:01
echo "legacy-host $mac" >"$run/hosts"
printf '[viad]\nhosts = %s\n\n[port via0]\nglue = loopback\nmac = %s\n' "$run/hosts" "$mac" \
	>"$run/viad.conf"

# measured CLIENT...: its stdout (120 s at most); with --perf, perf's counters in $run/perf
client() {
	if [ "$perf" = 1 ]; then
		perf stat -x, -e instructions:u,instructions:k,context-switches -o "$run/perf" \
			timeout 120 "$@"
	else
		timeout 120 "$@"
	fi
}

# "ipr csr": instructions (thousands) and context switches per round trip of the last client
per_rt() { # ROUND_TRIPS
	[ "$perf" = 1 ] || { echo "- -"; return; }
	python3 - "$run/perf" "$1" <<'EOF'
import sys
v = {}
for line in open(sys.argv[1]):
    f = line.strip().split(',')
    if len(f) > 2 and f[0].replace('.', '').isdigit():
        v[f[2].split(':')[0] + (':' + f[2].split(':')[1] if ':' in f[2] else '')] = float(f[0])
n = float(sys.argv[2])
ins = v.get('instructions:u', 0) + v.get('instructions:k', 0)
print('%.1f %.2f' % (ins / n / 1000, v.get('context-switches', 0) / n))
EOF
}

legacy() { # BUILD SIZE -> "mean_us ipr csr"
	local n=$((iters + 100)) out
	VIAD_SOCKET=$run/viad.sock timeout 120 "${srv_pin[@]}" "$1/apps/vipl_legacy" server -n "$n" -S "$2" \
		-D lg2p >"$run/lsrv.log" 2>&1 &
	out=$(VIAD_SOCKET=$run/viad.sock client "${cli_pin[@]}" "$1/apps/vipl_legacy" client \
		-H legacy-host -n "$n" -S "$2" -D lg2p 2>"$run/lcli.log")
	wait
	echo "$(sed -n 's/.*, \([0-9.]*\) us per round trip/\1/p' <<<"$out") $(per_rt "$n")"
}

pingpong() { # BUILD SIZE -> "mean_us p50_us ipr csr"
	local n=$((iters + 100)) opts=(-r rr --mem heap --cq --wait block --size "$2" -n "$iters"
		-w 100 -D pp2p) out
	VIAD_SOCKET=$run/viad.sock timeout 120 "${srv_pin[@]}" "$1/apps/vipl_pingpong" -s "${opts[@]}" \
		>"$run/psrv.log" 2>&1 &
	sleep 0.2
	out=$(VIAD_SOCKET=$run/viad.sock client "${cli_pin[@]}" "$1/apps/vipl_pingpong" -c "$mac" \
		"${opts[@]}" --json 2>"$run/pcli.log" | tail -1)
	wait
	echo "$(python3 -c 'import json,sys; r=json.loads(sys.argv[1])["rtt_us"]; print(r["mean"], r["p50"])' \
		"$out" 2>/dev/null || echo "- -") $(per_rt "$n")"
}

echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg); viad poll mode $poll"
table=$run/runs
IFS=, read -r -a size_list <<<"$sizes"
for ((r = 1; r <= rounds; r++)); do
	for bi in "${!builds[@]}"; do
		perf_viad_start "${builds[$bi]}" -c "$run/viad.conf" --set "viad.poll_mode=$poll"
		for s in "${size_list[@]}"; do
			l=$(legacy "${builds[$bi]}" "$s")
			p=$(pingpong "${builds[$bi]}" "$s")
			echo "$r $bi $s $l $p" >>"$table"
			echo "round $r build $bi size $s: legacy mean $l | pingpong mean,p50 $p"
		done
		perf_viad_stop
	done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$table" "${builds[@]}" <<'EOF'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
builds = sys.argv[2:]
def med(xs):
    xs = [float(x) for x in xs if x not in ('-', '')]
    return st.median(xs) if xs else float('nan')
print('build size  legacy_us  pingpong_us(mean p50)  legacy/pingpong  kinstr/rt(l p)  csw/rt(l p)')
for bi, b in enumerate(builds):
    for s in sorted({r[2] for r in rows}, key=int):
        rs = [r for r in rows if r[1] == str(bi) and r[2] == s]
        ratio = med([float(r[3]) / float(r[6]) for r in rs if r[3] != '-' and r[6] != '-'])
        print('%d %5s  %9.1f  %9.1f %6.1f  %15.2f  %6s %6s  %5s %5s   (%s)' % (
            bi, s, med([r[3] for r in rs]), med([r[6] for r in rs]), med([r[7] for r in rs]),
            ratio, med([r[4] for r in rs]), med([r[8] for r in rs]), med([r[5] for r in rs]),
            med([r[9] for r in rs]), b))
EOF
