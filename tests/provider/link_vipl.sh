#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A VIPL program built the way legacy makefiles build it (issue 13):
# apps/vipl_legacy.c compiled here with `cc app.c -lvipl` and no flag but
# the include and library paths, so that it knows libvipl.so only. It then
# runs as server and client
#   - over viad: libvipl.so picks the provider "dpdk" by the NIC name via0;
#   - over the tcp provider, VIPL_PROVIDER=tcp, without relinking;
# and a provider that does not exist makes VipOpenNic fail with a log line.
#
#   link_vipl.sh BUILD_DIR SOURCE_DIR VIAD
set -uo pipefail
build=$1 src=$2 viad=$3
tmp=$(mktemp -d /tmp/via-link.XXXXXX)
viad_pid=
failed=0
trap '[ -n "$viad_pid" ] && kill "$viad_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

say() { echo "link_vipl: $*"; }
fail() { say "FAIL: $*"; failed=1; }

# server and client of the sample, bounded; LABEL, each side's arguments,
# then the server's own environment (VAR=VALUE ...)
pair() {
	local label=$1 sargs=$2 cargs=$3 spid sst cst
	shift 3
	# shellcheck disable=SC2086
	env "$@" timeout -k 5 60 "$tmp/legacy" server $sargs -n 100 -D "link-$label-$$" \
		>"$tmp/srv-$label.out" 2>&1 </dev/null &
	spid=$!
	# shellcheck disable=SC2086
	timeout -k 5 60 "$tmp/legacy" client $cargs -n 100 -D "link-$label-$$" \
		>"$tmp/cli-$label.out" 2>&1 </dev/null
	cst=$?
	wait "$spid"
	sst=$?
	sed "s/^/  srv-$label: /" "$tmp/srv-$label.out"
	sed "s/^/  cli-$label: /" "$tmp/cli-$label.out"
	if [ $sst = 0 ] && [ $cst = 0 ]; then say "$label: PASS"; else
		fail "$label: server status $sst, client status $cst"; fi
}

# 1. the build: libvipl.so and nothing else of ours
if ! ${CC:-cc} -I"$src/include" "$src/apps/vipl_legacy.c" -L"$build/lib/mux" -lvipl \
	-o "$tmp/legacy" 2>"$tmp/cc.log"; then
	cat "$tmp/cc.log"
	fail "cc app.c -lvipl does not build"
	echo "0 passed, 1 failed"
	exit 1
fi
needed=$(readelf -d "$tmp/legacy" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')
case " $needed " in
*" libvipl.so.1 "*) case " $needed " in *libvipl-dpdk*) fail "linked to libvipl-dpdk: $needed" ;;
	*) say "cc app.c -lvipl: needs $needed" ;; esac ;;
*) fail "not linked to libvipl.so.1: $needed" ;;
esac
export LD_LIBRARY_PATH=$build/lib/mux
export VIPL_PROVIDER_PATH=$build/lib/viad:$build/lib/tcp

# 2. over viad, the provider chosen by the NIC name
mac=02:00:00:00:0c:01
echo "link-host $mac" >"$tmp/hosts"
cat >"$tmp/viad.conf" <<CONF
[viad]
poll_mode = backoff
hosts = $tmp/hosts

[port via0]
glue = loopback
mac = $mac
CONF
export VIAD_SOCKET=$tmp/viad.sock
"$viad" -c "$tmp/viad.conf" -s "$VIAD_SOCKET" --set viad.instance="link$$" >"$tmp/viad.log" 2>&1 &
viad_pid=$!
for _ in $(seq 200); do
	[ -S "$VIAD_SOCKET" ] && break
	sleep 0.1
done
if [ -S "$VIAD_SOCKET" ]; then
	pair dpdk "-d via0" "-d via0 -H link-host"
else
	tail "$tmp/viad.log"
	fail "viad did not start"
fi

# 3. the same binary over the tcp provider, no viad involved
if [ -e "$build/lib/tcp/libvipl-tcp.so" ]; then
	port=$((20000 + $$ % 20000))
	# the server listens on a known port, the client on any
	VIPL_PROVIDER=tcp pair tcp "-d tcp0" "-d tcp0 -H 127.0.0.1:$port" VIPL_TCP_PORT=$port
else
	fail "no tcp provider in $build/lib/tcp"
fi

# 4. a provider that is not there: a clean error
if VIPL_PROVIDER=nonexistent "$tmp/legacy" server -d via0 -n 1 >"$tmp/none.out" 2>&1; then
	fail "VIPL_PROVIDER=nonexistent: the server ran"
elif grep -q 'no provider "nonexistent"' "$tmp/none.out"; then
	say "VIPL_PROVIDER=nonexistent: refused, with a log line"
else
	cat "$tmp/none.out"
	fail "VIPL_PROVIDER=nonexistent: no log line"
fi

exit $failed
