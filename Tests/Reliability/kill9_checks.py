"""kill9.py's checks after each round: every acknowledged write in the state, each key applied at
most once, nothing half-applied, and the followers' entries still in the log."""

from common import Client, check_feed_matches_state, check_follower, check_repairs, replay_feed


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
