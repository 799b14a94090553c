"""Ready queries for exploring the graph in Neo4j Browser (``kbgraph browse``).

Each entry of :data:`CATALOGUE` names a parameterized statement in ``cypher/browse/`` (the same text runs on
both backends, so ``KnowledgeBase.browse`` returns its rows on the embedded FalkorDB too), says what it shows
and gives its parameters with defaults:

==============  ====================================================================================
document        a document's three layers (PIKE-RAG §3.1, Fig. 3): Document -> Sections -> Chunks ->
                atomic questions / triples / entities, one row per chunk
entity          an entity's neighbourhood: RELATED entities, its triples, the chunks that mention it
question        the rationale of an answer saved with ``kbgraph ask --save`` (kbgraph.query.rationale)
questions       the saved questions, newest first
top_entities    the entities with the most MENTIONS + RELATED edges
changed         documents added or updated by the last ingestion run
orphans         nodes detached from the layers (should be none)
==============  ====================================================================================

:func:`render` turns an entry into what a person pastes into Browser: one ``:param name => value`` line per
parameter (Browser evaluates the right-hand side as Cypher, so integers stay integers) followed by the
statement, ``;``-separated so Browser's multi-statement editor runs it as one script, and a Browser URL that
connects to the configured Neo4j (``?dbms=<bolt uri>&db=<database>``) and puts the script into the editor
(``&cmd=edit&arg=<line>`` per line; Browser 5 joins the ``arg`` values with newlines).

A statement that reads under a document scope declares ``$documents`` (kbgraph.store.scope: the documents a filter
or a document-scoped key allows); in Browser it reads every document: the script and the values-written-in text
put ``null`` in its place (:data:`UNSCOPED`).

The Browser style (``kbgraph/resources/neo4j-browser/kbgraph.grass``), which the local Neo4j applies on connect,
is kbgraph.neo4j_local.browser_style.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, Field

from kbgraph import cypher
from kbgraph.errors import ConfigError
from kbgraph.store import store_class
from kbgraph.settings import Settings


#: Parameters a statement may declare that no browse parameter gives, with their value in Browser: ``$documents``
#: (a document scope, kbgraph.store.scope) is null there, every document.
UNSCOPED: dict[str, None] = {"documents": None}

#: The largest value of an integer parameter (``limit``, ``per_chunk``) and the longest string parameter.
MAX_INT_PARAM, MAX_STR_PARAM = 10_000, 1_000


class BrowseParam(BaseModel):
    """A parameter of a browse query. ``default`` fixes its type (int or str); an integer lies in
    0..``maximum``."""

    name: str
    default: int | str
    help: str
    maximum: int = MAX_INT_PARAM


class BrowseQuery(BaseModel):
    """A ready query: ``statement`` is its name under ``cypher/`` (``browse/<name>``)."""

    name: str
    title: str
    statement: str
    params: list[BrowseParam] = Field(default_factory=list)

    def defaults(self) -> dict[str, int | str]:
        return {p.name: p.default for p in self.params}


class BrowseScript(BaseModel):
    """A query ready for Neo4j Browser. ``script``: the ``:param`` lines and the statement, ``;``-separated
    (paste it into the Browser editor and run it). ``url``: opens Browser on the configured Neo4j with the
    script in the editor (``editor_prefilled`` False when a value holds '&' or '#', which Browser's URL
    handling cannot carry). Browser runs a multi-statement script statement by statement and shows only a
    summary of each (the parameters stay set for the session: run the statement again on its own to see its
    graph), so ``graph_url`` opens the editor with ``inline``, the statement with the values written in as
    literals, which draws the graph in one run ('' when a value holds '&' or '#'). ``note``: what to do
    first, if anything (e.g. the store is not Neo4j)."""

    name: str
    title: str
    params: dict[str, int | str]
    param_lines: list[str]
    cypher: str
    script: str
    inline: str
    url: str
    graph_url: str
    browser_url: str
    editor_prefilled: bool = True
    note: str = ""


_LIMIT = BrowseParam(name="limit", default=25, help="at most this many rows / nodes per list")

CATALOGUE: dict[str, BrowseQuery] = {
    q.name: q
    for q in [
        BrowseQuery(
            name="document",
            statement="browse/document",
            title="a document's three layers: Document -> Sections -> Chunks -> atomic questions / triples / entities",
            params=[
                BrowseParam(
                    name="document",
                    default="",
                    help="document id, source URI or part of its title ('' = last ingested)",
                ),
                BrowseParam(name="limit", default=25, help="chunks, in reading order"),
                BrowseParam(name="per_chunk", default=3, help="atomic questions, triples and entities per chunk"),
            ],
        ),
        BrowseQuery(
            name="entity",
            statement="browse/entity",
            title="an entity's neighbourhood with the chunks that mention it",
            params=[
                BrowseParam(name="entity", default="", help="entity id or (part of) its name ('' = most mentioned)"),
                _LIMIT,
            ],
        ),
        BrowseQuery(
            name="question",
            statement="browse/question",
            title="the path that answered a saved question (kbgraph ask --save)",
            params=[BrowseParam(name="question", default="", help="Question id or part of its text ('' = last saved)")],
        ),
        BrowseQuery(
            name="questions",
            statement="browse/questions",
            title="the saved questions, newest first, with the number of chunks each used",
            params=[_LIMIT],
        ),
        BrowseQuery(
            name="top_entities",
            statement="browse/top_entities",
            title="the entities with the highest degree (mentions + RELATED)",
            params=[_LIMIT],
        ),
        BrowseQuery(
            name="changed",
            statement="browse/changed",
            title="documents added or updated by the last ingestion run",
            params=[BrowseParam(name="run", default="", help="IngestionRun id ('' = the last run)")],
        ),
        BrowseQuery(
            name="orphans",
            statement="browse/orphans",
            title="nodes detached from the three layers (should be none)",
            params=[BrowseParam(name="limit", default=100, help="at most this many")],
        ),
    ]
}


def get(name: str) -> BrowseQuery:
    """The catalogue entry ``name`` ('-' and '_' are interchangeable). Raises ConfigError if unknown."""
    key = name.strip().lower().replace("-", "_")
    if key not in CATALOGUE:
        raise ConfigError(f"no browse query {name!r}; choose one of {', '.join(CATALOGUE)}")
    return CATALOGUE[key]


def parse_param_args(items: list[str] | None) -> dict[str, str]:
    """``['k=v', ...]`` (the CLI's ``--param``) -> {k: v}. Raises ConfigError for an item without '='."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--param wants name=value, got {item!r}")
        out[key.strip()] = value
    return out


def resolve_params(query: BrowseQuery, given: Mapping[str, Any] | None = None) -> dict[str, int | str]:
    """The query's defaults overridden by ``given``, each converted to its parameter's type. Raises
    ConfigError for an unknown parameter, a value that is not an integer where one is needed, an integer outside
    0..its ``maximum`` or a string over MAX_STR_PARAM characters."""
    params = query.defaults()
    maxima = {p.name: p.maximum for p in query.params}
    for key, value in (given or {}).items():
        if key not in params:
            raise ConfigError(
                f"browse query {query.name!r} has no parameter {key!r}; it takes {', '.join(params) or 'none'}"
            )
        if isinstance(params[key], int):
            try:
                number = int(str(value).strip())
            except ValueError:
                raise ConfigError(f"parameter {key!r} of {query.name!r} must be an integer, got {value!r}") from None
            if not 0 <= number <= maxima[key]:
                raise ConfigError(f"parameter {key!r} of {query.name!r} must be 0-{maxima[key]}, got {number}")
            params[key] = number
        else:
            text = "" if value is None else str(value)
            if len(text) > MAX_STR_PARAM:
                raise ConfigError(f"parameter {key!r} of {query.name!r} is over {MAX_STR_PARAM} characters")
            params[key] = text
    return params


def cypher_literal(value: Any) -> str:
    """``value`` as a Cypher literal: strings single-quoted with backslash escapes, integers and floats as
    numbers, booleans, null, lists and maps recursively."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n").replace("\r", "\\r")
        return f"'{escaped.replace(chr(9), chr(92) + 't')}'"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(cypher_literal(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"`{str(k).replace('`', '``')}`: {cypher_literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no Cypher literal for {type(value).__name__}")


def param_lines(params: Mapping[str, Any]) -> list[str]:
    """One Browser ``:param name => literal`` command per parameter."""
    return [f":param {name} => {cypher_literal(value)}" for name, value in params.items()]


def _statement_text(query: BrowseQuery, dialect: str) -> str:
    """The statement's text in the Browser's store's ``dialect`` with its leading comment (Browser ignores ``//``
    lines)."""
    path = cypher.statements(dialect)[query.statement]
    return path.read_text(encoding="utf-8").strip().rstrip(";").strip()


def _browser_settings(settings: Any) -> tuple[Any, str]:
    """(settings of the store Neo4j Browser opens, note): the configured store when Browser can open it
    (``GraphStore.browser_url``), else the local Neo4j of ``kbgraph neo4j start`` (bolt://127.0.0.1,
    ``neo4j_bolt_port``) with a note saying so."""
    store = store_class(settings)
    if store.browser_url(settings) is not None:
        return settings, ""
    local = settings.updated({"uri": f"bolt://127.0.0.1:{settings.store.neo4j_bolt_port}"})
    note = (
        f"this knowledge base is on {store.display_name}; Neo4j Browser needs Neo4j: run `kbgraph neo4j start`, "
        f"export KBGRAPH_URI={local.store.uri} and ingest there"
    )
    return local, note


def browser_base(settings: Any) -> tuple[str, str, str]:
    """(Browser URL without query string, Bolt URI, note) for the configured store (``GraphStore.browser_url``:
    for Neo4j the local Neo4j's own Browser for bolt://127.0.0.1 / localhost, http://host:7474/browser/ for another
    host, https://browser.neo4j.io/ for encrypted URIs). For a store Browser cannot open (the embedded FalkorDB,
    falkor://), the local Neo4j of ``kbgraph neo4j start``, with a note saying so."""
    target, note = _browser_settings(settings)
    return str(store_class(target).browser_url(target)), target.store.uri or "", note


def render(name: str, params: Mapping[str, Any] | None = None, settings: Any = None) -> BrowseScript:
    """The catalogue query ``name`` with ``params`` (over its defaults) as a Browser script and URL.
    ``settings``: kbgraph Settings (default: the effective ones). Raises ConfigError for an unknown query or
    parameter."""
    if settings is None:
        settings = Settings()
    query = get(name)
    values = resolve_params(query, params)
    target, note = _browser_settings(settings)
    store = store_class(target)
    base, uri = str(store.browser_url(target)), target.store.uri or ""
    text = _unscoped(_statement_text(query, store.dialect))
    lines = param_lines(values)
    script = "".join(f"{line};\n" for line in lines) + text + ";\n"
    connect = f"{base}?dbms={quote(uri, safe='')}&db={quote(settings.store.neo4j_database, safe='')}"
    prefilled = not any(ch in script for ch in "&#")
    url = connect + (_edit_args(script) if prefilled else "")
    inline = inline_params(text, values, title=query.title)
    graph_url = connect + _edit_args(inline) if not any(ch in inline for ch in "&#") else ""
    return BrowseScript(
        name=query.name,
        title=query.title,
        params=values,
        param_lines=lines,
        cypher=text,
        script=script,
        inline=inline,
        url=url,
        graph_url=graph_url,
        browser_url=connect,
        editor_prefilled=prefilled,
        note=note,
    )


_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def _unscoped(text: str) -> str:
    """``text`` with each :data:`UNSCOPED` parameter written in as its Browser value (null: every document)."""
    return _PARAM.sub(lambda m: cypher_literal(UNSCOPED[m.group(1)]) if m.group(1) in UNSCOPED else m.group(0), text)


def inline_params(text: str, values: Mapping[str, Any], title: str = "") -> str:
    """``text`` without its ``//`` comment lines and with each ``$name`` of ``values`` replaced by its Cypher
    literal (:func:`cypher_literal`; :data:`UNSCOPED` ones not in ``values`` as null): one statement a person can
    run in Browser without ``:param``. For Browser only; kbgraph itself always sends values as parameters."""
    body = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("//"))
    given = {**UNSCOPED, **values}
    body = _PARAM.sub(lambda m: cypher_literal(given[m.group(1)]) if m.group(1) in given else m.group(0), body)
    return (f"// {title} (values written in)\n" if title else "") + body.strip() + ";"


def _edit_args(text: str) -> str:
    """``&cmd=edit&arg=<line>...``: Browser 5 decodes the whole URL once, then reads each ``arg`` up to the next
    '&' or '#', and joins them with newlines into the editor."""
    return "&cmd=edit" + "".join(f"&arg={quote(line, safe='')}" for line in text.rstrip("\n").split("\n"))


def can_open_browser() -> bool:
    """True where a desktop can show a web browser (macOS, Windows, or X11 / Wayland on Linux)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
