"""No backend is decided by its name outside the store seam (issue 40): kbgraph/ (but kbgraph/store), query/ and
ingest/ ask the store class's capabilities (``kbgraph.store.store_class(settings)``: ``dialect``,
``database_per_kb``, ``kb_location``, ``browser_url``, ...) and never compare a backend's name or URI scheme, so a
new backend is a store module, its lines in ``kbgraph.store.SCHEMES`` and its statement variants.

Pure: parses the Python sources (ast), so docstrings, comments, messages and names such as ``neo4j_database`` or
``kbgraph.neo4j_local`` are not matched. Flagged: a backend name or store URI scheme ("neo4j", "falkordb",
"bolt://", ...) compared (``==``, ``!=``, ``in``, ``match``/``case``), tested with ``startswith``/``endswith``,
returned, assigned, used as a dict key or passed to ``cypher.load``/``cypher.statements``; and any comparison with a
``.backend`` or ``.dialect`` attribute.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.unit.conftest import REPO, parsed, source_of

SCANNED = ("kbgraph", "query", "ingest")
EXEMPT = (REPO / "kbgraph" / "store",)
#: A backend name or a store URI scheme (with or without ://).
NAME = re.compile(r"(neo4j|falkordb|falkor|bolt|redis)(\+s|\+ssc)?(://)?", re.IGNORECASE)
BACKEND_ATTRS = {"backend", "dialect"}


def _names(node: ast.AST | None) -> list[str]:
    """The backend-name string constants of ``node`` itself or of a tuple, list or set literal it is."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAME.fullmatch(node.value):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [v for e in node.elts for v in _names(e)]
    return []


def _is_backend_attr(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr in BACKEND_ATTRS


def _func_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def findings(source: str) -> list[tuple[int, str]]:
    """(line, what) of every backend decided by name in ``source``."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(parsed(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for v in (v for o in operands for v in _names(o)):
                out.append((line, f"compares {v!r}"))
            if any(_is_backend_attr(o) for o in operands):
                out.append((line, "compares a .backend/.dialect"))
        elif isinstance(node, ast.match_case):
            for sub in ast.walk(node.pattern):
                if isinstance(sub, ast.MatchValue):
                    out += [(line or sub.lineno, f"matches {v!r}") for v in _names(sub.value)]
        elif isinstance(node, ast.Call):
            name = _func_name(node)
            if name in ("startswith", "endswith", "load", "statements"):
                out += [(line, f"{name}({v!r})") for a in node.args for v in _names(a)]
            out += [(line, f"{k.arg}={v!r}") for k in node.keywords if k.arg in BACKEND_ATTRS for v in _names(k.value)]
        elif isinstance(node, ast.Return):
            out += [(line, f"returns {v!r}") for v in _names(node.value)]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            out += [(line, f"assigns {v!r}") for v in _names(node.value)]
        elif isinstance(node, ast.Dict):
            out += [(line, f"dict key {v!r}") for k in node.keys for v in _names(k)]
    return sorted(set(out))


def sources() -> list[Path]:
    files = [p for top in SCANNED for p in sorted((REPO / top).rglob("*.py"))]
    return [p for p in files if not any(e in p.parents for e in EXEMPT) and "__pycache__" not in p.parts]


def test_no_backend_name_outside_the_store() -> None:
    found = [
        f"{path.relative_to(REPO)}:{line}: {what}" for path in sources() for line, what in findings(source_of(path))
    ]
    assert not found, "backend decided by name outside kbgraph/store (ask store_class(settings)):\n" + "\n".join(found)


@pytest.mark.parametrize(
    "code",
    [
        'if settings.store.backend == "neo4j": pass',
        'x = s.backend != "falkordb"',
        'ok = backend in ("neo4j", "other")',
        "if store.backend == other: pass",
        'uri.startswith(("falkor://", "redis://"))',
        'cypher.statements("neo4j")',
        'cypher.load(name, "falkordb")',
        'def f():\n    return "falkordb"',
        'backend = "neo4j"',
        'T = {"neo4j": 1}',
        'match b:\n    case "neo4j":\n        pass',
        'if scheme == "bolt+s": pass',
    ],
)
def test_flags(code: str) -> None:
    assert findings(code), code


@pytest.mark.parametrize(
    "code",
    [
        '"""Neo4j or FalkorDB: one database per knowledge base on "neo4j"."""',
        '# if backend == "neo4j"',
        's.updated({"neo4j_database": name})',
        "from kbgraph.neo4j_local import Neo4jLocal",
        'neo4j_database: str = Field("neo4j", description="database")',
        'app.add_typer(neo4j_app, name="neo4j")',
        'for pkg in ("falkordb", "neo4j"): pass',
        'raise ConfigError(f"cannot reach Neo4j at {uri}: use bolt://host:7687")',
        'if embedding_backend == "onnx": pass',
        'if backend == "torch": pass',
    ],
)
def test_allows(code: str) -> None:
    assert not findings(code), code
