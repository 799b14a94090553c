"""No ranker is decided by its name outside the ranker registry (issue 59): kbgraph/, query/, ingest/ and
benchmarks/ ask the row of the ranker in use (``kbgraph.query.propagation.rankers.get_ranker(settings.retrieval.ranker)``:
``order``, ``needs_pool``, ``reads_texts``, ``models``, ``identity``, ``describe``, ``train_model``) and never
compare a ranker's name, so a new ranker is its order function and one row of ``RANKERS`` (and its name in the
setting's ``Literal``, which tests/unit/test_rankers_registry.py holds to the registry).

Pure: parses the Python sources (ast), so docstrings, comments, messages, a setting's value (``{"ranker":
"weights"}``: choosing a ranker is not testing one) and other uses of the words (``feature="learned"``, a recall
table's ``"weights"`` column) are not matched. Flagged: a ranker name ('learned', 'weights', 'gbm', 'blend')
compared (``==``, ``!=``, ``in``, ``match``/``case``), a dict literal keyed by two ranker names or more (a table
of rankers), a tuple, list or set of two or more assigned (``POOL_RANKERS = ("learned", "gbm", "blend")``), and a registry row looked up by a literal name (``get_ranker("gbm")``, ``RANKERS["blend"]``); and any
comparison with a ``.ranker`` attribute (``settings.retrieval.ranker``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.unit.conftest import REPO, parsed, source_of

SCANNED = ("kbgraph", "query", "ingest", "benchmarks")
#: The registry itself.
EXEMPT = (REPO / "query" / "propagation" / "rankers.py",)
RANKER_NAMES = frozenset({"learned", "weights", "gbm", "blend"})
LOOKUPS = {"get_ranker"}
REGISTRY = {"RANKERS"}


def _names(node: ast.AST | None) -> list[str]:
    """The ranker-name string constants of ``node`` itself or of a tuple, list or set literal it is."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in RANKER_NAMES:
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [v for e in node.elts for v in _names(e)]
    return []


def _is_ranker_attr(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "ranker"


def _func_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _target_name(node: ast.AST) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def findings(source: str) -> list[tuple[int, str]]:
    """(line, what) of every ranker decided by name in ``source``."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(parsed(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            out += [(line, f"compares {v!r}") for o in operands for v in _names(o)]
            if any(_is_ranker_attr(o) for o in operands):
                out.append((line, "compares a .ranker"))
        elif isinstance(node, ast.match_case):
            for sub in ast.walk(node.pattern):
                if isinstance(sub, ast.MatchValue):
                    out += [(line or sub.lineno, f"matches {v!r}") for v in _names(sub.value)]
        elif isinstance(node, ast.Dict):
            keys = [v for k in node.keys for v in _names(k)]
            if len(keys) >= 2:
                out.append((line, f"a dict keyed by rankers {keys}"))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, (ast.Tuple, ast.List, ast.Set)):
            names = _names(node.value)
            if len(names) >= 2:
                out.append((line, f"a list of rankers {names}"))
        elif isinstance(node, ast.Call) and _func_name(node) in LOOKUPS:
            out += [(line, f"{_func_name(node)}({v!r})") for a in node.args for v in _names(a)]
        elif isinstance(node, ast.Subscript) and _target_name(node.value) in REGISTRY:
            out += [(line, f"RANKERS[{v!r}]") for v in _names(node.slice)]
    return sorted(set(out))


def sources() -> list[Path]:
    files = [p for top in SCANNED for p in sorted((REPO / top).rglob("*.py"))]
    return [p for p in files if p not in EXEMPT and "__pycache__" not in p.parts]


def test_no_ranker_name_outside_the_registry() -> None:
    found = [
        f"{path.relative_to(REPO)}:{line}: {what}" for path in sources() for line, what in findings(source_of(path))
    ]
    assert not found, (
        "ranker decided by name outside kbgraph/query/propagation/rankers.py (ask get_ranker(name)'s row):\n"
        + "\n".join(found)
    )


def test_the_scan_reads_the_registry_users() -> None:
    scanned = {p.relative_to(REPO).as_posix() for p in sources()}
    assert {
        "query/propagation/propagate.py",
        "query/propagation/seeding.py",
        "kbgraph/kb.py",
        "kbgraph/cli/rank.py",
        "kbgraph/eval/runfolder.py",
        "benchmarks/gbm_scoring.py",
    } <= scanned
    assert "query/propagation/rankers.py" not in scanned


@pytest.mark.parametrize(
    "code",
    [
        'if settings.retrieval.ranker == "blend": pass',
        'x = ranker != "gbm"',
        'ok = r.ranker in ("gbm", "blend")',
        'ok = name not in ("learned", "gbm", "blend")',
        "if settings.retrieval.ranker == other: pass",
        'by = {"gbm": gbm_order, "blend": blend_order}.get(name)',
        'row = get_ranker("gbm")',
        'row = rankers.RANKERS["blend"]',
        'match name:\n    case "weights":\n        pass',
        'gbm = model_kind == "gbm"',
        'POOL_RANKERS = ("learned", "gbm", "blend")',
    ],
)
def test_flags(code: str) -> None:
    assert findings(code), code


@pytest.mark.parametrize(
    "code",
    [
        '"""The blend ranker: when ranker == "blend" ..."""',
        '# if ranker == "gbm"',
        's = settings.updated({"ranker": "weights"})',
        'RankerTerm(feature="learned", value=z, contribution=z)',
        'row = {"weights": recall(pools, None), "in_set": recall(pools, every)}',
        'rnd.selection, rnd.thinking = "learned", reply',
        'kind: Literal["gbm"] = "gbm"',
        'raise ConfigError(f"set KBGRAPH_RANKER={fallback}")',
        "row = get_ranker(settings.retrieval.ranker)",
        "if row.needs_pool: pass",
    ],
)
def test_allows(code: str) -> None:
    assert not findings(code), code
