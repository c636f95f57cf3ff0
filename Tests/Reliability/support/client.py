"""HTTP on loopback: a keep-alive client, its answers, a raw streamed request, and the bodies the
scripts send."""

import http.client
import json
import re
import socket
import time


def parse_head(head):
    """An HTTP answer's status and headers (names lowercased) from its head's bytes."""
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body) if self.body else None

    def error_code(self):
        try:
            return self.json()["error"]["code"]
        except Exception:
            return None

    def __repr__(self):
        return f"<{self.status} {self.body[:200]!r}>"


class Client:
    """One keep-alive HTTP/1.1 connection (one per thread). Connection errors propagate."""

    def __init__(self, port, token=None, timeout=30):
        self.port = port
        self.token = token
        self.timeout = timeout
        self.connection = None

    def close(self):
        if self.connection:
            self.connection.close()
            self.connection = None

    def request(self, method, path, body=None, headers=None, token=None):
        if self.connection is None:
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        all_headers = {}
        token = token or self.token
        if token:
            all_headers["Authorization"] = f"Bearer {token}"
        if body is not None:
            if not isinstance(body, (bytes, str)):
                body = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
            if isinstance(body, str):
                body = body.encode()
            all_headers["Content-Type"] = "application/json"
        all_headers.update(headers or {})
        try:
            self.connection.request(method, path, body=body, headers=all_headers)
            raw = self.connection.getresponse()
            data = raw.read()
        except Exception:
            self.close()
            raise
        response = Response(raw.status, {k.lower(): v for k, v in raw.getheaders()}, data)
        if response.headers.get("connection", "").lower() == "close":
            self.close()
        return response


def is_connection_error(error):
    return isinstance(error, (ConnectionError, http.client.HTTPException, socket.timeout, OSError))


def draft(name, quantity=1, color=None):
    return {"name": name, "color": color, "status": {"inStock": {"quantity": quantity}}}


class RawStream:
    """One HTTP request on a plain socket whose answer is read as it comes, with short timeouts so
    that a reader can look at its stop flag (http.client cannot resume a chunked read after a timeout)."""

    def __init__(self, port, request, timeout=0.5):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.settimeout(timeout)
        self.sock.sendall(request)
        self.buffer = b""
        self.eof = False

    def fill(self):
        """Reads what arrived; False at the end of the stream, None when nothing came in time."""
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return None
        if not data:
            self.eof = True
            return False
        self.buffer += data
        return True

    def head(self, stop):
        """(status, headers) once the whole head has arrived."""
        while b"\r\n\r\n" not in self.buffer:
            if stop.is_set():
                return None, None
            if self.fill() is False:
                raise ConnectionError("the connection closed before the answer's head")
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        status, headers = parse_head(head)
        return status, headers

    def rest(self, limit=2.0):
        """What more arrives within `limit` seconds (an error body)."""
        deadline = time.monotonic() + limit
        while not self.eof and time.monotonic() < deadline:
            self.fill()
        return self.buffer

    def send(self, data):
        self.sock.sendall(data)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def body_error_code(body):
    """The `error.code` of an error body's bytes, or None."""
    match = re.search(rb'"code"\s*:\s*"([^"]+)"', body)
    return match.group(1).decode() if match else None
