"""Running the offline extraction over many chunks: spaCy pipes and the fork worker pool
(paper 003 Appendix A.5, the offline alternative; PIKE-RAG §5.3.1).

``distill_offline`` enables exactly the spaCy pipes the extraction needs (``pipes``) and, for a large list of
chunks, splits it into blocks that forked worker processes extract (``svo.OfflineExtraction``): each worker
inherits the loaded pipeline by ``fork`` and sends back only the records, never a spaCy Doc.

Module state, all of it defined here at the top:

* ``_PIPE_LOCK`` — one thread at a time changes which pipes of a shared pipeline are enabled;
* ``_FORK`` — the fork pool's state: ``lock`` (one pool at a time) and ``job`` (the extraction the forked
  workers run; set before the pool forks so each worker inherits it, cleared afterwards).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from kbgraph.ingest.distill.result import Accumulator
from kbgraph.ingest.distill.svo import OfflineExtraction
from kbgraph.ingest.distill.tags import chunk_text
from kbgraph.ingest.distill.titles import TitleMatcher
from kbgraph.models import ChunkRecord

if TYPE_CHECKING:
    from spacy.language import Language

#: Pipes needed with and without triples (whichever exist in the loaded pipeline are used).
# The attribute ruler and lemmatizer are left out: they cost 27% of the parse time on 2Wiki passages, and
# distill needs coarse POS (set from the tagger's tags, see svo.tag_to_pos) and lemmas of predicate verbs only.
PIPES_WITH_TRIPLES = ("tok2vec", "tagger", "parser", "ner")
PIPES_WITHOUT_TRIPLES = ("senter", "ner")  # in en_core_web_sm both have their own embedding layer
#: Below this many chunks a second spaCy process costs more than it saves.
MULTIPROCESS_MIN_CHUNKS = 400


class _ForkState:
    """The fork pool's module state: ``lock`` lets one pool run at a time; ``job`` is what its workers run."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.job: OfflineExtraction | None = None


_PIPE_LOCK = threading.RLock()
_FORK = _ForkState()


@contextmanager
def pipes(nlp: Language, wanted: Sequence[str]) -> Iterator[list[str]]:
    """Run with exactly the wanted pipes (those the pipeline has) enabled; restore the previous state."""
    with _PIPE_LOCK:
        before = set(nlp.disabled)
        names = list(nlp.component_names)
        active = [n for n in wanted if n in names]
        try:
            for name in names:
                if name in active and name in nlp.disabled:
                    nlp.enable_pipe(name)
                elif name not in active and name not in nlp.disabled:
                    nlp.disable_pipe(name)
            yield active
        finally:
            for name in names:
                if name in before and name not in nlp.disabled:
                    nlp.disable_pipe(name)
                elif name not in before and name in nlp.disabled:
                    nlp.enable_pipe(name)


def auto_processes(n_chunks: int) -> int:
    """Worker processes for ``n_chunks`` chunks: 2 (when there are 2 cores) from ``MULTIPROCESS_MIN_CHUNKS``."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(2, cpus) if n_chunks >= MULTIPROCESS_MIN_CHUNKS else 1


def _worker_block(bounds: tuple[int, int]) -> Accumulator:
    """In a forked worker: the records of one block of the inherited job."""
    assert _FORK.job is not None
    return _FORK.job.run(*bounds)


def distill_offline(
    result: Accumulator,
    chunks: Sequence[ChunkRecord],
    nlp: Language,
    titles: Mapping[str, str] | None,
    matcher: TitleMatcher | None,
    *,
    triples: bool,
    batch_size: int,
    n_process: int | None,
) -> None:
    """Offline extraction of ``chunks`` into ``result``; with ``n_process`` > 1 (None: ``auto_processes``)
    blocks of chunks go to forked workers that run spaCy and the extraction and send back only the records
    (no Doc serialisation). Without ``fork`` (or inside a daemon process) it runs in this process. A chunk
    read the same way as an earlier one (``unique_chunks``) is not parsed again: it gets the earlier chunk's
    records under its own ids, in the order extracting every chunk would give."""
    if not chunks:
        return
    wanted = PIPES_WITH_TRIPLES if triples else PIPES_WITHOUT_TRIPLES
    firsts, copies = unique_chunks(chunks, titles)
    procs = auto_processes(len(firsts)) if n_process is None else max(1, n_process)
    if procs > 1 and (
        "fork" not in multiprocessing.get_all_start_methods() or multiprocessing.current_process().daemon
    ):
        procs = 1  # workers inherit the loaded pipeline by fork; a daemon process may not have children
    found = Accumulator()
    with pipes(nlp, wanted):
        job = OfflineExtraction(nlp, firsts, titles, matcher, triples, batch_size)
        if procs == 1:
            found.merge(job.run(0, len(firsts)))
        else:
            step = max(64, min(512, -(-len(firsts) // (procs * 4))))
            blocks = [(i, min(i + step, len(firsts))) for i in range(0, len(firsts), step)]
            with _FORK.lock:
                _FORK.job = job
                try:
                    with multiprocessing.get_context("fork").Pool(procs) as pool:
                        for part in pool.imap(_worker_block, blocks):
                            found.merge(part)
                finally:
                    _FORK.job = None
    if copies:
        found.copy_chunks([(chunk.id, first.id) for chunk, first in copies])
        found.order_by_chunk([c.id for c in chunks])
    result.merge(found)


def unique_chunks(
    chunks: Sequence[ChunkRecord], titles: Mapping[str, str] | None
) -> tuple[list[ChunkRecord], list[tuple[ChunkRecord, ChunkRecord]]]:
    """``(firsts, copies)``: the chunks spaCy must read (the first of each text) and, for every later chunk
    that would be read the same way, ``(chunk, its first)``. Same way = same kind, same prose (``chunk_text``)
    and, for titled passages, the same document title (each chunk mentions its own title). The same document
    in two formats, or boilerplate repeated across documents, is parsed once: on the sample documents 783
    chunks hold 460 distinct texts (docs/benchmarks.md#the-sample-documents)."""
    seen: dict[tuple[str, str, str | None], ChunkRecord] = {}
    firsts: list[ChunkRecord] = []
    copies: list[tuple[ChunkRecord, ChunkRecord]] = []
    for c in chunks:
        key = (c.kind, chunk_text(c), titles.get(c.document_id) if titles else None)
        first = seen.setdefault(key, c)
        if first is c:
            firsts.append(c)
        else:
            copies.append((c, first))
    return firsts, copies


__all__ = [
    "MULTIPROCESS_MIN_CHUNKS",
    "PIPES_WITHOUT_TRIPLES",
    "PIPES_WITH_TRIPLES",
    "auto_processes",
    "distill_offline",
    "pipes",
    "unique_chunks",
]
