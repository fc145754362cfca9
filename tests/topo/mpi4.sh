#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A four-node MPI job (issue 27, part 6): four network namespaces created
# here, node1..node4, each joined by a veth pair to one Linux bridge in a
# fifth; one viad in each node driving its veth with net_af_packet
# (qdisc_bypass=0), adaptive polling so that four viads share two CPUs, and
# a hosts file naming the four. Open MPI runs across them from node1: its
# launch agent (plm_rsh_agent) enters a node's namespace (and a UTS
# namespace with the node's host name) and points VIAD_SOCKET at the node's
# viad; one rank per node. Each program runs over the provider "via", then
# over Open MPI's TCP (pml ob1, btl tcp) in the same namespaces: point to
# point (mpi_p2p), both directions at once between nodes (mpi_bibw: ranks
# 0-1 and 2-3), collectives (mpi_coll: allreduce, alltoall and the others)
# and one-sided communication (mpi_rma: MPI_Put, MPI_Get, MPI_Accumulate),
# every byte checked. VIA frames are raw Ethernet between the namespaces;
# the IP addresses (10.250.27.N/24) are assigned here, on these veths only,
# for Open MPI's launcher and its TCP path.
#
#   mpi4.sh [BUILD_DIR]
#
# MPI4_BENCH=1: larger sizes, every program timed, and a table of via/tcp
# time ratios (docs/performance.md, section 7). MPI4_TIMEOUT: seconds per
# mpirun (300).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
topo_init mpi4 "${1:-$HERE/../../build}"

MPI_DIR=$BUILD/tests/mpi
PROV=$BUILD/fabric/libvia-fi.so
for t in mpirun; do
	command -v "$t" >/dev/null || { echo "mpi4: SKIP: no $t (openmpi-bin)" >&2; exit 77; }
done
[ -x "$MPI_DIR/mpi_rma" ] && [ -f "$PROV" ] ||
	{ echo "mpi4: SKIP: MPI programs or the provider not built" >&2; exit 77; }

BENCH=${MPI4_BENCH:-0}
LIMIT=${MPI4_TIMEOUT:-300}
IF=via27                 # every node's veth has this name in its namespace
NET=10.250.27
NS_BR=via-m4-$$-br
read -r CPU0 CPU1 < <(topo_cpus)

netns_add "$NS_BR" || exit 1
ip -n "$NS_BR" link add br0 type bridge && ip -n "$NS_BR" link set br0 up ||
	{ topo_fail "no bridge in $NS_BR"; exit 1; }
: >"$RUN/hosts"
declare -A NS=() MAC=()
for i in 1 2 3 4; do
	n=node$i
	NS[$n]=via-m4-$$-n$i
	netns_add "${NS[$n]}" || exit 1
	veth_pair "${NS[$n]}" "m4$$n$i" "$NS_BR" "m4$$b$i" || exit 1
	ip -n "${NS[$n]}" link set "m4$$n$i" down
	ip -n "${NS[$n]}" link set "m4$$n$i" name $IF
	ip -n "${NS[$n]}" link set $IF up
	ip -n "${NS[$n]}" link set lo up
	ip -n "${NS[$n]}" addr add "$NET.$i/24" dev $IF
	ip -n "$NS_BR" link set "m4$$b$i" master br0
	MAC[$n]=$(if_mac "${NS[$n]}" $IF)
	[ -n "${MAC[$n]}" ] || { topo_fail "no MAC for $n"; exit 1; }
	echo "$n ${MAC[$n]}" >>"$RUN/hosts"
done
topo_log "bridge $NS_BR; $(tr '\n' ' ' <"$RUN/hosts")"

# Four viads on two CPUs: odd nodes poll on one, even ones on the other;
# adaptive polling sleeps while idle, and wakes for a port's frames within
# adaptive_timeout_us
for i in 1 2 3 4; do
	n=node$i
	cat >"$RUN/$n.conf" <<CONF
[viad]
log_level = info
poll_mode = adaptive
adaptive_timeout_us = 200
hosts = $RUN/hosts

[port via0]
glue = ethdev
devargs = net_af_packet0,iface=$IF,qdisc_bypass=0
CONF
	if [ $((i % 2)) = 1 ]; then c0=$CPU1 c1=$CPU0; else c0=$CPU0 c1=$CPU1; fi
	# shellcheck disable=SC2046  # word splitting of the EAL arguments is intended
	viad_start "$n" --netns "${NS[$n]}" -c "$RUN/$n.conf" -- $(topo_eal "$n" "$c0" "$c1") ||
		exit 1
done

# The launch agent: "agent.sh HOST COMMAND...", as Open MPI calls ssh
cat >"$RUN/agent.sh" <<AGENT
#!/bin/sh
host=\$1
shift
case \$host in node[1-4]) ;; *) echo "agent.sh: no node \$host" >&2; exit 1 ;; esac
exec ip netns exec via-m4-$$-n\${host#node} unshare --uts sh -c \\
	'hostname "\$0"; VIAD_SOCKET=$RUN/\$0.sock; export VIAD_SOCKET; exec sh -c "\$*"' \\
	"\$host" "\$@"
AGENT
chmod +x "$RUN/agent.sh"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export FI_PROVIDER_PATH=$BUILD/fabric FI_PROVIDER=via
export LD_LIBRARY_PATH=$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TMPDIR=$RUN
COMMON=(--allow-run-as-root --bind-to none --map-by node -H node1,node2,node3,node4 -np 4
	--mca plm_rsh_agent "$RUN/agent.sh" --mca oob_tcp_if_include $IF
	--mca osc pt2pt -x FI_PROVIDER_PATH -x FI_PROVIDER -x LD_LIBRARY_PATH -x TMPDIR)
VIA=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include via)
TCP=(--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include $IF)

if [ "$BENCH" = 1 ]; then
	PROGS=("mpi_p2p" "mpi_bibw -n 3 -m 131072 -M 4194304" "mpi_coll" "mpi_rma -n 20 -s 262144")
else
	PROGS=("mpi_p2p" "mpi_bibw -n 1 -m 131072 -M 262144" "mpi_coll" "mpi_rma -n 3 -s 16384")
fi

declare -A SECS=()
# run PATH PROGRAM...: mpirun from node1 (its namespace and host name)
run() {
	local path=$1 label t0 st
	shift
	label="$path ${1}"
	local -a args=("${COMMON[@]}")
	if [ "$path" = via ]; then args+=("${VIA[@]}"); else args+=("${TCP[@]}"); fi
	t0=$(date +%s%N)
	VIAD_SOCKET=$RUN/node1.sock timeout -k 10 "$LIMIT" ip netns exec "${NS[node1]}" \
		unshare --uts sh -c 'hostname node1; exec "$@"' mpirun mpirun "${args[@]}" \
		"$MPI_DIR/$1" "${@:2}" >"$RUN/$path-$1.log" 2>&1
	st=$?
	SECS[$path-$1]=$(((($(date +%s%N) - t0) / 1000000)))
	if [ $st -eq 0 ]; then
		topo_log "PASS $label (${SECS[$path-$1]} ms)"
		[ "$BENCH" = 1 ] && sed "s/^/  $path| /" "$RUN/$path-$1.log"
	else
		topo_fail "$label: status $st$([ $st -eq 124 ] && echo ", timed out after $LIMIT s")"
		tail -n 30 "$RUN/$path-$1.log" | sed "s/^/  $path-$1| /" >&2
	fi
}

for p in "${PROGS[@]}"; do
	# shellcheck disable=SC2086  # a program and its arguments
	run via $p
done
for p in "${PROGS[@]}"; do
	# shellcheck disable=SC2086
	run tcp $p
done
if [ "$BENCH" = 1 ]; then
	echo "mpi4: wall time of each mpirun (ms), via and tcp in the same namespaces:"
	for p in "${PROGS[@]}"; do
		p=${p%% *}
		awk -v p="$p" -v v="${SECS[via-$p]:-0}" -v t="${SECS[tcp-$p]:-0}" \
			'BEGIN { printf "  %-14s via %7d  tcp %7d  via/tcp %.2f\n", p, v, t, t ? v / t : 0 }'
	done
fi
for i in 4 3 2 1; do
	viad_stop "node$i"
done
[ $TOPO_FAILED = 0 ] && echo "mpi4: the four-node job passed over via and tcp"
exit $TOPO_FAILED
