"""Learned rankers compared on the repo's multi-hop sets: dense, BM25, the linear ranker of today and non-linear
candidates (LightGBM lambdarank, scikit-learn HistGradientBoosting) with or without list features, each in-set
and leave-one-set-out (fit on the other sets, score the held-out one), from the same query-time pools.

    .venv/bin/python -m benchmarks.ranker_compare --home /work/recall-home --pools /work/recall-home/pools \
        [--sets 2wiki,musique,hotpotqa] [--models linear,lgbm,hgb] [--features base,list] [--redump] \
        [--store falkordb|neo4j]

The shipped models are the library's: ``kbgraph rank train --model gbm|blend --shipped`` (docs/scoring.md,
"Rebuilding the shipped models"). ``--store neo4j`` dumps the pools from the Neo4j knowledge bases of
benchmarks/query.py instead (cached as ``<set>_neo4j.pkl``).

Step 1 (once per knowledge base, cached under ``--pools``): for every question, the learned ranker's pool
exactly as at query time (kbgraph.query.propagation.propagate ``learned_pool``: the best ``ranker_pool`` chunks of the
weighted sum plus BM25's top ``ranker_bm25_k``, with their terms), the dense list (the Chunk vector seeds, best
first) and BM25's list; and once per knowledge base the graph the list features read (each chunk's document and
entities, each entity's name, type and degree, each chunk's triples as (subject, object) entity ids).
Step 2: features (benchmarks/ranker_features.py), fits and Recall@k over distinct passages (as kbgraph.eval
counts them). The knowledge bases are benchmarks/retrieval_recall.py's (``<home>/<set>_falkordb``), built on
first use.
"""

from __future__ import annotations

import argparse
import pickle
import time
from pathlib import Path

import numpy as np

from benchmarks.ranker_features import GraphData, QuestionPool, recall_of, run_models

from benchmarks.common import DEFAULT_HOME, set_path


#: The graph the list features read: key -> its statement (cypher/bench/).
_GRAPH = {
    "documents": "bench/documents",
    "chunks": "bench/chunks",
    "entities": "bench/entities",
    "mentions": "bench/mentions",
    "triples": "bench/triples",
}


def dump(name: str, home: Path, out: Path, store_name: str = "falkordb") -> tuple[GraphData, list[QuestionPool]]:
    """Step 1 for one set (see the module docstring) on the knowledge base ``<name>_<store_name>`` (Neo4j's: the
    local server of benchmarks/query.py in ``<home>/neo4j-<name>``); cached in ``out/<name>.pkl`` (FalkorDB) or
    ``out/<name>_neo4j.pkl``."""
    from kbgraph.eval.dataset import load_dataset
    from kbgraph.eval.metrics import passage_id
    from kbgraph.kb import KnowledgeBase
    from kbgraph.query.propagation.propagate import learned_pool, score_terms
    from kbgraph.query.propagation.seeding import seed_layers
    from kbgraph.query.propagation.ranking_gbm import pool_texts
    from kbgraph.settings import Settings

    ds = load_dataset(set_path(name))
    settings = Settings(home=home, name=f"{name}_{store_name}", falkor_idle_timeout=600, llm_model=None)
    local = None
    if store_name == "neo4j":
        from benchmarks.bench_neo4j import start_local_neo4j

        settings, local = start_local_neo4j(
            settings, home / f"neo4j-{name}", bolt_port=17688, http_port=17475, timeout=180
        )
    with KnowledgeBase(settings=settings) as kb:
        if ds.corpus_path is not None:
            kb.ingest([ds.corpus_path], progress=False)
        store, st = kb.store, kb.settings.updated({"ranker": "learned"})
        raw = {key: store.run(name) for key, name in _GRAPH.items()}
        docs = {r["id"]: (str(r["title"] or ""), passage_id(str(r["uri"] or ""))) for r in raw["documents"]}
        graph = GraphData(
            chunk_doc={r["id"]: r["document_id"] for r in raw["chunks"]},
            doc_title={d: t for d, (t, _) in docs.items()},
            doc_passage={d: p for d, (_, p) in docs.items()},
            entity={r["id"]: (str(r["name"] or ""), str(r["type"] or ""), int(r["degree"])) for r in raw["entities"]},
            mentions={},
            triples={},
            max_degree=st.retrieval.max_entity_degree,
        )
        for r in raw["mentions"]:
            graph.mentions.setdefault(r["chunk_id"], []).append(r["entity_id"])
        for r in raw["triples"]:
            graph.triples.setdefault(r["chunk_id"], []).append((r["subject_id"], r["object_id"]))
        pools = []
        t0 = time.perf_counter()
        for q in ds.questions:
            if not q.gold_passage_ids:
                continue
            qvec = kb.embedder.embed([q.question])[0].tolist()
            seeds = seed_layers(store, st, q.question, qvec)
            dense = [c for c, _ in sorted(seeds.layers.get("Chunk", {}).items(), key=lambda kv: (-kv[1][0], kv[0]))]
            terms, scores, ranked, similarity = score_terms(store, st, seeds, k=st.retrieval.ranker_pool)
            found = (
                learned_pool(store, st, seeds, ranked, terms, scores, st.retrieval.ranker_pool, similarity)
                if ranked
                else None
            )
            pools.append(
                QuestionPool(
                    question=q.question,
                    gold=list(q.gold_passage_ids),
                    dense=dense,
                    bm25=list(seeds.bm25),
                    ids=found.ids if found else [],
                    candidates=[c.model_dump() for c in found.candidates] if found else [],
                    texts=pool_texts(store, found.ids) if found else [],
                )
            )
        print(f"{name}: {len(pools)} pools in {time.perf_counter() - t0:.0f} s", flush=True)
    if local is not None:
        local.stop()
    out.mkdir(parents=True, exist_ok=True)
    with open(out / (f"{name}.pkl" if store_name == "falkordb" else f"{name}_{store_name}.pkl"), "wb") as f:
        pickle.dump((graph, pools), f)
    return graph, pools


def latency(name: str, home: Path, questions: int, rankers: list[str]) -> None:
    """Propagation's wall-clock ms per question (the question's embedding excluded) and passage recall through the
    query path, each ranker of ``rankers`` on the same questions, interleaved (after 20 warm-up questions each):
    what a ranker costs on top of the same retrieval."""
    from kbgraph.eval.dataset import load_dataset
    from kbgraph.eval.metrics import passage_ids, recall_at_k
    from kbgraph.kb import KnowledgeBase
    from kbgraph.query.propagation import ranking_gbm
    from kbgraph.query.propagation.propagate import propagate
    from kbgraph.query.propagation.seeding import seed_layers
    from kbgraph.settings import Settings

    ds = load_dataset(set_path(name))
    qs = [q for q in ds.questions if q.gold_passage_ids][:questions]
    settings = Settings(home=home, name=f"{name}_falkordb", falkor_idle_timeout=600, llm_model=None)
    with KnowledgeBase(settings=settings) as kb:
        vecs = kb.embedder.embed([q.question for q in qs])
        # "gbm-cold": the gbm ranker with no candidate's text kept from an earlier question
        variants = {r: kb.settings.updated({"ranker": r.removesuffix("-cold")}) for r in rankers}
        ms: dict[str, list[float]] = {r: [] for r in rankers}
        cpu: dict[str, list[float]] = {r: [] for r in rankers}
        got: dict[str, dict[int, list[float]]] = {r: {k: [] for k in (1, 2, 5, 10)} for r in rankers}
        for i, (q, vec) in enumerate(zip([*qs[:20], *qs], [*vecs[:20], *vecs], strict=True)):
            order = rankers if i % 2 else rankers[::-1]
            for r in order:
                if r.endswith("-cold"):
                    ranking_gbm._FACTS.clear()  # noqa: SLF001 - a benchmark's cold start
                t0, c0 = time.perf_counter(), time.process_time()
                seeds = seed_layers(kb.store, variants[r], q.question, vec.tolist())
                chunks = propagate(kb.store, variants[r], seeds, k=10)
                if i < 20:
                    continue
                ms[r].append(1000 * (time.perf_counter() - t0))
                cpu[r].append(1000 * (time.process_time() - c0))
                ranked = passage_ids(c.document_uri for c in chunks)
                for k in got[r]:
                    got[r][k].append(recall_at_k(ranked, q.gold_passage_ids, k) or 0.0)
        for r in rankers:
            p50, p95 = np.percentile(ms[r], [50, 95])
            print(
                f"{name:10} {r:8} p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  client CPU p50 {np.median(cpu[r]):5.1f} ms  "
                + " ".join(f"R@{k} {100 * np.mean(v):5.1f}" for k, v in got[r].items()),
                flush=True,
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="2wiki,musique,hotpotqa")
    ap.add_argument("--home", default=str(DEFAULT_HOME))
    ap.add_argument("--pools", default="/tmp/ranker-pools", help="folder of the cached pools (step 1)")
    ap.add_argument("--redump", action="store_true", help="rebuild the cached pools")
    ap.add_argument(
        "--store",
        default="falkordb",
        choices=("falkordb", "neo4j"),
        help="the knowledge bases the pools "
        "are dumped from (neo4j: benchmarks/query.py's, pools cached as <set>_neo4j.pkl)",
    )
    ap.add_argument("--dump-only", action="store_true")
    ap.add_argument("--models", default="linear,lgbm,hgb")
    ap.add_argument("--features", default="base,list")
    ap.add_argument(
        "--latency",
        type=int,
        default=0,
        metavar="N",
        help="instead: propagation's latency and recall "
        "with each ranker of --rankers through the query path, first N questions of each set",
    )
    ap.add_argument("--rankers", default="learned,gbm")
    args = ap.parse_args()
    if args.latency:
        for name in args.sets.split(","):
            latency(name, Path(args.home), args.latency, args.rankers.split(","))
        return
    data = {}
    for name in args.sets.split(","):
        cached = Path(args.pools) / (f"{name}.pkl" if args.store == "falkordb" else f"{name}_{args.store}.pkl")
        if cached.exists() and not args.redump:
            with open(cached, "rb") as f:
                data[name] = pickle.load(f)
        else:
            data[name] = dump(name, Path(args.home), Path(args.pools), args.store)
    if args.dump_only:
        return
    ks = (1, 2, 5, 10)
    print("\nPassage recall (%): in-set | leave-one-set-out (fit on the other sets)")
    print(f"{'set':10} {'ranker':28} " + " ".join(f"{'R@' + str(k):>11}" for k in ks))
    base = {}
    for name, (graph, pools) in data.items():
        for label, key in (("dense", "dense"), ("bm25", "bm25")):
            r = recall_of(pools, graph, key, ks)
            base[(name, label)] = r
            print(f"{name:10} {label:28} " + " ".join(f"{r[k]:11.1f}" for k in ks))
    t0 = time.perf_counter()
    for (name, label), (ins, loso) in run_models(data, args.models.split(","), args.features.split(","), ks).items():
        print(f"{name:10} {label:28} " + " ".join(f"{ins[k]:5.1f}/{loso[k]:5.1f}" for k in ks), flush=True)
    print(f"\nfits in {time.perf_counter() - t0:.0f} s; numpy {np.__version__}")


if __name__ == "__main__":
    main()
