"""The unit tier (`pytest -m unit tests/unit`): pure logic only, no store, no embedding model, no server, no LLM.

Every test under tests/unit gets the ``unit`` marker (pyproject.toml ``[tool.pytest.ini_options] markers``).
Each test runs with a clean configuration (no ``KBGRAPH_*``, ``NEO4J_*`` or ``OPENAI_*`` variable, no
kbgraph.toml), and a session that ran unit tests only fails if one of them imported a heavy library (torch,
sentence-transformers, spaCy, a database driver, ...) or started a process.
"""

from __future__ import annotations

import ast
import os
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
#: The repository's root (tests/unit -> tests -> the root): what the unit tests read lies under it.
REPO = HERE.parent.parent


@cache
def source_of(path: Path) -> str:
    """The text of a file of the repository, read once per session (the house tests scan the same files)."""
    return path.read_text(encoding="utf-8")


@cache
def parsed(source: str) -> ast.Module:
    """``ast.parse(source)``, once per session for each text: six house tests (ranker, backend and engine names,
    local imports, function lengths, test doubles) scan the same ~400 modules, and parsing is most of their time.
    The tree is shared: read it, never change it."""
    return ast.parse(source)


#: Modules the unit tier must not import: the embedding model's runtimes, NLP, the store clients, HTTP servers, LLMs.
HEAVY_MODULES = (
    "torch",
    "sentence_transformers",
    "transformers",
    "onnxruntime",
    "spacy",
    "thinc",
    "unstructured",
    "pymupdf",
    "falkordb",
    "redis",
    "neo4j",
    "openai",
    "fastapi",
    "uvicorn",
    "mcp",
    "sklearn",
    "matplotlib",
    "pandas",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.unit)


@pytest.fixture(scope="session")
def _no_config_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A path in the session's temporary folder where no file is (one folder for the tier: a ``tmp_path`` per test
    would make ~700 folders)."""
    return tmp_path_factory.mktemp("no-config") / "no-kbgraph.toml"


@pytest.fixture(autouse=True)
def clean_config(monkeypatch: pytest.MonkeyPatch, _no_config_file: Path) -> None:
    """No setting from the environment or a kbgraph.toml: the defaults, and what a test sets."""
    for name in list(os.environ):
        if name.startswith(("KBGRAPH_", "NEO4J_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("KBGRAPH_CONFIG", str(_no_config_file))


def heavy_modules() -> list[str]:
    """The modules of :data:`HEAVY_MODULES` this process has imported."""
    return sorted(m for m in HEAVY_MODULES if m in sys.modules)


def child_processes() -> list[str]:
    """The pids of this process's children (Linux; [] elsewhere)."""
    out: list[str] = []
    for task in Path("/proc/self/task").glob("*"):
        try:
            out += (task / "children").read_text().split()
        except OSError:
            pass
    return out


@pytest.fixture(scope="session", autouse=True)
def stays_light(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a session of unit tests only: nothing heavy imported, no process started."""
    yield
    items = request.session.items
    if not items or any(item.get_closest_marker("unit") is None for item in items):
        return  # the full suite: other tiers load models and start servers
    heavy = heavy_modules()
    assert not heavy, f"the unit tier imported {', '.join(heavy)}: keep those out of tests/unit"
    children = child_processes()
    assert not children, f"the unit tier started processes {children}: keep servers out of tests/unit"
