"""The environment of a `kbgraph ingest` subprocess as a cron job on another host would have it: a home (KB folder)
of its own, the session's Neo4j (tests/test_lease.py, tests/test_ingest_writers.py)."""

from __future__ import annotations

import os
from pathlib import Path

from kbgraph.settings import Settings


def ingest_env(settings: Settings, tmp_path: Path, host: str, **extra: str) -> dict[str, str]:
    """The environment of a `kbgraph ingest` with a home of its own (<tmp>/<host>) on the store of ``settings``.
    The embedding model's ONNX export (a cache, not the KB folder) is shared with the session's home, so each
    process does not export it. ``extra``: more variables (KBGRAPH_LEASE_TTL, ...); groups of 16 files unless
    KBGRAPH_INGEST_GROUP_SIZE says otherwise."""
    home = tmp_path / host
    home.mkdir(exist_ok=True)
    shared = settings.home / "models"
    shared.mkdir(parents=True, exist_ok=True)
    if not (home / "models").exists():
        (home / "models").symlink_to(shared, target_is_directory=True)
    uri = settings.store.uri
    assert uri is not None, "a store named by its URI (the session's Neo4j)"
    return {
        **os.environ,
        "KBGRAPH_HOME": str(home),
        "KBGRAPH_URI": uri,
        "NEO4J_USERNAME": settings.store.neo4j_username,
        "NEO4J_PASSWORD": settings.store.neo4j_password.get_secret_value(),
        "KBGRAPH_EMBEDDING_CACHE_DIR": str(settings.embedding.embedding_cache_dir),
        "KBGRAPH_INGEST_GROUP_SIZE": "16",
        **extra,
    }
