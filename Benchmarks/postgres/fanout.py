#!/usr/bin/env python3
"""Write on one daemon, its SSE event on N subscribers spread over every daemon (Benchmarks/postgres/run.sh).

    fanout.py --ports A B C --token T --sink PATH [--subscribers 1000] [--writes 100] [--interval-ms 20] [--write-port P]

Opens SUBSCRIBERS SSE streams (`/v1/changes/stream?since=now&topics=items`), split evenly over the
daemons, with Benchmarks/feed/sse_sink.c (epoll, one process per daemon, every read stamped with
CLOCK_MONOTONIC), then sends WRITES sequential PUTs of one item to the first daemon, INTERVAL_MS
apart. Every stream must receive every write exactly once and in order (else exit 1). Prints the
latency from sending each write to each subscriber's receipt of its event: for the subscribers on
the other daemons, and for those on the writing one; then, per daemon, over the writes: the first
and the last of its streams' events after the write was sent, and the spread between them (p50,
p90). `--write-port` writes to another daemon than the first (one with no subscribers, say).
Uses feedbench.py's decoding and its writer.
"""
import argparse
import asyncio
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "feed"))
import feedbench  # noqa: E402


async def main(args):
    ports = args.ports
    write_port = args.write_port or ports[0]
    status, body = await feedbench.http_request(
        write_port, "POST", "/v1/items", args.token,
        json.dumps({"name": "fan-out", "color": None, "status": {"inStock": {"quantity": 1}}}))
    if status != 201:
        raise SystemExit(f"POST /v1/items answered {status}: {body[:200]!r}")
    item = json.loads(body)
    names = [f"fo{os.getpid()} w{i:04d}" for i in range(args.writes)]
    marker = (names[-1] + '"').encode()
    shares = [args.subscribers // len(ports) + (1 if i < args.subscribers % len(ports) else 0) for i in range(len(ports))]
    workdir = tempfile.mkdtemp(prefix="stockroom-fanout-")
    sinks = []
    for port, share in zip(ports, shares):
        path = os.path.join(workdir, f"sink-{port}.bin")
        proc = await asyncio.create_subprocess_exec(
            args.sink, str(port), args.token, str(share), marker.decode(), path, str(args.timeout),
            stdout=asyncio.subprocess.PIPE)
        line = await asyncio.wait_for(proc.stdout.readline(), 120)
        if line.strip() != b"READY":
            raise SystemExit(f"sse_sink on :{port} did not get its {share} streams open (said {line!r})")
        sinks.append((port, share, path, proc))
    await asyncio.sleep(0.5)

    writer = feedbench.ItemWriter(write_port, args.token, item)
    await writer.connect()
    writes = []
    next_t0 = feedbench.now_ns()
    for i, name in enumerate(names):
        delay = next_t0 - feedbench.now_ns()
        if delay > 0:
            await asyncio.sleep(delay / 1e9)
        t0, t1, status, body = await writer.put(name, 1000 + i)
        if status != 200:
            raise SystemExit(f"write {i} answered {status}: {body[:200]!r}")
        writes.append((t0, t1))
        next_t0 = t0 + int(args.interval_ms * 1e6)
    writer.close()

    index = {name: i for i, name in enumerate(names)}
    remote, local, problems = [], [], []
    # Each (daemon's port, write) -> its streams' latencies.
    by_write = {}
    for port, share, path, proc in sinks:
        line = await asyncio.wait_for(proc.stdout.readline(), args.timeout + 30)
        await proc.wait()
        if not line.startswith(b"DONE") or int(line.split()[1]) < share:
            problems.append(f":{port}: only {line.split()[1:2]} of {share} streams saw the last write ({line!r})")
        group = feedbench.SinkGroup(share)
        group.load(path, marker)
        os.remove(path)
        for si, sub in enumerate(group.subs):
            stream = feedbench.SSEStream()
            for ts, data in sub.pieces:
                stream.feed(ts, data)
            got = []
            for ts, event, _, data, _ in stream.events:
                if event != "change":
                    continue
                i = index.get((json.loads(data).get("value") or {}).get("name"))
                if i is not None:
                    got.append((i, ts))
            if [i for i, _ in got] != list(range(len(names))):
                problems.append(f":{port} stream {si}: got {len(got)} of {len(names)} writes, or out of order")
            for i, ts in got:
                (local if port == write_port else remote).append(ts - writes[i][0])
                by_write.setdefault((port, i), []).append(ts - writes[i][0])
    os.rmdir(workdir)
    for p in problems[:10]:
        print("PROBLEM", p, file=sys.stderr)
    r, l = feedbench.distribution(remote), feedbench.distribution(local)
    acks = feedbench.distribution([t1 - t0 for t0, t1 in writes])
    print(f"fan-out: {args.subscribers} subscribers over {len(ports)} daemons, {len(names)} writes on :{write_port} "
          f"{args.interval_ms} ms apart: write to event on the other daemons p50 {r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms "
          f"({r['n']} deliveries); on the writing daemon p50 {l['p50_ms']:.2f}, p99 {l['p99_ms']:.2f} ms; "
          f"write round trip p50 {acks['p50_ms']:.2f}, p99 {acks['p99_ms']:.2f} ms")
    def quantile_ms(values, q):
        values = sorted(values)
        return values[min(len(values) - 1, int(q * len(values)))] / 1e6

    for port in ports:
        per_write = [by_write[(port, i)] for i in range(len(names)) if (port, i) in by_write]
        if not per_write:
            continue
        firsts, lasts = [min(w) for w in per_write], [max(w) for w in per_write]
        spreads = [max(w) - min(w) for w in per_write]
        print(f"  :{port} first event p50 {quantile_ms(firsts, .5):.2f} p90 {quantile_ms(firsts, .9):.2f} ms | "
              f"last p50 {quantile_ms(lasts, .5):.2f} p90 {quantile_ms(lasts, .9):.2f} | "
              f"first to last p50 {quantile_ms(spreads, .5):.2f} p90 {quantile_ms(spreads, .9):.2f}")
    if problems:
        raise SystemExit(1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ports", type=int, nargs="+", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--sink", required=True, help="the built Benchmarks/feed/sse_sink.c")
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--writes", type=int, default=100)
    parser.add_argument("--interval-ms", type=float, default=20)
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--write-port", type=int, default=0, help="the daemon to write to (default: the first of --ports)")
    asyncio.run(main(parser.parse_args()))
