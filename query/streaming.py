"""Streamed answers: ``KnowledgeBase.ask(..., stream=True)``, ``kbgraph ask --stream`` and the
SSE form of ``POST /v1/kb/{name}/ask`` all read an :class:`AnswerStream`.

The ask runs as it does without streaming (kbgraph.query.ask, the same methods and LLM requests), in a worker
thread, on a ``QueryContext`` whose ``events`` hands what the method produces to the reader as
:class:`~kbgraph.query.models.AskEvent` items: the final answer's text as the LLM writes it (the ``answer``
field of the QA prompt's JSON, PIKE-RAG §5.3.2 Algorithm 1 line 14 and the baselines of §6.1, read while it is
generated: ``kbgraph.llm.json_stream``), Algorithm 1's rounds as they finish, and last the ``Answer``.

The deltas after the last ``reset`` always join to ``Answer.answer``: at the end the stream compares them with
the final answer and sends what is missing (an answer that was not streamed, e.g. a retrieval-only answer or
Self-Ask's, comes as one delta), or a ``reset`` and the whole answer when it differs from what was streamed.
"""

from __future__ import annotations

import queue
import contextvars
import threading
from collections.abc import Callable, Iterator

from kbgraph.query.ask import answer_question, clean_question
from kbgraph.query.context import QueryContext
from kbgraph.query.methods.registry import get_method
from kbgraph.query.models import Answer, AskEvent

__all__ = ["AnswerStream", "StreamClosed", "stream_answer"]


class StreamClosed(Exception):
    """Raised in the worker when the reader closed the stream: the ask stops at its next event."""


class AnswerStream(Iterator[AskEvent]):
    """An iterator of ``AskEvent``: deltas, resets and rounds while ``run(events)`` works in a worker thread
    (started by the first ``next``), then one ``answer`` event with the Answer ``run`` returned. An exception
    of ``run`` (QueryError, LLMError, StoreError, ...) is raised by ``next`` as it is. ``close()`` (also on
    leaving a ``with`` block) stops the worker at its next event and waits for it, so the knowledge base's
    store is free again when it returns."""

    def __init__(self, run: Callable[[Callable[[AskEvent], None]], Answer]):
        self._run = run
        # events, then the Answer or the exception of run, then None (the end)
        self._queue: queue.Queue[AskEvent | Answer | BaseException | None] = queue.Queue()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self._context = contextvars.copy_context()
        self._streamed = ""  # delta text since the last reset
        self._pending: list[AskEvent] = []
        self._finished = False

    # --- the worker --------------------------------------------------------------------------------
    def _event(self, event: AskEvent) -> None:
        if self._closed.is_set():
            raise StreamClosed("the reader closed the answer stream")
        self._queue.put(event)

    def _work(self) -> None:
        try:
            self._queue.put(self._run(self._event))
        except StreamClosed:
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the reader, who raises it
            self._queue.put(exc)
        finally:
            self._queue.put(None)

    # --- the reader --------------------------------------------------------------------------------
    def __iter__(self) -> AnswerStream:
        return self

    def __next__(self) -> AskEvent:
        if self._pending:
            return self._pending.pop(0)
        if self._finished or self._closed.is_set():
            raise StopIteration
        if self._thread is None:
            # the worker runs in the context the stream was made in: its document scope (kbgraph.store.scope)
            self._thread = threading.Thread(
                target=self._context.run, args=(self._work,), name="kbgraph-ask-stream", daemon=True
            )
            self._thread.start()
        item = self._queue.get()
        if isinstance(item, AskEvent):
            if item.type == "delta":
                self._streamed += item.text
            elif item.type == "reset":
                self._streamed = ""
            return item
        self._finished = True
        if item is None:
            raise StopIteration
        if isinstance(item, BaseException):
            raise item
        value = item
        self._pending = [*self._reconcile(value.answer), AskEvent(type="answer", answer=value)]
        return self._pending.pop(0)

    def _reconcile(self, final: str) -> list[AskEvent]:
        """The events that make the deltas since the last reset equal ``final``."""
        if final == self._streamed:
            return []
        if final.startswith(self._streamed):
            return [AskEvent(type="delta", text=final[len(self._streamed) :])]
        out = [AskEvent(type="reset")] if self._streamed else []
        return out + ([AskEvent(type="delta", text=final)] if final else [])

    def answer(self) -> Answer:
        """Read the rest of the stream and return the final Answer."""
        for event in self:
            if event.type == "answer" and event.answer is not None:
                return event.answer
        raise RuntimeError("the answer stream ended without an answer (it was closed)")

    def close(self, *, wait: bool = True) -> None:
        """Stop the ask (at its next event) and, with ``wait``, wait for the worker to end. Idempotent."""
        self._closed.set()
        thread = self._thread
        if wait and thread is not None and thread is not threading.current_thread():
            thread.join()

    def __enter__(self) -> AnswerStream:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        # Ctrl-C: do not wait for an LLM request to end (the worker is a daemon thread)
        self.close(wait=exc_type is None or not issubclass(exc_type, KeyboardInterrupt))

    def __del__(self) -> None:
        self._closed.set()  # an abandoned stream stops its worker (without waiting for it)


def stream_answer(
    question: str,
    ctx: QueryContext | Callable[[], QueryContext],
    *,
    method: str | None = None,
    k: int = 5,
    explain: bool = False,
    then: Callable[[Answer], object] | None = None,
) -> AnswerStream:
    """``answer_question(question, ctx, method=, k=, explain=)`` as an :class:`AnswerStream`. ``ctx``: the
    QueryContext, or a function making it, called in the worker (connecting the store, loading the embedder);
    ``then(answer)`` runs in the worker after the ask, before the ``answer`` event (e.g. saving the rationale).
    Raises QueryError at once for an invalid question or an unknown method; errors of the store, the embedder
    and the LLM come from ``next``."""
    question = clean_question(question)  # a Question already when KnowledgeBase.ask cleaned it
    row = None if method is None else get_method(method)

    def run(events: Callable[[AskEvent], None]) -> Answer:
        context = ctx if isinstance(ctx, QueryContext) else ctx()
        answer = answer_question(question, context.with_events(events), method=row, k=k, explain=explain)
        if then is not None:
            then(answer)
        return answer

    return AnswerStream(run)
