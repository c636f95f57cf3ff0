"""deploy_test.py's checks of docker-compose.yml (one daemon on SQLite): the image, `up` and
`down`, backup and restore, `stop` under open streams, and settings from the environment."""

import http.client
import json
import os
import re
import time
import urllib.parse

from deploy_clients import SSE, WebSocket, command, request
from deploy_support import (ADDED_LAYERS_LIMIT, IMAGE, RUNTIME_BASE, Client, Project, draft, expect, free_port,
                            list_items, replay_feed, run, say, wait_until)


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
