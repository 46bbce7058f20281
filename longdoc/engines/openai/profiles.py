"""Model profiles: how to ask each model for a page and read its answer.

One small declarative entry per model family. Sources for every value (the
message as each recipe writes it is pinned in ``tests/engines/test_openai_requests.py``):

- **unlimited-ocr** (``baidu/Unlimited-OCR``): the text part first, then the
  images. On vLLM the text starts with a literal ``<image>\\n`` per page:
  ``<image>\\ndocument parsing.`` (vLLM recipe ``models/baidu/Unlimited-OCR.yaml``:
  "prompt text must begin with a literal ``<image>\\n``"), ``<image>\\n``×N
  ``Multi page parsing.`` for N pages (the placeholder line vLLM itself
  writes for each image); on SGLang ``document parsing.`` / ``Multi page
  parsing.`` without placeholders (Baidu README, SGLang section, and
  ``infer.py``: ``[{"type": "text", …}] + images``). One page in crop
  ("gundam") mode, several in base mode (1024×1024); ``skip_special_tokens:
  false`` keeps the ``<|det|>`` tags; the no-repeat-n-gram guard 35 with a
  window of 128 (one page) or 1024 (several); context 32,768 tokens; a 1024²
  page is 273 placeholder tokens (transformers ``processing_unlimited_ocr.py``).
- **deepseek-ocr-2** (``deepseek-ai/DeepSeek-OCR-2``, also DeepSeek-OCR): the
  image first, then ``<|grounding|>Convert the document to markdown.``
  without a placeholder (vLLM recipes ``deepseek-ai/DeepSeek-OCR(-2).yaml``,
  online example: ``[image_url, text]``; vLLM puts ``<image>\\n`` before the
  text, which makes ``config.py``'s ``PROMPT``); one page per request, crop
  mode with 768-px tiles (vLLM ``processors/deepseek_ocr2.py``); n-gram 30,
  window 90, ``<td>``/``</td>`` (ids 128821, 128822) whitelisted; context
  8,192; 256 tokens for the global view plus 144 per crop (README).
- **paddleocr-vl** (``PaddlePaddle/PaddleOCR-VL``): the image first, then
  ``OCR:`` (vLLM recipe ``models/PaddlePaddle/PaddleOCR-VL.yaml``), one image
  per request (its prompts are element-level; the whole page is sent as one
  element), temperature 0, up to 8,192 new tokens (PaddleX
  ``doc_vlm/constants.py``); one token per 28×28 pixels.
- **generic**: any OpenAI-compatible vision model, asked for Markdown.

The no-repeat-n-gram guard goes to vLLM as ``vllm_xargs`` (the server runs
the model's ``NGramPerReqLogitsProcessor``) and to SGLang as
``custom_logit_processor`` (:data:`SGLANG_NGRAM_PROCESSOR`) with
``custom_params``; an SGLang server needs ``--enable-custom-logit-processor``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from longdoc.engines.parsers import grounded_blocks, markdown_blocks, paddle_blocks
from longdoc.model import Block

Parser = Callable[[str, int, float, float], list[Block]]

GENERIC_PROMPT = (
    "Convert this document page to Markdown in reading order. Keep tables as HTML tables and formulas as "
    "LaTeX. Output only the page's content."
)


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
class Crop:
    """The DeepSeek-OCR "gundam" crop mode a server reads one page in: a
    ``base_size``² global view (the page padded into it) plus the page
    resized to a grid of ``tile``² tiles, between ``min_tiles`` and
    ``max_tiles`` of them, the grid whose shape is nearest the page's
    (vLLM ``transformers_utils/processors/deepseek_ocr.py``,
    ``dynamic_preprocess``; DeepSeek-OCR-vllm ``config.py``: MIN_CROPS 2,
    MAX_CROPS 6)."""

    base_size: int = 1024
    tile: int = 640
    min_tiles: int = 2
    max_tiles: int = 6

    def grid(self, width: int, height: int) -> tuple[int, int]:
        """(columns, rows) of tiles the server cuts a ``width``×``height``
        image into, as ``dynamic_preprocess`` picks them; (1, 1) for an
        image no larger than one tile (no tiles)."""
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


@dataclass(frozen=True)
class Profile:
    name: str
    prompt_one_page: str
    #: prompt for N pages ("{images}" becomes N placeholders on vLLM); None: one page per request
    prompt_pages: str | None
    #: a page's image placeholder on vLLM (SGLang inserts its own)
    image_token: str | None
    max_pages_per_request: int
    #: the longest side a page image is sent at (several pages in one
    #: request; one page too unless the profile has a crop mode)
    image_max_side: int
    #: tokens one page costs in the KV cache, and what its answer is expected to cost
    visual_tokens_per_page: int
    output_tokens_per_page: int
    #: max_tokens per page asked for, and the model's context length
    max_tokens_per_page: int
    context_tokens: int
    parser: Parser
    ngram: NGram | None = None
    keep_special_tokens: bool = False
    #: the image parts before the text part (as the model's recipe writes the message)
    image_first: bool = False
    #: how a one-page request's image is read (None: as ``image_max_side``)
    crop: Crop | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def multi_page(self) -> bool:
        return self.prompt_pages is not None and self.max_pages_per_request > 1

    def prompt(self, pages: int, server: str, override: str | None = None) -> str:
        """The text part of a request for ``pages`` page images."""
        if override:
            return override
        text = self.prompt_pages if pages > 1 and self.prompt_pages else self.prompt_one_page
        images = (self.image_token or "") * pages if server == "vllm" else ""
        return text.replace("{images}", images)

    def content(self, images: list[str], server: str, override: str | None = None) -> list[dict[str, Any]]:
        """The user message's parts for ``images`` (data URIs), in the
        order the model's recipe writes them."""
        text = [{"type": "text", "text": self.prompt(len(images), server, override)}]
        parts = [{"type": "image_url", "image_url": {"url": uri}} for uri in images]
        return [*parts, *text] if self.image_first else [*text, *parts]

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


PROFILES: dict[str, Profile] = {
    "unlimited-ocr": Profile(
        name="unlimited-ocr",
        prompt_one_page="{images}document parsing.",
        prompt_pages="{images}Multi page parsing.",
        image_token="<image>\n",
        max_pages_per_request=16,
        image_max_side=1024,
        visual_tokens_per_page=273,
        output_tokens_per_page=1200,
        max_tokens_per_page=1600,
        context_tokens=32_768,
        parser=grounded_blocks,
        ngram=NGram(size=35, window_one_page=128, window_pages=1024),
        keep_special_tokens=True,
        crop=Crop(base_size=1024, tile=640),
    ),
    "deepseek-ocr-2": Profile(
        name="deepseek-ocr-2",
        prompt_one_page="<|grounding|>Convert the document to markdown.",
        prompt_pages=None,
        image_token=None,
        max_pages_per_request=1,
        image_max_side=1600,
        visual_tokens_per_page=1120,
        output_tokens_per_page=1200,
        max_tokens_per_page=6000,
        context_tokens=8_192,
        parser=grounded_blocks,
        ngram=NGram(size=30, window_one_page=90, window_pages=90, whitelist_token_ids=(128821, 128822)),
        keep_special_tokens=True,
        image_first=True,
        crop=Crop(base_size=1024, tile=768),
    ),
    "paddleocr-vl": Profile(
        name="paddleocr-vl",
        prompt_one_page="OCR:",
        prompt_pages=None,
        image_token=None,
        max_pages_per_request=1,
        image_max_side=1600,
        visual_tokens_per_page=3000,
        output_tokens_per_page=1200,
        max_tokens_per_page=8192,
        context_tokens=16_384,
        parser=paddle_blocks,
        image_first=True,
    ),
    "generic": Profile(
        name="generic",
        prompt_one_page=GENERIC_PROMPT,
        prompt_pages=None,
        image_token=None,
        max_pages_per_request=1,
        image_max_side=1600,
        visual_tokens_per_page=1500,
        output_tokens_per_page=1200,
        max_tokens_per_page=4096,
        context_tokens=32_768,
        parser=markdown_blocks,
    ),
}


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; known: {', '.join(sorted(PROFILES))}") from None
