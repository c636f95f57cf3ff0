#!/usr/bin/env python3
"""One request at a time over one keep-alive connection (as bench-compare's write -> SSE rows send
their writes): PUT /v1/items/{id}, then GET of it, N of each. Prints, for each, the wall time per
request and the server's CPU per request (utime + stime of --pid from /proc over the run).

    python3 Benchmarks/latency/sequential.py --port 18700 --pid PID --token TOKEN [--n 4000]

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
        before, start = cpu_seconds(args.pid), time.perf_counter()
        for index in range(args.n):
            request(index)
        wall, cpu = time.perf_counter() - start, cpu_seconds(args.pid) - before
        print(f"{kind}: {wall / args.n * 1e6:.0f} us per request (wall), server CPU {cpu / args.n * 1e6:.0f} us per request")


if __name__ == "__main__":
    main()
