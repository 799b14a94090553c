"""Issue 29 on a real `kbgraph serve` (uvicorn in this process, embedded FalkorDB): ingest roots — a path outside
`serve_ingest_roots` (plainly, by `..`, by a symbolic link, by a link inside an allowed folder, by an upload name)
is refused and never opened (an audit hook records every open of the secret file), with the knowledge base's
stats unchanged; with no roots, path ingestion is off and uploads still work; the MCP `ingest` tool obeys the
same."""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")

from kbgraph.kb import KnowledgeBase  # noqa: E402
from kbgraph.serve.app import create_app  # noqa: E402
from kbgraph.settings import Settings  # noqa: E402
from tests.serve_fixture import offline, running  # noqa: E402

SECRET_WORD = "Quokkazanzibar"
SECRET = f"# Private memo\n\nThe vault code word is {SECRET_WORD}, known to the owner alone.\n"
ALLOWED = "# Lighthouse\n\nThe Kilnsea lighthouse keeper counted 41 ships on 3 May 1921.\n"

#: Every path the test process opened (the server and its ingestion jobs run in this process).
OPENED: list[str] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.fsdecode(args[0])
        if "kbg29-outside" in path:
            OPENED.append(path)


sys.addaudithook(_audit)


#: The tree fixture: (the allowed root, the folder outside it).
Tree = tuple[Path, Path]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Tree:
    """``root/`` (allowed: a note, a link to the secret, ``sub/`` holding a link to it) and ``kbg29-outside/``
    (the secret)."""
    base = tmp_path_factory.mktemp("roots")
    root, outside = base / "root", base / "kbg29-outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    secret = outside / "secret.md"
    secret.write_text(SECRET)
    (root / "lighthouse.md").write_text(ALLOWED)
    (root / "link.md").symlink_to(secret)
    (root / "sub" / "inner.md").symlink_to(secret)
    (root / "sub" / "outdir").symlink_to(outside, target_is_directory=True)
    return root, outside


@pytest.fixture(scope="module")
def kb_settings(falkor_settings: Settings, tmp_path_factory: pytest.TempPathFactory, tree: Tree) -> Iterator[Settings]:
    """A knowledge base of one small note, served with ``serve_ingest_roots`` = the tree's root."""
    note = tmp_path_factory.mktemp("accdocs") / "ferry.md"
    note.write_text("# Ferry\n\nThe ferry to Kilnsea leaves at 7 every morning.\n")
    settings = offline(falkor_settings, name=f"acc{uuid.uuid4().hex[:8]}", serve_ingest_roots=[tree[0]])
    with KnowledgeBase(settings=settings) as kb:
        kb.reset()
        assert kb.ingest([note], progress=False).added == 1
    yield settings
    with KnowledgeBase(settings=settings) as kb:
        kb.reset()


def _wait_job(c: Any, job_id: str, timeout: float = 300) -> dict[str, Any]:  # c: an httpx client
    deadline = time.monotonic() + timeout
    while True:
        job: dict[str, Any] = c.get(f"/v1/jobs/{job_id}").json()
        if job["status"] in ("done", "failed") or time.monotonic() > deadline:
            return job
        time.sleep(0.2)


def _not_leaked(c: Any, kb: str, stats_before: dict[str, Any]) -> None:
    assert not OPENED, OPENED
    assert c.get(f"{kb}/stats").json() == stats_before
    hits = c.post(f"{kb}/search", json={"question": f"What is the vault code word {SECRET_WORD}?", "k": 5}).json()
    assert all(SECRET_WORD not in ch["text"] for ch in hits["chunks"])


def test_paths_outside_the_roots_are_403_and_never_read(kb_settings: Settings, tree: Tree) -> None:
    root, outside = tree
    kb = f"/v1/kb/{kb_settings.name}"
    with running(create_app(kb_settings)) as url, httpx.Client(base_url=url, timeout=120) as c:
        before = c.get(f"{kb}/stats").json()
        hostile = [
            str(outside / "secret.md"),  # plainly outside
            str(outside),  # its folder
            f"{root}/../kbg29-outside/secret.md",  # `..` out of the root
            str(root / "link.md"),  # a symbolic link inside the root, pointing outside
            str(root / "sub" / "outdir"),  # a link to the outside folder
            "/etc/hostname",
        ]
        for path in hostile:
            r = c.post(f"{kb}/ingest", json={"paths": [path]})
            assert r.status_code == 403, (path, r.status_code, r.text)
            assert "serve_ingest_roots" in r.json()["detail"], r.text
        # one bad path among good ones: the whole request refused, nothing queued
        mixed = c.post(f"{kb}/ingest", json={"paths": [str(root / "lighthouse.md"), str(outside / "secret.md")]})
        assert mixed.status_code == 403
        # an upload named with ../ : 400, nothing written or read
        up_and_out = os.path.join(os.pardir, outside.name, "secret.md")  # (os.pardir: see tests/test_repo_only.py)
        up = c.post(f"{kb}/ingest", files=[("files", (up_and_out, b"overwrite"))])
        assert up.status_code == 400, up.text
        assert (outside / "secret.md").read_text() == SECRET
        OPENED.clear()  # (the line above is the test's own read)
        _not_leaked(c, kb, before)

        # the root folder itself: its own file is ingested, the links inside it that lead outside are skipped
        job = _wait_job(c, c.post(f"{kb}/ingest", json={"paths": [str(root)]}).json()["id"])
        assert job["status"] == "done" and job["report"]["added"] == 1, job
        skipped = {
            os.path.basename(f["path"]): f["reason"] for f in job["report"]["files"] if f["outcome"] == "skipped"
        }
        assert {"link.md", "inner.md", "outdir"} <= set(skipped), job["report"]["files"]
        assert all("serve_ingest_roots" in reason for reason in skipped.values()), skipped
        assert not OPENED, OPENED
        titles = [d["uri"] for d in c.get(f"{kb}/documents").json()["documents"]]
        assert any(u.endswith("lighthouse.md") for u in titles) and not any("secret" in u for u in titles), titles
        hits = c.post(f"{kb}/search", json={"question": f"What is the vault code word {SECRET_WORD}?", "k": 5}).json()
        assert all(SECRET_WORD not in ch["text"] for ch in hits["chunks"])


def test_no_roots_turns_path_ingestion_off_uploads_still_work(kb_settings: Settings, tree: Tree) -> None:
    root, _ = tree
    settings = kb_settings.updated({"serve_ingest_roots": []})
    kb = f"/v1/kb/{settings.name}"
    with running(create_app(settings)) as url, httpx.Client(base_url=url, timeout=120) as c:
        before = c.get(f"{kb}/stats").json()
        r = c.post(f"{kb}/ingest", json={"paths": [str(root / "lighthouse.md")]})
        assert r.status_code == 403 and "serve_ingest_roots" in r.json()["detail"], r.text
        assert c.get(f"{kb}/stats").json() == before
        up = c.post(f"{kb}/ingest", files=[("files", ("memo29.md", b"# Memo\n\nThe ferry leaves at 7.\n"))])
        assert up.status_code == 202, up.text
        job = _wait_job(c, up.json()["id"])
        assert job["status"] == "done" and job["report"]["added"] == 1, job
        memo = next(d for d in c.get(f"{kb}/documents").json()["documents"] if d["uri"].endswith("memo29.md"))
        assert c.delete(f"{kb}/documents/{memo['id']}").status_code == 200


def test_mcp_ingest_obeys_the_roots(kb_settings: Settings, tree: Tree) -> None:
    mcp = pytest.importorskip("mcp")
    root, outside = tree
    app = create_app(kb_settings.updated({"mcp_allow_ingest": True}))

    async def main(url: str) -> None:
        async with mcp.Client(f"{url}/mcp", read_timeout_seconds=120) as client:
            for path in (str(outside / "secret.md"), f"{root}/../kbg29-outside/secret.md", str(root / "link.md")):
                result = await client.call_tool("ingest", {"paths": [path], "kb": kb_settings.name})
                assert result.is_error and "serve_ingest_roots" in result.content[0].text, result.content

    with running(app) as url:
        asyncio.run(main(url))
    assert not OPENED, OPENED
