"""The cost curve (issue 37): knowledge bases of growing size, offline (no LLM, default settings), and what each
costs per passage: ingest time, graph nodes and vectors, store memory and disk, the ingesting process's peak RSS,
query latency, and recall of the same questions in a growing haystack.

    .venv/bin/python -m benchmarks.scale [--sizes 1000,10000,100000] [--store falkordb|neo4j] [--seed 37]
        [--questions 200] [--home /tmp/scale-home] [--out /tmp/scale-<store>] [--extrapolate 1000000,10000000]

The corpus (benchmarks/scale_corpus.py, whose docstring says exactly how it is made): the gold passages of the
first ``--questions`` 2WikiMultihopQA dev500 questions, the other real passages of the repo's three sets
(6,185 in all), then passages generated deterministically from the ``--seed``; a size N is the first N
passages, so every size holds the recall questions' gold passages and each larger size only adds haystack.

Per size, one child process (``--child``) on a fresh knowledge base (``<home>/scale_<store>_<N>``, its own cold
embedding cache ``<home>/cache_<store>_<N>``) runs ``KnowledgeBase(settings=...).ingest([corpus.jsonl])`` and
reports:

* ``passages/s``: N / the wall time of that call (BM25 index build at its end included); the stage seconds of its
  report (parse, chunk, distill, embed, write);
* ``nodes/passage`` per label (``kb.stats()``), and ``vectors/passage``: nodes of the vector-indexed labels
  (kbgraph.models.VECTOR_LABELS) that carry an ``embedding`` (counted by a statement per label);
* the store: FalkorDB, the KB's embedded redis-server (``/proc/<pid>/status`` VmRSS after the ingest, and VmHWM,
  its peak) and disk = the KB folder (its append-only file), du after the fsync; Neo4j, the JVM's VmRSS/VmHWM
  (a fresh server per size, ``<home>/neo4j-<N>``, heap and page cache at their defaults) and disk = the
  server's ``data`` folder (store files and transaction logs);
* ``driver RSS``: ru_maxrss of the ingesting child (and the largest of its forked distill workers);
* query latency: ``kb.retrieve(q, method="dense" | "propagation")`` (top-10 chunks) in process, over the recall
  questions, after ``--warmup`` untimed ones per method; the question vectors are put in the embedding cache
  first, so the milliseconds are the retrieval's, not the embedding model's;
* R@2 / R@5 over the questions' gold passages (``kbgraph.eval.metrics``: k counted in distinct passages).

Output: a JSON line per size appended to ``<out>.jsonl``, the markdown table written to ``<out>.md`` and printed.
Sizes in ``--extrapolate`` are not run: each is a line ``v(N) = v(N1) + (N - N1) x (v(N2) - v(N1)) / (N2 - N1)``
through the two largest measured sizes N1 < N2 (time, memory and disk per added passage stay what they were
between N1 and N2), marked "extrapolated", without latency or recall. Before the first size, a small untimed
ingest makes the derived models (ONNX export, static model) in ``<home>/models``, so no size pays for them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import scale_corpus

from benchmarks.common import REPO, rerun

MB = 1024  # /proc and ru_maxrss sizes are KiB
WARMUP = 20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--store", default="falkordb", choices=("falkordb", "neo4j"))
    ap.add_argument("--seed", type=int, default=scale_corpus.SEED)
    ap.add_argument("--questions", type=int, default=200, help="2Wiki dev500 questions for recall and latency")
    ap.add_argument("--warmup", type=int, default=WARMUP)
    ap.add_argument("--home", type=Path, default=Path("/tmp/scale-home"))
    ap.add_argument("--out", type=Path, default=None, help="results <out>.jsonl and <out>.md (/tmp/scale-<store>)")
    ap.add_argument("--extrapolate", default="", help="sizes to extrapolate from the two largest measured")
    ap.add_argument("--keep", action="store_true", help="keep each knowledge base (default: delete after)")
    ap.add_argument("--neo4j-bolt-port", type=int, default=17791)
    ap.add_argument("--neo4j-http-port", type=int, default=17574)
    ap.add_argument("--child", help=argparse.SUPPRESS)  # internal: one size, job as JSON; prints RESULT {...}
    args = ap.parse_args()
    if args.child:
        return _child(json.loads(args.child))
    sizes = sorted(int(s) for s in args.sizes.split(",") if s.strip())
    out = args.out or Path(f"/tmp/scale-{args.store}")
    home = args.home.resolve()
    home.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    passages, questions = scale_corpus.build(
        max(sizes),
        seed=args.seed,
        questions=args.questions,
        min_size=min(sizes),
        cache=home / "corpus" / "entities.json",
    )
    print(
        f"corpus: {len(passages):,} passages ({sum(p['id'].startswith('gen:') for p in passages):,} generated, "
        f"seed {args.seed}), {len(questions)} recall questions, made in {time.perf_counter() - t0:.0f} s",
        flush=True,
    )
    qfile = home / "questions.json"
    qfile.write_text(json.dumps(questions), encoding="utf-8")
    meta = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "commit": _commit(),
        "cores": os.cpu_count(),
        "store": args.store,
        "seed": args.seed,
        "questions": len(questions),
        "command": " ".join(["python -m benchmarks.scale", *sys.argv[1:]]),
    }
    _run_size(
        args,
        home,
        scale_corpus.write_jsonl(passages[:20], home / "corpus" / "warmup.jsonl"),
        "warmup",
        qfile,
        warm_only=True,
    )
    rows = []
    for n in sizes:
        corpus = scale_corpus.write_jsonl(passages[:n], home / "corpus" / f"scale-{n}.jsonl")
        row = {**meta, **_run_size(args, home, corpus, str(n), qfile)}
        row["generated"] = sum(p["id"].startswith("gen:") for p in passages[:n])
        rows.append(row)
        with out.with_suffix(".jsonl").open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)
    extra = [int(s) for s in args.extrapolate.split(",") if s.strip()]
    if extra and len(rows) >= 2:
        rows += [_extrapolate(rows[-2], rows[-1], n) for n in extra]
    table = markdown(rows)
    out.with_suffix(".md").write_text(table + "\n", encoding="utf-8")
    print("\n" + table)
    print(f"\nresults: {out.with_suffix('.jsonl')}, {out.with_suffix('.md')}")


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).parent,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


# --- the parent: one size ------------------------------------------------------------------------------
def _settings(args, home: Path, tag: str) -> dict[str, Any]:
    over: dict[str, Any] = {
        "home": str(home),
        "name": f"scale_{args.store}_{tag}",
        "falkor_idle_timeout": 0,
        "embedding_cache_dir": str(home / f"cache_{args.store}_{tag}"),
        "llm_model": None,
    }
    if args.store == "neo4j":
        over.update(
            {
                "neo4j_local_home": str(home / f"neo4j-{tag}"),
                "neo4j_bolt_port": args.neo4j_bolt_port,
                "neo4j_http_port": args.neo4j_http_port,
                "neo4j_password": "kbgraph-bench",
            }
        )
    return over


def _run_size(args, home: Path, corpus: Path, tag: str, qfile: Path, warm_only: bool = False) -> dict[str, Any]:
    """Ingest ``corpus`` into a fresh knowledge base in a child process and measure it (module docstring)."""
    from kbgraph.settings import Settings
    from kbgraph.store.falkor_server import EmbeddedFalkorDB

    over = _settings(args, home, tag)
    settings = Settings(**over)
    EmbeddedFalkorDB(settings.kb_dir).stop()
    for folder in (settings.kb_dir, Path(over["embedding_cache_dir"]), settings.neo4j_dir):
        shutil.rmtree(folder, ignore_errors=True)
    local = None
    if args.store == "neo4j":
        from kbgraph.neo4j_local import Neo4jLocal

        from benchmarks.bench_neo4j import LIB_DIR

        local = Neo4jLocal(settings, lib_dir=LIB_DIR if LIB_DIR.is_dir() else None)
        over["uri"] = local.start(timeout=300).bolt_uri
    try:
        job = {
            "settings": over,
            "corpus": str(corpus),
            "questions": str(qfile),
            "warmup": args.warmup,
            "measure": not warm_only,
        }
        t0 = time.perf_counter()
        proc = subprocess.run([*rerun(__file__), "--child", json.dumps(job)], capture_output=True, text=True, cwd=REPO)
        result = next((json.loads(x[7:]) for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
        if proc.returncode != 0 or result is None:
            sys.exit(f"size {tag} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
        result["child_seconds"] = time.perf_counter() - t0
        if local is not None:
            pid = local.status().pid
            result["server_rss_mb"] = _vm(pid, "VmRSS")
            result["server_hwm_mb"] = _vm(pid, "VmHWM")
            result["disk_mb"] = _du(settings.neo4j_dir / "data")
            result["heap"], result["pagecache"] = settings.store.neo4j_heap, settings.store.neo4j_pagecache
        result["cache_mb"] = _du(Path(over["embedding_cache_dir"]))
        return result
    finally:
        if local is not None:
            local.stop()
        EmbeddedFalkorDB(settings.kb_dir).stop()
        if warm_only or not args.keep:
            for folder in (settings.kb_dir, Path(over["embedding_cache_dir"]), settings.neo4j_dir):
                shutil.rmtree(folder, ignore_errors=True)


def _vm(pid: int | str | None, field: str) -> float | None:
    """``field`` (VmRSS, VmHWM) of /proc/<pid>/status in MB, None when unreadable."""
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / MB
    except (OSError, ValueError):
        pass
    return None


def _du(folder: Path) -> float:
    """Bytes of the files under ``folder`` in MB (apparent sizes; 0 when it does not exist)."""
    if not folder.exists():
        return 0.0
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 1024 / 1024


# --- the child: one size -------------------------------------------------------------------------------
def _child(job: dict) -> None:
    from kbgraph.eval.metrics import passage_ids, recall_at_k
    from kbgraph.kb import KnowledgeBase
    from kbgraph.models import VECTOR_LABELS
    from kbgraph.settings import Settings
    from kbgraph.store.falkor_server import EmbeddedFalkorDB

    settings = Settings(**job["settings"])
    n = sum(1 for line in Path(job["corpus"]).open(encoding="utf-8") if line.strip())
    with KnowledgeBase(settings=settings) as kb:
        kb.stats()  # connect (and start the embedded server) before the clock starts
        t0 = time.perf_counter()
        report = kb.ingest([Path(job["corpus"])], progress=False)
        wall = time.perf_counter() - t0
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / MB
        fork = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / MB
        if not job["measure"]:
            print("RESULT " + json.dumps({"wall": wall}), flush=True)
            return
        stats = kb.stats()
        vectors = {}
        for label in VECTOR_LABELS:
            if stats.nodes.get(label):
                rows = kb.store.run("bench/count_label_vectors", {"label": label})
                vectors[label] = int(rows[0]["count"])
        result: dict[str, Any] = {
            "passages": n,
            "ingest_s": wall,
            "passages_per_s": n / wall,
            "added": report.added,
            "failed": report.failed,
            "stages_s": dict(report.seconds),
            "nodes": dict(stats.nodes),
            "relationships": dict(stats.relationships),
            "vectors": vectors,
            "nodes_per_passage": sum(stats.nodes.values()) / n,
            "vectors_per_passage": sum(vectors.values()) / n,
            "driver_rss_mb": rss,
            "workers_rss_mb": fork or None,
        }
        if stats.backend == "falkordb":
            time.sleep(2)  # the append-only file is fsynced every second
            pid = EmbeddedFalkorDB(settings.kb_dir).status().pid
            result.update(
                server_rss_mb=_vm(pid, "VmRSS"), server_hwm_mb=_vm(pid, "VmHWM"), disk_mb=_du(settings.kb_dir)
            )
        questions = json.loads(Path(job["questions"]).read_text(encoding="utf-8"))
        kb.embedder.embed([q["question"] for q in questions])  # into the embedding cache: not timed below
        for method in ("dense", "propagation"):
            for q in questions[: job["warmup"]]:
                kb.retrieve(q["question"], k=10, method=method)
            lat, r2, r5 = [], [], []
            for q in questions:
                t = time.perf_counter()
                chunks = kb.retrieve(q["question"], k=10, method=method)
                lat.append((time.perf_counter() - t) * 1000)
                ranked = passage_ids(c.document_uri for c in chunks)
                r2.append(recall_at_k(ranked, q["gold_passage_ids"], 2))
                r5.append(recall_at_k(ranked, q["gold_passage_ids"], 5))
            lat.sort()
            result[method] = {
                "p50_ms": statistics.median(lat),
                "p95_ms": lat[int(0.95 * (len(lat) - 1))],
                "R@2": 100 * statistics.mean(r2),
                "R@5": 100 * statistics.mean(r5),
            }
    print("RESULT " + json.dumps(result), flush=True)


# --- table ---------------------------------------------------------------------------------------------
_LINEAR = ("ingest_s", "server_rss_mb", "disk_mb", "cache_mb")  # the driver's RSS is not per passage


def _extrapolate(a: dict, b: dict, n: int) -> dict:
    """The row of size ``n`` on the line through rows ``a`` and ``b`` (module docstring), per-passage counts
    as ``b``'s."""
    na, nb = a["passages"], b["passages"]
    row = {k: b[k] for k in ("date", "commit", "cores", "store", "nodes_per_passage", "vectors_per_passage")}
    for key in _LINEAR:
        if a.get(key) is not None and b.get(key) is not None:
            row[key] = b[key] + (n - nb) * (b[key] - a[key]) / (nb - na)
    if row.get("ingest_s"):
        row["passages_per_s"] = n / row["ingest_s"]
    row.update(passages=n, extrapolated=f"from {na:,} and {nb:,}")
    return row


def markdown(rows: list[dict]) -> str:
    def f(v, fmt="{:,.0f}"):
        return "–" if v is None else fmt.format(v)

    head = (
        "| passages | store | ingest s | passages/s | nodes / passage | vectors / passage | server RSS MB "
        "(KB / passage) | disk MB (KB / passage) | embedding cache MB | driver peak RSS MB | dense p50 / p95 ms "
        "| propagation p50 / p95 ms | dense R@2 / R@5 | propagation R@2 / R@5 |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        n = r["passages"]
        d, p = r.get("dense"), r.get("propagation")
        label = f"{n:,}" + (f" (extrapolated {r['extrapolated']})" if r.get("extrapolated") else "")
        lines.append(
            f"| {label} | {r['store']} | {f(r.get('ingest_s'))} | {f(r.get('passages_per_s'), '{:.1f}')} "
            f"| {f(r.get('nodes_per_passage'), '{:.1f}')} | {f(r.get('vectors_per_passage'), '{:.1f}')} "
            f"| {_per(r, 'server_rss_mb')} | {_per(r, 'disk_mb')} | {f(r.get('cache_mb'))} | {f(r.get('driver_rss_mb'))} "
            f"| {_pair(d, 'p50_ms', 'p95_ms', '{:.1f}')} | {_pair(p, 'p50_ms', 'p95_ms', '{:.1f}')} "
            f"| {_pair(d, 'R@2', 'R@5', '{:.1f}')} | {_pair(p, 'R@2', 'R@5', '{:.1f}')} |"
        )
    return "\n".join(lines)


def _per(r: dict, key: str) -> str:
    """``MB (KB per passage)`` of ``r[key]`` (MB)."""
    v = r.get(key)
    return "–" if v is None else f"{v:,.0f} ({v * 1024 / r['passages']:,.0f})"


def _pair(m: dict | None, a: str, b: str, fmt: str) -> str:
    return "–" if not m else f"{fmt.format(m[a])} / {fmt.format(m[b])}"


if __name__ == "__main__":
    main()
