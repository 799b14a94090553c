"""A knowledge base's first question opens its store in a thread of its own while the question's models load
(KnowledgeBase._open_beside): a stopped embedded server loads its data meanwhile."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

import pytest

from kbgraph import kb as kb_module
from kbgraph.embed.base import Embedder
from kbgraph.errors import StoreUnavailable
from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings


class _Store:
    def ensure_schema(self) -> None:
        return None

    def close(self) -> None:
        return None


def test_the_store_opens_while_the_models_load(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """Each side waits for the other to have started: run one after the other, the first waits in vain."""
    opening, loading = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}

    def open_store(settings: Settings) -> _Store:
        opening.set()
        seen["store saw the models loading"] = loading.wait(10)
        seen["store thread"] = threading.current_thread()
        return _Store()

    def preload(question: str, settings: Settings, embedder: Embedder) -> None:
        loading.set()
        seen["models saw the store opening"] = opening.wait(10)
        seen["question"] = question

    monkeypatch.setattr(kb_module, "open_store", open_store)
    monkeypatch.setattr(kb_module, "preload", preload)
    monkeypatch.setattr(KnowledgeBase, "embedder", property(lambda self: None))
    kb = KnowledgeBase(settings=Settings(home=tmp_path))
    kb._open_beside("Who directed Wild Ride?")
    assert seen["store saw the models loading"] and seen["models saw the store opening"]
    assert seen["store thread"] is not threading.main_thread() and isinstance(kb.store, _Store)
    assert seen["question"] == "Who directed Wild Ride?"
    kb._open_beside("again")  # the store is open: nothing loads a second time here
    assert seen["question"] == "Who directed Wild Ride?"


def test_a_store_that_cannot_open_is_the_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """Both fail: the store's error is raised, as it was when the store opened first."""

    def open_store(settings: Settings) -> _Store:
        raise StoreUnavailable("no server")

    def preload(question: str, settings: Settings, embedder: Embedder) -> None:
        raise ImportError("no bm25s")

    monkeypatch.setattr(kb_module, "open_store", open_store)
    monkeypatch.setattr(kb_module, "preload", preload)
    monkeypatch.setattr(KnowledgeBase, "embedder", property(lambda self: None))
    with pytest.raises(StoreUnavailable, match="no server"):
        KnowledgeBase(settings=Settings(home=tmp_path))._open_beside("q")


class _Embedder:
    """Waits for the other loads to have started (the same events' trick as above), then fails or answers."""

    dimension = 1
    model_name = "fake"

    def __init__(self, started: threading.Event, fail: bool = False) -> None:
        self.started, self.fail = started, fail
        self.seen: dict[str, Any] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.seen["thread"] = threading.current_thread()
        self.seen["saw the others loading"] = self.started.wait(10)
        if self.fail:
            raise RuntimeError("no model")
        return np.ones((len(texts), 1), dtype=np.float32)


def test_the_embedder_loads_beside_the_static_model_and_bm25(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """kbgraph.query.ask.preload: the embedder's load (ONNX Runtime's session) runs in a thread of its own while
    the static model and bm25s load here; its error is raised after those end."""
    from kbgraph.query import ask as ask_module

    started = threading.Event()
    done: list[str] = []

    def static_vectors(settings: Settings, question: str) -> dict[str, list[float]]:
        started.set()
        done.append("static")
        return {}

    monkeypatch.setattr(ask_module, "static_question_vectors", static_vectors)
    monkeypatch.setattr(ask_module, "load_bm25", lambda: done.append("bm25"))
    settings = Settings(home=tmp_path)
    embedder = _Embedder(started)
    ask_module.preload("Who directed Wild Ride?", settings, embedder)
    assert embedder.seen["saw the others loading"] and embedder.seen["thread"] is not threading.main_thread()
    assert done == ["static", "bm25"]
    started.clear()
    done.clear()
    failing = _Embedder(started, fail=True)
    with pytest.raises(RuntimeError, match="no model"):
        ask_module.preload("Who directed Wild Ride?", settings, failing)
    assert done == ["static", "bm25"]
