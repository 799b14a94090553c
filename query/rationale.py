"""Saved rationales: ``kbgraph ask --save`` writes why an answer came out as it did into the graph, so that a
person can follow it in Neo4j Browser (``kbgraph browse question``).

Graph written for one :class:`~kbgraph.query.models.Answer`, in one unit of work (``store.transaction``;
on FalkorDB a failure deletes the half-written Question again)::

    (:Question {id, text, asked_at, answer, method, rationale, retrieval_only, rounds,
                question_class, question_subtype, route})
    (:Question)-[:USED {round, score, rank}]->(:Chunk)
    (:Question)-[:PROPOSED {round}]->(:SubQuestion {id, text, round, order, fallback, question_id})
    (:SubQuestion)-[:MATCHED {score, rank, selected}]->(:AtomicQuestion)

- question_class, question_subtype, route: method 'auto''s classification and level (PIKE-RAG §3.2, §4.2;
  kbgraph.query.methods.classify), e.g. 'linkable_reasoning', 'bridging', 'L2:pike'; absent for other methods.
- USED: the chunks the answer rests on: the cited chunks of a retrieval-only answer, else the LLM's context
  (``Answer.chunks``; the citations when it is empty). ``round`` is the Algorithm 1 round (PIKE-RAG §5.3.2,
  paper 003 §3.4) in which the chunk joined the context; for Self-Ask the round of the follow-up question
  that retrieved it; 0 for retrieval-only answers ('propagation', 'hierarchical', 'dense', 'bm25') and
  single-shot baselines ('naive', 'naive_hr'). ``score``: the chunk's score as the method computed it
  (propagated score, or the cosine similarity of the selected atomic question). ``rank``: its position in
  the answer's context (0 = first).
- PROPOSED / SubQuestion: each round's proposals (Algorithm 1 line 3), in order. When a round fell back to
  retrieving with the original question (``TraceRound.fallback``), that question appears as a SubQuestion with
  ``fallback`` set, so that its MATCHED candidates have a home.
- MATCHED: the atomic-question candidates of each proposal (line 4), ``score`` = cosine similarity in
  [-1, 1], ``rank`` = position among the round's candidates, ``selected`` = chosen in line 5. Candidates that
  are chunks, not atomic questions (backup retrieval 2, Self-Ask), have no MATCHED edge; the chunk that was
  chosen is reached through USED.

Ids: ``question:<24 hex>`` from the question text, method and ``asked_at`` (ISO 8601 UTC, microseconds), so
every ask is its own node and saving the same record twice is idempotent; SubQuestion ids derive from the
Question id, round, position and text.

Deleting a document (``kbgraph delete``, re-ingesting a changed file) detaches and deletes its chunks and atomic
questions, and their USED / MATCHED edges with them: no rationale edge can dangle. The Question and its
SubQuestions stay, with the answer text, as the record of what was asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from kbgraph.models import stable_id
from kbgraph.query.models import Answer, TraceRound, TraceStep
from kbgraph.store.base import GraphStore


class SavedRationale(BaseModel):
    """What ``save_answer`` wrote. Counts are edges actually created (chunks or atomic questions deleted
    since the answer was computed are skipped)."""

    question_id: str
    asked_at: str
    used: int = 0
    sub_questions: int = 0
    matched: int = 0


class RationaleRows(BaseModel):
    """The rows of one saved answer, as the ``cypher/rationale/`` statements take them."""

    question: dict[str, Any]
    used: list[dict[str, Any]]
    sub_questions: list[dict[str, Any]]
    matched: list[dict[str, Any]]


def now_iso() -> str:
    """The current UTC time, ISO 8601 with microseconds."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def question_id(text: str, method: str, asked_at: str) -> str:
    """The id of the Question node of one ask."""
    return stable_id("question", text, method, asked_at)


def _used_rows(answer: Answer) -> list[dict[str, Any]]:
    joined: dict[str, int] = {}  # chunk id -> round that put it into the context
    retrieved: dict[str, int] = {}  # chunk id -> first round whose candidates include it
    for rnd in answer.trace:
        if not isinstance(rnd, TraceRound):  # MIGRES / HiRAG rounds: USED carries round 0 for them
            continue
        if rnd.chunk_id and rnd.chunk_id not in joined:
            joined[rnd.chunk_id] = rnd.round
        for cand in rnd.candidates:
            retrieved.setdefault(cand.chunk_id, rnd.round)
    scores = {c.id: float(c.score) for c in answer.chunks}
    if answer.retrieval_only or not answer.chunks:
        ids = [c.chunk_id for c in answer.citations]  # the evidence the answer cites
    else:
        ids = [c.id for c in answer.chunks]  # the LLM's context
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for cid in ids:
        if not cid or cid in seen:
            continue
        seen.add(cid)
        if answer.retrieval_only:
            round_no = 0
        else:
            ran = answer.route.partition(":")[2] if answer.route else answer.method  # 'auto': the routed method
            round_no = joined.get(cid, retrieved.get(cid, 0)) if ran in ("pike", "self_ask", "self_ask_hr") else 0
        rows.append({"chunk_id": cid, "round": round_no, "score": round(scores.get(cid, 0.0), 6), "rank": len(rows)})
    return rows


def _round_rows(qid: str, question: str, rnd: TraceStep) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    subs: dict[str, dict[str, Any]] = {}  # query text -> SubQuestion row

    def sub(text: str, fallback: str) -> dict[str, Any]:
        if text not in subs:
            order = len(subs)
            subs[text] = {
                "id": stable_id("subq", qid, str(rnd.round), str(order), text),
                "text": text,
                "round": rnd.round,
                "order": order,
                "fallback": fallback,
            }
        return subs[text]

    if not isinstance(rnd, TraceRound):  # MIGRES / HiRAG: their queries or sub-questions, no MATCHED edges
        for text in rnd.sub_questions():
            if text.strip():
                sub(text, "")
        return list(subs.values()), []
    for proposal in rnd.proposals:
        if proposal.strip():
            sub(proposal, "")
    matched: dict[tuple[str, str], dict[str, Any]] = {}
    for rank, cand in enumerate(rnd.candidates):
        if not cand.question_id:
            continue  # a chunk offered as a candidate (backup retrieval 2, Self-Ask): no AtomicQuestion
        query = cand.query or (rnd.proposals[0] if len(rnd.proposals) == 1 else question)
        owner = subs.get(query) or sub(query, rnd.fallback or "question")
        selected = bool(
            rnd.selected is not None
            and rnd.selected.question_id == cand.question_id
            and rnd.selected.chunk_id == cand.chunk_id
            and (rnd.selected.query or query) == query
        )
        key = (owner["id"], cand.question_id)
        row = {
            "sub_question_id": owner["id"],
            "atomic_question_id": cand.question_id,
            "score": round(float(cand.score), 6),
            "rank": rank,
            "selected": selected,
        }
        old = matched.get(key)
        if old is None or row["score"] > old["score"] or selected:
            row["selected"] = selected or bool(old and old["selected"])
            matched[key] = row
    return list(subs.values()), list(matched.values())


def rationale_rows(answer: Answer, asked_at: str) -> RationaleRows:
    """The node and edge rows that save ``answer`` asked at ``asked_at`` (no store needed)."""
    qid = question_id(answer.question, answer.method, asked_at)
    question = {
        "id": qid,
        "text": answer.question,
        "asked_at": asked_at,
        "answer": answer.answer,
        "method": answer.method,
        "rationale": answer.rationale,
        "retrieval_only": answer.retrieval_only,
        "rounds": len(answer.trace),
        "question_class": answer.question_class,
        "question_subtype": answer.question_subtype,
        "route": answer.route,
    }
    subs: list[dict[str, Any]] = []
    matched: list[dict[str, Any]] = []
    for rnd in answer.trace:
        s, m = _round_rows(qid, answer.question, rnd)
        subs += s
        matched += m
    return RationaleRows(question=question, used=_used_rows(answer), sub_questions=subs, matched=matched)


def _batched(rows: Sequence[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    return [list(rows[i : i + size]) for i in range(0, len(rows), max(1, size))]


def save_answer(store: GraphStore, answer: Answer, *, asked_at: str | None = None) -> SavedRationale:
    """Write ``answer``'s rationale into the graph (module docstring) in one unit of work and return what
    was written. ``asked_at``: ISO 8601 time of the ask (default: now). Raises StoreError if a statement fails
    (nothing of this Question stays)."""
    asked_at = asked_at or now_iso()
    rows = rationale_rows(answer, asked_at)
    qid = rows.question["id"]
    saved = SavedRationale(question_id=qid, asked_at=asked_at)
    undo = [lambda: store.run("rationale/delete_question", {"id": qid})]
    with store.transaction(on_rollback=undo) as tx:
        tx.run("rationale/upsert_question", rows.question)
        for batch in _batched(rows.used, store.batch_size):
            saved.used += sum(
                int(r["linked"]) for r in tx.run("rationale/link_used", {"rows": batch, "question_id": qid})
            )
        for batch in _batched(rows.sub_questions, store.batch_size):
            out = tx.run("rationale/upsert_sub_questions", {"rows": batch, "question_id": qid})
            saved.sub_questions += sum(int(r["written"]) for r in out)
        for batch in _batched(rows.matched, store.batch_size):
            saved.matched += sum(int(r["linked"]) for r in tx.run("rationale/link_matched", {"rows": batch}))
    return saved


def delete_question(store: GraphStore, qid: str) -> dict[str, int]:
    """Delete a saved Question, its SubQuestions and their edges. Returns {'questions', 'sub_questions'}."""
    row = store.run("rationale/delete_question", {"id": qid})[0]
    return {"questions": int(row["questions"]), "sub_questions": int(row["sub_questions"])}
