"""The ranked chunk lists of the retrieval methods for a question set, written to a JSON file, and two such files
compared: the guard of a change to retrieval's speed that must not change its results (issue 38).

    .venv/bin/python -m benchmarks.ranked_lists dump OUT.json [--corpus 2wiki|docs] [--questions 200]
        [--store falkordb|neo4j] [--home DIR] [--k 10] [--set NAME=VALUE ...]
    .venv/bin/python -m benchmarks.ranked_lists compare BEFORE.json AFTER.json [--tolerance 1e-6]

``dump`` runs, for every question, method ``propagation`` (the learned ranker), ``propagation`` with
``ranker=weights``, and ``dense``, each with ``explain`` (every score term) and without, on the knowledge base that
benchmarks/query.py (``<corpus>_<store>``) or benchmarks/serve.py (``serve-docs``) built under ``--home``.
``compare`` exits 1 when a list differs: another chunk id or order, a score or a term's score further apart than
``--tolerance``, or another set of terms; it prints the first differences.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kbgraph.kb import KnowledgeBase
from kbgraph.query.propagation.adjacency_cache import shared_adjacency
from kbgraph.query.ask import retrieve
from kbgraph.query.bm25 import corpus_generation
from kbgraph.settings import Settings

from benchmarks.bench_neo4j import start_local_neo4j

from benchmarks.common import DEFAULT_HOME, set_path

QUESTIONS = {"2wiki": set_path("2wiki").with_name("dev500.questions.jsonl")}
DOCS_QUESTIONS = [
    "How many handgun checks were there in Kentucky in November 2015?",
    "What are the duties of a standing trustee?",
    "How many employees were affected by layoffs in Los Angeles?",
    "What does the FAA require of aviation maintenance technicians?",
    "What do ducks eat?",
    "How much did the Senate spend on official mail?",
    "What did the Federal Register notice amend?",
    "Who argued the case before the Supreme Court?",
]


def dump(args: argparse.Namespace) -> None:
    if args.corpus == "docs":
        questions, name = DOCS_QUESTIONS, "serve-docs"
    else:
        lines = QUESTIONS[args.corpus].read_text().splitlines()[: args.questions]
        questions, name = [json.loads(x)["question"] for x in lines], f"{args.corpus}_{args.store}"
    settings = Settings(
        home=Path(args.home), name=name, falkor_idle_timeout=600, **dict(kv.split("=", 1) for kv in args.set)
    )
    local = None
    if args.store == "neo4j":
        folder = Path(args.home) / (f"neo4j-{args.corpus}" if args.corpus != "docs" else "neo4j-serve-docs")
        settings, local = start_local_neo4j(settings, folder, bolt_port=17688, http_port=17475, timeout=180)
    out: dict[str, list] = {}
    try:
        with KnowledgeBase(settings=settings) as kb:
            # the graph in memory (kbgraph.query.propagation.adjacency) as a long-lived process has it from its third question
            # on, built before the first (nothing with --set adjacency_cache=false: the statements answer)
            shared_adjacency(kb.store, kb.settings, corpus_generation(kb.store), wait=True)
            variants = {
                "propagation": ("propagation", kb.query_context(llm=False)),
                "weights": (
                    "propagation",
                    kb.query_context(llm=False).with_settings(kb.settings.updated({"ranker": "weights"})),
                ),
                "dense": ("dense", kb.query_context(llm=False)),
            }
            for label, (method, ctx) in variants.items():
                for explain in (False, True):
                    rows = []
                    for q in questions:
                        chunks = retrieve(q, ctx, k=args.k, method=method, explain=explain)
                        rows.append(
                            [
                                {
                                    "id": c.id,
                                    "score": c.score,
                                    "title": c.document_title,
                                    "details": [
                                        c.text,
                                        c.summary,
                                        c.kind,
                                        c.page,
                                        c.section_path,
                                        c.document_id,
                                        c.document_uri,
                                    ],
                                    "terms": sorted([t.term, t.node_id, t.score] for t in c.breakdown),
                                    "ranking": [[r.feature, r.value, r.contribution] for r in c.ranking],
                                }
                                for c in chunks
                            ]
                        )
                    out[f"{label}{' explain' if explain else ''}"] = rows
    finally:
        if local is not None:
            local.stop()
    Path(args.out).write_text(json.dumps({"questions": questions, "lists": out}))
    print(f"{len(questions)} questions x {len(out)} variants -> {args.out}")


def _close(a: float, b: float, tol: float) -> bool:
    return abs(a - b) <= tol


def compare(args: argparse.Namespace) -> None:
    before, after = json.loads(Path(args.before).read_text()), json.loads(Path(args.after).read_text())
    tol, bad = args.tolerance, []
    if before["questions"] != after["questions"]:
        sys.exit("the two files are of different questions")
    checked = 0
    for variant, lists in before["lists"].items():
        for qi, (x, y) in enumerate(zip(lists, after["lists"][variant], strict=True)):
            checked += 1
            where = f"{variant} q{qi}"
            if [c["id"] for c in x] != [c["id"] for c in y]:
                bad.append(f"{where}: ids {[c['id'][:12] for c in x]} != {[c['id'][:12] for c in y]}")
                continue
            for a, b in zip(x, y, strict=True):
                if not _close(a["score"], b["score"], tol) or a["title"] != b["title"] or a["details"] != b["details"]:
                    bad.append(f"{where} {a['id'][:16]}: score {a['score']} != {b['score']}, or title or details")
                if [t[:2] for t in a["terms"]] != [t[:2] for t in b["terms"]] or not all(
                    _close(s[2], t[2], tol) for s, t in zip(a["terms"], b["terms"], strict=True)
                ):
                    bad.append(f"{where} {a['id'][:16]}: terms {a['terms']} != {b['terms']}")
                if [r[0] for r in a["ranking"]] != [r[0] for r in b["ranking"]] or not all(
                    _close(r[1], s[1], tol) and _close(r[2], s[2], tol)
                    for r, s in zip(a["ranking"], b["ranking"], strict=True)
                ):
                    bad.append(f"{where} {a['id'][:16]}: ranker features differ")
    print(f"{checked} ranked lists compared, {len(bad)} differences (tolerance {tol:g})")
    for line in bad[:20]:
        print("  " + line)
    sys.exit(1 if bad else 0)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out")
    d.add_argument("--corpus", default="2wiki", choices=("2wiki", "docs"))
    d.add_argument("--questions", type=int, default=200)
    d.add_argument("--store", default="falkordb", choices=("falkordb", "neo4j"))
    d.add_argument("--home", default=str(DEFAULT_HOME))
    d.add_argument("--k", type=int, default=10)
    d.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting for this dump (e.g. adjacency_cache=false)",
    )
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    c.add_argument("--tolerance", type=float, default=1e-6)
    args = ap.parse_args()
    dump(args) if args.command == "dump" else compare(args)


if __name__ == "__main__":
    main()
