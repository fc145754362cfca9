#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# VIA and IP on the same port (issue 16), in two network namespaces created
# here; traffic never leaves them.
#
#  afxdp: a veth pair, one viad on each end with net_af_xdp and viad's XDP
#         program (bpf/via_xdp.c: VIA frames to viad, the rest to the
#         kernel), IP addresses on the veths. At the same time: ping, a TCP
#         transfer with a checksum (tcp_stream.py), and VIA runs: topo_check
#         send/receive (Unreliable Delivery) and RDMA Write/Read (Reliable
#         Delivery), vipl_pingpong on Reliable Reception. ARP resolves the
#         peer's veth MAC. Once the viads stop, the veths have no XDP
#         program and IP still works on them.
#  memif: two viads joined by net_memif, each in its own namespace with
#         ip_interface = a kernel interface (the exception path,
#         pmd_glue/glue_exception.c) that gets the IP address; the same
#         traffic at once; the interfaces have the ports' MACs and MTU, and
#         are gone once the viads stop.
#
#   ipcoexist.sh [BUILD_DIR] [TOPO_CHECK]
#
# Environment: IPCO_PARTS ("afxdp memif"), IPCO_BYTES (TCP bytes, 32 MiB),
# IPCO_PINGS (ping count, 200), and those of lib.sh. Exit status 77 (skip)
# only where the kernel cannot: not root, or no AF_XDP socket at all for
# the afxdp part (it then says so, and memif still runs).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
topo_init ipcoexist "${1:-$HERE/../../build}" "${2:-}"

XDP_PROG=$BUILD/bpf/via_xdp.o
STREAM=$HERE/tcp_stream.py
PINGPONG=$BUILD/apps/vipl_pingpong
BYTES=${IPCO_BYTES:-33554432}
PINGS=${IPCO_PINGS:-200}
NSA=via-ipco-$$-a
NSB=via-ipco-$$-b
VETH_A=vi$$a
VETH_B=vi$$b
EXC_A=vx$$a
EXC_B=vx$$b
# addresses exist only inside the two namespaces
NET_VETH=10.216.1
NET_EXC=10.216.2
read -r CPU0 CPU1 < <(topo_cpus)
skipped=0
# the reliable levels give up on a peer after ~0.4 s of lost retransmissions
# by default; a TCP stream at full speed on a loaded 2-CPU machine can starve
# a poll lcore that long (a frame dropped at a full ring is what the
# reliable levels recover from, the test checks that they do): ~20 s here
REL_SLACK="rel_rto_max_us = 1000000
rel_max_retries = 30"

for tool in ping python3; do
	command -v $tool >/dev/null || { topo_fail "no $tool (scripts/setup-host.sh installs it)"; exit 1; }
done
[ -x "$PINGPONG" ] || { topo_fail "no vipl_pingpong at $PINGPONG"; exit 1; }

netns_add "$NSA" || exit 1
netns_add "$NSB" || exit 1
ip -n "$NSA" link set lo up && ip -n "$NSB" link set lo up ||
	{ topo_fail "cannot set lo up in the namespaces"; exit 1; }

if_mtu() { # NS IFACE
	ip -n "$1" -o link show dev "$2" 2>/dev/null | sed -n 's|.* mtu \([0-9]*\).*|\1|p'
}

# ip_traffic_start LABEL SRV_ADDR CLI_ADDR: ping from B to A and a TCP
# transfer from B to A, in the background (PIDs in TOPO_BG)
IP_PIDS=()
ip_traffic_start() {
	local label=$1 srv=$2 port=$((20000 + $$ % 20000))
	IP_PIDS=()
	ip -n "$NSB" neigh flush all 2>/dev/null
	ip netns exec "$NSB" timeout -k 5 120 ping -n -q -c "$PINGS" -i 0.05 -W 5 "$srv" \
		>"$RUN/ping-$label.out" 2>&1 </dev/null &
	IP_PIDS+=($!)
	ip netns exec "$NSA" timeout -k 5 120 python3 "$STREAM" server "$srv" "$port" "$BYTES" 60 \
		>"$RUN/tcp-srv-$label.out" 2>&1 </dev/null &
	IP_PIDS+=($!)
	ip netns exec "$NSB" timeout -k 5 120 python3 "$STREAM" client "$srv" "$port" "$BYTES" \
		"$TOPO_SEED" 60 >"$RUN/tcp-cli-$label.out" 2>&1 </dev/null &
	IP_PIDS+=($!)
	local p
	for p in "${IP_PIDS[@]}"; do TOPO_BG[$p]=1; done
}

# ip_traffic_check LABEL SRV_ADDR SRV_MAC: all pings answered, the TCP
# digests equal, and B's neighbour entry for SRV_ADDR is SRV_MAC (ARP)
ip_traffic_check() {
	local label=$1 srv=$2 mac=$3 p st=0 rx srv_sum cli_sum neigh
	for p in "${IP_PIDS[@]}"; do
		wait "$p" || st=1
		unset "TOPO_BG[$p]"
	done
	sed "s/^/  ping-$label| /" "$RUN/ping-$label.out"
	sed "s/^/  tcp-$label| /" "$RUN/tcp-srv-$label.out" "$RUN/tcp-cli-$label.out"
	rx=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' "$RUN/ping-$label.out")
	[ "$rx" = "$PINGS" ] || { topo_fail "$label: ping: ${rx:-no} replies of $PINGS"; st=1; }
	srv_sum=$(awk '/^sha256/ {print $2, $4}' "$RUN/tcp-srv-$label.out")
	cli_sum=$(awk '/^sha256/ {print $2, $4}' "$RUN/tcp-cli-$label.out")
	if [ -z "$srv_sum" ] || [ "$srv_sum" != "$cli_sum" ]; then
		topo_fail "$label: TCP transfer: server '$srv_sum', client '$cli_sum'"
		st=1
	fi
	neigh=$(ip -n "$NSB" neigh show "$srv")
	case $neigh in
	*"lladdr $mac"*) topo_log "$label: ARP: $neigh" ;;
	*) topo_fail "$label: no neighbour entry $srv -> $mac (ARP): '$neigh'"; st=1 ;;
	esac
	[ $st -eq 0 ] && topo_log "$label: IP: $PINGS pings answered, $BYTES TCP bytes intact"
	return $st
}

# rr_check LABEL SRV_SOCK CLI_SOCK SRV_MAC: vipl_pingpong on Reliable
# Reception (VIA §2.5.3), payloads verified, both ends bounded
rr_check() {
	local label=$1 ssock=$2 csock=$3 mac=$4 spid cst sst lib=$LIBDIR
	VIAD_SOCKET=$ssock LD_LIBRARY_PATH=$lib timeout -k 5 90 "$PINGPONG" -s -r rr \
		-D "rr-$label-$$" >"$RUN/rr-srv-$label.out" 2>&1 </dev/null &
	spid=$!
	TOPO_BG[$spid]=1
	VIAD_SOCKET=$csock LD_LIBRARY_PATH=$lib timeout -k 5 90 "$PINGPONG" -c "$mac" -r rr \
		-D "rr-$label-$$" --size 64,4K,64K -n 500 -w 50 >"$RUN/rr-cli-$label.out" 2>&1 </dev/null
	cst=$?
	wait "$spid"
	sst=$?
	unset "TOPO_BG[$spid]"
	sed "s/^/  rr-$label| /" "$RUN/rr-cli-$label.out"
	if [ $cst -ne 0 ] || [ $sst -ne 0 ]; then
		sed "s/^/  rr-srv-$label| /" "$RUN/rr-srv-$label.out"
		topo_fail "$label: Reliable Reception pingpong: client $cst, server $sst"
		return 1
	fi
	topo_log "$label: Reliable Reception: PASS"
}

# via_runs LABEL SRV_SOCK CLI_SOCK SRV_MAC: the three reliability levels
via_runs() {
	local label=$1 mode
	for mode in $(topo_modes); do
		mode_set "$mode" || continue
		pair_check "$label$MODE_TAG" "$2" "$3" "$4" "${MODE_ARGS[@]}"
	done
	rr_check "$label" "$2" "$3" "$4"
}

# exc_counters NAME: the ip_* counters of viad NAME's via0 in /viad/ports
# (telemetry): "ip_to_kernel ip_from_kernel ip_dropped"
exc_counters() {
	echo /viad/ports | timeout 30 dpdk-telemetry.py -f "$TOPO_TAG-$1" 2>/dev/null |
		python3 -c 'import json, sys
for l in sys.stdin:
    l = l.strip()
    if l.startswith("{"):
        p = json.loads(l)["/viad/ports"]["via0"]
        print(p["ip_to_kernel"], p["ip_from_kernel"], p["ip_dropped"])'
}

# coexist_run LABEL SRV_ADDR SRV_MAC: IP traffic and the VIA runs at once
# between viads A-LABEL and B-LABEL, then both stopped
coexist_run() {
	local side c
	ip_traffic_start "$1" "$2"
	via_runs "$1" "$(viad_sock "A-$1")" "$(viad_sock "B-$1")" "$3"
	ip_traffic_check "$1" "$2" "$3"
	# the exception path's counters: the TCP transfer crossed it both ways
	for side in A B; do
		[ "$1" = memif ] || break
		read -r -a c < <(exc_counters "$side-$1")
		topo_log "$1: viad $side ip_interface: to the kernel ${c[0]:-?}, from it ${c[1]:-?}, dropped ${c[2]:-?}"
		[ "${c[0]:-0}" -gt 1000 ] && [ "${c[1]:-0}" -gt 1000 ] ||
			topo_fail "$1: viad $side's /viad/ports does not count the TCP transfer (ip_*)"
	done
	viad_stop "B-$1"
	viad_stop "A-$1"
}

# start_viad NAME NS CONF [VIAD ARGS...]
start_viad() {
	local name=$1 ns=$2 conf=$3 c0=$CPU0 c1=$CPU1
	shift 3
	[ "${name#B-}" != "$name" ] && c0=$CPU1 c1=$CPU0
	# shellcheck disable=SC2046  # word splitting of the EAL arguments is intended
	viad_start "$name" --netns "$ns" -c "$conf" --set viad.poll_mode=backoff "$@" \
		-- $(topo_eal "$name" "$c0" "$c1")
}

# ---- part 1: af_xdp with viad's XDP program ---------------------------------
part_afxdp() {
	local side ns veth mac_a mac_b
	# the one thing the kernel may lack: AF_XDP sockets (CONFIG_XDP_SOCKETS)
	if ! python3 -c 'import socket; socket.socket(44, socket.SOCK_RAW).close()' 2>/dev/null; then
		echo "ipcoexist: SKIP afxdp: this kernel cannot open an AF_XDP socket (address family 44)"
		skipped=1
		return 0
	fi
	veth_pair "$NSA" "$VETH_A" "$NSB" "$VETH_B" || return 1
	ip -n "$NSA" addr add "$NET_VETH.1/24" dev "$VETH_A" &&
		ip -n "$NSB" addr add "$NET_VETH.2/24" dev "$VETH_B" ||
		{ topo_fail "cannot address the veths"; return 1; }
	mac_a=$(if_mac "$NSA" "$VETH_A")
	mac_b=$(if_mac "$NSB" "$VETH_B")
	[ ! -r "$XDP_PROG" ] && { topo_fail "no XDP program at $XDP_PROG (clang, libbpf-dev)"; return 1; }
	for side in A B; do
		if [ $side = A ]; then veth=$VETH_A; else veth=$VETH_B; fi
		cat >"$RUN/xdp-$side.conf" <<CONF
[viad]
log_level = info
xdp_prog = $XDP_PROG
$REL_SLACK

[port via0]
glue = ethdev
devargs = net_af_xdp0,iface=$veth
CONF
	done
	start_viad A-afxdp "$NSA" "$RUN/xdp-A.conf" || { topo_fail "viad A-afxdp did not start"; return 1; }
	start_viad B-afxdp "$NSB" "$RUN/xdp-B.conf" || { topo_fail "viad B-afxdp did not start"; return 1; }
	for side in A B; do
		if ! grep -q "XDP program $XDP_PROG: VIA frames to viad" "$(viad_log "$side-afxdp")"; then
			topo_fail "viad $side-afxdp did not load $XDP_PROG (its log says why)"
			return 1
		fi
	done
	topo_log "afxdp: $VETH_A $mac_a $NET_VETH.1 <-> $VETH_B $mac_b $NET_VETH.2; XDP: $(
		ip -n "$NSA" -o link show dev "$VETH_A" | grep -o 'prog/xdp id [0-9]*')"

	# af_xdp's copy mode reads only the first segment (see afxdp.sh)
	TOPO_ZERO_COPY=no
	coexist_run afxdp "$NET_VETH.1" "$mac_a"
	for side in A B; do
		if [ $side = A ]; then ns=$NSA veth=$VETH_A; else ns=$NSB veth=$VETH_B; fi
		if ip -n "$ns" -o link show dev "$veth" | grep -q 'prog/xdp'; then
			topo_fail "afxdp: $veth still has an XDP program after viad stopped"
		fi
	done
	if ip netns exec "$NSB" ping -n -q -c 3 -i 0.2 -W 5 "$NET_VETH.1" >/dev/null; then
		topo_log "afxdp: IP on the veths after viad stopped: PASS"
	else
		topo_fail "afxdp: no ping on the veths after viad stopped"
	fi
	# an object that is no XDP program, and none at all (a build without
	# clang): the PMD's own program, and a log line saying why
	echo "not an ELF object" >"$RUN/broken.o"
	fallback_check broken "$RUN/broken.o" "XDP program $RUN/broken.o not loaded"
	fallback_check none "" "no XDP program (viad.xdp_prog is empty"
}

# fallback_check TAG XDP_PROG LOG_TEXT: viad A starts on the PMD's program
# and its log says LOG_TEXT
fallback_check() {
	if start_viad "A-$1" "$NSA" "$RUN/xdp-A.conf" --set "viad.xdp_prog=$2"; then
		grep -F "$3" "$(viad_log "A-$1")" ||
			topo_fail "afxdp: xdp_prog '$2': no log line '$3'"
		viad_stop "A-$1"
	else
		topo_fail "afxdp: xdp_prog '$2': viad did not fall back to the PMD's program"
	fi
}

# ---- part 2: memif with exception interfaces --------------------------------
part_memif() {
	local side ns exc mac role mac_a=02:00:00:00:1a:01 mac_b=02:00:00:00:1b:01 mtu=1500
	for side in A B; do
		if [ $side = A ]; then role=server mac=$mac_a exc=$EXC_A; else role=client mac=$mac_b exc=$EXC_B; fi
		cat >"$RUN/exc-$side.conf" <<CONF
[viad]
log_level = info
$REL_SLACK

[port via0]
glue = ethdev
devargs = net_memif0,role=$role,socket=$RUN/memif.sock,socket-abstract=no,mac=$mac
mtu = $mtu
ip_interface = $exc
CONF
	done
	start_viad A-memif "$NSA" "$RUN/exc-A.conf" || { topo_fail "viad A-memif did not start"; return 1; }
	start_viad B-memif "$NSB" "$RUN/exc-B.conf" || { topo_fail "viad B-memif did not start"; return 1; }
	for side in A B; do
		if [ $side = A ]; then ns=$NSA exc=$EXC_A mac=$mac_a; else ns=$NSB exc=$EXC_B mac=$mac_b; fi
		[ "$(if_mac "$ns" "$exc")" = "$mac" ] ||
			{ topo_fail "memif: $exc has MAC '$(if_mac "$ns" "$exc")', not the port's $mac"; return 1; }
		[ "$(if_mtu "$ns" "$exc")" = "$mtu" ] ||
			{ topo_fail "memif: $exc has MTU '$(if_mtu "$ns" "$exc")', not the port's $mtu"; return 1; }
	done
	ip -n "$NSA" addr add "$NET_EXC.1/24" dev "$EXC_A" &&
		ip -n "$NSB" addr add "$NET_EXC.2/24" dev "$EXC_B" &&
		ip -n "$NSA" link set "$EXC_A" up && ip -n "$NSB" link set "$EXC_B" up ||
		{ topo_fail "cannot address the exception interfaces"; return 1; }
	topo_log "memif: $EXC_A $mac_a $NET_EXC.1 <-> $EXC_B $mac_b $NET_EXC.2"

	# the interface is put back in step with the port (within a link check)
	ip -n "$NSA" link set dev "$EXC_A" mtu 1280
	sleep 0.5
	[ "$(if_mtu "$NSA" "$EXC_A")" = "$mtu" ] ||
		topo_fail "memif: MTU of $EXC_A stayed $(if_mtu "$NSA" "$EXC_A") after a change"

	# memif copies chained frames into its rings: zero copy from provider memory
	TOPO_ZERO_COPY=yes
	coexist_run memif "$NET_EXC.1" "$mac_a"
	for side in A B; do
		if [ $side = A ]; then ns=$NSA exc=$EXC_A; else ns=$NSB exc=$EXC_B; fi
		if ip -n "$ns" link show dev "$exc" >/dev/null 2>&1; then
			topo_fail "memif: $exc still there after viad stopped"
		fi
	done
	topo_log "memif: exception interfaces removed with the viads"
}

for part in ${IPCO_PARTS:-afxdp memif}; do
	case $part in
	afxdp) part_afxdp ;;
	memif) part_memif ;;
	*) topo_fail "unknown part '$part' in IPCO_PARTS (afxdp, memif)" ;;
	esac
done
# a skipped afxdp part alone is a skip; with a failure, a failure
[ $TOPO_FAILED -eq 0 ] && [ $skipped -eq 1 ] && [ "${IPCO_PARTS:-afxdp memif}" = afxdp ] && exit 77
exit $TOPO_FAILED
