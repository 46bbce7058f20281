"""The Celery fleet against the embedded mode, on this machine, in one run.

Every mode runs on the same documents with the same config file apart from
``queue``: a throwaway PostgreSQL database (``$LONGDOC_TEST_PG_URL``,
default 127.0.0.1:5432, user postgres) per mode, a local folder store
(``file://``; S3 is not what is measured), fresh data folders,
``inference.page_chunk_size`` 16 / ``chunk_overlap`` 1, every other
``inference`` setting at its default (``workers`` 0 = one OCR process per
core, in the server or in each worker process), ``service.warmup: false``
for every mode (the first OCR page of each process loads the engine, in
the measured time), a rate limit and queue bound no run reaches. The fleet
gets a private ``redis-server --save '' --appendonly no`` on a free port
per mode and ``longdoc worker --queues cpu,engine,short --concurrency 1``
processes; its API is ``longdoc serve`` with ``queue.backend: celery``.
Every process is started in its own session and its process group is
killed at the end.

1. Throughput: ``--long`` born-digital documents of ``--long-pages`` pages
   (``tests.docgen.long_textlayer``: long lane, page groups spread over
   workers) and ``--scans`` image-only PDFs of ``--scan-pages`` pages at
   ``--scan-dpi`` (``english_report`` rasterized: real OCR; short lane,
   one task each), submitted all at once (8 client threads, multipart
   ``file`` + ``options``) to embedded ``longdoc serve`` (defaults:
   ``service.max_concurrency`` 16) and to fleets of 1, 2 and 4 worker
   processes. pages/s = pages / (last server ``finished_at`` - first
   submit); ratio = mode / embedded. Also printed: how busy the machine and
   the run's own processes kept the cores (others' load on a shared machine
   shows as the difference) and the run's CPU time per page.
   ``--rounds N`` repeats the modes, order reversed every other round, and
   reports each mode's best round.
2. Queue wait per job: ``started_at - created_at`` from ``GET
   /v1/jobs/{id}``, p50 / p95 per mode (same jobs as 1); ratio of p95s.
3. Worker RSS: the 2-worker fleet runs ``--small-jobs`` small jobs (1-2
   page born-digital documents, every ``--small-scan-every``-th a one-page
   PNG scan, all distinct pages of one generated document), all submitted
   at once; every 2 s the RSS of each worker's pool child (the process that
   runs tasks), of its largest process, and of its whole tree (``longdoc
   worker``, pool child, sandboxes, OCR processes; RSS and PSS) is read.
   Printed per worker: before the first job, after 10 % of the jobs, peak,
   last, and last / after-10 % (flat memory: about 1.0); and jobs/s.

Exit status 1 (with log tails) when a process does not start or dies, a
job does not succeed, or the run passes ``--timeout``.

    python bench/fleet.py [--quick] [--json OUT] [--fleets 1,2,4] [--long 4] [--long-pages 150]
        [--scans 3] [--scan-pages 8] [--scan-dpi 100] [--small-jobs 300] [--small-scan-every 10]
        [--rounds 1] [--timeout 900]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import httpx
import numpy as np
import psutil
import pypdfium2 as pdfium
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from _common import ROOT, mib  # noqa: F401  (ROOT puts the repo on sys.path)

from longdoc.engines.backends import cpu_model
from tests.docgen import english_report, long_textlayer, rasterize, to_png
from tests.pg import PG_ADMIN_URL, PgServer
from tests.runner.conftest import REDIS_SERVER, Redis  # the tests' private redis-server
from tests.service.conftest import Server

for _name in [k for k in os.environ if k.startswith("LONGDOC_")]:
    del os.environ[_name]  # the config file alone defines every process of the run

QUEUES = "cpu,engine,short"
CHUNK, OVERLAP = 16, 1
OPTIONS = {"formats": ["md", "json", "txt"], "ocr": "auto"}
TERMINAL = {"succeeded", "partial", "failed", "cancelled", "expired"}
SUBMIT_THREADS = 8
POLL_S = 1.0
RSS_INTERVAL_S = 2.0
RSS_WORKERS = 2


class BenchFailure(Exception):
    """The run cannot go on; the message says why."""


# --- documents -------------------------------------------------------------------


@dataclass(frozen=True)
class Doc:
    path: Path
    pages: int
    kind: str  # "text" or "scan"


def make_workload(folder: Path, args: argparse.Namespace) -> list[Doc]:
    """Long born-digital documents and multi-page scans, interleaved (long,
    scan, long, scan, ...) in submission order."""
    longs, scans = [], []
    for i in range(args.long):
        gen = long_textlayer(folder / f"gen-long{i}", pages=args.long_pages, seed=1000 + i)
        longs.append(Doc(gen.pdf_path.rename(folder / f"long{i}.pdf"), args.long_pages, "text"))
    for i in range(args.scans):
        gen = english_report(folder / f"gen-scan{i}", pages=args.scan_pages, seed=2000 + i)
        out = rasterize(gen, args.scan_dpi, folder / f"scan{i}.pdf")
        scans.append(Doc(out.pdf_path, args.scan_pages, "scan"))
    docs = []
    for i in range(max(len(longs), len(scans))):
        docs += longs[i:i + 1] + scans[i:i + 1]
    return docs


def make_small(folder: Path, count: int, scan_every: int) -> list[Doc]:
    """``count`` small jobs: 1-2 page born-digital documents and, every
    ``scan_every``-th, a one-page PNG scan at 100 dpi; all cut from one
    ``long_textlayer`` document (each page its own "Record n.")."""
    folder.mkdir(parents=True, exist_ok=True)
    kinds = ["scan" if scan_every and i % scan_every == scan_every - 1 else "text" for i in range(count)]
    sizes = [1 if k == "scan" else 1 + i % 2 for i, k in enumerate(kinds)]
    gen = long_textlayer(folder / "gen", pages=max(1, sum(sizes)), seed=4000)
    docs, next_page = [], 0
    with pdfium.PdfDocument(str(gen.pdf_path)) as src:
        for i, (kind, pages) in enumerate(zip(kinds, sizes)):
            if kind == "scan":
                out = to_png(gen, next_page + 1, 100, folder / f"small{i:04d}.png").pdf_path
            else:
                out = folder / f"small{i:04d}.pdf"
                part = pdfium.PdfDocument.new()
                part.import_pages(src, list(range(next_page, next_page + pages)))
                part.save(str(out))
                part.close()
            next_page += pages
            docs.append(Doc(out, pages, kind))
    shutil.rmtree(folder / "gen")
    return docs


def check_distinct(docs: list[Doc]) -> None:
    """Two uploads of the same bytes and options would be one job."""
    seen: dict[str, Path] = {}
    for doc in docs:
        digest = hashlib.sha256(doc.path.read_bytes()).hexdigest()
        if digest in seen:
            raise BenchFailure(f"{doc.path.name} and {seen[digest].name} have the same content")
        seen[digest] = doc.path


# --- processes ---------------------------------------------------------------------


def kill_group(proc: subprocess.Popen | None, grace_s: float = 20) -> None:
    """SIGTERM the process, wait up to ``grace_s``, then SIGKILL its whole
    process group (it was started in a session of its own)."""
    if proc is None:
        return
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace_s)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.poll() is None:
        proc.wait(30)


class Worker:
    """One ``longdoc worker`` process (its own session)."""

    def __init__(self, root: Path, config: Path, name: str) -> None:
        self.root, self.config, self.name = root, config, name
        self.log_path = root / f"{name}.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> Worker:
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "longdoc.cli", "worker", "--config", str(self.config), "--queues", QUEUES,
                 "--concurrency", "1", "--name", f"{self.name}@bench"],
                cwd=self.root, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def wait_ready(self, deadline: float) -> None:
        while " ready." not in self.log_text():
            if self.proc.poll() is not None:
                raise BenchFailure(f"worker {self.name} exited ({self.proc.returncode}):\n{self.log_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise BenchFailure(f"worker {self.name} not ready:\n{self.log_text()[-3000:]}")
            time.sleep(0.1)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        kill_group(self.proc)

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""


class Stack:
    """Embedded (``workers`` 0): one ``longdoc serve``. Fleet: Redis, the
    API and ``workers`` worker processes. A fresh database and folders."""

    def __init__(self, root: Path, pg: PgServer, workers: int, max_queued: int) -> None:
        self.root, self.n_workers = root, workers
        (root / "api").mkdir(parents=True)
        self.redis = Redis(root) if workers else None
        overrides: dict = {
            "service": {"warmup": False, "rate_limit_per_minute": 1_000_000, "max_queued": max_queued,
                        "work_dir": str(root / "work")},
            "inference": {"workers": 0, "page_chunk_size": CHUNK, "chunk_overlap": OVERLAP},
        }
        if workers:
            overrides["queue"] = {"backend": "celery", "broker_url": self.redis.url}
        url = pg.create_database()
        self.database = make_url(url).database
        self.api = Server(root / "api", url, **overrides)
        self.workers = [Worker(root, self.api.config_path, f"w{i + 1}") for i in range(workers)]

    @property
    def name(self) -> str:
        return f"fleet, {self.n_workers} worker{'s' if self.n_workers > 1 else ''}" if self.n_workers else "embedded"

    def start(self, timeout: float) -> float:
        """Start everything; seconds until the API and every worker were ready."""
        t0 = time.monotonic()
        if self.redis:
            self.redis.start()
        try:
            self.api.start(wait_ready=False)
            self.api.wait_ready(timeout)
        except AssertionError as exc:
            raise BenchFailure(str(exc)) from None
        for w in self.workers:
            w.start()
        for w in self.workers:
            w.wait_ready(time.monotonic() + timeout)
        return time.monotonic() - t0

    def check_alive(self) -> None:
        if self.api.proc is None or self.api.proc.poll() is not None:
            raise BenchFailure(f"the API exited during the run:\n{self.api.log_tail(3000)}")
        for w in self.workers:
            if not w.alive():
                raise BenchFailure(f"worker {w.name} exited during the run:\n{w.log_text()[-3000:]}")

    def logs(self) -> str:
        parts = [f"--- {self.api.log_path} ---\n{self.api.log_tail(2000)}"]
        parts += [f"--- {w.log_path} ---\n{w.log_text()[-2000:]}" for w in self.workers]
        return "\n".join(parts)

    def stop(self) -> None:
        for w in self.workers:
            w.stop()
        self.api.stop()
        if self.redis:
            self.redis.stop()


# --- CPU -------------------------------------------------------------------------------


def _cpu_s(p: psutil.Process) -> float:
    t = p.cpu_times()
    return t.user + t.system + t.children_user + t.children_system


def run_cpu(database: str) -> dict[tuple[int, float], float]:
    """CPU seconds so far of the run's processes: every descendant of this
    script (server or API, workers, Redis, and through ``children_*`` their
    children that ended) and the PostgreSQL backends of ``database``; keyed
    by (pid, start time)."""
    out: dict[tuple[int, float], float] = {}
    me = psutil.Process()
    procs = me.children(recursive=True)
    for p in psutil.process_iter(["cmdline"]):
        if database in " ".join(p.info["cmdline"] or ()):
            procs.append(p)
    for p in procs:
        with contextlib.suppress(psutil.Error):
            out[(p.pid, p.create_time())] = _cpu_s(p)
    t = me.cpu_times()
    out[(0, 0.0)] = t.children_user + t.children_system  # this script's ended children
    return out


def cpu_delta(before: dict[tuple[int, float], float], after: dict[tuple[int, float], float]) -> float:
    """CPU seconds the run's processes used between two :func:`run_cpu` snapshots."""
    return sum(v - before.get(k, 0.0) for k, v in after.items())


# --- jobs ---------------------------------------------------------------------------


def _epoch(value: str | None) -> float | None:
    return datetime.fromisoformat(value).timestamp() if value else None


@dataclass
class Batch:
    """A set of jobs submitted at once and followed to their end."""

    t_first: float = 0.0  # epoch of the first submit
    ids: list[str] = field(default_factory=list)
    jobs: dict[str, dict] = field(default_factory=dict)  # final GET /v1/jobs/{id}
    window_s: float = 0.0  # first submit to every job seen terminal
    cpu_busy_s: float = 0.0  # machine-wide CPU seconds not idle over that window (all cores)
    cpu_run_s: float = 0.0  # of which the run's own processes (:func:`run_cpu`)

    @property
    def pages(self) -> int:
        return sum(j.get("pages_total") or 0 for j in self.jobs.values())

    @property
    def seconds(self) -> float:
        return max(_epoch(j["finished_at"]) for j in self.jobs.values()) - self.t_first

    def waits(self) -> list[float]:
        return [_epoch(j["started_at"]) - _epoch(j["created_at"]) for j in self.jobs.values()]

    def latencies(self) -> list[float]:
        return [_epoch(j["finished_at"]) - _epoch(j["created_at"]) for j in self.jobs.values()]

    def finished_epochs(self) -> list[float]:
        return sorted(_epoch(j["finished_at"]) for j in self.jobs.values())


def _busy(t) -> float:
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


def run_batch(stack: Stack, key: str, docs: list[Doc], deadline: float) -> Batch:
    """Submit every document at once, wait until every job is terminal;
    BenchFailure unless every job succeeded."""
    batch = Batch()
    bodies = [(d.path.name, d.path.read_bytes()) for d in docs]
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=stack.api.url, headers=headers, timeout=120,
                      limits=httpx.Limits(max_connections=SUBMIT_THREADS)) as http:
        def submit(body: tuple[str, bytes]) -> str:
            r = http.post("/v1/jobs", files={"file": (body[0], body[1], "application/octet-stream")},
                          data={"options": json.dumps(OPTIONS)})
            if r.status_code != 202:
                raise BenchFailure(f"submit of {body[0]} answered {r.status_code}: {r.text[:300]}")
            return r.json()["id"]

        run0 = run_cpu(stack.database)
        cpu0, batch.t_first = psutil.cpu_times(), time.time()
        with ThreadPoolExecutor(SUBMIT_THREADS) as pool:
            batch.ids = list(pool.map(submit, bodies))
        if len(set(batch.ids)) != len(batch.ids):
            raise BenchFailure("two uploads became one job (deduplication)")
        while len(batch.jobs) < len(batch.ids):
            # two cheap questions a second (is any job queued? running?) until none is, then every job once
            while True:
                if time.monotonic() > deadline:
                    raise BenchFailure("the run passed --timeout")
                stack.check_alive()
                busy = any(http.get("/v1/jobs", params={"state": s, "limit": 1}).raise_for_status().json()["items"]
                           for s in ("queued", "running"))
                if not busy:
                    break
                time.sleep(POLL_S)
            for job_id in batch.ids:
                if job_id not in batch.jobs:
                    job = http.get(f"/v1/jobs/{job_id}").raise_for_status().json()
                    if job["state"] in TERMINAL:
                        batch.jobs[job_id] = job
        batch.window_s, batch.cpu_busy_s = time.time() - batch.t_first, _busy(psutil.cpu_times()) - _busy(cpu0)
        batch.cpu_run_s = cpu_delta(run0, run_cpu(stack.database))
    bad = [j for j in batch.jobs.values() if j["state"] != "succeeded"]
    if bad:
        raise BenchFailure(f"{len(bad)} of {len(batch.ids)} jobs did not succeed, e.g. {bad[0]['filename']}: "
                           f"{bad[0]['state']} {bad[0].get('error')}")
    return batch


# --- RSS ------------------------------------------------------------------------------


@dataclass
class RssSample:
    t: float      # epoch
    pool: int     # the pool child(ren) themselves
    tree: int     # the worker, its pool child and every descendant
    pss: int      # the same tree's proportional set size (shared pages counted once)
    procs: int    # processes in the tree
    largest: int  # RSS of the tree's largest process (an OCR process once OCR ran)
    pool_pids: tuple[int, ...]


class WorkerRss:
    """Every ``interval`` s, per worker: RSS of its pool child and of its tree."""

    def __init__(self, workers: list[Worker], interval: float = RSS_INTERVAL_S) -> None:
        self.workers = workers
        self.interval = interval
        self.samples: dict[str, list[RssSample]] = {w.name: [] for w in workers}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _rss(p: psutil.Process) -> int:
        try:
            return p.memory_info().rss
        except psutil.Error:
            return 0

    @staticmethod
    def _pss(p: psutil.Process) -> int:
        try:
            return p.memory_full_info().pss
        except (psutil.Error, AttributeError):
            return 0

    def sample(self) -> None:
        now = time.time()
        for w in self.workers:
            try:
                main = psutil.Process(w.proc.pid)
                pool = main.children(recursive=False)
                rest = main.children(recursive=True)
            except psutil.Error:
                continue
            tree = [main, *rest]
            rss = [self._rss(p) for p in tree]
            self.samples[w.name].append(RssSample(now, sum(self._rss(p) for p in pool), sum(rss),
                                                  sum(self._pss(p) for p in tree), len(tree), max(rss),
                                                  tuple(p.pid for p in pool)))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> WorkerRss:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


def _at(samples: list[RssSample], t: float) -> RssSample:
    """The last sample at or before ``t`` (the first one if none is)."""
    before = [s for s in samples if s.t <= t]
    return before[-1] if before else samples[0]


# --- report -----------------------------------------------------------------------------


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a is not None and b else "n/a"


@dataclass
class Measured:
    """One mode's run of the workload."""

    name: str
    workers: int
    batch: Batch
    ready_s: float

    @property
    def rate(self) -> float:
        return self.batch.pages / self.batch.seconds


def report_throughput(modes: list[list[Measured]], rows: list[dict]) -> None:
    best = [max(runs, key=lambda m: m.rate) for runs in modes]
    base = best[0].rate
    cores = os.cpu_count() or 1
    rounds = len(modes[0])
    print("\n1. throughput (pages / (last finished_at - first submit)); ratio = mode / embedded"
          + (f"; best of {rounds} rounds (seconds of every round in the last column)" if rounds > 1 else ""))
    print(f"     from first submit to every job seen done, as a share of {cores} cores: machine = whole machine busy,"
          f" run = this run's processes\n     (server/API, workers, Redis, their children, PostgreSQL backends of "
          f"its database; machine - run = anything else on the machine); CPU ms/page: run CPU / pages")
    print(f"  {'mode':<20}{'pages':>7}{'seconds':>9}{'pages/s':>9}{'ratio':>7}{'machine':>9}{'run':>6}"
          f"{'CPU ms/page':>13}{'ready in':>10}" + ("   rounds, s" if rounds > 1 else ""))
    for m, runs in zip(best, modes):
        b = m.batch
        busy, ours = b.cpu_busy_s / (b.window_s * cores), b.cpu_run_s / (b.window_s * cores)
        every = "   " + " / ".join(f"{r.batch.seconds:.1f}" for r in runs) if rounds > 1 else ""
        print(f"  {m.name:<20}{b.pages:>7}{b.seconds:>9.1f}{m.rate:>9.2f}{_ratio(m.rate, base):>7}"
              f"{busy:>9.0%}{ours:>6.0%}{b.cpu_run_s / b.pages * 1000:>13.0f}{m.ready_s:>8.1f} s{every}")
        rows.append({"measure": "throughput", "mode": m.name, "workers": m.workers, "jobs": len(b.ids),
                     "pages": b.pages, "seconds": round(b.seconds, 3), "pages_per_s": round(m.rate, 3),
                     "ratio_to_embedded": round(m.rate / base, 3), "cpu_machine_busy": round(busy, 3),
                     "cpu_run_busy": round(ours, 3), "cpu_ms_per_page": round(b.cpu_run_s / b.pages * 1000, 1),
                     "ready_s": round(m.ready_s, 2), "seconds_every_round": [round(r.batch.seconds, 3) for r in runs]})


def report_waits(modes: list[list[Measured]], rows: list[dict]) -> None:
    def pooled(runs: list[Measured], what: str) -> list[float]:
        return [x for r in runs for x in getattr(r.batch, what)()]

    base = _pct(pooled(modes[0], "waits"), 95)
    print("\n2. queue wait per job (started_at - created_at, GET /v1/jobs/{id}); ratio = p95 / embedded p95;"
          "\n     of latency = p95 wait / p95 latency (finished_at - created_at) of the same mode"
          + ("; jobs of every round" if len(modes[0]) > 1 else ""))
    print(f"  {'mode':<20}{'jobs':>5}{'p50 s':>9}{'p95 s':>9}{'max s':>9}{'ratio':>9}{'of latency':>12}")
    for runs in modes:
        w, lat = pooled(runs, "waits"), pooled(runs, "latencies")
        p50, p95, p95_lat = _pct(w, 50), _pct(w, 95), _pct(lat, 95)
        ratio = f"{p95 / base:.0f}x" if base and p95 / base >= 10 else _ratio(p95, base)
        print(f"  {runs[0].name:<20}{len(w):>5}{p50:>9.2f}{p95:>9.2f}{max(w):>9.2f}{ratio:>9}{p95 / p95_lat:>12.2f}")
        rows.append({"measure": "queue_wait", "mode": runs[0].name, "workers": runs[0].workers, "jobs": len(w),
                     "p50_s": round(p50, 3), "p95_s": round(p95, 3), "max_s": round(max(w), 3),
                     "p95_ratio_to_embedded": round(p95 / base, 3) if base else None,
                     "p95_latency_s": round(p95_lat, 3), "p95_wait_over_p95_latency": round(p95 / p95_lat, 3)})


def report_rss(stack: Stack, batch: Batch, rss: WorkerRss, rows: list[dict]) -> None:
    done = batch.finished_epochs()
    tenth = done[max(0, len(done) // 10 - 1)]
    n_text = sum(1 for j in batch.jobs.values() if not j["filename"].endswith(".png"))
    print(f"\n3. worker memory over {len(batch.ids)} small jobs ({n_text} born-digital of 1-2 pages, "
          f"{len(batch.ids) - n_text} one-page scans), {stack.name}, sampled every {RSS_INTERVAL_S:.0f} s;"
          f"\n     tree = `longdoc worker`, its pool child and all their descendants (RSS sums count shared pages"
          f" once per process, PSS once); largest process = the tree's largest RSS (an OCR process once a scan"
          f"\n     ran); at 10% = when a tenth of the jobs had finished")
    print(f"  jobs: {len(batch.ids)} in {batch.seconds:.1f} s = {len(batch.ids) / batch.seconds:.2f} jobs/s "
          f"({batch.pages} pages = {batch.pages / batch.seconds:.2f} pages/s)")
    print(f"  {'worker':<8}{'what':<16}{'idle':>9}{'at 10%':>9}{'peak':>9}{'last':>9}{'last/10%':>10}")
    for w in stack.workers:
        samples = rss.samples[w.name]
        if not samples:
            print(f"  {w.name:<8}(no samples)")
            continue
        for what, label in (("pool", "pool child RSS"), ("largest", "largest process"), ("tree", "tree RSS"),
                            ("pss", "tree PSS")):
            first, at10 = getattr(samples[0], what), getattr(_at(samples, tenth), what)
            peak, last = max(getattr(s, what) for s in samples), getattr(samples[-1], what)
            print(f"  {w.name:<8}{label:<16}{mib(first):>9}{mib(at10):>9}{mib(peak):>9}{mib(last):>9}"
                  f"{_ratio(last, at10):>10}")
            rows.append({"measure": "worker_rss", "mode": stack.name, "worker": w.name, "what": label,
                         "idle_bytes": first, "at_10pct_bytes": at10, "peak_bytes": peak, "last_bytes": last,
                         "last_over_10pct": round(last / at10, 3) if at10 else None, "samples": len(samples)})
        pids = {p for s in samples for p in s.pool_pids}
        print(f"  {w.name:<8}{'processes':<16}{samples[0].procs:>9}{_at(samples, tenth).procs:>9}"
              f"{max(s.procs for s in samples):>9}{samples[-1].procs:>9}   ({len(samples)} samples, "
              f"{len(pids)} pool child pid{'s' if len(pids) > 1 else ''})")
    rows.append({"measure": "small_jobs", "mode": stack.name, "jobs": len(batch.ids), "pages": batch.pages,
                 "seconds": round(batch.seconds, 3), "jobs_per_s": round(len(batch.ids) / batch.seconds, 3)})


# --- main -------------------------------------------------------------------------------


QUICK = {"long": 2, "long_pages": 32, "scans": 1, "scan_pages": 3, "fleets": "1,2", "small_jobs": 20,
         "small_scan_every": 0}


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run: " + ", ".join(f"--{k.replace('_', '-')} {v}"
                                                                                     for k, v in QUICK.items()))
    ap.add_argument("--json", type=Path, help="write the rows here")
    ap.add_argument("--fleets", default="1,2,4", help="worker processes of each fleet measured in 1 and 2")
    ap.add_argument("--long", type=int, default=4, help="long born-digital documents")
    ap.add_argument("--long-pages", type=int, default=150)
    ap.add_argument("--scans", type=int, default=3, help="scanned (image-only) documents, real OCR")
    ap.add_argument("--scan-pages", type=int, default=8, help=">= 3")
    ap.add_argument("--scan-dpi", type=int, default=100)
    ap.add_argument("--small-jobs", type=int, default=300, help="jobs of the RSS run (0 skips it)")
    ap.add_argument("--small-scan-every", type=int, default=10, help="every n-th small job is a one-page scan "
                    "(0: none)")
    ap.add_argument("--rounds", type=int, default=1, help="throughput rounds, mode order reversed every other "
                    "round; the best round of each mode is reported, queue waits of all rounds pooled")
    ap.add_argument("--timeout", type=float, default=900, help="seconds for the whole run")
    args = ap.parse_args()
    if args.quick:
        for k, v in QUICK.items():
            setattr(args, k, v)
    args.fleet_sizes = [int(x) for x in args.fleets.split(",") if x.strip()]
    if min([args.long, args.scans, args.long_pages, args.scan_pages, args.small_jobs, *args.fleet_sizes]) < 0 \
            or args.long + args.scans < 1 or not args.fleet_sizes or min(args.fleet_sizes) < 1 \
            or (args.scans and args.scan_pages < 3) or args.rounds < 1:
        ap.error("need at least one document, fleet sizes >= 1 and --scan-pages >= 3")
    return args


def main() -> int:
    args = parse_args()
    if REDIS_SERVER is None:
        print("FAILED: redis-server is not installed (Debian package redis-server)", file=sys.stderr)
        return 1
    deadline = time.monotonic() + args.timeout
    t_run = time.monotonic()
    cpus = os.cpu_count() or 1
    print(f"$ python {' '.join(sys.argv)}")
    print(f"processor: {cpu_model() or 'unknown'}, {cpus} cores; load average before the run "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} (the run is only as quiet as the machine)")
    pg = PgServer(PG_ADMIN_URL)
    try:
        with pg.admin.connect():
            pass
    except OperationalError as exc:
        print(f"FAILED: PostgreSQL not reachable at {PG_ADMIN_URL}: {exc}", file=sys.stderr)
        return 1
    rows: list[dict] = []
    stack: Stack | None = None
    with tempfile.TemporaryDirectory(prefix="longdoc-fleet-") as tmp:
        work = Path(tmp)
        t = time.perf_counter()
        docs = make_workload(work / "docs", args)
        small = make_small(work / "small", args.small_jobs, args.small_scan_every)
        check_distinct(docs + small)
        pages = sum(d.pages for d in docs)
        print(f"workload: {args.long} born-digital documents x {args.long_pages} pages + {args.scans} scans x "
              f"{args.scan_pages} pages at {args.scan_dpi} dpi (image-only PDF, OCR) = {len(docs)} jobs, {pages} pages,"
              f" submitted at once; options {OPTIONS}; RSS run: {len(small)} small jobs "
              f"(generated in {time.perf_counter() - t:.1f} s)")
        print(f"every mode: PostgreSQL (fresh database), file:// store, page_chunk_size {CHUNK}, chunk_overlap "
              f"{OVERLAP}, inference.workers 0 (= {cpus} OCR processes per serving/worker process), warmup off, "
              f"embedded max_concurrency 16 (default); fleet: private Redis, `longdoc worker --queues {QUEUES} "
              f"--concurrency 1` x N")
        modes = [0, *args.fleet_sizes]
        results: dict[int, list[Measured]] = {n: [] for n in modes}
        try:
            for r in range(args.rounds):
                for n in modes if r % 2 == 0 else modes[::-1]:
                    stack = Stack(work / f"r{r}-{f'fleet{n}' if n else 'embedded'}", pg, n, max(1000, len(docs)))
                    ready_s = stack.start(min(180, deadline - time.monotonic()))
                    key = stack.api.create_key("bench").key
                    batch = run_batch(stack, key, docs, deadline)
                    print(f"  round {r + 1}, {stack.name}: {len(batch.ids)} jobs, {batch.pages} pages in "
                          f"{batch.seconds:.1f} s (ready in {ready_s:.1f} s)", flush=True)
                    results[n].append(Measured(stack.name, n, batch, ready_s))
                    stack.stop()
                    stack = None
            if small:
                stack = Stack(work / "rss", pg, RSS_WORKERS, max(1000, len(small)))
                stack.start(min(180, deadline - time.monotonic()))
                key = stack.api.create_key("bench").key
                with WorkerRss(stack.workers) as rss:
                    small_batch = run_batch(stack, key, small, deadline)
                rss_stack = stack
                stack.stop()
                stack = None
        except BenchFailure as exc:
            print(f"\nFAILED: {exc}", file=sys.stderr)
            if stack is not None:
                print(stack.logs(), file=sys.stderr)
            return 1
        finally:
            if stack is not None:
                stack.stop()
            pg.close()
    report_throughput(list(results.values()), rows)
    report_waits(list(results.values()), rows)
    if small:
        report_rss(rss_stack, small_batch, rss, rows)
    print(f"\nwhole run: {time.monotonic() - t_run:.0f} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"processor": cpu_model(), "cores": cpus, "quick": args.quick,
                                         "workload": {k: getattr(args, k) for k in ("long", "long_pages", "scans",
                                                      "scan_pages", "scan_dpi", "small_jobs", "small_scan_every",
                                                      "fleets", "rounds")},
                                         "page_chunk_size": CHUNK, "chunk_overlap": OVERLAP, "rows": rows},
                                        indent=1))
        print(f"json: {args.json}")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the teardown on SIGTERM too
    sys.exit(main())
