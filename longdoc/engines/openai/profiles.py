"""Model profiles: how to ask each model for a page and read its answer.

One small declarative entry per model family: for each server kind (vLLM,
SGLang) the user message as that server's published recipe writes it, the
sampling fields it sets, how the server reads a page image (its views and
the placeholder tokens they cost) and how the answer is parsed. Sources are
pinned as ``repo @ commit : path``; each recipe's request is written out in
``tests/engines/test_openai_requests.py`` and compared with what longdoc
sends, field by field.

**unlimited-ocr** (``baidu/Unlimited-OCR``)

- vLLM: vllm-project/recipes @ 8959cf64189c71d36e11c6a30335f923f261b1f7 :
  models/baidu/Unlimited-OCR.yaml. One page: the text part
  ``<image>document parsing.`` (no newline: PR #588, 114b5083…, removed the
  ``\\n`` of the first version), then the image part; ``max_tokens=8192``,
  ``temperature=0.0``, ``skip_special_tokens: False``, ``vllm_xargs``
  ``{"ngram_size": 35, "window_size": 128}`` ("use ``window_size=1024`` for
  multi-page / PDF input"). Several pages: the recipe has no prompt; the
  pages' placeholders back to back, then the prompt,
  ``<image><image>…<image>Multi page parsing.``, the text part first:
  huggingface/transformers @ 0acc0cee3ca5434557e0886b6afadeda59ddccd4 :
  docs/source/en/model_doc/unlimited_ocr.md (``"<image>" * num_pages +
  "Multi page parsing."``), as Baidu's ``infer_multi`` lays the pages' tokens
  out (Blaizzy/mlx-vlm @ f8b3efb1849a4ead30851e803f75197737bc486b :
  mlx_vlm/models/unlimitedocr/README.md). Every image needs its ``<image>``
  in the text: vLLM puts missing ones in front joined by ``"\\n"``
  (vllm-project/vllm @ 001eadcf295d90aa0664963cd6a9d93f38a2f3da :
  vllm/entrypoints/chat_utils.py).
- SGLang: baidu/Unlimited-OCR @ 582efd98d1e7254d2e73d3fcf89ebbcd63413168 :
  README.md (SGLang section) and infer.py: the text part
  ``document parsing.`` / ``Multi page parsing.`` without a placeholder, then
  one image part per page; ``temperature: 0``, ``skip_special_tokens: False``,
  ``images_config: {"image_mode": "gundam"}`` for one page, ``"base"`` for
  several, ``custom_logit_processor`` (:data:`SGLANG_NGRAM_PROCESSOR`) with
  ``custom_params {"ngram_size": 35, "window_size": 128 | 1024}``,
  ``stream: True``; no ``max_tokens`` (the server runs ``--context-length
  32768``).
- Views and tokens: one page in crop ("gundam") mode, a 1024² global view
  plus 2 to 32 tiles of 640 px; several pages in base mode (the global view
  only: ``effective_cropping = CROP_MODE and len(images) == 1``). A page costs
  16·17 + 1 = 273 tokens, plus (10·rows)·(10·columns + 1) when tiled:
  vllm-project/vllm @ 8a8be3dcc35e02e60c940f7aff3aef8cc7524259 :
  vllm/model_executor/models/unlimited_ocr.py (``_UNLIMITED_OCR_MAX_CROPS =
  32``, ``get_num_image_tokens``); the grid as ``count_tiles`` picks it
  (vllm-project/vllm @ b734c7e169095cb1b8961ff837feb01c4740a449 :
  vllm/transformers_utils/processors/deepseek_ocr.py); the same in
  transformers 5.24.0 (models/unlimited_ocr: ``max_patches = 32``,
  ``tile_size = 640``, ``replace_image_token``).
- max_tokens: 8192 for one page (the vLLM recipe). Several pages: no recipe
  sets one and the HF doc's ``max_new_tokens=32768`` is the whole context,
  so a request asks for what the context leaves (32,768 − its visual tokens
  − :data:`PROMPT_TOKENS`).

**deepseek-ocr-2** (``deepseek-ai/DeepSeek-OCR-2``)

- vLLM: vllm-project/recipes @ 8959cf64189c71d36e11c6a30335f923f261b1f7 :
  models/deepseek-ai/DeepSeek-OCR-2.yaml. The online example's shape (the
  image part, then the text part without a placeholder) with the offline
  example's prompt ``"<image>\\n<|grounding|>Convert the document to
  markdown. "`` less the ``"<image>\\n"`` vLLM inserts itself, and the
  offline sampling: ``temperature=0.0``, ``max_tokens=8192``, n-gram 30,
  window 90, ``whitelist_token_ids`` 128821, 128822 (``<td>``, ``</td>``),
  ``skip_special_tokens=False``. (The online example's ``"Free OCR."`` and
  ``max_tokens=2048`` are a demo of plain OCR.)
- SGLang: sgl-project/sglang @ c2fc3fce7d013c624847846f6e9184d3344c721c :
  docs/basic_usage/deepseek_ocr.md: the text part first,
  ``"<image>\\n<|grounding|>Convert the document to markdown."``, then the
  image part. Its ``max_tokens: 512`` is a demo (a page's Markdown runs to
  thousands of tokens): longdoc asks for 8192 as on vLLM, and adds what the
  vLLM recipe sets: ``temperature`` 0, ``skip_special_tokens`` false (the
  grounding tags are special tokens) and the n-gram guard.
- Views and tokens: one page per request in crop mode, 2 to 6 tiles of
  768 px: 16·16 = 256 tokens for the global view, 12·12 per tile, + 1
  (transformers 5.24.0 models/deepseek_ocr2: ``max_patches 6``, ``tile_size =
  768``, ``replace_image_token``). Context 8,192 (the recipe's
  ``context_length``).

**paddleocr-vl** (``PaddlePaddle/PaddleOCR-VL``)

- vLLM: vllm-project/recipes @ 8959cf64189c71d36e11c6a30335f923f261b1f7 :
  models/PaddlePaddle/PaddleOCR-VL.yaml: the image part, then ``OCR:``;
  ``temperature=0.0``, nothing else (no ``max_tokens``: longdoc's 8192 is
  ``PADDLEOCR_VL_MAX_NEW_TOKENS`` of PaddlePaddle/PaddleX @
  24f8d1335f994477e96e39842f751538e217757a :
  paddlex/inference/models/doc_vlm/constants.py); ``context_length: 131072``.
  One image per request (its prompts are element-level; the whole page is
  sent as one element).
- SGLang: no recipe; the vLLM message is sent.
- Tokens: one per 28×28 px of the image resized as transformers 5.24.0
  ``smart_resize`` does (models/paddleocr_vl: 384² to 1536² pixels).

**generic**: any OpenAI-compatible vision model, asked for Markdown; its
visual tokens are an estimate (:attr:`Profile.visual_tokens_per_page`).

The no-repeat-n-gram guard goes to vLLM as ``vllm_xargs`` (the server runs
the model's ``NGramPerReqLogitsProcessor``) and to SGLang as
``custom_logit_processor`` with ``custom_params``; an SGLang server needs
``--enable-custom-logit-processor``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from longdoc.engines.parsers import grounded_blocks, markdown_blocks, paddle_blocks
from longdoc.model import Block

Parser = Callable[[str, int, float, float], list[Block]]

GENERIC_PROMPT = (
    "Convert this document page to Markdown in reading order. Keep tables as HTML tables and formulas as "
    "LaTeX. Output only the page's content."
)

#: tokens a request holds besides its pages' visual tokens (BOS, the text
#: part, the chat template's few): reserved out of the context when
#: ``max_tokens`` is sized; more than any profile's prompt (the generic
#: one, the longest, is under 40 tokens)
PROMPT_TOKENS = 64


#: SGLang's no-repeat-n-gram processor as a request names it: what
#: ``DeepseekOCRNoRepeatNGramLogitProcessor.to_str()`` returns, i.e.
#: ``json.dumps({"callable": dill.dumps(cls).hex()})`` with the class pickled
#: by reference (protocol 4: its module and name, no code), so any SGLang
#: server that ships the class loads it. Sources: sgl-project/sglang
#: ``python/sglang/srt/sampling/custom_logit_processor.py`` (``to_str``,
#: ``_cache_from_str``, the class); Baidu's Unlimited-OCR README (SGLang
#: section) and ``infer.py`` send it with ``custom_params`` ``{"ngram_size": 35,
#: "window_size": 128 | 1024}``. Pinned here so longdoc never imports sglang;
#: the test decodes it back to the module and class names.
SGLANG_NGRAM_PROCESSOR = (
    '{"callable": "'
    "80049559000000000000008c2a73676c616e672e7372742e73616d706c696e672e637573746f6d5f"
    "6c6f6769745f70726f636573736f72948c26446565707365656b4f43524e6f5265706561744e4772"
    "616d4c6f67697450726f636573736f729493942e"
    '"}'
)


@dataclass(frozen=True)
class NGram:
    """The no-repeat-n-gram guard the model's server runs per request."""

    size: int
    window_one_page: int
    window_pages: int
    whitelist_token_ids: tuple[int, ...] = ()

    def args(self, pages: int) -> dict[str, Any]:
        args: dict[str, Any] = {"ngram_size": self.size,
                                "window_size": self.window_pages if pages > 1 else self.window_one_page}
        if self.whitelist_token_ids:
            args["whitelist_token_ids"] = list(self.whitelist_token_ids)
        return args


@dataclass(frozen=True)
class Message:
    """A request's user message on one server kind, as that server's recipe
    writes it: the text for one page (``one_page``) and for several
    (``pages``; None: one page per request), where ``{images}`` becomes
    ``image_token`` once per page, and the image parts before the text part
    (``image_first``) or after it."""

    one_page: str
    pages: str | None = None
    image_token: str = ""
    image_first: bool = False

    def text(self, pages: int) -> str:
        """The text part of a request for ``pages`` page images."""
        text = self.pages if pages > 1 and self.pages else self.one_page
        return text.replace("{images}", self.image_token * pages)

    def content(self, images: list[str], override: str | None = None) -> list[dict[str, Any]]:
        """The message's parts for ``images`` (data URIs), the text
        ``override`` replacing the profile's when given."""
        text = [{"type": "text", "text": override or self.text(len(images))}]
        parts = [{"type": "image_url", "image_url": {"url": uri}} for uri in images]
        return [*parts, *text] if self.image_first else [*text, *parts]


@dataclass(frozen=True)
class Crop:
    """The DeepSeek-OCR family's crop ("gundam") mode: a ``base_size``²
    global view (the page padded into it) plus, for a page larger than one
    tile, the page resized to a grid of ``tile``² tiles, between
    ``min_tiles`` and ``max_tiles`` of them, the grid whose shape is nearest
    the page's (vLLM ``processors/deepseek_ocr.py``: ``count_tiles``,
    ``dynamic_preprocess``; transformers ``get_optimal_tiled_canvas``).

    Each view costs a query token per ``patch``·``downsample`` px square;
    ``row_separators``: each row of queries ends in one more token
    (DeepSeek-OCR, Unlimited-OCR: ``h·(w + 1)``), not so in DeepSeek-OCR-2
    (``h·w``). Either way one separator token follows."""

    base_size: int = 1024
    tile: int = 640
    min_tiles: int = 2
    max_tiles: int = 6
    row_separators: bool = True
    patch: int = 16
    downsample: int = 4

    def grid(self, width: int, height: int) -> tuple[int, int]:
        """(columns, rows) of tiles the server cuts a ``width``×``height``
        image into, as ``count_tiles`` picks them; (1, 1) for an image no
        larger than one tile (no tiles)."""
        if width <= self.tile and height <= self.tile:
            return (1, 1)
        aspect = width / height
        ratios = sorted({(i, j) for n in range(self.min_tiles, self.max_tiles + 1)
                         for i in range(1, n + 1) for j in range(1, n + 1)
                         if self.min_tiles <= i * j <= self.max_tiles}, key=lambda r: r[0] * r[1])
        best, best_diff = (1, 1), float("inf")
        for columns, rows in ratios:
            diff = abs(aspect - columns / rows)
            if diff < best_diff:
                best, best_diff = (columns, rows), diff
            elif diff == best_diff and width * height > 0.5 * self.tile * self.tile * columns * rows:
                best = (columns, rows)
        return best

    def size(self, width: int, height: int) -> tuple[int, int]:
        """The size to send a ``width``×``height`` render at: the smallest
        that the server only ever shrinks (its tile grid and its global
        view both covered), never larger than the render."""
        columns, rows = self.grid(width, height)
        scale = max(columns * self.tile / width, rows * self.tile / height, self.base_size / max(width, height))
        if scale >= 1:
            return (width, height)
        return (max(1, round(width * scale)), max(1, round(height * scale)))

    def tokens(self, width: int, height: int, cropping: bool = True) -> int:
        """Placeholder tokens the server expands a ``width``×``height``
        image into: the global view, the tiles (``cropping`` and the image
        larger than one tile) and the separator."""
        base = math.ceil(self.base_size // self.patch / self.downsample)
        local = math.ceil(self.tile // self.patch / self.downsample)
        columns, rows = self.grid(width, height) if cropping else (1, 1)
        tiled = columns * rows > 1
        if self.row_separators:
            return base * (base + 1) + 1 + ((local * rows) * (local * columns + 1) if tiled else 0)
        return base * base + (local * local * columns * rows if tiled else 0) + 1


@dataclass(frozen=True)
class Patches:
    """A NaViT-style encoder's count (PaddleOCR-VL): the image resized to
    multiples of ``factor`` px holding ``min_pixels`` to ``max_pixels``
    pixels, one token per ``factor``² px (transformers 5.24.0
    models/paddleocr_vl/image_processing_paddleocr_vl.py: ``smart_resize``
    and its defaults; processing_paddleocr_vl.py: ``grid_thw.prod() //
    merge_size²``)."""

    factor: int = 28
    min_pixels: int = 384 * 384
    max_pixels: int = 1536 * 1536

    def tokens(self, width: int, height: int) -> int:
        """Tokens of a ``width``×``height`` image: ``smart_resize``'s
        (height, width), in ``factor``-px squares."""
        f = self.factor
        if height < f:
            width, height = round(width * f / height), f
        if width < f:
            width, height = f, round(height * f / width)
        h, w = round(height / f) * f, round(width / f) * f
        if h * w > self.max_pixels:
            beta = math.sqrt(height * width / self.max_pixels)
            h, w = max(f, math.floor(height / beta / f) * f), max(f, math.floor(width / beta / f) * f)
        elif h * w < self.min_pixels:
            beta = math.sqrt(self.min_pixels / (height * width))
            h, w = math.ceil(height * beta / f) * f, math.ceil(width * beta / f) * f
        return (h // f) * (w // f)


@dataclass(frozen=True)
class Profile:
    name: str
    #: the user message on each server kind ("vllm", "sglang")
    messages: Mapping[str, Message]
    max_pages_per_request: int
    #: the longest side a page image is sent at (several pages in one
    #: request; one page too unless the profile has a crop mode)
    image_max_side: int
    #: what an owned page's answer is expected to cost in the KV cache
    output_tokens_per_page: int
    #: max_tokens of a one-page request (the recipe's); a request of several
    #: pages asks for what the context leaves
    max_tokens: int
    #: the model's context length (when the server does not say its max_model_len)
    context_tokens: int
    parser: Parser
    ngram: NGram | None = None
    keep_special_tokens: bool = False
    #: how a one-page request's image is read and counted (None: as ``image_max_side``)
    crop: Crop | None = None
    #: how a page is counted when the profile has no crop mode
    patches: Patches | None = None
    #: a page's visual tokens where neither ``crop`` nor ``patches`` counts them (an estimate)
    visual_tokens_per_page: int = 0
    #: SGLang's ``images_config`` image mode for one page and for several (None: not sent)
    image_modes: tuple[str, str] | None = None

    @property
    def multi_page(self) -> bool:
        return all(m.pages is not None for m in self.messages.values()) and self.max_pages_per_request > 1

    def prompt(self, pages: int, server: str, override: str | None = None) -> str:
        """The text part of a request for ``pages`` page images."""
        return override or self.messages[server].text(pages)

    def content(self, images: list[str], server: str, override: str | None = None) -> list[dict[str, Any]]:
        """The user message's parts for ``images`` (data URIs), in the
        order the model's recipe for ``server`` writes them."""
        return self.messages[server].content(images, override)

    def image_size(self, width: int, height: int, pages: int) -> tuple[int, int]:
        """The size a ``width``×``height`` render is sent at in a request
        of ``pages`` pages: crop mode's for one page (where the profile has
        one), else its longest side at most ``image_max_side``."""
        if pages == 1 and self.crop is not None:
            return self.crop.size(width, height)
        scale = self.image_max_side / max(width, height)
        if scale >= 1:
            return (width, height)
        return (max(1, round(width * scale)), max(1, round(height * scale)))

    def visual_tokens(self, width: int, height: int, pages: int) -> int:
        """The placeholder tokens the server expands a page rendered at
        ``width``×``height`` px into, in a request of ``pages`` pages: counted
        as the server counts them, on the image as it is sent
        (:meth:`image_size`); crop mode only for a page alone."""
        sent = self.image_size(width, height, pages)
        if self.crop is not None:
            return self.crop.tokens(*sent, cropping=pages == 1)
        if self.patches is not None:
            return self.patches.tokens(*sent)
        return self.visual_tokens_per_page


UNLIMITED_DOCUMENT = "document parsing."
UNLIMITED_PAGES = "Multi page parsing."
GROUNDING = "<|grounding|>Convert the document to markdown."

PROFILES: dict[str, Profile] = {
    "unlimited-ocr": Profile(
        name="unlimited-ocr",
        messages={
            "vllm": Message("{images}" + UNLIMITED_DOCUMENT, "{images}" + UNLIMITED_PAGES, image_token="<image>"),
            "sglang": Message(UNLIMITED_DOCUMENT, UNLIMITED_PAGES),
        },
        max_pages_per_request=16,
        image_max_side=1024,
        output_tokens_per_page=1200,
        max_tokens=8192,
        context_tokens=32_768,
        parser=grounded_blocks,
        ngram=NGram(size=35, window_one_page=128, window_pages=1024),
        keep_special_tokens=True,
        crop=Crop(base_size=1024, tile=640, max_tiles=32),
        image_modes=("gundam", "base"),
    ),
    "deepseek-ocr-2": Profile(
        name="deepseek-ocr-2",
        messages={
            # the recipe's offline prompt is "<image>\n" + this; vLLM puts "<image>\n" before a text
            # without a placeholder, so the server's prompt is the recipe's byte for byte
            "vllm": Message(GROUNDING + " ", image_first=True),
            "sglang": Message("<image>\n" + GROUNDING),
        },
        max_pages_per_request=1,
        image_max_side=1600,
        output_tokens_per_page=1200,
        max_tokens=8192,
        context_tokens=8_192,
        parser=grounded_blocks,
        ngram=NGram(size=30, window_one_page=90, window_pages=90, whitelist_token_ids=(128821, 128822)),
        keep_special_tokens=True,
        crop=Crop(base_size=1024, tile=768, max_tiles=6, row_separators=False),
    ),
    "paddleocr-vl": Profile(
        name="paddleocr-vl",
        messages={"vllm": Message("OCR:", image_first=True), "sglang": Message("OCR:", image_first=True)},
        max_pages_per_request=1,
        image_max_side=1600,
        output_tokens_per_page=1200,
        max_tokens=8192,
        context_tokens=131_072,
        parser=paddle_blocks,
        patches=Patches(),
    ),
    "generic": Profile(
        name="generic",
        messages={"vllm": Message(GENERIC_PROMPT), "sglang": Message(GENERIC_PROMPT)},
        max_pages_per_request=1,
        image_max_side=1600,
        output_tokens_per_page=1200,
        max_tokens=4096,
        context_tokens=32_768,
        parser=markdown_blocks,
        visual_tokens_per_page=1500,
    ),
}


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; known: {', '.join(sorted(PROFILES))}") from None
