#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Helpers of tests/perf/bench.sh (standard library only).

  bench_report.py sockperf SIZE LOG     sockperf ping-pong --full-rtt output -> one JSON line
  bench_report.py iperf3 SIZE JSON      iperf3 -J output -> one JSON line
  bench_report.py beside BULK T0 T1 T2  vipl_bw's JSON line of a stream started at T0, beside
      a pingpong from T1 to T2 (date +%s.%N) -> that line tagged with the overlap; exit
      status 3 when the pingpong did not end before the stream's last send
  bench_report.py report RUN RESULTS PLOTBASE
      RUN holds meta.json, status.tsv and one <bench>.jsonl per benchmark.
      Writes every JSON line, tagged with its bench, to RESULTS, prints the
      summary table, and writes the gnuplot data and script (RUN/plot.gp) that
      draw PLOTBASE-latency.png, PLOTBASE-bandwidth.png and PLOTBASE-scale.png
      (bench.sh runs gnuplot).
"""
import json
import math
import os
import re
import sys

# ---------------------------------------------------------------- parsers


def sockperf(size, path):
    text = re.sub(r"\x1b\[[0-9;]*m", "", open(path, errors="replace").read())
    pct = {}
    for m in re.finditer(r"percentile\s+([0-9.]+)\s*=\s*([0-9.]+)", text):
        pct[float(m.group(1))] = float(m.group(2))
    mn = re.search(r"<MIN> observation\s*=\s*([0-9.]+)", text)
    mx = re.search(r"<MAX> observation\s*=\s*([0-9.]+)", text)
    avg = re.search(r"avg-rtt=([0-9.]+)", text)
    obs = re.search(r"Total (\d+) observations", text)
    drop = re.search(r"# dropped messages = (\d+)", text)
    if not (mn and mx and 50.0 in pct):
        sys.exit("bench_report: no latency figures in sockperf output %s" % path)
    rec = {
        "test": "sockperf_pingpong", "proto": "udp", "addr": "127.0.0.1", "size": int(size),
        "iters": int(obs.group(1)) if obs else None,
        "dropped": int(drop.group(1)) if drop else None,
        "rtt_us": {"min": float(mn.group(1)), "p50": pct.get(50.0), "p90": pct.get(90.0),
                   "p99": pct.get(99.0), "p99.9": pct.get(99.9), "max": float(mx.group(1)),
                   "mean": float(avg.group(1)) if avg else None},
    }
    rec["oneway_p50_us"] = rec["rtt_us"]["p50"] / 2
    print(json.dumps(rec))


def iperf3(size, path):
    d = json.load(open(path))
    if "error" in d:
        sys.exit("bench_report: iperf3: %s" % d["error"])
    e = d["end"]
    r = e["sum_received"]
    bps = r["bits_per_second"]
    print(json.dumps({
        "test": "iperf3", "proto": "tcp", "addr": "127.0.0.1", "size": int(size),
        "seconds": r["seconds"], "bytes": r["bytes"], "MBps": bps / 8e6, "Gbps": bps / 1e9,
        "retransmits": e.get("sum_sent", {}).get("retransmits"),
    }))



def beside(path, t0, t1, t2):
    rows = [json.loads(l) for l in open(path) if l.startswith("{")]
    if not rows:
        sys.exit("bench_report: no JSON line in %s" % path)
    r = rows[-1]
    t0, t1, t2 = float(t0), float(t1), float(t2)
    # the stream's measured sends start after T0 (its launch), so they end
    # after T0 + seconds: a pingpong ended by then ran entirely beside them
    # (it started bench.sh's lead time after T0, after the stream's start-up)
    r = dict({"role": "bulk"}, **r)
    r.update(lead_s=round(t1 - t0, 3), pingpong_s=round(t2 - t1, 3),
             overlap=t2 - t0 <= r.get("seconds", 0))
    if not r["overlap"]:
        # enough for the lead and the pingpong at the stream's send rate, 1.5 times
        rate = r.get("sent", r.get("iters", 0)) / max(r.get("seconds", 0), 1e-3)
        r["retry_n"] = int(max(2 * r.get("iters", 0), 1.5 * rate * (t2 - t0)))
    print(json.dumps(r))
    if not r["overlap"]:
        sys.exit(3)

# ----------------------------------------------------------------- report

# issue 6: (bench, baseline bench, what, goal as the largest ratio allowed, or
# None for "more is better, goal > 1x"); latencies compare p50 and p99
ISSUE6_LAT = (("vipl_idle1k", "vipl_idle0", "64 B RTT, 1024 idle VIs", 1.10),
              ("vipl_idle16k", "vipl_idle0", "64 B RTT, 16384 idle VIs", 1.10),
              ("vipl_beside_bulk", "vipl_idle0", "64 B RTT beside a 64 KiB stream", 2.0))


def issue6(recs, over):
    """The issue 6 figures of a run: a list of dicts, baselines first."""
    def lat(b):
        r = [x for x in recs.get(b, []) if x.get("size") == 64 and "rtt_us" in x]
        return (r[0]["rtt_us"].get("p50"), r[0]["rtt_us"].get("p99")) if r else (None, None)

    def rate(b):  # the median of the runs (bench.sh runs --size 64,64,64)
        r = sorted((x for x in recs.get(b, []) if x.get("size") == 64 and "msg_per_s" in x),
                   key=lambda x: x["msg_per_s"])
        if not r:
            return None
        return dict(r[len(r) // 2], runs=[x["msg_per_s"] for x in r])

    out = []
    if not any(b in recs for b in ("vipl_idle0", "vipl_rate_1lc")):
        return out
    b50, b99 = lat("vipl_idle0")
    out.append({"figure": "64 B RTT, 0 idle VIs", "bench": "vipl_idle0", "baseline": None,
                "p50_us": b50, "p99_us": b99})
    for b, base, what, goal in ISSUE6_LAT:
        if b not in recs:
            continue
        p50, p99 = lat(b)
        r50, r99 = ratio(p50, b50), ratio(p99, b99)
        met = None if r50 is None or r99 is None else (r50 <= goal and r99 <= goal)
        out.append({"figure": what, "bench": b, "baseline": base, "p50_us": p50, "p99_us": p99,
                    "ratio_p50": r50, "ratio_p99": r99, "goal": "p50 and p99 <= %.2fx" % goal,
                    "met": met, "oversubscribed": over(b) or over(base)})
    r1 = rate("vipl_rate_1lc")
    if "vipl_rate_1lc" in recs:
        out.append({"figure": "64 B msg/s, 1 poll lcore", "bench": "vipl_rate_1lc",
                    "baseline": None, "msg_per_s": r1["msg_per_s"] if r1 else None,
                    "runs": r1["runs"] if r1 else [],
                    "lost_pct": r1.get("lost_pct") if r1 else None})
    if "vipl_rate_2lc" in recs:
        r2 = rate("vipl_rate_2lc")
        v2 = r2["msg_per_s"] if r2 else None
        rr = ratio(v2, r1["msg_per_s"] if r1 else None)
        out.append({"figure": "64 B msg/s, 2 poll lcores", "bench": "vipl_rate_2lc",
                    "baseline": "vipl_rate_1lc", "msg_per_s": v2,
                    "runs": r2["runs"] if r2 else [],
                    "lost_pct": r2.get("lost_pct") if r2 else None, "ratio": rr,
                    "goal": "> 1x (scales)", "met": None if rr is None else rr > 1.0,
                    "oversubscribed": over("vipl_rate_2lc") or over("vipl_rate_1lc")})
    return out



# issue 30: the goals, each as (what, value, baseline, ratio, goal, met) rows
# of figures from this run's benchmarks
def issue30(recs):
    """The issue 30 goals of a run: a list of dicts (empty without its steps)."""
    if not any(b in recs for b in ("vipl_lo_line", "vipl_rate_line")):
        return []
    out = []

    def p50(bench, size, **match):
        for r in recs.get(bench, []):
            if r.get("size") == size and "rtt_us" in r and all(
                    r.get(k) == v for k, v in match.items()):
                return r["rtt_us"].get("p50"), r["rtt_us"].get("p99")
        return None, None

    def goal(what, bench, value, base_what, base, limit, unit="us", p99=None, base99=None,
             less=True):
        rt = ratio(value, base)
        r99 = ratio(p99, base99)
        met = None
        if rt is not None:
            met = rt <= limit if less else rt >= limit
            if r99 is not None:
                met = met and r99 <= limit
        out.append({"goal": what, "bench": bench, "value": value, "unit": unit,
                    "baseline": base_what, "baseline_value": base, "ratio": rt,
                    "ratio_p99": r99, "limit": ("<= %.2fx" if less else ">= %.2fx") % limit,
                    "met": met})

    ring2_64, _ = p50("raw_ring2", 64)
    ring2_16, _ = p50("raw_ring2", 16)
    l64, _ = p50("vipl_lo_line", 64)
    l0, _ = p50("vipl_lo_line", 0)
    d64, _ = p50("vipl_lo", 64)
    goal("64 B loopback RTT p50, line entries", "vipl_lo_line", l64,
         "ring x2 (raw_ring2), 64 B", ring2_64, 1.2)
    goal("0 B loopback RTT p50, line entries", "vipl_lo_line", l0,
         "ring x2, 16 B (its smallest frame)", ring2_16, 1.1)
    goal("64 B loopback RTT p50, 16-byte entries", "vipl_lo", d64,
         "ring x2 (raw_ring2), 64 B", ring2_64, 1.2)
    for op, name in (("send", "Send"), ("write", "RDMA Write")):
        r = [x for x in recs.get("vipl_rate_line", []) if x.get("op", "send") == op and
             "msg_per_s" in x]
        v = r[0]["msg_per_s"] if r else None
        goal("64 B %s msg/s, 1 poll lcore, 1 thread, line entries" % name,
             "vipl_rate_line", v, "10 M msg/s", 10e6, 1.0, unit="msg/s", less=False)
        if r:
            out[-1]["lost_pct"] = r[0].get("lost_pct")
    idle = sorted(b for b in recs if b.startswith("vipl_idle") and b.endswith("_line") and
                  b != "vipl_idle0_line")
    b50, b99 = p50("vipl_idle0_line", 64)
    for b in idle:
        v50, v99 = p50(b, 64)
        n = [x.get("idle_vis") for x in recs[b] if "idle_vis" in x]
        goal("64 B RTT p50, p99 beside %s idle VIs, line entries" % (n[0] if n else "?"),
             b, v50, "no idle VI (vipl_idle0_line)", b50, 1.1, p99=v99, base99=b99)
    hp, _ = p50("vipl_lo_line_mem", 64, mem="heap")
    pp, _ = p50("vipl_lo_line_mem", 64, mem="provider")
    goal("64 B RTT p50, heap memory, line entries", "vipl_lo_line_mem", hp,
         "provider memory", pp, 1.1)
    # nothing lost: every message of the one-thread runs and of the pingpongs arrived
    lost = [(b, x.get("lost_pct") or x.get("lost") or 0) for b in
            ("vipl_rate_line", "vipl_lo_line", "vipl_lo_line_mem") for x in recs.get(b, [])
            if "lost_pct" in x or "lost" in x]
    out.append({"goal": "nothing lost (line entries: one-thread rates, pingpongs)",
                "bench": "vipl_rate_line", "value": sum(v for _, v in lost), "unit": "lost",
                "baseline": None, "baseline_value": None, "ratio": None, "ratio_p99": None,
                "limit": "0", "met": (all(v == 0 for _, v in lost) if lost else None)})
    return out


def load(run):
    meta = json.load(open(os.path.join(run, "meta.json")))
    status = []
    path = os.path.join(run, "status.tsv")
    if os.path.exists(path):
        for line in open(path):
            f = line.rstrip("\n").split("\t")
            if len(f) >= 6:
                status.append({"bench": f[0], "status": f[1], "why": f[2], "pinning": f[3],
                               "needs_cpus": int(f[4]), "label": f[5]})
    recs = {}
    for st in status:
        path = os.path.join(run, st["bench"] + ".jsonl")
        rows = []
        if os.path.exists(path):
            for line in open(path):
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    continue
        recs[st["bench"]] = rows
    return meta, status, recs


def by_size(rows):
    return {r["size"]: r for r in rows if "size" in r and "skipped" not in r}


def fmt(v, width=8, prec=2):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-".rjust(width)
    return ("%.*f" % (prec, v)).rjust(width)


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def fmt_ratio(r, width=8):
    if r is None:
        return "-".rjust(width)
    return ("%.1fx" % r if r < 100 else "%.0fx" % r).rjust(width)


def report(run, results, plotbase):
    meta, status, recs = load(run)
    st = {s["bench"]: s for s in status}
    ncpu = meta["cpus_online"]

    given = meta.get("cpus_given", ncpu)

    def over(b):
        return b in st and st[b]["needs_cpus"] > given

    def mark(b):
        if b in st and st[b]["status"] == "failed":
            return "!"
        return "*" if over(b) else " "

    i6 = issue6(recs, over)
    i30 = issue30(recs)

    # --- the results file: meta, statuses, every figure tagged, the issue 6 ratios
    with open(results, "w") as f:
        f.write(json.dumps(dict(meta, test="bench_meta")) + "\n")
        for s in status:
            f.write(json.dumps(dict(s, test="bench_status", oversubscribed=over(s["bench"]),
                                    run=meta["run"])) + "\n")
        for s in status:
            for r in recs.get(s["bench"], []):
                r = dict(r, bench=s["bench"], run=meta["run"], oversubscribed=over(s["bench"]))
                f.write(json.dumps(r) + "\n")
        for r in i6:
            f.write(json.dumps(dict(r, test="issue6", run=meta["run"])) + "\n")
        for r in i30:
            f.write(json.dumps(dict(r, test="issue30", run=meta["run"])) + "\n")

    out = []
    p = out.append
    p("VIA-DPDK benchmarks%s: %s, host %s, %d CPUs online (%s), benchmarks on CPUs %s" % (
        " (--quick)" if meta["quick"] else "", meta["date"], meta["host"], ncpu,
        meta["cpu_model"], meta["cpus_used"]))
    p("DPDK %s, kernel %s, lo MTU %s, load average %s, viad poll mode %s" % (
        meta["dpdk"], meta["kernel"], meta["lo_mtu"], " ".join(meta["loadavg"]),
        meta["poll_mode"]))
    if meta.get("busy_others"):
        p("WARNING: other processes were using CPU when the run started (figures are noisy):")
        for b in meta["busy_others"]:
            p("    " + b)
    p("")
    p("Benchmarks, CPU pinning, status.  In the tables, * marks figures of a benchmark that "
      "needs more CPUs")
    p("than the machine has (oversubscribed: time-sliced, not the design's figure); ! marks the "
      "partial figures")
    p("of a benchmark that failed.")
    for s in status:
        needs = "%d%s" % (s["needs_cpus"], "*" if over(s["bench"]) else " ")
        what = "%s%s" % (s["status"], " (%s)" % s["why"] if s["why"] else "") \
            if s["status"] == "ok" else "%s: %s" % (s["status"], s["why"])
        p("  %-16s %-44s needs %-3s CPUs  %s" % (s["bench"], s["label"][:44], needs, what))
        if s["pinning"]:
            p("  %-16s   pinning: %s" % ("", s["pinning"]))
    p("")

    cl = (recs.get("cacheline") or [None])[0]
    cl_p50 = cl["rtt_ns"]["p50"] / 1000 if cl else None
    cle = (recs.get("cacheline_end") or [None])[0]
    if cl and cle:
        a, b = cl["rtt_ns"]["p50"], cle["rtt_ns"]["p50"]
        p("Cache-line RTT p50 at the start %.0f ns, at the end %.0f ns%s" % (
            a, b, "" if max(a, b) < 1.5 * min(a, b) else
            ": CHANGED during the run.  The host moved the virtual CPUs (e.g. to another\n"
            "  core complex): figures taken before and after differ for that reason alone, "
            "and the ratios\n  between benchmarks are unreliable.  Run again."))
        p("")
    lo = by_size(recs.get("vipl_lo", []))
    ring = by_size(recs.get("raw_ring", []))
    ring2 = by_size(recs.get("raw_ring2", []))
    sp = by_size(recs.get("sockperf", []))
    vm = by_size(recs.get("vipl_memif", []))
    rm = by_size(recs.get("raw_memif", []))

    def rtt(tab, size, k):
        r = tab.get(size)
        return r["rtt_us"].get(k) if r else None

    def lost(tab, size):
        r = tab.get(size)
        return r.get("lost", 0) if r else 0

    sizes = sorted(set(lo) | set(ring) | set(sp) | set(vm) | set(rm))
    p("Round-trip latency in one process: VIA-DPDK loopback vs its floors (us; ratio = VIA / floor)")
    p("  cache-line ping-pong RTT (size-independent floor of one client<->viad exchange): "
      "p50 %s us, p99 %s us" % (fmt(cl_p50, 0, 3).strip(),
                                fmt(cl["rtt_ns"]["p99"] / 1000 if cl else None, 0, 3).strip()))
    p("%8s | %9s %9s | %9s %9s | %9s | %8s %9s %8s | %9s %8s" % (
        "size", "VIA lo", "p99", "ring", "p99", "ring x2", "VIA/ring", "VIA/ringx2", "VIA/cl",
        "sockperf", "krn/VIA"))
    for s in sizes:
        v = rtt(lo, s, "p50")
        p("%8d | %8s%s %9s | %8s%s %9s | %8s%s | %8s %9s %8s | %9s %8s" % (
            s, fmt(v), mark("vipl_lo"), fmt(rtt(lo, s, "p99")), fmt(rtt(ring, s, "p50"), 8, 3),
            mark("raw_ring"), fmt(rtt(ring, s, "p99"), 9, 3), fmt(rtt(ring2, s, "p50"), 8, 3),
            mark("raw_ring2"), fmt_ratio(ratio(v, rtt(ring, s, "p50"))),
            fmt_ratio(ratio(v, rtt(ring2, s, "p50")), 9), fmt_ratio(ratio(v, cl_p50)),
            fmt(rtt(sp, s, "p50")), fmt_ratio(ratio(rtt(sp, s, "p50"), v))))
    p("  (ring x2: two ring round trips per sample, as many crossings between the two CPUs as "
      "a VIA\n  loopback round trip, whose ping and pong each go to the poll lcore and back)")
    p("")
    p("Round-trip latency between two processes: VIA-DPDK over two viads joined by memif vs "
      "raw memif (us)")
    p("%8s | %9s %9s | %9s %9s %5s | %8s | %9s %9s | %8s" % (
        "size", "VIA memif", "p99", "raw memif", "p99", "lost", "VIA/raw", "sockperf",
        "p99", "krn/VIA"))
    for s in sizes:
        v = rtt(vm, s, "p50")
        p("%8d | %8s%s %9s | %8s%s %9s %5s | %8s | %8s%s %9s | %8s" % (
            s, fmt(v), mark("vipl_memif"), fmt(rtt(vm, s, "p99")), fmt(rtt(rm, s, "p50"), 8, 3),
            mark("raw_memif"), fmt(rtt(rm, s, "p99"), 9, 3),
            str(lost(rm, s)) if s in rm else "-",
            fmt_ratio(ratio(v, rtt(rm, s, "p50"))), fmt(rtt(sp, s, "p50")), mark("sockperf"),
            fmt(rtt(sp, s, "p99")), fmt_ratio(ratio(rtt(sp, s, "p50"), v))))
    p("  (sockperf: UDP ping-pong over 127.0.0.1, --full-rtt; krn/VIA = kernel RTT / VIA RTT, "
      ">1 means VIA-DPDK is faster)")
    p("")

    bw = by_size(recs.get("vipl_bw_lo", []))
    ip = by_size(recs.get("iperf3", []))
    mc = by_size(recs.get("memcpy", []))
    mcc = by_size(recs.get("memcpy_cold", []))
    bsizes = sorted(set(bw) | set(ip))
    p("Bandwidth: vipl_bw --loopback vs iperf3 TCP over 127.0.0.1 (MB/s = 1e6 bytes/s "
      "received)")
    p("%8s | %10s %11s %7s | %10s %7s | %8s | %9s" % (
        "size", "VIA MB/s", "msgs/s", "lost%", "iperf3", "retr", "krn/VIA", "memcpy"))
    for s in bsizes:
        b = bw.get(s)
        i = ip.get(s)
        m = mc.get(s)
        p("%8d | %9s%s %11s %7s | %9s%s %7s | %8s | %6s GB/s" % (
            s, fmt(b["MBps"] if b else None, 9, 1), mark("vipl_bw_lo"),
            fmt(b["msg_per_s"] if b else None, 11, 0), fmt(b["lost_pct"] if b else None, 7, 2),
            fmt(i["MBps"] if i else None, 9, 1), mark("iperf3"),
            str(i.get("retransmits")) if i else "-",
            fmt_ratio(ratio(i["MBps"] if i else None, b["MBps"] if b else None)),
            fmt(m["GBps"] if m else None, 6, 1)))
    p("  (vipl_bw runs Unreliable VIs: lost% are messages the receiver did not get; "
      "iperf3 -l SIZE sets the write size)")
    p("")
    # --- RDMA (--op) against Send, one viad
    lw = by_size(recs.get("vipl_lo_wimm", []))
    lr = by_size(recs.get("vipl_lo_read", []))
    if lw or lr:
        p("RDMA latency in one process: vipl_pingpong --loopback per operation (us)")
        p("%8s | %9s %9s | %9s %9s | %9s %9s" % (
            "size", "send p50", "p99", "wr-imm p50", "p99", "read p50", "p99"))
        for s in sorted(set(lo) | set(lw) | set(lr)):
            p("%8d | %8s%s %9s | %8s%s  %9s | %8s%s %9s" % (
                s, fmt(rtt(lo, s, "p50")), mark("vipl_lo"), fmt(rtt(lo, s, "p99")),
                fmt(rtt(lw, s, "p50")), mark("vipl_lo_wimm"), fmt(rtt(lw, s, "p99")),
                fmt(rtt(lr, s, "p50")), mark("vipl_lo_read"), fmt(rtt(lr, s, "p99"))))
        p("  (send and write-imm: Unreliable round trips, the answer of the same kind; "
          "read: Reliable Delivery,")
        p("  the completion of one RDMA Read, one-sided: the remote application does "
          "nothing)")
        p("")
    bww = by_size(recs.get("vipl_bw_lo_write", []))
    bwr = by_size(recs.get("vipl_bw_lo_read", []))

    def bwv(tab, size, k, prec):
        r = tab.get(size)
        return fmt(r.get(k) if r else None, 9, prec)

    if bww or bwr:
        p("RDMA bandwidth: vipl_bw --loopback per operation (MB/s = 1e6 bytes/s; ops/s)")
        p("%8s | %10s %10s | %10s %10s | %10s %10s" % (
            "size", "send MB/s", "msg/s", "write MB/s", "ops/s", "read MB/s", "ops/s"))
        for s in sorted(set(bw) | set(bww) | set(bwr)):
            p("%8d | %9s%s %10s | %9s%s %10s | %9s%s %10s" % (
                s, bwv(bw, s, "MBps", 1), mark("vipl_bw_lo"), bwv(bw, s, "msg_per_s", 0),
                bwv(bww, s, "MBps", 1), mark("vipl_bw_lo_write"), bwv(bww, s, "msg_per_s", 0),
                bwv(bwr, s, "MBps", 1), mark("vipl_bw_lo_read"), bwv(bwr, s, "msg_per_s", 0)))
        p("  (window 64; send and write: Unreliable, write counts operations completed at the "
          "client; read: Reliable")
        p("  Delivery, at most 16 Reads outstanding per VI in viad)")
        p("")
    rate = [r for r in recs.get("vipl_rate_1t", []) if "msg_per_s" in r]
    if rate:
        p("Issue 18, message rate of one poll lcore: vipl_bw --loopback --one-thread, 64 B, "
          "one application thread")
        p("%12s | %12s %8s | %s" % ("op", "msg/s", "lost%", "goal"))
        for r in rate:
            p("%12s | %11s%s %8s | %s" % (
                r.get("op", "send"), fmt(r["msg_per_s"], 11, 0), mark("vipl_rate_1t"),
                fmt(r.get("lost_pct"), 8, 3), ">= 2 M msg/s (send)"
                if r.get("op", "send") == "send" else ""))
        p("")
    pc = [r for r in recs.get("vipl_poll_cost", []) if "recv_done_empty_ns" in r]
    if pc:
        r = pc[-1]
        p("Issue 18, a poll that finds nothing: poll_cost, ns per call (%d calls each)" % r["calls"])
        p("  VipRecvDone, empty queue %s%s | VipCQDone, empty CQ %s | VipRecvDone, receive "
          "pending %s" % (fmt(r["recv_done_empty_ns"], 0, 2).strip(), mark("vipl_poll_cost"),
                          fmt(r["cq_done_empty_ns"], 0, 2).strip(),
                          fmt(r["recv_done_pending_ns"], 0, 2).strip()))
        p("")
    mem = [r for r in recs.get("vipl_bw_mem", []) if "MBps" in r]
    lmem = [r for r in recs.get("vipl_lo_mem", []) if "rtt_us" in r]
    if mem or lmem:
        p("Issue 12, registered ordinary memory: heap (malloc'd buffers and descriptors, "
          "VipRegisterMem) vs provider memory")
        p("%-38s %8s | %12s %12s | %9s | %s" % ("", "size", "provider", "heap", "heap/prov",
                                               "goal"))

        def r2(r):  # two decimals: the goals are 1.10x, 0.90x and 1.30x
            return "-".rjust(9) if r is None else ("%.2fx" % r).rjust(9)

        def lat(size, mem_kind, wait="poll", cq=False):
            for r in lmem:
                if (r["size"] == size and r.get("mem") == mem_kind and
                        r.get("wait") == wait and bool(r.get("cq")) == cq):
                    return r["rtt_us"]["p50"]
            return None
        for sz in sorted({r["size"] for r in lmem if r.get("wait") == "poll"}):
            a, b = lat(sz, "provider"), lat(sz, "heap")
            p("%-38s %8d | %11s%s %12s | %9s | <= 1.10x" % (
                "vipl_pingpong -l p50 RTT us", sz, fmt(a, 11), mark("vipl_lo_mem"), fmt(b, 12),
                r2(ratio(b, a))))
        for op in sorted({r.get("op", "send") for r in mem}):
            for sz in sorted({r["size"] for r in mem if r.get("op", "send") == op}):
                v = {r.get("mem"): r["MBps"] for r in mem
                     if r.get("op", "send") == op and r["size"] == sz}
                p("%-38s %8d | %11s%s %12s | %9s | >= 0.90x" % (
                    "vipl_bw -l %s MB/s" % op, sz, fmt(v.get("provider"), 11, 1),
                    mark("vipl_bw_mem"), fmt(v.get("heap"), 12, 1),
                    r2(ratio(v.get("heap"), v.get("provider")))))
        poll = lat(64, "heap")
        for wait, cq, name in (("block", False, "--wait block"),
                               ("block", True, "--cq --wait block")):
            w = lat(64, "heap", wait, cq)
            if w is not None:
                p("%-38s %8d | %11s%s %12s | %9s | <= 1.30x" % (
                    "heap, %s vs poll p50 us" % name, 64, fmt(poll, 11), mark("vipl_lo_mem"),
                    fmt(w, 12), r2(ratio(w, poll))))
        p("  (send: Unreliable with --credits, nothing lost; write: Unreliable RDMA Write; the "
          "wait rows compare")
        p("   blocking waits with polling, both over heap memory; the provider column then holds "
          "the poll figure)")
        p("")
    reg = recs.get("vipl_reg", [])
    rb = [r for r in reg if r.get("test") == "regbench"]
    if rb:
        p("Issue 29, registration of heap memory: vipl_regbench p50 us (goals: 16 KiB <= 5, 1 MiB "
          "<= 60,")
        p("  register again <= 2, deregister <= 5; the first registration moves the pages into "
          "the share file)")
        p("%-22s %8s | %9s %10s %11s %10s" % ("", "size", "register", "deregister",
                                                "re-register", "re-dereg"))
        for r in sorted(rb, key=lambda r: (not r.get("table"), r["size"])):
            p("%-22s %8d | %9s%s %10s %11s %10s" % (
                "table" if r.get("table") else "calls (no table)", r["size"],
                fmt(r["register_us"]["p50"], 9), mark("vipl_reg"),
                fmt(r["deregister_us"]["p50"], 10), fmt(r["reregister_us"]["p50"], 11),
                fmt(r["redereg_us"]["p50"], 10)))
        pp = [r for r in reg if "rtt_us" in r]
        for sz in sorted({r["size"] for r in pp}):
            pre = [r["rtt_us"]["p50"] for r in pp if r["size"] == sz and not r.get("reg_each")]
            each = [r["rtt_us"]["p50"] for r in pp if r["size"] == sz and r.get("reg_each")]
            if pre and each:
                p("%-22s %8d | pre-registered %s, --reg-each %s: %sx (goal <= 1.5x)" % (
                    "vipl_pingpong -l p50", sz, fmt(pre[0], 0).strip(), fmt(each[0], 0).strip(),
                    fmt(ratio(each[0], pre[0]), 0).strip()))
        p("")
    if i6:
        p("Issue 6, scale and isolation: each figure against its baseline of this run "
          "(ratio = figure / baseline)")
        p("  %-34s %9s %9s | %9s %9s | %-20s %s" % ("", "p50 us", "p99 us", "p50 ratio",
                                                    "p99 ratio", "goal", "met"))

        def rx(r, width=9):  # two decimals: the goals are 1.10x and 2x
            return "-".rjust(width) if r is None else ("%.2fx" % r).rjust(width)

        def met(r):
            if r.get("met") is None:
                return "-"
            return ("yes" if r["met"] else "no") + (" (oversubscribed*)"
                                                    if r["oversubscribed"] else "")
        for r in i6:
            if "p50_us" not in r:
                continue
            if r["baseline"] is None:
                p("  %-34s %8s%s %9s | %9s %9s |" % (
                    r["figure"], fmt(r["p50_us"]), mark(r["bench"]), fmt(r["p99_us"], 9),
                    "baseline", ""))
            else:
                p("  %-34s %8s%s %9s | %9s %9s | %-20s %s" % (
                    r["figure"], fmt(r["p50_us"]), mark(r["bench"]), fmt(r["p99_us"], 9),
                    rx(r["ratio_p50"]), rx(r["ratio_p99"]), r["goal"],
                    met(r)))
        rates = [r for r in i6 if "msg_per_s" in r]
        if rates:
            p("  %-34s %9s %9s | %9s %9s |" % ("", "msg/s", "lost%", "ratio", ""))
            p("  %-34s %9s" % ("", "(median)"))
            for r in rates:
                p(("  %-34s %8s%s %9s | %9s %9s | %-20s %s" % (
                    r["figure"], fmt(r["msg_per_s"], 8, 0), mark(r["bench"]),
                    fmt(r["lost_pct"], 9), "baseline" if r["baseline"] is None
                    else rx(r["ratio"]), "", r.get("goal", ""),
                    met(r) if r["baseline"] else "")).rstrip())
            for r in rates:
                if len(r.get("runs", [])) > 1:
                    p("  %-34s runs: %s msg/s" % (r["figure"], ", ".join(
                        "%.0f" % v for v in r["runs"])))
        bulk = [x for x in recs.get("vipl_beside_bulk", []) if x.get("role") == "bulk"]
        if bulk:
            x = bulk[-1]
            p("  the 64 KiB stream beside the pingpong: %s MB/s, %s%% lost (%d messages, "
              "%.2f s of sends: its whole run)" % (
                  fmt(x.get("MBps"), 0, 1).strip(), fmt(x.get("lost_pct"), 0, 1).strip(),
                  x.get("iters", 0), x.get("seconds", 0)))
            p("  the pingpong ran from %.2f s to %.2f s after the stream's launch%s" % (
                x.get("lead_s", 0), x.get("lead_s", 0) + x.get("pingpong_s", 0),
                ", within its sends" if x.get("overlap") else
                ": NOT within its sends, the figure is not beside it"))
        p("  (goals of issue 6: idle VIs within 10%, beside a bulk stream within 2x, p50 and p99; "
          "the message")
        p("  rate should grow with the poll lcores, issue 6 gives no figure.  One viad with "
          "limits.max_vi=16400,")
        p("  max_desc_per_queue=64, session_shm_bytes=64M for the RTTs; msg/s: vipl_bw --credits, "
          "a viad each,")
        p("  the median of its runs)")
        p("")
    if i30:
        p("Issue 30, latency at the floor: every goal with its ratio (VIs with line entries, "
          "--inline 64)")
        p("  %-58s %11s | %-34s %11s | %7s %7s | %-8s %s" % (
            "goal", "figure", "against", "", "ratio", "p99", "limit", "met"))
        for r in i30:
            unit = r["unit"]
            prec = 0 if unit in ("msg/s", "lost") else 3

            def v(x):
                return fmt(x, 11, prec)
            p("  %-58s %11s | %-34s %11s | %7s %7s | %-8s %s" % (
                r["goal"][:58], v(r["value"]), (r["baseline"] or "")[:34],
                v(r["baseline_value"]) if r["baseline_value"] is not None else "",
                "-" if r["ratio"] is None else "%.2fx" % r["ratio"],
                "" if r["ratio_p99"] is None else "%.2fx" % r["ratio_p99"], r["limit"],
                "-" if r["met"] is None else ("yes" if r["met"] else "no")))
        p("  (ring x2: two raw ring round trips, as many crossings between the CPUs as one VIA "
          "loopback round trip;")
        p("   msg/s: vipl_bw --loopback --one-thread --inline 64, one application thread posting "
          "in batches; the")
        p("   16-byte-entry row is the default path, for comparison)")
        p("")
    msizes = sorted(set(mc) | set(mcc))
    if msizes:
        p("Single-core memcpy (GB/s = 1e9 bytes copied per second)")
        p("%10s | %8s %8s" % ("size", "hot", "cold"))
        for s in msizes:
            p("%10d | %8s %8s" % (s, fmt(mc[s]["GBps"] if s in mc else None, 8, 1),
                                   fmt(mcc[s]["GBps"] if s in mcc else None, 8, 1)))
        p("")
    print("\n".join(out))

    # --- gnuplot data and script
    def dat(name, rows):
        path = os.path.join(run, "plot-%s.dat" % name)
        with open(path, "w") as f:
            for r in rows:
                f.write(" ".join("%g" % x for x in r) + "\n")
        return path

    series_lat = []
    for b, title, tab in (("vipl_lo", "VIA-DPDK loopback", lo), ("raw_ring", "raw rte_ring", ring),
                          ("vipl_memif", "VIA-DPDK 2 viads memif", vm),
                          ("raw_memif", "raw memif", rm), ("sockperf", "sockperf UDP", sp),
                          ("vipl_lo_wimm", "VIA-DPDK loopback RDMA Write+imm", lw),
                          ("vipl_lo_read", "VIA-DPDK loopback RDMA Read (rd)", lr)):
        rows = [(s, tab[s]["rtt_us"]["p50"], tab[s]["rtt_us"]["p99"]) for s in sorted(tab)
                if tab[s]["rtt_us"].get("p50") and tab[s]["rtt_us"].get("p99")]
        if rows:
            series_lat.append((dat("lat-" + b, rows), title + ("  (oversubscribed)" if over(b)
                                                                else "")))
    series_bw = []
    for b, title, tab, key, k in (("vipl_bw_lo", "VIA-DPDK vipl_bw loopback", bw, "MBps", 1),
                                  ("vipl_bw_lo_write", "VIA-DPDK RDMA Write loopback", bww,
                                   "MBps", 1),
                                  ("vipl_bw_lo_read", "VIA-DPDK RDMA Read (rd) loopback", bwr,
                                   "MBps", 1),
                                  ("iperf3", "iperf3 TCP 127.0.0.1", ip, "MBps", 1),
                                  ("memcpy", "memcpy (hot)", mc, "GBps", 1000)):
        rows = [(s, tab[s][key] * k) for s in sorted(tab) if tab[s].get(key)]
        if rows:
            series_bw.append((dat("bw-" + b, rows), title + ("  (oversubscribed)" if over(b)
                                                              else "")))
    lat6 = [r for r in i6 if r.get("p50_us") and r.get("p99_us")]
    scale_dat = None
    if lat6:
        scale_dat = os.path.join(run, "plot-scale.dat")
        with open(scale_dat, "w") as f:
            for i, r in enumerate(lat6):
                f.write('%d %g %g "%s%s"\n' % (i, r["p50_us"], r["p99_us"],
                                              r["figure"].replace("64 B RTT", "").strip(", "),
                                              "*" if r.get("oversubscribed") else ""))
    if not series_lat and not series_bw and not scale_dat:
        return
    with open(os.path.join(run, "plot.gp"), "w") as f:
        f.write("set terminal %s size 1000,720 noenhanced\n" % meta.get("gnuplot_term", "png"))
        f.write("set logscale xy\nset grid\nset key below\nset format x '%g'\n")
        f.write("set xlabel 'message / frame payload size (bytes)'\n")
        if series_lat:
            f.write("set output '%s-latency.png'\n" % plotbase)
            f.write("set title 'Round-trip latency p50 (error bar to p99), %s'\n" % meta["date"])
            f.write("set ylabel 'RTT (us)'\n")
            xs = [x for d, _ in series_lat for x in (float(l.split()[0]) for l in open(d))]
            f.write("set xrange [%g:%g]\n" % (min(xs) / 1.5, max(xs) * 1.5))
            plots = ["'%s' using 1:2:2:3 with yerrorlines title '%s'" % (d, t)
                     for d, t in series_lat]
            if cl_p50:
                plots.append("%g title 'cache-line ping-pong p50' dashtype 2" % cl_p50)
            f.write("plot " + ", \\\n     ".join(plots) + "\n")
        if series_bw:
            f.write("set output '%s-bandwidth.png'\n" % plotbase)
            f.write("set title 'Bandwidth, %s'\n" % meta["date"])
            f.write("set ylabel 'MB/s (memcpy: GB/s x 1000)'\n")
            xs = [x for d, _ in series_bw for x in (float(l.split()[0]) for l in open(d))]
            f.write("set xrange [%g:%g]\n" % (min(xs) / 1.5, max(xs) * 1.5))
            f.write("plot " + ", \\\n     ".join("'%s' using 1:2 with linespoints title '%s'"
                                                % (d, t) for d, t in series_bw) + "\n")
        if scale_dat:
            f.write("set output '%s-scale.png'\n" % plotbase)
            f.write("set title 'Issue 6: 64 B round trip of one VI pair (p50, bar to p99), "
                    "%s  (* oversubscribed)'\n" % meta["date"])
            f.write("unset logscale x\nset logscale y\nset xlabel ''\nset ylabel 'RTT (us)'\n")
            f.write("set xrange [-0.5:%g]\nset xtics rotate by 0\n" % (len(lat6) - 0.5))
            f.write("plot '%s' using 1:2:2:3:xtic(4) with yerrorbars pointtype 7 "
                    "title 'vipl_pingpong --loopback 64 B'" % scale_dat)
            if len(lat6) > 1 and lat6[0]["baseline"] is None:
                f.write(", %g title '0 idle VIs p50 x 1.1' dashtype 2, "
                        "%g title '0 idle VIs p50 x 2' dashtype 3" % (
                            lat6[0]["p50_us"] * 1.1, lat6[0]["p50_us"] * 2))
            f.write("\n")


def main(argv):
    if len(argv) == 4 and argv[1] == "sockperf":
        sockperf(argv[2], argv[3])
    elif len(argv) == 4 and argv[1] == "iperf3":
        iperf3(argv[2], argv[3])
    elif len(argv) == 6 and argv[1] == "beside":
        beside(*argv[2:6])
    elif len(argv) == 5 and argv[1] == "report":
        report(argv[2], argv[3], argv[4])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
