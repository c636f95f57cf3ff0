"""badinput.py's bytes on the wire: a raw loopback connection, the answers parsed from it, requests
built byte by byte; and what the case groups share (the log's name, sizes, how long a close may take)."""

import json
import socket
import time

from common import parse_head

NAME = "badinput"
MIB = 1 << 20
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
