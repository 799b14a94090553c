"""The triple hop of score propagation (issue 39; setting ``weight_triple_hop``, kbgraph.query.propagation.propagate,
docs/scoring.md): from the question's entities along their triples (subject -RELATED-> object) to the chunks that
mention the object. On a planted graph it reaches a bridge chunk that the entity hop (co-mention with one of the
``hop_from`` best chunks) does not, with the term w_R · g(q, e) / log2(1 + deg(o)) recomputed here; it follows a
triple from subject to object only, and not through an object in more than ``max_entity_degree`` chunks. Both
stores."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kbgraph.ingest.write import write_documents
from kbgraph.models import ChunkRecord, DocumentGraph, DocumentRecord, EntityRecord, MentionRecord, TripleRecord
from kbgraph.query.models import Seeds
from kbgraph.query.propagation.propagate import propagate, score_terms
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore

DIM = 384
ALPHA = EntityRecord(id="eAlpha", name="Alpha Film", type="TITLE")
BOB = EntityRecord(id="eBob", name="Bob Director", type="PERSON")
#: the hops' sources are the 3 best chunks by S1 (the decoys); the film's chunk f1 is 4th
SETTINGS = {"ranker": "weights", "hop_from": 3, "rescore_k": 0, "max_entity_degree": 5, "weight_triple_hop": 0.4}
SIM_ALPHA = 0.7


def _vec(seed: int) -> list[float]:
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return [float(x) for x in v / np.linalg.norm(v)]


def _doc(
    did: str,
    title: str,
    text: str,
    mentions: list[EntityRecord],
    triples: list[TripleRecord] | None = None,
) -> DocumentGraph:
    cid = did.removeprefix("doc:")
    return DocumentGraph(
        document=DocumentRecord(id=did, uri=f"file:///{cid}.txt", title=title, mime="text/plain", sha256=did),
        chunks=[ChunkRecord(id=cid, document_id=did, parent_id=did, text=text, order=0, embedding=_vec(len(did)))],
        entities=mentions,
        mentions=[MentionRecord(chunk_id=cid, entity_id=e.id) for e in mentions],
        triples=triples or [],
    )


def _graph() -> list[DocumentGraph]:
    """f1 names the film and its director, with the triple (Alpha Film, directed by, Bob Director); b1, the bridge,
    names the director only; d1-d3 are the decoys the question's Chunk seeds rank first, sharing no entity."""
    triple = TripleRecord(
        id="t1",
        chunk_id="f1",
        subject=ALPHA.name,
        predicate="directed by",
        object=BOB.name,
        subject_id=ALPHA.id,
        object_id=BOB.id,
        text="Alpha Film directed by Bob Director",
    )
    return [
        _doc("doc:f1", "Alpha Film", "Alpha Film is a 1999 film directed by Bob Director.", [ALPHA, BOB], [triple]),
        _doc("doc:b1", "Bob Director", "Bob Director was born in Lyon.", [BOB]),
        *(_doc(f"doc:d{i}", f"Decoy {i}", f"Decoy text {i}.", []) for i in (1, 2, 3)),
    ]


def _seeds(entities: dict[str, float]) -> Seeds:
    chunk = {"d1": (0.9, ""), "d2": (0.85, ""), "d3": (0.8, ""), "f1": (0.3, "")}
    return Seeds(
        layers={"Chunk": chunk, "Entity": {e: (sim, e) for e, sim in entities.items()}},
        question="Where was the director of Alpha Film born?",
    )


def test_the_triple_hop_reaches_a_bridge_that_co_mention_does_not(
    store: GraphStore, backend_settings: Settings
) -> None:
    write_documents(store, _graph())
    seeds = _seeds({ALPHA.id: SIM_ALPHA})
    off = score_terms(store, backend_settings.updated({**SETTINGS, "weight_triple_hop": 0.0}), seeds, k=10)
    assert "b1" not in off.terms, "without the triple hop nothing reaches the bridge (f1 is no hop source)"
    assert off.ranked[:3] == ["d1", "d2", "d3"]

    settings = backend_settings.updated(SETTINGS)
    on = score_terms(store, settings, seeds, k=10)
    degree = 2  # chunks that mention Bob Director: f1 and b1
    expected = 0.4 * SIM_ALPHA / math.log2(1 + degree)
    for cid in ("b1", "f1"):  # the object's chunks; f1's own triple names it too
        score, node, text, sim, weight, factor = on.terms[cid]["TripleHop"]
        assert (node, text) == (BOB.id, BOB.name)
        assert sim == pytest.approx(SIM_ALPHA) and weight == 0.4
        assert factor == pytest.approx(1 / math.log2(3))
        assert score == pytest.approx(expected, abs=1e-6)
    assert on.terms["b1"].keys() == {"TripleHop"}
    assert on.scores["b1"] == pytest.approx(expected, abs=1e-6)
    got = {c.id: c for c in propagate(store, settings, seeds, k=10, explain=True)}
    assert [(t.term, t.node_id) for t in got["b1"].breakdown] == [("TripleHop", BOB.id)]


def test_the_triple_hop_goes_from_subject_to_object_through_rare_objects(
    store: GraphStore, backend_settings: Settings
) -> None:
    write_documents(store, _graph())
    settings = backend_settings.updated(SETTINGS)
    # the object as the question's entity: no triple leaves it (RELATED points from the subject)
    from_object = score_terms(store, settings, _seeds({BOB.id: 0.9}), k=10)
    assert not any("TripleHop" in by_layer for by_layer in from_object.terms.values())
    # an object in more chunks than max_entity_degree carries no signal
    common = score_terms(store, settings.updated({"max_entity_degree": 1}), _seeds({ALPHA.id: SIM_ALPHA}), k=10)
    assert "b1" not in common.terms
