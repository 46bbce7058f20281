"""The ``openai`` engine: Unlimited-OCR, DeepSeek-OCR-2, PaddleOCR-VL or any
vision model behind a vLLM or SGLang server's OpenAI-compatible API."""

from longdoc.engines.openai.engine import OpenAIEngine, OpenAISession, data_uri
from longdoc.engines.openai.profiles import PROFILES, Profile, get_profile

__all__ = ["PROFILES", "OpenAIEngine", "OpenAISession", "Profile", "data_uri", "get_profile"]
