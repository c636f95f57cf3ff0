"""feedbench.py latency: rounds of N subscribers and M sequential PUTs; every (subscriber, write)
pair's delivery time, and a check that each subscriber got every write once, in order."""

import asyncio
import json
import os
import random
import time

from feedbench_http import ItemWriter, SSEStream, first_item, sse_gauge, wait_gauge
from feedbench_probes import LoopLag, client_cpu_s, distribution, log, now_ns, server_alive, server_cpu_s
from feedbench_subscribers import Group, SinkGroup, open_sink


async def latency_round(args, writer, rep, n, m, nonce):
    label = f"rep {rep} N={n} M={m}"
    names = [f"fb{nonce} r{rep} n{n} w{i:04d}" for i in range(m)]
    marker = (names[-1] + '"').encode()
    sink = None
    if args.sink:
        sink_path = f"{args.out}.sink-{rep}-{n}.bin"
        try:
            sink = await open_sink(args, n, marker, sink_path)
        except (ConnectionError, asyncio.TimeoutError) as e:
            return {"rep": rep, "n": n, "m": m, "setup_error": f"sse_sink: {e}"}
        group = SinkGroup(n)
        opened = n
    else:
        group = Group(args.port, args.token, store=True)
        opened, err, nerr = await group.open_many(n)
        if err:
            group.close_all()
            return {"rep": rep, "n": n, "m": m, "setup_error": f"{nerr} subscribers failed to open; first: {err}"}
    await asyncio.sleep(0.3)
    gauge = await sse_gauge(args.port)

    if sink is None:
        group.set_marker(marker)
    writes = []  # (t0, t1, status)
    write_errors = []
    lag = LoopLag()
    lag.start()
    sink_cpu_at_exit = None  # the sink reports its own CPU time as it exits (DONE line)
    def client_cpu():
        if sink is None:
            return client_cpu_s()
        return client_cpu_s() + (sink_cpu_at_exit if sink_cpu_at_exit is not None else server_cpu_s(sink.pid))
    s_cpu0, c_cpu0, wall0 = server_cpu_s(args.pid), client_cpu(), time.monotonic()
    interval_ns = int(args.interval_ms * 1e6)
    next_t0 = now_ns()
    for i, name in enumerate(names):
        delay = next_t0 - now_ns()
        if delay > 0:
            await asyncio.sleep(delay / 1e9)
        t0, t1, status, body = await writer.put(name, 1000 + i)
        next_t0 = t0 + interval_ns
        writes.append((t0, t1, status))
        if status != 200:
            write_errors.append(f"write {i}: status {status} {body[:200]!r}")
    if sink is not None:
        # sse_sink ends once every stream has seen the last write (or at its own timeout).
        line = await asyncio.wait_for(sink.stdout.readline(), args.delivery_timeout + 30)
        timed_out = not line.startswith(b"DONE") or int(line.split()[1]) < n
        if line.startswith(b"DONE") and len(line.split()) > 2:
            sink_cpu_at_exit = float(line.split()[2])
    else:
        try:
            await asyncio.wait_for(group.all_marked.wait(), args.delivery_timeout)
            timed_out = False
        except asyncio.TimeoutError:
            timed_out = True
    last_t1 = writes[-1][1]
    s_cpu1, c_cpu1, wall1 = server_cpu_s(args.pid), client_cpu(), time.monotonic()
    loop_lag = lag.stop()
    if sink is not None:
        if await sink.wait() != 0:
            group.failures.append((None, f"sse_sink exited with status {sink.returncode}"))
        group.load(sink_path, marker)
        os.remove(sink_path)
    else:
        await asyncio.sleep(0.2)  # anything that would arrive late (a duplicate, say) is still captured
    group.close_all()

    # Decode every subscriber's stored stream and match its events to the writes.
    index = {name: i for i, name in enumerate(names)}
    after_ack, after_send = [], []
    problems = []
    missing_total = dup_total = order_total = unexpected_total = 0
    early = 0
    for si, sub in enumerate(group.subs):
        stream = SSEStream()
        for ts, data in sub.pieces:
            stream.feed(ts, data)
        seen = []
        last_seq = None
        for ts, event, eid, data, comments in stream.events:
            if event != "change":
                if event == "message" and data is None:
                    continue  # a comment-only block (: open, : heartbeat)
                problems.append(f"sub {si}: unexpected event {event!r} data={data!r:.200}")
                unexpected_total += 1
                continue
            change = json.loads(data)
            seq = change["seq"]
            if eid != change.get("cursor"):
                problems.append(f"sub {si}: id {eid!r} != cursor {change.get('cursor')!r} (seq {seq})")
            if last_seq is not None and seq <= last_seq:
                problems.append(f"sub {si}: seq {seq} after seq {last_seq}")
            if last_seq is not None and seq != last_seq + 1:
                problems.append(f"sub {si}: seq gap {last_seq} -> {seq}")
            last_seq = seq
            name = (change.get("value") or {}).get("name")
            i = index.get(name)
            if i is None:
                problems.append(f"sub {si}: change seq {seq} with unexpected name {name!r}")
                unexpected_total += 1
                continue
            seen.append((i, ts))
        got = [i for i, _ in seen]
        if got != list(range(m)):
            counts = {}
            for i in got:
                counts[i] = counts.get(i, 0) + 1
            missing = [i for i in range(m) if i not in counts]
            dups = sorted(i for i, c in counts.items() if c > 1)
            out_of_order = sum(1 for a, b in zip(got, got[1:]) if b < a)
            missing_total += len(missing)
            dup_total += sum(counts[i] - 1 for i in dups)
            order_total += out_of_order
            problems.append(f"sub {si}: got {len(got)}/{m} writes; missing {missing[:20]}{'…' if len(missing) > 20 else ''}"
                            f" duplicated {dups[:20]} out-of-order steps {out_of_order}; server closed: {sub.lost}")
        for i, ts in seen:
            t0, t1, _ = writes[i]
            after_ack.append(ts - t1)
            after_send.append(ts - t0)
            if ts < t1:
                early += 1
        if stream.status != 200:
            problems.append(f"sub {si}: HTTP status {stream.status}")
    for idx, msg in group.failures:
        problems.append(f"sub {idx}: connection failure: {msg}")

    acks = sorted(t1 - t0 for t0, t1, _ in writes)
    result = {
        "rep": rep, "n": n, "m": m, "subscribers_open": opened, "gauge_before_writes": gauge,
        "pairs_expected": n * m, "pairs_received": len(after_ack),
        "missing": missing_total, "duplicates": dup_total, "out_of_order": order_total, "unexpected": unexpected_total,
        "delivery_timed_out": timed_out, "write_errors": write_errors, "problems": problems[:50],
        "problems_total": len(problems),
        "latency_after_ack": distribution(after_ack), "latency_after_send": distribution(after_send),
        "delivered_before_ack": early,
        "put_round_trip": distribution(acks),
        "writes_span_s": round((writes[-1][0] - writes[0][0]) / 1e9, 3),
        "writes_per_s": round((m - 1) / max(1e-9, (writes[-1][0] - writes[0][0]) / 1e9), 1),
        "last_delivery_after_last_ack_ms": round((max(s.marker_ts or 0 for s in group.subs) - last_t1) / 1e6, 3),
        "server_cpu_pct": round(100 * (s_cpu1 - s_cpu0) / (wall1 - wall0), 1),
        "client_cpu_pct": round(100 * (c_cpu1 - c_cpu0) / (wall1 - wall0), 1),
        "client_loop_lag": {k: round(v, 3) for k, v in loop_lag.items()},
        "client": "c" if sink is not None else "python",
    }
    la, ls = result["latency_after_ack"], result["latency_after_send"]
    log(f"{label}: after ack p50 {la['p50_ms']} p99 {la['p99_ms']} max {la['max_ms']} ms; after send p50 {ls['p50_ms']} "
        f"p99 {ls['p99_ms']} max {ls['max_ms']} ms; pairs {len(after_ack)}/{n * m}; missing {missing_total} dup {dup_total} "
        f"order {order_total}; server cpu {result['server_cpu_pct']}% client cpu {result['client_cpu_pct']}% "
        f"client loop lag p99 {result['client_loop_lag']['p99_ms']} ms")
    for p in problems[:10]:
        log(f"  PROBLEM {p}")
    # The server notices a closed idle stream at its next write (a change or the heartbeat):
    # wait for the gauge so that the next round does not fan out to this round's leftovers.
    waited, left = await wait_gauge(args.port, 0, args.gauge_timeout)
    result["gauge_drain_s"] = round(waited, 2)
    result["gauge_after_drain"] = left
    return result


async def run_latency(args):
    item = await first_item(args.port, args.token)
    writer = ItemWriter(args.port, args.token, item)
    await writer.connect()
    nonce = random.randrange(16 ** 6)
    # Warm-up: a few writes and a short round, not measured.
    for i in range(5):
        await writer.put(f"fb{nonce:x} warmup {i}", 1)
    await latency_round(args, writer, 0, 5, 20, f"{nonce:x}w")
    plan = [tuple(int(x) for x in p.split(":")) for p in args.plan.split()]
    rounds = []
    for rep in range(1, args.reps + 1):
        for n, m in plan:
            rounds.append(await latency_round(args, writer, rep, n, m, f"{nonce:x}"))
            if not server_alive(args.pid):
                raise SystemExit("the server is no longer running")
    writer.close()
    return {"plan": args.plan, "reps": args.reps, "interval_ms": args.interval_ms, "item_id": item["id"], "rounds": rounds}
