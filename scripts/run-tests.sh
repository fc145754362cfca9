#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The test command: set up the host, build with gcc and clang (warnings are
# errors), run the whole meson test suite (unit and integration), and end
# with one line "N passed, N failed". Exit status 0 only if all passed.
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/setup-host.sh || exit 1
clang_ok=1
VIA_BUILD_CLANG=1 scripts/build.sh || clang_ok=0
if [ ! -x build/daemon/viad ]; then
	echo "0 passed, 1 failed"
	exit 1
fi

meson test -C build --print-errorlogs --num-processes 1 "$@"

# count meson's per-test results, plus the clang build as one more check
read -r passed failed skipped < <(python3 - build/meson-logs/testlog.json <<'PY'
import json, sys
p = f = s = 0
for line in open(sys.argv[1]):
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
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
