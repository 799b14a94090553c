"""Retrieval variants side by side (issue 56, docs/benchmarks.md#long-documents): several methods and settings
variants over one knowledge base, in one process, question by question in turns; page@k / doc@k on a long-document
set, R@k on a passage set.

    .venv/bin/python -m benchmarks.longdoc [--home /tmp/ld/home] [--kb longdoc] [--set examples/longdoc/dev]
        [--variant NAME=METHOD[:KEY=VALUE,...]] ... [--limit N] [--json FILE]
    .venv/bin/python -m benchmarks.longdoc --home ~/.kbgraph --kb 2wikimultihopqa_dev500 \
        --set examples/multihop/2wikimultihopqa/dev500 --variant ...

A variant is a retrieval method of kbgraph.query.methods.registry with settings changes (``Settings.updated``), e.g.
``--variant dense=dense --variant page1=propagation:max_chunks_per_page=1``; without ``--variant`` the default
variants (dense, bm25, propagation) are run. The knowledge base must have been ingested from the set's documents
(``kbgraph --kb longdoc eval -d examples/longdoc/dev`` does it). For each variant: page@1/2/5/10, doc@1/5/10 and
page_recall@5 (kbgraph.eval.pages) overall and per ``meta.domain`` (page@5 / doc@5), and p50 / p95 ms of
``KnowledgeBase.retrieve`` with the question embedding (what ``kbgraph eval`` reports), after one untimed warm-up
pass over every question. On a passage set (questions with ``gold_passage_ids``, no pages): R@1/2/5/10 instead
(kbgraph.eval.metrics). Prints a Markdown table; ``--json`` also writes the figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from kbgraph.eval.dataset import load_dataset
from kbgraph.eval.metrics import passage_ids, recall_at_k
from kbgraph.eval.pages import page_key, page_metrics, relative_document
from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings

from benchmarks.common import EXAMPLES

KS = (1, 2, 5, 10)
DEFAULT_VARIANTS = ("dense=dense", "bm25=bm25", "propagation=propagation")


def parse_variant(text: str) -> tuple[str, str, dict[str, Any]]:
    """``NAME=METHOD[:KEY=VALUE,...]`` -> (name, method, settings changes); values read as JSON when they parse."""
    name, _, rest = text.partition("=")
    method, _, changes = rest.partition(":")
    out: dict[str, Any] = {}
    for item in filter(None, changes.split(",")):
        key, _, value = item.partition("=")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    if not name or not method:
        raise SystemExit(f"--variant {text!r}: expected NAME=METHOD[:KEY=VALUE,...]")
    return name, method, out


def file_of(uri: str) -> str:
    """The path of a chunk's document URI (``file://...`` or a path)."""
    return uri[len("file://") :] if uri.startswith("file://") else uri


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", default="/tmp/ld/home")
    ap.add_argument("--kb", default="longdoc")
    ap.add_argument("--set", default=str(EXAMPLES / "longdoc" / "dev"))
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    data = load_dataset(args.set)
    questions = data.questions[: args.limit] if args.limit else data.questions
    docs_root = data.documents_path
    variants = [parse_variant(v) for v in (args.variant or DEFAULT_VARIANTS)]
    paged = any(q.gold_page_keys for q in questions)
    base = Settings(home=Path(args.home), name=args.kb, falkor_idle_timeout=0, llm_model=None)
    with KnowledgeBase(settings=base) as kb:
        runs = {name: (method, base.updated(changes) if changes else base) for name, method, changes in variants}
        ranked: dict[str, dict[str, list[str]]] = defaultdict(dict)
        lat: dict[str, list[float]] = defaultdict(list)
        for timed in (False, True):  # a warm-up pass (the adjacency, bm25s, caches), then the timed one
            for q in questions:
                for name, (method, settings) in runs.items():
                    kb.settings = settings
                    t0 = time.perf_counter()
                    chunks = kb.retrieve(q.question, k=10, method=method)
                    if timed:
                        lat[name].append((time.perf_counter() - t0) * 1000)
                        ranked[name][q.id] = (
                            [page_key(relative_document(file_of(c.document_uri), docs_root), c.page) for c in chunks]
                            if paged
                            else passage_ids(c.document_uri for c in chunks)
                        )
        kb.settings = base
    report: dict[str, Any] = {}
    for name in runs:
        per_q = {
            q.id: page_metrics(ranked[name][q.id], q.gold_page_keys, KS)
            if paged
            else {f"R@{k}": recall_at_k(ranked[name][q.id], q.gold_passage_ids, k) for k in KS}
            for q in questions
        }
        overall = {
            m: 100 * statistics.fmean(v[m] for v in per_q.values() if v.get(m) is not None)
            for m in next(iter(per_q.values()))
        }
        domains: dict[str, list[dict[str, float | None]]] = defaultdict(list)
        for q in questions:
            domains[str(q.meta.get("domain", ""))].append(per_q[q.id])
        by_domain = {
            d: {
                m: 100 * statistics.fmean(v[m] for v in rows if v.get(m) is not None)
                for m in (("page@5", "doc@5") if paged else ("R@2", "R@5"))
            }
            for d, rows in sorted(domains.items())
        }
        xs = sorted(lat[name])
        report[name] = {
            "method": runs[name][0],
            "overall": overall,
            "by_domain": by_domain,
            "p50_ms": statistics.median(xs),
            "p95_ms": xs[int(0.95 * (len(xs) - 1))],
            "ranked": ranked[name],
        }
    cols = (
        ["page@1", "page@2", "page@5", "page@10", "doc@1", "doc@5", "doc@10", "page_recall@5"]
        if paged
        else [f"R@{k}" for k in KS]
    )
    print(f"{len(questions)} questions, {args.set}\n")
    print("| variant | " + " | ".join(cols) + " | p50 / p95 ms |")
    print("|---" * (len(cols) + 2) + "|")
    for name, r in report.items():
        cells = " | ".join(f"{r['overall'][c]:.1f}" for c in cols)
        print(f"| {name} | {cells} | {r['p50_ms']:.1f} / {r['p95_ms']:.1f} |")
    domains = list(next(iter(report.values()))["by_domain"])
    pair = ("page@5", "doc@5") if paged else ("R@2", "R@5")
    if paged:
        print(f"\n| variant ({pair[0]} / {pair[1]}) | " + " | ".join(domains) + " |")
        print("|---" * (len(domains) + 1) + "|")
        for name, r in report.items():
            print(
                f"| {name} | "
                + " | ".join(f"{r['by_domain'][d][pair[0]]:.1f} / {r['by_domain'][d][pair[1]]:.1f}" for d in domains)
                + " |"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
