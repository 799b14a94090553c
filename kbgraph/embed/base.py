"""What every embedder shares: the ``Embedder`` protocol, the names of the configuration values, and the
L2 normalisation that makes a dot product the cosine similarity (PIKE-RAG §5.2.3: every layer is searched by
vector similarity)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["BACKENDS", "DEFAULT_MODEL", "OPENAI_PREFIX", "Embedder", "cpu_count", "normalise"]

DEFAULT_MODEL = "all-MiniLM-L6-v2"
OPENAI_PREFIX = "openai:"
#: Values of ``settings.embedding.embedding_backend`` (sentence-transformers models only).
BACKENDS = ("auto", "torch", "onnx")


class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors, the vectors of every layer's index (PIKE-RAG §5.1.2, §5.2.3).
    (Not runtime-checkable on purpose: on Python 3.11 an isinstance check would read ``dimension`` and so load the
    model.) ``kbgraph.embed.get_embedder(settings)`` gives the configured one."""

    @property
    def dimension(self) -> int:
        """Floats per vector (the model's; ``settings.embedding.embedding_dimension`` must match it)."""
        ...

    @property
    def model_name(self) -> str:
        """The model's name as configured (``embedding_model``: a sentence-transformers name or path, or
        ``openai:<model>``)."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``, one vector each, in their order.
        Args:
            texts: the texts (questions, chunks, atomic questions, titles, ...).
        Returns:
            A float32 array (len(texts), dimension), rows L2-normalised (a dot product is the cosine similarity);
            (0, dimension) for no texts.
        Raises:
            ConfigError: the model cannot be loaded as configured (it loads on first use), or an ``openai:``
                endpoint rejects the model (its other failures propagate as the openai client raises them)."""
        ...


def normalise(vectors: ArrayLike, dimension: int) -> np.ndarray:
    """``vectors`` with unit-length rows. An all-zero row stays zero rather than becoming NaN.
    Args:
        vectors: n vectors (anything numpy reads as an array of n rows).
        dimension: floats per vector (the shape of an empty result).
    Returns:
        A C-contiguous float32 array (n, ``dimension``); (0, ``dimension``) for none."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.size == 0:
        return np.zeros((0, dimension), dtype=np.float32)
    arr = arr.reshape(len(arr), -1)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0  # an all-zero vector stays zero rather than becoming NaN
    return np.ascontiguousarray(arr / norms, dtype=np.float32)


def cpu_count() -> int:
    """The CPUs this process may run on (its affinity on Linux, else all)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
