"""Vector indexes of their own dimension (setting ``static_dimension``): the static layers' indexes are created, checked
and written at the static model's dimension, the others at the embedding model's. No store is connected: the
schema statements a store would send are recorded (as tests/unit/test_schema_used.py does)."""

from __future__ import annotations

import numpy as np
import pytest

from kbgraph.errors import SchemaMismatch
from kbgraph.settings import Settings
from kbgraph.store import store_class
from kbgraph.store.base import GraphStore, index_dimensions
from kbgraph.store.params import Row

pytestmark = pytest.mark.unit


def _store(settings: Settings, existing: dict[str, int] | None = None) -> tuple[GraphStore, dict[str, Row]]:
    """A FalkorDB store instance that is not connected, built with ``settings``'s dimensions, whose index listing
    answers ``existing``; and the {schema statement: params} its ``ensure_schema`` sends."""
    store = object.__new__(store_class(settings))
    GraphStore.__init__(
        store,
        dimension=settings.embedding.embedding_dimension,
        batch_size=10,
        ef_construction=50,
        dimensions=index_dimensions(settings),
    )
    sent: dict[str, Row] = {}
    store._list_vector_dimensions = lambda: dict(existing or {})  # type: ignore[method-assign]
    store._create_schema_statement = lambda name, params: sent.__setitem__(name, params)  # type: ignore[method-assign]
    store.await_indexes = lambda timeout=0.0: None  # type: ignore[method-assign]
    return store, sent


def test_settings_give_the_static_layers_their_dimension() -> None:
    s = Settings(static_dimension=128)
    assert s.embedding.vector_dimension("Entity") == 128  # static_layers = Entity by default
    assert s.embedding.vector_dimension("Chunk") == 384
    assert s.embedding.vector_dimension("AtomicQuestion") == 384
    assert Settings().embedding.vector_dimension("Entity") == 384  # none: the model's own
    both = Settings(static_dimension=64, static_layers="Entity,Triple")
    assert {label for label, d in index_dimensions(both).items() if d == 64} == {"Entity", "Triple"}
    # an openai: model has no static model: every index at embedding_dimension
    assert (
        Settings(static_dimension=64, embedding_model="openai:text-embedding-3-small").embedding.vector_dimension(
            "Entity"
        )
        == 384
    )
    with pytest.raises(ValueError):
        Settings(static_dimension=0)


def test_schema_creates_each_vector_index_at_its_dimension() -> None:
    store, sent = _store(Settings(static_dimension=128))
    store.ensure_schema()
    assert sent["schema/vector_entity"]["dimension"] == 128
    assert sent["schema/vector_chunk"]["dimension"] == 384
    assert sent["schema/vector_atomic_question"]["dimension"] == 384
    assert sent["schema/vector_tag"]["dimension"] == 384


def test_an_index_of_another_dimension_is_refused_naming_the_setting() -> None:
    store, _ = _store(Settings(static_dimension=128), existing={"Entity": 384, "Chunk": 384})
    with pytest.raises(
        SchemaMismatch,
        match=r"Entity vector index has dimension 384 but the settings give 128.*"
        r"KBGRAPH_STATIC_DIMENSION=384",
    ):
        store.ensure_schema()
    built, _ = _store(Settings(), existing={"Entity": 128, "Chunk": 384})  # built at 128, opened without the setting
    with pytest.raises(SchemaMismatch, match="KBGRAPH_STATIC_DIMENSION=128"):
        built.ensure_schema()
    same, sent = _store(Settings(static_dimension=128), existing={"Entity": 128, "Chunk": 384})
    same.ensure_schema()  # as built: no error
    assert sent


def test_vectors_are_checked_against_their_label_index() -> None:
    store, _ = _store(Settings(static_dimension=128))
    short, full = np.ones(128, dtype=np.float32), np.ones(384, dtype=np.float32)
    assert store.check_vector(short, "Entity").shape == (128,)
    assert store.check_vector(full).shape == (384,)  # Chunk by default
    with pytest.raises(SchemaMismatch, match="the Entity vector index has 128"):
        store.check_vector(full, "Entity")
    with pytest.raises(SchemaMismatch, match="the Chunk vector index has 384"):
        store.check_vector(short, "Chunk")
    # a write is checked against the index of the label its statement writes
    [batch] = list(store._batches([{"id": "e", "embedding": short}], "ingest/upsert_entities"))
    assert batch[0]["embedding"].shape == (128,)
    with pytest.raises(SchemaMismatch):
        list(store._batches([{"id": "c", "embedding": short}], "ingest/upsert_chunks"))


def test_seed_params_send_each_vector_once_checked_per_layer() -> None:
    """retrieve/seed_vectors takes the question's vector once and the static model's once ($static_embedding for
    the layers of $static_layers), each static copy checked against its own index's dimension."""
    store, _ = _store(Settings(static_dimension=64, static_layers="Entity,Triple"))
    question, static = np.full(384, 0.5), np.full(64, 0.25)
    params = store.seed_params(question, 20, {"Entity": static, "Triple": static, "Chunk": question})
    assert set(params) == {"embedding", "k", "static_layers", "static_embedding"}  # no copy per layer
    assert params["static_layers"] == ["Entity", "Triple"]  # never Chunk: the statement searches it with $embedding
    assert params["static_embedding"].shape == (64,) and params["embedding"].shape == (384,)
    none = store.seed_params(question, 20)
    assert none["static_layers"] == [] and none["static_embedding"] is None
    with pytest.raises(SchemaMismatch, match="Entity vector index has 64"):
        store.seed_params(question, 20, {"Entity": question})
    with pytest.raises(ValueError, match="different vectors"):
        store.seed_params(question, 20, {"Entity": static, "Triple": np.full(64, 0.1)})
