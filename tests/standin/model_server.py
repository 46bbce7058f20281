"""STAND-IN for a vLLM / SGLang model server — no GPU, no vision-language model.

An OpenAI-compatible HTTP server for tests and demos of the ``openai``
engine on a machine without a GPU. It answers chat completions whose
content holds page images (``image_url`` data URIs) the way a profile's
model would format them, but the text comes from longdoc's CPU engine
(RapidOCR) and longdoc's own layout, not from a model::

    python -m tests.standin.model_server --port 8001 [--profile auto] [--model standin-ocr]

Endpoints: ``POST /v1/chat/completions`` (streaming and not), ``GET
/v1/models``, ``GET /health``, and for tests ``POST /standin/faults``
(inject faults) and ``GET /standin/stats`` (what it was asked).

The answer format follows the prompt (or ``--profile``): ``Multi page
parsing.`` / ``document parsing.`` → Unlimited-OCR (``<|det|>label [x1, y1,
x2, y2]<|/det|>text``, pages after ``<PAGE>``); ``<|grounding|>`` →
DeepSeek-OCR (``<|ref|>label<|/ref|><|det|>[[…]]<|/det|>``); ``OCR:`` →
PaddleOCR-VL (plain text); anything else → Markdown. Boxes are on the 0..999
grid of each image.

Faults (each a JSON object; ``when_text`` matches the OCR text of any page
in the request, ``min_pages`` the number of images, ``times`` how often it
fires, -1 for always): ``truncate`` (half the answer, ``finish_reason:
length``), ``repeat`` (the answer ends in a loop), ``page_count`` (one page
short), ``empty``, ``error`` (HTTP ``status``, default 500, with
``message`` in the error body and, when given, ``retry_after`` as the
``Retry-After`` header: ``"1"`` or an HTTP date), ``slow`` (``seconds``
before answering), ``trickle`` (the answer, streamed or not, sent in 64-byte
pieces spread over ``seconds``), ``drop`` (the connection closes mid-answer).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import io
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from PIL import Image

from longdoc.engines.base import PageImage
from longdoc.engines.paged import page_from
from longdoc.layout import find_furniture, layout_page
from longdoc.model import Block, BlockKind

END_OF_ANSWER = "<｜end▁of▁sentence｜>"
KIND_LABELS = {
    BlockKind.TITLE: "title", BlockKind.HEADING: "sub_title", BlockKind.PARAGRAPH: "text", BlockKind.LIST: "text",
    BlockKind.TABLE: "table", BlockKind.FIGURE: "image", BlockKind.CAPTION: "image_caption",
    BlockKind.FOOTNOTE: "footnote", BlockKind.SIDENOTE: "aside_text", BlockKind.HEADER: "header",
    BlockKind.FOOTER: "footer", BlockKind.PAGE_NUMBER: "page_number", BlockKind.FORMULA: "equation",
}
FAULTS = ("truncate", "repeat", "page_count", "empty", "error", "slow", "trickle", "drop")
CHARS_PER_TOKEN = 3


@dataclass
class Fault:
    kind: str
    when_text: str | None = None
    min_pages: int = 1
    times: int = -1
    status: int = 500
    seconds: float = 5.0
    message: str = "injected fault"
    retry_after: str | None = None
    fired: int = 0

    def matches(self, texts: list[str]) -> bool:
        if self.times != -1 and self.fired >= self.times:
            return False
        if len(texts) < self.min_pages:
            return False
        return self.when_text is None or any(self.when_text in t for t in texts)


@dataclass
class Stats:
    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    pages_per_request: list[int] = field(default_factory=list)
    faults_fired: list[str] = field(default_factory=list)


class StandinModel:
    """Reads page images with RapidOCR and formats the answer as a profile's model would."""

    def __init__(self, profile: str, model: str) -> None:
        from longdoc.engines.rapidocr import RapidOcrEngine

        self.profile, self.model = profile, model
        self.ocr = RapidOcrEngine(workers=1)  # in this process; one page at a time
        self._lock = threading.Lock()
        self._cache: dict[str, list[Block]] = {}
        self.faults: list[Fault] = []
        self.stats = Stats()

    def read(self, images: list[Image.Image]) -> list[tuple[list[Block], str]]:
        """(blocks, plain text) of each image, OCR cached by content."""
        out = []
        for image in images:
            key = hashlib.sha256(image.tobytes()).hexdigest()
            with self._lock:
                if key not in self._cache:
                    self._cache[key] = self._blocks(image)
                blocks = self._cache[key]
            out.append((blocks, " ".join(b.text for b in blocks)))
        return out

    def _blocks(self, image: Image.Image) -> list[Block]:
        pixels = np.asarray(image.convert("RGB"))
        page = PageImage(page=1, image=pixels, dpi=72.0, width_pt=image.width, height_pt=image.height)
        (rec,) = list(self.ocr.recognize([page]))
        recognized = page_from(rec)
        return layout_page(recognized, find_furniture(recognized, []))

    def answer(self, prompt: str, pages: list[tuple[list[Block], tuple[int, int]]]) -> str:
        style = self.profile if self.profile != "auto" else _style_of(prompt)
        if style == "unlimited-ocr":
            texts = [_grounded(blocks, size, deepseek=False) for blocks, size in pages]
            return "".join(f"<PAGE>{t}" for t in texts) if len(texts) > 1 else texts[0]
        if style == "deepseek-ocr-2":
            return "".join(_grounded(blocks, size, deepseek=True) for blocks, size in pages) + END_OF_ANSWER
        if style == "paddleocr-vl":
            return "\n\n".join(b.text for blocks, _ in pages for b in blocks)
        return "\n\n".join(_markdown(b) for blocks, _ in pages for b in blocks)


def _style_of(prompt: str) -> str:
    if "page parsing" in prompt or "document parsing" in prompt:
        return "unlimited-ocr"
    if "<|grounding|>" in prompt:
        return "deepseek-ocr-2"
    if prompt.strip().startswith("OCR:"):
        return "paddleocr-vl"
    return "generic"


def _grid(block: Block, size: tuple[int, int]) -> list[int]:
    width, height = size
    b = block.bbox
    return [round(min(max(v / d, 0.0), 1.0) * 999) for v, d in ((b.x0, width), (b.y0, height), (b.x1, width), (b.y1, height))]


def _content(block: Block) -> str:
    if block.kind is BlockKind.TITLE:
        return f"# {block.text}"
    if block.kind is BlockKind.HEADING:
        return f"## {block.text}"
    return block.text


def _grounded(blocks: list[Block], size: tuple[int, int], *, deepseek: bool) -> str:
    parts = []
    for block in blocks:
        label, box = KIND_LABELS.get(block.kind, "text"), _grid(block, size)
        if deepseek:
            parts.append(f"<|ref|>{label}<|/ref|><|det|>[[{box[0]}, {box[1]}, {box[2]}, {box[3]}]]<|/det|>\n{_content(block)}\n\n")
        else:
            parts.append(f"<|det|>{label} [{box[0]}, {box[1]}, {box[2]}, {box[3]}]<|/det|>{_content(block)}\n")
    return "".join(parts)


def _markdown(block: Block) -> str:
    return _content(block)


def _images(body: dict[str, Any]) -> tuple[str, list[Image.Image]]:
    prompt, images = "", []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            prompt += content
            continue
        for part in content or []:
            if part.get("type") == "text":
                prompt += part.get("text", "")
            elif part.get("type") == "image_url":
                url = part["image_url"]["url"]
                data = base64.b64decode(url.split(",", 1)[1])
                images.append(Image.open(io.BytesIO(data)).convert("RGB"))
    return prompt, images


def create_app(profile: str = "auto", model: str = "standin-ocr") -> FastAPI:
    app = FastAPI(title="longdoc stand-in model server (no model: RapidOCR behind an OpenAI-compatible API)")
    state = StandinModel(profile, model)
    app.state.standin = state

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": state.model, "object": "model", "owned_by": "longdoc-standin",
                                            "root": "longdoc-standin/rapidocr", "max_model_len": 32768}]}

    @app.post("/standin/faults")
    async def set_faults(request: Request) -> dict[str, Any]:
        rules = await request.json()
        bad = [r.get("kind") for r in rules if r.get("kind") not in FAULTS]
        if bad:
            return JSONResponse(status_code=400, content={"error": f"unknown fault kinds {bad}; known {FAULTS}"})
        state.faults = [Fault(**r) for r in rules]
        return {"faults": len(state.faults)}

    @app.get("/standin/stats")
    def stats() -> dict[str, Any]:
        s = state.stats
        return {"requests": s.requests, "in_flight": s.in_flight, "max_in_flight": s.max_in_flight,
                "pages_per_request": s.pages_per_request, "faults_fired": s.faults_fired}

    @app.post("/v1/chat/completions")
    async def complete(request: Request):
        body = await request.json()
        s = state.stats
        s.requests += 1
        s.in_flight += 1
        s.max_in_flight = max(s.max_in_flight, s.in_flight)
        try:
            prompt, images = _images(body)
            s.pages_per_request.append(len(images))
            read = await asyncio.to_thread(state.read, images)
            texts = [text for _, text in read]
            fault = next((f for f in state.faults if f.matches(texts)), None)
            if fault is not None:
                fault.fired += 1
                s.faults_fired.append(fault.kind)
            if fault is not None and fault.kind == "slow":
                await asyncio.sleep(fault.seconds)
            if fault is not None and fault.kind == "error":
                headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else None
                return JSONResponse(status_code=fault.status, headers=headers,
                                    content={"object": "error", "message": fault.message, "code": fault.status})
            answer = state.answer(prompt, [(blocks, im.size) for (blocks, _), im in zip(read, images)])
            answer, finish = _with_fault(answer, fault, len(images))
            limit = int(body.get("max_tokens") or 1_000_000) * CHARS_PER_TOKEN
            if len(answer) > limit:
                answer, finish = answer[:limit], "length"
        finally:
            s.in_flight -= 1
        drop = fault is not None and fault.kind == "drop"
        trickle = fault.seconds if fault is not None and fault.kind == "trickle" else None
        if body.get("stream") or drop:
            events = _sse(answer, finish, state.model, drop)
            if trickle:
                events = _trickled(events, trickle, max(len(answer), 1) // 64 + 2)
            return StreamingResponse(events, media_type="text/event-stream")
        completion = {"id": "standin", "object": "chat.completion", "created": int(time.time()), "model": state.model,
                      "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                                   "finish_reason": finish}]}
        if trickle:
            data = json.dumps(completion)
            pieces = (data[i:i + 64] for i in range(0, len(data), 64))
            return StreamingResponse(_trickled(pieces, trickle, len(data) // 64 + 1), media_type="application/json")
        return completion

    return app


def _with_fault(answer: str, fault: Fault | None, pages: int) -> tuple[str, str]:
    kind = fault.kind if fault is not None else None
    if kind == "truncate":
        return answer[: len(answer) // 2], "length"
    if kind == "repeat":
        return answer[: len(answer) // 2] + "the the the " * 400, "length"
    if kind == "empty":
        return "", "stop"
    if kind == "page_count" and pages > 1:
        return answer[: answer.rfind("<PAGE>")], "stop"
    return answer, "stop"


async def _trickled(pieces, seconds: float, count: int):
    """``pieces`` (an iterable or async iterable of about ``count``) spread
    over ``seconds``: a pause before each."""
    pause = seconds / max(count, 1)
    if hasattr(pieces, "__aiter__"):
        async for piece in pieces:
            await asyncio.sleep(pause)
            yield piece
    else:
        for piece in pieces:
            await asyncio.sleep(pause)
            yield piece


async def _sse(answer: str, finish: str, model: str, drop: bool):
    step = 64
    for i in range(0, max(len(answer), 1), step):
        if drop and i >= len(answer) // 2:
            raise ConnectionAbortedError("injected fault: connection dropped")
        chunk = {"id": "standin", "object": "chat.completion.chunk", "model": model,
                 "choices": [{"index": 0, "delta": {"content": answer[i:i + step]}, "finish_reason": None}]}
        yield f"data: {json.dumps(chunk)}\n\n"
    if drop:
        raise ConnectionAbortedError("injected fault: connection dropped")
    last = {"id": "standin", "object": "chat.completion.chunk", "model": model,
            "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    yield f"data: {json.dumps(last)}\n\ndata: [DONE]\n\n"


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--profile", default="auto",
                        choices=["auto", "unlimited-ocr", "deepseek-ocr-2", "paddleocr-vl", "generic"])
    parser.add_argument("--model", default="standin-ocr")
    args = parser.parse_args(argv)
    uvicorn.run(create_app(args.profile, args.model), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
