"""Functions split by what they do: no function of kbgraph's packages (kbgraph/, ingest/, query/, cypher/) is over
``MAX_LINES`` lines (from its ``def`` to its last line, docstring and comments included; decorators not), but for
the offenders of today in ``ALLOWED``, each with its length: an allowed function may shrink, not grow, and once it
is within the limit its entry must go (the list only shrinks). A new long function fails here; split it.

Pure: parses the sources with ast."""

from __future__ import annotations

import ast
from functools import cache
from tests.unit.conftest import REPO, parsed, source_of

#: The limit, in lines as ruff format lays them out (issue 59: no library function over 100 lines; the house rule of
#: ~80 hand-aligned lines came to ~86 under ruff format, which made the library 7.8 % longer).
MAX_LINES = 100
#: The packages' folders (pyproject.toml package-dir: kbgraph.ingest is ingest/, ...).
PACKAGES = ("kbgraph", "ingest", "query", "cypher")
#: Today's offenders: "path::qualified name" -> its length. Shrink it; never add to it.
ALLOWED: dict[str, int] = {}


def function_lengths(source: str) -> dict[str, int]:
    """{qualified name (``Class.method``, ``outer.inner``): lines} of every function of ``source``."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    out[name] = (child.end_lineno or child.lineno) - child.lineno + 1
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(parsed(source), "")
    return out


@cache
def _lengths() -> dict[str, int]:
    return {
        f"{path.relative_to(REPO).as_posix()}::{name}": n
        for folder in PACKAGES
        for path in sorted((REPO / folder).rglob("*.py"))
        if "__pycache__" not in path.parts
        for name, n in function_lengths(source_of(path)).items()
    }


def test_no_function_is_over_the_limit() -> None:
    lengths = _lengths()
    assert len(lengths) > 1000, "the functions were found"
    over = {name: n for name, n in sorted(lengths.items()) if n > MAX_LINES and n > ALLOWED.get(name, 0)}
    assert not over, (
        f"functions over {MAX_LINES} lines (split them by what they do; an allowed one may not grow "
        f"past its entry in ALLOWED): {over}"
    )


def test_the_allow_list_only_shrinks() -> None:
    lengths = _lengths()
    stale = {name: lengths.get(name) for name in ALLOWED if lengths.get(name, 0) <= MAX_LINES}
    assert not stale, f"entries of ALLOWED that are gone or within {MAX_LINES} lines now (remove them): {stale}"
    assert not any(name.startswith("ingest/") for name in ALLOWED), "ingest/ is within the limit: keep it so"


def test_lengths_are_counted_from_def_to_the_last_line() -> None:
    source = "class A:\n    def m(self):\n        def inner():\n            pass\n        return 1\n\n\ndef f(): pass\n"
    assert function_lengths(source) == {"A.m": 4, "A.m.inner": 2, "f": 1}


def test_a_long_new_function_is_over() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    assert function_lengths(f"def long():\n{body}\n")["long"] == MAX_LINES + 1 > MAX_LINES
