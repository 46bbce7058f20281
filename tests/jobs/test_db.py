"""Connections and migrations on SQLite and PostgreSQL."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlalchemy.exc import StatementError

from longdoc.errors import ConfigError, DatabaseUnavailable
from longdoc.jobs import db
from longdoc.jobs.models import Base
from longdoc.jobs.repo import JobRepo, KeyRepo

TABLES = {"api_keys", "jobs", "job_pages", "webhook_deliveries", "job_tasks", "webhook_outbox", "audit_events"}


def _tables(engine) -> set[str]:
    return set(inspect(engine).get_table_names()) - {"alembic_version"}


def test_migrate_creates_the_schema_and_a_second_run_changes_nothing(fresh_db_url):
    engine = db.make_engine(fresh_db_url)
    try:
        assert db.current_revision(engine) is None
        db.migrate(engine)
        assert _tables(engine) == TABLES
        assert db.current_revision(engine) == db.head_revision()
        key, _ = KeyRepo(db.session_factory(engine)).create("acme")
        db.migrate(engine)  # every start calls it again
        assert db.current_revision(engine) == db.head_revision()
        assert [k.id for k in KeyRepo(db.session_factory(engine)).list()] == [key.id]
    finally:
        engine.dispose()


def test_processes_migrating_at_once_leave_one_clean_schema(fresh_db_url):
    def start() -> None:
        engine = db.make_engine(fresh_db_url)  # each "process" its own engine
        try:
            db.migrate(engine)
        finally:
            engine.dispose()

    with ThreadPoolExecutor(4) as pool:
        for future in [pool.submit(start) for _ in range(4)]:
            future.result()
    engine = db.make_engine(fresh_db_url)
    try:
        assert _tables(engine) == TABLES
        with engine.connect() as conn:
            assert conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [db.head_revision()]
    finally:
        engine.dispose()


def test_a_job_of_the_whole_job_runner_reads_back_after_the_upgrade(fresh_db_url):
    """0004 drops the job row's lease (worker_id, heartbeat_at, recoveries):
    a job an older version left running keeps everything a client sees."""
    engine = db.make_engine(fresh_db_url)
    try:
        config = db.alembic_config()
        with engine.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, "0003")
        with engine.begin() as conn:
            conn.execute(text(
                "INSERT INTO jobs (id, tenant, state, priority, lane, filename, media_type, size_bytes, sha256, "
                "options, options_hash, pages_total, pages_done, failed_pages, timings, attempts, recoveries, "
                "stored_bytes, created_at, queued_at, started_at, cancel_requested, worker_id, heartbeat_at) "
                "VALUES ('j1', 'acme', 'running', 3, 'long', 'a.pdf', 'application/pdf', 10, :sha, '{}', 'h', "
                "40, 12, '[]', '{}', 1, 1, 10, :t, :t, :t, :f, 'embedded:old-host:1:0badf00d', :t)"),
                {"sha": "0" * 64, "t": datetime(2026, 11, 1, tzinfo=UTC), "f": False})
        db.migrate(engine)
        assert db.current_revision(engine) == db.head_revision()
        job = JobRepo(db.session_factory(engine)).get_any("j1")
        assert (job.state, job.lane, job.priority, job.pages_total, job.pages_done, job.attempts) == (
            "running", "long", 3, 40, 12, 1)
        assert job.started_at == datetime(2026, 11, 1, tzinfo=UTC)
        assert {"worker_id", "heartbeat_at", "recoveries"}.isdisjoint(c["name"] for c in inspect(engine).get_columns("jobs"))
    finally:
        engine.dispose()


def test_migrations_match_the_models(db_engine):
    with db_engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata)
    assert diff == []


def test_times_come_back_timezone_aware_utc(db_sessions):
    repo = KeyRepo(db_sessions)
    key, _ = repo.create("acme")
    stored = repo.get(key.id)
    assert stored.created_at.tzinfo is not None and stored.created_at.utcoffset().total_seconds() == 0
    assert stored.created_at == key.created_at


def test_naive_times_are_refused(db_sessions):
    repo = JobRepo(db_sessions)
    job, _ = repo.create(tenant="acme", filename="a.pdf", media_type="application/pdf", size_bytes=1,
                         sha256="0" * 64, options={})
    with pytest.raises(StatementError, match="naive datetime"):
        repo.finish(job.id, "failed", expires_at=datetime(2030, 1, 1))
    assert repo.get_any(job.id).state == "queued"
    assert repo.finish(job.id, "failed", expires_at=datetime(2030, 1, 1, tzinfo=UTC)).state == "failed"


def test_sqlite_engine_creates_its_folder_and_uses_wal_and_foreign_keys(tmp_path):
    engine = db.make_engine(f"sqlite:///{tmp_path}/a/b/jobs.db")
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() > 0
        assert (tmp_path / "a" / "b" / "jobs.db").is_file()
    finally:
        engine.dispose()


def test_relative_sqlite_path_is_fixed_at_creation(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    engine = db.make_engine("sqlite:///./data/longdoc.db")
    monkeypatch.chdir("/")
    try:
        db.ping(engine)
        assert (tmp_path / "data" / "longdoc.db").is_file()
    finally:
        engine.dispose()


def test_plain_postgresql_url_uses_psycopg_3():
    engine = db.make_engine("postgresql://someone@db.invalid/longdoc")
    assert engine.dialect.driver == "psycopg"
    engine.dispose()


@pytest.mark.parametrize("url", ["not a url", "mysql://root@localhost/x", ""])
def test_unusable_database_url_is_a_config_error(url):
    with pytest.raises(ConfigError):
        db.make_engine(url)


def test_unreachable_database_is_reported_as_unavailable():
    engine = db.make_engine("postgresql+psycopg://postgres@127.0.0.1:1/none?connect_timeout=2")
    try:
        with pytest.raises(DatabaseUnavailable) as info:
            db.ping(engine)
        assert info.value.retryable and info.value.http_status == 503
        with pytest.raises(DatabaseUnavailable):
            db.migrate(engine)
    finally:
        engine.dispose()
