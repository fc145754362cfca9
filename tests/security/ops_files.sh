#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Files an operator's commands touch as root, and what an unprivileged user
# (nobody) can make them touch (issue 25 part 5):
#   1. viactl capture -w into a directory the attacker owns: a symbolic link
#      there to a root file is never followed (with --force neither), an
#      existing file is never replaced without --force
#   2. viad -s PATH removes a stale socket only: a regular file (a typo like
#      -s /etc/viad/viad.conf), a symbolic link, a live socket stay
#   3. a second viad of a running instance is refused and takes nothing of
#      the first's (its capture and telemetry sockets answer as before)
#   4. a missing runtime directory: a clear error, nothing created in "/"
#
#   ops_files.sh BUILD_DIR
. "$(dirname "$0")/ops_lib.sh"
ops_init files "$1"

viad_start a || { ok 1 "viad a starts"; ops_done; }

# ---- 1. the capture file ------------------------------------------------------
att=$T/attacker
mkdir "$att"
chown $NOBODY:$NOBODY "$att"
victim=$T/victim
echo "root's file" >"$victim"
chmod 0644 "$victim"
as_outsider ln -s "$victim" "$att/cap.pcapng"
out=$("$VIACTL" -i "$TAG-a" capture --port via0 --count 1 -w "$att/cap.pcapng" 2>&1)
st=$?
ok $(( st == 1 ? 0 : 1 )) "capture -w through a symbolic link: refused, status 1 ($out)"
ok $([ "$(cat "$victim")" = "root's file" ]; echo $?) "capture -w: the file the link points to is untouched"
out=$("$VIACTL" -i "$TAG-a" capture --port via0 --count 1 --force -w "$att/cap.pcapng" 2>&1)
st=$?
ok $(( st == 1 ? 0 : 1 )) "capture --force -w through a symbolic link: refused too ($out)"
ok $([ "$(cat "$victim")" = "root's file" ] && [ -L "$att/cap.pcapng" ]; echo $?) \
	"capture --force: the link and its target are untouched"
echo "old capture" >"$T/old.pcapng"
out=$("$VIACTL" -i "$TAG-a" capture --port via0 --count 1 -w "$T/old.pcapng" 2>&1)
st=$?
ok $(( st == 1 ? 0 : 1 )) "capture -w onto an existing file: refused without --force ($out)"
ok $([ "$(cat "$T/old.pcapng")" = "old capture" ]; echo $?) "capture -w: the existing file kept"
VIAD_SOCKET=$T/a.sock "$PINGPONG" --loopback -n 100000000 --size 64 -w 0 >/dev/null 2>&1 </dev/null &
pp=$!
OPS_PIDS="$pp"
out=$(timeout 60 "$VIACTL" -i "$TAG-a" capture --port via0 --count 5 \
	--force -w "$T/old.pcapng" 2>&1)
st=$?
ok $(( st == 0 ? 0 : 1 )) "capture --force -w onto a regular file: replaced ($out)"
ok $([ "$(head -c 4 "$T/old.pcapng" | od -An -tx1 | tr -d ' ')" = 0a0d0d0a ]; echo $?) \
	"capture --force: the file is a pcapng now"
kill -KILL $pp 2>/dev/null
wait $pp 2>/dev/null
OPS_PIDS=

# ---- 2. the control socket path -------------------------------------------------
echo "key = value" >"$T/viad.conf"
"$VIAD" -s "$T/viad.conf" --set "viad.instance=$TAG-typo" >"$T/typo.log" 2>&1
st=$?
ok $(( st == 2 ? 0 : 1 )) "viad -s REGULAR_FILE: refused with status 2 ($st)"
ok $([ "$(cat "$T/viad.conf")" = "key = value" ]; echo $?) "viad -s REGULAR_FILE: the file is kept"
ok $(grep -q "not a socket" "$T/typo.log"; echo $?) "viad -s REGULAR_FILE: the log says why: $(grep -o 'control socket.*' "$T/typo.log")"
ln -s "$T/viad.conf" "$T/link.sock"
"$VIAD" -s "$T/link.sock" --set "viad.instance=$TAG-link" >"$T/link.log" 2>&1
st=$?
ok $(( st == 2 ? 0 : 1 )) "viad -s SYMLINK: refused with status 2 ($st)"
ok $([ -L "$T/link.sock" ] && [ "$(cat "$T/viad.conf")" = "key = value" ]; echo $?) \
	"viad -s SYMLINK: the link and its target are kept"
"$VIAD" -s "$T/a.sock" --set "viad.instance=$TAG-other" >"$T/other.log" 2>&1
st=$?
ok $(( st == 1 ? 0 : 1 )) "viad -s LIVE_SOCKET (viad a's): refused with status 1 ($st)"
ok $([ -S "$T/a.sock" ] && VIAD_SOCKET=$T/a.sock timeout 60 "$PINGPONG" --loopback -n 100 \
	>/dev/null 2>&1; echo $?) "viad a still serves on its socket"
python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$T/stale.sock"
viad_start stale -s "$T/stale.sock"
ok $? "viad -s STALE_SOCKET: the stale socket is replaced"
viad_stop stale

# ---- 3. the instance name -------------------------------------------------------
before=$("$VIACTL" -i "$TAG-a" --json status | python3 -c "import json,sys; print(json.load(sys.stdin)['pid'])")
"$VIAD" -s "$T/dup.sock" --set "viad.instance=$TAG-a" --set viad.poll_mode=backoff \
	>"$T/dup.log" 2>&1 </dev/null &
dup=$!
OPS_PIDS="$dup"
for _ in $(seq 100); do kill -0 $dup 2>/dev/null || break; sleep 0.1; done
if kill -0 $dup 2>/dev/null; then
	ok 1 "a second viad of instance a: refused (it runs)"
	kill -KILL $dup
fi
wait $dup
st=$?
OPS_PIDS=
ok $(( st == 1 ? 0 : 1 )) "a second viad of instance a: exits with status 1 ($st)"
ok $(grep -q "another viad runs it" "$T/dup.log"; echo $?) "... and says why: $(grep -o 'instance.*' "$T/dup.log" | head -1)"
after=$("$VIACTL" -i "$TAG-a" --json status 2>&1 | python3 -c "import json,sys; print(json.load(sys.stdin)['pid'])" 2>&1)
ok $([ "$before" = "$after" ] && [ "$after" = "${VIAD_PID[a]}" ]; echo $?) \
	"telemetry still answers for the first viad (pid $after)"
out=$(timeout 60 "$VIACTL" -i "$TAG-a" capture --port via0 --duration 0.2 -w "$T/after.pcapng" 2>&1)
ok $? "the first viad's capture socket still serves ($out)"
viad_stop a
ok $? "viad a stops cleanly"

# ---- 4. no runtime directory -----------------------------------------------------
for f in /viad_capture.sock /dpdk_telemetry.v2 /viad_telemetry.sock; do
	[ -e "$f" ] && echo "# $f exists before the test (left by an older viad)"
done
before=$(ls -A /)
RUNTIME_DIRECTORY=$T/missing "$VIAD" -s "$T/m.sock" --set "viad.instance=$TAG-m" \
	>"$T/missing.log" 2>&1 </dev/null &
m=$!
OPS_PIDS="$m"
for _ in $(seq 100); do kill -0 $m 2>/dev/null || break; sleep 0.1; done
kill -KILL $m 2>/dev/null
wait $m
st=$?
OPS_PIDS=
ok $(( st == 2 ? 0 : 1 )) "RUNTIME_DIRECTORY missing: viad stops with status 2 ($st)"
ok $(grep -q "runtime directory $T/missing.*No such file" "$T/missing.log"; echo $?) \
	"... with one clear line: $(grep -o 'runtime directory.*' "$T/missing.log" | head -1)"
ok $([ "$(ls -A /)" = "$before" ] && [ ! -e "$T/missing" ]; echo $?) \
	"... and creates nothing in / nor the directory itself"

ops_done
