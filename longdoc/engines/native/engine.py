"""The ``native`` engine: Unlimited-OCR in-process, with longdoc's cache.

Pieces (each its own module, in the order data meets them)::

    weights      checkpoint folder checked against SHA256SUMS, or random weights
    runtime      page image → 273 visual tokens; tokenizer specials
    kv_manager   admission of a document's sequence by its known KV peak
    sequence     one document's infinite decoding over its groups
    kv_cache     the per-sequence buffer: pinned reference + window ring
    srswa        page gating, block selection, exact merged attention
    decoder      transformers' layers run over that cache, batched steps
    scheduler    one thread stepping every running sequence together

The attention window n is the checkpoint's ``sliding_window`` unless
``inference.native.window`` sets another (an experiment: warned of at load,
and in every page's version). At load the KV workspace is sized: the
configured ``kv_budget_mb``, or room for ``max_sequences`` peaks under the
watermark (a sequence of ``inference.page_chunk_size`` pages); the log and
``/readyz`` (:meth:`NativeEngine.ready_details`) say how many sequences fit.
A session is one document, sized by the document's plan (its group size,
fixed when the job was accepted, whatever this worker's settings say): at
its first group it reserves that sequence's peak in the
:class:`~longdoc.engines.native.kv_manager.KVWorkspaceManager` (waiting
while the watermark is reached) and holds it until close or cancel. Groups must come in order (``sequential_groups``): the cache is
carried from one to the next. Pages the model did not finish (cut at
``max_tokens_per_page``, or left unwritten when it ended the document) go
to the fallback engine, or fail with ``engine_failed``.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Iterator
from typing import Any

from longdoc.config import InferenceSettings
from longdoc.engines.base import EngineCapabilities, GroupPlan, PageGroup, PageImage
from longdoc.engines.fallback import Fallback
from longdoc.engines.native.kv_manager import KvFigures, KVWorkspaceManager, capacity_for
from longdoc.engines.native.ngram import NGramGuard
from longdoc.engines.native.runtime import NativeModel
from longdoc.engines.native.scheduler import Scheduler
from longdoc.engines.native.sequence import DocumentSequence, PageText, peak_bytes
from longdoc.engines.native.srswa import SrswaSettings
from longdoc.engines.parsers import grounded_blocks
from longdoc.errors import EngineFailed, EngineUnavailable, JobCancelled
from longdoc.model import FALLBACK_PRODUCER, ErrorInfo, Page, PageFlag, PageStatus
from longdoc.plan.admission import Reservation
from longdoc.plan.groups import DocumentPlan

log = logging.getLogger(__name__)


class NativeEngine:
    name = "native"

    def __init__(self, settings: InferenceSettings, model: NativeModel | None = None,
                 fallback: Fallback | None = None) -> None:
        self.settings = settings
        self.config = settings.native
        self.capabilities = EngineCapabilities(
            languages=("any",), output="blocks", needs_context=True,
            groups_in_flight=self.config.max_sequences, sequential_groups=True, cost_unit="bytes",
            session_plan=True)
        #: the pipeline's admission of group images (``group_cost``), apart from the KV
        self.workspace_budget = self._image_budget()
        #: the KV workspace: sized at :meth:`load`, when the architecture is known
        self.kv: KVWorkspaceManager | None = None
        #: one sequence's KV reservation (bytes), known at :meth:`load`
        self.sequence_peak = 0
        self.srswa = SrswaSettings(self.config.top_pages, self.config.top_blocks, self.config.block_size,
                                   self.config.gating)
        self.model = model
        self.scheduler: Scheduler | None = None
        self._lock = threading.Lock()
        #: the CPU engine for pages the model did not finish, shared by every session
        #: (the registry's, built from ``fallback_engine``; none: such pages fail)
        self.fallback = fallback or Fallback()

    @property
    def window(self) -> int | None:
        """The attention window n in effect: ``inference.native.window``, or
        (null, the default) the checkpoint's own ``sliding_window``; None
        before the model is loaded."""
        if self.config.window is not None:
            return self.config.window
        return self.model.sliding_window if self.model is not None else None

    @property
    def version(self) -> str:
        """``<model version>/<attention>-w<n>``; a window that is not the
        checkpoint's says so: ``-w<n>-ckpt<checkpoint's n>``."""
        if self.model is None:
            return f"unloaded/{self.config.attention}-w{self.config.window or 'ckpt'}"
        own = self.model.sliding_window
        window = f"-w{self.window}" if self.window == own else f"-w{self.window}-ckpt{own}"
        return f"{self.model.version}/{self.config.attention}{window}"

    # -- Engine ----------------------------------------------------------------------

    def load(self) -> None:
        with self._lock:
            if self.model is None:
                self.model = self._load_model()
            if self.kv is None:
                self._warn_of_another_window()
                self.kv = self._kv_workspace()
            if self.scheduler is None:
                self.scheduler = Scheduler(self.model, self.config.max_sequences)

    def _load_model(self) -> NativeModel:
        from longdoc.engines.native import weights

        path = self.config.model_path or self.settings.model_path
        if not path:
            raise EngineUnavailable("The native engine needs a model folder: set inference.native.model_path.",
                                    hint="Point it at an Unlimited-OCR checkpoint folder with a SHA256SUMS manifest.")
        torch = weights._torch()
        device = self.device(torch)
        dtype = self.dtype(torch, device)
        model, tokenizer, checkpoint = weights.load(path, dtype, device)
        log.info("native engine loaded %s on %s (%s)", checkpoint.version, device, weights.describe(model))
        return NativeModel.build(model, tokenizer, checkpoint.version, self.config.attention, self.srswa)

    def _warn_of_another_window(self) -> None:
        assert self.model is not None
        own = self.model.sliding_window
        if self.window != own:
            log.warning("inference.native.window is %d but the checkpoint's sliding_window is %d: attention is "
                        "not the model's own (an experiment); every page records it in its engine_version %s",
                        self.window, own, self.version)

    def _kv_workspace(self) -> KVWorkspaceManager:
        """The KV workspace: ``kv_budget_mb``, or (null) sized for ``max_sequences`` peaks."""
        assert self.model is not None and self.window is not None
        self.sequence_peak = peak_bytes(self.model, self.window, self.settings.page_chunk_size)
        watermark, wanted = self.settings.kv_cache_watermark, self.config.max_sequences
        budget = self.config.kv_budget_mb
        capacity = budget * 2**20 if budget is not None else capacity_for(self.sequence_peak, wanted, watermark)
        kv = KVWorkspaceManager(capacity, watermark)
        fit = kv.sequences_fit(self.sequence_peak)
        level = logging.WARNING if fit < wanted else logging.INFO
        log.log(level, "native engine KV budget %.0f MiB (%s): %d of max_sequences %d sequences fit under "
                "kv_cache_watermark %g (each reserves %.1f MiB: %d pages, window %d)", capacity / 2**20,
                "inference.native.kv_budget_mb" if budget is not None else "sized for max_sequences", fit, wanted,
                watermark, self.sequence_peak / 2**20, self.settings.page_chunk_size, self.window)
        return kv

    def _image_budget(self) -> int:
        """Room for ``max_sequences`` groups of US Letter pages at the
        configured DPI under the watermark: the page images never hold back
        the documents the KV budget admits."""
        page = 612 * 792 * (self.settings.dpi / 72) ** 2 * 3
        return math.ceil(self.config.max_sequences * self.settings.page_chunk_size * page
                         / self.settings.kv_cache_watermark)

    def device(self, torch: Any) -> str:
        if self.config.device == "auto":
            return "cuda" if torch.cuda.is_available() else "cpu"
        if self.config.device == "cuda" and not torch.cuda.is_available():
            raise EngineUnavailable("inference.native.device is cuda but no CUDA device is visible.")
        return self.config.device

    def dtype(self, torch: Any, device: str) -> Any:
        if self.config.dtype == "auto":
            return torch.bfloat16 if device == "cuda" else torch.float32
        return getattr(torch, self.config.dtype)

    def open_session(self, plan: DocumentPlan | None = None) -> NativeSession:
        """A session whose cache holds groups of ``plan.page_chunk_size``
        pages (None: of ``inference.page_chunk_size``)."""
        self.load()
        return NativeSession(self, plan or DocumentPlan(self.settings.page_chunk_size, self.settings.chunk_overlap,
                                                        self.settings.dpi))

    def group_cost(self, plan: GroupPlan) -> int:
        """The group's page images while they are encoded (the KV is reserved
        per document by the KV workspace manager)."""
        return sum(int(w * h * (plan.dpi / 72) ** 2 * 3) for w, h in
                   (plan.sizes.get(p, (612.0, 792.0)) for p in (*plan.context, *plan.owned)))

    def health(self) -> bool:
        return self.model is not None

    def figures(self) -> dict[str, float]:
        """The KV workspace manager's figures (``longdoc_engine_figure`` on
        /metrics): capacity, limit (watermark × capacity) and reserved
        bytes, sequences holding a reservation and waiting for one,
        sequences admitted so far, the most bytes ever reserved; zeros
        before :meth:`load`."""
        kv = self.kv.figures() if self.kv is not None else KvFigures(0, 0, 0, 0, 0, 0, 0)
        return {"kv_capacity_bytes": kv.capacity, "kv_limit_bytes": kv.limit, "kv_reserved_bytes": kv.reserved,
                "kv_sequences": kv.sequences, "kv_sequences_waiting": kv.waiting,
                "kv_sequences_admitted": kv.admitted_total, "kv_peak_reserved_bytes": kv.peak_reserved}

    def ready_details(self) -> dict[str, int]:
        """What ``/readyz`` shows of the KV budget once loaded: its size,
        one sequence's reservation, and how many sequences fit under the
        watermark against ``max_sequences``."""
        if self.kv is None:
            return {}
        return {"kv_budget_bytes": self.kv.capacity, "kv_sequence_bytes": self.sequence_peak,
                "kv_sequences_fit": self.kv.sequences_fit(self.sequence_peak),
                "max_sequences": self.config.max_sequences, "window": int(self.window or 0)}

    def close(self) -> None:
        with self._lock:
            if self.scheduler is not None:
                self.scheduler.close()
                self.scheduler = None
        self.fallback.close()


class NativeSession:
    """One document: its sequence (a cache for groups of the plan's
    ``page_chunk_size`` pages), its KV reservation (that cache's peak),
    its fallback session."""

    def __init__(self, engine: NativeEngine, plan: DocumentPlan) -> None:
        assert engine.model is not None and engine.window is not None and engine.kv is not None
        self.engine = engine
        self.kv = engine.kv
        self.plan = plan
        self.sequence = self._new_sequence()
        self._ticket: Reservation | None = None
        self._cancel = threading.Event()
        self._fallback = engine.fallback.session()
        self._closed = False

    def _new_sequence(self) -> DocumentSequence:
        engine = self.engine
        assert engine.model is not None and engine.window is not None
        return DocumentSequence(
            engine.model, engine.window, self.plan.page_chunk_size,
            engine.config.max_tokens_per_page, engine.config.rebase_positions,
            NGramGuard(engine.config.no_repeat_ngram_size, engine.config.no_repeat_ngram_window))

    def recognize(self, group: PageGroup) -> Iterator[Page]:
        if self._ticket is None:
            self._ticket = self.kv.admit(self.sequence.peak_bytes(), self._cancel)
        model = self.engine.model
        assert model is not None and self.engine.scheduler is not None
        shown: dict[int, PageImage] = {}
        resident = set(self.sequence.resident_pages)
        carried = [p for p in group.context if p in resident]
        new: list[tuple[int, Any]] = []
        for image in group.images:
            if self._cancel.is_set():
                raise JobCancelled("The document was cancelled.")
            shown[image.page] = image
            if image.page not in carried:
                new.append((image.page, model.encode_page(image.image)))
        transcribe = [p for p in (*group.context, *group.owned) if p in shown and p not in carried]
        try:
            with model.lock:
                self.sequence.start_group(carried, new, transcribe)
        except Exception:  # half set up: the next group (the pipeline reads these pages one at a time) starts afresh
            self.sequence.close()
            self.sequence = self._new_sequence()
            raise
        self.engine.scheduler.run(self.sequence, self._cancel)
        texts = {t.page: t for t in self.sequence.pages}
        unfinished = [p for p in group.owned if p in texts and (texts[p].cut or texts[p].missing)]
        rescued = self._fall_back(group, unfinished, texts, shown) if unfinished else {}
        for number in group.owned:
            if number not in shown:
                continue
            yield rescued.get(number) or self._page(number, texts[number], shown[number])

    def _page(self, number: int, text: PageText, image: PageImage) -> Page:
        blocks = grounded_blocks(self.sequence.text(text), number, image.width_pt, image.height_pt)
        return Page(number=number, width=image.width_pt, height=image.height_pt, blocks=blocks,
                    engine=self.engine.name, engine_version=self.engine.version, produced_by="group")

    def _fall_back(self, group: PageGroup, pages: list[int], texts: dict[int, PageText],
                   shown: dict[int, PageImage]) -> dict[int, Page]:
        """The unfinished pages read by the fallback engine (flagged
        ``truncated`` when the model's text was cut at its token limit);
        those it cannot give fail."""
        read = self._fallback.read(group, pages)
        name = self.engine.fallback.name
        out = {}
        for page in read or []:
            text = texts[page.number]
            out[page.number] = page.model_copy(update={
                "produced_by": f"{FALLBACK_PRODUCER}{name}", "recovery": [self._unfinished(text), f"fallback: {name}"],
                "flags": [PageFlag.TRUNCATED] if text.cut else []})
        missing = "no fallback engine is configured" if read is None else f"the fallback engine {name} returned nothing"
        for number in pages:
            if number not in out:
                out[number] = self._failed(number, texts[number], shown[number], missing)
        return out

    def _unfinished(self, text: PageText) -> str:
        return (f"cut at {self.engine.config.max_tokens_per_page} tokens" if text.cut
                else "not written before the model ended the document")

    def _failed(self, number: int, text: PageText, image: PageImage, missing: str) -> Page:
        why = self._unfinished(text)
        error = ErrorInfo.of(EngineFailed(f"Page {number}: the model's transcription was {why}, and {missing}."), number)
        return Page(number=number, width=image.width_pt, height=image.height_pt, status=PageStatus.FAILED,
                    error=error, engine=self.engine.name, engine_version=self.engine.version, recovery=[why])

    def cancel(self) -> None:
        self._cancel.set()
        self._fallback.cancel()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.sequence.close()
        if self._ticket is not None:
            self.kv.release(self._ticket)
            self._ticket = None
        self._fallback.close()
