#!/usr/bin/env python3
"""Imports and snapshots at scale, beside ../shared/bench-growth/run.py (which seeds with single POSTs):
  BIN=.build-release/release/stockroom python3 Benchmarks/growth/import_snapshot.py [--items 1000000]
Starts its own server on a free 127.0.0.1 port with a fresh database (DB_SYNCHRONOUS=full unless set,
the default durability), then:
  1. import: POST /v1/items/batch, --batch items per request, --clients concurrent keep-alive clients
     (items/s, every result checked);
  2. single POSTs: wrk -t4 -c32 POST /v1/items for --dur seconds (req/s), for comparison;
  3. one snapshot: seconds, MB, items/s, the server's RSS before it and its peak during it;
  4. --concurrent snapshots at once: the server's peak RSS, each read to its end by its own client;
  5. one CSV export (GET /v1/items/export): seconds, rows/s, the server's RSS before it and its peak;
  6. a CSV file of --items new rows, --rejects of them with a blank name, sent to POST /v1/items/import
     with dryRun=true&onError=skip, then with onError=skip: seconds, rows/s, the server's peak RSS.
Stops the server by PID. Standard library only, plus wrk for step 2."""
import argparse, http.client, json, os, socket, subprocess, tempfile, threading, time, uuid

ap = argparse.ArgumentParser()
ap.add_argument("--items", type=int, default=1_000_000)
ap.add_argument("--batch", type=int, default=1000)
ap.add_argument("--clients", type=int, default=4)
ap.add_argument("--concurrent", type=int, default=10)
ap.add_argument("--dur", type=int, default=5)
ap.add_argument("--rejects", type=int, default=10_000)
ap.add_argument("--only-csv", action="store_true", help="step 1 with --batch items, then step 6 alone")
ap.add_argument("--keep", action="store_true", help="keep the temporary folder (database, log)")
a = ap.parse_args()
BIN = os.environ.get("BIN", ".build-release/release/stockroom")
d = tempfile.mkdtemp(prefix="import-snapshot-"); db = os.path.join(d, "db.sqlite")
s = socket.socket(); s.bind(("127.0.0.1", 0)); PORT = s.getsockname()[1]; s.close()
env = dict(os.environ, DB_SYNCHRONOUS=os.environ.get("DB_SYNCHRONOUS", "full"), LOG_LEVEL="warning")
tok = subprocess.run([BIN, "token", "create", "--user", "g", "--role", "editor", "--db-path", db],
                     capture_output=True, text=True, env=env).stdout.strip().splitlines()[-1]
proc = subprocess.Popen([BIN, "serve", "--http-host", "127.0.0.1", "--http-port", str(PORT), "--db-path", db],
                        stdout=open(os.path.join(d, "log"), "w"), stderr=subprocess.STDOUT, env=env)
H = {"Authorization": "Bearer " + tok, "Content-Type": "application/json"}


def conn():
    return http.client.HTTPConnection("127.0.0.1", PORT, timeout=600)


def rss_mb():
    for line in open(f"/proc/{proc.pid}/status"):
        if line.startswith("VmRSS"): return int(line.split()[1]) / 1024
    return 0.0


def peak_rss_during(fn):
    peak = [rss_mb()]; stop = [False]
    def watch():
        while not stop[0]:
            peak[0] = max(peak[0], rss_mb()); time.sleep(0.02)
    w = threading.Thread(target=watch); w.start()
    t0 = time.time(); out = fn(); elapsed = time.time() - t0
    stop[0] = True; w.join()
    return elapsed, peak[0], out


def read_snapshot():
    """Reads one snapshot to its end without keeping it; returns (bytes, tail)."""
    c = conn(); c.request("GET", "/v1/snapshot", headers=H); r = c.getresponse()
    assert r.status == 200, r.status
    total, tail = 0, b""
    while True:
        chunk = r.read(1 << 16)
        if not chunk: break
        total += len(chunk); tail = (tail + chunk)[-200:]
    assert tail.endswith(b'"}'), tail
    return total, tail


for _ in range(100):
    try:
        c = conn(); c.request("GET", "/health"); c.getresponse().read(); break
    except OSError:
        time.sleep(0.1)

try:
    # 1. import through the batch route
    per_client = a.items // a.clients
    errors = []
    def importer(k):
        c = conn(); done = 0
        while done < k:
            n = min(a.batch, k - done)
            body = json.dumps({"items": [{"id": str(uuid.uuid4()), "name": f"item {done + i} {uuid.uuid4().hex[:8]}", "color": None,
                                          "status": {"inStock": {"quantity": i % 50}}} for i in range(n)]})
            c.request("POST", "/v1/items/batch", body=body, headers=H); r = c.getresponse(); data = r.read()
            if r.status != 200: errors.append((r.status, data[:200])); return
            results = json.loads(data)["results"]
            if len(results) != n or any(x["status"] != 201 for x in results): errors.append(data[:200]); return
            done += n
    ts = [threading.Thread(target=importer, args=(per_client,)) for _ in range(a.clients)]
    t0 = time.time(); [t.start() for t in ts]; [t.join() for t in ts]; el = time.time() - t0
    assert not errors, errors[:3]
    items = per_client * a.clients
    print(f"import\t{items} items\t{a.clients} clients x {a.batch}/request\t{el:.1f} s\t{items / el:.0f} items/s\t"
          f"DB_SYNCHRONOUS={env['DB_SYNCHRONOUS']}", flush=True)

    if not a.only_csv:
        # 2. single POSTs, for comparison
        lua = os.path.join(d, "post.lua")
        open(lua, "w").write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
                             f'wrk.headers["Authorization"] = "Bearer {tok}"\n'
                             'wrk.body = \'{"name": "wrk item", "color": null, "status": {"inStock": {"quantity": 1}}}\'\n')
        r = subprocess.run(["wrk", "-t4", "-c32", f"-d{a.dur}s", "-s", lua, f"http://127.0.0.1:{PORT}/v1/items"],
                           capture_output=True, text=True)
        rate = next((l.split()[1] for l in r.stdout.splitlines() if l.startswith("Requests/sec")), "?")
        bad = [l.strip() for l in r.stdout.splitlines() if "Non-2xx" in l]
        print(f"single POST\twrk -t4 -c32 -d{a.dur}s\t{rate} req/s\t{' '.join(bad) or 'all 2xx'}", flush=True)

        # 3. one snapshot
        time.sleep(1)
        before = rss_mb()
        el, peak, (size, _) = peak_rss_during(read_snapshot)
        n = items + 0
        print(f"snapshot\t{el:.2f} s\t{size / 1e6:.1f} MB\t~{n / el:.0f} items/s\tRSS before {before:.0f} MB, peak {peak:.0f} MB "
              f"(+{peak - before:.0f})", flush=True)

        # 4. concurrent snapshots
        time.sleep(1)
        before = rss_mb()
        sizes = []
        def one():
            sizes.append(read_snapshot()[0])
        def many():
            ts = [threading.Thread(target=one) for _ in range(a.concurrent)]
            [t.start() for t in ts]; [t.join() for t in ts]
        el, peak, _ = peak_rss_during(many)
        assert len(sizes) == a.concurrent and len(set(sizes)) == 1, sizes
        print(f"{a.concurrent} snapshots at once\t{el:.2f} s\tRSS before {before:.0f} MB, peak {peak:.0f} MB (+{peak - before:.0f})",
              flush=True)
        # 5. one CSV export
        time.sleep(1)
        before = rss_mb()
        def read_export():
            c = conn(); c.request("GET", "/v1/items/export", headers=H); r = c.getresponse()
            assert r.status == 200 and r.getheader("Stockroom-Cursor"), r.status
            total, rows = 0, 0
            while True:
                chunk = r.read(1 << 16)
                if not chunk: break
                total += len(chunk); rows += chunk.count(b"\r\n")
            return total, rows - 1
        el, peak, (size, rows) = peak_rss_during(read_export)
        assert rows >= items, (rows, items)
        print(f"export\t{rows} rows\t{el:.2f} s\t{size / 1e6:.1f} MB\t{rows / el:.0f} rows/s\tRSS before {before:.0f} MB, peak {peak:.0f} MB "
              f"(+{peak - before:.0f})", flush=True)

    # 6. a CSV import: a dry run, then the import
    csv_path = os.path.join(d, "import.csv")
    step = a.items // max(1, a.rejects)
    with open(csv_path, "w") as f:
        f.write("name,status,quantity,onBackOrder,colorName,colorRed,colorGreen,colorBlue\n")
        for i in range(a.items):
            name = " " if a.rejects and i % step == 0 and i // step < a.rejects else f"csv item {i}"
            f.write(f"{name},inStock,{i % 50},,Teal,0,0.5,0.5\n" if i % 3 == 0 else f"{name},outOfStock,,true,,,,\n")
    size = os.path.getsize(csv_path)
    for label, query in (("import dry run", "dryRun=true&onError=skip"), ("import", "onError=skip")):
        time.sleep(1)
        before = rss_mb()
        def send():
            c = conn()
            with open(csv_path, "rb") as body:
                c.request("POST", f"/v1/items/import?{query}", body=body,
                          headers={"Authorization": H["Authorization"], "Content-Type": "text/csv", "Content-Length": str(size)})
                r = c.getresponse(); data = r.read()
            assert r.status == 200, (r.status, data[:300])
            return json.loads(data)
        # Other requests meanwhile: a GET of one item and a PUT of another, one after another.
        probe_stop, probe = [False], {"GET": [], "PUT": []}
        def probe_requests():
            c = conn(); c.request("GET", "/v1/items?limit=2", headers=H); r = c.getresponse(); ids = [i["id"] for i in json.loads(r.read())["items"]]
            while not probe_stop[0]:
                for method, path, body in (("GET", f"/v1/items/{ids[0]}", None),
                                           ("PUT", f"/v1/items/{ids[1]}", json.dumps({"name": "probe", "color": None, "status": {"inStock": {"quantity": 1}}}))):
                    t = time.time(); c.request(method, path, body=body, headers=H); r = c.getresponse(); r.read()
                    probe[method].append((time.time() - t, r.status))
                time.sleep(0.05)
        prober = threading.Thread(target=probe_requests); prober.start()
        el, peak, summary = peak_rss_during(send)
        probe_stop[0] = True; prober.join()
        slowest = {m: max((t for t, _ in v), default=0) for m, v in probe.items()}
        statuses = sorted({st for v in probe.values() for _, st in v})
        assert summary["rejected"] == a.rejects and summary["inserted"] == a.items - a.rejects, {k: summary[k] for k in ("inserted", "rejected")}
        print(f"{label}\t{a.items} rows ({a.rejects} rejected)\t{size / 1e6:.1f} MB\t{el:.2f} s\t{a.items / el:.0f} rows/s\t"
              f"RSS before {before:.0f} MB, peak {peak:.0f} MB (+{peak - before:.0f})\t"
              f"meanwhile {len(probe['GET'])} GETs (slowest {slowest['GET'] * 1000:.0f} ms), {len(probe['PUT'])} PUTs (slowest "
              f"{slowest['PUT'] * 1000:.0f} ms), statuses {statuses}", flush=True)

    dbmb = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if f.startswith("db.sqlite")) / 1e6
    print(f"database\t{dbmb:.1f} MB\t{dbmb * 1e6 / max(1, items):.0f} B/item (wrk's POSTs included)", flush=True)
finally:
    proc.terminate(); proc.wait(timeout=15)
    if not a.keep:
        for f in os.listdir(d): os.remove(os.path.join(d, f))
        os.rmdir(d)
