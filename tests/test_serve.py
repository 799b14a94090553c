"""`kbgraph serve` (issue 16 §1): a real uvicorn server on 127.0.0.1 over a knowledge base built from
examples/docs, called with httpx on both stores; the guard (API key, request size, knowledge-base names) and the
refusal to bind off loopback without a key; 32 concurrent asks and 2 concurrent ingest jobs; uploaded files
(bad ones reported as the CLI does, a re-upload updates, hostile names 400, over the limit 413)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kbgraph.settings import Settings

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from kbgraph.kb import KnowledgeBase  # noqa: E402
from kbgraph.serve.app import create_app  # noqa: E402
from kbgraph.serve.uploads import uploads_dir  # noqa: E402
from tests.backends import BACKENDS  # noqa: E402
from tests.serve_fixture import NICS, QUESTION, SENATE, build_kb, free_port, offline, running  # noqa: E402

if TYPE_CHECKING:
    from httpx import Client, Response


UPLOAD_LIMIT = 262_144


#: (base URL, settings, backend)
Served = tuple[str, Settings, str]


@pytest.fixture(scope="module", params=BACKENDS)
def served(request: pytest.FixtureRequest, falkor_settings: Settings, examples_dir: Path) -> Iterator[Served]:
    """(base URL, settings, backend) of a server over a KB holding the NICS report."""
    if request.param == "falkordb":
        settings = offline(
            falkor_settings,
            name=f"srv{uuid.uuid4().hex[:8]}",
            max_request_bytes=65536,
            max_upload_bytes=UPLOAD_LIMIT,
            serve_ingest_roots=[examples_dir],
        )
    else:
        settings = offline(
            request.getfixturevalue("neo4j_settings"),
            max_request_bytes=65536,
            max_upload_bytes=UPLOAD_LIMIT,
            serve_ingest_roots=[examples_dir],
        )
    build_kb(settings, examples_dir)
    with running(create_app(settings)) as url:
        yield url, settings, request.param
    with KnowledgeBase(settings=settings) as kb:
        kb.reset()


def _wait_job(client: Client, job_id: str, timeout: float = 300) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()
        if job["status"] in ("done", "failed") or time.monotonic() > deadline:
            return job
        time.sleep(0.3)


def test_every_endpoint(served: Served, examples_dir: Path) -> None:
    url, settings, backend = served
    kb = f"/v1/kb/{settings.name}"
    with httpx.Client(base_url=url, timeout=120) as c:
        assert c.get("/healthz").json() == {"status": "ok"}
        ready = c.get("/readyz")
        assert ready.status_code == 200 and ready.json()["backend"] == backend
        assert c.get("/docs").status_code == 200 and "/v1/kb/{name}/ask" in c.get("/openapi.json").json()["paths"]

        docs = c.get(f"{kb}/documents").json()["documents"]
        assert [d["status"] for d in docs] == ["complete"] and docs[0]["chunks"] > 0
        stats = c.get(f"{kb}/stats").json()
        assert stats["backend"] == backend and stats["nodes"]["Document"] == 1

        found = c.post(f"{kb}/search", json={"question": QUESTION, "k": 3}).json()
        assert 1 <= len(found["chunks"]) <= 3 and found["chunks"][0]["document_id"] == docs[0]["id"]
        answer = c.post(f"{kb}/ask", json={"question": QUESTION, "explain": True}).json()
        assert answer["retrieval_only"] and "12,155" in answer["answer"] and answer["citations"]
        assert answer["chunks"][0]["breakdown"]
        cited = answer["citations"][0]["chunk_id"]
        chunk = c.get(f"{kb}/chunks/{cited}").json()
        assert chunk["id"] == cited and chunk["text"] and chunk["document_id"] == docs[0]["id"]
        assert c.get(f"{kb}/chunks/no-such-chunk").status_code == 404

        # library errors -> 4xx with the library's message
        bad = c.post(f"{kb}/ask", json={"question": QUESTION, "method": "no-such-method"})
        assert bad.status_code == 400 and "no-such-method" in bad.json()["detail"]
        assert c.post(f"{kb}/ask", json={"question": "   "}).status_code == 400
        assert c.post(f"{kb}/search", json={"question": QUESTION, "method": "no-such-method"}).status_code == 400
        streamed = c.post(f"{kb}/ask", json={"question": QUESTION, "stream": True})  # SSE: tests/test_stream.py
        assert streamed.status_code == 200 and streamed.headers["content-type"].startswith("text/event-stream")
        assert "event: answer" in streamed.text and streamed.text.rstrip().endswith("data: {}")
        assert c.post(f"{kb}/ask", json={}).status_code == 422

        rows = c.get(f"{kb}/browse/document", params={"document": "NICS", "limit": 2}).json()["rows"]
        assert rows and all("embedding" not in str(r) for r in rows)
        assert c.get(f"{kb}/browse/no-such-query").status_code == 400
        assert c.get(f"{kb}/browse/document", params={"nope": 1}).status_code == 400

        # ingest a second document as a job, then delete it
        job = c.post(f"{kb}/ingest", json={"paths": [str(examples_dir / SENATE)]})
        assert job.status_code == 202
        done = _wait_job(c, job.json()["id"])
        assert done["status"] == "done" and done["report"]["added"] == 1, done
        assert len(c.get(f"{kb}/documents").json()["documents"]) == 2
        senate = next(d["id"] for d in c.get(f"{kb}/documents").json()["documents"] if d["id"] != docs[0]["id"])
        gone = c.delete(f"{kb}/documents/{senate}")
        assert gone.status_code == 200 and gone.json()["deleted"]["documents"] == 1
        assert c.delete(f"{kb}/documents/{senate}").status_code == 404
        assert c.get("/v1/jobs/no-such-job").status_code == 404

        if backend == "neo4j":  # one database per KB: Community hosts one
            other = c.get("/v1/kb/another-kb/documents")
            assert other.status_code == 404 and "Neo4j" in other.json()["detail"], other.text


def test_concurrent_asks_and_ingest_jobs(served: Served, examples_dir: Path) -> None:
    url, settings, _ = served
    kb = f"/v1/kb/{settings.name}"
    with httpx.Client(base_url=url, timeout=300, limits=httpx.Limits(max_connections=40)) as c:
        jobs = [c.post(f"{kb}/ingest", json={"paths": [str(examples_dir / f)]}).json()["id"] for f in (NICS, SENATE)]

        def ask(i: int) -> tuple[int, Any]:
            r = c.post(f"{kb}/ask", json={"question": f"{QUESTION} ({i})", "k": 2})
            return r.status_code, r.json()

        with ThreadPoolExecutor(32) as pool:
            results = list(pool.map(ask, range(32)))
        assert all(code == 200 and body["citations"] for code, body in results), results[0]
        finished = [_wait_job(c, j) for j in jobs]
        assert [j["status"] for j in finished] == ["done", "done"], finished
        first, second = finished
        assert first["report"]["unchanged"] == 1 and second["report"]["added"] == 1
        assert first["finished_at"] <= second["started_at"]  # one job at a time per knowledge base
        docs = c.get(f"{kb}/documents").json()["documents"]
        assert len(docs) == 2 and {d["status"] for d in docs} == {"complete"}


# (a bare ".." segment is resolved by the client before sending: /v1/kb/../x is /v1/x)
HOSTILE = ["..%2Fx", "%2Fetc%2Fx", "%2Fx", "a%00b", "a%5Cb", ".hidden", "x" * 65, "a..b", "%2E%2E"]


def test_hostile_names_are_400_and_create_nothing(served: Served, falkor_home: Path) -> None:
    url, settings, backend = served
    if backend != "falkordb":
        pytest.skip("names become folders on the embedded store")
    before = sorted(p.name for p in falkor_home.iterdir())
    with httpx.Client(base_url=url, timeout=30) as c:
        for name in HOSTILE:
            for method, path, body in (
                ("GET", "documents", None),
                ("POST", "ask", {"question": "x"}),
                ("POST", "ingest", {"paths": ["/etc/hostname"]}),
            ):
                r = c.request(method, f"/v1/kb/{name}/{path}", json=body)
                assert r.status_code == 400, (name, path, r.status_code, r.text)
        assert c.get("/v1/kb//stats").status_code == 400
    assert sorted(p.name for p in falkor_home.iterdir()) == before
    assert not (falkor_home.parent / "x").exists() and not (falkor_home / "x").exists()


def test_request_size_limit(served: Served) -> None:
    url, settings, _ = served
    with httpx.Client(base_url=url, timeout=30) as c:
        big = c.post(f"/v1/kb/{settings.name}/ask", json={"question": "x" * 70_000})
        assert big.status_code == 413 and "65,536" in big.json()["detail"]

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            for _ in range(20):
                yield b"x" * 8192

        json_body = {"Content-Type": "application/json"}
        assert c.post(f"/v1/kb/{settings.name}/ask", content=chunks(), headers=json_body).status_code == 413


NOTE = "# Kilnsea lighthouse log\n\nThe keeper of the Kilnsea lighthouse counted {n} ships passing on 3 May 1921.\n"


def _upload(c: Client, kb: str, *files: tuple[str, bytes]) -> Response:
    return c.post(f"{kb}/ingest", files=[("files", (name, data)) for name, data in files])


def _raw_upload(c: Client, kb: str, filename: bytes, chunks: Iterable[bytes]) -> Response:
    """A multipart body written by hand (``filename`` as raw bytes: httpx would escape a NUL), sent chunked
    when ``chunks`` is a generator."""
    head = b'--kbgb\r\nContent-Disposition: form-data; name="files"; filename="' + filename + b'"\r\n\r\n'

    def body() -> Iterator[bytes]:
        yield head
        yield from chunks
        yield b"\r\n--kbgb--\r\n"

    return c.post(f"{kb}/ingest", content=body(), headers={"content-type": "multipart/form-data; boundary=kbgb"})


def test_uploaded_files(served: Served, examples_dir: Path) -> None:
    """Upload 2 readable files + a corrupt PDF + an empty file: the job ends done with 2 documents added and the
    bad ones in its report with the CLI's messages; a re-upload of a name updates its document; hostile names
    are 400 and over the size limit 413, with nothing written."""
    url, settings, _ = served
    kb, folder = f"/v1/kb/{settings.name}", uploads_dir(settings)
    senate = (examples_dir / SENATE).read_bytes()
    with httpx.Client(base_url=url, timeout=120) as c:
        before = {d["id"] for d in c.get(f"{kb}/documents").json()["documents"]}
        r = _upload(
            c,
            kb,
            ("senate.pdf", senate),
            ("lighthouse.md", NOTE.format(n=41).encode()),
            ("broken.pdf", b"%PDF-1.7 garbage"),
            ("empty.txt", b""),
        )
        assert r.status_code == 202, r.text
        job = _wait_job(c, r.json()["id"])
        assert job["status"] == "done", job
        report = job["report"]
        assert report["added"] == 2 and report["failed"] + report["skipped"] == 2, report
        outcomes = {Path(f["path"]).name: f for f in report["files"]}
        assert {outcomes[n]["outcome"] for n in ("senate.pdf", "lighthouse.md")} == {"ingested"}
        broken, empty = outcomes["broken.pdf"], outcomes["empty.txt"]
        assert broken["outcome"] in ("failed", "skipped") and "corrupt PDF broken.pdf" in broken["reason"], broken
        assert empty["outcome"] in ("failed", "skipped") and "empty file (0 bytes)" in empty["reason"], empty
        assert sorted(p.name for p in folder.iterdir()) == ["broken.pdf", "empty.txt", "lighthouse.md", "senate.pdf"]
        docs = c.get(f"{kb}/documents").json()["documents"]
        uploaded = [d for d in docs if d["id"] not in before]
        assert len(uploaded) == 2 and all(d["uri"].startswith(folder.resolve().as_uri()) for d in uploaded), docs

        # the same name again, changed: the same document, updated (not a second one)
        again = _wait_job(c, _upload(c, kb, ("lighthouse.md", NOTE.format(n=57).encode())).json()["id"])
        assert again["status"] == "done" and again["report"]["updated"] == 1 and again["report"]["added"] == 0, again
        assert len(c.get(f"{kb}/documents").json()["documents"]) == len(docs)
        found = c.post(f"{kb}/search", json={"question": "How many ships did the Kilnsea keeper count?", "k": 1})
        assert "57 ships" in found.json()["chunks"][0]["text"]

        # hostile or bad names: 400, nothing written (here or anywhere)
        listing = sorted(p.name for p in folder.iterdir())
        up_and_out = os.path.join(os.pardir, os.pardir, "etc", "x.txt")
        for name in (up_and_out, "a/b.txt", "a\\b.txt", ".hidden.txt", "..", "", "x" * 256 + ".txt"):
            r = _upload(c, kb, (name, b"hostile"))
            assert r.status_code == 400, (name, r.status_code, r.text)
        assert _raw_upload(c, kb, b"a\x00b.pdf", [b"%PDF-1.7 x"]).status_code == 400
        assert _upload(c, kb, ("twice.txt", b"a"), ("twice.txt", b"b")).status_code == 400
        assert c.post(f"{kb}/ingest", data={"wait": "true"}, files={"other": ("f.txt", b"x")}).status_code == 400
        assert sorted(p.name for p in folder.iterdir()) == listing
        assert not list(settings.home.rglob("x.txt")) and not list(settings.home.rglob("b.txt"))
        assert not (folder.parent.parent / "etc").exists() and not (folder.parent / "b.txt").exists()

        # over the upload limit: 413 by Content-Length, and while a chunked body streams; no partial file
        big = c.post(f"{kb}/ingest", files=[("files", ("big.txt", b"x" * (UPLOAD_LIMIT + 1)))])
        assert big.status_code == 413 and "KBGRAPH_MAX_UPLOAD_BYTES" in big.json()["detail"], big.text
        streamed = _raw_upload(c, kb, b"big.txt", (b"x" * 8192 for _ in range((UPLOAD_LIMIT + 65536) // 8192)))
        assert streamed.status_code == 413, streamed.text
        assert sorted(p.name for p in folder.iterdir()) == listing  # no big.txt, no hidden .part file

        for d in uploaded:  # leave the knowledge base as the other tests expect it
            assert c.delete(f"{kb}/documents/{d['id']}").status_code == 200
    shutil.rmtree(folder)


def test_off_loopback_needs_a_key(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from kbgraph.cli import main

    monkeypatch.delenv("KBGRAPH_API_KEY", raising=False)
    assert main(["serve", "--host", "0.0.0.0", "--port", str(free_port())]) == 2
    assert "KBGRAPH_API_KEY" in capsys.readouterr().err


def test_api_key_with_the_real_command(tmp_path: Path) -> None:
    """`kbgraph serve --host 0.0.0.0` with KBGRAPH_API_KEY: 401 without or with a wrong bearer, 200 with it."""
    port = free_port()
    env = {**os.environ, "KBGRAPH_API_KEY": "s3cret-key", "KBGRAPH_HOME": str(tmp_path)}
    exe = os.path.join(os.path.dirname(sys.executable), "kbgraph")
    proc = subprocess.Popen(
        [exe, "serve", "--host", "0.0.0.0", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                assert httpx.get(f"{base}/healthz", timeout=2).status_code == 200  # open: liveness only
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode()  # type: ignore[union-attr]
                time.sleep(0.2)
        assert httpx.get(f"{base}/openapi.json").status_code == 401
        wrong = httpx.get(f"{base}/openapi.json", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
        assert httpx.get(f"{base}/openapi.json", headers={"Authorization": "Bearer s3cret-key"}).status_code == 200
        assert httpx.post(f"{base}/mcp", json={}).status_code == 401  # the MCP endpoint is behind the same key
    finally:
        proc.terminate()
        proc.wait(30)
    assert not any(tmp_path.iterdir())  # nothing was opened
