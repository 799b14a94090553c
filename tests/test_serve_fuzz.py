"""Fuzzing `kbgraph serve` by key scope, on a real server (uvicorn in this process, embedded FalkorDB in the
default layout: a folder and a server per knowledge base).

* Hypothesis spells each route's path every way a client can (``%xx`` of any byte of it, upper or lower hex,
  an extra ``//`` or ``/./``): the decision equals the decision on the canonical path, or, for a path that is
  not plain (``//``, ``/./`` among its first segments), a 400 — never a success the canonical path would not
  have, so no spelling escapes a key's scope.
* Schemathesis generates requests from the application's own OpenAPI schema, once per key scope (none;
  read-only on one knowledge base; read-only on all; read and write on another; every right): no 500, no 2xx outside the key's
  scope, and after the runs without the write right no new folder in the home and no new store server.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings as hsettings, strategies as st  # noqa: E402

from kbgraph.cli import main  # noqa: E402
from kbgraph.kb import KnowledgeBase  # noqa: E402
from kbgraph.serve.app import create_app  # noqa: E402
from kbgraph.settings import Settings  # noqa: E402
from tests.serve_fixture import offline, running  # noqa: E402
from tests.test_serve_authz import _servers, raw  # noqa: E402

if TYPE_CHECKING:
    from fastapi import FastAPI
    from schemathesis import Case
    from schemathesis.schemas import APIOperation

NOTE = "# Kentucky checks\n\nKentucky had 12,155 handgun checks in November 2015, says the NICS report.\n"
QUESTION = "How many handgun checks were there in Kentucky?"
JSON = {"Content-Type": "application/json"}

#: (method, path template, body): one request per route of ROUTE_RIGHTS under /v1 ({kb}: the knowledge base).
ROUTES: list[tuple[str, str, dict[str, Any] | None]] = [
    ("POST", "/v1/kb/{kb}/ask", {"question": QUESTION, "k": 2}),
    ("POST", "/v1/kb/{kb}/search", {"question": QUESTION, "k": 2}),
    ("POST", "/v1/kb/{kb}/ingest", {"paths": ["/etc"]}),
    ("GET", "/v1/kb/{kb}/documents", None),
    ("DELETE", "/v1/kb/{kb}/documents/doc:none", None),
    ("GET", "/v1/kb/{kb}/chunks/chunk:none", None),
    ("GET", "/v1/kb/{kb}/stats", None),
    ("GET", "/v1/kb/{kb}/browse/top_entities", None),
    ("GET", "/v1/jobs/{kb}", None),
    ("GET", "/v1/kb/{kb}/chunks/chunk:none/page.png", None),
]


#: (base URL, settings, {role: key}, the application)
Served = tuple[str, Settings, dict[str, str], "FastAPI"]
#: (route index, knowledge base, positions to percent-encode, upper-case hex, extra segment, where)
Spelling = tuple[int, str, set[int], bool, str, int]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, falkor_home: Path, embed_cache_dir: Path) -> Iterator[Served]:
    """(base URL, settings, {role: key}): knowledge bases ``alpha`` (one note) and ``beta`` (one note) in a home
    of the default layout; keys: ``reader`` (read alpha), ``reader_all`` (read any), ``writer`` (read, write beta), ``admin`` (all)."""
    base = tmp_path_factory.mktemp("fuzzhome")
    (base / "models").symlink_to(falkor_home / "models", target_is_directory=True)
    docs = tmp_path_factory.mktemp("fuzzdocs")
    (docs / "kentucky.md").write_text(NOTE)
    keys_file = base / "keys.toml"
    settings = offline(
        Settings(
            home=base, name="alpha", falkor_idle_timeout=0, embedding_cache_dir=embed_cache_dir, api_keys_file=keys_file
        )
    )
    for name in ("alpha", "beta"):
        with KnowledgeBase(settings=settings.updated({"name": name})) as kb:
            kb.reset()
            assert kb.ingest([docs / "kentucky.md"], progress=False).added == 1
    keys = {}
    for role, kb, rights in (  # type: ignore[assignment]
        ("reader", "alpha", "read"),
        ("reader_all", "*", "read"),
        ("writer", "beta", "read,write"),
        ("admin", "*", "read,write"),
    ):
        import contextlib
        import io
        import os

        os.environ["KBGRAPH_API_KEYS_FILE"] = str(keys_file)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["serve", "keys", "add", "--kb", kb, "--rights", rights, "--name", role]) == 0  # type: ignore[list-item]
        keys[role] = out.getvalue().strip()
    os.environ.pop("KBGRAPH_API_KEYS_FILE", None)
    app = create_app(settings)
    with running(app) as url:
        yield url, settings, keys, app
    from kbgraph.store.falkor_server import EmbeddedFalkorDB

    for folder in base.iterdir():
        if (folder / "falkordb.log").exists():
            EmbeddedFalkorDB(folder).stop()


def _request(url: str, key: str | None, method: str, path: str, body: dict[str, Any] | None) -> int:
    headers = {**({"Authorization": f"Bearer {key}"} if key else {}), **(JSON if body is not None else {})}
    status, _ = raw(url, method, path, body=json.dumps(body).encode() if body is not None else None, headers=headers)
    return status


def _spellings() -> st.SearchStrategy[Spelling]:
    """(route index, knowledge base, positions to percent-encode, upper-case hex, extra segment, where)."""
    return st.tuples(
        st.integers(0, len(ROUTES) - 1),
        st.sampled_from(["alpha", "beta"]),
        st.sets(st.integers(0, 60), max_size=12),
        st.booleans(),
        st.sampled_from(["", "//", "/./"]),
        st.integers(1, 4),
    )


def _spell(path: str, positions: set[int], upper: bool, extra: str, where: int) -> str:
    out = []
    for i, ch in enumerate(path):
        if i in positions and i > 0:
            code = f"%{ord(ch):02X}" if upper else f"%{ord(ch):02x}"
            out.append(code)
        else:
            out.append(ch)
    spelled = "".join(out)
    if extra:
        cuts = [i for i, ch in enumerate(spelled) if ch == "/"]
        cut = cuts[min(where, len(cuts) - 1)]
        spelled = spelled[:cut] + extra.rstrip("/") + spelled[cut:]
    return spelled


def test_every_spelling_of_a_path_decides_as_the_canonical_one(served: Served) -> None:
    url, _, keys, _ = served
    canonical: dict[tuple[int, str], int] = {}
    for i, (method, template, body) in enumerate(ROUTES):
        for kb in ("alpha", "beta"):
            canonical[i, kb] = _request(url, keys["reader"], method, template.format(kb=kb), body)
    # the reader key: reads alpha, nothing on beta, no writes
    assert canonical[0, "alpha"] == 200 and canonical[0, "beta"] == 403 and canonical[2, "alpha"] == 403
    assert canonical[4, "alpha"] == 403 and canonical[8, "alpha"] == 404

    @hsettings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(_spellings())
    def check(spelling: Spelling) -> None:
        index, kb, positions, upper, extra, where = spelling
        method, template, body = ROUTES[index]
        path = _spell(template.format(kb=kb), positions, upper, extra, where)
        got = _request(url, keys["reader"], method, path, body)
        expected = canonical[index, kb]
        if extra:
            assert got in (expected, 400, 404), (path, got, expected)
            assert not (200 <= got < 300) or 200 <= expected < 300, (path, got, expected)
        else:
            assert got == expected, (path, got, expected)

    check()


# --- schemathesis over the OpenAPI schema, by key scope -------------------------------------------------------
schemathesis = pytest.importorskip("schemathesis")

#: role -> (knowledge bases it may use, rights); None: no key sent.
SCOPES = {
    "none": None,
    "reader": ({"alpha"}, {"read"}),
    "reader_all": ({"*"}, {"read"}),
    "writer": ({"beta"}, {"read", "write"}),
    "admin": ({"*"}, {"read", "write"}),
}
WRITE_ROUTES = {("POST", "/v1/kb/{name}/ingest"), ("DELETE", "/v1/kb/{name}/documents/{document}")}


def _allowed(role: str, method: str, template: str, kb: str | None) -> bool:
    scope = SCOPES[role]
    if scope is None:
        return template == "/healthz"
    kbs, rights = scope
    if kb is None:
        return True
    right = "write" if (method, template) in WRITE_ROUTES else "read"
    return ("*" in kbs or kb in kbs) and right in rights


@pytest.mark.parametrize("role", list(SCOPES))
def test_schemathesis_by_key_scope(served: Served, role: str) -> None:
    url, settings, keys, app = served
    home: Path = settings.home
    before_dirs, before_procs = sorted(p.name for p in home.iterdir()), _servers(home)
    schema = schemathesis.openapi.from_dict(app.openapi())
    key = keys.get(role)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    seen: list[tuple[str, str, int]] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        strategy = operation.as_strategy()

        @hsettings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(strategy)
        def run(case: Case[APIOperation[Any, Any, Any, Any]]) -> None:
            method, template = case.operation.method.upper(), case.operation.path
            kb = (case.path_parameters or {}).get("name")
            if template.startswith("/v1/kb/"):
                if not kb:
                    return
                # two in three requests name a knowledge base that exists (alpha, beta), the others the generated one
                kb = case.path_parameters["name"] = (kb, "alpha", "beta")[zlib.crc32(kb.encode()) % 3]
                query = case.path_parameters.get("query")
                if query:  # and three browses in four a ready query
                    case.path_parameters["query"] = (query, "entity", "top_entities", "document")[
                        zlib.crc32(query.encode()) % 4
                    ]
            response = case.call(base_url=url, headers=headers, timeout=120)
            status = response.status_code
            seen.append((method, template, status))
            assert status < 500, (method, template, case.path_parameters, status, response.text)
            if 200 <= status < 300:
                assert _allowed(role, method, template, kb), (role, method, template, kb, status)

        run()
    assert len(seen) >= 40, f"schemathesis generated {len(seen)} requests"
    if role in ("none", "reader", "reader_all"):
        assert sorted(p.name for p in home.iterdir()) == before_dirs
        assert _servers(home) <= before_procs
    if role == "none":
        assert {s for _, p, s in seen if p != "/healthz"} == {401}
