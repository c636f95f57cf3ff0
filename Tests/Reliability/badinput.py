#!/usr/bin/env python3
"""Bad input and connection defects against Stockroom (Python 3.9+, standard library only).

Starts the real `stockroom` binary with small caps and timeouts (idle, header and body timeouts 2 s, 24
connections, 3 feed subscribers, 2 per token, heartbeat 1 s), and sends it, over raw loopback
sockets:

  bodies        over 1 MiB with Content-Length or chunked (413 payloadTooLarge), a huge declared
                length that never comes, a 32 MiB stream, exactly 1 MiB (accepted)
  JSON          nesting 10 to 500,000 deep (bare, and under an unknown key of a valid command, with
                and without Idempotency-Key), invalid and overlong UTF-8, raw control characters,
                a BOM, huge and odd numbers, duplicate keys, empty and scalar bodies
  headers       a 64 KiB, 1 MiB and 16 MiB header, 20,000 headers, a huge Authorization, invalid
                UTF-8 in Idempotency-Key and If-Match, a NUL, both Content-Length and chunked
  URLs          64 KiB and 1 MiB paths, invalid UTF-8 and NUL in ids and query values, 10,000
                query parameters, absurd numbers
  protocol      500 pipelined requests, HTTP/1.0 without Host, bad chunk sizes
  fuzzing       valid requests with random bytes flipped, inserted, repeated or cut (5,000; 300 in
                the short form), each half-closed after sending: no 5xx
  connections   slow headers (slowloris, 20 connections, on a first and on a later request) and
                idle keep-alive connections are closed while /health keeps answering; a body
                trickled a byte at a time is 408 requestTimeout and writes nothing; past the
                connection cap: 503 with Retry-After; past the subscriber caps: 503 with Retry-After,
                and a freed place is taken again

Each answer must be the contract's status and error code (see the table in API.md); after every
case the server still answers /health, its memory stays bounded, and at the end its log holds no
5xx but the subscriber caps' 503s, and SIGTERM exits 0.

Usage: Tests/Reliability/badinput.py [--bin PATH] [--short] [--fuzz N] [--seed S] [--keep] [--verbose]
  --short: the CI form (the largest inputs, most of the fuzzing and the 20-connection slowloris
  are left out).
Exit status 0 when every check held, 1 on a violation, 2 when it could not run.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Client, Server, Violations, default_binary, log, make_workdir, remove_workdir, seeded_random
from badinput_connections import ConnectionCases
from badinput_inputs import InputCases
from badinput_wire import NAME, Raw

SETTINGS = {
    "HTTP_IDLE_TIMEOUT_SECONDS": "2",
    "HTTP_HEADER_TIMEOUT_SECONDS": "2",
    "HTTP_BODY_TIMEOUT_SECONDS": "2",
    "HTTP_MAX_CONNECTIONS": "24",
    "FEED_MAX_SUBSCRIBERS": "3",
    "FEED_MAX_SUBSCRIBERS_PER_TOKEN": "2",
    "FEED_HEARTBEAT_SECONDS": "1",
}


class Suite(InputCases, ConnectionCases):
    """The server under test and the tokens the cases use; every case goes through `expect`, which
    checks the answer and then that the server is still healthy (badinput_inputs.py and
    badinput_connections.py hold the case groups)."""

    def __init__(self, server, violations, editor, viewer, other):
        self.server = server
        self.violations = violations
        self.editor = editor
        self.viewer = viewer
        self.other = other
        self.cases = 0
        self.baseline_rss = server.rss_kib()
        self.peak_rss = self.baseline_rss
        self.verbose = False

    def exchange(self, data, timeout=30):
        raw = Raw(self.server.port, timeout)
        try:
            raw.send(data)
            return raw.answer()
        finally:
            raw.close()

    def expect(self, label, answer, allowed):
        """`allowed`: (status, code) pairs; code None accepts any code; status None: closed without an answer."""
        self.cases += 1
        ok = any(answer.status == status and (code is None or answer.code() == code) for status, code in allowed)
        self.violations.check(ok, f"{label}: answered {answer!r}, expected one of {allowed}")
        if self.verbose:
            log(NAME, f"{label}: {answer!r}")
        self.healthy(label)
        return answer

    def healthy(self, label):
        if not self.server.alive():
            self.violations.add(f"{label}: the server died: {self.server.log_tail(15)}")
            raise SystemExit(1)
        try:
            response = Client(self.server.port, timeout=20).request("GET", "/health")
            self.violations.check(response.status == 200, f"{label}: /health answered {response!r} afterwards")
        except Exception as error:
            self.violations.add(f"{label}: /health failed afterwards: {error!r}")
        rss = self.server.rss_kib()
        self.peak_rss = max(self.peak_rss, rss)
        self.violations.check(rss < self.baseline_rss + 512 * 1024,
                              f"{label}: the server holds {rss // 1024} MiB (it started at {self.baseline_rss // 1024} MiB)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=default_binary())
    parser.add_argument("--short", action="store_true", help="CI form")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="print every answer")
    parser.add_argument("--fuzz", type=int, help="mutated requests to send (default 300 with --short, else 5000)")
    parser.add_argument("--seed", type=int)
    args = parser.parse_args()
    if not os.access(args.bin, os.X_OK):
        log(NAME, f"no binary at {args.bin}; build it (swift build) or pass --bin")
        return 2
    violations = Violations(NAME)
    workdir = make_workdir(NAME)
    server = Server(args.bin, workdir, env=SETTINGS)
    started = time.monotonic()
    suite = None
    try:
        editor = server.token("bad-editor", "editor")
        viewer = server.token("bad-viewer", "viewer")
        other = server.token("bad-other", "editor")
        server.start()
        suite = Suite(server, violations, editor, viewer, other)
        suite.verbose = args.verbose
        rng, _ = seeded_random(args.seed, NAME)
        fuzz = lambda short: suite.fuzz(args.fuzz or (300 if short else 5000), rng)
        fuzz.__name__ = "fuzz"
        for group in (suite.bodies, suite.json_inputs, suite.headers, suite.urls, suite.protocol, fuzz, suite.connections):
            group_start = time.monotonic()
            group(args.short)
            log(NAME, f"{group.__name__}: done in {time.monotonic() - group_start:.1f} s")
        violations.check(server.stop() == 0, "SIGTERM did not exit 0")
        for line in server.server_errors(allowed_503=True):
            violations.add(f"server log: {line}")
    except SystemExit:
        pass
    except Exception as error:
        violations.add(f"the run stopped: {error!r}")
    finally:
        server.kill9()
    cases = suite.cases if suite else 0
    peak = f"peak RSS {suite.peak_rss // 1024} MiB (from {suite.baseline_rss // 1024} MiB)" if suite else ""
    status = violations.finish(f"{cases} bad inputs and connection defects; {peak}; {time.monotonic() - started:.1f} s")
    remove_workdir(workdir, args.keep, status != 0)
    return status


if __name__ == "__main__":
    sys.exit(main())
