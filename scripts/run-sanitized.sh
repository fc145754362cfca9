#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The sanitizer builds and what runs in them (issue 14 part 4):
#
#   build-asan  gcc, -Db_sanitize=address,undefined: viad, the library and
#               every test. Runs the unit suite and the integration subset
#               below. A leak at the exit of any program is an error
#               (detect_leaks=1: viad's after SIGTERM fails viad_stop's
#               "exits with status 0" check), and so is any UB report
#               (halt_on_error=1).
#   build-tsan  gcc, -Db_sanitize=thread: the library and its threaded test
#               (integration_threads), against viad of build-asan.
#
#   scripts/run-sanitized.sh [--asan-only | --tsan-only] [--all]
#
# --all runs the whole integration suite under ASan instead of the subset
# (about 10 minutes on 2 CPUs). Ends with one line "run-sanitized: N
# passed, N failed"; exit status 0 only if all passed. docs/fuzzing.md
# ("Sanitizers") says which options and why.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# The integration subset CI runs under ASan+UBSan: the control path
# (api, hostile, reclaim, shutdown), connections, data in both kinds of
# memory, RDMA, notification, zero copy and registered ordinary memory;
# about a minute. The long ones (rel, scale, the _2lcores variants) run
# with --all.
ASAN_SUBSET=(integration_api integration_reclaim integration_hostile integration_shutdown
	integration_cm integration_data integration_data_heap integration_rdma
	integration_notify integration_zcopy integration_ordmem)

do_asan=1 do_tsan=1 all=0
for a in "$@"; do
	case $a in
	--asan-only) do_tsan=0 ;;
	--tsan-only) do_asan=0 ;;
	--all) all=1 ;;
	*) echo "usage: $0 [--asan-only | --tsan-only] [--all]" >&2; exit 2 ;;
	esac
done

# ASan: leaks are errors, reports go to stderr with the stack, a bad access
# aborts. DPDK's EAL (--in-memory, hugepages, its own mmaps at chosen
# addresses) works under ASan as it is: its memory is not malloc's, so ASan
# neither tracks nor poisons it, and the fixed EAL base address lies outside
# ASan's shadow. Only DPDK's own allocator is unchecked (rte_malloc, not
# built with ASan here: Debian's libdpdk). UBSan: every report is fatal;
# the suppressions are listed and explained in scripts/sanitizers/.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0:strict_string_checks=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=$root/scripts/sanitizers/ubsan.supp
export LSAN_OPTIONS=print_suppressions=0
# the tests' watchdogs (harness.c) allow this many times longer: ASan makes
# viad and the tests about 2x slower, TSan the library's threads 5-15x
export VIA_TEST_WATCHDOG_SCALE=4
# TSan: reports are failures (exitcode 66)
tsan_options=halt_on_error=0:second_deadlock_stack=1:history_size=4

passed=0
failed=0
count() {
	# count meson's per-test results of build dir $1 (its testlog.json)
	local p f
	read -r p f < <(python3 - "$1/meson-logs/testlog.json" <<'PY'
import json, sys
p = f = 0
try:
    for line in open(sys.argv[1]):
        r = json.loads(line)["result"]
        if r in ("OK", "EXPECTEDFAIL", "SKIP"):
            p += r != "SKIP"
        else:
            f += 1
except OSError:
    f = 1
print(p, f)
PY
)
	passed=$((passed + p))
	failed=$((failed + f))
}

setup() {
	# $1 dir, $2 sanitizers: configured once, reconfigured if the option differs
	if [ ! -f "$1/build.ninja" ]; then
		CC=gcc meson setup "$1" -Db_sanitize="$2" >/dev/null || return 1
	fi
	meson configure "$1" -Db_sanitize="$2" >/dev/null
}

if [ $do_asan = 1 ]; then
	if setup build-asan address,undefined && ninja -C build-asan >/dev/null; then
		mt=(meson test -C build-asan --print-errorlogs --num-processes 1 --timeout-multiplier 3)
		"${mt[@]}" --suite unit
		count build-asan
		if [ $all = 1 ]; then
			"${mt[@]}" --suite integration
		else
			"${mt[@]}" "${ASAN_SUBSET[@]}"
		fi
		count build-asan
	else
		echo "run-sanitized: the ASan+UBSan build failed"
		failed=$((failed + 1))
	fi
fi

if [ $do_tsan = 1 ]; then
	# the library and the test under TSan; viad from build-asan (or build/)
	viad=$root/build-asan/daemon/viad
	[ -x "$viad" ] || viad=$root/build/daemon/viad
	if setup build-tsan thread && ninja -C build-tsan tests/integration/it_threads >/dev/null; then
		if TSAN_OPTIONS=$tsan_options ASAN_OPTIONS= build-tsan/tests/integration/it_threads \
			"$viad" >build-tsan/it_threads.log 2>&1; then
			echo "integration_threads (TSan): OK"
			passed=$((passed + 1))
		else
			echo "integration_threads (TSan): FAIL"
			grep -E 'WARNING: ThreadSanitizer|SUMMARY|not ok' build-tsan/it_threads.log | head -n 20
			failed=$((failed + 1))
		fi
	else
		echo "run-sanitized: the TSan build failed"
		failed=$((failed + 1))
	fi
fi

echo "run-sanitized: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
