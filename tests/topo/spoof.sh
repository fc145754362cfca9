#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Forged frames from a host on the same Ethernet (issue 14 part 5;
# docs/design.md section 10, "Threat model"). Two namespaces joined by a
# veth pair, one viad in each (net_af_packet). While topo_check runs between
# them (send/receive on Unreliable Delivery, RDMA Write and Read on Reliable
# Delivery, every byte checked), tests/topo/via_forge sits in B's namespace
# on B's veth, learns the live connection from the frames it sees, and
# floods viad A with frames for it - SEND, RDMA Write with the valid memory
# handle it saw, ACK, NAK, DISC - each right in every field but one: source
# MAC, connection id or VI pair, with correct CRCs. Passes when:
#   - both checks pass under the flood (nothing forged was delivered,
#     completed a descriptor or broke the connection);
#   - viad A counted the forged frames (frames_unmatched, viactl counters);
#   - the control: one DISC right in every field, sent during a third
#     check, does break that connection - the forged frames were refused
#     for their flaw alone.
#
#   spoof.sh [BUILD_DIR] [TOPO_CHECK]
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
topo_init spoof "${1:-$HERE/../../build}" "${2:-}"

FORGE=$BUILD/tests/via_forge
VIACTL=$BUILD/tools/viactl/viactl
for p in "$FORGE" "$VIACTL"; do
	[ -x "$p" ] || { topo_fail "no $p (build it first)"; exit 1; }
done
af_packet_pair spoof vs || exit 1
TOPO_ZERO_COPY=yes
TOPO_MEM=pmem
TOPO_ROUNDS=${SPOOF_ROUNDS:-2000}
TOPO_RDMA_ROUNDS=$TOPO_ROUNDS

# viad A's count of frames for a connection that are not of it
unmatched() {
	"$VIACTL" -i "$TOPO_TAG-A" --json counters |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["frames_unmatched"])'
}

forge_start() { # LABEL ARGS...: via_forge in B's namespace, in the background
	local label=$1
	shift
	ip netns exec "$NSB" "$FORGE" "$VETH_B" "$MAC_A" "$@" >"$RUN/forge-$label.out" 2>&1 &
	FORGE_PID=$!
	TOPO_BG[$FORGE_PID]=1
}
forge_wait() { # LABEL: stop via_forge, print its lines; its exit status
	local label=$1 st
	kill -TERM "$FORGE_PID" 2>/dev/null
	wait "$FORGE_PID"
	st=$?
	unset "TOPO_BG[$FORGE_PID]"
	sed "s/^/  forge-$label| /" "$RUN/forge-$label.out"
	return $st
}

# 1. the flood, during each check of TOPO_MODES (send, rdma)
before=$(unmatched) || { topo_fail "viactl counters on viad A failed"; exit 1; }
for mode in $(topo_modes); do
	mode_set "$mode" || continue
	forge_start "$mode" --seconds 600
	pair_check "flood$MODE_TAG" "$(viad_sock A)" "$(viad_sock B)" "$MAC_A" "${MODE_ARGS[@]}"
	forge_wait "$mode" || topo_fail "via_forge ($mode) learned nothing or failed"
	sent=$(awk -F': ' '/\/(source MAC|connection id|VI pair): /{s += $3} END {print s + 0}' \
		"$RUN/forge-$mode.out")
	[ "$sent" -gt 0 ] || topo_fail "via_forge ($mode) forged no frame"
	topo_log "$mode: $sent forged frames sent to viad A"
	total=$((${total:-0} + sent))
done
after=$(unmatched) || { topo_fail "viactl counters on viad A failed"; exit 1; }
topo_log "viad A: frames_unmatched $before -> $after, $total forged"
# every forged frame counts while its VI is Connected; some come between
# connections (dropped, not counted): at least half of them
[ $((after - before)) -ge $((total / 2)) ] || topo_fail "viad A counted too few unmatched frames"

# 2. the control: the same learning, one DISC right in every field
mode_set rdma
MODE_ARGS=(--rdma)
disc=spoof-control-$$
check_start srv-control "$(viad_sock A)" --server -D "$disc" -s "$TOPO_SEED" "${MODE_ARGS[@]}" \
	-n 1000000
check_start cli-control "$(viad_sock B)" --client "$MAC_A" -D "$disc" -s "$TOPO_SEED" \
	"${MODE_ARGS[@]}" -n 1000000
forge_start control --exact --seconds 60
wait "$FORGE_PID"
fst=$?
unset "TOPO_BG[$FORGE_PID]"
sed "s/^/  forge-control| /" "$RUN/forge-control.out"
[ $fst -eq 0 ] || topo_fail "via_forge --exact learned nothing or failed (status $fst)"
check_wait cli-control 60
cst=$?
check_wait srv-control 30
sst=$?
if [ $cst -eq 0 ] && [ $sst -eq 0 ]; then
	topo_fail "control: an exact forged DISC left the connection up (forged frames too weak)"
elif [ $cst -eq 124 ] || [ $sst -eq 124 ]; then
	check_print srv-control
	check_print cli-control
	topo_fail "control: the broken connection hung topo_check (client $cst, server $sst)"
else
	topo_log "control: an exact DISC broke the connection (client status $cst, server $sst)"
fi

viad_stop B
viad_stop A
exit $TOPO_FAILED
