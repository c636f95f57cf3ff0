#!/usr/bin/env python3
"""Drives a stockroom server that runs under callgrind: warm-up, then exactly one request between
two `callgrind_control --dump`s for each measured request.

    python3 requests.py --port P --pid PID --token T --item ID [--warmup N] [--repeat M]

Everything goes over one keep-alive connection, as a client that stays connected sends it, so no
dump holds a connection's accept or close. After each measured answer the script waits
`--settle` seconds before the dump, so that what the server does after writing the answer (its
request log and metrics) falls inside it. An `idle` window (the same steps without a request)
measures what the idle server and the control commands add to each window. Each round's `GET`
follows the previous round's save of the item (SQLite reads it from the database); `GETknown` is
the same GET again with no write between (SQLite answers it from memory). Each window starts
with a dump rather than `--zero` (see `measured`). After the commands of an edit, the script
waits `--presence-wait` seconds before the next window, so that the presence tick their device's
sighting causes (a write of the presence service's, within a second) falls between windows.
Prints one line per measured dump:
`LABEL<TAB>DUMP_NUMBER`.
Standard library only.
"""
import argparse
import http.client
import json
import subprocess
import sys
import time


class Server:
    def __init__(self, port, token):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.headers = {"Authorization": f"Bearer {token}"}

    def request(self, method, path, body=None, expect=200):
        headers = dict(self.headers)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        self.connection.request(method, path, body=data, headers=headers)
        response = self.connection.getresponse()
        payload = response.read()
        if response.status != expect:
            sys.exit(f"{method} {path} answered {response.status}: {payload[:300]!r}")
        if response.getheader("Connection", "").lower() == "close":
            sys.exit(f"{method} {path}: the server closed the connection")
        return payload


def control(pid, *args):
    subprocess.run(["callgrind_control", *args, str(pid)], check=True, stdout=subprocess.DEVNULL)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True, help="the valgrind process")
    parser.add_argument("--token", required=True)
    parser.add_argument("--item", required=True, help="the item to GET and to edit")
    parser.add_argument("--client", default="callgrind-phone", help="the clientID of the save commands")
    parser.add_argument("--warmup", type=int, default=20, help="unmeasured GETs, PUTs and edit cycles first")
    parser.add_argument("--repeat", type=int, default=3, help="measured GETs, PUTs and saves, one dump each")
    parser.add_argument("--settle", type=float, default=0.3, help="seconds between an answer and its dump")
    parser.add_argument(
        "--presence-wait", type=float, default=2.5,
        help="seconds after a command before the next window: its device's sighting is written then (the presence tick)")
    args = parser.parse_args()

    server = Server(args.port, args.token)
    item_path = f"/v1/items/{args.item}"
    commands_path = f"/v1/clients/{args.client}/commands"
    cycle = 0

    def open_edit_and_change_draft():
        nonlocal cycle
        cycle += 1
        server.request("POST", commands_path, {"command": {"openEdit": {"itemID": args.item}}})
        draft = {
            "name": f"Callgrind item {cycle}",
            "color": {"name": "Red", "red": 1, "green": 0, "blue": 0},
            "status": {"inStock": {"quantity": cycle}},
        }
        server.request("POST", commands_path, {"command": {"updateDraft": {"draft": draft}}})

    def put():
        nonlocal cycle
        cycle += 1
        item = {
            "name": f"Callgrind item {cycle}",
            "color": {"name": "Red", "red": 1, "green": 0, "blue": 0},
            "status": {"inStock": {"quantity": cycle}},
        }
        server.request("PUT", item_path, item)

    def save():
        answer = json.loads(server.request("POST", commands_path, {"command": {"save": {}}}))
        if answer.get("item") is None:
            sys.exit(f"save wrote no item: {answer}")

    for _ in range(args.warmup):
        server.request("GET", item_path)
        put()
        open_edit_and_change_draft()
        save()

    dumps = 0

    def measured(label, operation):
        nonlocal dumps
        time.sleep(args.settle)
        # A dump, not `--zero`: callgrind's zero left counts of work done before it in the next
        # dump's per-function costs (its `totals:` exceeded its `summary:`), and a dump resets all.
        control(args.pid, f"--dump=before-{label}")
        operation()
        time.sleep(args.settle)
        control(args.pid, f"--dump={label}")
        dumps += 2
        print(f"{label}\t{dumps}", flush=True)

    for round_ in range(1, args.repeat + 1):
        # The same window with no request: what an idle server, and callgrind_control itself, cost.
        measured(f"idle-{round_}", lambda: None)
        measured(f"GET-{round_}", lambda: server.request("GET", item_path))
        # The same GET again with no write between: on SQLite, the item as the first one kept it.
        measured(f"GETknown-{round_}", lambda: server.request("GET", item_path))
        measured(f"PUT-{round_}", put)
        open_edit_and_change_draft()
        # A command marks its device seen, and the presence service writes that within a second
        # (a write of its own): after it, not inside the next window.
        time.sleep(args.presence_wait)
        measured(f"save-{round_}", save)
        time.sleep(args.presence_wait)
    return 0


if __name__ == "__main__":
    sys.exit(main())
