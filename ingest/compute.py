"""The per-document compute of ingestion, shared by both engines (setting ``ingest_engine``): parse a source,
chunk documents, distill them, embed them. Records in, records out: no store, no lock, no progress, so the same
functions run in this process (``kbgraph.ingest.groups``, the ``local`` engine) and in Ray workers
(``kbgraph.ingest.ray_engine``, the ``ray`` engine), and every result is picklable.

* ``parse_source``: one file or passage corpus -> its ``ParsedDocument``s with their metadata (stage 1;
  kbgraph.ingest.metadata);
* ``chunk_documents``: parsed documents -> ``DocumentGraph``s with the Document, Section tree and Chunks (stage 2);
* ``distill_graphs``: the graphs' atomic questions, triples, entities and mentions, put on their documents
  (stage 3; ``titles_for`` says which passage titles a batch links to);
* ``embed_graphs``: the vectors of every layer switched on (stage 4).

Writing (stage 5) stays with the run that holds the knowledge base's lock (``kbgraph.ingest.write``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kbgraph.models import DocumentGraph, EntityRecord
from kbgraph.settings import Settings
from kbgraph.text import utc_now
from kbgraph.embed.static_model import get_static_embedder
from kbgraph.ingest.chunk import build_structure
from kbgraph.ingest.distill import distill
from kbgraph.ingest.embed_layers import embed_layers
from kbgraph.ingest.bounds import ParseBounds
from kbgraph.ingest.metadata import Origin, apply_metadata
from kbgraph.ingest.ocr import OcrOptions
from kbgraph.ingest.parse import parse_file, parse_passages_jsonl
from kbgraph.ingest.unchanged import is_corpus
from kbgraph.llm.base import LLM
from kbgraph.embed.base import Embedder

if TYPE_CHECKING:
    from kbgraph.ingest.distill import Distilled
    from kbgraph.ingest.parse import ParsedDocument


def parse_source(path: Path, settings: Settings, origin: Origin | None = None) -> list[ParsedDocument]:
    """The documents of one source: a passage corpus (.jsonl: one per passage) or a file (one), their metadata
    merged (``kbgraph.ingest.metadata.apply_metadata``; ``origin``: the file's path relative to the folder given to
    ingest and the run's ``--meta``, default its name and none). Raises IngestError for a file kbgraph cannot read
    (empty, too large, corrupt, ...) or whose metadata is bad (a reserved key, a nested value; naming the key and
    where it is); a parser bug raises anything."""
    if is_corpus(path):
        docs = list(parse_passages_jsonl(path))
    else:
        docs = [
            parse_file(
                path,
                max_bytes=settings.ingest.max_file_bytes,
                ocr=OcrOptions.from_settings(settings),
                bounds=ParseBounds.from_settings(settings),
            )
        ]
    apply_metadata(docs, path, origin or Origin(path=path.name))
    return docs


def chunk_documents(
    docs: Sequence[ParsedDocument], settings: Settings, *, llm: LLM | None = None
) -> list[DocumentGraph]:
    """Stage 2: each parsed document's Document, Section tree and Chunks (with an LLM: the recurrent split of
    PIKE-RAG §5.2.1 and table summaries), one ``DocumentGraph`` per document, in order."""
    s = settings.ingest
    graphs: list[DocumentGraph] = []
    for doc in docs:
        document, sections, chunks = build_structure(
            doc,
            chunk_tokens=s.chunk_tokens,
            overlap_sentences=s.chunk_overlap_sentences,
            llm=llm,
            llm_split=s.llm_chunking,
            llm_window_tokens=s.llm_chunk_window_tokens,
        )
        document.ingested_at = utc_now()
        graphs.append(DocumentGraph(document=document, sections=sections, chunks=chunks))
    return graphs


def titles_for(docs: Sequence[ParsedDocument], titles: Mapping[str, str] | None) -> Mapping[str, str] | None:
    """The passage titles a batch of ``docs`` is distilled with: ``titles`` ({document id: title} of the passage
    corpora read) when the batch holds a passage (every passage title is an entity, and chunks naming another
    title link to it), else None."""
    return titles if titles and any("#" in d.uri for d in docs) else None


def distill_graphs(
    graphs: list[DocumentGraph],
    settings: Settings,
    *,
    llm: LLM | None = None,
    titles: Mapping[str, str] | None = None,
    n_process: int | None = None,
) -> Distilled:
    """Stage 3: distill every chunk of ``graphs`` (``kbgraph.ingest.distill``; ``n_process``: its spaCy worker
    processes, None = automatic) and put each record on its document's graph; returns what was distilled."""
    chunks = [c for g in graphs for c in g.chunks]
    distilled = distill(
        chunks, llm=llm, titles=titles, n_process=n_process, atomizing_temperature=settings.llm.atomizing_temperature
    )
    split_distilled(graphs, distilled)
    return distilled


def embed_graphs(graphs: list[DocumentGraph], settings: Settings, embedder: Embedder) -> int:
    """Stage 4: embed the layers of ``graphs`` whose vectors are on (``kbgraph.ingest.embed_layers``, settings
    ``vector_layers``, ``late_chunking``, ``static_layers``, ``entity_types_without_vectors``); returns the number of
    texts embedded."""
    e = settings.embedding
    static = e.static_vector_layers
    return embed_layers(
        graphs,
        embedder,
        e.vector_layers,
        late_chunking=e.late_chunking,
        static_layers=static,
        static=get_static_embedder(settings) if static else None,
        entity_types_without_vectors=frozenset(e.entity_types_without_vectors),
    )


def split_distilled(graphs: list[DocumentGraph], distilled: Distilled) -> None:
    """Distribute distilled records to their documents (by chunk); an entity goes to every document that
    mentions it or links it by a triple."""
    owner = {c.id: g for g in graphs for c in g.chunks}
    by_id = {e.id: e for e in distilled.entities}
    needed: dict[int, dict[str, EntityRecord]] = defaultdict(dict)
    for q in distilled.questions:
        owner[q.chunk_id].questions.append(q)
    for t in distilled.triples:
        g = owner[t.chunk_id]
        g.triples.append(t)
        for eid in (t.subject_id, t.object_id):
            if eid in by_id:
                needed[id(g)][eid] = by_id[eid]
    for m in distilled.mentions:
        g = owner[m.chunk_id]
        g.mentions.append(m)
        if m.entity_id in by_id:
            needed[id(g)][m.entity_id] = by_id[m.entity_id]
    for g in graphs:
        g.entities = [e.model_copy() for e in needed[id(g)].values()]


__all__ = ["chunk_documents", "distill_graphs", "embed_graphs", "parse_source", "split_distilled", "titles_for"]
