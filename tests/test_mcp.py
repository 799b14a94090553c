"""The MCP server (issue 16 §2) with the official SDK's client: over stdio (`kbgraph mcp`, a real subprocess) and
over streamable HTTP (`/mcp` of a real uvicorn server); the tools are listed and called on a knowledge base built
from examples/docs on the embedded store."""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp")
pytest.importorskip("fastapi")

from kbgraph.serve.app import create_app  # noqa: E402
from kbgraph.settings import Settings  # noqa: E402
from tests.serve_fixture import QUESTION, SENATE, build_kb, offline, running  # noqa: E402

READ_ONLY = {"ask", "search", "get_chunk", "browse", "list_documents"}


@pytest.fixture(scope="module")
def kb_settings(falkor_settings: Settings, examples_dir: Path) -> Settings:
    settings = offline(falkor_settings, name=f"mcp{uuid.uuid4().hex[:8]}", serve_ingest_roots=[examples_dir])
    build_kb(settings, examples_dir)
    return settings


async def _call(client: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:  # client: an mcp ClientSession
    result = await client.call_tool(tool, args)
    assert not result.is_error, (tool, result.content)
    content: dict[str, Any] = result.structured_content
    return content


async def _read_tools(client: Any, kb: str | None) -> dict[str, Any]:
    """List the tools and call each read-only one; every description says what it returns and costs."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert READ_ONLY <= set(tools)
    assert all("Returns" in tools[n].description and "Cost" in tools[n].description for n in READ_ONLY)
    scope = {"kb": kb} if kb else {}
    docs = (await _call(client, "list_documents", scope))["result"]
    assert len(docs) == 1 and docs[0]["status"] == "complete"
    chunks = (await _call(client, "search", {"question": QUESTION, "k": 2, **scope}))["result"]
    assert chunks and chunks[0]["document_id"] == docs[0]["id"]
    answer = await _call(client, "ask", {"question": QUESTION, **scope})
    assert "12,155" in answer["answer"] and answer["citations"]
    chunk = await _call(client, "get_chunk", {"chunk_id": answer["citations"][0]["chunk_id"], **scope})
    assert chunk["text"] and chunk["document_title"] == docs[0]["title"]
    rows = await _call(client, "browse", {"query": "document", "params": {"limit": 1}, **scope})
    assert rows["rows"]
    bad = await client.call_tool("ask", {"question": QUESTION, "method": "no-such-method", **scope})
    assert bad.is_error and "no-such-method" in bad.content[0].text
    return tools


def test_stdio(kb_settings: Settings, tmp_path: Path) -> None:
    """`kbgraph --kb NAME mcp` over stdio: read-only (no ingest tool by default)."""
    s = kb_settings
    env = {
        "KBGRAPH_HOME": str(s.home),
        "KBGRAPH_DATA_DIR": str(s.store.data_dir),
        "KBGRAPH_NAME": s.name,
        "KBGRAPH_EMBEDDING_CACHE_DIR": str(s.embedding.embedding_cache_dir),
        "KBGRAPH_FALKOR_IDLE_TIMEOUT": "0",
        # the session's static model (tests/conftest.py): distilling another would outlast the read timeout
        "KBGRAPH_STATIC_MODELS_DIR": os.environ["KBGRAPH_STATIC_MODELS_DIR"],
        "DO_NOT_TRACK": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    exe = os.path.join(os.path.dirname(sys.executable), "kbgraph")
    params = mcp.StdioServerParameters(command=exe, args=["mcp"], env=env, cwd=str(tmp_path))

    async def main() -> None:
        async with mcp.Client(params, read_timeout_seconds=120) as client:
            tools = await _read_tools(client, None)
            assert "ingest" not in tools

    asyncio.run(main())


def test_streamable_http_with_ingest(kb_settings: Settings, examples_dir: Path) -> None:
    """`/mcp` on `kbgraph serve`, with mcp_allow_ingest: the `ingest` tool queues a job and reports it."""
    app = create_app(kb_settings.updated({"mcp_allow_ingest": True}))

    async def main(url: str) -> None:
        async with mcp.Client(f"{url}/mcp", read_timeout_seconds=120) as client:
            tools = await _read_tools(client, kb_settings.name)
            assert "ingest" in tools
            job = await _call(client, "ingest", {"paths": [str(examples_dir / SENATE)], "kb": kb_settings.name})
            deadline = time.monotonic() + 300
            while job["status"] not in ("done", "failed") and time.monotonic() < deadline:
                await asyncio.sleep(0.3)
                job = await _call(client, "ingest", {"job_id": job["id"]})
            assert job["status"] == "done" and job["report"]["added"] == 1, job
            docs = (await _call(client, "list_documents", {"kb": kb_settings.name}))["result"]
            assert len(docs) == 2

    with running(app) as url:
        asyncio.run(main(url))
