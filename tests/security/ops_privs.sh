#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Least privilege (issue 25 part 6): viad.service's sandbox scores OK and
# viad actually runs under it. Without systemd, its restrictions are
# applied by hand: the unit's capability bounding set (setpriv), its system
# call filter (seccomp_exec, the groups expanded by systemd-analyze), its
# runtime directory, umask and NOTIFY_SOCKET; then viad must start, say
# READY=1, serve a client and a group member's viactl, keep in every thread
# only the capabilities it lists (and, permitted, those it started with, for
# an upgrade), be upgraded in place, and stop cleanly with STOPPING=1.
#
#   ops_privs.sh BUILD_DIR
. "$(dirname "$0")/ops_lib.sh"
ops_init privs "$1"
UNIT=$BUILD/config/viad.service
KEPT="cap_ipc_lock cap_ipc_owner"

# ---- the score ---------------------------------------------------------------------
if command -v systemd-analyze >/dev/null; then
	score=$(systemd-analyze security --offline=yes "$UNIT" 2>&1 |
		sed -n 's/.*Overall exposure level for viad.service: \([0-9.]*\).*/\1/p')
	ok $(python3 -c "import sys; sys.exit(0 if float(sys.argv[1] or 99) <= 4.0 else 1)" "$score"
	     echo $?) \
		"systemd-analyze security: exposure $score (at most 4.0)"
else
	ok 1 "systemd-analyze is installed (systemd)"
fi

# ---- the unit's restrictions, by hand --------------------------------------------
value() { sed -n "s/^$1=//p" "$UNIT"; }
bset=$(value CapabilityBoundingSet | tr 'A-Z ' 'a-z\n' | sed -n 's/^cap_\(.*\)/+\1/p' | paste -sd,)
ok $([ -n "$bset" ]; echo $?) "the unit names a capability bounding set ($bset)"
# the allow list minus the ~ lists, every @group expanded
python3 - "$UNIT" >"$T/syscalls" <<'PY'
import subprocess, sys
def expand(name, seen):
    if not name.startswith("@"):
        return {name}
    if name in seen:
        return set()
    seen.add(name)
    out = subprocess.run(["systemd-analyze", "syscall-filter", "--no-pager", name],
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines()[1:]:
        line = line.strip()
        if line and not line.startswith("#"):
            names |= expand(line, seen)
    return names
allow, deny = None, set()
for line in open(sys.argv[1]):
    if not line.startswith("SystemCallFilter="):
        continue
    v = line.split("=", 1)[1].split()
    deny_list = v[0].startswith("~")
    v[0] = v[0].lstrip("~")
    names = set().union(*(expand(n, set()) for n in v))
    if deny_list:
        deny |= names
    elif allow is None:
        allow = names
    else:
        allow |= names
print("\n".join(sorted((allow or set()) - deny)))
PY
n=$(wc -l <"$T/syscalls")
ok $([ "$n" -gt 100 ] && grep -qx capset "$T/syscalls" && ! grep -qx mount "$T/syscalls"; echo $?) \
	"the unit's system call filter: $n calls, capset in, mount out"
SECCOMP=$BUILD/tests/seccomp_exec
if [ ! -x "$SECCOMP" ]; then
	ok 1 "seccomp_exec is built (libseccomp-dev: scripts/setup-host.sh)"
	ops_done
fi

# RuntimeDirectory=viad, RuntimeDirectoryMode=0750, UMask=0077, Type=notify
chmod 0750 "$RUNTIME_DIRECTORY"
notify=$T/notify.sock
python3 - "$notify" >"$T/notify.log" 2>&1 </dev/null <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
while True:
    m = s.recv(4096).decode()
    print(m, flush=True)
    if "STOPPING=1" in m:
        break
PY
notify_pid=$!
OPS_PIDS="$notify_pid"
for _ in $(seq 50); do [ -S "$notify" ] && break; sleep 0.1; done
(
	umask 0077
	NOTIFY_SOCKET=$notify exec setpriv --bounding-set="-all,$bset" --inh-caps=-all \
		--ambient-caps=-all -- "$SECCOMP" "$T/syscalls" "$VIAD" -s "$RUNTIME_DIRECTORY/viad.sock" \
		--set "viad.instance=$TAG-u" --set viad.poll_mode=backoff \
		--set "viad.socket_group=$OPS_GID" >"$T/unit.log" 2>&1 </dev/null
) &
VIAD_PID[u]=$!
for _ in $(seq 200); do
	grep -q READY=1 "$T/notify.log" && break
	kill -0 "${VIAD_PID[u]}" 2>/dev/null || break
	sleep 0.1
done
ok $(grep -q READY=1 "$T/notify.log"; echo $?) "viad under the unit's restrictions starts and says READY=1"
grep -q "seccomp_exec: .* allowed" "$T/unit.log"
ok $? "... under the seccomp filter: $(grep -o 'seccomp_exec: [0-9]* system calls allowed' "$T/unit.log")"
ok $(! grep -v "^seccomp_exec:" "$T/unit.log" | grep -qiE "operation not permitted|EPERM"; echo $?) \
	"... and nothing it does is refused (no EPERM in its log)"
out=$(VIAD_SOCKET=$RUNTIME_DIRECTORY/viad.sock timeout 60 "$PINGPONG" --loopback -n 1000 2>&1)
ok $? "a client's pingpong runs over it ($(echo "$out" | tail -1))"
out=$(VIAD_SOCKET=$RUNTIME_DIRECTORY/viad.sock timeout 60 setpriv --reuid=$NOBODY \
	--regid=$OPS_GID --clear-groups -- "$PINGPONG" --loopback -n 1000 2>&1)
ok $? "a group member's pingpong runs over it ($(echo "$out" | tail -1))"
out=$(as_member "$VIACTL" -i "$TAG-u" status 2>&1)
ok $? "a group member's viactl status answers"

# What every thread of viad keeps: in its effective set the capabilities it
# lists; in its permitted and bounding sets also those it was started with
# (viad.upgrades = yes, the default: an upgrade's exec needs them to start
# the new viad, docs/design.md section 18.6), nothing beyond.
threads_keep() {
	local pid
	pid=$(pgrep -P "${VIAD_PID[u]}" -x viad || echo "${VIAD_PID[u]}")
	python3 - "$pid" "$1" "$bset" $KEPT <<'PY'
import os, sys
caps = {"chown": 0, "fowner": 3, "setpcap": 8, "net_admin": 12, "net_raw": 13,
        "ipc_lock": 14, "ipc_owner": 15, "sys_ptrace": 19, "sys_admin": 21,
        "bpf": 39, "checkpoint_restore": 40}
def mask(names):
    return sum(1 << caps[n.replace("cap_", "", 1)] for n in names)
pid, when, unit = sys.argv[1], sys.argv[2], sys.argv[3]
kept = mask(sys.argv[4:])
started = mask(c.lstrip("+") for c in unit.split(","))
bad = []
tasks = os.listdir("/proc/%s/task" % pid)
for t in tasks:
    st = dict(l.split(":", 1) for l in open("/proc/%s/task/%s/status" % (pid, t)))
    bnd, prm, eff = (int(st[k].strip(), 16) for k in ("CapBnd", "CapPrm", "CapEff"))
    if eff & ~kept or (bnd | prm) & ~(kept | started) or st["CapInh"].strip() != "0" * 16 or \
       st["CapAmb"].strip() != "0" * 16 or st["NoNewPrivs"].strip() != "1":
        bad.append("%s(%s): bnd %#x prm %#x eff %#x" % (t, st["Name"].strip(), bnd, prm, eff))
print(("ok" if not bad and len(tasks) >= 4 else "not ok") +
      " - %s: every thread of viad (%d) has at most %s effective, at most what it started "
      "with permitted, no new privileges %s" % (when, len(tasks), " ".join(sys.argv[4:]), bad))
sys.exit(1 if bad or len(tasks) < 4 else 0)
PY
	[ $? = 0 ] || FAILED=$((FAILED + 1))
}
threads_keep "started"
ok $(grep -q "capabilities: cap_ipc_lock stays:" "$T/unit.log"; echo $?) \
	"viad's log lists each capability it keeps, with the reason"

# An upgrade under the unit's restrictions (docs/design.md section 18.6):
# the exec, under the same system call filter and no-new-privileges, must
# start viad again with what it had to start, and the new viad drops again.
out=$("$VIACTL" -i "$TAG-u" upgrade 2>&1)
ok $(echo "$out" | grep -q "^upgraded"; echo $?) "viactl upgrade under the unit's restrictions ($out)"
threads_keep "upgraded"
out=$(VIAD_SOCKET=$RUNTIME_DIRECTORY/viad.sock timeout 60 "$PINGPONG" --loopback -n 1000 2>&1)
ok $? "a client's pingpong runs over the upgraded viad ($(echo "$out" | tail -1))"
ok $(! grep -v "^seccomp_exec:" "$T/unit.log" | grep -qiE "operation not permitted|EPERM"; echo $?) \
	"... and nothing either viad did was refused (no EPERM in the log)"

kill -TERM "${VIAD_PID[u]}"
wait "${VIAD_PID[u]}"
st=$?
VIAD_PID[u]=
ok $(( st == 0 ? 0 : 1 )) "viad under the unit's restrictions stops cleanly at SIGTERM ($st)"
wait "$notify_pid"
OPS_PIDS=
ok $(grep -q STOPPING=1 "$T/notify.log"; echo $?) "... and says STOPPING=1"
ops_done
