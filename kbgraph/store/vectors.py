"""The dimension of each vector index of a store and the check of a vector against it: every index has the
embedding model's dimension but those of the static layers, which have the static model's (setting
``static_dimension``; kbgraph.embed.static_model). ``GraphStore`` inherits :class:`VectorDimensions`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kbgraph.errors import SchemaMismatch, StoreError
from kbgraph.models import VECTOR_LABELS
from kbgraph.store.params import Row
from kbgraph.store.schema import SEED_LAYERS, VECTOR_WRITES

if TYPE_CHECKING:
    from kbgraph.settings import Settings

__all__ = ["VectorDimensions", "index_dimensions"]


def index_dimensions(settings: Settings) -> dict[str, int]:
    """{label: its vector index's dimension} for every label of VECTOR_LABELS under ``settings``
    (``EmbeddingSettings.vector_dimension``: ``static_dimension`` for the static layers when set)."""
    return {label: settings.embedding.vector_dimension(label) for label in VECTOR_LABELS}


class VectorDimensions:
    """``dimension``: the embedding model's, of every vector index but those in ``dimensions`` ({label: its own});
    ``batch_size``: rows per UNWIND batch. Set by ``GraphStore.__init__``."""

    dimension: int
    dimensions: dict[str, int]
    batch_size: int

    def _batches(self, rows: Sequence[Row], name: str) -> Iterator[list[Row]]:
        """``rows`` in batches of ``batch_size``, each row's vector checked against the index of the label the
        statement ``name`` writes (``VECTOR_WRITES``)."""
        rows = list(rows)
        label = VECTOR_WRITES.get(name, "Chunk")
        for start in range(0, len(rows), self.batch_size):
            batch = rows[start : start + self.batch_size]
            yield [self._prepare_row(r, label) for r in batch]

    def _prepare_row(self, row: Row, label: str) -> Row:
        emb = row.get("embedding")
        if emb is None:
            return row
        return {**row, "embedding": self.check_vector(emb, label)}

    def dimension_of(self, label: str) -> int:
        """The dimension of ``label``'s vector index: ``dimension``, or the label's own (``dimensions``)."""
        return self.dimensions.get(label, self.dimension)

    def check_vector(self, embedding: Sequence[float] | np.ndarray, label: str = "Chunk") -> np.ndarray:
        """``embedding`` as a float32 array of shape (``dimension_of(label)``,), ready to send to ``label``'s index
        or compared with its vectors. Raises SchemaMismatch for another size (a wrong-sized vector would silently go
        unindexed) and StoreError for NaN or infinity. Checked with numpy: ingestion sends ~80k vectors per 3,300
        passages, a Python loop per float cost seconds. Callers validate a whole unit's vectors with it before its
        first write."""
        vec = np.asarray(embedding, dtype=np.float32)
        expected = self.dimension_of(label)
        if vec.ndim != 1 or vec.shape[0] != expected:
            raise SchemaMismatch(
                f"embedding has {vec.size} dimensions but the {label} vector index has {expected}; "
                "check KBGRAPH_EMBEDDING_MODEL, KBGRAPH_EMBEDDING_DIMENSION and KBGRAPH_STATIC_DIMENSION"
            )
        if not np.isfinite(vec).all():
            raise StoreError("embedding contains NaN or infinity")
        return vec

    def seed_params(
        self,
        embedding: Sequence[float] | np.ndarray,
        k: int,
        layer_embeddings: Mapping[str, Sequence[float] | np.ndarray] | None = None,
    ) -> Row:
        """The parameters of ``retrieve/seed_vectors``: ``embedding`` and ``k``, and the layers of ``layer_embeddings``
        (SEED_LAYERS only) searched with its vector instead, sent once as ``static_embedding`` (each layer's copy
        checked against its own index). Raises ValueError when ``layer_embeddings`` gives layers different vectors
        (there is one static model), SchemaMismatch / StoreError as :meth:`check_vector`."""
        static = {
            label: self.check_vector(v, label) for label, v in (layer_embeddings or {}).items() if label in SEED_LAYERS
        }
        vectors = list(static.values())
        if any(not np.array_equal(v, vectors[0]) for v in vectors[1:]):
            raise ValueError(f"layer_embeddings gives {', '.join(static)} different vectors; one static vector is sent")
        params: dict[str, Any] = {
            "embedding": self.check_vector(embedding),
            "k": k,
            "static_layers": list(static),
            "static_embedding": vectors[0] if vectors else None,
        }
        return params
