"""Database connections and schema migrations.

``database.url`` is a SQLAlchemy URL: ``sqlite:///./data/longdoc.db``
(default; the folder is created) or ``postgresql+psycopg://user@host/db``
(``postgresql://`` is read as psycopg 3). :func:`migrate` brings the schema to
the newest Alembic revision shipped in ``longdoc/jobs/migrations`` and is
meant to be called at every start: it is idempotent, runs in one
transaction, and concurrent callers are serialized (PostgreSQL: a
transaction-level advisory lock; SQLite: ``BEGIN IMMEDIATE``), so two
processes starting at once cannot both create the tables.

Connection failures surface as :class:`~longdoc.errors.DatabaseUnavailable`;
an unusable URL as :class:`~longdoc.errors.ConfigError`.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, CursorResult, Engine, Result, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, InterfaceError, OperationalError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from longdoc.errors import ConfigError, DatabaseUnavailable

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 30_000
_WAL_TRIES = 40
# pg_advisory_xact_lock key for migrations: "longdoc" in ASCII.
_MIGRATION_LOCK = int.from_bytes(b"longdoc", "big")


def make_engine(url: str, *, pool_size: int = 5, max_overflow: int = 10, pool_recycle_s: int = 1800) -> Engine:
    """An engine for ``url`` (SQLite or PostgreSQL) with pre-ping.

    PostgreSQL: a pool of ``pool_size`` connections plus ``max_overflow``
    more under load, each recycled after ``pool_recycle_s`` (so a restarted
    server or a proxy's idle cut costs one reconnect, never an error); every
    API replica and worker process has its own pool (size the server's
    ``max_connections`` for all of them).

    SQLite: the database file's folder is created, a relative path is fixed
    against the current directory now, and every connection gets WAL
    journaling, a busy timeout and foreign keys. ``sqlite://`` (in memory)
    shares one connection: for single-threaded tests only.
    """
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ConfigError(f"database.url {url!r} is not a database URL.",
                          hint="Use sqlite:///./data/longdoc.db or postgresql+psycopg://user@host/db.") from exc
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(parsed)
    if backend in ("postgresql", "postgres"):
        if parsed.drivername in ("postgresql", "postgres"):
            parsed = parsed.set(drivername="postgresql+psycopg")
        return create_engine(parsed, pool_pre_ping=True, pool_size=pool_size, max_overflow=max_overflow,
                             pool_recycle=pool_recycle_s, connect_args={"connect_timeout": 5})
    raise ConfigError(f"database.url uses {backend!r}; longdoc supports SQLite and PostgreSQL.",
                      hint="Use sqlite:///./data/longdoc.db or postgresql+psycopg://user@host/db.")


def _sqlite_engine(url: URL) -> Engine:
    # no pre-ping: a SQLite connection is a file, not a server link that can go stale (the ping was a
    # SELECT 1 before every transaction)
    kwargs: dict[str, Any] = {"connect_args": {"check_same_thread": False}}
    if url.database in (None, "", ":memory:"):
        kwargs["poolclass"] = StaticPool
    else:
        path = Path(url.database).absolute()
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            _private_file(path)
        except OSError as exc:
            raise DatabaseUnavailable(f"Cannot create the database {path}: {exc.strerror or exc}.") from exc
        url = url.set(database=str(path))
    engine = create_engine(url, **kwargs)
    event.listen(engine, "connect", _sqlite_on_connect)
    return engine


def _private_file(path: Path) -> None:
    """Create the database file readable by this user only (it holds
    webhook secrets); an existing one is made so. SQLite gives its -wal and
    -shm files the database file's mode."""
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    os.chmod(path, 0o600)


def _sqlite_on_connect(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        _wal(cursor)
        cursor.execute("PRAGMA foreign_keys = ON")
    finally:
        cursor.close()


def _wal(cursor: Any) -> None:
    """Switch the file to WAL journaling (persistent, so usually already
    done). Switching needs an exclusive lock and SQLite answers "database
    is locked" at once, without its busy handler, while another connection
    holds one (processes opening a fresh database together): retry."""
    for attempt in range(_WAL_TRIES):
        try:
            if cursor.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal":
                return
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError:
            if attempt == _WAL_TRIES - 1:
                raise
            time.sleep(0.05 * (attempt + 1))


def session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions whose loaded objects stay readable after commit (the
    repositories hand detached rows to callers)."""
    return sessionmaker(engine, expire_on_commit=False)


def migrate(url_or_engine: str | Engine) -> None:
    """Upgrade the schema to the newest shipped revision (no-op when it is
    current). Raises DatabaseUnavailable when the database cannot be reached."""
    engine = make_engine(url_or_engine) if isinstance(url_or_engine, str) else url_or_engine
    try:
        with _locked_transaction(engine) as conn:
            config = alembic_config()
            config.attributes["connection"] = conn
            command.upgrade(config, "head")
    except (OperationalError, InterfaceError) as exc:
        raise _unavailable(exc) from exc
    finally:
        if isinstance(url_or_engine, str):
            engine.dispose()


def rowcount(result: Result[*tuple[Any, ...]]) -> int:
    """How many rows the UPDATE or DELETE that gave ``result`` matched
    (``Session.execute`` is typed as returning a plain Result, without the count)."""
    assert isinstance(result, CursorResult), "an UPDATE or DELETE gives a CursorResult"
    return result.rowcount


@contextmanager
def _locked_transaction(engine: Engine) -> Iterator[Connection]:
    """One connection inside one transaction that only one migrator at a
    time can hold; committed on a clean exit."""
    with engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            with conn.begin():
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
                yield conn
            return
        # pysqlite would run DDL outside any transaction: take the write lock
        # explicitly so the whole upgrade is atomic and exclusive.
        dbapi = conn.connection.driver_connection
        assert dbapi is not None, "a checked-out connection has its driver's connection"
        saved = dbapi.isolation_level
        dbapi.isolation_level = None
        try:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.rollback()
                raise
            conn.commit()
        finally:
            dbapi.isolation_level = saved


def alembic_config(url: str | None = None) -> Config:
    """Alembic configuration for the packaged migrations (no alembic.ini).
    With ``url`` it also works for authoring, e.g.
    ``command.revision(alembic_config(url), autogenerate=True, message="…")``."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
    if url is not None:
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def head_revision() -> str:
    """The newest revision shipped with this version of longdoc."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "longdoc ships at least one migration"
    return head


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None before the first migration)."""
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    except (OperationalError, InterfaceError) as exc:
        raise _unavailable(exc) from exc


def ping(engine: Engine) -> None:
    """Return if the database answers a trivial query; raise DatabaseUnavailable otherwise."""
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except (OperationalError, InterfaceError) as exc:
        raise _unavailable(exc) from exc


def _unavailable(exc: OperationalError | InterfaceError) -> DatabaseUnavailable:
    return DatabaseUnavailable(f"The database is unavailable ({type(exc.orig).__name__}).")
