#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Prepare a Debian 12 host for VIA-DPDK: packages, hugepages, a hugetlbfs
# mount. Idempotent; run as root. VIA_HUGEPAGES sets how many 2 MiB pages
# to reserve (default 512 = 1 GiB; see config/hugepages.md).
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
	echo "setup-host.sh: run as root (packages and hugepages need it)" >&2
	exit 1
fi

packages=(libdpdk-dev dpdk-dev libnuma-dev meson ninja-build pkg-config gcc clang
	libhugetlbfs-bin iproute2
	# IP beside VIA on a port (bpf/, tests/topo/ipcoexist.sh): the XDP
	# program's headers, ping for the test, iperf3 for its benchmark
	# (tests/perf/ipcoexist_bench.sh)
	libbpf-dev libxdp-dev iputils-ping iperf3
	# the libfabric provider (fabric/) and its tests: fi_pingpong, Open MPI
	libfabric-dev libfabric-bin openmpi-bin libopenmpi-dev
	# clang's libFuzzer and sanitizer runtimes (tests/fuzz), python3 for the scripts
	libclang-rt-14-dev python3
	# operations (meson suite ops): tshark for the dissector's test, scdoc for
	# the man pages, man-db and groff for man -l
	tshark scdoc man-db groff-base
	# tests/security/ops_privs.sh: viad under its unit's system call filter
	libseccomp-dev
	# the Debian packages (debian/, meson suite pkg): dpkg-buildpackage,
	# debhelper, lintian; systemd for systemd-sysusers and systemd-tmpfiles,
	# which the package viad's postinst runs (systemd need not be running)
	build-essential dpkg-dev debhelper fakeroot lintian systemd)
# tshark's wireshark-common asks whether non-root users may capture: no
# (viactl capture needs none of it), answered here so apt never waits
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup-host.sh: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

want=${VIA_HUGEPAGES:-512}
have=$(cat /proc/sys/vm/nr_hugepages)
if [ "$have" -lt "$want" ]; then
	echo "$want" > /proc/sys/vm/nr_hugepages
	have=$(cat /proc/sys/vm/nr_hugepages)
fi
mkdir -p /dev/hugepages
mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages
free=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages)
echo "setup-host.sh: $have 2 MiB hugepages reserved, $free free"
