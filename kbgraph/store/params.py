"""Statement parameters: the row type every statement takes and returns, the words of a full-text query, and
the per-driver form of the vectors in a parameter map."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

Row = dict[str, Any]

_WORD = re.compile(r"\w+", re.UNICODE)


def fulltext_terms(text: str, max_terms: int = 32) -> list[str]:
    """The words of ``text`` (letters, digits and underscores, lower-cased, deduplicated, at most ``max_terms``;
    a word of underscores alone is left out: RediSearch reads ``0|_`` as a syntax error), so that no user
    character can reach a full-text query parser as syntax."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if word not in seen and word.strip("_"):
            seen[word] = None
        if len(seen) >= max_terms:
            break
    return list(seen)


def map_vectors(params: Row, convert: Callable[[np.ndarray], Any]) -> Row:
    """``params`` with every numpy array (a checked embedding, at the top level or in a row of ``$rows``)
    replaced by ``convert(array)``: each driver has its own fastest form of a vector. An array that several
    parameters hold (the question's vector, once per vector index in retrieve/seed_vectors) is converted once."""
    done: dict[int, Any] = {}  # id(array) -> its converted form; the arrays live as long as ``params``

    def fix(v: Any) -> Any:
        if isinstance(v, np.ndarray):
            key = id(v)
            if key not in done:
                done[key] = convert(v)
            return done[key]
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        if isinstance(v, list) and v and isinstance(v[0], (dict, np.ndarray)):
            return [fix(x) for x in v]
        return v

    return {k: fix(v) for k, v in params.items()}
