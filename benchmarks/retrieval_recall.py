"""Passage Recall@2 and Recall@5 without any LLM, with the offline default models (all-MiniLM-L6-v2, spaCy):
dense-only (method 'dense', Chunk vector top-k), BM25 ('bm25', bm25s), hierarchical retrieval ('hierarchical',
Fig. 11 paths (a) + (b), no propagation) and layer seeds with multi-granularity score propagation
('propagation', PIKE-RAG §5.2.3), on 2wikimultihopqa/dev500 and musique/hipporag_train100, all through
``kbgraph.eval`` (same KB, same
embedder, top-10 chunks, k counted in distinct passages). Goal: propagation >= 1.25x dense-only Recall@5.

    .venv/bin/python -m benchmarks.retrieval_recall [--sets 2wiki,musique] [--questions N] [--home DIR] [--resume]

The knowledge bases are those of benchmarks/query.py (``<home>/<set>_falkordb``, default home
~/.kbgraph-bench), built on first use (2Wiki: ~15 min) and reused. Run folders go to ``<home>/eval/<set>``
(report.md, plots); they start afresh unless --resume.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from kbgraph.kb import KnowledgeBase
from kbgraph.eval import evaluate
from kbgraph.settings import Settings

from benchmarks.common import DEFAULT_HOME, set_path

METHODS = {
    "dense": "dense-only",
    "bm25": "BM25",
    "hierarchical": "hierarchical (a)+(b)",
    "propagation": "hierarchical + propagation",
}
GOAL = 1.25


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="2wiki,musique")
    ap.add_argument("--questions", type=int, default=None, help="first N questions of each set (default: all)")
    ap.add_argument("--home", default=str(DEFAULT_HOME))
    ap.add_argument("--resume", action="store_true", help="reuse the run folders' finished questions")
    args = ap.parse_args()
    home = Path(args.home)
    rows = []
    for name in args.sets.split(","):
        settings = Settings(home=home, name=f"{name}_falkordb", falkor_idle_timeout=600, llm_model=None)
        t0 = time.perf_counter()
        with KnowledgeBase(settings=settings) as kb:
            summary = evaluate(
                kb,
                set_path(name),
                methods=list(METHODS),
                limit=args.questions,
                out=home / "eval" / name,
                fresh=not args.resume,
                judge=False,
                llm=None,
                progress=False,
                log=lambda msg: print(f"  {msg}", flush=True),
            )
        print(f"{name}: {summary.questions} questions in {time.perf_counter() - t0:.0f} s; report {summary.report}")
        rows.append((name, summary))

    print("\nPassage Recall@k (%), top-10 chunks, all-MiniLM-L6-v2, no LLM")
    print(
        f"{'set':9} {'method':28} {'n':>4} {'R@2':>6} {'R@5':>6} {'R@5 ÷ dense':>12} {'R@5 ÷ BM25':>11} {'p50 ms':>7}"
    )
    for name, s in rows:
        for method, label in METHODS.items():
            m = s.methods[method]
            rd = m.ratios.get("dense", {}).get("R@5")
            rb = m.ratios.get("bm25", {}).get("R@5")
            print(
                f"{name:9} {label:28} {m.questions:4d} {100 * m.metrics['R@2']:6.1f} {100 * m.metrics['R@5']:6.1f} "
                f"{'' if rd is None else f'{rd:.2f}x':>12} {'' if rb is None else f'{rb:.2f}x':>11} "
                f"{m.latency_ms.get('p50', 0):7.1f}"
            )
    print()
    for name, s in rows:
        ratio = s.methods["propagation"].ratios["dense"]["R@5"]
        verdict = "met" if ratio is not None and ratio >= GOAL else "MISSED"
        print(f"{name}: hierarchical + propagation / dense-only R@5 = {ratio:.2f}x (goal >= {GOAL}x: {verdict})")


if __name__ == "__main__":
    main()
