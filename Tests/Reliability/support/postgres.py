"""A throwaway PostgreSQL 15 cluster for the multi-daemon forms."""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from .harness import log, started_clusters

PG_BIN = "/usr/lib/postgresql/15/bin"


def postgres_available():
    return os.access(os.path.join(PG_BIN, "initdb"), os.X_OK) and os.access(os.path.join(PG_BIN, "pg_ctl"), os.X_OK)


def missing_for_postgres(name, binary):
    """Why a multi-daemon form cannot run (logged), as its exit status 2; None when it can."""
    if not os.access(binary, os.X_OK):
        log(name, f"no binary at {binary}; build it (swift build) or pass --bin")
        return 2
    if not postgres_available():
        log(name, "PostgreSQL 15 is not installed (/usr/lib/postgresql/15/bin); apt-get install postgresql-15")
        return 2
    return None


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Postgres:
    """A throwaway PostgreSQL 15 cluster (Debian's `postgresql-15`): `initdb` and `pg_ctl` on a new
    temporary folder, a free loopback port, trusted local connections, fsync as configured. It
    refuses to run as root, so as root every command runs as the `postgres` user (`runuser`), which
    owns the folder. `destroy` (also run at exit) stops the postmaster by its PID and removes the
    folder unless `keep`."""

    def __init__(self, settings=None):
        self.folder = tempfile.mkdtemp(prefix="stockroom-pg-")
        self.data = os.path.join(self.folder, "data")
        self.log_path = os.path.join(self.folder, "postgres.log")
        self.port = None
        self.pid = None
        self.settings = {"max_connections": "200"}
        self.settings.update(settings or {})
        self.keep = False
        self.destroyed = False
        started_clusters.append(self)

    @staticmethod
    def as_postgres(command):
        return (["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []) + command

    def run(self, program, *arguments, check=True, timeout=120):
        result = subprocess.run(self.as_postgres([os.path.join(PG_BIN, program), *arguments]), cwd=self.folder,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise RuntimeError(f"{program} {' '.join(arguments)} exited {result.returncode}: {result.stderr.strip()}\n"
                               f"{self.log_tail()}")
        return result.stdout

    def options(self):
        settings = "".join(f" -c {name}={value}" for name, value in sorted(self.settings.items()))
        return f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder}{settings}"

    def start(self):
        if os.getuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        os.chmod(self.folder, 0o700)
        self.run("initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync",
                 "--no-instructions")
        error = None
        for _ in range(5):  # a free port can be taken between the probe and the bind
            self.port = free_port()
            try:
                self.start_server()
                return self
            except RuntimeError as failure:
                error = failure
        raise error

    def read_pid(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            self.pid = int(f.readline())
        return self.pid

    def start_server(self):
        """Starts the (stopped) server on its port; returns once it accepts connections."""
        self.run("pg_ctl", "-D", self.data, "-l", self.log_path, "-w", "-t", "60", "-o", self.options(), "start")
        return self.read_pid()

    def stop_server(self, mode="fast"):
        """`pg_ctl stop -m MODE`, keeping the data; returns once the postmaster has exited."""
        self.run("pg_ctl", "-D", self.data, "-m", mode, "-w", "-t", "60", "stop")
        self.pid = None

    def restart(self, mode="fast"):
        """`pg_ctl restart -m MODE` (same options, same port)."""
        self.run("pg_ctl", "-D", self.data, "-l", self.log_path, "-m", mode, "-w", "-t", "60", "restart")
        return self.read_pid()

    def alive(self):
        if not self.pid:
            return False
        try:
            os.kill(self.pid, 0)
            return True
        except OSError:
            return False

    def url(self, database):
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}?sslmode=disable"

    def create_database(self, name):
        self.run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)
        return self.url(name)

    def psql(self, database, sql):
        """The rows of one query, tab-separated, as lists of strings."""
        out = self.run("psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database, "-X", "-A", "-t",
                       "-F", "\t", "-v", "ON_ERROR_STOP=1", "-c", sql, timeout=30)
        return [line.split("\t") for line in out.splitlines() if line]

    def log_tail(self, lines=20):
        try:
            with open(self.log_path, "rb") as f:
                return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-lines:])
        except OSError:
            return ""

    def destroy(self):
        """Stops the postmaster by its PID (fast shutdown, SIGKILL after 30 s) and removes the folder."""
        if self.destroyed:
            return
        self.destroyed = True
        pid = self.pid
        if pid is None and os.path.exists(os.path.join(self.data, "postmaster.pid")):
            try:
                pid = self.read_pid()
            except (OSError, ValueError):
                pid = None
        if pid:
            try:
                os.kill(pid, signal.SIGINT)
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    os.kill(pid, 0)
                    time.sleep(0.05)
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass  # gone
        if self.keep:
            log("reliability", f"kept {self.folder} (PostgreSQL's data and postgres.log)")
        else:
            shutil.rmtree(self.folder, ignore_errors=True)
