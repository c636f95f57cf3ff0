"""feedbench.py idle: idle SSE subscribers opened in steps, the server's memory at each step, and
one PUT that must reach every open subscriber; then closed, and (--reopen) opened again."""

import asyncio
import random
import resource
import time

from feedbench_http import ItemWriter, first_item, sse_gauge, wait_gauge
from feedbench_probes import distribution, log, read_status, server_alive
from feedbench_subscribers import Group


# --------------------------------------------------------------------------- idle

async def run_idle(args):
    item = await first_item(args.port, args.token)
    writer = ItemWriter(args.port, args.token, item)
    await writer.connect()
    nonce = f"{random.randrange(16 ** 6):x}"
    await writer.put(f"fb{nonce} idle warmup", 1)
    await asyncio.sleep(args.settle)
    base = read_status(args.pid)
    steps = [{"connections": 0, **base}]
    log(f"idle: 0 connections, VmRSS {base['VmRSS']} KiB")
    group = Group(args.port, args.token, store=False)
    stop_reason = None
    for target in [int(x) for x in args.steps.split()]:
        need = target - len(group.subs)
        t = time.monotonic()
        opened, err, nerr = await group.open_many(need, timeout=args.open_timeout)
        open_s = time.monotonic() - t
        if err:
            stop_reason = (f"at step {target}: {nerr} of {need} new connections failed (first: {err}); "
                           f"{len(group.subs)} connected")
            log(f"idle: STOP {stop_reason}")
            break
        await asyncio.sleep(args.settle)
        status = read_status(args.pid)
        gauge = await sse_gauge(args.port)
        # One write must reach every open subscriber.
        name = f"fb{nonce} idle {target}"
        group.set_marker((name + '"').encode())
        t0, t1, code, body = await writer.put(name, target)
        try:
            await asyncio.wait_for(group.all_marked.wait(), args.delivery_timeout)
        except asyncio.TimeoutError:
            pass
        reached = [s.marker_ts for s in group.subs if s.marker_ts is not None]
        lost = sum(1 for s in group.subs if s.lost is not None)
        step = {"connections": len(group.subs), "open_s": round(open_s, 2), "gauge": gauge, **status,
                "write_status": code, "reached": len(reached), "lost": lost,
                "fanout_after_ack": distribution([ts - t1 for ts in reached]),
                "failures": [m for _, m in group.failures][:5]}
        if step["connections"] > 0:
            prev = steps[-1]
            step["kib_per_conn_since_prev"] = round((status["VmRSS"] - prev["VmRSS"]) / (step["connections"] - prev["connections"]), 2)
            step["kib_per_conn_since_0"] = round((status["VmRSS"] - base["VmRSS"]) / step["connections"], 2)
        steps.append(step)
        f = step["fanout_after_ack"]
        log(f"idle: {step['connections']} connections (opened in {step['open_s']} s; gauge {gauge}): VmRSS {status['VmRSS']} KiB "
            f"(+{step.get('kib_per_conn_since_prev')} KiB/conn since the previous step), threads {status['Threads']}, "
            f"fds {status['fds']}; write {code} reached {len(reached)}/{len(group.subs)} (lost {lost}); "
            f"fan-out after ack p50 {f['p50_ms']} p99 {f['p99_ms']} max {f['max_ms']} ms")
        if len(reached) < len(group.subs) - lost or code != 200:
            stop_reason = f"at step {target}: the write reached only {len(reached)} of {len(group.subs)} subscribers (status {code})"
            log(f"idle: STOP {stop_reason}")
            break
        if not server_alive(args.pid):
            stop_reason = "the server exited"
            break
    heartbeats = sum(s.heartbeats for s in group.subs)
    total = len(group.subs)
    t = time.monotonic()
    group.close_all()
    # Leftover streams are found at their next heartbeat or change.
    waited, left = await wait_gauge(args.port, 0, args.gauge_timeout)
    await asyncio.sleep(args.settle)
    after = read_status(args.pid)
    log(f"idle: closed {total}; server gauge back to {left} after {waited:.1f} s; VmRSS {after['VmRSS']} KiB")
    # Leak or allocator retention? Open as many again: a leak grows VmRSS by as much again,
    # memory that the allocator kept for reuse does not.
    reopen = None
    if total and args.reopen:
        again = Group(args.port, args.token, store=False)
        opened, err, nerr = await again.open_many(total, timeout=args.open_timeout)
        await asyncio.sleep(args.settle)
        status = read_status(args.pid)
        name = f"fb{nonce} idle reopen"
        again.set_marker((name + '"').encode())
        t0, t1, code, body = await writer.put(name, 1)
        try:
            await asyncio.wait_for(again.all_marked.wait(), args.delivery_timeout)
        except asyncio.TimeoutError:
            pass
        reopen = {"connections": len(again.subs), "error": err, **status, "write_status": code,
                  "reached": again.n_marked, "lost": sum(1 for s in again.subs if s.lost is not None)}
        again.close_all()
        w2, left2 = await wait_gauge(args.port, 0, args.gauge_timeout)
        reopen["gauge_after_close"] = left2
        reopen["VmRSS_after_close"] = read_status(args.pid)["VmRSS"]
        log(f"idle: reopened {len(again.subs)}: VmRSS {status['VmRSS']} KiB (was {steps[-1]['VmRSS']} KiB with the first "
            f"{total}); write reached {again.n_marked}/{len(again.subs)}; closed, VmRSS {reopen['VmRSS_after_close']} KiB")
    writer.close()
    return {"steps": steps, "stop_reason": stop_reason, "closed": total, "gauge_drain_s": round(waited, 2),
            "gauge_after_close": left, "after_close": after, "heartbeats_seen": heartbeats, "reopen": reopen,
            "client_fd_limit": resource.getrlimit(resource.RLIMIT_NOFILE)[0]}
