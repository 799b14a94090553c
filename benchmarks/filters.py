"""Recall and latency under a document filter (issue 58, docs/benchmarks.md#filters).

    .venv/bin/python -m benchmarks.filters [--store falkordb|neo4j] [--groups 10] [--limit 500] [--home DIR]
        [--modes auto,exact,overfetch] [--skip-alone]

The repo's 2WikiMultihopQA dev500 set (examples/multihop/2wikimultihopqa: 3,301 passages, 500 questions) is split
into ``--groups`` metadata groups: the questions whose gold passages overlap are joined (union-find), each such
cluster goes whole to the smallest group so far, and every other passage to a group by its id's hash. Every passage
carries its group as the jsonl ``metadata`` key ``group`` (kbgraph.ingest.metadata). For each retrieval method
(propagation with the landed defaults, dense) and each question, R@5 of the gold passages is measured:

* ``unfiltered``: the whole knowledge base, no filter (what the filter is compared with);
* ``filtered``: the whole knowledge base, ``--where group=<the question's group>`` (``KnowledgeBase.retrieve``'s
  ``filters``: seeds, hops and pool inside the group);
* ``post-filter``: the unfiltered top 10, its chunks outside the group dropped, then the top 5 (filtering after
  retrieval, the alternative the issue names);
* ``alone``: a knowledge base built from the group's passages alone (reset and ingested again per group).

Latency: p50 / p95 of ``retrieve`` on the whole knowledge base, without and with the filter, question by question
in turns, after a warm-up pass (the adjacency in memory built), in the same process. The passages' vectors come
from the embedding cache shared by the runs (``--home``'s ``embed-cache``). Prints one JSON line per figure and a
Markdown table. Neo4j: a local server of the benchmark's own (benchmarks/bench_neo4j.py).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from kbgraph.eval.metrics import passage_ids, recall_at_k
from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings

REPO = Path(__file__).resolve().parent.parent
SET = REPO / "examples" / "multihop" / "2wikimultihopqa"
METHODS = ("propagation", "dense")
K = 5


def load(limit: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(passages, questions) of the dev500 set, the first ``limit`` questions."""
    passages = [json.loads(x) for x in (SET / "dev500.corpus.jsonl").read_text().splitlines() if x.strip()]
    questions = [json.loads(x) for x in (SET / "dev500.questions.jsonl").read_text().splitlines() if x.strip()]
    return passages, questions[:limit]


def groups_of(passages: list[dict[str, Any]], questions: list[dict[str, Any]], n: int) -> dict[str, int]:
    """{passage id: group}: questions sharing a gold passage in one cluster, clusters to the smallest group."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for q in questions:
        gold = q["gold_passage_ids"]
        for other in gold[1:]:
            parent[find(other)] = find(gold[0])
    clusters: dict[str, list[str]] = defaultdict(list)
    for pid in {p for q in questions for p in q["gold_passage_ids"]}:
        clusters[find(pid)].append(pid)
    sizes = [0] * n
    group: dict[str, int] = {}
    for members in sorted(clusters.values(), key=lambda m: (-len(m), min(m))):
        g = min(range(n), key=lambda i: (sizes[i], i))
        for pid in members:
            group[pid] = g
        sizes[g] += len(members)
    for p in passages:
        if p["id"] not in group:
            group[p["id"]] = int(hashlib.sha256(p["id"].encode()).hexdigest(), 16) % n
    return group


def write_corpus(path: Path, passages: list[dict[str, Any]], group: dict[str, int], only: int | None = None) -> Path:
    """A jsonl corpus of ``passages`` (of group ``only``, or all) with ``metadata.group`` set."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [
        {**p, "metadata": {"group": f"g{group[p['id']]:02d}"}}
        for p in passages
        if only is None or group[p["id"]] == only
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def ranked_ids(kb: KnowledgeBase, question: str, method: str, k: int, filters: Any = None) -> list[str]:
    return passage_ids(c.document_uri for c in kb.retrieve(question, k=k, method=method, filters=filters))


def where(g: int) -> dict[str, Any]:
    return {"op": "eq", "key": "group", "value": f"g{g:02d}"}


def measure_whole(
    kb: KnowledgeBase, questions: list[dict[str, Any]], group: dict[str, int], modes: list[str]
) -> dict[str, Any]:
    """R@5 unfiltered, filtered and post-filtered, and the latencies (module docstring), per method and seeding
    mode (setting filter_seeding: 'auto', 'exact', 'overfetch')."""
    out: dict[str, Any] = {}
    base = kb.settings
    for mode in modes:
        kb.settings = base.updated({"filter_seeding": mode})
        for method, figures in _measure_methods(kb, questions, group).items():
            out[method if len(modes) == 1 else f"{method} ({mode})"] = figures
    kb.settings = base
    return out


def _measure_methods(kb: KnowledgeBase, questions: list[dict[str, Any]], group: dict[str, int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for method in METHODS:
        for q in questions[:5]:  # warm-up: the BM25 index, the adjacency (built at the second question), caches
            ranked_ids(kb, q["question"], method, K)
            ranked_ids(kb, q["question"], method, K, where(group[q["gold_passage_ids"][0]]))
        time.sleep(5)
        recall: dict[str, list[float]] = defaultdict(list)
        seconds: dict[str, list[float]] = defaultdict(list)
        for q in questions:
            g = group[q["gold_passage_ids"][0]]
            gold = q["gold_passage_ids"]
            t = time.perf_counter()
            wide = ranked_ids(kb, q["question"], method, 10)
            seconds["unfiltered"].append(time.perf_counter() - t)
            t = time.perf_counter()
            filtered = ranked_ids(kb, q["question"], method, K, where(g))
            seconds["filtered"].append(time.perf_counter() - t)
            post = [pid for pid in wide if group.get(pid) == g]
            for name, ranked in (("unfiltered", wide), ("filtered", filtered), ("post-filter", post)):
                value = recall_at_k(ranked, gold, K)
                if value is not None:
                    recall[name].append(value)
        out[method] = {
            "recall": {name: round(100 * statistics.fmean(v), 1) for name, v in recall.items()},
            "p50_ms": {name: round(1000 * statistics.median(v), 2) for name, v in seconds.items()},
            "p95_ms": {name: round(1000 * sorted(v)[int(0.95 * (len(v) - 1))], 2) for name, v in seconds.items()},
        }
    return out


def measure_alone(
    kb: KnowledgeBase, questions: list[dict[str, Any]], group: dict[str, int], g: int
) -> dict[str, list[float]]:
    """R@5 per method of the questions of group ``g`` on ``kb``, built from the group alone."""
    out: dict[str, list[float]] = defaultdict(list)
    for q in questions:
        if group[q["gold_passage_ids"][0]] != g:
            continue
        for method in METHODS:
            value = recall_at_k(ranked_ids(kb, q["question"], method, K), q["gold_passage_ids"], K)
            if value is not None:
                out[method].append(value)
    return out


def open_kb(args: argparse.Namespace, home: Path) -> tuple[KnowledgeBase, Any]:
    settings = Settings(
        home=home,
        name=f"filters_{args.store}",
        falkor_idle_timeout=0,
        llm_model=None,
        embedding_cache_dir=home / "embed-cache",
    )
    local = None
    if args.store == "neo4j":
        from benchmarks.bench_neo4j import start_local_neo4j

        settings, local = start_local_neo4j(
            settings, home / "neo4j", bolt_port=args.neo4j_bolt_port, http_port=args.neo4j_http_port, timeout=300
        )
    return KnowledgeBase(settings=settings), local


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", default="falkordb", choices=("falkordb", "neo4j"))
    ap.add_argument("--groups", type=int, default=10)
    ap.add_argument("--limit", type=int, default=500, help="questions (the first N of dev500)")
    ap.add_argument("--home", type=Path, default=Path("/tmp/kbgraph-bench-filters"))
    ap.add_argument("--skip-alone", action="store_true", help="only the whole knowledge base (no per-group ones)")
    ap.add_argument(
        "--modes",
        default="auto",
        help="seeding modes of the filtered runs (setting filter_seeding): auto, exact, overfetch, comma-separated",
    )
    ap.add_argument("--neo4j-bolt-port", type=int, default=17793)
    ap.add_argument("--neo4j-http-port", type=int, default=17576)
    args = ap.parse_args()
    passages, questions = load(args.limit)
    group = groups_of(passages, questions, args.groups)
    home = args.home.resolve()
    kb, local = open_kb(args, home)
    result: dict[str, Any] = {
        "store": args.store,
        "groups": args.groups,
        "questions": len(questions),
        "passages": len(passages),
        "commit": _commit(),
        "date": time.strftime("%Y-%m-%d"),
    }
    try:
        whole = write_corpus(home / "corpus" / "whole.jsonl", passages, group)
        if kb.stats().nodes.get("Document", 0) != len(passages):  # else the whole corpus is there: an incremental run
            kb.reset()
        t = time.perf_counter()
        kb.ingest([whole])
        result["ingest_s"] = round(time.perf_counter() - t, 1)
        result["whole"] = measure_whole(kb, questions, group, args.modes.split(","))
        print(json.dumps({"whole": result["whole"]}), flush=True)
        if not args.skip_alone:
            alone: dict[str, list[float]] = defaultdict(list)
            for g in range(args.groups):
                kb.reset()
                kb.ingest([write_corpus(home / "corpus" / f"g{g:02d}.jsonl", passages, group, only=g)])
                for method, values in measure_alone(kb, questions, group, g).items():
                    alone[method].extend(values)
                print(json.dumps({"alone_group": g, "done": True}), flush=True)
            result["alone"] = {m: round(100 * statistics.fmean(v), 1) for m, v in alone.items()}
    finally:
        kb.close()
        if local is not None:
            local.stop()
    print(json.dumps(result), flush=True)
    print(_table(result))


def _table(r: dict[str, Any]) -> str:
    lines = [
        "| method | unfiltered R@5 | filtered R@5 | post-filter R@5 | group alone R@5 | p50 ms unfiltered / "
        "filtered | p95 ms unfiltered / filtered |",
        "|---|---|---|---|---|---|---|",
    ]
    for m, w in r["whole"].items():
        alone = r.get("alone", {}).get(m, "-")
        lines.append(
            f"| {m} | {w['recall']['unfiltered']} | {w['recall']['filtered']} | {w['recall']['post-filter']} "
            f"| {alone} | {w['p50_ms']['unfiltered']} / {w['p50_ms']['filtered']} | "
            f"{w['p95_ms']['unfiltered']} / {w['p95_ms']['filtered']} |"
        )
    return "\n".join(lines)


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


if __name__ == "__main__":
    main()
