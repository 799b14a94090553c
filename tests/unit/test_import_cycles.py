"""No import cycle between kbgraph's modules: each module's imports, wherever they are in it (a function's
included; those under ``if TYPE_CHECKING`` left out, as they never run), form a graph without cycles, which is
what lets a module be read, tested and moved with only what is below it.

grimp (installed with import-linter) builds the graph; it reads a package from one folder, so kbgraph is laid
out as installed (ingest/ -> kbgraph/ingest, query/ -> kbgraph/query, cypher/ -> kbgraph/cypher) in a folder of
symbolic links, as scripts/lint_imports.sh does, and grimp runs there in a child process."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest

from tests.unit.conftest import REPO

#: Folders installed under kbgraph by pyproject.toml's package-dir.
PACKAGE_DIRS = {"ingest": "ingest", "query": "query", "cypher": "cypher"}

GRAPH_SCRIPT = """
import json, grimp
g = grimp.build_graph("kbgraph", exclude_type_checking_imports=True)
print(json.dumps({m: sorted(g.find_modules_directly_imported_by(m)) for m in g.modules}))
"""


@pytest.fixture(scope="module")
def imports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """{module: the kbgraph modules it imports}."""
    tree = tmp_path_factory.mktemp("layout")
    (tree / "kbgraph").mkdir()
    for entry in (REPO / "kbgraph").iterdir():
        if entry.name != "__pycache__":
            (tree / "kbgraph" / entry.name).symlink_to(entry)
    for name, folder in PACKAGE_DIRS.items():
        (tree / "kbgraph" / name).symlink_to(REPO / folder, target_is_directory=True)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", GRAPH_SCRIPT], cwd=tree, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    return {m: {d for d in ds if d.split(".")[0] == "kbgraph"} for m, ds in json.loads(out.stdout).items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_graph_holds_every_folder_of_the_package(imports: dict[str, set[str]]) -> None:
    for module in ("kbgraph.kb", "kbgraph.ingest.parse", "kbgraph.query.methods.registry", "kbgraph.cypher"):
        assert module in imports
    assert "kbgraph.ingest.parse_pdf" in imports["kbgraph.ingest.parse"]  # an import inside a function counts


def test_the_root_package_imports_nothing_when_imported() -> None:
    """kbgraph/__init__.py imports its public names in ``__getattr__`` (so ``import kbgraph`` is cheap): every
    module imports the root package first anyway, and the root's lazy imports are no cycle. Keep it that way:
    a module-level import of a kbgraph module there (outside ``if TYPE_CHECKING``) fails here."""
    tree = ast.parse((REPO / "kbgraph" / "__init__.py").read_text(encoding="utf-8"))
    eager = []
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.FunctionDef):
                break
            if (
                isinstance(sub, ast.ImportFrom)
                and (sub.module or "").split(".")[0] == "kbgraph"
                or (isinstance(sub, ast.Import) and any(a.name.split(".")[0] == "kbgraph" for a in sub.names))
            ):
                eager.append(ast.unparse(sub))
    assert not eager, f"kbgraph/__init__.py imports at import time: {eager}"


def test_no_import_cycle_between_kbgraph_modules(imports: dict[str, set[str]]) -> None:
    # the root package's edges are its lazy __getattr__ imports (previous test)
    edges = {m: ds for m, ds in imports.items() if m != "kbgraph"}
    found = cycles(edges)
    shown = "; ".join(" <-> ".join(c) for c in found)
    assert not found, f"{len(found)} import cycle(s) between kbgraph modules: {shown}"


def test_cycles_finds_a_ring_and_a_pair() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d", "a"}, "f": {"a"}}
    assert sorted(cycles(edges)) == [["a", "b", "c"], ["d", "e"]]
