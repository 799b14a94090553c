"""Graph stores behind one seam (``GraphStore``): embedded FalkorDB (default) and Neo4j 5."""

from __future__ import annotations

from kbgraph.errors import ConfigError
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore, Transaction

__all__ = ["GraphStore", "Transaction", "open_store"]

_NEO4J_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")


def open_store(settings: Settings) -> GraphStore:
    """Connect to the store the settings name: no URI -> embedded FalkorDB under ``settings.kb_dir``;
    falkor://host:port -> a FalkorDB server; bolt:// neo4j:// neo4j+s:// -> Neo4j.
    Raises ConfigError for an unknown scheme, StoreUnavailable when the store cannot be reached."""
    if settings.store.backend == "falkordb":
        from kbgraph.store.falkordb import FalkorDBStore

        return FalkorDBStore(settings)
    scheme = settings.store.uri.split("://", 1)[0] if settings.store.uri and "://" in settings.store.uri else ""
    if scheme not in _NEO4J_SCHEMES:
        raise ConfigError(
            f"unsupported store URI {settings.store.uri!r}: use bolt://, neo4j://, neo4j+s:// or falkor://host:port"
        )
    from kbgraph.store.neo4j import Neo4jStore

    return Neo4jStore(settings)
