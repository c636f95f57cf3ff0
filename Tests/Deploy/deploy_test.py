#!/usr/bin/env python3
"""The deployment as docs/production.md ("Running in production") describes it, against the real image.

Builds the image from the repository's Dockerfile with the repository's docker-compose.yml, then,
through the published port from this host:

  image     the image as a production user wants it: non-root, no compiler, no source, the Swift
            runtime linked statically, under 150 MB added to its runtime base
  up        `up -d` turns healthy through /ready; an item, openEdit -> updateDraft -> save, the
            change on an SSE stream opened before the write; `down` and `up` keep every item and
            every cursor (same epoch)
  backup    `stockroom backup --to` with `exec`, `restore --from` with `run` on the stopped
            service: what was written after the backup is gone, old cursors get 410
  stop      `stop` ends the server with SIGTERM, exit status 0 within 5 s, while a long-poll, an
            SSE stream and a WebSocket are open; each ends as API.md says
  settings  port, log level, synchronous mode and a limit set by environment take effect; a bad
            setting makes the container exit 64 with a line naming it in `logs`

then docker-compose.postgres.yml (PostgreSQL, three daemons of the same image, HAProxy), through
the balancer's published port:

  postgres  `up -d` turns all five services healthy (the daemons migrate one database at once); a
            token made with `exec`; three SSE streams (one per daemon) and a WebSocket follow the
            feed from a snapshot's cursor while four writers create and replace items, each write
            under its own Idempotency-Key, retried after a 502, a 503, a 409 requestInProgress or a
            dropped connection; one daemon is stopped mid-run and started again. Every stream,
            resuming from its last cursor after each reconnect (SSE: Last-Event-ID), received
            exactly seqs snapshot+1 ... head, once each, in order; every acknowledged write is in
            it once, with the id and version its answer gave; 502/503 and dropped connections
            only in the 10 s after the stop, no other 5xx; an SSE stream was cut and resumed; the
            balancer logged the daemon DOWN and UP again, and no token (query string); the
            daemons logged no 5xx but 503. When no image is tagged postgres:15-bookworm (no
            registry), the stand-in of Tests/Deploy/postgres is built under that tag first.

Each check runs under its own compose project with its own volumes, removed with its containers
afterwards (the built images stay: they are the build cache). When no Docker engine answers, the test
starts dockerd itself and stops it by PID at the end. `--local-images SCRIPT` runs a script that
tags local stand-ins for the Dockerfile's base images first (on a machine without a registry:
../shared/container/local-images.sh). Python 3.9+, standard library only; needs root (dockerd)
or a user in the docker group. Prints "N passed, N failed" last; exits 1 when a check failed.
"""

import argparse
import os
import shutil
import sys
import time
import traceback

from deploy_support import (BALANCER_IMAGE, IMAGE, WORKDIR, CheckFailed, Engine, Project, compose_command, free_port,
                            run, say)
from deploy_checks import check_backup, check_image, check_settings, check_stop, check_up
from deploy_postgres import check_postgres, ensure_postgres_image


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--local-images", metavar="SCRIPT", help="run SCRIPT first to tag local stand-ins for the base images")
    parser.add_argument("--no-build", action="store_true", help=f"use the image {IMAGE} as it is")
    parser.add_argument("--only", choices=("sqlite", "postgres"),
                        help="run only the checks of docker-compose.yml (sqlite) or of docker-compose.postgres.yml (postgres)")
    args = parser.parse_args()

    engine = Engine()
    passed, failed = [], []
    projects = []

    def step(name, function, *arguments):
        say(f"{name} ...")
        try:
            result = function(*arguments)
            detail = result[-1] if isinstance(result, tuple) else result
            say(f"{name}: ok ({detail})")
            passed.append(name)
            return result
        except Exception as error:  # a check that broke (a refused connection, a missing key) fails too
            detail = error if isinstance(error, CheckFailed) else f"{error!r}\n{traceback.format_exc()}"
            say(f"{name}: FAILED: {detail}")
            failed.append(name)
            return None

    try:
        engine.start()
        if args.local_images:
            run(["bash", args.local_images], timeout=1800, capture=False)
        compose = compose_command()
        say(f"compose: {' '.join(compose)}")
        suffix = f"{os.getpid()}"
        main_project = Project(compose, f"stockroom-deploy-{suffix}", free_port())
        projects.append(main_project)
        if not args.no_build:
            def build():
                started = time.monotonic()
                main_project("build", timeout=3600)
                return f"{time.monotonic() - started:.0f} s"
            if step("build", build) is None:
                raise CheckFailed("the image did not build")
        if args.only != "postgres":
            step("image", check_image)
            up = step("up", check_up, main_project)
            if up:
                token, head_cursor, _ = up
                step("backup", check_backup, main_project, token, head_cursor)
                step("stop", check_stop, main_project, token)
            else:
                failed.extend(["backup", "stop"])
            step("settings", check_settings, compose, f"stockroom-deploy-{suffix}-settings")
        if args.only != "sqlite":
            pg_project = Project(compose, f"stockroom-deploy-{suffix}-pg", free_port(),
                                 file="docker-compose.postgres.yml", env={"BALANCER_IMAGE": BALANCER_IMAGE})
            projects.append(pg_project)
            if step("postgres image", ensure_postgres_image) is not None:
                step("postgres", check_postgres, pg_project)
            else:
                failed.append("postgres")
    except CheckFailed as error:
        say(f"FAILED: {error}")
        failed.append("setup")
    finally:
        for project in projects:
            project.remove()
        engine.stop()
        shutil.rmtree(WORKDIR, ignore_errors=True)
    print(f"{len(passed)} passed, {len(failed)} failed" + (f" ({', '.join(failed)})" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
