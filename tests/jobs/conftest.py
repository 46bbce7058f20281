"""Database fixtures: every repository and migration test runs on a real
SQLite file and on a real PostgreSQL server.

PostgreSQL: ``$LONGDOC_TEST_PG_URL`` (default: the local server, user
postgres, trust auth) is the maintenance connection; each test session
creates uniquely named databases and drops them at the end. When the server
cannot be reached the PostgreSQL cases are skipped with the reason.
"""

from __future__ import annotations

import socket
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from longdoc.jobs import db
from longdoc.jobs.models import Base
from tests.pg import pg_server  # noqa: F401  (fixture)

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def pg_migrated_url(pg_server) -> str:
    """One migrated database shared by the session; tests empty it first."""
    url = pg_server.create_database()
    db.migrate(url)
    return url


@pytest.fixture(params=BACKENDS)
def fresh_db_url(request, tmp_path) -> str:
    """URL of an empty (unmigrated) database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/fresh/jobs.db"
    return request.getfixturevalue("pg_server").create_database()


@pytest.fixture(params=BACKENDS)
def db_engine(request, tmp_path):
    """An engine on a migrated, empty database."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path}/jobs.db"
        db.migrate(url)
    else:
        url = request.getfixturevalue("pg_migrated_url")
    eng = db.make_engine(url)
    if request.param == "postgresql":
        tables = ", ".join(t.name for t in Base.metadata.sorted_tables)
        with eng.begin() as conn:
            conn.execute(text(f"TRUNCATE {tables} CASCADE"))
    yield eng
    eng.dispose()


@pytest.fixture
def db_sessions(db_engine):
    return db.session_factory(db_engine)


class FakeClock:
    """A clock tests move by hand (aware UTC, microsecond steps so every
    reading is distinct and ordered)."""

    def __init__(self, start: datetime = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(microseconds=1)
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def fake_dns(monkeypatch):
    """Answers for names ending in .example.test (a list per name, one per lookup,
    the last repeating); other hosts go to the real resolver. Records lookups."""
    real = socket.getaddrinfo
    answers: dict[str, list[list[str]]] = {}
    lookups: list[str] = []

    def getaddrinfo(host, port, *args, **kwargs):
        if isinstance(host, str) and host.endswith(".example.test"):
            lookups.append(host)
            script = answers.get(host)
            if not script:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            ips = script.pop(0) if len(script) > 1 else script[0]
            return [
                (socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port))
                for ip in ips
            ]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return answers, lookups
