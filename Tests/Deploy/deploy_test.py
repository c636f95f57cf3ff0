#!/usr/bin/env python3
"""The deployment as README "Running in production" describes it, against the real image.

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

Each check runs under its own compose project with its own volume, removed with its containers
afterwards (the built image stays: it is the build cache). When no Docker engine answers, the test
starts dockerd itself and stops it by PID at the end. `--local-images SCRIPT` runs a script that
tags local stand-ins for the Dockerfile's base images first (on a machine without a registry:
../shared/container/local-images.sh). Python 3.9+, standard library only; needs root (dockerd)
or a user in the docker group. Prints "N passed, N failed" last; exits 1 when a check failed.
"""

import argparse
import base64
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "Tests", "Reliability"))
from common import Client, draft, list_items, replay_feed  # noqa: E402

IMAGE = "stockroom:deploy-test"
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
    """One compose project: the repository's docker-compose.yml (and an override, when given) under
    its own name, so its container and volume are its own."""

    def __init__(self, compose, name, port, override=None):
        self.compose = compose
        self.name = name
        self.port = port
        self.files = ["-f", os.path.join(ROOT, "docker-compose.yml")]
        self.override_path = None
        if override:
            self.override_path = os.path.join(WORKDIR, f"{name}.yml")
            with open(self.override_path, "w") as f:
                f.write(override)
            self.files += ["-f", self.override_path]
        self.env = {"STOCKROOM_IMAGE": IMAGE, "STOCKROOM_PORT": str(port), **BUILD_ENV}

    def __call__(self, *arguments, check=True, timeout=600):
        return run([*self.compose, "-p", self.name, *self.files, *arguments], check=check, timeout=timeout, env=self.env)

    def container(self):
        return self("ps", "-q", "stockroom").stdout.strip()

    def state(self):
        output = run(["docker", "inspect", "-f", "{{json .State}}", self.container()]).stdout
        return json.loads(output)

    def wait_healthy(self, timeout=90):
        def healthy():
            state = self.state()
            if state.get("Status") == "exited" or state.get("Restarting"):
                raise CheckFailed(f"the container exited {state.get('ExitCode')}:\n{self.logs()[-3000:]}")
            return state.get("Health", {}).get("Status") == "healthy"
        wait_until("the container healthy", healthy, timeout)

    def logs(self):
        return self("logs", "--no-color", "stockroom", check=False).stdout

    def token(self, user, role):
        output = self("exec", "-T", "stockroom", "/app/stockroom", "token", "create", "--user", user, "--role", role).stdout
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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--local-images", metavar="SCRIPT", help="run SCRIPT first to tag local stand-ins for the base images")
    parser.add_argument("--no-build", action="store_true", help=f"use the image {IMAGE} as it is")
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
        step("image", check_image)
        up = step("up", check_up, main_project)
        if up:
            token, head_cursor, _ = up
            step("backup", check_backup, main_project, token, head_cursor)
            step("stop", check_stop, main_project, token)
        else:
            failed.extend(["backup", "stop"])
        step("settings", check_settings, compose, f"stockroom-deploy-{suffix}-settings")
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
