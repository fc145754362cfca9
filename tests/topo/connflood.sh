#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Forged connection requests from a blind host on the same Ethernet (issue
# 25 part 5; docs/wire-format.md section 7.2, docs/design.md section 8,
# "Forged requests"). Two namespaces joined by a veth pair, one viad in each
# (net_af_packet). tests/topo/via_connflood sits in B's namespace on B's
# veth and sends viad A CONNFLOOD_RATE (5000) CONN_REQ a second from 4096
# forged source MACs, each asking for the discriminator A's server waits on,
# for CONNFLOOD_SECONDS (25). Meanwhile topo_check's server waits on A, and
# its client on B connects and moves data (send/receive, Unreliable
# Delivery, every byte checked). Passes when:
#   - the client connects within CONNFLOOD_CONNECT_MS (5000) and the check
#     passes: no forged request reached the server's VipConnectWait;
#   - viad A answered the forged requests with cookies and kept none: its
#     cm_cookies_sent (viactl counters) grew by at least half of what was
#     sent, its cm_requests_refused did not grow;
#   - viad A logged the flood, at most one line per 10 s;
#   - the same check passes again once the flood is over.
#
#   connflood.sh [BUILD_DIR] [TOPO_CHECK]
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
topo_init connflood "${1:-$HERE/../../build}" "${2:-}"

FLOOD=$BUILD/tests/via_connflood
VIACTL=$BUILD/tools/viactl/viactl
for p in "$FLOOD" "$VIACTL"; do
	[ -x "$p" ] || { topo_fail "no $p (build it first)"; exit 1; }
done
RATE=${CONNFLOOD_RATE:-5000}
FLOOD_S=${CONNFLOOD_SECONDS:-25}
CONNECT_MS=${CONNFLOOD_CONNECT_MS:-5000}
NSA=via-cflood-$$-a
NSB=via-cflood-$$-b
VETH_A=vf$$a
VETH_B=vf$$b
read -r CPU0 CPU1 < <(topo_cpus)

netns_add "$NSA" || exit 1
netns_add "$NSB" || exit 1
veth_pair "$NSA" "$VETH_A" "$NSB" "$VETH_B" || exit 1
MAC_A=$(if_mac "$NSA" "$VETH_A")
[ -n "$MAC_A" ] || { topo_fail "cannot read $VETH_A's MAC"; exit 1; }

for side in A B; do
	if [ $side = A ]; then veth=$VETH_A; else veth=$VETH_B; fi
	cat >"$RUN/$side.conf" <<CONF
[viad]
log_level = info
poll_mode = backoff

[port via0]
glue = ethdev
devargs = net_af_packet0,iface=$veth,qdisc_bypass=0
CONF
done
# shellcheck disable=SC2046  # word splitting of the EAL arguments is intended
viad_start A --netns "$NSA" -c "$RUN/A.conf" -- $(topo_eal A "$CPU0" "$CPU1") || exit 1
# shellcheck disable=SC2046
viad_start B --netns "$NSB" -c "$RUN/B.conf" -- $(topo_eal B "$CPU1" "$CPU0") || exit 1

# viad A's counter NAME
counter() {
	"$VIACTL" -i "$TOPO_TAG-A" --json counters |
		python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"
}

# check LABEL: topo_check's server on A, its client on B, connecting within
# CONNECT_MS
check() {
	local label=$1 disc=connflood-$$ cst sst t0
	t0=$(date +%s%N)
	check_start "srv-$label" "$(viad_sock A)" --server -D "$disc" -s "$TOPO_SEED"
	check_run "cli-$label" "$(viad_sock B)" --client "$MAC_A" -D "$disc" -s "$TOPO_SEED" \
		-n "${TOPO_ROUNDS:-300}" --connect-ms "$CONNECT_MS"
	cst=$?
	check_wait "srv-$label" 30
	sst=$?
	check_print "srv-$label"
	check_print "cli-$label"
	if [ $cst -eq 0 ] && [ $sst -eq 0 ]; then
		topo_log "$label: PASS in $((($(date +%s%N) - t0) / 1000000)) ms"
	else
		topo_fail "$label: client status $cst, server status $sst (connect bound $CONNECT_MS ms)"
	fi
}

cookies0=$(counter cm_cookies_sent) && refused0=$(counter cm_requests_refused) ||
	{ topo_fail "viactl counters on viad A failed"; exit 1; }
# the flood first, the check inside it; the same discriminator as the check's
ip netns exec "$NSB" "$FLOOD" "$VETH_B" "$MAC_A" "connflood-$$" --rate "$RATE" \
	--seconds "$FLOOD_S" >"$RUN/flood.out" 2>&1 &
FLOOD_PID=$!
TOPO_BG[$FLOOD_PID]=1
sleep 2
check flood
wait "$FLOOD_PID"
fst=$?
unset "TOPO_BG[$FLOOD_PID]"
sed "s/^/  flood| /" "$RUN/flood.out"
[ $fst -eq 0 ] || topo_fail "via_connflood failed (status $fst)"
sent=$(sed -n 's/^via_connflood: \([0-9]*\) forged.*/\1/p' "$RUN/flood.out")
[ "${sent:-0}" -gt 0 ] || { topo_fail "via_connflood sent nothing"; exit 1; }

# the viad's own answers and its log
sleep 1
cookies1=$(counter cm_cookies_sent) && refused1=$(counter cm_requests_refused) ||
	{ topo_fail "viactl counters on viad A failed"; exit 1; }
topo_log "viad A: cm_cookies_sent $cookies0 -> $cookies1, cm_requests_refused" \
	"$refused0 -> $refused1, $sent forged"
[ $((cookies1 - cookies0)) -ge $((sent / 2)) ] ||
	topo_fail "viad A answered too few forged requests with a cookie"
[ "$refused1" -eq "$refused0" ] ||
	topo_fail "viad A refused requests for its limits: it held forged ones"
lines=$(grep -c "did not show they receive at their MAC" "$(viad_log A)")
topo_log "viad A logged the flood in $lines line(s) over $FLOOD_S s"
grep "did not show they receive at their MAC" "$(viad_log A)" | sed "s/^/  A| /"
[ "$lines" -ge 1 ] || topo_fail "viad A did not log the flood"
[ "$lines" -le $((FLOOD_S / 10 + 1)) ] || topo_fail "viad A logged the flood more than once per 10 s"

check after
viad_stop B
viad_stop A
exit $TOPO_FAILED
