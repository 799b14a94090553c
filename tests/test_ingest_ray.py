"""The ``ray`` ingestion engine (kbgraph.ingest.ray_engine; setting ingest_engine) against the ``local`` one, on the
embedded FalkorDB store and a local Ray with 2 CPUs. One knowledge base per engine, each given the same run (one
run: Ray starts once, ~10 s, and its actors load spaCy and the embedder once, 20-40 s on 2 cores): a folder (a small
PDF with a table, a text file and a corrupt PDF) and an 8-passage MuSiQue corpus. Then:

* both engines build the same graph: the same documents, chunk ids and texts, atomic question, triple and entity
  counts, and vectors within 1e-5 (the embedding cache off, so both really embed), written in the same groups
  (``ingest_group_size`` 3; Ray computes batches of 2) in the same order;
* the corrupt PDF is a failed file of the report and the other files are written and complete;
* a re-run with ray over both sources, the corrupt file gone, is a no-op: everything unchanged, nothing written,
  and Ray not started;
* without Ray installed the run fails before it starts, naming ``pip install 'kbgraph[ray]'``; so does a
  ``ray_address`` where no cluster answers (at once, where Ray would retry for minutes).
"""

from __future__ import annotations

import logging
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kbgraph.errors import ConfigError
from kbgraph.ingest import ray_engine
from kbgraph.ingest.report import IngestReport
from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings

PDFS = ("fbi_nics_background_checks_2015-11.pdf",)  # one small PDF with a table: the suite's time is bounded
PASSAGES = 8
GROUP = 3  # ingest_group_size: the corpus is 3 groups (3, 3, 2 passages); Ray's batches are of 2 (ray_engine)
WRITES = ("ingest/upsert_", "ingest/link_", "ingest/mark_documents_complete", "admin/delete_")


@pytest.fixture(scope="module")
def sources(examples_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("ray-inbox")
    for name in PDFS:
        (folder / name).write_bytes((examples_dir / "docs/pdf" / name).read_bytes())
    (folder / "good.txt").write_text(
        "The Rhine flows through Basel and Cologne. Basel lies in Switzerland.", encoding="utf-8"
    )
    (folder / "corrupt.pdf").write_bytes((examples_dir / "docs/pdf" / PDFS[0]).read_bytes()[:5000])
    src = examples_dir / "multihop/musique/hipporag_train100.corpus.jsonl"
    corpus = tmp_path_factory.mktemp("ray-corpus") / "corpus.jsonl"
    corpus.write_text("\n".join(src.read_text(encoding="utf-8").splitlines()[:PASSAGES]) + "\n", encoding="utf-8")
    return folder, corpus


#: {engine: (kb, the report of its run over the folder and the corpus, progress lines)}
Runs = dict[str, tuple[KnowledgeBase, IngestReport, list[str]]]


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture(scope="module")
def runs(falkor_settings: Settings, sources: tuple[Path, Path]) -> Iterator[Runs]:
    """{engine: (kb, the report of its one run over both sources, progress lines)}; the KBs are reset at the end."""
    folder, corpus = sources
    out: Runs = {}
    logger = logging.getLogger("kbgraph.ingest")
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        for engine in ("local", "ray"):
            settings = falkor_settings.updated(
                {
                    "name": f"ray{engine}{uuid.uuid4().hex[:8]}",
                    "embedding_cache": False,
                    "ingest_engine": engine,
                    "ingest_workers": 2,
                    "ingest_group_size": GROUP,
                }
            )
            kb = KnowledgeBase(settings=settings)
            kb.reset()
            lines = _Lines()
            logger.addHandler(lines)
            try:
                report = kb.ingest([folder, corpus], progress=False)
            finally:
                logger.removeHandler(lines)
            out[engine] = (kb, report, lines.lines)
        yield out
    finally:
        logger.setLevel(level)
        for kb, _, _ in out.values():
            kb.reset()
            kb.close()


def _graph(kb: KnowledgeBase) -> dict[str, Any]:
    rows = kb.store._execute(
        "MATCH (d:Document) RETURN d.uri AS uri, d.title AS title, d.sha256 AS sha, d.status AS status ORDER BY uri", {}
    )
    chunks = kb.store._execute(
        "MATCH (c:Chunk) RETURN c.id AS id, c.document_id AS doc, c.text AS text ORDER BY id", {}
    )
    nodes = {k: v for k, v in kb.stats().nodes.items() if k != "IngestionRun"}
    # the order the chunks were created in (and the Chunk indexes filled): that of the groups written
    created = [r["id"] for r in kb.store._execute("MATCH (c:Chunk) RETURN c.id AS id ORDER BY id(c)", {})]
    return {
        "documents": [dict(r) for r in rows],
        "chunks": [dict(r) for r in chunks],
        "nodes": nodes,
        "created": created,
        "groups": kb.store.sent["ingest/mark_documents_complete"],
    }


def _vectors(kb: KnowledgeBase) -> dict[tuple[str, str], np.ndarray]:
    rows = kb.store._execute(
        "MATCH (n) WHERE n.embedding IS NOT NULL RETURN labels(n)[0] AS label, n.id AS id, n.embedding AS v", {}
    )
    return {(r["label"], r["id"]): np.asarray(r["v"], dtype=np.float32) for r in rows}


@pytest.mark.slow  # a local Ray and one ingest per engine (~1 min on 2 cores)
def test_ray_builds_the_same_graph_as_local(runs: Runs) -> None:
    local, ray = _graph(runs["local"][0]), _graph(runs["ray"][0])
    assert len(local["documents"]) == len(PDFS) + 1 + PASSAGES
    assert {d["status"] for d in ray["documents"]} == {"complete"}
    assert ray["documents"] == local["documents"]
    assert ray["chunks"] == local["chunks"]
    # the same units of work in the same order: the folder's 2 documents in one group, the passages in 3
    assert local["groups"] == 1 + -(-PASSAGES // GROUP) and ray["groups"] == local["groups"]
    assert ray["created"] == local["created"]
    for label in ("AtomicQuestion", "Triple", "Entity", "Chunk"):
        assert local["nodes"].get(label, 0) > 0, label
    assert ray["nodes"] == local["nodes"]
    assert runs["ray"][0].stats().relationships == runs["local"][0].stats().relationships
    v_local, v_ray = _vectors(runs["local"][0]), _vectors(runs["ray"][0])
    assert v_local.keys() == v_ray.keys() and {k[0] for k in v_local} >= {"Chunk", "Document"}
    worst = max(float(np.abs(v_local[k] - v_ray[k]).max()) for k in v_local)
    assert worst <= 1e-5, worst
    # the same report, but for the seconds and the run id
    keep = {"added", "updated", "unchanged", "failed", "skipped", "documents", "chunks", "status", "errors", "files"}
    assert runs["ray"][1].model_dump(include=keep) == runs["local"][1].model_dump(include=keep)
    # progress lines as the local engine prints them: each stage of each group, and the last line
    ray_lines = runs["ray"][2]
    for stage in ("parse", "chunk", "distill", "embed", "write"):
        assert any(line.startswith("group 1 " + stage) for line in ray_lines), (stage, ray_lines)
    assert any(line.startswith("done: ") for line in ray_lines)


@pytest.mark.slow
def test_a_corrupt_file_fails_alone(runs: Runs, sources: tuple[Path, Path]) -> None:
    kb, report, _ = runs["ray"]
    assert [Path(e.path).name for e in report.errors] == ["corrupt.pdf"]
    assert (report.added, report.failed, report.status, report.exit_code) == (len(PDFS) + 1 + PASSAGES, 1, "failed", 1)
    outcomes = {Path(f.path).name: f.outcome for f in report.files}
    assert outcomes == {
        "corrupt.pdf": "failed",
        "good.txt": "ingested",
        "corpus.jsonl": "ingested",
        **dict.fromkeys(PDFS, "ingested"),
    }
    assert kb.store.orphans() == []
    run = kb.store.run("ingest/last_run")[0]
    assert (run["status"], run["added"]) == ("failed", len(PDFS) + 1 + PASSAGES)  # the run's record: as its report


@pytest.mark.slow
def test_a_rerun_with_ray_is_a_noop_that_starts_no_ray(
    runs: Runs, sources: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unchanged files are hashed, not parsed: with the corrupt file (which failed under Ray above) gone from the
    folder, nothing is left for Ray, which is not started, and nothing is written."""
    kb = runs["ray"][0]
    before = _graph(kb)
    sent = dict(kb.store.sent)
    (sources[0] / "corrupt.pdf").unlink()

    def no_ray() -> None:
        raise AssertionError("Ray started for a run with nothing new")

    monkeypatch.setattr(ray_engine, "import_ray", no_ray)
    report = kb.ingest(list(sources), progress=False)
    assert (report.added, report.updated, report.unchanged, report.failed) == (0, 0, len(PDFS) + 1 + PASSAGES, 0)
    assert report.errors == [] and report.status == "completed"
    writes = sum(n - sent.get(name, 0) for name, n in kb.store.sent.items() if name.startswith(WRITES))
    assert writes == 0
    assert _graph(kb) == before


def test_without_ray_the_run_fails_before_it_starts(
    falkor_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    (tmp_path / "a.txt").write_text("Basel lies on the Rhine.", encoding="utf-8")
    settings = falkor_settings.updated({"name": f"noray{uuid.uuid4().hex[:8]}", "ingest_engine": "ray"})
    with KnowledgeBase(settings=settings) as kb:
        with pytest.raises(ConfigError, match=r"pip install 'kbgraph\[ray\]'"):
            kb.ingest([tmp_path], progress=False)
        assert kb.store.run("ingest/last_run") == []  # no IngestionRun: nothing started
        kb.reset()


def test_an_address_without_a_cluster_fails_before_the_run_starts(falkor_settings: Settings, tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "a.txt").write_text("Basel lies on the Rhine.", encoding="utf-8")
    settings = falkor_settings.updated(
        {"name": f"noray{uuid.uuid4().hex[:8]}", "ingest_engine": "ray", "ray_address": f"127.0.0.1:{port}"}
    )
    with KnowledgeBase(settings=settings) as kb:
        with pytest.raises(ConfigError, match=f"no Ray cluster answers at '127.0.0.1:{port}'"):
            kb.ingest([tmp_path], progress=False)
        assert kb.store.run("ingest/last_run") == []
        kb.reset()
