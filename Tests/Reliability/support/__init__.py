"""The reliability scripts' shared helpers, one concern per module (common.py re-exports them):

  harness   the binary's default path, log lines, Violations, the temporary folder, seeded random
            numbers, and everything a script started stopped when it exits
  server    Server: one `stockroom serve` on a SQLite file (or a PostgreSQL database) and its log
  postgres  Postgres: a throwaway PostgreSQL 15 cluster
  cluster   Cluster: several daemons on one database of such a cluster
  client    HTTP on loopback: Client, Response, RawStream, and the bodies the scripts send
  feed      the change feed replayed, long-polled, or followed over a cluster (FeedFollower)
  state     the served state against the feed folded, and the checks that compare them
"""
