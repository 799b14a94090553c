"""Issue 29, scoped API keys on a real `kbgraph serve` (uvicorn in this process, embedded FalkorDB): keys made by
`kbgraph serve keys add` (only their sha256 stored), each limited to knowledge bases (names, globs) and rights;
no key, an unknown and a revoked key are 401, a knowledge base or right outside the scope 403, over HTTP and over
the MCP endpoint; KBGRAPH_API_KEY keeps every right; `keys list` never shows a key."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
mcp = pytest.importorskip("mcp")

from kbgraph.cli import main  # noqa: E402
from kbgraph.kb import KnowledgeBase  # noqa: E402
from kbgraph.serve.app import create_app  # noqa: E402
from kbgraph.settings import Settings  # noqa: E402
from pydantic import SecretStr  # noqa: E402

from tests.serve_fixture import QUESTION, offline, running  # noqa: E402

MASTER = "master-key-29"
#: The keys fixture: settings with a keys file, and {role: key}.
Keys = tuple[Settings, dict[str, str]]


def _add(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["serve", "keys", "add", *args]) == 0
    return capsys.readouterr().out.strip()


NOTE = "# Kentucky checks\n\nKentucky had 12,155 handgun checks in November 2015, says the NICS report.\n"


@pytest.fixture(scope="module")
def kb_settings(falkor_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """A knowledge base of one small note; ingest roots: a folder holding a second note."""
    docs = tmp_path_factory.mktemp("keydocs")
    (docs / "kentucky.md").write_text(NOTE)
    (docs / "more.md").write_text("# Ferry\n\nThe ferry leaves at 7.\n")
    settings = offline(
        falkor_settings,
        name=f"team{uuid.uuid4().hex[:6]}",
        serve_ingest_roots=[docs],
        mcp_allow_ingest=True,
        api_key=SecretStr(MASTER),
    )
    with KnowledgeBase(settings=settings) as kb:
        kb.reset()
        assert kb.ingest([docs / "kentucky.md"], progress=False).added == 1
    yield settings
    with KnowledgeBase(settings=settings) as kb:
        kb.reset()


@pytest.fixture()
def keys(
    kb_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Keys:
    """(settings with a keys file, {role: key}) made through the CLI."""
    path = tmp_path / "keys.toml"
    monkeypatch.setenv("KBGRAPH_API_KEYS_FILE", str(path))
    made = {
        "reader": _add(capsys, "--kb", kb_settings.name, "--rights", "read", "--name", "reader"),
        "writer": _add(capsys, "--kb", "team*", "--rights", "read,write", "--name", "writer"),
        "other": _add(capsys, "--kb", "other-kb", "--kb", "x-*", "--rights", "read,write", "--name", "other"),
        "gone": _add(capsys, "--kb", "*", "--rights", "read,write", "--name", "gone"),
    }
    text = path.read_text()
    assert all(key.startswith("kbg_") and key not in text for key in made.values())  # hashes only
    assert main(["serve", "keys", "list"]) == 0
    listing = capsys.readouterr().out
    assert "reader" in listing and "writer" in listing and not any(k in listing for k in made.values())
    return kb_settings.updated({"api_keys_file": path}), made


def _h(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


def test_http_scopes(keys: Keys, capsys: pytest.CaptureFixture[str]) -> None:
    settings, k = keys
    kb = f"/v1/kb/{settings.name}"
    senate = {"paths": [str(settings.serve.serve_ingest_roots[0] / "more.md")]}
    with running(create_app(settings)) as url, httpx.Client(base_url=url, timeout=120) as c:
        ask = {"question": QUESTION, "k": 2}
        # no key, an unknown key: 401
        assert c.post(f"{kb}/ask", json=ask).status_code == 401
        assert c.post(f"{kb}/ask", json=ask, headers=_h("kbg_nope")).status_code == 401
        assert c.get("/openapi.json").status_code == 401 and c.get("/healthz").status_code == 200
        # read key: reads its knowledge base, cannot write it
        assert c.post(f"{kb}/ask", json=ask, headers=_h(k["reader"])).status_code == 200
        assert c.get(f"{kb}/documents", headers=_h(k["reader"])).status_code == 200
        before = c.get(f"{kb}/stats", headers=_h(k["reader"])).json()
        r = c.post(f"{kb}/ingest", json=senate, headers=_h(k["reader"]))
        assert r.status_code == 403 and "'write'" in r.json()["detail"], r.text
        up = c.post(f"{kb}/ingest", files=[("files", ("n.md", b"# n\n\nx\n"))], headers=_h(k["reader"]))
        assert up.status_code == 403, up.text
        doc = c.get(f"{kb}/documents", headers=_h(k["reader"])).json()["documents"][0]["id"]
        assert c.delete(f"{kb}/documents/{doc}", headers=_h(k["reader"])).status_code == 403
        assert c.get(f"{kb}/stats", headers=_h(k["reader"])).json() == before
        # wrong knowledge base: 403 naming the scope, for reads and writes
        for method, path, body in (("POST", "ask", ask), ("GET", "documents", None), ("POST", "ingest", senate)):
            r = c.request(method, f"{kb}/{path}", json=body, headers=_h(k["other"]))
            assert r.status_code == 403 and "may not use" in r.json()["detail"], (path, r.text)
        assert c.get("/v1/kb/someone-else/documents", headers=_h(k["reader"])).status_code == 403
        # write key over a glob: ingests; its job is visible to it, not to a key of other knowledge bases
        job = c.post(f"{kb}/ingest", json=senate, headers=_h(k["writer"]))
        assert job.status_code == 202, job.text
        assert c.get(f"/v1/jobs/{job.json()['id']}", headers=_h(k["other"])).status_code == 404
        assert c.get(f"/v1/jobs/{job.json()['id']}", headers=_h(k["writer"])).status_code == 200
        # KBGRAPH_API_KEY: every right everywhere
        assert c.post(f"{kb}/ask", json=ask, headers=_h(MASTER)).status_code == 200
        assert c.get("/v1/kb/someone-else/stats", headers=_h(MASTER)).status_code in (200, 404)
        # revoked while the server runs: 401 from the next request
        assert c.post(f"{kb}/ask", json=ask, headers=_h(k["gone"])).status_code == 200
        assert main(["serve", "keys", "revoke", "gone"]) == 0
        assert c.post(f"{kb}/ask", json=ask, headers=_h(k["gone"])).status_code == 401
        capsys.readouterr()


def test_mcp_scopes(keys: Keys) -> None:
    settings, k = keys
    name = settings.name
    more = str(settings.serve.serve_ingest_roots[0] / "more.md")

    def client(url: str, key: str | None) -> Any:  # an mcp Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        transport = streamable_http_client(f"{url}/mcp", http_client=create_mcp_http_client(headers=_h(key)))
        return mcp.Client(transport, read_timeout_seconds=120)

    async def _refused(url: str, key: str | None) -> None:
        """The SDK client cannot open a session: the endpoint answers 401 (seen on the raw request)."""
        with pytest.raises(Exception):  # noqa: B017 - the SDK wraps the HTTP error in task-group errors
            async with client(url, key) as c:
                await c.list_tools()
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        }
        raw = httpx.post(f"{url}/mcp", json=hello, headers={**_h(key), "Accept": "application/json, text/event-stream"})
        assert raw.status_code == 401, raw.text

    async def main_(url: str) -> None:
        async with client(url, k["reader"]) as c:
            ok = await c.call_tool("search", {"question": QUESTION, "k": 1, "kb": name})
            assert not ok.is_error, ok.content
            wrong = await c.call_tool("list_documents", {"kb": "someone-else"})
            assert wrong.is_error and "may not use" in wrong.content[0].text, wrong.content
            write = await c.call_tool("ingest", {"paths": [more], "kb": name})
            assert write.is_error and "'write'" in write.content[0].text, write.content
        async with client(url, k["other"]) as c:
            wrong = await c.call_tool("ask", {"question": QUESTION, "kb": name})
            assert wrong.is_error and "may not use" in wrong.content[0].text, wrong.content
        async with client(url, k["writer"]) as c:
            job = await c.call_tool("ingest", {"paths": [more], "kb": name})
            assert not job.is_error, job.content
        for key in (None, "kbg_nope"):
            await _refused(url, key)

    with running(create_app(settings)) as url:
        asyncio.run(main_(url))
        assert main(["serve", "keys", "revoke", "reader"]) == 0

        asyncio.run(_refused(url, k["reader"]))
