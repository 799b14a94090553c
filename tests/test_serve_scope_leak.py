"""No leak through a key scoped to documents (issue 58), on a real server (uvicorn in this process, embedded
FalkorDB): Hypothesis generates keys with document filters (``eq``/``in``/``prefix``/``range``/``exists``, ``not``,
``and``/``or``, hostile values) and a request filter, and every read route and MCP tool is asked, by that key, about
every document (questions naming each one's words, every chunk id, the entity all documents share, the saved
questions); no response of the key holds the id or the text of a document or chunk outside its scope (each
document's secret word, said only in its text and title, never in a request), and what it does see is exactly its
documents (a Python oracle of the filter decides which). The web app's Explore and Runs routes too: the search by
name, every document, chunk, entity and saved question as a node with its neighbours (a node outside the scope is
404), the views, and the runs (exactly the key's documents, nothing of the run's other files). The corpus: ten small documents of four teams (Markdown
with front matter, two PDFs with sidecars), one entity (Acme Corporation) in all of them, saved questions of all
and of one team, ingested once per module.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
mcp = pytest.importorskip("mcp")
pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings as hsettings, strategies as st  # noqa: E402

from kbgraph.filters import And, Eq, Exists, Filter, In, Not, Or, Prefix, Range  # noqa: E402
from kbgraph.kb import KnowledgeBase  # noqa: E402
from kbgraph.serve.access import add_key  # noqa: E402
from kbgraph.serve.app import create_app  # noqa: E402
from kbgraph.settings import Settings  # noqa: E402
from tests.serve_fixture import offline, running  # noqa: E402

TEAMS = ("hr", "eng", "fin", "ops")
#: (file, team, level or None, the word questions use, the secret word only its text and title hold)
DOCS = [
    ("hr/leave.md", "hr", 1, "parental", "zorblax"),
    ("hr/travel.md", "hr", 2, "mileage", "quibbet"),
    ("eng/deploy.md", "eng", 1, "rollout", "vexmoor"),
    ("eng/oncall.md", "eng", 3, "pager", "thrindle"),
    ("fin/budget.md", "fin", 2, "ledger", "plovash"),
    ("fin/audit.md", "fin", 3, "auditor", "grembly"),
    ("ops/backup.md", "ops", 1, "snapshot", "wuzzock"),
    ("ops/network.md", "ops", 2, "firewall", "drabnix"),
    ("hr/handbook.pdf", "hr", None, "handbook", "yoltrin"),
    ("fin/report.pdf", "fin", None, "revenue", "skelmar"),
]
SHARED = "Acme Corporation"
HOSTILE = "hr' OR 1=1 RETURN d //"
METHODS = ("propagation", "hierarchical", "dense", "bm25")


def _text(word: str, secret: str) -> str:
    return (
        f"{SHARED} keeps the {word} rule of the {secret} office. The {secret} {word} ledger is kept by "
        f"{SHARED} for every {word} request."
    )


def _pdf(path: Path, text: str) -> None:
    import pymupdf

    doc = pymupdf.open()
    doc.new_page().insert_textbox(pymupdf.Rect(72, 72, 520, 400), text, fontsize=11)
    doc.save(path)


@dataclass
class Corpus:
    url: str
    settings: Settings
    keys_file: Path
    #: document id -> (team, level, word, secret)
    docs: dict[str, tuple[str, int | None, str, str]]
    #: document id -> its chunk ids
    chunks: dict[str, list[str]]
    #: chunk ids of PDF documents
    pdf_chunks: list[str]
    questions: list[str]
    entity_id: str
    #: every entity's id (the Explore page's node route is asked about each)
    entities: list[str]


@pytest.fixture(scope="module")
def corpus(falkor_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Corpus]:
    root = tmp_path_factory.mktemp("leakdocs")
    for file, team, level, word, secret in DOCS:
        path = root / file
        path.parent.mkdir(exist_ok=True)
        if file.endswith(".pdf"):
            _pdf(path, f"The {secret} handbook\n\n" + _text(word, secret))
            path.with_name(path.name + ".meta.json").write_text(json.dumps({"team": team}))
        else:
            path.write_text(
                f"---\nteam: {team}\nlevel: {level}\n---\n# The {secret} {word} guide\n\n{_text(word, secret)}\n"
            )
    keys_file = tmp_path_factory.mktemp("leakkeys") / "keys.toml"
    settings = offline(falkor_settings.updated({"name": "leak", "api_keys_file": keys_file}))
    with KnowledgeBase(settings=settings) as kb:
        kb.reset()
        report = kb.ingest([root], progress=False)
        assert report.failed == 0 and report.added == len(DOCS), report.errors
        by_file = {Path(d["uri"]).name: d for d in kb.documents(limit=100)}
        docs = {by_file[Path(f).name]["id"]: (t, lv, w, s) for f, t, lv, w, s in DOCS}
        chunks = {d: [r["id"] for r in kb.store.run("filters/scope_chunks", {"ids": [d]})] for d in docs}
        pdfs = [c for f, *_ in DOCS if f.endswith(".pdf") for c in chunks[by_file[Path(f).name]["id"]]]
        for word in ("parental", "ledger", "firewall"):  # saved questions over every document, and of one team
            kb.ask(f"What is the {word} rule?", k=4, save=True)
            kb.ask(f"What is the {word} rule?", k=2, save=True, filters={"op": "eq", "key": "team", "value": "fin"})
        questions = [r["question"]["id"] for r in kb.browse("questions", limit=100)]
        entity = kb.browse("entity", entity=SHARED)[0]["entity"]["id"]
        entities = [r["entity"]["id"] for r in kb.browse("top_entities", limit=10_000)]
    assert all(chunks.values()) and len(questions) == 6 and len(entities) > len(DOCS)
    with running(create_app(settings)) as url:
        yield Corpus(url, settings, keys_file, docs, chunks, pdfs, questions, entity, entities)


# --- the filters and their oracle ----------------------------------------------------------------------------
def _leaves() -> st.SearchStrategy[Filter]:
    team = st.sampled_from([*TEAMS, "nobody", HOSTILE])
    return st.one_of(
        st.builds(lambda t: Eq(key="team", value=t), team),
        st.builds(lambda ts: In(key="team", values=ts), st.lists(team, min_size=1, max_size=3)),
        st.builds(lambda p: Prefix(key="team", value=p), st.sampled_from(["e", "h", "f", "o", "", "'"])),
        st.builds(lambda n: Range(key="level", gte=n), st.integers(1, 4)),
        st.builds(lambda n: Range(key="level", lt=n), st.integers(1, 4)),
        st.just(Exists(key="level")),
        st.builds(lambda n: Eq(key="level", value=n), st.integers(1, 3)),
    )


def _filters() -> st.SearchStrategy[Filter]:
    leaf = _leaves()
    return st.one_of(
        leaf,
        st.builds(lambda f: Not(filter=f), leaf),
        st.builds(lambda a, b: And(filters=[a, b]), leaf, leaf),
        st.builds(lambda a, b: Or(filters=[a, b]), leaf, st.one_of(leaf, st.builds(lambda f: Not(filter=f), leaf))),
    )


def _holds(f: Filter, meta: dict[str, Any]) -> bool | None:
    """Cypher's three-valued reading of ``f`` on a document's metadata (a missing key is null)."""
    if isinstance(f, And):
        values = [_holds(c, meta) for c in f.filters]
        return False if False in values else (None if None in values else True)
    if isinstance(f, Or):
        values = [_holds(c, meta) for c in f.filters]
        return True if True in values else (None if None in values else False)
    if isinstance(f, Not):
        inner = _holds(f.filter, meta)
        return None if inner is None else not inner
    if isinstance(f, Exists):
        return meta.get(f.key) is not None
    value = meta.get(f.key)
    if value is None:
        return None
    if isinstance(f, Eq):
        return bool(value == f.value)
    if isinstance(f, In):
        return value in f.values
    if isinstance(f, Prefix):
        return str(value).startswith(f.value)
    assert isinstance(f, Range)
    return all({"gte": value >= b, "gt": value > b, "lte": value <= b, "lt": value < b}[n] for n, b in f.bounds())


def _allowed(corpus: Corpus, *filters: Filter | None) -> set[str]:
    out = set()
    for doc, (team, level, _, _) in corpus.docs.items():
        meta = {"team": team, "level": level}
        if all(f is None or _holds(f, meta) is True for f in filters):
            out.add(doc)
    return out


# --- the requests --------------------------------------------------------------------------------------------
def _secrets(corpus: Corpus, docs: set[str]) -> set[str]:
    """What no response may hold for a key that may not read ``docs``: their ids, their chunks' ids, their secret
    words."""
    return {t for d in docs for t in (d, corpus.docs[d][3], *corpus.chunks[d])}


def _http(
    corpus: Corpus, key: str, requests: list[tuple[str, str, dict[str, Any] | None]]
) -> list[tuple[str, int, str]]:
    out = []
    with httpx.Client(base_url=corpus.url, headers={"Authorization": f"Bearer {key}"}, timeout=120) as client:
        for method, path, body in requests:
            r = client.request(method, path, json=body) if body is not None else client.request(method, path)
            text = r.text if not r.headers.get("content-type", "").startswith("image/") else ""
            out.append((f"{method} {path} {json.dumps(body)}", r.status_code, text))
    return out


def _routes(corpus: Corpus, question: str, method: str, request_filter: dict[str, Any] | None) -> list[Any]:
    kb = f"/v1/kb/{corpus.settings.name}"
    every_chunk = [c for ids in corpus.chunks.values() for c in ids]
    return [
        ("POST", f"{kb}/ask", {"question": question, "k": 5, "explain": True, "method": method}),
        ("POST", f"{kb}/ask", {"question": question, "k": 5, "filters": request_filter}),
        ("POST", f"{kb}/ask", {"question": question, "k": 3, "stream": True, "method": method}),
        ("POST", f"{kb}/search", {"question": question, "k": 10, "explain": True, "method": method}),
        ("POST", f"{kb}/search", {"question": question, "k": 10, "filters": request_filter}),
        ("GET", f"{kb}/documents", None),
        ("GET", f"{kb}/stats", None),
        *[("GET", f"{kb}/chunks/{c}", None) for c in every_chunk],
        *[("GET", f"{kb}/chunks/{c}/page.png", None) for c in corpus.pdf_chunks],
        ("GET", f"{kb}/browse/entity?entity={SHARED}&limit=100", None),
        ("GET", f"{kb}/browse/entity?limit=100", None),
        ("GET", f"{kb}/browse/top_entities?limit=100", None),
        ("GET", f"{kb}/browse/document?limit=100", None),
        *[("GET", f"{kb}/browse/document?document={d}", None) for d in corpus.docs],
        ("GET", f"{kb}/browse/questions?limit=100", None),
        ("GET", f"{kb}/browse/question", None),
        *[("GET", f"{kb}/browse/question?question={q}", None) for q in corpus.questions],
        ("GET", f"{kb}/browse/changed", None),
        ("GET", f"{kb}/browse/orphans", None),
        *_explore(corpus, kb),
    ]


def _explore(corpus: Corpus, kb: str) -> list[Any]:
    """The web app's routes (kbgraph.serve.explore): searches by name (whole words, parts of words), every document,
    chunk and entity as a node with all its neighbours, the questions, the views, the runs."""
    every_chunk = [c for ids in corpus.chunks.values() for c in ids]
    nodes = [*corpus.docs, *every_chunk, *corpus.entities, *corpus.questions]
    return [
        *[
            ("GET", f"{kb}/explore/search?q={q}&limit=200", None)
            for q in ("Acme", "guide", "office", "ledger", "cme", "e")
        ],
        *[("GET", f"{kb}/explore/nodes/{n}?limit=200", None) for n in nodes],
        ("GET", f"{kb}/explore/views/entity?entity={SHARED}&limit=100", None),
        ("GET", f"{kb}/explore/views/top_entities?limit=100", None),
        *[("GET", f"{kb}/explore/views/document?document={d}&limit=100", None) for d in corpus.docs],
        ("GET", f"{kb}/explore/views/changed", None),
        ("GET", f"{kb}/explore/views/orphans", None),
        ("GET", f"{kb}/runs?limit=200", None),
    ]


def _mcp(
    corpus: Corpus, key: str, question: str, method: str, request_filter: dict[str, Any] | None
) -> list[tuple[str, int, str]]:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    name = corpus.settings.name
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"question": question, "k": 10, "method": method}),
        ("search", {"question": question, "k": 10, "filters": request_filter}),
        ("ask", {"question": question, "k": 5, "filters": request_filter}),
        *[("get_chunk", {"chunk_id": ids[0]}) for ids in corpus.chunks.values()],
        ("browse", {"query": "entity", "params": {"entity": SHARED, "limit": 100}}),
        ("browse", {"query": "top_entities", "params": {"limit": 100}}),
        ("browse", {"query": "questions", "params": {"limit": 100}}),
        ("browse", {"query": "question"}),
        ("list_documents", {"limit": 100}),
    ]
    out: list[tuple[str, int, str]] = []

    async def run() -> None:
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
        async with mcp.Client(
            streamable_http_client(f"{corpus.url}/mcp", http_client=client), read_timeout_seconds=120
        ) as session:
            for tool, args in calls:
                result = await session.call_tool(tool, {**args, "kb": name})
                text = json.dumps([c.model_dump(mode="json") for c in result.content])
                out.append((f"mcp {tool} {json.dumps(args)}", 400 if result.is_error else 200, text))

    asyncio.run(run())
    return out


def _check(corpus: Corpus, seen: set[str], responses: list[tuple[str, int, str]]) -> None:
    """No response holds a token of a document outside ``seen`` (unless the request itself named it)."""
    hidden = _secrets(corpus, set(corpus.docs) - seen)
    for request, status, text in responses:
        assert status != 500, (request, text[:500])
        leaked = sorted(t for t in hidden if t in text and t not in request)
        assert not leaked, f"{request} -> {status} leaks {leaked}: {text[:800]}"


# --- the test ------------------------------------------------------------------------------------------------
@hsettings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(
    key_filter=_filters(),
    request_filter=st.one_of(st.none(), _leaves()),
    about=st.integers(0, len(DOCS) - 1),
    method=st.sampled_from(METHODS),
)
def test_a_document_scoped_key_sees_nothing_of_other_documents(
    corpus: Corpus, key_filter: Filter, request_filter: Filter | None, about: int, method: str
) -> None:
    """Every read route and MCP tool, by a key scoped to ``key_filter``: nothing of another document; its documents
    are exactly those the filter allows, a request filter narrows them."""
    key, scope = add_key(corpus.keys_file, kbs=[corpus.settings.name], rights=["read"], where=key_filter)
    seen = _allowed(corpus, key_filter)
    question = f"What is the {DOCS[about][3]} rule of {SHARED}?"
    wire = request_filter.model_dump(mode="json", exclude_none=True) if request_filter is not None else None
    responses = _http(corpus, key, _routes(corpus, question, method, wire))
    responses += _mcp(corpus, key, question, method, wire)
    _check(corpus, seen, responses)
    by_request = {r: (status, text) for r, status, text in responses}
    kb = f"/v1/kb/{corpus.settings.name}"
    status, text = by_request[f"GET {kb}/documents null"]
    assert status == 200 and {d["id"] for d in json.loads(text)["documents"]} == seen, (scope.where, text)
    status, text = by_request[f"GET {kb}/stats null"]
    assert status == 200 and json.loads(text)["nodes"].get("Document", 0) == len(seen), text
    for doc, ids in corpus.chunks.items():
        status, _ = by_request[f"GET {kb}/chunks/{ids[0]} null"]
        assert status == (200 if doc in seen else 404), (doc, scope.where)
    narrowed = _allowed(corpus, key_filter, request_filter)
    for request, status, text in responses:
        if "/search" in request and '"filters": {' in request:
            assert status == 200 and {c["document_id"] for c in json.loads(text)["chunks"]} <= narrowed, text
    _check_explore(corpus, kb, seen, by_request)


def _check_explore(corpus: Corpus, kb: str, seen: set[str], by_request: dict[str, tuple[int, str]]) -> None:
    """The Explore routes show a scoped key exactly its documents: the search finds them by a word of every title,
    each is a node (the others 404, as their chunks), the runs list exactly them."""
    status, text = by_request[f"GET {kb}/explore/search?q=guide&limit=200 null"]
    found = {d["id"] for d in json.loads(text)["documents"]}
    markdown = {d for d in seen if corpus.docs[d][1] is not None}  # the PDFs' titles are "The ... handbook"
    assert status == 200 and markdown <= found <= seen, (found, seen)
    for doc, ids in corpus.chunks.items():
        for node in (doc, *ids):
            status, text = by_request[f"GET {kb}/explore/nodes/{node}?limit=200 null"]
            assert status == (200 if doc in seen else 404), (node, status, text[:300])
    status, text = by_request[f"GET {kb}/explore/nodes/{corpus.entity_id}?limit=200 null"]
    assert status == (200 if seen else 404), text[:300]
    if seen:  # the shared entity's neighbours: a chunk of each of the key's documents, no other
        shown = {n["properties"].get("document_id") for n in json.loads(text)["neighbours"] if n["label"] == "Chunk"}
        assert shown == seen, (shown, seen)
    status, text = by_request[f"GET {kb}/runs?limit=200 null"]
    runs = json.loads(text)["runs"]
    assert status == 200 and {d["id"] for r in runs for d in r["documents"]} == seen, runs
    assert all(r["scoped"] and r["errors"] == [] and r["added"] is None for r in runs), runs
