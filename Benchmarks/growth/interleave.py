#!/usr/bin/env python3
"""Target 1 of issue #13, steadier than one run.py row: a 10k and a 1M database (imported through
POST /v1/items/batch, 4 clients x 500 items a request), served side by side at DB_SYNCHRONOUS=normal,
GET one random item and a random list-100 page measured with run.py's wrk script (wrk -t1 -c16),
the two servers interleaved round by round; prints the medians and 1M/10k.

  BIN=.build-release/release/stockroom python3 Benchmarks/growth/interleave.py   [ROUNDS=3 DUR=5]
"""
import http.client, json, os, random, statistics, subprocess, sys, tempfile, threading, time, uuid
BIN = os.environ["BIN"]; ROUNDS = int(os.getenv("ROUNDS", "3")); DUR = os.getenv("DUR", "5")
d = tempfile.mkdtemp(prefix="il-")
LUA = os.path.join(d, "get.lua")
open(LUA, "w").write("""
local ids = {}
for line in io.lines(os.getenv("IDS")) do ids[#ids+1] = line end
local tok = os.getenv("TOK")
request = function()
  return wrk.format("GET", os.getenv("PREFIX") .. ids[math.random(#ids)], {["Authorization"]="Bearer " .. tok})
end
""")
servers = {}
def start(name, n, port):
    db = os.path.join(d, name + ".sqlite")
    tok = subprocess.run([BIN, "token", "create", "--user", "bench", "--role", "editor", "--db-path", db], capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    env = dict(os.environ, LOG_LEVEL="warning", DB_SYNCHRONOUS="normal")
    p = subprocess.Popen([BIN, "serve", "--http-host", "127.0.0.1", "--http-port", str(port), "--db-path", db], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port); c.request("GET", "/health"); c.getresponse().read(); break
        except OSError: time.sleep(0.1)
    ids = []
    lock = threading.Lock()
    def importer(k, count):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        for b in range(count):
            items = [{"id": str(uuid.uuid4()), "name": f"item {k}-{b}-{i}", "color": None, "status": {"inStock": {"quantity": i}}} for i in range(500)]
            c.request("POST", "/v1/items/batch", body=json.dumps({"items": items}), headers={"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
            r = c.getresponse(); r.read()
            assert r.status == 200, r.status
            with lock: ids.extend(x["id"] for x in items)
    per = n // 500 // 4
    ts = [threading.Thread(target=importer, args=(k, per)) for k in range(4)]
    [t.start() for t in ts]; [t.join() for t in ts]
    c = http.client.HTTPConnection("127.0.0.1", port); cursors = []; cur = None
    while True:
        c.request("GET", "/v1/items?limit=100" + (f"&after={cur}" if cur else ""), headers={"Authorization": "Bearer " + tok})
        cur = json.loads(c.getresponse().read()).get("next")
        if not cur: break
        cursors.append(cur)
    servers[name] = dict(port=port, tok=tok, ids=random.sample(ids, 5000), cursors=random.sample(cursors, min(200, len(cursors))), proc=p, n=len(ids))
def wrk(s, prefix, lines):
    f = os.path.join(d, "ids.txt"); open(f, "w").write("\n".join(lines))
    r = subprocess.run(["wrk", "-t1", "-c16", f"-d{DUR}s", "-s", LUA, f"http://127.0.0.1:{s['port']}"], env=dict(os.environ, IDS=f, TOK=s["tok"], PREFIX=prefix), capture_output=True, text=True)
    for l in r.stdout.splitlines():
        if "Non-2xx" in l: print("  wrk:", l.strip())
        if l.startswith("Requests/sec"): return float(l.split()[1])
try:
    start("10k", 10_000, 8121); start("1M", 1_000_000, 8122)
    print("seeded", {k: v["n"] for k, v in servers.items()}, "load", os.getloadavg(), flush=True)
    res = {(k, m): [] for k in servers for m in ("GET", "list")}
    for r in range(ROUNDS):
        for k in (["10k", "1M"] if r % 2 == 0 else ["1M", "10k"]):
            s = servers[k]
            res[(k, "GET")].append(wrk(s, "/v1/items/", s["ids"]))
            res[(k, "list")].append(wrk(s, "/v1/items?limit=100&after=", s["cursors"]))
        print("round", r + 1, {f"{k}/{m}": v[-1] for (k, m), v in res.items()}, flush=True)
    for m in ("GET", "list"):
        a, b = statistics.median(res[("10k", m)]), statistics.median(res[("1M", m)])
        print(f"{m}: 10k {a:.0f} req/s, 1M {b:.0f} req/s, 1M/10k = {b/a:.2f}x  (rounds 10k {res[('10k', m)]}, 1M {res[('1M', m)]})")
    print("load", os.getloadavg())
finally:
    for s in servers.values(): s["proc"].terminate()
