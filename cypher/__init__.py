"""Loads Cypher statements from ``cypher/`` by name.

A name is ``<group>/<statement>``, e.g. ``schema/vector_index``. Each store speaks a Cypher dialect
(``GraphStore.dialect``); a statement is looked up along the dialect's chain (:data:`DIALECTS`): the variant
``cypher/<group>/<statement>.<d>.cypher`` of each dialect ``d`` of the chain in order, then the plain
``cypher/<group>/<statement>.cypher`` (openCypher every store runs). Variants exist only where a dialect differs,
so a new backend writes only the statements that differ. Statements take user values only as ``$parameters``.
Raises CypherNotFound for an unknown name.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from pathlib import Path

from kbgraph.errors import CypherNotFound

#: Cypher dialect -> the dialects whose variants it reads, most specific first; after them every dialect falls back
#: to the plain ``<name>.cypher``. A dialect that extends another lists both, e.g. ``"x": ("x", "neo4j")`` reads
#: ``<name>.x.cypher``, else ``<name>.neo4j.cypher``, else ``<name>.cypher``.
DIALECTS: dict[str, tuple[str, ...]] = {"neo4j": ("neo4j",), "falkordb": ("falkordb",)}


def cypher_root() -> Path:
    """The folder holding the .cypher files: package data of ``kbgraph.cypher`` (this folder), found through
    ``importlib.resources`` like every other packaged file."""
    return Path(str(files(__name__)))


def chain(dialect: str) -> tuple[str, ...]:
    """The file suffixes tried for ``dialect``, in order ('' is the plain file). Raises ValueError for an unknown
    dialect."""
    if dialect not in DIALECTS:
        raise ValueError(f"unknown Cypher dialect {dialect!r} (known: {', '.join(DIALECTS)})")
    return (*(f".{d}" for d in DIALECTS[dialect]), "")


def _find(root: Path, name: str, dialect: str) -> Path | None:
    for suffix in chain(dialect):
        candidate = root / f"{name}{suffix}.cypher"
        if candidate.is_file():
            return candidate
    return None


@cache
def load(name: str, dialect: str) -> str:
    """Return the text of statement ``name`` in ``dialect`` (a key of :data:`DIALECTS`), comments removed."""
    root = cypher_root()
    path = _find(root, name, dialect)
    if path is None:
        raise CypherNotFound(f"no Cypher statement named {name!r} for dialect {dialect} under {root}")
    return _strip_comments(path.read_text(encoding="utf-8"))


def _strip_comments(text: str) -> str:
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("//")]
    return "\n".join(lines).strip().rstrip(";").strip()


def statements(dialect: str) -> dict[str, Path]:
    """Every statement name available in ``dialect`` with the file that serves it (along its chain); a statement
    written only as variants of other dialects is not available."""
    root = cypher_root()
    suffixes = set(DIALECTS)
    names: set[str] = set()
    for path in root.rglob("*.cypher"):
        rel = path.relative_to(root).as_posix()[: -len(".cypher")]
        base, dot, suffix = rel.rpartition(".")
        names.add(base if dot and suffix in suffixes else rel)
    out: dict[str, Path] = {}
    for name in sorted(names):
        found = _find(root, name, dialect)
        if found is not None:
            out[name] = found
    return out
