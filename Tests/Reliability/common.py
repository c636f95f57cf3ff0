"""Shared by the reliability scripts: run the real `stockroom` binary on a temporary SQLite file,
talk to it over loopback HTTP, replay its change feed, and collect violations.

Python 3.9+, standard library only.
"""

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
    """One `stockroom serve` on a free port, on the database `db`, run from a temporary folder (so
    that no Config/stockroom.json is read). Output goes to `server.log` in that folder."""

    def __init__(self, binary, workdir, env=None, db=None):
        self.binary = os.path.abspath(binary)  # it runs from another folder
        self.workdir = workdir
        self.db = db or os.path.join(workdir, "db", "stockroom.sqlite")
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
            [self.binary, *arguments, "--db-path", self.db], cwd=self.workdir, env=self.env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        if check and result.returncode != 0:
            raise RuntimeError(f"stockroom {' '.join(arguments)} exited {result.returncode}: {result.stderr}")
        return result.stdout

    def token(self, user, role):
        return self.cli("token", "create", "--user", user, "--role", role).strip().splitlines()[-1]

    def start(self, timeout=60):
        self.starts += 1
        offset = os.path.getsize(self.log_path) if os.path.exists(self.log_path) else 0
        with open(self.log_path, "ab") as out:
            out.write(f"--- start {self.starts} ---\n".encode())
            out.flush()
            self.process = subprocess.Popen(
                [self.binary, "serve", "--db-path", self.db, "--http-port", "0"], cwd=self.workdir, env=self.env,
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
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


def fold(changes):
    """The state the changes lead to: items by id, navigation states by clientID."""
    items, navigation = {}, {}
    for change in changes:
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
        served_navigation = {n["clientID"]: n for n in response.json()["clients"]}
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
