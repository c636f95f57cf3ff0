#!/usr/bin/env python3
"""Stockroom change-feed benchmark: the load generator and the report (Python 3.9+, stdlib only).

Started by Benchmarks/feed/run.sh, which builds and starts the server. Three subcommands:

  feedbench.py latency --port P --token T --pid PID --out latency.json
      Commit-to-delivery latency. For each round (rep x N): open N SSE subscribers
      (GET /v1/changes/stream?since=now&topics=items), wait for every `: open`, then M sequential
      PUT /v1/items/{id} of one demo item, each with a unique name, started INTERVAL_MS apart.
      For every (subscriber, write) pair: receive - t1 (response read) and receive - t0 (request
      sent). Every subscriber must receive every write exactly once, in order.

  feedbench.py idle --port P --token T --pid PID --out idle.json
      Idle SSE subscribers opened in steps; at each step the server's VmRSS (/proc/PID/status),
      and one PUT that must reach every open subscriber.

  feedbench.py report --latency latency.json --idle idle.json --summary last-run.txt
      Prints the summary block and writes it (with key=value lines) to --summary.

Timing: every timestamp is time.perf_counter_ns() (CLOCK_MONOTONIC) in this one process. The
subscribers are asyncio Protocols whose data_received only stamps and stores the bytes; the
HTTP chunked framing and the SSE events are decoded after the round, so that decoding does not
delay the stamping of the other subscribers' data.
"""
import argparse
import asyncio
import json
import resource
import sys

# Benchmarks/postgres/fanout.py imports this module for its decoding and its writer: the names it
# uses are re-exported here.
from feedbench_http import ItemWriter, SSEStream, http_request  # noqa: F401
from feedbench_idle import run_idle
from feedbench_latency import run_latency
from feedbench_probes import distribution, now_ns  # noqa: F401
from feedbench_report import report
from feedbench_subscribers import SinkGroup  # noqa: F401


# --------------------------------------------------------------------------- main

def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("latency", "idle"):
        s = sub.add_parser(name)
        s.add_argument("--port", type=int, required=True)
        s.add_argument("--token", required=True)
        s.add_argument("--pid", type=int, required=True, help="the server's pid, for /proc")
        s.add_argument("--out", required=True)
        s.add_argument("--delivery-timeout", type=float, default=30.0)
        s.add_argument("--gauge-timeout", type=float, default=40.0)
    lat = sub.choices["latency"]
    lat.add_argument("--plan", default="1:200 50:200 1000:100", help="space-separated N:M pairs")
    lat.add_argument("--reps", type=int, default=3)
    lat.add_argument("--interval-ms", type=float, default=20.0)
    lat.add_argument("--sink", help="the built sse_sink: subscribers in C instead of asyncio")
    idl = sub.choices["idle"]
    idl.add_argument("--steps", default="1000 2000 5000 10000")
    idl.add_argument("--settle", type=float, default=2.0)
    idl.add_argument("--open-timeout", type=float, default=30.0)
    idl.add_argument("--reopen", type=int, default=1, help="1: after closing, open the last step's count again")
    rep = sub.add_parser("report")
    rep.add_argument("--latency")
    rep.add_argument("--idle")
    rep.add_argument("--summary", required=True)
    rep.add_argument("--command", default="bash Benchmarks/feed/run.sh")
    args = p.parse_args()
    if args.cmd == "report":
        sys.exit(report(args))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    result = asyncio.run(run_latency(args) if args.cmd == "latency" else run_idle(args))
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
