"""Loads Cypher statements from ``cypher/`` by name.

A name is ``<group>/<statement>``, e.g. ``schema/vector_index``. For backend ``b`` the file
``cypher/<group>/<statement>.<b>.cypher`` wins over the shared ``cypher/<group>/<statement>.cypher``;
variants exist only where the Neo4j and FalkorDB dialects differ. Statements take user values only as
``$parameters``. Raises CypherNotFound for an unknown name.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from pathlib import Path

from kbgraph.errors import CypherNotFound

BACKENDS = ("neo4j", "falkordb")


def cypher_root() -> Path:
    """The folder holding the .cypher files: package data of ``kbgraph.cypher`` (this folder), found through
    ``importlib.resources`` like every other packaged file."""
    return Path(str(files(__name__)))


@cache
def load(name: str, backend: str) -> str:
    """Return the text of statement ``name`` for ``backend`` ('neo4j' or 'falkordb'), comments removed."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}")
    root = cypher_root()
    for candidate in (root / f"{name}.{backend}.cypher", root / f"{name}.cypher"):
        if candidate.is_file():
            return _strip_comments(candidate.read_text(encoding="utf-8"))
    raise CypherNotFound(f"no Cypher statement named {name!r} for {backend} under {root}")


def _strip_comments(text: str) -> str:
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("//")]
    return "\n".join(lines).strip().rstrip(";").strip()


def statements(backend: str) -> dict[str, Path]:
    """Every statement name available for ``backend`` with the file that serves it."""
    root = cypher_root()
    out: dict[str, Path] = {}
    other = [b for b in BACKENDS if b != backend]
    for path in sorted(root.rglob("*.cypher")):
        rel = path.relative_to(root).as_posix()[: -len(".cypher")]
        parts = rel.rsplit(".", 1)
        if len(parts) == 2 and parts[1] in other:
            continue
        name = parts[0] if len(parts) == 2 and parts[1] == backend else rel
        if name not in out or path.name.endswith(f".{backend}.cypher"):
            out[name] = path
    return out
