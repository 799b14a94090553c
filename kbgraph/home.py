"""The folders kbgraph keeps for itself in its home (``settings.home``, default ``~/.kbgraph``), named once.

A knowledge base's own folder is ``<home>/<name>`` (its embedded store, its uploads under ``kbgraph serve``), so a
knowledge base named like one of these folders would put its store inside the models or a cache. Every module
that makes one of them takes its name from here, and :func:`check_not_reserved` refuses those names for a
knowledge base (the CLI: ConfigError; ``kbgraph serve``: 400 through kbgraph.serve.kbs.check_name).
tests/test_serve_security.py checks that no module names a home folder by a literal of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from kbgraph.errors import ConfigError

MODELS = "models"  # the embedding models: ONNX exports, static models (kbgraph.embed)
EMBED_CACHE = "embed-cache"  # the embedding cache (kbgraph.embed.cache)
LLM_CACHE = "llm-cache"  # the LLM responses cache (kbgraph.llm.client)
LLM_SERVER = "llm-server"  # the local LLM server (kbgraph llm)
NEO4J_LOCAL = "neo4j-local"  # the local Neo4j (kbgraph neo4j)
BM25 = "bm25"  # the BM25 indexes of every knowledge base (kbgraph.query.bm25)

#: Every folder of the home that is not a knowledge base -> what it holds.
HOME_FOLDERS: Mapping[str, str] = MappingProxyType(
    {
        MODELS: "the embedding models",
        EMBED_CACHE: "the embedding cache",
        LLM_CACHE: "the LLM response cache",
        LLM_SERVER: "the local LLM server",
        NEO4J_LOCAL: "the local Neo4j",
        BM25: "the BM25 indexes",
    }
)


def check_not_reserved(name: str) -> str:
    """``name`` unless it is a folder of the home (:data:`HOME_FOLDERS`, in any case: a file system may not tell
    ``BM25`` from ``bm25``). Raises ConfigError naming the folder, what it holds and the reserved names."""
    held = HOME_FOLDERS.get(name.lower())
    if held is not None:
        raise ConfigError(
            f"{name!r} cannot name a knowledge base: it is the folder of {held} in the kbgraph home "
            f"({', '.join(sorted(HOME_FOLDERS))} are reserved); choose another name"
        )
    return name
