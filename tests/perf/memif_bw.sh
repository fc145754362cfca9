#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# tests/perf/memif_bw.sh: the bulk bandwidth of two viads joined by memif
# against raw memif frames, in alternating rounds (issue 27 part 2;
# docs/performance.md section 7.1). Each round runs, seconds apart, for
# each BUILD_DIR in turn (a change against its base):
#
#   via  vipl_bw -c / -s (VIPL, no MPI), Reliable Reception, messages of
#        SIZE bytes (1 MiB), --op OP (send), WINDOW (16, as MPI's stream)
#        outstanding, between two fresh viads joined by net_memif, both in
#        poll mode MODE (adaptive). The client's buffers are WINDOW x SIZE
#        and the server's twice that: above the last-level cache they come
#        from memory (tests/perf/memcpy_bw --cold), raw's frames never do
#   mpi  with -M: tests/mpi/mpi_pingpong's stream of SIZE messages (16 in
#        flight) between one rank on each viad (Open MPI, pml cm, mtl ofi,
#        provider via from the build's fabric/; the first build's
#        mpi_pingpong), ranks unbound as in tests/mpi/bench.sh (pinned
#        beside their viad's lcores the stream stalled); viad's default
#        MaxTransferSize (64 KiB): the rendezvous reads 64 KiB at a time
#   raw  dpdk-testpmd txonly -> rxonly over net_memif, two processes, frames
#        as long as viad's biggest (its MTU + the Ethernet header) unless
#        -f says otherwise: the port's own frame bandwidth
#
# and prints each round's MB/s (1e6 bytes/s) and ratios via/raw, viad's
# counters, then the medians of the rounds and of the per-round ratios
# (via/raw, and each build against the first). Asserts nothing (speed
# goals live in benchmarks).
#
#   memif_bw.sh [-r ROUNDS (5)] [-s SIZE (1M)] [-n ITERS (1000)] [-w WINDOW (16)]
#               [-o OP (send)] [-m MODE (adaptive)] [-u MTU (viad's default)]
#               [-f FRAME] [-c A,B] [-P PERF_SECONDS] [-M] BUILD_DIR...
#
# Placement (2 CPUs): viad-S's lcores and vipl_bw -s on CPU A, viad-C's
# lcores and vipl_bw -c on CPU B; the applications wait blocking (--wait
# block) so a CPU's poll lcore runs whenever its application waits. raw:
# the receiver on A, the sender on B. -P records `perf record -a -g` for
# that many seconds in the middle of the first via round into $PERF_OUT
# (default /tmp/memif_bw.perf.data).
set -uo pipefail
perf_out=${PERF_OUT:-/tmp/memif_bw.perf.data}
rounds=5 size=1M iters=1000 window=16 op=send mode=adaptive mtu= frame= cpus= perfs=0 mpi=0
while getopts r:s:n:w:o:m:u:f:c:P:M o; do
	case $o in
	r) rounds=$OPTARG ;;
	s) size=$OPTARG ;;
	n) iters=$OPTARG ;;
	w) window=$OPTARG ;;
	o) op=$OPTARG ;;
	m) mode=$OPTARG ;;
	u) mtu=$OPTARG ;;
	f) frame=$OPTARG ;;
	c) cpus=$OPTARG ;;
	P) perfs=$OPTARG ;;
	M) mpi=1 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-r R] [-s SIZE] [-n N] [-w W] [-o OP] [-m MODE] [-u MTU] [-f FRAME] [-c A,B] [-P S] [-M] BUILD_DIR..." >&2; exit 2; }
builds=()
for b in "$@"; do
	builds+=("$(cd "$b" && pwd)") || exit 2
done
[ "$(id -u)" = 0 ] || { echo "memif_bw.sh: viad needs root" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
. "$here/viad_lib.sh"
perf_setup memifbw "$cpus"
trap 'stop_all; rm -rf "$run" "/var/run/dpdk/${tag}S" "/var/run/dpdk/${tag}C"' EXIT
echo "CPUs A=$A B=$B; poll mode $mode; load $(cut -d' ' -f1-3 /proc/loadavg)"
frame=${frame:-$((${mtu:-1500} + 14))}

mac_s=02:00:00:00:0b:01 mac_c=02:00:00:00:0b:02
declare -A vpid
start_side() { # BUILD S|C ROLE MAC CPU [VIAD_ARGS...]
	local build=$1 side=$2 role=$3 mac=$4 cpu=$5 _
	shift 5
	"$build/daemon/viad" -s "$run/$side.sock" --set "viad.instance=$tag$side" \
		--set "viad.poll_mode=$mode" --set port.via0.glue=ethdev \
		--set "port.via0.devargs=net_memif0,role=$role,socket=$run/memif.sock,socket-abstract=no,mac=$mac" \
		${mtu:+--set "port.via0.mtu=$mtu"} "$@" \
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
	rm -f "$run/S.sock" "$run/C.sock"
}

start_pair() { # BUILD [VIAD_ARGS...]: its two viads, the memif link up
	local build=$1 _
	shift
	start_side "$build" S server "$mac_s" "$A" "$@"
	start_side "$build" C client "$mac_c" "$B" "$@"
	for _ in $(seq 50); do
		VIAD_SOCKET=$run/C.sock timeout 5 "$build/apps/vipl_info" via0 2>/dev/null | grep -q 'link up' && return
		sleep 0.2
	done
}

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TMPDIR=$run
mpi_round() { # BUILD: prints MB/s of mpi_pingpong's stream
	local build=$1 pp=${builds[0]}/tests/mpi/mpi_pingpong out bytes
	bytes=$(numfmt --from=iec "$size")
	start_pair "$build"
	out=$(FI_PROVIDER_PATH=$build/fabric LD_LIBRARY_PATH=$build/lib/viad timeout 60 \
		mpirun --allow-run-as-root --bind-to none --mca pml cm --mca mtl ofi \
		--mca mtl_ofi_provider_include via -x FI_PROVIDER_PATH -x LD_LIBRARY_PATH \
		-np 1 -x VIAD_SOCKET="$run/S.sock" "$pp" -s "$bytes" -n "$iters" : \
		-np 1 -x VIAD_SOCKET="$run/C.sock" "$pp" -s "$bytes" -n "$iters" \
		2>"$run/mpi.err") || tail -3 "$run/mpi.err" | sed 's/^/  mpirun: /' >&2
	stop_all
	grep -q '^size=' <<<"$out" || { echo "$out"; tail -3 "$run/mpi.err"; } | sed 's/^/  mpirun: /' >&2
	awk '/^size=/ { sub(/.*=/, "", $5); mb = $5 } END { print mb + 0 }' <<<"$out"
}

via_round() { # BUILD INDEX: prints MB/s; viad's counters of note to $run/counters
	local build=$1 srv out s perfpid=
	# messages of a MiB on a VI: viad's default MaxTransferSize is 64 KiB
	start_pair "$build" --set limits.max_transfer_size=2M
	VIAD_SOCKET=$run/S.sock timeout 120 taskset -c "$A" "$build/apps/vipl_bw" -s -r rr \
		--wait block --window "$window" >"$run/bw-server.log" 2>&1 &
	srv=$!
	sleep 0.3
	if [ "$perfs" != 0 ]; then
		(sleep 1; perf record -a -g -o "$perf_out" -- sleep "$perfs" >"$run/perf.log" 2>&1) &
		perfpid=$!
		perfs=0
	fi
	out=$(VIAD_SOCKET=$run/C.sock timeout 120 taskset -c "$B" "$build/apps/vipl_bw" -c "$mac_s" \
		-r rr --wait block --size "$size" -n "$iters" -w 10 --window "$window" --op "$op" \
		--no-check 2>"$run/bw-client.err")
	wait "$srv" $perfpid
	grep -q . "$run/bw-client.err" && sed 's/^/  vipl_bw -c: /' "$run/bw-client.err" | tail -3 >&2
	for s in S C; do
		VIAD_SOCKET=$run/$s.sock "${builds[0]}/tools/viactl/viactl" -i "$tag$s" counters 2>/dev/null |
			awk -v l="via[$2] viad-$s" '$1 ~ /retrans|dropped|corrupt|expir|zero_copy|frames_(tx|rx)$/ && $2 > 0 {
				printf "%s %s %s\n", l, $1, $2 }'
	done >>"$run/counters"
	stop_all
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

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }'; }
med() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print 0 }'; }
declare -A V P
declare -a W
nb=${#builds[@]}
for ((r = 1; r <= rounds; r++)); do
	for ((b = 0; b < nb; b++)); do
		V[$b,$r]=$(via_round "${builds[b]}" "$b")
		[ $mpi = 1 ] && P[$b,$r]=$(mpi_round "${builds[b]}")
	done
	W[r]=$(raw_round)
	line="round $r: raw memif $frame B frames ${W[r]} MB/s;"
	for ((b = 0; b < nb; b++)); do
		line+=" via[$b] $size $op ${V[$b,$r]} MB/s ($(ratio "${V[$b,$r]}" "${W[r]}")x raw)"
		[ $mpi = 1 ] && line+=" mpi[$b] ${P[$b,$r]} MB/s ($(ratio "${P[$b,$r]}" "${W[r]}")x raw)"
	done
	echo "$line"
done
echo "viad counters, last round:"
awk '{ k = $1 " " $2 " " $3; v[k] = $4 } END { for (k in v) print "  " k, v[k] }' "$run/counters" | sort
echo "median of $rounds rounds: raw $(for ((r = 1; r <= rounds; r++)); do echo "${W[r]}"; done | med) MB/s"
for ((b = 0; b < nb; b++)); do
	mv=$(for ((r = 1; r <= rounds; r++)); do echo "${V[$b,$r]}"; done | med)
	mr=$(for ((r = 1; r <= rounds; r++)); do ratio "${V[$b,$r]}" "${W[r]}"; echo; done | med)
	m0=$(for ((r = 1; r <= rounds; r++)); do ratio "${V[$b,$r]}" "${V[0,$r]}"; echo; done | med)
	echo "via[$b] (${builds[b]}): $mv MB/s; per round via/raw ${mr}x, via[$b]/via[0] ${m0}x"
	[ $mpi = 1 ] || continue
	mv=$(for ((r = 1; r <= rounds; r++)); do echo "${P[$b,$r]}"; done | med)
	mr=$(for ((r = 1; r <= rounds; r++)); do ratio "${P[$b,$r]}" "${W[r]}"; echo; done | med)
	m0=$(for ((r = 1; r <= rounds; r++)); do ratio "${P[$b,$r]}" "${P[0,$r]}"; echo; done | med)
	echo "mpi[$b]: $mv MB/s; per round mpi/raw ${mr}x, mpi[$b]/mpi[0] ${m0}x"
done
