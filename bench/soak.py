"""A soak: the service under steady mixed load for ``--minutes``, watching
every process tree for leaks.

Two stacks, one after the other (``--stacks embedded,fleet``):

- ``embedded``: one ``longdoc serve`` (SQLite, a local folder store), its
  task pools in process.
- ``fleet``: ``longdoc serve`` with ``queue.backend: celery`` and two
  ``longdoc worker`` processes (``--queues cpu,engine,short``, concurrency
  1) on a throwaway PostgreSQL database, a private Redis and moto's S3
  server standing in for S3 (no S3 service is installable here; it runs in
  this script's process and is not measured).

Every setting not named here is the default, apart from a rate limit no run
reaches. ``--clients`` client threads each loop until the time is up:
submit the next document of a fixed cycle (short born-digital reports of 3
pages, 40-page born-digital documents, 3-page image-only scans at 150 dpi),
long-poll it to its end, read its ``txt`` result, check it, delete the job.
The documents come from a pool of distinct generated files; each upload
gets a unique trailing comment after ``%%EOF`` (the same bytes would be
one job) that readers ignore.

Checks, every job: it ends ``succeeded``; every word of a born-digital
document's text is in its result (none lost: ``tokens lost`` must be 0;
its "Record n." markers in order for the 40-page ones); a scan's word
recall against its truth is printed (OCR, so not exact). Every HTTP answer
other than 2xx counts as an error.

Every ``--sample-s`` seconds each process tree (the server or API, each
worker: the process and all its descendants, OCR processes included) is
read: RSS, open descriptors, threads, and each process's RSS. Printed per
tree: first and last samples, the peak, and slopes over the second half of
the run per 10 minutes (the first half is warm-up: pools filling, arenas
growing to their working size), three ways: a least-squares fit of every
sample; one of the peaks of each 150 s (OCR processes are recycled, so a
tree's RSS is a sawtooth that a plain fit follows down and up by hundreds
of MB; a leak lifts its peaks); one of the processes that stayed through
the second half. Targets: at most 30 MB (peaks and processes that stayed)
and 5 descriptors (peaks) per 10 minutes per tree.

Exit status 1 when a job fails, an HTTP error or a lost token was seen, a
process died, or a slope is over its target.

``--restart-every M`` (minutes) adds rolling restarts, as an upgrade during
business hours does: every M minutes the embedded server is stopped with
SIGTERM and started again; on the fleet each worker in turn (SIGTERM:
Celery's warm shutdown, waited for up to 5 minutes as the compose file
does), then the API. The server is down meanwhile (embedded) or one
worker is: a client request that fails while a restart is under way (no
connection, 503 while shutting down) is retried a second later and counted
apart (``restart_retries``), not as an error. What must hold is unchanged:
every job succeeds with every word and page once, in order. Each restart
also reads the job tasks' ``takeovers`` from the database: a SIGTERM must
add none. Process trees are followed across restarts (the new processes'
trees are sampled from then on), but leak slopes are not judged in this
mode: no process lives long enough to have a second half worth fitting
(the leak soak is the run without restarts).

    python bench/soak.py [--minutes 30] [--stacks embedded,fleet] [--clients 2] [--sample-s 10]
        [--restart-every 5] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np
import psutil
import yaml

from _common import ROOT  # noqa: F401  (ROOT puts the repo on sys.path)

from tests.docgen import english_report, long_textlayer, rasterize  # noqa: E402
from tests.pg import PG_ADMIN_URL, PgServer  # noqa: E402
from tests.runner.conftest import AWS_ENV, Fleet, free_port  # noqa: E402
from tests.service.conftest import Server  # noqa: E402

for _name in [k for k in os.environ if k.startswith("LONGDOC_")]:
    del os.environ[_name]  # the config file alone defines every process of the run

TERMINAL = {"succeeded", "partial", "failed", "cancelled", "expired"}
CYCLE = ("short", "long", "short", "scan", "short", "long", "scan")  # one client's order
POOL = 6  # distinct documents of each kind
RSS_TARGET_MB, FD_TARGET = 30.0, 5.0  # per 10 minutes per process tree
ENVELOPE_S = 150.0  # the window whose maximum is one point of a tree's envelope
WORD = re.compile(r"\w+")
RECORD = re.compile(r"Record (\d+)\.")


class SoakFailure(Exception):
    """The run cannot go on; the message says why."""


# --- documents ------------------------------------------------------------------


@dataclass(frozen=True)
class Doc:
    kind: str  # short, long, scan
    data: bytes
    pages: int
    words: Counter  # the truth's words (normalized)
    records: int  # "Record n." markers expected in order (long documents), else 0


def _words(text: str) -> Counter:
    return Counter(WORD.findall(unicodedata.normalize("NFKC", text).lower()))


def make_pool(folder: Path) -> dict[str, list[Doc]]:
    pool: dict[str, list[Doc]] = {"short": [], "long": [], "scan": []}
    for i in range(POOL):
        short = english_report(folder / f"short{i}", pages=3, seed=100 + i)
        pool["short"].append(Doc("short", short.pdf_path.read_bytes(), 3, _words(short.main_text), 0))
        long = long_textlayer(folder / f"long{i}", pages=40, seed=200 + i)
        pool["long"].append(Doc("long", long.pdf_path.read_bytes(), 40, _words(long.main_text), 40))
        scan = rasterize(english_report(folder / f"scan-src{i}", pages=3, seed=300 + i), 150,
                         folder / f"scan{i}.pdf")
        pool["scan"].append(Doc("scan", scan.pdf_path.read_bytes(), 3, _words(scan.main_text), 0))
    return pool


# --- process trees ----------------------------------------------------------------


@dataclass
class Tree:
    """One process and its descendants, sampled."""

    name: str
    pid: int
    samples: list[tuple[float, int, int, int]] = field(default_factory=list)  # (t, rss, fds, threads)
    #: per sample, each process's RSS by (pid, start time): who was recycled, who stayed
    procs: list[dict[tuple[int, float], int]] = field(default_factory=list)
    names: dict[tuple[int, float], str] = field(default_factory=dict)

    def sample(self, t: float) -> bool:
        try:
            root = psutil.Process(self.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return False
        rss = fds = threads = 0
        each: dict[tuple[int, float], int] = {}
        for p in procs:
            try:
                with p.oneshot():
                    key = (p.pid, p.create_time())
                    mem = p.memory_info().rss
                    rss += mem
                    fds += p.num_fds()
                    threads += p.num_threads()
                    each[key] = mem
                    if key not in self.names:
                        self.names[key] = " ".join(p.cmdline()[1:4])[:80] or p.name()
            except psutil.Error:
                pass
        self.samples.append((t, rss, fds, threads))
        self.procs.append(each)
        return True

    def _second_half(self) -> list[int]:
        t0, t1 = self.samples[0][0], self.samples[-1][0]
        return [i for i, s in enumerate(self.samples) if s[0] >= (t0 + t1) / 2]

    def _stayed(self, half: list[int]) -> set[tuple[int, float]]:
        """The processes alive in every sample of ``half``."""
        return set.intersection(*(set(self.procs[i]) for i in half)) if half else set()

    def slopes(self) -> dict[str, float]:
        """Slopes over the second half, per 10 minutes, three ways:

        - ``rss_mb``, ``fds``, ``threads``: least squares over every sample
          of the whole tree;
        - ``rss_envelope_mb``, ``fds_envelope``: least squares over the
          tree's maximum in each :data:`ENVELOPE_S` window (OCR processes
          are recycled after ``inference.rapidocr.recycle_after_pages``, so
          the tree's RSS is a sawtooth whose drops move a plain fit by
          hundreds of MB; its peaks are what would climb with a leak);
        - ``persistent_rss_mb``: least squares over the summed RSS of the
          processes alive in every sample of the second half (the server or
          worker, its pool child, what is never recycled).
        """
        half = self._second_half()
        if len(half) < 4:
            return dict.fromkeys(("rss_mb", "fds", "threads", "rss_envelope_mb", "fds_envelope",
                                  "persistent_rss_mb"), 0.0)
        t = np.array([self.samples[i][0] for i in half]) / 600.0

        def fit(x, y) -> float:
            return float(np.polyfit(x, y, 1)[0]) if len(x) >= 2 else 0.0

        col = lambda c, scale: np.array([self.samples[i][c] for i in half]) / scale  # noqa: E731
        windows: dict[int, list[int]] = {}
        for i in half:
            windows.setdefault(int((self.samples[i][0] - self.samples[half[0]][0]) // ENVELOPE_S), []).append(i)
        peaks = [max(idx, key=lambda i: self.samples[i][1]) for idx in windows.values()]
        fd_peaks = [max(idx, key=lambda i: self.samples[i][2]) for idx in windows.values()]
        stayed = self._stayed(half)
        persistent = np.array([sum(self.procs[i][k] for k in stayed) for i in half]) / 1e6
        return {"rss_mb": fit(t, col(1, 1e6)), "fds": fit(t, col(2, 1)), "threads": fit(t, col(3, 1)),
                "rss_envelope_mb": fit(np.array([self.samples[i][0] for i in peaks]) / 600.0,
                                       np.array([self.samples[i][1] for i in peaks]) / 1e6),
                "fds_envelope": fit(np.array([self.samples[i][0] for i in fd_peaks]) / 600.0,
                                    np.array([self.samples[i][2] for i in fd_peaks], dtype=float)),
                "persistent_rss_mb": fit(t, persistent)}

    def report(self) -> dict:
        first, last = self.samples[0], self.samples[-1]
        stayed = self._stayed(self._second_half())
        started = {k for each in self.procs for k in each}
        return {"name": self.name, "samples": len(self.samples),
                "rss_mb": {"first": first[1] / 1e6, "last": last[1] / 1e6,
                           "peak": max(s[1] for s in self.samples) / 1e6},
                "fds": {"first": first[2], "last": last[2], "peak": max(s[2] for s in self.samples)},
                "threads": {"first": first[3], "last": last[3], "peak": max(s[3] for s in self.samples)},
                "processes": {"seen": len(started), "persistent": sorted(self.names[k] for k in stayed)},
                "slope_per_10min": self.slopes(),
                "series": [[round(s[0] - first[0], 1), s[1], s[2], s[3]] for s in self.samples]}


# --- load ----------------------------------------------------------------------------


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    jobs: Counter = field(default_factory=Counter)  # kind -> succeeded jobs
    pages: int = 0
    states: Counter = field(default_factory=Counter)  # non-succeeded end states
    http_errors: Counter = field(default_factory=Counter)  # "METHOD path status code"
    tokens_lost: int = 0
    order_errors: int = 0
    scan_recall: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # the first few, for the log
    #: set while a rolling restart is under way (and a few seconds after): failed requests are retried
    restarting: threading.Event = field(default_factory=threading.Event)
    restart_retries: Counter = field(default_factory=Counter)

    def problem(self, text: str) -> None:
        with self.lock:
            if len(self.problems) < 20:
                self.problems.append(text)


def _during_restart(tally: Tally, what: str, why: str) -> bool:
    """Whether a failed request came while a restart is under way (then it
    is counted apart and retried after a second)."""
    if not tally.restarting.is_set():
        return False
    with tally.lock:
        tally.restart_retries[f"{what} {why}"] += 1
    time.sleep(1)
    return True


def _request(tally: Tally, what: str, send) -> httpx.Response | None:
    """``send()``, retried while a restart is under way; the answer as
    :func:`_checked` judges it."""
    while True:
        try:
            r = send()
        except httpx.TransportError as exc:
            if _during_restart(tally, what, type(exc).__name__):
                continue
            raise
        if r.status_code == 503 and _during_restart(tally, what, "503"):
            continue
        return _checked(tally, r, what)


def _checked(tally: Tally, r: httpx.Response, what: str) -> httpx.Response | None:
    if r.is_success:
        return r
    try:
        code = r.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        code = "-"
    with tally.lock:
        tally.http_errors[f"{what} {r.status_code} {code}"] += 1
    tally.problem(f"{what}: {r.status_code} {r.text[:300]}")
    return None


def check_result(tally: Tally, doc: Doc, text: str) -> None:
    got = _words(text)
    if doc.kind == "scan":
        recall = sum(min(n, got[w]) for w, n in doc.words.items()) / max(1, sum(doc.words.values()))
        with tally.lock:
            tally.scan_recall.append(recall)
        return
    lost = sum((doc.words - got).values())
    records = [int(n) for n in RECORD.findall(text)]
    with tally.lock:
        tally.tokens_lost += lost
        if doc.records and records != list(range(1, doc.records + 1)):
            tally.order_errors += 1
    if lost:
        tally.problem(f"{doc.kind}: {lost} words lost, e.g. {list(doc.words - got)[:8]}")


def one_job(http: httpx.Client, tally: Tally, doc: Doc, tag: str, stop_at: float) -> None:
    data = doc.data + f"\n% soak {tag}\n".encode()
    r = _request(tally, "POST /v1/jobs", lambda: http.post(
        "/v1/jobs", files={"file": (f"{doc.kind}-{tag}.pdf", data, "application/pdf")},
        data={"options": json.dumps({"formats": ["txt"]})}))
    if r is None:
        return
    job_id = r.json()["id"]
    deadline = max(stop_at, time.monotonic()) + 600  # a job started before the end is followed to its end
    while True:
        r = _request(tally, "GET /v1/jobs/{id}",
                     lambda: http.get(f"/v1/jobs/{job_id}", params={"wait": 10}, timeout=40))
        if r is None:
            return
        job = r.json()
        if job["state"] in TERMINAL:
            break
        if time.monotonic() > deadline:
            tally.problem(f"job {job_id} ({doc.kind}) still {job['state']} after 10 minutes")
            with tally.lock:
                tally.states["stuck"] += 1
            return
    if job["state"] != "succeeded":
        with tally.lock:
            tally.states[job["state"]] += 1
        tally.problem(f"job {job_id} ({doc.kind}) ended {job['state']}: {job.get('error')}")
    else:
        r = _request(tally, "GET result", lambda: http.get(f"/v1/jobs/{job_id}/result", params={"format": "txt"}))
        if r is not None:
            check_result(tally, doc, r.text)
            with tally.lock:
                tally.jobs[doc.kind] += 1
                tally.pages += doc.pages
    _request(tally, "DELETE /v1/jobs/{id}", lambda: http.delete(f"/v1/jobs/{job_id}"))


def client_loop(url: str, key: str, pool: dict[str, list[Doc]], tally: Tally, index: int, stop_at: float) -> None:
    n = 0
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        while time.monotonic() < stop_at:
            kind = CYCLE[(n + index * 3) % len(CYCLE)]
            doc = pool[kind][(n // len(CYCLE) + index) % POOL]
            try:
                one_job(http, tally, doc, f"{index}-{n}-{uuid.uuid4().hex[:8]}", stop_at)
            except httpx.HTTPError as exc:
                with tally.lock:
                    tally.http_errors[f"transport {type(exc).__name__}"] += 1
                tally.problem(f"client {index}: {type(exc).__name__}: {exc}")
                time.sleep(1)
            n += 1


# --- stacks ---------------------------------------------------------------------------


class Embedded:
    name = "embedded"

    def __init__(self, root: Path) -> None:
        (root / "api").mkdir(parents=True)
        self.api = Server(root / "api", None, **overrides(root))

    def start(self) -> None:
        self.api.start()

    def trees(self) -> list[Tree]:
        return [Tree("server", self.api.proc.pid)]

    def alive(self) -> str | None:
        return None if self.api.proc.poll() is None else f"the server exited:\n{self.api.log_tail()}"

    def key(self) -> str:
        return self.api.create_key("soak").key

    def restart(self) -> list[str]:
        """SIGTERM the server, start it again; what was restarted."""
        rc = self.api.terminate(timeout=120)
        self.api.start()
        return [f"server (exit {rc})"]

    def database_url(self) -> str:
        return self.api.config["database"]["url"]

    def stop(self) -> None:
        self.api.stop()


class FleetStack:
    name = "fleet"

    def __init__(self, root: Path, pg: PgServer, s3: str) -> None:
        (root / "api").mkdir(parents=True)
        os.environ.update(AWS_ENV)
        config = overrides(root)
        # the tests' fleet shortens leases and the reconciler's period; the soak runs the defaults
        config["queue"] = {"lease_seconds": None, "redeliver_after_seconds": None, "reconcile_interval_seconds": None}
        self.fleet = Fleet(root, pg.create_database(), s3, **config)
        self.api = self.fleet.api

    def start(self) -> None:
        self.fleet.start(workers=2)

    def trees(self) -> list[Tree]:
        return [Tree("api", self.api.proc.pid)] + [Tree(w.name, w.proc.pid) for w in self.fleet.workers]

    def alive(self) -> str | None:
        if self.api.proc.poll() is not None:
            return f"the API exited:\n{self.api.log_tail()}"
        for w in self.fleet.workers:
            if w.proc.poll() is not None:
                return f"worker {w.name} exited:\n{w.log_text()[-3000:]}"
        return None

    def key(self) -> str:
        return self.fleet.create_key("soak").key

    def restart(self) -> list[str]:
        """Each worker in turn (SIGTERM, warm shutdown waited for up to 5
        minutes, then started again and waited for), then the API."""
        done = []
        for w in self.fleet.workers:
            t0 = time.monotonic()
            w.signal_stop()
            try:
                rc = w.proc.wait(300)
            except subprocess.TimeoutExpired:
                rc = None  # reaped below: a takeover will follow, and shows in the counts
            w.wait_stopped()
            w.start()
            w.wait_ready(timeout=120)
            done.append(f"{w.name} (exit {rc}, {time.monotonic() - t0:.0f} s)")
        rc = self.api.terminate(timeout=120)
        self.api.start()
        return done + [f"api (exit {rc})"]

    def database_url(self) -> str:
        return self.api.config["database"]["url"]

    def stop(self) -> None:
        self.fleet.stop()


def overrides(root: Path) -> dict:
    return {"service": {"rate_limit_per_minute": 1_000_000, "work_dir": str(root / "work")},
            "inference": {"workers": None, "page_chunk_size": None, "chunk_overlap": None}}


def _drop_none(config: dict) -> dict:
    """Keys set to None above mean "the default": they leave the config file."""
    out = {}
    for k, v in config.items():
        if isinstance(v, dict):
            v = _drop_none(v)
            if v:
                out[k] = v
        elif v is not None:
            out[k] = v
    return out


def write_defaults(server: Server) -> None:
    """Rewrite the config file without the keys set to None (the defaults)."""
    server.config = _drop_none(server.config)
    server.config_path.write_text(yaml.safe_dump(server.config), encoding="utf-8")


# --- one run ----------------------------------------------------------------------------


def takeovers(database_url: str) -> int:
    """Takeovers summed over every job task on record (deleted jobs' tasks go
    with them, so this is read just before and just after each restart)."""
    from sqlalchemy import func, select

    from longdoc.jobs import db
    from longdoc.jobs.models import JobTask

    engine = db.make_engine(database_url)
    try:
        with engine.connect() as c:
            return int(c.execute(select(func.coalesce(func.sum(JobTask.takeovers), 0))).scalar_one())
    finally:
        engine.dispose()


def rolling_restarts(stack, tally: Tally, every_s: float, stop_at: float, log: list[dict],
                     retired: list[Tree], trees: list[Tree]) -> None:
    """Every ``every_s`` seconds until ``stop_at``: restart the stack (see
    the module docstring), noting the takeovers the restart added."""
    began = time.monotonic()
    next_at = began + every_s
    while next_at < stop_at - 30:
        time.sleep(max(0.0, next_at - time.monotonic()))
        tally.restarting.set()
        t0 = time.monotonic()
        before = takeovers(stack.database_url())
        what = stack.restart()
        added = takeovers(stack.database_url()) - before
        fresh = stack.trees()
        retired.extend(trees)
        trees[:] = fresh
        time.sleep(5)  # answers already on their way back from the old process
        tally.restarting.clear()
        log.append({"at_min": round((t0 - began) / 60, 1), "seconds": round(time.monotonic() - t0, 1),
                    "restarted": what, "takeovers_added": added})
        print(f"  {stack.name}: restarted {', '.join(what)} in {time.monotonic() - t0:.0f} s; "
              f"takeovers added: {added}", flush=True)
        next_at += every_s


def soak(stack, pool: dict[str, list[Doc]], args: argparse.Namespace) -> dict:
    write_defaults(stack.api)
    stack.start()
    key = stack.key()
    trees = stack.trees()
    retired: list[Tree] = []
    restarts: list[dict] = []
    tally = Tally()
    t_start = time.monotonic()
    stop_at = t_start + args.minutes * 60
    clients = [threading.Thread(target=client_loop, args=(stack.api.url, key, pool, tally, i, stop_at), daemon=True)
               for i in range(args.clients)]
    for c in clients:
        c.start()
    restarter = None
    if args.restart_every:
        restarter = threading.Thread(target=rolling_restarts, args=(stack, tally, args.restart_every * 60, stop_at,
                                                                    restarts, retired, trees), daemon=True)
        restarter.start()
    died = None
    next_print = t_start + 60
    while any(c.is_alive() for c in clients):
        now = time.monotonic()
        for tree in list(trees):
            tree.sample(now)
        died = died or (None if tally.restarting.is_set() else stack.alive())
        if died:
            break
        if now >= next_print:
            next_print += 60
            with tally.lock:
                done = sum(tally.jobs.values())
            rss = ", ".join(f"{t.name} {t.samples[-1][1] / 1e6:.0f} MB/{t.samples[-1][2]} fds"
                            for t in trees if t.samples)
            print(f"  {stack.name} {(now - t_start) / 60:4.1f} min: {done} jobs, {tally.pages} pages; {rss}",
                  flush=True)
        time.sleep(args.sample_s)
    for c in clients:
        c.join(timeout=5)
    if restarter is not None:
        restarter.join(timeout=600)
    elapsed = time.monotonic() - t_start
    stack.stop()
    return {"stack": stack.name, "minutes": elapsed / 60, "clients": args.clients,
            "restart_every_min": args.restart_every, "restarts": restarts,
            "restart_retries": dict(tally.restart_retries),
            "jobs": dict(tally.jobs), "pages": tally.pages, "pages_per_s": tally.pages / elapsed,
            "not_succeeded": dict(tally.states), "http_errors": dict(tally.http_errors),
            "tokens_lost": tally.tokens_lost, "order_errors": tally.order_errors,
            "scan_recall": {"mean": float(np.mean(tally.scan_recall)) if tally.scan_recall else None,
                            "min": float(np.min(tally.scan_recall)) if tally.scan_recall else None},
            "died": died, "problems": tally.problems,
            "trees": [t.report() for t in [*retired, *trees] if len(t.samples) > 1]}


def verdict(run: dict) -> list[str]:
    bad = []
    if run["died"]:
        bad.append(run["died"][:2000])
    if run["not_succeeded"]:
        bad.append(f"jobs not succeeded: {run['not_succeeded']}")
    if run["http_errors"]:
        bad.append(f"HTTP errors: {run['http_errors']}")
    if run["tokens_lost"] or run["order_errors"]:
        bad.append(f"born-digital tokens lost: {run['tokens_lost']}, pages out of order: {run['order_errors']}")
    added = sum(r["takeovers_added"] for r in run.get("restarts", []))
    if added:
        bad.append(f"rolling restarts added {added} takeover(s): a SIGTERM must hand its tasks back")
    if run.get("restart_every_min"):
        return bad  # no process lives long enough for a slope (see the module docstring)
    for tree in run["trees"]:
        s = tree["slope_per_10min"]
        if max(s["rss_envelope_mb"], s["persistent_rss_mb"]) > RSS_TARGET_MB or s["fds_envelope"] > FD_TARGET:
            bad.append(f"{tree['name']}: slope {s['rss_envelope_mb']:+.1f} MB (peaks), {s['persistent_rss_mb']:+.1f} MB "
                       f"(persistent processes), {s['fds_envelope']:+.1f} fds (peaks) per 10 min")
    return bad


def print_run(run: dict) -> None:
    print(f"\n== {run['stack']}: {run['minutes']:.1f} min, {run['clients']} clients ==")
    print(f"  jobs succeeded: {run['jobs']} ({sum(run['jobs'].values())}), pages {run['pages']} "
          f"({run['pages_per_s']:.2f}/s)")
    print(f"  not succeeded: {run['not_succeeded'] or 'none'}; HTTP errors: {run['http_errors'] or 'none'}")
    if run.get("restarts"):
        print(f"  rolling restarts: {len(run['restarts'])}, every {run['restart_every_min']:g} min; takeovers "
              f"added: {sum(r['takeovers_added'] for r in run['restarts'])}; requests retried while restarting: "
              f"{sum(run['restart_retries'].values())} {run['restart_retries'] or ''}")
    print(f"  born-digital words lost: {run['tokens_lost']}; long documents out of order: {run['order_errors']}; "
          f"scan word recall mean {run['scan_recall']['mean'] or 0:.3f}, min {run['scan_recall']['min'] or 0:.3f}")
    print(f"  {'tree':8} {'RSS first/last/peak MB':>24} {'fds first/last/peak':>20} {'threads':>14} {'procs':>6}")
    for t in run["trees"]:
        r, f, th = t["rss_mb"], t["fds"], t["threads"]
        print(f"  {t['name']:8} {r['first']:8.0f}{r['last']:8.0f}{r['peak']:8.0f} {f['first']:6}{f['last']:7}"
              f"{f['peak']:7} {th['first']:4}{th['last']:5}{th['peak']:5} {t['processes']['seen']:6}")
    if run.get("restart_every_min"):
        print("  (one row per process tree, a new one after each restart; no slopes: none lives long enough)")
        for p in run["problems"][:5]:
            print(f"  problem: {p[:300]}")
        return
    print("  slopes per 10 min over the second half: every sample (RSS MB, fds, threads) | the peaks of each "
          f"{ENVELOPE_S:.0f} s (RSS MB, fds) | the processes that stayed (RSS MB)")
    for t in run["trees"]:
        s = t["slope_per_10min"]
        print(f"  {t['name']:8} {s['rss_mb']:+8.1f} {s['fds']:+6.1f} {s['threads']:+6.1f} | "
              f"{s['rss_envelope_mb']:+8.1f} {s['fds_envelope']:+6.1f} | {s['persistent_rss_mb']:+8.1f}"
              f"   ({len(t['processes']['persistent'])} stayed)")
    for p in run["problems"][:5]:
        print(f"  problem: {p[:300]}")


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--stacks", default="embedded,fleet")
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--sample-s", type=float, default=10.0)
    ap.add_argument("--restart-every", type=float, default=0.0, metavar="MIN",
                    help="rolling restarts every MIN minutes (0: none)")
    ap.add_argument("--json", type=Path)
    return ap.parse_args()


def main() -> int:
    args = parse_args()
    stacks = [s.strip() for s in args.stacks.split(",") if s.strip()]
    unknown = set(stacks) - {"embedded", "fleet"}
    if unknown:
        raise SystemExit(f"unknown stacks: {sorted(unknown)}")
    runs, failures = [], []
    with tempfile.TemporaryDirectory(prefix="longdoc-soak-") as tmp:
        root = Path(tmp)
        t0 = time.monotonic()
        pool = make_pool(root / "docs")
        print(f"documents: {POOL} of each kind ({', '.join(CYCLE)}), made in {time.monotonic() - t0:.1f} s",
              flush=True)
        pg = s3 = None
        for name in stacks:
            if name == "embedded":
                stack = Embedded(root / name)
            else:
                if pg is None:
                    from moto.server import ThreadedMotoServer

                    pg = PgServer(PG_ADMIN_URL)
                    port = free_port()
                    s3 = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
                    s3.start()
                    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's request log
                stack = FleetStack(root / name, pg, f"http://127.0.0.1:{port}")
            try:
                run = soak(stack, pool, args)
            finally:
                stack.stop()
            print_run(run)
            runs.append(run)
            failures += [f"{name}: {b}" for b in verdict(run)]
        if s3 is not None:
            s3.stop()
        if pg is not None:
            pg.close()
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "cpu": psutil.cpu_count(), "argv": sys.argv[1:]}, indent=1))
    for f in failures:
        print(f"FAIL {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
