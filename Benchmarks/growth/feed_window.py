#!/usr/bin/env python3
"""A navigation-only feed page on a long log of others' writes (FeedPageBuilder.scanWindow):
  BIN=<stockroom> python3 Benchmarks/growth/feed_window.py [--items 300000] [--passes 3] [--reps 7]
Starts its own server on a free 127.0.0.1 port with a fresh database; user g imports --items items
through POST /v1/items/import, then updates them all --passes - 1 times the same way (a log of items x passes
entries); user n sends 100 selectTab commands at the head
(99 navigation changes: the first selects the tab a new device already has). Then, --reps sequential keep-alive
requests each (median), as n:
  - GET /v1/changes?since=<seq 1>&limit=100&topics=navigation, and the same from the log's middle;
  - the same with both topics (the page fills with items at once);
  - the whole navigation catch-up from seq 1, following hasMore: total time, pages, changes.
Stops the server by PID. Standard library only."""
import argparse, http.client, json, os, socket, statistics, subprocess, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--items", type=int, default=300_000)
ap.add_argument("--passes", type=int, default=3)
ap.add_argument("--reps", type=int, default=7)
a = ap.parse_args()
BIN = os.environ.get("BIN", ".build-release/release/stockroom")
d = tempfile.mkdtemp(prefix="feed-window-"); db = os.path.join(d, "db.sqlite")
s = socket.socket(); s.bind(("127.0.0.1", 0)); PORT = s.getsockname()[1]; s.close()
env = dict(os.environ, LOG_LEVEL="warning")


def token(user):
    return subprocess.run([BIN, "token", "create", "--user", user, "--role", "editor", "--db-path", db],
                          capture_output=True, text=True, env=env, check=True).stdout.strip().splitlines()[-1]


G, N = token("g"), token("n")
proc = subprocess.Popen([BIN, "serve", "--http-host", "127.0.0.1", "--http-port", str(PORT), "--db-path", db],
                        stdout=open(os.path.join(d, "log"), "w"), stderr=subprocess.STDOUT, env=env)
c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=600)


def call(method, path, tok, body=None):
    c.request(method, path, body=None if body is None else json.dumps(body),
              headers={"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
    r = c.getresponse()
    return r.status, r.read()


for _ in range(100):
    try:
        call("GET", "/health", G); break
    except OSError:
        time.sleep(0.1); c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=600)
try:
    ids = [f"00000000-0000-4000-8000-{i:012x}" for i in range(a.items)]
    for p in range(a.passes):
        # One import a pass: the first creates every item, each later one updates every item.
        csv = "id,name,quantity\n" + "".join(f"{i},Crate {n} {p},{p + 1}\n" for n, i in enumerate(ids))
        c.request("POST", "/v1/items/import", body=csv.encode(), headers={"Authorization": "Bearer " + G, "Content-Type": "text/csv"})
        r = c.getresponse(); body = r.read()
        assert r.status == 200 and json.loads(body)["rejected"] == 0, (r.status, body[:300])
    for i in range(100):
        st, body = call("POST", "/v1/clients/phone/commands", N, {"command": {"selectTab": {"tab": "settings" if i % 2 else "inventory"}}})
        assert st == 200, (st, body[:200])
    st, body = call("GET", "/v1/changes?since=now", N)
    cursor = json.loads(body)["cursor"]; epoch, head = cursor.split(".")[1], int(cursor.split(".")[2])
    print(f"log: {head:,} entries, n's navigation changes at its end")
    for name, query in [("topics=navigation from seq 1", "since=c1.{e}.1&limit=100&topics=navigation"),
                        ("topics=navigation from the middle", "since=c1.{e}.%d&limit=100&topics=navigation" % (head // 2)),
                        ("both topics from seq 1", "since=c1.{e}.1&limit=100")]:
        times = []
        for _ in range(a.reps):
            t = time.perf_counter(); st, body = call("GET", "/v1/changes?" + query.format(e=epoch), N)
            times.append((time.perf_counter() - t) * 1000)
        page = json.loads(body)
        print(f"{name}: {statistics.median(times):.1f} ms median of {a.reps} ({len(page['changes'])} changes, hasMore {page['hasMore']})")
    t = time.perf_counter(); since, pages, changes = f"c1.{epoch}.1", 0, 0
    while True:
        st, body = call("GET", f"/v1/changes?since={since}&limit=100&topics=navigation", N)
        page = json.loads(body); pages += 1; changes += len(page["changes"]); since = page["cursor"]
        if not page["hasMore"]: break
    print(f"navigation catch-up from seq 1: {(time.perf_counter() - t) * 1000:.0f} ms, {pages} pages, {changes} changes")
finally:
    proc.terminate(); proc.wait()
