#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The main job: set up the host, build, start viad on its default (one
# loopback NIC, no hardware needed), show the NIC with vipl_info, measure
# latency with the bundled vipl_pingpong (both ends in one process), stop
# viad. Exit status: non-zero if any step or viad failed.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup-host.sh

# The build takes minutes on a small machine: a line at every tenth of
# ninja's steps, and its whole output if it fails.
build_log=$(mktemp /tmp/via-main-build.XXXXXX)
echo "run-main.sh: building into build/ (scripts/build.sh)"
t0=$SECONDS
if ! scripts/build.sh 2>&1 | tee "$build_log" | awk '
	/^\[[0-9]+\/[0-9]+\]/ {
		split(substr($1, 2, length($1) - 2), step, "/")
		tenth = int(step[1] * 10 / step[2])
		if (tenth > shown) {
			printf "run-main.sh: build %d%% (%d of %d steps)\n", tenth * 10, step[1], step[2]
			fflush()
			shown = tenth
		}
	}
	/^ninja: no work to do/ { print "run-main.sh: build up to date"; fflush() }'; then
	cat "$build_log" >&2
	rm -f "$build_log"
	echo "run-main.sh: the build failed" >&2
	exit 1
fi
rm -f "$build_log"
echo "run-main.sh: built in $((SECONDS - t0)) s"

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
build/apps/vipl_info via0 >"$run/info.log" || { cat "$run/info.log"; rc=1; }
grep -E '^NIC|address|native MTU|max transfer' "$run/info.log" || true
build/apps/vipl_pingpong --loopback ${VIA_PINGPONG_ARGS:-} || rc=$?

kill -TERM "$viad_pid"
wait "$viad_pid" || { echo "viad exited with status $?" >&2; rc=1; }
echo "--- viad log"
cat "$run/viad.log"
exit "$rc"
