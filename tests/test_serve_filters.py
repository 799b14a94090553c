"""Document filters at every entry point (issue 58), on both real stores: the HTTP API's ``filters`` of ask (JSON and
SSE) and search, the MCP tools' ``filters``, ``kbgraph ask/retrieve --where``, ``KnowledgeBase.browse(filters=)``,
and keys scoped to documents (``kbgraph serve keys add --where``): a filtered question cites only the documents the
filter allows, a hostile value (quotes, Cypher keywords) is a parameter that matches nothing, an unknown key or a bad
filter is a 400 naming it, a scoped key is read-only and its filter narrows every request's."""

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

from kbgraph.cli import main  # noqa: E402
from kbgraph.errors import ConfigError  # noqa: E402
from kbgraph.kb import KnowledgeBase  # noqa: E402
from kbgraph.serve.access import Forbidden, KeyScope, add_key, load_keys, unrestricted  # noqa: E402
from kbgraph.serve.app import create_app  # noqa: E402
from kbgraph.settings import Settings  # noqa: E402
from tests.backends import BACKENDS  # noqa: E402
from tests.serve_fixture import offline, running  # noqa: E402

#: file -> (team, the text)
DOCS = {
    "leave.md": ("hr", "Employees may take sixteen weeks of paid parental leave after the birth of a child."),
    "deploy.md": ("eng", "Engineers roll out the service to production with a canary release every Tuesday."),
    "budget.md": ("fin", "The finance team closes the quarterly budget ledger on the fifth working day."),
}
QUESTION = "How many weeks of parental leave, canary release or budget ledger?"
HR = {"op": "eq", "key": "team", "value": "hr"}
HOSTILE = ["hr' OR 1=1 //", 'hr") RETURN d //', "' MATCH (n) DETACH DELETE n //", "x` OR true OR `"]


@dataclass
class Served:
    url: str
    settings: Settings
    #: team -> document id
    docs: dict[str, str]
    #: document title -> its document id
    titles: dict[str, str]
    #: role -> key
    keys: dict[str, str]


@pytest.fixture(scope="module", params=BACKENDS)
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    if request.param == "falkordb":
        base: Settings = request.getfixturevalue("falkor_settings").updated({"name": "filters"})
    else:
        base = request.getfixturevalue("neo4j_settings")
    root = tmp_path_factory.mktemp("filterdocs")
    for file, (team, text) in DOCS.items():
        (root / file).write_text(f"---\nteam: {team}\n---\n# {file[:-3].title()}\n\n{text}\n")
    keys_file = tmp_path_factory.mktemp("filterkeys") / "keys.json"
    settings = offline(base.updated({"api_keys_file": keys_file}))
    with KnowledgeBase(settings=settings) as kb:
        kb.reset()
        assert kb.ingest([root], progress=False).added == len(DOCS)
        listed = kb.documents()
        docs = {d["metadata"]["team"]: d["id"] for d in listed}
        titles = {d["title"]: d["id"] for d in listed}
    name = settings.name
    keys = {
        "reader": add_key(keys_file, kbs=[name], rights=["read"], name="reader")[0],
        "writer": add_key(keys_file, kbs=[name], rights=["read", "write"], name="writer")[0],
        "hr": add_key(keys_file, kbs=[name], rights=["read"], name="hr", where=["team=hr"])[0],
        "not_hr": add_key(keys_file, kbs=[name], rights=["read"], name="not-hr", where=["team!=hr"])[0],
        "ghost": add_key(keys_file, kbs=[name], rights=["read"], name="ghost", where=["division=x"])[0],
    }
    with running(create_app(settings)) as url:
        yield Served(url, settings, docs, titles, keys)


def _post(s: Served, route: str, body: dict[str, Any], key: str = "reader") -> Any:
    return httpx.post(
        f"{s.url}/v1/kb/{s.settings.name}/{route}",
        content=json.dumps(body),  # \ud800 escaped
        headers={"Authorization": f"Bearer {s.keys[key]}", "Content-Type": "application/json"},
        timeout=120,
    )


def _documents(s: Served, data: dict[str, Any]) -> set[str]:
    """The documents an Answer cites (by their titles) or a search returns."""
    if "citations" in data:
        return {s.titles[c["document_title"]] for c in data["citations"]}
    return {c["document_id"] for c in data["chunks"]}


def _cited(s: Served, reply: Any) -> set[str]:
    assert reply.status_code == 200, reply.text
    return _documents(s, reply.json())


def _sse(reply: Any) -> dict[str, Any]:
    """The ``answer`` event of a streamed ask."""
    assert reply.status_code == 200, reply.text
    events = [block.split("\n", 1) for block in reply.text.strip().split("\n\n")]
    found = {head.removeprefix("event: "): json.loads(data.removeprefix("data: ")) for head, data in events}
    assert "error" not in found, found["error"]
    return dict(found["answer"])


def test_a_filtered_question_cites_only_the_documents_it_allows(served: Served) -> None:
    every = set(served.docs.values())
    assert _cited(served, _post(served, "ask", {"question": QUESTION, "k": 5})) == every  # unfiltered: all three
    assert _cited(served, _post(served, "ask", {"question": QUESTION, "k": 5, "filters": HR})) == {served.docs["hr"]}
    eng_fin = {"op": "in", "key": "team", "values": ["eng", "fin"]}
    assert _cited(served, _post(served, "search", {"question": QUESTION, "filters": eng_fin})) == every - {
        served.docs["hr"]
    }
    prefix = {"op": "not", "filter": {"op": "prefix", "key": "team", "value": "e"}}
    assert _cited(
        served, _post(served, "search", {"question": QUESTION, "method": "bm25", "filters": prefix})
    ) == every - {served.docs["eng"]}
    streamed = _sse(_post(served, "ask", {"question": QUESTION, "stream": True, "filters": HR}))
    assert _documents(served, streamed) == {served.docs["hr"]}


def test_a_hostile_filter_value_is_a_parameter_and_matches_nothing(served: Served) -> None:
    for value in HOSTILE:
        for route in ("ask", "search"):
            reply = _post(served, route, {"question": QUESTION, "filters": {"op": "eq", "key": "team", "value": value}})
            assert _cited(served, reply) == set(), (value, reply.text)
        reply = _post(
            served, "search", {"question": QUESTION, "filters": {"op": "prefix", "key": "team", "value": value}}
        )
        assert _cited(served, reply) == set(), value
    with KnowledgeBase(settings=served.settings) as kb:
        assert len(kb.documents()) == len(DOCS)  # nothing was deleted


def test_an_unknown_key_or_a_bad_filter_is_a_400_naming_it(served: Served) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"op": "eq", "key": "tema", "value": "hr"}, "unknown filter key 'tema'"),
        ({"op": "eq", "key": "tema", "value": "hr"}, "did you mean 'team'"),
        ({"op": "like", "key": "team", "value": "hr"}, "invalid filter"),
        ({"op": "eq", "key": "team' OR 1=1", "value": "hr"}, "invalid filter at eq.key"),
        ({"op": "range", "key": "team"}, "needs a bound"),
        ({"op": "eq", "key": "title"}, "invalid filter at eq.value"),
        ({"op": "eq", "key": "uri", "value": "x"}, "kbgraph's own"),
        ({"op": "eq", "key": "team", "value": "\ud800"}, "not Unicode"),
    ]
    for filters, message in cases:
        for route, extra in (("ask", {}), ("search", {}), ("ask", {"stream": True})):
            reply = _post(served, route, {"question": QUESTION, "filters": filters, **extra})
            assert reply.status_code == 400 and message in reply.json()["detail"], (route, filters, reply.text)


def test_mcp_tools_take_filters(served: Served) -> None:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def run() -> None:
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {served.keys['reader']}"})
        async with mcp.Client(
            streamable_http_client(f"{served.url}/mcp", http_client=client), read_timeout_seconds=120
        ) as session:
            found = await session.call_tool("search", {"question": QUESTION, "filters": HR, "k": 5})
            assert not found.is_error, found.content
            assert {c["document_id"] for c in (found.structured_content or {})["result"]} == {served.docs["hr"]}
            answer = await session.call_tool("ask", {"question": QUESTION, "filters": HR})
            assert _documents(served, json.loads(answer.content[0].text)) == {served.docs["hr"]}
            bad = await session.call_tool(
                "search", {"question": QUESTION, "filters": {"op": "eq", "key": "tema", "value": "hr"}}
            )
            assert bad.is_error and "unknown filter key 'tema'" in bad.content[0].text, bad.content
            listed = await session.call_tool("list_documents", {})
            assert {"hr", "eng", "fin"} == {d["metadata"]["team"] for d in (listed.structured_content or {})["result"]}

    asyncio.run(run())


def test_a_document_scoped_key_reads_its_documents_only_and_writes_nothing(served: Served) -> None:
    hr, eng = served.docs["hr"], served.docs["eng"]
    assert _cited(served, _post(served, "ask", {"question": QUESTION, "k": 5}, "hr")) == {hr}
    assert _cited(served, _post(served, "search", {"question": QUESTION}, "not_hr")) == {eng, served.docs["fin"]}
    # a request's filter narrows the key's documents, never widens them
    assert _cited(served, _post(served, "search", {"question": QUESTION, "filters": HR}, "not_hr")) == set()
    either = {"op": "or", "filters": [HR, {"op": "eq", "key": "team", "value": "eng"}]}
    assert _cited(served, _post(served, "search", {"question": QUESTION, "filters": either}, "not_hr")) == {eng}
    # read-only: ask with save, ingest and delete are refused
    saved = _post(served, "ask", {"question": QUESTION, "save": True}, "hr")
    assert saved.status_code == 403 and "may only read" in saved.text, saved.text
    headers = {"Authorization": f"Bearer {served.keys['hr']}"}
    kb = f"{served.url}/v1/kb/{served.settings.name}"
    assert httpx.post(f"{kb}/ingest", json={"paths": ["/tmp"]}, headers=headers).status_code == 403
    assert httpx.delete(f"{kb}/documents/{hr}", headers=headers).status_code == 403
    # stats count its documents; the runs (the web app's Runs, in the scope since issue 57) show its documents only
    stats = httpx.get(f"{kb}/stats", headers=headers).json()
    assert stats["nodes"]["Document"] == 1 and stats["location"] == "" and stats["relationships"] == {}
    runs = httpx.get(f"{kb}/runs", headers=headers)
    assert runs.status_code == 200 and {d["id"] for r in runs.json()["runs"] for d in r["documents"]} == {hr}, runs.text
    # a key filter the knowledge base cannot apply reads nothing: 403 naming the key
    ghost = _post(served, "search", {"question": QUESTION}, "ghost")
    assert ghost.status_code == 403 and "'ghost'" in ghost.text and "division" in ghost.text, ghost.text


def test_cli_where(served: Served, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    s = served.settings
    if s.store.uri:
        monkeypatch.setenv("KBGRAPH_URI", s.store.uri)
        if s.store.neo4j_password is not None:
            monkeypatch.setenv("KBGRAPH_NEO4J_PASSWORD", s.store.neo4j_password.get_secret_value())
    else:
        monkeypatch.setenv("KBGRAPH_DATA_DIR", str(s.store.data_dir))
    monkeypatch.setenv("KBGRAPH_HOME", str(s.home))
    monkeypatch.setenv("KBGRAPH_EMBEDDING_CACHE_DIR", str(s.embedding.embedding_cache_dir))
    monkeypatch.setenv("KBGRAPH_LLM_MODEL", "")
    capsys.readouterr()
    assert main(["--kb", s.name, "ask", QUESTION, "--where", "team=hr", "--json"]) == 0
    assert _documents(served, json.loads(capsys.readouterr().out)) == {served.docs["hr"]}
    assert main(["--kb", s.name, "retrieve", QUESTION, "-w", "team=hr|fin", "-w", "team!=fin", "--json"]) == 0
    assert {c["document_id"] for c in json.loads(capsys.readouterr().out)} == {served.docs["hr"]}
    assert main(["--kb", s.name, "retrieve", QUESTION, "--where", "team=hr' OR 1=1 //"]) == 0
    assert "no chunk found" in capsys.readouterr().err
    assert main(["--kb", s.name, "retrieve", QUESTION, "--where", "tema=hr"]) == 2
    assert "unknown filter key 'tema'" in capsys.readouterr().err
    assert main(["--kb", s.name, "ask", QUESTION, "--where", "team"]) == 2
    assert "is not a condition" in capsys.readouterr().err


def test_browse_filters_narrow_the_callers_scope(served: Served) -> None:
    with KnowledgeBase(settings=served.settings) as kb:
        rows = kb.browse("document", filters=HR)
        assert {r["document"]["id"] for r in rows} == {served.docs["hr"]}
        hr = served.docs["hr"]
        entities = kb.browse("entity", filters=HR) + kb.browse("entity", entity="e", filters=HR)
        assert entities
        for row in entities:
            assert row["mentions"] > 0 and {c["document_id"] for c in row["chunks"]} == {hr}, row
        assert all(r["mentions"] > 0 for r in kb.browse("top_entities", filters=HR, limit=100))
        (changed,) = kb.browse("changed", filters=HR)
        assert [d["id"] for d in changed["documents"]] == [hr] and changed["run"].get("paths") is None
        assert kb.browse("changed")[0]["run"]["paths"]  # unscoped: the run as it is
        assert kb.browse("questions", filters=HR) == [] and kb.browse("orphans", filters=HR) == []
        from kbgraph.store.scope import within

        with within(kb.scope({"op": "eq", "key": "team", "value": "eng"})):
            assert kb.browse("document", filters=HR) == []  # both must allow the document
            assert [r["id"] for r in kb.documents()] == [served.docs["eng"]]


def test_keys_with_where(tmp_path: Path) -> None:
    path = tmp_path / "keys.toml"
    _, scope = add_key(path, kbs=["kb"], rights=["read"], where=["folder^=engineering/", "year>=2021"])
    (loaded,) = load_keys(path)
    assert loaded == scope and loaded.describe_where() == "(folder^=engineering/ and year>=2021)"
    assert json.loads(loaded.where or "")["op"] == "and" and not unrestricted(loaded)
    with pytest.raises(ConfigError, match="may only read"):
        add_key(path, kbs=["kb"], rights=["read", "write"], where=["team=hr"])
    with pytest.raises(ConfigError, match="is not a condition"):
        add_key(path, kbs=["kb"], rights=["read"], where=["team"])
    every = KeyScope(name="all", kbs=("*",), where=scope.where)  # every right and kb, but scoped: not unrestricted
    assert not unrestricted(every)
    with pytest.raises(Forbidden, match="may only read"):
        every.check("kb", "write")
    path.write_text(path.read_text().replace('"op\\":\\"and', '"op\\":\\"nand'))
    with pytest.raises(ConfigError, match="its `where` is not a document filter"):
        load_keys(path)
