# SPDX-License-Identifier: BSD-3-Clause
#
# tests/perf/viad_lib.sh, sourced by the scripts that run one viad at a time
# on two CPUs (linkcost.sh, abrounds.sh, icount.sh): perf_setup NAME [A,B]
# picks the CPUs A and B (default: the first two we may run on), a scratch
# directory $run and an EAL prefix $tag, removed at exit;
# perf_viad_start BUILD [VIAD_ARGS...] starts BUILD's viad (busy polling,
# control lcore on CPU A, poll lcore on CPU B, socket $run/viad.sock), with
# VIAD_ARGS before its EAL arguments; perf_viad_stop stops it.

perf_setup() { # NAME [A,B]
	if [ -n "${2:-}" ]; then
		IFS=, read -r A B <<<"$2"
		case "$A,$B" in *[!0-9,]*|,*|*,) echo "bad CPUs '$2' (want A,B)" >&2; exit 2 ;; esac
	else
		read -r A B < <(python3 -c 'import os; c = sorted(os.sched_getaffinity(0)); print(c[0], c[1 % len(c)])')
	fi
	run=$(mktemp -d "/tmp/via-$1.XXXXXX") || exit 2
	tag=$1$$
	viad_pid=
	trap 'perf_viad_stop; rm -rf "$run" "/var/run/dpdk/$tag"' EXIT
}

perf_viad_start() { # BUILD [VIAD_ARGS...]
	local build=$1
	shift
	"$build/daemon/viad" -s "$run/viad.sock" --set "viad.instance=$tag" --set viad.poll_mode=busy \
		"$@" -- --lcores="0@$A,1@$B" --file-prefix="$tag" --in-memory --no-pci \
		>"$run/viad.log" 2>&1 &
	viad_pid=$!
	for _ in $(seq 200); do
		[ -S "$run/viad.sock" ] && return 0
		sleep 0.05
	done
	cat "$run/viad.log" >&2
	echo "viad did not start" >&2
	exit 1
}

perf_viad_stop() {
	local _
	if [ -n "$viad_pid" ] && kill -TERM "$viad_pid" 2>/dev/null; then
		# one that does not stop in 10 s (stuck: under valgrind, say) is
		# killed: it would hold the suite's lock, inherited, for ever
		for _ in $(seq 100); do
			kill -0 "$viad_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$viad_pid" 2>/dev/null
		wait "$viad_pid" 2>/dev/null
	fi
	viad_pid=
	rm -f "$run/viad.sock"
}
