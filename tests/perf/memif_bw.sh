#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# tests/perf/memif_bw.sh: the bulk bandwidth of two viads joined by memif
# against raw memif frames, in alternating rounds (issue 27 part 2;
# docs/performance.md section 7.2). Each round runs, seconds apart:
#
#   via  vipl_bw -c / -s (VIPL, no MPI), Reliable Reception, messages of
#        SIZE bytes (1 MiB), --op OP (send), between two viads joined by
#        net_memif, both in poll mode MODE (adaptive)
#   raw  dpdk-testpmd txonly -> rxonly over net_memif, two processes, frames
#        as long as viad's biggest (its MTU + the Ethernet header) unless
#        -f says otherwise: the port's own frame bandwidth
#
# and prints each round's MB/s (1e6 bytes/s) and ratio via/raw, then the
# medians. Asserts nothing (speed goals live in benchmarks).
#
#   memif_bw.sh [-r ROUNDS (5)] [-s SIZE (1M)] [-n ITERS (1000)] [-o OP (send)]
#               [-m MODE (adaptive)] [-u MTU (viad's default)] [-f FRAME]
#               [-c A,B] [-P PERF_SECONDS] BUILD_DIR
#
# Placement (2 CPUs): viad-S's lcores and vipl_bw -s on CPU A, viad-C's
# lcores and vipl_bw -c on CPU B; the applications wait blocking (--wait
# block) so a CPU's poll lcore runs whenever its application waits. raw:
# the receiver on A, the sender on B. -P records `perf record -a -g` for
# that many seconds in the middle of the first via round ($run is printed,
# perf.data stays there).
set -uo pipefail
rounds=5 size=1M iters=1000 op=send mode=adaptive mtu= frame= cpus= perfs=0
while getopts r:s:n:o:m:u:f:c:P: o; do
	case $o in
	r) rounds=$OPTARG ;;
	s) size=$OPTARG ;;
	n) iters=$OPTARG ;;
	o) op=$OPTARG ;;
	m) mode=$OPTARG ;;
	u) mtu=$OPTARG ;;
	f) frame=$OPTARG ;;
	c) cpus=$OPTARG ;;
	P) perfs=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { echo "usage: $0 [-r R] [-s SIZE] [-n N] [-o OP] [-m MODE] [-u MTU] [-f FRAME] [-c A,B] [-P S] BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd) || exit 2
[ "$(id -u)" = 0 ] || { echo "memif_bw.sh: viad needs root" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
. "$here/viad_lib.sh"
perf_setup memifbw "$cpus"
trap 'stop_all; rm -rf "/var/run/dpdk/${tag}S" "/var/run/dpdk/${tag}C"' EXIT
echo "run dir $run; CPUs A=$A B=$B; poll mode $mode; $(cut -d' ' -f1-3 /proc/loadavg) load"

mac_s=02:00:00:00:0b:01 mac_c=02:00:00:00:0b:02
declare -A vpid
start_side() { # S|C ROLE MAC CPU
	local side=$1 role=$2 mac=$3 cpu=$4 _
	"$build/daemon/viad" -s "$run/$side.sock" --set "viad.instance=$tag$side" \
		--set "viad.poll_mode=$mode" --set port.via0.glue=ethdev \
		--set "port.via0.devargs=net_memif0,role=$role,socket=$run/memif.sock,socket-abstract=no,mac=$mac" \
		${mtu:+--set "port.via0.mtu=$mtu"} --set limits.max_transfer_size=2M \
		-- --lcores="0@$cpu,1@$cpu" --file-prefix="$tag$side" --in-memory --no-pci \
		>"$run/viad-$side.log" 2>&1 &
	vpid[$side]=$!
	for _ in $(seq 200); do
		[ -S "$run/$side.sock" ] && return 0
		sleep 0.05
	done
	cat "$run/viad-$side.log" >&2
	echo "viad-$side did not start" >&2
	exit 1
}
stop_all() {
	local s
	for s in "${!vpid[@]}"; do
		kill -TERM "${vpid[$s]}" 2>/dev/null && wait "${vpid[$s]}" 2>/dev/null
	done
	vpid=()
}
start_side S server "$mac_s" "$A"
start_side C client "$mac_c" "$B"
for _ in $(seq 50); do
	VIAD_SOCKET=$run/C.sock timeout 5 "$build/apps/vipl_info" via0 2>/dev/null | grep -q 'link up' && break
	sleep 0.2
done
vmtu=$(VIAD_SOCKET=$run/C.sock "$build/tools/viactl/viactl" -i "${tag}C" ports 2>/dev/null |
	awk '$1 == "via0" { for (i = 1; i < NF; i++) if ($i == "mtu") print $(i + 1) }')
vmtu=${vmtu:-${mtu:-1500}}
frame=${frame:-$((vmtu + 14))}
echo "viad MTU $vmtu; raw frames $frame B"

via_round() { # prints MB/s
	local srv out
	VIAD_SOCKET=$run/S.sock timeout 120 taskset -c "$A" "$build/apps/vipl_bw" -s -r rr \
		--wait block >"$run/bw-server.log" 2>&1 &
	srv=$!
	sleep 0.3
	if [ "$perfs" != 0 ]; then
		(sleep 1; perf record -a -g -o "$run/perf.data" -- sleep "$perfs" >"$run/perf.log" 2>&1) &
		perfs=0
	fi
	out=$(VIAD_SOCKET=$run/C.sock timeout 120 taskset -c "$B" "$build/apps/vipl_bw" -c "$mac_s" \
		-r rr --wait block --size "$size" -n "$iters" -w 10 --op "$op" --no-check 2>"$run/bw-client.err")
	wait "$srv"
	wait
	grep -q . "$run/bw-client.err" && sed 's/^/  vipl_bw -c: /' "$run/bw-client.err" | tail -3 >&2
	awk '$1 ~ /^[0-9]+$/ && NF >= 7 { mb = $5 } END { print mb + 0 }' <<<"$out"
}

raw_round() { # prints MB/s: the receiver's bytes over 4 s, counters cleared after 1 s
	local sock=$run/raw.sock bytes
	rm -f "$sock"
	( sleep 2; echo "clear port stats all"; sleep 4; echo "show port stats all"; sleep 0.5
	  echo quit ) | timeout 30 dpdk-testpmd --lcores="0@$A,1@$A" --file-prefix "${tag}rx" \
		--in-memory --no-pci --vdev "net_memif1,role=server,socket=$sock,socket-abstract=no" \
		-- -i --forward-mode=rxonly --max-pkt-len="$((frame + 4))" --auto-start >"$run/raw-rx.log" 2>&1 &
	sleep 1
	( sleep 7; echo quit ) | timeout 30 dpdk-testpmd --lcores="0@$B,1@$B" --file-prefix "${tag}tx" \
		--in-memory --no-pci --vdev "net_memif1,role=client,socket=$sock,socket-abstract=no" \
		-- -i --forward-mode=txonly --max-pkt-len="$((frame + 4))" --txpkts="$frame" \
		--auto-start >"$run/raw-tx.log" 2>&1
	wait
	bytes=$(awk '/RX-packets:/ && /RX-bytes:/ { b = $NF } END { print b + 0 }' "$run/raw-rx.log")
	awk -v b="$bytes" 'BEGIN { printf "%.0f", b / 4 / 1e6 }'
}

declare -a V W
for ((r = 1; r <= rounds; r++)); do
	V[r]=$(via_round)
	W[r]=$(raw_round)
	echo "round $r: via $size $op ${V[r]} MB/s; raw memif $frame B frames ${W[r]} MB/s; via/raw $(awk -v a="${V[r]}" -v b="${W[r]}" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }')x"
done
for s in S C; do
	VIAD_SOCKET=$run/$s.sock "$build/tools/viactl/viactl" -i "$tag$s" counters 2>/dev/null |
		awk -v s="$s" '$1 ~ /retrans|dropped|timeout|zero_copy|frames_(tx|rx)$/ && $2 > 0 { printf "viad-%s %s %s\n", s, $1, $2 }'
done
med() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print 0 }'; }
mv=$(printf '%s\n' "${V[@]}" | med)
mw=$(printf '%s\n' "${W[@]}" | med)
mr=$(for ((r = 1; r <= rounds; r++)); do awk -v a="${V[r]}" -v b="${W[r]}" 'BEGIN { if (b > 0) printf "%.4f\n", a / b }'; done | med)
echo "median of $rounds rounds: via $mv MB/s, raw $mw MB/s; median per-round via/raw ${mr}x"
