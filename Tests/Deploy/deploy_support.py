"""deploy_test.py's harness: the paths, images and settings of the run, its log lines and failed
checks, commands run from the repository's root, the Docker engine (started and stopped by this
test when none answers), and compose projects with their containers. It also puts
Tests/Reliability on sys.path and re-exports the HTTP helpers the checks take from there."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "Tests", "Reliability"))
from common import Client, draft, is_connection_error, list_items, replay_feed  # noqa: E402,F401

IMAGE = "stockroom:deploy-test"
# docker-compose.postgres.yml's other images: the balancer's (built by the test) and PostgreSQL's.
BALANCER_IMAGE = "stockroom-haproxy:deploy-test"
POSTGRES_IMAGE = "postgres:15-bookworm"
BUILD_ENV = {"DOCKER_BUILDKIT": "0", "COMPOSE_DOCKER_CLI_BUILD": "0"}
# The runtime base the Dockerfile's last stage starts from.
RUNTIME_BASE = "debian:bookworm-slim"
ADDED_LAYERS_LIMIT = 150 * 1000 * 1000
# The override files of the run; removed at its end.
WORKDIR = tempfile.mkdtemp(prefix="stockroom-deploy-")


def say(message):
    print(f"[deploy {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class CheckFailed(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise CheckFailed(message)


def run(command, check=True, timeout=600, env=None, capture=True):
    result = subprocess.run(
        command, cwd=ROOT, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if capture else None, stderr=subprocess.STDOUT if capture else None,
        text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise CheckFailed(f"{' '.join(command)} exited {result.returncode}:\n{(result.stdout or '')[-3000:]}")
    return result


def compose_command():
    """Compose v2 (`docker compose`) when the client has it, else v1 (`docker-compose`)."""
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    raise CheckFailed("neither `docker compose` nor `docker-compose` is installed")


def wait_until(what, predicate, timeout, interval=0.25):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise CheckFailed(f"{what}: not within {timeout} s")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Engine:
    """The Docker engine: the one that answers, or a dockerd this test starts and stops by PID."""

    def __init__(self):
        self.process = None
        self.log = None

    def answers(self):
        return subprocess.run(["docker", "info"], capture_output=True).returncode == 0

    def start(self):
        if self.answers():
            return
        if not shutil.which("dockerd"):
            raise CheckFailed("no Docker engine answers and dockerd is not installed (Debian: apt-get install docker.io)")
        self.log = tempfile.NamedTemporaryFile(prefix="deploy-dockerd-", suffix=".log", delete=False)
        say(f"starting dockerd (log {self.log.name})")
        self.process = subprocess.Popen(
            ["dockerd", "--storage-driver=overlay2", "--pidfile", "/run/deploy-test-dockerd.pid"],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        wait_until("dockerd answering", lambda: self.process.poll() is not None or self.answers(), 60)
        if self.process.poll() is not None:
            raise CheckFailed(f"dockerd exited {self.process.returncode}; see {self.log.name}")

    def stop(self):
        if self.process is None or self.process.poll() is not None:
            return
        say(f"stopping dockerd (pid {self.process.pid})")
        self.process.terminate()
        try:
            self.process.wait(30)
            os.unlink(self.log.name)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Project:
    """One compose project: a compose file of the repository (docker-compose.yml unless told; and an
    override, when given) under its own name, so its containers and volumes are its own."""

    def __init__(self, compose, name, port, override=None, file="docker-compose.yml", env=None):
        self.compose = compose
        self.name = name
        self.port = port
        self.files = ["-f", os.path.join(ROOT, file)]
        self.override_path = None
        if override:
            self.override_path = os.path.join(WORKDIR, f"{name}.yml")
            with open(self.override_path, "w") as f:
                f.write(override)
            self.files += ["-f", self.override_path]
        self.env = {"STOCKROOM_IMAGE": IMAGE, "STOCKROOM_PORT": str(port), **BUILD_ENV, **(env or {})}

    def __call__(self, *arguments, check=True, timeout=600):
        return run([*self.compose, "-p", self.name, *self.files, *arguments], check=check, timeout=timeout, env=self.env)

    def container(self, service="stockroom"):
        return self("ps", "-q", service).stdout.strip()

    def state(self, service="stockroom"):
        output = run(["docker", "inspect", "-f", "{{json .State}}", self.container(service)]).stdout
        return json.loads(output)

    def wait_healthy(self, timeout=90, service="stockroom"):
        def healthy():
            state = self.state(service)
            if state.get("Status") == "exited" or state.get("Restarting"):
                raise CheckFailed(f"{service} exited {state.get('ExitCode')}:\n{self.logs(service)[-3000:]}")
            return state.get("Health", {}).get("Status") == "healthy"
        wait_until(f"{service} healthy", healthy, timeout)

    def logs(self, service="stockroom"):
        return self("logs", "--no-color", service, check=False).stdout

    def token(self, user, role, service="stockroom"):
        output = self("exec", "-T", service, "/app/stockroom", "token", "create", "--user", user, "--role", role).stdout
        return output.strip().splitlines()[-1].strip()

    def remove(self):
        """Its containers and volume; again is harmless."""
        self("down", "-v", "--remove-orphans", "-t", "5", check=False)


def compose_containers(project):
    """{service: container id} of a project's containers, from one `docker ps` (compose v1's CLI
    takes a second or two per call on a busy machine)."""
    output = run(["docker", "ps", "-a", "--filter", f"label=com.docker.compose.project={project.name}",
                  "--format", '{{.Label "com.docker.compose.service"}} {{.ID}}']).stdout
    return dict(line.split() for line in output.splitlines() if line.strip())


def wait_all_healthy(containers, timeout):
    """Waits until every container of {service: id} is healthy; fails at once when one exits."""
    def healthy():
        output = run(["docker", "inspect", "-f", "{{json .State}}", *containers.values()]).stdout
        states = [json.loads(line) for line in output.splitlines() if line.strip()]
        for service, state in zip(containers, states):
            if state.get("Status") == "exited" or state.get("Restarting"):
                raise CheckFailed(f"{service} exited {state.get('ExitCode')}:\n{container_logs(containers[service])[-3000:]}")
        return all(state.get("Health", {}).get("Status") == "healthy" for state in states)
    wait_until(f"{', '.join(containers)} healthy", healthy, timeout, interval=0.5)


def container_logs(container):
    return run(["docker", "logs", container], check=False).stdout
