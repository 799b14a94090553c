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
    """Turns texts into unit-length float32 vectors. (Not runtime-checkable on purpose: on Python 3.11 an
    isinstance check would read ``dimension`` and so load the model.)"""

    @property
    def dimension(self) -> int: ...

    @property
    def model_name(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array (len(texts), dimension), rows L2-normalised; (0, dimension) for no texts."""
        ...



def normalise(vectors: ArrayLike, dimension: int) -> np.ndarray:
    """``vectors`` as a C-contiguous float32 array (n, ``dimension``) with unit-length rows; (0, ``dimension``)
    for none. An all-zero row stays zero rather than becoming NaN."""
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
