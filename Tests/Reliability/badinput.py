#!/usr/bin/env python3
"""Bad input and connection defects against Stockroom (Python 3.9+, standard library only).

Starts the real `stockroom` binary with small caps and timeouts (idle and header timeouts 2 s, 24
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
                idle keep-alive connections are closed while /health keeps answering; past the
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
import json
import os
import socket
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (Client, Server, Violations, default_binary, draft, log, make_workdir, parse_head, remove_workdir,
                    seeded_random)

NAME = "badinput"
MIB = 1 << 20
SETTINGS = {
    "HTTP_IDLE_TIMEOUT_SECONDS": "2",
    "HTTP_HEADER_TIMEOUT_SECONDS": "2",
    "HTTP_MAX_CONNECTIONS": "24",
    "FEED_MAX_SUBSCRIBERS": "3",
    "FEED_MAX_SUBSCRIBERS_PER_TOKEN": "2",
    "FEED_HEARTBEAT_SECONDS": "1",
}
# Generous: how long the server may take to close a connection it should close after 2 s.
CLOSE_WITHIN = 15


class Answer:
    def __init__(self, status, headers, body, closed):
        self.status = status
        self.headers = headers
        self.body = body
        self.closed = closed

    def code(self):
        try:
            return json.loads(self.body)["error"]["code"]
        except Exception:
            return None

    def __repr__(self):
        return f"<{self.status} {self.code() or self.body[:120]!r}{' closed' if self.closed else ''}>"


class Raw:
    """A raw loopback connection: sends bytes, parses HTTP/1.1 answers."""

    def __init__(self, port, timeout=30):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buffer = b""
        self.eof = False

    def send(self, data):
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            return False  # the server closed on us (after answering, usually)

    def fill(self):
        try:
            chunk = self.sock.recv(1 << 16)
        except (ConnectionResetError, BrokenPipeError):
            chunk = b""
        if not chunk:
            self.eof = True
        self.buffer += chunk
        return bool(chunk)

    def answer(self):
        """The next answer, or an Answer with status None when the server closed without one."""
        while b"\r\n\r\n" not in self.buffer:
            if self.eof or not self.fill():
                return Answer(None, {}, self.buffer, True)
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        status, headers = parse_head(head)
        if "content-length" in headers:
            length = int(headers["content-length"])
            while len(self.buffer) < length and (not self.eof and self.fill()):
                pass
            body, self.buffer = self.buffer[:length], self.buffer[length:]
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                while b"\r\n" not in self.buffer and not self.eof:
                    self.fill()
                size_line, _, self.buffer = self.buffer.partition(b"\r\n")
                size = int(size_line.split(b";")[0] or b"0", 16)
                while len(self.buffer) < size + 2 and not self.eof:
                    self.fill()
                body += self.buffer[:size]
                self.buffer = self.buffer[size + 2:]
                if size == 0:
                    break
        else:
            while not self.eof:
                self.fill()
            body, self.buffer = self.buffer, b""
        closed = headers.get("connection", "").lower() == "close"
        return Answer(status, headers, body, closed)

    def wait_closed(self, seconds):
        """True when the server closes the connection within `seconds` (what it sends is dropped)."""
        self.sock.settimeout(seconds)
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                if not self.sock.recv(1 << 16):
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False
        return False

    def close(self):
        self.sock.close()


def request_bytes(method, path, headers=None, body=b"", token=None, host=True):
    lines = [f"{method} {path} HTTP/1.1"]
    if host:
        lines.append("Host: localhost")
    if token:
        lines.append(f"Authorization: Bearer {token}")
    if body:
        lines.append("Content-Type: application/json")
    all_headers = dict(headers or {})
    if body and "Content-Length" not in all_headers and "Transfer-Encoding" not in all_headers:
        all_headers["Content-Length"] = str(len(body))
    head = "\r\n".join(lines).encode()
    for name, value in all_headers.items():
        value = value if isinstance(value, bytes) else str(value).encode("latin-1")
        head += b"\r\n" + name.encode() + b": " + value
    return head + b"\r\n\r\n" + body


class Suite:
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

    # ------------------------------------------------------------------------------------- bodies

    def bodies(self, short):
        too_large = [(413, "payloadTooLarge")]
        padded = json.dumps(draft("Padded")).encode()
        body = padded[:-1] + b" " * (MIB + 1 - len(padded)) + b"}"
        self.expect("a body of 1 MiB + 1 byte", self.exchange(request_bytes("POST", "/v1/items", body=body, token=self.editor)), too_large)
        body = padded[:-1] + b" " * (MIB - len(padded)) + b"}"
        self.expect("a body of exactly 1 MiB", self.exchange(request_bytes("POST", "/v1/items", body=body, token=self.editor)),
                    [(201, None)])
        chunk = b" " * 65536
        chunked = b"".join(b"%x\r\n" % len(chunk) + chunk + b"\r\n" for _ in range(32)) + b"0\r\n\r\n"
        self.expect("a chunked body of 2 MiB", self.exchange(request_bytes(
            "POST", "/v1/items", {"Transfer-Encoding": "chunked"}, body=chunked, token=self.editor)), too_large)
        # A huge declared length that never comes: refused from the header, or closed on the idle timeout.
        raw = Raw(self.server.port)
        raw.send(request_bytes("POST", "/v1/items", {"Content-Length": str(100 << 30)}, token=self.editor)
                 .replace(b"\r\n\r\n", b"\r\nContent-Type: application/json\r\n\r\n"))
        raw.sock.settimeout(CLOSE_WITHIN)
        self.expect("Content-Length of 100 GiB, no body", raw.answer(), too_large)
        raw.close()
        # A body much larger than the limit, streamed as fast as it goes.
        size = 32 * MIB if not short else 8 * MIB
        raw = Raw(self.server.port)
        raw.send(request_bytes("PUT", f"/v1/items/{uuid.uuid4()}", {"Content-Length": str(size), "Content-Type": "application/json"},
                               token=self.editor))
        block = b"[" * 65536
        for _ in range(size // len(block)):
            if not raw.send(block):
                break
        self.expect(f"a {size // MIB} MiB body", raw.answer(), too_large)
        raw.close()

    # --------------------------------------------------------------------------------------- JSON

    def json_inputs(self, short):
        depths = [10, 100, 1000, 10_000, 100_000] + ([] if short else [500_000])
        for depth in depths:
            for key in (None, "deep-" + str(depth)):
                headers = {"Idempotency-Key": key + str(uuid.uuid4())} if key else {}
                bare = b"[" * depth + b"]" * depth
                self.expect(f"JSON nested {depth} deep (bare array, key {bool(key)})", self.exchange(
                    request_bytes("POST", "/v1/items", headers, body=bare, token=self.editor)), [(400, "invalidJSON")])
                objects = b'{"a":' * depth + b"1" + b"}" * depth
                command = b'{"command":{"selectTab":{"tab":"settings","extra":' + objects + b"}}}"
                self.expect(f"JSON nested {depth} deep under an unknown key of a command (key {bool(key)})", self.exchange(
                    request_bytes("POST", "/v1/clients/deep/commands", headers, body=command, token=self.editor)),
                    [(200, None), (400, "invalidJSON")] if len(command) <= MIB else [(413, "payloadTooLarge")])
                item = b'{"name":"Deep","color":null,"status":{"inStock":{"quantity":1}},"extra":' + bare + b"}"
                self.expect(f"JSON nested {depth} deep under an unknown key of an item (key {bool(key)})", self.exchange(
                    request_bytes("POST", "/v1/items", headers, body=item, token=self.editor)),
                    [(201, None), (400, "invalidJSON")])
        invalid_json = [(400, "invalidJSON")]
        name_cases = [
            ("invalid UTF-8 in a name", b'"\xff\xfe"', invalid_json),
            ("overlong UTF-8 in a name", b'"\xc0\xaf"', invalid_json),
            ("a UTF-8-encoded surrogate in a name", b'"\xed\xa0\x80"', invalid_json),
            ("a truncated UTF-8 sequence in a name", b'"ab\xe2\x82"', invalid_json),
            ("a raw control character in a name", b'"a\x01b"', invalid_json),
            ("a raw NUL in a name", b'"a\x00b"', invalid_json),
            ("an escaped NUL in a name", b'"a\\u0000b"', [(422, "validationFailed")]),
            ("a number as the name", b"12", invalid_json),
            ("a 900 KiB name", b'"' + b"x" * (900 * 1024) + b'"', [(422, "validationFailed")]),
        ]
        for label, name, allowed in name_cases:
            body = b'{"name":' + name + b',"color":null,"status":{"inStock":{"quantity":1}}}'
            self.expect(label, self.exchange(request_bytes("POST", "/v1/items", body=body, token=self.editor)), allowed)
        for quantity in (b"1e400", b"-0", b"1.5", b"99999999999999999999999", b"-1", b"1000000001", b"NaN", b"0x10", b'"1"',
                         b"1" * 100_000):
            body = b'{"name":"Q","color":null,"status":{"inStock":{"quantity":' + quantity + b"}}}"
            self.expect(f"quantity {quantity[:20].decode()}", self.exchange(request_bytes("POST", "/v1/items", body=body, token=self.editor)),
                        [(201, None), (400, "invalidJSON"), (422, "validationFailed")])
        for label, body in [
            ("a BOM before the JSON", b"\xef\xbb\xbf" + json.dumps(draft("Bom")).encode()),
            ("duplicate keys", b'{"name":"A","name":"B","color":null,"status":{"inStock":{"quantity":1}}}'),
            ("trailing garbage", json.dumps(draft("Tail")).encode() + b"}}"),
            ("a comment", b'{"name":"C"/* x */,"color":null,"status":{"inStock":{"quantity":1}}}'),
            ("a 100,000-element array under an unknown key", b'{"name":"A","color":null,"status":{"inStock":{"quantity":1}},"x":['
             + b",".join([b"1"] * 100_000) + b"]}"),
            ("50,000 unknown keys", b'{"name":"A","color":null,"status":{"inStock":{"quantity":1}},'
             + b",".join(b'"k%d":1' % i for i in range(50_000)) + b"}"),
        ]:
            self.expect(label, self.exchange(request_bytes("POST", "/v1/items", body=body, token=self.editor)),
                        [(201, None), (400, "invalidJSON")])
        for body in (b"", b"null", b"[]", b'"text"', b"123", b"{", b"\x00" * 100):
            raw = request_bytes("POST", "/v1/items", {"Content-Length": str(len(body))}, body=body, token=self.editor)
            if not body:
                raw = raw.replace(b"\r\nContent-Length", b"\r\nContent-Type: application/json\r\nContent-Length")
            self.expect(f"body {body[:10]!r}", self.exchange(raw), invalid_json)
        self.expect("an unknown command", self.exchange(request_bytes(
            "POST", "/v1/clients/x/commands", body=b'{"command":{"selfDestruct":{}}}', token=self.editor)), invalid_json)

    # ------------------------------------------------------------------------------------ headers

    def headers(self, short):
        header_refused = [(431, None), (400, None), (None, None)]
        sizes = [64 * 1024, MIB] + ([] if short else [16 * MIB])
        for size in sizes:
            self.expect(f"one {size // 1024} KiB header", self.exchange(
                request_bytes("GET", "/health", {"X-Big": "a" * size})), header_refused + [(200, None)])
        count = 20_000 if not short else 5_000
        many = request_bytes("GET", "/health").replace(b"\r\n\r\n", b"".join(b"\r\nX-H%d: v" % i for i in range(count)) + b"\r\n\r\n")
        self.expect(f"{count} headers", self.exchange(many), header_refused + [(200, None)])
        self.expect("a 1 MiB bearer token", self.exchange(request_bytes("GET", "/v1/items", {"Authorization": "Bearer " + "a" * MIB})),
                    header_refused + [(401, "unauthorized")])
        self.expect("invalid UTF-8 in Idempotency-Key", self.exchange(request_bytes(
            "POST", "/v1/items", {"Idempotency-Key": b"k\xff\xfe"}, body=json.dumps(draft("Key")).encode(), token=self.editor)),
            [(400, "invalidParameter")])
        self.expect("an Idempotency-Key of 256 characters", self.exchange(request_bytes(
            "POST", "/v1/items", {"Idempotency-Key": "k" * 256}, body=json.dumps(draft("Key")).encode(), token=self.editor)),
            [(400, "invalidParameter")])
        item = Client(self.server.port, self.editor).request("POST", "/v1/items", draft("Target")).json()
        for value in (b'"1\xff"', b"\xff", b'"' + b"9" * 10_000 + b'"', b'"1", ' * 10_000 + b'"1"'):
            self.expect(f"If-Match {value[:12]!r}", self.exchange(request_bytes(
                "PUT", f"/v1/items/{item['id']}", {"If-Match": value}, body=json.dumps(draft("Target")).encode(), token=self.editor)),
                [(400, "invalidParameter"), (412, "preconditionFailed"), (200, None), (431, None)])
        self.expect("a NUL in a header", self.exchange(request_bytes("GET", "/health", {"X-Nul": b"a\x00b"})), [(400, None)])
        self.expect("a header without a colon", self.exchange(
            b"GET /health HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n"), [(400, None)])
        self.expect("Content-Length beside chunked", self.exchange(request_bytes(
            "POST", "/v1/items", {"Content-Length": "5", "Transfer-Encoding": "chunked"}, body=b"0\r\n\r\n", token=self.editor)),
            [(400, None)])
        self.expect("two different Content-Lengths", self.exchange(
            b"POST /v1/items HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}"), [(400, None)])
        self.expect("a Content-Type that is not JSON", self.exchange(request_bytes(
            "POST", "/v1/items", {"Content-Type": "text/plain\xff"}, body=b"{}", token=self.editor).replace(
            b"Content-Type: application/json\r\n", b"")), [(415, "unsupportedMediaType"), (400, None)])

    # --------------------------------------------------------------------------------------- URLs

    def urls(self, short):
        for size in [64 * 1024] + ([] if short else [MIB]):
            self.expect(f"a {size // 1024} KiB path", self.exchange(request_bytes("GET", "/v1/items/" + "a" * size, token=self.editor)),
                        [(404, "notFound"), (414, None), (431, None), (400, None), (None, None)])
        for label, path, allowed in [
            ("invalid UTF-8 in a clientID", "/v1/clients/%ff%fe/navigation", [(400, "invalidParameter")]),
            ("a NUL in a clientID", "/v1/clients/a%00b/navigation", [(400, "invalidParameter")]),
            ("a slash in a clientID", "/v1/clients/a%2Fb/navigation", [(400, "invalidParameter"), (404, "notFound")]),
            ("invalid UTF-8 in an item id", "/v1/items/%ff", [(404, "notFound")]),
            ("invalid UTF-8 in since", "/v1/changes?since=%ff%fe", [(400, "invalidParameter")]),
            ("a NUL in q (no name holds one)", "/v1/items?q=a%00b", [(200, None)]),
            ("invalid UTF-8 in q", "/v1/items?q=%ff%fe", [(200, None), (400, "invalidParameter")]),
            ("a huge limit", "/v1/items?limit=99999999999999999999999", [(400, "invalidParameter")]),
            ("a negative limit", "/v1/items?limit=-1", [(422, "validationFailed")]),
            ("wait out of range", "/v1/changes?since=now&wait=99999999999", [(400, "invalidParameter"), (422, "validationFailed")]),
            ("a bad percent escape", "/v1/items?q=%zz", [(200, None), (400, None)]),
            ("10,000 query parameters", "/v1/items?" + "&".join(f"p{i}=1" for i in range(10_000)), [(200, None), (400, None)]),
            ("a cursor of 100 KiB", "/v1/items?after=" + "A" * 100_000, [(400, "invalidParameter"), (400, "invalidRequest")]),
        ]:
            answer = self.expect(label, self.exchange(request_bytes("GET", path, token=self.editor)), allowed)
            if "NUL in q" in label and answer.status == 200:
                self.violations.check(json.loads(answer.body)["items"] == [], f"{label}: matched {answer.body[:200]!r}")
        self.expect("a raw byte 0xff in the path", self.exchange(b"GET /v1/items/\xff HTTP/1.1\r\nHost: x\r\n\r\n"),
                    [(400, None), (404, "notFound")])

    # ----------------------------------------------------------------------------------- protocol

    def protocol(self, short):
        count = 500
        raw = Raw(self.server.port)
        raw.send(b"".join(request_bytes("GET", "/health") for _ in range(count)))
        answers = [raw.answer() for _ in range(count)]
        raw.close()
        self.cases += 1
        self.violations.check(all(a.status == 200 for a in answers),
                              f"{count} pipelined requests: {[a for a in answers if a.status != 200][:3]}")
        self.expect("HTTP/1.0 without Host", self.exchange(b"GET /health HTTP/1.0\r\n\r\n"), [(200, None), (400, None)])
        self.expect("an invalid chunk size", self.exchange(request_bytes(
            "POST", "/v1/items", {"Transfer-Encoding": "chunked"}, body=b"zz\r\nabc\r\n0\r\n\r\n", token=self.editor)),
            [(400, None)])
        self.expect("a chunk size beyond 64 bits", self.exchange(request_bytes(
            "POST", "/v1/items", {"Transfer-Encoding": "chunked"}, body=b"fffffffffffffffffffff\r\nabc\r\n0\r\n\r\n",
            token=self.editor)), [(400, None), (413, "payloadTooLarge")])
        self.expect("an unknown method", self.exchange(b"BREW /v1/items HTTP/1.1\r\nHost: x\r\n\r\n"),
                    [(400, None), (405, "methodNotAllowed"), (501, None)])
        self.expect("HTTP/2 preface", self.exchange(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), [(400, None), (None, None), (505, None)])

    # ------------------------------------------------------------------------------------- fuzzing

    def fuzz(self, iterations, rng):
        """Valid requests with random bytes flipped, inserted, repeated or cut, each sent on its own
        connection, which is then half-closed: anything but a 5xx (or no answer) is fine."""
        item = Client(self.server.port, self.editor).request("POST", "/v1/items", draft("Fuzzed")).json()
        seeds = [
            request_bytes("POST", "/v1/items", {"Idempotency-Key": "fuzz-1"}, body=json.dumps(dict(draft("Fuzz"), id=str(uuid.uuid4()))).encode(),
                          token=self.editor),
            request_bytes("PUT", f"/v1/items/{item['id']}", {"If-Match": '"1"'}, body=json.dumps(draft("Fuzz", 3)).encode(), token=self.editor),
            request_bytes("DELETE", f"/v1/items/{uuid.uuid4()}", {"If-Match": "*"}, token=self.editor),
            request_bytes("POST", "/v1/clients/fuzz/commands", body=json.dumps({"command": {"openEdit": {"itemID": item["id"]}}}).encode(),
                          token=self.editor),
            request_bytes("POST", "/v1/clients/fuzz/commands", {"Idempotency-Key": "fuzz-2"},
                          body=json.dumps({"command": {"updateDraft": {"draft": draft("Typed", 1, {"name": "Red", "red": 1, "green": 0, "blue": 0})}}}).encode(),
                          token=self.editor),
            request_bytes("PUT", "/v1/clients/fuzz2/navigation", body=json.dumps(
                {"tab": "settings", "path": [{"item": {"id": item["id"]}}], "destination": {"deleteAlert": {"itemID": item["id"]}}}).encode(),
                token=self.editor),
            request_bytes("GET", "/v1/changes?since=now&limit=10&topics=items,navigation", token=self.editor),
            request_bytes("GET", "/v1/items?limit=5&q=fu&status=inStock", token=self.editor),
            request_bytes("GET", "/v1/snapshot", token=self.viewer),
            request_bytes("POST", "/v1/items", {"Transfer-Encoding": "chunked"},
                          body=b"a\r\n{\"name\":\"C\r\n0\r\n\r\n", token=self.editor),
        ]
        interesting = [b"\x00", b"\xff", b"{", b"[", b'"', b"\\", b"%", b"\r\n", b"\r\n\r\n", b"9" * 20, b"-1", b"\xc0\xaf",
                       b"\xed\xa0\x80", b":", b",", b"\t", b" ", rb"\u0000"]
        answered = 0
        for iteration in range(iterations):
            data = bytearray(rng.choice(seeds))
            for _ in range(rng.randint(1, 4)):
                if not data:
                    break
                where = rng.randrange(len(data))
                kind = rng.random()
                if kind < 0.3:
                    data[where] = rng.randrange(256)
                elif kind < 0.6:
                    data[where:where] = rng.choice(interesting)
                elif kind < 0.75:
                    data[where:where + rng.randint(1, 8)] = b""
                elif kind < 0.9:
                    end = min(len(data), where + rng.randint(1, 64))
                    data[where:where] = data[where:end] * rng.randint(2, 50)
                else:
                    data = data[:where]
            raw = Raw(self.server.port, timeout=CLOSE_WITHIN)
            raw.send(bytes(data))
            try:
                raw.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            try:
                answer = raw.answer()
            except (ValueError, IndexError, socket.timeout) as error:
                answer = Answer(None, {}, repr(error).encode(), True)
            raw.close()
            self.cases += 1
            over_cap = answer.status == 503 and b"too many connections" in answer.body
            if answer.status is not None and answer.status >= 500 and not over_cap:
                self.violations.add(f"fuzz {iteration}: {answer!r} for {bytes(data)[:300]!r}")
            answered += answer.status is not None
            if iteration % 100 == 99:
                self.healthy(f"after fuzz {iteration}")
        log(NAME, f"fuzz: {iterations} mutated requests, {answered} answered, none with a 5xx")

    # -------------------------------------------------------------------------------- connections

    def connections(self, short):
        # Slow headers on the first request: closed after the header timeout, whatever trickles in.
        count = 20 if not short else 4
        slow = [Raw(self.server.port) for _ in range(count)]
        for raw in slow:
            raw.send(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        closed = [False] * count
        start = time.monotonic()
        while time.monotonic() - start < CLOSE_WITHIN and not all(closed):
            for index, raw in enumerate(slow):
                if not closed[index] and not raw.send(b"X-Slow-%d: a\r\n" % int(time.monotonic() * 10)):
                    closed[index] = True
                elif not closed[index]:
                    raw.sock.settimeout(0.01)
                    try:
                        if not raw.sock.recv(1024):
                            closed[index] = True
                    except socket.timeout:
                        pass
                    except OSError:
                        closed[index] = True
            time.sleep(0.4)
        self.cases += 1
        self.violations.check(all(closed), f"slowloris: {closed.count(False)} of {count} trickling connections still open "
                                           f"after {CLOSE_WITHIN} s (header timeout 2 s)")
        for raw in slow:
            raw.close()
        self.healthy("slowloris")

        # Slow headers on a later request of a kept-alive connection, and an idle kept-alive one.
        for label, trickle in (("slow headers on a second request", True), ("an idle kept-alive connection", False)):
            raw = Raw(self.server.port)
            raw.send(request_bytes("GET", "/health"))
            first = raw.answer()
            start = time.monotonic()
            still_open = True
            if trickle:
                raw.send(b"GET /health HTTP/1.1\r\n")
                while time.monotonic() - start < CLOSE_WITHIN:
                    if not raw.send(b"X-Slow: a\r\n"):
                        still_open = False
                        break
                    raw.sock.settimeout(0.5)
                    try:
                        data = raw.sock.recv(1024)
                        if not data:
                            still_open = False
                            break
                    except socket.timeout:
                        pass
                    except OSError:
                        still_open = False
                        break
            else:
                still_open = not raw.wait_closed(CLOSE_WITHIN)
            raw.close()
            self.cases += 1
            self.violations.check(first.status == 200 and not still_open,
                                  f"{label}: first answer {first!r}; still open after {CLOSE_WITHIN} s (idle timeout 2 s)")
            self.healthy(label)

        # Past the connection cap: 503 with Retry-After, and the server serves again once they go.
        held = []
        refused = None
        for _ in range(40):
            raw = Raw(self.server.port)
            raw.send(request_bytes("GET", "/health"))
            answer = raw.answer()
            if answer.status != 200:
                refused = answer
                raw.close()
                break
            held.append(raw)
        self.cases += 1
        self.violations.check(refused is not None and refused.status == 503 and refused.headers.get("retry-after")
                              and refused.code() == "unavailable",
                              f"connection cap 24: after {len(held)} kept-alive connections the next got {refused!r}, "
                              "expected 503 unavailable with Retry-After")
        for raw in held:
            raw.close()
        self.wait_until_healthy("connection cap")

        # Past the subscriber caps: 503 with Retry-After; a freed place is taken again.
        streams = []
        for token in (self.editor, self.editor):
            raw = Raw(self.server.port)
            raw.send(request_bytes("GET", "/v1/changes/stream?since=now", token=token))
            streams.append(raw)
        for raw in streams:
            while b"\r\n\r\n" not in raw.buffer and raw.fill():
                pass
            self.violations.check(raw.buffer.startswith(b"HTTP/1.1 200"), f"subscriber: {raw.buffer[:80]!r}")
        self.expect("a third stream of one token (cap 2)", self.exchange(request_bytes(
            "GET", "/v1/changes/stream?since=now", token=self.editor)), [(503, "unavailable")])
        answer = self.exchange(request_bytes("GET", "/v1/changes?since=now&wait=1", token=self.editor))
        self.expect("a long-poll over the token's cap", answer, [(503, "unavailable")])
        self.violations.check(bool(answer.headers.get("retry-after")), "the subscriber cap's 503 has no Retry-After")
        viewer = Raw(self.server.port)
        viewer.send(request_bytes("GET", "/v1/changes/stream?since=now", token=self.viewer))
        while b"\r\n\r\n" not in viewer.buffer and viewer.fill():
            pass
        self.violations.check(viewer.buffer.startswith(b"HTTP/1.1 200"), f"another token's stream: {viewer.buffer[:80]!r}")
        self.expect("a stream over the total cap (3)", self.exchange(request_bytes(
            "GET", "/v1/changes/stream?since=now", token=self.other)), [(503, "unavailable")])
        for raw in streams + [viewer]:
            raw.close()
        deadline = time.monotonic() + CLOSE_WITHIN
        while True:
            answer = self.exchange(request_bytes("GET", "/v1/changes?since=now&wait=0", token=self.other))
            if answer.status == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        self.expect("a subscriber once the streams have gone", answer, [(200, None)])

    def wait_until_healthy(self, label):
        deadline = time.monotonic() + CLOSE_WITHIN
        while time.monotonic() < deadline:
            answer = self.exchange(request_bytes("GET", "/health"))
            if answer.status == 200:
                return self.healthy(label)
            time.sleep(0.1)
        self.violations.add(f"{label}: /health did not answer 200 again within {CLOSE_WITHIN} s")


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
