#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# tests/perf/linkcost.sh: the cost of the ways to reach viad (issue 13), in
# one run on one viad: vipl_pingpong linked to libvipl-dpdk directly,
# through the multiplexer libvipl.so (vipl_pingpong_mux), and with the
# inline header (vipl_pingpong_inline). 64 B loopback round trips, the
# three alternating ROUNDS times; prints each run's p50 RTT, then per way
# the fastest and median run and the median of the per-round ratios to the
# direct link (a round's three runs share the machine's load of the
# moment). Asserts nothing.
#
#   linkcost.sh [BUILD_DIR] [ROUNDS (7)] [ITERS (20000)]      (as root)
#
# Pinning: viad's control lcore on CPU A, its poll lcore on CPU B, the
# program (one thread, both VIs) on CPU A: the pinning of bench.sh's
# vipl_lo step.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd) || exit 2
rounds=${2:-7}
iters=${3:-20000}
. "$here/viad_lib.sh"
perf_setup linkcost
perf_viad_start "$build"

declare -A bin=(
	[direct]=$build/apps/vipl_pingpong
	[mux]=$build/tests/perf/vipl_pingpong_mux
	[inline]=$build/tests/perf/vipl_pingpong_inline
)
ways=(direct mux inline)
declare -A p50s=()
for ((r = 1; r <= rounds; r++)); do
	for w in "${ways[@]}"; do
		# the mux finds the viad provider in the build tree
		out=$(VIAD_SOCKET=$run/viad.sock VIPL_PROVIDER_PATH=$build/lib/viad \
			timeout 120 taskset -c "$A" "${bin[$w]}" --loopback --size 64 -n "$iters" -w 1000 \
			--json 2>/dev/null) || { echo "$out"; echo "linkcost: $w failed" >&2; exit 1; }
		p50=$(python3 -c 'import json,sys
d = json.loads(sys.stdin.read().strip().splitlines()[-1])
print(d["rtt_us"]["p50"])' <<<"$out") || { echo "$out"; exit 1; }
		p50s[$w]+="$p50 "
		printf 'round %d %-7s p50 %s us\n' "$r" "$w" "$p50"
	done
done
python3 - "${p50s[direct]}" "${p50s[mux]}" "${p50s[inline]}" <<'PY'
import statistics, sys
ways = ["direct", "mux", "inline"]
p50 = {w: [float(x) for x in a.split()] for w, a in zip(ways, sys.argv[1:])}
# the machine's load moves all three together: a round's three runs are
# seconds apart, so the ratio within a round is the figure; its median
# over the rounds, and the fastest run of each way (the quietest minute)
for w in ways:
    ratios = [x / d for x, d in zip(p50[w], p50["direct"])]
    print(f"{w:7s} 64 B RTT p50: fastest run {min(p50[w]):.3f} us, median {statistics.median(p50[w]):.3f} us;"
          f" per-round ratio to direct: median {statistics.median(ratios):.3f}x"
          f" (range {min(ratios):.3f}-{max(ratios):.3f})")
PY
