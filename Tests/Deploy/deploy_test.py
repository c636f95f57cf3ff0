#!/usr/bin/env python3
"""The deployment as docs/production.md ("Running in production") describes it, against the real image.

Builds the image from the repository's Dockerfile with the repository's docker-compose.yml, then,
through the published port from this host:

  image     the image as a production user wants it: non-root, no compiler, no source, the Swift
            runtime linked statically, under 150 MB added to its runtime base
  up        `up -d` turns healthy through /ready; an item, openEdit -> updateDraft -> save, the
            change on an SSE stream opened before the write; `down` and `up` keep every item and
            every cursor (same epoch)
  backup    `stockroom backup --to` with `exec`, `restore --from` with `run` on the stopped
            service: what was written after the backup is gone, old cursors get 410
  stop      `stop` ends the server with SIGTERM, exit status 0 within 5 s, while a long-poll, an
            SSE stream and a WebSocket are open; each ends as API.md says
  settings  port, log level, synchronous mode and a limit set by environment take effect; a bad
            setting makes the container exit 64 with a line naming it in `logs`

then docker-compose.postgres.yml (PostgreSQL, three daemons of the same image, HAProxy), through
the balancer's published port:

  postgres  `up -d` turns all five services healthy (the daemons migrate one database at once); a
            token made with `exec`; three SSE streams (one per daemon) and a WebSocket follow the
            feed from a snapshot's cursor while four writers create and replace items, each write
            under its own Idempotency-Key, retried after a 502, a 503, a 409 requestInProgress or a
            dropped connection; one daemon is stopped mid-run and started again. Every stream,
            resuming from its last cursor after each reconnect (SSE: Last-Event-ID), received
            exactly seqs snapshot+1 ... head, once each, in order; every acknowledged write is in
            it once, with the id and version its answer gave; 502/503 and dropped connections
            only in the 10 s after the stop, no other 5xx; an SSE stream was cut and resumed; the
            balancer logged the daemon DOWN and UP again, and no token (query string); the
            daemons logged no 5xx but 503. When no image is tagged postgres:15-bookworm (no
            registry), the stand-in of Tests/Deploy/postgres is built under that tag first.

Each check runs under its own compose project with its own volumes, removed with its containers
afterwards (the built images stay: they are the build cache). When no Docker engine answers, the test
starts dockerd itself and stops it by PID at the end. `--local-images SCRIPT` runs a script that
tags local stand-ins for the Dockerfile's base images first (on a machine without a registry:
../shared/container/local-images.sh). Python 3.9+, standard library only; needs root (dockerd)
or a user in the docker group. Prints "N passed, N failed" last; exits 1 when a check failed.
"""

import argparse
import base64
import collections
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "Tests", "Reliability"))
from common import Client, draft, is_connection_error, list_items, replay_feed  # noqa: E402

IMAGE = "stockroom:deploy-test"
# docker-compose.postgres.yml's other images: the balancer's (built by the test) and PostgreSQL's.
BALANCER_IMAGE = "stockroom-haproxy:deploy-test"
POSTGRES_IMAGE = "postgres:15-bookworm"
BUILD_ENV = {"DOCKER_BUILDKIT": "0", "COMPOSE_DOCKER_CLI_BUILD": "0"}
# The runtime base the Dockerfile's last stage starts from.
RUNTIME_BASE = "debian:bookworm-slim"
ADDED_LAYERS_LIMIT = 150 * 1000 * 1000
# The override files of the run; removed at its end.
WORKDIR = tempfile.mkdtemp(prefix="stockroom-deploy-")


def say(message):
    print(f"[deploy {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class CheckFailed(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise CheckFailed(message)


def run(command, check=True, timeout=600, env=None, capture=True):
    result = subprocess.run(
        command, cwd=ROOT, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if capture else None, stderr=subprocess.STDOUT if capture else None,
        text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise CheckFailed(f"{' '.join(command)} exited {result.returncode}:\n{(result.stdout or '')[-3000:]}")
    return result


def compose_command():
    """Compose v2 (`docker compose`) when the client has it, else v1 (`docker-compose`)."""
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    raise CheckFailed("neither `docker compose` nor `docker-compose` is installed")


def wait_until(what, predicate, timeout, interval=0.25):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise CheckFailed(f"{what}: not within {timeout} s")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Engine:
    """The Docker engine: the one that answers, or a dockerd this test starts and stops by PID."""

    def __init__(self):
        self.process = None
        self.log = None

    def answers(self):
        return subprocess.run(["docker", "info"], capture_output=True).returncode == 0

    def start(self):
        if self.answers():
            return
        if not shutil.which("dockerd"):
            raise CheckFailed("no Docker engine answers and dockerd is not installed (Debian: apt-get install docker.io)")
        self.log = tempfile.NamedTemporaryFile(prefix="deploy-dockerd-", suffix=".log", delete=False)
        say(f"starting dockerd (log {self.log.name})")
        self.process = subprocess.Popen(
            ["dockerd", "--storage-driver=overlay2", "--pidfile", "/run/deploy-test-dockerd.pid"],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        wait_until("dockerd answering", lambda: self.process.poll() is not None or self.answers(), 60)
        if self.process.poll() is not None:
            raise CheckFailed(f"dockerd exited {self.process.returncode}; see {self.log.name}")

    def stop(self):
        if self.process is None or self.process.poll() is not None:
            return
        say(f"stopping dockerd (pid {self.process.pid})")
        self.process.terminate()
        try:
            self.process.wait(30)
            os.unlink(self.log.name)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Project:
    """One compose project: a compose file of the repository (docker-compose.yml unless told; and an
    override, when given) under its own name, so its containers and volumes are its own."""

    def __init__(self, compose, name, port, override=None, file="docker-compose.yml", env=None):
        self.compose = compose
        self.name = name
        self.port = port
        self.files = ["-f", os.path.join(ROOT, file)]
        self.override_path = None
        if override:
            self.override_path = os.path.join(WORKDIR, f"{name}.yml")
            with open(self.override_path, "w") as f:
                f.write(override)
            self.files += ["-f", self.override_path]
        self.env = {"STOCKROOM_IMAGE": IMAGE, "STOCKROOM_PORT": str(port), **BUILD_ENV, **(env or {})}

    def __call__(self, *arguments, check=True, timeout=600):
        return run([*self.compose, "-p", self.name, *self.files, *arguments], check=check, timeout=timeout, env=self.env)

    def container(self, service="stockroom"):
        return self("ps", "-q", service).stdout.strip()

    def state(self, service="stockroom"):
        output = run(["docker", "inspect", "-f", "{{json .State}}", self.container(service)]).stdout
        return json.loads(output)

    def wait_healthy(self, timeout=90, service="stockroom"):
        def healthy():
            state = self.state(service)
            if state.get("Status") == "exited" or state.get("Restarting"):
                raise CheckFailed(f"{service} exited {state.get('ExitCode')}:\n{self.logs(service)[-3000:]}")
            return state.get("Health", {}).get("Status") == "healthy"
        wait_until(f"{service} healthy", healthy, timeout)

    def logs(self, service="stockroom"):
        return self("logs", "--no-color", service, check=False).stdout

    def token(self, user, role, service="stockroom"):
        output = self("exec", "-T", service, "/app/stockroom", "token", "create", "--user", user, "--role", role).stdout
        return output.strip().splitlines()[-1].strip()

    def remove(self):
        """Its containers and volume; again is harmless."""
        self("down", "-v", "--remove-orphans", "-t", "5", check=False)


# ---- HTTP on the published port ----

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


# ---- the checks ----

def check_image():
    image = json.loads(run(["docker", "image", "inspect", IMAGE]).stdout)[0]
    base = json.loads(run(["docker", "image", "inspect", RUNTIME_BASE]).stdout)[0]
    config = image["Config"]
    expect(config.get("User") == "stockroom:stockroom", f"the image runs as {config.get('User')!r}, not stockroom")
    expect(config.get("Entrypoint") == ["/app/stockroom"], f"entrypoint {config.get('Entrypoint')}")
    added = image["Size"] - base["Size"]
    say(f"image {image['Size'] / 1e6:.0f} MB: {added / 1e6:.1f} MB added to {RUNTIME_BASE} ({base['Size'] / 1e6:.0f} MB)")
    expect(added < ADDED_LAYERS_LIMIT, f"the image adds {added / 1e6:.1f} MB to its base (limit 150 MB)")
    probe = run(["docker", "run", "--rm", "--entrypoint", "bash", IMAGE, "-c",
                 'echo "uid=$(id -u)"; for tool in swift swiftc clang gcc cc ld; do command -v $tool; done;'
                 ' for path in /src /app/Sources /app/Package.swift; do [ -e $path ] && echo "source $path"; done;'
                 ' ldd /app/stockroom; ls /app'], check=False).stdout
    lines = probe.splitlines()
    expect(lines and lines[0] == "uid=10001", f"the image's user is {lines[:1]}, not uid 10001")
    compilers = [line for line in lines if line.startswith("/") and os.path.basename(line) in ("swift", "swiftc", "clang", "gcc", "cc", "ld")]
    expect(not compilers, f"a compiler or linker is in the image: {compilers}")
    expect(not any(line.startswith("source ") for line in lines), f"source in the image:\n{probe}")
    expect("libsqlite3" in probe, f"ldd did not run:\n{probe}")
    expect("libswiftCore" not in probe and "libFoundation" not in probe, f"the Swift runtime is linked dynamically:\n{probe}")
    expect("not found" not in probe, f"a library the binary needs is missing:\n{probe}")
    for part in ("stockroom", "swift-backtrace-static", "stockroom_StockroomServer.resources", "stockroom_StockroomMigrations.resources"):
        expect(part in lines, f"/app lacks {part}:\n{probe}")
    version = run(["docker", "run", "--rm", IMAGE, "--help"]).stdout
    expect("serve" in version, f"`stockroom --help` in the image printed {version[:500]!r}")
    return f"{added / 1e6:.1f} MB added to the runtime base"


def check_up(project):
    project("up", "-d")
    project.wait_healthy()
    port = project.port
    expect(request(port, "GET", "/health").status == 200, "/health is not 200 through the published port")
    token = project.token("deploy", "editor")

    snapshot = request(port, "GET", "/v1/snapshot", token)
    expect(snapshot.status == 200, f"snapshot answered {snapshot!r}")
    start_cursor = snapshot.json()["cursor"]
    stream = SSE(port, token, start_cursor)
    try:
        created = request(port, "POST", "/v1/items", token, draft("Container Lamp", 5))
        expect(created.status == 201, f"create answered {created!r}")
        item_id = created.json()["id"]
        command(port, token, "phone", {"openEdit": {"itemID": item_id}})
        command(port, token, "phone", {"updateDraft": {"draft": draft("Container Lamp (saved)", 7)}})
        saved = command(port, token, "phone", {"save": {}})
        expect(saved["item"]["name"] == "Container Lamp (saved)" and saved["item"]["version"] == 2,
               f"save answered {saved}")
        expect(saved["navigation"]["destination"] is None, f"save left {saved['navigation']['destination']}")
        seen = None
        while seen is None:
            event = stream.next_event()
            expect(event is not None, "the SSE stream ended before the save's change arrived")
            change = json.loads(event["data"])
            if change["entity"] == "item" and change["id"] == item_id and change.get("value", {}).get("version") == 2:
                seen = change
        expect(seen["value"]["name"] == "Container Lamp (saved)", f"the SSE change is {seen}")
        expect(event.get("id") == seen["cursor"], "the SSE event's id is not the change's cursor")
    finally:
        stream.close()

    client = Client(port, token)
    before_items = list_items(client)
    changes, head_cursor = replay_feed(client, since=start_cursor)
    client.close()

    project("down")  # the volume stays
    project("up", "-d")
    project.wait_healthy()
    after_items = list_items(client)
    expect(after_items == before_items, "down/up changed the items")
    at_head = request(port, "GET", f"/v1/changes?since={urllib.parse.quote(head_cursor)}", token)
    expect(at_head.status == 200, f"the cursor from before down/up answered {at_head!r} (a new epoch?)")
    resumed, _ = replay_feed(client, since=start_cursor)  # raises on anything but 200
    client.close()
    expect([c["seq"] for c in resumed] == [c["seq"] for c in changes], "the log after down/up differs from before")
    # The static binary runs its tasks on the event loops as the host's build does (its enqueue
    # hook is set by address; by name it cannot be found in a static binary).
    executor = re.search(r"executor=(.*) \[stockroom\] global executor", project.logs())
    expect(executor and executor.group(1) == "event loops, as the generic executor",
           f"the server's global executor is {executor.group(1) if executor else 'not logged'}")
    return token, head_cursor, (
        f"{len(changes)} changes, SSE saw the save, down/up kept {len(after_items)} items; "
        f"global executor: {executor.group(1)}")


def check_backup(project, token, head_cursor):
    port = project.port
    project("exec", "-T", "stockroom", "/app/stockroom", "backup", "--to", "/data/backup.sqlite")
    later = request(port, "POST", "/v1/items", token, draft("Written after the backup", 1))
    expect(later.status == 201, f"create answered {later!r}")
    project("stop", "-t", "15")
    restored = project("run", "--rm", "-T", "stockroom", "restore", "--from", "/data/backup.sqlite")
    say("restore: " + restored.stdout.strip().splitlines()[-1] if restored.stdout.strip() else "restore printed nothing")
    project("start")
    project.wait_healthy()
    client = Client(port, token)
    names = [item["name"] for item in list_items(client)]
    client.close()
    expect("Container Lamp (saved)" in names, f"the restored database lacks the saved item: {names}")
    expect("Written after the backup" not in names, "the restore kept an item written after the backup")
    old = request(port, "GET", f"/v1/changes?since={urllib.parse.quote(head_cursor)}", token)
    expect(old.status == 410 and old.error_code() == "resyncRequired", f"an old cursor after restore answered {old!r}")
    return "backup with exec, restore with run: later write gone, old cursor 410"


def check_stop(project, token):
    port = project.port
    head = request(port, "GET", "/v1/changes?since=now", token).json()["cursor"]
    poll = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    poll.request("GET", f"/v1/changes?since={urllib.parse.quote(head)}&wait=60",
                 headers={"Authorization": f"Bearer {token}"})
    stream = SSE(port, token, head)
    socket_ = WebSocket(port, token, head)
    metrics = wait_until("three subscribers in /metrics", lambda: (
        (text := request(port, "GET", "/metrics").body.decode())
        and all(re.search(rf'stockroom_feed_subscribers\{{transport="{t}"\}} 1\b', text) for t in ("sse", "ws", "longpoll"))
        and text), 20)
    expect(metrics, "the subscribers did not show")
    container = project.container()
    started = time.monotonic()
    project("stop", "-t", "5")  # SIGTERM, then SIGKILL (exit 137) after 5 s
    took = time.monotonic() - started
    state = json.loads(run(["docker", "inspect", "-f", "{{json .State}}", container]).stdout)
    expect(state["ExitCode"] == 0 and not state["OOMKilled"],
           f"the server exited {state['ExitCode']} on SIGTERM (137: killed after 5 s)\n{project.logs()[-3000:]}")

    answer = poll.getresponse()
    body = json.loads(answer.read())
    expect(answer.status == 200 and "cursor" in body and body["changes"] == [],
           f"the long-poll answered {answer.status} {body}")
    while (event := stream.next_event()) is not None:
        pass  # the stream ends: EOF after whatever was sent
    frames = []
    while (frame := socket_.next_frame()) is not None:
        frames.append(frame)
        if frame[0] == 8:
            break
    closes = [payload for opcode, payload in frames if opcode == 8]
    expect(closes and int.from_bytes(closes[0][:2], "big") == 1001,
           f"the WebSocket did not get a close frame with 1001: {frames}")
    for closeable in (poll, stream, socket_):
        closeable.close()
    return f"exit 0 in {took:.1f} s with a long-poll, an SSE stream and a WebSocket open"


def check_settings(compose, name):
    port = free_port()
    # Compose appends an override's ports to the file's: the container's 9090 is published too.
    project = Project(compose, name, free_port(), override=(
        "services:\n  stockroom:\n"
        f"    ports:\n      - \"{port}:9090\"\n"
        "    environment:\n"
        "      HTTP_PORT: '9090'\n      DB_SYNCHRONOUS: normal\n      FEED_MAX_SUBSCRIBERS_PER_TOKEN: '1'\n"))
    quiet = Project(compose, name + "-quiet", free_port(), override=(
        "services:\n  stockroom:\n    environment:\n      LOG_LEVEL: warning\n"))
    bad = Project(compose, name + "-bad", free_port(),
                  override="services:\n  stockroom:\n    environment:\n      HTTP_PORT: abc\n")
    try:
        project("up", "-d")
        project.wait_healthy()
        token = project.token("settings", "editor")
        expect(request(port, "GET", "/health").status == 200, "not served on HTTP_PORT=9090")
        first = SSE(port, token, "now")
        second = SSE(port, token, "now", expect_open=False)
        first.close()
        second.close()
        expect(second.status == 503, f"FEED_MAX_SUBSCRIBERS_PER_TOKEN=1: a second stream answered {second.status}")
        logs = project.logs()
        expect(re.search(r"synchronous=normal .*\] database$", logs, re.M), f"DB_SYNCHRONOUS=normal is not in force:\n{logs[-2000:]}")
        expect("open-file limit" in logs and "http.status=200" in logs, f"LOG_LEVEL's default (info) logs no info lines:\n{logs[-2000:]}")
        project.remove()

        quiet("up", "-d")
        quiet.wait_healthy()
        expect(request(quiet.port, "GET", "/health").status == 200, "/health is not 200")
        logs = quiet.logs()
        expect("open-file limit" not in logs and "http.status=" not in logs,
               f"LOG_LEVEL=warning still logs info lines:\n{logs[-2000:]}")
        quiet.remove()

        bad("up", "-d")

        def exited():
            state = bad.state()
            return state if state["Status"] == "exited" or state["Restarting"] or state["ExitCode"] != 0 else None
        state = wait_until("the container with HTTP_PORT=abc exiting", exited, 60)
        expect(state["ExitCode"] == 64, f"a bad HTTP_PORT exited {state['ExitCode']}, not 64")
        line = ('stockroom: invalid setting http.port (environment variable HTTP_PORT): "abc"; '
                'expected an integer from 0 to 65535')
        logs = bad.logs()
        expect(line in logs, f"`logs` does not show the line naming the setting:\n{logs[-2000:]}")
    finally:
        for each in (project, quiet, bad):
            each.remove()
    return ("HTTP_PORT, DB_SYNCHRONOUS, FEED_MAX_SUBSCRIBERS_PER_TOKEN, LOG_LEVEL in force; "
            "HTTP_PORT=abc exits 64 with its line in `logs`")


# ---- PostgreSQL: three daemons behind HAProxy (docker-compose.postgres.yml) ----

PG_SERVICES = ("postgres", "stockroom-1", "stockroom-2", "stockroom-3", "balancer")
# The daemon the scenario stops and starts again.
PG_STOPPED = "stockroom-2"
# How long after `stop` returns the balancer may still answer 502/503 or drop a connection: its
# checks take a stopped daemon out within about 5 s (a stopped container answers no SYN, so each
# check waits out its 2 s connect timeout); a request that cannot connect meanwhile goes to another.
PG_STOP_GRACE = 10.0
PG_WRITERS = 4


def ensure_postgres_image():
    """The image docker-compose.postgres.yml runs for PostgreSQL; the stand-in of
    Tests/Deploy/postgres is built under its tag only when no image has it."""
    if run(["docker", "image", "inspect", POSTGRES_IMAGE], check=False).returncode == 0:
        return f"{POSTGRES_IMAGE} present"
    started = time.monotonic()
    run(["docker", "build", "-q", "-t", POSTGRES_IMAGE, os.path.join(HERE, "postgres")], env=BUILD_ENV, timeout=900)
    return f"{POSTGRES_IMAGE} absent: the stand-in of Tests/Deploy/postgres built in {time.monotonic() - started:.0f} s"


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


def compose_containers(project):
    """{service: container id} of a project's containers, from one `docker ps` (compose v1's CLI
    takes a second or two per call on a busy machine)."""
    output = run(["docker", "ps", "-a", "--filter", f"label=com.docker.compose.project={project.name}",
                  "--format", '{{.Label "com.docker.compose.service"}} {{.ID}}']).stdout
    return dict(line.split() for line in output.splitlines() if line.strip())


def wait_all_healthy(containers, timeout):
    """Waits until every container of {service: id} is healthy; fails at once when one exits."""
    def healthy():
        output = run(["docker", "inspect", "-f", "{{json .State}}", *containers.values()]).stdout
        states = [json.loads(line) for line in output.splitlines() if line.strip()]
        for service, state in zip(containers, states):
            if state.get("Status") == "exited" or state.get("Restarting"):
                raise CheckFailed(f"{service} exited {state.get('ExitCode')}:\n{container_logs(containers[service])[-3000:]}")
        return all(state.get("Health", {}).get("Status") == "healthy" for state in states)
    wait_until(f"{', '.join(containers)} healthy", healthy, timeout, interval=0.5)


def container_logs(container):
    return run(["docker", "logs", container], check=False).stdout


def seq_of(cursor):
    return int(cursor.rsplit(".", 1)[1])


def check_postgres(pg):
    # The daemons' image is the one the build step made (same Dockerfile, same tag); the balancer's
    # is built here (a few seconds when cached).
    pg("build", "balancer")
    began = time.monotonic()
    pg("up", "-d", "--no-build", timeout=300)
    containers = compose_containers(pg)
    expect(sorted(containers) == sorted(PG_SERVICES), f"`up` made the containers {sorted(containers)}")
    wait_all_healthy(containers, 120)
    say(f"postgres: PostgreSQL, three daemons and the balancer healthy {time.monotonic() - began:.0f} s after `up`")
    port = pg.port
    expect(request(port, "GET", "/ready").status == 200, "/ready through the balancer is not 200")
    # Three daemons migrated one database at the same moment; each of them serves.
    for service in PG_SERVICES[1:4]:
        logs = container_logs(containers[service])
        expect("url=postgres://stockroom@postgres:5432/stockroom" in logs, f"{service} is not on PostgreSQL:\n{logs[-2000:]}")
    token = pg.token("balanced", "editor", service="stockroom-1")

    snapshot = request(port, "GET", "/v1/snapshot", token)
    expect(snapshot.status == 200, f"snapshot answered {snapshot!r}")
    start = snapshot.json()["cursor"]
    timeline = Timeline()
    # One stream per daemon (the balancer sends a new connection to the daemon with the fewest),
    # then a WebSocket.
    followers = [Follower(f"sse-{n}", port, token, start, timeline) for n in (1, 2, 3)]
    followers.append(Follower("ws", port, token, start, timeline, transport="ws"))
    for follower in followers:
        follower.start()
        expect(follower.opened.wait(20), f"{follower.name} did not open: {timeline.events[-3:]}")
    say(f"postgres: {len(followers)} followers open through the balancer from the snapshot's cursor {start}; writing")
    stop_writing = threading.Event()
    writers = [Writer(n, port, token, timeline, stop_writing) for n in range(PG_WRITERS)]
    try:
        for writer in writers:
            writer.start()
        time.sleep(5)
        before_stop = sum(len(w.acknowledged) for w in writers)
        stop_started = time.monotonic()
        pg("stop", "-t", "15", PG_STOPPED)
        stop_ended = time.monotonic()
        state = json.loads(run(["docker", "inspect", "-f", "{{json .State}}", containers[PG_STOPPED]]).stdout)
        expect(state["Status"] == "exited" and state["ExitCode"] == 0,
               f"{PG_STOPPED} did not exit 0 on stop: {state['Status']} {state['ExitCode']}")
        say(f"postgres: {PG_STOPPED} stopped in {stop_ended - stop_started:.1f} s; writing on through the other two")
        time.sleep(PG_STOP_GRACE)
        while_stopped = sum(len(w.acknowledged) for w in writers) - before_stop
        pg("start", PG_STOPPED)
        # Back in service once the balancer's checks pass again (its log says so).
        wait_until(f"the balancer taking {PG_STOPPED} back", lambda: re.search(
            rf"{PG_STOPPED} is UP", container_logs(containers["balancer"])), 60, interval=0.5)
        say(f"postgres: {PG_STOPPED} back in the balancer {time.monotonic() - stop_ended - PG_STOP_GRACE:.1f} s after `start`")
        time.sleep(3)
    finally:
        stop_writing.set()
        for writer in writers:
            writer.join(60)
    acknowledged = [entry for writer in writers for entry in writer.acknowledged]
    head = request(port, "GET", "/v1/changes?since=now", token)
    expect(head.status == 200, f"the head answered {head!r}")
    head_seq = seq_of(head.json()["cursor"])
    try:
        wait_until("every follower at the head", lambda: all(
            f.changes and f.changes[-1]["seq"] >= head_seq for f in followers), 30)
    finally:
        for follower in followers:
            follower.finish()
        for follower in followers:
            follower.join(10)

    problems = [f"{w.name}: {u}" for w in writers for u in w.unexpected]
    problems += [f"{f.name}: {u}" for f in followers for u in f.unexpected]
    expect(not problems, "unexpected answers:\n" + "\n".join(problems[:20]))
    # Exact: every follower received seqs start+1 ... head, each once, in order, across its reconnects.
    expected_seqs = list(range(seq_of(start) + 1, head_seq + 1))
    for follower in followers:
        seqs = [c["seq"] for c in follower.changes]
        if seqs != expected_seqs:
            repeated = sorted({s for s in seqs if seqs.count(s) > 1})[:10]
            missing = sorted(set(expected_seqs) - set(seqs))[:10]
            raise CheckFailed(f"{follower.name}'s feed is not exact: {len(seqs)} changes for {len(expected_seqs)} seqs, "
                              f"missing {missing}, repeated {repeated}, reconnects {len(follower.connects) - 1}")
    reference = followers[0].changes
    for follower in followers[1:]:
        expect(follower.changes == reference, f"{follower.name} received other changes than {followers[0].name}")
    # Every acknowledged write is in the feed, once, with what its answer said.
    by_key = {}
    for change in reference:
        key = change["origin"]["idempotencyKey"]
        expect(key not in by_key, f"the write with key {key} is twice in the feed")
        by_key[key] = change
    for key, item_id, version in acknowledged:
        change = by_key.get(key)
        expect(change is not None, f"the acknowledged write {key} (item {item_id} v{version}) is not in the feed")
        expect(change["entity"] == "item" and change["id"] == item_id and change["value"]["version"] == version,
               f"the write {key} answered item {item_id} v{version}, its change is {change}")
    # 502/503 and dropped connections only while the daemon stopped; no other 5xx ever.
    window = (stop_started, stop_ended + PG_STOP_GRACE)
    bad = []
    in_window = collections.Counter()
    for at, who, what in timeline.events:
        failure = (isinstance(what, int) and what >= 500) or isinstance(what, str)
        if not failure:
            continue
        if window[0] <= at <= window[1] and (what in (502, 503) or isinstance(what, str)):
            in_window[str(what) if isinstance(what, int) else "a dropped connection"] += 1
        else:
            bad.append(f"{who} at {at - stop_started:+.1f} s from the stop: {what}")
    expect(not bad, "failures outside the stop window (or a 5xx other than 502/503):\n" + "\n".join(bad[:20]))
    # The stop cut at least one stream, and its follower resumed through another daemon.
    resumed = [f.name for f in followers if any(t >= stop_started for t in f.connects)]
    expect(any(name.startswith("sse") for name in resumed),
           f"no SSE stream was cut by the stop (resumed: {resumed or 'none'})")
    # The balancer's checks took the stopped daemon out and put it back.
    balancer = container_logs(containers["balancer"])
    expect(re.search(rf"{PG_STOPPED} is DOWN", balancer) and re.search(rf"{PG_STOPPED} is UP", balancer),
           f"the balancer's log does not show {PG_STOPPED} going DOWN and UP:\n{balancer[-2000:]}")
    expect(token not in balancer, "the balancer logged a token (a query string)")
    for service in PG_SERVICES[1:4]:
        errors = [line for line in container_logs(containers[service]).splitlines()
                  if "unhandled error" in line or re.search(r"http\.status=5(?!03)\d\d", line)]
        expect(not errors, f"{service} logged errors:\n" + "\n".join(errors[:10]))
    retries = sum(w.retries for w in writers)
    failures = ", ".join(f"{count} x {what}" for what, count in sorted(in_window.items())) or "none"
    return (f"{len(acknowledged)} acknowledged writes ({while_stopped} in the {PG_STOP_GRACE:.0f} s after the stop, "
            f"{retries} retries), seqs {expected_seqs[0]}..{head_seq} exact on 3 SSE streams and a WebSocket; "
            f"{', '.join(resumed)} resumed after the stop; failures in the stop window: {failures}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--local-images", metavar="SCRIPT", help="run SCRIPT first to tag local stand-ins for the base images")
    parser.add_argument("--no-build", action="store_true", help=f"use the image {IMAGE} as it is")
    parser.add_argument("--only", choices=("sqlite", "postgres"),
                        help="run only the checks of docker-compose.yml (sqlite) or of docker-compose.postgres.yml (postgres)")
    args = parser.parse_args()

    engine = Engine()
    passed, failed = [], []
    projects = []

    def step(name, function, *arguments):
        say(f"{name} ...")
        try:
            result = function(*arguments)
            detail = result[-1] if isinstance(result, tuple) else result
            say(f"{name}: ok ({detail})")
            passed.append(name)
            return result
        except Exception as error:  # a check that broke (a refused connection, a missing key) fails too
            detail = error if isinstance(error, CheckFailed) else f"{error!r}\n{traceback.format_exc()}"
            say(f"{name}: FAILED: {detail}")
            failed.append(name)
            return None

    try:
        engine.start()
        if args.local_images:
            run(["bash", args.local_images], timeout=1800, capture=False)
        compose = compose_command()
        say(f"compose: {' '.join(compose)}")
        suffix = f"{os.getpid()}"
        main_project = Project(compose, f"stockroom-deploy-{suffix}", free_port())
        projects.append(main_project)
        if not args.no_build:
            def build():
                started = time.monotonic()
                main_project("build", timeout=3600)
                return f"{time.monotonic() - started:.0f} s"
            if step("build", build) is None:
                raise CheckFailed("the image did not build")
        if args.only != "postgres":
            step("image", check_image)
            up = step("up", check_up, main_project)
            if up:
                token, head_cursor, _ = up
                step("backup", check_backup, main_project, token, head_cursor)
                step("stop", check_stop, main_project, token)
            else:
                failed.extend(["backup", "stop"])
            step("settings", check_settings, compose, f"stockroom-deploy-{suffix}-settings")
        if args.only != "sqlite":
            pg_project = Project(compose, f"stockroom-deploy-{suffix}-pg", free_port(),
                                 file="docker-compose.postgres.yml", env={"BALANCER_IMAGE": BALANCER_IMAGE})
            projects.append(pg_project)
            if step("postgres image", ensure_postgres_image) is not None:
                step("postgres", check_postgres, pg_project)
            else:
                failed.append("postgres")
    except CheckFailed as error:
        say(f"FAILED: {error}")
        failed.append("setup")
    finally:
        for project in projects:
            project.remove()
        engine.stop()
        shutil.rmtree(WORKDIR, ignore_errors=True)
    print(f"{len(passed)} passed, {len(failed)} failed" + (f" ({', '.join(failed)})" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
