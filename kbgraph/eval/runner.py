"""Running an evaluation with the protocol of PIKE-RAG §6 (paper 000) and paper 003 §4: every method of the
registry (kbgraph.query.methods.registry) on the same knowledge base with the same embedder, one record per (question,
method), then the summary and the report.

Methods: answer methods need an LLM ('auto', classification and level routing, PIKE-RAG §3.2 and §4.2; 'pike',
Algorithm 1; 'l1'; 'naive', 'naive_hr', 'cot', 'self_ask', 'self_ask_hr'; 'migres', paper 002 §3); without one they are
skipped and the reason recorded (``summary.json`` ``skipped``). 'auto''s records carry the question's class and
route, and the summary groups every method's figures by that class (``by_class``; kbgraph.eval.summary).
Retrieval methods ('dense', 'bm25', 'hierarchical' = Fig. 11 paths a+b, 'propagation' = layer seeds + score
propagation, §5.2.3) return their top ``depth`` (10) chunks.

Metrics per question (kbgraph.eval.metrics): EM, F1, precision, recall (answer tokens; answer methods),
Accuracy by the LLM judge with the authors' prompt (``prompts.JUDGE``; yes = 1, no = 0, anything else = not
judged) when an LLM is configured; ``R@k`` for k in ``ks`` (1, 2, 5, 10) over the distinct passages of the
chunks a method returned, in rank order (for answer methods, their context chunks in the order they joined
it; none for ``cot``); ``sf_recall`` over the whole context (paper 003 Table 8). The run folder, summary and
report: kbgraph.eval.runfolder, .summary, .report.

Progress: a bar on a terminal; elsewhere (cron, CI, a log) a line on the ``kbgraph.eval`` logger at least every
``HEARTBEAT_SECONDS`` seconds (30, as ingestion's) ("evaluating: 1,234 of 4,000 (question, method) pairs done, ...").

Reproducible: questions are sampled with ``random.Random(seed)``; LLM answers come from the client's on-disk
response cache when the same request was made before (kbgraph.llm.cache), at ``llm_temperature`` (0).
"""

from __future__ import annotations

import enum
import logging
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kbgraph.errors import ConfigError, StoreError
from kbgraph.eval.dataset import Dataset, EvalQuestion, load_dataset, select_questions
from kbgraph.eval.pages import page_key, page_metrics, relative_document
from kbgraph.eval.report import write_plots, write_report
from kbgraph.eval.runfolder import (
    RESULTS,
    SUMMARY,
    QuestionRecord,
    Results,
    Tokens,
    open_run_folder,
    run_identity,
)
from kbgraph.eval.summary import (
    DEFAULT_KS,
    NO_RETRIEVAL,
    EvalSummary,
    package_versions,
    retrieval_metrics,
    run_models,
    summarize,
    summarize_by_class,
    summarize_by_domain,
)
from kbgraph.eval import metrics as M
from kbgraph.ingest.progress import HEARTBEAT_SECONDS
from kbgraph.ingest.sources import file_of
from kbgraph.query.answering import UsageMeter
from kbgraph.query.ask import answer_question, clean_question
from kbgraph.query.context import QueryContext
from kbgraph.query.methods.registry import ALL_METHODS, METHODS, RetrievalRow, get_method
from kbgraph.query.models import ScoredChunk
from kbgraph.text import utc_now
from kbgraph.query.prompts import judge_messages
from kbgraph.llm.base import LLM

if TYPE_CHECKING:
    from rich.progress import Progress

    from kbgraph.eval.target import EvalTarget

log = logging.getLogger("kbgraph.eval")


NO_LLM = "no LLM configured: set KBGRAPH_LLM_BASE_URL and KBGRAPH_LLM_MODEL (and KBGRAPH_LLM_API_KEY if needed)"


class _Unset(enum.Enum):
    """The default of ``evaluate(llm=...)``: use ``kb.llm`` (None is a value: no LLM)."""

    UNSET = enum.auto()


_UNSET = _Unset.UNSET


def parse_judgement(text: str) -> float | None:
    """The judge's reply as 1.0 (yes), 0.0 (no) or None (neither)."""
    t = re.sub(r"<think>.*?(?:</think>|$)", "", text or "", flags=re.DOTALL | re.IGNORECASE)
    t = t.strip().strip("*`\"' ").lower()
    m = re.match(r"(yes|no)\b", t)
    return None if m is None else float(m.group(1) == "yes")


class MethodRunner:
    """Runs one method on one question against ``kb`` (with ``llm``) and returns its record; a failing
    question is recorded with its error (retried on resume), a failing store raises."""

    def __init__(
        self,
        kb: EvalTarget,
        llm: LLM | None,
        *,
        depth: int,
        ks: Sequence[int],
        judge: bool,
        judge_model: str | None,
        documents: Path | None = None,
    ):
        self.kb, self.llm, self.depth, self.ks = kb, llm, depth, list(ks)
        self.documents = documents  # a long-document set's folder: chunks' documents are named relative to it
        self.judge, self.judge_model = judge, judge_model
        self._prepared: set[str] = set()
        self._ctx: QueryContext | None = None

    @property
    def ctx(self) -> QueryContext:
        """The knowledge base as the methods see it (store and embedder loaded on first use)."""
        if self._ctx is None:
            self._ctx = QueryContext(self.kb.store, self.kb.settings, self.kb.embedder, self.llm)
        return self._ctx

    def prepare(self, method: str) -> str | None:
        """Once per run, what the method ``method`` keeps between questions (its row's ``prepare``, e.g. 'bm25''s
        index), built or loaded before the clock of any question starts; the line saying what was done, or None."""
        row = METHODS[method]
        if method in self._prepared or not isinstance(row, RetrievalRow) or row.prepare is None:
            return None
        self._prepared.add(method)
        return row.prepare(self.ctx)

    def retrieve(self, method: str, question: str) -> list[ScoredChunk]:
        """The top ``depth`` chunks of the retrieval method ``method`` for ``question``."""
        return get_method(method, "retrieval").run(clean_question(question), self.ctx, k=self.depth)

    def run(self, method: str, q: EvalQuestion) -> QuestionRecord:
        """``method`` on ``q``: the record with retrieved chunks and passages, metrics, tokens and latency."""
        rec = QuestionRecord(
            question_id=q.id,
            method=method,
            question=q.question,
            gold_answers=q.answers,
            gold_passage_ids=q.gold_passage_ids,
            gold_pages=q.gold_page_keys,
            domain=str(q.meta["domain"]) if q.meta.get("domain") else None,
        )
        try:
            if METHODS[method].kind == "retrieval":
                t0 = time.perf_counter()
                chunks = self.retrieve(method, q.question)
                rec.latency_s = time.perf_counter() - t0
                rec.retrieval_only = True
            else:
                chunks = self._ask(method, q, rec)
            rec.retrieved_chunk_ids = [c.id for c in chunks]
            rec.retrieved_passage_ids = M.passage_ids(c.document_uri for c in chunks)
            if rec.gold_pages:
                rec.retrieved_pages = self.page_keys(chunks)
            if method not in NO_RETRIEVAL:  # zero-shot CoT retrieves nothing: no retrieval metrics
                rec.metrics.update(retrieval_metrics(rec.retrieved_passage_ids, q.gold_passage_ids, self.ks))
                rec.metrics.update(page_metrics(rec.retrieved_pages, rec.gold_pages, self.ks))
        except (StoreError, KeyboardInterrupt):
            raise
        except Exception as exc:  # one question failing does not stop the run; it is retried on resume
            rec.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:500]
        rec.finished_at = utc_now()
        return rec

    def page_keys(self, chunks: Sequence[ScoredChunk]) -> list[str]:
        """Each chunk's ``"<document>#p<page>"`` key (kbgraph.eval.pages), its document named relative to the
        set's documents folder, in rank order."""
        return [page_key(relative_document(file_of(c.document_uri), self.documents), c.page) for c in chunks]

    def _ask(self, method: str, q: EvalQuestion, rec: QuestionRecord) -> list[ScoredChunk]:
        meter = UsageMeter(self.llm)
        t0 = time.perf_counter()
        answer = answer_question(q.question, self.ctx, method=method)
        rec.latency_s = time.perf_counter() - t0
        rec.tokens = _tokens(meter)
        rec.answer, rec.rationale, rec.retrieval_only = answer.answer, answer.rationale, answer.retrieval_only
        rec.trace = [r.model_dump(mode="json") for r in answer.trace]
        rec.question_class, rec.question_subtype = answer.question_class, answer.question_subtype
        rec.route = answer.route  # method 'auto' only (kbgraph.query.methods.classify)
        rec.metrics.update(M.answer_scores(answer.answer, q.answers).model_dump())
        if self.judge and q.answers:
            assert self.llm is not None  # evaluate() judges only with an LLM
            jm = UsageMeter(self.llm)
            reply = self.llm.complete(
                judge_messages(q.question, q.answers, answer.answer), model=self.judge_model, temperature=0.0
            )
            rec.judge_tokens = _tokens(jm)
            rec.judgement = reply.strip()[:200]
            rec.metrics["accuracy"] = parse_judgement(reply)
        return list(answer.chunks)


def _tokens(meter: UsageMeter) -> Tokens:
    used = meter.report()
    return Tokens(
        calls=used.calls, prompt=used.prompt_tokens, completion=used.completion_tokens, cached_calls=used.cached_calls
    )


def _check_options(
    methods: Sequence[str] | None, ks: Sequence[int], depth: int, limit: int | None, sample: int | None
) -> tuple[list[str], list[int]]:
    """(methods without repeats, default all; sorted distinct ks). Raises ConfigError for a bad option."""
    methods = list(dict.fromkeys(methods or ALL_METHODS))
    unknown = [m for m in methods if m not in METHODS]
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
    return methods, ks


def _ingest_corpus(
    kb: EvalTarget, ds: Dataset, progress: bool | None, say: Callable[[str], None]
) -> dict[str, object] | None:
    """Ingest the data set's corpus or documents folder (incremental); the report's counts, or None without
    either."""
    source = ds.corpus_path or ds.documents_path
    if source is None:
        return None
    say(f"ingesting {source.name} into knowledge base {kb.name!r} (incremental)")
    report = kb.ingest([source], progress=progress)
    info: dict[str, object] = report.model_dump(include={"status", "added", "updated", "unchanged", "failed", "chunks"})
    info["seconds"] = round(report.seconds.get("total", 0.0), 2)
    if report.failed:
        info["errors"] = [f"{e.path}: {e.error}" for e in report.errors][:20]
    return info


def _run_pending(
    runner: MethodRunner,
    results: Results,
    questions: Sequence[EvalQuestion],
    active: Sequence[str],
    progress: bool | None,
    say: Callable[[str], None],
) -> tuple[int, int]:
    """Run every (question, method) pair not finished in ``results``, question by question (partial runs
    compare on the same questions). Returns (new records, reused records)."""
    reused = sum(1 for q in questions for m in active if results.done(q.id, m))
    todo = [(q, m) for q in questions for m in active if not results.done(q.id, m)]
    say(f"{len(questions)} questions x {len(active)} methods: {len(todo)} to run, {reused} already done")
    for method in dict.fromkeys(m for _q, m in todo):
        done = runner.prepare(method)  # e.g. the BM25 index, before the clock of any question starts
        if done:
            say(done)
    new = 0
    with _progress(progress, len(todo)) as advance:
        for q, m in todo:
            results.add(runner.run(m, q))
            new += 1
            advance()
    return new, reused


def evaluate(
    kb: EvalTarget,
    dataset: str | Path | Dataset,
    *,
    methods: Sequence[str] | None = None,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    ks: Sequence[int] = DEFAULT_KS,
    depth: int = 10,
    judge: bool | None = None,
    judge_model: str | None = None,
    out: str | Path | None = None,
    fresh: bool = False,
    ingest: bool = True,
    plots: bool = True,
    progress: bool | None = None,
    llm: LLM | None | _Unset = _UNSET,
    log: Callable[[str], None] | None = None,
) -> EvalSummary:
    """Run ``methods`` (default: all, ``ALL_METHODS`` of the registry) on the questions of ``dataset`` against
    ``kb`` and write the run folder (kbgraph.eval.runfolder). Returns the summary (also in ``summary.json``).

    ``limit``: the first N selected questions; ``sample``: N questions drawn with ``seed``; ``ks``: the k of
    Recall@k (passages); ``depth``: chunks a retrieval method returns (>= max(ks)); ``judge``: LLM-judged
    accuracy (default: when an LLM is configured), with ``judge_model`` (default: the LLM's model);
    ``ingest``: ingest the data set's corpus first; ``fresh``: discard the folder's earlier results;
    ``llm``: override ``kb.llm`` (tests use kbgraph.llm.fake.ScriptedLLM); ``log``: a line printer.

    Raises ConfigError for an unknown method, bad ``ks``/``depth``/``limit``/``sample``, or a run folder
    holding another configuration's results; StoreError if the store fails; KeyboardInterrupt leaves every
    finished record on disk (a re-run resumes)."""
    started, t_start = utc_now(), time.perf_counter()
    say = log or (lambda _msg: None)
    ds = dataset if isinstance(dataset, Dataset) else load_dataset(dataset)
    methods, ks = _check_options(methods, ks, depth, limit, sample)
    llm = kb.llm if llm is _UNSET else llm
    judge = (llm is not None) if judge is None else judge
    if judge and llm is None:
        raise ConfigError(f"LLM-judged accuracy needs an LLM; {NO_LLM}")
    judge_model = (
        judge_model or (getattr(llm, "default_model", None) if llm is not None else None) or kb.settings.llm.llm_model
    )
    skipped = {m: NO_LLM for m in methods if METHODS[m].needs_llm and llm is None}
    active = [m for m in methods if m not in skipped]

    run_dir = Path(out) if out is not None else Path("kbgraph-eval") / ds.name
    identity = run_identity(kb, ds, seed=seed, sample=sample, depth=depth, judge_model=judge_model if judge else None)
    open_run_folder(run_dir, identity, fresh=fresh)
    ingest_info = _ingest_corpus(kb, ds, progress, say) if ingest else None

    questions = select_questions(ds.questions, sample=sample, limit=limit, seed=seed)
    results = Results(run_dir / RESULTS)
    runner = MethodRunner(
        kb, llm, depth=depth, ks=ks, judge=judge, judge_model=judge_model, documents=ds.documents_path
    )
    new, reused = _run_pending(runner, results, questions, active, progress, say)

    records = [results.records[(q.id, m)] for q in questions for m in active if (q.id, m) in results.records]
    store_stats = kb.stats()
    out_summary = EvalSummary(
        run_dir=run_dir.resolve(),
        dataset={
            "name": ds.name,
            "questions_path": str(ds.questions_path),
            "corpus_path": str(ds.corpus_path) if ds.corpus_path else None,
            "documents_path": str(ds.documents_path) if ds.documents_path else None,
            "questions_total": len(ds.questions),
            "questions_selected": len(questions),
        },
        config={**identity, "methods": methods, "limit": limit, "ks": ks, "judge": judge},
        versions=package_versions(),
        models=run_models(kb, llm, judge_model if judge else None),
        kb={
            "name": kb.name,
            "backend": store_stats.backend,
            "location": store_stats.location,
            "nodes": store_stats.nodes,
        },
        ingest=ingest_info,
        methods=summarize(records, methods=active, ks=ks),
        skipped=skipped,
        ks=ks,
        questions=len(questions),
        new_records=new,
        reused_records=reused,
        started_at=started,
        finished_at=utc_now(),
        seconds=round(time.perf_counter() - t_start, 2),
        by_class=summarize_by_class(records, methods=active, ks=ks),
        by_domain=summarize_by_domain(records, methods=active, ks=ks),
    )
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
        self.total = total
        self._p: Progress | None = None

    def __enter__(self) -> Callable[[], None]:
        if not self.total:
            return lambda: None
        if not self.enabled:
            return self._lines()
        from rich.console import Console
        from rich.progress import Progress

        self._p = p = Progress(console=Console(stderr=True), transient=True)
        p.start()
        task = p.add_task("evaluating", total=self.total)
        return lambda: p.advance(task)

    def _lines(self) -> Callable[[], None]:
        """advance() that logs a line every HEARTBEAT_SECONDS seconds and at the last pair."""
        start = last = time.monotonic()
        done = 0

        def advance() -> None:
            nonlocal done, last
            done += 1
            now = time.monotonic()
            if now - last >= HEARTBEAT_SECONDS or done == self.total:
                last = now
                rate = done / max(now - start, 1e-9)
                log.info(
                    "evaluating: %s of %s (question, method) pairs done, %.1f/s, %d s elapsed",
                    f"{done:,}",
                    f"{self.total:,}",
                    rate,
                    round(now - start),
                )

        return advance

    def __exit__(self, *exc: object) -> None:
        if self._p is not None:
            self._p.stop()
