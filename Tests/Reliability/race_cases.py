"""race.py's races: `Race` sends the requests of one race at the same moment (each from its own
connection, spread over the daemons when there are several), and one function per race sets it
up and checks what the contract promises. Each takes (race, check, label); what it returns, if a
string, is an outcome race.py counts."""

import threading
import uuid

from common import Client, draft, without_presence

PARALLEL = 8


class Race:
    """Setup and checks go through the first port; the racing requests are spread over all of them."""

    def __init__(self, ports, token, violations):
        self.ports = ports
        self.port = ports[0]
        self.token = token
        self.violations = violations
        self.client = Client(self.port, token)
        self.answers = 0
        self.spread = 0

    def at_once(self, requests):
        """Sends each (method, path, body, headers) from its own connection, all released together;
        with several daemons, request i goes to daemon i + r (r moves on with every race)."""
        offset = self.spread
        self.spread += 1
        clients = [Client(self.ports[(offset + index) % len(self.ports)], self.token) for index in range(len(requests))]
        for client in clients:
            client.request("GET", "/health")  # connected before the barrier
        barrier = threading.Barrier(len(requests))
        results = [None] * len(requests)

        def run(index):
            method, path, body, headers = requests[index]
            barrier.wait()
            try:
                results[index] = clients[index].request(method, path, body=body, headers=headers)
            except Exception as error:
                results[index] = error

        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(requests))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for client in clients:
            client.close()
        for result in results:
            self.answers += 1
            if isinstance(result, Exception):
                self.violations.add(f"a request failed: {result!r}")
            elif result.status >= 500:
                self.violations.add(f"5xx answer: {result!r}")
        return results

    def new_item(self, name="Race"):
        response = self.client.request("POST", "/v1/items", draft(name))
        assert response.status == 201, response
        return response.json()

    def command(self, client_id, command, expect=200):
        response = self.client.request("POST", f"/v1/clients/{client_id}/commands", {"command": command})
        if expect is not None:
            self.violations.check(response.status == expect, f"setup command {command} on {client_id}: {response!r}")
        return response


def statuses(results):
    return sorted((r.status, r.error_code()) for r in results if not isinstance(r, Exception))


def put_if_match(race, check, label):
    item = race.new_item()
    results = race.at_once([("PUT", f"/v1/items/{item['id']}", draft(f"Writer {i}", i), {"If-Match": '"1"'})
                            for i in range(PARALLEL)])
    winners = [r for r in results if r.status == 200]
    check(len(winners) == 1 and statuses(results).count((412, "preconditionFailed")) == PARALLEL - 1,
          f"{label}: expected one 200 and {PARALLEL - 1} 412, got {statuses(results)}")
    served = race.client.request("GET", f"/v1/items/{item['id']}").json()
    if winners:
        check(served == winners[0].json() and served["version"] == 2, f"{label}: served {served}, winner said {winners[0].json()}")


def navigation_if_match(race, check, label):
    client_id = f"nav-{uuid.uuid4().hex[:8]}"
    race.command(client_id, {"selectTab": {"tab": "settings"}})
    results = race.at_once([("PUT", f"/v1/clients/{client_id}/navigation",
                             {"tab": "inventory" if i % 2 else "settings", "path": [], "destination": {"add": {"draft": draft(f"D{i}")}}},
                             {"If-Match": '"1"'}) for i in range(PARALLEL)])
    winners = [r for r in results if r.status == 200]
    check(len(winners) == 1 and statuses(results).count((412, "preconditionFailed")) == PARALLEL - 1,
          f"{label}: expected one 200 and {PARALLEL - 1} 412, got {statuses(results)}")
    served = without_presence(race.client.request("GET", f"/v1/clients/{client_id}/navigation").json())
    if winners:
        check(served == winners[0].json(), f"{label}: served {served}, winner said {winners[0].json()}")


def delete_race(race, check, label):
    item = race.new_item()
    results = race.at_once([("DELETE", f"/v1/items/{item['id']}", None, {"If-Match": '"1"'}) for _ in range(PARALLEL)])
    check(statuses(results) == [(204, None)] + [(404, "notFound")] * (PARALLEL - 1),
          f"{label}: expected one 204 and {PARALLEL - 1} 404, got {statuses(results)}")


def same_id(race, check, label):
    item_id = str(uuid.uuid4())
    results = race.at_once([("POST", "/v1/items", dict(draft(f"Same id {i}"), id=item_id), {}) for i in range(PARALLEL)])
    winners = [r for r in results if r.status == 201]
    check(len(winners) == 1 and statuses(results).count((409, "alreadyExists")) == PARALLEL - 1,
          f"{label}: expected one 201 and {PARALLEL - 1} 409 alreadyExists, got {statuses(results)}")
    served = race.client.request("GET", f"/v1/items/{item_id}").json()
    if winners:
        check(served == winners[0].json(), f"{label}: served {served}, the winner said {winners[0].json()}")


def same_key(race, check, label, keys):
    key = f"race-{uuid.uuid4()}"
    keys[key] = 1
    body = draft(f"Keyed {key[-6:]}")
    results = race.at_once([("POST", "/v1/items", body, {"Idempotency-Key": key}) for _ in range(PARALLEL)])
    created = [r for r in results if r.status == 201]
    others = [r for r in results if r.status != 201]
    check(created and all(r.body == created[0].body for r in created),
          f"{label}: the 201 answers differ or none came: {statuses(results)}")
    check(sum(1 for r in created if r.headers.get("idempotency-replayed") != "true") == 1,
          f"{label}: {len(created)} answers 201, not exactly one of them fresh")
    check(all((r.status, r.error_code()) == (409, "requestInProgress") for r in others),
          f"{label}: other answers than 201 and 409 requestInProgress: {statuses(others)}")


def same_key_other_body(race, check, label, keys):
    key = f"race-{uuid.uuid4()}"
    keys[key] = 1
    results = race.at_once([("POST", "/v1/items", draft(f"Other body {i}"), {"Idempotency-Key": key}) for i in range(PARALLEL)])
    created = [r for r in results if r.status == 201]
    others = statuses([r for r in results if r.status != 201])
    check(len(created) == 1 and all(s in ((422, "idempotencyKeyReused"), (409, "requestInProgress")) for s in others),
          f"{label}: expected one 201, the rest 422 idempotencyKeyReused or 409 requestInProgress: {statuses(results)}")


def save_vs_delete(race, check, label):
    item = race.new_item()
    device = f"sd-{uuid.uuid4().hex[:8]}"
    race.command(device, {"openEdit": {"itemID": item["id"]}})
    typed = draft("Typed before the delete", 42)
    race.command(device, {"updateDraft": {"draft": typed}})
    save, delete = race.at_once([("POST", f"/v1/clients/{device}/commands", {"command": {"save": {}}}, {}),
                                 ("DELETE", f"/v1/items/{item['id']}", None, {})])
    check(delete.status == 204, f"{label}: the delete answered {delete!r}")
    navigation = without_presence(race.client.request("GET", f"/v1/clients/{device}/navigation").json())
    if save.status == 200:
        check(save.json()["item"]["version"] == 2 and navigation["destination"] is None,
              f"{label}: save won but the state is {navigation}")
        return "saved"
    check((save.status, save.error_code()) == (409, "itemDeleted"), f"{label}: save answered {save!r}")
    check(navigation["destination"] == {"edit": {"itemID": item["id"], "baseVersion": 1, "draft": typed}},
          f"{label}: the lost save's draft is not kept open: {navigation['destination']}")
    return "deleted first"


def confirm_delete_race(race, check, label):
    item = race.new_item()
    devices = [f"cd-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    for device in devices:
        race.command(device, {"openDeleteAlert": {"itemID": item["id"]}})
    results = race.at_once([("POST", f"/v1/clients/{d}/commands", {"command": {"confirmDelete": {}}}, {}) for d in devices])
    codes = statuses(results)
    check(codes[0] == (200, None) and codes[1][0] == 409 and codes[1][1] in ("invalidTransition", "itemDeleted"),
          f"{label}: expected one 200 and one 409, got {codes}")
    for device in devices:
        navigation = without_presence(race.client.request("GET", f"/v1/clients/{device}/navigation").json())
        check(navigation["destination"] is None, f"{label}: {device} still shows {navigation['destination']}")


def save_vs_save(race, check, label, devices_count=4):
    item = race.new_item()
    devices = [f"ss-{uuid.uuid4().hex[:8]}" for _ in range(devices_count)]
    typed = {}
    for index, device in enumerate(devices):
        race.command(device, {"openEdit": {"itemID": item["id"]}})
        typed[device] = draft(f"Saved by device {index}", index + 10)
        race.command(device, {"updateDraft": {"draft": typed[device]}})
    results = race.at_once([("POST", f"/v1/clients/{d}/commands", {"command": {"save": {}}}, {}) for d in devices])
    winners = [(d, r) for d, r in zip(devices, results) if r.status == 200]
    check(len(winners) == 1 and statuses(results).count((409, "conflict")) == devices_count - 1,
          f"{label}: expected one 200 and {devices_count - 1} 409 conflict, got {statuses(results)}")
    if len(winners) != 1:
        return
    winner, answer = winners[0]
    saved = answer.json()["item"]
    served = race.client.request("GET", f"/v1/items/{item['id']}").json()
    check(served == saved and saved["version"] == 2 and saved["name"] == typed[winner]["name"],
          f"{label}: served {served}, the winner ({winner}) said {saved}")
    for device, result in zip(devices, results):
        navigation = without_presence(race.client.request("GET", f"/v1/clients/{device}/navigation").json())
        if device == winner:
            check(navigation["destination"] is None, f"{label}: the winner's edit is still open: {navigation['destination']}")
            continue
        current = ((result.json() or {}).get("error") or {}).get("current")
        check(current == saved, f"{label}: {device}'s conflict names {current}, the winner saved {saved}")
        check(navigation["destination"] == {"edit": {"itemID": item["id"], "baseVersion": 1, "draft": typed[device]}},
              f"{label}: {device} lost the save but its draft is not kept open: {navigation['destination']}")


def push_vs_delete(race, check, label):
    item = race.new_item()
    keep = race.new_item("Kept")
    devices = [f"pd-{uuid.uuid4().hex[:8]}" for _ in range(PARALLEL - 1)]
    requests = []
    for index, device in enumerate(devices):
        if index % 3 == 0:
            requests.append(("POST", f"/v1/clients/{device}/commands", {"command": {"push": {"route": {"item": {"id": item["id"]}}}}}, {}))
        elif index % 3 == 1:
            requests.append(("POST", f"/v1/clients/{device}/commands", {"command": {"openDeleteAlert": {"itemID": item["id"]}}}, {}))
        else:
            requests.append(("PUT", f"/v1/clients/{device}/navigation",
                             {"tab": "inventory", "path": [{"item": {"id": keep["id"]}}, {"item": {"id": item["id"]}}],
                              "destination": {"deleteAlert": {"itemID": item["id"]}}}, {}))
    requests.append(("DELETE", f"/v1/items/{item['id']}", None, {}))
    results = race.at_once(requests)
    check(results[-1].status == 204, f"{label}: the delete answered {results[-1]!r}")
    for device, (method, _, _, _), result in zip(devices, requests, results):
        allowed = {(200, None), (404, "notFound")} if method == "POST" else {(200, None), (422, "validationFailed")}
        check((result.status, result.error_code()) in allowed, f"{label}: {device} answered {result!r}")
        navigation = without_presence(race.client.request("GET", f"/v1/clients/{device}/navigation").json())
        destination = navigation["destination"] or {}
        check(all(r["item"]["id"] != item["id"] for r in navigation["path"]) and "deleteAlert" not in destination,
              f"{label}: {device} points at the deleted item: {navigation}")


def same_client(race, check, label):
    device = f"sc-{uuid.uuid4().hex[:8]}"
    items = [race.new_item(f"Step {i}") for i in range(PARALLEL)]
    base = race.command(device, {"selectTab": {"tab": "settings"}}).json()["navigation"]["version"]
    results = race.at_once([("POST", f"/v1/clients/{device}/commands", {"command": {"push": {"route": {"item": {"id": it["id"]}}}}}, {})
                            for it in items])
    check(all(r.status == 200 for r in results), f"{label}: {statuses(results)}")
    if not all(r.status == 200 for r in results):
        return
    by_version = sorted((r.json()["navigation"]["version"], i) for i, r in enumerate(results))
    check([v for v, _ in by_version] == list(range(base + 1, base + PARALLEL + 1)),
          f"{label}: versions {[v for v, _ in by_version]}, expected {base + 1}..{base + PARALLEL}")
    navigation = without_presence(race.client.request("GET", f"/v1/clients/{device}/navigation").json())
    check([r["item"]["id"] for r in navigation["path"]] == [items[i]["id"] for _, i in by_version],
          f"{label}: the path is not in the order of the versions")
    for version, index in by_version:
        answered = results[index].json()["navigation"]["path"]
        check(len(answered) == version - base and answered[-1]["item"]["id"] == items[index]["id"],
              f"{label}: the answer of version {version} shows path {answered}")


def restore_vs_edits(race, check, label):
    item = race.new_item()
    source = f"rs-{uuid.uuid4().hex[:8]}"
    target = f"rt-{uuid.uuid4().hex[:8]}"
    race.command(source, {"openEdit": {"itemID": item["id"]}})
    seen = [without_presence(race.client.request("GET", f"/v1/clients/{source}/navigation").json())]
    restored = []
    typist = Client(race.ports[0], race.token)
    reader = Client(race.ports[-1], race.token)  # another daemon when there are several
    done = threading.Event()

    def type_text():
        for index in range(25):
            response = typist.request("POST", f"/v1/clients/{source}/commands",
                                      {"command": {"updateDraft": {"draft": draft("Typing " + "x" * index, index)}}})
            seen.append(response.json()["navigation"])
        done.set()

    def restore():
        while not done.is_set():
            response = reader.request("POST", f"/v1/clients/{target}/commands", {"command": {"restore": {"fromClientID": source}}})
            restored.append(response)

    threads = [threading.Thread(target=type_text), threading.Thread(target=restore)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    typist.close()
    reader.close()
    states = [(n["tab"], n["path"], n["destination"]) for n in seen]
    for response in restored:
        race.answers += 1
        if not check(response.status == 200, f"{label}: restore answered {response!r}"):
            continue
        navigation = response.json()["navigation"]
        check((navigation["tab"], navigation["path"], navigation["destination"]) in states,
              f"{label}: restored a state the source never had: {navigation['destination']}")
    return len(restored)
