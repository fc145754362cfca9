#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Configure (once) and build VIA-DPDK: build/ with gcc, and with
# VIA_BUILD_CLANG=1 also build-clang/ with clang. Warnings are errors.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -f build/build.ninja ] || CC=gcc meson setup build >/dev/null
ninja -C build
if [ "${VIA_BUILD_CLANG:-0}" = 1 ]; then
	[ -f build-clang/build.ninja ] || CC=clang meson setup build-clang >/dev/null
	ninja -C build-clang
fi
