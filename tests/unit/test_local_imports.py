"""kbgraph's own modules are imported at the top of a module, not inside its functions: a reader following a call
(``KnowledgeBase.ask`` -> ``kbgraph.query.ask.answer_question`` -> ...) finds where each name comes from in the
module's import block.

The one exception is a package's ``__init__.py``: its lazy exports are the named place where modules that import a
heavy third-party library at their top are loaded (``kbgraph/__init__.py``'s ``KnowledgeBase`` and ``Settings``,
so that ``import kbgraph`` stays cheap; ``kbgraph/launch/__init__.py``'s ``main``, the console script, which starts
the store before it imports the verbs; ``kbgraph/serve/__init__.py``'s ``create_app`` and ``build_mcp``, whose
modules import fastapi, uvicorn and mcp; ``kbgraph/embed/__init__.py``'s ``prepare_models`` and ``missing_models``,
whose module and the static model's are run as ``python -m`` children and so must not be imported by their package).
Each such import says why on its line (``# lazy: <reason>``). Every other
module has none: the count is 0. Heavy third-party libraries themselves (torch, spaCy, ray, ...) are imported where
they are used, inside functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.unit.conftest import REPO, parsed, source_of

#: The folders of the package (kbgraph/, and ingest/ and query/ installed as kbgraph.ingest and kbgraph.query).
FOLDERS = ("kbgraph", "ingest", "query")


def _own(node: ast.Import | ast.ImportFrom) -> bool:
    """An import of a kbgraph module (absolute, or relative: within the package)."""
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] == "kbgraph"
    return any(alias.name.split(".")[0] == "kbgraph" for alias in node.names)


def local_imports(source: str) -> list[tuple[int, str, str | None]]:
    """(line, statement, the reason of its ``# lazy:`` comment or None) of each import of a kbgraph module inside
    a function of ``source``."""
    lines = source.splitlines()
    found: dict[int, tuple[int, str, str | None]] = {}
    for fn in ast.walk(parsed(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and _own(node):
                text = "\n".join(lines[node.lineno - 1 : node.end_lineno])
                reason = text.split("# lazy:", 1)[1].strip() if "# lazy:" in text else None
                found[node.lineno] = (node.lineno, ast.unparse(node), reason)
    return sorted(found.values())


def _modules() -> list[Path]:
    return sorted(p for folder in FOLDERS for p in (REPO / folder).rglob("*.py") if "__pycache__" not in p.parts)


def test_no_function_imports_a_kbgraph_module_outside_a_package_init() -> None:
    offenders: list[str] = []
    exports: list[str] = []
    for path in _modules():
        for line, statement, reason in local_imports(source_of(path)):
            where = f"{path.relative_to(REPO)}:{line}: {statement}"
            (exports if path.name == "__init__.py" and reason else offenders).append(where)
    assert not offenders, (
        f"{len(offenders)} import(s) of kbgraph modules inside functions: move them to the top of "
        f"the module (a heavy library goes behind a package's lazy export)\n" + "\n".join(offenders)
    )
    assert len(exports) <= 6, (
        exports
    )  # the lazy exports of kbgraph/__init__.py, kbgraph/launch, kbgraph/serve, kbgraph/embed


def test_the_check_finds_a_local_import_and_its_reason() -> None:
    source = (
        "import os\nfrom kbgraph.errors import ConfigError\n\n\ndef f():\n    from kbgraph.kb import KnowledgeBase\n"
        "    from . import sibling  # lazy: a cycle\n    import json\n\n    def g():\n        import kbgraph.store\n"
    )
    assert local_imports(source) == [
        (6, "from kbgraph.kb import KnowledgeBase", None),
        (7, "from . import sibling", "a cycle"),
        (11, "import kbgraph.store", None),
    ]
