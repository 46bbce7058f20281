"""Database fixtures: every repository and migration test runs on a real
SQLite file and on a real PostgreSQL server.

PostgreSQL: ``$LONGDOC_TEST_PG_URL`` (default: the local server, user
postgres, trust auth) is the maintenance connection; each test session
creates uniquely named databases and drops them at the end. When the server
cannot be reached the PostgreSQL cases are skipped with the reason.
"""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from longdoc.jobs import db
from longdoc.jobs.models import Base

PG_ADMIN_URL = os.environ.get("LONGDOC_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
BACKENDS = ["sqlite", "postgresql"]


class PgServer:
    """Creates throwaway databases on the test server; drops them all at close."""

    def __init__(self, admin_url: str) -> None:
        self.url = make_url(admin_url)
        self.admin = create_engine(self.url, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 3})
        self.created: list[str] = []

    def create_database(self) -> str:
        name = f"longdoc_test_{uuid.uuid4().hex[:12]}"
        with self.admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        self.created.append(name)
        return self.url.set(database=name).render_as_string(hide_password=False)

    def close(self) -> None:
        with self.admin.connect() as conn:
            for name in self.created:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        self.admin.dispose()


@pytest.fixture(scope="session")
def pg_server():
    server = PgServer(PG_ADMIN_URL)
    try:
        with server.admin.connect():
            pass
    except OperationalError as exc:
        server.admin.dispose()
        pytest.skip(f"PostgreSQL not reachable at {server.url.render_as_string()}: {exc.orig}")
    yield server
    server.close()


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
