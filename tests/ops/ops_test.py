#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Operating viad (issue 15): each test fails if its part broke.

    ops_test.py telemetry BUILD SRC   DPDK telemetry of a running viad, queried
                                      with dpdk-telemetry.py and viad's default
                                      EAL arguments
    ops_test.py viactl BUILD SRC      viactl against a live viad: every command,
                                      tables and --json, exit codes, an
                                      unprivileged user with and without access
    ops_test.py capture BUILD SRC     captures of a run of every frame type,
                                      decoded by tshark with the Lua dissector
                                      and checked field by field
    ops_test.py daemon BUILD SRC      viad's refusals (--set mistakes, not root,
                                      a port's cause) and its log format
    ops_test.py install BUILD SRC     meson install --destdir: unit, tmpfiles,
                                      sysusers, man pages (man -l without
                                      warnings), dissector, viactl, glue SDK

Each check prints "ok - ..." or "not ok - ..."; the exit status is 0 only if
none failed, 77 (skipped) when not root: viad needs hugepages and /var/run.
KEEP=1 keeps the scratch directory.
"""
import json
import os
import re
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import checks  # noqa: E402
from checks import check, note, project_version, run, wait_for  # noqa: E402


class Env:
    def __init__(self, build, src):
        self.build, self.src = build, src
        self.version = project_version(build)
        self.viad = os.path.join(build, "daemon", "viad")
        self.viactl = os.path.join(build, "tools", "viactl", "viactl")
        self.pingpong = os.path.join(build, "apps", "vipl_pingpong")
        self.lua = os.path.join(src, "tools", "wireshark", "via.lua")
        self.tmp = tempfile.mkdtemp(prefix="ops-")
        # other users reach what lies under it only where a test allows
        os.chmod(self.tmp, 0o711)
        self.viads = []

    def cleanup(self):
        for v in self.viads:
            v.kill()
        if os.environ.get("KEEP") or checks.failures:
            note("scratch directory kept: " + self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)


class Viad:
    """A viad on a private socket, with a unique instance, its log in tmp."""

    def __init__(self, env, name, sets=(), extra_env=None, sock=None, eal=None):
        self.env = env
        self.name = name
        self.instance = "ops%d%s" % (os.getpid(), name)
        self.sock = sock or os.path.join(env.tmp, name + ".sock")
        self.log = os.path.join(env.tmp, name + ".log")
        args = [env.viad, "-s", self.sock, "--set", "viad.instance=" + self.instance,
                "--set", "viad.poll_mode=backoff", "--set", "viad.socket_group="]
        for s in sets:
            args += ["--set", s]
        if eal:
            args += ["--"] + list(eal)
        e = dict(os.environ)
        e.update(extra_env or {})
        self.proc = subprocess.Popen(args, stdout=open(self.log, "w"), stderr=subprocess.STDOUT,
                                     env=e)
        env.viads.append(self)
        # ready when its control loop starts ("listening on", as READY=1 to
        # systemd): the socket exists earlier, before telemetry opens its
        # directories to viad.socket_group
        ok = wait_for(lambda: self.logged("listening on") or self.proc.poll() is not None)
        if not check(ok and self.proc.poll() is None, "viad '%s' starts" % name):
            self.tail()

    def logged(self, text):
        try:
            return text in open(self.log).read()
        except OSError:
            return False

    def client_env(self):
        e = dict(os.environ)
        e["VIAD_SOCKET"] = self.sock
        return e

    def tail(self, lines=30):
        try:
            for line in open(self.log).read().splitlines()[-lines:]:
                note("viad %s: %s" % (self.name, line))
        except OSError:
            pass

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        if not check(rc == 0, "viad '%s' stops cleanly at SIGTERM (status %s)" % (self.name, rc)):
            self.tail()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def pingpong(env, v, *args, timeout=120):
    """vipl_pingpong --loopback with ARGS on viad V, to completion."""
    r = run([env.pingpong, "--loopback", "-t", "20000"] + list(args), timeout=timeout,
            env=v.client_env())
    if not check(r.returncode == 0, "vipl_pingpong %s" % " ".join(args)):
        note(r.stdout[-800:] + r.stderr[-800:])
    return r


def long_pingpong(env, v, level="rr"):
    """A pingpong that runs until killed: a live session with two connected VIs."""
    return subprocess.Popen([env.pingpong, "--loopback", "-r", level, "-n", "100000000",
                             "--size", "64"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=v.client_env())


def stop_proc(p):
    p.send_signal(signal.SIGKILL)
    p.wait()


DATA_FRAMES = 1000


def data_moves(what, counters):
    """Wait until a long_pingpong's data moves: COUNTERS() is viad's counters,
    as WHAT reads them.

    The connection's handshake (a few frames) comes before the data, and the
    client then allocates its latency array (800 MB, which meson's
    MALLOC_PERTURB_ has malloc fill: seconds on a busy machine). So
    frames_tx > 0 does not mean data yet, and a window of fixed length after
    it may see none: wait until frames_tx has grown by DATA_FRAMES instead.
    Returns the counters before and after ({} after if it did not grow)."""
    check(wait_for(lambda: counters().get("frames_tx", 0) > 0),
          "%s: frames_tx counts the connection's frames" % what)
    c1, c2 = counters(), {}

    def grown():
        c2.clear()
        c2.update(counters())
        return c2.get("frames_tx", 0) >= c1.get("frames_tx", 0) + DATA_FRAMES

    if not check(wait_for(grown, timeout=60, step=0.2),
                 "%s: data moves, frames_tx grows by %d or more (%s, then %s)"
                 % (what, DATA_FRAMES, c1.get("frames_tx"), c2.get("frames_tx"))):
        return c1, {}
    return c1, c2


# ---- telemetry -----------------------------------------------------------------

def telemetry(v, *cmds):
    """dpdk-telemetry.py -f INSTANCE, one command a line: the value of each."""
    r = run(["dpdk-telemetry.py", "-f", v.instance], input="\n".join(cmds) + "\n", timeout=30)
    out = []
    for line in r.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            d = json.loads(line)
            out.append(list(d.values())[0] if len(d) == 1 else d)
    if len(out) != len(cmds):
        note("dpdk-telemetry.py: %s %s" % (r.stdout[-500:], r.stderr[-500:]))
        return [None] * len(cmds)
    return out


def test_telemetry(env):
    v = Viad(env, "tel")
    names = ["/viad/info", "/viad/config", "/viad/ports", "/viad/sessions", "/viad/session",
             "/viad/vis", "/viad/vi", "/viad/cqs", "/viad/cq", "/viad/conns", "/viad/counters",
             "/viad/lcores", "/viad/hosts", "/viad/capture"]
    (root, info, config, ports, lcores, hosts, cap, vis, bad1, bad2) = telemetry(
        v, "/", "/viad/info", "/viad/config", "/viad/ports", "/viad/lcores", "/viad/hosts",
        "/viad/capture", "/viad/vis", "/viad/vi,4000000000", "/viad/session,x")
    check(root is not None and all(n in root for n in names),
          "dpdk-telemetry.py reaches viad with its default EAL arguments; every /viad "
          "command is listed")
    check(info and info["instance"] == v.instance and info["pid"] == v.proc.pid and
          info["nics"] == 1 and info["sessions"] == 0 and info["capture"] == "off",
          "/viad/info: instance, pid, one NIC, no session, no capture")
    check(info and info["version"] == env.version,
          "/viad/info: version %s, meson.build's" % (info or {}).get("version"))
    check(config and config["instance"] == v.instance and config["max_vi"] == 16384 and
          config["socket"] == v.sock, "/viad/config: instance, socket, limits")
    p = (ports or {}).get("via0", {})
    check(p.get("glue") == "loopback" and p.get("mtu") == 9000 and p.get("link") == "up" and
          p.get("mac") == "02:00:00:00:00:00" and p.get("frame_payload") == 8952,
          "/viad/ports: via0, loopback, MAC, MTU 9000, link up, frame payload")
    check(lcores is not None and len(lcores) == 1 and
          list(lcores.values())[0]["iterations"] > 0, "/viad/lcores: one poll lcore, polling")
    check(hosts == {"file": "", "names": [], "macs": []}, "/viad/hosts: none configured")
    check(cap is not None and cap["active"] == 0, "/viad/capture: none")
    check(vis == {"ids": [], "next": 0}, "/viad/vis: no VI")
    check(bad1 is None and bad2 is None, "an unknown VI or a malformed id gives null")

    pp = long_pingpong(env, v)
    ok = wait_for(lambda: (telemetry(v, "/viad/info")[0] or {}).get("vis") == 2)
    check(ok, "/viad/info counts the two VIs of a running pingpong")
    (sessions, vis, conns, c1) = telemetry(v, "/viad/sessions", "/viad/vis", "/viad/conns",
                                           "/viad/counters")
    sid = (sessions or {}).get("ids", [None])[0]
    (sess,) = telemetry(v, "/viad/session,%s" % sid)
    check(sess is not None and sess["pid"] == pp.pid and sess["comm"] == "vipl_pingpong" and
          sess["vis"] == 2 and sess["nic"] == "via0",
          "/viad/session,ID: the pingpong's pid, name, NIC, two VIs")
    ids = (vis or {}).get("ids", [])
    check(len(ids) == 2 and sorted((conns or {}).get("ids", [])) == sorted(ids),
          "/viad/vis and /viad/conns: the two connected VIs")
    one = telemetry(v, *["/viad/vi,%d" % i for i in ids]) if len(ids) == 2 else [None, None]
    check(all(x and x["state"] == "Connected" and x["reliability"] == "reliable_reception" and
              x["session"] == sid for x in one) and
          one[0]["remote_vi"] == one[1]["id"] and one[1]["remote_vi"] == one[0]["id"] and
          one[0]["conn_id"] == one[1]["conn_id"] != 0,
          "/viad/vi,ID: Connected, Reliable Reception, each the other's peer, one conn_id")
    (sess_vis,) = telemetry(v, "/viad/vis,%s" % sid)
    check(sess_vis is not None and sorted(sess_vis["ids"]) == sorted(ids),
          "/viad/vis,SESSION: that session's VIs")
    def counters():
        return telemetry(v, "/viad/counters")[0] or {}

    c1, c2 = data_moves("/viad/counters", counters)
    if c2:
        check(c2["timer_hz"] > 0, "/viad/counters: timer_hz %d" % c2["timer_hz"])
        check(c2["poll_busy_cycles"] > c1["poll_busy_cycles"],
              "/viad/counters: poll_busy_cycles grows with the frames (%d, then %d)"
              % (c1["poll_busy_cycles"], c2["poll_busy_cycles"]))
        check(c2["poll_cycles"] >= c2["poll_busy_cycles"],
              "/viad/counters: the lcores are busy part of the time (poll_cycles %d >= "
              "poll_busy_cycles %d)" % (c2["poll_cycles"], c2["poll_busy_cycles"]))
    (lc,) = telemetry(v, "/viad/lcores")
    check(lc is not None and list(lc.values())[0]["vis"] == 2, "/viad/lcores: the VIs' shard")
    stop_proc(pp)
    ok = wait_for(lambda: (telemetry(v, "/viad/info")[0] or {}).get("sessions") == 0)
    (c3,) = telemetry(v, "/viad/counters")
    check(ok and c3 and c3["sessions_closed"] == 1 and c3["reclaimed_vis"] == 2,
          "a killed client: its session is gone, its VIs counted as reclaimed")
    rundir = "/var/run/dpdk/" + v.instance
    v.stop()
    check(not os.path.exists(rundir), "viad removes its EAL runtime directory")


# ---- viactl ---------------------------------------------------------------------

def viactl(t, v, *args, **kw):
    """viactl -i V's instance ARGS; KW for subprocess.run (user, env, ...)."""
    return run([t.viactl, "-i", v.instance] + list(args), timeout=60, **kw)


def viactl_json(t, v, *args):
    r = viactl(t, v, "--json", *args)
    try:
        return json.loads(r.stdout) if r.returncode == 0 else None
    except ValueError:
        note("not JSON: " + r.stdout[:300])
        return None


def test_viactl(env):
    hosts = os.path.join(env.tmp, "hosts")
    with open(hosts, "w") as f:
        f.write("node-a 02:00:00:00:00:0a\nnode-b 02:00:00:00:00:0b\n")
    v = Viad(env, "ctl", ["viad.hosts=" + hosts])
    r = viactl(env, v, "status")
    check(r.returncode == 0 and re.search(r"^instance\s+%s$" % v.instance, r.stdout, re.M),
          "viactl status")
    st = viactl_json(env, v, "status")
    check(st and st["pid"] == v.proc.pid and st["vis"] == 0, "viactl --json status")
    r = viactl(env, v, "ports")
    check(r.returncode == 0 and r.stdout.splitlines()[0].split()[:3] == ["NIC", "GLUE", "MAC"]
          and re.search(r"^via0\s+loopback\s+02:00:00:00:00:00\s+9000\s+up", r.stdout, re.M),
          "viactl ports: a table with via0")
    r = viactl(env, v, "hosts")
    check(r.returncode == 0 and "node-a" in r.stdout and "02:00:00:00:00:0b" in r.stdout,
          "viactl hosts")
    h = viactl_json(env, v, "hosts")
    check(h and h["hosts"] == [{"name": "node-a", "mac": "02:00:00:00:00:0a"},
                               {"name": "node-b", "mac": "02:00:00:00:00:0b"}],
          "viactl --json hosts: an array of names and MACs")
    p = viactl_json(env, v, "ports")
    check(isinstance(p, list) and len(p) == 1 and p[0]["name"] == "via0",
          "viactl --json ports: an array, each NIC with its name")

    pp = long_pingpong(env, v)
    wait_for(lambda: (viactl_json(env, v, "status") or {}).get("vis") == 2)
    r = viactl(env, v, "sessions")
    check(r.returncode == 0 and "%d/vipl_pingpong" % pp.pid in r.stdout, "viactl sessions")
    sess = viactl_json(env, v, "sessions")
    sid = sess[0]["id"] if sess else 0
    vis = viactl_json(env, v, "vis")
    check(vis and len(vis) == 2 and all(x["state"] == "Connected" for x in vis),
          "viactl --json vis: two Connected VIs")
    r = viactl(env, v, "vis")
    check(r.returncode == 0 and len(re.findall(r"\bConnected\s+RR\b", r.stdout)) == 2,
          "viactl vis: a table, level RR")
    # the same VIs; their queue fields (posted, sending, rx_state) move
    # while the pingpong runs, so only what names a VI is compared
    def names(vs):
        return sorted((x["id"], x["session"], x["state"], x["conn_id"]) for x in vs or [])
    check(names(viactl_json(env, v, "vis", "--session", str(sid))) == names(vis) != [],
          "viactl vis --session N: that session's VIs")
    r = viactl(env, v, "vis", "--session", "9999")
    check(r.returncode == 1 and "no session 9999" in r.stderr and r.stdout == "",
          "viactl vis --session of no session: status 1, said why (%s)" % r.stderr.strip())
    r = viactl(env, v, "cqs", "--session", "9999")
    check(r.returncode == 1, "viactl cqs --session of no session: status 1")
    conns = viactl_json(env, v, "conns")
    check(conns and len(conns) == 2 and conns[0]["conn_id"] == conns[1]["conn_id"],
          "viactl --json conns: both ends of the connection")
    check(viactl_json(env, v, "cqs") == [], "viactl --json cqs (the pingpong uses none)")
    lc = viactl_json(env, v, "lcores")
    check(isinstance(lc, list) and len(lc) == 1 and lc[0]["lcore"] >= 1,
          "viactl --json lcores: an array, each with its lcore")
    data_moves("viactl --json counters", lambda: viactl_json(env, v, "counters") or {})
    r = viactl(env, v, "counters")
    if not check(r.returncode == 0 and re.search(r"^frames_tx\s+[1-9]", r.stdout, re.M),
                 "viactl counters: totals"):
        note(r.stdout + r.stderr)
    p = (viactl_json(env, v, "ports") or [{}])[0]
    check(p.get("rx_packets", 0) > 0 and p.get("tx_packets", 0) > 0 and
          p.get("rx_bytes", 0) > 0, "the loopback NIC's port counters count its frames "
          "(RX %s, TX %s)" % (p.get("rx_packets"), p.get("tx_packets")))
    r = viactl(env, v, "counters", "--watch", "0.5", "--count", "3")
    lines = r.stdout.splitlines()
    rates = [l.split()[1] for l in lines[1:]]
    if not check(r.returncode == 0 and len(lines) == 4 and lines[0].split()[:3] ==
                 ["TIME", "RX/s", "TX/s"] and any(x != "0" for x in rates),
                 "viactl counters --watch: a header, then a line of rates per interval"):
        note(r.stdout + r.stderr + "pingpong: %s" % pp.poll())
    r = viactl(env, v, "--json", "counters", "--watch", "0.5", "--count", "2")
    js = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    if not check(r.returncode == 0 and len(js) == 2 and
                 any(j["frames_tx_per_s"] > 0 for j in js) and
                 all(0 <= j["busy_percent"] <= 100 for j in js),
                 "viactl --json counters --watch: one object a line, frames per second, "
                 "busy share"):
        note(r.stdout + r.stderr)
    stop_proc(pp)

    # more VIs than a telemetry page holds (256): viactl follows "next"
    pp = subprocess.Popen([env.pingpong, "--loopback", "--idle-vis", "300", "-n", "100000000",
                           "--size", "64"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, env=v.client_env())
    wait_for(lambda: (viactl_json(env, v, "status") or {}).get("vis") == 302, timeout=60)
    many = viactl_json(env, v, "vis") or []
    check(len(many) == 302 and len({x["id"] for x in many}) == 302,
          "viactl vis pages through 302 VIs (%d)" % len(many))
    stop_proc(pp)

    # errors, as other Unix tools give them
    check(viactl(env, v, "nosuchcommand").returncode == 2, "an unknown command: status 2")
    check(viactl(env, v, "vis", "--bogus").returncode == 2, "a bad option: status 2")
    check(viactl(env, v, "counters", "--count", "3").returncode == 2,
          "--count without --watch: status 2")
    r = run([env.viactl, "-i", "nosuchviad%d" % os.getpid(), "status"])
    check(r.returncode == 1 and "not running" in r.stderr, "no such viad: status 1, said why")

    # an unprivileged user reaches what the socket permits
    nobody = {"user": 65534, "group": 65534, "extra_groups": []}
    r = viactl(env, v, "status", **nobody)
    check(r.returncode == 1 and "permission denied" in r.stderr,
          "a user who may not open the telemetry socket: status 1, permission denied")
    grp = 4242
    rt = os.path.join(env.tmp, "rt")
    os.mkdir(rt)
    os.chown(rt, 0, grp)
    os.chmod(rt, 0o750)
    g = Viad(env, "grp", ["viad.socket_group=%d" % grp], extra_env={"RUNTIME_DIRECTORY": rt})
    member = {"user": 65534, "group": grp, "extra_groups": [], "env": {"RUNTIME_DIRECTORY": rt}}
    r = viactl(env, g, "--json", "status", **member)
    check(r.returncode == 0 and json.loads(r.stdout or "{}").get("instance") == g.instance,
          "a member of the runtime directory's group queries viad as itself (status %d%s)" %
          (r.returncode, (": " + r.stderr.strip()[:200]) if r.stderr.strip() else ""))
    r = viactl(env, g, "status", user=65534, group=65534, extra_groups=[],
               env={"RUNTIME_DIRECTORY": rt})
    check(r.returncode == 1 and "permission denied" in r.stderr,
          "a user outside that group does not")
    shared = os.path.join(env.tmp, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o777)
    out = os.path.join(shared, "denied.pcapng")
    r = viactl(env, g, "capture", "--port", "via0", "--count", "1", "-w", out, **member)
    check(r.returncode == 1 and "viad's own user" in r.stderr,
          "capture is viad's own user's: a group member is refused")
    check(not os.path.exists(out), "a refused capture leaves no file")
    g.stop()

    # a missing socket directory: made as tmpfiles.d makes /run/viad
    # (config/viad.tmpfiles), 0750, root and the socket's group
    sock = os.path.join(env.tmp, "run", "viad.sock")
    d = Viad(env, "dir", ["viad.socket_group=%d" % grp], sock=sock)
    st = os.stat(os.path.dirname(sock))
    check(stat.S_IMODE(st.st_mode) == 0o750 and st.st_uid == 0 and st.st_gid == grp,
          "viad makes a missing socket directory 0750 root:socket_group (%04o %d:%d)"
          % (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid))
    d.stop()
    v.stop()


# ---- capture and the dissector ----------------------------------------------------

FIELDS = ["frame.number", "frame.comment", "frame.packet_flags_direction", "via.version",
          "via.opcode", "via.flags", "via.flags.imm", "via.dst_vi", "via.src_vi", "via.conn_id",
          "via.seq", "via.msg_id", "via.msg_len", "via.offset", "via.imm", "via.payload_len",
          "via.reserved", "via.hdr_crc.status", "via.payload_crc.status", "via.rdma.va",
          "via.rdma.handle", "via.rdma.reserved", "via.conn.reliability",
          "via.conn.max_transfer", "via.conn.frame_payload", "via.conn.dst_disc",
          "via.conn.src_disc", "via.data_len", "via.repeated_of", "_ws.expert.message",
          "via.nak.status", "via.truncated"]

OP = {"CONN_REQ": 1, "CONN_ACCEPT": 2, "CONN_REJECT": 3, "CONN_NOMATCH": 4, "DISC": 5,
      "RESET": 6, "SEND": 7, "ACK": 8, "NAK": 9, "RDMA_WRITE": 10, "RDMA_READ_REQ": 11,
      "RDMA_READ_RESP": 12, "CONN_ACK": 13, "CONN_COOKIE": 14}
WF_PROBE, WF_REPLY = 0x0004, 0x0010
INBOUND, OUTBOUND = 1, 2
GOOD, BAD, UNVERIFIED = 1, 0, 2


def num(s):
    if s in ("", None):
        return None
    if s in ("True", "False"):
        return int(s == "True")
    return int(s, 0)


def disc(s):
    return bytes.fromhex(s.replace(":", "")).decode() if s else ""


def decode(env, path):
    """The VIA frames of PATH, as tshark shows them with the dissector."""
    args = ["tshark", "-X", "lua_script:" + env.lua, "-r", path, "-T", "fields",
            "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=|"]
    for f in FIELDS:
        args += ["-e", f]
    r = run(args, timeout=300)
    if not check(r.returncode == 0, "tshark decodes %s" % os.path.basename(path)):
        note(r.stderr[-1000:])
        return []
    frames = []
    for line in r.stdout.splitlines():
        cols = line.split("\t")
        d = dict(zip(FIELDS, cols + [""] * (len(FIELDS) - len(cols))))
        fr = {k.replace("via.", "").replace("frame.", ""): d[k] for k in FIELDS}
        for k in ("number", "version", "opcode", "flags", "flags.imm", "dst_vi", "src_vi",
                  "conn_id", "seq", "msg_id", "msg_len", "offset", "imm", "payload_len",
                  "reserved", "hdr_crc.status", "payload_crc.status", "rdma.va",
                  "rdma.handle", "rdma.reserved", "conn.reliability", "conn.max_transfer",
                  "conn.frame_payload", "data_len", "repeated_of", "nak.status", "truncated"):
            fr[k] = num(fr[k])
        fr["dir"] = num(d["frame.packet_flags_direction"])
        fr["dst_disc"], fr["src_disc"] = disc(d["via.conn.dst_disc"]), disc(d["via.conn.src_disc"])
        fr["expert"] = d["_ws.expert.message"]
        frames.append(fr)
    return frames


def pcapng_userappl(path):
    """The shb_userappl option (code 4) of PATH's section header block."""
    data = open(path, "rb").read()
    if len(data) < 28 or data[:4] != b"\x0a\x0d\x0d\x0a":
        return None
    total = struct.unpack_from("<I", data, 4)[0]
    at = 24                         # past type, length, byte order, version, section length
    while at + 4 <= total - 4:
        code, size = struct.unpack_from("<HH", data, at)
        if code == 4:
            return data[at + 4:at + 4 + size].decode()
        if code == 0:
            break
        at += 4 + (size + 3) // 4 * 4
    return None


class Capture:
    """viactl capture running in the background until stopped."""

    def __init__(self, env, v, port, path, *extra):
        self.err = os.path.join(env.tmp, os.path.basename(path) + ".err")
        self.proc = subprocess.Popen([env.viactl, "-i", v.instance, "capture", "--port", port,
                                      "-w", path] + list(extra),
                                     stdout=subprocess.DEVNULL, stderr=open(self.err, "w"))
        check(wait_for(lambda: "capturing" in open(self.err).read() or
                       self.proc.poll() is not None) and self.proc.poll() is None,
              "viactl capture --port %s starts" % port)

    def stop(self, signal_it=True):
        if signal_it:
            time.sleep(0.3)     # frames in flight reach their receiver
            self.proc.send_signal(signal.SIGINT)
        rc = self.proc.wait(60)
        text = open(self.err).read()
        check(rc == 0 and "frames captured, 0 dropped" in text,
              "viactl capture ends with the count of frames: " + text.strip().splitlines()[-1])
        m = re.search(r"(\d+) frames captured", text)
        return int(m.group(1)) if m else -1


RUNS = [  # discriminator, reliability (-r), --op, level in CONN_REQ
    ("lvl-ud", "unreliable", "send", 1),
    ("lvl-rd", "rd", "send", 2),
    ("lvl-rr", "rr", "send", 4),
    ("op-write", "rr", "write", 4),
    ("op-wimm", "rd", "write-imm", 2),
    ("op-read", "rd", "read", 2),
]
ITERS = 20
SIZE = 100


def check_run(frames, d, level, op_name):
    """Every frame of the run on discriminator D, field by field."""
    reqs = [f for f in frames if f["opcode"] == OP["CONN_REQ"] and f["dst_disc"] == d]
    if not check(len(reqs) >= 1, "%s: a CONN_REQ to discriminator %s" % (d, d)):
        return
    q = reqs[-1]
    conn = q["conn_id"]
    check(q["conn.reliability"] == level and q["dst_vi"] == 0 and q["src_vi"] != 0 and
          q["payload_len"] == 144 and conn != 0 and q["src_disc"] == d + ".c" and
          q["conn.frame_payload"] == 8952,
          "%s: CONN_REQ: level %d, dst_vi 0, 144-byte payload, conn_id not 0, discriminators, "
          "frame payload" % (d, level))
    acc = [f for f in frames if f["opcode"] == OP["CONN_ACCEPT"] and f["conn_id"] == conn]
    check(len(acc) >= 1 and acc[0]["dst_vi"] == q["src_vi"] and acc[0]["src_vi"] not in
          (0, q["src_vi"]) and acc[0]["conn.reliability"] == level and
          acc[0]["conn.max_transfer"] == q["conn.max_transfer"] and acc[0]["dst_disc"] == "",
          "%s: CONN_ACCEPT to the requester's VI, same level and transfer size" % d)
    if not acc:
        return
    cli, srv = q["src_vi"], acc[0]["src_vi"]
    mine = [f for f in frames if f["conn_id"] == conn]
    check(all(f["version"] == 2 and f["reserved"] == 0 for f in mine),
          "%s: version 2, reserved 0 in every frame" % d)
    check(all(f["dir"] == OUTBOUND and f["comment"] == "in memory" for f in mine),
          "%s: every frame moved in memory, captured once, outbound" % d)
    sealed = [f for f in mine if f["opcode"] in (OP["CONN_REQ"], OP["CONN_ACCEPT"], OP["ACK"],
                                                  OP["DISC"])]
    data = [f for f in mine if f["opcode"] in (OP["SEND"], OP["RDMA_WRITE"],
                                                OP["RDMA_READ_REQ"], OP["RDMA_READ_RESP"])]
    check(all(f["hdr_crc.status"] == GOOD and f["payload_crc.status"] == GOOD for f in sealed),
          "%s: connection and transport frames are sealed: both CRCs good" % d)
    check(all(f["hdr_crc.status"] == UNVERIFIED and f["payload_crc.status"] == UNVERIFIED and
              "not computed" in f["expert"] for f in data),
          "%s: data frames in memory carry no CRC, shown as not computed" % d)
    # a busy machine may make a reliable sender go back N: the frames it
    # sends again are flagged (checked through the faulty glue below), and
    # the sequence is that of the first sendings
    data = [f for f in data if not f["repeated_of"]]
    for vi, peer, who in ((cli, srv, "client"), (srv, cli, "server")):
        out = [f for f in data if f["src_vi"] == vi]
        if op_name == "read" and who == "server":
            out = [f for f in out if f["opcode"] == OP["RDMA_READ_RESP"]]
        check(len(out) >= ITERS and all(f["dst_vi"] == peer for f in out),
              "%s: %s's data frames go to its peer VI (%d)" % (d, who, len(out)))
        seqs = [f["seq"] for f in out]
        check(seqs == list(range(seqs[0], seqs[0] + len(seqs))) if seqs else False,
              "%s: %s's seq counts its numbered frames, +1 a frame" % (d, who))
        if op_name != "read":
            msgs = [f["msg_id"] for f in out]
            check(msgs == list(range(1, len(msgs) + 1)),
                  "%s: %s's msg_id counts messages from 1" % (d, who))
    if op_name == "send":
        sends = [f for f in data if f["opcode"] == OP["SEND"]]
        check(len(sends) == len(data) and all(
            f["msg_len"] == SIZE and f["payload_len"] == SIZE and f["offset"] == 0 and
            f["data_len"] == SIZE and f["flags"] == 0 for f in sends),
            "%s: SEND: 100-byte messages in one frame, no flags" % d)
    elif op_name in ("write", "write-imm"):
        writes = [f for f in data if f["opcode"] == OP["RDMA_WRITE"]]
        imm = op_name == "write-imm"
        check(len(writes) == len(data) and all(
            f["msg_len"] == SIZE and f["payload_len"] == SIZE + 16 and f["data_len"] == SIZE and
            f["rdma.reserved"] == 0 and f["rdma.handle"] and f["rdma.va"] and
            f["flags.imm"] == int(imm) for f in writes),
            "%s: RDMA_WRITE: the 16-byte extension (address, handle, reserved 0), then 100 "
            "bytes%s" % (d, ", IMM set" if imm else ""))
        if imm:
            for vi in (cli, srv):
                imms = [f["imm"] for f in writes if f["src_vi"] == vi]
                check(imms == sorted(imms) and len(set(imms)) == len(imms),
                      "%s: immediate data of VI %d: one value a message" % (d, vi))
    else:
        reqs = [f for f in data if f["opcode"] == OP["RDMA_READ_REQ"]]
        resps = [f for f in data if f["opcode"] == OP["RDMA_READ_RESP"]]
        check(len(reqs) >= ITERS and all(
            f["src_vi"] == cli and f["payload_len"] == 16 and f["msg_len"] == SIZE and
            f["rdma.reserved"] == 0 and f["rdma.handle"] for f in reqs),
            "%s: RDMA_READ_REQ from the client: 16-byte extension, msg_len 100" % d)
        check(sorted(f["msg_id"] for f in resps) == sorted(f["msg_id"] for f in reqs) and all(
            f["src_vi"] == srv and f["payload_len"] == SIZE and f["offset"] == 0
            for f in resps), "%s: RDMA_READ_RESP answers each read by its msg_id" % d)
    acks = [f for f in mine if f["opcode"] == OP["ACK"]]
    if level == 1:
        check(not acks, "%s: no ACK on an Unreliable connection" % d)
    else:
        # a probe's msg_id is its token, which the reply echoes (dp_rel.c,
        # wire-format.md 11.1): a busy machine's retransmission timer probes
        check(acks and all(f["payload_len"] == 0 and f["offset"] == 0 and
                           (f["msg_id"] == 0 or f["flags"] & (WF_PROBE | WF_REPLY))
                           for f in acks),
              "%s: ACKs on the reliable connection, header only, a message id only "
              "as a probe's token" % d)
    discs = [f for f in mine if f["opcode"] == OP["DISC"]]
    check(discs and all({f["src_vi"], f["dst_vi"]} == {cli, srv} and f["payload_len"] == 0
                        for f in discs) and discs[-1]["number"] == mine[-1]["number"],
          "%s: the connection ends with DISC between its two VIs" % d)


def test_capture(env):
    v = Viad(env, "cap", ["port.via0.glue=loopback", "port.via1.glue=faulty",
                          "port.via1.tx_drop=4%", "port.via1.rx_corrupt=3%",
                          "port.via1.corrupt_where=header", "port.via1.seed=15"])
    # 1. every frame type on via0, where frames move in memory
    a = os.path.join(env.tmp, "via0.pcapng")
    cap = Capture(env, v, "via0", a)
    for d, level, op, _ in RUNS:
        pingpong(env, v, "-D", d, "-r", level, "--op", op, "-n", str(ITERS), "-w", "0",
                 "--size", str(SIZE))
    n = cap.stop()
    appl = pcapng_userappl(a)
    check(appl == "viad (VIA-DPDK) %s" % env.version,
          "the pcapng section header names viad and its version: %s" % appl)
    frames = decode(env, a)
    check(len(frames) == n and all(f["opcode"] is not None for f in frames),
          "every captured frame is VIA and decoded (%d)" % len(frames))
    for d, level, op, lvl in RUNS:
        check_run(frames, d, lvl, op)

    # 2. a retransmission and corrupt frames through the faulty glue (via1):
    # its own-address frames cross the port, each captured going out and in
    b = os.path.join(env.tmp, "via1.pcapng")
    before = viactl_json(env, v, "counters")
    cap = Capture(env, v, "via1", b)
    pingpong(env, v, "-d", "via1", "-D", "faulty", "-r", "rd", "-n", "300", "-w", "0",
             "--size", str(SIZE))
    cap.stop()
    after = viactl_json(env, v, "counters")
    frames = decode(env, b)
    tx = [f for f in frames if f["dir"] == OUTBOUND]
    rx = [f for f in frames if f["dir"] == INBOUND]
    check(tx and rx and not any(f["comment"] for f in frames),
          "a faulty port: frames captured going out and coming in, none in memory")
    check(all(f["hdr_crc.status"] == GOOD and f["payload_crc.status"] == GOOD for f in tx),
          "every frame handed to the port is sealed: both CRCs good")
    again = [f for f in tx if f["repeated_of"]]
    retx = after["frames_retransmitted"] - before["frames_retransmitted"]
    check(retx > 0 and len(again) == retx and all(
        f["opcode"] == OP["SEND"] and "seen before" in f["expert"] for f in again),
        "retransmissions: %d frames sent again, each flagged with its first frame "
        "(frames_retransmitted %d)" % (len(again), retx))
    check(all(frames[f["repeated_of"] - 1]["seq"] == f["seq"] and
              frames[f["repeated_of"] - 1]["conn_id"] == f["conn_id"] for f in again),
          "a retransmission repeats the seq and connection of the frame it refers to")
    bad = [f for f in rx if f["hdr_crc.status"] == BAD]
    corrupt = after["frames_corrupt"] - before["frames_corrupt"]
    check(corrupt > 0 and len(bad) == corrupt and all("Bad header CRC" in f["expert"]
                                                      for f in bad),
          "corrupt frames: %d with a bad header CRC, an expert error each "
          "(frames_corrupt %d)" % (len(bad), corrupt))

    # 3. --count: the capture ends by itself
    c = os.path.join(env.tmp, "count.pcapng")
    cap = Capture(env, v, "via0", c, "--count", "10")
    pp = long_pingpong(env, v, "unreliable")
    got = cap.stop(signal_it=False)
    stop_proc(pp)
    check(got == 10 and len(decode(env, c)) == 10, "--count 10 writes 10 frames and ends")
    st = viactl_json(env, v, "status")
    check(st and st["capture"] == "off", "no capture runs after it")

    # 4. one capture per NIC, NICs at once; a filter; the live count; a
    # snaplen. Bounded runs: the writer keeps up (no frame dropped)
    f = os.path.join(env.tmp, "filter.pcapng")
    cap = Capture(env, v, "via0", f, "-f", "opcode send", "--progress")
    other = Capture(env, v, "via1", os.path.join(env.tmp, "other.pcapng"))
    r = run([env.viactl, "-i", v.instance, "capture", "--port", "via0", "--count", "1", "-w",
             os.path.join(env.tmp, "busy.pcapng")])
    check(r.returncode == 1 and "another capture of that NIC runs" in r.stderr,
          "a second capture of a NIC: refused while the first runs (%s)" % r.stderr.strip())
    st = viactl_json(env, v, "status")
    check(st and st["capture"] == "via0 via1", "two NICs captured at once: %s" %
          (st or {}).get("capture"))
    pingpong(env, v, "-D", "filt", "-n", "200", "-w", "0", "--size", "64")
    time.sleep(1.2)
    other.stop()
    n = cap.stop()
    text = open(cap.err).read()
    live = re.findall(r"via0: (\d+) frames, \d+ dropped", text)
    check(len(live) >= 2 and int(live[-1]) > 0 and
          all(int(a) <= int(b) for a, b in zip(live, live[1:])),
          "--progress: a live count twice a second (%s)" % live)
    frames = decode(env, f)
    check(n > 0 and len(frames) == n and all(x["opcode"] == OP["SEND"] for x in frames),
          "-f 'opcode send': only SEND frames (%d)" % len(frames))
    r = run([env.viactl, "-i", v.instance, "capture", "--port", "via0", "--count", "1", "-f",
             "opcode bogus", "-w", os.path.join(env.tmp, "bogus.pcapng")])
    check(r.returncode == 1 and "no such opcode" in r.stderr and
          not os.path.exists(os.path.join(env.tmp, "bogus.pcapng")),
          "-f with an unknown opcode: refused, no file (%s)" % r.stderr.strip())
    t = os.path.join(env.tmp, "snap.pcapng")
    cap = Capture(env, v, "via0", t, "--count", "20", "--snaplen", "64", "-f", "opcode send")
    pingpong(env, v, "-D", "snap", "-n", "50", "-w", "0", "--size", "64")
    cap.stop(signal_it=False)
    frames = decode(env, t)
    check(len(frames) == 20 and all(x["truncated"] == 64 - 14 and
                                    "cut short by the capture's snaplen" in x["expert"] and
                                    "Malformed" not in x["expert"] for x in frames),
          "--snaplen 64: frames marked cut short by the snaplen, not malformed")
    v.stop()


# ---- viad's refusals and log -------------------------------------------------------

def test_daemon(env):
    for arg, why in (("foo", "no '=' and value"), ("foo=1", "no section"),
                     ("viad.instance", "no '=' and value"), ("viad.=1", "no key after"),
                     ("viad.nokey=1", "unknown key 'nokey'")):
        r = run([env.viad, "--set", arg], timeout=30)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 2 and len(lines) == 1 and ("--set " + arg) in lines[0] and
              why in lines[0], "--set %s: status 2, one line: %s" % (arg, lines))
    r = run([env.viad, "-s", os.path.join(env.tmp, "x.sock")], timeout=30,
            user=65534, group=65534, extra_groups=[])
    check(r.returncode == 2 and "viad must run as root (or with the capabilities" in r.stderr
          and "EAL" not in r.stderr,
          "not root: status 2, said before EAL starts: %s" % r.stderr.strip()[:200])
    # the log: ISO 8601 dates, or syslog priorities when stderr is the journal
    log = os.path.join(env.tmp, "journal.log")
    with open(log, "w") as f:
        st = os.fstat(f.fileno())
        e = dict(os.environ, JOURNAL_STREAM="%d:%d" % (st.st_dev, st.st_ino))
        subprocess.run([env.viad, "--set", "foo=1"], stderr=f, env=e, timeout=30)
    text = open(log).read()
    check(text.startswith("<3>error: --set foo=1:"),
          "JOURNAL_STREAM: lines carry a syslog priority (<3> for an error): %s" % text.strip())
    r = run([env.viad, "--set", "foo=1"], timeout=30)
    check(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z viad error: ", r.stderr),
          "otherwise an ISO 8601 date: %s" % r.stderr.strip()[:60])
    # EAL options of the user's without --in-memory: viad adds --no-shconf,
    # or EAL's multi-process channel waits for ever on the runtime
    # directory's lock, which viad holds
    v = Viad(env, "eal", eal=["--no-pci", "--no-huge", "-m", "256",
                             "--file-prefix=ops%deal" % os.getpid()])
    check(v.logged("--no-shconf added"), "EAL options without --in-memory: viad adds "
          "--no-shconf and says so")
    v.stop()
    # a port that cannot open: the driver's cause, not EPERM
    r = run([env.viad, "-s", os.path.join(env.tmp, "p.sock"), "--set",
             "viad.instance=ops%dpmd" % os.getpid(), "--set", "port.via0.glue=ethdev",
             "--set", "port.via0.devargs=net_af_packet0,iface=nosuchif%d" % os.getpid()],
            timeout=60)
    line = [l for l in r.stderr.splitlines() if "viad error: port via0" in l]
    check(r.returncode != 0 and line and line[0].endswith("open failed: No such device") and
          "the driver:" in r.stderr,
          "af_packet on a missing interface: the driver's cause (%s)" % (line or r.stderr[-300:]))


# ---- install ------------------------------------------------------------------------

def test_install(env):
    stage = os.path.join(env.tmp, "stage")
    r = run(["meson", "install", "-C", env.build, "--no-rebuild", "--quiet",
             "--destdir", stage], timeout=600)
    if not check(r.returncode == 0, "meson install --destdir"):
        note(r.stdout[-1500:] + r.stderr[-1500:])
        return
    found = {}
    for root, _, files in os.walk(stage):
        for f in files:
            found.setdefault(f, []).append(os.path.join(root, f))

    def one(suffix):
        hits = [p for ps in found.values() for p in ps if p.endswith(suffix)]
        check(len(hits) == 1, "installed: " + suffix)
        return hits[0] if hits else None

    viad = one("/sbin/viad")
    viactl = one("/bin/viactl")
    unit = one("/lib/systemd/system/viad.service")
    tmpfiles = one("/lib/tmpfiles.d/viad.conf")
    sysusers = one("/lib/sysusers.d/viad.conf")
    lua = one("/share/via-dpdk/wireshark/via.lua")
    one("/include/via-dpdk/via_glue.h")
    one("/pkgconfig/via-glue.pc")
    if os.path.exists(os.path.join(env.build, "bpf", "via_xdp.o")):
        one("/viad/via_xdp.o")  # the af_xdp ports' XDP program (issue 16)
    pages = [one("/share/man/man8/viad.8"), one("/share/man/man5/viad.conf.5"),
             one("/share/man/man8/viactl.8"), one("/share/man/man7/vipl.7"),
             one("/share/man/man1/vipl_info.1"), one("/share/man/man1/vipl_pingpong.1"),
             one("/share/man/man1/vipl_legacy.1")]
    bw = [p for p in found.get("vipl_bw.1", [])]
    check(len(bw) == 1 and os.path.realpath(bw[0]) == os.path.realpath(pages[5] or "/x"),
          "installed: /share/man/man1/vipl_bw.1, a link to vipl_pingpong.1")
    if lua:
        check(open(lua).read() == open(env.lua).read(), "the dissector installed as written")
    if viactl:
        r = run([viactl, "--version"])
        check(r.returncode == 0 and r.stdout == "viactl (VIA-DPDK) %s\n" % env.version,
              "the staged viactl runs: %s" % r.stdout.strip())
    if unit and viad:
        text = open(unit).read()
        prefix = os.path.dirname(os.path.dirname(viad))[len(stage):]
        check("ExecStart=%s/sbin/viad\n" % prefix in text and "Restart=on-failure" in text and
              "RuntimeDirectory=viad\n" in text and "ExecStartPre=" in text and
              "Type=notify\n" in text and "RestartPreventExitStatus=2\n" in text,
              "viad.service: the installed viad, notify, restart on failure but for a "
              "configuration error, runtime directory, hugepages")
        if shutil.which("systemd-analyze"):
            staged = os.path.join(env.tmp, "viad.service")
            with open(staged, "w") as f:
                f.write(text.replace("ExecStart=%s/sbin/viad" % prefix, "ExecStart=" + viad))
            man = os.path.join(os.path.dirname(os.path.dirname(pages[0] or "/x/x")))
            e = dict(os.environ, MANPATH=man)
            r = run(["systemd-analyze", "verify", staged], env=e)
            check(r.returncode == 0 and not r.stderr.strip(),
                  "systemd-analyze verify viad.service: " + (r.stderr.strip() or "clean"))
        else:
            note("no systemd-analyze: the unit's syntax is not verified")
    if tmpfiles:
        check(re.search(r"^d /run/viad 0750 root vipl -$", open(tmpfiles).read(), re.M),
              "tmpfiles.d: /run/viad, 0750, group vipl")
    if sysusers:
        check(re.search(r"^g vipl -$", open(sysusers).read(), re.M), "sysusers.d: group vipl")
    for page in filter(None, pages):
        name = os.path.basename(page)
        r = run(["man", "--warnings", "-E", "UTF-8", "-l", page],
                env=dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="80"))
        check(r.returncode == 0 and not r.stderr and "NAME" in r.stdout and
              "SEE ALSO" in r.stdout,
              "man -l %s renders without warnings%s" % (name, (": " + r.stderr[:300])
                                                        if r.stderr else ""))


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("telemetry", "viactl", "capture", "daemon",
                                                 "install"):
        print(__doc__, file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("SKIP: must run as root (viad needs hugepages and /var/run/dpdk)")
        return 77
    needs = {"telemetry": ["dpdk-telemetry.py"], "capture": ["tshark"], "install": ["man"]}
    for prog in needs.get(sys.argv[1], []):
        if not shutil.which(prog):
            check(False, "%s is installed (scripts/setup-host.sh)" % prog)
            return 1
    env = Env(os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3]))
    try:
        globals()["test_" + sys.argv[1]](env)
    finally:
        env.cleanup()
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
