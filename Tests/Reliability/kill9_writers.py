"""kill9.py's writers: the requests they plan (each with its own Idempotency-Key), what they make of
the answers, and how they send them: to one server until it dies, or (the multi-daemon form) on
to the next running daemon, where the request whose answer was lost is retried with its key."""

import socket
import time
import uuid

from common import Client, draft, is_connection_error


class Op:
    """One request, as sent and (if it came) as answered."""

    def __init__(self, kind, writer, method, path, body, headers, allowed, target=None):
        self.kind = kind
        self.writer = writer
        self.method = method
        self.path = path
        self.body = body
        self.headers = headers
        self.allowed = allowed
        self.target = target  # item id the op writes, if any
        self.key = headers["Idempotency-Key"]
        self.first = None  # the answer to the first attempt, if it came
        self.retry = None  # the answer to the retry after a crash
        self.replay = None  # the answer to a later replay of an acknowledged request

    @property
    def answer(self):
        return self.first or self.retry


class Writer:
    def __init__(self, index, token, user, rng, contested, violations):
        self.index = index
        self.token = token
        self.user = user
        self.client_id = f"w{index}"
        self.rng = rng
        self.contested = contested
        self.violations = violations
        self.owned = {}  # item id -> last answered Item, or None once deleted
        self.navigation = None  # the last answered navigation state (tab, path, destination, version)
        self.ops = []
        self.counter = 0
        self.versions = {}  # contested item id -> the version this writer last saw

    def key(self, round_index):
        self.counter += 1
        return f"k9-{round_index}-{self.index}-{self.counter}"

    def op(self, round_index, kind, method, path, body, allowed, target=None, if_match=None):
        headers = {"Idempotency-Key": self.key(round_index)}
        if if_match is not None:
            headers["If-Match"] = f'"{if_match}"'
        return Op(kind, self.index, method, path, body, headers, allowed, target)

    def live_owned(self):
        return [item_id for item_id, item in self.owned.items() if item is not None]

    def command(self, round_index, kind, command, allowed=(200,), target=None):
        return self.op(round_index, kind, "POST", f"/v1/clients/{self.client_id}/commands", {"command": command}, allowed, target)

    def plan(self, round_index):
        """The next few requests: one write or one flow of commands."""
        rng = self.rng
        if (self.navigation or {}).get("destination") is not None:
            # A flow cut by a kill (or refused) left a screen open, a delete alert whose button was
            # never pressed: close it first, as an app does, since only its buttons and cancel apply.
            return [self.command(round_index, "cancel", {"cancel": {}})]
        owned = self.live_owned()
        name = f"{self.client_id} {self.counter} {rng.choice(['Mug', 'Lamp', 'Chair', 'Desk', 'Pen'])}"
        choice = rng.random()
        if choice < 0.15 or not owned:
            item_id = str(uuid.uuid4())
            return [self.op(round_index, "create", "POST", "/v1/items", dict(draft(name, rng.randrange(100)), id=item_id),
                            (201,), target=item_id)]
        item_id = rng.choice(owned)
        if choice < 0.35:
            version = self.owned[item_id]["version"] if rng.random() < 0.5 else None
            return [self.op(round_index, "put", "PUT", f"/v1/items/{item_id}", draft(name, rng.randrange(100)), (200,),
                            target=item_id, if_match=version)]
        if choice < 0.40 and len(owned) > 3:
            version = self.owned[item_id]["version"] if rng.random() < 0.5 else None
            return [self.op(round_index, "delete", "DELETE", f"/v1/items/{item_id}", None, (204,), target=item_id,
                            if_match=version)]
        if choice < 0.58:
            return [self.command(round_index, "openEdit", {"openEdit": {"itemID": item_id}}),
                    self.command(round_index, "updateDraft", {"updateDraft": {"draft": draft(name, rng.randrange(100))}}),
                    self.command(round_index, "save", {"save": {}}, target=item_id)]
        if choice < 0.66:
            return [self.command(round_index, "openAdd", {"openAdd": {}}),
                    self.command(round_index, "updateDraft", {"updateDraft": {"draft": draft(name, 7)}}),
                    self.command(round_index, "saveNew", {"save": {}})]
        if choice < 0.70 and len(owned) > 3:
            return [self.command(round_index, "openDeleteAlert", {"openDeleteAlert": {"itemID": item_id}}),
                    self.command(round_index, "confirmDelete", {"confirmDelete": {}}, target=item_id)]
        if choice < 0.80:
            path = (self.navigation or {}).get("path", [])
            if path and (len(path) >= 32 or rng.random() < 0.4):
                return [self.command(round_index, "pop", {"pop": {}})]
            if rng.random() < 0.2:
                return [self.command(round_index, "selectTab", {"selectTab": {"tab": rng.choice(["inventory", "settings"])}})]
            return [self.command(round_index, "push", {"push": {"route": {"item": {"id": item_id}}}})]
        contested = rng.choice(self.contested)
        if choice < 0.90:
            return [self.op(round_index, "contestedPut", "PUT", f"/v1/items/{contested}", draft(name, 1), (200, 412),
                            target=contested, if_match=self.versions.get(contested, 1))]
        return [self.command(round_index, "openEdit", {"openEdit": {"itemID": contested}}),
                self.command(round_index, "updateDraft", {"updateDraft": {"draft": draft(name, 2)}}),
                self.command(round_index, "contestedSave", {"save": {}}, allowed=(200, 409), target=contested),
                self.command(round_index, "cancel", {"cancel": {}})]

    def absorb(self, op, response):
        """Updates this writer's model of its items and navigation from an answer."""
        body = response.json() if response.body else None
        if response.status not in op.allowed:
            self.violations.add(f"{op.key} {op.kind} {op.method} {op.path}: answered {response.status} "
                                f"{response.body[:300]!r}, expected one of {op.allowed}")
            return
        if op.kind in ("create", "put"):
            self.owned[body["id"]] = body
        elif op.kind == "delete":
            self.owned[op.target] = None
            self.repair(op.target)
        elif op.kind == "contestedPut":
            if response.status == 200:
                self.versions[op.target] = body["version"]
            else:
                self.versions[op.target] = None  # unknown; read it before the next attempt
        elif op.method == "POST" and op.path.endswith("/commands"):
            if response.status == 200:
                self.navigation = body["navigation"]
            if op.kind == "contestedSave" and response.status == 409:
                current = body["error"].get("current")
                if current:
                    self.versions[op.target] = current["version"]
            elif op.kind == "contestedSave":
                self.versions[op.target] = body["item"]["version"]
            elif op.kind in ("save", "saveNew"):
                self.owned[body["item"]["id"]] = body["item"]
            elif op.kind == "confirmDelete":
                self.owned[op.target] = None

    def repair(self, item_id):
        """What the server does to this writer's navigation when one of its items is deleted."""
        if not self.navigation:
            return
        navigation = dict(self.navigation)
        path = [route for route in navigation["path"] if route["item"]["id"] != item_id]
        destination = navigation["destination"]
        closes = destination is not None and destination.get("deleteAlert", {}).get("itemID") == item_id
        if path != navigation["path"] or closes:
            navigation["path"] = path
            if closes:
                navigation["destination"] = None
            navigation["version"] += 1
            navigation["updatedAt"] = None  # not known from a 204
        self.navigation = navigation

    def refresh_contested(self, client):
        for item_id in self.contested:
            if self.versions.get(item_id) is None:
                response = client.request("GET", f"/v1/items/{item_id}")
                self.versions[item_id] = response.json()["version"]


def send(client, op):
    return client.request(op.method, op.path, body=op.body, headers=op.headers)


def run_writer(writer, port, round_index, stop, inflight):
    client = Client(port, writer.token, timeout=30)
    try:
        writer.refresh_contested(client)
        while not stop.is_set():
            for op in writer.plan(round_index):
                writer.ops.append(op)
                try:
                    response = send(client, op)
                except Exception as error:  # the server died under this request
                    if not is_connection_error(error):
                        writer.violations.add(f"{op.key}: unexpected client error {error!r}")
                    inflight.append(op)
                    return
                op.first = response
                writer.absorb(op, response)
                if response.status >= 500:
                    writer.violations.add(f"{op.key} {op.kind}: 5xx answer {response!r}")
                if op.kind == "contestedSave" and response.status == 409:
                    continue  # the cancel that follows closes the draft
                if response.status not in (200, 201, 204):
                    break
    except Exception as error:
        if not is_connection_error(error):
            writer.violations.add(f"writer {writer.index}: {error!r}")
    finally:
        client.close()


RETRYABLE = {(409, "requestInProgress")}


def send_until_decided(cluster, writer, op, index, stats, deadline=60):
    """Sends `op` (same key, same body) until a daemon decides it: a connection error moves to the
    next running daemon; `409 requestInProgress` (PostgreSQL still holds the killed daemon's session
    and its key's lock) is waited out. Returns (response, daemon index)."""
    give_up = time.monotonic() + deadline
    while True:
        client = Client(cluster.port(index), writer.token)
        try:
            response = send(client, op)
        except Exception as error:
            if not is_connection_error(error):
                raise
            index = cluster.next_alive(index)
            if index is None or time.monotonic() > give_up:
                raise
            continue
        finally:
            client.close()
        if (response.status, response.error_code()) in RETRYABLE and time.monotonic() < give_up:
            stats["inProgressOnRetry"] += 1
            time.sleep(0.1)
            continue
        return response, index


def run_writer_cluster(writer, cluster, index, round_index, stop, stats):
    """A writer of the multi-daemon form: on daemon `index` until it dies under a request, then on
    the next running one, where it first retries that request with the same key."""
    client = Client(cluster.port(index), writer.token, timeout=30)
    try:
        writer.refresh_contested(client)
        while not stop.is_set():
            for op in writer.plan(round_index):
                writer.ops.append(op)
                op.daemon = index
                try:
                    response = send(client, op)
                    op.first = response
                except Exception as error:  # the daemon died under this request (or refused it)
                    if not is_connection_error(error):
                        writer.violations.add(f"{op.key}: unexpected client error {error!r}")
                        return
                    if isinstance(error, socket.timeout):
                        writer.violations.add(f"{op.key} {op.kind} {op.method} {op.path}: no answer in {client.timeout} s "
                                              f"from daemon{index}")
                    client.close()
                    stats["inflight"] += 1
                    response, moved = send_until_decided(cluster, writer, op, index, stats)
                    op.retry = response
                    if moved != index:
                        stats["writerSwitches"] += 1
                    index = moved
                    client = Client(cluster.port(index), writer.token, timeout=30)
                    if response.headers.get("idempotency-replayed") == "true":
                        stats["appliedBeforeCrash"] += 1
                    elif response.status in (200, 201, 204):
                        stats["appliedOnRetry"] += 1
                writer.absorb(op, response)
                if response.status >= 500:
                    writer.violations.add(f"{op.key} {op.kind} on daemon{index}: 5xx answer {response!r}")
                if op.kind == "contestedSave" and response.status == 409:
                    continue  # the cancel that follows closes the draft
                if response.status not in (200, 201, 204):
                    break
    except Exception as error:
        writer.violations.add(f"writer {writer.index}: {error!r}")
    finally:
        client.close()


def replay_acknowledged(round_ops, writers, args, rng, stats, violations, port):
    """Sends the round's acknowledged requests again (a sample in the short form) to `port()`: each
    must answer what it first answered, byte for byte, marked as a replay. Returns the acknowledged."""
    acknowledged = [op for op in round_ops if op.first is not None]
    sample = acknowledged if not args.short else rng.sample(acknowledged, min(40, len(acknowledged)))
    for op in sample:
        client = Client(port(), writers[op.writer].token)
        op.replay = send(client, op)
        client.close()
        stats["replayed"] += 1
        same = (op.replay.status, op.replay.body) == (op.first.status, op.first.body)
        violations.check(same, f"{op.key} {op.kind}: replay answered {op.replay!r}, first answer was {op.first!r}")
        violations.check(op.replay.headers.get("idempotency-replayed") == "true",
                         f"{op.key} {op.kind}: a replay without Idempotency-Replayed: true")
        for name in ("etag", "location"):
            violations.check(op.replay.headers.get(name) == op.first.headers.get(name),
                             f"{op.key} {op.kind}: replayed {name} {op.replay.headers.get(name)} != {op.first.headers.get(name)}")
    return acknowledged
