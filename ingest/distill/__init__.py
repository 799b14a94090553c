"""Stage 3 of ingestion: distill chunks into the distilled-knowledge layer (PIKE-RAG §5.3.1).

For every chunk: atomic tags (``AtomicQuestion`` nodes), entities (merged across chunks and documents by
normalised name and type), subject-predicate-object triples, and ``MENTIONS`` of every entity in the chunk;
``distill`` returns them as one ``Distilled`` record.

Two modes:

* **Offline** (``llm=None``, the default): paper 003's cheap alternative (Appendix A.5, Table 13): every
  sentence of a chunk (spaCy segmentation, at least ``MIN_SENTENCE_WORDS`` words) is an atomic tag
  (``kind='sentence'``); a table chunk is tagged with its summary and each of its rows. Entities come from
  spaCy NER (numbers, money, percentages, quantities and clock times are dropped; dates are kept, see
  ``KEPT_LABELS``); triples from dependency subject-verb-object patterns, their ends mapped to the NER (or
  title) spans they fall in, else to noun chunks that become ``CONCEPT`` entities.
* **LLM** (``llm`` given, any object with ``complete_json(messages, schema)``): atomic questions with the
  paper's tagging prompt at temperature 0.7 (PIKE-RAG §6.1; setting ``atomizing_temperature``), entities and triples with kbgraph's extraction prompt (``ingest/prompts.py``).
  A chunk whose LLM output is unusable falls back to the offline extraction.

Titles. For passage corpora (Wikipedia-style: one titled passage per document) the title is the key entity:
``distill(..., titles={document_id: title})`` adds a ``TITLE`` entity per document, mentioned by that
document's chunks, and links every chunk that names one of the given titles in its text to that title's
entity. Two passages are then two hops apart in the graph (chunk -> TITLE entity <- chunk) exactly when
one names the other's subject, which is the second hop of a multi-hop question. ``link_title_mentions``
does the linking alone, for titles that arrive after a chunk was distilled.

Modules, one job each: ``schemas`` (the LLM answer schemas), ``names`` (name and date normalisation, entity
ids), ``titles`` (the title matcher), ``tags`` (a chunk's prose and offline atomic tags), ``svo`` (spaCy
entities and subject-verb-object triples), ``pool`` (spaCy pipes and the fork worker pool), ``llm`` (LLM
knowledge atomizing), ``result`` (the de-duplicating accumulator and ``Distilled``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kbgraph.ingest.distill.llm import ATOMIZING_TEMPERATURE, distill_llm
from kbgraph.ingest.distill.names import (
    CONCEPT_TYPE,
    TITLE_TYPE,
    entity_id,
    entity_key,
    normalize_date,
    normalize_name,
    title_entity,
)
from kbgraph.ingest.distill.pool import MULTIPROCESS_MIN_CHUNKS, distill_offline
from kbgraph.ingest.distill.result import Accumulator, Distilled
from kbgraph.ingest.distill.schemas import (
    AtomicQuestions,
    ExtractedEntity,
    ExtractedKnowledge,
    ExtractedTriple,
)
from kbgraph.ingest.distill.svo import KEPT_LABELS
from kbgraph.ingest.distill.tags import MIN_SENTENCE_WORDS, chunk_text
from kbgraph.ingest.distill.titles import TitleMatcher, link_title_mentions, title_matcher
from kbgraph.llm.base import LLM
from kbgraph.models import ChunkRecord
from kbgraph.ingest.nlp import load_nlp

if TYPE_CHECKING:
    from spacy.language import Language


def distill(
    chunks: list[ChunkRecord],
    *,
    llm: LLM | None = None,
    nlp: Language | None = None,
    titles: Mapping[str, str] | None = None,
    link_titles: bool = True,
    triples: bool = True,
    batch_size: int = 64,
    n_process: int | None = None,
    llm_workers: int = 4,
    atomizing_temperature: float = ATOMIZING_TEMPERATURE,
) -> Distilled:
    """Atomic tags, entities, triples and mentions of ``chunks``, as one ``Distilled`` record.

    ``llm``: None for the offline extraction (spaCy), or an object with ``complete_json`` for atomic
    questions, entities and triples by LLM (``llm_workers`` chunks at a time; the atomic questions at
    ``atomizing_temperature``, 0.7 as in PIKE-RAG §6.1 and paper 003 A.3, the rest at the client's temperature). ``nlp``: a spaCy pipeline
    (default ``load_nlp()``). ``titles``: ``{document_id: title}`` for titled passages: each chunk MENTIONS
    its document's TITLE entity, and with ``link_titles`` also the TITLE entity of every given title its text
    names (pass the titles of the whole corpus to link across it). ``triples=False`` skips the dependency
    parse (offline mode): sentences come from the faster ``senter`` and no triples are made. ``n_process``:
    spaCy worker processes (None: 2 when there are at least ``MULTIPROCESS_MIN_CHUNKS`` chunks and 2 cores).
    Returns de-duplicated lists in first-seen order; entity names are their first surface form. Raises
    ``LLMError`` when the LLM server fails (an unusable answer falls back to the offline extraction).
    """
    result = Accumulator()
    chunks = [c for c in chunks if chunk_text(c).strip() or (c.kind == "table" and c.text.strip())]
    if not chunks:
        return result.distilled()
    if nlp is None and (llm is None or (titles and link_titles)):
        nlp = load_nlp()
    matcher = None
    if titles and link_titles:
        assert nlp is not None  # loaded above
        matcher = title_matcher(nlp, titles.values())
    if llm is None:
        assert nlp is not None  # loaded above
        distill_offline(
            result, chunks, nlp, titles, matcher, triples=triples, batch_size=batch_size, n_process=n_process
        )
    else:
        distill_llm(
            result,
            chunks,
            llm,
            nlp,
            titles,
            matcher,
            triples=triples,
            batch_size=batch_size,
            llm_workers=llm_workers,
            atomizing_temperature=atomizing_temperature,
        )
    return result.distilled()


__all__ = [
    "AtomicQuestions",
    "CONCEPT_TYPE",
    "Distilled",
    "ExtractedEntity",
    "ExtractedKnowledge",
    "ExtractedTriple",
    "KEPT_LABELS",
    "MIN_SENTENCE_WORDS",
    "MULTIPROCESS_MIN_CHUNKS",
    "TITLE_TYPE",
    "TitleMatcher",
    "distill",
    "entity_id",
    "entity_key",
    "link_title_mentions",
    "normalize_date",
    "normalize_name",
    "title_entity",
]
