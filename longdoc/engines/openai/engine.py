"""The ``openai`` engine: a vision-language OCR model behind vLLM or SGLang.

A page group becomes requests to the model server's OpenAI-compatible chat
completions API, shaped by the model's profile
(:mod:`longdoc.engines.openai.profiles`)::

    group (context c | owned o1 … on)
      multi-page profile:  one request per ≤ max_pages_per_request pages,
                           the first carrying the context pages again; the
                           answer split on <PAGE>, the context pages' share
                           dropped (each page has one owner)
      one-page profile:    one request per owned page, concurrently

Admission is by tokens: a group costs the visual tokens of every page it
sends, each counted as the server counts it in the request that carries it
(:meth:`Profile.visual_tokens <longdoc.engines.openai.profiles.Profile.visual_tokens>`:
an Unlimited-OCR page alone is tiled, 273 tokens plus its tiles'; in a
request of several, 273), + ``output_tokens_per_page`` × owned pages,
against ``inference.openai.kv_budget_tokens`` (see the pipeline's
watermark), and no more than ``max_concurrency`` requests are in flight.
A request's ``max_tokens`` is the recipe's for one page and what the
context leaves for several (:meth:`OpenAIEngine.max_tokens`).

Pages are sent as PNG, lossless, as Baidu's ``infer.py`` sends its renders
(see :func:`data_uri`).

Never a silent truncation. An answer that stopped at ``max_tokens``, ends in
a repetition loop, holds the wrong number of pages, is empty, or never
came (a 5xx or a dropped connection after retries, a timeout, a server
still busy after the group's ``busy_wait_seconds``, a prompt past the
model's context) is not used.
The pages go down a ladder instead, each rung recorded on the pages it
produces (``Page.produced_by`` and ``Page.recovery``)::

    group ─► split (halves, then halves of halves) ─► single pages ─► fallback CPU engine
                                                                      (inference.openai.fallback_engine)

and a page no rung could produce fails with ``engine_failed`` naming why.
A 400 saying the context length was exceeded also lowers the pages each
later request of the engine holds (halved, never below one; logged and
recorded on the pages). A server that refuses connections is down, and
one that answers 401, 403 or 404 twice refuses the key, model or path: the
group raises :class:`~longdoc.errors.EngineUnavailable` (the job fails
with ``engine_unavailable`` and a hint) rather than falling back page by
page.
"""

from __future__ import annotations

import base64
import io
import logging
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from PIL import Image

from longdoc.config import InferenceSettings
from longdoc.engines.base import (
    EngineCapabilities,
    GroupPlan,
    PageGroup,
    PageImage,
)
from longdoc.engines.fallback import Fallback
from longdoc.engines.openai.checks import Incomplete, check_answer, check_pages
from longdoc.engines.openai.client import Answer, BusyBudget, ModelClient, RequestFailed, ServerFacts
from longdoc.engines.openai.profiles import PROMPT_TOKENS, SGLANG_NGRAM_PROCESSOR, get_profile
from longdoc.engines.parsers import split_pages
from longdoc.errors import EngineFailed, EngineUnavailable, JobCancelled
from longdoc.model import FALLBACK_PRODUCER, ErrorInfo, Page, PageFlag, PageStatus
from longdoc.plan.groups import DocumentPlan

log = logging.getLogger(__name__)

#: zlib level of the PNG pages are sent as. A 1700×2200 px page (200 dpi
#: letter) on this 2-core AMD EPYC, Pillow 13.0.0, median of 5: a clean
#: render of text lines 60 ms (0.44 MB) at level 1, 92 ms (0.38 MB) at 6,
#: 9 ms as JPEG q90 (0.73 MB); the same page with scanner noise (±6 grey
#: levels) 206 ms (4.09 MB) at 1, 895 ms (4.04 MB) at 6, 12 ms as JPEG q90
#: (1.19 MB). Level 1: nearly level 6's size at a quarter of its time.
PNG_COMPRESS_LEVEL = 1
#: a page of unknown size is costed as US letter (points)
DEFAULT_PAGE_PT = (612.0, 792.0)


class OpenAIEngine:
    """See the module docstring. ``transport`` (an httpx transport) is for
    tests that answer without a server."""

    name = "openai"

    def __init__(self, settings: InferenceSettings, transport: Any = None, fallback: Fallback | None = None) -> None:
        self.settings = settings
        self.config = settings.openai
        self.profile = get_profile(self.config.profile)
        self.capabilities = EngineCapabilities(
            languages=("any",), output="blocks", needs_context=self.profile.multi_page,
            groups_in_flight=self.config.max_concurrency, sequential_groups=False, cost_unit="tokens",
        )
        self.workspace_budget = self.config.kv_budget_tokens
        self.transport = transport
        self.requests = threading.BoundedSemaphore(self.config.max_concurrency)
        self._in_flight = 0
        self._count_lock = threading.Lock()
        self.facts: ServerFacts | None = None
        self._load_lock = threading.Lock()
        #: owned pages per request after a context-length error (None: the configured number)
        self._page_limit: int | None = None
        #: the CPU engine for pages the model could not produce, shared by every session
        #: (the registry's, built from ``fallback_engine``; none: such pages fail)
        self.fallback = fallback or Fallback()

    @property
    def version(self) -> str:
        """``<model>/<profile>``: the configured model until the server
        named it (a checkpoint made with another model is not reused)."""
        model = self.facts.model if self.facts else (self.config.model or "server-default")
        return f"{model}/{self.profile.name}"

    @property
    def requests_in_flight(self) -> int:
        return self._in_flight

    def figures(self) -> dict[str, float]:
        """Requests in flight to the model server (``longdoc_engine_figure``
        on /metrics)."""
        return {"requests_in_flight": float(self._in_flight)}

    @property
    def pages_per_request(self) -> int:
        """Owned pages in one request: the configured number, or fewer
        after the server said a request was past its context length."""
        if not self.profile.multi_page:
            return 1
        configured = self.config.max_pages_per_request or self.profile.max_pages_per_request
        return min(configured, self._page_limit) if self._page_limit else configured

    def lower_page_limit(self, owned: int) -> int | None:
        """A request of ``owned`` pages was past the model's context: later
        requests hold at most half as many (never fewer than one). Returns
        the new limit, or None when it was that low already."""
        with self._count_lock:
            before = self.pages_per_request
            limit = max(1, owned // 2)
            if limit >= before:
                return None
            self._page_limit = limit
        log.warning("the model server's context is exceeded: requests now hold at most %d pages (were %d)",
                    limit, before, extra={"pages_per_request": limit})
        return limit

    # -- Engine -------------------------------------------------------------------

    def load(self) -> None:
        """Ask the server which model it serves. Raises EngineUnavailable."""
        with self._load_lock:
            if self.facts is None:
                client = self.client()
                try:
                    self.facts = client.facts(self.config.model)
                finally:
                    client.close()

    def open_session(self, plan: DocumentPlan | None = None) -> OpenAISession:
        """A session for one document; ``plan`` is not read (each group comes with its pages and DPI)."""
        self.load()
        return OpenAISession(self)

    def group_cost(self, plan: GroupPlan) -> int:
        """Estimated KV tokens: the visual tokens of every page sent, each
        counted from its size at ``plan.dpi`` as the server counts it in the
        request the group sends it in (:meth:`planned_requests`), plus the
        owned pages' expected answers."""
        visual = sum(self.profile.visual_tokens(*_pixels(plan, n), len(request))
                     for request in self.planned_requests(plan) for n in request)
        return visual + len(plan.owned) * self.profile.output_tokens_per_page

    def planned_requests(self, plan: GroupPlan) -> list[list[int]]:
        """The pages of each request a group is sent in when every answer
        is usable: one request per owned page (one-page profiles), or
        ``pages_per_request`` owned pages a request, the first carrying the
        context pages before them."""
        owned = list(plan.owned)
        if not self.profile.multi_page:
            return [[n] for n in owned]
        size = self.pages_per_request
        requests = [owned[i:i + size] for i in range(0, len(owned), size)]
        if requests:
            requests[0] = [*plan.context, *requests[0]]
        return requests

    def health(self) -> bool:
        """The model server answers ``/health`` and ``GET /v1/models`` (with
        the model) within a few seconds."""
        client = self.client()
        try:
            if not client.healthy():
                return False
            client.facts(self.facts.model if self.facts else self.config.model)
            return True
        except EngineUnavailable:
            return False
        finally:
            client.close()

    def close(self) -> None:
        self.fallback.close()

    # -- parts for the session ------------------------------------------------------

    def client(self) -> ModelClient:
        key = self.config.api_key.get_secret_value() if self.config.api_key else None
        return ModelClient(self.config.base_url, key, self.config.timeout_seconds, self.config.retries,
                           _CountingSemaphore(self), self.transport, busy_wait_s=self.config.busy_wait_seconds)

    def context_tokens(self) -> int:
        """The model's context: the server's ``max_model_len``, else the profile's."""
        served = self.facts.max_model_len if self.facts else None
        return served or self.profile.context_tokens

    def max_tokens(self, pages: int, visual_tokens: int) -> int:
        """``max_tokens`` of a request of ``pages`` pages whose images are
        ``visual_tokens`` placeholder tokens. Asked for:
        ``inference.openai.max_tokens_per_page`` × pages when set (an explicit
        setting wins over the profile's), else the profile's (its recipe's)
        for one page, and what the context leaves for several (no recipe
        sets one; Unlimited-OCR's HF doc asks for the whole context). Never
        more than the context leaves (context − ``visual_tokens`` −
        :data:`PROMPT_TOKENS`): vLLM and SGLang refuse a request past it
        with a 400; never fewer than 16."""
        room = self.context_tokens() - visual_tokens - PROMPT_TOKENS
        if self.config.max_tokens_per_page:
            wanted = self.config.max_tokens_per_page * pages
        else:
            wanted = self.profile.max_tokens if pages == 1 else room
        return max(16, min(wanted, room))

    def request_body(self, images: list[str], visual_tokens: int) -> dict[str, Any]:
        """A chat completion for ``images`` (data URIs, one per page) whose
        placeholders are ``visual_tokens`` tokens, as the profile's recipe
        for the server kind writes it (see
        :mod:`longdoc.engines.openai.profiles`). Besides the recipe's fields
        longdoc sends ``model`` (the served model), ``stream`` (its setting)
        and ``max_tokens`` where the recipe has none, and on SGLang for
        DeepSeek-OCR-2 the vLLM recipe's sampling fields."""
        profile, config = self.profile, self.config
        pages = len(images)
        body: dict[str, Any] = {
            "model": self.facts.model if self.facts else config.model,
            "messages": [{"role": "user", "content": profile.content(images, config.server, config.prompt)}],
            "max_tokens": self.max_tokens(pages, visual_tokens), "temperature": 0.0,
        }
        if profile.keep_special_tokens:
            body["skip_special_tokens"] = False
        body.update(self._server_fields(pages))
        body["stream"] = config.stream
        return body

    def _server_fields(self, pages: int) -> dict[str, Any]:
        """The no-repeat-n-gram guard's fields for the server kind, and on
        SGLang the image mode (crop for one page, base for several)."""
        profile, server = self.profile, self.config.server
        fields: dict[str, Any] = {}
        if server == "sglang" and profile.image_modes is not None:
            fields["images_config"] = {"image_mode": profile.image_modes[0 if pages == 1 else 1]}
        if profile.ngram is not None and server == "vllm":
            fields["vllm_xargs"] = profile.ngram.args(pages)
        if profile.ngram is not None and server == "sglang":
            fields["custom_logit_processor"] = SGLANG_NGRAM_PROCESSOR
            fields["custom_params"] = profile.ngram.args(pages)
        return fields

    def _count(self, delta: int) -> None:
        with self._count_lock:
            self._in_flight += delta


class _CountingSemaphore:
    """The engine's request semaphore, counting what is in flight (for /metrics)."""

    def __init__(self, engine: OpenAIEngine) -> None:
        self.engine = engine

    def __enter__(self) -> None:
        self.engine.requests.acquire()
        self.engine._count(+1)

    def __exit__(self, *exc: object) -> None:
        self.engine._count(-1)
        self.engine.requests.release()


@dataclass
class _Shown:
    """A page as sent: its data URI in a request of several pages
    (``uri``) and of one page (``uri_one``: crop mode's resolution where the
    profile has one), its size in points, and its render's in pixels
    (width, height)."""

    page: int
    uri: str
    width_pt: float
    height_pt: float
    pixels: tuple[int, int]
    uri_one: str | None = None

    def uri_for(self, pages: int) -> str:
        return self.uri_one if pages == 1 and self.uri_one is not None else self.uri


@dataclass
class _Work:
    """One group in a session: the group (to render pages again for a
    fallback), its pages as sent and its time for waiting out a busy
    server. Groups of a document may run at once, so this travels down the
    ladder rather than living on the session."""

    group: PageGroup
    shown: dict[int, _Shown]
    busy: BusyBudget


class OpenAISession:
    """One document's requests. :meth:`cancel` aborts the requests in flight."""

    def __init__(self, engine: OpenAIEngine) -> None:
        self.engine = engine
        self.client = engine.client()
        self._cancelled = threading.Event()
        self._fallback = engine.fallback.session()

    # -- EngineSession --------------------------------------------------------------

    def recognize(self, group: PageGroup) -> Iterator[Page]:
        work = _Work(group, {s.page: s for s in self._encode(group.images)},
                     BusyBudget(self.engine.config.busy_wait_seconds))
        owned = [n for n in group.owned if n in work.shown]
        context = [n for n in group.context if n in work.shown]
        results: dict[int, Page] = {}
        if self.engine.profile.multi_page:
            start = 0
            while start < len(owned):  # the size is read again: a context-length error lowers it
                chunk = owned[start:start + self.engine.pages_per_request]
                results.update(self._ladder(context if start == 0 else [], chunk, work, "group", []))
                start += len(chunk)
        else:
            results.update(self._one_page_each(owned, work))
        for number in owned:
            yield results[number]

    def cancel(self) -> None:
        self._cancelled.set()
        self.client.close()
        self._fallback.cancel()

    def close(self) -> None:
        self.client.close()
        self._fallback.close()

    # -- the ladder -------------------------------------------------------------------

    def _one_page_each(self, owned: list[int], work: _Work) -> dict[int, Page]:
        workers = max(1, min(len(owned), self.engine.config.max_concurrency))
        with ThreadPoolExecutor(workers, thread_name_prefix="longdoc-openai") as pool:
            futures = [pool.submit(self._ladder, [], [n], work, "page", []) for n in owned]
            results: dict[int, Page] = {}
            for future in futures:
                results.update(future.result())
        return results

    def _ladder(self, context: list[int], owned: list[int], work: _Work, path: str,
                recovery: list[str]) -> dict[int, Page]:
        """``owned`` pages from one request, or from the next rung down."""
        try:
            return self._request(context, owned, work, path, recovery)
        except (Incomplete, RequestFailed) as exc:
            reason = exc.reason
        if self._cancelled.is_set():
            raise JobCancelled("The document's requests were cancelled.")
        step = [*recovery, f"{path}: {reason}"]
        log.info("model answer not usable", extra={"pages": owned, "path": path, "reason": reason})
        if reason == "context_length":
            limit = self.engine.lower_page_limit(len(owned))
            if limit is not None:
                step.append(f"{path}: pages per request lowered to {limit}")
        if len(owned) > 1:
            half = (len(owned) + 1) // 2
            out: dict[int, Page] = {}
            for part in (owned[:half], owned[half:]):
                out.update(self._ladder([], part, work, "split" if len(part) > 1 else "single", step))
            return out
        if context:  # one owned page sent with its context: alone next
            return self._ladder([], owned, work, "single", step)
        return self._fall_back(owned, work, step, reason)

    def _request(self, context: list[int], owned: list[int], work: _Work, path: str,
                 recovery: list[str]) -> dict[int, Page]:
        shown = work.shown
        sent = [*context, *owned]
        visual = sum(self.engine.profile.visual_tokens(*shown[n].pixels, len(sent)) for n in sent)
        body = self.engine.request_body([shown[n].uri_for(len(sent)) for n in sent], visual)
        answer = self.client.complete(body, self._cancelled.is_set, work.busy)
        if self._cancelled.is_set():
            raise JobCancelled("The document's requests were cancelled.")
        check_answer(answer.text, answer.finish_reason)
        notes = list(recovery)
        if answer.busy:
            codes = "/".join(str(c) for c in sorted(set(answer.busy)))
            notes.append(f"{path}: waited {answer.waited_s:.1f}s for a busy server ({len(answer.busy)}x {codes})")
        if answer.retries:
            notes.append(f"{path}: retried {answer.retries}x after a transient failure")
        if not answer.text.strip():
            raise Incomplete("empty", "the answer is empty")
        chunks = split_pages(answer.text, len(sent)) if len(sent) > 1 else [answer.text]
        if len(sent) > 1:
            check_pages(chunks, len(sent))
        pages = {}
        for number, text in zip(sent[len(context):], chunks[len(context):]):
            pages[number] = self._page(number, text, shown[number], path, notes, answer)
        return pages

    def _page(self, number: int, text: str, shown: _Shown, path: str, notes: list[str], answer: Answer) -> Page:
        blocks = self.engine.profile.parser(text, number, shown.width_pt, shown.height_pt)
        return Page(number=number, width=shown.width_pt, height=shown.height_pt, blocks=blocks,
                    engine=self.engine.name, engine_version=self.engine.version, produced_by=path,
                    recovery=list(notes))

    def _fall_back(self, owned: list[int], work: _Work, recovery: list[str], reason: str) -> dict[int, Page]:
        """``owned`` (one page, whose own request failed for ``reason``) read
        by the fallback engine; flagged ``truncated`` or ``repetition`` when
        that was the model's answer for it."""
        shown = work.shown
        pages = self._fallback.read(work.group, owned)
        if pages is None:
            return {n: _failed(n, shown[n], recovery, "no fallback engine is configured") for n in owned}
        name = self.engine.fallback.name
        seen = [flag for flag in (PageFlag.TRUNCATED, PageFlag.REPETITION) if flag.value == reason]
        out = {}
        for page in pages:
            out[page.number] = page.model_copy(update={
                "produced_by": f"{FALLBACK_PRODUCER}{name}", "recovery": [*recovery, f"fallback: {name}"],
                "flags": seen})
        for n in owned:
            out.setdefault(n, _failed(n, shown[n], recovery, f"the fallback engine {name} returned nothing"))
        return out

    # -- images ---------------------------------------------------------------------

    def _encode(self, images: Iterable[PageImage]) -> Iterator[_Shown]:
        """Each page as a data URI at the size a request of several pages
        sends it, and (where one page is sent at another size: crop mode)
        at the size a one-page request sends it."""
        profile = self.engine.profile
        for image in images:
            if self._cancelled.is_set():
                raise JobCancelled("The document's requests were cancelled.")
            height, width = image.image.shape[:2]
            several = profile.image_size(width, height, 2) if profile.multi_page else None
            one = profile.image_size(width, height, 1)
            uri = data_uri(image, size=several or one)
            uri_one = data_uri(image, size=one) if several is not None and one != several else None
            yield _Shown(image.page, uri, image.width_pt, image.height_pt, (width, height), uri_one)


def data_uri(image: PageImage, max_side: int | None = None, *, size: tuple[int, int] | None = None) -> str:
    """The page as a PNG data URI (``data:image/png;base64,…``: lossless, as
    Baidu's Unlimited-OCR ``infer.py`` sends its PNG renders; zlib level
    :data:`PNG_COMPRESS_LEVEL`): resized to ``size`` (width, height) when
    given, else its longest side at most ``max_side`` pixels."""
    picture = Image.fromarray(image.image)
    if size is None and max_side is not None:
        scale = max_side / max(picture.size)
        if scale < 1:
            size = (max(1, round(picture.width * scale)), max(1, round(picture.height * scale)))
    if size is not None and size != picture.size:
        picture = picture.resize(size, Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    picture.convert("RGB").save(buffer, format="PNG", compress_level=PNG_COMPRESS_LEVEL)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _pixels(plan: GroupPlan, number: int) -> tuple[int, int]:
    """Page ``number``'s render size in pixels at ``plan.dpi`` (a page of
    unknown or zero size: US letter's)."""
    width, height = plan.sizes.get(number) or DEFAULT_PAGE_PT
    if width <= 0 or height <= 0:
        width, height = DEFAULT_PAGE_PT
    return (max(1, round(width * plan.dpi / 72)), max(1, round(height * plan.dpi / 72)))


def _failed(number: int, shown: _Shown, recovery: list[str], why: str) -> Page:
    message = f"Page {number}: the model could not produce this page ({'; '.join(recovery)}), and {why}."
    error = ErrorInfo.of(EngineFailed(message), number)
    return Page(number=number, width=shown.width_pt, height=shown.height_pt, status=PageStatus.FAILED,
                error=error, engine="openai", recovery=list(recovery))


__all__ = ["EngineUnavailable", "OpenAIEngine", "OpenAISession", "data_uri"]
