"""Throwaway PostgreSQL databases for tests (one helper for every test folder).

``$LONGDOC_TEST_PG_URL`` (default: the local server, user postgres, trust
auth) is the maintenance connection; each test session creates uniquely
named databases and drops them all at the end. When the server cannot be
reached, the fixture skips with the reason.
"""

from __future__ import annotations

import os
import uuid

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

PG_ADMIN_URL = os.environ.get("LONGDOC_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


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
