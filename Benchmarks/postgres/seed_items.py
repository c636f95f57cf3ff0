#!/usr/bin/env python3
"""Creates COUNT items through a stockroom daemon and writes one wrk line per item (its path, a tab,
its PUT body with `%d` where the quantity goes), as bench-compare's wrk_bench.lua reads them in
write mode. Used by puts.sh and callgrind/writes.sh.

    seed_items.py PORT TOKEN LINES_FILE COUNT
"""
import http.client
import json
import sys

port, token, path, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
connection = http.client.HTTPConnection("127.0.0.1", int(port))
with open(path, "w") as lines:
    for i in range(1, count + 1):
        body = json.dumps({"name": f"Item {i}", "color": None, "status": {"inStock": {"quantity": 1}}})
        connection.request("POST", "/v1/items", body, {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        answer = connection.getresponse()
        item = json.loads(answer.read())
        assert answer.status == 201, (answer.status, item)
        template = json.dumps({"name": f"Item {i}", "color": None, "status": {"inStock": {"quantity": 0}}}).replace('"quantity": 0', '"quantity": %d')
        lines.write(f"/v1/items/{item['id']}\t{template}\n")
