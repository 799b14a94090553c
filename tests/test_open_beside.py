"""A knowledge base's first question opens its store in a thread of its own while the question's models load
(KnowledgeBase._open_beside): a stopped embedded server loads its data meanwhile."""

from __future__ import annotations

import threading
from typing import Any

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
