"""feedbench.py's HTTP: one request on its own connection (and the /metrics gauge read with it),
the decoding of a stored SSE response (chunked framing, then events), and the keep-alive writer
that PUTs the demo item."""

import asyncio
import json
import socket
import time

from feedbench_probes import now_ns


async def http_request(port, method, path, token=None, body=None, timeout=10.0):
    """One request on its own connection (Connection: close). Returns (status, body bytes)."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), timeout)
    try:
        head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
        if token:
            head += f"Authorization: Bearer {token}\r\n"
        payload = b""
        if body is not None:
            payload = body.encode()
            head += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
        writer.write(head.encode() + b"\r\n" + payload)
        raw = await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()
    header, _, rest = raw.partition(b"\r\n\r\n")
    lines = header.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
    if headers.get("transfer-encoding", "").lower() == "chunked":
        dec = ChunkedDecoder()
        rest = b"".join(dec.feed(rest))
    return status, rest


async def sse_gauge(port):
    """stockroom_feed_subscribers{transport="sse"} from /metrics (None if absent)."""
    status, body = await http_request(port, "GET", "/metrics")
    for line in body.decode().splitlines():
        if line.startswith('stockroom_feed_subscribers{transport="sse"}'):
            return float(line.split()[-1])
    return None


async def wait_gauge(port, target, timeout):
    """Polls the SSE subscriber gauge until it is <= target. Returns (seconds waited, last value)."""
    t = time.monotonic()
    value = None
    while True:
        value = await sse_gauge(port)
        if value is None or value <= target:
            return time.monotonic() - t, value
        if time.monotonic() - t > timeout:
            return time.monotonic() - t, value
        await asyncio.sleep(0.25)


# --------------------------------------------------------------------------- decoding

class ChunkedDecoder:
    """Incremental HTTP/1.1 chunked transfer decoder."""

    def __init__(self):
        self.buf = b""
        self.need = None  # bytes of chunk data (plus CRLF) still expected
        self.done = False

    def feed(self, data):
        self.buf += data
        out = []
        while not self.done:
            if self.need is None:
                i = self.buf.find(b"\r\n")
                if i < 0:
                    break
                size = int(self.buf[:i].split(b";")[0], 16)
                self.buf = self.buf[i + 2:]
                if size == 0:
                    self.done = True
                    break
                self.need = size
            if len(self.buf) < self.need + 2:
                break
            out.append(self.buf[:self.need])
            self.buf = self.buf[self.need + 2:]
            self.need = None
        return out


class SSEStream:
    """Decodes one stored HTTP response (status, headers, chunked body) into SSE events with the
    receive time of the piece that completed each event."""

    def __init__(self):
        self.head = b""
        self.status = None
        self.chunked = False
        self.chunks = ChunkedDecoder()
        self.text = b""
        self.events = []  # (ts, event, id, data, [comments])

    def feed(self, ts, data):
        if self.status is None:
            self.head += data
            if b"\r\n\r\n" not in self.head:
                return
            header, _, data = self.head.partition(b"\r\n\r\n")
            lines = header.decode("latin-1").split("\r\n")
            self.status = int(lines[0].split()[1])
            for line in lines[1:]:
                k, _, v = line.partition(":")
                if k.strip().lower() == "transfer-encoding" and "chunked" in v.lower():
                    self.chunked = True
        pieces = self.chunks.feed(data) if self.chunked else [data]
        for piece in pieces:
            self.text += piece
            while True:
                i = self.text.find(b"\n\n")
                if i < 0:
                    break
                block, self.text = self.text[:i], self.text[i + 2:]
                event, eid, data_lines, comments = "message", None, [], []
                for line in block.decode().split("\n"):
                    if line.startswith(":"):
                        comments.append(line[1:].strip())
                        continue
                    field, _, value = line.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    if field == "event":
                        event = value
                    elif field == "id":
                        eid = value
                    elif field == "data":
                        data_lines.append(value)
                self.events.append((ts, event, eid, "\n".join(data_lines) if data_lines else None, comments))


# --------------------------------------------------------------------------- writer

class Writer(asyncio.Protocol):
    """One keep-alive connection for the PUTs; each response is read by Content-Length."""

    def __init__(self):
        self.transport = None
        self.buf = b""
        self.waiter = None
        self.lost = False

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        ts = now_ns()
        self.buf += data
        i = self.buf.find(b"\r\n\r\n")
        if i < 0 or self.waiter is None:
            return
        header = self.buf[:i].decode("latin-1")
        length = 0
        for line in header.split("\r\n")[1:]:
            k, _, v = line.partition(":")
            if k.strip().lower() == "content-length":
                length = int(v)
        if len(self.buf) < i + 4 + length:
            return
        status = int(header.split("\r\n")[0].split()[1])
        body = self.buf[i + 4:i + 4 + length]
        self.buf = self.buf[i + 4 + length:]
        waiter, self.waiter = self.waiter, None
        if not waiter.done():
            waiter.set_result((ts, status, body))

    def connection_lost(self, exc):
        self.lost = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionError(f"writer connection lost: {exc!r}"))


class ItemWriter:
    def __init__(self, port, token, item):
        self.port = port
        self.token = token
        self.item = item
        self.conn = None

    async def connect(self):
        loop = asyncio.get_running_loop()
        _, self.conn = await loop.create_connection(Writer, "127.0.0.1", self.port)
        self.conn.transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    async def put(self, name, quantity):
        """PUT the item with a new name. Returns (t0, t1, status, body)."""
        return await self.put_draft({"name": name, "color": self.item.get("color"), "status": {"inStock": {"quantity": quantity}}})

    async def put_draft(self, draft):
        """PUT the item with `draft`. Returns (t0, t1, status, body)."""
        if self.conn is None or self.conn.lost:
            await self.connect()
        payload = json.dumps(draft, separators=(",", ":")).encode()
        req = (f"PUT /v1/items/{self.item['id']} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
               f"Authorization: Bearer {self.token}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(payload)}\r\n\r\n").encode() + payload
        self.conn.waiter = asyncio.get_running_loop().create_future()
        t0 = now_ns()
        self.conn.transport.write(req)
        t1, status, body = await asyncio.wait_for(self.conn.waiter, 30)
        return t0, t1, status, body

    def close(self):
        if self.conn is not None and self.conn.transport is not None:
            self.conn.transport.close()


async def first_item(port, token):
    status, body = await http_request(port, "GET", "/v1/items?limit=1", token)
    if status != 200:
        raise SystemExit(f"GET /v1/items answered {status}: {body[:300]!r}")
    items = json.loads(body)["items"]
    if not items:
        raise SystemExit("no demo item (was the server started with --demo?)")
    return items[0]
