"""Evaluation with the protocol of PIKE-RAG §6 (paper 000) and paper 003 §4: every method of the registry
(kbgraph.query.methods.registry) on the same knowledge base with the same embedder, per-question records in a
resumable run folder, a summary and a report with plots (``kbgraph eval``, ``KnowledgeBase.evaluate``).

Modules: ``dataset`` (multi-hop QA sets), ``runfolder`` (run.json, results.jsonl), ``runner`` (``evaluate``),
``summary`` (means, ratios to the baselines), ``report`` (report.md, plots). The lexical baseline is method
``bm25`` (kbgraph.query.bm25).
"""

from __future__ import annotations

from kbgraph.eval.dataset import Dataset, EvalQuestion, load_dataset, select_questions
from kbgraph.eval.runfolder import QuestionRecord, Tokens
from kbgraph.eval.runner import NO_LLM, evaluate, parse_judgement
from kbgraph.eval.summary import DEFAULT_KS, EvalSummary, MethodSummary, retrieval_metrics, summarize

__all__ = [
    "DEFAULT_KS",
    "NO_LLM",
    "Dataset",
    "EvalQuestion",
    "EvalSummary",
    "MethodSummary",
    "QuestionRecord",
    "Tokens",
    "evaluate",
    "load_dataset",
    "parse_judgement",
    "retrieval_metrics",
    "select_questions",
    "summarize",
]
