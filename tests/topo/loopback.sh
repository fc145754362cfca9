#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Topology 1: one viad with a loopback port; topo_check --loopback runs both
# ends (two VIs, each on its own VipOpenNic session) in one process, once
# per check of TOPO_MODES (send/receive, RDMA) and memory kind. Then
# vipl_legacy runs as two processes on the NIC, the client finding the
# server by the name viad's hosts file gives the NIC's MAC.
#
#   loopback.sh [BUILD_DIR] [TOPO_CHECK]
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
topo_init loopback "${1:-$HERE/../../build}" "${2:-}"
read -r CPU0 CPU1 < <(topo_cpus)
# frames to the NIC's own address stay in memory: zero copy
TOPO_ZERO_COPY=yes

MAC_L=02:00:00:00:01:01
echo "lo-host $MAC_L" >"$RUN/hosts"
cat >"$RUN/L.conf" <<CONF
[viad]
log_level = info
poll_mode = backoff
hosts = $RUN/hosts

[port via0]
glue = loopback
mac = $MAC_L
CONF

# shellcheck disable=SC2046  # word splitting of the EAL arguments is intended
viad_start L -c "$RUN/L.conf" -- $(topo_eal L "$CPU0" "$CPU1") ||
	{ topo_fail "viad did not start"; exit 1; }

for mode in $(topo_modes); do
	mode_set "$mode" || continue
	for mem in ${TOPO_MEM:-pmem heap}; do
		read -r -a margs < <(mem_args "$mem")
		name=loopback$MODE_TAG-$mem
		t0=$(date +%s%N)
		check_run "$name" "$(viad_sock L)" --loopback -D "topo-lo-$$" -s "$TOPO_SEED" \
			-n "${TOPO_ROUNDS:-300}" "${margs[@]}" "${MODE_ARGS[@]}"
		st=$?
		check_print "$name"
		if [ $st -eq 0 ]; then
			topo_log "loopback$MODE_TAG $mem memory: PASS in" \
				"$((($(date +%s%N) - t0) / 1000000)) ms"
		else
			topo_fail "loopback$MODE_TAG $mem memory: topo_check status $st"
		fi
	done
done

legacy_pair loopback-legacy "$(viad_sock L)" "$(viad_sock L)" lo-host

viad_stop L
exit $TOPO_FAILED
