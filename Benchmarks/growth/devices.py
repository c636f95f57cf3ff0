#!/usr/bin/env python3
"""The save cycle as devices grow: bench-compare's command row (openEdit -> updateDraft -> save over
64 devices, wrk_bench.lua's cycle mode) on a store with few devices and on one with --devices more,
each of them with an edit open on an item (so each names an item in client_item_refs).

  python3 Benchmarks/growth/devices.py BIN [BIN2 ...] [--devices 100000] [--rounds 3] [--dur 5]

For each binary: a fresh database made by that binary's own server (its migrations), 2,000 items
and one device with an edit open through the API; that file is copied, and the copy gets --devices
more devices written straight into its tables (the first device's row, each naming another item,
1,000 devices per user as the server's cap allows), so that both files hold the same kind of rows
and a binary that scans a table per command is not minutes seeding itself. Then --rounds rounds,
binaries and sizes interleaved: the server started on the file (DB_SYNCHRONOUS=full, LOG_LEVEL=warning),
a 1 s warm-up cycle, a --dur s measured one, the server stopped. Prints saves/s and commands/s per
run, and per binary the median ratio of the large file's rate to the small one's (flat = 1.0x).
Standard library only, plus wrk and ../shared/bench-compare/wrk_bench.lua."""
import argparse, http.client, json, os, shutil, socket, sqlite3, statistics, subprocess, tempfile, time, uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LUA = os.path.join(ROOT, "..", "shared", "bench-compare", "wrk_bench.lua")
ap = argparse.ArgumentParser()
ap.add_argument("bins", nargs="+")
ap.add_argument("--devices", type=int, default=100_000)
ap.add_argument("--items", type=int, default=2_000)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--dur", type=int, default=5)
ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
a = ap.parse_args()
assert os.path.exists(LUA), f"no {LUA}"
work = tempfile.mkdtemp(prefix="devices-")
env = dict(os.environ, DB_SYNCHRONOUS="full", LOG_LEVEL="warning")


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


class Server:
    def __init__(self, binary, db):
        self.port = free_port()
        self.proc = subprocess.Popen([binary, "serve", "--http-host", "127.0.0.1", "--http-port", str(self.port), "--db-path", db],
                                     stdout=open(db + ".log", "a"), stderr=subprocess.STDOUT, env=env)
        for _ in range(300):
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5); c.request("GET", "/health")
                if c.getresponse().status == 200: return
            except OSError:
                pass
            time.sleep(0.1)
        raise SystemExit(f"no answer from {binary} on {db}")

    def stop(self):
        self.proc.terminate(); self.proc.wait(30)


def token(binary, db, user):
    out = subprocess.run([binary, "token", "create", "--user", user, "--role", "editor", "--db-path", db],
                         capture_output=True, text=True, env=env, check=True).stdout
    return out.strip().splitlines()[-1].strip()


def call(port, tok, method, path, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request(method, path, body=json.dumps(body), headers={"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
    r = c.getresponse(); data = r.read()
    assert r.status in (200, 201), (r.status, data[:300])
    return json.loads(data)


def prepare(k, binary):
    """Makes small.sqlite and large.sqlite for binary k; gives (token, items.tsv)."""
    folder = os.path.join(work, f"bin{k}"); os.makedirs(folder)
    small = os.path.join(folder, "small.sqlite")
    tok = token(binary, small, "bench")
    server = Server(binary, small)
    try:
        items = []
        for start in range(0, a.items, 1000):
            batch = [{"id": str(uuid.uuid4()), "name": f"Widget {start + i}", "color": None, "status": {"inStock": {"quantity": 1}}}
                     for i in range(min(1000, a.items - start))]
            results = call(server.port, tok, "POST", "/v1/items/batch", {"items": batch})["results"]
            assert all(r["status"] == 201 for r in results), results[:3]
            items += [(x["id"], x["name"]) for x in batch]
        call(server.port, tok, "POST", "/v1/clients/template/commands", {"command": {"openEdit": {"itemID": items[0][0]}}})
    finally:
        server.stop()
    tsv = os.path.join(folder, "items.tsv")
    with open(tsv, "w") as f:
        f.writelines(f"{i}\t{n}\n" for i, n in items)
    large = os.path.join(folder, "large.sqlite")
    shutil.copyfile(small, large)
    db = sqlite3.connect(large)
    row = db.execute("SELECT state, version, updated_at, owner_change_seq FROM clients WHERE client_id = 'template'").fetchone()
    state, first = row[0], items[0][0]
    assert first in state, state
    t0 = time.time()
    with db:
        for n in range(a.devices):
            item = items[n % len(items)][0]
            client = f"seeded-{n}"
            db.execute("INSERT INTO clients (client_id, owner, state, version, updated_at, owner_change_seq) VALUES (?, ?, ?, ?, ?, ?)",
                       (client, f"seeded-user-{n // 1000}", state.replace(first, item), row[1], row[2], row[3]))
            db.execute("INSERT INTO client_item_refs (item_id, client_id) VALUES (?, ?)", (item, client))
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)"); db.close()
    print(f"bin{k}: {a.devices} devices written into large.sqlite in {time.time() - t0:.1f} s", flush=True)
    return tok, tsv, {"small": small, "large": large}


def cycle(port, tok, tsv, seconds, prefix):
    e = dict(os.environ, MODE="cycle", ITEMS=tsv, CLIENTS="64", CLIENT_PREFIX=prefix, AUTH="Bearer " + tok)
    out = subprocess.run(["wrk", "-t1", "-c16", f"-d{seconds}s", "-s", LUA, f"http://127.0.0.1:{port}"],
                         capture_output=True, text=True, env=e).stdout
    line = next(l for l in out.splitlines() if l.startswith("RESULT"))
    f = dict(p.split("=") for p in line.split()[1:])
    secs = int(f["duration_us"]) / 1e6
    assert int(f["status_errors"]) == 0 and int(f["socket_errors"]) == 0, line
    return int(f["saves"]) / secs, int(f["requests"]) / secs


prepared = [prepare(k, b) for k, b in enumerate(a.bins)]
rates = {(k, size): [] for k in range(len(a.bins)) for size in ("small", "large")}
try:
    for r in range(1, a.rounds + 1):
        for k, binary in enumerate(a.bins):
            tok, tsv, files = prepared[k]
            for size in ("small", "large"):
                server = Server(binary, files[size])
                try:
                    cycle(server.port, tok, tsv, 1, f"warm{r}")
                    saves, commands = cycle(server.port, tok, tsv, a.dur, f"bench{r}")
                finally:
                    server.stop()
                rates[(k, size)].append(saves)
                print(f"round {r}\t{binary}\t{size}\t{saves:,.0f} saves/s\t{commands:,.0f} commands/s", flush=True)
    for k, binary in enumerate(a.bins):
        ratios = [l / s for s, l in zip(rates[(k, "small")], rates[(k, "large")])]
        if not ratios: continue
        print(f"{binary}\tlarge/small ({a.devices} devices more)\t" + ", ".join(f"{x:.2f}x" for x in ratios) +
              f"\tmedian {statistics.median(ratios):.2f}x", flush=True)
finally:
    if a.keep:
        print("kept", work)
    else:
        shutil.rmtree(work, ignore_errors=True)
