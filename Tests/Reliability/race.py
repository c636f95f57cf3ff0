#!/usr/bin/env python3
"""Race suite for Stockroom (Python 3.9+, standard library only).

Starts the real `stockroom` binary and, round after round, sends conflicting requests at the same
moment from several connections (threads released by one barrier), then checks what the contract
promises for each race:

  putIfMatch        N PUTs with the same If-Match: one 200, the rest 412 preconditionFailed
  navigationIfMatch N navigation PUTs with the same If-Match: one 200, the rest 412
  deleteRace        N DELETEs with the same If-Match: one 204, the rest 404 (a deleted item is missing)
  sameID            N POSTs of one new id: one 201, the rest 409 alreadyExists
  sameKey           N identical POSTs with one Idempotency-Key: one item; every 201 is the same
                    answer (the others replayed), or 409 requestInProgress
  sameKeyOtherBody  N POSTs with one key and different bodies: one 201, the rest 422
                    idempotencyKeyReused or 409 requestInProgress; one item
  saveVsDelete      a device saves an edit while the item is deleted: delete 204; save 200 (logged
                    before the delete) or 409 itemDeleted with the draft still open
  confirmDeleteRace two devices confirm the delete alert of one item: one 200, the other 409; one
                    delete in the log
  saveVsSave        four devices edit one item from the same version and save at once: one 200, the
                    others 409 conflict naming the winner's item, each loser's draft still open
  pushVsDelete      devices push, open a delete alert on, or deep-link to an item while it is
                    deleted: afterwards no state points at it
  sameClient        N pushes of different items on one device: all 200, versions v+1..v+N, and the
                    path is in version order
  restoreVsEdits    a device keeps restoring another's state while that one types: every restored
                    state is one the other device really had

After all rounds: the log's seqs have no gap, folding it gives exactly the served state, a long-poll
follower that ran throughout saw exactly the log, and no answer (nor the server log) holds a 5xx.

With --postgres (multi-daemon form): --daemons (3) daemons on one throwaway PostgreSQL database, and
the racing requests of each race go to different daemons (request i of a race to daemon i + r mod
N, r moving on with every race): the same key sent to several daemons at once is applied once, two
devices saving one item's draft through different daemons have exactly one winner, and so on for
every race above. A follower on each daemon (long-poll, SSE, WebSocket) must see exactly the log,
and every daemon must serve the same log.

Usage: Tests/Reliability/race.py [--bin PATH] [--rounds N] [--short] [--seed S] [--keep] [--postgres [--daemons N]]
  --short: 3 rounds (CI). Default: 40 rounds.
Exit status 0 when every check held, 1 on a violation, 2 when it could not run.
"""

import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (Client, Cluster, FeedFollower, follow_feed, Server, Violations, check_feed_matches_state, check_follower,
                    check_repairs, default_binary, log, make_workdir, missing_for_postgres, remove_workdir, replay_feed,
                    seeded_random)
from race_cases import (Race, confirm_delete_race, delete_race, navigation_if_match, push_vs_delete, put_if_match,
                        restore_vs_edits, same_client, same_id, same_key, same_key_other_body, save_vs_delete, save_vs_save)

NAME = "race"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=default_binary())
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--short", action="store_true", help="CI form: 3 rounds")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--postgres", action="store_true", help="several daemons on one throwaway PostgreSQL database")
    parser.add_argument("--daemons", type=int, default=3, help="with --postgres: how many daemons (at least 2)")
    args = parser.parse_args()
    rounds = args.rounds or (3 if args.short else 40)
    if not os.access(args.bin, os.X_OK):
        log(NAME, f"no binary at {args.bin}; build it (swift build) or pass --bin")
        return 2
    missing = missing_for_postgres(NAME, args.bin) if args.postgres else None
    if missing is not None:
        return missing
    rng, _ = seeded_random(args.seed, NAME)
    violations = Violations(NAME)
    workdir = make_workdir(NAME + ("-pg" if args.postgres else ""))
    cluster = Cluster(args.bin, workdir, max(2, args.daemons)) if args.postgres else None
    server = None if cluster else Server(args.bin, workdir)
    started = time.monotonic()
    outcomes = {}
    race = None
    followers = []
    try:
        if cluster:
            cluster.start()
            token = cluster.token("racer", "editor")
            ports = [cluster.port(index) for index in range(len(cluster.servers))]
        else:
            token = server.token("racer", "editor")
            server.start()
            ports = [server.port]
        race = Race(ports, token, violations)
        follower = {"cursor": None, "changes": [], "errors": []}
        stop = threading.Event()
        follower_thread = threading.Thread(target=follow_feed, args=(ports[0], token, follower, stop))
        follower_thread.start()
        if cluster:
            followers = [FeedFollower(f"follower-{index}", cluster, token, index, ("poll", "sse", "ws")[index % 3]).start(stop)
                         for index in range(1, len(ports))]
        keys = {}
        scenarios = [("putIfMatch", put_if_match), ("navigationIfMatch", navigation_if_match), ("deleteRace", delete_race),
                     ("sameID", same_id), ("sameKey", lambda r, c, l: same_key(r, c, l, keys)),
                     ("sameKeyOtherBody", lambda r, c, l: same_key_other_body(r, c, l, keys)),
                     ("saveVsDelete", save_vs_delete), ("confirmDeleteRace", confirm_delete_race), ("saveVsSave", save_vs_save),
                     ("pushVsDelete", push_vs_delete), ("sameClient", same_client), ("restoreVsEdits", restore_vs_edits)]
        for round_index in range(1, rounds + 1):
            rng.shuffle(scenarios)
            for name, scenario in scenarios:
                result = scenario(race, violations.check, f"round {round_index} {name}")
                if isinstance(result, str):
                    outcomes[f"{name}: {result}"] = outcomes.get(f"{name}: {result}", 0) + 1
            log(NAME, f"round {round_index}/{rounds} done")
        stop.set()
        follower_thread.join(30)
        for each in followers:
            each.thread.join(30)

        if cluster:  # a daemon learns of the others' last commits by notification (or its poll, within a second)
            cluster.wait_feeds_caught_up(token, violations, "after the races")
        changes, _ = replay_feed(race.client)
        served = check_feed_matches_state(violations, "after the races", {"racer": race.client}, {"racer": changes})
        navigations = race.client.request("GET", "/v1/users/me/navigation").json()["clients"]
        check_repairs(violations, "after the races", served, navigations)
        for key in keys:
            applied = [c for c in changes if c["origin"]["idempotencyKey"] == key]
            violations.check(len(applied) == 1, f"key {key} applied {len(applied)} times")
        violations.check(not follower["errors"], f"the follower: {follower['errors'][:3]}")
        rest, _ = replay_feed(race.client, since=follower["cursor"])
        violations.check(follower["changes"] + rest == changes,
                         f"the follower saw {len(follower['changes']) + len(rest)} entries, the log holds {len(changes)}")
        for each in followers:
            more, _ = replay_feed(Client(cluster.port(each.index), token), since=each.cursor)
            for change in more:
                each.accept(change, change["cursor"])
            check_follower(violations, "after the races", each, changes)
        if cluster:
            for index in range(len(cluster.servers)):
                violations.check(replay_feed(Client(cluster.port(index), token))[0] == changes,
                                 f"daemon{index} serves another log than daemon0")
            statuses = cluster.stop()
            violations.check(all(s == 0 for s in statuses), f"SIGTERM: exit statuses {statuses}")
            errors = cluster.server_errors()
        else:
            violations.check(server.stop() == 0, "SIGTERM did not exit 0")
            errors = server.server_errors()
        for line in errors:
            violations.add(f"server log: {line}")
    except Exception as error:
        violations.add(f"the run stopped: {error!r}")
    finally:
        if cluster:
            cluster.destroy(keep=args.keep or bool(violations.items))
        else:
            server.kill9()
    answers = race.answers if race else 0
    detail = ", ".join(f"{k} x{v}" for k, v in sorted(outcomes.items()))
    where = f" over {len(cluster.servers)} daemons on PostgreSQL" if cluster else ""
    status = violations.finish(f"{rounds} rounds of 12 races{where}, {answers} racing answers ({detail}); "
                               f"{time.monotonic() - started:.1f} s")
    remove_workdir(workdir, args.keep, status != 0)
    return status


if __name__ == "__main__":
    sys.exit(main())
