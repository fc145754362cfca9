#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The price of IP beside VIA on one port (issue 16 part 4), in one run, in
# two network namespaces created here (traffic never leaves them):
#  - TCP throughput (iperf3, IPCO_SECONDS each) over a plain veth pair, and
#    through the exception path: two viads joined by memif, each with
#    ip_interface (a TAP), the IP addresses on the TAPs (port MTU 1500:
#    DPDK 22.11's memif takes no larger frames);
#  - VIA 64 B round trip (vipl_pingpong, Unreliable Delivery, IPCO_ITERS)
#    on that memif port, and on af_xdp ports with viad's XDP program over
#    the veth pair: alone, then with an iperf3 TCP stream beside it on the
#    same port (unlimited, then at IPCO_RATE).
# The ends of vipl_pingpong block (--wait block): with two viads polling on
# a 2-CPU machine, spinning ends would measure the scheduler.
# Prints one line per figure and the ratios; figures from different runs
# are not comparable on a shared 2-CPU machine (docs/performance.md).
#
#   ipcoexist_bench.sh [BUILD_DIR]
#
# Environment: IPCO_SECONDS (5: iperf3 -t), IPCO_ITERS (5000 round trips per
# figure), IPCO_REPS (5 interleaved rounds; medians), IPCO_RATE (100M),
# IPCO_POLL (viad's poll_mode, busy), IPCO_WAIT (the ends', block).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../topo/lib.sh"
topo_init ipco_bench "${1:-$HERE/../../build}" "$HERE/../../build/tests/topo_check"

SECS=${IPCO_SECONDS:-5}
ITERS=${IPCO_ITERS:-5000}
RATE=${IPCO_RATE:-100M}
# busy: a backoff poller that sleeps when idle makes the round trip alone
# slower than beside a stream that keeps it awake
POLL=${IPCO_POLL:-busy}
WAIT=${IPCO_WAIT:-block}
REPS=${IPCO_REPS:-5}
# a starved poll lcore must not break a connection (see ipcoexist.sh)
REL_SLACK=$(printf 'rel_rto_max_us = 1000000\nrel_max_retries = 30')
PINGPONG=$BUILD/apps/vipl_pingpong
XDP_PROG=$BUILD/bpf/via_xdp.o
NSA=via-ipcb-$$-a
NSB=via-ipcb-$$-b
VETH_A=vb$$a
VETH_B=vb$$b
EXC_A=vy$$a
EXC_B=vy$$b
MAC_A=02:00:00:00:2a:01
MAC_B=02:00:00:00:2b:01
PORT=$((30000 + $$ % 20000))
read -r CPU0 CPU1 < <(topo_cpus)
command -v iperf3 >/dev/null || { topo_fail "no iperf3 (apt-get install iperf3)"; exit 1; }

netns_add "$NSA" || exit 1
netns_add "$NSB" || exit 1
ip link add "$VETH_A" netns "$NSA" type veth peer name "$VETH_B" netns "$NSB" || exit 1
ip -n "$NSA" addr add 10.217.1.1/24 dev "$VETH_A"
ip -n "$NSB" addr add 10.217.1.2/24 dev "$VETH_B"
ip -n "$NSA" link set "$VETH_A" up
ip -n "$NSB" link set "$VETH_B" up

IPERF_PID=
# iperf_start ADDR [RATE]: a TCP stream from B to A for SECS (background)
iperf_start() {
	ip netns exec "$NSA" timeout 60 iperf3 -s -1 -B "$1" -p "$PORT" >/dev/null 2>&1 &
	TOPO_BG[$!]=1
	# until the server listens
	for _ in $(seq 50); do
		ip netns exec "$NSA" ss -ltn "sport = :$PORT" | grep -q LISTEN && break
		sleep 0.1
	done
	ip netns exec "$NSB" timeout 60 iperf3 -c "$1" -p "$PORT" -t "$SECS" -J \
		${2:+-b "$2"} >"$RUN/iperf.json" 2>&1 &
	IPERF_PID=$!
	TOPO_BG[$IPERF_PID]=1
}
# iperf_wait: the stream's received Mbit/s in MBPS
MBPS=
iperf_wait() {
	wait "$IPERF_PID"
	unset "TOPO_BG[$IPERF_PID]"
	sleep 0.3
	MBPS=$(python3 -c 'import json,sys; print("%.0f" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 1e6))' \
		"$RUN/iperf.json" 2>/dev/null || echo 0)
}
# rtt LABEL SRV_SOCK CLI_SOCK SRV_MAC: p50 of 64 B round trips, in us
rtt() {
	local lib=$LIBDIR spid
	# blocking waits: two viads and both ends share two CPUs
	VIAD_SOCKET=$2 LD_LIBRARY_PATH=$lib timeout 120 "$PINGPONG" -s -D "b-$1-$$" -r rd --wait "$WAIT" \
		>"$RUN/pp-srv-$1.out" 2>&1 &
	spid=$!
	VIAD_SOCKET=$3 LD_LIBRARY_PATH=$lib timeout 120 "$PINGPONG" -c "$4" -D "b-$1-$$" \
		-r rd --size 64 -n "$ITERS" --wait "$WAIT" --json >"$RUN/pp-$1.out" 2>&1
	wait "$spid"
	python3 -c 'import json,sys
for l in open(sys.argv[1]):
    if l.startswith("{"): print("%.2f" % json.loads(l)["rtt_us"]["p50"])' "$RUN/pp-$1.out" 2>/dev/null | tail -1
}
median() { printf '%s\n' "$@" | grep . | sort -g | awk '{v[NR] = $1} END {print NR ? v[int((NR + 1) / 2)] : ""}'; }
least() { printf '%s\n' "$@" | grep . | sort -g | head -1; }

# rtt_series TAG SRV_SOCK CLI_SOCK SRV_MAC SRV_ADDR: IPCO_REPS rounds of
# (alone, beside an unlimited stream, beside a RATE stream), interleaved so
# that a change in the machine's load hits the three alike; the medians in
# TAG_alone, TAG_full, TAG_rate, the least in TAG_alone_min, ..., and the
# streams' medians in TAG_full_mbps, TAG_rate_mbps (a round whose run failed
# counts for none)
rtt_series() {
	local tag=$1 r alone=() full=() rate=() fm=() rm=()
	for r in $(seq "$REPS"); do
		alone+=("$(rtt "$tag-alone-$r" "$2" "$3" "$4")")
		iperf_start "$5"
		full+=("$(rtt "$tag-full-$r" "$2" "$3" "$4")")
		iperf_wait; fm+=("$MBPS")
		iperf_start "$5" "$RATE"
		rate+=("$(rtt "$tag-rate-$r" "$2" "$3" "$4")")
		iperf_wait; rm+=("$MBPS")
		topo_log "$tag round $r: alone ${alone[-1]} us, beside TCP ${full[-1]} us (${fm[-1]} Mbit/s), beside $RATE ${rate[-1]} us"
	done
	printf -v "${tag}_alone_min" '%s' "$(least "${alone[@]}")"
	printf -v "${tag}_full_min" '%s' "$(least "${full[@]}")"
	printf -v "${tag}_rate_min" '%s' "$(least "${rate[@]}")"
	printf -v "${tag}_alone" '%s' "$(median "${alone[@]}")"
	printf -v "${tag}_full" '%s' "$(median "${full[@]}")"
	printf -v "${tag}_rate" '%s' "$(median "${rate[@]}")"
	printf -v "${tag}_full_mbps" '%s' "$(median "${fm[@]}")"
	printf -v "${tag}_rate_mbps" '%s' "$(median "${rm[@]}")"
}

start_viad() { # NAME NS CONF CPU0 CPU1
	# shellcheck disable=SC2046
	viad_start "$1" --netns "$2" -c "$3" --set "viad.poll_mode=$POLL" -- $(topo_eal "$1" "$4" "$5")
}

# 1. plain veth
iperf_start 10.217.1.1
iperf_wait; veth_mbps=$MBPS
topo_log "TCP over the plain veth: $veth_mbps Mbit/s"

# 2. memif + exception interfaces: TCP, then the round trips
# memif_up MTU: viads A-m, B-m joined by memif, the TAPs addressed
memif_up() {
	local side role mac exc
	for side in A B; do
		if [ $side = A ]; then role=server mac=$MAC_A exc=$EXC_A; else role=client mac=$MAC_B exc=$EXC_B; fi
		printf '[viad]\nlog_level = info\n%s\n[port via0]\nglue = ethdev\nmtu = %s\ndevargs = net_memif0,role=%s,socket=%s,socket-abstract=no,mac=%s\nip_interface = %s\n' \
			"$REL_SLACK" "$1" $role "$RUN/memif.sock" $mac $exc >"$RUN/m-$side.conf"
	done
	start_viad A-m "$NSA" "$RUN/m-A.conf" "$CPU0" "$CPU1" || exit 1
	start_viad B-m "$NSB" "$RUN/m-B.conf" "$CPU1" "$CPU0" || exit 1
	ip -n "$NSA" addr add 10.217.2.1/24 dev "$EXC_A" && ip -n "$NSA" link set "$EXC_A" up
	ip -n "$NSB" addr add 10.217.2.2/24 dev "$EXC_B" && ip -n "$NSB" link set "$EXC_B" up
	ip netns exec "$NSB" ping -c 3 -i 0.2 -q 10.217.2.1 >/dev/null || topo_fail "no ping over the exception path"
}
memif_up 1500
iperf_start 10.217.2.1
iperf_wait; exc_mbps=$MBPS
topo_log "TCP through the exception path (memif + TAP), MTU 1500: $exc_mbps Mbit/s"
rtt_series m "$(viad_sock A-m)" "$(viad_sock B-m)" $MAC_A 10.217.2.1
viad_stop B-m
viad_stop A-m

# 3. af_xdp with viad's XDP program, over the veth
for side in A B; do
	if [ $side = A ]; then veth=$VETH_A; else veth=$VETH_B; fi
	printf '[viad]\nlog_level = info\n%s\nxdp_prog = %s\n[port via0]\nglue = ethdev\ndevargs = net_af_xdp0,iface=%s\n' \
		"$REL_SLACK" "$XDP_PROG" $veth >"$RUN/x-$side.conf"
done
XMAC_A=$(ip -n "$NSA" -o link show dev "$VETH_A" | sed -n 's|.*link/ether \([0-9a-f:]*\).*|\1|p')
start_viad A-x "$NSA" "$RUN/x-A.conf" "$CPU0" "$CPU1" || exit 1
start_viad B-x "$NSB" "$RUN/x-B.conf" "$CPU1" "$CPU0" || exit 1
rtt_series x "$(viad_sock A-x)" "$(viad_sock B-x)" "$XMAC_A" 10.217.1.1
viad_stop B-x
viad_stop A-x

ratio() { python3 -c "import sys; a, b = float(sys.argv[1] or 0), float(sys.argv[2] or 0); print('%.2f' % (a / b) if b else 'n/a')" "$1" "$2"; }
echo "==== ipcoexist_bench ($(date -u +%H:%M) UTC, $(nproc) CPUs) ===="
echo "TCP plain veth                      $veth_mbps Mbit/s"
echo "TCP exception path (memif + TAP)    MTU 1500: $exc_mbps Mbit/s, ratio to veth $(ratio "$exc_mbps" "$veth_mbps")"
echo "VIA 64 B RTT p50, memif             alone $m_alone us; beside TCP ($m_full_mbps Mbit/s) $m_full us (x$(ratio "$m_full" "$m_alone")); beside $RATE ($m_rate_mbps Mbit/s) $m_rate us (x$(ratio "$m_rate" "$m_alone"))"
echo "VIA 64 B RTT p50, af_xdp + XDP      alone $x_alone us; beside TCP ($x_full_mbps Mbit/s) $x_full us (x$(ratio "$x_full" "$x_alone")); beside $RATE ($x_rate_mbps Mbit/s) $x_rate us (x$(ratio "$x_rate" "$x_alone"))"
echo "least p50 of a round, memif      alone $m_alone_min us; beside TCP $m_full_min us (x$(ratio "$m_full_min" "$m_alone_min")); beside $RATE $m_rate_min us (x$(ratio "$m_rate_min" "$m_alone_min"))"
echo "least p50 of a round, af_xdp     alone $x_alone_min us; beside TCP $x_full_min us (x$(ratio "$x_full_min" "$x_alone_min")); beside $RATE $x_rate_min us (x$(ratio "$x_rate_min" "$x_alone_min"))"
exit $TOPO_FAILED
