"""Ingestion (L0) end to end on both real stores: real documents, incremental runs, deletion, bad input,
the lock, and a kill -9 in the middle of a run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from kbgraph.errors import LockTimeout
from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore
from kbgraph.store.falkor_server import COMPACT_MIN_BYTES, COMPACT_SHARE, EmbeddedFalkorDB
from tests.conftest import aof_when

NICS = "docs/pdf/fbi_nics_background_checks_2015-11.pdf"
DUCK = "docs/html/wikipedia_duck.html"
WRITE_STATEMENTS = ("ingest/upsert_", "ingest/link_", "ingest/mark_documents_complete", "admin/delete_")


def _assert_compacted(settings: Settings) -> None:
    """The embedded server's append-only file was rewritten after the ingestion (KnowledgeBase.ingest ->
    GraphStore.compact): what it logged since is within the compaction threshold, not the ~60 MB of statements
    the sample documents write."""

    def within(p: dict[str, Any]) -> bool:
        return bool(
            p["aof_current_size"] - p["aof_base_size"] <= max(COMPACT_MIN_BYTES, COMPACT_SHARE * p["aof_base_size"])
        )

    persistence = aof_when(EmbeddedFalkorDB(settings.kb_dir), within)
    assert within(persistence), persistence


def _kb(settings: Settings) -> KnowledgeBase:
    kb = KnowledgeBase(settings=settings)
    kb.reset()
    return kb


def _passages(examples_dir: Path, tmp_path: Path, n: int, name: str = "corpus.jsonl") -> Path:
    src = examples_dir / "multihop/musique/hipporag_train100.corpus.jsonl"
    lines = src.read_text(encoding="utf-8").splitlines()[:n]
    out = tmp_path / name
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def _indexes(store: GraphStore) -> list[tuple[str, str]]:
    """(label, properties) of every index of ``store`` (FalkorDB's rows name a label, Neo4j's a list of labels)."""
    out: list[tuple[str, str]] = []
    for row in store.run("schema/list_indexes"):
        labels = [row["label"]] if "label" in row else list(row.get("labels") or [])
        out += [(str(label), str(row.get("properties"))) for label in labels]
    return sorted(out)


def _writes(store: GraphStore) -> int:
    return sum(n for name, n in store.sent.items() if name.startswith(WRITE_STATEMENTS))


@pytest.mark.slow  # every file of examples/docs (8 documents, ~800 chunks)
def test_shared_documents_build_three_layers_then_reset_and_ingest_again(
    backend_settings: Settings, examples_dir: Path, tmp_path: Path
) -> None:
    """Every file in examples/docs ingests (on the embedded store; on a store server, the local Neo4j, the two
    files the checks read: how a file parses does not depend on the store, and the suite's time is bounded); each
    layer is present and linked to its document. Then `kbgraph reset`
    and `kbgraph ingest` (the rebuild the docs recommend): every node gone, the indexes in place, and the next
    ingest, on a new connection, reads and writes normally. On FalkorDB 4.16.3 `MATCH (n) DETACH DELETE n` after
    ingesting the sample DOCX broke every label it emptied (the next run failed on its first statement with
    "Attempted to access undefined attribute", then the server crashed); the FalkorDB store deletes the graph
    instead. Neo4j's reset is a plain DETACH DELETE."""
    kb = _kb(backend_settings)
    try:
        every = backend_settings.store.uri is None
        report = kb.ingest(
            [examples_dir / "docs"] if every else [examples_dir / NICS, examples_dir / DUCK], progress=False
        )
        assert report.errors == [], report.errors
        if every:
            docs = sorted(p for p in (examples_dir / "docs").rglob("*") if p.is_file() and not p.name.startswith("."))
            assert report.added == len(docs) - 1 == 8  # 6 PDFs, the DOCX handbook, the HTML page (not SOURCES.md)
            assert [(Path(f.path).name, f.reason) for f in report.files if f.outcome == "skipped"] == [
                ("SOURCES.md", f"excluded by {examples_dir / 'docs' / '.kbgraphignore'} line 2: SOURCES.md")
            ]
            _assert_compacted(backend_settings)
        stats = kb.stats()
        for label in ("Document", "Section", "Chunk", "AtomicQuestion", "Triple", "Entity", "IngestionRun"):
            assert stats.nodes.get(label, 0) > 0, label
        assert stats.nodes["Document"] == report.added == (8 if every else 2)
        assert kb.store.orphans() == []
        # a real figure from the NICS table: one row per state with its numbers
        rows = kb.store.fulltext_search("Chunk", "Kentucky Alabama", k=10)
        tables = [h.properties["text"] for h in rows if h.properties.get("kind") == "table"]
        assert any("| Kentucky | 264,140 | 12,155 | 14,847 |" in t for t in tables), "NICS row not in a table chunk"
        # the Wikipedia page: sections and an entity spaCy finds there
        hits = kb.store.fulltext_search("Entity", "Anatidae", k=5)
        assert any(h.properties.get("name") == "Anatidae" for h in hits)
        # answering cites real documents
        answer = kb.ask("Which family do ducks belong to?", k=3)
        assert answer.retrieval_only and answer.citations
        assert any("Duck" in c.document_title for c in answer.citations)
        indexes = _indexes(kb.store)
        assert {"Chunk", "Entity", "AtomicQuestion", "Document"} <= {label for label, _ in indexes}
        kb.reset()
        assert dict(kb.stats().nodes) == {}
        # the same connection still has every index (a KnowledgeBase ensures the schema only when it connects)
        assert _indexes(kb.store) == indexes
    finally:
        kb.close()
    notes = tmp_path / "after-reset"
    notes.mkdir()
    (notes / "fraud.txt").write_text(
        "The standing trustee must report suspected fraud to the United States Trustee.\n\n"
        "A chapter 13 plan pays creditors from the debtor's future income.",
        encoding="utf-8",
    )
    with KnowledgeBase(settings=backend_settings) as kb:  # a new connection, as the next `kbgraph ingest`
        again = kb.ingest([notes], progress=False)
        assert (again.added, again.unchanged, again.failed) == (1, 0, 0)
        nodes = dict(kb.stats().nodes)
        assert nodes["Document"] == 1 and nodes["Chunk"] >= 1 and nodes["Entity"] >= 1
        runs = kb.store.run("ingest/last_run")
        assert runs and runs[0]["status"] == "completed"
        hits = kb.store.fulltext_search("Chunk", "standing trustee fraud", k=3)
        assert hits  # the full-text index is in place after the reset
        top = kb.retrieve("What must the standing trustee do about fraud?", k=3)
        assert top and any("trustee" in c.text.lower() for c in top)  # and the vector indexes
        kb.reset()


def test_reingest_is_a_noop_and_changes_touch_only_their_document(
    backend_settings: Settings, examples_dir: Path, tmp_path: Path
) -> None:
    corpus = tmp_path / "notes"
    corpus.mkdir()
    (corpus / "a.txt").write_text(
        "Ada Lovelace wrote the first program for the Analytical Engine.\n\nShe worked with Charles Babbage in London.",
        encoding="utf-8",
    )
    (corpus / "b.txt").write_text("Grace Hopper developed the first compiler at Remington Rand.", encoding="utf-8")
    passages = _passages(examples_dir, tmp_path, 20)
    kb = _kb(backend_settings)
    try:
        first = kb.ingest([corpus, passages], progress=False)
        assert (first.added, first.failed) == (22, 0)
        before = kb.stats()
        kb.store.sent.clear()
        again = kb.ingest([corpus, passages], progress=False)
        assert (again.added, again.updated, again.unchanged) == (0, 0, 22)
        assert _writes(kb.store) == 0, dict(kb.store.sent)
        after = kb.stats()
        assert after.relationships == before.relationships
        assert {k: v for k, v in after.nodes.items() if k != "IngestionRun"} == {
            k: v for k, v in before.nodes.items() if k != "IngestionRun"
        }

        grace = kb.retrieve("Who developed the first compiler?", k=1, method="dense")[0]
        (corpus / "a.txt").write_text("Ada Lovelace is regarded as the first computer programmer.", encoding="utf-8")
        changed = kb.ingest([corpus, passages], progress=False)
        assert (changed.added, changed.updated, changed.unchanged) == (0, 1, 21)
        assert kb.retrieve("Who developed the first compiler?", k=1, method="dense")[0].id == grace.id
        texts = " ".join(c.text for c in kb.retrieve("Ada Lovelace", k=5, method="dense"))
        assert "first computer programmer" in texts and "Analytical Engine" not in texts
        assert kb.store.orphans() == []

        deleted = kb.delete(str(corpus / "a.txt"))
        assert deleted["documents"] == 1
        assert "Ada Lovelace" not in " ".join(c.text for c in kb.retrieve("Ada Lovelace", k=5, method="dense"))
        assert kb.store.orphans() == []

        (corpus / "b.txt").unlink()
        pruned = kb.ingest([corpus, passages], prune=True, progress=False)
        assert (pruned.deleted, pruned.added) == (1, 1)  # b.txt is gone; a.txt, deleted above, comes back
        assert kb.stats().nodes["Document"] == 21
    finally:
        kb.close()


def test_groups_close_by_documents_or_characters_and_give_the_same_graph(
    falkor_settings: Settings, examples_dir: Path, tmp_path: Path
) -> None:
    """A group (one unit of work, one `mark_documents_complete` statement) holds at most ingest_group_size
    documents and closes once it holds ingest_group_chars characters; how a corpus is grouped does not change
    the graph (entities shared between groups are merged, not duplicated)."""
    corpus = _passages(examples_dir, tmp_path, 40)
    graphs = {}
    for label, update, groups in [
        ("by documents", {"ingest_group_size": 16, "ingest_group_chars": 10**9}, 3),  # 16 + 16 + 8
        ("by characters", {"ingest_group_size": 512, "ingest_group_chars": 1}, 40),  # every passage alone
        ("one group", {"ingest_group_size": 512, "ingest_group_chars": 10**9}, 1),
    ]:
        kb = _kb(falkor_settings.updated(update))
        try:
            report = kb.ingest([corpus], progress=False)
            assert report.added == 40 and report.failed == 0, label
            assert kb.store.sent["ingest/mark_documents_complete"] == groups, label
            stats = kb.stats()
            graphs[label] = ({k: v for k, v in stats.nodes.items() if k != "IngestionRun"}, stats.relationships)
            assert kb.store.orphans() == []
        finally:
            kb.close()
    assert graphs["by documents"] == graphs["by characters"] == graphs["one group"]


def test_bad_input_is_reported_and_the_rest_ingested(
    falkor_settings: Settings, examples_dir: Path, tmp_path: Path
) -> None:
    import pymupdf

    settings = falkor_settings.updated({"name": "bad", "max_file_bytes": 200_000})
    d = tmp_path / "inbox"
    d.mkdir()
    real_pdf = examples_dir / "docs/pdf/fbi_nics_background_checks_2015-11.pdf"
    (d / "corrupt.pdf").write_bytes(real_pdf.read_bytes()[:5000])
    (d / "empty.txt").write_text("   \n\n  ", encoding="utf-8")
    (d / "zero.md").write_bytes(b"")
    (d / "garbage.pdf").write_bytes(os.urandom(4096))
    (d / "garbage.docx").write_bytes(os.urandom(4096))
    (d / "latin1.txt").write_bytes("Café Müller served crème brûlée in Zürich.".encode("cp1252"))
    (d / "huge.txt").write_text("word " * 100_000, encoding="utf-8")
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "secret numbers")
    doc.save(str(d / "locked.pdf"), encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="x", owner_pw="y")  # type: ignore[attr-defined]
    (d / "good.txt").write_text("The Rhine flows through Basel and Cologne.", encoding="utf-8")
    loop = d / "loop"
    loop.mkdir()
    (loop / "again").symlink_to(d, target_is_directory=True)
    unsupported = tmp_path / "data.xyz"
    unsupported.write_text("x", encoding="utf-8")

    kb = _kb(settings)
    try:
        report = kb.ingest([d, unsupported], progress=False)
        failed = {Path(e.path.split("#")[0]).name: e.error for e in report.errors}
        assert set(failed) >= {
            "corrupt.pdf",
            "empty.txt",
            "zero.md",
            "garbage.pdf",
            "garbage.docx",
            "huge.txt",
            "locked.pdf",
            "data.xyz",
        }, failed
        assert "password" in failed["locked.pdf"].lower() or "encrypt" in failed["locked.pdf"].lower()
        assert "large" in failed["huge.txt"].lower()
        assert any("loop" in e.error for e in report.errors)
        assert all("\n" not in e for e in failed.values())
        assert report.added == 2 and report.exit_code == 1
        titles = {r["uri"].rsplit("/", 1)[-1] for r in kb.store.run("ingest/list_documents")}
        assert titles == {"good.txt", "latin1.txt"}
        assert "Café Müller" in " ".join(c.text for c in kb.retrieve("crème brûlée Zürich", k=2, method="dense"))
        assert kb.store.orphans() == []
        run = kb.store.run("ingest/last_run")[0]
        assert run["status"] == "failed" and run["failed"] == report.failed
    finally:
        kb.close()


def test_second_run_waits_or_exits_75(falkor_settings: Settings, tmp_path: Path) -> None:
    settings = falkor_settings.updated({"name": "locked", "lock_timeout": 0.5})
    (tmp_path / "a.txt").write_text("Locks keep runs apart.", encoding="utf-8")
    kb = KnowledgeBase(settings=settings)
    lock = FileLock(str(settings.kb_dir / "ingest.lock"))
    settings.kb_dir.mkdir(parents=True, exist_ok=True)
    try:
        with lock:
            with pytest.raises(LockTimeout):
                kb.ingest([tmp_path / "a.txt"], progress=False)
            with pytest.raises(LockTimeout):
                kb.ingest([tmp_path / "a.txt"], wait=True, progress=False)  # waits lock_timeout, then gives up
            env = {
                **os.environ,
                "KBGRAPH_HOME": str(settings.home),
                "KBGRAPH_DATA_DIR": str(settings.kb_dir),
                "KBGRAPH_NAME": "locked",
                "KBGRAPH_FALKOR_IDLE_TIMEOUT": "0",
            }
            cli = subprocess.run(
                [sys.executable, "-m", "kbgraph.cli", "ingest", str(tmp_path / "a.txt")],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert cli.returncode == 75, cli.stderr
            assert "--wait" in cli.stderr
        assert kb.ingest([tmp_path / "a.txt"], progress=False).added == 1
    finally:
        kb.close()


def test_kill_9_during_ingest_then_rerun_equals_a_clean_run(
    backend_settings: Settings, examples_dir: Path, tmp_path: Path
) -> None:
    """A `kbgraph ingest` process killed with SIGKILL in the middle of a run (Neo4j: mid-transaction; FalkorDB:
    documents left 'writing'), then re-run, gives exactly the graph of one clean run, with no orphans."""
    corpus = _passages(examples_dir, tmp_path, 120)
    settings = backend_settings.updated({"ingest_group_size": 16})
    env = {
        **os.environ,
        "KBGRAPH_HOME": str(settings.home),
        "KBGRAPH_NAME": settings.name,
        "KBGRAPH_INGEST_GROUP_SIZE": "16",
        "KBGRAPH_EMBEDDING_CACHE_DIR": str(settings.embedding.embedding_cache_dir),
    }
    if settings.store.uri:  # Neo4j
        env.update(
            {
                "KBGRAPH_URI": settings.store.uri,
                "NEO4J_USERNAME": settings.store.neo4j_username,
                "NEO4J_PASSWORD": settings.store.neo4j_password.get_secret_value(),
            }
        )
    else:
        env.update({"KBGRAPH_DATA_DIR": str(settings.kb_dir), "KBGRAPH_FALKOR_IDLE_TIMEOUT": "0"})
    kb = _kb(settings)
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbgraph.cli", "ingest", str(corpus)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and kb.stats().nodes.get("Document", 0) < 20:
            assert proc.poll() is None, "the run finished before it could be killed"
            time.sleep(0.2)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        partial = kb.stats().nodes.get("Document", 0)
        assert 0 < partial < 120
        rerun = kb.ingest([corpus], progress=False)
        assert rerun.failed == 0 and rerun.added > 0
        got = kb.stats()
        assert kb.store.orphans() == []
        # the reference: one clean run on the same store
        kb.reset()
        kb.ingest([corpus], progress=False)
        expected = kb.stats()

        def drop(nodes: dict[str, int]) -> dict[str, int]:
            return {k: v for k, v in nodes.items() if k != "IngestionRun"}

        assert drop(got.nodes) == drop(expected.nodes)
        assert got.relationships == expected.relationships
    finally:
        if proc.poll() is None:
            proc.kill()
        kb.close()
