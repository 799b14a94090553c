"""The LLM layer against a real OpenAI-compatible HTTP server on 127.0.0.1 (stdlib http.server in a thread),
driven by the real OpenAIClient; and ScriptedLLM through the same JSON code path."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol, cast

import pytest
from pydantic import BaseModel

from kbgraph.errors import KBGraphError, LLMContextError, LLMError
from kbgraph.llm import LLM, OpenAIClient, ScriptedLLM, Usage, extract_json, get_llm
from kbgraph.settings import Settings

MESSAGES = [{"role": "user", "content": "What is 6 x 7?"}]


class Answer(BaseModel):
    answer: int
    reason: str


# --- the fake server ---------------------------------------------------------------------------------


def ok(text: str, prompt_tokens: int = 11, completion_tokens: int = 7, finish: str = "stop") -> dict[str, Any]:
    return {"status": 200, "text": text, "usage": (prompt_tokens, completion_tokens), "finish": finish}


def error(status: int, message: str = "boom", code: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"status": status, "error": {"message": message, "type": "error", "code": code, **extra}}


def slow(seconds: float, then: dict[str, Any]) -> dict[str, Any]:
    return {**then, "sleep": seconds}


class FakeOpenAI:
    """POST /v1/chat/completions answered from a queue of behaviours; every request body is recorded."""

    def __init__(self) -> None:
        self.script: deque[dict[str, Any]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                fake.requests.append(body)
                fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                if self.path != "/v1/chat/completions":
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                behaviour = fake.script.popleft() if fake.script else error(500, "script exhausted")
                if behaviour.get("sleep"):
                    time.sleep(behaviour["sleep"])
                if behaviour["status"] != 200:
                    return self._send(behaviour["status"], {"error": behaviour["error"]})
                prompt, completion = behaviour["usage"]
                if body.get("stream"):
                    return self._stream(body, behaviour["text"], behaviour.get("finish", "stop"))
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{len(fake.requests)}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": behaviour["text"]},
                                "finish_reason": behaviour.get("finish", "stop"),
                            }
                        ],
                        "usage": {
                            "prompt_tokens": prompt,
                            "completion_tokens": completion,
                            "total_tokens": prompt + completion,
                        },
                    },
                )

            def _stream(self, body: dict[str, Any], text: str, finish: str) -> None:
                """Server-sent events: the text in 5-character deltas, then the finish reason, then [DONE]."""
                chunk = {
                    "id": "chatcmpl-s",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": body.get("model"),
                }
                events = [
                    {**chunk, "choices": [{"index": 0, "delta": {"content": text[i : i + 5]}, "finish_reason": None}]}
                    for i in range(0, len(text), 5)
                ]
                events.append({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
                data = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and hung up

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def queue(self, *behaviours: dict[str, Any]) -> None:
        self.script.extend(behaviours)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    fake = FakeOpenAI()
    fake.thread.start()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


class MakeClient(Protocol):
    """The ``make_client`` fixture: an OpenAIClient of the fake server (closed at the test's end)."""

    def __call__(self, cache: bool = ..., **overrides: Any) -> OpenAIClient: ...


@pytest.fixture
def make_client(server: FakeOpenAI, tmp_path: Path) -> Iterator[MakeClient]:
    clients: list[OpenAIClient] = []

    def make(cache: bool = False, **overrides: Any) -> OpenAIClient:
        values = {
            "home": tmp_path / "home",
            "llm_base_url": server.base_url,
            "llm_api_key": "sk-test",
            "llm_model": "test-model",
            "llm_temperature": 0.2,
            "llm_timeout": 5.0,
            "llm_max_retries": 3,
            "llm_response_format": "none",
            **overrides,
        }
        client = OpenAIClient(Settings(**values), cache=cache, retry_wait=0.01, retry_max_wait=0.05)
        clients.append(client)
        return client

    yield make
    for c in clients:
        c.close()


# --- plain completions, retries, errors ----------------------------------------------------------------


def test_normal_answer(server: FakeOpenAI, make_client: MakeClient) -> None:
    server.queue(ok("42", prompt_tokens=13, completion_tokens=2))
    llm = make_client()
    assert isinstance(llm, LLM)
    assert llm.complete(MESSAGES) == "42"
    assert len(server.requests) == 1
    body = server.requests[0]
    assert body["model"] == "test-model"
    assert body["messages"] == MESSAGES
    assert body["temperature"] == 0.2
    assert "response_format" not in body
    assert body["max_tokens"] == 1024  # llm_max_tokens: a small model that does not stop is bounded
    assert server.headers[0].get("authorization") == "Bearer sk-test"
    assert llm.usage.calls == 1
    assert (llm.usage.prompt_tokens, llm.usage.completion_tokens) == (13, 2)
    assert llm.usage.cached_calls == 0 and llm.usage.seconds > 0


def test_model_and_temperature_per_call(server: FakeOpenAI, make_client: MakeClient) -> None:
    server.queue(ok("a"))
    llm = make_client()
    llm.complete(MESSAGES, model="other-model", temperature=0.9, max_tokens=64)
    body = server.requests[0]
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("other-model", 0.9, 64)


@pytest.mark.parametrize("status", [429, 500, 503])
def test_transient_error_then_success(server: FakeOpenAI, make_client: MakeClient, status: int) -> None:
    server.queue(error(status), ok("fine"))
    llm = make_client()
    assert llm.complete(MESSAGES) == "fine"
    assert len(server.requests) == 2
    assert llm.usage.calls == 1


def test_timeout_is_retried(server: FakeOpenAI, make_client: MakeClient) -> None:
    server.queue(slow(1.5, ok("too late")), ok("in time"))
    llm = make_client(llm_timeout=0.5)
    started = time.monotonic()
    assert llm.complete(MESSAGES) == "in time"
    assert len(server.requests) == 2
    assert time.monotonic() - started < 1.4  # gave up on the slow answer instead of waiting for it


def test_retries_exhausted(server: FakeOpenAI, make_client: MakeClient) -> None:
    server.queue(*[error(503, "overloaded")] * 3)
    llm = make_client(llm_max_retries=2)
    with pytest.raises(LLMError, match="503") as info:
        llm.complete(MESSAGES)
    assert len(server.requests) == 3
    assert "\n" not in str(info.value)


def test_unauthorized_is_not_retried(server: FakeOpenAI, make_client: MakeClient) -> None:
    server.queue(error(401, "Incorrect API key provided"), ok("never"))
    llm = make_client()
    with pytest.raises(LLMError, match="KBGRAPH_LLM_API_KEY") as info:
        llm.complete(MESSAGES)
    assert isinstance(info.value, KBGraphError)
    assert len(server.requests) == 1
    assert "\n" not in str(info.value)


def test_model_not_found(server: FakeOpenAI, make_client: MakeClient) -> None:
    server.queue(error(404, "model 'nope' not found", code="model_not_found"))
    llm = make_client()
    with pytest.raises(LLMError, match="KBGRAPH_LLM_MODEL"):
        llm.complete(MESSAGES, model="nope")
    assert len(server.requests) == 1


def test_unreachable_server(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, llm_base_url="http://127.0.0.1:9/v1", llm_model="m", llm_max_retries=1)
    with pytest.raises(LLMError, match="KBGRAPH_LLM_BASE_URL"):
        OpenAIClient(settings, cache=False, retry_wait=0.01).complete(MESSAGES)


# --- JSON answers ------------------------------------------------------------------------------------------


def test_json_answer_with_fences_and_prose(server: FakeOpenAI, make_client: MakeClient) -> None:
    server.queue(ok('Sure!\n```json\n{"answer": 42, "reason": "6*7"}\n```\nHope that helps.'))
    llm = make_client()
    result = llm.complete_json(MESSAGES, Answer)
    assert result == Answer(answer=42, reason="6*7")
    body = server.requests[0]
    system = body["messages"][0]
    assert system["role"] == "system" and "JSON object" in system["content"]
    assert '"reason"' in system["content"]  # the JSON schema is in the prompt
    assert body["messages"][1:] == MESSAGES
    assert "response_format" not in body  # json mode is off by default


def test_fixed_json_object_mode_sends_response_format(server: FakeOpenAI, make_client: MakeClient) -> None:
    server.queue(ok('{"answer": 1, "reason": "r"}'))
    llm = make_client(llm_response_format="json_object")
    llm.complete_json([{"role": "system", "content": "You are terse."}, *MESSAGES], Answer)
    body = server.requests[0]
    assert body["response_format"] == {"type": "json_object"}
    assert [m["role"] for m in body["messages"]] == ["system", "user"]  # instructions merged, one system message
    assert body["messages"][0]["content"].startswith("You are terse.")


def test_auto_sends_the_schema_as_json_schema_and_remembers_it(
    server: FakeOpenAI, make_client: MakeClient, tmp_path: Path
) -> None:
    server.queue(ok('{"answer": 42, "reason": "6*7"}'))
    llm = make_client(llm_response_format="auto", llm_cache_dir=tmp_path / "c")
    assert llm.complete_json(MESSAGES, Answer).answer == 42
    fmt = server.requests[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Answer"
    assert fmt["json_schema"]["schema"] == Answer.model_json_schema() and fmt["json_schema"]["strict"] is False
    memory = json.loads((tmp_path / "c" / "response_formats.json").read_text())
    assert memory == {f"{server.base_url}|test-model": "json_schema"}


def test_auto_falls_back_per_endpoint_and_does_not_probe_again(
    server: FakeOpenAI, make_client: MakeClient, tmp_path: Path
) -> None:
    """llama-cpp-python refuses json_schema with a 500; a second server refuses the schema field: the client
    steps down to json_object, and a new client on the same endpoint starts there."""
    server.queue(
        error(500, "1 validation error: response_format.type Input should be 'text' or 'json_object'"),
        error(400, "response_format: unknown field 'schema'"),
        ok('{"answer": 42, "reason": "6*7"}'),
    )
    llm = make_client(llm_response_format="auto", llm_cache_dir=tmp_path / "c")
    assert llm.complete_json(MESSAGES, Answer).answer == 42
    sent = cast(list[dict[str, Any]], [r.get("response_format") for r in server.requests])  # (each request sent one)
    assert [f["type"] for f in sent] == ["json_schema", "json_object", "json_object"]
    assert "schema" in sent[1] and "schema" not in sent[2]
    assert llm.usage.calls == 1  # the refused requests were not answers, and the 500 was not retried
    server.queue(ok('{"answer": 7, "reason": "again"}'))
    again = make_client(llm_response_format="auto", llm_cache_dir=tmp_path / "c")
    assert again.complete_json(MESSAGES, Answer).answer == 7
    assert server.requests[3]["response_format"] == {"type": "json_object"}
    assert len(server.requests) == 4


def test_a_fixed_mode_the_server_refuses_is_a_clear_error(server: FakeOpenAI, make_client: MakeClient) -> None:
    server.queue(error(400, "response_format json_schema is not supported"))
    llm = make_client(llm_response_format="json_schema")
    with pytest.raises(LLMError, match="KBGRAPH_LLM_RESPONSE_FORMAT=auto"):
        llm.complete_json(MESSAGES, Answer)
    assert len(server.requests) == 1


def test_prompt_over_the_context_names_the_prompt_and_its_tokens(server: FakeOpenAI, make_client: MakeClient) -> None:
    """llama.cpp's server answers 400 exceed_context_size_error with n_prompt_tokens and n_ctx."""
    server.queue(
        error(
            400, "the request exceeds the available context size, try increasing it", n_prompt_tokens=5210, n_ctx=4096
        )
    )
    llm = make_client(llm_response_format="auto")
    with pytest.raises(LLMContextError) as info:
        llm.complete_json(MESSAGES, Answer)
    msg = str(info.value)
    assert "Answer prompt" in msg and "5,210 tokens" in msg and "4,096" in msg and "--ctx" in msg
    assert "\n" not in msg
    assert len(server.requests) == 1  # not retried, not mistaken for a refused response_format


def test_openai_context_length_message_is_parsed(server: FakeOpenAI, make_client: MakeClient) -> None:
    server.queue(
        error(
            400,
            "This model's maximum context length is 8192 tokens. However, your messages "
            "resulted in 9001 tokens. Please reduce the length of the messages.",
            code="context_length_exceeded",
        )
    )
    with pytest.raises(LLMContextError, match="9,001 tokens.*8,192"):
        make_client().complete(MESSAGES)


def test_json_stats_count_answers_and_repairs_per_prompt(server: FakeOpenAI, make_client: MakeClient) -> None:
    server.queue(ok('{"answer": 1, "reason": "a"}'), ok("no json"), ok('{"answer": 2, "reason": "b"}'))
    llm = make_client()
    llm.complete_json(MESSAGES, Answer)
    llm.complete_json(MESSAGES, Answer)
    report = llm.json_report()["Answer"]
    assert (report["answers"], report["repaired"], report["failed"]) == (2, 1, 0)
    assert report["repair_share"] == 0.5


def test_malformed_json_is_repaired(server: FakeOpenAI, make_client: MakeClient) -> None:
    server.queue(ok('{"answer": "forty-two", "reason": "6*7"}'), ok('{"answer": 42, "reason": "6*7"}'))
    llm = make_client()
    assert llm.complete_json(MESSAGES, Answer).answer == 42
    assert len(server.requests) == 2
    repair = server.requests[1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": '{"answer": "forty-two", "reason": "6*7"}'}
    assert repair[-1]["role"] == "user"
    assert "answer" in repair[-1]["content"] and "integer" in repair[-1]["content"]  # the validation error
    assert llm.usage.calls == 2


def test_malformed_twice_raises(server: FakeOpenAI, make_client: MakeClient) -> None:
    server.queue(ok("I think it is 42."), ok('{"answer": 42'))
    llm = make_client(cache=True)
    with pytest.raises(LLMError, match="Answer") as info:
        llm.complete_json(MESSAGES, Answer)
    assert len(server.requests) == 2
    assert "\n" not in str(info.value)
    assert llm.cache is not None
    assert len(llm.cache) == 0  # failed answers are not replayed from the cache


# --- cache --------------------------------------------------------------------------------------------------


def test_cache_across_instances(server: FakeOpenAI, make_client: MakeClient, tmp_path: Path) -> None:
    server.queue(ok("cached answer", prompt_tokens=5, completion_tokens=3))
    cache_dir = tmp_path / "shared-cache"
    first = make_client(cache=True, llm_cache_dir=cache_dir)
    assert first.complete(MESSAGES) == "cached answer"
    second = make_client(cache=True, llm_cache_dir=cache_dir)
    assert second.complete(MESSAGES) == "cached answer"
    assert len(server.requests) == 1
    assert second.usage == Usage(cached_calls=1)
    assert (first.usage.calls, first.usage.prompt_tokens, first.usage.cached_calls) == (1, 5, 0)
    assert (cache_dir / "responses.sqlite3").is_file()


def test_cache_key_includes_parameters(server: FakeOpenAI, make_client: MakeClient) -> None:
    server.queue(ok("a"), ok("b"), ok("c"))
    llm = make_client(cache=True)
    assert llm.complete(MESSAGES) == "a"
    assert llm.complete(MESSAGES, temperature=0.7) == "b"
    assert llm.complete(MESSAGES, model="m2") == "c"
    assert llm.complete(MESSAGES) == "a"
    assert len(server.requests) == 3 and llm.usage.cached_calls == 1
    assert (llm.settings.home / "llm-cache" / "responses.sqlite3").is_file()  # default folder


def test_cache_concurrent_writers(tmp_path: Path) -> None:
    from kbgraph.llm.cache import ResponseCache

    caches = [ResponseCache(tmp_path) for _ in range(4)]

    def write(i: int) -> None:
        for j in range(25):
            caches[i].put(f"k{i}-{j}", "m", f"v{i}-{j}")

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(caches[0]) == 100 and caches[3].get("k0-24") == "v0-24"


# --- ScriptedLLM, helpers, offline mode -------------------------------------------------------------------


def test_repair_quotes_a_long_answer_in_part_and_a_repair_over_the_context_is_an_unusable_answer() -> None:
    """The repair request quotes at most REPAIR_ECHO_CHARS of the bad answer (a cut answer quoted whole made the
    repair of a table chunk overflow SmolLM2's 4,096-token context, failing the document); a repair that still
    does not fit is an unusable answer (an LLMError caused by a ValueError, which ingestion falls back from
    per chunk), not the LLMContextError of a prompt that does not fit."""
    from kbgraph.llm.base import REPAIR_ECHO_CHARS

    long_bad = "x" * (REPAIR_ECHO_CHARS * 3)
    llm = ScriptedLLM([long_bad, '{"answer": 1, "reason": "r"}'])
    assert llm.complete_json(MESSAGES, Answer) == Answer(answer=1, reason="r")
    quoted = llm.calls[1][-2]["content"]
    assert quoted.startswith("x" * REPAIR_ECHO_CHARS) and len(quoted) < REPAIR_ECHO_CHARS + 60
    assert f"{REPAIR_ECHO_CHARS * 2} more characters" in quoted

    over = ScriptedLLM([long_bad, LLMContextError("the Answer repair prompt has 4,156 tokens, more than 4,096")])
    with pytest.raises(LLMError) as info:
        over.complete_json(MESSAGES, Answer)
    assert not isinstance(info.value, LLMContextError) and isinstance(info.value.__cause__, ValueError)
    assert "repair request does not fit the context" in str(info.value)
    assert over.json_report()["Answer"]["failed"] == 1
    # the first prompt over the context stays a context error
    with pytest.raises(LLMContextError):
        ScriptedLLM([LLMContextError("the Answer prompt has 5,000 tokens")]).complete_json(MESSAGES, Answer)


def test_scripted_llm_shares_json_path() -> None:
    llm = ScriptedLLM(["<think>hmm</think> not json at all", '```json\n{"answer": 42, "reason": "r"}\n```', "plain"])
    assert isinstance(llm, LLM)
    assert llm.complete_json(MESSAGES, Answer) == Answer(answer=42, reason="r")
    assert len(llm.calls) == 2
    assert llm.calls[0][0]["role"] == "system" and "JSON object" in llm.calls[0][0]["content"]
    assert "no JSON object" in llm.calls[1][-1]["content"]  # the repair turn names the error
    assert llm.complete(MESSAGES, temperature=0.5) == "plain"
    assert llm.calls[2] == MESSAGES and llm.requests[2]["temperature"] == 0.5
    assert llm.usage.calls == 3 and llm.remaining == 0

    bad = ScriptedLLM(lambda messages: '{"answer": "x"}')
    with pytest.raises(LLMError):
        bad.complete_json(MESSAGES, Answer)
    assert len(bad.calls) == 2


def test_extract_json() -> None:
    assert json.loads(extract_json('prefix {"a": {"b": 1}} suffix')) == {"a": {"b": 1}}
    assert json.loads(extract_json('```\n{"a": 1}\n```')) == {"a": 1}
    with pytest.raises(ValueError):
        extract_json("no object here")


def test_get_llm_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    llm_vars = ("KBGRAPH_LLM_MODEL", "KBGRAPH_LLM_BASE_URL", "OPENAI_BASE_URL", "KBGRAPH_LLM_API_KEY", "OPENAI_API_KEY")
    for var in llm_vars:
        monkeypatch.delenv(var, raising=False)
    assert get_llm(Settings(home=tmp_path)) is None
    assert get_llm(Settings(home=tmp_path, llm_base_url="http://127.0.0.1:1/v1")) is None
    llm = get_llm(Settings(home=tmp_path, llm_base_url="http://127.0.0.1:1/v1", llm_model="m"), cache=False)
    assert isinstance(llm, OpenAIClient)


def test_import_does_not_load_openai() -> None:
    code = "import sys, kbgraph.llm; assert 'openai' not in sys.modules, 'openai imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)


def test_an_answer_the_server_could_not_parse_counts_as_failed() -> None:
    """llama-server's own parse failure of a constrained answer (an LLMError caused by a JSONAnswerError) is a
    failed answer of that schema in json_report, as an answer that fails validation after its repair is."""
    from pydantic import BaseModel

    from kbgraph.errors import LLMError
    from kbgraph.llm.fake import ScriptedLLM
    from kbgraph.llm.json_answers import JSONAnswerError

    class Probe(BaseModel):
        answer: str

    unusable = LLMError("the LLM server could not use the model's answer to the Probe prompt")
    unusable.__cause__ = JSONAnswerError("The model produced output that does not match the expected format")
    llm = ScriptedLLM([unusable, LLMError("connection refused")])
    for _ in range(2):
        with pytest.raises(LLMError):
            llm.complete_json([{"role": "user", "content": "q"}], Probe)
    report = llm.json_report()["Probe"]
    assert report["failed"] == 1 and report["answers"] == 0  # the server error is not an answer of the model


# --- answers cut by the token limit (finish_reason "length"; issue 28) ------------------------------------


def test_cut_answer_names_the_token_limit(server: FakeOpenAI, make_client: MakeClient) -> None:
    """Both answers stop at max_tokens inside a string: the error says the answer was cut by the token limit,
    names max_tokens and the setting, not "the answer contains no JSON object"; the repair request tells the
    model why; the cuts are counted for the schema."""
    from kbgraph.query.answering import QAOutput

    server.queue(
        ok('{"answer": "Paris", "rationale": "The capital of France is Paris, which', finish="length"),
        ok('{"answer": "Paris", "rationale": "Paris is', finish="length"),
    )
    llm = make_client(llm_max_tokens=64)
    budget = llm.json_max_tokens(QAOutput)
    with pytest.raises(LLMError) as err:
        llm.complete_json(MESSAGES, QAOutput)
    msg = str(err.value)
    assert "cut by the token limit" in msg and f"max_tokens {budget}" in msg and "KBGRAPH_LLM_MAX_TOKENS" in msg
    assert "no JSON object" not in msg
    assert [r["max_tokens"] for r in server.requests] == [budget, budget]
    assert "cut by the token limit" in server.requests[1]["messages"][-1]["content"]
    assert llm.json_report()["QAOutput"]["cut"] == 2 and llm.json_report()["QAOutput"]["failed"] == 1


def test_cut_answer_streamed(server: FakeOpenAI, make_client: MakeClient) -> None:
    """The same through a streamed answer: the finish reason comes in the last event."""
    from kbgraph.llm.json_stream import TextSink
    from kbgraph.query.answering import QAOutput

    class Sink(TextSink):
        def __init__(self) -> None:
            self.pieces: list[str] = []

        def text(self, piece: str) -> None:
            self.pieces.append(piece)

        def restart(self) -> None:
            self.pieces.clear()

    server.queue(ok('{"answer": "Par', finish="length"), ok('{"answer": "Paris", "rationale": ""}'))
    llm = make_client()
    sink = Sink()
    out = llm.complete_json(MESSAGES, QAOutput, sink=sink)
    assert out.answer == "Paris" and "".join(sink.pieces) == '{"answer": "Paris", "rationale": ""}'
    assert all(r.get("stream") for r in server.requests)
    assert "cut by the token limit" in server.requests[1]["messages"][-1]["content"]
    assert llm.json_report()["QAOutput"] == {
        "answers": 1,
        "repaired": 1,
        "failed": 0,
        "cut": 1,
        "salvaged": 0,
        "repair_share": 1.0,
    }


def test_cut_list_answer_keeps_its_whole_items(server: FakeOpenAI, make_client: MakeClient, tmp_path: Path) -> None:
    """A list answer cut by the token limit after whole items: those items are the answer, with no repair
    request; counted cut and salvaged. A replay from the response cache takes the same path (no request), so
    a re-run gives the same answer as the first."""
    from kbgraph.ingest.distill.schemas import AtomicQuestions

    cut = '{"questions": ["Who directed Wild Ride?", "When was Harvey Berman born?", "Who direc'
    server.queue(ok(cut, finish="length"))
    cache_dir = tmp_path / "llm-cache"
    first = make_client(cache=True, llm_cache_dir=cache_dir)
    want = ["Who directed Wild Ride?", "When was Harvey Berman born?"]
    assert first.complete_json(MESSAGES, AtomicQuestions).questions == want
    assert len(server.requests) == 1
    report = first.json_report()["AtomicQuestions"]
    assert (report["cut"], report["salvaged"], report["repaired"], report["failed"]) == (1, 1, 0, 0)
    again = make_client(cache=True, llm_cache_dir=cache_dir)
    assert again.complete_json(MESSAGES, AtomicQuestions).questions == want
    assert len(server.requests) == 1 and again.usage.cached_calls == 1


def test_a_cache_file_from_before_the_cut_column_is_upgraded(tmp_path: Path) -> None:
    """A cache written before cut answers were marked opens, keeps its answers, and then keeps cut ones."""
    import sqlite3

    from kbgraph.llm.cache import ResponseCache
    from kbgraph.llm.json_answers import CutAnswer, cut_answer

    with sqlite3.connect(tmp_path / ResponseCache.FILENAME) as conn:
        conn.execute(
            "CREATE TABLE responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, response TEXT NOT NULL, "
            "created REAL NOT NULL)"
        )
        conn.execute("INSERT INTO responses VALUES ('old', 'm', 'an old answer', 0)")
    cache = ResponseCache(tmp_path)
    assert cache.get("old") == "an old answer" and not isinstance(cache.get("old"), CutAnswer)
    cache.put("new", "m", cut_answer('{"questions": ["A?", "B', 954))
    hit = cache.get("new")
    assert isinstance(hit, CutAnswer) and hit.max_tokens == 954 and hit == '{"questions": ["A?", "B'
    assert isinstance(ResponseCache(tmp_path).get("new"), CutAnswer)  # opened again: no second ALTER


def test_json_budget_from_the_schema(server: FakeOpenAI, make_client: MakeClient) -> None:
    """A JSON request asks for max(llm_max_tokens, the schema's budget); a plain completion for the setting."""
    from kbgraph.llm.bounds import token_budget
    from kbgraph.query.methods.migres import LeafOutput

    server.queue(ok('{"useful_information": []}'), ok('{"useful_information": []}'), ok("fine"))
    need = token_budget(LeafOutput)
    small, large = make_client(llm_max_tokens=16), make_client(llm_max_tokens=need + 100)
    small.complete_json(MESSAGES, LeafOutput)
    large.complete_json(MESSAGES, LeafOutput)
    small.complete(MESSAGES)
    assert [r["max_tokens"] for r in server.requests] == [need, need + 100, 16]
