#!/usr/bin/env python3
"""Which pages each kind of write dirties: the WAL frames a request appends to a `serve --demo`
server's database, named by table or index through SQLite's dbstat. Writes one at a time: a PUT,
then a device's openEdit, updateDraft and save, ten of each; a write during which the WAL started
over is not counted. Standard library only; the server runs in a temporary folder.

    python3 Benchmarks/http/wal_pages.py path/to/stockroom [--port 18811]
"""
import argparse, http.client, json, os, shutil, sqlite3, struct, subprocess, tempfile, time
parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("binary")
parser.add_argument("--port", type=int, default=18811)
args = parser.parse_args()
BIN = os.path.abspath(args.binary); D = tempfile.mkdtemp(prefix="wal-pages."); port = args.port
srv = subprocess.Popen([BIN, 'serve', '--demo', '--http-host', '127.0.0.1', '--http-port', str(port), '--db-path', D + '/db'],
                       stdout=open(D + '/log', 'w'), stderr=subprocess.STDOUT, cwd=D)
def main():
  tok = []
  for _ in range(100):
    time.sleep(0.1)
    tok = [l for l in open(D + '/log') if 'export TOKEN=' in l]
    if tok: break
  if not tok: raise SystemExit('the server printed no token in 10 s:\n' + open(D + '/log').read()[-2000:])
  token = tok[0].split('export TOKEN=')[1].split()[0].strip("'\"")
  c = http.client.HTTPConnection('127.0.0.1', port)
  H = {'Authorization': 'Bearer ' + token, 'Content-Type': 'application/json'}
  def call(m, p, b=None):
      c.request(m, p, json.dumps(b) if b is not None else None, H); r = c.getresponse(); body = r.read()
      assert r.status in (200, 201), (r.status, body); return json.loads(body) if body else None
  items = [call('POST', '/v1/items', {'name': f'Item {i}', 'color': None, 'status': {'inStock': {'quantity': 1}}})['id'] for i in range(200)]
  def cycle(dev, item, q):
      call('POST', f'/v1/clients/{dev}/commands', {'command': {'openEdit': {'itemID': item}}})
      call('POST', f'/v1/clients/{dev}/commands', {'command': {'updateDraft': {'draft': {'name': 'x', 'color': None, 'status': {'inStock': {'quantity': q}}}}}})
      call('POST', f'/v1/clients/{dev}/commands', {'command': {'save': {}}})
  for i in range(64): cycle(f'dev-{i}', items[i], i)
  time.sleep(2)
  wal = D + '/db-wal'
  def frames():
      data = open(wal, 'rb').read()
      psize = struct.unpack('>I', data[8:12])[0]; salt = data[16:24]
      out = []; off = 32
      while off + 24 + psize <= len(data):
          pg, commit = struct.unpack('>II', data[off:off+8])
          if data[off+8:off+16] != salt: break
          out.append((pg, commit)); off += 24 + psize
      return out
  def names():
      shutil.copy(D + '/db', D + '/copy'); shutil.copy(wal, D + '/copy-wal')
      x = sqlite3.connect(D + '/copy'); m = dict(x.execute('select pageno, name from dbstat')); x.close(); return m
  ops = [('PUT', lambda k: call('PUT', f'/v1/items/{items[100+k]}', {'name': 'y', 'color': None, 'status': {'inStock': {'quantity': k}}})),
         ('openEdit', lambda k: call('POST', f'/v1/clients/dev-{k}/commands', {'command': {'openEdit': {'itemID': items[k]}}})),
         ('updateDraft', lambda k: call('POST', f'/v1/clients/dev-{k}/commands', {'command': {'updateDraft': {'draft': {'name': 'z', 'color': None, 'status': {'inStock': {'quantity': k}}}}}})),
         ('save', lambda k: call('POST', f'/v1/clients/dev-{k}/commands', {'command': {'save': {}}}))]
  from collections import Counter
  tot = {n: Counter() for n, _ in ops}; cnt = Counter()
  for k in range(10):
      for name, op in ops:
          before = len(frames()); op(k); time.sleep(0.3); after = frames()
          if len(after) < before: continue  # WAL restarted
          new = after[before:]; m = names()
          tot[name].update(m.get(pg, f'page{pg}') for pg, _ in new); cnt[name] += 1
  for name, _ in ops:
      n = cnt[name]; s = sum(tot[name].values())
      print(f'{name}: {s/n:.1f} frames per write ({n} writes):', ', '.join(f'{k} {v/n:.1f}' for k, v in tot[name].most_common()))
try:
    main()
finally:
    srv.terminate()
    srv.wait()
    shutil.rmtree(D, ignore_errors=True)
