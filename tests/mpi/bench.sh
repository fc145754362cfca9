#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# tests/mpi/bench.sh BUILD_DIR [ROUNDS]: MPI latency and bandwidth over the
# libfabric provider "via" against the kernel's TCP, in one run (issue 17;
# docs/performance.md, section "MPI over VIA-DPDK"):
#
#   via      Open MPI pml cm, mtl ofi, provider via, one viad (loopback NIC)
#   tcp-btl  Open MPI pml ob1, btl tcp,self over 127.0.0.1
#   ofi-tcp  Open MPI pml cm, mtl ofi, libfabric's tcp provider (127.0.0.1)
#   vipl     apps/vipl_pingpong on the same viad: --loopback (one thread
#            drives both VIs) and two processes (-s / -c), Reliable
#            Reception, RTT / 2
#
# mpi_pingpong gives the median half round trip at 8 B and 64 KiB and the
# streaming bandwidth at 1 MiB (16 messages in flight). Every configuration
# runs ROUNDS times (3), interleaved, and the median of the rounds is
# reported, with the ratios tcp-btl/via and ofi-tcp/via (above 1: via is
# faster) and via/vipl (the provider's and Open MPI's cost over raw VIPL).
# Two ranks and viad's poll lcore share the machine's CPUs: on a 2-CPU
# machine that is oversubscribed, as the report says. Needs root.
#
# Then the parts of issue 27 (BENCH_PARTS, default "steady bibw memif"):
#
#   steady  8 B latency, STEADY_RUNS (10) runs each, interleaved: via with
#           the ranks kept off viad's poll lcore (README: --cpu-set
#           $(viactl cpus --others) --bind-to core), via with --bind-to none,
#           tcp-btl; best, worst, worst/best, and via/tcp-btl per run
#   bibw    mpi_bibw (64 messages each way at once) 128 KiB .. 4 MiB, via
#           and tcp-btl, and viad's frames_retransmitted over it
#   memif   two viads joined by memif, each on a CPU of its own: mpi_pingpong
#           stream bandwidth at 128 KiB and 1 MiB (one rank on each), and the
#           raw memif bandwidth of the same frames (dpdk-testpmd txonly to
#           rxonly, two processes, one per CPU) in the same run; the ratio
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
BUILD=$(cd "${1:-$HERE/../../build}" 2>/dev/null && pwd) || { echo "no build dir" >&2; exit 2; }
ROUNDS=${2:-3}
RUN=$(mktemp -d /tmp/via-fabric-bench.XXXXXX) || exit 2
SOCK=$RUN/viad.sock
VIAD_PID=

cleanup() {
	if [ -n "$VIAD_PID" ] && kill -0 "$VIAD_PID" 2>/dev/null; then
		kill -TERM "$VIAD_PID"
		wait "$VIAD_PID" 2>/dev/null
	fi
	rm -rf "$RUN"
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || { echo "bench.sh: viad needs root" >&2; exit 2; }
"$BUILD/daemon/viad" -s "$SOCK" --set "viad.instance=fabbench$$" --set viad.poll_mode=backoff \
	>"$RUN/viad.log" 2>&1 </dev/null &
VIAD_PID=$!
for ((i = 0; i < 400; i++)); do
	[ -S "$SOCK" ] && break
	sleep 0.05
done
[ -S "$SOCK" ] || { cat "$RUN/viad.log"; exit 1; }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TMPDIR=$RUN
export VIAD_SOCKET=$SOCK FI_PROVIDER_PATH=$BUILD/fabric
export LD_LIBRARY_PATH=$BUILD/lib/viad${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PP=$BUILD/tests/mpi/mpi_pingpong
MPIRUN=(timeout 300 mpirun --allow-run-as-root -np 2 --bind-to none
	-x VIAD_SOCKET -x FI_PROVIDER_PATH -x LD_LIBRARY_PATH)

# mpi CONFIG ARGS...: "lat8 lat64k bw1m" from mpi_pingpong
mpi() {
	local out
	out=$("${MPIRUN[@]}" "$@" "$PP" -s 8 -s 65536 -s 1048576 2>"$RUN/err.log") ||
		{ echo "bench.sh: mpirun $* failed:" >&2; tail -5 "$RUN/err.log" >&2; echo "- - -"; return; }
	awk '/^size=8 /{l8=$3} /^size=65536 /{l64=$3} /^size=1048576 /{bw=$5}
	     END {sub(/.*=/, "", l8); sub(/.*=/, "", l64); sub(/.*=/, "", bw); print l8, l64, bw}' <<<"$out"
}

# vipl ARGS...: "lat8 lat64k" (p50 RTT / 2) from vipl_pingpong
vipl() {
	"$BUILD/apps/vipl_pingpong" -r rr --size 8,64K -n 5000 "$@" 2>/dev/null |
		awk '$1 == 8 {l8 = $4 / 2} $1 == 65536 {l64 = $4 / 2} END {printf "%.2f %.2f -\n", l8, l64}'
}

vipl_2proc() {
	local spid res
	timeout 120 "$BUILD/apps/vipl_pingpong" -s -r rr -D fabbench >/dev/null 2>&1 &
	spid=$!
	sleep 0.5
	res=$(vipl -c 02:00:00:00:00:00 -D fabbench)
	wait "$spid"
	echo "$res"
}

CONFIGS=(via tcp-btl ofi-tcp vipl-loopback vipl-2proc)
declare -A R
for ((r = 1; r <= ROUNDS; r++)); do
	R[via,$r]=$(mpi --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include via -x FI_PROVIDER=via)
	R[tcp-btl,$r]=$(mpi --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo)
	R[ofi-tcp,$r]=$(mpi --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include tcp \
		-x FI_PROVIDER=tcp -x FI_TCP_IFACE=lo)
	R[vipl-loopback,$r]=$(vipl --loopback)
	R[vipl-2proc,$r]=$(vipl_2proc)
	echo "round $r: $(for c in "${CONFIGS[@]}"; do printf '%s [%s]  ' "$c" "${R[$c,$r]}"; done)"
done

# the median over the rounds of field F of config C
median() {
	local c=$1 f=$2 r
	for ((r = 1; r <= ROUNDS; r++)); do
		echo "${R[$c,$r]}" | awk -v f="$f" '{print $f}'
	done | grep -v '^-$' | sort -g | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]; else print "-"}'
}

echo
echo "machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-14s %12s %12s %14s\n' config "8 B lat us" "64 KiB lat us" "1 MiB bw MB/s"
declare -A M
for c in "${CONFIGS[@]}"; do
	for f in 1 2 3; do M[$c,$f]=$(median "$c" $f); done
	printf '%-14s %12s %12s %14s\n' "$c" "${M[$c,1]}" "${M[$c,2]}" "${M[$c,3]}"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else printf "-" }'; }
echo
echo "latency, tcp-btl / via:  8 B $(ratio "${M[tcp-btl,1]}" "${M[via,1]}")x   64 KiB $(ratio "${M[tcp-btl,2]}" "${M[via,2]}")x"
echo "latency, ofi-tcp / via:  8 B $(ratio "${M[ofi-tcp,1]}" "${M[via,1]}")x   64 KiB $(ratio "${M[ofi-tcp,2]}" "${M[via,2]}")x"
echo "bandwidth, via / tcp-btl: $(ratio "${M[via,3]}" "${M[tcp-btl,3]}")x   via / ofi-tcp: $(ratio "${M[via,3]}" "${M[ofi-tcp,3]}")x"
echo "latency, via / vipl-2proc:    8 B $(ratio "${M[via,1]}" "${M[vipl-2proc,1]}")x   64 KiB $(ratio "${M[via,2]}" "${M[vipl-2proc,2]}")x"
echo "latency, via / vipl-loopback: 8 B $(ratio "${M[via,1]}" "${M[vipl-loopback,1]}")x   64 KiB $(ratio "${M[via,2]}" "${M[vipl-loopback,2]}")x"

# ---- issue 27 ---------------------------------------------------------------------

# raw_memif FRAME_BYTES CPU_RX CPU_TX: MB/s of frames of that size from one
# dpdk-testpmd (txonly) to another (rxonly) over memif, each on its CPU:
# the receiver's byte count over 5 s, its counters cleared after 1 s
raw_memif() {
	local len=$1 crx=$2 ctx=$3 sock=$RUN/raw.sock bytes
	command -v dpdk-testpmd >/dev/null || return
	rm -f "$sock"
	( sleep 2; echo "clear port stats all"; sleep 5; echo "show port stats all"; sleep 0.5
	  echo quit ) | timeout 30 dpdk-testpmd --lcores="0@$crx,1@$crx" --file-prefix "rawrx$$" \
		--in-memory --no-pci --vdev "net_memif0,role=server,socket=$sock,socket-abstract=no" \
		-- -i --forward-mode=rxonly --auto-start >"$RUN/raw-rx.log" 2>&1 &
	sleep 1
	( sleep 8; echo quit ) | timeout 30 dpdk-testpmd --lcores="0@$ctx,1@$ctx" --file-prefix "rawtx$$" \
		--in-memory --no-pci --vdev "net_memif0,role=client,socket=$sock,socket-abstract=no" \
		-- -i --forward-mode=txonly --txpkts="$len" --auto-start >"$RUN/raw-tx.log" 2>&1
	wait
	bytes=$(awk '/RX-packets:/ && /RX-bytes:/ { b = $NF } END { print b + 0 }' "$RUN/raw-rx.log")
	awk -v b="$bytes" 'BEGIN { if (b > 0) printf "%.0f", b / 5 / 1e6 }'
}
PARTS=${BENCH_PARTS:-steady bibw memif}
VIACTL=$BUILD/tools/viactl/viactl
INST=fabbench$$

# steady: 8 B latency run after run
if [[ " $PARTS " == *" steady "* ]]; then
	others=$("$VIACTL" -i "$INST" cpus --others)
	lat8() {
		"${MPIRUN[@]}" "$@" "$PP" -s 8 -n 10000 2>/dev/null |
			awk '/^size=8 / { sub(/.*=/, "", $3); print $3 }'
	}
	RUNS=${STEADY_RUNS:-10}
	declare -A L
	for ((r = 1; r <= RUNS; r++)); do
		L[kept,$r]=$(lat8 --cpu-set "$others" --bind-to core --mca pml cm --mca mtl ofi \
			--mca mtl_ofi_provider_include via -x FI_PROVIDER=via)
		L[none,$r]=$(lat8 --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include via \
			-x FI_PROVIDER=via)
		L[tcp,$r]=$(lat8 --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo)
		echo "steady run $r: via, ranks on CPU $others: ${L[kept,$r]} us; via, --bind-to none: ${L[none,$r]} us; tcp-btl: ${L[tcp,$r]} us"
	done
	for c in kept none tcp; do
		for ((r = 1; r <= RUNS; r++)); do echo "${L[$c,$r]:--}"; done | grep -v '^-$' |
			sort -g | awk -v c="$c" '{ v[NR] = $1 } END {
				if (NR) printf "steady %-5s best %.2f us  median %.2f  worst %.2f  worst/best %.2fx (%d runs)\n",
					c, v[1], v[int((NR + 1) / 2)], v[NR], v[NR] / v[1], NR }'
	done
	for ((r = 1; r <= RUNS; r++)); do
		echo "${L[kept,$r]:-0} ${L[tcp,$r]:-0}"
	done | awk '$1 > 0 && $2 > 0 { q = $1 / $2; if (q > w) w = q; s += q; n++ }
		END { if (n) printf "steady via (kept) / tcp-btl per run: mean %.2fx, worst %.2fx\n", s / n, w }'
fi

# bibw: both directions at once
if [[ " $PARTS " == *" bibw "* ]]; then
	rt0=$("$VIACTL" -i "$INST" counters | awk '$1 == "frames_retransmitted" { print $2 }')
	for path in via tcp; do
		if [ $path = via ]; then
			args=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include via -x FI_PROVIDER=via)
		else
			args=(--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo)
		fi
		"${MPIRUN[@]}" "${args[@]}" "$BUILD/tests/mpi/mpi_bibw" -n 3 2>"$RUN/err.log" |
			sed "s/^/bibw $path: /" || tail -5 "$RUN/err.log"
	done
	rt1=$("$VIACTL" -i "$INST" counters | awk '$1 == "frames_retransmitted" { print $2 }')
	echo "bibw: viad retransmitted $((rt1 - rt0)) frames over the via runs"
fi

# memif: two viads, each on a CPU of its own, against raw memif frames
if [[ " $PARTS " == *" memif "* ]]; then
	ncpu=$(nproc)
	cA=0
	cB=$((ncpu - 1))
	memif_confs "$RUN"
	declare -A MPID
	for side in A B; do
		c=$cA
		[ $side = B ] && c=$cB
		taskset -c "$c" "$BUILD/daemon/viad" -s "$RUN/$side.sock" -c "$RUN/$side.conf" \
			--set "viad.instance=fabbench$$$side" --set viad.poll_mode=backoff \
			>"$RUN/viad-$side.log" 2>&1 </dev/null &
		MPID[$side]=$!
		for ((i = 0; i < 400; i++)); do [ -S "$RUN/$side.sock" ] && break; sleep 0.05; done
	done
	sleep 1
	for ((r = 1; r <= ROUNDS; r++)); do
		out=$(timeout 300 mpirun --allow-run-as-root --bind-to none --mca pml cm --mca mtl ofi \
			--mca mtl_ofi_provider_include via -x FI_PROVIDER_PATH -x LD_LIBRARY_PATH \
			-np 1 -x VIAD_SOCKET="$RUN/A.sock" "$PP" -s 131072 -s 1048576 -n 300 : \
			-np 1 -x VIAD_SOCKET="$RUN/B.sock" "$PP" -s 131072 -s 1048576 -n 300 2>"$RUN/err.log")
		v128=$(awk '/^size=131072 / { sub(/.*=/, "", $5); print $5 }' <<<"$out")
		v1m=$(awk '/^size=1048576 / { sub(/.*=/, "", $5); print $5 }' <<<"$out")
		raw=$(raw_memif 1514 "$cA" "$cB")
		echo "memif round $r: via 128 KiB ${v128:-?} MB/s, 1 MiB ${v1m:-?} MB/s; raw memif 1514 B frames ${raw:-?} MB/s; via 1 MiB / raw $(ratio "${v1m:-0}" "${raw:-0}")x"
	done
	for side in A B; do
		kill -TERM "${MPID[$side]}" 2>/dev/null
		wait "${MPID[$side]}" 2>/dev/null
	done
fi
