"""The ingestion engines behind one seam (issue 59): ``kbgraph.ingest.engines.ENGINES`` is the one list, its names
are the setting ``ingest_engine``'s (the ``Literal`` of kbgraph.settings_groups, which cannot import the registry),
an unknown name is an error naming the engines, every engine satisfies ``IngestEngine``, and no engine is decided
by its name outside the registry (kbgraph/, query/, ingest/, benchmarks/: parsed with ast, so docstrings, comments
and a setting's value, ``{"ingest_engine": "ray"}``, are not matched)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

from kbgraph.errors import ConfigError
from kbgraph.ingest import engines
from kbgraph.ingest.engines import DEFAULT_ENGINE, ENGINES, get_engine, IngestEngine
from kbgraph.settings_groups import IngestSettings
from tests.unit.conftest import REPO, parsed, source_of

SCANNED = ("kbgraph", "query", "ingest", "benchmarks")
#: The registry itself.
EXEMPT = (REPO / "ingest" / "engines.py",)


def test_the_setting_names_the_registry_s_engines() -> None:
    literal = get_args(IngestSettings.model_fields["ingest_engine"].annotation)
    assert set(literal) == set(ENGINES), "the setting ingest_engine's Literal and kbgraph.ingest.engines.ENGINES differ"
    assert IngestSettings.model_fields["ingest_engine"].default == DEFAULT_ENGINE
    assert engines.engines_help() == "|".join(ENGINES)


def test_an_unknown_engine_names_the_engines() -> None:
    with pytest.raises(ConfigError, match=r"unknown ingest_engine 'spark': the engines are local, ray"):
        get_engine("spark")


def test_every_engine_has_the_seam_s_shape() -> None:
    for name, engine in ENGINES.items():
        assert isinstance(engine.summary, str) and engine.summary, name
        for method in ("check", "run"):
            assert callable(getattr(engine, method)), (name, method)
        typed: IngestEngine = engine  # mypy holds each row to the protocol
        assert typed is get_engine(name)


def _names(node: ast.AST) -> set[str]:
    """The engine names among the string constants of ``node`` itself or of a tuple, list or set literal it is."""
    if isinstance(node, ast.Constant) and node.value in ENGINES:
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {v for e in node.elts for v in _names(e)}
    return set()


def _word(node: ast.AST) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _decides_by_name(compare: ast.Compare) -> bool:
    """A comparison with the setting (``settings.ingest.ingest_engine == ...``), of an ``engine`` with an engine's
    name (``engine not in (None, "local", "ray")``; another ``engine``, pandas' ``"odf"``, is not one), or with
    ``"ray"`` (``"local"`` alone is also another setting's word: ``ray_address = "local"``)."""
    operands = [compare.left, *compare.comparators]
    names = set().union(*(_names(o) for o in operands))
    return (
        any(_word(o) == "ingest_engine" for o in operands)
        or "ray" in names
        or bool(names)
        and any(_word(o) == "engine" for o in operands)
    )


def findings(source: str) -> list[tuple[int, str]]:
    """(line, what) of every engine decided by its name in ``source``."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(parsed(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Compare):
            if _decides_by_name(node):
                out.append((line, "compares an engine's name"))
        elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            if name == "get_engine" and any(isinstance(a, ast.Constant) for a in node.args):
                out.append((line, "get_engine(<a literal name>)"))
        elif isinstance(node, ast.Subscript) and isinstance(node.value, (ast.Name, ast.Attribute)):
            target = node.value.id if isinstance(node.value, ast.Name) else node.value.attr
            if target == "ENGINES" and isinstance(node.slice, ast.Constant):
                out.append((line, "ENGINES[<a literal name>]"))
    return sorted(set(out))


def _sources() -> list[Path]:
    files = [p for top in SCANNED for p in sorted((REPO / top).rglob("*.py"))]
    return [p for p in files if p not in EXEMPT and "__pycache__" not in p.parts]


def test_no_engine_name_decided_outside_the_registry() -> None:
    found = [f"{p.relative_to(REPO)}:{line}: {what}" for p in _sources() for line, what in findings(source_of(p))]
    assert not found, "an engine decided by its name outside ingest/engines.py (ask get_engine(name)):\n" + "\n".join(
        found
    )
    assert {"ingest/pipeline.py", "kbgraph/cli/kb_verbs.py"} <= {p.relative_to(REPO).as_posix() for p in _sources()}


@pytest.mark.parametrize(
    "code",
    [
        'if self.settings.ingest.ingest_engine == "ray": pass',
        'if settings.ingest.ingest_engine != "local": pass',
        'if engine not in (None, "local", "ray"): pass',
        'x = "ray" == name',
        'e = get_engine("ray")',
        'e = engines.ENGINES["local"]',
    ],
)
def test_flags(code: str) -> None:
    assert findings(code), code


@pytest.mark.parametrize(
    "code",
    [
        '"""ingest_engine == "ray" in a docstring"""',
        's = settings.updated({"ingest_engine": "ray"})',
        'if not address or address in ("auto", "local"): pass',
        '__import__(engine if engine != "odf" else "odf.opendocument")',
        "e = get_engine(settings.ingest.ingest_engine)",
        "if engine not in ENGINES: pass",
    ],
)
def test_allows(code: str) -> None:
    assert not findings(code), code
