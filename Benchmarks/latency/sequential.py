#!/usr/bin/env python3
"""One request at a time over one keep-alive connection (as bench-compare's write -> SSE rows send
their writes): PUT /v1/items/{id}, then GET of it, N of each. Prints, for each, the wall time per
request (mean, p50, p99; the gap not counted) and the server's CPU per request (utime + stime of
--pid from /proc over the run). `--gap-ms G` waits G ms between requests, as a client that is not
in a hurry does: on a machine whose caches go to other work while a core idles (Benchmarks/README,
"A request after an idle gap"), a request after a gap costs more than one right after another.

    python3 Benchmarks/latency/sequential.py --port 18700 --pid PID --token TOKEN [--n 4000] [--gap-ms 0]

Start the server first, e.g. `DB_SYNCHRONOUS=normal stockroom serve --demo --http-port 18700`
(the token is the `export TOKEN=` line it prints). Standard library only.
"""
import argparse
import http.client
import json
import os
import socket
import time


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True, help="the server's process")
    parser.add_argument("--token", required=True)
    parser.add_argument("--n", type=int, default=4000, help="requests of each kind")
    parser.add_argument("--gap-ms", type=float, default=0, help="the wait between two requests")
    args = parser.parse_args()

    connection = http.client.HTTPConnection("127.0.0.1", args.port)
    connection.connect()
    connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    headers = {"Authorization": f"Bearer {args.token}", "Content-Type": "application/json"}

    def call(method, path, body=None):
        connection.request(method, path, body, headers)
        answer = connection.getresponse()
        payload = answer.read()
        if answer.status != 200:
            raise SystemExit(f"{method} {path}: {answer.status} {payload[:200]!r}")
        return payload

    item = json.loads(call("GET", "/v1/items?limit=1"))["items"][0]
    path = f"/v1/items/{item['id']}"

    def put(index):
        body = {"name": item["name"], "color": None, "status": {"inStock": {"quantity": index}}}
        call("PUT", path, json.dumps(body))

    for kind, request in (("PUT", put), ("GET", lambda _: call("GET", path))):
        for index in range(200):  # warm-up
            request(index)
        times = []
        before = cpu_seconds(args.pid)
        for index in range(args.n):
            if args.gap_ms:
                time.sleep(args.gap_ms / 1000)
            start = time.perf_counter()
            request(index)
            times.append(time.perf_counter() - start)
        cpu = cpu_seconds(args.pid) - before
        times.sort()
        print(f"{kind}: {sum(times) / args.n * 1e6:.0f} us per request (wall; p50 {times[args.n // 2] * 1e6:.0f}, "
              f"p99 {times[min(args.n - 1, args.n * 99 // 100)] * 1e6:.0f}), server CPU {cpu / args.n * 1e6:.0f} us per request"
              + (f", {args.gap_ms:g} ms apart" if args.gap_ms else ""))


if __name__ == "__main__":
    main()
