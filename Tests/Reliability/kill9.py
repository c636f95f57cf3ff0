#!/usr/bin/env python3
"""kill -9 property test for Stockroom (Python 3.9+, standard library only).

Each round starts the real `stockroom` binary on one SQLite file, lets concurrent writers send item
writes and navigation commands, every one with its own Idempotency-Key, while a long-poll follower
reads the feed, then kills the server with SIGKILL at a random moment. After a restart it retries
every request whose answer was lost (same key, same body) and checks:

  - every acknowledged write is in the state: each writer's own items and navigation state are
    exactly what its answers (acknowledged or retried) say, and each contested item is the answer
    with the highest version;
  - a retried key answers byte for byte what the first answer said (with Idempotency-Replayed), and
    a key is applied at most once (one feed entry per entity and key at most);
  - nothing is half-applied: a save's item write and navigation change are in the log together or
    not at all, and so on for every kind of write;
  - replaying the feed from the start gives seqs 1..head without a gap, and folding it gives
    exactly the items and navigation states the API serves; no navigation state points at a
    deleted item;
  - what the follower received before each crash is still in the log, and across its reconnects
    it saw every entry exactly once;
  - no answer was a 5xx, and the database passes `integrity_check` (through `stockroom backup`).

With --postgres (multi-daemon form): a throwaway PostgreSQL cluster and --daemons (3) daemons on
one database. Writers and feed followers (long-poll, SSE and WebSocket, both users) are spread over
the daemons; each round kills one daemon with SIGKILL while its streams are open and its writes in
flight. Its writers move to the next running daemon and retry the request whose answer was lost
with the same Idempotency-Key (waiting out `409 requestInProgress` while PostgreSQL still holds the
dead daemon's session), then go on writing there; its followers move too and resume from their
cursors. The writers of the other daemons never stop. The killed daemon is started again for the
next round. Checked, besides the above (every acknowledged write in the state, replays byte for
byte, at most once, nothing half-applied, the log contiguous and folding to the served state): each
follower saw no seq twice or out of order across its switches and, in the end, exactly its token's
log; every daemon serves the same log; no 5xx. (`integrity_check` is SQLite's; it is not run.)

Usage:
  Tests/Reliability/kill9.py [--bin PATH] [--rounds N] [--writers W] [--short] [--seed S] [--keep]
                             [--synchronous full|normal] [--postgres [--daemons N]]
  --short: 3 rounds, 4 writers (CI). Default: 25 rounds, 8 writers.
  --postgres: --short is 3 rounds, 6 writers; the default 12 rounds, 9 writers.
Exit status 0 when every check held, 1 on a violation (each is printed), 2 when it could not run.
"""

import argparse
import os
import random
import socket
import sys
import threading
import time
import urllib.parse
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (Client, Cluster, FeedFollower, follow_feed, Server, Violations, check_feed_matches_state, check_follower,
                    check_repairs, default_binary, draft, is_connection_error, log, make_workdir, missing_for_postgres,
                    remove_workdir, replay_feed, seeded_random)

NAME = "kill9"
USERS = ("alpha", "beta")


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


def catch_up(port, token, state):
    client = Client(port, token)
    changes, cursor = replay_feed(client, since=state["cursor"])
    state["changes"].extend(changes)
    state["cursor"] = cursor
    client.close()


def catch_up_follower(port, follower):
    """What the follower did not receive before it was stopped, read from `port` past its cursor."""
    client = Client(port, follower.token)
    changes, cursor = replay_feed(client, since=follower.cursor)
    client.close()
    for change in changes:
        follower.accept(change, change["cursor"])
    follower.cursor = cursor


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


def main_postgres(args):
    rounds = args.rounds or (3 if args.short else 12)
    writers_count = args.writers or (6 if args.short else 9)
    daemons = max(2, args.daemons)
    max_delay = 1.2 if args.short else 2.5
    missing = missing_for_postgres(NAME, args.bin)
    if missing is not None:
        return missing
    rng, _ = seeded_random(args.seed, NAME)
    violations = Violations(NAME)
    workdir = make_workdir(NAME + "-pg")
    cluster = Cluster(args.bin, workdir, daemons)
    started = time.monotonic()
    stats = {"sent": 0, "acknowledged": 0, "inflight": 0, "appliedBeforeCrash": 0, "appliedOnRetry": 0, "replayed": 0,
             "inProgressOnRetry": 0, "writerSwitches": 0, "followerSwitches": 0, "feed": 0}
    followers = []
    try:
        cluster.start()
        tokens = {user: cluster.token(user, "editor") for user in USERS}
        setup = Client(cluster.port(0), tokens["alpha"])
        contested = []
        for index in range(2):
            response = setup.request("POST", "/v1/items", draft(f"Contested {index}"))
            contested.append(response.json()["id"])
        setup.close()
        writers = [Writer(index, tokens[USERS[index % 2]], USERS[index % 2], random.Random(rng.random()), contested, violations)
                   for index in range(writers_count)]
        # On every daemon: one follower of each kind, the users alternating.
        modes = ("poll", "sse", "ws")
        for daemon in range(daemons):
            for number, mode in enumerate(modes):
                user = USERS[(daemon + number) % 2]
                follower = FeedFollower(f"follower-{mode}-{daemon}", cluster, tokens[user], daemon, mode)
                follower.user = user
                follower.home = daemon
                followers.append(follower)
        all_ops = []

        for round_index in range(1, rounds + 1):
            stop = threading.Event()
            for follower in followers:
                follower.index = follower.home  # spread again over the daemons
                follower.start(stop)
            before = {w.index: len(w.ops) for w in writers}
            threads = [threading.Thread(target=run_writer_cluster, daemon=True,
                                        args=(w, cluster, (w.index + round_index) % daemons, round_index, stop, stats))
                       for w in writers]
            for thread in threads:
                thread.start()
            time.sleep(rng.uniform(0.3, max_delay))
            victim = rng.randrange(daemons)
            switches_before = sum(len(f.switches) for f in followers)
            status = cluster.servers[victim].kill9()
            violations.check(status == -9, f"round {round_index}: daemon{victim} exited {status}, not by SIGKILL")
            time.sleep(rng.uniform(0.8, 2.0))  # the others go on, and the moved clients with them
            stop.set()
            for thread in threads + [f.thread for f in followers]:
                thread.join(90)
                if thread.is_alive():
                    violations.add(f"round {round_index}: a client thread is stuck after the kill")
            round_ops = [op for w in writers for op in w.ops[before[w.index]:]]
            all_ops.extend(round_ops)
            moved = sum(len(f.switches) for f in followers) - switches_before
            stats["followerSwitches"] += moved
            inflight_on_victim = sum(1 for op in round_ops if op.first is None)
            cluster.servers[victim].start()

            # Replay acknowledged requests on any daemon: the same answer, byte for byte, nothing applied again.
            acknowledged = replay_acknowledged(round_ops, writers, args, rng, stats, violations,
                                               lambda: cluster.port(rng.randrange(daemons)))
            stats["sent"] += len(round_ops)
            stats["acknowledged"] += len(acknowledged)
            violations.check(moved >= 3, f"round {round_index}: only {moved} followers moved off the killed daemon{victim}")
            verify(None, tokens, writers, all_ops, None, violations, f"round {round_index}", cluster=cluster,
                   followers=followers, rng=rng)
            log(NAME, f"round {round_index}/{rounds}: daemon{victim} killed; {len(round_ops)} requests, {len(acknowledged)} "
                      f"acknowledged, {inflight_on_victim} in flight at the kill and retried on another daemon, "
                      f"{moved} followers moved")

        stats["feed"] = sum(len(f.changes) for f in followers)
        statuses = cluster.stop()
        violations.check(all(s == 0 for s in statuses), f"SIGTERM after the last round: exit statuses {statuses}")
        for line in cluster.server_errors():
            violations.add(f"server log: {line}")
    except Exception as error:
        violations.add(f"the run stopped: {error!r}")
    failed = bool(violations.items)
    cluster.destroy(keep=args.keep or failed)
    summary = (f"{rounds} rounds of kill -9 on {daemons} daemons sharing PostgreSQL, {writers_count} writers, "
               f"{len(followers)} followers: {stats['sent']} requests, {stats['acknowledged']} acknowledged, "
               f"{stats['inflight']} in flight at a kill and retried on another daemon ({stats['appliedBeforeCrash']} had "
               f"been applied, {stats['appliedOnRetry']} applied on retry, {stats['inProgressOnRetry']} 409 requestInProgress "
               f"waited out), {stats['replayed']} acknowledged keys replayed, {stats['followerSwitches']} follower switches, "
               f"{stats['feed']} feed entries followed; {time.monotonic() - started:.1f} s")
    status = violations.finish(summary)
    remove_workdir(workdir, args.keep, status != 0)
    return status


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=default_binary())
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--writers", type=int)
    parser.add_argument("--short", action="store_true", help="CI form: 3 rounds, 4 writers")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--synchronous", choices=["full", "normal"], default="full",
                        help="db.synchronous; a process crash loses nothing acknowledged at either")
    parser.add_argument("--postgres", action="store_true", help="several daemons on one throwaway PostgreSQL database")
    parser.add_argument("--daemons", type=int, default=3, help="with --postgres: how many daemons (at least 2)")
    args = parser.parse_args()
    if args.postgres:
        return main_postgres(args)
    rounds = args.rounds or (3 if args.short else 25)
    writers_count = args.writers or (4 if args.short else 8)
    max_delay = 1.2 if args.short else 2.5
    if not os.access(args.bin, os.X_OK):
        log(NAME, f"no binary at {args.bin}; build it (swift build) or pass --bin")
        return 2
    rng, _ = seeded_random(args.seed, NAME)
    violations = Violations(NAME)
    workdir = make_workdir(NAME)
    server = Server(args.bin, workdir, env={"DB_SYNCHRONOUS": args.synchronous})
    started = time.monotonic()
    stats = {"sent": 0, "acknowledged": 0, "inflight": 0, "appliedBeforeCrash": 0, "appliedOnRetry": 0,
             "replayed": 0, "feed": 0}
    try:
        tokens = {user: server.token(user, "editor") for user in USERS}
        server.start()
        setup = Client(server.port, tokens["alpha"])
        contested = []
        for index in range(2):
            response = setup.request("POST", "/v1/items", draft(f"Contested {index}"))
            contested.append(response.json()["id"])
        setup.close()
        writers = [Writer(index, tokens[USERS[index % 2]], USERS[index % 2], random.Random(rng.random()), contested, violations)
                   for index in range(writers_count)]
        follower = {"cursor": None, "changes": [], "errors": []}
        all_ops = []

        for round_index in range(1, rounds + 1):
            stop = threading.Event()
            inflight = []
            threads = [threading.Thread(target=run_writer, args=(w, server.port, round_index, stop, inflight)) for w in writers]
            threads.append(threading.Thread(target=follow_feed, args=(server.port, tokens["alpha"], follower, stop, True)))
            before = {w.index: len(w.ops) for w in writers}
            for thread in threads:
                thread.start()
            time.sleep(rng.uniform(0.15, max_delay))
            status = server.kill9()
            stop.set()
            for thread in threads:
                thread.join(60)
                if thread.is_alive():
                    violations.add(f"round {round_index}: a client thread is stuck after the kill")
            violations.check(status == -9, f"round {round_index}: the server exited {status}, not by SIGKILL")
            round_ops = [op for w in writers for op in w.ops[before[w.index]:]]
            all_ops.extend(round_ops)

            server.start()
            # Retry every request whose answer was lost, with the same key and body.
            for op in sorted(inflight, key=lambda op: op.writer):
                writer = writers[op.writer]
                client = Client(server.port, writer.token)
                response = send(client, op)
                client.close()
                op.retry = response
                if response.headers.get("idempotency-replayed") == "true":
                    stats["appliedBeforeCrash"] += 1
                elif response.status in (200, 201, 204):
                    stats["appliedOnRetry"] += 1
                writer.absorb(op, response)
            # Replay acknowledged requests: the same answer, byte for byte, and nothing applied again.
            acknowledged = replay_acknowledged(round_ops, writers, args, rng, stats, violations, lambda: server.port)
            stats["sent"] += len(round_ops)
            stats["acknowledged"] += len(acknowledged)
            stats["inflight"] += len(inflight)
            verify(server, tokens, writers, all_ops, follower, violations, f"round {round_index}")
            log(NAME, f"round {round_index}/{rounds}: {len(round_ops)} requests, {len(acknowledged)} acknowledged, "
                      f"{len(inflight)} in flight at the kill")

        stats["feed"] = len(follower["changes"])
        violations.check(server.stop() == 0, "SIGTERM after the last round did not exit 0")
        backup = os.path.join(workdir, "backup.sqlite")
        output = server.cli("backup", "--to", backup, check=False)
        violations.check("integrity ok" in output, f"stockroom backup (integrity_check) said: {output!r}")
        for line in server.server_errors():
            violations.add(f"server log: {line}")
        violations.check(not follower["errors"], f"follower: {follower['errors'][:3]}")
    except Exception as error:
        violations.add(f"the run stopped: {error!r}")
    finally:
        server.kill9()
    summary = (f"{rounds} rounds of kill -9 (synchronous={args.synchronous}), {writers_count} writers: {stats['sent']} requests, {stats['acknowledged']} "
               f"acknowledged, {stats['inflight']} in flight at a kill ({stats['appliedBeforeCrash']} had been applied, "
               f"{stats['appliedOnRetry']} applied on retry), {stats['replayed']} acknowledged keys replayed, "
               f"{stats['feed']} feed entries followed; {time.monotonic() - started:.1f} s")
    status = violations.finish(summary)
    remove_workdir(workdir, args.keep, status != 0)
    return status


def verify(server, tokens, writers, all_ops, follower, violations, label, cluster=None, followers=(), rng=None):
    """Against one server, or (`cluster`) a randomly chosen daemon, each of which must serve the same log."""
    if cluster:
        cluster.wait_feeds_caught_up(tokens["alpha"], violations, label)
    port = server.port if server else cluster.port(rng.choice(cluster.alive()))
    clients = {user: Client(port, token) for user, token in tokens.items()}
    try:
        feeds = {user: replay_feed(client)[0] for user, client in clients.items()}
        if cluster:
            for index in cluster.alive():
                for user, token in tokens.items():
                    other = Client(cluster.port(index), token)
                    violations.check(replay_feed(other)[0] == feeds[user],
                                     f"{label}: daemon{index} serves {user} another log than daemon on port {port}")
                    other.close()
        served = check_feed_matches_state(violations, label, clients, feeds)
        navigations = {}
        for user, client in clients.items():
            for navigation in client.request("GET", "/v1/users/me/navigation").json()["clients"]:
                navigations[navigation["clientID"]] = navigation
        check_repairs(violations, label, served, navigations.values())

        # Every acknowledged write is in the state.
        for writer in writers:
            for item_id, item in writer.owned.items():
                if item is None:
                    violations.check(item_id not in served, f"{label}: {writer.client_id}'s deleted item {item_id} is served")
                else:
                    violations.check(served.get(item_id) == item,
                                     f"{label}: {writer.client_id}'s item {item_id} is {served.get(item_id)}, its last answer said {item}")
            if writer.navigation:
                actual = navigations.get(writer.client_id)
                expected = writer.navigation
                fields = ("tab", "path", "destination", "version")
                violations.check(actual is not None and all(actual[f] == expected[f] for f in fields),
                                 f"{label}: {writer.client_id}'s navigation is {actual}, its answers say {expected}")
        contested_answers = {}
        for op in all_ops:
            answer = op.answer
            if op.kind in ("contestedPut", "contestedSave") and answer is not None and answer.status == 200:
                body = answer.json()
                item = body["item"] if op.kind == "contestedSave" else body
                if item["version"] > contested_answers.get(item["id"], {"version": 0})["version"]:
                    contested_answers[item["id"]] = item
        for item_id, item in contested_answers.items():
            violations.check(served.get(item_id) == item,
                             f"{label}: contested item {item_id} is {served.get(item_id)}, the latest answer said {item}")

        # At most once, and nothing half-applied.
        entries = {}
        for change in feeds["alpha"] + [c for c in feeds["beta"] if c["entity"] == "navigation"]:
            key = change["origin"]["idempotencyKey"]
            if key:
                entries.setdefault(key, []).append(change)
        for op in all_ops:
            found = entries.get(op.key, [])
            seen = [(c["entity"], c["id"]) for c in found]
            violations.check(len(seen) == len(set(seen)), f"{label}: {op.key} {op.kind} applied more than once: {seen}")
            answer = op.answer
            if answer is None:
                violations.add(f"{label}: {op.key} {op.kind} never got an answer")
                continue
            applied = answer.status in (200, 201, 204)
            items = [c for c in found if c["entity"] == "item"]
            navs = [c for c in found if c["entity"] == "navigation"]
            own_nav = [c for c in navs if c["id"] == f"w{op.writer}"]
            if not applied:
                violations.check(not found, f"{label}: {op.key} {op.kind} answered {answer.status} but wrote {seen}")
                continue
            body = answer.json() if answer.body else None
            if op.kind in ("create", "put", "contestedPut"):
                violations.check(len(items) == 1 and not navs and items[0]["value"] == body,
                                 f"{label}: {op.key} {op.kind}: log has {seen}, the answer was {body}")
            elif op.kind == "delete":
                violations.check(len(items) == 1 and items[0]["op"] == "delete" and items[0]["id"] == op.target,
                                 f"{label}: {op.key} delete: log has {seen}")
            elif op.kind in ("save", "saveNew", "contestedSave", "confirmDelete"):
                ok = len(items) == 1 and len(own_nav) == 1 and own_nav[0]["value"] == body["navigation"]
                if op.kind == "confirmDelete":
                    ok = ok and items[0]["op"] == "delete" and items[0]["id"] == op.target
                else:
                    ok = ok and items[0]["value"] == body["item"]
                violations.check(ok, f"{label}: {op.key} {op.kind} half-applied or wrong: log has {seen}, answer {body}")
            else:
                violations.check(not items and len(own_nav) <= 1, f"{label}: {op.key} {op.kind}: log has {seen}")
                if own_nav:
                    violations.check(own_nav[0]["value"] == body["navigation"],
                                     f"{label}: {op.key} {op.kind}: logged {own_nav[0]['value']} != answered {body['navigation']}")

        # The followers' entries survived the crash, and each saw every entry exactly once across
        # reconnects and switches to other daemons.
        for each in followers:
            catch_up_follower(port, each)
            check_follower(violations, label, each, feeds[each.user])
        if follower is None:
            return
        catch_up(server.port, tokens["alpha"], follower)
        got = follower["changes"]
        if got != feeds["alpha"]:
            mismatch = next((i for i, (a, b) in enumerate(zip(got, feeds["alpha"])) if a != b), min(len(got), len(feeds["alpha"])))
            violations.add(f"{label}: the follower received {len(got)} entries, the log holds {len(feeds['alpha'])}; "
                           f"first difference at {mismatch}: {got[mismatch:mismatch + 1]} vs {feeds['alpha'][mismatch:mismatch + 1]}")
    finally:
        for client in clients.values():
            client.close()


if __name__ == "__main__":
    sys.exit(main())
