"""Static vs transformer embedding speed on the short layers (issue 15 direction 3, setting ``static_layers``):
the texts of the first ``--sample`` passages of a multi-hop corpus, chunked and distilled as ingestion does
(``layer_ablation.sample_texts``), embedded by the ONNX all-MiniLM-L6-v2 (the baseline, no cache) and by the
static model distilled from it (``kbgraph.embed.static_model``), in the same process, best of ``--repeat``.
Prints texts/s of each and the ratio per layer, and the one-off distillation time (a fresh --home).

    .venv/bin/python -m benchmarks.static_embeddings [--set 2wiki] [--sample 1000] [--home /tmp/static-speed]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from benchmarks.layer_ablation import sample_texts  # benchmarks/layer_ablation.py
from benchmarks.common import SETS, set_path

from kbgraph.embed import get_embedder
from kbgraph.embed.static_model import build_static_model, get_static_embedder, static_model_dir
from kbgraph.settings import Settings


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", default="2wiki", choices=sorted(SETS))
    ap.add_argument("--sample", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--home", default="/tmp/kbgraph-static-speed")
    args = ap.parse_args()
    settings = Settings(home=Path(args.home), embedding_backend="onnx", embedding_cache=False)
    teacher, out = static_model_dir(settings)
    t0 = time.perf_counter()
    fresh = not out.exists()
    build_static_model(teacher, out)
    built = time.perf_counter() - t0
    print(f"static model {out.name}: " + (f"distilled in {built:.1f} s" if fresh else "already built"))
    model, static = get_embedder(settings), get_static_embedder(settings)
    model.embed(["warm up"]), static.embed(["warm up"])
    corpus = Path(f"{set_path(args.set)}.corpus.jsonl")
    print(f"{args.set}, first {args.sample} passages; best of {args.repeat}; ONNX fp32 vs static, same process")
    print(f"{'layer':15} {'texts':>7} {'model s':>8} {'static s':>9} {'model/s':>8} {'static/s':>9} {'ratio':>7}")
    for label, _, texts in sample_texts(corpus, args.sample, settings):
        if label not in ("AtomicQuestion", "Triple", "Entity") or not texts:
            continue
        m = best(lambda: model.embed(texts), args.repeat)  # noqa: B023 - called at once
        s = best(lambda: static.embed(texts), args.repeat)  # noqa: B023
        print(
            f"{label:15} {len(texts):7,} {m:8.2f} {s:9.3f} {len(texts) / m:8,.0f} {len(texts) / s:9,.0f} {m / s:6.0f}x"
        )


if __name__ == "__main__":
    main()
