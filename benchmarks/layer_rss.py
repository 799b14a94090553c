"""The embedded FalkorDB server's memory (VmRSS) per passage with layers' vectors removed one after another
(issue 38), on a restarted copy of an existing knowledge base: what a knowledge base built without those vectors
(setting ``vector_layers``) holds after a restart.

    .venv/bin/python -m benchmarks.layer_rss --kb <home>/<name> --out DIR \
        [--chain "Triple;Entity;Document;AtomicQuestion"]

The knowledge base's ``appendonlydir`` is copied to ``<out>/<name>`` (the original is only read: its server may
keep running) and a server started on the copy; its VmRSS is read once every index is OPERATIONAL and 30 s idle
(benchmarks/store_bytes.py's ``Server.snapshot``). Then, per step of ``--chain`` (labels separated by ``;``, a step
may name several with ``,``), on the copy: ``DROP VECTOR INDEX`` and ``SET n.embedding = NULL`` for the step's
labels, the append-only file rewritten, the server stopped and started again (it replays the file and rebuilds the
remaining indexes), VmRSS read again. The steps are cumulative. A knowledge base built without a layer's vectors
still has that label's empty vector index (~0.1 MB each, fixed), which this leaves out. Passages = Document nodes.
Output: one JSON line per state, and ``<out>/layer_rss.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from benchmarks.common import snake
from benchmarks.store_bytes import KB, Server, copy_store


def rewrite_aof(srv: Server) -> None:
    srv.redis.execute_command("BGREWRITEAOF")
    while True:
        info = srv.redis.info("persistence")
        if not info.get("aof_rewrite_in_progress") and not info.get("aof_rewrite_scheduled"):
            return
        time.sleep(0.5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kb", type=Path, required=True, help="the knowledge base's folder, <home>/<name>")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--graph", default=None, help="the graph's name (default: the folder's name)")
    ap.add_argument("--chain", default="Triple;Entity;Document;AtomicQuestion")
    args = ap.parse_args()
    graph = args.graph or args.kb.name
    dst = args.out / args.kb.name
    copy_store(args.kb, dst)
    steps = [[]] + [[lab.strip() for lab in s.split(",") if lab.strip()] for s in args.chain.split(";")]
    srv = Server(dst, graph)
    passages = int(srv.run("bench/count_documents")[0][0])
    removed: list[str] = []
    out = []
    try:
        for strip in steps:
            t0 = time.perf_counter()
            if strip:
                for label in strip:
                    srv.run(f"schema/drop_vector_{snake(label)}")
                    srv.run("bench/clear_vectors", {"label": label})
                srv.settled()
                rewrite_aof(srv)
                srv.stop()
                t0 = time.perf_counter()
                srv = Server(dst, graph)
                removed += strip
            srv.settled(timeout=1800)
            load_s = time.perf_counter() - t0
            snap = srv.snapshot(idle=30)
            vectors = int(srv.run("bench/count_vectors")[0][0])
            rec = {
                "without": removed[:],
                "passages": passages,
                "vectors": vectors,
                "VmRSS_KB": snap["VmRSS"],
                "VmHWM_KB": snap["VmHWM"],
                "used_memory": snap["used_memory"],
                "load_s": round(load_s, 1),
                "RSS_KB_per_passage": round(snap["VmRSS"] / passages, 1),
                "used_KB_per_passage": round(snap["used_memory"] / KB / passages, 1),
            }
            print(json.dumps(rec), flush=True)
            out.append(rec)
    finally:
        srv.stop()
    (args.out / "layer_rss.json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
