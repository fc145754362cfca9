#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# tests/perf/abrounds.sh: the loopback round trip of several builds against
# each other and against the in-process floors, in alternating rounds: the
# figures of a change when the machine's speed moves between runs (this
# VM's does, by 2-3x, for seconds to minutes). Each round runs, seconds
# apart: raw_pingpong --port ring with one and with two exchanges per
# sample (the floors, from the last build), then for each build its own
# viad (busy polling) and its own vipl_pingpong --loopback. Prints every
# run's p50, then per build its fastest and median run and the medians of
# the per-round ratios to the first build and to both floors. Asserts
# nothing.
#
#   abrounds.sh [-r ROUNDS (9)] [-n ITERS (100000)] [-s SIZE (64)] [-c A,B]
#               BUILD_DIR[::ARGS]...
#
# A build may be named more than once with its own vipl_pingpong options
# after '::' (e.g. build::--inline 64: the same build with line entries).
# -c picks the two CPUs (default: the first two we may run on). The ring
# floor's smallest frame is 16 bytes: with -s below that it runs at 16;
# its largest is 9000: above that the builds are only compared.
#
# Pinning as bench.sh's vipl_lo and raw_ring steps: viad's control lcore
# and the program on CPU A, the poll lcore (the ring's server) on CPU B.
set -uo pipefail
rounds=9 iters=100000 size=64 cpus=
while getopts r:n:s:c: o; do
	case $o in
	r) rounds=$OPTARG ;;
	n) iters=$OPTARG ;;
	s) size=$OPTARG ;;
	c) cpus=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-r ROUNDS] [-n ITERS] [-s SIZE] [-c A,B] BUILD_DIR[::ARGS]..." >&2; exit 2; }
builds=() bargs=() names=()
for b in "$@"; do
	dir=${b%%::*}
	builds+=("$(cd "$dir" && pwd)") || exit 2
	if [ "$dir" = "$b" ]; then bargs+=(""); names+=("${builds[-1]}")
	else bargs+=("${b#*::}"); names+=("${builds[-1]} ${b#*::}"); fi
done
rpp=${builds[-1]}/tests/perf/raw_pingpong
ring_size=$((size < 16 ? 16 : size))
# the ring's frames are at most RING_MAX bytes: larger sizes have no floor
RING_MAX=9000
. "$(dirname "$0")/viad_lib.sh"
perf_setup abrounds "$cpus"

p50_of() { # the p50 of the last JSON line on stdin
	python3 -c 'import json,sys
print(json.loads(sys.stdin.read().strip().splitlines()[-1])["rtt_us"]["p50"])'
}

ring() { # EXCHANGES
	"$rpp" --lcores="0@$A,1@$B" --file-prefix="$tag" --in-memory --no-pci --log-level=error -- \
		--port ring --size "$ring_size" -n "$iters" -w 1000 --exchanges "$1" --json -q | p50_of
}

vipl() { # BUILD ARGS
	perf_viad_start "$1"
	# shellcheck disable=SC2086
	VIAD_SOCKET=$run/viad.sock timeout 120 taskset -c "$A" "$1/apps/vipl_pingpong" --loopback \
		--size "$size" -n "$iters" -w 1000 --json $2 2>"$run/pp.log" | p50_of
	perf_viad_stop
}

table=$run/p50s
for ((r = 1; r <= rounds; r++)); do
	if [ "$ring_size" -le "$RING_MAX" ]; then line="$(ring 1) $(ring 2)"; else line="nan nan"; fi
	for i in "${!builds[@]}"; do line+=" $(vipl "${builds[$i]}" "${bargs[$i]}")"; done
	echo "$line" >>"$table"
	echo "round $r: ring $line" | sed 's/ring \([^ ]*\) \([^ ]*\)/ring x1 \1, ring x2 \2, builds/'
done
python3 - "$table" "$size" "$ring_size" "${names[@]}" <<'PY'
import statistics, sys
rows = [[float(x) for x in l.split()] for l in open(sys.argv[1]) if l.strip()]
size, ring_size, builds = sys.argv[2], sys.argv[3], sys.argv[4:]
med = statistics.median
floors = all(r[0] == r[0] for r in rows)   # NaN: no ring floor at this size
print(f"{size} B loopback RTT p50, {len(rows)} rounds (us; ratios: median of the per-round ratios; "
      + (f"ring at {ring_size} B)" if floors else "no ring floor above its largest frame)"))
if floors:
    print(f"  ring x1: fastest {min(r[0] for r in rows):.3f}, median {med(r[0] for r in rows):.3f}; "
          f"ring x2: fastest {min(r[1] for r in rows):.3f}, median {med(r[1] for r in rows):.3f}")
for i, b in enumerate(builds):
    col = [r[2 + i] for r in rows]
    line = (f"  {b}: fastest {min(col):.3f}, median {med(col):.3f}; "
            f"/first build {med(r[2 + i] / r[2] for r in rows):.3f}x")
    if floors:
        line += (f", /ring x1 {med(r[2 + i] / r[0] for r in rows):.2f}x, "
                 f"/ring x2 {med(r[2 + i] / r[1] for r in rows):.2f}x")
    print(line)
PY
