"""The LLM layer: an OpenAI-compatible chat client with JSON validation, retries, an on-disk response
cache and token accounting, plus a scripted fake for tests.

``import kbgraph.llm`` does not import ``openai``; :class:`OpenAIClient` does, when constructed.
"""

from __future__ import annotations

from kbgraph.llm.base import LLM, BaseLLM, Usage
from kbgraph.llm.cache import ResponseCache, cache_key
from kbgraph.llm.client import OpenAIClient, get_llm
from kbgraph.llm.fake import ScriptedLLM
from kbgraph.llm.json_answers import extract_json, parse_json_answer

__all__ = [
    "LLM",
    "BaseLLM",
    "OpenAIClient",
    "ResponseCache",
    "ScriptedLLM",
    "Usage",
    "cache_key",
    "extract_json",
    "get_llm",
    "parse_json_answer",
]
