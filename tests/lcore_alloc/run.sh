#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# No libc allocation on viad's poll lcores (issue 28 part 2; docs/design.md,
# "Memory on the poll lcores"): data-heavy integration tests run with
# liblcore_alloc.so preloaded into them and the viads they start, which
# writes a report for every viad that allocated on a poll lcore (the first
# call's backtrace, the total). The workload: Send/Recv on every reliability
# level (data; rel's stress through a faulty NIC, with its broken
# connections: remote errors, an empty receive queue, asynchronous errors),
# RDMA Write and Read (rdma), zero copy (zcopy), connect and disconnect
# (cm); data and rdma again over two poll lcores (frames handed between
# shards).
#
# Usage: run.sh BUILD_DIR VIAD
set -u
build=$1
viad=$2
lib=$build/tests/lcore_alloc/liblcore_alloc.so
it=$build/tests/integration
out=$(mktemp -d /tmp/via-lcore-alloc.XXXXXX)
fail=0

[ -f "$lib" ] || { echo "not ok - $lib is missing"; exit 1; }
# a sanitizer's runtime must come first and keeps its own allocator: its
# builds (scripts/run-sanitized.sh --all) skip this test (meson: 77)
if ldd "$viad" | grep -q -e libasan -e libtsan; then
	echo "skipped - $viad is built with a sanitizer, which interposes malloc itself"
	exit 77
fi

# run LABEL NAME ENV...: integration test it_NAME under the interposer
run() {
	label=$1
	name=$2
	shift 2
	mkdir -p "$out/$label"
	if env "$@" LD_PRELOAD="$lib" VIA_LCORE_ALLOC_DIR="$out/$label" \
		"$it/it_$name" "$viad" >"$out/$label.log" 2>&1; then
		echo "ok - it_$name $* passes under the interposer"
	else
		echo "not ok - it_$name $* fails under the interposer (its log: $out/$label.log)"
		tail -n 30 "$out/$label.log"
		fail=1
	fi
	for r in "$out/$label"/viad.*; do
		[ -e "$r" ] || continue
		echo "not ok - it_$name: a viad allocated on a poll lcore ($r):"
		cat "$r"
		fail=1
	done
}

run data data
run rdma rdma
run zcopy zcopy
run cm cm
run rel rel VIA_REL_MESSAGES=3000 VIA_REL_ONLY=stress,rr,async
run data_2lcores data VIA_TEST_POLL_LCORES=2
run rdma_2lcores rdma VIA_TEST_POLL_LCORES=2

if [ $fail -eq 0 ]; then
	echo "ok - no allocation on a poll lcore"
	rm -rf "$out"
fi
exit $fail
