"""benchmarks/ is a package run as ``python -m benchmarks.<name>`` (issue 59): no benchmark edits ``sys.path``, none
holds a Cypher statement (they run the statements of cypher/bench/ or the library's by name), the repo sets' table
is written once (benchmarks.common, from the library's ``REPO_SETS``), and no benchmark imports a private name of
the library.

Pure: parses the sources (ast). A Cypher statement is a string constant, or an f-string's literal parts, other than
a docstring, that holds a clause as Cypher writes it (``MATCH (``, ``CALL db.``, ``DROP INDEX``, ``SET n.x =``,
...). The statement names the benchmarks give (``"bench/<name>"``, ``"schema/<name>"``) must each load."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from kbgraph import cypher
from tests.unit.conftest import REPO

BENCHMARKS = REPO / "benchmarks"
#: Cypher as a statement writes it (upper-case clauses), not prose ("UNWIND batches of 500").
CYPHER = re.compile(
    r"\b(?:OPTIONAL\s+)?MATCH\s*\(|\bMERGE\s*\(|\bCREATE\s*\(|\bCREATE\s+(?:VECTOR\s+|FULLTEXT\s+)?INDEX\b"
    r"|\bDROP\s+(?:VECTOR\s+)?INDEX\b|\bCALL\s+db\.|\bDETACH\s+DELETE\b|\bUNWIND\s+\$?\w+\s+AS\s"
    r"|\bSET\s+\w+(?:\.\w+|\[\w+\])\s*="
)
STATEMENT_NAME = re.compile(r"(?:bench|schema)/[a-z][a-z0-9_]*")
#: The repo sets' prefixes: a benchmark that writes one of them holds a copy of the table.
SET_PREFIXES = ("2wikimultihopqa/dev500", "musique/hipporag_train100", "hotpotqa/hipporag_train100")


def _sources() -> list[Path]:
    return sorted(BENCHMARKS.glob("*.py"))


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of ``tree`` (module, classes, functions)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _texts(tree: ast.AST, fstrings: bool = True) -> list[tuple[int, str]]:
    """(line, text) of every string constant and (``fstrings``) f-string of ``tree`` but its docstrings (an
    f-string's placeholders read as ``x``)."""
    skip = _docstrings(tree)
    inner = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and fstrings:
            text = "".join(str(v.value) if isinstance(v, ast.Constant) else "x" for v in node.values)
            out.append((node.lineno, str(text)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip | inner:
            out.append((node.lineno, node.value))
    return out


def sys_path_edits(source: str) -> list[int]:
    """Lines where ``source`` reads or changes ``sys.path`` (or adds a site folder)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if (node.value.id, node.attr) in {("sys", "path"), ("site", "addsitedir")}:
                out.append(node.lineno)
    return out


def inline_cypher(source: str) -> list[tuple[int, str]]:
    """(line, text) of every Cypher statement written in ``source`` (the module's docstring)."""
    return [(line, text) for line, text in _texts(ast.parse(source)) if CYPHER.search(text)]


def private_imports(source: str) -> list[tuple[int, str]]:
    """(line, name) of every ``_private`` name ``source`` imports from kbgraph."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kbgraph"):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith("_")]
    return out


@pytest.mark.parametrize("path", _sources(), ids=lambda p: p.name)
def test_a_benchmark_leaves_sys_path_alone_and_holds_no_cypher(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert not sys_path_edits(source), (
        f"{path.name} edits sys.path at lines {sys_path_edits(source)}: run it as "
        "python -m benchmarks.<name> and import benchmarks.<module>"
    )
    found = inline_cypher(source)
    assert not found, f"{path.name} holds Cypher (move it to cypher/bench/<name>.cypher, run it by name): {found}"
    assert not private_imports(source), f"{path.name} imports private names: {private_imports(source)}"


@pytest.mark.parametrize("path", [p for p in _sources() if p.name != "common.py"], ids=lambda p: p.name)
def test_the_repo_sets_table_is_written_once(path: Path) -> None:
    texts = [text for _, text in _texts(ast.parse(path.read_text(encoding="utf-8")))]
    copied = sorted({prefix for prefix in SET_PREFIXES for text in texts if prefix in text})
    assert not copied, f"{path.name} writes the repo sets' paths {copied}: use benchmarks.common (SETS, set_path)"


def test_every_statement_a_benchmark_names_loads() -> None:
    names = {
        text
        for path in _sources()
        for _, text in _texts(ast.parse(path.read_text(encoding="utf-8")), False)
        if STATEMENT_NAME.fullmatch(text)
    }
    assert "bench/clear_vectors" in names  # the scan sees the names
    for name in sorted(names):
        cypher.load(name, "falkordb")  # CypherNotFound for a name no file has


@pytest.mark.parametrize(
    "source, edits, statements",
    [
        ("import sys\nsys.path.insert(0, 'x')\n", [2], 0),
        ("import sys\nprint(sys.argv)\n", [], 0),
        ('"""MATCH (n) RETURN n: a docstring is prose."""\nq = "MATCH (n) RETURN n"\n', [], 1),
        ('label = "Chunk"\nq = f"MATCH (n:{label}) SET n.embedding = NULL"\n', [], 1),
        ('q = ("CALL db.indexes() YIELD status "\n     "RETURN status")\n', [], 1),
        ('print(f"{n:,} Chunk nodes, UNWIND batches of {b}")\n', [], 0),
        ('run("bench/clear_vectors", {"label": "Chunk"})\n', [], 0),
    ],
)
def test_the_scan_finds_what_it_must(source: str, edits: list[int], statements: int) -> None:
    assert sys_path_edits(source) == edits
    assert len(inline_cypher(source)) == statements


def test_private_imports_are_found() -> None:
    assert private_imports("from kbgraph.query.propagation.propagate import _learned_order, learned_pool\n") == [
        (1, "_learned_order")
    ]
