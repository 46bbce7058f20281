"""The loaded model as the native engine uses it: page images to visual
tokens, text to token embeddings, the decoder, and the tokenizer's specials.

Pages are read in Unlimited-OCR's multi-page *base* mode: each page resized
to fit 1024 × 1024 (bicubic), padded with grey (127) to a square,
normalised with mean and std 0.5, encoded by the DeepEncoder into 273
visual tokens (256 + a newline per row + the view separator). The
reference of a group is ``BOS · page₁ … pageₖ · "Multi page parsing."``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from PIL import Image

from longdoc.engines.native.decoder import Decoder, Mode
from longdoc.engines.native.srswa import SrswaSettings
from longdoc.engines.native.weights import BOS, EOS, PAGE

IMAGE_SIDE = 1024
PROMPT = "Multi page parsing."


@dataclass
class NativeModel:
    model: Any
    tokenizer: Any
    decoder: Decoder
    version: str
    #: one forward at a time (the scheduler's steps and the sessions' prefills)
    lock: threading.Lock

    @classmethod
    def build(cls, model: Any, tokenizer: Any, version: str, attention: Mode, srswa: SrswaSettings) -> NativeModel:
        decoder = Decoder(model.model.language_model, model.lm_head, mode=attention, srswa=srswa)
        return cls(model, tokenizer, decoder, version, threading.Lock())

    # -- token ids (looked up once: accept() reads them for every token) -------------

    def token_id(self, token: str) -> int | None:
        ident = self.tokenizer.convert_tokens_to_ids(token)
        return None if ident is None or ident == self.tokenizer.unk_token_id else int(ident)

    @cached_property
    def bos_id(self) -> int:
        ident = self.token_id(BOS)
        return int(self.tokenizer.bos_token_id if ident is None else ident)

    @cached_property
    def eos_id(self) -> int:
        ident = self.token_id(EOS)
        return int(self.tokenizer.eos_token_id if ident is None else ident)

    @cached_property
    def page_id(self) -> int | None:
        return self.token_id(PAGE)

    @property
    def sliding_window(self) -> int:
        """The checkpoint's attention window n (``text_config.sliding_window``; 128 for Unlimited-OCR)."""
        return int(self.model.config.text_config.sliding_window)

    @cached_property
    def visual_tokens_per_page(self) -> int:
        sam = self.model.config.vision_config.sam_config
        side = IMAGE_SIDE // sam.patch_size // 4
        return side * side + side + 1

    @property
    def image_token_id(self) -> int:
        """The image placeholder id (``config.image_token_id``)."""
        return int(self.model.config.image_token_id)

    def prompt_ids(self) -> list[int]:
        return list(self.tokenizer.encode(PROMPT, add_special_tokens=False))

    def reference_ids(self, pages: int | Sequence[int]) -> list[int]:
        """A group's reference as token ids, as the reference ``generate()``
        is given them: BOS, each page's image placeholders (``pages``: how
        many pages of :attr:`visual_tokens_per_page`, or each page's count),
        the prompt. The decoder prefills the same layout (the pages' visual
        tokens in the placeholders' places); the n-gram guard searches these ids."""
        counts = [self.visual_tokens_per_page] * pages if isinstance(pages, int) else list(pages)
        return [self.bos_id, *[self.image_token_id] * sum(counts), *self.prompt_ids()]

    def decode(self, ids: list[int]) -> str:
        return str(self.tokenizer.decode(ids, skip_special_tokens=False))

    # -- embeddings -----------------------------------------------------------------

    def embed_ids(self, ids: list[int]) -> Any:
        import torch

        with torch.no_grad():
            return self.decoder.embed(torch.tensor(ids, device=self.decoder.device))

    def encode_page(self, image: np.ndarray) -> Any:
        """A page image (RGB uint8) → its visual tokens ``[273, hidden]``."""
        import torch

        pixels = torch.from_numpy(base_mode(image)).to(device=self.decoder.device, dtype=self.decoder.dtype)
        with torch.no_grad(), self.lock:
            out = self.model.model.get_image_features(pixel_values=pixels[None])
        return out.pooler_output[0].to(self.decoder.dtype)


def base_mode(image: np.ndarray) -> np.ndarray:
    """``[3, 1024, 1024]`` float32, as the model's processor prepares a page in base mode."""
    picture = Image.fromarray(image).convert("RGB")
    scale = IMAGE_SIDE / max(picture.size)
    size = (max(1, round(picture.width * scale)), max(1, round(picture.height * scale)))
    picture = picture.resize(size, Image.Resampling.BICUBIC)
    canvas = Image.new("RGB", (IMAGE_SIDE, IMAGE_SIDE), (127, 127, 127))
    canvas.paste(picture, ((IMAGE_SIDE - size[0]) // 2, (IMAGE_SIDE - size[1]) // 2))
    array = np.asarray(canvas, dtype=np.float32) / 255.0
    return ((array - 0.5) / 0.5).transpose(2, 0, 1).copy()
