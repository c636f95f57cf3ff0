"""Drives Benchmarks/postgres/run.sh's measurements against the daemons on PORTS (see there)."""
import http.client
import json
import os
import statistics
import sys
import threading
import time

TOKEN = os.environ["TOKEN"]
PORTS = [int(p) for p in os.environ["PORTS"].split()]
WRITERS = int(os.environ.get("WRITERS", "32"))
DURATION = float(os.environ.get("DURATION", "10"))
SAMPLES = int(os.environ.get("SAMPLES", "300"))
BODY = json.dumps({"name": "Lamp", "color": None, "status": {"inStock": {"quantity": 1}}})
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}


def post(connection):
    connection.request("POST", "/v1/items", BODY, HEADERS)
    response = connection.getresponse()
    data = response.read()
    return response.status, data


def head(port):
    connection = http.client.HTTPConnection("127.0.0.1", port)
    connection.request("GET", "/v1/changes?since=now", headers=HEADERS)
    return json.loads(connection.getresponse().read())["cursor"]


def appends():
    stop = time.monotonic() + DURATION
    counts = [0] * WRITERS
    errors = [0] * WRITERS

    def writer(index):
        connection = http.client.HTTPConnection("127.0.0.1", PORTS[index % len(PORTS)])
        while time.monotonic() < stop:
            status, _ = post(connection)
            if status == 201:
                counts[index] += 1
            else:
                errors[index] += 1

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(WRITERS)]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - start
    print(f"appends: {sum(counts) / elapsed:.0f} writes/s from {WRITERS} writers on {len(PORTS)} daemon(s) "
          f"({sum(counts)} acknowledged, {sum(errors)} refused, head {head(PORTS[0])})")


def latency():
    """One write at a time on the first daemon, its event read from an SSE stream on the last."""
    writer_port, reader_port = PORTS[0], PORTS[-1]
    stream = http.client.HTTPConnection("127.0.0.1", reader_port)
    stream.request("GET", "/v1/changes/stream?since=now&topics=items", headers=HEADERS)
    response = stream.getresponse()
    assert response.status == 200, response.status
    writes = http.client.HTTPConnection("127.0.0.1", writer_port)
    samples = []
    for _ in range(SAMPLES):
        sent = time.perf_counter()
        status, data = post(writes)
        assert status == 201, (status, data)
        item_id = json.loads(data)["id"]
        while True:
            line = response.fp.readline().decode()
            if line.startswith("data:") and item_id in line:
                samples.append((time.perf_counter() - sent) * 1000)
                break
    samples.sort()
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
    print(f"latency: write on :{writer_port} to its event on :{reader_port}, p50 {statistics.median(samples):.2f} ms, "
          f"p99 {p99:.2f} ms ({len(samples)} writes)")


for name in sys.argv[1:]:
    globals()[name]()
