"""The web app's Explore and Runs routes (kbgraph.serve.explore) on a real uvicorn server over a real store, both
stores: the search by name (whole words, then a part of a word), a node with one page of its neighbours (skip,
limit, ``more``), the browse queries as graphs, the ingestion runs with a failed file's reason, and the rights route;
with API keys: a read-only key's rights, the 403 of a key scoped to another knowledge base on every route (as for
/search), the 401 without a key, and no server path in what a restricted key sees; keys scoped to documents
(``--where``): one of the note finds, expands and lists what the unscoped key does, its run with its document and
nothing of the failed file, one of no document finds nothing, expands nothing and sees no run
(tests/test_serve_scope_leak.py asks the same routes about many documents)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")

from kbgraph.kb import KnowledgeBase  # noqa: E402
from kbgraph.serve.access import add_key  # noqa: E402
from kbgraph.serve.app import create_app  # noqa: E402
from kbgraph.serve.authz import DOCUMENT_SCOPED, ROUTE_RIGHTS  # noqa: E402
from kbgraph.settings import Settings  # noqa: E402
from tests.backends import BACKENDS  # noqa: E402
from tests.serve_fixture import offline, running  # noqa: E402

NOTE = (
    "# Kentucky checks\n\nKentucky had 12,155 handgun checks in November 2015, says the NICS report. "
    "Louisville and Lexington are cities of Kentucky.\n"
)
MASTER = "kbg_master-of-the-explore-test"

#: (base URL, settings, {role: key}, the folder of the sources)
Served = tuple[str, Settings, dict[str, str], Path]


@pytest.fixture(scope="module", params=BACKENDS)
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server with keys over a knowledge base of one note and one broken PDF (a failed file of the run)."""
    docs = tmp_path_factory.mktemp("explore-docs")
    (docs / "kentucky.md").write_text(NOTE, encoding="utf-8")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4\nnot a pdf at all\n")
    base = request.getfixturevalue("falkor_settings" if request.param == "falkordb" else "neo4j_settings")
    settings = offline(base, name=f"ex{uuid.uuid4().hex[:8]}") if request.param == "falkordb" else offline(base)
    with KnowledgeBase(settings=settings) as kb:
        kb.reset()
        report = kb.ingest([docs], progress=False)
        assert report.added == 1 and report.failed == 1, report
    keys_file = tmp_path_factory.mktemp("explore-keys") / "keys.toml"
    keys = {
        "reader": add_key(keys_file, kbs=[settings.name], rights=["read"], name="reader")[0],
        "writer": add_key(keys_file, kbs=[settings.name], rights=["read", "write"], name="writer")[0],
        "other": add_key(keys_file, kbs=["other-kb"], rights=["read", "write"], name="other")[0],
        "note": add_key(keys_file, kbs=[settings.name], rights=["read"], name="note", where=["path=kentucky.md"])[0],
        "nothing": add_key(keys_file, kbs=[settings.name], rights=["read"], name="nothing", where=["path=nowhere.md"])[
            0
        ],
        "master": MASTER,
    }
    app = create_app(settings.updated({"api_keys_file": keys_file, "api_key": MASTER}))
    with running(app) as url:
        yield url, settings, keys, docs
    with KnowledgeBase(settings=settings) as kb:
        kb.reset()


def client(url: str, key: str | None) -> Any:
    """An httpx client of ``url`` sending ``key`` as Bearer (none: no key)."""
    return httpx.Client(base_url=url, timeout=120, headers={"Authorization": f"Bearer {key}"} if key else {})


def test_search_expand_views_runs(served: Served) -> None:
    url, settings, keys, docs = served
    kb = f"/v1/kb/{settings.name}"
    with client(url, keys["master"]) as c:
        hits = c.get(kb + "/explore/search", params={"q": "kentucky"}).json()
        kentucky = next(e for e in hits["entities"] if e["caption"] == "Kentucky")
        assert kentucky["label"] == "Entity" and "embedding" not in kentucky["properties"]
        assert [d["caption"] for d in hits["documents"]] == ["Kentucky checks"]  # the title's whole word
        assert hits["documents"][0]["properties"]["uri"] == (docs / "kentucky.md").resolve().as_uri()  # unrestricted
        part = c.get(kb + "/explore/search", params={"q": "entuck"}).json()  # no whole word: a part of the names
        assert (
            "Kentucky" in [e["caption"] for e in part["entities"]]
            and part["documents"][0]["caption"] == "Kentucky checks"
        )
        assert c.get(kb + "/explore/search", params={"q": "  "}).status_code == 400
        assert c.get(kb + "/explore/search").status_code == 422

        # the entity's neighbours: the chunk that mentions it; the chunk's: its document and more
        page = c.get(f"{kb}/explore/nodes/{kentucky['id']}").json()
        assert page["node"]["id"] == kentucky["id"] and page["total"] >= 1 and page["more"] == 0
        chunk = next(n for n in page["neighbours"] if n["label"] == "Chunk")
        assert {"source": chunk["id"], "target": kentucky["id"], "type": "MENTIONS"} in page["edges"]
        around = c.get(f"{kb}/explore/nodes/{chunk['id']}", params={"limit": 200}).json()
        labels = {n["label"] for n in around["neighbours"]}
        assert {"Document", "Entity"} <= labels, labels
        total = around["total"]
        assert total > 2 and around["more"] == 0
        document = next(n for n in around["neighbours"] if n["label"] == "Document")  # under a section: by IN
        assert {"source": chunk["id"], "target": document["id"], "type": "IN"} in around["edges"]
        first = c.get(f"{kb}/explore/nodes/{chunk['id']}", params={"limit": 2}).json()
        stored = [(e["source"], e["type"], e["target"]) for e in first["edges"] if e["type"] != "IN"]
        assert len(stored) == 2 and first["more"] == total - 2 and first["total"] == total
        second = c.get(f"{kb}/explore/nodes/{chunk['id']}", params={"limit": 2, "skip": 2}).json()
        assert not set(stored) & {(e["source"], e["type"], e["target"]) for e in second["edges"] if e["type"] != "IN"}
        past = c.get(f"{kb}/explore/nodes/{chunk['id']}", params={"skip": total + 5}).json()
        assert [n["label"] for n in past["neighbours"]] == ["Document"] and past["more"] == 0  # the IN document alone
        assert past["node"]["id"] == chunk["id"]
        assert c.get(f"{kb}/explore/nodes/ent:no-such-node").status_code == 404
        assert c.get(f"{kb}/explore/nodes/{chunk['id']}", params={"limit": 201}).status_code == 422

        # the browse queries as graphs
        doc = c.get(kb + "/explore/views/document").json()
        assert doc["params"] == {"document": "", "limit": 25, "per_chunk": 3} and doc["rows"] >= 1
        assert {"Document", "Chunk"} <= {n["label"] for n in doc["nodes"]}
        assert any(e["type"] == "HAS_CHUNK" for e in doc["edges"])
        ent = c.get(kb + "/explore/views/entity", params={"entity": "Kentucky"}).json()
        assert ent["nodes"][0]["caption"] == "Kentucky" and any(e["type"] == "MENTIONS" for e in ent["edges"])
        top = c.get(kb + "/explore/views/top_entities", params={"limit": 3}).json()
        assert 1 <= len(top["nodes"]) <= 3 and "degree" in top["nodes"][0]["properties"]
        changed = c.get(kb + "/explore/views/changed").json()
        assert [n["label"] for n in changed["nodes"]] == ["IngestionRun", "Document"]
        assert c.get(kb + "/explore/views/orphans").json()["nodes"] == []
        assert c.get(kb + "/explore/views/questions").status_code == 400  # not a view
        assert c.get(kb + "/explore/views/entity", params={"nope": "1"}).status_code == 400

        # the ingestion runs: the one run, its counts, the failed file and why
        runs = c.get(kb + "/runs").json()["runs"]
        assert len(runs) == 1
        run = runs[0]
        assert (run["status"], run["added"], run["failed"], run["unchanged"]) == ("failed", 1, 1, 0), (
            run
        )  # a file failed
        assert len(run["errors"]) == 1 and "broken.pdf" in run["errors"][0] and str(docs) in run["errors"][0]
        assert run["started_at"] <= run["finished_at"]
        assert c.get(kb + "/runs", params={"limit": 0}).status_code == 422


def test_rights_and_scopes(served: Served) -> None:
    url, settings, keys, docs = served
    kb = f"/v1/kb/{settings.name}"
    routes = [
        kb + "/explore/search?q=Kentucky",
        kb + "/explore/nodes/ent:x",
        kb + "/explore/views/top_entities",
        kb + "/runs",
        kb + "/rights",
    ]
    explore = {
        ("GET", "/v1/kb/{name}" + p)
        for p in ("/rights", "/explore/search", "/explore/nodes/{node_id}", "/explore/views/{view}", "/runs")
    }
    assert explore <= set(ROUTE_RIGHTS) and explore - DOCUMENT_SCOPED == {("GET", "/v1/kb/{name}/rights")}
    with client(url, keys["reader"]) as c:
        assert c.get(kb + "/rights").json() == {
            "kb": settings.name,
            "rights": ["read"],
            "unrestricted": False,
            "keys": True,
            "key": "reader",
            "documents": None,
        }
        # a restricted key sees no server path: the document's uri and the run's errors by file name
        hit = c.get(kb + "/explore/search", params={"q": "kentucky"}).json()["documents"][0]
        assert hit["properties"]["uri"] == "kentucky.md"
        run = c.get(kb + "/runs").json()["runs"][0]
        assert str(docs) not in run["errors"][0] and "broken.pdf" in run["errors"][0]
        assert all(str(docs) not in p for p in run["paths"])
        node = c.get(kb + "/explore/views/changed").json()["nodes"][1]
        assert node["properties"]["uri"] == "kentucky.md"
        assert c.post(kb + "/ingest", json={"paths": [str(docs)]}).status_code == 403  # read only
        assert c.get("/v1/kb/other-kb/rights").status_code == 403
    with client(url, keys["writer"]) as c:
        assert c.get(kb + "/rights").json()["rights"] == ["read", "write"]
    with client(url, keys["master"]) as c:
        found = c.get(kb + "/rights").json()
        assert found["unrestricted"] is True and found["key"] == "KBGRAPH_API_KEY"
    with client(url, keys["other"]) as c:  # scoped to another knowledge base: 403 everywhere, as for /search
        assert c.post(kb + "/search", json={"question": "Kentucky"}).status_code == 403
        for path in routes:
            r = c.get(path)
            assert r.status_code == 403 and "other-kb" in r.json()["detail"], (path, r.text)
        assert c.get("/v1/kb/other-kb/rights").json()["rights"] == ["read", "write"]
    with client(url, None) as c:
        for path in routes:
            assert c.get(path).status_code == 401, path
    with client(url, keys["master"]) as c:
        assert c.get("/v1/kb/no-such-kb/runs").status_code == 404
        assert c.get("/v1/kb/bad%20name/rights").status_code == 400


def test_document_scoped_keys(served: Served) -> None:
    """A key scoped to the note's documents sees on every Explore route what the unscoped key sees of them, and its
    run with that document only; a key scoped to no document sees nothing (no hit, no node, no run)."""
    url, settings, keys, docs = served
    kb = f"/v1/kb/{settings.name}"
    with client(url, keys["master"]) as c:
        kentucky = next(
            e
            for e in c.get(kb + "/explore/search", params={"q": "kentucky"}).json()["entities"]
            if e["caption"] == "Kentucky"
        )
        everything = c.get(f"{kb}/explore/nodes/{kentucky['id']}", params={"limit": 200}).json()
        document = c.get(kb + "/explore/views/document").json()
    with client(url, keys["note"]) as c:
        rights = c.get(kb + "/rights").json()
        assert rights["rights"] == ["read"] and rights["documents"] == "path=kentucky.md", rights
        hits = c.get(kb + "/explore/search", params={"q": "kentucky"}).json()
        assert "Kentucky" in [e["caption"] for e in hits["entities"]]
        assert [d["caption"] for d in hits["documents"]] == ["Kentucky checks"]
        assert "Kentucky" in [
            e["caption"] for e in c.get(kb + "/explore/search", params={"q": "entuck"}).json()["entities"]
        ]
        page = c.get(f"{kb}/explore/nodes/{kentucky['id']}", params={"limit": 200}).json()
        assert page["total"] == everything["total"] and len(page["neighbours"]) == len(everything["neighbours"])
        ids = [(n["label"], n["id"]) for n in c.get(kb + "/explore/views/document").json()["nodes"]]
        assert ids == [(n["label"], n["id"]) for n in document["nodes"]]
        runs = c.get(kb + "/runs").json()["runs"]
        assert len(runs) == 1 and runs[0]["scoped"] is True, runs
        run = runs[0]
        assert [d["title"] for d in run["documents"]] == ["Kentucky checks"] and run["documents"][0][
            "uri"
        ] == "kentucky.md"
        assert (run["status"], run["added"], run["failed"], run["errors"], run["paths"]) == (None, None, None, [], [])
        assert "broken" not in json.dumps(runs)  # the failed file is of no document: not the key's
    with client(url, keys["nothing"]) as c:
        hits = c.get(kb + "/explore/search", params={"q": "kentucky"}).json()
        assert hits["entities"] == [] and hits["documents"] == []
        assert c.get(kb + "/explore/search", params={"q": "entuck"}).json()["entities"] == []
        assert c.get(f"{kb}/explore/nodes/{kentucky['id']}").status_code == 404
        for other in everything["neighbours"]:
            assert c.get(f"{kb}/explore/nodes/{other['id']}").status_code == 404, other
        assert c.get(kb + "/explore/views/document").json()["nodes"] == []
        assert c.get(kb + "/explore/views/top_entities").json()["nodes"] == []
        assert c.get(kb + "/runs").json()["runs"] == []
        assert c.post(kb + "/ingest", json={"paths": [str(docs)]}).status_code == 403
