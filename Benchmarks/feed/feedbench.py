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
import math
import os
import random
import resource
import socket
import statistics
import struct
import sys
import time

now_ns = time.perf_counter_ns
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"[feedbench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- server probes

def read_status(pid):
    """VmRSS, VmHWM, RssAnon (KiB) and Threads of the server, from /proc/PID/status."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0])
            elif key == "Threads":
                out[key] = int(value)
    try:
        out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        out["fds"] = -1
    return out


def server_cpu_s(pid):
    """utime + stime of the server, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is the state (field 3 of stat); utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def client_cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def server_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


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
        if self.conn is None or self.conn.lost:
            await self.connect()
        draft = {"name": name, "color": self.item.get("color"), "status": {"inStock": {"quantity": quantity}}}
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


class LoopLag:
    """Measures how late the client's event loop wakes up (its own contribution to latency)."""

    def __init__(self, period=0.005):
        self.period = period
        self.lags = []
        self.task = None

    async def _run(self):
        while True:
            t = time.perf_counter()
            await asyncio.sleep(self.period)
            self.lags.append(time.perf_counter() - t - self.period)

    def start(self):
        self.lags = []
        self.task = asyncio.ensure_future(self._run())

    def stop(self):
        self.task.cancel()
        lags = sorted(self.lags) or [0.0]
        return {"p50_ms": pct(lags, 50) * 1e3, "p99_ms": pct(lags, 99) * 1e3, "max_ms": lags[-1] * 1e3}


def pct(sorted_values, p):
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_values:
        return float("nan")
    k = max(0, math.ceil(p / 100 * len(sorted_values)) - 1)
    return sorted_values[k]


def distribution(values_ns):
    v = sorted(values_ns)
    ms = lambda x: round(x / 1e6, 3)  # noqa: E731
    return {"n": len(v), "p50_ms": ms(pct(v, 50)), "p99_ms": ms(pct(v, 99)), "max_ms": ms(v[-1]) if v else None,
            "min_ms": ms(v[0]) if v else None}


# --------------------------------------------------------------------------- latency

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


async def latency_round(args, writer, rep, n, m, nonce):
    label = f"rep {rep} N={n} M={m}"
    names = [f"fb{nonce} r{rep} n{n} w{i:04d}" for i in range(m)]
    marker = (names[-1] + '"').encode()
    sink = None
    if args.sink:
        sink_path = f"{args.out}.sink-{rep}-{n}.bin"
        try:
            sink = await open_sink(args, n, marker, sink_path)
        except (ConnectionError, asyncio.TimeoutError) as e:
            return {"rep": rep, "n": n, "m": m, "setup_error": f"sse_sink: {e}"}
        group = SinkGroup(n)
        opened = n
    else:
        group = Group(args.port, args.token, store=True)
        opened, err, nerr = await group.open_many(n)
        if err:
            group.close_all()
            return {"rep": rep, "n": n, "m": m, "setup_error": f"{nerr} subscribers failed to open; first: {err}"}
    await asyncio.sleep(0.3)
    gauge = await sse_gauge(args.port)

    if sink is None:
        group.set_marker(marker)
    writes = []  # (t0, t1, status)
    write_errors = []
    lag = LoopLag()
    lag.start()
    sink_cpu_at_exit = None  # the sink reports its own CPU time as it exits (DONE line)
    def client_cpu():
        if sink is None:
            return client_cpu_s()
        return client_cpu_s() + (sink_cpu_at_exit if sink_cpu_at_exit is not None else server_cpu_s(sink.pid))
    s_cpu0, c_cpu0, wall0 = server_cpu_s(args.pid), client_cpu(), time.monotonic()
    interval_ns = int(args.interval_ms * 1e6)
    next_t0 = now_ns()
    for i, name in enumerate(names):
        delay = next_t0 - now_ns()
        if delay > 0:
            await asyncio.sleep(delay / 1e9)
        t0, t1, status, body = await writer.put(name, 1000 + i)
        next_t0 = t0 + interval_ns
        writes.append((t0, t1, status))
        if status != 200:
            write_errors.append(f"write {i}: status {status} {body[:200]!r}")
    if sink is not None:
        # sse_sink ends once every stream has seen the last write (or at its own timeout).
        line = await asyncio.wait_for(sink.stdout.readline(), args.delivery_timeout + 30)
        timed_out = not line.startswith(b"DONE") or int(line.split()[1]) < n
        if line.startswith(b"DONE") and len(line.split()) > 2:
            sink_cpu_at_exit = float(line.split()[2])
    else:
        try:
            await asyncio.wait_for(group.all_marked.wait(), args.delivery_timeout)
            timed_out = False
        except asyncio.TimeoutError:
            timed_out = True
    last_t1 = writes[-1][1]
    s_cpu1, c_cpu1, wall1 = server_cpu_s(args.pid), client_cpu(), time.monotonic()
    loop_lag = lag.stop()
    if sink is not None:
        if await sink.wait() != 0:
            group.failures.append((None, f"sse_sink exited with status {sink.returncode}"))
        group.load(sink_path, marker)
        os.remove(sink_path)
    else:
        await asyncio.sleep(0.2)  # anything that would arrive late (a duplicate, say) is still captured
    group.close_all()

    # Decode every subscriber's stored stream and match its events to the writes.
    index = {name: i for i, name in enumerate(names)}
    after_ack, after_send = [], []
    problems = []
    missing_total = dup_total = order_total = unexpected_total = 0
    early = 0
    for si, sub in enumerate(group.subs):
        stream = SSEStream()
        for ts, data in sub.pieces:
            stream.feed(ts, data)
        seen = []
        last_seq = None
        for ts, event, eid, data, comments in stream.events:
            if event != "change":
                if event == "message" and data is None:
                    continue  # a comment-only block (: open, : heartbeat)
                problems.append(f"sub {si}: unexpected event {event!r} data={data!r:.200}")
                unexpected_total += 1
                continue
            change = json.loads(data)
            seq = change["seq"]
            if eid != change.get("cursor"):
                problems.append(f"sub {si}: id {eid!r} != cursor {change.get('cursor')!r} (seq {seq})")
            if last_seq is not None and seq <= last_seq:
                problems.append(f"sub {si}: seq {seq} after seq {last_seq}")
            if last_seq is not None and seq != last_seq + 1:
                problems.append(f"sub {si}: seq gap {last_seq} -> {seq}")
            last_seq = seq
            name = (change.get("value") or {}).get("name")
            i = index.get(name)
            if i is None:
                problems.append(f"sub {si}: change seq {seq} with unexpected name {name!r}")
                unexpected_total += 1
                continue
            seen.append((i, ts))
        got = [i for i, _ in seen]
        if got != list(range(m)):
            counts = {}
            for i in got:
                counts[i] = counts.get(i, 0) + 1
            missing = [i for i in range(m) if i not in counts]
            dups = sorted(i for i, c in counts.items() if c > 1)
            out_of_order = sum(1 for a, b in zip(got, got[1:]) if b < a)
            missing_total += len(missing)
            dup_total += sum(counts[i] - 1 for i in dups)
            order_total += out_of_order
            problems.append(f"sub {si}: got {len(got)}/{m} writes; missing {missing[:20]}{'…' if len(missing) > 20 else ''}"
                            f" duplicated {dups[:20]} out-of-order steps {out_of_order}; server closed: {sub.lost}")
        for i, ts in seen:
            t0, t1, _ = writes[i]
            after_ack.append(ts - t1)
            after_send.append(ts - t0)
            if ts < t1:
                early += 1
        if stream.status != 200:
            problems.append(f"sub {si}: HTTP status {stream.status}")
    for idx, msg in group.failures:
        problems.append(f"sub {idx}: connection failure: {msg}")

    acks = sorted(t1 - t0 for t0, t1, _ in writes)
    result = {
        "rep": rep, "n": n, "m": m, "subscribers_open": opened, "gauge_before_writes": gauge,
        "pairs_expected": n * m, "pairs_received": len(after_ack),
        "missing": missing_total, "duplicates": dup_total, "out_of_order": order_total, "unexpected": unexpected_total,
        "delivery_timed_out": timed_out, "write_errors": write_errors, "problems": problems[:50],
        "problems_total": len(problems),
        "latency_after_ack": distribution(after_ack), "latency_after_send": distribution(after_send),
        "delivered_before_ack": early,
        "put_round_trip": distribution(acks),
        "writes_span_s": round((writes[-1][0] - writes[0][0]) / 1e9, 3),
        "writes_per_s": round((m - 1) / max(1e-9, (writes[-1][0] - writes[0][0]) / 1e9), 1),
        "last_delivery_after_last_ack_ms": round((max(s.marker_ts or 0 for s in group.subs) - last_t1) / 1e6, 3),
        "server_cpu_pct": round(100 * (s_cpu1 - s_cpu0) / (wall1 - wall0), 1),
        "client_cpu_pct": round(100 * (c_cpu1 - c_cpu0) / (wall1 - wall0), 1),
        "client_loop_lag": {k: round(v, 3) for k, v in loop_lag.items()},
        "client": "c" if sink is not None else "python",
    }
    la, ls = result["latency_after_ack"], result["latency_after_send"]
    log(f"{label}: after ack p50 {la['p50_ms']} p99 {la['p99_ms']} max {la['max_ms']} ms; after send p50 {ls['p50_ms']} "
        f"p99 {ls['p99_ms']} max {ls['max_ms']} ms; pairs {len(after_ack)}/{n * m}; missing {missing_total} dup {dup_total} "
        f"order {order_total}; server cpu {result['server_cpu_pct']}% client cpu {result['client_cpu_pct']}% "
        f"client loop lag p99 {result['client_loop_lag']['p99_ms']} ms")
    for p in problems[:10]:
        log(f"  PROBLEM {p}")
    # The server notices a closed idle stream at its next write (a change or the heartbeat):
    # wait for the gauge so that the next round does not fan out to this round's leftovers.
    waited, left = await wait_gauge(args.port, 0, args.gauge_timeout)
    result["gauge_drain_s"] = round(waited, 2)
    result["gauge_after_drain"] = left
    return result


async def run_latency(args):
    item = await first_item(args.port, args.token)
    writer = ItemWriter(args.port, args.token, item)
    await writer.connect()
    nonce = random.randrange(16 ** 6)
    # Warm-up: a few writes and a short round, not measured.
    for i in range(5):
        await writer.put(f"fb{nonce:x} warmup {i}", 1)
    await latency_round(args, writer, 0, 5, 20, f"{nonce:x}w")
    plan = [tuple(int(x) for x in p.split(":")) for p in args.plan.split()]
    rounds = []
    for rep in range(1, args.reps + 1):
        for n, m in plan:
            rounds.append(await latency_round(args, writer, rep, n, m, f"{nonce:x}"))
            if not server_alive(args.pid):
                raise SystemExit("the server is no longer running")
    writer.close()
    return {"plan": args.plan, "reps": args.reps, "interval_ms": args.interval_ms, "item_id": item["id"], "rounds": rounds}


# --------------------------------------------------------------------------- idle

async def run_idle(args):
    item = await first_item(args.port, args.token)
    writer = ItemWriter(args.port, args.token, item)
    await writer.connect()
    nonce = f"{random.randrange(16 ** 6):x}"
    await writer.put(f"fb{nonce} idle warmup", 1)
    await asyncio.sleep(args.settle)
    base = read_status(args.pid)
    steps = [{"connections": 0, **base}]
    log(f"idle: 0 connections, VmRSS {base['VmRSS']} KiB")
    group = Group(args.port, args.token, store=False)
    stop_reason = None
    for target in [int(x) for x in args.steps.split()]:
        need = target - len(group.subs)
        t = time.monotonic()
        opened, err, nerr = await group.open_many(need, timeout=args.open_timeout)
        open_s = time.monotonic() - t
        if err:
            stop_reason = (f"at step {target}: {nerr} of {need} new connections failed (first: {err}); "
                           f"{len(group.subs)} connected")
            log(f"idle: STOP {stop_reason}")
            break
        await asyncio.sleep(args.settle)
        status = read_status(args.pid)
        gauge = await sse_gauge(args.port)
        # One write must reach every open subscriber.
        name = f"fb{nonce} idle {target}"
        group.set_marker((name + '"').encode())
        t0, t1, code, body = await writer.put(name, target)
        try:
            await asyncio.wait_for(group.all_marked.wait(), args.delivery_timeout)
        except asyncio.TimeoutError:
            pass
        reached = [s.marker_ts for s in group.subs if s.marker_ts is not None]
        lost = sum(1 for s in group.subs if s.lost is not None)
        step = {"connections": len(group.subs), "open_s": round(open_s, 2), "gauge": gauge, **status,
                "write_status": code, "reached": len(reached), "lost": lost,
                "fanout_after_ack": distribution([ts - t1 for ts in reached]),
                "failures": [m for _, m in group.failures][:5]}
        if step["connections"] > 0:
            prev = steps[-1]
            step["kib_per_conn_since_prev"] = round((status["VmRSS"] - prev["VmRSS"]) / (step["connections"] - prev["connections"]), 2)
            step["kib_per_conn_since_0"] = round((status["VmRSS"] - base["VmRSS"]) / step["connections"], 2)
        steps.append(step)
        f = step["fanout_after_ack"]
        log(f"idle: {step['connections']} connections (opened in {step['open_s']} s; gauge {gauge}): VmRSS {status['VmRSS']} KiB "
            f"(+{step.get('kib_per_conn_since_prev')} KiB/conn since the previous step), threads {status['Threads']}, "
            f"fds {status['fds']}; write {code} reached {len(reached)}/{len(group.subs)} (lost {lost}); "
            f"fan-out after ack p50 {f['p50_ms']} p99 {f['p99_ms']} max {f['max_ms']} ms")
        if len(reached) < len(group.subs) - lost or code != 200:
            stop_reason = f"at step {target}: the write reached only {len(reached)} of {len(group.subs)} subscribers (status {code})"
            log(f"idle: STOP {stop_reason}")
            break
        if not server_alive(args.pid):
            stop_reason = "the server exited"
            break
    heartbeats = sum(s.heartbeats for s in group.subs)
    total = len(group.subs)
    t = time.monotonic()
    group.close_all()
    # Leftover streams are found at their next heartbeat or change.
    waited, left = await wait_gauge(args.port, 0, args.gauge_timeout)
    await asyncio.sleep(args.settle)
    after = read_status(args.pid)
    log(f"idle: closed {total}; server gauge back to {left} after {waited:.1f} s; VmRSS {after['VmRSS']} KiB")
    # Leak or allocator retention? Open as many again: a leak grows VmRSS by as much again,
    # memory that the allocator kept for reuse does not.
    reopen = None
    if total and args.reopen:
        again = Group(args.port, args.token, store=False)
        opened, err, nerr = await again.open_many(total, timeout=args.open_timeout)
        await asyncio.sleep(args.settle)
        status = read_status(args.pid)
        name = f"fb{nonce} idle reopen"
        again.set_marker((name + '"').encode())
        t0, t1, code, body = await writer.put(name, 1)
        try:
            await asyncio.wait_for(again.all_marked.wait(), args.delivery_timeout)
        except asyncio.TimeoutError:
            pass
        reopen = {"connections": len(again.subs), "error": err, **status, "write_status": code,
                  "reached": again.n_marked, "lost": sum(1 for s in again.subs if s.lost is not None)}
        again.close_all()
        w2, left2 = await wait_gauge(args.port, 0, args.gauge_timeout)
        reopen["gauge_after_close"] = left2
        reopen["VmRSS_after_close"] = read_status(args.pid)["VmRSS"]
        log(f"idle: reopened {len(again.subs)}: VmRSS {status['VmRSS']} KiB (was {steps[-1]['VmRSS']} KiB with the first "
            f"{total}); write reached {again.n_marked}/{len(again.subs)}; closed, VmRSS {reopen['VmRSS_after_close']} KiB")
    writer.close()
    return {"steps": steps, "stop_reason": stop_reason, "closed": total, "gauge_drain_s": round(waited, 2),
            "gauge_after_close": left, "after_close": after, "heartbeats_seen": heartbeats, "reopen": reopen,
            "client_fd_limit": resource.getrlimit(resource.RLIMIT_NOFILE)[0]}


# --------------------------------------------------------------------------- report

def fmt(x, digits=2):
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def report(args):
    lat = json.load(open(args.latency)) if args.latency and os.path.exists(args.latency) else None
    idle = json.load(open(args.idle)) if args.idle and os.path.exists(args.idle) else None
    env = os.environ.get
    kv = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "git": env("GIT_REV", "unknown"),
          "host_cpus": os.cpu_count(), "loadavg_before": env("LOAD_BEFORE", "?"), "loadavg_after": env("LOAD_AFTER", "?"),
          "swift": env("SWIFT_VERSION", "?"), "python": sys.version.split()[0], "fd_limit": env("FD_LIMIT", "?"),
          "db_synchronous": env("DB_SYNCHRONOUS", "full (default)")}
    lines = []
    errors = 0
    lines.append("==================== Stockroom change-feed benchmark summary ====================")
    lines.append(f"git {kv['git']}, {kv['host_cpus']} CPUs, load average before/after: {kv['loadavg_before']} / {kv['loadavg_after']}")
    c_sink = bool(lat) and any(r.get("client") == "c" for r in lat["rounds"])
    kv["client"] = "c" if c_sink else "python"
    client = ("latency subscribers in C (sse_sink, epoll), writer and idle phase in " if c_sink else "") + f"Python {kv['python']} asyncio"
    lines.append(f"client: {client}, one process each; fd limit {kv['fd_limit']}; db.synchronous {kv['db_synchronous']}")
    if lat:
        rounds = [r for r in lat["rounds"] if r["rep"] > 0]
        for r in lat["rounds"]:
            if r["rep"] == 0 and (r.get("setup_error") or r.get("problems_total") or r.get("write_errors")):
                errors += 1
                lines.append(f"  WARM-UP ROUND PROBLEMS: {r.get('setup_error') or r.get('problems')[:5]} {r.get('write_errors')}")
        plan = [tuple(int(x) for x in p.split(":")) for p in lat["plan"].split()]
        lines.append("")
        lines.append(f"(1) commit-to-delivery latency, SSE since=now&topics=items; M sequential PUTs {lat['interval_ms']} ms apart;")
        lines.append(f"    percentiles over all (subscriber, write) pairs of a round; median of {lat['reps']} rounds [per round]")
        lines.append("    'after ack' = receive - PUT response read (t1); 'after send' = receive - PUT request sent (t0)")
        for n, m in plan:
            rs = [r for r in rounds if r["n"] == n and r["m"] == m]
            ok = [r for r in rs if "setup_error" not in r]
            for r in rs:
                if "setup_error" in r:
                    errors += 1
                    lines.append(f"    N={n}: SETUP ERROR rep {r['rep']}: {r['setup_error']}")
            if not ok:
                continue

            def med(key, sub):
                vals = [r[key][sub] for r in ok if r[key][sub] is not None]
                return statistics.median(vals) if vals else None

            def per(key, sub):
                return " ".join(fmt(r[key][sub]) for r in ok)

            lines.append(f"  N={n:<5} M={m:<4} after ack : p50 {fmt(med('latency_after_ack', 'p50_ms'))}  p99 {fmt(med('latency_after_ack', 'p99_ms'))}"
                         f"  max {fmt(med('latency_after_ack', 'max_ms'))} ms   [p50 {per('latency_after_ack', 'p50_ms')}] "
                         f"[p99 {per('latency_after_ack', 'p99_ms')}] [max {per('latency_after_ack', 'max_ms')}]")
            lines.append(f"  {'':16} after send: p50 {fmt(med('latency_after_send', 'p50_ms'))}  p99 {fmt(med('latency_after_send', 'p99_ms'))}"
                         f"  max {fmt(med('latency_after_send', 'max_ms'))} ms   [p50 {per('latency_after_send', 'p50_ms')}] "
                         f"[p99 {per('latency_after_send', 'p99_ms')}] [max {per('latency_after_send', 'max_ms')}]")
            pairs = sum(r["pairs_received"] for r in ok)
            expected = sum(r["pairs_expected"] for r in ok)
            miss = sum(r["missing"] for r in ok)
            dup = sum(r["duplicates"] for r in ok)
            order = sum(r["out_of_order"] for r in ok)
            unexp = sum(r["unexpected"] for r in ok)
            probs = sum(r["problems_total"] for r in ok)
            werr = sum(len(r["write_errors"]) for r in ok)
            early = sum(r["delivered_before_ack"] for r in ok)
            errors += werr + probs
            lines.append(f"  {'':16} PUT round trip p50 {fmt(statistics.median(r['put_round_trip']['p50_ms'] for r in ok))} ms"
                         f" (per round {' '.join(fmt(r['put_round_trip']['p50_ms']) for r in ok)}); writes achieved"
                         f" {' '.join(fmt(r['writes_per_s'], 1) for r in ok)} /s (target {1000 / lat['interval_ms']:.0f}/s)")
            lines.append(f"  {'':16} delivered before the PUT response was read: {early} of {pairs} pairs;"
                         f" server CPU {' '.join(fmt(r['server_cpu_pct'], 0) for r in ok)} %, client CPU {' '.join(fmt(r['client_cpu_pct'], 0) for r in ok)} %,"
                         f" client loop lag p99 {' '.join(fmt(r['client_loop_lag']['p99_ms'], 1) for r in ok)} ms")
            lines.append(f"  {'':16} deliveries {pairs}/{expected}; missing {miss}, duplicated {dup}, out of order {order},"
                         f" unexpected {unexp}, write errors {werr}; problem reports {probs}")
            kv[f"lat_n{n}_m{m}_after_ack_p50_ms"] = med("latency_after_ack", "p50_ms")
            kv[f"lat_n{n}_m{m}_after_ack_p99_ms"] = med("latency_after_ack", "p99_ms")
            kv[f"lat_n{n}_m{m}_after_ack_max_ms"] = med("latency_after_ack", "max_ms")
            kv[f"lat_n{n}_m{m}_after_send_p50_ms"] = med("latency_after_send", "p50_ms")
            kv[f"lat_n{n}_m{m}_after_send_p99_ms"] = med("latency_after_send", "p99_ms")
            kv[f"lat_n{n}_m{m}_after_send_max_ms"] = med("latency_after_send", "max_ms")
            kv[f"lat_n{n}_m{m}_after_ack_rounds_p50_p99_max"] = "; ".join(
                f"{r['latency_after_ack']['p50_ms']} {r['latency_after_ack']['p99_ms']} {r['latency_after_ack']['max_ms']}" for r in ok)
            kv[f"lat_n{n}_m{m}_deliveries"] = f"{pairs}/{expected}"
            kv[f"lat_n{n}_m{m}_put_rtt_p50_ms_rounds"] = " ".join(str(r["put_round_trip"]["p50_ms"]) for r in ok)
            kv[f"lat_n{n}_m{m}_writes_per_s_rounds"] = " ".join(str(r["writes_per_s"]) for r in ok)
            kv[f"lat_n{n}_m{m}_missing_dup_order_unexpected"] = f"{miss} {dup} {order} {unexp}"
            for r in ok:
                for p in r["problems"][:5]:
                    lines.append(f"  {'':16} PROBLEM rep {r['rep']}: {p}")
    if idle:
        lines.append("")
        lines.append("(2) idle SSE subscribers: server VmRSS after each step, and one PUT that must reach all of them")
        base = idle["steps"][0]
        lines.append(f"  {0:>6} connections  VmRSS {base['VmRSS'] / 1024:8.1f} MiB   threads {base['Threads']}  fds {base['fds']}")
        kv["idle_rss_kib_0"] = base["VmRSS"]
        for s in idle["steps"][1:]:
            f = s["fanout_after_ack"]
            missed = s["connections"] - s["reached"]
            errors += missed + s["lost"] + (s["write_status"] != 200)
            lines.append(f"  {s['connections']:>6} connections  VmRSS {s['VmRSS'] / 1024:8.1f} MiB   +{fmt(s['kib_per_conn_since_prev'])} KiB/conn"
                         f" since previous step ({fmt(s['kib_per_conn_since_0'])} since 0)  threads {s['Threads']}  fds {s['fds']}"
                         f"  opened in {s['open_s']} s")
            lines.append(f"  {'':20} write reached {s['reached']}/{s['connections']} (server gauge {fmt(s['gauge'], 0)}; lost {s['lost']});"
                         f" fan-out after ack p50 {f['p50_ms']} p99 {f['p99_ms']} max {f['max_ms']} ms")
            kv[f"idle_rss_kib_{s['connections']}"] = s["VmRSS"]
            kv[f"idle_kib_per_conn_{s['connections']}_since_prev"] = s["kib_per_conn_since_prev"]
            kv[f"idle_fanout_{s['connections']}_p50_p99_max_ms"] = f"{f['p50_ms']} {f['p99_ms']} {f['max_ms']}"
            kv[f"idle_reached_{s['connections']}"] = f"{s['reached']}/{s['connections']}"
        last = idle["steps"][-1]
        if len(idle["steps"]) > 1:
            slope = (last["VmRSS"] - base["VmRSS"]) / last["connections"]
            kv["idle_kib_per_conn_overall"] = round(slope, 2)
            lines.append(f"  overall: {slope:.2f} KiB per idle connection (0 -> {last['connections']})")
        a = idle["after_close"]
        lines.append(f"  after closing all {idle['closed']}: server subscriber gauge {fmt(idle['gauge_after_close'], 0)} after"
                     f" {idle['gauge_drain_s']} s; VmRSS {a['VmRSS'] / 1024:.1f} MiB, threads {a['Threads']}, fds {a['fds']}")
        kv["idle_rss_kib_after_close"] = a["VmRSS"]
        ro = idle.get("reopen")
        if ro:
            missed = ro["connections"] - ro["reached"]
            errors += missed + ro["lost"] + (ro["write_status"] != 200) + (1 if ro["error"] else 0)
            lines.append(f"  reopened {ro['connections']} after that: VmRSS {ro['VmRSS'] / 1024:.1f} MiB (first time {last['VmRSS'] / 1024:.1f} MiB):"
                         f" {'memory reused, not leaked' if ro['VmRSS'] - last['VmRSS'] < 0.25 * (last['VmRSS'] - base['VmRSS']) else 'GREW AGAIN: leak?'};"
                         f" write reached {ro['reached']}/{ro['connections']}; closed again: VmRSS {ro['VmRSS_after_close'] / 1024:.1f} MiB"
                         + (f"; error {ro['error']}" if ro["error"] else ""))
            kv["idle_reopen_rss_kib"] = ro["VmRSS"]
            kv["idle_reopen_reached"] = f"{ro['reached']}/{ro['connections']}"
        kv["idle_gauge_drain_s"] = idle["gauge_drain_s"]
        if idle["stop_reason"]:
            lines.append(f"  STOPPED EARLY: {idle['stop_reason']}")
            kv["idle_stop_reason"] = idle["stop_reason"]
    valid = "yes" if errors == 0 else "no"
    kv["errors_total"] = errors
    kv["valid"] = valid
    kv["command"] = args.command
    lines.append("")
    lines.append(f"missed / duplicated / out-of-order deliveries and errors: {errors}  -> valid: {valid}")
    lines.append("Details (every round): Benchmarks/feed/last-run.txt")
    lines.append(f"Reproduce: {args.command}")
    lines.append("=" * 82)
    text = "\n".join(lines)
    print(text)
    with open(args.summary, "w") as f:
        f.write(text + "\n\n# machine-readable (key=value)\n")
        for k, v in kv.items():
            f.write(f"{k}={v}\n")
        if lat:
            f.write("\n# every latency round (rep 0 is the unmeasured warm-up)\n")
            for r in lat["rounds"]:
                f.write(json.dumps({k: v for k, v in r.items() if k != "problems"}, separators=(",", ":")) + "\n")
    return 0 if valid == "yes" else 1


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
