"""Store write throughput: 20,000 Chunk nodes with 384-d embeddings by batched UNWIND, on the embedded
FalkorDB and on the local Neo4j 5, in one process. Prints nodes/s per backend and the Neo4j/FalkorDB ratio,
plus vector top-10 latency and the embedded server's restart time (vector index rebuilt on load).

    .venv/bin/python -m benchmarks.store_write [--nodes 20000] [--batch 1000]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from kbgraph.neo4j_local import Neo4jLocal
from kbgraph.settings import Settings
from kbgraph.store import open_store
from kbgraph.store.falkor_server import EmbeddedFalkorDB

from benchmarks.common import DEFAULT_HOME


def rows(n: int, dim: int, seed: int = 0) -> tuple[list[dict], np.ndarray]:
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    out = [
        {
            "id": f"bench:{i}",
            "document_id": f"doc:{i // 100}",
            "parent_id": f"doc:{i // 100}",
            "text": f"benchmark chunk {i}",
            "kind": "text",
            "summary": None,
            "page": None,
            "order": i,
            "section_path": "",
            "embedding": vecs[i].tolist(),
        }
        for i in range(n)
    ]
    return out, vecs


def measure(settings: Settings, data: list[dict], vecs: np.ndarray) -> dict:
    store = open_store(settings)
    try:
        store.clear()
        store.ensure_schema()
        t0 = time.perf_counter()
        store.write_batches("ingest/upsert_chunks", data)
        seconds = time.perf_counter() - t0
        assert store.stats().nodes["Chunk"] == len(data)
        lat = []
        for q in vecs[:200:2]:
            t = time.perf_counter()
            store.vector_search("Chunk", q.tolist(), k=10)
            lat.append((time.perf_counter() - t) * 1000)
        hits = sum(store.vector_search("Chunk", vecs[i].tolist(), k=1)[0].id == f"bench:{i}" for i in range(0, 100))
        return {
            "seconds": seconds,
            "nodes_per_s": len(data) / seconds,
            "top10_ms_p50": statistics.median(lat),
            "self_recall@1": hits / 100,
        }
    finally:
        store.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=1000)
    args = ap.parse_args()
    data, vecs = rows(args.nodes, 384)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        falkor = Settings(home=Path(tmp), name="bench", batch_size=args.batch, falkor_idle_timeout=0)
        results["falkordb"] = measure(falkor, data, vecs)
        server = EmbeddedFalkorDB(falkor.kb_dir)
        server.stop()
        t0 = time.perf_counter()
        s = open_store(falkor)
        s.vector_search("Chunk", vecs[0].tolist(), k=1)
        results["falkordb"]["restart_s"] = time.perf_counter() - t0
        s.clear()
        s.close()
        server.stop()

        neo = Settings(
            home=Path(tmp),
            neo4j_local_home=DEFAULT_HOME / "neo4j-store",
            neo4j_bolt_port=17689,
            neo4j_http_port=17476,
            neo4j_password="kbgraph-bench",
            batch_size=args.batch,
        )
        local = Neo4jLocal(neo, lib_dir=Path.home() / ".kbgraph" / "neo4j-local" / "lib")
        status = local.start(timeout=180)
        try:
            neo = neo.updated({"uri": status.bolt_uri})
            results["neo4j"] = measure(neo, data, vecs)
            s = open_store(neo)
            s.clear()
            s.close()
        finally:
            local.stop()

    print(f"{args.nodes:,} Chunk nodes, 384-d embeddings, UNWIND batches of {args.batch}")
    print(f"{'backend':10} {'seconds':>8} {'nodes/s':>9} {'top10 p50 ms':>13} {'self-recall@1':>14} {'restart s':>10}")
    for name, r in results.items():
        print(
            f"{name:10} {r['seconds']:8.1f} {r['nodes_per_s']:9.0f} {r['top10_ms_p50']:13.2f} "
            f"{r['self_recall@1']:14.2f} {r.get('restart_s', float('nan')):10.1f}"
        )
    ratio = results["neo4j"]["nodes_per_s"] / results["falkordb"]["nodes_per_s"]
    print(f"write ratio Neo4j/FalkorDB: {ratio:.2f}x")


if __name__ == "__main__":
    main()
