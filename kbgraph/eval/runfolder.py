"""The run folder of an evaluation (PIKE-RAG §6; paper 003 §4): what makes a run resumable.

* ``run.json``: the configuration that defines the run (:func:`run_identity`). Resuming with another
  configuration raises ConfigError (use another folder or ``fresh``); ``limit``, ``methods`` and ``ks`` may
  change between runs (:func:`open_run_folder`).
* ``results.jsonl``: one :class:`QuestionRecord` per (question, method), appended and flushed as each
  finishes, so an interrupted run resumes where it stopped (:class:`Results`: finished pairs are skipped,
  failed ones retried; a line cut short by a crash is dropped).
* ``summary.json`` and ``report.md`` (kbgraph.eval.summary, kbgraph.eval.report), plots under ``plots/``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from kbgraph.errors import ConfigError

if TYPE_CHECKING:
    from kbgraph.eval.dataset import Dataset
    from kbgraph.eval.target import EvalTarget

RESULTS, RUN, SUMMARY, REPORT = "results.jsonl", "run.json", "summary.json", "report.md"


class Tokens(BaseModel):
    """LLM requests and tokens one record spent (from ``answering.UsageMeter``)."""

    calls: int = 0
    prompt: int = 0
    completion: int = 0
    cached_calls: int = 0

    @property
    def total(self) -> int:
        return self.prompt + self.completion


class QuestionRecord(BaseModel):
    """One line of ``results.jsonl``: one method on one question. Retrieval metrics are computed from
    ``retrieved_passage_ids`` (the passages of ``retrieved_chunk_ids``, as the KB returned them, in rank
    order). ``latency_s``: wall time of the method call (question embedding included; judge excluded)."""

    question_id: str
    method: str
    question: str
    gold_answers: list[str] = Field(default_factory=list)
    gold_passage_ids: list[str] = Field(default_factory=list)
    answer: str | None = None
    retrieval_only: bool = False
    metrics: dict[str, float | None] = Field(default_factory=dict)
    retrieved_chunk_ids: list[str] = Field(default_factory=list)
    retrieved_passage_ids: list[str] = Field(default_factory=list)
    trace: list[dict[str, Any]] = Field(default_factory=list)
    rationale: str = ""
    judgement: str | None = None
    tokens: Tokens = Field(default_factory=Tokens)
    judge_tokens: Tokens = Field(default_factory=Tokens)
    latency_s: float = 0.0
    error: str | None = None
    finished_at: str = ""
    # method 'auto' (PIKE-RAG §3.2, §4.2; kbgraph.query.classify): the question's class and the route it took
    question_class: str | None = None
    question_subtype: str | None = None
    route: str | None = None


def run_identity(kb: EvalTarget, dataset: Dataset, *, seed: int, sample: int | None, depth: int,
                 judge_model: str | None) -> dict[str, Any]:  # fmt: skip
    """What ``run.json`` holds: the configuration that defines a run (data set, seed, sample, depth, KB,
    models, retrieval and decomposition settings). Results of another identity are never mixed in."""
    s = kb.settings
    tuned = {
        k: v for k, v in s.flat().items()
        if k.startswith(("weight_", "decompose_", "naive_", "hr_", "self_ask_", "tag_", "migres_"))
        or k in ("seed_k", "fulltext_k", "hop_from", "max_entity_degree", "llm_temperature", "chunk_tokens",
                 "chunk_overlap_sentences", "auto_tagging")
    }  # fmt: skip
    return {
        "dataset": str(dataset.questions_path), "corpus": str(dataset.corpus_path) if dataset.corpus_path else None,
        "seed": seed, "sample": sample, "depth": depth, "kb": kb.name, "backend": s.store.backend,
        "embedding_model": s.embedding.embedding_model, "embedding_dimension": s.embedding.embedding_dimension,
        "llm_model": s.llm.llm_model, "judge_model": judge_model, "settings": tuned,
    }  # fmt: skip


class Results:
    """``results.jsonl``: the latest record per (question, method), appended one flushed line at a time.
    A line cut short by a crash is dropped on open."""

    def __init__(self, path: Path):
        self.path = path
        self.records: dict[tuple[str, str], QuestionRecord] = {}
        if path.is_file():
            data = path.read_bytes()
            if data and not data.endswith(b"\n"):  # a line cut by kill -9: drop it before appending
                data = data[: data.rfind(b"\n") + 1]
                path.write_bytes(data)
            for line in data.decode("utf-8").splitlines():
                try:
                    rec = QuestionRecord.model_validate_json(line)
                except ValueError:
                    continue
                self.records[(rec.question_id, rec.method)] = rec

    def done(self, qid: str, method: str) -> bool:
        rec = self.records.get((qid, method))
        return rec is not None and rec.error is None

    def add(self, rec: QuestionRecord) -> None:
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(rec.model_dump_json() + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self.records[(rec.question_id, rec.method)] = rec


def open_run_folder(run_dir: Path, identity: dict[str, Any], *, fresh: bool = False) -> None:
    """Create ``run_dir`` and its ``run.json`` (``identity``), or check that an existing one holds the same
    identity. ``fresh``: delete the folder's results, summary, report and plots first. Raises ConfigError
    when the folder holds results of another configuration."""
    run_dir.mkdir(parents=True, exist_ok=True)
    run_file = run_dir / RUN
    if fresh:
        for name in (RESULTS, RUN, SUMMARY, REPORT):
            (run_dir / name).unlink(missing_ok=True)
        shutil.rmtree(run_dir / "plots", ignore_errors=True)
    if run_file.is_file():
        before = json.loads(run_file.read_text())
        diff = sorted(k for k in set(before) | set(identity) if before.get(k) != identity.get(k))
        if diff:
            raise ConfigError(
                f"{run_dir} holds results of another configuration (differs in: {', '.join(diff)}); "
                "pass another --out, or --fresh to discard them"
            )
    else:
        run_file.write_text(json.dumps(identity, indent=2))
