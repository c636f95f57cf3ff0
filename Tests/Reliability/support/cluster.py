"""Several daemons on one database of a throwaway PostgreSQL cluster."""

import os
import threading
import time

from .client import Client
from .postgres import Postgres
from .server import Server


class Cluster:
    """`count` daemons on one PostgreSQL database of a throwaway cluster, each with its own folder
    (`daemonN/server.log`) and its own free port. Tokens live in the database: one made with
    `token` works on every daemon."""

    def __init__(self, binary, workdir, count, env=None, postgres_settings=None):
        self.postgres = Postgres(postgres_settings)
        self.database = "stockroom"
        self.servers = []
        for index in range(count):
            folder = os.path.join(workdir, f"daemon{index}")
            os.makedirs(folder, exist_ok=True)
            self.servers.append(Server(binary, folder, env=env))

    def start(self):
        self.postgres.start()
        url = self.postgres.create_database(self.database)
        for server in self.servers:
            server.db_url = url
        # All at once: the migration runs once whatever the others do (an advisory lock).
        errors = []

        def start(server):
            try:
                server.start()
            except Exception as error:
                errors.append(error)

        threads = [threading.Thread(target=start, args=(server,)) for server in self.servers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        return self

    def token(self, user, role):
        return self.servers[0].token(user, role)

    def port(self, index):
        return self.servers[index % len(self.servers)].port

    def alive(self):
        return [index for index, server in enumerate(self.servers) if server.alive()]

    def next_alive(self, index):
        """The first daemon after `index` (in a ring) that runs, `index` itself last; None if none."""
        count = len(self.servers)
        for step in range(1, count + 1):
            candidate = (index + step) % count
            if self.servers[candidate].alive():
                return candidate
        return None

    def sql(self, query):
        return self.postgres.psql(self.database, query)

    def feed_head(self, index, token):
        """The seq of the head daemon `index` serves its feed from (`since=now`), or None if it does not answer 200."""
        client = Client(self.port(index), token, timeout=10)
        try:
            response = client.request("GET", "/v1/changes?since=now&limit=1")
            return int(response.json()["cursor"].rsplit(".", 1)[1]) if response.status == 200 else None
        except Exception:
            return None
        finally:
            client.close()

    def wait_feeds_caught_up(self, token, violations, label, timeout=10):
        """Waits until every running daemon serves its feed up to the log's head in the database (a
        daemon learns of other daemons' commits by notification, or by its poll within a second);
        one that is still behind after `timeout` seconds is a violation."""
        head = int(self.sql("SELECT seq FROM log_head WHERE id = 1")[0][0])
        deadline = time.monotonic() + timeout
        while True:
            heads = {index: self.feed_head(index, token) for index in self.alive()}
            if all(seq == head for seq in heads.values()):
                return True
            if time.monotonic() > deadline:
                violations.add(f"{label}: the log's head is {head}, and {timeout} s later the daemons' feeds end at "
                               f"{', '.join(f'daemon{i}: {s}' for i, s in heads.items())}")
                return False
            time.sleep(0.1)

    def stop(self):
        """SIGTERM to every daemon; their exit statuses."""
        return [server.stop() for server in self.servers]

    def server_errors(self, allowed_503=False):
        return [f"daemon{index}: {line}" for index, server in enumerate(self.servers)
                for line in server.server_errors(allowed_503)]

    def destroy(self, keep=False):
        for server in self.servers:
            server.kill9()
        self.postgres.keep = keep
        self.postgres.destroy()
