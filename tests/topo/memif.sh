#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Topology 2: two viads on this host joined by net_memif (A: role=server,
# B: role=client, one socket in the run dir). A client of viad B connects to
# a server of viad A by A's port MAC and checks echoed messages, then (a new
# connection) RDMA Writes and Reads into a region of the server. Then
# vipl_legacy: its client on viad B finds its server on viad A by the name
# node-a of the viads' hosts file.
#
#   memif.sh [BUILD_DIR] [TOPO_CHECK]
#
# Both viads get two lcores on the same two CPUs, crossed (A: main on the
# first, poll on the second; B the other way), and backoff polling so that
# they can share a two-core machine.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
topo_init memif "${1:-$HERE/../../build}" "${2:-}"

MAC_A=02:00:00:00:0a:01
MAC_B=02:00:00:00:0b:01
read -r CPU0 CPU1 < <(topo_cpus)
printf 'node-a %s\nnode-b %s\n' "$MAC_A" "$MAC_B" >"$RUN/hosts"

for side in A B; do
	if [ $side = A ]; then role=server mac=$MAC_A; else role=client mac=$MAC_B; fi
	cat >"$RUN/$side.conf" <<CONF
[viad]
log_level = info
poll_mode = backoff
hosts = $RUN/hosts

[port via0]
glue = ethdev
devargs = net_memif0,role=$role,socket=$RUN/memif.sock,socket-abstract=no,mac=$mac
CONF
done

# shellcheck disable=SC2046  # word splitting of the EAL arguments is intended
viad_start A -c "$RUN/A.conf" --set viad.poll_mode=backoff -- $(topo_eal A "$CPU0" "$CPU1") ||
	{ topo_fail "viad A did not start"; exit 1; }
# shellcheck disable=SC2046
viad_start B -c "$RUN/B.conf" --set viad.poll_mode=backoff -- $(topo_eal B "$CPU1" "$CPU0") ||
	{ topo_fail "viad B did not start"; exit 1; }

# topo_check waits for the memif link (VIP_DPDK_SMI_PORT LinkUp) itself
# memif copies chained frames into its rings: zero copy from provider memory
TOPO_ZERO_COPY=yes
for mode in $(topo_modes); do
	mode_set "$mode" || continue
	pair_check "memif$MODE_TAG" "$(viad_sock A)" "$(viad_sock B)" "$MAC_A" "${MODE_ARGS[@]}"
done

legacy_pair memif-legacy "$(viad_sock A)" "$(viad_sock B)" node-a

viad_stop B
viad_stop A
exit $TOPO_FAILED
