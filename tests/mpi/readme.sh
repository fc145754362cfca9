#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# tests/mpi/readme.sh BUILD_DIR: the commands of README.md's MPI section,
# run as they are written there (issue 27), so that they cannot drift from
# what works: each block that follows a "<!-- tests/mpi/readme.sh: NAME -->"
# line is taken from README.md and run with bash, in a directory where
# ./my_mpi_program is tests/mpi's mpi_p2p, with viactl naming the viad
# started here and, for "two-viads", SOCK_A and SOCK_B the sockets of two
# viads joined by memif, each on a CPU of its own (as README says).
#
#   one-host     mpirun on one viad, ranks kept off its poll lcore's CPU
#   fi_pingpong  libfabric's fi_pingpong, server and client
#   two-viads    Open MPI's MPMD form, one rank on each viad
#
# Needs root, mpirun and fi_pingpong (else 77, skipped). Ends with
# "N passed, N failed".
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
BUILD=$(cd "${1:-$HERE/../../build}" 2>/dev/null && pwd) ||
	{ echo "readme.sh: no build dir '${1:-}'" >&2; exit 2; }
README=$HERE/../../README.md
VIAD=$BUILD/daemon/viad
VIACTL=$BUILD/tools/viactl/viactl
STEP_TIMEOUT=${FABRIC_TIMEOUT:-180}

[ "$(id -u)" = 0 ] || { echo "readme.sh: SKIP: viad needs root" >&2; exit 77; }
for t in mpirun fi_pingpong; do
	command -v "$t" >/dev/null || { echo "readme.sh: SKIP: no $t" >&2; exit 77; }
done
[ -x "$BUILD/tests/mpi/mpi_p2p" ] || { echo "readme.sh: SKIP: MPI programs not built" >&2; exit 77; }

RUN=$(mktemp -d /tmp/via-readme.XXXXXX) || exit 2
TAG=rdm$$
PASSED=0
FAILED=0
declare -A VIAD_PID=()

log() { printf '%s readme.sh: %s\n' "$(date +%H:%M:%S)" "$*"; }

stop_pid() {
	local pid=$1 i
	kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

cleanup() {
	local name
	for name in "${!VIAD_PID[@]}"; do stop_pid "${VIAD_PID[$name]}"; done
	for name in "${!VIAD_PID[@]}"; do rm -rf "/var/run/dpdk/$TAG-$name"; done
	if [ "$FAILED" -eq 0 ]; then rm -rf "$RUN"; else echo "readme.sh: logs kept in $RUN"; fi
}
trap cleanup EXIT
trap 'FAILED=$((FAILED + 1)); exit 143' TERM INT HUP

# viad_start NAME CPU [VIAD ARGS...]: on that CPU, its own socket and instance
viad_start() {
	local name=$1 cpu=$2 sock=$RUN/$1.sock i
	shift 2
	taskset -c "$cpu" "$VIAD" -s "$sock" --set "viad.instance=$TAG-$name" \
		--set viad.poll_mode=backoff "$@" >"$RUN/viad-$name.log" 2>&1 </dev/null &
	VIAD_PID[$name]=$!
	for ((i = 0; i < 400; i++)); do
		[ -S "$sock" ] && return 0
		kill -0 "${VIAD_PID[$name]}" 2>/dev/null || break
		sleep 0.05
	done
	log "viad $name did not start:"
	cat "$RUN/viad-$name.log"
	return 1
}

# block NAME: the lines of README's code block after the marker of NAME
block() {
	awk -v m="<!-- tests/mpi/readme.sh: $1 -->" '
		$0 == m { found = 1; next }
		found && /^    / { print substr($0, 5); code = 1; next }
		found && code { exit }
		found && !/^$/ { exit }' "$README"
}

# run NAME [VIAD NAME...]: run README's block NAME; with viads named, none
# of them may have sent a frame again
run() {
	local name=$1 cmd rc
	shift
	cmd=$(block "$name")
	if [ -z "$cmd" ]; then
		FAILED=$((FAILED + 1))
		log "FAIL $name: no block marked '<!-- tests/mpi/readme.sh: $name -->' in README.md"
		return
	fi
	printf '%s\n' "$cmd" >"$RUN/$name.cmd"
	# every command must succeed, the server a block starts in the
	# background (job 1) too
	(cd "$RUN/prog" && timeout -k 10 "$STEP_TIMEOUT" bash -ec "$cmd
if jobs %1 >/dev/null 2>&1; then wait %1; fi") >"$RUN/$name.log" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		PASSED=$((PASSED + 1))
		log "PASS $name"
	else
		FAILED=$((FAILED + 1))
		log "FAIL $name (status $rc): README.md's commands:"
		sed 's/^/    /' "$RUN/$name.cmd"
		tail -n 30 "$RUN/$name.log"
	fi
}

mkdir -p "$RUN/prog"
ln -s "$BUILD/tests/mpi/mpi_p2p" "$RUN/prog/my_mpi_program"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TMPDIR=$RUN
# from the build tree (README: ranks of this host inherit mpirun's environment)
export FI_PROVIDER_PATH=$BUILD/fabric
export LD_LIBRARY_PATH=$BUILD/lib/viad${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
NCPU=$(nproc)

# ---- one viad ----------------------------------------------------------------
viad_start one "0-$((NCPU - 1))" || exit 1
export VIAD_SOCKET=$RUN/one.sock
VIACTL_INSTANCE=$TAG-one
# README's "viactl" is the one of the viad named here
viactl() { "$VIACTL" -i "$VIACTL_INSTANCE" "$@"; }
export -f viactl
export VIACTL VIACTL_INSTANCE
log "viad 'one': poll lcores on CPU $(viactl cpus), ranks on $(viactl cpus --others)"
run one-host
# fi_pingpong's control port, 47592 (0xB9E8), must be free for the command as written
if awk '$2 ~ /:B9E8$/ && $4 == "0A" { f = 1 } END { exit !f }' /proc/net/tcp /proc/net/tcp6; then
	FAILED=$((FAILED + 1))
	log "FAIL fi_pingpong: its control port 47592 (README's command) is in use here"
else
	run fi_pingpong
fi
stop_pid "${VIAD_PID[one]}"

# ---- two viads joined by memif, each on a CPU of its own -----------------------
memif_confs "$RUN"
if viad_start A 0 -c "$RUN/A.conf" && viad_start B "$((NCPU - 1))" -c "$RUN/B.conf"; then
	export SOCK_A=$RUN/A.sock SOCK_B=$RUN/B.sock
	run two-viads
else
	FAILED=$((FAILED + 1))
fi

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
