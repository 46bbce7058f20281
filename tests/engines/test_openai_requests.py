"""What the openai engine sends, read back from a FAKE recording server on
loopback (tests/engines/recording_server.py): each profile's message as its
recipe writes it, the no-repeat-n-gram guard on vLLM and on SGLang, the
resolution a page is sent at, and streamed answers (usage-only chunks, a
trailing page separator, linear accumulation).

Sources pinned here:

- vLLM recipe, Unlimited-OCR: https://github.com/vllm-project/recipes/blob/main/models/baidu/Unlimited-OCR.yaml
  ("prompt text must begin with a literal ``<image>\\n``"; text part, then image part; ``vllm_xargs``
  ngram_size 35, window_size 128, 1024 for multi-page)
- Baidu, Unlimited-OCR README (SGLang section) and infer.py: https://github.com/baidu/Unlimited-OCR
  (``[{"type": "text", "text": "document parsing."}] + images``; ``images_config``; ``custom_logit_processor:
  DeepseekOCRNoRepeatNGramLogitProcessor.to_str()``; ``custom_params`` ngram_size 35, window_size 128 | 1024)
- vLLM recipes, DeepSeek-OCR / DeepSeek-OCR-2: https://github.com/vllm-project/recipes/blob/main/models/deepseek-ai/DeepSeek-OCR-2.yaml
  and .../DeepSeek-OCR.yaml (online example: image part, then text part without a placeholder; ``vllm_xargs``
  ngram_size 30, window_size 90, whitelist [128821, 128822]); the prompt text from
  https://github.com/deepseek-ai/DeepSeek-OCR/blob/main/DeepSeek-OCR-master/DeepSeek-OCR-vllm/config.py
- vLLM recipe, PaddleOCR-VL: https://github.com/vllm-project/recipes/blob/main/models/PaddlePaddle/PaddleOCR-VL.yaml
  (image part, then ``OCR:``)
- SGLang: https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/sampling/custom_logit_processor.py
  (``to_str`` = ``json.dumps({"callable": dill.dumps(cls).hex()})``)
- crop mode: https://github.com/vllm-project/vllm/blob/main/vllm/transformers_utils/processors/deepseek_ocr.py
  (``dynamic_preprocess``: 640-px tiles, 2 to 6 of them; a 1024² global view)
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import pickletools
import sys
import types

import httpx
import numpy as np
import pytest
from PIL import Image

from longdoc.config import load_settings
from longdoc.engines.base import GroupPlan, PageGroup, PageImage
from longdoc.engines.openai import client as client_module
from longdoc.engines.openai.engine import OpenAIEngine
from longdoc.engines.openai.profiles import PROFILES, SGLANG_NGRAM_PROCESSOR, Crop
from tests.engines.recording_server import RecordingServer, image_urls

SGLANG_MODULE = "sglang.srt.sampling.custom_logit_processor"
SGLANG_CLASS = "DeepseekOCRNoRepeatNGramLogitProcessor"


def _engine(url: str, **openai) -> OpenAIEngine:
    settings = load_settings(overrides={"inference": {"engine": "openai", "openai": {
        "base_url": f"{url}/v1", "retries": 0, "timeout_seconds": 20, "fallback_engine": None, **openai}}})
    return OpenAIEngine(settings.inference)


def _page(number: int, width: int = 1700, height: int = 2200) -> PageImage:
    """A letter page rendered at 200 dpi (1700×2200 px), grey with a mark."""
    pixels = np.full((height, width, 3), 235, dtype=np.uint8)
    pixels[100:140, 100:100 + 10 * number] = 20
    return PageImage(page=number, image=pixels, dpi=200.0, width_pt=width * 72 / 200, height_pt=height * 72 / 200)


def _read(engine: OpenAIEngine, owned: list[int], context: list[int] = (), **page) -> list:
    images = [_page(n, **page) for n in [*context, *owned]]
    group = PageGroup(plan=GroupPlan(index=0, owned=tuple(owned), context=tuple(context)), images=images)
    session = engine.open_session()
    try:
        return list(session.recognize(group))
    finally:
        session.close()


def _size(uri: str) -> tuple[int, int]:
    return Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))).size


def _parts(body) -> list[tuple[str, str | None]]:
    """The user message's parts as (type, text)."""
    (message,) = body["messages"]
    return [(p["type"], p.get("text")) for p in message["content"]]


# -- 4: the n-gram guard on SGLang, and on vLLM --------------------------------------------


@pytest.mark.parametrize(("pages", "window"), [(1, 128), (3, 1024)])
def test_sglang_gets_the_ngram_processor_and_its_params(pages, window):
    with RecordingServer() as server:
        _read(_engine(server.url, server="sglang", stream=False), list(range(1, pages + 1)))
    (body,) = server.bodies
    assert body["custom_logit_processor"] == SGLANG_NGRAM_PROCESSOR
    assert body["custom_params"] == {"ngram_size": 35, "window_size": window}
    assert body["images_config"] == {"image_mode": "gundam" if pages == 1 else "base"}
    assert body["skip_special_tokens"] is False and "vllm_xargs" not in body


def test_sglang_deepseek_gets_its_ngram_params_with_the_table_whitelist():
    with RecordingServer(answer=lambda body, n: "text") as server:
        _read(_engine(server.url, server="sglang", profile="deepseek-ocr-2", stream=False), [1])
    (body,) = server.bodies
    assert body["custom_logit_processor"] == SGLANG_NGRAM_PROCESSOR
    assert body["custom_params"] == {"ngram_size": 30, "window_size": 90, "whitelist_token_ids": [128821, 128822]}


@pytest.mark.parametrize(("pages", "window"), [(1, 128), (3, 1024)])
def test_vllm_keeps_vllm_xargs_and_gets_no_sglang_fields(pages, window):
    with RecordingServer() as server:
        _read(_engine(server.url, server="vllm", stream=False), list(range(1, pages + 1)))
    (body,) = server.bodies
    assert body["vllm_xargs"] == {"ngram_size": 35, "window_size": window}
    assert not {"custom_logit_processor", "custom_params", "images_config"} & body.keys()


def test_the_pinned_processor_string_is_sglangs_to_str_of_the_class(monkeypatch):
    """``to_str()`` is ``{"callable": <hex of dill.dumps(cls)>}``; a class in an
    importable module pickles by reference, as the standard pickler writes it:
    the same bytes come from pickling a stand-in class of that module and name."""
    data = json.loads(SGLANG_NGRAM_PROCESSOR)
    assert list(data) == ["callable"]
    pickled = bytes.fromhex(data["callable"])
    names = [arg for op, arg, _ in pickletools.genops(pickled) if op.name == "SHORT_BINUNICODE"]
    assert names == [SGLANG_MODULE, SGLANG_CLASS]
    parts = SGLANG_MODULE.split(".")
    for i in range(1, len(parts) + 1):  # stand-in packages: sglang is not installed here
        monkeypatch.setitem(sys.modules, ".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
    stand_in = type(SGLANG_CLASS, (), {"__module__": SGLANG_MODULE})
    setattr(sys.modules[SGLANG_MODULE], SGLANG_CLASS, stand_in)

    assert pickle.dumps(stand_in, protocol=4) == pickled
    assert pickle.loads(pickled) is stand_in
    assert SGLANG_NGRAM_PROCESSOR == json.dumps({"callable": pickled.hex()})


# -- 5: each profile's message as its recipe writes it ---------------------------------------


@pytest.mark.parametrize(("profile", "server_kind", "pages", "parts"), [
    # vLLM recipe (Unlimited-OCR): text first, "<image>\n" before the prompt
    ("unlimited-ocr", "vllm", 1, [("text", "<image>\ndocument parsing."), ("image_url", None)]),
    ("unlimited-ocr", "vllm", 2, [("text", "<image>\n<image>\nMulti page parsing."), ("image_url", None),
                                  ("image_url", None)]),
    # Baidu README (SGLang) and infer.py: text first, no placeholder
    ("unlimited-ocr", "sglang", 1, [("text", "document parsing."), ("image_url", None)]),
    ("unlimited-ocr", "sglang", 2, [("text", "Multi page parsing."), ("image_url", None), ("image_url", None)]),
    # vLLM recipes (DeepSeek-OCR, -2), online example: the image first, the text without a placeholder
    ("deepseek-ocr-2", "vllm", 1, [("image_url", None), ("text", "<|grounding|>Convert the document to markdown.")]),
    ("deepseek-ocr-2", "sglang", 1, [("image_url", None), ("text", "<|grounding|>Convert the document to markdown.")]),
    # vLLM recipe (PaddleOCR-VL): the image first, then "OCR:"
    ("paddleocr-vl", "vllm", 1, [("image_url", None), ("text", "OCR:")]),
    ("paddleocr-vl", "sglang", 1, [("image_url", None), ("text", "OCR:")]),
])
def test_each_profiles_message_as_its_recipe_writes_it(profile, server_kind, pages, parts):
    with RecordingServer() as server:
        _read(_engine(server.url, profile=profile, server=server_kind, stream=False), list(range(1, pages + 1)))
    assert [_parts(b) for b in server.bodies] == [parts] * (1 if PROFILES[profile].multi_page else pages)


def test_deepseek_text_is_what_vllm_makes_the_config_prompt_of():
    """vLLM puts each missing ``<image>`` placeholder on its own line before
    the text: DeepSeek-OCR-vllm config.py's PROMPT."""
    text = PROFILES["deepseek-ocr-2"].prompt(1, "vllm")
    assert "\n".join(["<image>", text]) == "<image>\n<|grounding|>Convert the document to markdown."


# -- 9: one page at the resolution crop mode reads; several in base mode ----------------------


def test_crop_grid_is_dynamic_preprocess_s():
    crop = Crop(base_size=1024, tile=640)
    assert crop.grid(1700, 2200) == (2, 3)   # letter portrait
    assert crop.grid(2200, 1700) == (3, 2)   # landscape
    assert crop.grid(600, 600) == (1, 1)     # one tile or less: no tiles
    assert crop.grid(1000, 1000) == (2, 2)
    assert crop.grid(500, 4000) == (1, 6)    # a receipt


@pytest.mark.parametrize("server_kind", ["vllm", "sglang"])
def test_a_one_page_unlimited_ocr_request_is_sent_at_crop_resolution(server_kind):
    with RecordingServer() as server:
        _read(_engine(server.url, server=server_kind, stream=False), [1])
    (body,) = server.bodies
    (uri,) = image_urls(body)
    width, height = _size(uri)
    # the 2×3 grid of 640-px tiles is covered (1280×1920) without upsampling, and nothing beyond it is sent
    assert (width, height) == (1484, 1920)
    assert width >= 2 * 640 and height >= 3 * 640


def test_a_multi_page_unlimited_ocr_request_keeps_base_mode():
    with RecordingServer() as server:
        _read(_engine(server.url, stream=False), [2, 3], context=[1])
    (body,) = server.bodies
    assert [_size(u) for u in image_urls(body)] == [(791, 1024)] * 3


def test_a_page_split_down_to_one_is_sent_at_crop_resolution():
    """A multi-page answer that is not usable goes down to single pages:
    those are sent at crop resolution."""
    def answer(body, images):
        return "one page only" if images > 1 else "page"

    with RecordingServer(answer=answer) as server:
        pages = _read(_engine(server.url, stream=False), [1, 2])
    assert [p.produced_by for p in pages] == ["single", "single"]
    sizes = [[_size(u) for u in image_urls(b)] for b in server.bodies]
    assert sizes[0] == [(791, 1024)] * 2
    assert sizes[1:] == [[(1484, 1920)], [(1484, 1920)]]


def test_deepseek_one_page_is_not_downscaled_below_its_768_px_tile_grid():
    with RecordingServer(answer=lambda body, n: "text") as server:
        _read(_engine(server.url, profile="deepseek-ocr-2", stream=False), [1])
    (uri,) = image_urls(server.bodies[0])
    assert _size(uri) == (1700, 2200)  # the 2×3 grid of 768 px (1536×2304) is larger than the render


def test_a_small_render_is_never_upsampled():
    with RecordingServer() as server:
        _read(_engine(server.url, stream=False), [1], width=612, height=792)
    (uri,) = image_urls(server.bodies[0])
    assert _size(uri) == (612, 792)


# -- 10: streamed answers ---------------------------------------------------------------------


def test_a_stream_ending_in_a_usage_only_chunk_is_read():
    with RecordingServer(usage_chunk=True) as server:
        pages = _read(_engine(server.url, stream=True), [1, 2])
    assert [p.produced_by for p in pages] == ["group", "group"]
    assert [b.text for p in pages for b in p.blocks] == ["page 1", "page 2"]


def test_a_trailing_page_separator_is_not_an_extra_page():
    def answer(body, images):
        return "".join(f"<PAGE>page {i}" for i in range(1, images + 1)) + "<PAGE>"

    with RecordingServer(answer=answer) as server:
        pages = _read(_engine(server.url, stream=True), [1, 2, 3])
    assert len(server.bodies) == 1
    assert [(p.produced_by, p.recovery) for p in pages] == [("group", [])] * 3
    assert [b.text for p in pages for b in p.blocks] == ["page 1", "page 2", "page 3"]


DELTAS = 25_600


def _sse(pieces):
    for piece in pieces:
        yield f"data: {json.dumps({'choices': [{'delta': {'content': piece}, 'finish_reason': None}]})}\n\n".encode()
    yield f"data: {json.dumps({'choices': [{'delta': {}, 'finish_reason': 'stop'}]})}\n\n".encode()
    yield b"data: [DONE]\n\n"


def _pieces():
    """25,600 deltas of 5 characters, never a loop."""
    return [f"{i:04x} " for i in range(DELTAS)]


def _stream_client(pieces) -> client_module.ModelClient:
    import threading

    return client_module.ModelClient("http://model.test/v1", None, 30.0, 0, threading.BoundedSemaphore(1),
                                     transport=httpx.MockTransport(lambda r: httpx.Response(200, content=_sse(pieces))))


def test_streamed_deltas_reach_the_loop_check_as_a_bounded_tail(monkeypatch):
    """The loop check is handed the tail, not the whole answer so far: the
    characters it reads grow linearly with the answer (the whole answer
    each time would be ~20M characters for these 128,000)."""
    seen = []
    real = client_module.repetition_loop

    def counting(text):
        seen.append(len(text))
        return real(text)

    monkeypatch.setattr(client_module, "repetition_loop", counting)
    pieces = _pieces()
    answer = _stream_client(pieces).complete({"stream": True}, lambda: False)
    total = sum(map(len, pieces))
    assert answer.text == "".join(pieces) and answer.finish_reason == "stop"
    assert len(seen) >= total // client_module.LOOP_CHECK_EVERY - 1
    assert sum(seen) <= 10 * total


class _CountingList(list):
    """A list that counts the items read back out of it."""

    reads = 0

    def __iter__(self):
        for item in super().__iter__():
            _CountingList.reads += 1
            yield item

    def __reversed__(self):
        for item in super().__reversed__():
            _CountingList.reads += 1
            yield item


def test_accumulating_a_stream_reads_each_delta_a_bounded_number_of_times(monkeypatch):
    """The running size is kept, not recomputed per delta, and the answer
    is joined once: items read back from the accumulator stay within a
    constant times the number of deltas (the sum over all parts per delta
    would read ~330M for these 25,600)."""

    class Counting(client_module.StreamedText):
        def __init__(self):
            super().__init__()
            self.parts = _CountingList()

    monkeypatch.setattr(client_module, "StreamedText", Counting)
    _CountingList.reads = 0
    pieces = _pieces()
    answer = _stream_client(pieces).complete({"stream": True}, lambda: False)
    assert answer.text == "".join(pieces)
    assert _CountingList.reads <= 10 * DELTAS
