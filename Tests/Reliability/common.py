"""Shared by the reliability scripts: run the real `stockroom` binary on a temporary SQLite file
(or several daemons on one throwaway PostgreSQL cluster: `Postgres`, `Cluster`), talk to it over
loopback HTTP, follow and replay its change feed, and collect violations.

The helpers live in support/, one concern per module (support/__init__.py lists them); this module
gathers them so that a script imports what it needs from one place (`from common import ...`, with
the script's folder on sys.path; Tests/Deploy/deploy_test.py does the same).

Python 3.9+, standard library only.
"""

from support.client import (Client, RawStream, Response, body_error_code, draft, is_connection_error,
                            parse_head)
from support.cluster import Cluster
from support.feed import FeedFollower, FeedRefused, FeedUnavailable, check_follower, follow_feed, replay_feed
from support.harness import (ROOT, Violations, default_binary, log, make_workdir, remove_workdir,
                             seeded_random)
from support.postgres import PG_BIN, Postgres, free_port, missing_for_postgres, postgres_available
from support.server import Server
from support.state import check_feed_matches_state, check_repairs, fold, list_items, without_presence

__all__ = [
    "Client", "RawStream", "Response", "body_error_code", "draft", "is_connection_error", "parse_head",
    "Cluster",
    "FeedFollower", "FeedRefused", "FeedUnavailable", "check_follower", "follow_feed", "replay_feed",
    "ROOT", "Violations", "default_binary", "log", "make_workdir", "remove_workdir", "seeded_random",
    "PG_BIN", "Postgres", "free_port", "missing_for_postgres", "postgres_available",
    "Server",
    "check_feed_matches_state", "check_repairs", "fold", "list_items", "without_presence",
]
