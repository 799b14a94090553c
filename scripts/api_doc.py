"""docs/api.md, the reference of kbgraph's Python API, generated from the docstrings of its public surface.

The surface is :data:`PARTS` (``KnowledgeBase``, ``Settings``, ``GraphStore``, the ``LLM`` and ``Embedder``
protocols, asking) and every entry point the method registry holds (``kbgraph.query.methods.registry.METHODS``: each row's
``run``, read from the registry, so a new row is on the page without an edit here). Each object is shown with its
signature (as written in its source: ``ast``) and its Google-style docstring (``Args:``, ``Returns:``, ``Yields:``,
``Raises:`` sections, parsed by :func:`parse_docstring`); the exceptions of kbgraph.errors close the page. The page
is :func:`render`'s output whole: tests/unit/test_api_doc.py fails when the file differs, and
tests/unit/test_docstrings.py holds every docstring of the surface to its sections (:func:`problems`). After
changing a docstring of the surface:

    python scripts/api_doc.py --write     # rewrite docs/api.md
    python scripts/api_doc.py --check     # exit 1 when docs/api.md is stale (what the test checks)
"""

from __future__ import annotations

import argparse
import ast
import builtins
import importlib
import inspect
import re
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
#: docs/api.md, from the repository root.
DOC = REPO / "docs" / "api.md"
COMMAND = "python scripts/api_doc.py --write"

#: The section headers of a Google-style docstring that the page shows and the checks read.
SECTIONS = ("Args", "Returns", "Yields", "Raises")
#: Headers of other sections, shown as they are (a paragraph with the header in bold).
OTHER_SECTIONS = ("Example", "Examples", "Note", "Notes", "Usage")
_HEADER = re.compile(rf"^({'|'.join(SECTIONS + OTHER_SECTIONS)}):\s*$")
#: An entry of an Args or Raises section: ``name: text`` or ``name (type): text``; ``**options`` too.
_ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_][\w.]*)(?:\s*\([^)]*\))?:(?:\s+(.*))?$")


@dataclass(frozen=True)
class Part:
    """One part of the page: a heading, a line of introduction and the objects shown under it, each
    ``"module:qualname"`` (a class: its docstring and its public methods and properties)."""

    title: str
    intro: str
    objects: tuple[str, ...]
    #: For a class: the classes of its MRO whose public members are shown too (``GraphStore``'s ``Searches``).
    bases: tuple[str, ...] = ()


PARTS: tuple[Part, ...] = (
    Part(
        "KnowledgeBase",
        "One knowledge base on one graph store: `from kbgraph import KnowledgeBase`.",
        ("kbgraph.kb:KnowledgeBase",),
    ),
    Part(
        "Settings",
        "The configuration: `from kbgraph import Settings`; every setting is in [settings](settings.md).",
        ("kbgraph.settings:Settings", "kbgraph.settings:env_names"),
    ),
    Part(
        "GraphStore",
        "The one way Python talks to the graph database (`KnowledgeBase.store`): "
        "`kbgraph.store.GraphStore`, opened by `kbgraph.store.open_store(settings)`.",
        ("kbgraph.store.base:GraphStore",),
        bases=("kbgraph.store.search:Searches",),
    ),
    Part(
        "LLM",
        "The chat-model protocol every caller of an LLM uses (`kbgraph.llm`), and how the configured one is made.",
        ("kbgraph.llm.base:LLM", "kbgraph.llm.client:get_llm", "kbgraph.llm.base:usable_json"),
    ),
    Part(
        "Embedder",
        "The text-embedding protocol (`kbgraph.embed`); `kbgraph.embed.get_embedder(settings)` gives "
        "the configured one.",
        ("kbgraph.embed.base:Embedder", "kbgraph.embed.base:normalise"),
    ),
    Part(
        "Asking",
        "What `KnowledgeBase.ask` and `retrieve` run (`kbgraph.query.ask`) and the method registry "
        "(`kbgraph.query.methods.registry`; [methods](methods.md) describes each method).",
        (
            "kbgraph.query.ask:clean_question",
            "kbgraph.query.ask:answer_question",
            "kbgraph.query.ask:retrieve",
            "kbgraph.query.ask:preload",
            "kbgraph.query.methods.registry:get_method",
            "kbgraph.query.methods.registry:methods_help",
            "kbgraph.query.methods.retrieval:dense_settings",
            "kbgraph.query.methods.hierarchical:hierarchical_chunks",
            "kbgraph.query.methods.decompose:propose",
            "kbgraph.query.methods.baselines:parse_self_ask",
        ),
    ),
)

#: Members of a class that the page leaves out: hooks of a library, not kbgraph's API.
HIDDEN_MEMBERS = frozenset({"settings_customise_sources"})


# --- the surface ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    """One documented object of the surface: its dotted name as the page shows it, the object and its kind
    (``class``, ``function``, ``method``, ``classmethod``, ``property``)."""

    name: str
    obj: Any
    kind: str
    #: For a method or property: the function whose source holds its signature.
    func: Callable[..., Any] | None = field(default=None, compare=False)


def resolve(path: str) -> Any:
    """The object of ``"module:qualname"``."""
    module, _, qualname = path.partition(":")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def members(cls: type, bases: tuple[type, ...] = ()) -> Iterator[Entry]:
    """The public methods and properties of ``cls`` defined on it or on ``bases``, in the order of their source."""
    seen: set[str] = set()
    for owner in (cls, *bases):
        for name, value in vars(owner).items():
            if name.startswith("_") or name in seen or name in HIDDEN_MEMBERS:
                continue
            if isinstance(value, property) and value.fget is not None:
                entry = Entry(f"{cls.__name__}.{name}", value, "property", value.fget)
            elif isinstance(value, classmethod):
                entry = Entry(f"{cls.__name__}.{name}", value, "classmethod", value.__func__)
            elif isinstance(value, staticmethod):
                entry = Entry(f"{cls.__name__}.{name}", value, "function", value.__func__)
            elif inspect.isfunction(value):
                entry = Entry(f"{cls.__name__}.{name}", value, "method", value)
            else:
                continue
            seen.add(name)
            yield entry


def own_init(cls: type) -> Callable[..., Any] | None:
    """``cls.__init__`` when ``cls`` defines it itself (not a Protocol's or a library base's stand-in)."""
    init = vars(cls).get("__init__")
    return init if inspect.isfunction(init) and init.__qualname__ == f"{cls.__qualname__}.__init__" else None


def registry_entries() -> list[Entry]:
    """The ``run`` of every row of ``kbgraph.query.methods.registry.METHODS``, once each, in the registry's order."""
    from kbgraph.query.methods.registry import METHODS

    out: dict[str, Entry] = {}
    for row in METHODS.values():
        run = row.run
        name = f"{run.__module__}.{run.__qualname__}"
        out.setdefault(name, Entry(name, run, "function", run))
    return list(out.values())


def surface() -> Iterator[tuple[Part | None, Entry]]:
    """Every documented object, with its part (None: the registry's entry points), in the order of the page."""
    for part in PARTS:
        bases = tuple(resolve(b) for b in part.bases)
        for path in part.objects:
            obj = resolve(path)
            if inspect.isclass(obj):
                yield part, Entry(path.replace(":", "."), obj, "class")
                for member in members(obj, bases):
                    yield part, member
            else:
                yield part, Entry(path.replace(":", "."), obj, "function", obj)
    for entry in registry_entries():
        yield None, entry


# --- signatures -----------------------------------------------------------------------------------------------
def function_node(func: Callable[..., Any]) -> ast.FunctionDef | ast.AsyncFunctionDef:
    """The ``def`` of ``func`` in its source."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    node = tree.body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise TypeError(f"{func.__qualname__}: no function definition in its source")
    return node


def _param(arg: ast.arg, default: ast.expr | None, prefix: str = "") -> str:
    text = prefix + arg.arg
    if arg.annotation is not None:
        text += f": {ast.unparse(arg.annotation)}"
    if default is not None:
        text += f" = {ast.unparse(default)}" if arg.annotation is not None else f"={ast.unparse(default)}"
    return text


def parameters(node: ast.FunctionDef | ast.AsyncFunctionDef, *, bound: bool) -> list[str]:
    """The parameters of ``node`` as written (``name: type = default``; ``/`` and ``*`` markers), without the
    first one (``self``, ``cls``) when ``bound``."""
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    out: list[str] = []
    for i, (arg, default) in enumerate(zip(positional, defaults)):
        out.append(_param(arg, default))
        if a.posonlyargs and i == len(a.posonlyargs) - 1:
            out.append("/")
    if a.vararg is not None:
        out.append(_param(a.vararg, None, "*"))
    elif a.kwonlyargs:
        out.append("*")
    out += [_param(arg, default) for arg, default in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg is not None:
        out.append(_param(a.kwarg, None, "**"))
    if bound and positional:
        out = out[1:]
        if out and out[0] == "/":
            out = out[1:]
    return out


def parameter_names(func: Callable[..., Any], *, bound: bool) -> list[str]:
    """The names of ``func``'s parameters (``*args`` and ``**options`` without their stars), ``self``/``cls``
    left out when ``bound``."""
    return [
        p.split(":")[0].split("=")[0].lstrip("*").strip()
        for p in parameters(function_node(func), bound=bound)
        if p not in ("/", "*")
    ]


def returns(func: Callable[..., Any]) -> str | None:
    """The return annotation of ``func`` as written, None when it has none."""
    node = function_node(func).returns
    return None if node is None else ast.unparse(node)


def signature(entry: Entry) -> str:
    """The entry's signature as a line of Python (one parameter a line when longer than 100 characters)."""
    short = entry.name.rsplit(".", 1)[-1]
    if entry.kind == "class":
        init = own_init(entry.obj)
        if init is None:
            return f"class {short}"
        params = parameters(function_node(init), bound=True)
        head, tail = f"class {short}(", ")"
    else:
        assert entry.func is not None
        node = function_node(entry.func)
        if entry.kind == "property":
            return f"{short}: {ast.unparse(node.returns) if node.returns is not None else 'Any'}  # property"
        params = parameters(node, bound=entry.kind in ("method", "classmethod"))
        ret = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
        head, tail = f"{'@classmethod' + chr(10) if entry.kind == 'classmethod' else ''}def {short}(", f"){ret}"
    line = head + ", ".join(params) + tail
    if len(line.splitlines()[-1]) <= 100:
        return line
    return head + "\n" + "".join(f"    {p},\n" for p in params) + tail


# --- docstrings -----------------------------------------------------------------------------------------------
@dataclass
class Docstring:
    """A docstring split into its prose (``body``, the lines before the first section) and its sections:
    header -> lines (indent removed). ``entries(header)`` reads an Args or Raises section as (name, text)."""

    body: list[str]
    sections: dict[str, list[str]]

    def entries(self, header: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for line in self.sections.get(header, []):
            match = _ENTRY.match(line) if line and not line[0].isspace() else None
            if match:
                out.append((match.group(1), match.group(2) or ""))
            elif out:
                out[-1] = (out[-1][0], f"{out[-1][1]} {line.strip()}".strip())
        return out


def parse_docstring(doc: str | None) -> Docstring:
    """``doc`` (a raw ``__doc__``) as a :class:`Docstring`; an empty one for None."""
    lines = inspect.cleandoc(doc or "").splitlines()
    body: list[str] = []
    sections: dict[str, list[str]] = {}
    current: list[str] = body
    for line in lines:
        match = _HEADER.match(line)
        if match:
            current = sections.setdefault(match.group(1), [])
        elif current is body:
            body.append(line)
        else:
            current.append(line[4:] if line.startswith("    ") else line.strip())
    for name, content in sections.items():
        while content and not content[-1].strip():
            content.pop()
        sections[name] = content
    while body and not body[-1].strip():
        body.pop()
    return Docstring(body, sections)


# --- the checks (tests/unit/test_docstrings.py) ---------------------------------------------------------------
def raised_names(func: Callable[..., Any]) -> list[str]:
    """The exception classes ``func`` raises by a ``raise`` statement in its own body (not in a nested function),
    by name: ``raise QueryError(...)``, ``raise ValueError``; a bare re-raise and a raise of a value are not."""
    node = function_node(func)
    found: list[str] = []

    def walk(n: ast.AST) -> None:
        for child in ast.iter_child_nodes(n):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(child, ast.Raise) and child.exc is not None:
                exc = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                if isinstance(exc, (ast.Name, ast.Attribute)):
                    found.append(ast.unparse(exc).rsplit(".", 1)[-1])
            walk(child)

    walk(node)
    return list(dict.fromkeys(found))


def exception_class(name: str) -> type[BaseException] | None:
    """The exception class a Raises entry names: one of kbgraph.errors, a built-in one, or a dotted path
    (``pydantic.ValidationError``); None when ``name`` is none of these."""
    from kbgraph import errors

    for where in (errors, builtins):
        obj = getattr(where, name, None)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            return obj
    if "." in name:
        module, _, attr = name.rpartition(".")
        try:
            obj = getattr(importlib.import_module(module), attr, None)
        except ImportError:
            return None
        if isinstance(obj, type) and issubclass(obj, BaseException):
            return obj
    return None


def _checked_names(names: list[str]) -> list[str]:
    """The names of ``names`` that are exceptions of kbgraph.errors or built-in ones (what the checks require
    a Raises entry for)."""
    return [n for n in names if exception_class(n) is not None]


def problems(entry: Entry) -> list[str]:
    """What the docstring of ``entry`` lacks: a docstring; an ``Args:`` entry for each parameter (a class: those of
    its own ``__init__``) and none for a parameter it does not have; ``Returns:`` (or ``Yields:``) when it
    returns something other than None (not a property); a ``Raises:`` entry for each exception of kbgraph.errors
    or built-in one raised directly in its body (or a base class of it); and Raises entries that name exceptions."""
    doc = inspect.getdoc(entry.func if entry.func is not None and entry.kind == "property" else entry.obj)
    own_doc = entry.obj.__doc__ if entry.kind == "class" else (entry.func.__doc__ if entry.func else None)
    if not own_doc or not doc:
        return [f"{entry.name}: no docstring"]
    parsed = parse_docstring(own_doc)
    out: list[str] = []
    if entry.kind == "class":
        func: Callable[..., Any] | None = own_init(entry.obj)
    else:
        func = entry.func
    if func is None:
        return out
    bound = entry.kind in ("method", "classmethod", "property", "class")
    params = parameter_names(func, bound=bound) if entry.kind != "property" else []
    documented = [name.lstrip("*") for name, _ in parsed.entries("Args")]
    out += [f"{entry.name}: parameter {p!r} not in Args" for p in params if p not in documented]
    out += [f"{entry.name}: Args names {d!r}, which is no parameter" for d in documented if d not in params]
    ret = returns(func)
    if (
        entry.kind not in ("class", "property")
        and ret not in (None, "None")
        and not (parsed.sections.get("Returns") or parsed.sections.get("Yields"))
    ):
        out.append(f"{entry.name}: returns {ret} but has no Returns section")
    named = [name for name, _ in parsed.entries("Raises")]
    classes = [c for c in (exception_class(n) for n in named) if c is not None]
    out += [f"{entry.name}: Raises names {n!r}, which is no exception" for n in named if exception_class(n) is None]
    for name in _checked_names(raised_names(func)):
        exc = exception_class(name)
        if exc is not None and not any(issubclass(exc, c) for c in classes):
            out.append(f"{entry.name}: raises {name} but its Raises section does not say so")
    return out


# --- the page -------------------------------------------------------------------------------------------------
_ROLE = re.compile(r":(?:class|meth|func|data|attr|mod|exc|obj):`~?([^`]+)`")


def inline(text: str) -> str:
    """reST inline markup as Markdown: ````x```` -> `` `x` ``, ``:class:`X``` -> `` `X` ``; a ``<`` outside code
    escaped (``<home>`` is no HTML tag)."""
    parts = _ROLE.sub(r"`\1`", text.replace("``", "`")).split("`")
    return "`".join(part if i % 2 else part.replace("<", "\\<") for i, part in enumerate(parts))


def prose(lines: list[str]) -> str:
    """Docstring prose as Markdown: a paragraph ending in ``::`` and the indented block after it become the
    paragraph (ending in ``:``) and a fenced code block; the markup of the text between blocks is converted as a
    whole (:func:`inline`: a code span may go on over a line's end)."""
    out: list[str] = []
    text: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.rstrip().endswith("::"):
            text.append(line)
            continue
        text.append(line.rstrip()[:-1])
        block: list[str] = []
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith(" ")):
            block.append(lines[i])
            i += 1
        out += [
            inline("\n".join(text)),
            "",
            "```python",
            *textwrap.dedent("\n".join(block)).strip("\n").splitlines(),
            "```",
            "",
        ]
        text = []
    out.append(inline("\n".join(text)))
    return "\n".join(out).strip("\n")


def _section(header: str, doc: Docstring) -> list[str]:
    if header in ("Args", "Raises"):
        rows = doc.entries(header)
        return [
            f"**{header}**",
            "",
            *(f"- `{name}`: {inline(text)}" if text else f"- `{name}`" for name, text in rows),
            "",
        ]
    text = " ".join(line.strip() for line in doc.sections[header])
    return [f"**{header}**: {inline(text)}", ""]


def render_entry(entry: Entry, level: str) -> list[str]:
    """The entry's heading, signature and docstring as Markdown lines."""
    doc = parse_docstring(entry.func.__doc__ if entry.kind == "property" and entry.func else entry.obj.__doc__)
    out = [f"{level} `{entry.name}`", "", "```python", signature(entry), "```", ""]
    if doc.body:
        out += [prose(doc.body), ""]
    for header in (*SECTIONS, *OTHER_SECTIONS):
        if header not in doc.sections:
            continue
        if header in OTHER_SECTIONS:
            out += [f"**{header}**", "", prose(textwrap.dedent("\n".join(doc.sections[header])).splitlines()), ""]
        else:
            out += _section(header, doc)
    return out


def _anchor(title: str) -> str:
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def render_errors() -> list[str]:
    """The exceptions of kbgraph.errors: name, base, the CLI's exit code and what each means."""
    from kbgraph import errors

    out = [
        "## Errors",
        "",
        "Every error a user can cause or fix is a `kbgraph.errors.KBGraphError`, its message one "
        "line that names the fix; `kbgraph` exits with its `exit_code`.",
        "",
        "| Exception | Base | Exit code | Meaning |",
        "|---|---|---|---|",
    ]
    for name, cls in vars(errors).items():
        if isinstance(cls, type) and issubclass(cls, errors.KBGraphError):
            base = cls.__bases__[0].__name__
            meaning = " ".join(inline(inspect.getdoc(cls) or "").split()).replace("|", "\\|")
            out.append(f"| `{name}` | `{base}` | {cls.exit_code} | {meaning} |")
    return [*out, ""]


HEADER = f"""# The Python API

<!-- generated by `{COMMAND}` from the docstrings; edit them there -->

The public surface of kbgraph as a library: each object with its signature and docstring (arguments, what it
returns, what it raises). `kbgraph.KnowledgeBase` is where to start; the command line ([cli](cli.md)) and the
HTTP API ([serve](serve.md)) are built on it. Exceptions are those of `kbgraph.errors` ([Errors](#errors)).
"""


def render() -> str:
    """docs/api.md: :data:`HEADER`, a contents list, each part of :data:`PARTS`, the method registry's entry
    points, the errors."""
    from kbgraph.query.methods.registry import METHODS

    titles = [*(p.title for p in PARTS), "Query methods", "Errors"]
    out = [HEADER, *(f"- [{t}](#{_anchor(t)})" for t in titles), ""]
    current: Part | None = None
    for part, entry in surface():
        if part is not None and part is not current:
            current = part
            out += [f"## {part.title}", "", part.intro, ""]
        if part is None:
            continue
        out += render_entry(entry, "###" if entry.kind in ("class", "function") else "####")
    out += [
        "## Query methods",
        "",
        "The entry points of the method registry (`kbgraph.query.methods.registry.METHODS`): "
        "`KnowledgeBase.ask(question, method=...)` runs an answer method, `retrieve` a retrieval method.",
        "",
        "| Method | Kind | Entry point | What it does |",
        "|---|---|---|---|",
    ]
    for row in METHODS.values():
        run = f"{row.run.__module__}.{row.run.__qualname__}"
        summary = row.summary.replace("|", "\\|")
        out.append(f"| `{row.name}` | {row.kind} | [`{run.rsplit('.', 1)[-1]}`](#{_anchor(run)}) | {summary} |")
    out.append("")
    for entry in registry_entries():
        out += render_entry(entry, "###")
    out += render_errors()
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python scripts/api_doc.py", description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="rewrite docs/api.md")
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/api.md is stale")
    ap.add_argument("--doc", type=Path, default=DOC, help="the Markdown file (default: docs/api.md)")
    a = ap.parse_args(argv)
    text = render()
    if not (a.write or a.check):
        sys.stdout.write(text)
        return 0
    if a.check:
        if not a.doc.is_file() or a.doc.read_text(encoding="utf-8") != text:
            sys.stderr.write(f"{a.doc} is stale: run {COMMAND}\n")
            return 1
        return 0
    a.doc.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
