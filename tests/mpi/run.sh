#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# tests/mpi/run.sh BUILD_DIR: the libfabric provider "via" (fabric/) under
# programs nobody here wrote (issue 17), each with a bounded timeout:
#
#  1. one viad (loopback NIC): fi_info -p via; fi_check (the provider's
#     API beyond what the others use: RMA, peek/claim, cancel, truncation,
#     remote CQ data, a sleeping fi_cq_sread); fi_pingpong -e rdm between
#     two processes, message and tagged mode, the default sizes and every
#     size of -S all, and FI_EP_MSG endpoints (-e msg), data checked (-c);
#     fi_addr (a host name from viad's hosts file and a service, RDM and
#     MSG endpoints, nothing out of band); Open MPI (pml cm, mtl ofi,
#     provider via) running tests/mpi's mpi_p2p and mpi_coll on 2 and 4
#     ranks (4 on a 2-CPU machine is oversubscribed), mpi_pingpong on 2,
#     and mpi_bibw (both directions at once, rendezvous both ways) on 2 and
#     4, which must make viad send no frame again;
#  2. two viads joined by memif (as tests/topo/memif.sh): fi_pingpong,
#     fi_addr, mpi_bibw (no frame sent again) and mpi_p2p with one rank on
#     each viad, then mpi_pingpong across FABRIC_UPGRADES (6) `viactl
#     upgrade`s of the two viads in turn (issue 32; 0 skips it), then
#     fi_break: viad B is killed under a client on A with operations
#     pending, which must all fail (FI_EIO) within 10 s (FABRIC_MEMIF=0
#     skips this part).
#
# Needs root (viad), fi_pingpong (libfabric-bin) and mpirun (openmpi-bin);
# without them it exits 77 (skipped). Every viad gets its own socket and
# instance (DPDK file prefix) and backoff polling; everything started here
# is stopped by PID on exit. Ends with "N passed, N failed" and a non-zero
# status if anything failed; the logs of failed steps are printed.
#
# Environment: FABRIC_TIMEOUT (seconds per step, 180), FABRIC_MEMIF (1).
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
BUILD=$(cd "${1:-$HERE/../../build}" 2>/dev/null && pwd) ||
	{ echo "run.sh: no build dir '${1:-}'" >&2; exit 2; }
STEP_TIMEOUT=${FABRIC_TIMEOUT:-180}
MEMIF=${FABRIC_MEMIF:-1}
UPGRADES=${FABRIC_UPGRADES:-6}
UPGRADE_ITERS=${FABRIC_UPGRADE_ITERS:-40000}
VIAD=$BUILD/daemon/viad
VIACTL=$BUILD/tools/viactl/viactl
PROV=$BUILD/fabric/libvia-fi.so
MPI_DIR=$BUILD/tests/mpi

[ "$(id -u)" = 0 ] || { echo "run.sh: SKIP: viad needs root" >&2; exit 77; }
for t in fi_info fi_pingpong mpirun; do
	command -v "$t" >/dev/null || { echo "run.sh: SKIP: no $t (libfabric-bin, openmpi-bin)" >&2; exit 77; }
done
[ -x "$MPI_DIR/mpi_p2p" ] || { echo "run.sh: SKIP: MPI programs not built (libopenmpi-dev)" >&2; exit 77; }
for t in fi_check fi_break fi_addr; do
	[ -x "$MPI_DIR/$t" ] || { echo "run.sh: no $MPI_DIR/$t" >&2; exit 2; }
done
[ -x "$VIAD" ] && [ -f "$PROV" ] || { echo "run.sh: no viad or $PROV" >&2; exit 2; }

RUN=$(mktemp -d /tmp/via-fabric.XXXXXX) || exit 2
TAG=fab$$
PASSED=0
FAILED=0
FAILED_LOGS=()
declare -A VIAD_PID=()
BG_PIDS=()

log() { printf '%s run.sh: %s\n' "$(date +%H:%M:%S)" "$*"; }

alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

stop_pid() {
	local pid=$1 i
	alive "$pid" || return 0
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		alive "$pid" || break
		sleep 0.1
	done
	alive "$pid" && kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

cleanup() {
	local pid name
	for pid in "${BG_PIDS[@]}"; do stop_pid "$pid"; done
	for name in "${!VIAD_PID[@]}"; do stop_pid "${VIAD_PID[$name]}"; done
	for name in "${!VIAD_PID[@]}"; do rm -rf "/var/run/dpdk/$TAG-$name"; done
	if [ "$FAILED" -eq 0 ]; then
		rm -rf "$RUN"
	else
		echo "run.sh: logs kept in $RUN"
	fi
}
trap cleanup EXIT
trap 'FAILED=$((FAILED + 1)); exit 143' TERM INT HUP

# viad_start NAME [ARGS...]: its own socket, instance and log; waits 20 s
viad_start() {
	local name=$1 sock=$RUN/$1.sock i
	shift
	"$VIAD" -s "$sock" --set "viad.instance=$TAG-$name" --set viad.poll_mode=backoff "$@" \
		>"$RUN/viad-$name.log" 2>&1 </dev/null &
	VIAD_PID[$name]=$!
	for ((i = 0; i < 400; i++)); do
		[ -S "$sock" ] && return 0
		alive "${VIAD_PID[$name]}" || break
		sleep 0.05
	done
	log "viad $name did not start:"
	cat "$RUN/viad-$name.log"
	return 1
}

result() {
	local name=$1 rc=$2
	if [ "$rc" -eq 0 ]; then
		PASSED=$((PASSED + 1))
		log "PASS $name"
	else
		FAILED=$((FAILED + 1))
		FAILED_LOGS+=("$name")
		log "FAIL $name (status $rc${3:+, $3})"
	fi
}

# step NAME CMD...: run with the step timeout, output in $RUN/NAME.log
step() {
	local name=$1 rc
	shift
	timeout -k 10 "$STEP_TIMEOUT" "$@" >"$RUN/$name.log" 2>&1
	rc=$?
	result "$name" $rc "$([ $rc -eq 124 ] && echo "timed out after $STEP_TIMEOUT s")"
}

# A TCP port nobody listens on, for fi_pingpong's control connection.
free_port() {
	local p hex
	for ((p = 20000 + ($$ * 7) % 30000; p < 65000; p++)); do
		hex=$(printf ':%04X ' "$p")
		grep -q "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null || { echo "$p"; return; }
	done
}

# Is a socket listening (state 0A) on TCP port $1?
listening() {
	awk -v p=":$(printf '%04X' "$1")" '$2 ~ p"$" && $4 == "0A" { f = 1 } END { exit !f }' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# pp_pair NAME SERVER_SOCKET CLIENT_SOCKET [fi_pingpong ARGS...]: the server
# on one viad, then the client (on the same or another viad); both must pass.
pp_pair() {
	local name=$1 ssock=$2 csock=$3 port spid rc src i
	shift 3
	port=$(free_port)
	VIAD_SOCKET=$ssock timeout -k 10 "$STEP_TIMEOUT" fi_pingpong -p via -e rdm -B "$port" "$@" \
		>"$RUN/$name-server.log" 2>&1 &
	spid=$!
	BG_PIDS+=("$spid")
	for ((i = 0; i < 400; i++)); do
		listening "$port" && break
		alive "$spid" || break
		sleep 0.05
	done
	VIAD_SOCKET=$csock timeout -k 10 "$STEP_TIMEOUT" fi_pingpong -p via -e rdm -P "$port" "$@" \
		127.0.0.1 >"$RUN/$name.log" 2>&1
	rc=$?
	wait "$spid"
	src=$?
	cat "$RUN/$name-server.log" >>"$RUN/$name.log"
	[ $rc -eq 0 ] && rc=$src
	# fi_pingpong prints a table row per size: it ran them all
	[ $rc -eq 0 ] && ! grep -q '^[0-9.]*[km]\? \+[0-9]' "$RUN/$name.log" && rc=3
	result "$name" $rc
}

# addr_pair NAME SERVER_SOCKET CLIENT_SOCKET NODE: fi_addr's server binds a
# service on one viad, its client finds it by NODE (a name in the viads'
# hosts file) and the service, nothing passed out of band (issue 27).
addr_pair() {
	local name=$1 ssock=$2 csock=$3 node=$4 svc spid rc src
	svc=$((20000 + ($$ * 13 + ${#name} * 101) % 20000))
	VIAD_SOCKET=$ssock timeout -k 10 "$STEP_TIMEOUT" "$MPI_DIR/fi_addr" server "$svc" \
		>"$RUN/$name-server.log" 2>&1 &
	spid=$!
	BG_PIDS+=("$spid")
	VIAD_SOCKET=$csock timeout -k 10 "$STEP_TIMEOUT" "$MPI_DIR/fi_addr" client "$node" "$svc" \
		>"$RUN/$name.log" 2>&1
	rc=$?
	wait "$spid"
	src=$?
	cat "$RUN/$name-server.log" >>"$RUN/$name.log"
	[ $rc -eq 0 ] && rc=$src
	result "$name" $rc
}

# frames_retransmitted of viad NAME
retransmitted() {
	"$VIACTL" -i "$TAG-$1" counters | awk '$1 == "frames_retransmitted" { print $2 }'
}

# bibw_step NAME "VIADS" MPIRUN-ARGS...: mpi_bibw (both directions at once,
# 64 messages each way, every byte checked), and not one frame sent again
# by the viads named (their ports lose nothing).
bibw_step() {
	local name=$1 viads=$2 v before=() after i=0 rc
	shift 2
	for v in $viads; do before+=("$(retransmitted "$v")"); done
	timeout -k 10 "$STEP_TIMEOUT" "$@" >"$RUN/$name.log" 2>&1
	rc=$?
	for v in $viads; do
		after=$(retransmitted "$v")
		echo "viad $v: frames_retransmitted ${before[$i]} -> $after" >>"$RUN/$name.log"
		[ $rc -eq 0 ] && [ "$after" != "${before[$i]}" ] && rc=4
		i=$((i + 1))
	done
	result "$name" $rc "$([ $rc -eq 4 ] && echo "frames were retransmitted")"
}

# A broken connection fails every pending operation within a bound (issue
# 27): fi_break's client on viad A has sends and directed receives pending
# with its server on viad B when viad B is killed.
break_step() {
	local dir=$RUN/break spid cpid rc i

	mkdir -p "$dir"
	VIAD_SOCKET=$SB timeout -k 5 "$STEP_TIMEOUT" "$MPI_DIR/fi_break" server "$dir" \
		>"$RUN/memif-break-server.log" 2>&1 &
	spid=$!
	BG_PIDS+=("$spid")
	VIAD_SOCKET=$SA timeout -k 5 "$STEP_TIMEOUT" "$MPI_DIR/fi_break" client "$dir" 10 \
		>"$RUN/memif-break.log" 2>&1 &
	cpid=$!
	for ((i = 0; i < 1200; i++)); do
		[ -e "$dir/ready" ] && break
		alive "$cpid" || break
		sleep 0.05
	done
	if [ -e "$dir/ready" ]; then
		kill -KILL "${VIAD_PID[B]}"
		wait "${VIAD_PID[B]}" 2>/dev/null
		# a viad killed hard leaves its hugepage files
		rm -f /dev/hugepages/"$TAG"-Bmap_*
		touch "$dir/killed"
	else
		touch "$dir/gave-up"
	fi
	wait "$cpid"
	rc=$?
	stop_pid "$spid"
	cat "$RUN/memif-break-server.log" >>"$RUN/memif-break.log"
	result memif-break $rc
}

MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none
	--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include via
	-x FI_PROVIDER_PATH -x FI_PROVIDER -x LD_LIBRARY_PATH)

export FI_PROVIDER_PATH=$BUILD/fabric
export FI_PROVIDER=via
export LD_LIBRARY_PATH=$BUILD/lib/viad${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI's session directories stay in the run dir
export TMPDIR=$RUN

log "run dir $RUN, build $BUILD"

# ---- 1. one viad --------------------------------------------------------
# viad's name service: the loopback NIC and the memif ends of part 2
cat >"$RUN/hosts" <<HOSTS
fabhost 02:00:00:00:00:00
fabhost-a $MEMIF_MAC_A
fabhost-b $MEMIF_MAC_B
HOSTS
viad_start one --set viad.hosts="$RUN/hosts" || { FAILED=$((FAILED + 1)); exit 1; }
S1=$RUN/one.sock
export VIAD_SOCKET=$S1

step fi_info bash -c 'fi_info -p via -t FI_EP_RDM && fi_info -p via -v | grep -q "FI_EP_RDM"'
step fi_check "$MPI_DIR/fi_check"
pp_pair pingpong-msg "$S1" "$S1" -I 100 -c
pp_pair pingpong-tagged "$S1" "$S1" -m tagged -I 100 -c
pp_pair pingpong-all-sizes "$S1" "$S1" -S all -I 10 -c
pp_pair pingpong-msg-ep "$S1" "$S1" -e msg -I 100 -c
addr_pair fi_addr "$S1" "$S1" fabhost
for np in 2 4; do
	for prog in mpi_p2p mpi_coll; do
		step "$prog-np$np" "${MPIRUN[@]}" -x VIAD_SOCKET -np "$np" "$MPI_DIR/$prog"
	done
done
step mpi_pingpong-np2 "${MPIRUN[@]}" -x VIAD_SOCKET -np 2 "$MPI_DIR/mpi_pingpong" -n 200
# issue 27: both directions at once, rendezvous (RDMA Read) both ways
bibw_step mpi_bibw-np2 one "${MPIRUN[@]}" -x VIAD_SOCKET -np 2 "$MPI_DIR/mpi_bibw" -n 2
bibw_step mpi_bibw-np4 one "${MPIRUN[@]}" -x VIAD_SOCKET -np 4 "$MPI_DIR/mpi_bibw" -n 1 \
	-m 131072 -M 1048576

# ---- 3. (within 2) an MPI job across upgrades of both viads ----------------
#
# mpi_pingpong with one rank on each viad, its messages numbered and
# checked, while `viactl upgrade` hands A and B over to their own binary in
# turn (docs/design.md section 18): the job must end well, every upgrade
# must say "upgraded", and the blackouts are printed.
upgrades_under_mpi() {
	local pid n=0 rc side out
	"${MPIRUN[@]}" -np 1 -x VIAD_SOCKET="$SA" "$MPI_DIR/mpi_pingpong" -n "$UPGRADE_ITERS" \
		-s 8 -s 65536 : -np 1 -x VIAD_SOCKET="$SB" "$MPI_DIR/mpi_pingpong" \
		-n "$UPGRADE_ITERS" -s 8 -s 65536 >"$RUN/mpi-upgrades.log" 2>&1 &
	pid=$!
	BG_PIDS+=("$pid")
	sleep 2
	while [ $n -lt "$UPGRADES" ] && alive "$pid"; do
		side=$([ $((n % 2)) = 0 ] && echo A || echo B)
		out=$("$VIACTL" -i "$TAG-$side" --json upgrade 2>&1)
		echo "upgrade $((n + 1)) of viad $side: $out" >>"$RUN/mpi-upgrades.log"
		case $out in
		*'"result": "upgraded"'*) ;;
		*) result "mpi-upgrade-$((n + 1))" 1 "viactl: $out" ;;
		esac
		log "# RESULT mpi upgrade $((n + 1)) viad $side blackout_us=$(sed -n \
			's/.*"blackout_us": \([0-9]*\).*/\1/p' <<<"$out")"
		n=$((n + 1))
		sleep 1
	done
	timeout -k 10 "$STEP_TIMEOUT" tail --pid="$pid" -f /dev/null
	wait "$pid"
	rc=$?
	[ $rc -eq 0 ] && [ $n -lt 2 ] && rc=4     # too few upgrades crossed the job
	result memif-mpi-upgrades $rc "$n upgrades during the job"
}

# ---- 2. two viads joined by memif -----------------------------------------
if [ "$MEMIF" = 1 ]; then
	memif_confs "$RUN"
	if viad_start A -c "$RUN/A.conf" --set viad.hosts="$RUN/hosts" &&
		viad_start B -c "$RUN/B.conf" --set viad.hosts="$RUN/hosts"; then
		SA=$RUN/A.sock
		SB=$RUN/B.sock
		pp_pair memif-pingpong "$SA" "$SB" -I 50 -c
		addr_pair memif-fi_addr "$SA" "$SB" fabhost-a
		bibw_step memif-mpi_bibw-np2 "A B" "${MPIRUN[@]}" \
			-np 1 -x VIAD_SOCKET="$SA" "$MPI_DIR/mpi_bibw" -n 1 -M 1048576 : \
			-np 1 -x VIAD_SOCKET="$SB" "$MPI_DIR/mpi_bibw" -n 1 -M 1048576
		step memif-mpi_p2p-np2 "${MPIRUN[@]}" \
			-np 1 -x VIAD_SOCKET="$SA" "$MPI_DIR/mpi_p2p" : \
			-np 1 -x VIAD_SOCKET="$SB" "$MPI_DIR/mpi_p2p"
		[ "$UPGRADES" -gt 0 ] && upgrades_under_mpi
		# last: it kills viad B
		break_step
	else
		result memif-viads 1 "viad A or B did not start"
	fi
fi

for name in "${FAILED_LOGS[@]}"; do
	echo "---- $name ($RUN/$name.log, last 40 lines)"
	tail -n 40 "$RUN/$name.log"
done
for name in "${!VIAD_PID[@]}"; do
	if [ "$FAILED" -ne 0 ]; then
		echo "---- viad $name"
		tail -n 20 "$RUN/viad-$name.log"
	fi
done
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
