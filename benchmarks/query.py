"""Retrieval latency and recall without an LLM: flat vector top-k ('dense') versus layer seeds with score
propagation ('propagation', PIKE-RAG §5.2.3, with the settings' ranker, learned by default) and propagation
with ranker=weights ('weights', the weighted sum alone), on a multi-hop corpus, per store. Prints p50/p95 latency (ms, the
question embedding excluded: it is the same for both) and passage Recall@2/@5 over gold_passage_ids,
with the propagation/dense ratios (after 20 untimed warm-up questions per method). Targets: propagation
p50 <= 50 ms, p95 <= 150 ms.

    .venv/bin/python -m benchmarks.query [--corpus 2wiki|musique|hotpotqa] [--questions 200]
        [--stores falkordb,neo4j] [--home DIR]

The knowledge base is built once per store under --home (default ~/.kbgraph-bench) and reused; on Neo4j each
corpus gets its own server folder (neo4j-<corpus>): a Community server has one database, so a knowledge-base
name does not separate two corpora there.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from urllib.parse import unquote

from kbgraph.kb import KnowledgeBase
from kbgraph.query.methods.retrieval import dense_settings
from kbgraph.query.propagation.propagate import propagate
from kbgraph.query.propagation.seeding import seed_layers
from kbgraph.settings import Settings

from benchmarks.bench_neo4j import start_local_neo4j

from benchmarks.common import DEFAULT_HOME, SETS, set_path


WARMUP = 20


def passage_ids(chunks) -> list[str]:
    out: list[str] = []
    for c in chunks:
        pid = unquote(c.document_uri.rsplit("#", 1)[-1])
        if pid not in out:
            out.append(pid)
    return out


def run(kb: KnowledgeBase, questions: list[dict], k_chunks: int = 10) -> dict:
    settings, store, emb = kb.settings, kb.store, kb.embedder
    vecs = emb.embed([q["question"] for q in questions])
    out = {}
    variants = {
        "dense": dense_settings(settings),
        "weights": settings.updated({"ranker": "weights"}),
        "propagation": settings,
    }  # 'weights': propagation's weighted sum, the ranker before the learned one
    for method, s in variants.items():
        lat, r2, r5 = [], [], []
        layers = ["Chunk"] if method == "dense" else None
        # warm-up (untimed): the first questions after a server start run cold plans and, on Neo4j, a cold JIT
        for q, v in list(zip(questions, vecs, strict=True))[:WARMUP]:
            propagate(store, s, seed_layers(store, s, q["question"], v.tolist(), layers=layers), k=k_chunks)
        for q, v in zip(questions, vecs, strict=True):
            t0 = time.perf_counter()
            seeds = seed_layers(store, s, q["question"], v.tolist(), layers=layers)
            chunks = propagate(store, s, seeds, k=k_chunks)
            lat.append((time.perf_counter() - t0) * 1000)
            got = passage_ids(chunks)
            gold = set(q["gold_passage_ids"])
            r2.append(len(gold & set(got[:2])) / len(gold))
            r5.append(len(gold & set(got[:5])) / len(gold))
        lat.sort()
        out[method] = {
            "p50": statistics.median(lat),
            "p95": lat[int(0.95 * (len(lat) - 1))],
            "R@2": 100 * statistics.mean(r2),
            "R@5": 100 * statistics.mean(r5),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="2wiki", choices=sorted(SETS))
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--stores", default="falkordb,neo4j")
    ap.add_argument("--home", default=str(DEFAULT_HOME))
    args = ap.parse_args()
    base = set_path(args.corpus)
    questions = [json.loads(x) for x in Path(f"{base}.questions.jsonl").read_text().splitlines()][: args.questions]
    results = {}
    for store in args.stores.split(","):
        settings = Settings(home=Path(args.home), name=f"{args.corpus}_{store}", falkor_idle_timeout=600)
        local = None
        if store == "neo4j":
            settings, local = start_local_neo4j(
                settings, Path(args.home) / f"neo4j-{args.corpus}", bolt_port=17688, http_port=17475, timeout=180
            )
        try:
            with KnowledgeBase(settings=settings) as kb:
                t0 = time.perf_counter()
                report = kb.ingest([Path(f"{base}.corpus.jsonl")], progress=False)
                print(
                    f"{store}: ingest {report.added} added, {report.unchanged} unchanged in "
                    f"{time.perf_counter() - t0:.0f} s",
                    flush=True,
                )
                results[store] = run(kb, questions)
        finally:
            if local is not None:
                local.stop()
    print(f"\n{args.corpus}: {len(questions)} questions, top-10 chunks, latency excludes the question embedding")
    print(f"{'store':9} {'method':13} {'p50 ms':>7} {'p95 ms':>7} {'R@2':>6} {'R@5':>6}")
    for store, res in results.items():
        for method, r in res.items():
            print(f"{store:9} {method:13} {r['p50']:7.1f} {r['p95']:7.1f} {r['R@2']:6.1f} {r['R@5']:6.1f}")
        d, h = res["dense"], res["propagation"]
        print(
            f"{store:9} {'ratio p/d':13} {h['p50'] / d['p50']:7.2f} {h['p95'] / d['p95']:7.2f} "
            f"{h['R@2'] / d['R@2']:6.2f} {h['R@5'] / d['R@5']:6.2f}"
        )


if __name__ == "__main__":
    main()
