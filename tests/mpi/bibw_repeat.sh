#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# tests/mpi/bibw_repeat.sh BUILD_DIR [RUNS]: issue 27's "20 runs of 20":
# mpi_bibw (64 messages each way at once, rendezvous by RDMA Read both
# ways, data checked) RUNS (20) times on one viad (loopback NIC, two ranks)
# and RUNS times between two viads joined by memif (one rank on each, up
# to 1 MiB), then viad's frames_retransmitted on each (must be 0: the
# ports lose nothing) and any "connection broken" of their logs. A soak,
# not a CI test (about 6 minutes on 2 CPUs). Needs root. Ends with
# "N passed, N failed" over the 2 x RUNS jobs.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
BUILD=$(cd "${1:-$HERE/../../build}" 2>/dev/null && pwd) || { echo "no build dir" >&2; exit 2; }
RUNS=${2:-20}
VIAD=$BUILD/daemon/viad
VIACTL=$BUILD/tools/viactl/viactl
[ "$(id -u)" = 0 ] || { echo "bibw_repeat.sh: viad needs root" >&2; exit 2; }
RUN=$(mktemp -d /tmp/via-bibw.XXXXXX) || exit 2
TAG=bibw$$
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; wait; rm -rf "$RUN"' EXIT

memif_confs "$RUN"
printf 'fabhost-a %s\nfabhost-b %s\n' "$MEMIF_MAC_A" "$MEMIF_MAC_B" >"$RUN/hosts"
export FI_PROVIDER_PATH=$BUILD/fabric FI_PROVIDER=via
export LD_LIBRARY_PATH=$BUILD/lib/viad${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TMPDIR=$RUN

# viad NAME [ARGS...]: its own socket and instance; A (the memif server) first
viad() {
	local i
	"$VIAD" -s "$RUN/$1.sock" --set "viad.instance=$TAG-$1" --set viad.poll_mode=backoff \
		--set viad.hosts="$RUN/hosts" "${@:2}" >"$RUN/viad-$1.log" 2>&1 </dev/null &
	PIDS+=($!)
	for ((i = 0; i < 400; i++)); do
		[ -S "$RUN/$1.sock" ] && return 0
		sleep 0.05
	done
	echo "viad $1 did not start:"; cat "$RUN/viad-$1.log"; exit 1
}
viad one
viad A -c "$RUN/A.conf"
viad B -c "$RUN/B.conf"
sleep 3          # the memif link comes up

MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none --mca pml cm --mca mtl ofi
	--mca mtl_ofi_provider_include via -x FI_PROVIDER_PATH -x FI_PROVIDER -x LD_LIBRARY_PATH)
retransmitted() {
	"$VIACTL" -i "$TAG-$1" counters | awk '$1 == "frames_retransmitted" { print $2 }'
}
passed=0 failed=0
for where in one memif; do
	ok=0
	for ((i = 1; i <= RUNS; i++)); do
		if [ $where = one ]; then
			job=("${MPIRUN[@]}" -x VIAD_SOCKET="$RUN/one.sock" -np 2 "$BUILD/tests/mpi/mpi_bibw" -n 2)
		else
			job=("${MPIRUN[@]}" -np 1 -x VIAD_SOCKET="$RUN/A.sock" "$BUILD/tests/mpi/mpi_bibw"
			     -n 1 -M 1048576 : -np 1 -x VIAD_SOCKET="$RUN/B.sock"
			     "$BUILD/tests/mpi/mpi_bibw" -n 1 -M 1048576)
		fi
		if timeout -k 10 180 "${job[@]}" >"$RUN/$where-$i.log" 2>&1; then
			ok=$((ok + 1))
		else
			echo "$where run $i failed:"; tail -n 20 "$RUN/$where-$i.log"
		fi
	done
	echo "# RESULT bibw $where: $ok of $RUNS passed"
	passed=$((passed + ok)) failed=$((failed + RUNS - ok))
done
for v in one A B; do
	n=$(retransmitted $v)
	echo "# RESULT bibw viad $v frames_retransmitted=$n"
	[ "$n" = 0 ] || failed=$((failed + 1))
done
if grep -h "connection broken" "$RUN"/viad-*.log; then failed=$((failed + 1)); fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
