"""Filters inside retrieval (issue 58), both stores, on a corpus ingested with metadata (a jsonl passage's
``metadata``): every retrieval method returns only the allowed documents' chunks, chosen before the top k (with
``seed_k`` 2, the group's chunks come back although the unfiltered top 2 are another group's: a filter applied after
retrieval would return nothing); a filter matching nothing finds nothing; a hostile value is a parameter; an unknown
key or a value of another type is a QueryError naming it; the answer stream keeps the scope."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from kbgraph.errors import QueryError
from kbgraph.eval.metrics import passage_id
from kbgraph.filters import parse_where
from kbgraph.kb import KnowledgeBase
from kbgraph.query.models import Citation, ScoredChunk
from kbgraph.settings import Settings

#: Group 'rivers' and group 'mountains' both name Kentucky (an entity shared across groups); 'cities' does not.
PASSAGES = [
    ("r1", "rivers", "The Ohio River forms the northern border of Kentucky and flows into the Mississippi."),
    ("r2", "rivers", "The Green River in Kentucky is known for Mammoth Cave along its banks."),
    ("r3", "rivers", "The Danube flows through Vienna, Budapest and Belgrade to the Black Sea."),
    ("m1", "mountains", "Black Mountain is the highest point in Kentucky at 4,145 feet."),
    ("m2", "mountains", "Mount Everest is the highest mountain above sea level, in the Himalaya."),
    ("m3", "mountains", "The Appalachian Mountains cross eastern Kentucky and Tennessee."),
    ("c1", "cities", "Louisville is a city on the Ohio River with a famous horse race each May."),
    ("c2", "cities", "Vienna is the capital of Austria and lies on the Danube."),
]
QUESTION = "Which river forms the border of Kentucky?"
METHODS = ("propagation", "dense", "bm25", "hierarchical")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("filtered")
    rows = [
        {"id": pid, "title": f"Passage {pid}", "text": text, "metadata": {"group": group, "rank": i}}
        for i, (pid, group, text) in enumerate(PASSAGES)
    ]
    path = root / "passages.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def kb(backend_settings: Settings, corpus: Path) -> Iterator[KnowledgeBase]:
    with KnowledgeBase(
        settings=backend_settings.updated(
            {"seed_k": 2, "fulltext_k": 2, "hr_k": 2, "hr_threshold": 0.0, "hr_question_threshold": 0.0}
        )
    ) as kb:
        kb.reset()
        report = kb.ingest([corpus])
        assert report.failed == 0
        yield kb
        kb.reset()


def groups(chunks: Sequence[ScoredChunk | Citation]) -> set[str]:
    return {dict((p[0], p[1]) for p in PASSAGES)[passage_id(c.document_uri)] for c in chunks}


@pytest.mark.parametrize("method", METHODS)
def test_only_the_allowed_documents_and_chosen_before_the_top_k(kb: KnowledgeBase, method: str) -> None:
    unfiltered = kb.retrieve(QUESTION, k=2, method=method)
    assert "cities" not in groups(unfiltered)  # the unfiltered top 2 hold no 'cities' passage ...
    filtered = kb.retrieve(QUESTION, k=2, method=method, filters=parse_where(["group=cities"]))
    assert filtered and groups(filtered) == {"cities"}  # ... the filtered top 2 is the group's own
    either = kb.retrieve(
        QUESTION, k=8, method=method, filters={"op": "in", "key": "group", "values": ["cities", "mountains"]}
    )
    assert either and groups(either) <= {"cities", "mountains"}
    ranked = kb.retrieve(QUESTION, k=8, method=method, filters=parse_where(["rank>=5"]))  # numbers, from text
    assert ranked and {passage_id(c.document_uri) for c in ranked} <= {"m3", "c1", "c2"}


def test_explain_rows_stay_in_scope(kb: KnowledgeBase) -> None:
    where = parse_where(["group=mountains"])
    chunks = kb.retrieve(QUESTION, k=5, explain=True, filters=where)
    assert chunks and groups(chunks) == {"mountains"}
    rows = [t for c in chunks for t in c.breakdown]
    assert rows and not {"Ohio", "Green", "Danube", "Louisville", "Vienna"} & set(
        " ".join(t.text for t in rows).split()
    )
    scope = kb.scope(where)
    assert scope is not None and len(scope.chunks) == 3
    assert {t.node_id for t in rows if t.term in ("Chunk", "Hop", "Next", "FullText", "TitleHop")} <= scope.chunks


def test_no_match_hostile_values_and_errors(kb: KnowledgeBase) -> None:
    before = kb.stats().nodes
    for hostile in ("x' OR 1=1 //", 'cities") RETURN d //', "}) MATCH (n) DETACH DELETE n //"):
        assert kb.retrieve(QUESTION, filters={"op": "eq", "key": "group", "value": hostile}) == []
    assert kb.stats().nodes == before  # nothing was deleted
    assert kb.retrieve(QUESTION, filters=parse_where(["group^=zzz"])) == []
    with pytest.raises(QueryError, match="unknown filter key 'grup'.*did you mean 'group'"):
        kb.retrieve(QUESTION, filters=parse_where(["grup=cities"]))
    with pytest.raises(QueryError, match="'rank' holds numbers: 'high' is not one"):
        kb.retrieve(QUESTION, filters=parse_where(["rank>=high"]))


def test_the_answer_stream_keeps_the_scope(kb: KnowledgeBase) -> None:
    with kb.ask(QUESTION, method="propagation", k=3, stream=True, filters=parse_where(["group=cities"])) as events:
        answer = [e.answer for e in events if e.type == "answer"][0]
    assert answer is not None and answer.citations
    assert {passage_id(c.document_uri) for c in answer.citations} <= {"c1", "c2"}


def test_a_repeated_filtered_question_reads_the_corpus_generation_once(kb: KnowledgeBase) -> None:
    """A document scope keeps the corpus generation it was resolved at: the filtered question's BM25 and adjacency
    take it from the scope, so a repeated filtered question reads retrieve/corpus_generation once (the scope's
    cache check), not again for its seeds."""
    where = parse_where(["group=cities"])
    kb.retrieve(QUESTION, k=3, filters=where)  # the scope resolved and kept
    before = kb.store.sent["retrieve/corpus_generation"]
    kb.retrieve(QUESTION, k=3, filters=where)
    assert kb.store.sent["retrieve/corpus_generation"] - before == 1
