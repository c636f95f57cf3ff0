"""What every reliability script needs: where the binary is, a log line, the violations it
collects, its temporary folder and seeded random numbers, and everything it started stopped
when it exits."""

import atexit
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def default_binary():
    """The debug binary SwiftPM builds (`swift build`), else the release one."""
    for flavour in ("debug", "release"):
        path = os.path.join(ROOT, ".build", flavour, "stockroom")
        if os.access(path, os.X_OK):
            return path
    return os.path.join(ROOT, ".build", "debug", "stockroom")


def log(name, message):
    print(f"[{name} {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Violations:
    """Every broken invariant, with a clear message; the script exits 1 when there is one."""

    def __init__(self, name):
        self.name = name
        self.items = []
        self.lock = threading.Lock()

    def add(self, message):
        with self.lock:
            self.items.append(message)
        log(self.name, "VIOLATION: " + message)

    def check(self, condition, message):
        if not condition:
            self.add(message)
        return condition

    def finish(self, summary):
        if self.items:
            log(self.name, f"FAILED with {len(self.items)} violation(s); {summary}")
            for item in self.items[:50]:
                print(f"  - {item}", file=sys.stderr)
            return 1
        log(self.name, f"OK: {summary}")
        return 0


# Everything started by a script is stopped when it exits, whatever happens (an exception, exit
# status 1, SIGTERM or ^C): daemons by SIGKILL, PostgreSQL clusters by their postmaster's PID.
# Server.start and Postgres() add themselves here.
started_servers = []
started_clusters = []


def _stop_everything():
    for server in started_servers:
        try:
            server.kill9()
        except Exception:
            pass
    for postgres in started_clusters:
        try:
            postgres.destroy()
        except Exception:
            pass


atexit.register(_stop_everything)
if threading.current_thread() is threading.main_thread():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that atexit runs


def make_workdir(prefix):
    return tempfile.mkdtemp(prefix=f"stockroom-{prefix}-")


def remove_workdir(path, keep, failed):
    if keep or failed:
        log("reliability", f"kept {path} (server.log and the database are there)")
    else:
        shutil.rmtree(path, ignore_errors=True)


def seeded_random(seed, name):
    if seed is None:
        seed = random.randrange(1 << 30)
    log(name, f"seed {seed} (rerun with --seed {seed})")
    return random.Random(seed), seed
