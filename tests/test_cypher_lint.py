"""Every Neo4j Cypher statement under cypher/ must pass the official Neo4j Cypher linter.

What is linted is the Neo4j rendering of each statement: the text ``kbgraph.cypher.load(name, "neo4j")`` sends to
Neo4j, with the fragments of a templated file (``{{vector: $embedding}}``, ...) filled in from
cypher/fragments/neo4j.cypher, so every fragment Neo4j defines is linted where it is used. A whole-file variant of
another store (``.falkordb.cypher``) and that store's fragments are not linted (they are not Neo4j's Cypher).

The linter is ``@neo4j-cypher/language-support`` (tests/lint/package.json), run by tests/lint/lint.mjs in ONE node
process for all statements, against tests/lint/neo4j-5.26-schema.json: the procedures and functions of a real
Neo4j 5.26 Community server, so a call to APOC, GDS or a FalkorDB-only routine (``db.idx.*``, ``vecf32``) is an
error. Only severity Error fails; warnings (deprecations, ...) are ignored and "Parameter $x is not defined" is
dropped because statements get their values at run time.

Needs node and ``npm ci --prefix tests/lint``. Without them the tests skip, or FAIL when CI=true.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import derived_cache_root

REPO = Path(__file__).resolve().parents[1]
LINT_DIR = REPO / "tests" / "lint"
LINT_SCRIPT = LINT_DIR / "lint.mjs"
SCHEMA = LINT_DIR / "neo4j-5.26-schema.json"
PACKAGE = LINT_DIR / "node_modules" / "@neo4j-cypher" / "language-support"
SETUP_HINT = "run `npm ci --prefix tests/lint` (needs node >= 20)"

try:
    import kbgraph.cypher as kcypher
except ImportError:  # project not installed: use the checkout
    sys.path.insert(0, str(REPO))
    import kbgraph.cypher as kcypher

# Statements that must produce an Error: proof that the linter (and the dumped schema) can fail this test.
MUST_FAIL = {
    "syntax error": "MATCH (n:Chunk RETURN n",
    "unknown procedure (APOC)": "CALL apoc.create.node(['X'], {})",
    "unknown function (APOC)": "RETURN apoc.text.join(['a', 'b'], ',') AS s",
    "FalkorDB-only procedure": "CALL db.idx.vector.queryNodes('Chunk', 'embedding', 10, vecf32($q)) YIELD node RETURN node",
    "undefined variable": "MATCH (n) RETURN m",
    "a fragment left unrendered": "MATCH (c:Chunk {id: $id}) SET c.embedding = {{vector: $embedding}}",
}
# Neo4j 5.26 statements the server accepts (checked with EXPLAIN): the linter must not flag them.
MUST_PASS = {
    "vector index, literal options": (
        "CREATE VECTOR INDEX chunk_embedding IF NOT EXISTS FOR (c:Chunk) ON (c.embedding) "
        "OPTIONS {indexConfig: {`vector.dimensions`: 384, `vector.similarity_function`: 'cosine'}}"
    ),
    "vector index, $dimension": (
        "CREATE VECTOR INDEX chunk_embedding IF NOT EXISTS FOR (c:Chunk) ON (c.embedding) "
        "OPTIONS {indexConfig: {`vector.dimensions`: $dimension, `vector.similarity_function`: 'cosine'}}"
    ),
    "vector query": (
        "CALL db.index.vector.queryNodes('chunk_embedding', $k, $q) YIELD node, score RETURN node.id AS id, score"
    ),
    "set vector property": "MATCH (n:Chunk {id: $id}) CALL db.create.setNodeVectorProperty(n, 'embedding', $v)",
    "fulltext query": (
        "CALL db.index.fulltext.queryNodes('chunk_text', $q, {limit: $k}) YIELD node, score RETURN node, score"
    ),
}
CANARY = "__canary__/"


def _require_linter() -> None:
    problems = []
    if shutil.which("node") is None:
        problems.append("node is not on PATH")
    if not PACKAGE.is_dir():
        problems.append(f"{PACKAGE.relative_to(REPO)} is missing")
    if problems:
        msg = f"Cypher linter unavailable ({'; '.join(problems)}): {SETUP_HINT}"
        if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)


def _cache_file(items: list[dict[str, str]]) -> Path:
    """Where the linter's answer for ``items`` is kept between runs (~15 s of node saved by a rerun):
    ``<derived_cache_root()>/cypher-lint/<sha256>.json`` (tests/conftest.py), the hash taken over the items,
    lint.mjs, the schema and the installed linter's package-lock, so any change to them lints afresh."""
    key = hashlib.sha256(json.dumps(items, sort_keys=True).encode())
    for f in (LINT_SCRIPT, SCHEMA, LINT_DIR / "package-lock.json", PACKAGE / "package.json"):
        key.update(f.read_bytes() if f.is_file() else b"-")
    return derived_cache_root() / "cypher-lint" / f"{key.hexdigest()}.json"


def run_lint(items: list[dict[str, str]]) -> dict[str, dict[str, Any]]:
    """Lint ``[{name, query}]`` in one node process (or read the answer a run with the same inputs kept,
    :func:`_cache_file`); return {name: {"statements", "diagnostics"}}."""
    _require_linter()
    cached = _cache_file(items)
    if cached.is_file():
        try:
            return {r["name"]: r for r in json.loads(cached.read_text())}
        except (OSError, ValueError, KeyError, TypeError):
            pass  # unreadable: lint again
    proc = subprocess.run(
        ["node", str(LINT_SCRIPT)],
        input=json.dumps(items),
        capture_output=True,
        text=True,
        cwd=LINT_DIR,
        timeout=600,
    )
    if proc.returncode != 0:
        pytest.fail(f"lint.mjs exited {proc.returncode}:\n{proc.stderr[-3000:]}", pytrace=False)
    results = json.loads(proc.stdout)
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(results))
    tmp.replace(cached)
    return {r["name"]: r for r in results}


def _neo4j_statements() -> dict[str, tuple[Path, str]]:
    """{name: (file, its Neo4j rendering: no // comments, fragments filled in)} for every statement served to the
    neo4j backend."""
    files = kcypher.statements("neo4j")
    return {name: (path, kcypher.load(name, "neo4j")) for name, path in files.items()}


def test_templated_statements_are_linted_as_rendered() -> None:
    """The files that name fragments are linted too, as Neo4j is sent them (no linter needed to check that)."""
    statements = _neo4j_statements()
    templated = [n for n, (p, _) in statements.items() if kcypher.placeholders(kcypher.strip_comments(p.read_text()))]
    assert len(templated) >= 50, f"only {len(templated)} templated statements found"
    for name in templated:
        _, text = statements[name]
        assert "{{" not in text and text == kcypher.load(name, "neo4j"), name


#: the statements ({name: (file, text)}) and the linter's result of each statement and canary (JSON, by name)
LintAll = tuple[dict[str, tuple[Path, str]], dict[str, dict[str, Any]]]


@pytest.fixture(scope="module")
def lint_all() -> LintAll:
    """Project statements + canaries, linted in a single node run."""
    statements = _neo4j_statements()
    items = [{"name": n, "query": q} for n, (_, q) in statements.items()]
    items += [{"name": CANARY + k, "query": q} for k, q in {**MUST_FAIL, **MUST_PASS}.items()]
    return statements, run_lint(items)


def _errors(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [d for d in result["diagnostics"] if d["severity"] == "Error"]


def _describe(name: str, path: Path | None, query: str, result: dict[str, Any]) -> str:
    where = f"  ({path.relative_to(REPO) if path and path.is_relative_to(REPO) else path})" if path else ""
    out = [f"{name}{where}"]
    lines = query.splitlines()
    if result["statements"] != 1:
        out.append(f"    {result['statements']} statements: a file must hold exactly one statement (no ';' lists)")
    for d in _errors(result):
        out.append(f"    line {d['line']} col {d['col']}: {d['message']}")
        if 1 <= d["line"] <= len(lines):
            out.append(f"      | {lines[d['line'] - 1]}")
            out.append(f"      | {' ' * (d['col'] - 1)}^")
    return "\n".join(out)


def test_schema_is_real_neo4j_526() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    procs, funcs = schema["procedures"]["CYPHER 5"], schema["functions"]["CYPHER 5"]
    assert "db.index.vector.queryNodes" in procs and "db.create.setNodeVectorProperty" in procs
    assert "vector.similarity.cosine" in funcs and "elementId" in funcs
    assert not [n for n in [*procs, *funcs] if n.startswith(("apoc.", "gds."))], "schema must be Community only"
    entry = procs["db.index.vector.queryNodes"]
    assert {"name", "signature", "argumentDescription", "returnDescription", "mode", "option"} <= entry.keys()


def test_neo4j_statements_pass_linter(lint_all: LintAll) -> None:
    statements, results = lint_all
    if not statements:
        pytest.skip("no Neo4j statements under cypher/ yet")
    bad = [
        _describe(name, path, query, results[name])
        for name, (path, query) in statements.items()
        if _errors(results[name]) or results[name]["statements"] != 1
    ]
    assert not bad, (
        f"{len(bad)} of {len(statements)} Neo4j statements fail the Neo4j 5.26 Cypher linter "
        f"(line numbers count from the first non-comment line):\n" + "\n".join(bad)
    )


@pytest.mark.parametrize("case", sorted(MUST_FAIL))
def test_linter_reports_errors(lint_all: LintAll, case: str) -> None:
    _, results = lint_all
    result = results[CANARY + case]
    assert _errors(result), f"linter found no Error in {MUST_FAIL[case]!r}: {result['diagnostics']}"


@pytest.mark.parametrize("case", sorted(MUST_PASS))
def test_linter_accepts_valid_neo4j(lint_all: LintAll, case: str) -> None:
    _, results = lint_all
    result = results[CANARY + case]
    assert not _errors(result), _describe(case, None, MUST_PASS[case], result)
