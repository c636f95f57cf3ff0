"""One `stockroom serve` run from a temporary folder, and its log."""

import os
import re
import signal
import subprocess
import time

from .harness import started_servers


class Server:
    """One `stockroom serve` on a free port, on the SQLite file `db` (or the PostgreSQL database
    `db_url`), run from a temporary folder (so that no Config/stockroom.json is read). Output goes
    to `server.log` in that folder. Every started server is killed when the script exits."""

    def __init__(self, binary, workdir, env=None, db=None, db_url=None):
        self.binary = os.path.abspath(binary)  # it runs from another folder
        self.workdir = workdir
        self.db = db or os.path.join(workdir, "db", "stockroom.sqlite")
        self.db_url = db_url
        self.env = dict(os.environ)
        self.env.setdefault("LOG_LEVEL", "info")
        self.env.update(env or {})
        self.process = None
        self.port = None
        self.log_path = os.path.join(workdir, "server.log")
        self.starts = 0

    def cli(self, *arguments, check=True):
        """Runs a subcommand to completion; returns its stdout."""
        result = subprocess.run(
            [self.binary, *arguments, *self.database_arguments()], cwd=self.workdir, env=self.env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        if check and result.returncode != 0:
            raise RuntimeError(f"stockroom {' '.join(arguments)} exited {result.returncode}: {result.stderr}")
        return result.stdout

    def database_arguments(self):
        return ["--db-url", self.db_url] if self.db_url else ["--db-path", self.db]

    def token(self, user, role):
        return self.cli("token", "create", "--user", user, "--role", role).strip().splitlines()[-1]

    def start(self, timeout=60):
        self.starts += 1
        offset = os.path.getsize(self.log_path) if os.path.exists(self.log_path) else 0
        with open(self.log_path, "ab") as out:
            out.write(f"--- start {self.starts} ---\n".encode())
            out.flush()
            self.process = subprocess.Popen(
                [self.binary, "serve", *self.database_arguments(), "--http-port", "0"], cwd=self.workdir, env=self.env,
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        started_servers.append(self)
        deadline = time.monotonic() + timeout
        pattern = re.compile(rb"listening on 127\.0\.0\.1:(\d+)")
        while time.monotonic() < deadline:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                match = pattern.search(f.read())
            if match:
                self.port = int(match.group(1))
                return self
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited with {self.process.returncode}:\n{self.log_tail()}")
            time.sleep(0.02)
        raise RuntimeError("the server did not listen in time:\n" + self.log_tail())

    def kill9(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
        return self.process.returncode

    def stop(self, timeout=20):
        """SIGTERM; returns the exit status (SIGKILL after `timeout`, returning None)."""
        if not self.process or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return None

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def rss_kib(self):
        try:
            with open(f"/proc/{self.process.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return -1

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def log_tail(self, lines=40):
        return "\n".join(self.log_text().splitlines()[-lines:])

    def server_errors(self, allowed_503=False):
        """Log lines that show a 5xx answer (a 503 only unless allowed) or an unhandled error."""
        bad = []
        for line in self.log_text().splitlines():
            if "unhandled error" in line:
                bad.append(line)
            match = re.search(r"http\.status=(5\d\d)", line)
            if match and not (allowed_503 and match.group(1) == "503"):
                bad.append(line)
        return bad
