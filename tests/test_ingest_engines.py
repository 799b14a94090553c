"""The seam of the ingestion engines (kbgraph.ingest.engines) on the embedded FalkorDB store: a new engine is one
class and one row of ``ENGINES`` (here a toy engine that writes every document as a group of its own, through the
run's reader and GroupRunner), and builds the local engine's graph; an engine whose ``check`` fails stops the run
before it starts; an unknown engine's name is an error naming the engines. (The ray engine against the local one:
tests/test_ingest_ray.py.)"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kbgraph.errors import ConfigError
from kbgraph.ingest import engines
from kbgraph.ingest.engines import EngineRun
from kbgraph.ingest.groups import document_chars
from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings

TEXTS = {
    "rhine.txt": "The Rhine flows through Basel and Cologne. Basel lies in Switzerland.",
    "danube.txt": "The Danube flows through Vienna and Budapest. Vienna is the capital of Austria.",
    "elbe.txt": "The Elbe flows through Dresden and Hamburg. Hamburg is a port city.",
}


class OneByOne:
    """A toy engine: each new or changed document is a group of its own, computed and written by the run's
    ``GroupRunner`` in this process."""

    summary = "one document per group (a test's engine)"

    def __init__(self) -> None:
        self.files: list[Path] = []

    def check(self, settings: Settings) -> None:
        pass

    def run(self, files: list[Path], run: EngineRun) -> None:
        self.files = list(files)
        run.runner.run(self._groups(files, run))

    def _groups(self, files: list[Path], run: EngineRun) -> Iterator[list[Any]]:
        run.reader.start(files)
        for path in files:
            for doc in run.reader.read(path) or ():
                run.state.cut.add(document_chars(doc))
                run.state.close_group(1, run.bar)
                yield [doc]


class Refuses(OneByOne):
    def check(self, settings: Settings) -> None:
        raise ConfigError("the toy cluster is down")


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    for name, text in TEXTS.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def _with_engine(settings: Settings, name: str) -> Settings:
    s = settings.updated({"name": f"eng{uuid.uuid4().hex[:8]}", "embedding_cache": False})
    object.__setattr__(s.ingest, "ingest_engine", name)  # past the Literal, as a new engine's name would be added
    return s


def _graph(kb: KnowledgeBase) -> dict[str, Any]:
    chunks = kb.store._execute("MATCH (c:Chunk) RETURN c.id AS id, c.text AS text ORDER BY id", {})
    return {
        "chunks": [dict(r) for r in chunks],
        "relationships": kb.stats().relationships,
        "nodes": {k: v for k, v in kb.stats().nodes.items() if k != "IngestionRun"},
    }


def test_a_new_engine_is_one_row_and_builds_the_local_graph(
    falkor_settings: Settings, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    toy = OneByOne()
    monkeypatch.setitem(engines.ENGINES, "toy", toy)
    built: dict[str, dict[str, Any]] = {}
    reports = {}
    for name in ("local", "toy"):
        with KnowledgeBase(settings=_with_engine(falkor_settings, name)) as kb:
            try:
                reports[name] = kb.ingest([folder], progress=False)
                built[name] = _graph(kb)
                groups = kb.store.sent["ingest/mark_documents_complete"]
                built[name]["groups"] = groups
            finally:
                kb.reset()
    assert [p.name for p in toy.files] == sorted(TEXTS)  # the toy engine ran, over the files found
    assert reports["toy"].added == reports["local"].added == len(TEXTS) and reports["toy"].status == "completed"
    assert built["local"]["groups"] == 1 and built["toy"]["groups"] == len(TEXTS)  # its own groups
    for key in ("chunks", "nodes", "relationships"):
        assert built["toy"][key] == built["local"][key], key


def test_an_engine_that_cannot_run_stops_the_run_before_it_starts(
    falkor_settings: Settings, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(engines.ENGINES, "refuses", Refuses())
    with KnowledgeBase(settings=_with_engine(falkor_settings, "refuses")) as kb:
        with pytest.raises(ConfigError, match="the toy cluster is down"):
            kb.ingest([folder], progress=False)
        assert kb.store.run("ingest/last_run") == []  # no IngestionRun: nothing started
        kb.reset()


def test_an_unknown_engine_names_the_engines(falkor_settings: Settings, folder: Path) -> None:
    with KnowledgeBase(settings=_with_engine(falkor_settings, "spark")) as kb:
        with pytest.raises(ConfigError, match=r"unknown ingest_engine 'spark': the engines are local, ray"):
            kb.ingest([folder], progress=False)
        assert kb.store.run("ingest/last_run") == []
        kb.reset()
