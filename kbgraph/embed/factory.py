"""Choosing, building and caching the configured embedder (``get_embedder``), and the ONNX plan of a
sentence-transformers model: where its export lives and when it is written (see the package docstring)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kbgraph.embed import onnx_export, onnx_model, onnx_quant
from kbgraph.embed.base import BACKENDS, DEFAULT_MODEL, OPENAI_PREFIX, Embedder
from kbgraph.embed.onnx_runtime import OnnxEmbedder
from kbgraph.embed.openai_api import OpenAIEmbedder
from kbgraph.embed.sentence import SentenceTransformerEmbedder, local_model_dir
from kbgraph.errors import ConfigError
from kbgraph.settings import Settings

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = ["check_dimension", "clear_cache", "export_failed", "get_embedder", "make_embedder", "onnx_model_path"]

log = logging.getLogger("kbgraph.embed")

_CACHE: dict[tuple[object, ...], Embedder] = {}
_CACHE_LOCK = threading.Lock()


def onnx_model_path(settings: Settings) -> Path | None:
    """Where the ONNX export of ``settings.embedding.embedding_model`` lives (whether or not it exists yet), or None
    if the model is not local or not exportable (see ``kbgraph.embed.onnx_model.read_model_spec``)."""
    plan = _onnx_plan(settings)
    return plan[1] if plan is not None else None


def _onnx_plan(settings: Settings, *, strict: bool = False) -> tuple[onnx_model.ModelSpec, Path] | None:
    """(ModelSpec, export path) of the configured model, or None (ConfigError instead if ``strict``)."""
    name = (settings.embedding.embedding_model or "").strip()
    folder = local_model_dir(name)
    if folder is None:
        if strict:
            raise ConfigError(
                f"embedding_backend 'onnx' needs the model {name!r} on disk (a folder, the packaged "
                f"{DEFAULT_MODEL!r}, or the Hugging Face cache): load it once with KBGRAPH_EMBEDDING_BACKEND=auto"
            )
        return None
    try:
        spec = onnx_model.read_model_spec(folder)
        return spec, onnx_model.onnx_path_for(settings.home, name, spec)
    except (onnx_model.UnsupportedModelError, OSError, ValueError) as exc:
        if strict:
            raise ConfigError(
                f"embedding model {name!r} cannot run on ONNX ({exc}): set KBGRAPH_EMBEDDING_BACKEND=torch or auto"
            ) from exc
        log.debug("embedding model %s stays on torch: %s", name, exc)
        return None


def export_failed(path: Path) -> Path:
    """The marker beside the ONNX export ``path`` that remembers a failed export (``<file>.failed``): while it
    exists, no run exports again."""
    return path.with_name(path.name + ".failed")


def _try_export(settings: Settings, spec: onnx_model.ModelSpec, path: Path) -> ConfigError | None:
    """Export the ONNX file of ``spec`` to ``path`` unless it exists or an earlier export failed (``<file>.failed``)
    or the ``onnx`` package is missing (not remembered: installing it fixes it). Returns the failure as a
    ConfigError naming the marker, after writing the marker so later runs do not retry it; None otherwise."""
    import importlib.util

    failed = export_failed(path)
    if path.is_file() or failed.exists():
        return None
    if importlib.util.find_spec("onnx") is None:
        log.info("not exporting %s to ONNX: the onnx package is not installed", settings.embedding.embedding_model)
        return None
    try:
        onnx_export.export_onnx(spec.folder, path)
    except Exception as exc:
        try:
            failed.write_text(f"{type(exc).__name__}: {exc}\n", encoding="utf-8")
        except OSError:
            pass
        error = ConfigError(
            f"ONNX export failed, staying on torch (delete {failed} to retry): {type(exc).__name__}: {exc}"
        )
        error.__cause__ = exc
        return error
    return None


def _export_after_load(settings: Settings) -> Callable[[SentenceTransformer], None]:
    """The ``on_load`` hook of a torch embedder under ``embedding_backend='auto'``: export the ONNX file
    (once; a failure is remembered in ``<file>.failed`` so later runs do not retry it, and raised)."""

    def export(_model: SentenceTransformer) -> None:
        plan = _onnx_plan(settings)  # again: a hub model is in the cache only now
        if plan is not None and (error := _try_export(settings, *plan)) is not None:
            raise error

    return export


def _export_first(settings: Settings, spec: onnx_model.ModelSpec, path: Path) -> None:
    """Under ``embedding_backend='auto'`` with ``late_chunking`` on: write the ONNX export before the first
    embedding instead of after torch's first load, so that a fresh home's first ingestion already pools its
    sentence tags from the chunks' pass (only the ONNX embedder offers ``embed_spans``). The first run
    pays the same export either way. A failure is remembered in ``<file>.failed`` (as after a torch load) and
    logged, and the embedder stays on torch; no ``onnx`` package: torch, nothing remembered."""
    error = _try_export(settings, spec, path)
    if error is not None:
        log.warning("%s", error)


def make_embedder(settings: Settings) -> Embedder:
    """A new embedder for ``settings.embedding.embedding_model`` and ``settings.embedding.embedding_backend`` (not cached; the
    ONNX file is exported here for backend 'onnx', and for 'auto' with ``late_chunking`` on (``_export_first``);
    no model is loaded yet)."""
    name = (settings.embedding.embedding_model or "").strip()
    if not name:
        raise ConfigError(f"embedding_model is empty: set KBGRAPH_EMBEDDING_MODEL (default {DEFAULT_MODEL!r})")
    if name.lower().startswith(OPENAI_PREFIX):
        model = name[len(OPENAI_PREFIX) :].strip()
        api_key = settings.llm.llm_api_key.get_secret_value() if settings.llm.llm_api_key is not None else None
        dims = settings.embedding.embedding_dimension if model.startswith("text-embedding-3") else None
        return OpenAIEmbedder(
            model,
            base_url=settings.llm.llm_base_url,
            api_key=api_key,
            batch_size=settings.embedding.embedding_batch_size,
            dimensions=dims,
            timeout=settings.llm.llm_timeout,
        )
    backend = (settings.embedding.embedding_backend or "auto").strip().lower()
    if backend not in BACKENDS:
        raise ConfigError(f"embedding_backend {backend!r} is not one of {', '.join(BACKENDS)}")
    if backend == "torch":
        return SentenceTransformerEmbedder(name, batch_size=settings.embedding.embedding_batch_size)
    plan = _onnx_plan(settings, strict=backend == "onnx")
    if plan is not None:
        spec, path = plan
        if backend == "onnx" and not path.is_file():
            onnx_export.export_onnx(spec.folder, path)
        elif backend == "auto" and not path.is_file() and settings.embedding.late_chunking:
            _export_first(settings, spec, path)
        if path.is_file():
            if settings.embedding.embedding_precision == "int8":  # kbgraph.embed.onnx_quant
                path, name = onnx_quant.quantize_int8(path), name + onnx_quant.INT8_SUFFIX
            return OnnxEmbedder(
                path,
                spec.folder,
                model_name=name,
                batch_size=settings.embedding.embedding_batch_size,
                batch_tokens=settings.embedding.embedding_batch_tokens,
                spec=spec,
            )
    return SentenceTransformerEmbedder(
        name, batch_size=settings.embedding.embedding_batch_size, on_load=_export_after_load(settings)
    )


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
    loaded and checked against ``settings.embedding.embedding_dimension`` (ConfigError naming both numbers)."""
    if settings is None:
        settings = Settings()
    name = (settings.embedding.embedding_model or "").strip()
    key: tuple[object, ...] = (name, settings.embedding.embedding_batch_size, settings.embedding.embedding_batch_tokens)
    if name.lower().startswith(OPENAI_PREFIX):
        key += (settings.llm.llm_base_url, settings.embedding.embedding_dimension)
    else:
        key += (settings.embedding.embedding_backend, str(settings.home), settings.embedding.embedding_precision)
    with _CACHE_LOCK:
        embedder = _CACHE.get(key)
        if embedder is None:
            embedder = make_embedder(settings)
            _CACHE[key] = embedder
    check_dimension(embedder, settings.embedding.embedding_dimension)
    return embedder


def clear_cache() -> None:
    """Forget the cached embedders (tests, or to free the model's memory)."""
    with _CACHE_LOCK:
        _CACHE.clear()
