#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# tests/perf/bench.sh: VIA-DPDK against its floors and against the kernel, in
# one run, on the same two CPUs, summed up in one table.
#
#   in one process:   vipl_pingpong --loopback    vs  raw_pingpong --port ring, with
#                                                     one and two exchanges per sample
#                                                 vs  cacheline_pingpong
#   two processes:    vipl_pingpong over two viads joined by memif
#                                                 vs  raw_pingpong --port memif
#   kernel:           sockperf UDP ping-pong and iperf3 TCP over 127.0.0.1
#   bandwidth:        vipl_bw --loopback vs iperf3; memcpy_bw
#   RDMA, one viad:   vipl_pingpong --loopback --op write-imm and --op read (rd),
#                     vipl_bw --loopback --op write and --op read (rd), against
#                     --op send; vipl_bw --mem heap vs provider at one size
#   issue 18:         vipl_bw --loopback --one-thread: the 64 B message rate of one
#                     poll lcore with one application thread (Send, RDMA Write,
#                     Write with immediate data; nothing lost)
#                     and poll_cost: what a VipRecvDone or VipCQDone that finds
#                     nothing costs the program, ns per call
#   issue 12:         vipl_pingpong --loopback --mem provider vs heap at 64 B and
#                     8 KiB; --wait block and --cq --wait block vs poll at 64 B
#                     (heap memory: the legacy program's way)
#   issue 29:         vipl_regbench: VipRegisterMem / VipDeregisterMem of heap memory
#                     per size, first and again, through the client's table and with
#                     calls only; vipl_pingpong -l --mem heap 16 KiB and 1 MiB with
#                     --reg-each against pre-registered
#   issue 6 (scale):  vipl_pingpong --loopback 64 B beside 0, 1024, 16384 idle VIs
#                     (--quick: 0, 1024) and beside a vipl_bw 64 KiB stream;
#                     vipl_bw --loopback 64 B msg/s with 1 and with 2 poll lcores
#   issue 30 (goals): VIs with line entries (--inline 64): the 0 and 64 B loopback
#                     RTT against two ring round trips, the one-thread Send and RDMA
#                     Write rates, the RTT beside 0 and 16384 (--quick: 1024) idle
#                     VIs, heap against provider memory; every goal with its ratio
#
# Usage: tests/perf/bench.sh [--quick] [options]      (as root)
#   --quick           a few seconds per benchmark, for CI: asserts nothing about
#                     speed, exits 1 if a benchmark the build provides cannot run
#   --build DIR       meson build directory (default: build/ at the top)
#   --out FILE        results file (default: $OUT/via-perf-DATE.json when $OUT is a
#                     directory, else tests/perf/results/DATE.json); the PNG plots
#                     go next to it
#   --cpus A,B[,C,D]  the CPUs to use (default: the first four we may run on, or
#                     two on a smaller machine): viad's poll lcore and the
#                     program's first thread on A and B; with C and D, a second
#                     thread, a second viad and a second poll lcore get their own
#                     (C, D) instead of sharing A and B, and nothing needs more
#                     CPUs than it is given
#   --poll-mode M     viad.poll_mode of the viads: busy (default) or backoff
#   --vipl-wait W     vipl_pingpong --wait between two viads: poll or block
#                     (default: poll with 4 CPUs or more, else block)
#   --no-install      do not apt-get install sockperf, iperf3, gnuplot-nox
#   --no-plots        no PNG plots
#   --keep            keep the scratch directory (logs of every process)
# Environment: VIAD, VIPL_PINGPONG, VIPL_BW, VIPL_INFO, VIPL_POLL_COST,
# VIPL_REGBENCH override the binaries.
#
# Exit status: 0; 1 when a benchmark that could run failed, or in --quick mode
# when a piece the build provides is missing; 2 for bad usage.  Benchmarks
# whose tools are absent (sockperf, iperf3, a vipl app the build does not
# declare yet) are reported as "skipped: WHY".
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build
quick=0
install=1
plots=1
keep=0
out_file=
cpus=
poll_mode=busy
vipl_wait=

usage() {
	sed -n '4,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
	exit "$1"
}

while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--build) build=${2:?--build needs a directory}; shift ;;
	--out) out_file=${2:?--out needs a file}; shift ;;
	--cpus) cpus=${2:?--cpus needs A,B}; shift ;;
	--poll-mode) poll_mode=${2:?}; shift ;;
	--vipl-wait) vipl_wait=${2:?}; shift ;;
	--no-install) install=0 ;;
	--no-plots) plots=0 ;;
	--keep) keep=1 ;;
	-h|--help) usage 0 ;;
	*) echo "bench.sh: unknown option '$1' (-h for help)" >&2; exit 2 ;;
	esac
	shift
done
case $poll_mode in busy|backoff) ;; *) echo "bench.sh: --poll-mode busy|backoff" >&2; exit 2 ;; esac
case $vipl_wait in ''|poll|block) ;; *) echo "bench.sh: --vipl-wait poll|block" >&2; exit 2 ;; esac

log() { echo "bench.sh: $*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
	log "run as root: the DPDK programs need hugepages and viad needs /run"
	exit 1
fi
for t in python3 timeout taskset gcc pkg-config; do
	command -v "$t" >/dev/null || { log "missing $t"; exit 1; }
done

# ------------------------------------------------------------------ setup

ncpu=$(nproc)
if [ -z "$cpus" ]; then
	cpus=$(python3 -c 'import os; c = sorted(os.sched_getaffinity(0))
print(",".join(str(x) for x in (c[:4] if len(c) >= 4 else [c[0], c[min(1, len(c) - 1)]])))')
fi
case "$cpus" in
*[!0-9,]*|,*|*,|*,,*) log "bad --cpus '$cpus'"; exit 2 ;;
esac
IFS=, read -r A B C D extra <<<"$cpus"
if [ -z "$B" ] || [ -n "$extra" ] || { [ -n "$C" ] && [ -z "$D" ]; }; then
	log "--cpus takes A,B or A,B,C,D"
	exit 2
fi
# the CPUs given: what a benchmark may use without time-slicing. With four,
# a second application thread (T2), the second viad of the memif test
# (lcores VC, its program on SRV), a second poll lcore (P2) and the 64 KiB
# stream beside the pingpong (BULK) get C and D; with two they share A and B
if [ -n "$C" ]; then
	ngiven=4 T2=$C VC="0@$C,1@$D" SRV=$C P2=$D BULK=$C,$D
else
	ngiven=2 T2=$B VC="0@$B,1@$A" SRV=$B P2=$A BULK=$A,$B
fi

if [ "$quick" = 1 ]; then
	lat_sizes=64,1024
	bw_sizes=64,4096
	raw_n=2000 raw_w=100
	vlo_n=1000 vlo_w=100
	vm_n=200 vm_w=20
	bw_n=2000 bw_w=200
	cl_n=100000
	pc_n=1000000
	kern_t=1
	mc_ms=20 mc_sizes=64,4K,64K,1M
	step_timeout=60
else
	lat_sizes=64,256,1024,4096,8192
	bw_sizes=64,1024,4096,16384,65536
	raw_n=100000 raw_w=1000
	vlo_n=20000 vlo_w=1000
	vm_n=20000 vm_w=1000
	bw_n='' bw_w=''
	cl_n=1000000
	pc_n=20000000
	kern_t=3
	mc_ms=200 mc_sizes=
	step_timeout=600
fi
mem_size=${bw_sizes##*,} # the size of the heap vs provider memory comparison
lo_sizes=0,$lat_sizes     # VIA also at 0 bytes (issue 30)
ring_sizes=16,$lat_sizes  # the ring's smallest frame: its 16-byte header
# Between two viads each end has a busy poll lcore and an application: 4 CPUs.
if [ -z "$vipl_wait" ]; then
	if [ "$ngiven" -ge 4 ]; then vipl_wait=poll; else vipl_wait=block; fi
fi
if [ "$ngiven" -lt 4 ] && [ "$vm_n" -gt 2000 ]; then
	vm_n=2000 vm_w=200 # time-sliced round trips take tens of us to ms
fi

run=$(mktemp -d /tmp/via-perf.XXXXXX)
tag=vperf$$
stamp=$(date -u +%Y%m%dT%H%M%SZ)
if [ -n "$out_file" ]; then
	results=$out_file
elif [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
	results=$OUT/via-perf-$stamp.json
elif [ -n "${OUT:-}" ]; then
	results=$OUT
else
	results=$here/results/$stamp.json
fi
mkdir -p "$(dirname "$results")" || exit 1
plotbase=${results%.json}

# EAL memory: as viad does it, hugepages when enough are free
free_hp=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages 2>/dev/null || echo 0)
if [ "$free_hp" -ge 64 ]; then
	eal_mem=(--in-memory)
else
	log "only $free_hp free 2 MiB hugepages: DPDK programs run with --no-huge"
	eal_mem=(--no-huge --no-shconf -m 256)
fi

pids=()      # every background process we started
prefixes=()  # every EAL --file-prefix we used
failures=0

# true when $1 is a background job of this shell still running: a PID we
# started and that has not been reaped (so not reused by someone else)
ours() { jobs -pr | grep -qx "$1"; }

cleanup() {
	local pid p _ live=()
	for pid in "${pids[@]}"; do
		ours "$pid" && live+=("$pid") && kill -TERM "$pid" 2>/dev/null
	done
	for _ in $(seq 50); do
		p=0
		for pid in "${live[@]}"; do ours "$pid" && p=1; done
		[ $p = 0 ] && break
		sleep 0.1
	done
	for pid in "${live[@]}"; do ours "$pid" && kill -KILL "$pid" 2>/dev/null; done
	# EAL leaves /var/run/dpdk/PREFIX behind, empty with --in-memory
	for p in "${prefixes[@]}"; do
		[ -d "/var/run/dpdk/$p" ] && rm -rf "/var/run/dpdk/$p"
		rm -f /dev/hugepages/"$p"map_* 2>/dev/null
	done
	if [ "$keep" = 1 ]; then log "scratch directory kept: $run"; else rm -rf "$run"; fi
}
trap cleanup EXIT
trap 'log interrupted; exit 130' INT TERM

# stop one background process we started: TERM, then KILL after 5 s
stop() {
	local pid=$1 _
	if ours "$pid"; then
		kill -TERM "$pid" 2>/dev/null
		for _ in $(seq 50); do
			ours "$pid" || break
			sleep 0.1
		done
		ours "$pid" && kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
	return 0
}

# wait (at most $2 s) for background process $1 to exit; its status, 124 on timeout
await() {
	local pid=$1 _
	for _ in $(seq $(($2 * 10))); do
		ours "$pid" || { wait "$pid"; return $?; }
		sleep 0.1
	done
	stop "$pid"
	return 124
}

# status ID ok|skipped|failed WHY PINNING NEEDS LABEL
status() {
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "${3//$'\t'/ }" "$4" "$5" "$6" >>"$run/status.tsv"
	case $2 in
	ok) log "$1: ok" ;;
	skipped) log "$1: skipped: $3" ;;
	failed) log "$1: FAILED: $3"; failures=$((failures + 1)) ;;
	esac
}

# skip, or in --quick mode fail, when the build declares what is missing
skip_or_fail() { # ID WHY PINNING NEEDS LABEL BUILD-TARGET
	if [ "$quick" = 1 ] && declared "$6"; then
		status "$1" failed "$2 (the build declares $6)" "$3" "$4" "$5"
	else
		status "$1" skipped "$2" "$3" "$4" "$5"
	fi
}

declared() { [ -n "$1" ] && [ -f "$build/build.ninja" ] && grep -q "^build $1:" "$build/build.ninja"; }

# why a step failed: its exit status and the last line of its log
why() { # RC LOG
	local last
	last=$(grep -v '^\s*$' "$2" 2>/dev/null | tail -n 1 | cut -c1-160)
	if [ "$1" = 124 ]; then echo "timed out; ${last:-no output}"; else echo "exit $1; ${last:-no output}"; fi
}

has_json() { grep -q '^{' "$1" 2>/dev/null; }

# install a missing tool; false when it is still missing
ensure() { # COMMAND PACKAGE
	command -v "$1" >/dev/null && return 0
	[ "$install" = 1 ] && command -v apt-get >/dev/null || return 1
	log "installing $2"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq "$2" >>"$run/apt.log" 2>&1 ||
		{ apt-get update -qq >>"$run/apt.log" 2>&1 && apt-get install -y -qq "$2" >>"$run/apt.log" 2>&1; }
	command -v "$1" >/dev/null
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait (at most 10 s) for a socket file while process $2 lives
await_socket() {
	local _
	for _ in $(seq 100); do
		[ -S "$1" ] && return 0
		ours "$2" || return 1
		sleep 0.1
	done
	return 1
}

# ------------------------------------------------------- the binaries

# the perf programs: from the build when it has them, else compiled here
bin=$run/bin
mkdir -p "$bin"
cflags=(-O2 -std=gnu11 -Wall -Wextra -Werror)
perf_bin() { # NAME -> path, or empty when it cannot be built
	local name=$1 out
	if [ -x "$build/tests/perf/$name" ]; then
		echo "$build/tests/perf/$name"
		return
	fi
	out=$bin/$name
	case $name in
	raw_pingpong)
		# shellcheck disable=SC2046
		gcc "${cflags[@]}" $(pkg-config --cflags libdpdk) "$here/$name.c" \
			$(pkg-config --libs libdpdk) -o "$out" >>"$run/compile.log" 2>&1 ;;
	*)
		gcc "${cflags[@]}" "$here/$name.c" -pthread -o "$out" >>"$run/compile.log" 2>&1 ;;
	esac && echo "$out"
}
rpp=$(perf_bin raw_pingpong)
clp=$(perf_bin cacheline_pingpong)
mcb=$(perf_bin memcpy_bw)
compile_why="does not compile: $(tail -n 1 "$run/compile.log" 2>/dev/null | cut -c1-120)"

app() { # ENV-OVERRIDE TARGET
	if [ -n "$1" ]; then echo "$1"; elif [ -x "$build/$2" ]; then echo "$build/$2"; fi
}
viad=$(app "${VIAD:-}" daemon/viad)
vpp=$(app "${VIPL_PINGPONG:-}" apps/vipl_pingpong)
vbw=$(app "${VIPL_BW:-}" apps/vipl_bw)
vinfo=$(app "${VIPL_INFO:-}" apps/vipl_info)
vpc=$(app "${VIPL_POLL_COST:-}" tests/perf/poll_cost)
vrb=$(app "${VIPL_REGBENCH:-}" tests/perf/vipl_regbench)

# ------------------------------------------------------------- metadata

python3 - "$run/meta.json" <<EOF
import json, os, platform, re, subprocess, sys, time

def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""

def cpu_times():
    t = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            s = open("/proc/%s/stat" % p).read()
            comm = s[s.index("(") + 1:s.rindex(")")]
            f = s[s.rindex(")") + 2:].split()
            t[int(p)] = (comm, int(f[11]) + int(f[12]))
        except (OSError, ValueError, IndexError):
            pass
    return t

t0 = cpu_times()
time.sleep(0.5)
t1 = cpu_times()
hz = os.sysconf("SC_CLK_TCK")
busy = []
for pid, (comm, ticks) in t1.items():
    if pid in t0 and pid != os.getpid():
        pct = 100.0 * (ticks - t0[pid][1]) / hz / 0.5
        if pct >= 10:
            cmd = open("/proc/%d/cmdline" % pid, "rb").read().replace(b"\0", b" ").decode(errors="replace") if os.path.exists("/proc/%d/cmdline" % pid) else comm
            busy.append((pct, "pid %d %3.0f%% CPU: %s" % (pid, pct, cmd.strip()[:110])))
model = re.search(r"model name\s*:\s*(.*)", open("/proc/cpuinfo").read())
term = "pngcairo" if "pngcairo" in sh("gnuplot -e 'set terminal' 2>&1") else "png"
json.dump({
    "run": "$stamp", "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    "host": platform.node(), "kernel": platform.release(),
    "cpus_online": $ncpu, "cpus_used": "$cpus", "cpus_given": $ngiven,
    "cpu_model": model.group(1) if model else "?",
    "quick": bool($quick), "dpdk": sh("pkg-config --modversion libdpdk"),
    "lo_mtu": sh("cat /sys/class/net/lo/mtu"), "free_hugepages": $free_hp,
    "poll_mode": "$poll_mode", "vipl_wait_two_viads": "$vipl_wait",
    "loadavg": open("/proc/loadavg").read().split()[:3],
    "busy_others": [b for _, b in sorted(busy, reverse=True)],
    "gnuplot_term": term,
}, open(sys.argv[1], "w"))
EOF

log "run $stamp: CPUs $cpus of $ncpu, scratch $run, results $results"

# ------------------------------------------------------------ benchmarks

# 1. cache-line ping-pong; run again last (ID cacheline_end) to see whether
# the host moved our virtual CPUs meanwhile
bench_cacheline() {
	local id=$1 pin="ping thread CPU $A, pong thread CPU $B" label=$2 rc
	[ -n "$clp" ] || { status $id failed "cacheline_pingpong.c $compile_why" "$pin" 2 "$label"; return; }
	timeout "$step_timeout" "$clp" --cpus "$A,$B" -n "$cl_n" --json >"$run/$id.jsonl" 2>"$run/$id.log"
	rc=$?
	if [ $rc = 0 ] && has_json "$run/$id.jsonl"; then status $id ok "" "$pin" 2 "$label"
	else status $id failed "$(why $rc "$run/$id.log")" "$pin" 2 "$label"; fi
}

# 2. raw rte_ring ping-pong, one process, two lcores: ID EXCHANGES LABEL
# (EXCHANGES round trips per timed sample; 2 crosses between the two lcores
# as often as a VIA loopback round trip, whose ping and pong each go to the
# poll lcore and back)
bench_raw_ring() {
	local id=$1 exchanges=$2 label=$3 rc
	local pin="one process: client lcore CPU $A, server lcore CPU $B"
	[ -n "$rpp" ] || { status $id failed "raw_pingpong.c $compile_why" "$pin" 2 "$label"; return; }
	prefixes+=("${tag}_$id")
	timeout "$step_timeout" "$rpp" --lcores="0@$A,1@$B" --file-prefix="${tag}_$id" "${eal_mem[@]}" \
		--no-pci --log-level=error -- --port ring --size "$ring_sizes" -n "$raw_n" -w "$raw_w" \
		--exchanges "$exchanges" --json -q >"$run/$id.jsonl" 2>"$run/$id.log"
	rc=$?
	if [ $rc = 0 ] && has_json "$run/$id.jsonl"; then status $id ok "" "$pin" 2 "$label"
	else status $id failed "$(why $rc "$run/$id.log")" "$pin" 2 "$label"; fi
}

# 3. raw memif ping-pong, two processes
bench_raw_memif() {
	local id=raw_memif pin="server process CPU $B, client process CPU $A" rc srv
	local label="raw_pingpong --port memif (no VIA)" sock=$run/raw-memif.sock
	[ -n "$rpp" ] || { status $id failed "raw_pingpong.c $compile_why" "$pin" 2 "$label"; return; }
	prefixes+=("${tag}_ms" "${tag}_mc")
	timeout "$step_timeout" "$rpp" --lcores="0@$B" --file-prefix="${tag}_ms" "${eal_mem[@]}" --no-pci \
		--log-level=error -- --port memif --role server --socket "$sock" -q \
		>"$run/$id-server.log" 2>&1 &
	srv=$!
	pids+=("$srv")
	if ! await_socket "$sock" "$srv"; then
		stop "$srv"
		status $id failed "server: $(why 1 "$run/$id-server.log")" "$pin" 2 "$label"
		return
	fi
	timeout "$step_timeout" "$rpp" --lcores="0@$A" --file-prefix="${tag}_mc" "${eal_mem[@]}" --no-pci \
		--log-level=error -- --port memif --role client --socket "$sock" --size "$lat_sizes" \
		-n "$raw_n" -w "$raw_w" --json -q >"$run/$id.jsonl" 2>"$run/$id.log"
	rc=$?
	await "$srv" 10 >/dev/null
	if [ $rc = 0 ] && has_json "$run/$id.jsonl"; then status $id ok "" "$pin" 2 "$label"
	else status $id failed "$(why $rc "$run/$id.log")" "$pin" 2 "$label"; fi
}

# start a viad in the background: NAME LCORES [--set ...]; sets viad_pid
start_viad() {
	local name=$1 lcores=$2
	shift 2
	prefixes+=("${tag}_$name")
	timeout "$step_timeout" "$viad" -s "$run/$name.sock" --set "viad.instance=${tag}_$name" \
		--set "viad.poll_mode=$poll_mode" "$@" -- --lcores="$lcores" \
		--file-prefix="${tag}_$name" "${eal_mem[@]}" --no-pci >"$run/viad-$name.log" 2>&1 &
	viad_pid=$!
	pids+=("$viad_pid")
	await_socket "$run/$name.sock" "$viad_pid"
}

# 4. vipl_pingpong and vipl_bw --loopback on one viad: Send, then the RDMA
# operations (read on Reliable Delivery: a Read on an Unreliable VI is a
# format error), then provider vs heap memory at one size
lo_pp=(vipl_lo vipl_lo_wimm vipl_lo_read vipl_lo_mem vipl_lo_line vipl_lo_line_mem)
lo_bw=(vipl_bw_lo vipl_bw_lo_write vipl_bw_lo_read vipl_bw_mem vipl_rate_1t vipl_rate_line)
lo_label() {
	case $1 in
	vipl_lo) echo "vipl_pingpong --loopback (VIA-DPDK)" ;;
	vipl_lo_wimm) echo "vipl_pingpong --loopback --op write-imm" ;;
	vipl_lo_read) echo "vipl_pingpong --loopback --op read -r rd" ;;
	vipl_lo_mem) echo "vipl_pingpong -l --mem provider|heap, --wait poll|block, --cq" ;;
	vipl_bw_lo) echo "vipl_bw --loopback (VIA-DPDK)" ;;
	vipl_bw_lo_write) echo "vipl_bw --loopback --op write" ;;
	vipl_bw_lo_read) echo "vipl_bw --loopback --op read -r rd" ;;
	vipl_bw_mem) echo "vipl_bw -l --mem heap|provider, ${mem_size} B" ;;
	vipl_rate_1t) echo "vipl_bw -l --one-thread 64 B, send|write|write-imm" ;;
	vipl_lo_line) echo "vipl_pingpong --loopback --inline 64 (line entries)" ;;
	vipl_lo_line_mem) echo "vipl_pingpong -l --inline 64 64 B, provider|heap" ;;
	vipl_rate_line) echo "vipl_bw -l --one-thread --inline 64, 64 B send|write" ;;
	vipl_poll_cost) echo "poll_cost: empty VipRecvDone, VipCQDone" ;;
	esac
}
lo_args() {
	case $1 in
	*_wimm) echo "--op write-imm" ;;
	*_write) echo "--op write" ;;
	*_read) echo "--op read -r rd" ;;
	vipl_lo_line) echo "--inline 64" ;;
	esac
}

bench_vipl_lo() {
	local pin="viad control lcore CPU $A, poll lcore CPU $B ($poll_mode); vipl_pingpong (one thread, both VIs) CPU $A"
	local pinbw="viad control lcore CPU $A, poll lcore CPU $B ($poll_mode); vipl_bw client and server threads on CPUs $A,$T2"
	local pin1t="viad control lcore CPU $A, poll lcore CPU $B ($poll_mode); vipl_bw --one-thread CPU $A"
	local pinpc="viad control lcore CPU $A, poll lcore CPU $B ($poll_mode); poll_cost CPU $A"
	local rc lo id why op mem bwpin bwneeds
	# not runnable: every step skipped (failed in --quick mode when declared)
	lo_none() { # WHY-PP WHY-BW TARGET-PP TARGET-BW
		for id in "${lo_pp[@]}"; do skip_or_fail $id "$1" "$pin" 2 "$(lo_label $id)" "$3"; done
		for id in "${lo_bw[@]}"; do skip_or_fail $id "$2" "$pinbw" 3 "$(lo_label $id)" "$4"; done
		skip_or_fail vipl_poll_cost "$1" "$pinpc" 2 "$(lo_label vipl_poll_cost)" "$3"
	}
	if [ -z "$viad" ]; then
		lo_none "viad not built" "viad not built" daemon/viad daemon/viad
		return
	fi
	if [ -z "$vpp" ] && [ -z "$vbw" ]; then
		lo_none "vipl_pingpong not built" "vipl_bw not built" apps/vipl_pingpong apps/vipl_bw
		return
	fi
	if ! start_viad lo "0@$A,1@$B"; then
		lo=$viad_pid
		stop "$lo"
		why="viad: $(why 1 "$run/viad-lo.log")"
		for id in "${lo_pp[@]}"; do
			if [ -n "$vpp" ]; then status $id failed "$why" "$pin" 2 "$(lo_label $id)"
			else skip_or_fail $id "vipl_pingpong not built" "$pin" 2 "$(lo_label $id)" apps/vipl_pingpong; fi
		done
		for id in "${lo_bw[@]}"; do
			if [ -n "$vbw" ]; then status $id failed "$why" "$pinbw" 3 "$(lo_label $id)"
			else skip_or_fail $id "vipl_bw not built" "$pinbw" 3 "$(lo_label $id)" apps/vipl_bw; fi
		done
		status vipl_poll_cost failed "$why" "$pinpc" 2 "$(lo_label vipl_poll_cost)"
		return
	fi
	lo=$viad_pid
	for id in "${lo_pp[@]}"; do
		if [ -z "$vpp" ]; then
			skip_or_fail $id "vipl_pingpong not built" "$pin" 2 "$(lo_label $id)" apps/vipl_pingpong
			continue
		fi
		if [ $id = vipl_lo_mem ] || [ $id = vipl_lo_line_mem ]; then
			# issue 12: registered heap memory against provider memory, and
			# the blocking waits a legacy program uses against polling;
			# issue 30: the same with line entries
			: >"$run/$id.jsonl"
			rc=0
			if [ $id = vipl_lo_mem ]; then
				set -- "--mem provider --size 64,8192" "--mem heap --size 64,8192" \
					"--mem heap --size 64 --wait block" \
					"--mem heap --size 64 --cq --wait block"
			else
				set -- "--inline 64 --mem provider --size 64" "--inline 64 --mem heap --size 64"
			fi
			for args in "$@"; do
				# shellcheck disable=SC2086
				VIAD_SOCKET=$run/lo.sock timeout "$step_timeout" taskset -c "$A" "$vpp" \
					--loopback $args -n "$vlo_n" -w "$vlo_w" --json >>"$run/$id.jsonl" \
					2>"$run/$id.log" || { rc=$?; break; }
			done
		else
			# shellcheck disable=SC2046
			VIAD_SOCKET=$run/lo.sock timeout "$step_timeout" taskset -c "$A" "$vpp" --loopback \
				$(lo_args $id) --size "$([ $id = vipl_lo ] || [ $id = vipl_lo_line ] &&
							echo "$lo_sizes" || echo "$lat_sizes")" \
				-n "$vlo_n" -w "$vlo_w" --json >"$run/$id.jsonl" 2>"$run/$id.log"
			rc=$?
		fi
		if [ $rc = 0 ] && has_json "$run/$id.jsonl"; then status $id ok "" "$pin" 2 "$(lo_label $id)"
		else status $id failed "$(why $rc "$run/$id.log")" "$pin" 2 "$(lo_label $id)"; fi
	done
	for id in "${lo_bw[@]}"; do
		bwpin=$pinbw bwneeds=3
		if [ $id = vipl_rate_1t ] || [ $id = vipl_rate_line ]; then bwpin=$pin1t bwneeds=2; fi
		if [ -z "$vbw" ]; then
			skip_or_fail $id "vipl_bw not built" "$bwpin" $bwneeds "$(lo_label $id)" apps/vipl_bw
			continue
		fi
		if [ $id = vipl_rate_1t ] || [ $id = vipl_rate_line ]; then
			# issue 18: one application thread drives both VIs, so the
			# message rate of the poll lcore is measured on two CPUs;
			# issue 30: the same over line entries
			: >"$run/$id.jsonl"
			rc=0
			if [ $id = vipl_rate_1t ]; then set -- send write write-imm; else set -- send write; fi
			for op in "$@"; do
				# shellcheck disable=SC2046
				VIAD_SOCKET=$run/lo.sock timeout "$step_timeout" taskset -c "$A" "$vbw" \
					--loopback --one-thread --op $op --size 64 ${bw_n:+-n "$bw_n"} \
					${bw_w:+-w "$bw_w"} --no-check --json \
					$([ $id = vipl_rate_line ] && echo --inline 64) >>"$run/$id.jsonl" \
					2>"$run/$id.log" || { rc=$?; break; }
			done
		elif [ $id = vipl_bw_mem ]; then
			# provider memory vs registered heap memory (both in place since
			# issue 12); Sends with credits, so that no message is lost to an
			# empty receive queue
			: >"$run/$id.jsonl"
			rc=0
			for op in "send --credits" write; do
				for mem in provider heap; do
					# shellcheck disable=SC2086
					VIAD_SOCKET=$run/lo.sock timeout "$step_timeout" taskset -c "$A,$T2" "$vbw" \
						--loopback --op $op --mem $mem --size "$mem_size" ${bw_n:+-n "$bw_n"} \
						${bw_w:+-w "$bw_w"} --no-check --json >>"$run/$id.jsonl" \
						2>"$run/$id.log" || { rc=$?; break 2; }
				done
			done
		else
			# shellcheck disable=SC2046
			VIAD_SOCKET=$run/lo.sock timeout "$step_timeout" taskset -c "$A,$T2" "$vbw" --loopback \
				$(lo_args $id) --size "$bw_sizes" ${bw_n:+-n "$bw_n"} ${bw_w:+-w "$bw_w"} \
				--no-check --json >"$run/$id.jsonl" 2>"$run/$id.log"
			rc=$?
		fi
		if [ $rc = 0 ] && has_json "$run/$id.jsonl"; then
			status $id ok "" "$bwpin" $bwneeds "$(lo_label $id)"
		else
			status $id failed "$(why $rc "$run/$id.log")" "$bwpin" $bwneeds "$(lo_label $id)"
		fi
	done
	# issue 18 part 1: what a poll that finds nothing costs the program
	id=vipl_poll_cost
	if [ -z "$vpc" ]; then
		skip_or_fail $id "poll_cost not built" "$pinpc" 2 "$(lo_label $id)" tests/perf/poll_cost
	else
		VIAD_SOCKET=$run/lo.sock timeout "$step_timeout" taskset -c "$A" "$vpc" -n "$pc_n" \
			--json >"$run/$id.jsonl" 2>"$run/$id.log"
		rc=$?
		if [ $rc = 0 ] && has_json "$run/$id.jsonl"; then status $id ok "" "$pinpc" 2 "$(lo_label $id)"
		else status $id failed "$(why $rc "$run/$id.log")" "$pinpc" 2 "$(lo_label $id)"; fi
	fi
	stop "$lo"
}

# 5. issue 6, on one viad with room for 16384 idle VIs in one session: one
# active VI pair (vipl_pingpong --loopback, 64 B) beside 0, 1024 and 16384
# idle VIs of the same process (vipl_idle0/1k/16k; --quick: 0 and 1024); the
# same pair beside a 64 KiB vipl_bw --loopback stream of another process
# (vipl_beside_bulk, against vipl_idle0); then the 64 B message rate of
# vipl_bw --loopback --credits on a viad with one poll lcore and on one with
# two (vipl_rate_1lc, vipl_rate_2lc)
sc_limits=(--set limits.max_vi=16400 --set limits.max_desc_per_queue=64
	--set limits.session_shm_bytes=64M --set limits.user_share=1)
sc_limits_txt="limits.max_vi=16400, max_desc_per_queue=64, session_shm_bytes=64M"
if [ "$quick" = 1 ]; then
	sc_idle=(0 1024)
	sc_idle_line=(0 1024)
	bulk_n=20000 bulk_lead=0.3
	rate_n=2000 rate_w=200 rate_reps=64,64,64
else
	sc_idle=(0 1024 16384)
	sc_idle_line=(0 16384)
	bulk_n=60000 bulk_lead=0.5
	rate_n=20000 rate_w=1000 rate_reps=64,64,64
fi
idle_id() { if [ "$1" -ge 1024 ] && [ $(($1 % 1024)) = 0 ]; then echo "vipl_idle$(($1 / 1024))k"; else echo "vipl_idle$1"; fi; }
# the same with line entries (issue 30): the active pair has them, the idle VIs not
idle_line_id() { echo "$(idle_id "$1")_line"; }

# add fields to every JSON line of a file: FILE '"key":value,...'
tag_json() { sed -i "s/^{/{$2,/" "$1"; }

# vipl_pingpong 64 B beside a 64 KiB vipl_bw stream on the viad at $run/sc.sock.
# The stream starts first; the pingpong must end before the stream's last
# send (bench_report.py beside checks it from the stream's own time): if not,
# again with a stream long enough at the rate it had (retry_n), 3 tries.  The
# stream then runs to its end, so that vipl_bw prints its MB/s (it prints
# nothing when killed).
beside_bulk() { # PIN NEEDS LABEL
	local id=vipl_beside_bulk n=$bulk_n last=$bulk_n rc brc t0 t1 t2 bulk
	for _ in 1 2 3; do
		t0=$(date +%s.%N)
		VIAD_SOCKET=$run/sc.sock timeout "$step_timeout" taskset -c "$BULK" "$vbw" --loopback \
			--size 65536 -n "$n" -w 100 --no-check --json >"$run/$id-bulk.jsonl" \
			2>"$run/$id-bulk.log" &
		bulk=$!
		pids+=("$bulk")
		sleep "$bulk_lead"
		if ! ours "$bulk"; then
			wait "$bulk"
			brc=$?
			if [ $brc != 0 ] || ! has_json "$run/$id-bulk.jsonl"; then
				status "$id" failed "64 KiB stream: $(why $brc "$run/$id-bulk.log")" "$1" "$2" "$3"
				return
			fi
			log "$id: the 64 KiB stream (-n $n) ended within ${bulk_lead} s; again, 8 times longer"
			last=$n
			n=$((n * 8))
			continue
		fi
		t1=$(date +%s.%N)
		VIAD_SOCKET=$run/sc.sock timeout "$step_timeout" taskset -c "$A" "$vpp" --loopback \
			--size 64 -n "$vlo_n" -w "$vlo_w" --json >"$run/$id.jsonl" 2>"$run/$id.log"
		rc=$?
		t2=$(date +%s.%N)
		if [ $rc != 0 ] || ! has_json "$run/$id.jsonl"; then
			stop "$bulk"
			status "$id" failed "$(why $rc "$run/$id.log")" "$1" "$2" "$3"
			return
		fi
		await "$bulk" "$step_timeout"
		brc=$?
		if [ $brc != 0 ] || ! has_json "$run/$id-bulk.jsonl"; then
			status "$id" failed "64 KiB stream: $(why $brc "$run/$id-bulk.log")" "$1" "$2" "$3"
			return
		fi
		tag_json "$run/$id.jsonl" '"role":"pingpong","beside":"vipl_bw --loopback --size 65536"'
		python3 "$here/bench_report.py" beside "$run/$id-bulk.jsonl" "$t0" "$t1" "$t2" \
			>>"$run/$id.jsonl" 2>>"$run/$id.log"
		rc=$?
		if [ $rc = 0 ]; then status "$id" ok "" "$1" "$2" "$3"; return; fi
		if [ $rc != 3 ]; then status "$id" failed "$(why $rc "$run/$id.log")" "$1" "$2" "$3"; return; fi
		last=$n
		n=$(grep -o '"retry_n": [0-9]*' "$run/$id.jsonl" | tail -n 1 | grep -o '[0-9]*$')
		[ -n "$n" ] && [ "$n" -gt "$last" ] || n=$((last * 4))
		log "$id: the 64 KiB stream (-n $last) ended before the pingpong; again with -n $n"
	done
	status "$id" failed "the 64 KiB stream ended before the pingpong, 3 times (last -n $last)" \
		"$1" "$2" "$3"
}

# vipl_bw --loopback 64 B message rate on a viad of its own, three times in a
# row (--size 64,64,64: the report takes the median, the figure jumps by 10x
# from one run to the next when the threads are time-sliced): ID NAME LCORES
# PIN NEEDS LABEL
rate_lcores() {
	local id=$1 name=$2 lcores=$3 rc _ first=
	if ! start_viad "$name" "$lcores"; then
		stop "$viad_pid"
		status "$id" failed "viad: $(why 1 "$run/viad-$name.log")" "$4" "$5" "$6"
		return
	fi
	# once more if it fails: with --credits on an Unreliable VI, a thread
	# descheduled past vipl_bw's credit stall (100 ms) can end the run with
	# "unexpected 24-byte message while waiting for credits"; the first
	# failure stays in the status line
	for _ in 1 2; do
		VIAD_SOCKET=$run/$name.sock timeout "$step_timeout" taskset -c "$A,$T2" "$vbw" --loopback \
			--size "$rate_reps" --credits -n "$rate_n" -w "$rate_w" --no-check --json \
			>"$run/$id.jsonl" 2>"$run/$id.log"
		rc=$?
		[ $rc = 0 ] && has_json "$run/$id.jsonl" && break
		[ -n "$first" ] && break
		first="first try failed ($(why $rc "$run/$id.log")), the second passed"
		cp "$run/$id.log" "$run/$id-try1.log"
		log "$id: failed, once more: $(why $rc "$run/$id.log")"
	done
	stop "$viad_pid"
	if [ $rc = 0 ] && has_json "$run/$id.jsonl"; then
		tag_json "$run/$id.jsonl" "\"poll_lcores\":$(($(tr -cd , <<<"$lcores" | wc -c)))"
		status "$id" ok "$first" "$4" "$5" "$6"
	else
		status "$id" failed "$(why $rc "$run/$id.log")${first:+ (twice)}" "$4" "$5" "$6"
	fi
}

bench_scale() {
	local pin="viad ($sc_limits_txt): control lcore CPU $A, poll lcore CPU $B ($poll_mode); vipl_pingpong (one thread, both VIs and the idle VIs) CPU $A"
	local pinbb="viad as for vipl_idle0; vipl_pingpong CPU $A; vipl_bw 64 KiB stream (another process): client and server threads on CPUs $BULK"
	local pin1="viad control lcore CPU $A, poll lcore CPU $B ($poll_mode); vipl_bw client and server threads on CPUs $A,$T2"
	local pin2="viad control lcore CPU $A, poll lcores CPU $B and CPU $P2 ($poll_mode); vipl_bw client and server threads on CPUs $A,$T2"
	local lbb="vipl_pingpong -l 64 B beside a 64 KiB stream"
	local l1="vipl_bw -l --credits 64 B, 1 poll lcore"
	local l2="vipl_bw -l --credits 64 B, 2 poll lcores"
	local n id rc why
	if [ -z "$viad" ]; then
		for n in "${sc_idle[@]}"; do
			skip_or_fail "$(idle_id "$n")" "viad not built" "$pin" 2 "vipl_pingpong -l 64 B, $n idle VIs" daemon/viad
		done
		for n in "${sc_idle_line[@]}"; do
			skip_or_fail "$(idle_line_id "$n")" "viad not built" "$pin" 2 \
				"vipl_pingpong -l --inline 64 64 B, $n idle VIs" daemon/viad
		done
		skip_or_fail vipl_beside_bulk "viad not built" "$pinbb" 4 "$lbb" daemon/viad
		skip_or_fail vipl_rate_1lc "viad not built" "$pin1" 3 "$l1" daemon/viad
		skip_or_fail vipl_rate_2lc "viad not built" "$pin2" 4 "$l2" daemon/viad
		return
	fi
	# idle VIs, then beside the stream: one viad
	if [ -z "$vpp" ]; then
		for n in "${sc_idle[@]}"; do
			skip_or_fail "$(idle_id "$n")" "vipl_pingpong not built" "$pin" 2 \
				"vipl_pingpong -l 64 B, $n idle VIs" apps/vipl_pingpong
		done
		for n in "${sc_idle_line[@]}"; do
			skip_or_fail "$(idle_line_id "$n")" "vipl_pingpong not built" "$pin" 2 \
				"vipl_pingpong -l --inline 64 64 B, $n idle VIs" apps/vipl_pingpong
		done
		skip_or_fail vipl_beside_bulk "vipl_pingpong not built" "$pinbb" 4 "$lbb" apps/vipl_pingpong
	elif ! start_viad sc "0@$A,1@$B" "${sc_limits[@]}"; then
		stop "$viad_pid"
		why="viad: $(why 1 "$run/viad-sc.log")"
		for n in "${sc_idle[@]}"; do
			status "$(idle_id "$n")" failed "$why" "$pin" 2 "vipl_pingpong -l 64 B, $n idle VIs"
		done
		for n in "${sc_idle_line[@]}"; do
			status "$(idle_line_id "$n")" failed "$why" "$pin" 2 \
				"vipl_pingpong -l --inline 64 64 B, $n idle VIs"
		done
		status vipl_beside_bulk failed "$why" "$pinbb" 4 "$lbb"
	else
		# the 16-byte entries, then line entries (issue 30): the idle
		# VIs keep 16-byte ones either way
		for n in "${sc_idle[@]}" "${sc_idle_line[@]/%/ line}"; do
			local line=${n#* } lbl
			n=${n% *}
			if [ "$line" = line ]; then
				id=$(idle_line_id "$n") lbl="vipl_pingpong -l --inline 64 64 B, $n idle VIs"
			else
				id=$(idle_id "$n") lbl="vipl_pingpong -l 64 B, $n idle VIs"
			fi
			# shellcheck disable=SC2046
			VIAD_SOCKET=$run/sc.sock timeout "$step_timeout" taskset -c "$A" "$vpp" --loopback \
				--size 64 -n "$vlo_n" -w "$vlo_w" --idle-vis "$n" --json \
				$([ "$line" = line ] && echo --inline 64) >"$run/$id.jsonl" 2>"$run/$id.log"
			rc=$?
			if [ $rc = 0 ] && has_json "$run/$id.jsonl"; then
				tag_json "$run/$id.jsonl" "\"idle_vis\":$n"
				status "$id" ok "" "$pin" 2 "$lbl"
			else
				status "$id" failed "$(why $rc "$run/$id.log")" "$pin" 2 "$lbl"
			fi
		done
		if [ -z "$vbw" ]; then
			skip_or_fail vipl_beside_bulk "vipl_bw not built" "$pinbb" 4 "$lbb" apps/vipl_bw
		else
			beside_bulk "$pinbb" 4 "$lbb"
		fi
		stop "$viad_pid"
	fi
	# message rate with one poll lcore and with two: a viad each
	if [ -z "$vbw" ]; then
		skip_or_fail vipl_rate_1lc "vipl_bw not built" "$pin1" 3 "$l1" apps/vipl_bw
		skip_or_fail vipl_rate_2lc "vipl_bw not built" "$pin2" 4 "$l2" apps/vipl_bw
		return
	fi
	rate_lcores vipl_rate_1lc r1 "0@$A,1@$B" "$pin1" 3 "$l1"
	rate_lcores vipl_rate_2lc r2 "0@$A,1@$B,2@$P2" "$pin2" 4 "$l2"
}

# wait (at most 10 s) for via0 of the viad at socket $1 to report its link up
await_link() {
	local _
	if [ -z "$vinfo" ]; then sleep 1; return 0; fi
	for _ in $(seq 50); do
		VIAD_SOCKET=$1 timeout 5 "$vinfo" via0 2>/dev/null | grep -q 'link up' && return 0
		sleep 0.2
	done
	return 1
}

# 6. vipl_pingpong between two viads joined by memif
bench_vipl_memif() {
	local id=vipl_memif label="vipl_pingpong over 2 viads + memif (VIA-DPDK)" rc s c srv
	local pin="viad-S control CPU $A, poll CPU $B; viad-C lcores $VC ($poll_mode); vipl_pingpong -s CPU $SRV, -c CPU $A (--wait $vipl_wait)"
	local ms=$run/via-memif.sock mac_s=02:00:00:00:0a:01 mac_c=02:00:00:00:0a:02
	if [ -z "$viad" ]; then skip_or_fail $id "viad not built" "$pin" 4 "$label" daemon/viad; return; fi
	if [ -z "$vpp" ]; then skip_or_fail $id "vipl_pingpong not built" "$pin" 4 "$label" apps/vipl_pingpong; return; fi
	if ! start_viad S "0@$A,1@$B" --set port.via0.glue=ethdev \
		--set "port.via0.devargs=net_memif0,role=server,socket=$ms,socket-abstract=no,mac=$mac_s"; then
		stop "$viad_pid"
		status $id failed "viad-S: $(why 1 "$run/viad-S.log")" "$pin" 4 "$label"
		return
	fi
	s=$viad_pid
	if ! start_viad C "$VC" --set port.via0.glue=ethdev \
		--set "port.via0.devargs=net_memif0,role=client,socket=$ms,socket-abstract=no,mac=$mac_c"; then
		stop "$viad_pid"
		stop "$s"
		status $id failed "viad-C: $(why 1 "$run/viad-C.log")" "$pin" 4 "$label"
		return
	fi
	c=$viad_pid
	if ! await_link "$run/C.sock"; then
		stop "$c"; stop "$s"
		status $id failed "memif link between the viads did not come up in 10 s" "$pin" 4 "$label"
		return
	fi
	VIAD_SOCKET=$run/S.sock timeout "$step_timeout" taskset -c "$SRV" "$vpp" -s --wait "$vipl_wait" \
		>"$run/$id-server.log" 2>&1 &
	srv=$!
	pids+=("$srv")
	sleep 0.5
	VIAD_SOCKET=$run/C.sock timeout "$step_timeout" taskset -c "$A" "$vpp" -c "$mac_s" \
		--wait "$vipl_wait" --size "$lat_sizes" -n "$vm_n" -w "$vm_w" --json \
		>"$run/$id.jsonl" 2>"$run/$id.log"
	rc=$?
	await "$srv" 10 >/dev/null
	stop "$c"
	stop "$s"
	if [ $rc = 0 ] && has_json "$run/$id.jsonl"; then status $id ok "" "$pin" 4 "$label"
	else status $id failed "$(why $rc "$run/$id.log")" "$pin" 4 "$label"; fi
}

# 7. sockperf UDP ping-pong over 127.0.0.1
bench_sockperf() {
	local id=sockperf pin="sockperf server CPU $B, client CPU $A" label="sockperf ping-pong UDP 127.0.0.1"
	local port srv size rc=0 sz
	if ! ensure sockperf sockperf; then status $id skipped "sockperf not installed" "$pin" 2 "$label"; return; fi
	port=$(free_port)
	timeout "$step_timeout" taskset -c "$B" sockperf server -i 127.0.0.1 -p "$port" >"$run/$id-server.log" 2>&1 &
	srv=$!
	pids+=("$srv")
	sleep 0.5
	: >"$run/$id.jsonl"
	IFS=, read -ra sz <<<"$lat_sizes"
	for size in "${sz[@]}"; do
		timeout "$step_timeout" taskset -c "$A" sockperf ping-pong -i 127.0.0.1 -p "$port" -m "$size" \
			-t "$kern_t" --full-rtt >"$run/$id-$size.log" 2>&1 &&
			python3 "$here/bench_report.py" sockperf "$size" "$run/$id-$size.log" \
				>>"$run/$id.jsonl" 2>>"$run/$id.log" || { rc=$?; cp "$run/$id-$size.log" "$run/$id.log"; break; }
	done
	stop "$srv"
	if [ $rc = 0 ]; then status $id ok "" "$pin" 2 "$label"
	else status $id failed "$(why $rc "$run/$id.log")" "$pin" 2 "$label"; fi
}

# 8. iperf3 TCP over 127.0.0.1
bench_iperf3() {
	local id=iperf3 pin="iperf3 server CPU $B, client CPU $A" label="iperf3 TCP 127.0.0.1"
	local port srv size rc=0 sz
	if ! ensure iperf3 iperf3; then status $id skipped "iperf3 not installed" "$pin" 2 "$label"; return; fi
	port=$(free_port)
	timeout "$step_timeout" taskset -c "$B" iperf3 -s -B 127.0.0.1 -p "$port" >"$run/$id-server.log" 2>&1 &
	srv=$!
	pids+=("$srv")
	sleep 0.5
	: >"$run/$id.jsonl"
	IFS=, read -ra sz <<<"$bw_sizes"
	for size in "${sz[@]}"; do
		timeout "$step_timeout" taskset -c "$A" iperf3 -c 127.0.0.1 -p "$port" -t "$kern_t" -l "$size" -J \
			>"$run/$id-$size.json" 2>"$run/$id.log" &&
			python3 "$here/bench_report.py" iperf3 "$size" "$run/$id-$size.json" \
				>>"$run/$id.jsonl" 2>>"$run/$id.log" || { rc=$?; break; }
	done
	stop "$srv"
	if [ $rc = 0 ]; then status $id ok "" "$pin" 2 "$label"
	else status $id failed "$(why $rc "$run/$id.log")" "$pin" 2 "$label"; fi
}

# 9. memcpy bandwidth
bench_memcpy() {
	local pin="CPU $A" rc
	[ -n "$mcb" ] || { status memcpy failed "memcpy_bw.c $compile_why" "$pin" 1 "memcpy_bw (hot)"; return; }
	timeout "$step_timeout" "$mcb" --cpu "$A" --time "$mc_ms" ${mc_sizes:+--size "$mc_sizes"} --json \
		>"$run/memcpy.jsonl" 2>"$run/memcpy.log"
	rc=$?
	if [ $rc = 0 ] && has_json "$run/memcpy.jsonl"; then status memcpy ok "" "$pin" 1 "memcpy_bw (hot)"
	else status memcpy failed "$(why $rc "$run/memcpy.log")" "$pin" 1 "memcpy_bw (hot)"; fi
	[ "$quick" = 1 ] && return
	timeout "$step_timeout" "$mcb" --cpu "$A" --time "$mc_ms" --cold --size 64,4K,64K,1M --json \
		>"$run/memcpy_cold.jsonl" 2>"$run/memcpy_cold.log"
	rc=$?
	if [ $rc = 0 ] && has_json "$run/memcpy_cold.jsonl"; then status memcpy_cold ok "" "$pin" 1 "memcpy_bw --cold"
	else status memcpy_cold failed "$(why $rc "$run/memcpy_cold.log")" "$pin" 1 "memcpy_bw --cold"; fi
}

: >"$run/status.tsv"
# 9. issue 29, registration of heap memory, on one viad (1 MiB messages):
# vipl_regbench per size, through the client's table and with calls only
# (VIPL_DPDK_REG_TABLE=0); vipl_pingpong --loopback --mem heap at 16 KiB and
# 1 MiB pre-registered and with --reg-each (each ping's buffer registered
# for it), in one run
bench_regbench() {
	local id=vipl_reg pin="viad control lcore CPU $A, poll lcore CPU $B ($poll_mode); vipl_regbench, vipl_pingpong CPU $A"
	local label="vipl_regbench; vipl_pingpong -l --mem heap [--reg-each]" rc=0 n=1000 ppn=2000
	[ "$quick" = 1 ] && n=100 ppn=200
	if [ -z "$viad" ] || [ -z "$vrb" ] || [ -z "$vpp" ]; then
		skip_or_fail $id "viad, vipl_regbench or vipl_pingpong not built" "$pin" 2 "$label" \
			tests/perf/vipl_regbench
		return
	fi
	if ! start_viad reg "0@$A,1@$B" --set limits.max_transfer_size=1M; then
		stop "$viad_pid"
		status $id failed "viad: $(why 1 "$run/viad-reg.log")" "$pin" 2 "$label"
		return
	fi
	: >"$run/$id.jsonl"
	for table in 1 0; do
		VIAD_SOCKET=$run/reg.sock VIPL_DPDK_REG_TABLE=$table timeout "$step_timeout" \
			taskset -c "$A" "$vrb" -n "$n" -s 4096,16384,65536,1048576 --json \
			>"$run/$id.out" 2>>"$run/$id.log" || { rc=$?; break; }
		tag_json "$run/$id.out" "\"table\":$([ $table = 1 ] && echo true || echo false)"
		cat "$run/$id.out" >>"$run/$id.jsonl"
	done
	for each in "" --reg-each; do
		[ $rc = 0 ] || break
		# shellcheck disable=SC2086
		VIAD_SOCKET=$run/reg.sock timeout "$step_timeout" taskset -c "$A" "$vpp" --loopback \
			--mem heap --size 16384,1048576 -n "$ppn" -w 100 $each --json \
			>>"$run/$id.jsonl" 2>>"$run/$id.log" || rc=$?
	done
	if [ $rc = 0 ] && has_json "$run/$id.jsonl"; then status $id ok "" "$pin" 2 "$label"
	else status $id failed "$(why $rc "$run/$id.log")" "$pin" 2 "$label"; fi
	stop "$viad_pid"
}

bench_cacheline cacheline "cache-line ping-pong"
bench_raw_ring raw_ring 1 "raw_pingpong --port ring (no VIA)"
bench_raw_ring raw_ring2 2 "raw_pingpong --port ring --exchanges 2 (no VIA)"
bench_vipl_lo
bench_scale
bench_raw_memif
bench_vipl_memif
bench_sockperf
bench_iperf3
bench_memcpy
bench_regbench
bench_cacheline cacheline_end "cache-line ping-pong again, at the end"

# ---------------------------------------------------------------- report

python3 "$here/bench_report.py" report "$run" "$results" "$plotbase" | tee "$plotbase.txt"
[ "${PIPESTATUS[0]}" = 0 ] || { log "report failed"; failures=$((failures + 1)); }
echo "results: $results (table: $plotbase.txt)"
if [ "$plots" = 0 ]; then
	echo "plots: skipped (--no-plots)"
elif ! ensure gnuplot gnuplot-nox; then
	echo "plots: skipped: gnuplot not installed (apt-get install -y gnuplot-nox)"
elif [ ! -s "$run/plot.gp" ]; then
	echo "plots: skipped: no figures to plot"
elif gnuplot "$run/plot.gp" 2>"$run/gnuplot.log"; then
	ls "$plotbase"-*.png 2>/dev/null | sed 's/^/plot: /'
else
	echo "plots: gnuplot failed: $(tail -n 1 "$run/gnuplot.log")"
	failures=$((failures + 1))
fi
if [ "$failures" -gt 0 ]; then
	log "$failures benchmark(s) failed"
	exit 1
fi
exit 0
