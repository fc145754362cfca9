# SPDX-License-Identifier: BSD-3-Clause
#
# tests/security/ops_lib.sh: what the operator attack tests share (bash;
# source it). Each test runs viad as root, as an operator would, and the
# attacker as an unprivileged user: "nobody", in the socket group (a gid of
# its own, OPS_GID) or outside it.
#
#   ops_init NAME BUILD          scratch dir $T (0711), paths, cleanup trap
#   ok COND_STATUS WHAT          "ok - WHAT" or "not ok - WHAT" (counted)
#   as_member CMD...             CMD as nobody in group OPS_GID
#   as_outsider CMD...           CMD as nobody in no group of viad's
#   viad_start NAME [ARGS...]    a viad (instance $TAG-NAME, socket $T/NAME.sock,
#                                log $T/NAME.log, RUNTIME_DIRECTORY $T/rt
#                                unless the caller exported another); waits
#                                for its socket; sets VIAD_PID[NAME]
#   viad_stop NAME               SIGTERM and wait; its exit status
#   ops_done                     "# N check(s) failed" and the exit status
#
# Everything started is killed by PID at exit; the scratch dir is removed
# unless a check failed (then its logs are printed) or KEEP=1.
set -u

OPS_GID=4243
NOBODY=65534
FAILED=0
declare -A VIAD_PID=()

ops_init() {
	NAME=$1
	BUILD=$(cd "$2" && pwd)
	VIAD=$BUILD/daemon/viad
	VIACTL=$BUILD/tools/viactl/viactl
	PINGPONG=$BUILD/apps/vipl_pingpong
	TAG=sec$$$NAME
	if [ "$(id -u)" != 0 ]; then
		echo "SKIP: must run as root (viad is root's; the attacker is nobody)"
		exit 77
	fi
	T=$(mktemp -d "/tmp/ops-$NAME-XXXXXX")
	chmod 0711 "$T"
	mkdir "$T/rt"
	export RUNTIME_DIRECTORY=$T/rt
	trap ops_cleanup EXIT
}

ops_cleanup() {
	local n pid
	for n in "${!VIAD_PID[@]}"; do
		pid=${VIAD_PID[$n]}
		[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	done
	for pid in ${OPS_PIDS:-}; do
		kill -KILL "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	done
	if [ "$FAILED" != 0 ] || [ -n "${KEEP:-}" ]; then
		for n in "$T"/*.log; do
			[ -f "$n" ] && sed "s|^|# $(basename "$n"): |" "$n" | tail -40
		done
		echo "# scratch directory kept: $T"
	else
		rm -rf "$T"
	fi
}

ok() {
	if [ "$1" = 0 ]; then
		echo "ok - $2"
	else
		echo "not ok - $2"
		FAILED=$((FAILED + 1))
	fi
}

as_member() { setpriv --reuid=$NOBODY --regid=$OPS_GID --clear-groups -- "$@"; }
as_outsider() { setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups -- "$@"; }

viad_start() {
	local name=$1 i
	shift
	rm -f "$T/$name.sock"
	"$VIAD" -s "$T/$name.sock" --set "viad.instance=$TAG-$name" --set viad.poll_mode=backoff \
		--set "viad.socket_group=$OPS_GID" "$@" >"$T/$name.log" 2>&1 </dev/null &
	VIAD_PID[$name]=$!
	for i in $(seq 200); do
		[ -S "$T/$name.sock" ] && return 0
		kill -0 "${VIAD_PID[$name]}" 2>/dev/null || break
		sleep 0.1
	done
	echo "# viad $name did not start:"
	sed "s/^/#   /" "$T/$name.log"
	return 1
}

viad_stop() {
	local pid=${VIAD_PID[$1]:-} st
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null
	wait "$pid"
	st=$?
	VIAD_PID[$1]=
	return $st
}

ops_done() {
	if [ "$FAILED" = 0 ]; then
		echo "# all checks passed"
		exit 0
	fi
	echo "# $FAILED check(s) failed"
	exit 1
}
