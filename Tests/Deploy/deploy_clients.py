"""deploy_test.py's clients on a published port: one request, one command, an SSE stream and a
WebSocket read by hand; and for the PostgreSQL scenario the threads that write through the
balancer (retrying with their key) and follow its feed (resuming from their cursor), with the
timeline of every answer they got."""

import base64
import http.client
import json
import os
import socket
import threading
import time
import traceback
import urllib.parse
import uuid

from deploy_support import CheckFailed, Client, draft, expect, is_connection_error


def request(port, method, path, token=None, body=None, headers=None):
    client = Client(port, token, timeout=30)
    try:
        return client.request(method, path, body=body, headers=headers)
    finally:
        client.close()


def command(port, token, client_id, payload):
    response = request(port, "POST", f"/v1/clients/{client_id}/commands", token, {"command": payload})
    expect(response.status == 200, f"command {payload} answered {response!r}")
    return response.json()


class SSE:
    """An SSE stream on the feed, read event by event."""

    def __init__(self, port, token, since, expect_open=True):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.connection.request("GET", f"/v1/changes/stream?since={urllib.parse.quote(since)}",
                                headers={"Authorization": f"Bearer {token}"})
        self.response = self.connection.getresponse()
        self.status = self.response.status
        if expect_open:
            expect(self.status == 200, f"SSE answered {self.status}")

    def next_event(self):
        """The next event's fields; None at the end of the stream."""
        fields = {}
        while True:
            line = self.response.fp.readline()
            if not line:
                return None
            line = line.decode().rstrip("\r\n")
            if line == "":
                if "data" in fields or "event" in fields:
                    return fields
                continue
            if line.startswith(":"):
                continue
            key, _, value = line.partition(":")
            fields[key] = value[1:] if value.startswith(" ") else value

    def close(self):
        self.connection.close()


class WebSocket:
    """A WebSocket on the feed, enough of RFC 6455 to read text messages and the close frame."""

    def __init__(self, port, token, since):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        query = urllib.parse.urlencode({"since": since, "access_token": token})
        self.sock.sendall((
            f"GET /v1/changes/ws?{query} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        self.buffer = b""
        while b"\r\n\r\n" not in self.buffer:
            chunk = self.sock.recv(4096)
            expect(chunk, "the WebSocket upgrade got no answer")
            self.buffer += chunk
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        expect(head.startswith(b"HTTP/1.1 101"), f"the WebSocket upgrade answered {head[:200]!r}")

    def _read(self, count):
        while len(self.buffer) < count:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def next_frame(self):
        """(opcode, payload) of the next frame; None when the connection ends without one."""
        try:
            first, second = self._read(2)
            length = second & 0x7F
            if length == 126:
                length = int.from_bytes(self._read(2), "big")
            elif length == 127:
                length = int.from_bytes(self._read(8), "big")
            return first & 0x0F, self._read(length)
        except EOFError:
            return None

    def close(self):
        self.sock.close()


class Timeline:
    """Every answer and connection failure the scenario's clients got, with the time it came."""

    def __init__(self):
        self.lock = threading.Lock()
        self.events = []  # (monotonic time, who, what)

    def add(self, who, what):
        with self.lock:
            self.events.append((time.monotonic(), who, what))


class Writer(threading.Thread):
    """Creates items and replaces them (If-Match) through the balancer, each write under its own
    Idempotency-Key, retried with the same key after a 502, a 503, a 409 requestInProgress or a
    failed connection until it gets its answer. `acknowledged`: (key, item id, version)."""

    RETRYABLE = (502, 503)

    def __init__(self, number, port, token, timeline, stop):
        super().__init__(name=f"writer-{number}", daemon=True)
        self.number = number
        self.client = Client(port, token, timeout=30)
        self.timeline = timeline
        self.stop_event = stop
        self.acknowledged = []
        self.retries = 0
        self.unexpected = []

    def write(self, method, path, body, headers, expected):
        key = f"w{self.number}-{len(self.acknowledged)}-{uuid.uuid4().hex[:8]}"
        for attempt in range(200):
            try:
                response = self.client.request(method, path, body=body, headers={**headers, "Idempotency-Key": key})
            except Exception as error:
                if not is_connection_error(error):
                    raise
                self.timeline.add(self.name, f"connection error {error!r}")
                self.retries += 1
                time.sleep(0.1)
                continue
            self.timeline.add(self.name, response.status)
            if response.status == expected:
                return key, response.json()
            if response.status in self.RETRYABLE or response.error_code() == "requestInProgress":
                self.retries += 1
                time.sleep(0.1)
                continue
            self.unexpected.append(f"{method} {path} answered {response!r}")
            return None, None
        self.unexpected.append(f"{method} {path}: no answer after 200 attempts")
        return None, None

    def run(self):
        try:
            while not self.stop_event.is_set():
                key, item = self.write("POST", "/v1/items", draft(f"Balanced {self.number}-{len(self.acknowledged)}", 1), {}, 201)
                if item is None:
                    return
                self.acknowledged.append((key, item["id"], item["version"]))
                for quantity in (2, 3, 4):
                    if self.stop_event.is_set():
                        break
                    key, item = self.write("PUT", f"/v1/items/{item['id']}", draft(item["name"], quantity),
                                           {"If-Match": f'"{item["version"]}"'}, 200)
                    if item is None:
                        return
                    self.acknowledged.append((key, item["id"], item["version"]))
        except Exception as error:
            self.unexpected.append(f"{error!r}\n{traceback.format_exc()}")
        finally:
            self.client.close()


class Follower(threading.Thread):
    """Follows the feed through the balancer from `cursor`: an SSE stream, or a WebSocket. When the
    stream ends or fails it reconnects and resumes from the cursor of the last change it received
    (SSE: Last-Event-ID; WebSocket: since=). `changes` is everything it received, in order."""

    def __init__(self, name, port, token, cursor, timeline, transport="sse"):
        super().__init__(name=name, daemon=True)
        self.port = port
        self.token = token
        self.cursor = cursor
        self.timeline = timeline
        self.transport = transport
        self.changes = []
        self.connects = []  # monotonic times of every (re)connection that opened
        self.finished = threading.Event()
        self.opened = threading.Event()
        self.current = None
        self.unexpected = []

    def close_current(self):
        current = self.current
        if current is not None:
            try:
                (current.sock if self.transport == "ws" else current.connection.sock).shutdown(socket.SHUT_RDWR)
            except Exception:
                pass

    def finish(self):
        self.finished.set()
        self.close_current()

    def receive(self, change):
        self.changes.append(change)
        self.cursor = change["cursor"]

    def follow_sse(self):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        holder = type("Holder", (), {"connection": connection})()
        self.current = holder
        try:
            headers = {"Authorization": f"Bearer {self.token}", "Last-Event-ID": self.cursor}
            connection.request("GET", f"/v1/changes/stream?since={urllib.parse.quote(self.cursor)}", headers=headers)
            response = connection.getresponse()
            self.timeline.add(self.name, response.status)
            if response.status != 200:
                if response.status not in (502, 503):
                    self.unexpected.append(f"the SSE stream answered {response.status} {response.read()[:300]!r}")
                return
            self.connects.append(time.monotonic())
            self.opened.set()
            fields = {}
            while True:
                line = response.readline()  # through the chunked coding: the balancer cuts chunks its own way
                if not line:
                    return
                line = line.decode().rstrip("\r\n")
                if line == "":
                    if fields.get("event") == "change":
                        change = json.loads(fields["data"])
                        if fields.get("id") != change["cursor"]:
                            self.unexpected.append(f"an event's id {fields.get('id')} is not its change's cursor")
                        self.receive(change)
                    elif fields.get("event") == "error":
                        self.unexpected.append(f"the SSE stream sent an error: {fields.get('data')}")
                    fields = {}
                elif not line.startswith(":"):
                    key, _, value = line.partition(":")
                    fields[key] = value[1:] if value.startswith(" ") else value
        finally:
            connection.close()

    def follow_ws(self):
        try:
            self.current = socket_ = WebSocket(self.port, self.token, self.cursor)
        except CheckFailed as error:
            self.timeline.add(self.name, f"upgrade failed: {error}")
            return
        try:
            self.timeline.add(self.name, 101)
            self.connects.append(time.monotonic())
            self.opened.set()
            while True:
                frame = socket_.next_frame()
                if frame is None:
                    return
                opcode, payload = frame
                if opcode == 1:
                    self.receive(json.loads(payload))
                elif opcode == 9:  # ping: a pong with the same payload, masked as a client must
                    mask = os.urandom(4)
                    socket_.sock.sendall(bytes([0x8A, 0x80 | len(payload)]) + mask
                                         + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
                elif opcode == 8:
                    code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else None
                    if code not in (1001, None):
                        self.unexpected.append(f"the WebSocket closed with {code} {payload[2:]!r}")
                    return
        finally:
            socket_.close()

    def run(self):
        while not self.finished.is_set():
            try:
                (self.follow_ws if self.transport == "ws" else self.follow_sse)()
            except Exception as error:
                if self.finished.is_set():
                    pass
                elif is_connection_error(error):
                    self.timeline.add(self.name, f"connection error {error!r}")
                else:
                    self.unexpected.append(f"{error!r}\n{traceback.format_exc()}")
            self.current = None
            if not self.finished.is_set():
                time.sleep(0.1)
