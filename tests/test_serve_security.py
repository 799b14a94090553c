"""Issue 58's security review of `kbgraph serve`, findings 2-7, each red on the code it reviewed: a real server
(uvicorn in this process) over embedded FalkorDB stores in the default layout (a folder and a server per
knowledge base), keys made in a keys file.

2. a ``read`` key cannot save a rationale (``"save": true`` writes into the graph: 403 naming ``write``);
3. a served knowledge base that does not exist is not made by ``/readyz`` or a read (404, no folder, no server);
4. no folder of the home (``bm25`` and the others of kbgraph.home) names a knowledge base (400; ConfigError in
   the CLI), and no module names a home folder but through kbgraph.home;
5. a JSON body that is not UTF-8, or a question with a lone surrogate, is a 4xx with a JSON body (never a 500);
6. a restricted key sees only its own jobs, and no absolute server path (job paths, document URIs, the store's
   location); an unrestricted key sees what it saw before;
7. ``serve_max_open_kbs`` bounds the store servers too (an evicted knowledge base's server stops), and an upload
   refused by its type is not kept in ``uploads/``.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
mcp = pytest.importorskip("mcp")

from kbgraph.cli import main  # noqa: E402
from kbgraph.home import HOME_FOLDERS  # noqa: E402
from kbgraph.kb import KnowledgeBase  # noqa: E402
from kbgraph.serve.access import add_key  # noqa: E402
from kbgraph.serve.app import create_app  # noqa: E402
from kbgraph.serve.kbs import KBPool  # noqa: E402
from kbgraph.serve.uploads import uploads_dir  # noqa: E402
from kbgraph.settings import Settings  # noqa: E402
from kbgraph.store.falkor_server import EmbeddedFalkorDB  # noqa: E402
from kbgraph.store.falkor_watchdog import WATCHDOG_CLIENT  # noqa: E402
from tests.serve_fixture import offline, running  # noqa: E402
from tests.test_serve_authz import raw  # noqa: E402

if TYPE_CHECKING:
    from httpx import Client

NOTE = "# Kentucky checks\n\nKentucky had 12,155 handgun checks in November 2015, says the NICS report.\n"
FERRY = "# Ferry\n\nThe ferry to Kilnsea leaves at 7 every morning.\n"
QUESTION = "How many handgun checks were there in Kentucky?"
REPO = Path(__file__).resolve().parent.parent

#: (settings of the home's ``default``, the allowed ingest root holding the notes)
Home = tuple[Settings, Path]
#: (settings with a keys file, {role: key})
Keyed = tuple[Settings, dict[str, str]]


def _h(key: str | None, **more: str) -> dict[str, str]:
    return {**({"Authorization": f"Bearer {key}"} if key else {}), **more}


def _redis_servers(home: Path, name: str | None = None) -> int:
    """redis-server processes of the embedded stores under ``home`` (of its folder ``name`` only, if given)."""
    needle = str(home / name if name else home).encode()
    count = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if b"redis-server" in cmd and needle in cmd:
            count += 1
    return count


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, falkor_home: Path, embed_cache_dir: Path) -> Iterator[Home]:
    """A home in the default layout holding ``default`` (a note) and ``other`` (a note); the model files shared
    with the session's home; the notes' folder is the server's one ingest root."""
    base = tmp_path_factory.mktemp("sechome")
    (base / "models").symlink_to(falkor_home / "models", target_is_directory=True)
    docs = tmp_path_factory.mktemp("secdocs")
    (docs / "kentucky.md").write_text(NOTE)
    (docs / "ferry.md").write_text(FERRY)
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
    for folder in base.iterdir():
        if (folder / "falkordb.log").exists():
            EmbeddedFalkorDB(folder).stop()


@pytest.fixture()
def keyed(home: Home, tmp_path: Path) -> Keyed:
    """``reader``: read on default and ghost; ``writer`` and ``writer2``: read and write on default; ``admin``:
    every right on every knowledge base."""
    settings, _ = home
    path = tmp_path / "keys.toml"
    made: dict[str, str] = {}
    for role, kbs, rights in (
        ("reader", ["default", "ghost"], ["read"]),
        ("writer", ["default"], ["read", "write"]),
        ("writer2", ["default"], ["read", "write"]),
        ("admin", ["*"], ["read", "write"]),
    ):
        made[role], _ = add_key(path, kbs=kbs, rights=rights, name=role)
    return settings.updated({"api_keys_file": path}), made


def _wait_job(c: Client, job_id: str, key: str | None, timeout: float = 300) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job: dict[str, Any] = c.get(f"/v1/jobs/{job_id}", headers=_h(key)).json()
        if job.get("status") in ("done", "failed") or time.monotonic() > deadline:
            return job
        time.sleep(0.2)


# --- 2. a read key writes into the graph -------------------------------------------------------------------------
def test_a_read_key_cannot_save_a_rationale(keyed: Keyed) -> None:
    settings, k = keyed
    ask = {"question": QUESTION, "save": True}
    with running(create_app(settings)) as url, httpx.Client(base_url=url, timeout=120) as c:
        before = c.get("/v1/kb/default/stats", headers=_h(k["admin"])).json()["nodes"].get("Question", 0)
        for body in (ask, {**ask, "stream": True}):
            r = c.post("/v1/kb/default/ask", json=body, headers=_h(k["reader"]))
            assert r.status_code == 403, r.text
            detail = r.json()["detail"]
            assert "'write'" in detail and '"save"' in detail, detail
        assert c.get("/v1/kb/default/stats", headers=_h(k["admin"])).json()["nodes"].get("Question", 0) == before
        # the same key may ask without saving; a key that may write saves
        assert c.post("/v1/kb/default/ask", json={"question": QUESTION}, headers=_h(k["reader"])).status_code == 200
        saved = c.post("/v1/kb/default/ask", json=ask, headers=_h(k["writer"]))
        assert saved.status_code == 200 and saved.json()["saved"], saved.text
        assert c.get("/v1/kb/default/stats", headers=_h(k["admin"])).json()["nodes"].get("Question", 0) == before + 1


# --- 3. a read creates the served knowledge base -----------------------------------------------------------------
def test_a_served_ghost_is_not_made_by_a_read(keyed: Keyed) -> None:
    settings, k = keyed
    base = settings.home
    app = create_app(settings.updated({"name": "ghost"}))
    with running(app) as url, httpx.Client(base_url=url, timeout=120) as c:
        for role in ("reader", "admin"):
            r = c.get("/readyz", headers=_h(k[role]))
            assert r.status_code == 200 and r.json()["status"] == "ready", (role, r.text)
        assert not (base / "ghost").exists() and _redis_servers(base, "ghost") == 0
        admin = c.get("/readyz", headers=_h(k["admin"])).json()
        assert admin["kb"] == "ghost" and admin["exists"] is False and "ghost" not in admin["open"], admin
        for path in ("documents", "stats", "browse/top_entities"):
            r = c.get(f"/v1/kb/ghost/{path}", headers=_h(k["reader"]))
            assert r.status_code == 404 and "no knowledge base 'ghost'" in r.json()["detail"], (path, r.text)
        r = c.post("/v1/kb/ghost/ask", json={"question": QUESTION}, headers=_h(k["reader"]))
        assert r.status_code == 404, r.text
        assert app.state.pool.names() == []
    assert not (base / "ghost").exists()
    assert _redis_servers(base, "ghost") == 0


# --- 4. reserved names -------------------------------------------------------------------------------------------
def test_home_folders_are_not_knowledge_base_names(home: Home, capsys: pytest.CaptureFixture[str]) -> None:
    settings, docs = home
    base = settings.home
    assert "bm25" in HOME_FOLDERS and "models" in HOME_FOLDERS
    with running(create_app(settings)) as url, httpx.Client(base_url=url, timeout=120) as c:
        for name in (*HOME_FOLDERS, "BM25", "Models"):
            r = c.get(f"/v1/kb/{name}/stats")
            assert r.status_code == 400 and "reserved" in r.json()["detail"], (name, r.text)
            up = c.post(f"/v1/kb/{name}/ingest", files=[("files", ("n.md", b"# n\n\nx\n"))])
            assert up.status_code == 400 and "reserved" in up.json()["detail"], (name, up.text)
            r = c.post(f"/v1/kb/{name}/ingest", json={"paths": [str(docs / "ferry.md")]})
            assert r.status_code == 400, (name, r.text)
    assert not (base / "bm25" / "uploads").exists() and not (base / "bm25" / "falkordb.log").exists()
    # the CLI: a ConfigError (exit 2) naming the reservation, nothing made
    assert main(["--home", str(base), "--kb", "bm25", "ingest", str(docs / "ferry.md")]) == 2
    err = capsys.readouterr().err
    assert "'bm25' cannot name a knowledge base" in " ".join(err.split()), err
    assert not (base / "bm25" / "falkordb.log").exists() and not (base / "bm25" / "uploads").exists()


def test_home_folders_are_named_in_one_place() -> None:
    """Every module names a folder of the home through kbgraph.home: no ``settings.home / "..."`` literal (a
    folder named there and not in HOME_FOLDERS would be a knowledge-base name again)."""
    literal = re.compile(r"(?<!self)\.home\s*/\s*[\"']|Path\(home\)\.expanduser\(\)\s*/\s*[\"']")
    found = [
        f"{path.relative_to(REPO)}:{n}"
        for folder in ("kbgraph", "query", "ingest")
        for path in sorted((REPO / folder).rglob("*.py"))
        if path.name != "home.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if literal.search(line)
    ]
    assert found == [], found


# --- 5. two inputs give a 500 ------------------------------------------------------------------------------------
def test_undecodable_bodies_and_lone_surrogates_are_4xx(home: Home) -> None:
    settings, _ = home
    json_h = {"Content-Type": "application/json"}
    with running(create_app(settings)) as url:
        for verb in ("ingest", "ask", "search"):
            for body in (b'{"question":"zebra \xff\xfe jam"}', b'{"paths":["zebra \xff\xfe jam"]}'):
                status, reply = raw(url, "POST", f"/v1/kb/default/{verb}", body=body, headers=json_h)
                assert status in (400, 422), (verb, body, status, reply)
                assert isinstance(reply, dict) and "detail" in reply, (verb, reply)
        for verb in ("search", "ask"):
            for text in ('"zebra \\udfff jam"', '"\\ud800"'):
                body = ('{"question": ' + text + "}").encode()
                status, reply = raw(url, "POST", f"/v1/kb/default/{verb}", body=body, headers=json_h)
                assert status in (400, 422), (verb, text, status, reply)
                assert isinstance(reply, dict) and "surrogate" in json.dumps(reply), (verb, reply)
        status, reply = raw(url, "POST", "/v1/kb/default/ingest", body=b'{"paths": ["\\ud800"]}', headers=json_h)
        assert status in (400, 422) and isinstance(reply, dict), (status, reply)


# --- 6. scoped keys see too much ---------------------------------------------------------------------------------
def _absolute(value: str) -> bool:
    return value.startswith(("/", "file:///"))


def test_scoped_keys_see_their_own_jobs_and_no_server_paths(keyed: Keyed) -> None:
    settings, k = keyed
    root = settings.serve.serve_ingest_roots[0]
    with running(create_app(settings)) as url, httpx.Client(base_url=url, timeout=120) as c:
        up = c.post(
            "/v1/kb/default/ingest",
            files=[("files", ("memo58.md", b"# Memo\n\nThe quay opens at 9.\n"))],
            headers=_h(k["writer"]),
        )
        assert up.status_code == 202 and up.json()["paths"] == ["memo58.md"], up.text
        done = _wait_job(c, up.json()["id"], k["writer"])
        assert done["status"] == "done" and done["report"]["added"] == 1, done
        assert [f["path"] for f in done["report"]["files"]] == ["memo58.md"], done["report"]["files"]
        # another restricted key of the same knowledge base: as if the job did not exist
        assert c.get(f"/v1/jobs/{up.json()['id']}", headers=_h(k["writer2"])).status_code == 404
        assert c.get(f"/v1/jobs/{up.json()['id']}", headers=_h(k["reader"])).status_code == 404
        # an unrestricted key: the job as before, server paths included
        admin_job = c.get(f"/v1/jobs/{up.json()['id']}", headers=_h(k["admin"])).json()
        assert admin_job["paths"] == [str(uploads_dir(settings) / "memo58.md")], admin_job
        # a path job: relative to the ingest root for its key
        path_job = c.post("/v1/kb/default/ingest", json={"paths": [str(root / "ferry.md")]}, headers=_h(k["writer"]))
        assert path_job.status_code == 202 and path_job.json()["paths"] == ["ferry.md"], path_job.text
        assert _wait_job(c, path_job.json()["id"], k["writer"])["status"] == "done"

        stats = c.get("/v1/kb/default/stats", headers=_h(k["reader"])).json()
        assert not _absolute(stats["location"]) and str(settings.home) not in json.dumps(stats), stats
        assert _absolute(c.get("/v1/kb/default/stats", headers=_h(k["admin"])).json()["location"])
        docs = c.get("/v1/kb/default/documents", headers=_h(k["reader"])).json()["documents"]
        assert docs and not any(_absolute(d["uri"]) for d in docs), docs
        assert {d["uri"] for d in docs} >= {"memo58.md", "ferry.md", "kentucky.md"}, docs
        admin_docs = c.get("/v1/kb/default/documents", headers=_h(k["admin"])).json()["documents"]
        assert all(d["uri"].startswith("file:///") for d in admin_docs), admin_docs
        # the other reads that carry a document's URI
        answer = c.post("/v1/kb/default/ask", json={"question": QUESTION}, headers=_h(k["reader"])).json()
        found = c.post("/v1/kb/default/search", json={"question": QUESTION}, headers=_h(k["reader"])).json()
        chunk = c.get(f"/v1/kb/default/chunks/{found['chunks'][0]['id']}", headers=_h(k["reader"])).json()
        rows = c.get("/v1/kb/default/browse/document", params={"document": "Kentucky"}, headers=_h(k["reader"]))
        for reply in (answer, found, chunk, rows.json()):
            assert str(settings.home) not in json.dumps(reply) and str(root) not in json.dumps(reply), reply
        assert answer["citations"] and not _absolute(answer["citations"][0]["document_uri"]), answer["citations"]

        async def over_mcp() -> None:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            client = create_mcp_http_client(headers=_h(k["reader"]))
            async with mcp.Client(
                streamable_http_client(f"{url}/mcp", http_client=client), read_timeout_seconds=120
            ) as m:
                listed = await m.call_tool("list_documents", {"kb": "default"})
                hits = await m.call_tool("search", {"question": QUESTION, "kb": "default"})
                for result in (listed, hits):
                    text = json.dumps([part.model_dump(mode="json") for part in result.content])
                    assert not result.is_error and str(settings.home) not in text and str(root) not in text, text

        asyncio.run(over_mcp())
        for d in admin_docs:
            if d["uri"].endswith(("memo58.md", "ferry.md")):
                assert c.delete(f"/v1/kb/default/documents/{d['id']}", headers=_h(k["admin"])).status_code == 200


# --- 7. open store servers and rejected uploads ------------------------------------------------------------------
def _watched(folder: Path, timeout: float = 60) -> None:
    """Wait until the idle watchdog of the embedded server of ``folder`` is connected to it (its first look)."""
    import redis

    client = redis.Redis(unix_socket_path=str(EmbeddedFalkorDB(folder).socket), socket_timeout=5)
    deadline = time.monotonic() + timeout
    try:
        while not any(c.get("name") == WATCHDOG_CLIENT for c in client.client_list()):
            assert time.monotonic() < deadline, f"no watchdog connected to the server of {folder}"
            time.sleep(0.5)
    finally:
        client.close()


def test_evicted_knowledge_bases_stop_their_servers(home: Home) -> None:
    settings, _ = home
    base = settings.home
    # servers started from here on have an idle watchdog (its own connection to the server is no user of it)
    settings = settings.updated({"serve_max_open_kbs": 2, "falkor_idle_timeout": 900})
    pool = KBPool(settings)
    names = ["default", "other", "extra58a", "extra58b"]
    try:
        for name in names:
            with pool.use(name, create=name.startswith("extra")) as kb:
                assert kb.stats().backend == "falkordb"
        deadline = time.monotonic() + 30
        while _redis_servers(base) > 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _redis_servers(base) <= 2, [n for n in names if _redis_servers(base, n)]
        assert sorted(pool.names()) == ["extra58a", "extra58b"]
        assert _redis_servers(base, "default") == 0 and _redis_servers(base, "other") == 0
        _watched(base / "extra58a")
        with pool.use("default") as kb:  # opened again: its server starts again, extra58a's (watched) is let go
            assert kb.stats().nodes["Document"] == 1
        deadline = time.monotonic() + 30
        while _redis_servers(base) > 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _redis_servers(base) <= 2 and _redis_servers(base, "extra58a") == 0
    finally:
        pool.close()
    # through the service: ingestion jobs into three new knowledge bases (each kept open once its job ends)
    with running(create_app(settings)) as url, httpx.Client(base_url=url, timeout=120) as c:
        for name in ("team58a", "team58b", "team58c"):
            r = c.post(f"/v1/kb/{name}/ingest", files=[("files", ("n.md", f"# {name}\n\nThe {name} note.\n".encode()))])
            assert r.status_code == 202 and _wait_job(c, r.json()["id"], None)["status"] == "done", r.text
        teams = ("team58a", "team58b", "team58c")  # (the first pool's servers stay up after its close: a shutdown)
        deadline = time.monotonic() + 30
        while sum(_redis_servers(base, n) for n in teams) > 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sum(_redis_servers(base, n) for n in teams) <= 2, [n for n in teams if _redis_servers(base, n)]
        assert c.get("/v1/kb/team58a/stats").json()["nodes"]["Document"] == 1  # evicted: opened (and started) again


def test_rejected_uploads_are_not_kept(home: Home) -> None:
    settings, _ = home
    folder = uploads_dir(settings)
    files = [
        ("evil.exe", b"MZ\x90\x00 not a document"),
        ("evil.zip", b"PK\x03\x04 an archive"),
        ("kept58.md", b"# Kept\n\nThe pier is 300 m long.\n"),
    ]
    with running(create_app(settings)) as url, httpx.Client(base_url=url, timeout=120) as c:
        r = c.post("/v1/kb/default/ingest", files=[("files", f) for f in files])
        assert r.status_code == 202, r.text
        job = _wait_job(c, r.json()["id"], None)
        assert job["status"] == "done" and job["report"]["added"] == 1, job
        outcomes = {Path(f["path"]).name: f for f in job["report"]["files"]}
        assert outcomes["kept58.md"]["outcome"] == "ingested", outcomes
        for name in ("evil.exe", "evil.zip"):  # refused by their type, with the CLI's reason
            assert outcomes[name]["outcome"] in ("failed", "skipped") and outcomes[name]["reason"], outcomes
        kept = {p.name for p in folder.iterdir()}
        assert "kept58.md" in kept and not kept & {"evil.exe", "evil.zip"}, kept
        doc = next(d for d in c.get("/v1/kb/default/documents").json()["documents"] if d["uri"].endswith("kept58.md"))
        assert c.delete(f"/v1/kb/default/documents/{doc['id']}").status_code == 200
        (folder / "kept58.md").unlink()
