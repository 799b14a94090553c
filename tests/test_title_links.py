"""Title links across the passage corpora of one run (kbgraph.ingest.unchanged.SourceCheck.run_titles): a passage
that names the title of a passage in another corpus file MENTIONS that title's entity whatever the order the files
are read and grouped in. Groups of one passage: the first file's passage is distilled before the second file is
read, which is what two writers sharing the files by claims (each reading only its own) amount to."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings

#: The titles a document's chunks MENTION (TITLE entities; spaCy may also find the name as a PERSON entity).
MENTIONED = (
    "MATCH (c:Chunk)-[:MENTIONS]->(e:Entity {type: 'TITLE'}) WHERE c.document_id = $doc "
    "RETURN collect(DISTINCT e.name) AS names"
)


def _corpus(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    path.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in rows), encoding="utf-8")
    return path


@pytest.fixture
def kb(falkor_settings: Settings) -> Iterator[KnowledgeBase]:
    kb = KnowledgeBase(
        settings=falkor_settings.updated({"name": f"titles{uuid.uuid4().hex[:8]}", "ingest_group_size": 1})
    )
    kb.reset()
    yield kb
    kb.reset()
    kb.close()


def test_a_passage_links_to_a_title_of_a_corpus_read_after_it(kb: KnowledgeBase, tmp_path: Path) -> None:
    first = _corpus(
        tmp_path / "a.jsonl",
        [("p1", "Elmstead Priory", "Elmstead Priory was founded by Harold Quenby in the twelfth century.")],
    )
    second = _corpus(tmp_path / "b.jsonl", [("p2", "Harold Quenby", "Harold Quenby was a Norman knight.")])
    report = kb.ingest([first, second], progress=False)
    assert report.added == 2 and report.failed == 0
    doc = kb.store._execute("MATCH (d:Document) WHERE d.uri ENDS WITH 'a.jsonl#p1' RETURN d.id AS id", {})[0]["id"]
    names = kb.store._execute(MENTIONED, {"doc": doc})[0]["names"]
    assert "Harold Quenby" in names, names
    # an unchanged re-run of the first corpus with a new third one: the first corpus's titles come from the graph
    third = _corpus(tmp_path / "c.jsonl", [("p3", "Norman Abbey", "Norman Abbey stood near Elmstead Priory.")])
    again = kb.ingest([first, third], progress=False)
    assert again.added == 1 and again.unchanged == 1
    doc = kb.store._execute("MATCH (d:Document) WHERE d.uri ENDS WITH 'c.jsonl#p3' RETURN d.id AS id", {})[0]["id"]
    assert "Elmstead Priory" in kb.store._execute(MENTIONED, {"doc": doc})[0]["names"]
