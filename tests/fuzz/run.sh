#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Run every libFuzzer target of tests/fuzz for a bounded time.
#
#   tests/fuzz/run.sh BUILD_DIR SECONDS [TARGET...]
#
# BUILD_DIR is a build configured with clang and -Dfuzz=true (the targets
# are built here if they are not yet). Each target runs SECONDS seconds over
# a copy of its seed corpus (tests/fuzz/corpus/TARGET; conf and hosts also
# get config/viad.conf and config/hosts.example): the corpus inputs first,
# the regression inputs crash-* among them, then new ones. A crash, leak,
# sanitizer report or timeout of any target fails the run; the input that
# did it is kept under BUILD_DIR/fuzz-artifacts/TARGET/ (add it to the
# corpus as crash-NAME once fixed). One line per target says how many
# inputs ran. Exit status 0 only if no target failed.
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)

if [ $# -lt 2 ]; then
	echo "usage: $0 BUILD_DIR SECONDS [TARGET...]" >&2
	exit 2
fi
build=$1
secs=$2
shift 2
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(ctl wire conf hosts dispatch ring image)

ninja -C "$build" $(printf 'tests/fuzz/fuzz_%s ' "${targets[@]}") >/dev/null || {
	echo "fuzz: building the targets in $build failed (configured with clang and -Dfuzz=true?)" >&2
	exit 1
}

work=$(mktemp -d /tmp/via-fuzz-XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=0
for t in "${targets[@]}"; do
	corpus=$work/$t
	art=$build/fuzz-artifacts/$t
	mkdir -p "$corpus" "$art"
	cp "$src/tests/fuzz/corpus/$t"/* "$corpus"/ 2>/dev/null
	case $t in
	conf) cp "$src/config/viad.conf" "$corpus/seed-viad.conf" ;;
	hosts) cp "$src/config/hosts.example" "$corpus/seed-hosts.example" ;;
	esac
	# -timeout: one input may take this long (a hang is a failure; a
	# loaded machine can stall a process for many seconds);
	# -rss_limit_mb: memory per process; leaks are checked per input
	"$build/tests/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=60 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$art/" "$corpus" >"$work/$t.log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log")
	if [ $rc -ne 0 ]; then
		failed=$((failed + 1))
		echo "fuzz_$t: FAILED (exit $rc) after ${runs:-?} inputs; input kept in $art/"
		grep -E 'ERROR|FUZZ_ASSERT|runtime error|SUMMARY' "$work/$t.log" | head -n 20
	else
		echo "fuzz_$t: ${runs:-?} inputs in $secs s, no crash"
	fi
done
[ $failed -eq 0 ]
