#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# tests/glue_plugin/run.sh BUILD_DIR SOURCE_DIR
#
# A glue module built outside the tree, against the installed SDK alone,
# loaded by an installed viad (issue 13, part 4):
#
#  1. meson install --destdir into a scratch stage.
#  2. glue_hairpin.c built as via_glue_hairpin.so with the staged
#     via-glue.pc (relocatable: its -I points into the stage), the way
#     README.md tells module authors; every viad function it calls must be
#     exported by the staged viad.
#  3. The staged viad with a port "glue = hairpin" and viad.glue_dir = the
#     plugin's directory: its log says the module was loaded; vipl_info sees
#     the port (glue hairpin, link up, the MAC of the configuration);
#     vipl_pingpong --loopback moves 64 B and 4 KiB messages over it; the
#     port's counters show that the frames crossed the module.
#  4. Plugins viad must refuse, one viad each: built for a future glue ABI,
#     without the required probe slot, exporting no module, exporting a
#     module of another name, not a shared object; and a glue with no
#     plugin at all.  Each time viad logs the refusal with the file and the
#     reason, and exits with status 1, as for an unknown glue: cleanly, not
#     on a signal.
#
# Exit status 0 only if every check passed; each failure is printed.
# 77 (skipped): not root (viad needs hugepages and /var/run/dpdk), or no
# C compiler, pkg-config or nm.  KEEP=1 keeps the scratch directory.

set -u

BUILD=$(cd "${1:?usage: run.sh BUILD_DIR SOURCE_DIR}" && pwd) || exit 2
SRC=$(cd "${2:?usage: run.sh BUILD_DIR SOURCE_DIR}" && pwd) || exit 2
HERE=$SRC/tests/glue_plugin
CC=${CC:-cc}
MAC=02:00:00:00:00:42
# 1000 round trips of each size, two messages each way per trip
MIN_FRAMES=4000

[ "$(id -u)" = 0 ] || { echo "glue_plugin: SKIP: must run as root"; exit 77; }
for t in "$CC" pkg-config nm; do
	command -v "$t" >/dev/null || { echo "glue_plugin: SKIP: no $t"; exit 77; }
done

TMP=$(mktemp -d /tmp/via-glue-plugin.XXXXXX) || exit 2
FAILED=0
VIAD_PID=
INSTANCES=()
RUNS=0

cleanup() {
	if [ -n "$VIAD_PID" ] && kill -0 "$VIAD_PID" 2>/dev/null; then
		kill -KILL "$VIAD_PID" 2>/dev/null
		wait "$VIAD_PID" 2>/dev/null
	fi
	for i in "${INSTANCES[@]}"; do
		rmdir "/var/run/dpdk/$i" 2>/dev/null
	done
	if [ "$FAILED" = 0 ] && [ "${KEEP:-0}" != 1 ]; then
		rm -rf "$TMP"
	else
		echo "glue_plugin: scratch directory kept: $TMP"
	fi
}
trap cleanup EXIT
trap 'fail "interrupted by a signal"; exit 143' TERM INT HUP

log() { printf 'glue_plugin: %s\n' "$*"; }
fail() { FAILED=1; printf 'glue_plugin: FAIL: %s\n' "$*" >&2; }
pass() { printf 'glue_plugin: ok: %s\n' "$*"; }
# check WHAT COMMAND...: WHAT passes if COMMAND succeeds, else fails
check() {
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}

# ---- 1. the stage -------------------------------------------------------
STAGE=$TMP/stage
if ! meson install -C "$BUILD" --destdir "$STAGE" --no-rebuild --quiet \
	>"$TMP/install.log" 2>&1; then
	cat "$TMP/install.log" >&2
	fail "meson install --destdir $STAGE"
	exit 1
fi
PC=$(find "$STAGE" -name via-glue.pc -path '*/pkgconfig/*' | head -n 1)
VIAD=$(find "$STAGE" -name viad -path '*/sbin/*' -type f | head -n 1)
[ -n "$PC" ] || { fail "no via-glue.pc installed"; exit 1; }
[ -x "$VIAD" ] || { fail "no viad installed under sbin"; exit 1; }
log "staged: $VIAD, $PC"

# ---- 2. the module, against the staged SDK only -------------------------
pcq() { PKG_CONFIG_PATH=$(dirname "$PC") pkg-config "$@" via-glue; }
CFLAGS=$(pcq --cflags) || { fail "pkg-config --cflags via-glue"; exit 1; }
LIBS=$(pcq --libs) || { fail "pkg-config --libs via-glue"; exit 1; }
HDR=$(realpath -m "$(pcq --variable=includedir)/via-dpdk/via_glue.h")
GLUEDIR=$(realpath -m "$(pcq --variable=gluedir)")
case $HDR in
"$STAGE"/*) check "via-glue.pc's header is the staged one, $HDR" test -f "$HDR" ;;
*) fail "via-glue.pc's header $HDR is not in the stage (pc not relocatable?)" ;;
esac
case $GLUEDIR in
"$STAGE"/*) check "meson install created gluedir $GLUEDIR" test -d "$GLUEDIR" ;;
*) fail "gluedir $GLUEDIR is not in the stage" ;;
esac

GLUE=$TMP/glue
mkdir -p "$GLUE"
# build PLUGIN_NAME SOURCE [CFLAGS...]: via_glue_PLUGIN_NAME.so in $GLUE
build() {
	local name=$1 src=$2
	shift 2
	# shellcheck disable=SC2086 # pkg-config's output is a list of words
	"$CC" -shared -fPIC -O2 -Wall -Wextra -Werror $CFLAGS "$@" "$HERE/$src" $LIBS \
		-o "$GLUE/via_glue_$name.so" >"$TMP/cc-$name.log" 2>&1 ||
		{ cat "$TMP/cc-$name.log" >&2; fail "compile via_glue_$name.so"; return 1; }
}
build hairpin glue_hairpin.c || exit 1
pass "via_glue_hairpin.so built outside the tree"

# A plugin's calls of the SDK resolve against viad: every function the
# header declares (not the inline ones) and every via_* symbol the plugin
# needs must be in viad's dynamic symbol table.  Its DPDK references resolve
# against DPDK's libraries, which dlopen(RTLD_NOW) proves below.
exported=$(nm -D --defined-only "$VIAD" | awk '{print $3}')
declared=$(sed -nE 's/^[a-z][a-z_ ]*[ *](via_[a-z_]+)\(.*/\1/p' "$HDR" | grep -v '^static')
needed=$(nm -D --undefined-only "$GLUE/via_glue_hairpin.so" | awk '{print $2}' | grep '^via_')
missing=
for sym in $declared $needed; do
	grep -qx "$sym" <<<"$exported" || missing="$missing $sym"
done
if [ -z "$declared" ]; then
	fail "found no function declared in $HDR"
elif [ -n "$missing" ]; then
	fail "viad does not export:$missing"
else
	pass "viad exports the SDK's functions: $(tr '\n' ' ' <<<"$declared")"
fi

# ---- viad ---------------------------------------------------------------
# viad_start CONF: the staged viad on a socket and instance of its own;
# sets VIAD_PID, SOCK, LOG
viad_start() {
	local inst
	RUNS=$((RUNS + 1))
	inst=gp$$-$RUNS
	INSTANCES+=("$inst")
	SOCK=$TMP/viad$RUNS.sock
	LOG=$TMP/viad$RUNS.log
	"$VIAD" -c "$1" -s "$SOCK" --set "viad.instance=$inst" \
		--set viad.poll_mode=backoff >"$LOG" 2>&1 </dev/null &
	VIAD_PID=$!
}

# viad_ready: wait (30 s) for the socket; false if viad exits first
viad_ready() {
	local deadline=$((SECONDS + 30))
	while [ ! -S "$SOCK" ]; do
		kill -0 "$VIAD_PID" 2>/dev/null || return 1
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.1
	done
}

# viad_wait SECONDS: viad's exit status, or 124 (then killed) if it lives on
viad_wait() {
	local deadline=$((SECONDS + $1)) st
	while kill -0 "$VIAD_PID" 2>/dev/null && [ $SECONDS -lt "$deadline" ]; do
		sleep 0.1
	done
	if kill -0 "$VIAD_PID" 2>/dev/null; then
		kill -KILL "$VIAD_PID" 2>/dev/null
		wait "$VIAD_PID" 2>/dev/null
		VIAD_PID=
		return 124
	fi
	wait "$VIAD_PID"
	st=$?
	VIAD_PID=
	return $st
}

show_log() { sed 's/^/  viad| /' "$LOG" >&2; }

# conf NAME GLUE: a config file with one port of glue GLUE
conf() {
	cat >"$TMP/$1.conf" <<-EOF
	[viad]
	glue_dir = $GLUE
	[port via0]
	glue = $2
	mac = $MAC
	EOF
	echo "$TMP/$1.conf"
}

# port_frames: "RX TX" of via0 as vipl_info reports them
port_frames() {
	VIAD_SOCKET=$SOCK "$BUILD/apps/vipl_info" via0 >"$TMP/info.out" 2>&1 || return 1
	sed -n 's/.* rx \([0-9]*\) tx \([0-9]*\) frames.*/\1 \2/p' "$TMP/info.out"
}

# ---- 3. the plugin at work ----------------------------------------------
viad_start "$(conf hairpin hairpin)"
if ! viad_ready; then
	fail "viad with a hairpin port did not come up"
	show_log
	exit 1
fi
pass "viad with glue = hairpin is up"
check "viad logs that it loaded $GLUE/via_glue_hairpin.so" \
	grep -q "module 'hairpin' loaded from plugin $GLUE/via_glue_hairpin.so" "$LOG"

if before=$(port_frames) && [ -n "$before" ]; then
	check "vipl_info: via0 is a hairpin port, link up" \
		grep -q "port  *hairpin glue, link up" "$TMP/info.out"
	check "vipl_info: via0 has the MAC of the configuration, $MAC" \
		grep -qi "address  *$MAC" "$TMP/info.out"
	if VIAD_SOCKET=$SOCK timeout 120 "$BUILD/apps/vipl_pingpong" -d via0 --loopback \
		-n 1000 --size 64,4096 >"$TMP/pingpong.out" 2>&1; then
		pass "vipl_pingpong --loopback -n 1000 --size 64,4096 over the hairpin port"
	else
		fail "vipl_pingpong over the hairpin port"
		sed 's/^/  pingpong| /' "$TMP/pingpong.out" >&2
	fi
	after=$(port_frames)
	read -r rx0 tx0 <<<"$before"
	read -r rx1 tx1 <<<"${after:-0 0}"
	if [ $((rx1 - rx0)) -ge $MIN_FRAMES ] && [ $((tx1 - tx0)) -ge $MIN_FRAMES ]; then
		pass "the frames crossed the module: $((tx1 - tx0)) sent, $((rx1 - rx0)) received"
	else
		fail "the port's counters moved by tx $((tx1 - tx0)), rx $((rx1 - rx0)) (at least $MIN_FRAMES each expected)"
	fi
else
	fail "vipl_info via0"
	cat "$TMP/info.out" >&2
fi
kill -TERM "$VIAD_PID"
viad_wait 20
st=$?
if [ $st = 0 ]; then
	pass "viad stopped cleanly"
else
	fail "viad exited with status $st after SIGTERM"
	show_log
fi

# ---- 4. plugins viad refuses ---------------------------------------------
build future glue_refused.c -DREFUSED_NAME='"future"' -DREFUSED_FUTURE_ABI
build noprobe glue_refused.c -DREFUSED_NAME='"noprobe"' -DREFUSED_NO_PROBE
echo 'int not_a_module;' >"$TMP/nomodule.c"
"$CC" -shared -fPIC "$TMP/nomodule.c" -o "$GLUE/via_glue_nomodule.so" ||
	fail "compile via_glue_nomodule.so"
cp "$GLUE/via_glue_hairpin.so" "$GLUE/via_glue_renamed.so"
echo "not an ELF file" >"$GLUE/via_glue_junk.so"

# refused GLUE EXPECTED: viad with a port of GLUE logs EXPECTED (a grep
# pattern) and exits with status 1, like for an unknown glue
refused() {
	local glue=$1 expected=$2 st
	viad_start "$(conf "$glue" "$glue")"
	viad_wait 60
	st=$?
	if [ $st != 1 ]; then
		fail "glue $glue: viad exited with status $st (1 expected: the port cannot open)"
		show_log
	elif ! grep -q -- "$expected" "$LOG"; then
		fail "glue $glue: viad's log lacks '$expected'"
		show_log
	elif ! grep -q "port via0 ($glue .*): open failed" "$LOG"; then
		fail "glue $glue: viad's log does not say that the port failed to open"
		show_log
	else
		pass "glue $glue: $(grep -o -- "$expected.*" "$LOG" | head -n 1)"
	fi
}
P=$GLUE/via_glue
refused future "plugin $P""_future.so refused: built for glue ABI"
refused noprobe "plugin $P""_noprobe.so refused: required slot probe is not set"
refused nomodule "plugin $P""_nomodule.so refused: it exports no module"
refused renamed "plugin $P""_renamed.so refused: its module is named 'hairpin', not 'renamed'"
refused junk "plugin $P""_junk.so refused: "
refused missing "no module 'missing': it is not built in and there is no plugin $P""_missing.so"

if [ "$FAILED" = 0 ]; then
	log "all checks passed"
else
	log "some checks FAILED"
fi
exit "$FAILED"
