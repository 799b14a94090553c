"""Method 'hierarchical' and the retrieval of 'naive_hr' are PIKE-RAG Fig. 11's union (§5.3.1; §6.1 and paper 003
A.3 for k and thresholds; kbgraph.query.methods.hierarchical), on a planted graph in a real embedded FalkorDB store: chunk
and atomic-question vectors are set by hand around one question vector, so which chunk each path reaches is
known in advance.

Issue 28 defect 2: 'hierarchical' was ``1.0·g(q,c) + 0.1·max g(q,a)`` over every chunk, with no threshold: it
ranked a chunk by its own similarity even below 0.5 and let an atomic question above 0.5 add at most 0.1.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from kbgraph.models import AtomicQuestionRecord, ChunkRecord, DocumentGraph, DocumentRecord
from kbgraph.query.context import QueryContext
from kbgraph.query.methods.registry import get_method
from kbgraph.query.models import TraceRound
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore
from tests.graph_kb import loaded_store
from tests.traces import trace_of

DIM = 384
QUESTION = "Which planted chunk answers the planted question?"

#: chunk -> (cosine of its own vector to the question, cosine of its atomic question to the question)
PLANTED = {
    "A": (0.90, 0.10),  # path (a)
    "D": (0.55, 0.05),  # path (a), just above the threshold
    "C": (0.45, 0.00),  # neither: its chunk is below 0.5, its atomic question too
    "F": (0.30, 0.30),  # neither
    "B": (0.10, 0.90),  # path (b) only
    "E": (0.05, 0.60),  # path (b) only
}


def _vector(cos: float, axis: int) -> list[float]:
    """A unit vector at cosine ``cos`` to the question's vector (axis 0), its remainder on ``axis``."""
    v = np.zeros(DIM, dtype=np.float32)
    v[0], v[axis] = cos, np.sqrt(1.0 - cos * cos)
    return v.tolist()


class PlantedEmbedder:
    """Embeds the question as axis 0; any other text (the citations of 'naive_hr') as the last axis."""

    dimension = DIM
    model_name = "planted"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        v = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, t in enumerate(texts):
            v[i, 0 if t == QUESTION else DIM - 1] = 1.0
        return v


def _graphs() -> list[DocumentGraph]:
    out = []
    for i, (name, (chunk_cos, atom_cos)) in enumerate(PLANTED.items()):
        doc = DocumentRecord(
            id=f"doc:{name}",
            uri=f"file:///planted.jsonl#{name}",
            title=f"Planted {name}",
            mime="text/plain",
            sha256=f"sha{name}",
        )
        chunk = ChunkRecord(
            id=f"chunk:{name}",
            document_id=doc.id,
            parent_id=doc.id,
            order=0,
            section_path="",
            text=f"Planted passage {name}.",
            embedding=_vector(chunk_cos, 1 + 2 * i),
        )
        atom = AtomicQuestionRecord(
            id=f"aq:{name}",
            chunk_id=chunk.id,
            text=f"What is planted passage {name}?",
            kind="question",
            embedding=_vector(atom_cos, 2 + 2 * i),
        )
        out.append(DocumentGraph(document=doc, chunks=[chunk], questions=[atom]))
    return out


#: The planted graph's store and its settings.
Planted = tuple[GraphStore, Settings]


@pytest.fixture(scope="module")
def planted(falkor_settings: Settings) -> Iterator[Planted]:
    settings = falkor_settings.updated(
        {
            "name": f"hier{uuid.uuid4().hex[:8]}",
            "llm_model": None,
            "vector_layers": ["AtomicQuestion"],
            "static_layers": [],
            "fulltext_k": 0,
        }
    )
    with loaded_store(settings, _graphs()) as store:
        yield store, settings


def _ids(planted: Planted, k: int = 20, **update: Any) -> list[str]:
    store, settings = planted
    ctx = QueryContext(store, settings.updated(update), PlantedEmbedder(), None)
    return [c.id.split(":")[1] for c in get_method("hierarchical", "retrieval").run(QUESTION, ctx, k=k)]


def test_hierarchical_is_the_union_of_paths_a_and_b(planted: Planted) -> None:
    """Path (a): chunks at cosine >= 0.5, best first (A, D); then path (b)'s new chunks by their atomic question
    (B, E). C and F reach neither path; the old formula ranked them above B and E."""
    assert _ids(planted) == ["A", "D", "B", "E"]
    assert _ids(planted, k=3) == ["A", "D", "B"]
    store, settings = planted
    ctx = QueryContext(store, settings, PlantedEmbedder(), None)
    chunks = get_method("hierarchical", "retrieval").run(QUESTION, ctx, k=4, explain=True)
    assert [round(c.score, 4) for c in chunks] == [0.9, 0.55, 0.9, 0.6]
    assert [[b.term for b in c.breakdown] for c in chunks] == [
        ["Chunk"],
        ["Chunk"],
        ["AtomicQuestion"],
        ["AtomicQuestion"],
    ]
    assert chunks[2].breakdown[0].node_id == "aq:B" and chunks[2].document_title == "Planted B"


def test_its_settings_are_the_papers_k_and_thresholds(planted: Planted) -> None:
    from kbgraph.settings import Settings

    s = Settings()
    assert (
        s.baselines.hr_k,
        s.baselines.hr_threshold,
        s.baselines.hr_question_k,
        s.baselines.hr_question_threshold,
    ) == (8, 0.5, 4, 0.5)
    assert _ids(planted, hr_k=1) == ["A", "B", "E"]  # path (a) cut to its best chunk
    assert _ids(planted, hr_threshold=0.4) == ["A", "D", "C", "B", "E"]
    assert _ids(planted, hr_threshold=0.95) == ["B", "E"]
    assert _ids(planted, hr_question_k=1) == ["A", "D", "B"]  # path (b) cut to its best atomic question
    assert _ids(planted, hr_question_threshold=0.7) == ["A", "D", "B"]
    assert _ids(planted, hr_question_threshold=0.08) == ["A", "D", "B", "E", "F"]  # A's own: not twice


def test_naive_hr_answers_from_the_same_union(planted: Planted) -> None:
    import json

    from kbgraph.llm.fake import ScriptedLLM

    store, settings = planted
    llm = ScriptedLLM([json.dumps({"answer": "A", "rationale": "planted"})])
    answer = get_method("naive_hr", "answer").run(QUESTION, QueryContext(store, settings, PlantedEmbedder(), llm))
    assert [c.id.split(":")[1] for c in answer.chunks] == _ids(planted)
    assert trace_of(answer, TraceRound)[0].note == "path (a): 2 chunks; path (b): 2 atomic questions, 2 new chunks"
