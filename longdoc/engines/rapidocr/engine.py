"""The default page engine: RapidOCR (PP-OCRv6, ONNX Runtime, CPU).

The models ship inside the ``rapidocr`` wheel, so it runs offline. Pages are
recognized by a pool of worker processes, each holding one ``RapidOCR``
object with one ONNX Runtime thread (one process per core is fastest).

Defaults (:data:`~longdoc.engines.rapidocr.worker.DEFAULT_PARAMS`), measured
on scans, one change at a time from 0.32 pages/s: line-orientation
classifier off (English CER 4.5% → 0.2%), ONNX Runtime memory arena on
(+39%), recognition batch 1 (+48%), detector side limit ``max`` 960 px
(+44%); together ~1.1–1.3 pages/s on 2 cores at ≤0.28% CER. Taller boxes
(``Det.unclip_ratio`` ≥ 2.0) drop double letters.

Recognizer (``recognizer``): ``cascade`` (default) reads every line with
PP-OCRv6 *tiny* and reads again with the *small* model of the wheel the
lines tiny is unsure of (:mod:`~longdoc.engines.rapidocr.cascade`; 4-5× less
recognition time on dense pages, the small model's accuracy); ``small`` or
``tiny`` alone. Tiny comes from set-up (:mod:`~longdoc.engines.model_files`);
without it the engine reads with small alone and says so in a warning.

Runtimes (``backend``): ONNX Runtime or OpenVINO under each model, ``auto``
times both once per machine *per model* (detector, first and second
recognizer) and keeps the faster for each
(:mod:`~longdoc.engines.backends`); the engine version ends with them
(``rapidocr-3.10.0/PP-OCRv6-tiny+small/openvino+onnxruntime+openvino``), so
every page, the job record and ``/readyz`` say which ran. ``recycle_after_pages``: ONNX Runtime's memory
arena never returns memory to the system, so after about that many pages
per worker the pool is replaced between two ``recognize`` calls (page
groups), never in the middle of one.

Failure semantics (per page, never an exception): a page whose worker raises,
runs past ``page_timeout_seconds`` (its worker is killed), or kills its worker
process (crash, out of memory) comes back with ``error.code ==
"engine_failed"``; the pool is restarted and the pages behind it are still
recognized. When a worker dies, every page the pool lost is re-run *alone* in
a fresh pool, so only a page that kills a worker by itself fails, and a
worker killed from outside loses no page. Beyond that the engine does not
retry: retrying is the pipeline's business (groups).

Workers are started from longdoc's fork server (:func:`longdoc.runtime.procs.context`,
which preloads RapidOCR's imports): first start ~1.1 s for 2 workers, the same
as ``spawn``, but a pool restart after a failure takes ~0.35 s instead of
1.1–1.7 s. Workers exit when the process that started them does, even after
a ``kill -9`` of it.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from contextlib import closing
from dataclasses import replace
from functools import cached_property
from importlib.metadata import PackageNotFoundError, version
from types import TracebackType
from typing import Any, Literal

from longdoc.config import InferenceSettings
from longdoc.engines import backends, model_files
from longdoc.engines.base import EngineCapabilities, PageImage, RecognizedPage
from longdoc.engines.rapidocr import int8 as int8_model, worker as rapidocr_worker
from longdoc.engines.rapidocr.cascade import RECHECK_RULES, RecheckPlan
from longdoc.engines.rapidocr.worker import DEFAULT_PARAMS, RawPage
from longdoc.engines.results import confidence, failed_page, quad_box
from longdoc.engines.window import Slot, in_order
from longdoc.errors import EngineUnavailable
from longdoc.model import Line
from longdoc.runtime.pool import WorkerPool

log = logging.getLogger(__name__)

#: the defaults users get (``inference`` in :class:`~longdoc.config.Settings`):
#: an engine built here without settings reads as a configured one does
_INFERENCE = InferenceSettings()

#: Workspace a page holds in a worker besides its image copies: ONNX Runtime
#: activations of the detector (input capped at 960 px by ``Det.limit_side_len``)
#: and of the recognizer at batch 1, plus RapidOCR's crops. Measured with
#: psutil/getrusage as the peak-RSS growth of a warmed worker on a dense A4
#: page (40 lines): 169 / 181 / 197 MB at 150 / 200 / 300 dpi, i.e. ~160 MB
#: plus ~1.5 × the image. Not included (fixed per worker, not per page): a
#: warmed worker's ~220 MB baseline, and the ~100 MB more the memory arena
#: keeps after its first pages.
ACTIVATION_BYTES = 160 * 1024 * 1024
#: Copies of the page image alive while it is in flight: the caller's, the
#: pickled one in the worker, and the worker's BGR copy.
IMAGE_COPIES = 3

#: what ``recognizer`` may name
RECOGNIZERS = ("auto", "cascade", "small", "tiny")
#: with ``auto``, the small recognizer reads alone when it costs at most this many times
#: the tiny one on this machine: the cascade re-reads about a third of a real page's lines
#: with small, so it then saves under a quarter of the time and reads worse
SMALL_ALONE_RATIO = 2.2

_INSTALL_HINT = "Install `rapidocr` and `onnxruntime` (`pip install longdoc`) or choose another engine."


def _package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "missing"


class WorkerDied(Exception):
    """A page's worker process died while it ran alone (the page's own doing)."""


class RapidOcrEngine:
    """RapidOCR over a pool of ``workers`` processes (in-process if ``workers <= 1``).

    ``params`` are RapidOCR settings (dotted keys, e.g. ``"Det.limit_side_len"``)
    applied over :data:`DEFAULT_PARAMS`. ``max_in_flight`` (default
    ``2 × workers``) bounds how many pages are taken from the input and not
    yet returned. ``start_method`` is the pool's multiprocessing start method
    (``forkserver`` or ``spawn``; never ``fork``, which is unsafe with ONNX
    Runtime threads). With ``workers <= 1`` pages run in the calling process:
    a page that raises still fails alone, but ``page_timeout_seconds`` cannot
    be enforced and a crash takes the caller down.

    One ``recognize`` at a time per engine (the pipeline's turns see to
    it); everything else may be called from any thread: loading, the pool's
    restarts and every choice settled on first use (runtimes, recognizer,
    models) happen once, under the engine's lock, so two threads that load
    it at once never decide differently (a restarted server's taken-back
    tasks load it while warm-up does).
    """

    name = "rapidocr"
    #: the task the pool runs per page; test fakes override it.
    page_task: Callable[[Any], RawPage] = staticmethod(rapidocr_worker.ocr_page)

    def __init__(
        self,
        workers: int,
        threads_per_worker: int = _INFERENCE.threads_per_worker,
        page_timeout_seconds: float = _INFERENCE.page_timeout_seconds,
        params: dict[str, Any] | None = None,
        *,
        max_in_flight: int | None = None,
        start_method: str = "forkserver",
        start_timeout_seconds: float = 180.0,
        backend: str = _INFERENCE.backend,
        recycle_after_pages: int = _INFERENCE.rapidocr.recycle_after_pages,
        int8: bool = _INFERENCE.rapidocr.int8,
        recognizer: str = _INFERENCE.rapidocr.recognizer,
        recheck_below: float = _INFERENCE.rapidocr.recheck_below,
        recheck: str = _INFERENCE.rapidocr.recheck,
        glyph_checks: bool = _INFERENCE.rapidocr.glyph_checks,
    ) -> None:
        if page_timeout_seconds <= 0:
            raise ValueError("page_timeout_seconds must be positive")
        if max_in_flight is not None and max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        if start_method not in ("forkserver", "spawn"):
            raise ValueError(f"start_method must be 'forkserver' or 'spawn', got {start_method!r}")
        if backend not in ("auto", *backends.BACKENDS):
            raise ValueError(f"backend must be auto, onnxruntime or openvino, got {backend!r}")
        if recognizer not in RECOGNIZERS:
            raise ValueError(f"recognizer must be one of {', '.join(RECOGNIZERS)}, got {recognizer!r}")
        if not 0.0 <= recheck_below <= 1.0:
            raise ValueError("recheck_below must be between 0 and 1")
        if recheck not in RECHECK_RULES:
            raise ValueError(f"recheck must be one of {', '.join(RECHECK_RULES)}, got {recheck!r}")
        self.workers = max(1, workers)
        self.page_timeout_seconds = page_timeout_seconds
        self.threads_per_worker = max(1, threads_per_worker)
        self.asked_backend = backend
        self.recycle_after_pages = max(0, recycle_after_pages)
        self.int8 = int8
        self.asked_recognizer = recognizer
        self.recheck_below = recheck_below
        self.recheck_rules = recheck
        self.glyph_checks = glyph_checks
        self._rec_model: str | None | Literal[False] = False  # False: not looked for yet
        self._tiny: tuple[str, str] | None | Literal[False] = False  # False: not looked for yet
        self._extra_params = dict(params or {})
        self._runtimes: tuple[dict[str, backends.Backend], str] | None = None
        self._recognizer: str | None = None
        self._cascade_runtimes: tuple[dict[str, backends.Backend], str] | None = None  # auto: the cascade's
        self._pages_since_start = 0
        self.in_process = workers <= 1
        self.max_in_flight = 1 if self.in_process else (max_in_flight or 2 * self.workers)
        self.start_method = start_method
        self.start_timeout_seconds = start_timeout_seconds
        self.capabilities = EngineCapabilities(languages=("ch", "en"))
        self._ocr: Any = None  # in-process RapidOCR
        self._pool: WorkerPool | None = None
        #: guards loading, the pool's replacement and the choices settled on first use
        self._lock = threading.RLock()

    # --- runtimes --------------------------------------------------------

    @property
    def roles(self) -> tuple[str, ...]:
        """The models a page goes through: the detector, the recognizer that
        reads every line and, for the cascade, the one that reads again."""
        return _roles(self.recognizer)

    @property
    def runtimes(self) -> dict[str, backends.Backend]:
        """The runtime of each role (``auto`` resolved on first use, per
        role: remembered for this machine, or timed; see
        :mod:`~longdoc.engines.backends`)."""
        with self._lock:
            if self._runtimes is None:
                recognizer = self.recognizer
                if self._cascade_runtimes is not None and recognizer == "small":  # auto chose small alone
                    chosen, why = self._cascade_runtimes
                    self._runtimes = ({"det": chosen["det"], "rec": chosen["recheck"]}, why)
                elif self._cascade_runtimes is not None:
                    self._runtimes = self._cascade_runtimes
                else:
                    self._runtimes = self._choose(recognizer)[:2]
                log.info("rapidocr runtimes", extra={"runtimes": self._runtimes[0], "why": self._runtimes[1],
                                                      "recognizer": recognizer})
            return self._runtimes[0]

    def _choose(self, recognizer: str) -> tuple[dict[str, backends.Backend], str, dict[str, dict[str, float]]]:
        """Time (or recall) the runtimes of the roles ``recognizer`` reads with."""
        roles, models = _roles(recognizer), self._models(recognizer)
        return backends.choose(self.asked_backend, self.threads_per_worker, roles,
                               lambda: self._candidates(recognizer), rapidocr_worker.time_roles,
                               models=[models[r][0] for r in roles])

    @property
    def backend(self) -> str:
        """The runtimes in role order, ``+``-joined (one name when all agree)."""
        chosen = [self.runtimes[r] for r in self.roles]
        return chosen[0] if len(set(chosen)) == 1 else "+".join(chosen)

    @property
    def rec_model(self) -> str | None:
        """The int8 recognizer's path when ``int8`` (built on first use if
        set-up did not; None, with a warning, when it cannot be), else None."""
        with self._lock:
            if self._rec_model is False:
                rec_model = None
                if self.int8:
                    try:
                        rec_model = str(int8_model.ensure())
                    except Exception as exc:  # onnx missing, read-only prefix, a bad file
                        log.warning("int8 recognizer unavailable; using the float model",
                                    extra={"error": f"{type(exc).__name__}: {exc}"})
                self._rec_model = rec_model
            return self._rec_model

    @property
    def tiny_model(self) -> tuple[str, str] | None:
        """The tiny recognizer and its dictionary when ``recognizer`` uses
        it and set-up installed it; None (with a warning) when it is missing."""
        with self._lock:
            if self._tiny is False:
                tiny = None
                if self.asked_recognizer != "small":
                    try:
                        rec, keys = model_files.tiny_recognizer()
                        tiny = (str(rec), str(keys))
                    except model_files.ModelFileError as exc:
                        log.warning("tiny recognizer unavailable (run scripts/setup.sh); reading with the small "
                                    "model alone", extra={"error": str(exc)})
                self._tiny = tiny
            return self._tiny

    @property
    def recognizer(self) -> str:
        """The recognizer that reads: the one asked for; ``small`` when the
        tiny model is missing; for ``auto``, ``small`` alone when on this
        machine's runtimes it costs at most :data:`SMALL_ALONE_RATIO` times
        tiny (timed with the runtimes, remembered with them), else
        ``cascade``."""
        with self._lock:
            if self._recognizer is None:
                self._recognizer = self._decide_recognizer()
            return self._recognizer

    def _decide_recognizer(self) -> str:
        """What :attr:`recognizer` settles on (once, under the lock)."""
        if not self.tiny_model:
            return "small"
        if self.asked_recognizer != "auto":
            return self.asked_recognizer
        runtimes, why, seconds = self._choose("cascade")
        self._cascade_runtimes = (runtimes, why)
        tiny = seconds.get("rec", {}).get(runtimes["rec"])
        small = seconds.get("recheck", {}).get(runtimes["recheck"])
        alone = bool(tiny and small and small <= SMALL_ALONE_RATIO * tiny)
        return "small" if alone else "cascade"

    def _models(self, recognizer: str | None = None) -> dict[str, tuple[str | None, str | None]]:
        """Each role's model file and dictionary (None: the wheel's own)
        when reading with ``recognizer`` (default: the one settled on)."""
        small = (self.rec_model, None)
        first = self.tiny_model if (recognizer or self.recognizer) in ("tiny", "cascade") else small
        return {"det": (None, None), "rec": first, "recheck": small}  # type: ignore[dict-item]  # tiny: found

    def _role_params(self, role: str, runtime: backends.Backend, recognizer: str | None = None) -> dict[str, Any]:
        model, keys = self._models(recognizer)[role]
        if role == "det":
            return backends.det_params(runtime, model)
        return backends.rec_params(runtime, model, keys)

    def _candidates(self, recognizer: str) -> backends.Candidates:
        """What :func:`backends.choose` times: each role's model on each runtime installed."""
        base = {**DEFAULT_PARAMS, **backends.engine_config(self.threads_per_worker), **self._extra_params}
        return {role: {rt: {**base, **self._role_params(role, rt, recognizer)} for rt in backends.BACKENDS
                       if backends.available(rt)} for role in _roles(recognizer)}

    def _setup(self) -> tuple[dict[str, Any], RecheckPlan | None]:
        """RapidOCR settings (the defaults, both runtimes' settings, the
        detector's and first recognizer's model and runtime, then the
        caller's) and the cascade's plan, if any."""
        base = {**DEFAULT_PARAMS, **backends.engine_config(self.threads_per_worker)}
        det = self._role_params("det", self.runtimes["det"])
        first = {**base, **det, **self._role_params("rec", self.runtimes["rec"]), **self._extra_params}
        if self.recognizer != "cascade":
            return first, None
        accurate = {**base, **det, **self._role_params("recheck", self.runtimes["recheck"]), **self._extra_params}
        return first, RecheckPlan(accurate_params=accurate, below=self.recheck_below, rules=self.recheck_rules)

    @property
    def params(self) -> dict[str, Any]:
        """RapidOCR settings of the (first) recognizer."""
        return self._setup()[0]

    @property
    def recheck(self) -> RecheckPlan | None:
        """The cascade's plan (None unless ``recognizer`` is ``cascade``)."""
        return self._setup()[1]

    @cached_property
    def version(self) -> str:
        """``rapidocr-<version>/<model>/<runtimes>``, the model being
        ``PP-OCRv6[-int8]`` (small), ``PP-OCRv6-tiny`` or
        ``PP-OCRv6-tiny+small[-int8]`` (cascade), the runtimes as
        :attr:`backend` gives them (``onnxruntime``; ``openvino+onnxruntime+openvino``
        for detector, first and second recognizer), then what reads otherwise
        than the defaults (``/recheck-doubts``, ``/no-glyph-checks``): recorded with every page
        (worked out once: runtimes and recognizer are settled on first use)."""
        family = self._extra_params.get("Det.ocr_version", "PP-OCRv6")
        int8 = "-int8" if self.rec_model else ""
        model = {"small": f"{family}{int8}", "tiny": f"{family}-tiny",
                 "cascade": f"{family}-tiny+small{int8}"}[self.recognizer]
        settings = "".join([f"/recheck-{self.recheck_rules}" if self.recognizer == "cascade" and
                            self.recheck_rules != _INFERENCE.rapidocr.recheck else "",
                            "" if self.glyph_checks else "/no-glyph-checks"])
        return f"rapidocr-{_package_version('rapidocr')}/{model}/{self.backend}{settings}"

    # --- lifecycle -------------------------------------------------------

    def load(self) -> None:
        """Build the model (in-process) or start and warm up the worker pool.

        Idempotent, and once only under concurrency: a second caller waits
        for the first one's load and uses it. Raises
        :class:`EngineUnavailable` if RapidOCR or ONNX Runtime is missing or
        a worker cannot start.
        """
        with self._lock:
            if self._ocr is not None or self._pool is not None:
                return
            for module in ("rapidocr", "onnxruntime"):
                if importlib.util.find_spec(module) is None:
                    raise EngineUnavailable(f"Python package `{module}` is not installed.", hint=_INSTALL_HINT)
            if self.in_process:
                try:
                    self._ocr = rapidocr_worker.build_ocr(*self._setup())
                except Exception as exc:  # ImportError, ONNX Runtime errors
                    raise EngineUnavailable(f"RapidOCR failed to start: {exc}", hint=_INSTALL_HINT) from exc
            else:
                self._start_pool()

    def close(self) -> None:
        """Stop the workers and drop the model. Idempotent."""
        with self._lock:
            self._ocr = None
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def __enter__(self) -> RapidOcrEngine:
        self.load()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def worker_pids(self) -> list[int]:
        """Process ids of the current pool's workers (empty in-process)."""
        return list(self._pool.pids) if self._pool is not None else []

    # --- recognition -----------------------------------------------------

    def recognize(
        self, pages: Iterable[PageImage], max_in_flight: int | None = None
    ) -> Iterator[RecognizedPage]:
        """Recognize ``pages`` lazily (≤ ``max_in_flight`` pulled and not yet
        yielded), yielding one :class:`RecognizedPage` per page in input order.

        Loads the engine on first use (may raise :class:`EngineUnavailable`);
        after that, page failures are results, not exceptions.
        """
        self.load()
        if self._pool is not None and self.recycle_after_pages and \
                self._pages_since_start >= self.recycle_after_pages * self.workers:
            log.info("recycling rapidocr workers", extra={"pages": self._pages_since_start})
            self._restart_pool()  # memory the runtime's arena kept goes back to the system
        if self.in_process:
            for page in pages:
                yield self._recognize_here(page)
            return
        with closing(in_order(pages, self._submit, _window(self.max_in_flight, max_in_flight))) as window:
            for head, rest in window:
                yield self._collect(head, rest)

    def workspace_bytes(self, page: PageImage) -> int:
        """Image copies in flight plus the model's per-page activations."""
        return IMAGE_COPIES * page.nbytes + ACTIVATION_BYTES

    def _recognize_here(self, page: PageImage) -> RecognizedPage:
        t0 = time.perf_counter()
        try:
            raw = rapidocr_worker.run_ocr(self._ocr, page.image, glyph_checks=self.glyph_checks)
        except Exception as exc:
            return self._failed(page, _describe(exc), time.perf_counter() - t0)
        return self._page(page, raw)

    def _submit(self, page: PageImage) -> Slot:
        with self._lock:
            assert self._pool is not None, "pool not started"
            try:
                future = self._pool.submit(self.page_task, page.image)
            except BrokenProcessPool:  # a worker died while the pool was idle
                log.warning("rapidocr worker pool broke while idle; restarting it")
                self._restart_pool()
                assert self._pool is not None
                future = self._pool.submit(self.page_task, page.image)
        return Slot(page=page, future=future)

    def _collect(self, head: Slot, rest: Iterable[Slot]) -> RecognizedPage:
        """Wait for ``head`` and turn its outcome into a page."""
        t0 = time.perf_counter()
        try:
            raw = self._wait(head, rest)
        except FutureTimeout:
            message = f"RapidOCR did not finish the page within {self.page_timeout_seconds:g} s."
            return self._failed(head.page, message, time.perf_counter() - t0)
        except WorkerDied:
            message = "The RapidOCR worker process died (killed, or out of memory) on this page."
            return self._failed(head.page, message, time.perf_counter() - t0)
        except Exception as exc:
            return self._failed(head.page, _describe(exc), time.perf_counter() - t0)
        return self._page(head.page, raw)

    def _wait(self, head: Slot, rest: Iterable[Slot]) -> RawPage:
        """``head``'s result, recovering the pool if it broke.

        - Timeout: the hung worker is killed with its pool; the pages of
          ``rest`` that went down with it are resubmitted; raises FutureTimeout.
        - A worker died: every page the pool lost is re-run *alone* in a
          fresh pool, so a page fails (WorkerDied) only if it kills a worker
          by itself; innocent bystanders of a crash are recognized.
        """
        try:
            return head.future.result(timeout=self.page_timeout_seconds)
        except FutureTimeout:
            log.warning("rapidocr page %d timed out; restarting the worker pool", head.page.page)
            self._restart_pool(rest, kill=True)
            raise
        except BrokenProcessPool:
            self._restart_pool()  # settles every future of the broken pool
            lost = [head, *(s for s in rest if _lost(s.future))]
            log.warning("rapidocr worker died; re-running %d page(s) one at a time", len(lost))
            for slot in lost:
                slot.future = self._run_alone(slot.page)
            return head.future.result()

    def _run_alone(self, page: PageImage) -> Future[RawPage]:
        """Run one page with nothing else in flight; a completed future."""
        outcome: Future[RawPage] = Future()
        try:
            outcome.set_result(self._submit(page).future.result(timeout=self.page_timeout_seconds))
        except FutureTimeout as exc:
            self._restart_pool(kill=True)
            outcome.set_exception(exc)
        except BrokenProcessPool:
            self._restart_pool()
            outcome.set_exception(WorkerDied(f"worker died on page {page.page}"))
        except Exception as exc:
            outcome.set_exception(exc)
        return outcome

    # --- pool ------------------------------------------------------------

    def _start_pool(self) -> None:
        """Start ``workers`` processes and wait until each has warmed up."""
        params, recheck = self._setup()
        glyph_checks = self.glyph_checks
        pool = WorkerPool(self.workers, rapidocr_worker.init_worker,
                          lambda: (params, os.getpid(), recheck, glyph_checks),
                          start_method=self.start_method, wait_ready=True, start_timeout_s=self.start_timeout_seconds,
                          preload=rapidocr_worker.PRELOAD)
        try:
            pool.start()
        except Exception as exc:
            raise EngineUnavailable(
                f"RapidOCR worker processes failed to start: {type(exc).__name__}: {exc}", hint=_INSTALL_HINT
            ) from exc
        self._pool = pool
        self._pages_since_start = 0

    def _restart_pool(self, resubmit: Iterable[Slot] = (), *, kill: bool = False) -> None:
        """Replace the pool (killing its workers first if ``kill``), then
        resubmit the pages of ``resubmit`` whose work the old pool lost."""
        with self._lock:
            old, self._pool = self._pool, None
            if old is not None:
                old.replace(kill=kill)
            self._start_pool()
        for slot in resubmit:
            if _lost(slot.future):
                slot.future.cancel()
                slot.future = self._submit(slot.page).future

    # --- results ---------------------------------------------------------

    def _page(self, page: PageImage, raw: RawPage) -> RecognizedPage:
        self._pages_since_start += 1
        sideways = raw.rotation in (90, 270)
        frame = replace(page, width_pt=page.height_pt, height_pt=page.width_pt) if sideways else page
        pitches = raw.pitches or [None] * len(raw.texts)
        lines = [
            Line(text=text, bbox=quad_box(frame, quad), confidence=confidence(score), page=page.page,
                 pitch=pitch * 72.0 / page.dpi if pitch else None)
            for quad, text, score, pitch in zip(raw.quads, raw.texts, raw.scores, pitches)
            if text.strip()
        ]
        return RecognizedPage(
            page=page.page,
            width_pt=frame.width_pt,
            height_pt=frame.height_pt,
            lines=lines,
            seconds=raw.seconds,
            engine=self.name,
            engine_version=self.version,
            rotation=raw.rotation,
        )

    def _failed(self, page: PageImage, message: str, seconds: float) -> RecognizedPage:
        return failed_page(page, message, engine=self.name, version=self.version, seconds=seconds)


def _roles(recognizer: str) -> tuple[str, ...]:
    """The roles a page goes through with ``recognizer``."""
    return backends.ROLES if recognizer == "cascade" else backends.ROLES[:2]


def _lost(future: Future[Any]) -> bool:
    """Whether a pool restart took this page's work down with it."""
    if not future.done() or future.cancelled():
        return True
    return isinstance(future.exception(), BrokenProcessPool)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"RapidOCR failed on this page: {type(exc).__name__}" + (f": {text}" if text else "")


def _window(default: int, asked: int | None) -> int:
    """The in-flight window: the engine's own, narrowed by the caller's
    admission (never below one page)."""
    return default if asked is None else max(1, min(default, asked))
