#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The main job: set up the host, build, start viad on its default (one
# loopback NIC, no hardware needed), run the bundled sample program against
# it, stop viad. Exit status: the sample's, or viad's if it failed.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup-host.sh
scripts/build.sh >/dev/null

run=$(mktemp -d /tmp/via-main.XXXXXX)
trap 'kill "$viad_pid" 2>/dev/null || true; rm -rf "$run"' EXIT
export VIAD_SOCKET=$run/viad.sock

build/daemon/viad -s "$VIAD_SOCKET" --set viad.instance=via-main 2>"$run/viad.log" &
viad_pid=$!
for _ in $(seq 100); do
	[ -S "$VIAD_SOCKET" ] && break
	kill -0 "$viad_pid" 2>/dev/null || { cat "$run/viad.log" >&2; exit 1; }
	sleep 0.1
done

rc=0
build/apps/vipl_info via0 || rc=$?

kill -TERM "$viad_pid"
wait "$viad_pid" || { echo "viad exited with status $?" >&2; rc=1; }
echo "--- viad log"
cat "$run/viad.log"
exit "$rc"
