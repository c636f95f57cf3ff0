"""The change feed: replayed from the start, long-polled, or followed over a cluster's daemons
by long-poll, Server-Sent Events or WebSocket."""

import json
import os
import threading
import urllib.parse

from .client import Client, RawStream, body_error_code, is_connection_error


def replay_feed(client, since=None, topics=None):
    """Every change the client's token may see, from the start of the log (or `since`)."""
    changes = []
    cursor = since
    while True:
        query = {"limit": "1000"}
        if cursor:
            query["since"] = cursor
        if topics:
            query["topics"] = topics
        response = client.request("GET", "/v1/changes?" + urllib.parse.urlencode(query))
        if response.status != 200:
            raise RuntimeError(f"feed replay answered {response}")
        batch = response.json()
        changes.extend(batch["changes"])
        cursor = batch["cursor"]
        if not batch["hasMore"]:
            return changes, cursor


def follow_feed(port, token, state, stop, server_may_die=False):
    """Long-polls the feed from state["cursor"] until `stop` is set, appending to state["changes"].
    A non-200 answer is an error; so is a failed request, unless `server_may_die` (kill -9 runs)."""
    client = Client(port, token, timeout=30)
    try:
        while not stop.is_set():
            query = {"limit": "1000", "wait": "1"}
            if state["cursor"]:
                query["since"] = state["cursor"]
            response = client.request("GET", "/v1/changes?" + urllib.parse.urlencode(query))
            if response.status != 200:
                state["errors"].append(f"follower got {response!r}")
                return
            batch = response.json()
            state["changes"].extend(batch["changes"])
            state["cursor"] = batch["cursor"]
    except Exception as error:
        if not server_may_die:
            state["errors"].append(repr(error))
    finally:
        client.close()


class FeedUnavailable(Exception):
    """The daemon answered 503 (or an SSE `event: error` / WebSocket close 4503): retry later."""


class FeedRefused(Exception):
    """Any other refusal: the follower stops and reports it."""


class FeedFollower:
    """Follows one token's feed from the daemons of a `Cluster`, by long-poll (`poll`), Server-Sent
    Events (`sse`) or WebSocket (`ws`), starting on daemon `index`. When its daemon refuses the
    connection (it was killed) it moves to the next running daemon, as a client behind a load
    balancer would, and resumes from its cursor (`since`, `Last-Event-ID`). It checks as it goes that
    every change has a higher seq than the one before (nothing repeated or out of order, across
    every reconnect and switch); `check_follower` then checks that it got exactly the log, nothing
    missed. A 503 (or `event: error` / close 4503 with `unavailable`) is counted and retried when
    `tolerate_503`, an error otherwise; any other refusal stops it with an error."""

    def __init__(self, name, cluster, token, index, mode, tolerate_503=False):
        self.name = name
        self.cluster = cluster
        self.token = token
        self.index = index
        self.mode = mode
        self.tolerate_503 = tolerate_503
        self.cursor = None
        self.last_seq = 0
        self.changes = []
        self.errors = []
        self.switches = []  # (from daemon, to daemon, number of changes received before)
        self.reconnects = 0
        self.unavailable = 0
        self.thread = None

    def start(self, stop):
        self.thread = threading.Thread(target=self.run, args=(stop,), daemon=True, name=self.name)
        self.thread.start()
        return self

    def accept(self, change, cursor):
        if change["seq"] <= self.last_seq:
            self.errors.append(f"{self.name} ({self.mode}): seq {change['seq']} after {self.last_seq} on daemon{self.index} "
                               f"(a repeat or out of order; {len(self.switches)} switches so far)")
        self.last_seq = max(self.last_seq, change["seq"])
        self.changes.append(change)
        self.cursor = cursor

    def run(self, stop):
        while not stop.is_set():
            port = self.cluster.port(self.index)
            try:
                {"poll": self.follow_poll, "sse": self.follow_sse, "ws": self.follow_ws}[self.mode](port, stop)
                if not stop.is_set():
                    self.reconnects += 1  # the stream ended cleanly: connect again
            except FeedUnavailable as error:
                self.unavailable += 1
                if not self.tolerate_503:
                    self.errors.append(f"{self.name} ({self.mode}) on daemon{self.index}: {error}")
                    return
                stop.wait(0.2)
            except FeedRefused as error:
                self.errors.append(f"{self.name} ({self.mode}) on daemon{self.index}: {error}")
                return
            except Exception as error:
                if stop.is_set():
                    return
                if not is_connection_error(error):
                    self.errors.append(f"{self.name} ({self.mode}): {error!r}")
                    return
                self.reconnects += 1
                if isinstance(error, ConnectionRefusedError):
                    following = self.cluster.next_alive(self.index)
                    if following is None or following == self.index:
                        stop.wait(0.2)
                        continue
                    self.switches.append((self.index, following, len(self.changes)))
                    self.index = following
                else:
                    stop.wait(0.02)

    def follow_poll(self, port, stop):
        client = Client(port, self.token, timeout=30)
        try:
            while not stop.is_set():
                query = {"limit": "1000", "wait": "1"}
                if self.cursor:
                    query["since"] = self.cursor
                response = client.request("GET", "/v1/changes?" + urllib.parse.urlencode(query))
                if response.status == 503:
                    raise FeedUnavailable(f"long-poll answered {response!r}")
                if response.status != 200:
                    raise FeedRefused(f"long-poll answered {response!r}")
                batch = response.json()
                for change in batch["changes"]:
                    self.accept(change, change["cursor"])
                self.cursor = batch["cursor"]
        finally:
            client.close()

    def follow_sse(self, port, stop):
        headers = f"GET /v1/changes/stream HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {self.token}\r\n"
        if self.cursor:
            headers += f"Last-Event-ID: {self.cursor}\r\n"
        stream = RawStream(port, (headers + "\r\n").encode())
        try:
            status, _ = stream.head(stop)
            if status is None:
                return
            if status != 200:
                body = stream.rest()
                error = f"SSE answered {status} {body[:200]!r}"
                raise FeedUnavailable(error) if status == 503 else FeedRefused(error)
            text = b""
            while not stop.is_set():
                # Chunked transfer: "size\r\n" bytes "\r\n"; a zero size ends the body.
                while b"\r\n" in stream.buffer:
                    size_line, after = stream.buffer.split(b"\r\n", 1)
                    size = int(size_line.split(b";")[0], 16)
                    if len(after) < size + 2:
                        break
                    if size == 0:
                        return
                    text += after[:size]
                    stream.buffer = after[size + 2:]
                while b"\n\n" in text:
                    event, text = text.split(b"\n\n", 1)
                    self.sse_event(event)
                if stream.fill() is False:
                    raise ConnectionResetError("the SSE stream ended in the middle of its body")
        finally:
            stream.close()

    def sse_event(self, event):
        fields = {}
        for line in event.decode().split("\n"):
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            fields.setdefault(name, []).append(value[1:] if value.startswith(" ") else value)
        kind = fields.get("event", ["message"])[0]
        data = "\n".join(fields.get("data", []))
        if kind == "change":
            change = json.loads(data)
            self.accept(change, fields.get("id", [change["cursor"]])[0])
        elif kind == "error":
            if body_error_code(data.encode()) == "unavailable":
                raise FeedUnavailable(f"SSE event: error {data[:200]}")
            raise FeedRefused(f"SSE event: error {data[:200]}")
        elif data or kind != "message":
            self.errors.append(f"{self.name}: unexpected SSE event {event[:200]!r}")

    def follow_ws(self, port, stop):
        query = {"access_token": self.token}
        if self.cursor:
            query["since"] = self.cursor
        key = "dGhlIHNhbXBsZSBub25jZQ=="
        request = (f"GET /v1/changes/ws?{urllib.parse.urlencode(query)} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                   f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        stream = RawStream(port, request.encode())
        message = b""
        try:
            status, _ = stream.head(stop)
            if status is None:
                return
            if status != 101:
                body = stream.rest()
                error = f"WebSocket upgrade answered {status} {body[:200]!r}"
                raise FeedUnavailable(error) if status == 503 else FeedRefused(error)
            while not stop.is_set():
                frame = self.ws_frame(stream)
                if frame is None:
                    if stream.fill() is False:
                        raise ConnectionResetError("the WebSocket connection ended without a close frame")
                    continue
                fin, opcode, payload = frame
                if opcode in (0, 1):
                    message += payload
                    if fin:
                        change = json.loads(message)
                        message = b""
                        self.accept(change, change["cursor"])
                elif opcode == 8:
                    code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else None
                    if code == 4503:
                        raise FeedUnavailable(f"WebSocket closed {code} {payload[2:200]!r}")
                    if code == 1001:
                        return  # going away: connect again
                    raise FeedRefused(f"WebSocket closed {code} {payload[2:200]!r}")
                elif opcode == 9:
                    mask = os.urandom(4)
                    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
                    stream.send(bytes([0x8A, 0x80 | len(payload)]) + mask + masked)
        finally:
            stream.close()

    @staticmethod
    def ws_frame(stream):
        """(fin, opcode, payload) of the first whole frame in the buffer (server frames are not masked)."""
        data = stream.buffer
        if len(data) < 2:
            return None
        length = data[1] & 0x7F
        offset = 2
        if length == 126:
            if len(data) < 4:
                return None
            length, offset = int.from_bytes(data[2:4], "big"), 4
        elif length == 127:
            if len(data) < 10:
                return None
            length, offset = int.from_bytes(data[2:10], "big"), 10
        if len(data) < offset + length:
            return None
        stream.buffer = data[offset + length:]
        return bool(data[0] & 0x80), data[0] & 0x0F, data[offset:offset + length]


def check_follower(violations, label, follower, log_changes):
    """The follower got exactly `log_changes` (its token's whole log, from the start), in order, each
    once, across all its reconnects and switches; it met no refusal."""
    for error in follower.errors[:5]:
        violations.add(f"{label}: {error}")
    got = follower.changes
    if got != log_changes:
        mismatch = next((i for i, (a, b) in enumerate(zip(got, log_changes)) if a != b), min(len(got), len(log_changes)))
        switches = [s for s in follower.switches if s[2] <= mismatch]
        violations.add(f"{label}: {follower.name} ({follower.mode}) received {len(got)} entries, the log holds {len(log_changes)}; "
                       f"first difference at {mismatch}: got {[c['seq'] for c in got[mismatch:mismatch + 3]]}, log "
                       f"{[c['seq'] for c in log_changes[mismatch:mismatch + 3]]}; last switch before it: "
                       f"{switches[-1] if switches else None}")
        return False
    return True
