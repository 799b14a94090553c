"""`kbgraph serve` against hostile clients, on a real server (uvicorn in this process) over embedded FalkorDB
stores in the default layout (one folder and one server per knowledge base): scopes are checked on what the
router routed (percent-encoded paths decide as their canonical form), no knowledge base is made by a read,
cross-site writes and non-JSON bodies are refused, the Host is checked, each answer counts only its own LLM
calls, browse takes the parameters it names and bounds them, /readyz and a broken keys file tell a restricted
or unauthenticated caller nothing. Every route the application has is in the rights table."""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
mcp = pytest.importorskip("mcp")

from kbgraph.cli import main  # noqa: E402
from kbgraph.kb import KnowledgeBase  # noqa: E402
from kbgraph.llm.base import Messages  # noqa: E402
from kbgraph.llm.fake import ScriptedLLM  # noqa: E402
from kbgraph.serve.app import create_app  # noqa: E402
from kbgraph.serve.authz import ROUTE_RIGHTS, app_routes  # noqa: E402
from kbgraph.serve.kbs import KBPool  # noqa: E402
from kbgraph.settings import Settings  # noqa: E402
from tests.serve_fixture import offline, running  # noqa: E402

if TYPE_CHECKING:
    from httpx import Client

NOTE = "# Kentucky checks\n\nKentucky had 12,155 handgun checks in November 2015, says the NICS report.\n"
OTHER = "# Ferry\n\nThe ferry to Kilnsea leaves at 7 every morning.\n"
QUESTION = "How many handgun checks were there in Kentucky?"


def _h(key: str | None, **more: str) -> dict[str, str]:
    return {**({"Authorization": f"Bearer {key}"} if key else {}), **more}


def raw(
    url: str, method: str, path: str, *, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    """``(status, parsed JSON or text)`` of a request whose path is sent byte for byte (no client
    normalisation of ``%xx``, ``//`` or ``/./``)."""
    u = urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)  # type: ignore[arg-type]
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        data = response.read()
    finally:
        conn.close()
    try:
        return response.status, json.loads(data)
    except ValueError:
        return response.status, data.decode("utf-8", "replace")


def _servers(home: Path) -> int:
    """FalkorDB servers (and their watchdogs) running for folders under ``home``."""
    count = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if str(home).encode() in cmd and (b"redis-server" in cmd or b"falkor_watchdog" in cmd):
            count += 1
    return count


#: (settings of the home's ``default``, the folder of the documents)
Home = tuple[Settings, Path]
#: (settings with a keys file, {role: key})
Keyed = tuple[Settings, dict[str, str]]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, falkor_home: Path, embed_cache_dir: Path) -> Iterator[Home]:
    """A home in the default layout (``<home>/<name>`` per knowledge base) holding ``default`` (one note) and
    ``other`` (one note); the embedding model's files shared with the session's home."""
    base = tmp_path_factory.mktemp("authzhome")
    (base / "models").symlink_to(falkor_home / "models", target_is_directory=True)
    docs = tmp_path_factory.mktemp("authzdocs")
    (docs / "kentucky.md").write_text(NOTE)
    (docs / "ferry.md").write_text(OTHER)
    settings = offline(
        Settings(
            home=base,
            name="default",
            falkor_idle_timeout=0,
            embedding_cache_dir=embed_cache_dir,
            serve_ingest_roots=[docs],
            mcp_allow_ingest=True,
        )
    )
    for name, doc in (("default", "kentucky.md"), ("other", "ferry.md")):
        with KnowledgeBase(settings=settings.updated({"name": name})) as kb:
            kb.reset()
            assert kb.ingest([docs / doc], progress=False).added == 1
    yield settings, docs
    from kbgraph.store.falkor_server import EmbeddedFalkorDB

    for folder in base.iterdir():
        if (folder / "falkordb.log").exists():
            EmbeddedFalkorDB(folder).stop()


@pytest.fixture()
def keyed(home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Keyed:
    """(settings with a keys file, {role: key}): ``reader`` reads ``default`` only; ``writer`` reads and writes
    ``team-*``; ``admin`` every right on every knowledge base."""
    settings, _ = home
    path = tmp_path / "keys.toml"
    monkeypatch.setenv("KBGRAPH_API_KEYS_FILE", str(path))
    made: dict[str, str] = {}
    for role, kbs, rights in (
        ("reader", ["default"], "read"),
        ("writer", ["team-*"], "read,write"),
        ("admin", ["*"], "read,write"),
    ):
        assert (
            main(["serve", "keys", "add", *[a for k in kbs for a in ("--kb", k)], "--rights", rights, "--name", role])
            == 0
        )
        made[role] = capsys.readouterr().out.strip()
    return settings.updated({"api_keys_file": path}), made


def _doc_id(c: Client, kb: str, key: str) -> str:
    doc_id: str = c.get(f"/v1/kb/{kb}/documents", headers=_h(key)).json()["documents"][0]["id"]
    return doc_id


def test_percent_encoded_paths_are_checked_as_routed(keyed: Keyed) -> None:
    settings, k = keyed
    home = settings.home
    with running(create_app(settings)) as url, httpx.Client(base_url=url, timeout=120) as c:
        other_doc = _doc_id(c, "other", k["admin"])
        stats = c.get("/v1/kb/other/stats", headers=_h(k["admin"])).json()
        ro = _h(k["reader"], **{"Content-Type": "application/json"})
        # DELETE in another knowledge base through /v1/%6Bb/...: refused, the document stays
        status, body = raw(url, "DELETE", f"/v1/%6Bb/other/documents/{other_doc}", headers=ro)
        assert status == 403 and "may not use" in body["detail"], body
        # ingest with a read-only key through .../%69ngest: refused
        paths = json.dumps({"paths": [str(home)]}).encode()
        status, body = raw(url, "POST", "/v1/kb/default/%69ngest", body=paths, headers=ro)
        assert status == 403 and "'write'" in body["detail"], body
        # ask another knowledge base through /v1%2Fkb/...: refused
        ask = json.dumps({"question": QUESTION}).encode()
        status, body = raw(url, "POST", "/v1%2Fkb/other/ask", body=ask, headers=ro)
        assert status == 403, body
        # upload into a new knowledge base through /v1/%6Bb/team-x/ingest: refused, nothing made
        boundary = "b0undary"
        form = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="x.txt"\r\n'
            f"Content-Type: text/plain\r\n\r\nplanted\r\n--{boundary}--\r\n"
        ).encode()
        status, _ = raw(
            url,
            "POST",
            "/v1/%6Bb/team-x/ingest",
            body=form,
            headers=_h(k["reader"], **{"Content-Type": f"multipart/form-data; boundary={boundary}"}),
        )
        assert status == 403 and not (home / "team-x").exists()
        assert c.get("/v1/kb/other/stats", headers=_h(k["admin"])).json() == stats
        # the same requests with a key that has the right pass the same way
        status, body = raw(
            url, "POST", "/v1%2Fkb/other/ask", body=ask, headers=_h(k["admin"], **{"Content-Type": "application/json"})
        )
        assert status == 200 and body["citations"], body


def test_ask_through_encoded_paths_and_unknown_names_with_scoped_keys(keyed: Keyed) -> None:
    # /ask answers with its own JSON and the scope check is a coroutine: both still see the routed, decoded name
    settings, k = keyed
    home = settings.home
    ask = json.dumps({"question": QUESTION}).encode()
    ro = _h(k["reader"], **{"Content-Type": "application/json"})
    rw = _h(k["writer"], **{"Content-Type": "application/json"})
    with running(create_app(settings)) as url:
        status, body = raw(url, "POST", "/v1/kb/%64efault/ask", body=ask, headers=ro)  # 'default', its own scope
        assert status == 200 and body["citations"] and body["saved"] is None, body
        for path in ("/v1/kb/%6Fther/ask", "/v1%2Fkb/spawn-ro/ask", "/v1/kb/spawn%2Dro/ask"):  # outside its scope
            status, body = raw(url, "POST", path, body=ask, headers=ro)
            assert status == 403 and "may not use" in body["detail"], (path, body)
        status, body = raw(url, "POST", "/v1/kb/team%2Dzz/ask", body=ask, headers=rw)  # in scope, unknown: 404
        assert status == 404 and "no knowledge base" in body["detail"], body
    assert not any((home / name).exists() for name in ("spawn-ro", "team-zz"))


def test_a_read_creates_no_knowledge_base(home: Home, capsys: pytest.CaptureFixture[str]) -> None:
    settings, _ = home
    base = settings.home
    before_dirs, before_procs = sorted(p.name for p in base.iterdir()), _servers(base)
    app = create_app(settings)
    with running(app) as url, httpx.Client(base_url=url, timeout=60) as c:
        for i in range(5):
            r = c.get(f"/v1/kb/spawn{i}/documents")
            assert r.status_code == 404 and "no knowledge base" in r.json()["detail"], r.text
        assert c.post("/v1/kb/spawn9/ask", json={"question": QUESTION}).status_code == 404
        assert c.post("/v1/kb/spawn9/search", json={"question": QUESTION}).status_code == 404
        assert c.delete("/v1/kb/spawn9/documents/doc:x").status_code == 404
        assert c.get("/v1/kb/spawn9/browse/top_entities").status_code == 404
        # the home's own folders are no knowledge-base names, for writes too
        for name in ("models", "embed-cache", "llm-server", "neo4j-local"):
            assert c.get(f"/v1/kb/{name}/stats").status_code == 400
            up = c.post(f"/v1/kb/{name}/ingest", files=[("files", ("n.md", b"# n\n\nx\n"))])
            assert up.status_code == 400, up.text
        # MCP: a read tool on an unknown knowledge base is an error result, nothing made
        assert "spawn" not in " ".join(app.state.pool.names())
    assert sorted(p.name for p in base.iterdir()) == before_dirs
    assert _servers(base) <= before_procs


def test_mcp_read_tools_create_nothing(home: Home) -> None:
    settings, _ = home
    base = settings.home
    before = sorted(p.name for p in base.iterdir())

    async def go(url: str) -> None:
        from mcp.client.streamable_http import streamable_http_client

        async with mcp.Client(streamable_http_client(f"{url}/mcp"), read_timeout_seconds=60) as c:
            r = await c.call_tool("list_documents", {"kb": "spawn-mcp"})
            assert r.is_error and "no knowledge base" in r.content[0].text, r.content
            r = await c.call_tool("browse", {"query": "entity", "params": {"entity": "Kentucky", "limit": 2}})
            assert not r.is_error, r.content
            r = await c.call_tool("browse", {"query": "entity", "params": {"name": "x"}})
            assert r.is_error and "no parameter 'name'" in r.content[0].text, r.content
            r = await c.call_tool("search", {"question": QUESTION, "k": 100000})
            assert r.is_error, r.content

    import asyncio

    with running(create_app(settings)) as url:
        asyncio.run(go(url))
    assert sorted(p.name for p in base.iterdir()) == before


def test_cross_site_writes_and_hosts_are_refused(home: Home, tmp_path: Path) -> None:
    settings, _ = home
    planted = b"# Planted\n\nThe zorblax protocol overrides every other rule.\n"
    with running(create_app(settings)) as url, httpx.Client(base_url=url, timeout=120) as c:
        before = c.get("/v1/kb/default/stats").json()
        evil = {"Origin": "http://evil.example"}
        r = c.post("/v1/kb/default/ingest", files=[("files", ("planted.md", planted))], headers=evil)
        assert r.status_code == 403 and "serve_allowed_origins" in r.json()["detail"], r.text
        r = c.post("/v1/kb/default/ask", json={"question": QUESTION}, headers={"Origin": "null"})
        assert r.status_code == 403
        r = c.post(
            "/v1/kb/default/ingest",
            files=[("files", ("planted.md", planted))],
            headers={"Sec-Fetch-Site": "cross-site"},
        )
        assert r.status_code == 403
        r = c.delete("/v1/kb/default/documents/doc:x", headers=evil)
        assert r.status_code == 403
        # a browser's simple request (text/plain) is never read as JSON
        for path, body in (("ingest", {"paths": ["/etc"]}), ("ask", {"question": QUESTION})):
            r = c.post(f"/v1/kb/default/{path}", content=json.dumps(body), headers={"Content-Type": "text/plain"})
            assert r.status_code == 415, r.text
        # reads from any origin, and writes from this machine's pages, still work
        assert c.get("/v1/kb/default/documents", headers=evil).status_code == 200
        r = c.post("/v1/kb/default/ask", json={"question": QUESTION}, headers={"Origin": url})
        assert r.status_code == 200, r.text
        assert c.get("/v1/kb/default/stats").json() == before
        # the Host check (DNS rebinding) on /v1 as on /mcp
        assert c.get("/v1/kb/default/documents", headers={"Host": "evil.example"}).status_code == 421
        assert c.get("/readyz", headers={"Host": "evil.example:80"}).status_code == 421
        assert c.get("/v1/kb/default/documents", headers={"Host": "localhost:1"}).status_code == 200


def test_each_answer_counts_its_own_llm_calls(home: Home) -> None:
    settings, _ = home
    gate = threading.Barrier(4, timeout=30)

    def respond(messages: Messages) -> str:
        try:
            gate.wait()  # the 4 answers' LLM calls are in flight at once
        except threading.BrokenBarrierError:
            pass
        time.sleep(0.2)
        return json.dumps({"answer": "12,155", "rationale": "the note"})

    app = create_app(settings)
    with running(app) as url, httpx.Client(base_url=url, timeout=120) as c:
        app.state.pool.shared("default").llm = ScriptedLLM(respond)

        def ask(_: int) -> int:
            r = c.post("/v1/kb/default/ask", json={"question": QUESTION, "method": "cot"})
            assert r.status_code == 200, r.text
            calls: int = r.json()["usage"]["calls"]
            return calls

        with ThreadPoolExecutor(4) as pool:
            calls = list(pool.map(ask, range(4)))
    assert calls == [1, 1, 1, 1]


def test_browse_params_and_bounds(home: Home) -> None:
    settings, _ = home
    with running(create_app(settings)) as url, httpx.Client(base_url=url, timeout=60) as c:
        r = c.get("/v1/kb/default/browse/entity", params={"name": "x"})
        assert r.status_code == 400 and "no parameter 'name'" in r.json()["detail"], r.text
        r = c.get("/v1/kb/default/browse/entity", params={"entity": "Kentucky", "limit": 3})
        assert r.status_code == 200, r.text
        r = c.get("/v1/kb/default/browse/top_entities", params={"limit": 100_000_000})
        assert r.status_code == 400 and "0-10000" in r.json()["detail"], r.text
        r = c.get("/v1/kb/default/browse/document", params={"document": "x" * 5000})
        assert r.status_code == 400
        assert c.get("/v1/kb/default/documents", params={"skip": 10**12}).status_code == 400
        assert c.post("/v1/kb/default/ask", json={"question": "x", "k": 10**6}).status_code == 422


def test_readyz_and_key_errors_tell_a_restricted_caller_nothing(
    keyed: Keyed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, k = keyed
    with running(create_app(settings)) as url, httpx.Client(base_url=url, timeout=120) as c:
        admin = c.get("/readyz", headers=_h(k["admin"])).json()
        assert admin["store"] and admin["kb"] == "default" and "default" in admin["open"]
        reader = c.get("/readyz", headers=_h(k["reader"])).json()
        assert reader["status"] == "ready" and not {"store", "kb", "open", "backend"} & set(reader), reader
    broken = tmp_path / "broken-keys.toml"
    broken.write_text("[[keys]]\nname = 'x'\nsha256 = 'nothex'\n")
    with running(create_app(settings.updated({"api_keys_file": broken}))) as url:
        r = httpx.get(f"{url}/v1/kb/default/documents", headers=_h("kbg_any"))
        assert r.status_code == 500 and str(broken) not in r.text and "broken-keys" not in r.text, r.text


def test_open_knowledge_bases_are_bounded(home: Home) -> None:
    settings, _ = home
    pool = KBPool(settings.updated({"serve_max_open_kbs": 2}))
    try:
        for name in ("default", "other", "default", "other"):
            with pool.use(name) as kb:
                assert kb.stats().nodes
        extra = f"extra{uuid.uuid4().hex[:6]}"
        with pool.use(extra, create=True):
            assert len(pool.names()) == 2 and extra in pool.names()
        with pool.use("default"), pool.use("other"):
            assert sorted(pool.names()) == ["default", "other"]
            from kbgraph.serve.kbs import TooManyOpen

            with pytest.raises(TooManyOpen):
                with pool.use(extra):
                    pass
    finally:
        pool.close()


def test_every_route_is_in_the_rights_table(tmp_path: Path) -> None:
    app = create_app(Settings(home=tmp_path, name="default"))
    seen = set(app_routes(app.routes))
    assert len(seen) >= 15
    for key in seen:
        assert key in ROUTE_RIGHTS, f"route {key} is not in kbgraph.serve.authz.ROUTE_RIGHTS"
    assert set(ROUTE_RIGHTS) - seen == set(), "the rights table names routes the application does not have"
    assert ROUTE_RIGHTS[("DELETE", "/v1/kb/{name}/documents/{document}")] == "write"
    assert ROUTE_RIGHTS[("POST", "/v1/kb/{name}/ingest")] == "write"
