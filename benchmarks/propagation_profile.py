"""Where one question's time goes in method ``propagation`` (PIKE-RAG §5.2.3 score propagation with the learned
ranker, the default without an LLM), against method ``dense``, on a knowledge base that benchmarks/query.py built:
per question, the store statements sent (by name: count, round trips, client wall time and, on FalkorDB, the
server's own execution time), and the time of the question embedding and of the Python parts (seeding, the
formula, BM25, the learned ranker's pool and features). Both methods run through the registry
(kbgraph.query.methods.registry), so the latency includes the question embedding, as ``kbgraph eval`` reports it
(kbgraph.eval.runner: the wall time of the method's ``run``).

    .venv/bin/python -m benchmarks.propagation_profile [--corpus 2wiki] [--questions 200] [--home DIR]
        [--store falkordb|neo4j] [--cprofile FILE]
    .venv/bin/python -m benchmarks.propagation_profile --home /tmp/ld/home --kb longdoc \
        --questions-file examples/longdoc/dev.questions.jsonl   # the long-document set's knowledge base

Statement times are wall times in the calling thread (the database's work, the round trip and the client's
decoding); the three seeding reads run at once, so their times overlap and "round trips" counts them as one.
The Python parts are CPU times of the thread that runs them (time.thread_time), which a busy machine inflates
less than wall times; "rest" is the question's main-thread CPU not in a statement or a named part (the formula's
arithmetic, sorting, building the answer's chunks).
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import json
import os
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kbgraph.query.bm25 as bm25_module
import kbgraph.query.propagation.propagate as propagation
import kbgraph.query.propagation.rankers as rankers
import kbgraph.query.propagation.seeding as seeding
from kbgraph.kb import KnowledgeBase
from kbgraph.query.propagation.adjacency_cache import shared_adjacency
from kbgraph.query.bm25 import corpus_generation
from kbgraph.query.methods.registry import get_method
from kbgraph.settings import Settings

from benchmarks.bench_neo4j import start_local_neo4j

from benchmarks.common import DEFAULT_HOME, SETS, set_path

WARMUP = 20
#: Python parts timed in their own thread (CPU): (label, module, attribute).
PARTS = [
    ("question embedding", None, "embed"),
    ("static question vector", seeding, "static_question_vectors"),
    ("BM25 search (in a seeding thread)", bm25_module.BM25Index, "search"),
    ("learned pool (Python)", propagation, "learned_pool"),
]
#: The label of a ranker's ``order`` (kbgraph.query.propagation.rankers), timed as the PARTS are.
RANKER_PART = "ranker: features and scores"


class Clock:
    """Per question: statement calls {name: [(wall ms, server ms or None, main thread?)]}, parts {label: [cpu
    ms]}; thread-safe. Installs itself around ``store.run``, the FalkorDB graph's ``query`` and the PARTS."""

    def __init__(self, store: Any, embedder: Any) -> None:
        self.statements: dict[str, list[tuple[float, float | None, bool]]] = defaultdict(list)
        self.parts: dict[str, list[float]] = defaultdict(list)
        self.statement_cpu = 0.0  # main thread CPU inside statements
        self._lock = threading.Lock()
        self._server = threading.local()
        self.main = threading.get_ident()
        inner_run = store.run

        def run(name: str, params: dict | None = None) -> list:
            t0, c0 = time.perf_counter(), time.thread_time()
            self._server.ms = None
            try:
                return inner_run(name, params)
            finally:
                main = threading.get_ident() == self.main
                with self._lock:
                    self.statements[name].append(((time.perf_counter() - t0) * 1000, self._server.ms, main))
                    if main:
                        self.statement_cpu += (time.thread_time() - c0) * 1000

        store.run = run
        graph = getattr(store, "_graph", None)  # FalkorDB: the server's own execution time of each statement
        if graph is not None:
            inner_command = graph.execute_command

            def command(*args: Any, **kwargs: Any) -> Any:
                reply = inner_command(*args, **kwargs)
                if args and args[0] == "GRAPH.QUERY" and isinstance(reply, list) and isinstance(reply[-1], list):
                    for stat in reply[-1]:  # "Query internal execution time: 0.5 milliseconds"
                        if isinstance(stat, str) and "execution time" in stat:
                            self._server.ms = float(stat.split(": ")[1].split(" ")[0])
                return reply

            graph.execute_command = command
        for label, owner, attr in PARTS:
            target = embedder if owner is None else owner
            setattr(target, attr, self._timed(label, getattr(target, attr)))
        for row in list(rankers.RANKERS.values()):  # the order of the ranker in use, whichever it is
            if row.order is not None:
                rankers.RANKERS[row.name] = dataclasses.replace(row, order=self._timed(RANKER_PART, row.order))

    def _timed(self, label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            c0, s0 = time.thread_time(), self.statement_cpu
            try:
                return fn(*args, **kwargs)
            finally:
                inside = self.statement_cpu - s0 if threading.get_ident() == self.main else 0.0
                with self._lock:  # its own Python time: without the statements it sent
                    self.parts[label].append((time.thread_time() - c0) * 1000 - inside)

        return timed

    def reset(self) -> None:
        self.statements.clear()
        self.parts.clear()
        self.statement_cpu = 0.0


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[int(q * (len(values) - 1))] if values else 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="2wiki", choices=sorted(SETS))
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--store", default="falkordb", choices=("falkordb", "neo4j"))
    ap.add_argument("--home", default=str(DEFAULT_HOME))
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting for this run (e.g. adjacency_cache=false)",
    )
    ap.add_argument("--cprofile", default="", help="also write the cProfile stats of the propagation questions")
    ap.add_argument(
        "--kb", default="", help="the knowledge base's name (default: <corpus>_<store>, benchmarks/query.py's)"
    )
    ap.add_argument("--questions-file", default="", help="a questions .jsonl (default: the corpus's)")
    args = ap.parse_args()
    qfile = Path(args.questions_file) if args.questions_file else Path(f"{set_path(args.corpus)}.questions.jsonl")
    questions = [json.loads(x)["question"] for x in qfile.read_text(encoding="utf-8").splitlines() if x.strip()]
    questions = questions[: args.questions]
    settings = Settings(
        home=Path(args.home),
        name=args.kb or f"{args.corpus}_{args.store}",
        falkor_idle_timeout=600,
        **dict(kv.split("=", 1) for kv in args.set),
    )
    local = None
    if args.store == "neo4j":
        settings, local = start_local_neo4j(
            settings, Path(args.home) / f"neo4j-{args.corpus}", bolt_port=17688, http_port=17475, timeout=180
        )
    report: dict[str, dict] = {}
    try:
        with KnowledgeBase(settings=settings) as kb:
            ctx = kb.query_context(llm=False)
            # the in-memory adjacency (kbgraph.query.propagation.adjacency) built before the timed questions, as a long-lived
            # process has it from its third question on; setting adjacency_cache=false times the statements
            shared_adjacency(ctx.store, ctx.settings, corpus_generation(ctx.store), wait=True)
            clock = Clock(ctx.store, ctx.embedder)
            profiler = cProfile.Profile(time.thread_time)
            for method in ("dense", "propagation"):
                run = get_method(method, "retrieval").run
                for q in questions[:WARMUP]:
                    run(q, ctx, k=10)
                clock.reset()
                lat, cpu = [], []
                for q in questions:
                    if args.cprofile and method == "propagation":
                        profiler.enable()
                    t0, c0 = time.perf_counter(), time.thread_time()
                    run(q, ctx, k=10)
                    lat.append((time.perf_counter() - t0) * 1000)
                    cpu.append((time.thread_time() - c0) * 1000)
                    if args.cprofile and method == "propagation":
                        profiler.disable()
                report[method] = {
                    "lat": lat,
                    "cpu": cpu,
                    "statements": dict(clock.statements),
                    "parts": dict(clock.parts),
                    "statement_cpu": clock.statement_cpu,
                }
            load = os.getloadavg()[0]
    finally:
        if local is not None:
            local.stop()
    if args.cprofile:
        profiler.dump_stats(args.cprofile)
    n = len(questions)
    print(
        f"{args.kb or args.corpus}, {args.store}, {n} questions, top-10, latency with the question embedding, "
        f"load average {load:.1f}"
    )
    for method, r in report.items():
        print(
            f"{method:12} p50 {statistics.median(r['lat']):6.1f} ms  p95 {pct(r['lat'], 0.95):6.1f} ms  "
            f"main-thread CPU p50 {statistics.median(r['cpu']):5.1f} ms"
        )
    d, p = (statistics.median(report[m]["lat"]) for m in ("dense", "propagation"))
    print(f"ratio p50 propagation / dense: {p / d:.2f}")
    for method, r in report.items():
        calls = r["statements"]
        total = sum(len(v) for v in calls.values())
        sequential = sum(1 for v in calls.values() for _, _, main in v if main)
        print(f"\n{method}: {total / n:.1f} statements, {sequential / n:.1f} round trips in sequence per question")
        print(f"  {'statement':30} {'per q.':>6} {'wall p50':>8} {'wall p95':>8} {'server p50':>10}")
        for name, rows in sorted(calls.items(), key=lambda kv: -sum(w for w, _, _ in kv[1])):
            walls = [w for w, _, _ in rows]
            servers = [s for _, s, _ in rows if s is not None]
            server = f"{statistics.median(servers):10.2f}" if servers else f"{'-':>10}"
            print(f"  {name:30} {len(rows) / n:6.2f} {statistics.median(walls):8.2f} {pct(walls, 0.95):8.2f} {server}")
        parts = r["parts"]
        named = sum(sum(v) for label, v in parts.items() if "seeding thread" not in label) / n
        print(f"  {'Python part (CPU of its thread)':38} {'calls/q':>7} {'ms/q':>6}")
        for label, values in parts.items():
            print(f"  {label:38} {len(values) / n:7.2f} {sum(values) / n:6.2f}")
        rest = statistics.mean(r["cpu"]) - r["statement_cpu"] / n - named
        print(
            f"  {'rest of the main thread':38} {'':7} {rest:6.2f}   (statements' client CPU "
            f"{r['statement_cpu'] / n:.2f})"
        )


if __name__ == "__main__":
    main()
