#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# What viad's telemetry tells whom (issue 25 part 5): a member of the socket
# group sees the pids, uids and process names of their own sessions only,
# root sees all; someone outside the group reaches nothing; EAL's own
# telemetry socket and the capture socket stay root's.
#
#   ops_telemetry.sh BUILD_DIR
. "$(dirname "$0")/ops_lib.sh"
ops_init telemetry "$1"

viad_start t || { ok 1 "viad t starts"; ops_done; }
inst=$TAG-t
run=$RUNTIME_DIRECTORY/dpdk/$inst

# a session of root's and one of the member's, both running
VIAD_SOCKET=$T/t.sock "$PINGPONG" --loopback -n 100000000 --size 64 >/dev/null 2>&1 </dev/null &
root_pp=$!
# setpriv itself, not a function's subshell: $! is the pingpong's pid
VIAD_SOCKET=$T/t.sock setpriv --reuid=$NOBODY --regid=$OPS_GID --clear-groups -- \
	"$PINGPONG" --loopback -n 100000000 --size 64 >"$T/member-pp.log" 2>&1 </dev/null &
member_pp=$!
OPS_PIDS="$root_pp $member_pp"
sessions() { "$@" "$VIACTL" -i "$inst" --json sessions 2>"$T/viactl.err"; }
for _ in $(seq 100); do
	[ "$(sessions env | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))' 2>/dev/null)" = 2 ] && break
	sleep 0.1
done

# root: every session with its pid and uid
sessions env >"$T/root.json"
python3 - "$T/root.json" "$root_pp" "$member_pp" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
pids = sorted(x.get("pid") for x in s)
uids = sorted(x.get("uid") for x in s)
ok = pids == sorted([int(sys.argv[2]), int(sys.argv[3])]) and uids == [0, 65534]
print(("ok" if ok else "not ok") + " - root sees both sessions' pids and uids: %s %s" %
      (pids, uids))
PY
[ $? = 0 ] || FAILED=$((FAILED + 1))

# the member: their own session whole, root's without pid, name or uid
sessions as_member >"$T/member.json"
python3 - "$T/member.json" "$member_pp" <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
except ValueError:
    s = []
mine = [x for x in s if x.get("pid") == int(sys.argv[2])]
other = [x for x in s if x.get("pid") != int(sys.argv[2])]
ok = len(s) == 2 and len(mine) == 1 and mine[0].get("uid") == 65534 and \
     mine[0].get("comm") == "vipl_pingpong"
print(("ok" if ok else "not ok") + " - a group member sees their own session: pid, uid, name")
ok = len(other) == 1 and not any(k in other[0] for k in ("pid", "uid", "gid", "comm")) and \
     other[0].get("vis") == 2
print(("ok" if ok else "not ok") + " - ... and root's session without its pid, uid, gid or name, "
      "its objects counted: %s" % (other[0] if other else None))
PY
[ $? = 0 ] || FAILED=$((FAILED + 1))
as_member "$VIACTL" -i "$inst" --json vis >"$T/member-vis.json" 2>>"$T/viactl.err"
n=$(python3 -c "import json,sys; v=json.load(open(sys.argv[1])); print(sum('pid' in x for x in v), len(v))" "$T/member-vis.json" 2>/dev/null)
ok $([ "$n" = "2 4" ]; echo $?) "a group member's viactl vis: a pid on their own two VIs only (pid shown, VIs: $n)"
out=$(as_member "$VIACTL" -i "$inst" sessions 2>&1)
ok $(echo "$out" | grep -qE "^ +[0-9]+ +- +- +via0" && echo "$out" | grep -q "$member_pp/vipl_pingpong"; echo $?) \
	"a group member's viactl sessions table: '-' for root's process and uid"

# what stays root's
out=$(as_member /usr/bin/python3 - "$run" <<'PY'
import os, socket, sys
for name in ("dpdk_telemetry.v2", "viad_capture.sock"):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(os.path.join(sys.argv[1], name))
        print(name, "connected")
    except OSError as e:
        print(name, e.strerror)
PY
)
ok $([ "$(echo "$out" | grep -c "Permission denied")" = 2 ]; echo $?) \
	"a group member cannot connect to EAL's telemetry socket nor the capture socket: $(echo $out)"
out=$(as_member "$VIACTL" -i "$inst" status 2>&1)
ok $? "a group member's viactl status works"
out=$(as_outsider "$VIACTL" -i "$inst" status 2>&1)
st=$?
ok $([ $st = 1 ] && echo "$out" | grep -q "permission denied"; echo $?) \
	"someone outside the group: status 1, permission denied ($out)"
# a member asking for what viad does not relay
out=$(as_member /usr/bin/python3 - "$run" <<'PY'
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(os.path.join(sys.argv[1], "viad_telemetry.sock"))
s.recv(4096)
for q in ("/eal/params", "/viad/relay,0000", "/viad/info"):
    s.send(q.encode())
    print(q, s.recv(65536).decode()[:40])
PY
)
ok $(echo "$out" | grep -q '^/eal/params {"denied":null}' &&
     echo "$out" | grep -q '^/viad/relay,0000 {"denied":null}' &&
     echo "$out" | grep -q '^/viad/info {"/viad/info"'; echo $?) \
	"viad's socket relays viad's commands only: $(echo $out)"
kill -KILL $root_pp $member_pp 2>/dev/null
wait $root_pp $member_pp 2>/dev/null
OPS_PIDS=
viad_stop t
ok $? "viad t stops cleanly"
ops_done
