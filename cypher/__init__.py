"""Loads Cypher statements from ``cypher/`` by name, filling in each store's fragments.

A name is ``<group>/<statement>``, e.g. ``schema/vector_chunk``. Each store speaks a Cypher dialect
(``GraphStore.dialect``). A statement is one file, ``cypher/<group>/<statement>.cypher``, that every store runs;
where the stores differ in a piece of it (the vector literal, the similarity call, an index's DDL, ...), the file
names that piece as a *fragment*, ``{{name}}`` or ``{{name: arg, ...}}``, and each dialect defines the fragment in
``cypher/fragments/<dialect>.cypher`` (:func:`fragments`). A statement that truly differs (more than a few lines) is
written as whole-file variants instead, ``cypher/<group>/<statement>.<d>.cypher``, looked up along the dialect's
chain (:data:`DIALECTS`): the variant of each dialect ``d`` of the chain in order, then the plain file.

Fragments are filled in when a statement is loaded (:func:`load`, cached), from the files alone: arguments are Cypher
text written in the statement (``{{vector: $embedding}}``), never a value, and user values stay ``$parameters``. The
syntax cannot be read as Cypher: ``{{`` opens no Cypher construct (a map's first key is a name), so every ``{{`` of a
statement must be a fragment, and what is left after filling in holds none (else ValueError).

A fragment file is a list of definitions, each a header line ``{{name: param, ...}} =`` (or ``{{name}} =``), with
the body after the ``=`` on the same line or on the lines below it (up to the next header); ``{{param}}`` in a body
is replaced by that argument as written; ``//`` lines are comments. Fragments do not nest: an argument holds no
``{`` or ``}``, a body names no other fragment. Arguments are split at the commas outside brackets and quotes.
Raises CypherNotFound for an unknown statement, or a fragment its dialect does not define.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path

from kbgraph.errors import CypherNotFound

#: Cypher dialect -> the dialects whose variants and fragments it reads, most specific first; after them every
#: dialect falls back to the plain ``<name>.cypher``. A dialect that extends another lists both, e.g.
#: ``"x": ("x", "neo4j")`` reads ``<name>.x.cypher``, else ``<name>.neo4j.cypher``, else ``<name>.cypher``, and a
#: fragment from ``fragments/x.cypher``, else ``fragments/neo4j.cypher``.
DIALECTS: dict[str, tuple[str, ...]] = {"neo4j": ("neo4j",), "falkordb": ("falkordb",)}
#: The folder under ``cypher/`` holding one fragment file per dialect, ``<dialect>.cypher`` (not statements).
FRAGMENTS = "fragments"

_NAME = r"[a-z][a-z0-9_]*"
#: A fragment in a statement: ``{{name}}`` or ``{{name: arg, ...}}`` (group 1 the name, group 2 the arguments).
PLACEHOLDER = re.compile(rf"\{{\{{\s*({_NAME})\s*(?::([^{{}}]*))?\}}\}}")
#: A definition's header in a fragment file: ``{{name: param, ...}} =`` and maybe the body's first line.
_HEADER = re.compile(rf"^\{{\{{\s*({_NAME})\s*(?::\s*({_NAME}(?:\s*,\s*{_NAME})*)\s*)?\}}\}} =(?:\s(.*))?$")
#: A parameter in a fragment's body.
_PARAM = re.compile(rf"\{{\{{\s*({_NAME})\s*\}}\}}")
_CLOSE = {"(": ")", "[": "]"}


@dataclass(frozen=True)
class Fragment:
    """One dialect's definition of a fragment: ``{{name: params...}}`` stands for ``body`` (from ``path``)."""

    name: str
    params: tuple[str, ...]
    body: str
    path: Path

    def fill(self, args: tuple[str, ...], where: str) -> str:
        """The body with each ``{{param}}`` replaced by its argument; ValueError for a wrong number of them."""
        if len(args) != len(self.params):
            raise ValueError(
                f"{where}: {{{{{self.name}}}}} takes {len(self.params)} argument(s) ({', '.join(self.params)}) "
                f"as {self.path.name} defines it, got {len(args)}: {list(args)}"
            )
        values = dict(zip(self.params, args, strict=True))
        return _PARAM.sub(lambda m: values[m.group(1)], self.body)


def cypher_root() -> Path:
    """The folder holding the .cypher files: package data of ``kbgraph.cypher`` (this folder), found through
    ``importlib.resources`` like every other packaged file."""
    return Path(str(files(__name__)))


def chain(dialect: str) -> tuple[str, ...]:
    """The file suffixes tried for ``dialect``, in order ('' is the plain file). Raises ValueError for an unknown
    dialect."""
    if dialect not in DIALECTS:
        raise ValueError(f"unknown Cypher dialect {dialect!r} (known: {', '.join(DIALECTS)})")
    return (*(f".{d}" for d in DIALECTS[dialect]), "")


def _find(root: Path, name: str, dialect: str) -> Path | None:
    for suffix in chain(dialect):
        candidate = root / f"{name}{suffix}.cypher"
        if candidate.is_file():
            return candidate
    return None


@cache
def load(name: str, dialect: str) -> str:
    """Return the text of statement ``name`` in ``dialect`` (a key of :data:`DIALECTS`): comments removed, the
    dialect's fragments filled in."""
    root = cypher_root()
    path = _find(root, name, dialect)
    if path is None:
        raise CypherNotFound(f"no Cypher statement named {name!r} for dialect {dialect} under {root}")
    return render(strip_comments(path.read_text(encoding="utf-8")), dialect, where=f"statement {name!r}").strip()


#: What a predicate put into a statement by :func:`compose` may hold: names, $parameters, brackets, comparison signs
#: and commas, never a quote (so never a literal: every value is a parameter).
_PREDICATE = re.compile(r"^[A-Za-z0-9_$.\[\]() =<>!,]*$")
#: The fragment a statement names where :func:`compose` puts a predicate.
SLOT = "predicate"


@cache
def compose(name: str, dialect: str, predicate: str) -> str:
    """Statement ``name`` in ``dialect`` with ``predicate`` (kbgraph.filters.compile's, e.g.
    ``d[$f0k] STARTS WITH $f0v``) in its ``{{predicate}}`` slot instead of the slot's ``true``. Raises ValueError
    when ``predicate`` holds anything but names, $parameters, brackets, signs and commas (a quote would open a
    literal), and when the statement has no slot; CypherNotFound as :func:`load`."""
    if not _PREDICATE.match(predicate) or not predicate.strip():
        raise ValueError(f"a composed predicate holds names, $parameters, brackets and signs only: {predicate!r}")
    root = cypher_root()
    path = _find(root, name, dialect)
    if path is None:
        raise CypherNotFound(f"no Cypher statement named {name!r} for dialect {dialect} under {root}")
    text = strip_comments(path.read_text(encoding="utf-8"))
    slot = re.compile(rf"\{{\{{\s*{SLOT}\s*\}}\}}")
    if not slot.search(text):
        raise ValueError(f"statement {name!r} has no {{{{{SLOT}}}}} for a predicate")
    return render(slot.sub(lambda _: f"({predicate})", text), dialect, where=f"statement {name!r}").strip()


def strip_comments(text: str) -> str:
    """``text`` without its ``//`` comment lines and a final ``;``."""
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("//")]
    return "\n".join(lines).strip().rstrip(";").strip()


def placeholders(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """The fragments ``text`` names, in order: (name, arguments as written, stripped)."""
    return [(m.group(1), split_args(m.group(2))) for m in PLACEHOLDER.finditer(text)]


def render(text: str, dialect: str, where: str = "text") -> str:
    """``text`` with each fragment replaced by ``dialect``'s definition (``where`` names the text in errors).
    Reads the fragment files only when ``text`` names a fragment."""
    if "{{" not in text:
        return text
    defined = fragments(dialect)

    def fill(m: re.Match[str]) -> str:
        fragment = defined.get(m.group(1))
        if fragment is None:
            raise CypherNotFound(
                f"{where}: no fragment {{{{{m.group(1)}}}}} for dialect {dialect} "
                f"(define it in {', '.join(f'{FRAGMENTS}/{d}.cypher' for d in DIALECTS[dialect])})"
            )
        return fragment.fill(split_args(m.group(2)), where)

    out = PLACEHOLDER.sub(fill, text)
    if "{{" in out:
        line = next(ln for ln in out.splitlines() if "{{" in ln)
        raise ValueError(f"{where}: '{{{{' that is no fragment (name: lower-case word; no braces in arguments): {line}")
    return out


def split_args(text: str | None) -> tuple[str, ...]:
    """``a, f(b, c), 'x,y'`` -> ('a', 'f(b, c)', "'x,y'"): split at the commas outside brackets and quotes;
    ``None`` (no ``:``) -> (). ValueError for an empty argument or an unbalanced bracket."""
    if text is None:
        return ()
    args: list[str] = []
    stack: list[str] = []
    quote = ""
    start = 0
    escaped = False
    for i, ch in enumerate(text):
        if quote:
            quote, escaped = ("" if ch == quote and not escaped else quote), ch == "\\" and not escaped
        elif ch in "'\"`":
            quote = ch
        elif ch in _CLOSE:
            stack.append(_CLOSE[ch])
        elif ch in ")]":
            if not stack or stack.pop() != ch:
                raise ValueError(f"unbalanced {ch!r} in fragment arguments {text!r}")
        elif ch == "," and not stack:
            args.append(text[start:i])
            start = i + 1
    if stack or quote:
        raise ValueError(f"unclosed bracket or quote in fragment arguments {text!r}")
    args.append(text[start:])
    out = tuple(a.strip() for a in args)
    if not all(out):
        raise ValueError(f"empty fragment argument in {text!r}")
    return out


def fragment_file(dialect: str) -> Path:
    """Where ``dialect``'s own fragments are defined: ``cypher/fragments/<dialect>.cypher``."""
    return cypher_root() / FRAGMENTS / f"{dialect}.cypher"


def fragments(dialect: str) -> dict[str, Fragment]:
    """Every fragment ``dialect`` reads, by name: its own file's, then those of the dialects it extends (its chain
    in :data:`DIALECTS`, the most specific definition winning). Raises ValueError for an unknown dialect or a
    malformed fragment file."""
    chain(dialect)
    out: dict[str, Fragment] = {}
    for d in reversed(DIALECTS[dialect]):
        path = fragment_file(d)
        if path.is_file():
            out.update(parse_fragments(path.read_text(encoding="utf-8"), path))
    return out


def parse_fragments(text: str, path: Path) -> dict[str, Fragment]:
    """The definitions of one fragment file (format: the module's docstring)."""
    heads: list[tuple[str, tuple[str, ...], list[str], int]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        head = _HEADER.match(line.rstrip())
        if head:
            params = tuple(p.strip() for p in head.group(2).split(",")) if head.group(2) else ()
            heads.append((head.group(1), params, [head.group(3)] if head.group(3) else [], number))
        elif heads:
            heads[-1][2].append(line.rstrip())
        else:
            raise ValueError(f"{path}:{number}: a body line before the first '{{{{name: params}}}} =' header")
    out: dict[str, Fragment] = {}
    for name, params, lines, number in heads:
        where = f"{path}:{number}"
        if name in out:
            raise ValueError(f"{where}: {{{{{name}}}}} is defined twice")
        if len(set(params)) != len(params):
            raise ValueError(f"{where}: {{{{{name}}}}} names a parameter twice: {params}")
        body = "\n".join(lines).strip()
        unknown = sorted({m.group(1) for m in _PARAM.finditer(body)} - set(params))
        if unknown or "{{" in _PARAM.sub("", body):
            raise ValueError(f"{where}: the body of {{{{{name}}}}} names {unknown or 'a fragment'}, not a parameter")
        out[name] = Fragment(name, params, body, path)
    return out


def statements(dialect: str) -> dict[str, Path]:
    """Every statement name available in ``dialect`` with the file that serves it (along its chain); a statement
    written only as variants of other dialects is not available."""
    root = cypher_root()
    out: dict[str, Path] = {}
    for name in sorted(names(root)):
        found = _find(root, name, dialect)
        if found is not None:
            out[name] = found
    return out


def names(root: Path | None = None) -> set[str]:
    """Every statement name under ``root`` (default :func:`cypher_root`), of any dialect."""
    root = root or cypher_root()
    suffixes = set(DIALECTS)
    out: set[str] = set()
    for path in root.rglob("*.cypher"):
        rel = path.relative_to(root).as_posix()[: -len(".cypher")]
        if rel.startswith(f"{FRAGMENTS}/"):
            continue
        base, dot, suffix = rel.rpartition(".")
        out.add(base if dot and suffix in suffixes else rel)
    return out
