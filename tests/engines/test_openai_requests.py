"""What the openai engine sends, read back from a FAKE recording server on
loopback (tests/engines/recording_server.py): each recipe's request, written
out as the recipe writes it and compared field by field with what longdoc
sends (every field of the recipe with its value, and nothing else but a
short list of longdoc's own additions, each with its reason); the
no-repeat-n-gram guard on vLLM and on SGLang; the resolution a page is sent
at and the visual tokens the server makes of it (which admission and
max_tokens use); lossless PNG pages; streamed answers (usage-only chunks, a
trailing page separator, linear accumulation).

Sources pinned here (repo @ commit : path; /tmp/research/recipes.md holds
the verbatim quotes):

- vLLM recipe, Unlimited-OCR: vllm-project/recipes @ 8959cf64189c71d36e11c6a30335f923f261b1f7 :
  models/baidu/Unlimited-OCR.yaml (online example: text part ``<image>document parsing.``, then the
  image part; ``max_tokens=8192``, ``temperature=0.0``, ``skip_special_tokens: False``, ``vllm_xargs``
  ngram_size 35, window_size 128, "use ``window_size=1024`` for multi-page / PDF input"). PR #588
  (114b5083…) removed the newline after ``<image>``.
- Unlimited-OCR, several pages: huggingface/transformers @ 0acc0cee3ca5434557e0886b6afadeda59ddccd4 :
  docs/source/en/model_doc/unlimited_ocr.md (``"<image>" * num_pages + "Multi page parsing."``).
- Baidu, Unlimited-OCR SGLang: baidu/Unlimited-OCR @ 582efd98d1e7254d2e73d3fcf89ebbcd63413168 : README.md
  (SGLang section) and infer.py (``[{"type": "text", "text": prompt}] + images``; ``images_config``
  gundam | base; ``custom_logit_processor: DeepseekOCRNoRepeatNGramLogitProcessor.to_str()``;
  ``custom_params`` ngram_size 35, window_size 128 | 1024; ``temperature: 0``; ``stream: True``; PNG renders).
- vLLM recipe, DeepSeek-OCR-2: vllm-project/recipes @ 8959cf64189c71d36e11c6a30335f923f261b1f7 :
  models/deepseek-ai/DeepSeek-OCR-2.yaml (online: image part, then text part without a placeholder;
  offline: ``"<image>\\n<|grounding|>Convert the document to markdown. "``, max_tokens 8192, ngram 30,
  window 90, whitelist {128821, 128822}, skip_special_tokens False).
- SGLang, DeepSeek-OCR-2: sgl-project/sglang @ c2fc3fce7d013c624847846f6e9184d3344c721c :
  docs/basic_usage/deepseek_ocr.md (text part ``"<image>\\n<|grounding|>Convert the document to
  markdown."``, then the image part; ``max_tokens: 512``).
- vLLM recipe, PaddleOCR-VL: vllm-project/recipes @ 8959cf64189c71d36e11c6a30335f923f261b1f7 :
  models/PaddlePaddle/PaddleOCR-VL.yaml (image part, then ``OCR:``; ``temperature=0.0``); max_tokens
  8192: PaddlePaddle/PaddleX @ 24f8d1335f994477e96e39842f751538e217757a :
  paddlex/inference/models/doc_vlm/constants.py (``PADDLEOCR_VL_MAX_NEW_TOKENS = 8192``). No SGLang
  recipe exists: the SGLang request is the vLLM one.
- vLLM's placeholders: vllm-project/vllm @ 001eadcf295d90aa0664963cd6a9d93f38a2f3da :
  vllm/entrypoints/chat_utils.py (missing ``<image>`` placeholders go before the text, joined by "\\n").
- Crop mode and visual tokens: vllm-project/vllm @ 8a8be3dcc35e02e60c940f7aff3aef8cc7524259 :
  vllm/model_executor/models/unlimited_ocr.py (``_UNLIMITED_OCR_MAX_CROPS = 32``; 16·17 + 1, plus
  (10·rows)·(10·columns + 1) when tiled; several images: no crops) and vllm-project/vllm @
  b734c7e169095cb1b8961ff837feb01c4740a449 : vllm/transformers_utils/processors/deepseek_ocr.py
  (``count_tiles``: 640-px tiles, at least 2); transformers 5.24.0 (installed) models/deepseek_ocr2
  (768-px tiles, 2 to 6; 256 + 144 per tile + 1) and models/paddleocr_vl (``smart_resize``).
- SGLang's processor string: sgl-project/sglang ``python/sglang/srt/sampling/custom_logit_processor.py``
  (``to_str`` = ``json.dumps({"callable": dill.dumps(cls).hex()})``; not pinned to a commit: the test
  below rebuilds the string from the module and class names).
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import pickletools
import sys
import types
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np
import pytest
from PIL import Image

from longdoc.config import load_settings
from longdoc.engines.base import GroupPlan, PageGroup, PageImage
from longdoc.engines.openai import client as client_module
from longdoc.engines.openai.engine import OpenAIEngine, data_uri
from longdoc.engines.openai.profiles import PROFILES, PROMPT_TOKENS, SGLANG_NGRAM_PROCESSOR, Crop
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


def _png(uri: str) -> Image.Image:
    """The image of a ``data:image/png;base64,…`` URI (fails on any other)."""
    head, data = uri.split(",", 1)
    assert head == "data:image/png;base64", head
    image = Image.open(io.BytesIO(base64.b64decode(data)))
    assert image.format == "PNG"
    return image


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
    assert json.dumps({"callable": pickled.hex()}) == SGLANG_NGRAM_PROCESSOR


# -- 5: each recipe's request, field by field -------------------------------------------------

#: an image part's URL in a recipe's request (a hub or example URL there): longdoc sends the page
#: rendered, as a PNG data URI (Baidu's infer.py sends PNG renders as data URIs too)
PAGE = "<the page as data:image/png;base64,…>"

#: the fields longdoc sends that a recipe's request may lack, each with its reason; a recipe below
#: names which of them its request lacks (any other extra field fails the comparison)
ADDITIONS = {
    "stream": "inference.openai.stream (default true): a streamed answer's repetition loop is cut early",
    "max_tokens": "where the recipe sets none: an answer past it is seen as cut (finish_reason length) "
                  "and goes down the recovery ladder; the profile's (PaddleX's 8192 for PaddleOCR-VL), or "
                  "for several pages what the model's context leaves",
    "temperature": "DeepSeek-OCR-2 on SGLang (the SGLang doc sets none): the vLLM recipe's greedy 0.0",
    "skip_special_tokens": "DeepSeek-OCR-2 on SGLang: the vLLM recipe's False, keeping the grounding "
                           "tags (<|ref|>, <|det|>) the parser reads",
    "custom_logit_processor": "DeepSeek-OCR-2 on SGLang: the vLLM recipe's no-repeat-n-gram guard, as "
                              "SGLang takes one (the server needs --enable-custom-logit-processor)",
    "custom_params": "that guard's parameters, the vLLM recipe's (30, 90, <td>/</td> whitelisted)",
}


@dataclass(frozen=True)
class Recipe:
    """A published request: ``request`` as the recipe writes it (the OpenAI
    client's ``extra_body`` fields at the top level, where it sends them),
    ``added`` the fields of :data:`ADDITIONS` longdoc sends besides (with
    their values), ``departed`` the recipe's fields longdoc sends with
    another value (value, reason)."""

    source: str
    profile: str
    server: str
    pages: int
    request: dict[str, Any]
    added: dict[str, Any] = field(default_factory=dict)
    departed: dict[str, tuple[Any, str]] = field(default_factory=dict)


RECIPES = [
    Recipe(
        "vllm-project/recipes @ 8959cf64189c71d36e11c6a30335f923f261b1f7 : models/baidu/Unlimited-OCR.yaml",
        "unlimited-ocr", "vllm", 1,
        {
            "model": "baidu/Unlimited-OCR",
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "<image>document parsing."},
                {"type": "image_url", "image_url": {"url": PAGE}},
            ]}],
            "max_tokens": 8192,
            "temperature": 0.0,
            "skip_special_tokens": False,
            "vllm_xargs": {"ngram_size": 35, "window_size": 128},
        },
        added={"stream": True},
    ),
    Recipe(
        # the fields: the vLLM recipe above ("use window_size=1024 for multi-page / PDF input"; text part
        # first); the text: huggingface/transformers @ 0acc0cee3ca5434557e0886b6afadeda59ddccd4 :
        # docs/source/en/model_doc/unlimited_ocr.md, "<image>" * num_pages + "Multi page parsing."
        "vllm-project/recipes @ 8959cf64189c71d36e11c6a30335f923f261b1f7 : models/baidu/Unlimited-OCR.yaml "
        "+ huggingface/transformers @ 0acc0cee3ca5434557e0886b6afadeda59ddccd4 : "
        "docs/source/en/model_doc/unlimited_ocr.md",
        "unlimited-ocr", "vllm", 3,
        {
            "model": "baidu/Unlimited-OCR",
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "<image><image><image>Multi page parsing."},
                {"type": "image_url", "image_url": {"url": PAGE}},
                {"type": "image_url", "image_url": {"url": PAGE}},
                {"type": "image_url", "image_url": {"url": PAGE}},
            ]}],
            "temperature": 0.0,
            "skip_special_tokens": False,
            "vllm_xargs": {"ngram_size": 35, "window_size": 1024},
        },
        # no recipe sets one for several pages: the context (32,768) less 3 pages of 273 and the prompt
        added={"stream": True, "max_tokens": 32_768 - 3 * 273 - PROMPT_TOKENS},
    ),
    Recipe(
        # generate("document parsing.", ["your_image.jpg"], image_mode="gundam", ngram_window=128);
        # "temperature": 0 there: JSON's 0 and longdoc's 0.0 are one number
        "baidu/Unlimited-OCR @ 582efd98d1e7254d2e73d3fcf89ebbcd63413168 : README.md (SGLang), infer.py",
        "unlimited-ocr", "sglang", 1,
        {
            "model": "Unlimited-OCR",
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "document parsing."},
                {"type": "image_url", "image_url": {"url": PAGE}},
            ]}],
            "temperature": 0,
            "skip_special_tokens": False,
            "images_config": {"image_mode": "gundam"},
            "custom_logit_processor": SGLANG_NGRAM_PROCESSOR,  # DeepseekOCRNoRepeatNGramLogitProcessor.to_str()
            "custom_params": {"ngram_size": 35, "window_size": 128},
            "stream": True,
        },
        added={"max_tokens": 8192},  # the vLLM recipe's for one page
    ),
    Recipe(
        # generate("Multi page parsing.", ["page1.png", "page2.png"], image_mode="base", ngram_window=1024)
        "baidu/Unlimited-OCR @ 582efd98d1e7254d2e73d3fcf89ebbcd63413168 : README.md (SGLang)",
        "unlimited-ocr", "sglang", 3,
        {
            "model": "Unlimited-OCR",
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "Multi page parsing."},
                {"type": "image_url", "image_url": {"url": PAGE}},
                {"type": "image_url", "image_url": {"url": PAGE}},
                {"type": "image_url", "image_url": {"url": PAGE}},
            ]}],
            "temperature": 0,
            "skip_special_tokens": False,
            "images_config": {"image_mode": "base"},
            "custom_logit_processor": SGLANG_NGRAM_PROCESSOR,
            "custom_params": {"ngram_size": 35, "window_size": 1024},
            "stream": True,
        },
        added={"max_tokens": 32_768 - 3 * 273 - PROMPT_TOKENS},
    ),
    Recipe(
        # the online example's request shape (image part, then text part) with the offline example's
        # prompt "<image>\n<|grounding|>Convert the document to markdown. " less the "<image>\n" vLLM puts
        # before a text without a placeholder, and its sampling: temperature=0.0, max_tokens=8192,
        # extra_args ngram_size=30, window_size=90, whitelist_token_ids={128821, 128822}, skip_special_tokens
        # (the online example's "Free OCR." and max_tokens=2048 are plain OCR's demo)
        "vllm-project/recipes @ 8959cf64189c71d36e11c6a30335f923f261b1f7 : models/deepseek-ai/DeepSeek-OCR-2.yaml",
        "deepseek-ocr-2", "vllm", 1,
        {
            "model": "deepseek-ai/DeepSeek-OCR-2",
            "messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": PAGE}},
                {"type": "text", "text": "<|grounding|>Convert the document to markdown. "},
            ]}],
            "max_tokens": 8192,
            "temperature": 0.0,
            "skip_special_tokens": False,
            "vllm_xargs": {"ngram_size": 30, "window_size": 90, "whitelist_token_ids": [128821, 128822]},
        },
        added={"stream": True},
    ),
    Recipe(
        "sgl-project/sglang @ c2fc3fce7d013c624847846f6e9184d3344c721c : docs/basic_usage/deepseek_ocr.md",
        "deepseek-ocr-2", "sglang", 1,
        {
            "model": "deepseek-ai/DeepSeek-OCR-2",
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "<image>\n<|grounding|>Convert the document to markdown."},
                {"type": "image_url", "image_url": {"url": PAGE}},
            ]}],
            "max_tokens": 512,
        },
        added={"stream": True, "temperature": 0.0, "skip_special_tokens": False,
               "custom_logit_processor": SGLANG_NGRAM_PROCESSOR,
               "custom_params": {"ngram_size": 30, "window_size": 90, "whitelist_token_ids": [128821, 128822]}},
        departed={"max_tokens": (8192, "the doc's 512 is a demo (a page of Markdown runs to thousands of "
                                       "tokens): the vLLM recipe's 8192")},
    ),
    Recipe(
        "vllm-project/recipes @ 8959cf64189c71d36e11c6a30335f923f261b1f7 : models/PaddlePaddle/PaddleOCR-VL.yaml",
        "paddleocr-vl", "vllm", 1,
        {
            "model": "PaddlePaddle/PaddleOCR-VL",
            "messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": PAGE}},
                {"type": "text", "text": "OCR:"},
            ]}],
            "temperature": 0.0,
        },
        # PaddlePaddle/PaddleX @ 24f8d1335f994477e96e39842f751538e217757a :
        # paddlex/inference/models/doc_vlm/constants.py: PADDLEOCR_VL_MAX_NEW_TOKENS = 8192
        added={"stream": True, "max_tokens": 8192},
    ),
]


def _same(sent: Any, recipe: Any, where: str) -> None:
    """``sent`` is ``recipe``: dicts with the same keys, lists in the same
    order, :data:`PAGE` a PNG data URI, other values equal (a bool only to a bool)."""
    if recipe == PAGE:
        _png(sent)
    elif isinstance(recipe, dict):
        assert isinstance(sent, dict) and sent.keys() == recipe.keys(), (where, sent, recipe)
        for key in recipe:
            _same(sent[key], recipe[key], f"{where}.{key}")
    elif isinstance(recipe, list):
        assert isinstance(sent, list) and len(sent) == len(recipe), (where, sent, recipe)
        for i, (a, b) in enumerate(zip(sent, recipe)):
            _same(a, b, f"{where}[{i}]")
    else:
        assert sent == recipe and isinstance(sent, bool) == isinstance(recipe, bool), (where, sent, recipe)


def _served_as(recipe: Recipe, **openai) -> dict[str, Any]:
    """The body longdoc sends for the recipe's pages, to a server serving the recipe's model."""
    with RecordingServer(model=recipe.request["model"]) as server:
        _read(_engine(server.url, **{"profile": recipe.profile, "server": recipe.server, **openai}),
              list(range(1, recipe.pages + 1)))
    (body,) = server.bodies
    return body


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda r: f"{r.profile}-{r.server}-{r.pages}p")
def test_the_request_is_the_recipes_field_by_field(recipe):
    body = _served_as(recipe)
    for key, value in recipe.request.items():
        assert key in body, f"{key} missing ({recipe.source})"
        if key in recipe.departed:
            assert body[key] == recipe.departed[key][0]
        else:
            _same(body[key], value, key)
    assert set(recipe.added) <= ADDITIONS.keys()
    assert body.keys() - recipe.request.keys() == recipe.added.keys()
    for key, value in recipe.added.items():
        _same(body[key], value, key)


def test_every_profile_and_server_kind_has_its_recipe_or_says_why_not():
    """paddleocr-vl has no SGLang recipe (its SGLang request is the vLLM
    one, below); generic follows no model's recipe."""
    pinned = {(r.profile, r.server) for r in RECIPES}
    assert pinned == {(p, s) for p in PROFILES for s in ("vllm", "sglang")} - {
        ("paddleocr-vl", "sglang"), ("generic", "vllm"), ("generic", "sglang")}


def test_paddleocr_vl_on_sglang_is_sent_the_vllm_recipes_request():
    (recipe,) = [r for r in RECIPES if r.profile == "paddleocr-vl"]
    bodies = [_served_as(recipe, server=kind) for kind in ("vllm", "sglang")]
    for body in bodies:
        for part in body["messages"][0]["content"]:
            if part["type"] == "image_url":
                part["image_url"]["url"] = _png(part["image_url"]["url"]).size
    assert bodies[0] == bodies[1]


@pytest.mark.parametrize(("profile", "server_kind", "pages", "parts"), [
    # vLLM recipe (Unlimited-OCR): text first, "<image>" before the prompt, no newline
    ("unlimited-ocr", "vllm", 1, [("text", "<image>document parsing."), ("image_url", None)]),
    # several pages: the placeholders back to back (transformers doc), text first
    ("unlimited-ocr", "vllm", 2, [("text", "<image><image>Multi page parsing."), ("image_url", None),
                                  ("image_url", None)]),
    # Baidu README (SGLang) and infer.py: text first, no placeholder
    ("unlimited-ocr", "sglang", 1, [("text", "document parsing."), ("image_url", None)]),
    ("unlimited-ocr", "sglang", 2, [("text", "Multi page parsing."), ("image_url", None), ("image_url", None)]),
    # vLLM recipe (DeepSeek-OCR-2), online shape: the image first, the text without a placeholder
    ("deepseek-ocr-2", "vllm", 1, [("image_url", None), ("text", "<|grounding|>Convert the document to markdown. ")]),
    # SGLang doc: the text first, the placeholder in it
    ("deepseek-ocr-2", "sglang", 1, [("text", "<image>\n<|grounding|>Convert the document to markdown."),
                                     ("image_url", None)]),
    # vLLM recipe (PaddleOCR-VL): the image first, then "OCR:" (no SGLang recipe: the same)
    ("paddleocr-vl", "vllm", 1, [("image_url", None), ("text", "OCR:")]),
    ("paddleocr-vl", "sglang", 1, [("image_url", None), ("text", "OCR:")]),
])
def test_each_profiles_message_as_its_recipe_writes_it(profile, server_kind, pages, parts):
    with RecordingServer() as server:
        _read(_engine(server.url, profile=profile, server=server_kind, stream=False), list(range(1, pages + 1)))
    assert [_parts(b) for b in server.bodies] == [parts] * (1 if PROFILES[profile].multi_page else pages)


def test_deepseek_text_is_what_vllm_makes_the_recipes_offline_prompt_of():
    """vLLM puts a missing ``<image>`` placeholder before the text, joined by
    "\\n" (chat_utils.py): the server's prompt is the recipe's offline
    ``"<image>\\n<|grounding|>Convert the document to markdown. "`` byte for byte."""
    text = PROFILES["deepseek-ocr-2"].prompt(1, "vllm")
    assert "\n".join(["<image>", text]) == "<image>\n<|grounding|>Convert the document to markdown. "


def test_a_page_is_sent_as_a_lossless_png():
    page = _page(1, 640, 480)
    page.image[::7, ::5] = (12, 200, 77)  # detail a lossy codec would smear
    picture = _png(data_uri(page))
    assert np.array_equal(np.asarray(picture.convert("RGB")), page.image)


# -- 9: one page at the resolution crop mode reads; several in base mode ----------------------


def test_crop_grid_is_dynamic_preprocess_s():
    crop = Crop(base_size=1024, tile=640)    # DeepSeek-OCR's MAX_CROPS 6
    assert crop.grid(1700, 2200) == (2, 3)   # letter portrait
    assert crop.grid(2200, 1700) == (3, 2)   # landscape
    assert crop.grid(600, 600) == (1, 1)     # one tile or less: no tiles
    assert crop.grid(1000, 1000) == (2, 2)
    assert crop.grid(500, 4000) == (1, 6)    # a receipt


def test_unlimited_ocr_crops_up_to_32_tiles():
    """``_UNLIMITED_OCR_MAX_CROPS = 32`` (vLLM), ``max_patches = 32``
    (transformers); DeepSeek-OCR-2 keeps 2 to 6 tiles of 768 px."""
    unlimited, deepseek = PROFILES["unlimited-ocr"].crop, PROFILES["deepseek-ocr-2"].crop
    assert (unlimited.tile, unlimited.min_tiles, unlimited.max_tiles) == (640, 2, 32)
    assert (deepseek.tile, deepseek.min_tiles, deepseek.max_tiles) == (768, 2, 6)
    assert unlimited.grid(1700, 2200) == (3, 4)   # letter at 200 dpi: 0.773, 3/4 is nearest
    assert unlimited.grid(2200, 1700) == (4, 3)
    assert unlimited.grid(1000, 1000) == (2, 2)   # 3×3 would cover more than twice the page
    assert unlimited.grid(500, 4000) == (1, 8)    # a receipt
    assert unlimited.grid(2560, 5120) == (4, 8)   # vLLM's image with the most features
    assert deepseek.grid(1700, 2200) == (2, 3)


@pytest.mark.parametrize("server_kind", ["vllm", "sglang"])
def test_a_one_page_unlimited_ocr_request_is_sent_at_crop_resolution(server_kind):
    with RecordingServer() as server:
        _read(_engine(server.url, server=server_kind, stream=False), [1])
    (body,) = server.bodies
    (uri,) = image_urls(body)
    # the 3×4 grid of 640-px tiles (1920×2560) is larger than the render: the render goes as it is
    assert _size(uri) == (1700, 2200)


def test_a_large_render_is_sent_no_larger_than_the_tile_grid():
    with RecordingServer() as server:
        _read(_engine(server.url, stream=False), [1], width=2550, height=3300)   # letter at 300 dpi
    (uri,) = image_urls(server.bodies[0])
    width, height = _size(uri)
    assert (width, height) == (1978, 2560)   # covers the 3×4 grid's 1920×2560, not more
    assert PROFILES["unlimited-ocr"].crop.grid(width, height) == (3, 4)


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
    assert sizes[1:] == [[(1700, 2200)], [(1700, 2200)]]
    # each page alone asks for the recipe's one-page max_tokens
    assert [b["max_tokens"] for b in server.bodies] == [32_768 - 2 * 273 - PROMPT_TOKENS, 8192, 8192]


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


# -- visual tokens as the server counts them; admission and max_tokens use them ----------------


def _unlimited_tokens(columns: int, rows: int) -> int:
    """vLLM unlimited_ocr.py get_num_image_tokens: 16·(16 + 1) global view
    tokens, (10·rows)·(10·columns + 1) for the tiles when tiled, + 1."""
    tiles = (10 * rows) * (10 * columns + 1) if columns * rows > 1 else 0
    return 16 * (16 + 1) + tiles + 1


def _deepseek2_tokens(crops: int) -> int:
    """transformers deepseek_ocr2 replace_image_token: 16·16 global + 12·12 a crop + 1."""
    return 16 * 16 + 12 * 12 * crops + 1


@pytest.mark.parametrize(("size", "pages", "grid", "expected"), [
    ((1700, 2200), 1, (3, 4), 1513),    # 273 + 40·31
    ((2200, 1700), 1, (4, 3), 1503),    # 273 + 30·41
    ((1000, 1000), 1, (2, 2), 693),     # 273 + 20·21
    ((500, 4000), 1, (1, 8), 1153),     # 273 + 80·11
    ((2560, 5120), 1, (4, 8), 3553),    # 273 + 80·41
    ((640, 640), 1, (1, 1), 273),       # one tile or less: the global view only
    ((1700, 2200), 3, (1, 1), 273),     # several pages: base mode, 273 each
])
def test_unlimited_ocr_visual_tokens_are_the_servers_count(size, pages, grid, expected):
    assert PROFILES["unlimited-ocr"].visual_tokens(*size, pages) == _unlimited_tokens(*grid) == expected


@pytest.mark.parametrize(("size", "crops", "expected"), [
    ((1700, 2200), 6, 1121),   # 2×3 tiles of 768: 256 + 864 + 1
    ((1024, 1024), 4, 833),    # 2×2
    ((700, 700), 0, 257),      # no larger than a tile: the global view only
])
def test_deepseek_ocr_2_visual_tokens_are_the_servers_count(size, crops, expected):
    assert PROFILES["deepseek-ocr-2"].visual_tokens(*size, 1) == _deepseek2_tokens(crops) == expected


def test_paddleocr_vl_counts_a_token_per_28_px_square_of_the_image_sent():
    # sent at 1236×1600 (longest side 1600); smart_resize: 1232×1596 = 44×57 squares of 28 px
    assert PROFILES["paddleocr-vl"].visual_tokens(1700, 2200, 1) == 44 * 57
    assert PROFILES["paddleocr-vl"].visual_tokens(100, 100, 1) == (392 // 28) ** 2   # at least 384² pixels
    assert PROFILES["generic"].visual_tokens(1700, 2200, 1) == 1500                  # an estimate


def test_tile_grids_and_patch_counts_are_transformers_own():
    """Over a spread of page sizes, ``Crop.grid`` is the grid transformers
    5.24.0 picks (``get_optimal_tiled_canvas``; deepseek_ocr2's module, as
    unlimited_ocr's needs torchvision: the function is the same in both) and
    ``Patches.tokens`` the count of its PaddleOCR-VL ``smart_resize``."""
    tiled = pytest.importorskip("transformers.models.deepseek_ocr2.image_processing_pil_deepseek_ocr2")
    paddle = pytest.importorskip("transformers.models.paddleocr_vl.image_processing_pil_paddleocr_vl")
    sizes = [(w, h) for w in range(300, 6001, 270) for h in range(300, 6001, 330)]
    for crop in (PROFILES["unlimited-ocr"].crop, PROFILES["deepseek-ocr-2"].crop):
        for w, h in [(w, h) for w, h in sizes if max(w, h) > crop.tile]:
            theirs = tiled.get_optimal_tiled_canvas((h, w), (crop.tile, crop.tile), crop.min_tiles, crop.max_tiles)
            assert crop.grid(w, h) == tuple(theirs), (crop.tile, w, h)
    for w, h in sizes:
        height, width = paddle.smart_resize(h, w)  # its defaults: factor 28, 384² to 1536² pixels
        assert PROFILES["paddleocr-vl"].patches.tokens(w, h) == (height // 28) * (width // 28), (w, h)


def _plan(owned, context=(), size_pt=(612.0, 792.0), dpi=200) -> GroupPlan:
    pages = (*context, *owned)
    return GroupPlan(index=0, owned=tuple(owned), context=tuple(context), sizes={n: size_pt for n in pages}, dpi=dpi)


def test_a_group_costs_each_page_as_the_server_counts_it_in_its_request():
    unlimited = _engine("http://127.0.0.1:9")   # group_cost asks no server
    # one owned page alone: tiled (letter at 200 dpi: 1700×2200 px, 3×4 tiles)
    assert unlimited.group_cost(_plan([1])) == 1513 + 1200
    # a request of several pages: base mode, 273 each; the context page's answer is not counted
    assert unlimited.group_cost(_plan([2, 3], context=[1])) == 3 * 273 + 2 * 1200
    # two pages a request: [1, 2] in base mode, [3] alone and tiled
    two = _engine("http://127.0.0.1:9", max_pages_per_request=2)
    assert two.group_cost(_plan([1, 2, 3])) == 2 * 273 + 1513 + 3 * 1200
    deepseek = _engine("http://127.0.0.1:9", profile="deepseek-ocr-2")
    assert deepseek.group_cost(_plan([1, 2])) == 2 * 1121 + 2 * 1200


def test_max_tokens_is_the_recipes_within_what_the_context_leaves():
    # DeepSeek-OCR-2 served as its recipe says (context 8192): 8192 would pass it, so what it leaves
    with RecordingServer(answer=lambda body, n: "text", max_model_len=8192) as server:
        _read(_engine(server.url, profile="deepseek-ocr-2", stream=False), [1])
    assert server.bodies[0]["max_tokens"] == 8192 - 1121 - PROMPT_TOKENS


@pytest.mark.parametrize(("pages", "expected"), [(1, 1000), (3, 3000)])
def test_an_explicit_max_tokens_per_page_wins_over_the_profiles(pages, expected):
    with RecordingServer() as server:
        _read(_engine(server.url, stream=False, max_tokens_per_page=1000), list(range(1, pages + 1)))
    assert server.bodies[0]["max_tokens"] == expected


def test_an_explicit_max_tokens_per_page_is_still_cut_to_the_context():
    with RecordingServer() as server:
        _read(_engine(server.url, stream=False, max_tokens_per_page=20_000), [1, 2])
    assert server.bodies[0]["max_tokens"] == 32_768 - 2 * 273 - PROMPT_TOKENS


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
