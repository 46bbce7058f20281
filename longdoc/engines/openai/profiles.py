"""Model profiles: how to ask each model for a page and read its answer.

One small declarative entry per model family. Sources for every value:

- **unlimited-ocr** (``baidu/Unlimited-OCR``): prompts ``<image>document
  parsing.`` (one page) and ``<image>``×N ``Multi page parsing.`` (N pages,
  base mode, 1024×1024), with the literal ``<image>`` placeholders on vLLM
  and without them on SGLang (vLLM recipe ``models/baidu/Unlimited-OCR.yaml``;
  Baidu README and ``infer.py``); ``skip_special_tokens: false`` keeps the
  ``<|det|>`` tags; no-repeat n-gram 35 with a window of 128 (one page) or
  1024 (several) through ``vllm_xargs``; context 32,768 tokens; a 1024² page
  is 273 placeholder tokens (transformers ``processing_unlimited_ocr.py``).
- **deepseek-ocr-2** (``deepseek-ai/DeepSeek-OCR-2``, also DeepSeek-OCR):
  ``<image>\\n<|grounding|>Convert the document to markdown.``, one page per
  request; n-gram 30, window 90, ``<td>``/``</td>`` (ids 128821, 128822)
  whitelisted (vLLM recipe ``DeepSeek/DeepSeek-OCR.md``); context 8,192;
  256 tokens for the global view plus 144 per crop (README).
- **paddleocr-vl** (``PaddlePaddle/PaddleOCR-VL``): ``OCR:`` on one image
  per request (its prompts are element-level; the whole page is sent as one
  element), temperature 0, up to 8,192 new tokens (PaddleX
  ``doc_vlm/constants.py``); one token per 28×28 pixels.
- **generic**: any OpenAI-compatible vision model, asked for Markdown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from longdoc.engines.openai.parsers import grounded_blocks, markdown_blocks, paddle_blocks
from longdoc.model import Block

Parser = Callable[[str, int, float, float], list[Block]]

GENERIC_PROMPT = (
    "Convert this document page to Markdown in reading order. Keep tables as HTML tables and formulas as "
    "LaTeX. Output only the page's content."
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
class Profile:
    name: str
    prompt_one_page: str
    #: prompt for N pages ("{images}" becomes N placeholders on vLLM); None: one page per request
    prompt_pages: str | None
    #: a page's image placeholder on vLLM (SGLang inserts its own)
    image_token: str | None
    max_pages_per_request: int
    #: the longest side a page image is sent at
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


PROFILES: dict[str, Profile] = {
    "unlimited-ocr": Profile(
        name="unlimited-ocr",
        prompt_one_page="{images}document parsing.",
        prompt_pages="{images}Multi page parsing.",
        image_token="<image>",
        max_pages_per_request=16,
        image_max_side=1024,
        visual_tokens_per_page=273,
        output_tokens_per_page=1200,
        max_tokens_per_page=1600,
        context_tokens=32_768,
        parser=grounded_blocks,
        ngram=NGram(size=35, window_one_page=128, window_pages=1024),
        keep_special_tokens=True,
    ),
    "deepseek-ocr-2": Profile(
        name="deepseek-ocr-2",
        prompt_one_page="{images}\n<|grounding|>Convert the document to markdown.",
        prompt_pages=None,
        image_token="<image>",
        max_pages_per_request=1,
        image_max_side=1600,
        visual_tokens_per_page=1120,
        output_tokens_per_page=1200,
        max_tokens_per_page=6000,
        context_tokens=8_192,
        parser=grounded_blocks,
        ngram=NGram(size=30, window_one_page=90, window_pages=90, whitelist_token_ids=(128821, 128822)),
        keep_special_tokens=True,
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
