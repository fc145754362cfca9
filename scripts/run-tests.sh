#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The test command: set up the host, build with gcc and clang (warnings are
# errors), run the whole meson test suite (unit and integration), then the
# fuzzers briefly and the sanitizer builds' subset, and end with one line
# "N passed, N failed". Exit status 0 only if all passed.
#
# The clang build, the fuzz run (tests/fuzz/run.sh, VIA_FUZZ_SECONDS per
# target, default 15) and the sanitizer run (scripts/run-sanitized.sh:
# ASan+UBSan unit suite and its named integration subset, TSan threads)
# count as one result each. VIA_TEST_FUZZ=0 or VIA_TEST_SANITIZE=0 leaves
# one out (counted as skipped).
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/setup-host.sh || exit 1
clang_ok=1
VIA_BUILD_CLANG=1 scripts/build.sh || clang_ok=0
if [ ! -x build/daemon/viad ]; then
	echo "0 passed, 1 failed"
	exit 1
fi

rm -f build/meson-logs/testlog.json
meson test -C build --print-errorlogs --num-processes 1 "$@"

# count meson's per-test results, plus the clang build as one more check
read -r passed failed skipped < <(python3 - build/meson-logs/testlog.json <<'PY'
import json, sys
p = f = s = 0
try:
    lines = open(sys.argv[1]).readlines()
except OSError:
    lines = ['{"result": "ERROR"}']  # meson test did not run (a rebuild failed): one failure
for line in lines:
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"):
        p += 1
    elif r == "SKIP":
        s += 1
    else:
        f += 1
print(p, f, s)
PY
)
if [ "$clang_ok" = 1 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

# the libFuzzer targets, a few seconds each over their corpus (issue 14)
if [ "${VIA_TEST_FUZZ:-1}" = 1 ]; then
	t0=$SECONDS
	if { [ -f build-fuzz/build.ninja ] || CC=clang meson setup build-fuzz >/dev/null; } &&
	   meson configure build-fuzz -Dfuzz=true >/dev/null &&
	   tests/fuzz/run.sh build-fuzz "${VIA_FUZZ_SECONDS:-15}"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
	echo "fuzzing took $((SECONDS - t0)) s"
else
	skipped=$((skipped + 1))
fi

# ASan+UBSan and TSan builds, and what runs in them (issue 14)
if [ "${VIA_TEST_SANITIZE:-1}" = 1 ]; then
	t0=$SECONDS
	if scripts/run-sanitized.sh; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
	echo "the sanitizer builds took $((SECONDS - t0)) s"
else
	skipped=$((skipped + 1))
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
