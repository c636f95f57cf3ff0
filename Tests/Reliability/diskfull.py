#!/usr/bin/env python3
"""Disk full on a real filesystem, against the real `stockroom` binary (Python 3.9+, stdlib only).

`swift test` already fills a database capped with `PRAGMA max_page_count` (ReliabilityTests). This
script fills a real one: it mounts a small tmpfs (so it needs root; without it, it says so and
exits 0 as skipped), puts the database and a ballast file on it, and writes items and saves until
the disk is full. It checks:

  - a write that does not fit answers 503 unavailable (never 500), and nothing of it is applied:
    a save that fails leaves its draft open and the item as it was;
  - /ready answers 503 with the reason and Retry-After while the disk is full, reads keep working;
  - after kill -9 on the full disk the server starts again and every acknowledged write is there;
  - once space returns (the ballast is deleted) /ready answers 200 again by itself, writes succeed,
    the feed has no gap and folds to the served state, and the database passes integrity_check.

Usage: Tests/Reliability/diskfull.py [--bin PATH] [--size-mib N] [--keep] [--short]
  --short is accepted for symmetry with the others: the run takes a few seconds either way.
Exit status 0 when every check held (or skipped), 1 on a violation, 2 when it could not run.
"""

import argparse
import os
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (Client, Server, Violations, check_feed_matches_state, default_binary, draft, log, make_workdir, without_presence,
                    remove_workdir, replay_feed)

NAME = "diskfull"


def wait_ready(client, status, seconds=30):
    deadline = time.monotonic() + seconds
    while True:
        response = client.request("GET", "/ready")
        if response.status == status or time.monotonic() > deadline:
            return response
        time.sleep(0.2)


def grow(path):
    """Appends to `path` until the filesystem is full."""
    with open(path, "ab", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=default_binary())
    parser.add_argument("--size-mib", type=int, default=8)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--short", action="store_true", help="the same run (it takes a few seconds)")
    args = parser.parse_args()
    if not os.access(args.bin, os.X_OK):
        log(NAME, f"no binary at {args.bin}; build it (swift build) or pass --bin")
        return 2
    workdir = make_workdir(NAME)
    disk = os.path.join(workdir, "disk")
    os.makedirs(disk)
    try:
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={args.size_mib}m", "tmpfs", disk],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        reason = mounted.stdout.strip() if mounted.returncode != 0 else None
    except OSError as error:
        reason = str(error)
    if reason is not None:
        log(NAME, f"SKIPPED: cannot mount a tmpfs (it needs root): {reason}")
        remove_workdir(workdir, args.keep, False)
        return 0
    violations = Violations(NAME)
    server = Server(args.bin, workdir, db=os.path.join(disk, "stockroom.sqlite"))
    started = time.monotonic()
    acknowledged = {}
    fills = []
    refusals = 0
    try:
        token = server.token("filler", "editor")
        ballast = os.path.join(disk, "ballast")
        with open(ballast, "wb") as f:
            f.write(b"\0" * (2 << 20))
        server.start()
        client = Client(server.port, token)
        violations.check(client.request("GET", "/ready").status == 200, "/ready is not 200 on an empty disk")
        # Drafts typed before the disk fills, saved after: ten devices, each editing its own item.
        typed = draft("Saved while full " + "\u00e9" * 180, 5)
        edits = {}
        for index in range(10):
            edited = client.request("POST", "/v1/items", draft(f"Edited while full {index}")).json()
            device = f"tablet-{index}"
            edits[device] = edited
            for command in ({"openEdit": {"itemID": edited["id"]}}, {"updateDraft": {"draft": typed}}):
                response = client.request("POST", f"/v1/clients/{device}/commands", {"command": command})
                violations.check(response.status == 200, f"{command}: {response!r}")
        item = edits["tablet-0"]

        # Fill the disk.
        full = None
        for index in range(20_000):
            name = f"{index} " + "\U0001F4E6" * 190
            response = client.request("POST", "/v1/items", draft(name), headers={"Idempotency-Key": f"fill-{index}"})
            if response.status == 201:
                acknowledged[response.json()["id"]] = response.json()
                fills.append((f"fill-{index}", draft(name), response))
                continue
            full = response
            break
        if not violations.check(full is not None and full.status == 503 and full.error_code() == "unavailable",
                                f"filling the disk ended with {full!r}, expected 503 unavailable"):
            raise RuntimeError("the disk did not fill")
        refusals += 1
        # Smaller writes may still fit (in the WAL's old frames, or a free page): fill with those
        # too, until several in a row are refused.
        in_a_row = 0
        index += 1
        while in_a_row < 5 and index < 40_000:
            response = client.request("POST", "/v1/items", draft(f"{index}"), headers={"Idempotency-Key": f"fill-{index}"})
            if response.status == 201:
                acknowledged[response.json()["id"]] = response.json()
                fills.append((f"fill-{index}", draft(f"{index}"), response))
                in_a_row = 0
            else:
                violations.check(response.status == 503, f"filling: {response!r}")
                refusals += 1
                in_a_row += 1
            index += 1
        log(NAME, f"the disk is full after {len(acknowledged)} items")
        spare = os.path.join(disk, "spare")
        grow(spare)  # what SQLite could not use (less than a page, or pages it freed) goes too

        # A save that cannot be written: 503, its item unchanged and its draft still open. A save
        # may still fit (after a checkpoint SQLite writes the WAL's old frames again, which takes
        # no new space): then the ballast takes what is left, and the next device tries.
        saves_refused = fitted = 0
        for attempt in range(40):
            if saves_refused >= 10:
                break
            device = f"tablet-{attempt % 10}"
            edited = edits[device]
            before_item = client.request("GET", f"/v1/items/{edited['id']}").json()
            before = client.request("GET", f"/v1/clients/{device}/navigation").json()
            if not (before["destination"] or {}).get("edit"):
                continue  # its save fitted
            save = client.request("POST", f"/v1/clients/{device}/commands", {"command": {"save": {}}})
            violations.check(save.status in (200, 503), f"save on a full disk answered {save!r}")
            if save.status == 503:
                saves_refused += 1
                refusals += 1
                violations.check(save.error_code() == "unavailable", f"save on a full disk: {save!r}")
                violations.check(client.request("GET", f"/v1/items/{edited['id']}").json() == before_item,
                                 "a refused save changed the item")
                violations.check(without_presence(client.request("GET", f"/v1/clients/{device}/navigation").json())
                                 == without_presence(before), "a refused save changed the navigation state")
            elif save.status == 200:
                fitted += 1
                grow(ballast)
        violations.check(saves_refused > 0, "no save was refused on the full disk (each fitted): nothing was tested")
        log(NAME, f"{saves_refused} saves refused on the full disk, each leaving item and draft as they were "
                  f"({fitted} fitted after all)")
        for index in range(20):
            response = client.request("PUT", f"/v1/items/{item['id']}", draft(f"Put while full {index} " + "\U0001F4E6" * 180))
            violations.check(response.status in (200, 503), f"PUT on a full disk answered {response!r}")
            refusals += response.status == 503

        ready = wait_ready(client, 503)
        violations.check(ready.status == 503 and ready.error_code() == "unavailable" and "retry-after" in ready.headers,
                         f"/ready on a full disk answered {ready!r}")
        violations.check(client.request("GET", "/health").status == 200, "/health on a full disk is not 200")
        violations.check(client.request("GET", f"/v1/items/{item['id']}").status == 200, "reads fail on a full disk")
        client.close()

        # kill -9 on the full disk, and a restart.
        server.kill9()
        try:
            server.start()
        except RuntimeError as error:
            violations.add(f"the server does not start again on a full disk: {error}")
            os.remove(spare)
            server.start()
        client = Client(server.port, token)
        served = {i["id"]: i for i in client.request("GET", "/v1/items?limit=500").json()["items"]}
        after = None
        while True:
            page = client.request("GET", "/v1/items?limit=500" + (f"&after={after}" if after else "")).json()
            served.update({i["id"]: i for i in page["items"]})
            after = page["next"]
            if not after:
                break
        lost = [item_id for item_id, value in acknowledged.items() if served.get(item_id) != value]
        violations.check(not lost, f"{len(lost)} acknowledged items lost or changed after kill -9 on a full disk: {lost[:3]}")

        # A write refused in this process, and the commits after it: the /ready probe's and a
        # presence tick's append nothing to the log, and must not publish what the refused write
        # appended (the feed, read below from this process, would serve it at the seq of the next
        # acknowledged write). Writes that still fit are kept; the first refusal ends the loop.
        refused_here = None
        for index in range(40):
            before_refusal = client.request("GET", "/v1/changes?since=now").json()["cursor"]
            response = client.request("POST", "/v1/items", draft(f"After the restart {index} " + "\U0001F4E6" * 180))
            violations.check(response.status in (201, 503), f"a write on the full disk after the restart answered {response!r}")
            if response.status == 201:
                acknowledged[response.json()["id"]] = response.json()
                grow(spare)
                continue
            refused_here = response
            refusals += 1
            break
        violations.check(refused_here is not None, "no write was refused after the restart on the full disk: nothing was tested")

        # Space returns.
        for name in (ballast, spare):
            if os.path.exists(name):
                os.remove(name)
        ready = wait_ready(client, 200)
        violations.check(ready.status == 200, f"/ready did not return to 200 once space returned: {ready!r}")
        response = client.request("POST", "/v1/items", draft("After the disk was full"))
        violations.check(response.status == 201, f"a write after space returned answered {response!r}")
        if response.status == 201:
            latest = client.request("GET", "/v1/changes?since=" + urllib.parse.quote(before_refusal)).json()["changes"]
            violations.check([(c["id"], c["value"]) for c in latest if c["entity"] == "item"] == [(response.json()["id"], response.json())],
                             "the feed after a refused write and the write after it: "
                             f"{[(c['seq'], c['entity'], (c['value'] or {}).get('name', '')[:30]) for c in latest]}, "
                             f"expected the write after it alone ({response.json()['name']!r})")
        for device in edits:
            save = client.request("POST", f"/v1/clients/{device}/commands", {"command": {"save": {}}})
            violations.check(save.status in (200, 409), f"{device}'s kept draft's save answered {save!r}")
        for key, body, first in fills[:10] + fills[-10:]:
            response = client.request("POST", "/v1/items", body, headers={"Idempotency-Key": key})
            violations.check((response.status, response.body) == (first.status, first.body)
                             and response.headers.get("idempotency-replayed") == "true",
                             f"{key} replayed {response!r}, first answered {first!r}")
        changes, _ = replay_feed(client)
        check_feed_matches_state(violations, "after the disk was full", {"filler": client}, {"filler": changes})
        client.close()
        violations.check(server.stop() == 0, "SIGTERM did not exit 0")
        output = server.cli("backup", "--to", os.path.join(workdir, "backup.sqlite"), check=False)
        violations.check("integrity ok" in output, f"integrity_check: {output!r}")
        for line in server.server_errors(allowed_503=True):
            violations.add(f"server log: {line}")
    except Exception as error:
        violations.add(f"the run stopped: {error!r}")
    finally:
        server.kill9()
        subprocess.run(["umount", disk], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    status = violations.finish(f"{args.size_mib} MiB tmpfs: {len(acknowledged)} items acknowledged before it was full, "
                               f"{refusals} writes refused with 503; {time.monotonic() - started:.1f} s")
    remove_workdir(workdir, args.keep, status != 0)
    return status


if __name__ == "__main__":
    sys.exit(main())
