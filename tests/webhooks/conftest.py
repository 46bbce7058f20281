"""The records' database fixtures (a real SQLite file and a real PostgreSQL
server) and the fake clock and DNS, shared with ``tests/jobs``."""

from tests.jobs.conftest import (  # noqa: F401  (fixtures)
    db_engine,
    db_sessions,
    fake_clock,
    fake_dns,
    pg_migrated_url,
)
from tests.pg import pg_server  # noqa: F401  (fixture)
