# SPDX-License-Identifier: BSD-3-Clause
#
# tests/topo/lib.sh: shared helpers of the topology scripts (bash; source it).
#
#   topo_init NAME BUILD_DIR [TOPO_CHECK]   run dir, paths, cleanup trap
#   topo_cpus                               "CPU_A CPU_B": two CPUs we may use
#   topo_eal NAME CPU0 CPU1                 EAL arguments for viad NAME
#   viad_start NAME [--netns NS] [VIAD ARGS...]
#                                           start a viad (unique instance, own
#                                           socket and log in the run dir) and
#                                           wait (20 s) for its socket
#   viad_stop NAME                          SIGTERM, wait 10 s; SIGKILL + failure
#   viad_sock NAME / viad_log NAME          its socket / log path
#   netns_add NS                            create a netns (deleted by cleanup)
#   veth_pair NS_A IF_A NS_B IF_B           a veth pair between two of them, up
#   if_mac NS IFACE                         the MAC of an interface
#   check_start NAME SOCKET ARGS...         topo_check in the background
#   check_run NAME SOCKET ARGS...           topo_check in the foreground
#   check_wait NAME                         exit status of a background check
#   pair_check LABEL SRV_SOCK CLI_SOCK SRV_MAC [TOPO_CHECK ARGS...]
#                                           topo_check --server on one viad,
#                                           --client on the other; failure
#                                           recorded unless both pass
#   legacy_pair LABEL SRV_SOCK CLI_SOCK HOST
#                                           vipl_legacy server on one viad,
#                                           client -H HOST on the other (or
#                                           the same); failure recorded
#                                           unless both pass
#   topo_modes                              the checks to run (TOPO_MODES)
#   mode_set MODE                           MODE_TAG (label suffix) and
#                                           MODE_ARGS (topo_check arguments,
#                                           after the others) of a check
#   topo_fail MSG                           record a failure (exit status 1)
#
# Every topology runs each check of TOPO_MODES ("send rdma"): send is
# send/receive on Unreliable Delivery VIs, rdma is topo_check --rdma (RDMA
# Write and RDMA Read, 1 B .. MaxTransferSize at offsets across pages, on
# Reliable Delivery VIs), TOPO_RDMA_ROUNDS rounds (TOPO_ROUNDS).
#
# Environment: TOPO_ROUNDS (300), TOPO_SEED (random), TOPO_MEM ("pmem heap":
# one pair_check per memory kind), TOPO_ZERO_COPY (set by the scripts: see
# mem_args), TOPO_CHECK_TIMEOUT (120 s per topo_check),
# TOPO_VIAD_ARGS (more viad options, e.g. "--set port.via0.mtu=9000"),
# TOPO_VIAD_ARGS_A / _B / _L (the same, for viad A, B or L only),
# TOPO_CHECK_ARGS (more topo_check options, e.g. "--max-size 1000").
#
# loopback.sh and memif.sh also run apps/vipl_legacy (a VIPL program written
# as in 1999: heap buffers, a CQ, VipNSGetHostByName on viad's hosts file,
# Reliable Reception, RDMA Write) between two processes: TOPO_LEGACY (1; 0
# skips it), TOPO_LEGACY_ROUNDS (200 messages), TOPO_LEGACY_TIMEOUT (60 s
# per process), VIPL_LEGACY (default BUILD_DIR/apps/vipl_legacy).
#
# Every process, namespace and file this library creates is recorded and
# removed by the EXIT trap, whatever happens; nothing else is ever touched
# (processes are killed by PID only). On failure the logs of the viads and
# of topo_check are printed and the run dir is kept; TOPO_KEEP=1 keeps it
# always.

set -u

TOPO_NAME=
TOPO_TAG=
RUN=
BUILD=
VIAD=
LIBDIR=
TOPO_CHECK=
VIPL_LEGACY=${VIPL_LEGACY:-}
TOPO_FAILED=0
TOPO_T0=
declare -A VIAD_PID=()
declare -A CHECK_PID=()
TOPO_VIADS=()          # names, in start order
TOPO_NETNS=()          # namespaces we created
declare -A TOPO_BG=()  # background topo_check PIDs not reaped yet
TOPO_INSTANCES=()      # DPDK file prefixes used, for /var/run/dpdk cleanup

topo_log() {
	printf '%s %s: %s\n' "$(date +%H:%M:%S.%3N)" "$TOPO_NAME" "$*"
}

topo_fail() {
	TOPO_FAILED=1
	printf '%s %s: FAIL: %s\n' "$(date +%H:%M:%S.%3N)" "$TOPO_NAME" "$*" >&2
}

# seconds since topo_init, with milliseconds
topo_elapsed() {
	local now
	now=$(date +%s%N)
	printf '%d.%03d' $(((now - TOPO_T0) / 1000000000)) $((((now - TOPO_T0) / 1000000) % 1000))
}

# A live process (a zombie child that was not reaped yet is not live).
pid_alive() {
	local st
	[ -r "/proc/$1/stat" ] || return 1
	# the state follows the last ')' (the command name may hold anything)
	st=$(sed -n 's/.*) \(.\).*/\1/p' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

topo_init() {
	TOPO_NAME=$1
	BUILD=$(cd "$2" 2>/dev/null && pwd) || { echo "$TOPO_NAME: no build dir '$2'" >&2; exit 2; }
	VIAD=$BUILD/daemon/viad
	LIBDIR=$BUILD/lib/viad
	TOPO_CHECK=${3:-}
	VIPL_LEGACY=${VIPL_LEGACY:-$BUILD/apps/vipl_legacy}
	if [ -z "$TOPO_CHECK" ]; then
		for c in "$BUILD/tests/topo/topo_check" "$BUILD/tests/topo_check"; do
			[ -x "$c" ] && TOPO_CHECK=$c && break
		done
	fi
	[ -x "$VIAD" ] || { echo "$TOPO_NAME: no viad at $VIAD" >&2; exit 2; }
	if [ -z "$TOPO_CHECK" ] || [ ! -x "$TOPO_CHECK" ]; then
		echo "$TOPO_NAME: no topo_check (give its path as \$2)" >&2
		exit 2
	fi
	# 77: "skipped" for meson test
	[ "$(id -u)" = 0 ] || { echo "$TOPO_NAME: SKIP: must run as root" >&2; exit 77; }
	# short and unique among concurrent runs: instance names, netns, veths
	TOPO_TAG=tp$$
	RUN=$(mktemp -d "/tmp/via-topo-$TOPO_NAME.XXXXXX") || exit 2
	TOPO_T0=$(date +%s%N)
	: "${TOPO_SEED:=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}"
	trap topo_cleanup EXIT
	trap 'topo_fail "interrupted by a signal"; exit 143' TERM INT HUP
	topo_log "run dir $RUN, viad $VIAD, topo_check $TOPO_CHECK, seed $TOPO_SEED"
}

# Two CPUs this process may run on (the same one twice on a one-CPU machine).
topo_cpus() {
	local list cpus=() part a b i
	list=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
	IFS=, read -ra parts <<<"$list"
	for part in "${parts[@]}"; do
		if [[ $part == *-* ]]; then
			a=${part%-*}; b=${part#*-}
			for ((i = a; i <= b && ${#cpus[@]} < 2; i++)); do cpus+=("$i"); done
		else
			cpus+=("$part")
		fi
		[ ${#cpus[@]} -ge 2 ] && break
	done
	[ ${#cpus[@]} -ge 1 ] || cpus=(0)
	[ ${#cpus[@]} -ge 2 ] || cpus+=("${cpus[0]}")
	echo "${cpus[0]} ${cpus[1]}"
}

# EAL arguments for viad NAME: main lcore on CPU0, poll lcore on CPU1, its
# own file prefix, and hugepages only when enough are free (as viad does).
topo_eal() {
	local name=$1 c0=$2 c1=$3 free=0
	local f=/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages
	[ -r $f ] && free=$(cat $f)
	printf -- '--lcores=0@%s,1@%s --file-prefix=%s --no-pci ' "$c0" "$c1" "$TOPO_TAG-$name"
	if [ "$free" -ge 64 ]; then
		printf -- '--in-memory\n'
	else
		printf -- '--no-huge --no-shconf -m 256\n'
	fi
}

viad_sock() { echo "$RUN/$1.sock"; }
viad_log() { echo "$RUN/$1.log"; }

# viad_start NAME [--netns NS] [VIAD ARGS...]: the instance name and the
# socket are set here; a config file and EAL arguments come with the args.
viad_start() {
	local name=$1 ns='' pid sock log inst deadline st
	shift
	if [ "${1:-}" = --netns ]; then
		ns=$2
		shift 2
	fi
	sock=$(viad_sock "$name")
	log=$(viad_log "$name")
	inst=$TOPO_TAG-$name
	rm -f "$sock"
	local -a extra=() extra_side=()
	local side_var=TOPO_VIAD_ARGS_${name%%-*}
	# TOPO_VIAD_ARGS: more viad options for every viad (before "--");
	# TOPO_VIAD_ARGS_A, _B, _L: for viad A (A-af_xdp, ...), B or L only
	read -ra extra <<<"${TOPO_VIAD_ARGS:-}"
	read -ra extra_side <<<"${!side_var:-}"
	extra+=("${extra_side[@]}")
	local -a cmd=("$VIAD" -s "$sock" --set "viad.instance=$inst" "${extra[@]}" "$@")
	if [ -n "$ns" ]; then
		# bpffs in the private mount namespace of "ip netns exec" only:
		# libxdp wants it; exec keeps the PID
		cmd=(ip netns exec "$ns" sh -c \
			'mount -t bpf bpf /sys/fs/bpf 2>/dev/null; exec "$@"' viad "${cmd[@]}")
	fi
	echo "# ${cmd[*]}" >"$log"
	"${cmd[@]}" >>"$log" 2>&1 </dev/null &
	pid=$!
	VIAD_PID[$name]=$pid
	TOPO_VIADS+=("$name")
	TOPO_INSTANCES+=("$inst")
	deadline=$((SECONDS + 20))
	while [ ! -S "$sock" ]; do
		if ! pid_alive "$pid"; then
			wait "$pid"
			st=$?
			VIAD_PID[$name]=
			topo_log "viad $name exited with status $st before its socket appeared:"
			sed "s/^/  $name| /" "$log" >&2
			return 1
		fi
		if [ $SECONDS -ge $deadline ]; then
			topo_fail "viad $name: no socket $sock after 20 s"
			return 1
		fi
		sleep 0.05
	done
	topo_log "viad $name up (pid $pid${ns:+, netns $ns}) at $(topo_elapsed) s"
	return 0
}

# viad_stop NAME: SIGTERM, at most 10 s for it to exit, else SIGKILL and a
# failure. Returns viad's exit status (or 1 if it hung).
viad_stop() {
	local name=$1 pid st deadline
	pid=${VIAD_PID[$name]:-}
	[ -n "$pid" ] || return 0
	VIAD_PID[$name]=
	if pid_alive "$pid"; then
		kill -TERM "$pid" 2>/dev/null
		deadline=$((SECONDS + 10))
		while pid_alive "$pid" && [ $SECONDS -lt $deadline ]; do
			sleep 0.05
		done
		if pid_alive "$pid"; then
			kill -KILL "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
			topo_fail "viad $name (pid $pid) still running 10 s after SIGTERM: killed"
			return 1
		fi
	fi
	wait "$pid" 2>/dev/null
	st=$?
	if [ $st -ne 0 ]; then
		topo_fail "viad $name exited with status $st"
		return $st
	fi
	topo_log "viad $name stopped"
	return 0
}

netns_add() {
	ip netns add "$1" || { topo_fail "ip netns add $1"; return 1; }
	TOPO_NETNS+=("$1")
}

# veth_pair NS_A IF_A NS_B IF_B: IF_A in NS_A joined to IF_B in NS_B, both
# up; they go with the namespaces
veth_pair() {
	if ! ip link add "$2" netns "$1" type veth peer name "$4" netns "$3" ||
	   ! ip -n "$1" link set "$2" up || ! ip -n "$3" link set "$4" up; then
		topo_fail "cannot create the veth pair $2/$4"
		return 1
	fi
}

if_mac() { # NS IFACE
	ip -n "$1" -o link show dev "$2" 2>/dev/null | sed -n 's|.*link/ether \([0-9a-f:]*\).*|\1|p'
}

# af_packet_pair NAME VETH: two namespaces joined by a veth pair (VETH<pid>a
# and VETH<pid>b: short, as interface names must be), viad A in one and B
# in the other (net_af_packet, log level info, backoff polling). Sets NSA,
# NSB, VETH_A, VETH_B and MAC_A (A's port). Returns 1 once a failure is
# reported.
af_packet_pair() {
	local name=$1 side veth cpu0 cpu1
	NSA=via-$name-$$-a
	NSB=via-$name-$$-b
	VETH_A=$2$$a
	VETH_B=$2$$b
	read -r cpu0 cpu1 < <(topo_cpus)
	netns_add "$NSA" || return 1
	netns_add "$NSB" || return 1
	veth_pair "$NSA" "$VETH_A" "$NSB" "$VETH_B" || return 1
	MAC_A=$(if_mac "$NSA" "$VETH_A")
	[ -n "$MAC_A" ] || { topo_fail "cannot read $VETH_A's MAC"; return 1; }
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
	viad_start A --netns "$NSA" -c "$RUN/A.conf" -- $(topo_eal A "$cpu0" "$cpu1") || return 1
	# shellcheck disable=SC2046
	viad_start B --netns "$NSB" -c "$RUN/B.conf" -- $(topo_eal B "$cpu1" "$cpu0")
}

# check_start NAME SOCKET ARGS...: topo_check in the background, output in
# $RUN/NAME.out.
check_start() {
	local name=$1 sock=$2
	shift 2
	local -a extra=()
	# TOPO_CHECK_ARGS: more topo_check options for every run
	read -ra extra <<<"${TOPO_CHECK_ARGS:-}"
	set -- "$@" "${extra[@]}"
	VIAD_SOCKET=$sock LD_LIBRARY_PATH=$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
		"$TOPO_CHECK" "$@" >"$RUN/$name.out" 2>&1 </dev/null &
	CHECK_PID[$name]=$!
	TOPO_BG[$!]=1
}

# check_wait NAME [TIMEOUT_S]: its exit status (124 after TIMEOUT_S, killed).
check_wait() {
	local name=$1 limit=${2:-120} pid deadline
	pid=${CHECK_PID[$name]}
	deadline=$((SECONDS + limit))
	while pid_alive "$pid" && [ $SECONDS -lt $deadline ]; do
		sleep 0.05
	done
	# reaped below: from then on the PID may be anyone's, never signal it
	unset "TOPO_BG[$pid]"
	if pid_alive "$pid"; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		echo "(killed after $limit s)" >>"$RUN/$name.out"
		return 124
	fi
	wait "$pid"
}

check_run() {
	local name=$1
	check_start "$@"
	check_wait "$name" "${TOPO_CHECK_TIMEOUT:-120}"
}

check_print() {
	sed "s/^/  $1| /" "$RUN/$1.out"
}

# pair_check LABEL SRV_SOCK CLI_SOCK SRV_MAC [ARGS...]: one server/client
# run per memory kind of TOPO_MEM.
# mem_args MEM: topo_check's arguments for memory kind MEM (pmem, heap):
# provider memory and heap memory (shared with viad in place since issue 12)
# go zero-copy where the script says its port allows it (TOPO_ZERO_COPY yes
# or no; unset: either; docs/design.md, section 9)
mem_args() {
	local heap=
	[ "$1" = heap ] && heap=--heap
	echo $heap ${TOPO_ZERO_COPY:+--zero-copy "$TOPO_ZERO_COPY"}
}

pair_check() {
	local label=$1 ssock=$2 csock=$3 mac=$4 mem disc cst sst t0 ok=0
	shift 4
	for mem in ${TOPO_MEM:-pmem heap}; do
		local -a margs
		read -r -a margs < <(mem_args "$mem")
		disc=topo-$label-$mem-$$
		t0=$(date +%s%N)
		check_start "srv-$label-$mem" "$ssock" --server -D "$disc" -s "$TOPO_SEED" \
			"${margs[@]}" "$@"
		check_run "cli-$label-$mem" "$csock" --client "$mac" -D "$disc" -s "$TOPO_SEED" \
			-n "${TOPO_ROUNDS:-300}" "${margs[@]}" "$@"
		cst=$?
		check_wait "srv-$label-$mem" 30
		sst=$?
		check_print "srv-$label-$mem"
		check_print "cli-$label-$mem"
		if [ $cst -eq 0 ] && [ $sst -eq 0 ]; then
			topo_log "$label $mem memory: PASS in $((($(date +%s%N) - t0) / 1000000)) ms"
		else
			topo_fail "$label $mem memory: client status $cst, server status $sst"
			ok=1
		fi
	done
	return $ok
}

# legacy_pair LABEL SRV_SOCK CLI_SOCK HOST: vipl_legacy server on the viad
# of SRV_SOCK, then its client on the viad of CLI_SOCK, which finds the
# server by HOST (a name of viad's hosts file). Both are bounded by
# TOPO_LEGACY_TIMEOUT; a failure is recorded unless both exit 0.
legacy_pair() {
	local label=$1 ssock=$2 csock=$3 host=$4 spid cst sst t0
	local n=${TOPO_LEGACY_ROUNDS:-200} limit=${TOPO_LEGACY_TIMEOUT:-60}
	local disc=legacy-$label-$$ lib=$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	[ "${TOPO_LEGACY:-1}" = 0 ] && return 0
	if [ ! -x "$VIPL_LEGACY" ]; then
		topo_fail "$label: no vipl_legacy at $VIPL_LEGACY (build it, or set VIPL_LEGACY)"
		return 1
	fi
	t0=$(date +%s%N)
	VIAD_SOCKET=$ssock LD_LIBRARY_PATH=$lib timeout -k 5 "$limit" "$VIPL_LEGACY" server \
		-d via0 -n "$n" -D "$disc" -s "$TOPO_SEED" >"$RUN/srv-$label.out" 2>&1 </dev/null &
	spid=$!
	TOPO_BG[$spid]=1
	VIAD_SOCKET=$csock LD_LIBRARY_PATH=$lib timeout -k 5 "$limit" "$VIPL_LEGACY" client \
		-d via0 -H "$host" -n "$n" -D "$disc" >"$RUN/cli-$label.out" 2>&1 </dev/null
	cst=$?
	# timeout bounds the server too
	while pid_alive "$spid"; do
		sleep 0.05
	done
	# reaped below: from then on the PID may be anyone's, never signal it
	unset "TOPO_BG[$spid]"
	wait "$spid"
	sst=$?
	check_print "srv-$label"
	check_print "cli-$label"
	if [ $cst -eq 0 ] && [ $sst -eq 0 ]; then
		topo_log "$label: PASS in $((($(date +%s%N) - t0) / 1000000)) ms"
		return 0
	fi
	if [ $cst -eq 124 ] || [ $sst -eq 124 ]; then
		topo_log "$label: killed after $limit s"
	fi
	topo_fail "$label: vipl_legacy client status $cst, server status $sst"
	return 1
}

topo_modes() {
	echo "${TOPO_MODES:-send rdma}"
}

# mode_set MODE: MODE_TAG and MODE_ARGS of check MODE; 1 (and a failure
# recorded) if there is no such check. MODE_ARGS come after -n in the
# command lines, so that their -n wins.
MODE_TAG=
MODE_ARGS=()
mode_set() {
	case $1 in
	send)
		MODE_TAG=
		MODE_ARGS=()
		;;
	rdma)
		MODE_TAG=-rdma
		MODE_ARGS=(--rdma -n "${TOPO_RDMA_ROUNDS:-${TOPO_ROUNDS:-300}}")
		;;
	*)
		topo_fail "unknown check '$1' in TOPO_MODES (send, rdma)"
		return 1
		;;
	esac
}

topo_cleanup() {
	local st=$? name pid ns inst deadline
	trap - EXIT TERM INT HUP
	[ $st -ne 0 ] && TOPO_FAILED=1
	for pid in "${!TOPO_BG[@]}"; do
		pid_alive "$pid" && kill -TERM "$pid" 2>/dev/null
	done
	for name in "${TOPO_VIADS[@]}"; do
		pid=${VIAD_PID[$name]:-}
		[ -n "$pid" ] && pid_alive "$pid" && kill -TERM "$pid" 2>/dev/null
	done
	deadline=$((SECONDS + 10))
	for pid in "${!TOPO_BG[@]}" "${VIAD_PID[@]}"; do
		[ -n "$pid" ] || continue
		while pid_alive "$pid" && [ $SECONDS -lt $deadline ]; do
			sleep 0.05
		done
		if pid_alive "$pid"; then
			echo "$TOPO_NAME: cleanup: pid $pid did not stop on SIGTERM: SIGKILL" >&2
			kill -KILL "$pid" 2>/dev/null
			TOPO_FAILED=1
		fi
		wait "$pid" 2>/dev/null
	done
	for ns in "${TOPO_NETNS[@]}"; do
		# only our own, freshly created namespaces: whatever still runs
		# there was started by this script
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -KILL "$pid" 2>/dev/null
		done
		ip netns del "$ns" 2>/dev/null || echo "$TOPO_NAME: cleanup: ip netns del $ns failed" >&2
	done
	for inst in "${TOPO_INSTANCES[@]}"; do
		# EAL's runtime dir of our unique file prefix (viad leaves it)
		[ -d "/var/run/dpdk/$inst" ] && rm -rf "/var/run/dpdk/$inst"
		rm -f /dev/hugepages/"$inst"map_* 2>/dev/null
	done
	if [ $TOPO_FAILED -ne 0 ]; then
		for name in "${TOPO_VIADS[@]}"; do
			echo "---- log of viad $name ($RUN/$name.log) ----"
			sed "s/^/  $name| /" "$RUN/$name.log" 2>/dev/null | tail -n 150
		done
		for name in "${!CHECK_PID[@]}"; do
			echo "---- output of topo_check $name ----"
			tail -n 80 "$RUN/$name.out" 2>/dev/null | sed "s/^/  $name| /"
		done
		echo "$TOPO_NAME: FAIL after $(topo_elapsed) s (run dir kept: $RUN)"
		[ $st -ne 0 ] || st=1
	else
		echo "$TOPO_NAME: PASS in $(topo_elapsed) s"
		[ "${TOPO_KEEP:-0}" = 1 ] || rm -rf "$RUN"
	fi
	exit $st
}
