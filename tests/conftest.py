"""Shared fixtures: real stores only.

``store`` is parametrized over both backends: an embedded FalkorDB server (one per test session, in a
temporary folder; each test gets a graph of its own) and a real local Neo4j 5 server started once per
session from kbgraph/resources/neo4j-local on test ports (bolt 17687, http 17474) so a developer's own server is never
touched. If Neo4j cannot start, Neo4j tests fail under CI=true and are skipped otherwise.
Set KBGRAPH_TEST_NEO4J_URI (+ NEO4J_USERNAME/NEO4J_PASSWORD) to use an existing server instead.
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kbgraph.settings import Settings
from tests.backends import BACKENDS

if TYPE_CHECKING:
    from kbgraph.store.base import GraphStore
    from kbgraph.store.falkor_server import EmbeddedFalkorDB


# the session's real llama.cpp server (`llm_server`): tests/llm_server_fixture.py
pytest_plugins = ["tests.llm_server_fixture"]

#: The repository's root: tests read data only from inside it (tests/test_repo_only.py checks this).
REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def derived_cache_root() -> Path:
    """``KBGRAPH_TEST_CACHE``, else ``$XDG_CACHE_HOME/kbgraph-tests`` (``~/.cache/kbgraph-tests``)."""
    if os.environ.get("KBGRAPH_TEST_CACHE"):
        return Path(os.environ["KBGRAPH_TEST_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kbgraph-tests"


def _test_cache(name: str, sources: list[str], dists: list[str]) -> Path:
    """A folder of derived models kept between test runs: ``~/.cache/kbgraph-tests/<name>-<key>`` (the root:
    ``KBGRAPH_TEST_CACHE``; an empty folder there gives a run as cold as a fresh machine's), ``<key>``
    hashing the repository files ``sources`` (the code that derives them) and the versions of ``dists``, so a
    change to either starts an empty folder. What goes inside is named by the content it derives from (the
    embedding model's weights sha256), and written once under a file lock (several sessions may share it)."""
    from importlib import metadata

    key = hashlib.sha256()
    for src in sources:
        key.update((REPO / src).read_bytes())
    for dist in dists:
        try:
            key.update(f"{dist}=={metadata.version(dist)}".encode())
        except metadata.PackageNotFoundError:
            key.update(dist.encode())
    folder = derived_cache_root() / f"{name}-{key.hexdigest()[:16]}"
    folder.mkdir(parents=True, exist_ok=True)
    for failed in folder.glob("*.failed"):  # an export that failed in an earlier run is tried again
        failed.unlink(missing_ok=True)
    return folder


def _static_models_dir() -> Path:
    """The suite's distilled static models (setting static_layers; kbgraph/embed/static_model.py), kept between
    runs (:func:`_test_cache`). tests/test_static_embeddings.py builds into a folder of its own every run."""
    return _test_cache("static-models", ["kbgraph/embed/static_model.py"], ["model2vec", "skeletoken"])


# Static models are distilled once per folder: one folder for every session (above), so that every test's fresh
# home (and the CLI processes the tests start) reuses one distillation (~10-20 s idle, each) instead of one a run.
os.environ.setdefault("KBGRAPH_STATIC_MODELS_DIR", str(_static_models_dir()))


# --- the suite reads only the repo --------------------------------------------------------------------
#: Files the test process opened in a non-hidden sibling of the repository (a data folder beside it): a clone
#: has nothing beside it, so such a read works here and fails for a user. Checked at the end of the session.
OUTSIDE_READS: list[str] = []


def outside_repo(path: str | Path) -> bool:
    """True when ``path`` lies in a non-hidden sibling of the repository (``<repo>/../<name>/...``, name not
    starting with '.'): hidden folders beside the repo (``~/.kbgraph``, ``~/.cache``) and everything else
    on the machine (site-packages, /tmp) are not the repo's business."""
    try:
        p = Path(os.path.abspath(os.fsdecode(path)))
    except (TypeError, ValueError):
        return False
    parent = REPO.parent
    if p == REPO or REPO in p.parents or parent not in p.parents:
        return False
    sibling = p.relative_to(parent).parts[0]
    return not sibling.startswith(".")


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)) and outside_repo(args[0]):  # type: ignore[arg-type]
        OUTSIDE_READS.append(os.fsdecode(args[0]))


if REPO.parent != REPO:  # (a repo at / has no siblings)
    import sys

    sys.addaudithook(_audit)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:  # node: xdist's WorkerController
    """pytest-xdist, in the controller: a worker's outside reads (its ``workeroutput``) join the controller's."""
    OUTSIDE_READS.extend(getattr(node, "workeroutput", {}).get("outside_reads", []))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    real = [p for p in OUTSIDE_READS if not p.endswith(".kbgraph-guard-probe")]
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller fails the run (pytest_testnodedown)
        workeroutput["outside_reads"] = real
        return
    if real:
        print(f"\nFAILED: the suite read {len(real)} file(s) outside the repository, e.g. {real[0]}")
        session.exitstatus = 1


#: Fixtures that start a server outside Python: a test using one (directly or through another fixture) belongs to
#: the slow tier, excluded by `pytest -m "not slow"` (the fast tier, README.md). Backend-parametrized tests get the
#: marks from tests/backends.py instead (their Neo4j parameter), since they reach the server via getfixturevalue.
SLOW_FIXTURES = {
    "neo4j_settings": (pytest.mark.neo4j, pytest.mark.slow),  # the local Neo4j JVM (~40 s to start)
    "llm_server": (pytest.mark.slow,),  # llama.cpp's llama-server with SmolLM2 (tests/llm_server_fixture.py)
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for name in set(getattr(item, "fixturenames", ())) & SLOW_FIXTURES.keys():
            for mark in SLOW_FIXTURES[name]:
                item.add_marker(mark)
    if os.environ.get(
        "KBGRAPH_TEST_LLM_WAIT"
    ):  # llama.cpp's server is being built (.ci/run): tests/llm_server_fixture.py
        items[:] = llm_files_last(items)


def llm_files_last(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` with every file holding a test that needs llama.cpp's server (tests/llm_server_fixture.py's
    LLM_FIXTURES) moved, in order, after the others: under `--dist loadfile` the workers take them last."""
    from tests.llm_server_fixture import LLM_FIXTURES  # (imported here: pytest_plugins loads it, rewriting its asserts)

    llm_files = {item.path for item in items if LLM_FIXTURES & set(getattr(item, "fixturenames", ()))}
    return [i for i in items if i.path not in llm_files] + [i for i in items if i.path in llm_files]


#: pytest-xdist's worker (``gw0``, ``gw1``, …; "" without xdist): the suite runs on both cores (`-n 2`, README.md),
#: and each worker starts its own local Neo4j (its own ports and folder) and its own llama.cpp server, so no test
#: sees another worker's graph. Worker i takes the base ports + 10 x i.
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
WORKER_INDEX = int(WORKER[2:]) if WORKER.startswith("gw") and WORKER[2:].isdigit() else 0
TEST_BOLT_PORT = int(os.environ.get("KBGRAPH_TEST_BOLT_PORT", "17687")) + 10 * WORKER_INDEX
TEST_HTTP_PORT = int(os.environ.get("KBGRAPH_TEST_HTTP_PORT", "17474")) + 10 * WORKER_INDEX
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    """The repo's sample data: ``docs/`` (the sample documents) and ``multihop/`` (the multi-hop QA sets)."""
    if not (EXAMPLES / "docs").is_dir() or not (EXAMPLES / "multihop").is_dir():
        pytest.fail(f"the repository's sample data is missing under {EXAMPLES} (a partial checkout?)")
    return EXAMPLES


@pytest.fixture(scope="session")
def falkor_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's home. Its ``models/`` (the embedding model's ONNX export, written by the first torch load
    under embedding_backend=auto, and its int8 quantization) links to a folder kept between runs
    (:func:`_test_cache`): the export (~30-60 s of CPU) is paid by the first run after a change to the export
    code or to torch, transformers, onnx or onnxruntime, not by every session."""
    home = tmp_path_factory.mktemp("kbhome")
    derived = _test_cache(
        "onnx-models",
        ["kbgraph/embed/onnx_export.py", "kbgraph/embed/onnx_model.py", "kbgraph/embed/onnx_quant.py"],
        ["torch", "transformers", "sentence-transformers", "onnx", "onnxruntime"],
    )
    (home / "models").symlink_to(derived, target_is_directory=True)
    return home


@pytest.fixture(scope="session")
def embed_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One embedding cache for the session, shared by the pytest-xdist workers (their temporary folders have one
    parent; the cache is SQLite in WAL mode, safe for several processes): a text embedded by one test on either
    worker (a corpus ingested on both backends, the sample DOCX of three modules) is embedded once a session."""
    root = tmp_path_factory.getbasetemp()
    folder = (root.parent if WORKER else root) / "embed-cache"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def falkor_settings(falkor_home: Path, embed_cache_dir: Path) -> Iterator[Settings]:
    """Settings of the session's embedded FalkorDB server (stopped at the end of the session)."""
    settings = Settings(
        home=falkor_home,
        name="session",
        data_dir=falkor_home / "falkordb",
        falkor_idle_timeout=0,
        batch_size=500,
        embedding_cache_dir=embed_cache_dir,
    )
    yield settings
    from kbgraph.store.falkor_server import EmbeddedFalkorDB

    EmbeddedFalkorDB(settings.kb_dir).stop()


def aof_when(
    server: EmbeddedFalkorDB, until: Callable[[dict[str, Any]], bool], timeout: float = 30.0
) -> dict[str, Any]:
    """The embedded server's ``INFO persistence`` once no rewrite of its append-only file runs or waits and
    ``until`` holds of it; the last reading after ``timeout`` seconds otherwise (the caller asserts on it)."""
    deadline = time.monotonic() + timeout
    while True:
        info: dict[str, Any] = server._client().info("persistence")
        idle = not (info["aof_rewrite_in_progress"] or info["aof_rewrite_scheduled"])
        if (idle and until(info)) or time.monotonic() > deadline:
            return info
        time.sleep(0.1)


#: The JVM of the suite's Neo4j servers: the client compiler only (no C2 JIT) and the serial collector. Over
#: test_store's and test_browse's Neo4j tests: 92 s of CPU against 130 s with the JVM's defaults, 136 s wall against
#: 148 s (benchmarks/HISTORY.md, "The suite's time on 2026-11-28"): the suite is CPU-bound on two cores, and its
#: servers live minutes.
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def neo4j_test_settings(home: Path) -> Settings:
    folder = Path(os.environ.get("KBGRAPH_TEST_NEO4J_HOME", Path.home() / ".kbgraph" / "neo4j-test"))
    return Settings(
        home=home,
        neo4j_local_home=folder.with_name(f"{folder.name}-{WORKER}") if WORKER_INDEX else folder,
        neo4j_bolt_port=TEST_BOLT_PORT,
        neo4j_http_port=TEST_HTTP_PORT,
        neo4j_password="kbgraph-test",
        neo4j_jvm_options=TEST_JVM_OPTIONS,
    )


def shared_neo4j_lib() -> Path:
    """The jar folder that `kbgraph neo4j build` fills (shared with the test instance: built once)."""
    return Path(os.environ.get("KBGRAPH_NEO4J_LIB", Path.home() / ".kbgraph" / "neo4j-local" / "lib"))


@pytest.fixture(scope="session")
def neo4j_settings(tmp_path_factory: pytest.TempPathFactory, embed_cache_dir: Path) -> Iterator[Settings]:
    """Settings pointing at a running Neo4j 5 (the local test server, started once per session)."""
    home = tmp_path_factory.mktemp("neo4jhome")
    external = os.environ.get("KBGRAPH_TEST_NEO4J_URI")
    if external:
        yield Settings(home=home, uri=external, batch_size=500, embedding_cache_dir=embed_cache_dir)
        return
    from kbgraph.errors import KBGraphError
    from kbgraph.neo4j_local import Neo4jLocal

    base = neo4j_test_settings(home)
    local = Neo4jLocal(base, lib_dir=shared_neo4j_lib())
    try:
        status = local.start(timeout=180)
    except KBGraphError as exc:
        if IN_CI:
            pytest.fail(f"the local Neo4j server could not start: {exc}")
        pytest.skip(f"local Neo4j unavailable: {exc}")
    yield base.updated({"uri": status.bolt_uri, "batch_size": 500, "embedding_cache_dir": embed_cache_dir})
    local.stop()


@pytest.fixture(params=BACKENDS)
def backend_settings(request: pytest.FixtureRequest, falkor_settings: Settings) -> Iterator[Settings]:
    """Settings for one test on one backend: a fresh graph each time."""
    if request.param == "falkordb":
        settings = falkor_settings.updated({"name": f"t{uuid.uuid4().hex[:10]}"})
    else:
        settings = request.getfixturevalue("neo4j_settings")
    yield settings


@pytest.fixture
def store(backend_settings: Settings) -> Iterator[GraphStore]:
    """A connected GraphStore with the schema ensured and an empty graph."""
    from kbgraph.store import open_store

    s = open_store(backend_settings)
    s.clear()
    s.ensure_schema()
    yield s
    try:
        s.clear()
    except Exception:
        pass  # the test closed or restarted the store (and cleaned up itself)
    finally:
        s.close()
