"""feedbench.py's SSE subscribers: asyncio connections that only stamp and keep what they receive,
in groups that share a marker (the last write's name); or the streams of one sse_sink process (the
C client, CLIENT=c in run.sh), read back from its file after the round."""

import asyncio
import struct

from feedbench_probes import now_ns


# --------------------------------------------------------------------------- subscribers

class Subscriber(asyncio.Protocol):
    """One SSE connection. data_received stamps the bytes and (if `store`) keeps them; it also
    watches for `: open` and for the group's current marker (the last write's name)."""

    def __init__(self, group, request, store):
        self.group = group
        self.request = request
        self.store = store
        self.pieces = []
        self.transport = None
        self.opened = False
        self.open_ts = None
        self.tail = b""
        self.marker_ts = None
        self.bytes = 0
        self.lost = None  # (ts, repr(exc)) if the server closed the connection
        self.closing = False
        self.status_line = None
        self.heartbeats = 0

    def connection_made(self, transport):
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data):
        ts = now_ns()
        self.bytes += len(data)
        if self.store:
            self.pieces.append((ts, data))
        window = self.tail + data
        if not self.opened:
            if self.status_line is None and b"\r\n" in window:
                self.status_line = window.split(b"\r\n", 1)[0].decode("latin-1")
                if not self.status_line.startswith("HTTP/1.1 200"):
                    self.group.failed(self, f"status {self.status_line!r}: {window[:300]!r}")
                    return
            if b": open\n\n" in window:
                self.opened = True
                self.open_ts = ts
                self.group.opened(self)
        marker = self.group.marker
        if marker is not None and self.marker_ts is None and marker in window:
            self.marker_ts = ts
            self.group.marked(self)
        if b": heartbeat" in data:
            self.heartbeats += 1
        self.tail = window[-256:]

    def connection_lost(self, exc):
        if not self.closing:
            self.lost = (now_ns(), repr(exc) if exc else "EOF (server closed the connection)")
            self.group.failed(self, self.lost[1])

    def close(self):
        self.closing = True
        if self.transport is not None:
            self.transport.abort()


class Group:
    """A set of subscribers sharing one marker and the events that count opens and marker hits."""

    def __init__(self, port, token, store):
        self.port = port
        self.store = store
        self.request = (f"GET /v1/changes/stream?since=now&topics=items HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                        f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n").encode()
        self.subs = []
        self.created = 0
        self.marker = None
        self.n_open = 0
        self.n_marked = 0
        self.marked_target = 0
        self.all_marked = asyncio.Event()
        self.failures = []  # (subscriber index or None, message)
        self.open_waiters = {}

    def opened(self, sub):
        self.n_open += 1
        fut = self.open_waiters.pop(id(sub), None)
        if fut is not None and not fut.done():
            fut.set_result(True)

    def marked(self, sub):
        self.n_marked += 1
        if self.n_marked >= self.marked_target:
            self.all_marked.set()

    def failed(self, sub, message):
        self.failures.append((sub.index, message))
        fut = self.open_waiters.pop(id(sub), None)
        if fut is not None and not fut.done():
            fut.set_exception(ConnectionError(message))

    def set_marker(self, marker):
        self.marker = marker
        self.n_marked = 0
        self.all_marked.clear()
        for s in self.subs:
            s.marker_ts = None
        self.marked_target = sum(1 for s in self.subs if s.lost is None)

    async def open_one(self, timeout):
        loop = asyncio.get_running_loop()
        sub = Subscriber(self, self.request, self.store)
        sub.index = self.created
        self.created += 1
        fut = loop.create_future()
        self.open_waiters[id(sub)] = fut
        try:
            await asyncio.wait_for(loop.create_connection(lambda: sub, "127.0.0.1", self.port), timeout)
        except BaseException:
            self.open_waiters.pop(id(sub), None)
            raise
        self.subs.append(sub)
        try:
            await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"no ': open' within {timeout} s")
        return sub

    async def open_many(self, n, concurrency=128, timeout=30.0):
        """Opens n more subscribers, at most `concurrency` of them connecting or waiting for
        `: open` at a time (the server's listen backlog is 256). Returns (opened, first error)."""
        sem = asyncio.Semaphore(concurrency)
        errors = []
        opened = 0

        async def one():
            nonlocal opened
            async with sem:
                if errors:
                    return
                try:
                    await self.open_one(timeout)
                    opened += 1
                except Exception as e:  # noqa: BLE001 - reported, and it stops the ramp
                    errors.append(f"{type(e).__name__}: {e}")

        await asyncio.gather(*(one() for _ in range(n)))
        return opened, (errors[0] if errors else None), len(errors)

    def close_all(self):
        for s in self.subs:
            s.close()


class SinkSubscriber:
    """One stream of the C subscriber (sse_sink): its stamped reads, as a Subscriber keeps them."""

    def __init__(self, index):
        self.index = index
        self.pieces = []
        self.lost = None
        self.marker_ts = None


class SinkGroup:
    """The streams of one sse_sink process, read back from its file after the round."""

    def __init__(self, n):
        self.subs = [SinkSubscriber(i) for i in range(n)]
        self.failures = []

    def load(self, path, marker):
        with open(path, "rb") as f:
            data = f.read()
        tails = [b""] * len(self.subs)
        at = 0
        while at < len(data):
            ts, index, length = struct.unpack_from("<QII", data, at)
            piece = data[at + 16:at + 16 + length]
            at += 16 + length
            sub = self.subs[index]
            sub.pieces.append((ts, piece))
            window = tails[index] + piece
            if sub.marker_ts is None and marker in window:
                sub.marker_ts = ts
            tails[index] = window[-256:]

    def close_all(self):
        pass


async def open_sink(args, n, marker, path):
    """Starts sse_sink for n streams; returns the process once every stream has its `: open`."""
    proc = await asyncio.create_subprocess_exec(
        args.sink, str(args.port), args.token, str(n), marker.decode(), path, str(args.delivery_timeout),
        stdout=asyncio.subprocess.PIPE)
    line = await asyncio.wait_for(proc.stdout.readline(), 120)
    if line.strip() != b"READY":
        proc.kill()
        raise ConnectionError(f"sse_sink did not get every stream open (said {line!r})")
    return proc
