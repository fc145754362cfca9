#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Forged connection requests from a blind host on the same Ethernet (issue
# 25 part 5; docs/wire-format.md section 7.2, docs/design.md section 8,
# "Forged requests"). Two namespaces joined by a veth pair, one viad in each
# (net_af_packet). tests/topo/via_forge --conn-flood sits in B's namespace
# on B's veth and sends viad A CONNFLOOD_RATE (5000) CONN_REQ a second from
# 4096 forged source MACs, each asking for the discriminator A's server
# waits on, for CONNFLOOD_SECONDS (25). Meanwhile topo_check's server waits
# on A, and its client on B connects and moves data (send/receive,
# Unreliable Delivery, every byte checked). Passes when:
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

FORGE=$BUILD/tests/via_forge
VIACTL=$BUILD/tools/viactl/viactl
for p in "$FORGE" "$VIACTL"; do
	[ -x "$p" ] || { topo_fail "no $p (build it first)"; exit 1; }
done
RATE=${CONNFLOOD_RATE:-5000}
FLOOD_S=${CONNFLOOD_SECONDS:-25}
CONNECT_MS=${CONNFLOOD_CONNECT_MS:-5000}
FLOOD_LINE="did not show they receive at their MAC"
TOPO_MEM=pmem  # pair_check: one run, provider memory

af_packet_pair cflood vf || exit 1

# viad A's counter NAME
counter() {
	"$VIACTL" -i "$TOPO_TAG-A" --json counters |
		python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"
}

if ! cookies0=$(counter cm_cookies_sent) || ! refused0=$(counter cm_requests_refused); then
	topo_fail "viactl counters on viad A failed"
	exit 1
fi
# the flood first, the check inside it, for the check's discriminator
# (pair_check's: topo-LABEL-MEM-PID)
ip netns exec "$NSB" "$FORGE" "$VETH_B" "$MAC_A" --conn-flood "topo-flood-pmem-$$" \
	--rate "$RATE" --seconds "$FLOOD_S" >"$RUN/flood.out" 2>&1 &
FLOOD_PID=$!
TOPO_BG[$FLOOD_PID]=1
sleep 2
pair_check flood "$(viad_sock A)" "$(viad_sock B)" "$MAC_A" --connect-ms "$CONNECT_MS"
wait "$FLOOD_PID"
fst=$?
unset "TOPO_BG[$FLOOD_PID]"
sed "s/^/  flood| /" "$RUN/flood.out"
[ $fst -eq 0 ] || topo_fail "via_forge --conn-flood failed (status $fst)"
sent=$(sed -n 's/^via_forge: \([0-9]*\) forged CONN_REQ.*/\1/p' "$RUN/flood.out")
[ "${sent:-0}" -gt 0 ] || { topo_fail "via_forge --conn-flood sent nothing"; exit 1; }

# viad A's own answers, and its log
sleep 1
if ! cookies1=$(counter cm_cookies_sent) || ! refused1=$(counter cm_requests_refused); then
	topo_fail "viactl counters on viad A failed"
	exit 1
fi
topo_log "viad A: cm_cookies_sent $cookies0 -> $cookies1, cm_requests_refused" \
	"$refused0 -> $refused1, $sent forged"
[ $((cookies1 - cookies0)) -ge $((sent / 2)) ] ||
	topo_fail "viad A answered too few forged requests with a cookie"
[ "$refused1" -eq "$refused0" ] ||
	topo_fail "viad A refused requests for its limits: it held forged ones"
lines=$(grep -c "$FLOOD_LINE" "$(viad_log A)")
topo_log "viad A logged the flood in $lines line(s) over $FLOOD_S s"
grep "$FLOOD_LINE" "$(viad_log A)" | sed "s/^/  A| /"
[ "$lines" -ge 1 ] || topo_fail "viad A did not log the flood"
[ "$lines" -le $((FLOOD_S / 10 + 1)) ] || topo_fail "viad A logged the flood more than once per 10 s"

pair_check after "$(viad_sock A)" "$(viad_sock B)" "$MAC_A" --connect-ms "$CONNECT_MS"
viad_stop B
viad_stop A
exit $TOPO_FAILED
