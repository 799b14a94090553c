"""The GraphStore seam on both real backends (embedded FalkorDB and a local Neo4j 5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kbgraph.errors import SchemaMismatch
from kbgraph.models import (
    VECTOR_LABELS,
    ChunkRecord,
    DocumentGraph,
    DocumentRecord,
    EntityRecord,
    MentionRecord,
    SectionRecord,
    AtomicQuestionRecord,
    TripleRecord,
    stable_id,
)
from kbgraph.settings import Settings
from kbgraph.store import open_store
from kbgraph.ingest.write import write_document
from kbgraph.store.base import GraphStore, Row
from tests.conftest import aof_when

DIM = 384


def unit(v: np.ndarray) -> np.ndarray:
    out: np.ndarray = v / np.linalg.norm(v, axis=-1, keepdims=True)
    return out


def chunk_rows(vectors: np.ndarray, prefix: str = "c", document_id: str = "doc:x") -> list[dict[str, Any]]:
    return [
        {
            "id": f"{prefix}{i}",
            "document_id": document_id,
            "parent_id": document_id,
            "text": f"chunk {i}",
            "kind": "text",
            "summary": None,
            "page": None,
            "order": i,
            "section_path": "",
            "embedding": vectors[i].tolist(),
        }
        for i in range(len(vectors))
    ]


def test_schema_is_idempotent(store: GraphStore) -> None:
    before = store.run("schema/list_indexes")
    store.ensure_schema()
    store.ensure_schema()
    after = store.run("schema/list_indexes")
    assert len(after) == len(before)
    assert store._list_vector_dimensions() == {label: DIM for label in VECTOR_LABELS}


#: Drops the Entity.name full-text index, per dialect (a test's own statement: kbgraph never drops an index).
DROP_ENTITY_FULLTEXT = {"falkordb": "CALL db.idx.fulltext.drop('Entity')", "neo4j": "DROP INDEX entity_name"}


def _entities_without_fulltext(store: GraphStore, n: int) -> None:
    """``n`` Entity nodes named '<i> shared', written while the graph has no Entity.name full-text index."""
    store._execute(DROP_ENTITY_FULLTEXT[store.dialect], {})
    for start in range(0, n, 50_000):
        store._execute(
            "UNWIND range($start, $end) AS i CREATE (:Entity {id: 'e' + toString(i), name: toString(i) + ' shared'})",
            {"start": start, "end": min(n, start + 50_000) - 1},
        )


def test_ensure_schema_returns_once_a_new_index_serves(store: GraphStore) -> None:
    # Both stores build a new index over existing nodes in the background; until then FalkorDB's full-text
    # procedure answers no rows (red without the wait: 0 hits on FalkorDB at 120k nodes). Neo4j's smaller graph
    # checks its own statement (schema/pending_indexes.neo4j) in the same path.
    _entities_without_fulltext(store, 120_000 if store.dialect == "falkordb" else 10_000)
    store.ensure_schema()
    hits = store.fulltext_search("Entity", "shared", k=5)
    assert len(hits) == 5 and all(h.properties["name"].endswith(" shared") for h in hits)
    assert store.run("schema/pending_indexes") == []


@pytest.mark.parametrize("backend_settings", ["falkordb"], indirect=True)  # a build that lasts ~1 s
def test_await_indexes_names_an_index_still_being_built(store: GraphStore) -> None:
    from kbgraph.errors import StoreError

    _entities_without_fulltext(store, 200_000)
    store.run("schema/fulltext_entity_name", {})  # created, not awaited
    with pytest.raises(StoreError, match=r"not built after 0 s \(Entity: "):
        store.await_indexes(timeout=0)
    store.await_indexes()
    assert len(store.fulltext_search("Entity", "shared", k=3)) == 3


def test_a_tag_is_found_by_its_words_whatever_its_spelling(store: GraphStore) -> None:
    # a Tag keeps the first spelling seen as its name; RediSearch (FalkorDB) splits words on ASCII punctuation only,
    # so 'shared' is no word of '“Shared topic”': the full-text index is on the normalised name, whose ends are
    # stripped of punctuation (typographic punctuation inside a name still glues words on FalkorDB:
    # docs/benchmarks.md#known-limits-full-text-words-on-falkordb)
    from kbgraph.tagging import normalize_tag, tag_id

    names = ["“Shared topic”", "«Guillemets»", "‘Single quotes’ —"]
    rng = np.random.default_rng(3)
    rows = [
        {
            "id": tag_id(normalize_tag(n)),
            "name": n,
            "norm": normalize_tag(n),
            "class": "Topic",
            "embedding": unit(rng.normal(size=DIM).astype(np.float32)).tolist(),
        }
        for n in names
    ]
    store.write_batches("tags/upsert_tags", rows, {"now": "2026-11-28T00:00:00Z"})
    for word, name in (("shared", names[0]), ("guillemets", names[1]), ("single", names[2])):
        hits = store.fulltext_search("Tag", word, k=3)
        assert [h.id for h in hits] == [tag_id(normalize_tag(name))], (word, hits)


def test_upsert_10k_and_vector_top_k_finds_planted_neighbours(store: GraphStore) -> None:
    rng = np.random.default_rng(7)
    noise = unit(rng.normal(size=(10_000, DIM)).astype(np.float32))
    query = noise[0] * 0 + unit(rng.normal(size=DIM).astype(np.float32))
    # five planted vectors at decreasing, known similarity to the query
    planted = []
    for j, weight in enumerate([0.05, 0.1, 0.15, 0.2, 0.25]):
        planted.append(unit(query + weight * noise[9_990 + j]))
    vectors = noise.copy()
    for j, v in enumerate(planted):
        vectors[100 * (j + 1)] = v
    written = store.write_batches("ingest/upsert_chunks", chunk_rows(vectors))
    assert written == 10_000
    assert store.stats().nodes.get("Chunk") == 10_000
    # upserting again does not duplicate
    store.write_batches("ingest/upsert_chunks", chunk_rows(vectors[:50]))
    assert store.stats().nodes["Chunk"] == 10_000

    hits = store.vector_search("Chunk", query.tolist(), k=5)
    assert [h.id for h in hits] == [f"c{100 * (j + 1)}" for j in range(5)]
    exact = [float(np.dot(query, v)) for v in planted]
    assert [h.score for h in hits] == pytest.approx(exact, abs=2e-3)
    assert "embedding" not in hits[0].properties
    assert hits[0].properties["text"] == "chunk 100"


def test_fulltext_finds_planted_phrase_and_survives_hostile_text(store: GraphStore) -> None:
    rng = np.random.default_rng(1)
    vectors = unit(rng.normal(size=(30, DIM)).astype(np.float32))
    rows = chunk_rows(vectors)
    rows[17]["text"] = "The mallard is a dabbling duck of the Anatidae family."
    store.write_batches("ingest/upsert_chunks", rows)
    hits = store.fulltext_search("Chunk", "anatidae dabbling", k=3)
    assert hits and hits[0].id == "c17"
    # "0:_" and "a _ b": a word of underscores alone beside another was a RediSearch syntax error (found by
    # tests/test_serve_fuzz.py as a 503 from /ask)
    for hostile in [
        '"unbalanced',
        "a-b:c",
        "`}) RETURN 1 //",
        "(((",
        "*",
        "AND OR NOT",
        "   ",
        "",
        "0:_",
        "a _ b",
        "___ x",
    ]:
        store.fulltext_search("Chunk", hostile, k=3)  # must not raise
        store.seed_fulltext(hostile, 3, ("Entity",))
    assert store.stats().nodes["Chunk"] == 30


def _doc_graph(tag: str, shared_entity: EntityRecord, rng: np.random.Generator) -> DocumentGraph:
    def vec() -> list[float]:
        out: list[float] = unit(rng.normal(size=DIM)).tolist()
        return out

    doc_id = stable_id("doc", tag)
    doc = DocumentRecord(id=doc_id, uri=f"file:///{tag}.txt", title=tag, mime="text/plain", sha256=tag, embedding=vec())
    sec = SectionRecord(
        id=stable_id("sec", tag),
        document_id=doc_id,
        parent_id=doc_id,
        title="Intro",
        level=1,
        path="Intro",
        order=0,
        embedding=vec(),
    )
    sub = SectionRecord(
        id=stable_id("sec", tag, "sub"),
        document_id=doc_id,
        parent_id=sec.id,
        title="Details",
        level=2,
        path="Intro > Details",
        order=1,
        embedding=vec(),
    )
    chunks = [
        ChunkRecord(
            id=stable_id("chunk", tag, str(i)),
            document_id=doc_id,
            parent_id=sub.id if i else sec.id,
            text=f"{tag} text {i}",
            order=i,
            embedding=vec(),
        )
        for i in range(3)
    ]
    own = EntityRecord(id=stable_id("ent", tag), name=f"Only {tag}", type="ORG", embedding=vec())
    questions = [
        AtomicQuestionRecord(id=stable_id("aq", c.id), chunk_id=c.id, text=f"What is {c.text}?", embedding=vec())
        for c in chunks
    ]
    triple = TripleRecord(
        id=stable_id("tri", tag),
        chunk_id=chunks[0].id,
        subject=own.name,
        predicate="uses",
        object=shared_entity.name,
        subject_id=own.id,
        object_id=shared_entity.id,
        text=f"{own.name} uses {shared_entity.name}",
        embedding=vec(),
    )
    mentions = [MentionRecord(chunk_id=c.id, entity_id=shared_entity.id) for c in chunks]
    mentions.append(MentionRecord(chunk_id=chunks[1].id, entity_id=own.id))
    return DocumentGraph(
        document=doc,
        sections=[sec, sub],
        chunks=chunks,
        questions=questions,
        entities=[own, shared_entity],
        triples=[triple],
        mentions=mentions,
    )


def test_delete_document_removes_its_subgraph_and_no_orphans_remain(store: GraphStore) -> None:
    rng = np.random.default_rng(3)
    shared = EntityRecord(
        id=stable_id("ent", "shared"), name="Shared Corp", type="ORG", embedding=unit(rng.normal(size=DIM)).tolist()
    )
    g1, g2 = _doc_graph("alpha", shared, rng), _doc_graph("beta", shared, rng)
    write_document(store, g1)
    only_beta = store.stats()
    write_document(store, g2)
    both = store.stats()
    assert both.nodes == {
        "AtomicQuestion": 6,
        "Chunk": 6,
        "Document": 2,
        "Entity": 3,
        "Section": 4,
        "Triple": 2,
    }
    assert both.relationships["NEXT"] == 4
    assert both.relationships["HAS_SECTION"] == 4
    assert both.relationships["RELATED"] == 2
    assert store.orphans() == []

    deleted = store.delete_document(g1.document.id)
    assert deleted["documents"] == 1 and deleted["chunks"] == 3 and deleted["entities"] == 1
    assert deleted["questions"] == 3 and deleted["triples"] == 1  # reached from the document's chunks
    after = store.stats()
    assert after.nodes == only_beta.nodes  # same shape as one document: the shared entity stays
    assert after.relationships == only_beta.relationships
    assert store.orphans() == []
    remaining = {r["id"] for r in store.run("ingest/document_state", {"ids": [g1.document.id, g2.document.id]})}
    assert remaining == {g2.document.id}
    # idempotent
    assert store.delete_document(g1.document.id)["documents"] == 0


def test_failed_unit_of_work_leaves_nothing(store: GraphStore) -> None:
    rng = np.random.default_rng(5)
    shared = EntityRecord(id=stable_id("ent", "s"), name="S", type="ORG", embedding=unit(rng.normal(size=DIM)).tolist())
    graph = _doc_graph("gamma", shared, rng)
    graph.triples[0].embedding = [0.1] * 7  # wrong dimension: refused before anything is written
    with pytest.raises(SchemaMismatch):
        write_document(store, graph)
    assert store.stats().total_nodes == 0
    # a unit that fails half-way, after documents, sections, chunks and entities went in, leaves nothing
    graph = _doc_graph("delta", shared, rng)
    calls = {"n": 0}
    original = type(store)._execute

    def failing(self: GraphStore, query: str, params: Row, tx: Any = None) -> list[Row]:
        calls["n"] += 1
        if "MERGE (c)-[:MENTIONS]->(e)" in query:  # fault injection: the link_mentions write fails
            raise RuntimeError("connection dropped")
        return original(self, query, params, tx)

    type(store)._execute = failing  # type: ignore[method-assign]  # fault injection into the store's class
    try:
        with pytest.raises(RuntimeError):
            write_document(store, graph)
    finally:
        type(store)._execute = original  # type: ignore[method-assign]  # the class's own method back
    assert calls["n"] > 5  # documents, sections, chunks... were sent before the failure
    assert store.stats().total_nodes == 0
    assert store.orphans() == []


def test_vector_dimension_mismatch_is_a_clear_error(backend_settings: Settings, store: GraphStore) -> None:
    other = open_store(backend_settings.updated({"embedding_dimension": 8}))
    try:
        with pytest.raises(SchemaMismatch, match="dimension 384 but the settings give 8"):
            other.ensure_schema()
        with pytest.raises(SchemaMismatch):
            store.write_batches("ingest/upsert_chunks", chunk_rows(np.ones((1, 8), dtype=np.float32)))
    finally:
        other.close()


def test_data_persists_across_store_restart(
    backend_settings: Settings, store: GraphStore, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    rng = np.random.default_rng(11)
    vectors = unit(rng.normal(size=(20, DIM)).astype(np.float32))
    if store.backend == "falkordb":
        # a server of its own (its own folder): restarting the session's shared server would make this test
        # depend on everything the suite wrote before it
        store.close()
        backend_settings = backend_settings.updated({"data_dir": tmp_path / "falkordb-restart"})
        store = open_store(backend_settings)
        store.ensure_schema()
    store.write_batches("ingest/upsert_chunks", chunk_rows(vectors))
    store.close()
    if store.backend == "falkordb":
        from kbgraph.store.falkor_server import EmbeddedFalkorDB

        server = EmbeddedFalkorDB(backend_settings.kb_dir)
        old_pid = server.status().pid
        assert server.stop()
        assert not server.status().running
    else:
        from kbgraph.neo4j_local import Neo4jLocal
        from tests.conftest import shared_neo4j_lib

        local = Neo4jLocal(backend_settings, lib_dir=shared_neo4j_lib())
        if backend_settings.store.uri != local.status().bolt_uri:
            pytest.skip("external Neo4j: not restarted by the tests")
        local.stop()
        local.start(timeout=180)
    reopened = open_store(backend_settings)
    try:
        assert reopened.stats().nodes.get("Chunk") == 20
        hits = reopened.vector_search("Chunk", vectors[4].tolist(), k=1)
        assert hits[0].id == "c4" and hits[0].score == pytest.approx(1.0, abs=1e-3)
        if reopened.backend == "falkordb":
            assert EmbeddedFalkorDB(backend_settings.kb_dir).status().pid != old_pid
    finally:
        reopened.clear()
        reopened.close()
        if reopened.backend == "falkordb":
            EmbeddedFalkorDB(backend_settings.kb_dir).stop()


def test_the_idle_watchdog_leaves_alone_a_server_that_is_not_its_own(tmp_path: Path) -> None:
    """A watchdog whose server is gone must not stop the next server started on the same socket: its pid may
    still look alive (a zombie nobody reaps answers kill(pid, 0)), so it checks the server's process id."""
    import os
    import subprocess
    import sys
    import time

    from kbgraph.store.falkor_server import EmbeddedFalkorDB

    server = EmbeddedFalkorDB(tmp_path / "falkordb-watchdog", idle_timeout=0)
    sock = server.ensure_running()
    try:
        impostor = os.getpid()  # alive, and not the server: as a stale watchdog's zombie server pid looks
        watchdog = subprocess.run(
            [
                sys.executable,
                "-m",
                "kbgraph.store.falkor_watchdog",
                "--socket",
                str(sock),
                "--pid",
                str(impostor),
                "--idle",
                "1",
            ],
            timeout=60,
        )
        assert watchdog.returncode == 0
        time.sleep(0.5)
        assert server.status().running  # it exited without SHUTDOWN
        ours = subprocess.run(
            [
                sys.executable,
                "-m",
                "kbgraph.store.falkor_watchdog",
                "--socket",
                str(sock),
                "--pid",
                str(server.status().pid),
                "--idle",
                "1",
            ],
            timeout=60,
        )
        assert ours.returncode == 0
        for _ in range(50):
            if not server.status().running:
                break
            time.sleep(0.2)
        assert not server.status().running  # its own server, idle: stopped
    finally:
        server.stop()


def _no_log(persistence: dict[str, Any]) -> bool:
    """Nothing logged since the append-only file's last rewrite."""
    return bool(persistence["aof_current_size"] == persistence["aof_base_size"])


def test_a_delete_compacts_the_embedded_append_only_file(
    falkor_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a write run the embedded server rewrites its append-only file in the background (BGREWRITEAOF), so
    the next start loads one snapshot instead of replaying every statement: the logged statements since the
    rewrite are back to none, and a restarted server holds the same graph."""
    from kbgraph.kb import KnowledgeBase
    from kbgraph.store import falkor_server
    from kbgraph.store.falkor_server import EmbeddedFalkorDB

    monkeypatch.setattr(falkor_server, "COMPACT_MIN_BYTES", 0)  # this small graph logs ~0.2 MB
    settings = falkor_settings.updated(
        {"data_dir": tmp_path / "falkordb-compact", "falkor_reload_after_compaction": True}
    )
    server = EmbeddedFalkorDB(settings.kb_dir)
    rng = np.random.default_rng(5)
    shared = EntityRecord(
        id=stable_id("ent", "shared"), name="Shared Corp", type="ORG", embedding=unit(rng.normal(size=DIM)).tolist()
    )
    graphs = [_doc_graph(tag, shared, rng) for tag in ("alpha", "beta", "gamma")]
    try:
        with KnowledgeBase(settings=settings) as kb:
            kb.store.ensure_schema()
            for g in graphs:
                write_document(kb.store, g)
            persistence = server._client().info("persistence")
            assert persistence["aof_current_size"] > 2 * persistence["aof_base_size"]  # all of it in the log
            pid = server.status().pid
            assert kb.delete(graphs[0].document.id)["documents"] == 1
            # rewritten, then the server started again on the snapshot (FalkorDBStore.compact: it answers from the
            # indexes every start builds, tests/test_restart_determinism.py): no rewrite since, nothing logged
            persistence = aof_when(server, _no_log)
            assert server.status().pid != pid and persistence["aof_rewrites"] == 0
            assert persistence["aof_current_size"] == persistence["aof_base_size"]
            before = kb.store.stats()
            assert not server.compact()  # nothing logged since: no second rewrite
        assert server.stop()
        with KnowledgeBase(settings=settings) as kb:
            assert kb.store.stats() == before and before.nodes["Document"] == 2
            write_document(kb.store, _doc_graph("delta", shared, rng))
            kb.reset()  # GRAPH.DELETE empties the data set: the server rewrites its log on its own (no compact needed)
            persistence = aof_when(server, _no_log)
            assert _no_log(persistence), persistence
    finally:
        server.stop()


def test_a_server_started_on_a_long_log_compacts_it(
    falkor_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder whose append-only file was left long (written before compaction existed, or by a run killed
    before it compacted) is rewritten by the server that starts on it, so the start after it loads a snapshot."""
    from kbgraph.store import falkor_server
    from kbgraph.store.falkor_server import EmbeddedFalkorDB

    settings = falkor_settings.updated({"data_dir": tmp_path / "falkordb-long-log"})
    server = EmbeddedFalkorDB(settings.kb_dir)
    rng = np.random.default_rng(7)
    try:
        with open_store(settings) as store:
            store.ensure_schema()
            store.write_batches("ingest/upsert_chunks", chunk_rows(unit(rng.normal(size=(50, DIM)).astype(np.float32))))
        assert server.stop()
        monkeypatch.setattr(falkor_server, "COMPACT_MIN_BYTES", 0)
        server.ensure_running()
        persistence = aof_when(server, _no_log)
        assert persistence["aof_rewrites"] >= 1 and _no_log(persistence), persistence
        with open_store(settings) as store:
            assert store.stats().nodes.get("Chunk") == 50
    finally:
        server.stop()
