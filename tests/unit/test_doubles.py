"""Every test double in tests/ named like an LLM or an embedder (a class whose name ends in ``LLM`` or
``Embedder``) satisfies its seam's protocol, ``kbgraph.llm.base.LLM`` or ``kbgraph.embed.base.Embedder``: it has
each member of the protocol, and each method accepts the protocol's parameters by name. A double that does not
hides a call the code makes (``complete`` of a judge, ``sink`` of a streamed answer, ``dimension`` of a vector
index) from the tests that use it.

The check reads the test modules' source (ast): importing them would load spaCy, torch or a database driver, which
the unit tier must not. Members come from the class body, ``self.<name> = ...`` in its methods, its bases in the
same module, and its kbgraph bases (imported: the ``kbgraph.llm`` and ``kbgraph.embed`` doubles are light). A class
with ``__getattr__`` (a wrapper) has every member it does not define itself.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import typing
from pathlib import Path

import pytest

from kbgraph.embed.base import Embedder
from kbgraph.llm.base import LLM
from kbgraph.llm.fake import ScriptedLLM
from tests.unit.conftest import parsed, source_of

TESTS = Path(__file__).resolve().parents[1]
#: A double's name -> the protocol it stands for.
PROTOCOLS: dict[str, type] = {"LLM": LLM, "Embedder": Embedder}
NAMED = re.compile(r"(LLM|Embedder)$")


def protocol_members(protocol: type) -> dict[str, set[str] | None]:
    """{member: the names of its parameters (methods) or None (attributes and properties)}."""
    members: dict[str, set[str] | None] = {}
    for name in typing._get_protocol_attrs(protocol):  # type: ignore[attr-defined]
        value = inspect.getattr_static(protocol, name, None)
        if inspect.isfunction(value):
            members[name] = set(list(inspect.signature(value).parameters)[1:])
        else:
            members[name] = None
    return members


def _accepted(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str] | None:
    """The parameter names ``fn`` accepts besides ``self``; None for any (``**kwargs``)."""
    if fn.args.kwarg is not None:
        return None
    return {a.arg for a in fn.args.posonlyargs + fn.args.args[1:] + fn.args.kwonlyargs}


class ClassInfo:
    """What a class of a test module offers: {member: accepted parameters (methods) or None}, and ``dynamic``
    (a ``__getattr__``)."""

    def __init__(self) -> None:
        self.members: dict[str, set[str] | None | str] = {}
        self.dynamic = False


def _imports(tree: ast.Module) -> dict[str, str]:
    """{name: the kbgraph module it is imported from} of a module's ``from kbgraph... import name``."""
    return {
        a.asname or a.name: node.module or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kbgraph")
        for a in node.names
    }


def class_info(cls: ast.ClassDef, classes: dict[str, ast.ClassDef], imports: dict[str, str]) -> ClassInfo:
    info = ClassInfo()
    for base in cls.bases:
        name = ast.unparse(base)
        if name in classes:
            inherited = class_info(classes[name], classes, imports)
            info.members.update(inherited.members)
            info.dynamic |= inherited.dynamic
        elif name in imports:
            real = getattr(importlib.import_module(imports[name]), name)
            for member in dir(real):
                value = inspect.getattr_static(real, member)
                info.members[member] = (
                    None
                    if not inspect.isfunction(value)
                    or any(p.kind is p.VAR_KEYWORD for p in inspect.signature(value).parameters.values())
                    else set(list(inspect.signature(value).parameters)[1:])
                )
            info.members["usage"] = "attribute"  # set by BaseLLM.__init__
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            is_property = any(ast.unparse(d) == "property" for d in node.decorator_list)
            info.members[node.name] = "attribute" if is_property else _accepted(node)
            info.dynamic |= node.name == "__getattr__"
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            info.members[node.target.id] = "attribute"
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for leaf in ast.walk(target):
                    if isinstance(leaf, ast.Name):
                        info.members[leaf.id] = "attribute"
    for sub in ast.walk(cls):
        targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target] if isinstance(sub, ast.AnnAssign) else []
        for target in targets:
            for attr in ast.walk(target):
                if isinstance(attr, ast.Attribute) and ast.unparse(attr.value) == "self":
                    info.members.setdefault(attr.attr, "attribute")
    return info


def problems(info: ClassInfo, protocol: type) -> list[str]:
    """What ``info`` lacks of ``protocol``: missing members, parameters a method does not accept."""
    out = []
    for member, params in protocol_members(protocol).items():
        has = info.members.get(member, "missing")
        if has == "missing":
            if not info.dynamic:
                out.append(f"no {member}")
        elif params is not None and isinstance(has, set) and params - has:
            out.append(f"{member}() does not accept {', '.join(sorted(params - has))}")
    return out


def doubles() -> list[tuple[str, ast.ClassDef, dict[str, ast.ClassDef], dict[str, str]]]:
    """(file:line, class, the module's classes, its kbgraph imports) of each double named like an LLM or
    embedder (pydantic models left out)."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        tree = parsed(source_of(path))
        classes = {c.name: c for c in ast.walk(tree) if isinstance(c, ast.ClassDef)}
        for cls in classes.values():
            if NAMED.search(cls.name) and not any("BaseModel" in ast.unparse(b) for b in cls.bases):
                found.append(
                    (f"{path.relative_to(TESTS.parent)}:{cls.lineno} {cls.name}", cls, classes, _imports(tree))
                )
    return found


def test_the_doubles_are_found() -> None:
    names = {where.split()[-1] for where, *_ in doubles()}
    assert {"ScriptedLLM", "TaggingLLM", "PlantedEmbedder", "SlowEmbedder"} <= names


@pytest.mark.parametrize("where, cls, classes, imports", doubles(), ids=lambda v: v if isinstance(v, str) else "")
def test_each_double_satisfies_its_protocol(
    where: str, cls: ast.ClassDef, classes: dict[str, ast.ClassDef], imports: dict[str, str]
) -> None:
    named = NAMED.search(cls.name)
    assert named is not None  # doubles() found it by this name
    protocol = PROTOCOLS[named.group(1)]
    found = problems(class_info(cls, classes, imports), protocol)
    assert not found, f"{where} is no {protocol.__module__}.{protocol.__name__}: {'; '.join(found)}"


def test_a_double_without_complete_and_sink_is_refused() -> None:
    tree = parsed("class HalfLLM:\n    def complete_json(self, messages, schema, *, temperature=None): ...\n")
    cls = tree.body[0]
    assert isinstance(cls, ast.ClassDef)
    assert sorted(problems(class_info(cls, {}, {}), LLM)) == [
        "complete_json() does not accept max_tokens, model, sink",
        "no complete",
        "no usage",
    ]


def test_the_runtime_protocol_agrees_on_the_scripted_llm() -> None:
    assert isinstance(ScriptedLLM([]), LLM)
