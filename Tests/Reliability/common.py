"""Shared by the reliability scripts: run the real `stockroom` binary on a temporary SQLite file
(or several daemons on one throwaway PostgreSQL cluster: `Postgres`, `Cluster`), talk to it over
loopback HTTP, follow and replay its change feed, and collect violations.

Python 3.9+, standard library only.
"""

import atexit
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def default_binary():
    """The debug binary SwiftPM builds (`swift build`), else the release one."""
    for flavour in ("debug", "release"):
        path = os.path.join(ROOT, ".build", flavour, "stockroom")
        if os.access(path, os.X_OK):
            return path
    return os.path.join(ROOT, ".build", "debug", "stockroom")


def log(name, message):
    print(f"[{name} {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Violations:
    """Every broken invariant, with a clear message; the script exits 1 when there is one."""

    def __init__(self, name):
        self.name = name
        self.items = []
        self.lock = threading.Lock()

    def add(self, message):
        with self.lock:
            self.items.append(message)
        log(self.name, "VIOLATION: " + message)

    def check(self, condition, message):
        if not condition:
            self.add(message)
        return condition

    def finish(self, summary):
        if self.items:
            log(self.name, f"FAILED with {len(self.items)} violation(s); {summary}")
            for item in self.items[:50]:
                print(f"  - {item}", file=sys.stderr)
            return 1
        log(self.name, f"OK: {summary}")
        return 0


class Server:
    """One `stockroom serve` on a free port, on the SQLite file `db` (or the PostgreSQL database
    `db_url`), run from a temporary folder (so that no Config/stockroom.json is read). Output goes
    to `server.log` in that folder. Every started server is killed when the script exits."""

    def __init__(self, binary, workdir, env=None, db=None, db_url=None):
        self.binary = os.path.abspath(binary)  # it runs from another folder
        self.workdir = workdir
        self.db = db or os.path.join(workdir, "db", "stockroom.sqlite")
        self.db_url = db_url
        self.env = dict(os.environ)
        self.env.setdefault("LOG_LEVEL", "info")
        self.env.update(env or {})
        self.process = None
        self.port = None
        self.log_path = os.path.join(workdir, "server.log")
        self.starts = 0

    def cli(self, *arguments, check=True):
        """Runs a subcommand to completion; returns its stdout."""
        result = subprocess.run(
            [self.binary, *arguments, *self.database_arguments()], cwd=self.workdir, env=self.env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        if check and result.returncode != 0:
            raise RuntimeError(f"stockroom {' '.join(arguments)} exited {result.returncode}: {result.stderr}")
        return result.stdout

    def database_arguments(self):
        return ["--db-url", self.db_url] if self.db_url else ["--db-path", self.db]

    def token(self, user, role):
        return self.cli("token", "create", "--user", user, "--role", role).strip().splitlines()[-1]

    def start(self, timeout=60):
        self.starts += 1
        offset = os.path.getsize(self.log_path) if os.path.exists(self.log_path) else 0
        with open(self.log_path, "ab") as out:
            out.write(f"--- start {self.starts} ---\n".encode())
            out.flush()
            self.process = subprocess.Popen(
                [self.binary, "serve", *self.database_arguments(), "--http-port", "0"], cwd=self.workdir, env=self.env,
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _started_servers.append(self)
        deadline = time.monotonic() + timeout
        pattern = re.compile(rb"listening on 127\.0\.0\.1:(\d+)")
        while time.monotonic() < deadline:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                match = pattern.search(f.read())
            if match:
                self.port = int(match.group(1))
                return self
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited with {self.process.returncode}:\n{self.log_tail()}")
            time.sleep(0.02)
        raise RuntimeError("the server did not listen in time:\n" + self.log_tail())

    def kill9(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
        return self.process.returncode

    def stop(self, timeout=20):
        """SIGTERM; returns the exit status (SIGKILL after `timeout`, returning None)."""
        if not self.process or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return None

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def rss_kib(self):
        try:
            with open(f"/proc/{self.process.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return -1

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def log_tail(self, lines=40):
        return "\n".join(self.log_text().splitlines()[-lines:])

    def server_errors(self, allowed_503=False):
        """Log lines that show a 5xx answer (a 503 only unless allowed) or an unhandled error."""
        bad = []
        for line in self.log_text().splitlines():
            if "unhandled error" in line:
                bad.append(line)
            match = re.search(r"http\.status=(5\d\d)", line)
            if match and not (allowed_503 and match.group(1) == "503"):
                bad.append(line)
        return bad


# Everything started by a script is stopped when it exits, whatever happens (an exception, exit
# status 1, SIGTERM or ^C): daemons by SIGKILL, PostgreSQL clusters by their postmaster's PID.
_started_servers = []
_started_clusters = []


def _stop_everything():
    for server in _started_servers:
        try:
            server.kill9()
        except Exception:
            pass
    for postgres in _started_clusters:
        try:
            postgres.destroy()
        except Exception:
            pass


atexit.register(_stop_everything)
if threading.current_thread() is threading.main_thread():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that atexit runs


PG_BIN = "/usr/lib/postgresql/15/bin"


def parse_head(head):
    """An HTTP answer's status and headers (names lowercased) from its head's bytes."""
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers


def postgres_available():
    return os.access(os.path.join(PG_BIN, "initdb"), os.X_OK) and os.access(os.path.join(PG_BIN, "pg_ctl"), os.X_OK)


def missing_for_postgres(name, binary):
    """Why a multi-daemon form cannot run (logged), as its exit status 2; None when it can."""
    if not os.access(binary, os.X_OK):
        log(name, f"no binary at {binary}; build it (swift build) or pass --bin")
        return 2
    if not postgres_available():
        log(name, "PostgreSQL 15 is not installed (/usr/lib/postgresql/15/bin); apt-get install postgresql-15")
        return 2
    return None


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Postgres:
    """A throwaway PostgreSQL 15 cluster (Debian's `postgresql-15`): `initdb` and `pg_ctl` on a new
    temporary folder, a free loopback port, trusted local connections, fsync as configured. It
    refuses to run as root, so as root every command runs as the `postgres` user (`runuser`), which
    owns the folder. `destroy` (also run at exit) stops the postmaster by its PID and removes the
    folder unless `keep`."""

    def __init__(self, settings=None):
        self.folder = tempfile.mkdtemp(prefix="stockroom-pg-")
        self.data = os.path.join(self.folder, "data")
        self.log_path = os.path.join(self.folder, "postgres.log")
        self.port = None
        self.pid = None
        self.settings = {"max_connections": "200"}
        self.settings.update(settings or {})
        self.keep = False
        self.destroyed = False
        _started_clusters.append(self)

    @staticmethod
    def as_postgres(command):
        return (["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []) + command

    def run(self, program, *arguments, check=True, timeout=120):
        result = subprocess.run(self.as_postgres([os.path.join(PG_BIN, program), *arguments]), cwd=self.folder,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise RuntimeError(f"{program} {' '.join(arguments)} exited {result.returncode}: {result.stderr.strip()}\n"
                               f"{self.log_tail()}")
        return result.stdout

    def options(self):
        settings = "".join(f" -c {name}={value}" for name, value in sorted(self.settings.items()))
        return f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder}{settings}"

    def start(self):
        if os.getuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        os.chmod(self.folder, 0o700)
        self.run("initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync",
                 "--no-instructions")
        error = None
        for _ in range(5):  # a free port can be taken between the probe and the bind
            self.port = free_port()
            try:
                self.start_server()
                return self
            except RuntimeError as failure:
                error = failure
        raise error

    def read_pid(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            self.pid = int(f.readline())
        return self.pid

    def start_server(self):
        """Starts the (stopped) server on its port; returns once it accepts connections."""
        self.run("pg_ctl", "-D", self.data, "-l", self.log_path, "-w", "-t", "60", "-o", self.options(), "start")
        return self.read_pid()

    def stop_server(self, mode="fast"):
        """`pg_ctl stop -m MODE`, keeping the data; returns once the postmaster has exited."""
        self.run("pg_ctl", "-D", self.data, "-m", mode, "-w", "-t", "60", "stop")
        self.pid = None

    def restart(self, mode="fast"):
        """`pg_ctl restart -m MODE` (same options, same port)."""
        self.run("pg_ctl", "-D", self.data, "-l", self.log_path, "-m", mode, "-w", "-t", "60", "restart")
        return self.read_pid()

    def alive(self):
        if not self.pid:
            return False
        try:
            os.kill(self.pid, 0)
            return True
        except OSError:
            return False

    def url(self, database):
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}?sslmode=disable"

    def create_database(self, name):
        self.run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)
        return self.url(name)

    def psql(self, database, sql):
        """The rows of one query, tab-separated, as lists of strings."""
        out = self.run("psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database, "-X", "-A", "-t",
                       "-F", "\t", "-v", "ON_ERROR_STOP=1", "-c", sql, timeout=30)
        return [line.split("\t") for line in out.splitlines() if line]

    def log_tail(self, lines=20):
        try:
            with open(self.log_path, "rb") as f:
                return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-lines:])
        except OSError:
            return ""

    def destroy(self):
        """Stops the postmaster by its PID (fast shutdown, SIGKILL after 30 s) and removes the folder."""
        if self.destroyed:
            return
        self.destroyed = True
        pid = self.pid
        if pid is None and os.path.exists(os.path.join(self.data, "postmaster.pid")):
            try:
                pid = self.read_pid()
            except (OSError, ValueError):
                pid = None
        if pid:
            try:
                os.kill(pid, signal.SIGINT)
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    os.kill(pid, 0)
                    time.sleep(0.05)
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass  # gone
        if self.keep:
            log("reliability", f"kept {self.folder} (PostgreSQL's data and postgres.log)")
        else:
            shutil.rmtree(self.folder, ignore_errors=True)


class Cluster:
    """`count` daemons on one PostgreSQL database of a throwaway cluster, each with its own folder
    (`daemonN/server.log`) and its own free port. Tokens live in the database: one made with
    `token` works on every daemon."""

    def __init__(self, binary, workdir, count, env=None, postgres_settings=None):
        self.postgres = Postgres(postgres_settings)
        self.database = "stockroom"
        self.servers = []
        for index in range(count):
            folder = os.path.join(workdir, f"daemon{index}")
            os.makedirs(folder, exist_ok=True)
            self.servers.append(Server(binary, folder, env=env))

    def start(self):
        self.postgres.start()
        url = self.postgres.create_database(self.database)
        for server in self.servers:
            server.db_url = url
        # All at once: the migration runs once whatever the others do (an advisory lock).
        errors = []

        def start(server):
            try:
                server.start()
            except Exception as error:
                errors.append(error)

        threads = [threading.Thread(target=start, args=(server,)) for server in self.servers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        return self

    def token(self, user, role):
        return self.servers[0].token(user, role)

    def port(self, index):
        return self.servers[index % len(self.servers)].port

    def alive(self):
        return [index for index, server in enumerate(self.servers) if server.alive()]

    def next_alive(self, index):
        """The first daemon after `index` (in a ring) that runs, `index` itself last; None if none."""
        count = len(self.servers)
        for step in range(1, count + 1):
            candidate = (index + step) % count
            if self.servers[candidate].alive():
                return candidate
        return None

    def sql(self, query):
        return self.postgres.psql(self.database, query)

    def feed_head(self, index, token):
        """The seq of the head daemon `index` serves its feed from (`since=now`), or None if it does not answer 200."""
        client = Client(self.port(index), token, timeout=10)
        try:
            response = client.request("GET", "/v1/changes?since=now&limit=1")
            return int(response.json()["cursor"].rsplit(".", 1)[1]) if response.status == 200 else None
        except Exception:
            return None
        finally:
            client.close()

    def wait_feeds_caught_up(self, token, violations, label, timeout=10):
        """Waits until every running daemon serves its feed up to the log's head in the database (a
        daemon learns of other daemons' commits by notification, or by its poll within a second);
        one that is still behind after `timeout` seconds is a violation."""
        head = int(self.sql("SELECT seq FROM log_head WHERE id = 1")[0][0])
        deadline = time.monotonic() + timeout
        while True:
            heads = {index: self.feed_head(index, token) for index in self.alive()}
            if all(seq == head for seq in heads.values()):
                return True
            if time.monotonic() > deadline:
                violations.add(f"{label}: the log's head is {head}, and {timeout} s later the daemons' feeds end at "
                               f"{', '.join(f'daemon{i}: {s}' for i, s in heads.items())}")
                return False
            time.sleep(0.1)

    def stop(self):
        """SIGTERM to every daemon; their exit statuses."""
        return [server.stop() for server in self.servers]

    def server_errors(self, allowed_503=False):
        return [f"daemon{index}: {line}" for index, server in enumerate(self.servers)
                for line in server.server_errors(allowed_503)]

    def destroy(self, keep=False):
        for server in self.servers:
            server.kill9()
        self.postgres.keep = keep
        self.postgres.destroy()


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


def _error_code(body):
    match = re.search(rb'"code"\s*:\s*"([^"]+)"', body)
    return match.group(1).decode() if match else None


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
            if _error_code(data.encode()) == "unavailable":
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


def list_items(client):
    items = []
    after = None
    while True:
        path = "/v1/items?limit=500" + (f"&after={after}" if after else "")
        response = client.request("GET", path)
        if response.status != 200:
            raise RuntimeError(f"list answered {response}")
        page = response.json()
        items.extend(page["items"])
        after = page["next"]
        if not after:
            return items


def without_presence(navigation):
    """A navigation read without its device's presence (lastSeenAt, online), which moves with
    every command or feed request of the device, refused ones included."""
    return {k: v for k, v in navigation.items() if k not in ("lastSeenAt", "online")}


def fold(changes):
    """The state the changes lead to: items by id, navigation states by clientID."""
    items, navigation = {}, {}
    for change in changes:
        if change["entity"] not in ("item", "navigation"):
            continue  # presence: not state the API serves back as items or navigation
        target = items if change["entity"] == "item" else navigation
        if change["op"] == "delete":
            target.pop(change["id"], None)
        else:
            target[change["id"]] = change["value"]
    return items, navigation


def check_feed_matches_state(violations, label, clients_by_user, all_changes_by_user):
    """The union of what every user's token sees is the whole log: seqs contiguous from 1, item
    entries the same for everyone, navigation entries each seen by its owner only; folding it gives
    exactly the items and navigation states the API serves now."""
    item_views = []
    navigation_seqs = {}
    for user, changes in all_changes_by_user.items():
        item_views.append([c for c in changes if c["entity"] == "item"])
        for change in changes:
            if change["entity"] == "navigation":
                if change["seq"] in navigation_seqs:
                    violations.add(f"{label}: navigation seq {change['seq']} seen by {user} and {navigation_seqs[change['seq']]}")
                navigation_seqs[change["seq"]] = user
    for view in item_views[1:]:
        violations.check(view == item_views[0], f"{label}: two tokens see different item entries")
    seqs = sorted({c["seq"] for changes in all_changes_by_user.values() for c in changes})
    if seqs:
        violations.check(seqs[0] == 1, f"{label}: the log starts at seq {seqs[0]}, not 1")
        missing = sorted(set(range(seqs[0], seqs[-1] + 1)) - set(seqs))
        violations.check(not missing, f"{label}: gaps in the feed, missing seqs {missing[:20]} (of {len(missing)})")
    for user, changes in all_changes_by_user.items():
        order = [c["seq"] for c in changes]
        violations.check(order == sorted(order) and len(order) == len(set(order)), f"{label}: {user}'s feed is not in seq order or repeats")
    any_user = next(iter(clients_by_user))
    items_from_feed, _ = fold(item_views[0] if item_views else [])
    served = {item["id"]: item for item in list_items(clients_by_user[any_user])}
    if served != items_from_feed:
        only_served = sorted(set(served) - set(items_from_feed))
        only_feed = sorted(set(items_from_feed) - set(served))
        differ = sorted(k for k in set(served) & set(items_from_feed) if served[k] != items_from_feed[k])
        violations.add(
            f"{label}: items served != items folded from the feed (only served {only_served[:5]}, only in the feed "
            f"{only_feed[:5]}, different {[(served[k], items_from_feed[k]) for k in differ[:2]]})")
    for user, client in clients_by_user.items():
        _, navigation_from_feed = fold(all_changes_by_user[user])
        response = client.request("GET", "/v1/users/me/navigation")
        # A read adds the device's presence, which the feed's navigation values do not carry.
        served_navigation = {n["clientID"]: without_presence(n) for n in response.json()["clients"]}
        if served_navigation != navigation_from_feed:
            differ = sorted(k for k in set(served_navigation) | set(navigation_from_feed)
                            if served_navigation.get(k) != navigation_from_feed.get(k))
            violations.add(
                f"{label}: {user}'s navigation served != folded from the feed for {differ[:5]}: "
                f"{[(served_navigation.get(k), navigation_from_feed.get(k)) for k in differ[:1]]}")
    return served


def check_repairs(violations, label, items, navigations):
    """No navigation state points at a missing item in its path or a delete alert."""
    for navigation in navigations:
        for route in navigation["path"]:
            violations.check(route["item"]["id"] in items,
                             f"{label}: {navigation['clientID']}'s path points at missing item {route['item']['id']}")
        destination = navigation["destination"] or {}
        if "deleteAlert" in destination:
            violations.check(destination["deleteAlert"]["itemID"] in items,
                             f"{label}: {navigation['clientID']} has a delete alert for missing item")


def make_workdir(prefix):
    return tempfile.mkdtemp(prefix=f"stockroom-{prefix}-")


def remove_workdir(path, keep, failed):
    if keep or failed:
        log("reliability", f"kept {path} (server.log and the database are there)")
    else:
        shutil.rmtree(path, ignore_errors=True)


def seeded_random(seed, name):
    if seed is None:
        seed = random.randrange(1 << 30)
    log(name, f"seed {seed} (rerun with --seed {seed})")
    return random.Random(seed), seed
