"""badinput.py's fuzzing and connection defects: mutated requests (no 5xx), slow headers, idle
keep-alive connections, the connection cap and the subscriber caps. A mixin of badinput.Suite."""

import json
import socket
import time
import uuid

from common import Client, draft, log
from badinput_wire import CLOSE_WITHIN, NAME, Answer, Raw, request_bytes


class ConnectionCases:
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

        # A body trickled a byte at a time: every byte restarts the idle timer, but the body's clock
        # (2 s here, and a second for every 500 bytes) runs out: 408 requestTimeout, nothing written.
        body = json.dumps(draft("Trickled")).encode()
        raw = Raw(self.server.port, timeout=CLOSE_WITHIN)
        raw.send(request_bytes("POST", "/v1/items", token=self.editor, body=body)[:-len(body)])
        start = time.monotonic()
        for byte in body[:-1]:
            raw.sock.settimeout(0.3)
            try:
                data = raw.sock.recv(1 << 16)
                raw.buffer += data
                raw.eof = not data
                break  # the answer came: nothing more is sent
            except socket.timeout:
                pass
            except OSError:
                break
            if time.monotonic() - start > CLOSE_WITHIN or not raw.send(bytes([byte])):
                break
        raw.sock.settimeout(CLOSE_WITHIN)
        answer = raw.answer()
        raw.close()
        self.cases += 1
        self.violations.check(answer.status == 408 and answer.code() == "requestTimeout" and answer.closed,
                              f"a body trickled a byte every 0.3 s: {answer!r} after {time.monotonic() - start:.1f} s, "
                              "expected 408 requestTimeout with Connection: close (body timeout 2 s)")
        listed = Client(self.server.port, self.editor).request("GET", "/v1/items?q=Trickled").json()
        self.violations.check(not listed.get("items"), f"the trickled body wrote an item: {listed}")
        self.healthy("a trickled body")

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
