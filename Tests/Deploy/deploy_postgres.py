"""deploy_test.py's check of docker-compose.postgres.yml: PostgreSQL, three daemons of the image
and HAProxy; writers and followers through the balancer while one daemon stops and starts again."""

import collections
import json
import os
import re
import threading
import time

from deploy_clients import Follower, Timeline, Writer, request
from deploy_support import (BUILD_ENV, HERE, POSTGRES_IMAGE, CheckFailed, compose_containers, container_logs, expect,
                            run, say, wait_all_healthy, wait_until)

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
