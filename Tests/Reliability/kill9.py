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
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (Client, Cluster, FeedFollower, follow_feed, Server, Violations, default_binary, draft, log, make_workdir,
                    missing_for_postgres, remove_workdir, seeded_random)
from kill9_checks import verify
from kill9_writers import Writer, replay_acknowledged, run_writer, run_writer_cluster, send

NAME = "kill9"
USERS = ("alpha", "beta")


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


if __name__ == "__main__":
    sys.exit(main())
