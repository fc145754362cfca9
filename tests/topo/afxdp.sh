#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Topology 3: two network namespaces created here, joined by a veth pair;
# one viad in each, driving its end of the pair with net_af_xdp (generic
# XDP) where it starts, then with net_af_packet (qdisc_bypass=0): af_xdp
# takes viad's copy path, af_packet its zero-copy one (docs/design.md
# section 9).
# A client of viad B connects to a server of viad A by the MAC of A's veth,
# once per check of TOPO_MODES (send/receive, RDMA). Raw Ethernet only: no
# IP addresses.
#
#   afxdp.sh [BUILD_DIR] [TOPO_CHECK]
#
# TOPO_AFXDP_GLUE: auto (default: af_xdp if it can start, and af_packet),
# af_xdp, af_packet, or both (one run with each, both must start).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
topo_init afxdp "${1:-$HERE/../../build}" "${2:-}"

NSA=via-topo-$$-a
NSB=via-topo-$$-b
VETH_A=vt$$a
VETH_B=vt$$b
read -r CPU0 CPU1 < <(topo_cpus)

netns_add "$NSA" || exit 1
netns_add "$NSB" || exit 1
veth_pair "$NSA" "$VETH_A" "$NSB" "$VETH_B" || exit 1
MAC_A=$(if_mac "$NSA" "$VETH_A")
MAC_B=$(if_mac "$NSB" "$VETH_B")
if [ -z "$MAC_A" ] || [ -z "$MAC_B" ]; then
	topo_fail "cannot read the veth MACs"
	exit 1
fi
topo_log "netns $NSA: $VETH_A $MAC_A <-> netns $NSB: $VETH_B $MAC_B"

devargs() { # GLUE IFACE
	case $1 in
	af_xdp) echo "net_af_xdp0,iface=$2" ;;
	af_packet) echo "net_af_packet0,iface=$2,qdisc_bypass=0" ;;
	esac
}

# start_pair GLUE: viads A (in NSA) and B (in NSB) driving their veth with
# GLUE. Returns 0 if both run, 1 if one could not start (both stopped then).
start_pair() {
	local g=$1 side ns veth
	for side in A B; do
		if [ $side = A ]; then ns=$NSA veth=$VETH_A; else ns=$NSB veth=$VETH_B; fi
		cat >"$RUN/$side-$g.conf" <<CONF
[viad]
log_level = info
poll_mode = backoff

[port via0]
glue = ethdev
devargs = $(devargs "$g" "$veth")
CONF
	done
	# shellcheck disable=SC2046  # word splitting of the EAL arguments is intended
	if ! viad_start "A-$g" --netns "$NSA" -c "$RUN/A-$g.conf" --set viad.poll_mode=backoff \
		-- $(topo_eal "A-$g" "$CPU0" "$CPU1"); then
		return 1
	fi
	# shellcheck disable=SC2046
	if ! viad_start "B-$g" --netns "$NSB" -c "$RUN/B-$g.conf" --set viad.poll_mode=backoff \
		-- $(topo_eal "B-$g" "$CPU1" "$CPU0"); then
		viad_stop "A-$g"
		return 1
	fi
	return 0
}

run_glue() { # GLUE: start, check, stop
	local g=$1
	topo_log "glue $g: $(devargs "$g" "$VETH_A") | $(devargs "$g" "$VETH_B")"
	start_pair "$g" || return 2
	[ "$g" = af_xdp ] && topo_log "XDP on the veths: $(ip -n "$NSA" -o link show dev "$VETH_A" |
		grep -o 'xdp[a-z]*' | head -1) / $(ip -n "$NSB" -o link show dev "$VETH_B" |
		grep -o 'xdp[a-z]*' | head -1)"
	# af_packet copies chained frames; af_xdp's copy mode reads only the first segment
	if [ "$g" = af_packet ]; then TOPO_ZERO_COPY=yes; else TOPO_ZERO_COPY=no; fi
	for mode in $(topo_modes); do
		mode_set "$mode" || continue
		pair_check "$g$MODE_TAG" "$(viad_sock "A-$g")" "$(viad_sock "B-$g")" "$MAC_A" \
			"${MODE_ARGS[@]}"
	done
	viad_stop "B-$g"
	viad_stop "A-$g"
	topo_log "glue $g: ran"
	return 0
}

case ${TOPO_AFXDP_GLUE:-auto} in
auto)
	used=af_packet
	run_glue af_xdp
	if [ $? -eq 2 ]; then
		topo_log "af_xdp could not start (logs above): af_packet only"
	else
		used="af_xdp and af_packet"
	fi
	run_glue af_packet
	[ $? -eq 2 ] && topo_fail "af_packet could not start"
	echo "afxdp: glue used: $used"
	;;
af_xdp | af_packet)
	run_glue "$TOPO_AFXDP_GLUE"
	[ $? -eq 2 ] && topo_fail "$TOPO_AFXDP_GLUE could not start"
	echo "afxdp: glue used: $TOPO_AFXDP_GLUE"
	;;
both)
	for g in af_xdp af_packet; do
		run_glue $g
		[ $? -eq 2 ] && topo_fail "$g could not start"
	done
	echo "afxdp: glue used: af_xdp and af_packet"
	;;
*)
	topo_fail "TOPO_AFXDP_GLUE must be auto, af_xdp, af_packet or both"
	;;
esac
exit $TOPO_FAILED
