"""llm_max_concurrency (kbgraph.llm.limit, issue 29): the real OpenAIClient against a slow OpenAI-compatible HTTP
server on 127.0.0.1 that counts the requests it is answering at once; the bound is per endpoint, shared by every
client of the process, and defaults to the server's slots."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

import pytest

from kbgraph.llm import OpenAIClient
from kbgraph.llm.limit import DEFAULT_BOUND, endpoint_limit, forget
from kbgraph.llm.llama import server_args
from kbgraph.settings import Settings

MESSAGES = [{"role": "user", "content": "What is 6 x 7?"}]


class SlowServer:
    """Answers every chat completion after ``latency`` seconds (streamed or not); ``most`` is the highest number
    of requests it was answering at once. ``GET /props`` reports ``slots`` as llama-server does (404 if None)."""

    def __init__(self, latency: float, slots: int | None = None) -> None:
        self.latency, self.slots = latency, slots
        self.in_flight = self.most = self.answered = 0
        lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if self.path == "/props" and fake.slots is not None:
                    return self._send(200, "application/json", json.dumps({"total_slots": fake.slots}).encode())
                self._send(404, "application/json", b"{}")

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with lock:
                    fake.in_flight += 1
                    fake.most = max(fake.most, fake.in_flight)
                try:
                    time.sleep(fake.latency)
                finally:
                    with lock:
                        fake.in_flight -= 1
                        fake.answered += 1
                message = {"role": "assistant", "content": "42"}
                if body.get("stream"):
                    events = [{"choices": [{"index": 0, "delta": message}]}, {"choices": [], "usage": None}]
                    data = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
                    return self._send(200, "text/event-stream", data.encode())
                answer = {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model"),
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                }
                self._send(200, "application/json", json.dumps(answer).encode())

            def _send(self, status: int, kind: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class MakeServer(Protocol):
    """The ``slow_server`` fixture: starts a :class:`SlowServer` (closed at the test's end)."""

    def __call__(self, latency: float = ..., slots: int | None = ...) -> SlowServer: ...


@pytest.fixture
def slow_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[MakeServer]:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    made: list[SlowServer] = []

    def make(latency: float = 0.4, slots: int | None = None) -> SlowServer:
        made.append(SlowServer(latency, slots))
        # the process keeps one limit per endpoint URL: an earlier test's server on the same (reused) port may have
        # left one of another bound (seen once in CI: 3 requests in flight under a bound of 1)
        forget(made[-1].base_url)
        return made[-1]

    yield make
    for s in made:
        forget(s.base_url)
        s.close()


def settings(tmp_path: Path, base_url: str, **overrides: Any) -> Settings:
    return Settings(
        home=tmp_path,
        llm_base_url=base_url,
        llm_model="m",
        llm_api_key="k",
        llm_response_format="none",
        llm_timeout=30,
        llm_max_retries=0,
        **overrides,
    )


def test_a_bound_of_two_keeps_two_requests_in_flight(slow_server: MakeServer, tmp_path: Path) -> None:
    """Six requests from three clients of one endpoint at once: the server never answers more than two together
    (six at once without the bound), and every request is answered."""
    server = slow_server(latency=0.4)
    clients = [OpenAIClient(settings(tmp_path, server.base_url, llm_max_concurrency=2), cache=False) for _ in range(3)]
    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda i: clients[i % 3].complete(MESSAGES), range(6)))
    assert answers == ["42"] * 6
    assert server.answered == 6
    assert server.most == 2
    assert clients[0].limit is clients[1].limit and clients[0].limit.bound == 2


def test_a_streamed_answer_holds_its_slot_until_read(slow_server: MakeServer, tmp_path: Path) -> None:
    server = slow_server(latency=0.3)
    client = OpenAIClient(settings(tmp_path, server.base_url, llm_max_concurrency=1), cache=False)

    def streamed(_: int) -> str:
        return "".join(
            client._stream(MESSAGES, model="m", temperature=0.0, max_tokens=None, response_format=None, purpose="test")
        )

    with ThreadPoolExecutor(3) as pool:
        assert list(pool.map(streamed, range(3))) == ["42"] * 3
    assert server.most == 1 and client.limit.in_flight == 0


def test_the_default_bound_is_the_servers_slots(slow_server: MakeServer, tmp_path: Path) -> None:
    """No llm_max_concurrency: llama-server's /props total_slots; a server that reports none gets DEFAULT_BOUND."""
    llama = slow_server(latency=0.0, slots=3)
    other = slow_server(latency=0.0, slots=None)
    limit = endpoint_limit(settings(tmp_path, llama.base_url))
    assert (limit.bound, limit.source) == (3, "server")
    assert endpoint_limit(settings(tmp_path, other.base_url)).bound == DEFAULT_BOUND


def test_bad_bound_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="llm_max_concurrency"):
        Settings(home=tmp_path, llm_max_concurrency=0)


def test_llama_server_gets_a_context_per_slot() -> None:
    """--parallel N: N slots, each with the whole context (-c N x ctx, no unified KV cache)."""
    args = server_args("llama-server", Path("m.gguf"), "m", 8099, 4096, 2, parallel=4)
    assert args[args.index("--parallel") + 1] == "4"
    assert args[args.index("-c") + 1] == str(4 * 4096)
    assert "--no-kv-unified" in args
    one = server_args("llama-server", Path("m.gguf"), "m", 8099, 4096, 2)
    assert one[one.index("--parallel") + 1] == "1" and one[one.index("-c") + 1] == "4096"


@pytest.mark.slow  # starts llama.cpp's llama-server
def test_llm_start_parallel_sets_the_bound(llm_installed: None, tmp_path: Path) -> None:
    """kbgraph llm start --parallel 2: llama-server has two slots of the asked context each, the launch record and
    the exports line say 2, and a client of that server is bounded by 2 without llm_max_concurrency."""
    import subprocess
    import sys

    from kbgraph.llm.llama import http_get
    from kbgraph.llm.server import LocalLLMServer
    from tests.llm_server_fixture import free_port

    port = free_port()
    home = tmp_path / "home"
    cli = [sys.executable, "-m", "kbgraph.cli", "--home", str(home), "llm"]
    out = subprocess.run(
        [*cli, "start", "--port", str(port), "--ctx", "1024", "--parallel", "2", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    try:
        assert out.returncode == 0, out.stderr
        status = json.loads(out.stdout)
        assert status["parallel"] == 2 and status["exports"].endswith("KBGRAPH_LLM_MAX_CONCURRENCY=2")
        code, props = http_get(f"http://127.0.0.1:{port}/props")
        assert code == 200 and json.loads(props)["total_slots"] == 2
        assert json.loads(props)["default_generation_settings"]["n_ctx"] == 1024  # the whole context per slot
        s = Settings(home=home, llm_server_port=port, llm_base_url=status["base_url"], llm_model=status["alias"])
        limit = endpoint_limit(s)
        assert (limit.bound, limit.source) == (2, "server")
        assert LocalLLMServer(s).status().parallel == 2
    finally:
        forget(f"http://127.0.0.1:{port}/v1")
        subprocess.run([*cli, "stop"], capture_output=True, text=True, timeout=120, check=False)
