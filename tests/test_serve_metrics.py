"""`kbgraph serve` for operators and for the web app's passage view (issue 57): ``GET /metrics`` parsed by
prometheus-client's own text parser, its counters moving after an ask and after an ingest job, readable by an
unrestricted key only; ``GET /v1/kb/{name}/chunks/{id}/page.png``, the PDF page of a chunk as a bounded PNG (404
for a chunk of an HTML file). A real uvicorn server over the embedded FalkorDB."""

from __future__ import annotations

import struct
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kbgraph.settings import Settings

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("prometheus_client")
httpx = pytest.importorskip("httpx")

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from kbgraph.kb import KnowledgeBase  # noqa: E402
from kbgraph.serve.access import add_key  # noqa: E402
from kbgraph.serve.app import create_app  # noqa: E402
from kbgraph.serve.pages import MAX_HEIGHT, MAX_WIDTH  # noqa: E402
from tests.serve_fixture import NICS, QUESTION, SENATE, build_kb, offline, running  # noqa: E402

DUCK = "docs/html/wikipedia_duck.html"
ASK = "/v1/kb/{name}/ask"


@pytest.fixture(scope="module")
def served(
    falkor_settings: Settings, examples_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Settings, dict[str, str]]]:
    """(base URL, settings, keys by role: admin = every right on every knowledge base, reader = read on it)."""
    settings = offline(falkor_settings, name=f"met{uuid.uuid4().hex[:8]}", serve_ingest_roots=[examples_dir])
    build_kb(settings, examples_dir, (NICS, DUCK))
    path = tmp_path_factory.mktemp("keys") / "keys.toml"
    keys = {
        "admin": add_key(path, kbs=["*"], rights=["read", "write"], name="admin")[0],
        "reader": add_key(path, kbs=[settings.name], rights=["read"], name="reader")[0],
    }
    with running(create_app(settings.updated({"api_keys_file": path}))) as url:
        yield url, settings, keys
    with KnowledgeBase(settings=settings) as kb:
        kb.reset()


def _samples(client: Any) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of GET /metrics by (name, labels), parsed by prometheus-client."""
    reply = client.get("/metrics")
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("text/plain")
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(reply.text)
        for s in family.samples
    }


def _value(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return sum(v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= ls)


def test_metrics_move_after_an_ask_and_an_ingest(
    served: tuple[str, Settings, dict[str, str]], examples_dir: Path
) -> None:
    url, settings, keys = served
    kb = f"/v1/kb/{settings.name}"
    auth = {"Authorization": f"Bearer {keys['admin']}"}
    with httpx.Client(base_url=url, timeout=300, headers=auth) as c:
        before = _samples(c)
        assert _value(before, "kbgraph_asks_total") == 0
        reply = c.post(f"{kb}/ask", json={"question": QUESTION})
        assert reply.status_code == 200
        method = reply.json()["method"]
        assert c.get(f"{kb}/chunks/no-such-chunk").status_code == 404
        after_ask = _samples(c)
        assert _value(after_ask, "kbgraph_asks_total", method=method) == 1
        assert _value(after_ask, "kbgraph_http_requests_total", route=ASK, method="POST", status="200") == 1
        assert _value(after_ask, "kbgraph_http_request_duration_seconds_count", route=ASK) == 1
        # the route template, never the raw path (no knowledge-base name or chunk id as a label)
        chunk_route = "/v1/kb/{name}/chunks/{chunk_id}"
        assert _value(after_ask, "kbgraph_http_requests_total", route=chunk_route, status="404") == 1
        assert not any(settings.name in v or "no-such-chunk" in v for (_n, ls) in after_ask for _k, v in ls)
        assert _value(after_ask, "kbgraph_open_knowledge_bases") >= 1

        job = c.post(f"{kb}/ingest", json={"paths": [str(examples_dir / SENATE)]}).json()
        deadline = time.monotonic() + 300
        while job["status"] not in ("done", "failed") and time.monotonic() < deadline:
            time.sleep(0.3)
            job = c.get(f"/v1/jobs/{job['id']}").json()
        assert job["status"] == "done", job
        after_ingest = _samples(c)
        assert _value(after_ingest, "kbgraph_ingest_jobs_total", status="done") == 1
        assert _value(after_ingest, "kbgraph_ingested_documents_total") == 1
        assert _value(after_ingest, "kbgraph_ingested_chunks_total") == job["report"]["chunks"] > 0
        # this scrape is counted once it is answered
        assert _value(after_ingest, "kbgraph_http_requests_total", route="/metrics", status="200") == 2
        assert c.delete(f"{kb}/documents/{(examples_dir / SENATE).resolve().as_uri()}").status_code == 200

    with httpx.Client(base_url=url, timeout=60) as anonymous:
        assert anonymous.get("/metrics").status_code == 401
    with httpx.Client(base_url=url, timeout=60, headers={"Authorization": f"Bearer {keys['reader']}"}) as reader:
        refused = reader.get("/metrics")
        assert refused.status_code == 403 and "every right" in refused.json()["detail"]


def _chunk_of(client: Any, kb: str, uri_suffix: str, text: str = "") -> dict[str, Any]:
    """A chunk of the document whose URI ends with ``uri_suffix`` (the one holding ``text`` if given)."""
    rows = client.post(f"{kb}/search", json={"question": text or "duck", "k": 20}).json()["chunks"]
    for row in rows:
        chunk: dict[str, Any] = client.get(f"{kb}/chunks/{row['id']}").json()
        if str(chunk.get("document_uri", "")).endswith(uri_suffix) and text in (chunk.get("text") or ""):
            return chunk
    pytest.fail(f"no chunk of {uri_suffix} holding {text!r} among {len(rows)}")


def test_page_png_of_a_pdf_chunk(served: tuple[str, Settings, dict[str, str]]) -> None:
    url, settings, keys = served
    kb = f"/v1/kb/{settings.name}"
    with httpx.Client(base_url=url, timeout=120, headers={"Authorization": f"Bearer {keys['reader']}"}) as c:
        chunk = _chunk_of(c, kb, NICS.rsplit("/", 1)[-1], "Kentucky")
        reply = c.get(f"{kb}/chunks/{chunk['id']}/page.png")
        assert reply.status_code == 200, reply.text
        assert reply.headers["content-type"] == "image/png"
        png = reply.content
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk
        assert 300 <= width <= MAX_WIDTH and 300 <= height <= MAX_HEIGHT, (width, height)
        assert c.get(f"{kb}/chunks/{chunk['id']}/page.png").content == png  # the cached image

        duck = _chunk_of(c, kb, "wikipedia_duck.html")
        missing = c.get(f"{kb}/chunks/{duck['id']}/page.png")
        assert missing.status_code == 404 and "not from a PDF" in missing.json()["detail"]
        assert c.get(f"{kb}/chunks/no-such-chunk/page.png").status_code == 404
    with httpx.Client(base_url=url, timeout=60) as anonymous:
        assert anonymous.get(f"{kb}/chunks/{chunk['id']}/page.png").status_code == 401
