"""feedbench.py report: the summary block of a run from its latency and idle results, printed and
written with key=value lines and every latency round to --summary."""

import json
import os
import statistics
import sys
import time


# --------------------------------------------------------------------------- report

def fmt(x, digits=2):
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def report(args):
    lat = json.load(open(args.latency)) if args.latency and os.path.exists(args.latency) else None
    idle = json.load(open(args.idle)) if args.idle and os.path.exists(args.idle) else None
    env = os.environ.get
    kv = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "git": env("GIT_REV", "unknown"),
          "host_cpus": os.cpu_count(), "loadavg_before": env("LOAD_BEFORE", "?"), "loadavg_after": env("LOAD_AFTER", "?"),
          "swift": env("SWIFT_VERSION", "?"), "python": sys.version.split()[0], "fd_limit": env("FD_LIMIT", "?"),
          "db_synchronous": env("DB_SYNCHRONOUS", "full (default)")}
    lines = []
    errors = 0
    lines.append("==================== Stockroom change-feed benchmark summary ====================")
    lines.append(f"git {kv['git']}, {kv['host_cpus']} CPUs, load average before/after: {kv['loadavg_before']} / {kv['loadavg_after']}")
    c_sink = bool(lat) and any(r.get("client") == "c" for r in lat["rounds"])
    kv["client"] = "c" if c_sink else "python"
    client = ("latency subscribers in C (sse_sink, epoll), writer and idle phase in " if c_sink else "") + f"Python {kv['python']} asyncio"
    lines.append(f"client: {client}, one process each; fd limit {kv['fd_limit']}; db.synchronous {kv['db_synchronous']}")
    if lat:
        rounds = [r for r in lat["rounds"] if r["rep"] > 0]
        for r in lat["rounds"]:
            if r["rep"] == 0 and (r.get("setup_error") or r.get("problems_total") or r.get("write_errors")):
                errors += 1
                lines.append(f"  WARM-UP ROUND PROBLEMS: {r.get('setup_error') or r.get('problems')[:5]} {r.get('write_errors')}")
        plan = [tuple(int(x) for x in p.split(":")) for p in lat["plan"].split()]
        lines.append("")
        lines.append(f"(1) commit-to-delivery latency, SSE since=now&topics=items; M sequential PUTs {lat['interval_ms']} ms apart;")
        lines.append(f"    percentiles over all (subscriber, write) pairs of a round; median of {lat['reps']} rounds [per round]")
        lines.append("    'after ack' = receive - PUT response read (t1); 'after send' = receive - PUT request sent (t0)")
        for n, m in plan:
            rs = [r for r in rounds if r["n"] == n and r["m"] == m]
            ok = [r for r in rs if "setup_error" not in r]
            for r in rs:
                if "setup_error" in r:
                    errors += 1
                    lines.append(f"    N={n}: SETUP ERROR rep {r['rep']}: {r['setup_error']}")
            if not ok:
                continue

            def med(key, sub):
                vals = [r[key][sub] for r in ok if r[key][sub] is not None]
                return statistics.median(vals) if vals else None

            def per(key, sub):
                return " ".join(fmt(r[key][sub]) for r in ok)

            lines.append(f"  N={n:<5} M={m:<4} after ack : p50 {fmt(med('latency_after_ack', 'p50_ms'))}  p99 {fmt(med('latency_after_ack', 'p99_ms'))}"
                         f"  max {fmt(med('latency_after_ack', 'max_ms'))} ms   [p50 {per('latency_after_ack', 'p50_ms')}] "
                         f"[p99 {per('latency_after_ack', 'p99_ms')}] [max {per('latency_after_ack', 'max_ms')}]")
            lines.append(f"  {'':16} after send: p50 {fmt(med('latency_after_send', 'p50_ms'))}  p99 {fmt(med('latency_after_send', 'p99_ms'))}"
                         f"  max {fmt(med('latency_after_send', 'max_ms'))} ms   [p50 {per('latency_after_send', 'p50_ms')}] "
                         f"[p99 {per('latency_after_send', 'p99_ms')}] [max {per('latency_after_send', 'max_ms')}]")
            pairs = sum(r["pairs_received"] for r in ok)
            expected = sum(r["pairs_expected"] for r in ok)
            miss = sum(r["missing"] for r in ok)
            dup = sum(r["duplicates"] for r in ok)
            order = sum(r["out_of_order"] for r in ok)
            unexp = sum(r["unexpected"] for r in ok)
            probs = sum(r["problems_total"] for r in ok)
            werr = sum(len(r["write_errors"]) for r in ok)
            early = sum(r["delivered_before_ack"] for r in ok)
            errors += werr + probs
            lines.append(f"  {'':16} PUT round trip p50 {fmt(statistics.median(r['put_round_trip']['p50_ms'] for r in ok))} ms"
                         f" (per round {' '.join(fmt(r['put_round_trip']['p50_ms']) for r in ok)}); writes achieved"
                         f" {' '.join(fmt(r['writes_per_s'], 1) for r in ok)} /s (target {1000 / lat['interval_ms']:.0f}/s)")
            lines.append(f"  {'':16} delivered before the PUT response was read: {early} of {pairs} pairs;"
                         f" server CPU {' '.join(fmt(r['server_cpu_pct'], 0) for r in ok)} %, client CPU {' '.join(fmt(r['client_cpu_pct'], 0) for r in ok)} %,"
                         f" client loop lag p99 {' '.join(fmt(r['client_loop_lag']['p99_ms'], 1) for r in ok)} ms")
            lines.append(f"  {'':16} deliveries {pairs}/{expected}; missing {miss}, duplicated {dup}, out of order {order},"
                         f" unexpected {unexp}, write errors {werr}; problem reports {probs}")
            kv[f"lat_n{n}_m{m}_after_ack_p50_ms"] = med("latency_after_ack", "p50_ms")
            kv[f"lat_n{n}_m{m}_after_ack_p99_ms"] = med("latency_after_ack", "p99_ms")
            kv[f"lat_n{n}_m{m}_after_ack_max_ms"] = med("latency_after_ack", "max_ms")
            kv[f"lat_n{n}_m{m}_after_send_p50_ms"] = med("latency_after_send", "p50_ms")
            kv[f"lat_n{n}_m{m}_after_send_p99_ms"] = med("latency_after_send", "p99_ms")
            kv[f"lat_n{n}_m{m}_after_send_max_ms"] = med("latency_after_send", "max_ms")
            kv[f"lat_n{n}_m{m}_after_ack_rounds_p50_p99_max"] = "; ".join(
                f"{r['latency_after_ack']['p50_ms']} {r['latency_after_ack']['p99_ms']} {r['latency_after_ack']['max_ms']}" for r in ok)
            kv[f"lat_n{n}_m{m}_deliveries"] = f"{pairs}/{expected}"
            kv[f"lat_n{n}_m{m}_put_rtt_p50_ms_rounds"] = " ".join(str(r["put_round_trip"]["p50_ms"]) for r in ok)
            kv[f"lat_n{n}_m{m}_writes_per_s_rounds"] = " ".join(str(r["writes_per_s"]) for r in ok)
            kv[f"lat_n{n}_m{m}_missing_dup_order_unexpected"] = f"{miss} {dup} {order} {unexp}"
            for r in ok:
                for p in r["problems"][:5]:
                    lines.append(f"  {'':16} PROBLEM rep {r['rep']}: {p}")
    if idle:
        lines.append("")
        lines.append("(2) idle SSE subscribers: server VmRSS after each step, and one PUT that must reach all of them")
        base = idle["steps"][0]
        lines.append(f"  {0:>6} connections  VmRSS {base['VmRSS'] / 1024:8.1f} MiB   threads {base['Threads']}  fds {base['fds']}")
        kv["idle_rss_kib_0"] = base["VmRSS"]
        for s in idle["steps"][1:]:
            f = s["fanout_after_ack"]
            missed = s["connections"] - s["reached"]
            errors += missed + s["lost"] + (s["write_status"] != 200)
            lines.append(f"  {s['connections']:>6} connections  VmRSS {s['VmRSS'] / 1024:8.1f} MiB   +{fmt(s['kib_per_conn_since_prev'])} KiB/conn"
                         f" since previous step ({fmt(s['kib_per_conn_since_0'])} since 0)  threads {s['Threads']}  fds {s['fds']}"
                         f"  opened in {s['open_s']} s")
            lines.append(f"  {'':20} write reached {s['reached']}/{s['connections']} (server gauge {fmt(s['gauge'], 0)}; lost {s['lost']});"
                         f" fan-out after ack p50 {f['p50_ms']} p99 {f['p99_ms']} max {f['max_ms']} ms")
            kv[f"idle_rss_kib_{s['connections']}"] = s["VmRSS"]
            kv[f"idle_kib_per_conn_{s['connections']}_since_prev"] = s["kib_per_conn_since_prev"]
            kv[f"idle_fanout_{s['connections']}_p50_p99_max_ms"] = f"{f['p50_ms']} {f['p99_ms']} {f['max_ms']}"
            kv[f"idle_reached_{s['connections']}"] = f"{s['reached']}/{s['connections']}"
        last = idle["steps"][-1]
        if len(idle["steps"]) > 1:
            slope = (last["VmRSS"] - base["VmRSS"]) / last["connections"]
            kv["idle_kib_per_conn_overall"] = round(slope, 2)
            lines.append(f"  overall: {slope:.2f} KiB per idle connection (0 -> {last['connections']})")
        a = idle["after_close"]
        lines.append(f"  after closing all {idle['closed']}: server subscriber gauge {fmt(idle['gauge_after_close'], 0)} after"
                     f" {idle['gauge_drain_s']} s; VmRSS {a['VmRSS'] / 1024:.1f} MiB, threads {a['Threads']}, fds {a['fds']}")
        kv["idle_rss_kib_after_close"] = a["VmRSS"]
        ro = idle.get("reopen")
        if ro:
            missed = ro["connections"] - ro["reached"]
            errors += missed + ro["lost"] + (ro["write_status"] != 200) + (1 if ro["error"] else 0)
            lines.append(f"  reopened {ro['connections']} after that: VmRSS {ro['VmRSS'] / 1024:.1f} MiB (first time {last['VmRSS'] / 1024:.1f} MiB):"
                         f" {'memory reused, not leaked' if ro['VmRSS'] - last['VmRSS'] < 0.25 * (last['VmRSS'] - base['VmRSS']) else 'GREW AGAIN: leak?'};"
                         f" write reached {ro['reached']}/{ro['connections']}; closed again: VmRSS {ro['VmRSS_after_close'] / 1024:.1f} MiB"
                         + (f"; error {ro['error']}" if ro["error"] else ""))
            kv["idle_reopen_rss_kib"] = ro["VmRSS"]
            kv["idle_reopen_reached"] = f"{ro['reached']}/{ro['connections']}"
        kv["idle_gauge_drain_s"] = idle["gauge_drain_s"]
        if idle["stop_reason"]:
            lines.append(f"  STOPPED EARLY: {idle['stop_reason']}")
            kv["idle_stop_reason"] = idle["stop_reason"]
    valid = "yes" if errors == 0 else "no"
    kv["errors_total"] = errors
    kv["valid"] = valid
    kv["command"] = args.command
    lines.append("")
    lines.append(f"missed / duplicated / out-of-order deliveries and errors: {errors}  -> valid: {valid}")
    lines.append("Details (every round): Benchmarks/feed/last-run.txt")
    lines.append(f"Reproduce: {args.command}")
    lines.append("=" * 82)
    text = "\n".join(lines)
    print(text)
    with open(args.summary, "w") as f:
        f.write(text + "\n\n# machine-readable (key=value)\n")
        for k, v in kv.items():
            f.write(f"{k}={v}\n")
        if lat:
            f.write("\n# every latency round (rep 0 is the unmeasured warm-up)\n")
            for r in lat["rounds"]:
                f.write(json.dumps({k: v for k, v in r.items() if k != "problems"}, separators=(",", ":")) + "\n")
    return 0 if valid == "yes" else 1
