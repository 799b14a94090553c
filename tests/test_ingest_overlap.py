"""Overlapped graph writes (issue 15, direction 5; kbgraph.ingest.groups): the store writes group k in a
background thread while group k+1 is embedded. On real stores, 30 MuSiQue passages in groups of 10:

* the graph is the same with overlap on and off (node and relationship counts, each document's chunk ids);
* the write of group 1 really runs while group 2 is embedded (a handshake between the store's unit of work and
  the embedder: each waits for the other, which only succeeds when they run at the same time);
* a write fault on one document of the middle group (raised in the write thread) fails that document only:
  the others are complete, nothing of it stays, the run returns;
* an exception in the main thread while a write runs in the background leaves no write thread behind.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kbgraph.embed import base as embed_base
from kbgraph.ingest.groups import WRITE_THREAD
from kbgraph.kb import KnowledgeBase
from kbgraph.models import stable_id
from kbgraph.settings import VECTOR_LAYER_CHOICES
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore, Row
from kbgraph.store.transaction import Transaction
from kbgraph.store import backend_name

PASSAGES, GROUP = 30, 10  # three groups
#: Seconds either side of the handshake waits for the other (only reached when the write does not overlap).
HANDSHAKE = 20.0


def _corpus(examples_dir: Path, tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    import json

    src = examples_dir / "multihop/musique/hipporag_train100.corpus.jsonl"
    lines = src.read_text(encoding="utf-8").splitlines()[:PASSAGES]
    out = tmp_path / "corpus.jsonl"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out, [json.loads(line) for line in lines]


def _kb(settings: Settings, *, overlap: bool = True) -> KnowledgeBase:
    update = {
        "ingest_group_size": GROUP,
        "ingest_group_chars": 10**9,
        "ingest_overlap_writes": overlap,
        "vector_layers": list(VECTOR_LAYER_CHOICES),
    }  # every layer: group 2's titles are embedded
    if backend_name(settings) == "falkordb":
        update["name"] = f"ov{uuid.uuid4().hex[:10]}"  # a graph of its own
    kb = KnowledgeBase(settings=settings.updated(update))
    kb.reset()
    return kb


def _graph(kb: KnowledgeBase) -> tuple[dict[str, int], dict[str, int], dict[str, list[str]]]:
    """(node counts but IngestionRun, relationship counts, {document uri: sorted chunk ids}); every document
    complete and its chunks all in the graph."""
    stats = kb.stats()
    docs = kb.documents(limit=1000)
    assert {d["status"] for d in docs} == {"complete"}
    assert sum(d["chunks"] for d in docs) == stats.nodes["Chunk"]  # no chunk outside a listed document
    chunks = {
        d["uri"]: sorted(r["chunk"]["id"] for r in kb.browse("document", document=d["id"], limit=1000)) for d in docs
    }
    return {k: v for k, v in stats.nodes.items() if k != "IngestionRun"}, stats.relationships, chunks


def test_overlap_gives_the_same_graph_as_writes_in_turn(
    backend_settings: Settings, examples_dir: Path, tmp_path: Path
) -> None:
    corpus, _ = _corpus(examples_dir, tmp_path)
    graphs = {}
    for overlap in (False, True):
        kb = _kb(backend_settings, overlap=overlap)
        try:
            report = kb.ingest([corpus], progress=False)
            assert (report.added, report.failed, report.documents, report.status) == (
                PASSAGES,
                0,
                PASSAGES,
                "completed",
            )
            assert kb.store.sent["ingest/mark_documents_complete"] == PASSAGES // GROUP
            assert report.chunks == sum(f.chunks or 0 for f in report.files) > 0
            assert 0 < report.seconds["write_wait"] <= report.seconds["total"]
            if not overlap:  # the main thread spends on writes exactly the writes' time
                assert report.seconds["write_wait"] == pytest.approx(report.seconds["write"])
            graphs[overlap] = _graph(kb)
            assert len(graphs[overlap][2]) == PASSAGES
        finally:
            kb.reset()
            kb.close()
    assert graphs[True] == graphs[False]


class _Handshake:
    """The first unit of work (group 1's write) and the embedding of group 2's document titles wait for each
    other: both see the other only if they run at the same time. Records which thread ran each."""

    def __init__(self, group2_titles: list[str], *, stop: type[BaseException] | None = None) -> None:
        self.titles = group2_titles
        self.stop = stop  # raise this from group 2's embedding once the write runs
        self.write_in, self.embed_in = threading.Event(), threading.Event()
        self.embed_saw_write: bool | None = None
        self.write_saw_embed: bool | None = None
        self.write_threads: list[str] = []
        self.embed_threads: set[str] = set()
        self.events: list[str] = []  # "check" (the run's lock checked) and "write" (a unit of work opened), in order

    def wrap_store(self, store: GraphStore, m: pytest.MonkeyPatch) -> None:
        from kbgraph.ingest.lock import RunLock

        real, real_check = store.transaction, RunLock.check

        def check(lock: RunLock) -> None:
            self.events.append("check")
            return real_check(lock)

        @contextlib.contextmanager
        def transaction(on_rollback: Iterable[Callable[[], Any]] = ()) -> Iterator[Transaction]:
            self.events.append("write")
            self.write_threads.append(threading.current_thread().name)
            if not self.write_in.is_set():
                self.write_in.set()
                if self.stop is not None:
                    time.sleep(0.5)  # still writing when the main thread's exception unwinds the run
                else:
                    self.write_saw_embed = self.embed_in.wait(HANDSHAKE)
            with real(on_rollback=on_rollback) as tx:
                yield tx

        m.setattr(store, "transaction", transaction)
        m.setattr(RunLock, "check", check)

    def wrap_embedder(self, embedder: embed_base.Embedder) -> embed_base.Embedder:
        probe = self

        class Embedder:
            def __getattr__(self, name: str) -> Any:
                return getattr(embedder, name)

            def embed(self, texts: Sequence[str]) -> np.ndarray:
                probe.embed_threads.add(threading.current_thread().name)
                if list(texts) == probe.titles:  # group 2's Document layer
                    probe.embed_saw_write = probe.write_in.wait(HANDSHAKE)
                    probe.embed_in.set()
                    if probe.stop is not None:
                        raise probe.stop()
                return embedder.embed(texts)

        return Embedder()


def test_group_write_runs_in_a_thread_while_the_next_group_embeds(
    falkor_settings: Settings, examples_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus, rows = _corpus(examples_dir, tmp_path)
    kb = _kb(falkor_settings)
    probe = _Handshake([r["title"] for r in rows[GROUP : 2 * GROUP]])
    try:
        with monkeypatch.context() as m:
            probe.wrap_store(kb.store, m)
            m.setattr(kb, "_embedder", probe.wrap_embedder(kb.embedder))
            report = kb.ingest([corpus], progress=False)
        assert (report.added, report.failed) == (PASSAGES, 0)
        assert probe.write_saw_embed is True and probe.embed_saw_write is True
        main = threading.main_thread().name
        assert probe.embed_threads == {main}
        # groups 1 and 2 in the background, the last group in turn
        assert probe.write_threads == [WRITE_THREAD, WRITE_THREAD, main]
        assert probe.events[:6] == ["check", "write"] * 3  # the lock is checked before each write (then corpora)
    finally:
        kb.close()


def test_a_write_fault_in_the_background_fails_one_document_only(
    backend_settings: Settings, examples_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus, rows = _corpus(examples_dir, tmp_path)
    bad_uri = f"{corpus.resolve().as_uri()}#{rows[GROUP + 4]['id']}"  # in the middle group
    bad_id = stable_id("doc", bad_uri)
    faults: list[str] = []  # the thread each injected fault was raised in
    real_run = Transaction.run

    def run(self: Transaction, name: str, params: Row | None = None) -> list[Row]:
        if (
            name == "ingest/upsert_chunks"
            and params is not None
            and any(r["document_id"] == bad_id for r in params["rows"])
        ):
            faults.append(threading.current_thread().name)
            raise RuntimeError("injected write fault")
        return real_run(self, name, params)

    kb = _kb(backend_settings)
    try:
        with monkeypatch.context() as m:
            m.setattr(Transaction, "run", run)
            report = kb.ingest([corpus], progress=False)
        assert faults[0] == WRITE_THREAD  # the group's write failed in the background ...
        assert faults[1:] == [threading.main_thread().name]  # ... and the document alone, retried in turn
        assert (report.added, report.failed, report.status) == (PASSAGES - 1, 1, "failed")
        assert [e.path.rsplit("#", 1)[1] for e in report.errors] == [rows[GROUP + 4]["id"]]
        assert "RuntimeError: injected write fault" in report.errors[0].error
        assert [f.outcome for f in report.files] == ["failed"] and report.files[0].documents == PASSAGES - 1
        _, _, chunks = _graph(kb)
        assert bad_uri not in chunks and len(chunks) == PASSAGES - 1
        assert kb.store.orphans() == []
        run_row = kb.store.run("ingest/last_run")[0]
        assert run_row["status"] == "failed"
    finally:
        kb.reset()
        kb.close()


class _Stop(BaseException):
    """Ctrl-C stand-in raised in the main thread."""


def test_an_exception_in_the_main_thread_joins_the_write_first(
    falkor_settings: Settings, examples_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus, rows = _corpus(examples_dir, tmp_path)
    kb = _kb(falkor_settings)
    probe = _Handshake([r["title"] for r in rows[GROUP : 2 * GROUP]], stop=_Stop)
    try:
        with monkeypatch.context() as m:
            probe.wrap_store(kb.store, m)
            m.setattr(kb, "_embedder", probe.wrap_embedder(kb.embedder))
            with pytest.raises(_Stop):
                kb.ingest([corpus], progress=False)
        assert probe.write_threads == [WRITE_THREAD]
        assert not [t for t in threading.enumerate() if t.name == WRITE_THREAD]  # joined before the run returned
        docs = kb.documents(limit=1000)  # group 1, written while group 2 was embedded, is complete
        assert len(docs) == GROUP and {d["status"] for d in docs} == {"complete"}
        assert kb.store.run("ingest/last_run")[0]["status"] == "interrupted"
    finally:
        kb.reset()
        kb.close()
