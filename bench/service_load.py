"""The HTTP service under load: submit latency, throughput against the CLI,
memory over many jobs.

Set-up, in a temporary folder: a config (free 127.0.0.1 port, SQLite, local
store, admin token, 2 inference workers, warm-up on, a rate limit no run
reaches), ``longdoc serve`` as a subprocess (``LONGDOC_*`` variables removed
from its environment so the file alone defines the run), a wait for
``/readyz``, and an API key from ``longdoc keys create``.

Documents: born-digital ``tests.docgen.english_report`` PDFs of ``--pages``
pages, one seed each, plus ``--scans`` one-page PNG scans. Every upload has
its own content hash (checked), so idempotency never hands back an existing
job. Every job asks for md, json and txt with ``ocr=auto``.

Phase 1 — ``--clients`` threads, each with its own client, submit
``--per-client`` documents (scans dealt round-robin on top), then long-poll
their jobs. Reported: submit latency (upload to 202) p50/p95/p99, errors by
HTTP status and code (429/503 are retried after ``Retry-After``, at most 5 s,
at most 5 attempts), final job states, and pages/s = pages / (last server
``finished_at`` - first submit). Baseline: one ``longdoc parse`` process over
the same files with the same options and config, all files in one
invocation, run before the server starts so the two never share the CPU
(its time includes the process start). Ratio = service / CLI.

Phase 2 — ``--jobs`` further documents in waves of ``--wave`` (at most the
queue bound ``--max-queued``), each wave finished before the next starts.
The server's tree RSS (server and its worker processes) is sampled every
0.5 s. Reported: RSS when ready, at the start, half-way and end of the
phase, the peak, and the least-squares slope of RSS against jobs finished
over the second half of the phase (the first half warms caches), in MiB per
100 jobs.

Exit status 0; 1 when the server does not get ready, dies, a job does not
succeed, or the CLI baseline fails. Every loop is bounded by a count and by
``--timeout`` (seconds for the whole run).

``--audit-compare N`` instead measures what the access audit trail costs:
N rounds, each starting one server with ``service.audit: false`` and one
with ``true`` (the order alternating from round to round, one server at a
time, each on a fresh database, warm-up off), each given the same load:
phase 1's submits (latency, pages/s), then ``--status-seconds`` of
``--clients`` threads asking ``GET /v1/jobs/{id}`` as fast as they can
(the cheapest audited request, where the trail's share is the largest):
requests/s and latency. Before the servers, in this process: the request
path's share alone (a trivial app bare and inside ``AuditTrail``, µs a
request), and ``--in-process-requests`` ``GET /v1/jobs`` through the real
app with audit off and on (requests/s, same alternation; no socket, so no
network wait hides the CPU the trail costs). Per run it also reports the audit records written
(counted in the database after the server stopped, so the shutdown flush
is included) against the requests made, and
``longdoc_audit_records_dropped_total``. Reported: each run, the median of
each figure with audit off and on, and their ratio (on / off); the spread
of the per-round ratios says how noisy the machine was.

    python bench/service_load.py [--clients 8] [--per-client 4] [--pages 3] [--scans 0]
        [--jobs 300] [--wave 32] [--max-queued 64] [--timeout 3600] [--no-cli]
    python bench/service_load.py --audit-compare 3 [--clients 4] [--per-client 2] [--status-seconds 10]
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import hashlib
import os
import secrets
import shlex
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import httpx
import numpy as np
import psutil
import yaml

from _common import ROOT, RssTrace, TreeRssSampler, mib

from longdoc.client import ClientError, LongdocClient
from tests.docgen import english_report, to_png

LONGDOC = [sys.executable, "-m", "longdoc.cli"]
HOST = "127.0.0.1"
FORMATS = ["md", "json", "txt"]
OPTIONS = {"formats": FORMATS, "ocr": "auto"}
SUBMIT_ATTEMPTS = 5
RETRY_CAP_S = 5.0
RSS_INTERVAL_S = 0.5
SCAN_DPI = 150
SEED_PHASE2, SEED_SCANS = 100_000, 200_000


class BenchFailure(Exception):
    """The run cannot go on (server not ready or dead, CLI failed); the
    message says why."""


# --- documents ---------------------------------------------------------------


@dataclass(frozen=True)
class Doc:
    path: Path
    pages: int


def make_docs(folder: Path, prefix: str, count: int, pages: int, seed0: int, scans: int = 0) -> list[Doc]:
    """``count`` english reports of ``pages`` pages and ``scans`` one-page PNG
    scans, written flat into ``folder`` under unique names (the CLI names its
    outputs by file stem)."""
    folder.mkdir(parents=True, exist_ok=True)
    docs = []
    for i in range(count):
        gen = english_report(folder / f"gen-{prefix}{i}", pages=pages, seed=seed0 + i)
        docs.append(Doc(gen.pdf_path.rename(folder / f"{prefix}{i:04d}.pdf"), pages))
        shutil.rmtree(folder / f"gen-{prefix}{i}")
    for i in range(scans):
        gen = english_report(folder / f"gen-scan{i}", pages=3, seed=SEED_SCANS + i)
        docs.append(Doc(to_png(gen, 1, SCAN_DPI, folder / f"{prefix}scan{i:03d}.png").pdf_path, 1))
        shutil.rmtree(folder / f"gen-scan{i}")
    return docs


def check_distinct(docs: list[Doc]) -> None:
    """Raise BenchFailure when two documents have the same bytes (the server
    would return the first job for the second upload)."""
    seen: dict[str, Path] = {}
    for doc in docs:
        digest = hashlib.sha256(doc.path.read_bytes()).hexdigest()
        if digest in seen:
            raise BenchFailure(f"{doc.path.name} and {seen[digest].name} have the same content")
        seen[digest] = doc.path


# --- server ------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def write_config(work: Path, args: argparse.Namespace, **service: object) -> Path:
    """The run's config in ``work``; ``service``: further ``service.*`` settings."""
    config = {
        "service": {
            "host": HOST, "port": free_port(), "admin_token": secrets.token_urlsafe(32), "warmup": True,
            "rate_limit_per_minute": 1_000_000, "max_queued": args.max_queued, "log_json": True,
            **({"max_concurrency": args.max_concurrency} if args.max_concurrency else {}), **service,
        },
        "inference": {"workers": args.workers},
        "storage": {"url": f"file://{work / 'store'}"},
        "database": {"url": f"sqlite:///{work / 'longdoc.db'}"},
    }
    path = work / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LONGDOC_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


class Server:
    """``longdoc serve`` as a subprocess of this script; its output goes to
    ``serve.log`` in the work folder."""

    def __init__(self, work: Path, config: Path) -> None:
        self.work, self.config = work, config
        port = yaml.safe_load(config.read_text())["service"]["port"]
        self.url = f"http://{HOST}:{port}"
        self.log_path = work / "serve.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> int:
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen([*LONGDOC, "serve", "--config", str(self.config)], cwd=self.work,
                                         stdout=log, stderr=subprocess.STDOUT, env=child_env())
        return self.proc.pid

    def wait_ready(self, timeout: float) -> float:
        """Seconds until ``/readyz`` said 200; BenchFailure when the process
        exits or ``timeout`` passes first."""
        t0 = time.monotonic()
        with httpx.Client(base_url=self.url, timeout=5) as http:
            while time.monotonic() - t0 < timeout:
                if not self.alive():
                    raise BenchFailure(f"the server exited with status {self.proc.returncode} before it was ready")
                try:
                    if http.get("/readyz").status_code == 200:
                        return time.monotonic() - t0
                except httpx.TransportError:
                    pass
                time.sleep(0.25)
        raise BenchFailure(f"the server was not ready after {timeout:.0f} s")

    def create_key(self) -> str:
        done = subprocess.run([*LONGDOC, "keys", "create", "--tenant", "bench", "--config", str(self.config)],
                              cwd=self.work, capture_output=True, text=True, env=child_env(), timeout=120)
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            raise BenchFailure(f"`longdoc keys create` failed ({done.returncode}): {done.stderr.strip()[-500:]}")
        return lines[-1].strip()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 30) -> int | None:
        """SIGTERM, then SIGKILL of the server and its descendants after
        ``timeout`` s. Returns the exit status (None if never started)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            try:
                children = psutil.Process(self.proc.pid).children(recursive=True)
            except psutil.Error:
                children = []
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
            for child in children:
                with contextlib.suppress(psutil.Error):
                    child.kill()
        return self.proc.returncode

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"


# --- load --------------------------------------------------------------------


@dataclass
class Submit:
    """One document's trip: first attempt (epoch s), latency of the accepted
    attempt (s), job id, every error as ``"<status> <code>"``, final job."""

    doc: Doc
    t_first: float | None = None
    latency_s: float | None = None
    job_id: str | None = None
    errors: list[str] = field(default_factory=list)
    final: dict | None = None


def _error(exc: ClientError) -> str:
    return f"{exc.status if exc.status is not None else '-'} {exc.code}"


def _submit(client: LongdocClient, server: Server, rec: Submit, deadline: float) -> None:
    for _ in range(SUBMIT_ATTEMPTS):
        if time.monotonic() > deadline:
            rec.errors.append("- bench_deadline")
            return
        t0 = time.perf_counter()
        if rec.t_first is None:
            rec.t_first = time.time()
        try:
            job = client.submit(rec.doc.path, options=OPTIONS)
        except ClientError as exc:
            rec.errors.append(_error(exc))
            if not exc.retryable or not server.alive():
                return
            time.sleep(min(exc.retry_after_s or 1.0, RETRY_CAP_S))
            continue
        rec.latency_s, rec.job_id = time.perf_counter() - t0, job["id"]
        return


def _client_worker(server: Server, key: str, recs: list[Submit], deadline: float,
                   on_done: Callable[[], None]) -> None:
    """Submit every record's document, then long-poll each job to the end."""
    try:
        with LongdocClient(server.url, key, timeout=60) as client:
            for rec in recs:
                _submit(client, server, rec, deadline)
            for rec in recs:
                if rec.job_id is None:
                    continue
                try:
                    rec.final = client.wait(rec.job_id, timeout=max(1.0, deadline - time.monotonic()))
                except ClientError as exc:
                    rec.errors.append(_error(exc))
                on_done()
    except Exception as exc:  # a bench bug must show in the report, not vanish with the thread
        recs[-1].errors.append(f"- bench_{type(exc).__name__}")


def run_batch(server: Server, key: str, docs: list[Doc], clients: int, deadline: float,
              on_done: Callable[[], None] = lambda: None) -> list[Submit]:
    """``docs`` dealt round-robin over ``clients`` threads; returns a record
    per document once every thread is done (or the deadline passed)."""
    slots = [[Submit(d) for d in docs[i::clients]] for i in range(clients)]
    threads = [threading.Thread(target=_client_worker, args=(server, key, s, deadline, on_done), daemon=True)
               for s in slots if s]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()) + 30)
    return [r for s in slots for r in s]


def _finished_epoch(job: dict) -> float | None:
    value = job.get("finished_at")
    return datetime.fromisoformat(value).timestamp() if value else None


@dataclass
class LoadStats:
    latencies_ms: list[float]
    errors: Counter
    states: Counter
    reused: int
    pages: int
    seconds: float | None

    @classmethod
    def of(cls, recs: list[Submit]) -> LoadStats:
        errors = Counter(e for r in recs for e in r.errors)
        states = Counter((r.final or {}).get("state", "not finished") if r.job_id else "not submitted"
                         for r in recs)
        ids = [r.job_id for r in recs if r.job_id]
        done = [r.final for r in recs if r.final and r.final.get("state") in ("succeeded", "partial")]
        ends = [e for e in (_finished_epoch(j) for j in done) if e is not None]
        starts = [r.t_first for r in recs if r.t_first is not None]
        seconds = max(ends) - min(starts) if ends and starts else None
        return cls([r.latency_s * 1000 for r in recs if r.latency_s is not None], errors, states,
                   len(ids) - len(set(ids)), sum(j.get("pages_total") or 0 for j in done), seconds)

    @property
    def pages_per_s(self) -> float | None:
        return self.pages / self.seconds if self.seconds else None

    @property
    def all_succeeded(self) -> bool:
        return set(self.states) == {"succeeded"} and self.reused == 0


# --- CLI baseline --------------------------------------------------------------


def cli_baseline(work: Path, config: Path, docs: list[Doc], timeout: float) -> tuple[float, int]:
    """One ``longdoc parse`` over every document (same options and config):
    ``(seconds, peak tree RSS)``. BenchFailure on a non-zero exit."""
    cmd = [*LONGDOC, "parse", *(str(d.path) for d in docs), "-o", str(work / "cli-out"), "-q",
           "--format", ",".join(FORMATS), "--ocr", OPTIONS["ocr"], "--config", str(config)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=child_env())
    with TreeRssSampler(proc.pid) as sampler:
        try:
            _, err = proc.communicate(timeout=max(1.0, timeout))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise BenchFailure("`longdoc parse` baseline ran past --timeout") from None
    if proc.returncode != 0:
        raise BenchFailure(f"`longdoc parse` baseline exited {proc.returncode}: {err.decode(errors='replace')[-500:]}")
    return time.perf_counter() - t0, sampler.peak


# --- phase 2 memory ----------------------------------------------------------


class DoneLog:
    """Thread-safe count of finished jobs with the monotonic time of each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.times: list[float] = []

    def tick(self) -> None:
        with self._lock:
            self.times.append(time.monotonic())

    def count_at(self, t: float) -> int:
        return bisect.bisect_right(self.times, t)


def rss_at(samples: list[tuple[float, int]], t: float) -> int | None:
    """The last sample at or before ``t`` (the first one if none is)."""
    if not samples:
        return None
    i = bisect.bisect_right([s[0] for s in samples], t)
    return samples[max(0, i - 1)][1]


def slope_mib_per_100(samples: list[tuple[float, int]], done: DoneLog,
                      t_from: float, t_to: float) -> tuple[float | None, int]:
    """Least-squares slope of RSS (MiB) against jobs finished, over the
    samples in [t_from, t_to], scaled to 100 jobs; ``(None, n)`` when the
    samples do not span two job counts."""
    pts = [(done.count_at(t), rss / 2**20) for t, rss in samples if t_from <= t <= t_to]
    if len({x for x, _ in pts}) < 2:
        return None, len(pts)
    x, y = np.array(pts, dtype=float).T
    return float(np.polyfit(x, y, 1)[0]) * 100, len(pts)


def phase2(server: Server, key: str, docs: list[Doc], clients: int, wave: int, deadline: float,
           done: DoneLog) -> tuple[list[Submit], float, float]:
    """Waves of at most ``wave`` jobs, each waited for; returns the records
    and the phase's monotonic start and end."""
    recs: list[Submit] = []
    t0 = time.monotonic()
    for i in range(0, len(docs), wave):
        if time.monotonic() > deadline or not server.alive():
            break
        recs += run_batch(server, key, docs[i:i + wave], min(clients, wave), deadline, done.tick)
    return recs, t0, time.monotonic()


# --- report ------------------------------------------------------------------


def _pct(values: list[float], q: float) -> str:
    return f"{np.percentile(values, q):.0f} ms" if values else "n/a"


def _rate(pages: int, seconds: float | None) -> str:
    return f"{pages} pages / {seconds:.1f} s = {pages / seconds:.2f} pages/s" if seconds else "n/a"


def _counts(c: Counter) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(c.items())) or "none"


def row(label: str, value: str) -> None:
    print(f"  {label:<26}{value}")


def report_phase1(stats: LoadStats, cli: tuple[float, int] | None, cli_pages: int) -> None:
    row("submit latency p50", _pct(stats.latencies_ms, 50))
    row("submit latency p95", _pct(stats.latencies_ms, 95))
    row("submit latency p99", _pct(stats.latencies_ms, 99))
    row("submits accepted", f"{len(stats.latencies_ms)} (existing job returned: {stats.reused})")
    row("errors (status code)", _counts(stats.errors))
    row("job states", _counts(stats.states))
    row("service", _rate(stats.pages, stats.seconds))
    if cli is None:
        row("CLI (1 process)", "skipped (--no-cli)")
        return
    row("CLI (1 process)", f"{_rate(cli_pages, cli[0])}, peak {mib(cli[1])}")
    service, baseline = stats.pages_per_s, cli_pages / cli[0]
    row("ratio service/CLI", f"{service / baseline:.2f}" if service else "n/a")


def report_phase2(stats: LoadStats, trace: RssTrace, done: DoneLog, marks: dict[str, float],
                  t0: float, t1: float) -> None:
    half = done.times[len(done.times) // 2 - 1] if len(done.times) >= 2 else None
    row("jobs", f"{len(done.times)} finished; states {_counts(stats.states)}")
    row("errors (status code)", _counts(stats.errors))
    row("service", _rate(stats.pages, stats.seconds))
    for label, t in [("RSS when ready", marks["ready"]), ("RSS at phase 2 start", t0),
                     ("RSS half-way", half), ("RSS at end", t1)]:
        rss = rss_at(trace.samples, t) if t is not None else None
        row(label, mib(rss) if rss is not None else "n/a")
    row("RSS peak (whole run)", mib(trace.peak))
    slope, n = slope_mib_per_100(trace.samples, done, half, t1) if half is not None else (None, 0)
    row("RSS slope, second half", f"{slope:+.1f} MiB per 100 jobs ({n} samples)" if slope is not None
        else f"n/a ({n} samples)")


# --- the audit trail's cost ------------------------------------------------------


@dataclass
class AuditRun:
    """One server's figures in ``--audit-compare``."""

    audit: bool
    submit_p50_ms: float
    pages_per_s: float
    status_per_s: float
    status_p50_ms: float
    status_p95_ms: float
    requests: int
    records: int
    dropped: float


def status_load(url: str, key: str, job_id: str, clients: int, seconds: float) -> tuple[int, list[float]]:
    """``clients`` threads asking ``GET /v1/jobs/{job_id}`` back to back for
    ``seconds``: ``(answers, latencies in ms)``; BenchFailure on an answer
    other than 200."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    failures: list[str] = []
    stop = time.monotonic() + seconds

    def ask(mine: list[float]) -> None:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
            while time.monotonic() < stop and not failures:
                t0 = time.perf_counter()
                r = http.get(f"/v1/jobs/{job_id}")
                mine.append((time.perf_counter() - t0) * 1000)
                if r.status_code != 200:
                    failures.append(f"{r.status_code} {r.text[:200]}")

    threads = [threading.Thread(target=ask, args=(mine,), daemon=True) for mine in latencies]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 60)
    if failures:
        raise BenchFailure(f"status requests failed: {failures[0]}")
    flat = [x for mine in latencies for x in mine]
    return len(flat), flat


def dropped_records(url: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=30).text
    return next((float(line.split()[-1]) for line in text.splitlines()
                 if line.startswith("longdoc_audit_records_dropped_total ")), 0.0)


def audit_run(work: Path, args: argparse.Namespace, docs: list[Doc], audit: bool, deadline: float) -> AuditRun:
    """One server with ``service.audit: audit`` under phase 1's submits, then the status load."""
    work.mkdir(parents=True)
    server = Server(work, write_config(work, args, audit=audit, warmup=False))
    server.start()
    try:
        server.wait_ready(min(args.ready_timeout, deadline - time.monotonic()))
        key = server.create_key()
        recs = run_batch(server, key, docs, args.clients, deadline)
        stats = LoadStats.of(recs)
        if not stats.all_succeeded:
            raise BenchFailure(f"not every job succeeded: {_counts(stats.states)}; errors {_counts(stats.errors)}")
        answers, latencies = status_load(server.url, key, recs[0].job_id, args.clients, args.status_seconds)
        dropped = dropped_records(server.url)
    finally:
        server.stop()
    with sqlite3.connect(work / "longdoc.db") as db:
        records = db.execute("SELECT COUNT(*) FROM audit_events").fetchone()[0]
    return AuditRun(audit, float(np.percentile(stats.latencies_ms, 50)), stats.pages_per_s or 0.0,
                    answers / args.status_seconds, float(np.percentile(latencies, 50)),
                    float(np.percentile(latencies, 95)), answers + len(recs), records, dropped)


def report_audit(runs: list[AuditRun]) -> None:
    print(f"\n  {'run':<10}{'submit p50':>12}{'pages/s':>10}{'status/s':>10}{'p50':>9}{'p95':>9}"
          f"{'records':>9}{'dropped':>9}")
    for i, r in enumerate(runs):
        print(f"  {i // 2 + 1}: {'on' if r.audit else 'off':<7}{r.submit_p50_ms:>9.1f} ms{r.pages_per_s:>10.2f}"
              f"{r.status_per_s:>10.1f}{r.status_p50_ms:>6.2f} ms{r.status_p95_ms:>6.2f} ms{r.records:>9}"
              f"{r.dropped:>9.0f}")
    figures = [("submit latency p50", "submit_p50_ms"), ("pages/s", "pages_per_s"),
               ("status requests/s", "status_per_s"), ("status latency p50", "status_p50_ms"),
               ("status latency p95", "status_p95_ms")]
    print("\n  medians, ratio on/off (per-round ratios: min … max)")
    for label, attr in figures:
        off = [getattr(r, attr) for r in runs if not r.audit]
        on = [getattr(r, attr) for r in runs if r.audit]
        rounds = [b / a for a, b in zip(off, on, strict=True) if a]
        print(f"  {label:<22}off {statistics.median(off):9.2f}   on {statistics.median(on):9.2f}   "
              f"ratio {statistics.median(on) / statistics.median(off):.3f}   ({min(rounds):.3f} … {max(rounds):.3f})")
    on_runs = [r for r in runs if r.audit]
    print(f"  audit records written  {sum(r.records for r in on_runs)} (at least the {sum(r.requests for r in on_runs)}"
          f" submits and status requests of the load, plus the polls), dropped "
          f"{sum(r.dropped for r in on_runs):.0f}")


def middleware_cost_us(n: int = 20_000, repeats: int = 5) -> tuple[float, float]:
    """The request path's share of the trail, in this process: µs per
    request of a trivial ASGI app answering an audited route, bare and
    inside :class:`AuditTrail` (its record queued to a writer whose
    database is a no-op), best of ``repeats`` × ``n``."""
    import asyncio
    import types

    from longdoc.audit.middleware import AuditTrail
    from longdoc.audit.trail import AuditWriter

    class NoDatabase:
        def add_many(self, records: list) -> None:
            pass

    writer = AuditWriter(NoDatabase(), queue_size=n * repeats + 1).start()  # type: ignore[arg-type]
    app = types.SimpleNamespace(state=types.SimpleNamespace(container=types.SimpleNamespace(audit=writer)))
    route = types.SimpleNamespace(path="/v1/jobs/{job_id}")

    async def answer(scope, receive, send) -> None:
        scope["state"].update(tenant="t", audit_key_id="k")
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def nothing(message=None) -> dict:
        return {"type": "http.request"}

    async def per_request(asgi) -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            scope = {"type": "http", "method": "GET", "path": "/v1/jobs/abc", "app": app, "route": route,
                     "client": ("127.0.0.1", 1), "headers": [(b"authorization", b"Bearer x")],
                     "path_params": {"job_id": "abc"}, "state": {}}
            await asgi(scope, nothing, nothing)
        return (time.perf_counter() - t0) / n * 1e6

    async def measure() -> tuple[float, float]:
        bare, audited = [], []
        for _ in range(repeats):
            bare.append(await per_request(answer))
            audited.append(await per_request(AuditTrail(answer)))
        return min(bare), min(audited)

    try:
        return asyncio.run(measure())
    finally:
        writer.close()


def in_process_per_s(work: Path, audit: bool, n: int) -> float:
    """Requests/s of ``n`` ``GET /v1/jobs`` one after another, through the
    real app in this process (:class:`tests.api.harness.InProcessServer`:
    the routes, container and database of ``longdoc serve``, no socket),
    with ``service.audit: audit``. No socket means no network wait: the
    CPU the trail costs (request path and writer thread) shows whole."""
    from tests.api.harness import InProcessServer

    srv = InProcessServer(work, service={"audit": audit, "rate_limit_per_minute": 1_000_000}).start()
    try:
        key = srv.create_key("bench")
        with srv.http(key) as http:
            http.get("/v1/jobs")
            t0 = time.perf_counter()
            for _ in range(n):
                if http.get("/v1/jobs").status_code != 200:
                    raise BenchFailure("GET /v1/jobs failed in process")
            return n / (time.perf_counter() - t0)
    finally:
        srv.stop()


def audit_compare(args: argparse.Namespace) -> int:
    deadline = time.monotonic() + args.timeout
    print(f"$ python {shlex.join(sys.argv)}")
    with tempfile.TemporaryDirectory(prefix="longdoc-audit-") as tmp:
        work = Path(tmp)
        docs = make_docs(work / "docs", "a-", args.clients * args.per_client, args.pages, 0, args.scans)
        check_distinct(docs)
        print(f"load per server: {len(docs)} submits by {args.clients} clients ({args.pages} pages each), then "
              f"{args.status_seconds:.0f} s of GET /v1/jobs/{{id}} by {args.clients} clients; "
              f"{args.audit_compare} rounds of audit off and on")
        bare, audited = middleware_cost_us()
        print(f"request path, in process: {bare:.1f} µs bare, {audited:.1f} µs inside AuditTrail: "
              f"+{audited - bare:.1f} µs a request")
        in_process: dict[bool, list[float]] = {False: [], True: []}
        for r in range(args.audit_compare):
            for audit in ((False, True) if r % 2 == 0 else (True, False)):
                in_process[audit].append(in_process_per_s(work / f"inproc{r}-{audit}", audit, args.in_process_requests))
        ratios = [b / a for a, b in zip(in_process[False], in_process[True], strict=True)]
        print(f"real app in process, {args.in_process_requests} GET /v1/jobs a run: off "
              f"{statistics.median(in_process[False]):.0f}/s, on {statistics.median(in_process[True]):.0f}/s, "
              f"ratio {statistics.median(in_process[True]) / statistics.median(in_process[False]):.3f} "
              f"(per round {min(ratios):.3f} … {max(ratios):.3f})", flush=True)
        runs = []
        try:
            for r in range(args.audit_compare):
                for audit in ((False, True) if r % 2 == 0 else (True, False)):
                    runs.append(audit_run(work / f"round{r}-{'on' if audit else 'off'}", args, docs, audit, deadline))
                    print(f"  round {r + 1}, audit {'on' if audit else 'off'}: done", flush=True)
        except BenchFailure as exc:
            print(f"\nFAILED: {exc}", file=sys.stderr)
            return 1
        report_audit([run for i in range(0, len(runs), 2) for run in sorted(runs[i:i + 2], key=lambda x: x.audit)])
    return 0


# --- main --------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=8, help="concurrent client threads")
    ap.add_argument("--per-client", type=int, default=4, help="documents each client submits in phase 1")
    ap.add_argument("--pages", type=int, default=3, help="pages per generated report (>= 3)")
    ap.add_argument("--scans", type=int, default=0, help="one-page PNG scans added to phase 1 (OCR)")
    ap.add_argument("--jobs", type=int, default=300, help="jobs in phase 2 (0 skips it)")
    ap.add_argument("--wave", type=int, default=32, help="phase 2 jobs in flight at once (<= --max-queued)")
    ap.add_argument("--max-queued", type=int, default=64, help="service.max_queued")
    ap.add_argument("--max-concurrency", type=int, default=0, help="service.max_concurrency (0: its default)")
    ap.add_argument("--workers", type=int, default=2, help="inference.workers")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds for the whole run")
    ap.add_argument("--ready-timeout", type=float, default=300, help="seconds to wait for /readyz")
    ap.add_argument("--no-cli", action="store_true", help="skip the CLI baseline")
    ap.add_argument("--audit-compare", type=int, default=0, metavar="N",
                    help="measure the audit trail instead: N rounds of a server with service.audit off and on")
    ap.add_argument("--status-seconds", type=float, default=10.0, help="--audit-compare: seconds of status requests")
    ap.add_argument("--in-process-requests", type=int, default=2000,
                    help="--audit-compare: requests per in-process run")
    args = ap.parse_args()
    if min(args.clients, args.per_client, args.wave, args.max_queued, args.workers) < 1 or args.pages < 3 \
            or args.scans < 0 or args.jobs < 0:
        ap.error("counts must be positive (--pages >= 3; --scans, --jobs >= 0)")
    if args.wave > args.max_queued:
        ap.error("--wave must not exceed --max-queued (the queue bound)")
    return args


def main() -> int:
    args = parse_args()
    if args.audit_compare:
        return audit_compare(args)
    deadline = time.monotonic() + args.timeout
    print(f"$ python {shlex.join(sys.argv)}")
    with tempfile.TemporaryDirectory(prefix="longdoc-load-") as tmp:
        work = Path(tmp)
        config = write_config(work, args)
        t = time.perf_counter()
        docs1 = make_docs(work / "docs", "p1-", args.clients * args.per_client, args.pages, 0, args.scans)
        docs2 = make_docs(work / "docs", "p2-", args.jobs, args.pages, SEED_PHASE2)
        check_distinct(docs1 + docs2)
        pages1 = sum(d.pages for d in docs1)
        print(f"documents: phase 1 {len(docs1)} ({args.clients}x{args.per_client} reports of {args.pages} pages"
              f" + {args.scans} scans = {pages1} pages), phase 2 {len(docs2)} reports"
              f" (generated in {time.perf_counter() - t:.1f} s)")
        print(f"server: workers {args.workers}, max_queued {args.max_queued}, max_concurrency "
              f"{args.max_concurrency or 'default'}, options {OPTIONS}")
        cli = None if args.no_cli else cli_baseline(work, config, docs1, deadline - time.monotonic())
        server = Server(work, config)
        trace = RssTrace(server.start(), RSS_INTERVAL_S)
        try:
            with trace:
                ready_s = server.wait_ready(min(args.ready_timeout, deadline - time.monotonic()))
                marks = {"ready": time.monotonic()}
                key = server.create_key()
                print(f"server ready in {ready_s:.1f} s at {server.url}")
                recs1 = run_batch(server, key, docs1, args.clients, deadline)
                stats1 = LoadStats.of(recs1)
                print(f"\nphase 1: {args.clients} clients x {args.per_client} submits (+{args.scans} scans)")
                report_phase1(stats1, cli, pages1)
                ok = stats1.all_succeeded
                if docs2 and server.alive():
                    done = DoneLog()
                    recs2, t0, t1 = phase2(server, key, docs2, args.clients, args.wave, deadline, done)
                    stats2 = LoadStats.of(recs2)
                    print(f"\nphase 2: {args.jobs} jobs in waves of {args.wave}, tree RSS every {RSS_INTERVAL_S} s")
                    report_phase2(stats2, trace, done, marks, t0, t1)
                    ok = ok and stats2.all_succeeded and len(recs2) == len(docs2)
                alive = server.alive()
        except BenchFailure as exc:
            print(f"\nFAILED: {exc}\n--- server log (tail) ---\n{server.log_tail()}", file=sys.stderr)
            server.stop()
            return 1
        finally:
            rc = server.stop()
        if not alive:
            print(f"\nFAILED: the server died during the run (exit {rc})\n--- server log (tail) ---\n"
                  f"{server.log_tail()}", file=sys.stderr)
            return 1
        if not ok:
            print("\nFAILED: not every job succeeded (see states and errors above)", file=sys.stderr)
            return 1
        how = signal.Signals(-rc).name if rc is not None and rc < 0 else f"exit status {rc}"
        print(f"\nserver stopped ({how}); run finished")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchFailure as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        sys.exit(1)
