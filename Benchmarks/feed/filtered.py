#!/usr/bin/env python3
"""Filtered feeds (issue #42): what filters cost the fan-out. Started by Benchmarks/feed/filtered.sh,
which builds and starts the server; Python 3.9+, stdlib only (feedbench's subscribers and writer).

  filtered.py latency --port P --token T --pid PID --out latency.json
      N SSE streams, M PUTs INTERVAL_MS apart, twice: (a) N unfiltered streams (every write
      reaches every stream) and (b) N streams each with its own filter, half equality
      (`name = "B<k%50>"`) and half range (`quantity >= 10*(k%50) and quantity <= 10*(k%50)+5`),
      over 50 items B0..B49 of quantity 10*j; write w goes to item w%50 and reaches the N/50
      streams of that item. For every (stream, write) pair that must meet: receive - t1 (after
      the PUT's answer) and receive - t0 (after its request). A stream that misses its write, gets
      one twice or gets one it does not match makes the run invalid.

  filtered.py cpu --port P --token T --pid PID --out cpu.json
      The server's CPU per write (utime + stime from /proc) with N open streams whose filters the
      written item does not match, for each N of --steps: equality and range filters (the
      index's), then filters the index cannot hold (`name ^= "…"`, checked for every write).
"""
import argparse
import asyncio
import json
import resource
import sys
import time
import urllib.parse

from feedbench_http import ItemWriter, http_request
from feedbench_probes import distribution, log, server_cpu_s
from feedbench_subscribers import Group

ITEMS = 50


class FilteredGroup(Group):
    """Streams whose request is chosen per stream: `requests(index)` gives its query string."""

    def __init__(self, port, token, query_for, store=True):
        super().__init__(port, token, store)
        self.token = token
        self.query_for = query_for

    async def open_one(self, timeout):
        # Group.open_one makes its Subscriber from self.request before its first await.
        query = self.query_for(self.created)
        self.request = (f"GET /v1/changes/stream?since=now&topics=items{query} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
                        f"Authorization: Bearer {self.token}\r\nAccept: text/event-stream\r\n\r\n").encode()
        return await super().open_one(timeout)


def filter_query(text):
    return "&filter=" + urllib.parse.quote(text, safe="")


def item_filter(k):
    j = k % ITEMS
    return f'name = "B{j}"' if k % 2 == 0 else f"quantity >= {10 * j} and quantity <= {10 * j + 5}"


async def create_items(port, token):
    items = []
    for j in range(ITEMS):
        body = json.dumps({"name": f"B{j}", "color": None, "status": {"inStock": {"quantity": 10 * j}}})
        status, answer = await http_request(port, "POST", "/v1/items", token, body)
        if status != 201:
            raise SystemExit(f"POST /v1/items answered {status}: {answer[:200]!r}")
        items.append(json.loads(answer))
    return items


def received(sub, marker):
    """The timestamps at which `marker` arrived on `sub` (each piece counted once)."""
    found, tail = [], b""
    for ts, data in sub.pieces:
        window = tail + data
        found += [ts] * (window.count(marker) - tail.count(marker))
        tail = window[-64:]
    return found


async def latency_round(args, items, filtered):
    group = FilteredGroup(args.port, args.token, (lambda k: filter_query(item_filter(k))) if filtered else (lambda k: ""))
    opened, error, _ = await group.open_many(args.streams)
    if error:
        raise SystemExit(f"opening {args.streams} streams: {error}")
    writers = [ItemWriter(args.port, args.token, item) for item in items]
    writes = []
    cpu0 = server_cpu_s(args.pid)
    start = time.perf_counter()
    for w in range(args.writes):
        j = w % ITEMS
        t0, t1, status, _ = await put_colored(writers[j], j, f"m{filtered:d}x{w}")
        if status != 200:
            raise SystemExit(f"PUT answered {status}")
        writes.append((w, j, t0, t1))
        delay = start + (w + 1) * args.interval_ms / 1000 - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
    await asyncio.sleep(args.settle)
    cpu = server_cpu_s(args.pid) - cpu0
    after_ack, after_send, errors = [], [], []
    for index, sub in enumerate(group.subs):
        for w, j, t0, t1 in writes:
            marker = f'"m{filtered:d}x{w}"'.encode()
            got = received(sub, marker)
            expected = (not filtered) or index % ITEMS == j
            if expected and len(got) != 1:
                errors.append(f"stream {index} got write {w} {len(got)} times")
            elif not expected and got:
                errors.append(f"stream {index} got write {w}, which its filter does not match")
            elif got:
                after_ack.append(got[0] - t1)
                after_send.append(got[0] - t0)
    group.close_all()
    for writer in writers:
        writer.close()
    return {"filtered": filtered, "streams": opened, "writes": args.writes, "pairs": len(after_ack),
            "after_ack": distribution(after_ack), "after_send": distribution(after_send),
            "server_cpu_s": cpu, "errors": errors[:20], "error_count": len(errors)}


async def put_colored(writer, j, marker):
    """PUT item j unchanged but for its colour's name, the marker the streams are searched for."""
    draft = {"name": f"B{j}", "color": {"name": marker, "red": 0, "green": 0, "blue": 0}, "status": {"inStock": {"quantity": 10 * j}}}
    return await writer.put_draft(draft)


async def run_latency(args):
    items = await create_items(args.port, args.token)
    rounds = []
    for rep in range(args.reps):
        for filtered in (False, True):
            log(f"latency round {rep + 1}/{args.reps}: {args.streams} {'filtered' if filtered else 'unfiltered'} streams, {args.writes} writes")
            rounds.append(await latency_round(args, items, filtered))
            log(f"  after ack p99 {rounds[-1]['after_ack']['p99_ms']:.2f} ms, server CPU {rounds[-1]['server_cpu_s']:.2f} s, "
                f"{rounds[-1]['error_count']} errors")
    return {"rounds": rounds}


async def cpu_step(args, item, n, query_for, label):
    group = FilteredGroup(args.port, args.token, query_for, store=False)
    opened, error, _ = await group.open_many(n)
    if error:
        raise SystemExit(f"opening {n} streams: {error}")
    await asyncio.sleep(args.settle)
    writer = ItemWriter(args.port, args.token, item)
    cpu0 = server_cpu_s(args.pid)
    for w in range(args.writes):
        _, _, status, _ = await writer.put(f"Written {w}", 7)
        if status != 200:
            raise SystemExit(f"PUT answered {status}")
    cpu = server_cpu_s(args.pid) - cpu0
    writer.close()
    group.close_all()
    await asyncio.sleep(args.settle)
    per_write_us = cpu / args.writes * 1e6
    log(f"cpu: {opened} streams ({label}): {per_write_us:.0f} us of server CPU per write")
    return {"streams": opened, "filters": label, "writes": args.writes, "server_cpu_s": cpu, "per_write_us": per_write_us}


async def run_cpu(args):
    body = json.dumps({"name": "Written", "color": None, "status": {"inStock": {"quantity": 7}}})
    status, answer = await http_request(args.port, "POST", "/v1/items", args.token, body)
    if status != 201:
        raise SystemExit(f"POST /v1/items answered {status}")
    item = json.loads(answer)
    indexed = lambda k: filter_query(f'name = "never {k}"' if k % 2 == 0 else f"quantity >= {1_000_000 + k}")
    unindexed = lambda k: filter_query(f'name ^= "never {k}"')
    steps = []
    for rep in range(args.reps):
        for n in [int(step) for step in args.steps.split()]:
            steps.append(dict(await cpu_step(args, item, n, indexed, "equality and range"), rep=rep))
        steps.append(dict(await cpu_step(args, item, int(args.steps.split()[-1]), unindexed, "starts-with (not indexed)"), rep=rep))
    return {"steps": steps}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cmd", choices=["latency", "cpu"])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--streams", type=int, default=1000)
    p.add_argument("--writes", type=int, default=100)
    p.add_argument("--interval-ms", type=float, default=20.0)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--steps", default="10 10000")
    p.add_argument("--settle", type=float, default=1.0)
    args = p.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    result = asyncio.run(run_latency(args) if args.cmd == "latency" else run_cpu(args))
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    invalid = sum(r.get("error_count", 0) for r in result.get("rounds", []))
    sys.exit(1 if invalid else 0)


if __name__ == "__main__":
    main()
