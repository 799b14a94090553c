"""Dump propagation's candidate pools with every explain term, per question, for ranking experiments.

    .venv/bin/python -m benchmarks.rank_dump --sets 2wiki,musique,hotpotqa --pool 50 --out /tmp/pools \
        [--set KEY=VALUE ...] [--home DIR]

One pickle per set: a list of {question, gold: [passage ids], dense: [passage ids, best first],
candidates: [{chunk_id, passage_id, title, score, terms: {layer: (similarity, factor, score)}}, best first]}.
The knowledge bases are benchmarks/retrieval_recall.py's (``<home>/<set>_falkordb``), ingested if missing.
"""

from __future__ import annotations

import argparse
import pickle
import time
from pathlib import Path

from kbgraph.eval.dataset import load_dataset
from kbgraph.kb import KnowledgeBase
from kbgraph.eval import metrics as M
from kbgraph.query.context import QueryContext
from kbgraph.query.propagation.propagate import propagate
from kbgraph.query.propagation.seeding import seed_layers
from kbgraph.settings import Settings

from benchmarks.common import DEFAULT_HOME, set_path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="2wiki,musique,hotpotqa")
    ap.add_argument("--pool", type=int, default=50)
    ap.add_argument("--out", default="/tmp/pools")
    ap.add_argument("--home", default=str(DEFAULT_HOME))
    ap.add_argument("--set", action="append", default=[], help="setting override KEY=VALUE")
    args = ap.parse_args()
    overrides = dict(kv.split("=", 1) for kv in args.set)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.sets.split(","):
        settings = Settings(
            home=Path(args.home), name=f"{name}_falkordb", falkor_idle_timeout=600, llm_model=None, **overrides
        )
        ds = load_dataset(set_path(name))
        with KnowledgeBase(settings=settings) as kb:
            if ds.corpus_path is not None:
                kb.ingest([ds.corpus_path], progress=False)
            ctx = QueryContext(kb.store, kb.settings, kb.embedder, None)
            rows = []
            t0 = time.perf_counter()
            for q in ds.questions:
                qvec = kb.embedder.embed([q.question])[0].tolist()
                seeds = seed_layers(kb.store, kb.settings, q.question, qvec)
                dense = sorted(seeds.layers.get("Chunk", {}).items(), key=lambda kv: -kv[1][0])
                chunks = propagate(kb.store, kb.settings, seeds, k=args.pool, explain=True)
                cands = []
                for c in chunks:
                    terms = {t.term: (t.similarity, t.factor, t.score) for t in c.breakdown}
                    weighted = sum(t.score for t in c.breakdown)  # the weighted sum, whichever ranker ordered them
                    cands.append(
                        {
                            "chunk_id": c.id,
                            "passage_id": M.passage_ids([c.document_uri])[0] if c.document_uri else "",
                            "title": c.document_title,
                            "score": weighted,
                            "terms": terms,
                            "text": c.text[:300],
                        }
                    )
                cands.sort(key=lambda c: (-c["score"], c["chunk_id"]))
                dense_ids = [cid for cid, _ in dense]
                rows.append(
                    {
                        "question": q.question,
                        "gold": list(q.gold_passage_ids),
                        "candidates": cands,
                        "dense_chunks": dense_ids,
                    }
                )
            print(f"{name}: {len(rows)} questions in {time.perf_counter() - t0:.0f} s", flush=True)
            del ctx
        with open(out / f"{name}.pkl", "wb") as f:
            pickle.dump(rows, f)


if __name__ == "__main__":
    main()
