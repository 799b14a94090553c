"""Graph stores behind one seam (``GraphStore``): embedded FalkorDB (default) and Neo4j 5."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbgraph.errors import ConfigError
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore, Transaction

if TYPE_CHECKING:
    from kbgraph.store.falkordb import FalkorDBStore
    from kbgraph.store.neo4j import Neo4jStore

__all__ = ["GraphStore", "Transaction", "knowledge_base_exists", "open_store"]

_NEO4J_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")


def store_class(settings: Settings) -> type[FalkorDBStore] | type[Neo4jStore]:
    """The GraphStore class of the store the settings name (see :func:`open_store`). Raises ConfigError for an
    unknown URI scheme."""
    if settings.store.backend == "falkordb":
        from kbgraph.store.falkordb import FalkorDBStore

        return FalkorDBStore
    scheme = settings.store.uri.split("://", 1)[0] if settings.store.uri and "://" in settings.store.uri else ""
    if scheme not in _NEO4J_SCHEMES:
        raise ConfigError(
            f"unsupported store URI {settings.store.uri!r}: use bolt://, neo4j://, neo4j+s:// or falkor://host:port"
        )
    from kbgraph.store.neo4j import Neo4jStore

    return Neo4jStore


def knowledge_base_exists(settings: Settings) -> bool:
    """True when the knowledge base of ``settings`` exists in its store, found without creating anything
    (``GraphStore.exists``). Raises ConfigError for an unknown URI scheme, StoreUnavailable when a store that must
    be asked cannot be reached."""
    return store_class(settings).exists(settings)


def open_store(settings: Settings) -> GraphStore:
    """Connect to the store the settings name: no URI -> embedded FalkorDB under ``settings.kb_dir``;
    falkor://host:port -> a FalkorDB server; bolt:// neo4j:// neo4j+s:// -> Neo4j.
    Raises ConfigError for an unknown scheme, StoreUnavailable when the store cannot be reached."""
    return store_class(settings)(settings)
