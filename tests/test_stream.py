"""Streamed answers (issue 16 §3): ``kb.ask(..., stream=True)``, ``kbgraph ask --stream`` and the SSE form of
``POST /v1/kb/{name}/ask``, on a real embedded FalkorDB knowledge base built from examples/docs, with the
scripted LLM (kbgraph.llm.fake: its streamed answers come in pieces) and with the real local llama.cpp server.
The invariant checked everywhere: the deltas after the last reset join to the final ``Answer.answer``, and
the final Answer is the one the same ask gives without streaming."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from kbgraph.errors import LLMError, QueryError
from kbgraph.kb import KnowledgeBase
from kbgraph.llm.base import Messages
from kbgraph.llm.fake import ScriptedLLM
from kbgraph.llm.json_stream import JSONFieldStream
from kbgraph.query.models import AskEvent
from kbgraph.settings import Settings
from tests.llm_server_fixture import LLMServerInfo
from tests.serve_fixture import QUESTION, build_kb, offline, running

ANSWER = 'Kentucky had 12,155 handgun checks in November 2015 ("Handgun" column).'
FAA = "docs/pdf/faa_amt_general_handbook_sample.pdf"


def scripted(answer: str = ANSWER, *, first: str | None = None, chunk_chars: int = 4) -> ScriptedLLM:
    """Algorithm 1 by script: round 1 proposes one sub-question and selects its first candidate, round 2
    proposes nothing; the QA prompt answers ``answer`` (after ``first``, e.g. unusable JSON, when given)."""
    proposals = iter([["How many handgun checks were there in Kentucky?"], []])
    qa = iter([x for x in (first, json.dumps({"answer": answer, "rationale": "the table row"})) if x is not None])

    def respond(messages: Messages) -> str:
        text = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        if "# Classes" in text and "linkable_reasoning" in text:  # method 'auto' (the default): route to pike
            return json.dumps({"rationale": "scripted", "kind": "linkable_reasoning", "subtype": "bridging"})
        if "raise atomic sub-questions" in text:
            return json.dumps({"thinking": "scripted", "sub_questions": next(proposals, [])})
        if "# Sub-Questions You Can Choose From" in text:
            return json.dumps({"thinking": "scripted", "question_idx": 1})
        if "# Paragraph List You Can Choose From" in text:
            return json.dumps({"thinking": "scripted", "paragraph_idx": 1})
        return next(qa)

    return ScriptedLLM(respond, chunk_chars=chunk_chars)


def joined(events: Iterable[AskEvent]) -> str:
    """The deltas after the last reset, joined."""
    text = ""
    for e in events:
        if e.type == "reset":
            text = ""
        elif e.type == "delta":
            text += e.text
    return text


@pytest.fixture(scope="module")
def settings(falkor_settings: Settings, examples_dir: Path) -> Iterator[Settings]:
    s = offline(falkor_settings, name=f"stream{uuid.uuid4().hex[:8]}")
    build_kb(s, examples_dir)
    yield s
    with KnowledgeBase(settings=s) as kb:
        kb.reset()


@pytest.fixture
def kb(settings: Settings) -> Iterator[KnowledgeBase]:
    with KnowledgeBase(settings=settings) as kb:
        yield kb


# --- the JSON field reader ------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [1, 2, 3, 5, 1000])
def test_json_field_stream_decodes_the_answer_piece_by_piece(size: int) -> None:
    value = {"rationale": 'an "answer": {nested}', "meta": {"answer": "no"}, "answer": 'a "q" \\ é 😀\n\t/x'}
    for text in (json.dumps(value), "Sure:\n```json\n" + json.dumps(value, ensure_ascii=False) + "\n```"):
        out: list[str] = []
        reader = JSONFieldStream("answer", out.append)
        for i in range(0, len(text), size):
            reader.text(text[i : i + size])
        assert "".join(out) == value["answer"] and all(out)
    out, restarts = [], []
    reader = JSONFieldStream("answer", out.append, lambda: restarts.append(1))
    reader.text('{"answer": "cut o')
    reader.restart()
    reader.text('{"answer": 42}')  # not a string: nothing
    assert out == ["cut o"] and restarts == [1]


# --- the library ----------------------------------------------------------------------------------------
def test_streamed_pike_answer_equals_the_plain_one(kb: KnowledgeBase) -> None:
    kb.llm = scripted()
    plain = kb.ask(QUESTION, method="pike")
    kb.llm = llm = scripted()
    with kb.ask(QUESTION, method="pike", stream=True) as stream:
        events = list(stream)
    assert [e.type for e in events][-1] == "answer" and sum(e.type == "answer" for e in events) == 1
    final = events[-1].answer
    assert final is not None
    assert final.model_dump() == plain.model_dump() and final.answer == ANSWER
    deltas = [e.text for e in events if e.type == "delta"]
    assert len(deltas) >= 2 and "".join(deltas) == ANSWER and joined(events) == ANSWER
    # the rounds come as they finish, before the answer's first delta
    rounds = [e.round for e in events if e.type == "round"]
    assert rounds == final.trace and len(rounds) == 2
    kinds = [e.type for e in events]
    assert max(i for i, k in enumerate(kinds) if k == "round") < kinds.index("delta")
    assert [r["stream"] for r in llm.requests] == [False] * (len(llm.requests) - 1) + [True]  # only the QA prompt


def test_naive_and_cot_stream_and_self_ask_comes_whole(kb: KnowledgeBase) -> None:
    for method in ("naive", "cot"):
        kb.llm = ScriptedLLM([json.dumps({"answer": ANSWER, "rationale": "r"})], chunk_chars=3)
        events = list(kb.ask(QUESTION, method=method, stream=True))
        assert len([e for e in events if e.type == "delta"]) > 2 and joined(events) == ANSWER
        assert events[-1].answer is not None and events[-1].answer.method == method
    kb.llm = ScriptedLLM(["Are follow up questions needed here: No.\nSo the final answer is: 12,155"])
    events = list(kb.ask(QUESTION, method="self_ask", stream=True))
    assert [e.type for e in events] == ["delta", "answer"] and events[0].text == "12,155"


def test_unusable_json_resets_the_deltas(kb: KnowledgeBase) -> None:
    kb.llm = scripted(first='{"answer": "Kentucky had many', chunk_chars=5)  # cut off: the repair request follows
    events = list(kb.ask(QUESTION, method="pike", stream=True))
    kinds = [e.type for e in events]
    assert "reset" in kinds and kinds.index("delta") < kinds.index("reset")
    assert events[-1].answer is not None
    assert joined(events) == events[-1].answer.answer == ANSWER


def test_without_an_llm_the_retrieval_answer_comes_at_once(kb: KnowledgeBase) -> None:
    kb.llm = None
    plain = kb.ask(QUESTION)
    events = list(kb.ask(QUESTION, stream=True))
    assert [e.type for e in events] == ["delta", "answer"]
    assert events[0].text == plain.answer and "12,155" in plain.answer
    final = events[1].answer
    assert final is not None
    assert final.retrieval_only and final.citations == plain.citations and final.chunks == plain.chunks


def test_errors_and_closing(kb: KnowledgeBase) -> None:
    with pytest.raises(QueryError):
        kb.ask("   ", stream=True)  # at once, before any iteration
    with pytest.raises(QueryError, match="no-such"):
        kb.ask(QUESTION, method="no-such", stream=True)
    kb.llm = ScriptedLLM([LLMError("the LLM server at x is unreachable")])  # Self-Ask's first call fails
    stream = kb.ask(QUESTION, method="self_ask", stream=True)
    with pytest.raises(LLMError, match="unreachable"):
        next(stream)
    # a stream closed after its first event stops the ask; the knowledge base works on
    kb.llm = scripted()
    stream = kb.ask(QUESTION, method="pike", stream=True)
    assert next(stream).type == "round"
    stream.close()
    assert list(stream) == []
    kb.llm = scripted()
    assert kb.ask(QUESTION, method="pike").answer == ANSWER


def test_save_with_stream(kb: KnowledgeBase) -> None:
    kb.llm = scripted()
    final = kb.ask(QUESTION, method="pike", save=True, stream=True).answer()
    assert kb.last_saved is not None and kb.browse("question", question=kb.last_saved.question_id)
    assert final.answer == ANSWER


# --- the command line -----------------------------------------------------------------------------------
def test_cli_ask_stream(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kbgraph import cli
    from kbgraph.cli import common

    monkeypatch.setattr(common, "settings", lambda: settings)
    monkeypatch.setattr("kbgraph.kb.get_llm", lambda _settings: scripted())
    assert cli.main(["ask", QUESTION, "--stream", "--trace"]) == 0
    out = capsys.readouterr().out
    assert ANSWER in out and "Citations" in out
    assert out.index("round 1:") < out.index("round 2:") < out.index("Answer") < out.index(ANSWER)
    assert "Rationale" not in out  # the rounds were printed as they finished, not again at the end
    assert "class: linkable_reasoning (bridging) → route L2:pike" in out  # the default method 'auto' routed

    assert cli.main(["ask", QUESTION, "--stream", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[-1]["type"] == "answer" and lines[-1]["answer"]["answer"] == ANSWER
    assert (lines[-1]["answer"]["question_class"], lines[-1]["answer"]["route"]) == ("linkable_reasoning", "L2:pike")
    assert "".join(x["text"] for x in lines if x["type"] == "delta") == ANSWER


# --- HTTP: Server-Sent Events ---------------------------------------------------------------------------
def parse_sse(text: str) -> list[tuple[str, dict[str, Any]]]:
    """(event, data) of each message of an SSE body."""
    out = []
    for block in text.replace("\r\n", "\n").strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        out.append((fields.get("event", "message"), json.loads(fields["data"])))
    return out


def test_sse_ask(settings: Settings) -> None:
    httpx = pytest.importorskip("httpx")
    from kbgraph.serve.app import create_app

    app = create_app(settings)
    with running(app) as url, httpx.Client(base_url=url, timeout=120) as c:
        ask = f"/v1/kb/{settings.name}/ask"
        app.state.pool.shared(settings.name).llm = scripted()
        plain = c.post(ask, json={"question": QUESTION, "method": "pike"}).json()
        app.state.pool.shared(settings.name).llm = scripted()
        with c.stream(
            "POST", ask, json={"question": QUESTION, "method": "pike"}, headers={"Accept": "text/event-stream"}
        ) as r:
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
            messages = parse_sse(r.read().decode())
        kinds = [k for k, _ in messages]
        assert kinds[-2:] == ["answer", "done"] and kinds[:2] == ["round", "round"] and "error" not in kinds
        deltas = [d["text"] for k, d in messages if k == "delta"]
        answer = messages[-2][1]
        assert len(deltas) >= 2 and "".join(deltas) == answer["answer"] == ANSWER
        assert answer == plain and [d for k, d in messages if k == "round"] == answer["trace"]

        # "stream": true; an error after the stream began is an event with the library's status
        app.state.pool.shared(settings.name).llm = ScriptedLLM([LLMError("the LLM server at x is unreachable")])
        r = c.post(ask, json={"question": QUESTION, "method": "self_ask", "stream": True})
        messages = parse_sse(r.text)
        assert [k for k, _ in messages] == ["error", "done"]
        assert messages[0][1]["status"] == 502 and "unreachable" in messages[0][1]["detail"]
        # a bad question or method is refused before the stream
        bad = c.post(ask, json={"question": QUESTION, "method": "no-such", "stream": True})
        assert bad.status_code == 400 and "no-such" in bad.json()["detail"]
        # offline: one delta
        app.state.pool.shared(settings.name).llm = None
        messages = parse_sse(c.post(ask, json={"question": QUESTION, "stream": True}).text)
        assert [k for k, _ in messages] == ["delta", "answer", "done"]
        assert messages[0][1]["text"] == messages[1][1]["answer"] and messages[1][1]["retrieval_only"]


# --- the real local LLM server ----------------------------------------------------------------------------
def test_stream_with_the_real_llm_server(
    falkor_settings: Settings, llm_server: LLMServerInfo, examples_dir: Path, tmp_path: Path
) -> None:
    """One streamed naive-RAG ask against llama.cpp's server (SmolLM2-135M): the OpenAI client's streaming,
    usage from the server's last chunk. The model's answer is not under test, only the machinery."""
    base = offline(falkor_settings, name=f"streamllm{uuid.uuid4().hex[:6]}", chunk_tokens=128)
    build_kb(base, examples_dir, files=(FAA,))
    s = base.updated(
        {
            "llm_base_url": llm_server.base_url,
            "llm_model": llm_server.model,
            "llm_api_key": SecretStr("none"),
            "llm_cache_dir": tmp_path / "llm-cache",
            "llm_timeout": 300.0,
            "llm_max_tokens": 96,
            "naive_k": 2,
        }
    )
    with KnowledgeBase(settings=s) as kb:
        events = []
        seen_before_answer = 0
        for event in kb.ask("What is a self-locking nut?", method="naive", stream=True):
            events.append(event)
            if event.type == "answer":
                seen_before_answer = sum(e.type == "delta" for e in events)
        final = events[-1].answer
        assert events[-1].type == "answer" and seen_before_answer >= 2, events
        assert joined(events) == final.answer  # type: ignore[union-attr]
        if not final.answer:  # type: ignore[union-attr]  # (a 135M model may ramble past max_tokens: cut JSON, repaired, still cut)
            assert "reset" in [e.type for e in events] and "no valid answer JSON" in final.rationale  # type: ignore[union-attr]
        assert final.usage.calls >= 1 and final.usage.prompt_tokens > 0 and final.usage.completion_tokens > 0  # type: ignore[union-attr]
        assert final.usage.cached_calls == 0 and final.citations  # type: ignore[union-attr]
        kb.reset()
