"""The fleet, for real: an API (``longdoc serve``) and ``longdoc worker``
processes on a real PostgreSQL database and a real Redis broker, with
moto's S3 server standing in for S3 (no S3 server is installable here).

- Redis: a private ``redis-server`` on a free port per fleet (the same
  binary as the machine's; no persistence, as the machine's), so a test
  can restart it without touching anyone else's queues
  (:mod:`tests.redis_server`; over TLS with ``redis_tls``);
- PostgreSQL: a throwaway database per fleet (``tests/pg.py``);
- S3: ``moto.server.ThreadedMotoServer`` on 127.0.0.1 in this process, a
  bucket per fleet; the processes get fake credentials in their environment.

:class:`Fleet` starts the API and workers, each in its own process group,
and knows how to kill -9 a worker (with its children), restart Redis and
restart the API. A failing test gets the tail of every log.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
import yaml
from moto.server import ThreadedMotoServer
from sqlalchemy import create_engine, text

from tests.conftest import free_port
from tests.pg import pg_server  # noqa: F401  (fixture)
from tests.pki import Pki
from tests.redis_server import REDIS_SERVER, Redis
from tests.service.conftest import SAMPLE_PDF, Key, Server, deep_merge

AWS_ENV = {"AWS_ACCESS_KEY_ID": "moto-fake-key", "AWS_SECRET_ACCESS_KEY": "moto-fake-secret",
           "AWS_DEFAULT_REGION": "us-east-1"}
_LOGS: list[Path] = []


@pytest.fixture(scope="session")
def sample_pdf() -> Path:
    return SAMPLE_PDF


@pytest.fixture(scope="session")
def moto_s3():
    """Moto's S3 server (a stand-in for S3) on 127.0.0.1; yields its URL."""
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


class Worker:
    """One ``longdoc worker`` process group."""

    def __init__(self, root: Path, config: Path, name: str, queues: str, concurrency: int) -> None:
        self.root, self.config, self.name = root, config, name
        self.args = ["--queues", queues, "--concurrency", str(concurrency), "--name", f"{name}@fleet"]
        self.log_path = root / f"{name}.log"
        self.proc: subprocess.Popen | None = None
        _LOGS.append(self.log_path)

    def start(self) -> Worker:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "longdoc.cli", "worker", "--config", str(self.config),
                                          *self.args], cwd=self.root, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True, env={**os.environ, **AWS_ENV})
        return self

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while " ready." not in self.log_text():
            assert self.proc is not None and self.proc.poll() is None, f"worker exited:\n{self.log_text()[-3000:]}"
            assert time.monotonic() < deadline, f"worker not ready:\n{self.log_text()[-3000:]}"
            time.sleep(0.1)

    def kill9(self) -> None:
        """SIGKILL the worker and every process of its group (its pool, sandboxes, OCR workers)."""
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        self.signal_stop()
        self.wait_stopped()

    def signal_stop(self) -> None:
        """SIGTERM the worker, if it runs (a warm shutdown: see :meth:`wait_stopped`)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def wait_stopped(self) -> None:
        """Wait (20 s at most) for a worker sent SIGTERM, then kill what is left of its group."""
        if self.proc is None:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(20)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self.proc.poll() is None:
            self.proc.wait(30)

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""


class Fleet:
    """An API, workers, Redis, a PostgreSQL database and a moto bucket."""

    def __init__(self, root: Path, database_url: str, s3_endpoint: str, redis_tls: Pki | None = None,
                 **overrides: dict[str, Any]) -> None:
        self.root = root
        self.database_url = database_url
        self.redis = Redis(root, tls=redis_tls)
        self.redis.start()
        bucket = f"fleet-{uuid.uuid4().hex[:12]}"
        boto3.client("s3", endpoint_url=s3_endpoint, aws_access_key_id=AWS_ENV["AWS_ACCESS_KEY_ID"],
                     aws_secret_access_key=AWS_ENV["AWS_SECRET_ACCESS_KEY"],
                     region_name=AWS_ENV["AWS_DEFAULT_REGION"]).create_bucket(Bucket=bucket)
        config = deep_merge({
            "queue": {"backend": "celery", "broker_url": self.redis.url, "lease_seconds": 4,
                      "redeliver_after_seconds": 6, "reconcile_interval_seconds": 0.5},
            "storage": {"url": f"s3://{bucket}/longdoc", "s3": {"endpoint_url": s3_endpoint, "region": "us-east-1"}},
            "service": {"rate_limit_per_minute": 100_000, "work_dir": str(root / "work")},
            "inference": {"workers": 1, "page_chunk_size": 8, "chunk_overlap": 1},
        }, overrides)
        if redis_tls is not None:
            config["queue"]["tls_ca_file"] = str(redis_tls.ca)
        if not config["queue"]["broker_url"].startswith("redis"):  # request counts still live in a Redis
            config["service"].setdefault("rate_limit_storage_url", self.redis.url)
        os.environ.update(AWS_ENV)  # the API inherits the environment (Server starts it)
        self.api = Server(root / "api", database_url, **config)
        self.workers: list[Worker] = []
        _LOGS.extend([self.api.log_path, self.redis.log])

    def start(self, workers: int = 2, queues: str = "cpu,engine,short", concurrency: int = 1) -> Fleet:
        self.api.start()
        for _ in range(workers):
            self.add_worker(queues, concurrency)
        for w in self.workers:
            w.wait_ready()
        return self

    def add_worker(self, queues: str = "cpu,engine,short", concurrency: int = 1) -> Worker:
        worker = Worker(self.root, self.api.config_path, f"w{len(self.workers) + 1}", queues, concurrency).start()
        self.workers.append(worker)
        return worker

    def create_key(self, tenant: str) -> Key:
        return self.api.create_key(tenant)

    def sql(self, query: str, **params: Any) -> list[tuple]:
        engine = create_engine(self.database_url)
        try:
            with engine.connect() as conn:
                return [tuple(r) for r in conn.execute(text(query), params)]
        finally:
            engine.dispose()

    def restart_redis(self) -> None:
        """Kill the broker (everything queued in it is lost: no persistence) and start it again."""
        self.redis.stop()
        time.sleep(0.5)
        self.redis.start()

    def stop(self) -> None:
        """SIGTERM every worker and the API at once, then wait for each (a warm
        shutdown takes seconds; one after the other they added up)."""
        for w in self.workers:
            w.signal_stop()
        if self.api.proc is not None and self.api.proc.poll() is None:
            self.api.proc.send_signal(signal.SIGTERM)
        for w in self.workers:
            w.wait_stopped()
        self.api.stop()
        self.redis.stop()


@pytest.fixture
def start_fleet(request, tmp_path, moto_s3):
    """``start_fleet(workers=2, redis_tls=None, **overrides) -> Fleet`` (started; with ``redis_tls``
    a :class:`~tests.pki.Pki`, Redis over TLS: rediss:// and queue.tls_ca_file), stopped at teardown."""
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed (Debian package redis-server)")
    fleets: list[Fleet] = []
    saved = {k: os.environ.get(k) for k in AWS_ENV}

    def start(workers: int = 2, queues: str = "cpu,engine,short", concurrency: int = 1,
              redis_tls: Pki | None = None, **overrides: dict[str, Any]) -> Fleet:
        root = tmp_path / f"fleet-{len(fleets)}"
        (root / "api").mkdir(parents=True)
        fleet = Fleet(root, request.getfixturevalue("pg_server").create_database(), moto_s3, redis_tls,
                      **overrides)
        fleets.append(fleet)
        return fleet.start(workers, queues, concurrency)

    yield start
    for fleet in fleets:
        fleet.stop()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for path in _LOGS:
            if path.exists():
                report.sections.append((f"log {path.parent.name}/{path.name} (tail)",
                                        path.read_text(errors="replace")[-4000:]))
    if call.when == "teardown":
        _LOGS.clear()


def wait_for(predicate, timeout: float, what: str, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(interval)


def job_state(http: httpx.Client, job_id: str) -> dict:
    response = http.get(f"/v1/jobs/{job_id}")
    response.raise_for_status()
    return response.json()


__all__ = ["Fleet", "job_state", "wait_for", "yaml"]

from tests.jobs.conftest import (  # noqa: E402, F401  (fixtures: the records' database, the fake clock)
    db_engine,
    db_sessions,
    fake_clock,
    pg_migrated_url,
)
