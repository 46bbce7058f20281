"""End-to-end fixtures: real ``longdoc serve`` processes on real ports.

:class:`Server` writes a YAML config into a temporary folder, starts
``python -m longdoc.cli serve --config FILE`` in its own process group
(stdout and stderr appended to ``server.log`` next to the config), and waits
for ``/readyz`` to answer 200 (the warm-up runs one real OCR page). Keys are
made with the real ``longdoc keys create`` command. A failing test gets the
tail of every live server's log attached to its report.

Fixtures:

- ``server`` (session): one SQLite server with the default test config,
  shared by every test that does not need special settings;
- ``start_server`` (function): a factory for dedicated servers
  (``start_server(backend="sqlite", **{section: {key: value}})``), all
  stopped at teardown; they skip the warm-up unless a test asks for it
  (``service={"warmup": True}``), so the first OCR job loads the engine;
- ``pg_url_factory`` (session): fresh PostgreSQL databases on
  127.0.0.1:5432 (user postgres, trust), dropped at the end; the tests that
  need one are skipped with the reason when the server is unreachable;
- generated documents (session): ``report_doc`` (8 born-digital pages),
  ``long_doc`` (600 born-digital pages), ``sample_pdf``.
"""

from __future__ import annotations

import contextlib
import copy
import os
import secrets
import signal
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from longdoc.client import LongdocClient
from tests.conftest import free_port
from tests.docgen import GeneratedDoc, english_report, long_textlayer
from tests.pg import pg_server  # noqa: F401  (fixture)

REPO = Path(__file__).resolve().parents[2]
SAMPLE_PDF = REPO / "longdoc" / "samples" / "sample.pdf"
READY_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 30.0
LOG_TAIL_CHARS = 6000

_LIVE: list[Server] = []


def deep_merge(base: dict, extra: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


@dataclass
class Key:
    key: str
    webhook_secret: str
    id: str
    tenant: str

    def __iter__(self):  # (key, webhook_secret, key_id)
        return iter((self.key, self.webhook_secret, self.id))

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


class ServiceAccess:
    """What a test reaches the service by, however it runs (a served
    process here, in process in :mod:`tests.api.harness`): the headers of a
    key and of the admin token, a job's stored files, the log. Needs
    ``data``, ``admin_token`` and ``log_path``."""

    data: Path
    admin_token: str
    log_path: Path

    @property
    def store(self) -> Path:
        return self.data / "store"

    @staticmethod
    def key_headers(key: str | Key | None) -> dict[str, str]:
        return {} if key is None else {"Authorization": f"Bearer {key.key if isinstance(key, Key) else key}"}

    def admin_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin_token}"}

    def job_files(self, tenant: str, job_id: str) -> list[Path]:
        """Every stored file of a job under the data folder."""
        folder = self.store / "tenants" / tenant / "jobs" / job_id
        return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""


class Server(ServiceAccess):
    """One ``longdoc serve`` process (restartable on the same config and data)."""

    def __init__(self, root: Path, database_url: str | None = None, **overrides: dict[str, Any]) -> None:
        self.root = root
        self.data = root / "data"
        self.data.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.admin_token = secrets.token_hex(16)  # 32 characters
        self.config_path = root / "config.yaml"
        self.log_path = root / "server.log"
        self.config = deep_merge({
            "service": {"host": "127.0.0.1", "port": self.port, "admin_token": self.admin_token,
                        "allow_private_callbacks": True, "log_json": True},
            "inference": {"workers": 1, "page_chunk_size": 4, "chunk_overlap": 1},
            "storage": {"url": f"file://{self.data / 'store'}"},
            "database": {"url": database_url or f"sqlite:///{self.data / 'longdoc.db'}"},
        }, overrides)
        self.config_path.write_text(yaml.safe_dump(self.config), encoding="utf-8")
        self.proc: subprocess.Popen | None = None
        #: how this test's own clients check (and present) certificates over https
        self.verify: ssl.SSLContext | bool = True

    # -- process -------------------------------------------------------------

    @property
    def scheme(self) -> str:
        return "https" if self.config["service"].get("tls_certfile") else "http"

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    @property
    def admin_url(self) -> str:
        """The admin listener (``service.admin_port``)."""
        return f"{self.scheme}://{self.config['service'].get('admin_host', '127.0.0.1')}:{self.config['service']['admin_port']}"

    def start(self, wait_ready: bool = True) -> Server:
        assert self.proc is None or self.proc.poll() is not None, "server already running"
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== start {time.strftime('%H:%M:%S')} =====\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "longdoc.cli", "serve", "--config", str(self.config_path)],
                cwd=self.root, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        if self not in _LIVE:
            _LIVE.append(self)
        if wait_ready:
            self.wait_ready()
        return self

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited with {self.proc.returncode} before ready:\n{self.log_tail()}")
            try:
                last = httpx.get(f"{self.url}/readyz", timeout=5, verify=self.verify)
                if last.status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"server not ready after {timeout} s (last: {last and last.text}):\n{self.log_tail()}")

    def kill9(self) -> None:
        """SIGKILL the whole process group (server and its OCR workers)."""
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=STOP_TIMEOUT_S)

    def terminate(self, timeout: float = STOP_TIMEOUT_S) -> int:
        """SIGTERM the server process (as a process manager would) and wait
        for it to exit; returns its exit status. Leftover children are killed."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout)
        finally:
            self._reap_group()
        return rc

    def restart(self) -> Server:
        if self.proc is not None and self.proc.poll() is None:
            self.terminate()
        return self.start()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.terminate()
            except subprocess.TimeoutExpired:
                self.kill9()
        self._reap_group()
        if self in _LIVE:
            _LIVE.remove(self)

    def _reap_group(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self.proc.poll() is None:
            self.proc.wait(timeout=STOP_TIMEOUT_S)

    def log_tail(self, chars: int = LOG_TAIL_CHARS) -> str:
        return self.log_text()[-chars:]

    # -- helpers --------------------------------------------------------------

    def cli(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        """Run ``python -m longdoc.cli ARGS`` (stdout/stderr captured)."""
        return subprocess.run([sys.executable, "-m", "longdoc.cli", *args], capture_output=True, text=True,
                              timeout=timeout, check=check, cwd=self.root)

    def create_key(self, tenant: str, rate_limit: int | None = None, via: str = "api") -> Key:
        """A new API key: through the admin API (``POST /admin/keys`` with the
        admin token, on the admin listener when there is one) while the
        server runs, else (or with ``via="cli"``: not an HTTP request, so
        not in the audit trail) with ``longdoc keys create``, whose last
        line is the key. A key by the CLI costs a process start (~1 s);
        the suite makes about ninety."""
        if via == "api" and self.proc is not None and self.proc.poll() is None:
            base = self.admin_url if self.config["service"].get("admin_port") else self.url
            body: dict[str, Any] = {"tenant": tenant}
            if rate_limit is not None:
                body["rate_limit_per_minute"] = rate_limit
            r = httpx.post(f"{base}/admin/keys", json=body, headers=self.admin_headers(), timeout=60,
                           verify=self.verify)
            assert r.status_code == 201, r.text
            made = r.json()
            assert made["tenant"] == tenant, made
            return Key(key=made["key"], webhook_secret=made["webhook_secret"], id=made["id"], tenant=tenant)
        args = ["keys", "create", "--tenant", tenant, "--config", str(self.config_path)]
        if rate_limit is not None:
            args += ["--rate-limit", str(rate_limit)]
        out = self.cli(*args).stdout.strip().splitlines()
        fields = dict(line.split(": ", 1) for line in out[:-1] if ": " in line)
        assert fields.get("tenant") == tenant, out
        return Key(key=out[-1].strip(), webhook_secret=fields["webhook_secret"], id=fields["id"], tenant=tenant)

    def client(self, key: str | Key, timeout: float = 60, **tls: str) -> LongdocClient:
        """A LongdocClient; ``tls``: its ca_file, cert_file, key_file."""
        return LongdocClient(self.url, key.key if isinstance(key, Key) else key, timeout=timeout, **tls)

    def http(self, key: str | Key | None = None, timeout: float = 60) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=self.key_headers(key), timeout=timeout, verify=self.verify)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for srv in list(_LIVE):
            report.sections.append((f"server log {srv.root.name} (tail)", srv.log_tail()))


# --- PostgreSQL ---------------------------------------------------------------


def database_url(request, backend: str) -> str | None:
    if backend == "sqlite":
        return None
    return request.getfixturevalue("pg_server").create_database()


# --- servers ------------------------------------------------------------------


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """The shared SQLite server with the default test config."""
    srv = Server(tmp_path_factory.mktemp("server-shared")).start()
    yield srv
    srv.stop()


@pytest.fixture
def start_server(request, tmp_path):
    """``start_server(backend="sqlite", start=True, **overrides) -> Server``."""
    started: list[Server] = []

    def start(backend: str = "sqlite", start: bool = True, **overrides: dict[str, Any]) -> Server:
        root = tmp_path / f"server-{len(started)}"
        root.mkdir()
        overrides = deep_merge({"service": {"warmup": False}}, overrides)
        srv = Server(root, database_url(request, backend), **overrides)
        started.append(srv)
        return srv.start() if start else srv

    yield start
    for srv in started:
        srv.stop()


# --- documents ------------------------------------------------------------------


@pytest.fixture(scope="session")
def docs_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("docs")


@pytest.fixture(scope="session")
def report_doc(docs_dir) -> GeneratedDoc:
    """8 born-digital pages: three page groups at chunk 4 / overlap 1."""
    return english_report(docs_dir, pages=8, seed=11)


@pytest.fixture(scope="session")
def long_doc(docs_dir) -> GeneratedDoc:
    """600 born-digital pages (a few seconds of text-layer work)."""
    return long_textlayer(docs_dir, pages=600, seed=5)


@pytest.fixture(scope="session")
def sample_pdf() -> Path:
    return SAMPLE_PDF
