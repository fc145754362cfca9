#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Runs the three topologies, each under a time limit, and prints PASS topoN
# or FAIL topoN for each. Each runs topo_check's send/receive check and its
# RDMA Write/Read check (--rdma), with provider and heap memory; topo1 and
# topo2 also run apps/vipl_legacy, server and client (see lib.sh):
#   topo1  one viad, loopback port, topo_check --loopback      (loopback.sh)
#   topo2  two viads joined by net_memif                       (memif.sh)
#   topo3  two viads in two netns joined by a veth, af_xdp     (afxdp.sh)
#          (af_packet where af_xdp cannot start)
#
#   run-all.sh [BUILD_DIR] [TOPO_CHECK]
#
# Exit status: 0 if all passed, 77 (skip) when not root. Environment: TOPO_TIMEOUT (seconds per
# topology, default 300), TOPO_ONLY (e.g. "1 3"), and those of lib.sh
# (TOPO_ROUNDS, TOPO_SEED, TOPO_MEM, TOPO_MODES, TOPO_RDMA_ROUNDS, TOPO_KEEP) and afxdp.sh
# (TOPO_AFXDP_GLUE).
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-$HERE/../../build}
CHECK=${2:-}
LIMIT=${TOPO_TIMEOUT:-300}
# one seed for all, printed, so that a failure can be replayed
: "${TOPO_SEED:=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}"
export TOPO_SEED
echo "run-all: seed $TOPO_SEED (TOPO_SEED=$TOPO_SEED replays it), limit ${LIMIT} s per topology"

if [ "$(id -u)" != 0 ]; then
	echo "run-all: SKIP: the topologies need root (namespaces, veths, hugepages)"
	exit 77         # meson test: skipped
fi

failed=0
results=()
for n in 1 2 3; do
	case " ${TOPO_ONLY:-1 2 3} " in *" $n "*) ;; *) continue ;; esac
	case $n in
	1) script=loopback.sh ;;
	2) script=memif.sh ;;
	3) script=afxdp.sh ;;
	esac
	echo "==== topo$n: $script ===="
	t0=$(date +%s%N)
	# its own process group: on expiry timeout signals the script and
	# everything it started; the script's trap cleans up
	timeout -k 30 "$LIMIT" "$HERE/$script" "$BUILD" "$CHECK"
	st=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	if [ $st -eq 0 ]; then
		results+=("PASS topo$n ($script, $ms ms)")
	else
		[ $st -eq 124 ] && echo "topo$n: timed out after $LIMIT s"
		results+=("FAIL topo$n ($script, status $st, $ms ms)")
		failed=1
	fi
done
echo "==== summary ===="
for r in "${results[@]}"; do
	echo "$r"
done
exit $failed
