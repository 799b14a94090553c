"""Graph stores behind one seam (``GraphStore``): embedded FalkorDB (default) and Neo4j 5.

A backend is picked by the scheme of ``settings.store.uri`` through :data:`SCHEMES`, the one place a backend
registers; everything a caller needs to know about it is asked of its class (``store_class(settings)``: ``backend``,
``dialect``, ``database_per_kb``, ``kb_location``, ``browser_url``, ``exists``), before connecting.
"""

from __future__ import annotations

from kbgraph.errors import ConfigError
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore
from kbgraph.store.transaction import Transaction
from kbgraph.store.falkordb import FalkorDBStore
from kbgraph.store.neo4j import Neo4jStore

__all__ = [
    "SCHEMES",
    "GraphStore",
    "Transaction",
    "backend_name",
    "knowledge_base_exists",
    "open_store",
    "store_class",
]


#: URI scheme -> its store class (a store's driver is imported only when it connects).
#: "" is no URI: the embedded FalkorDB under ``settings.kb_dir``. A new backend adds its schemes here.
SCHEMES: dict[str, type[GraphStore]] = {
    "": FalkorDBStore,
    "falkor": FalkorDBStore,
    "falkordb": FalkorDBStore,
    "redis": FalkorDBStore,
    **dict.fromkeys(("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"), Neo4jStore),
}


def scheme(uri: str | None) -> str:
    """The scheme of a store URI ('bolt' of bolt://host:7687); '' for none."""
    return uri.split("://", 1)[0] if uri and "://" in uri else ""


def store_class(settings: Settings) -> type[GraphStore]:
    """The GraphStore class of the store the settings name (see :func:`open_store`), not connected. Raises
    ConfigError for an unknown URI scheme."""
    uri = settings.store.uri
    cls = SCHEMES.get(scheme(uri))
    if cls is None or (uri and "://" not in uri):
        known = ", ".join(f"{s}://" for s in SCHEMES if s)
        raise ConfigError(
            f"unsupported store URI {uri!r}: use one of {known} (host:port), or none for the embedded store"
        )
    return cls


def backend_name(settings: Settings) -> str:
    """The name of the backend the settings name ('falkordb', 'neo4j'), for people: logs, run records, messages.
    Raises ConfigError for an unknown URI scheme."""
    return store_class(settings).backend


def knowledge_base_exists(settings: Settings) -> bool:
    """True when the knowledge base of ``settings`` exists in its store, found without creating anything
    (``GraphStore.exists``). Raises ConfigError for an unknown URI scheme, StoreUnavailable when a store that must
    be asked cannot be reached."""
    return store_class(settings).exists(settings)


def open_store(settings: Settings) -> GraphStore:
    """Connect to the store the settings name: no URI -> embedded FalkorDB under ``settings.kb_dir``;
    falkor://host:port -> a FalkorDB server; bolt:// neo4j:// neo4j+s:// -> Neo4j (:data:`SCHEMES`).
    Raises ConfigError for an unknown scheme, StoreUnavailable when the store cannot be reached."""
    return store_class(settings).connect(settings)
