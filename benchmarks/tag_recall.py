"""Passage Recall@k with and without auto-tagging (PIKE-RAG §5.2.2), same knowledge base, through kbgraph.eval.

    export KBGRAPH_LLM_BASE_URL=... KBGRAPH_LLM_MODEL=...      # e.g. from `kbgraph llm start`
    .venv/bin/python -m benchmarks.tag_recall [--set musique] [--questions 10] [--learn 10] [--distractors 30]
                                              [--home DIR] [--seed 0] [--classes person,place]

A slice of the data set: ``--learn`` questions teach the tag pair collection, the next ``--questions`` are
evaluated; the slice's corpus is the gold passages of both plus ``--distractors`` other passages (drawn with
``--seed``). Steps, all on one knowledge base (``<home>/tagrecall_<set>``, rebuilt each run):

1. ingest the slice's corpus offline (spaCy distillation; no LLM, so both runs share every node);
2. tag every chunk with the LLM (tag classes, corpus tag collection: ``kbgraph.ingest.autotag.tag_chunks``);
3. learn the tag pair collection from the learning questions and their gold passages
   (``kbgraph.eval.tag_pairs.learn_tag_pairs``, i.e. ``kbgraph tags learn``);
4. ``kbgraph.eval.evaluate`` the method 'propagation' on the evaluated questions twice, ``auto_tagging`` off
   and on (the LLM is given to both; with tagging off it is never asked), run folders ``<home>/eval/off|on``.

Prints Recall@2/@5/@10 of both runs, the tagging and learning figures and the LLM calls of the tagged run.
With a small local model the figures are a smoke test of the machinery, not of auto-tagging.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import time
from pathlib import Path

from kbgraph.eval import evaluate, load_dataset
from kbgraph.ingest.autotag import pending_chunks, tag_chunks, write_tag_classes
from kbgraph.tagging import TagClass
from kbgraph.kb import KnowledgeBase
from kbgraph.eval.tag_pairs import QASample, learn_tag_pairs
from kbgraph.settings import Settings

from benchmarks.common import DEFAULT_HOME, SETS, set_path


def write_slice(name: str, folder: Path, learn: int, questions: int, distractors: int, seed: int):
    """The slice's questions file (evaluated questions) + corpus file; returns (prefix, learning questions)."""
    ds = load_dataset(set_path(name))
    chosen = ds.questions[: learn + questions]
    teach, test = chosen[:learn], chosen[learn:]
    passages = [json.loads(line) for line in ds.corpus_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    gold = {pid for q in chosen for pid in q.gold_passage_ids}
    others = [p for p in passages if p["id"] not in gold]
    keep = gold | {p["id"] for p in random.Random(seed).sample(others, min(distractors, len(others)))}
    folder.mkdir(parents=True, exist_ok=True)
    prefix = folder / f"{name}_slice"
    (folder / f"{name}_slice.corpus.jsonl").write_text(
        "".join(json.dumps(p) + "\n" for p in passages if p["id"] in keep), encoding="utf-8"
    )
    (folder / f"{name}_slice.questions.jsonl").write_text(
        "".join(q.model_dump_json() + "\n" for q in test), encoding="utf-8"
    )
    return prefix, teach, len(keep)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", default="musique", choices=sorted(SETS))
    ap.add_argument("--questions", type=int, default=10, help="questions evaluated")
    ap.add_argument("--learn", type=int, default=10, help="questions the tag pairs are learned from")
    ap.add_argument("--distractors", type=int, default=30, help="non-gold passages in the slice's corpus")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--classes",
        default="",
        help="comma-separated tag classes to use instead of the LLM's proposal (a small model may propose none)",
    )
    ap.add_argument("--home", default=str(DEFAULT_HOME))
    args = ap.parse_args()
    home = Path(args.home)
    prefix, teach, n_passages = write_slice(
        args.set, home / "tagrecall", args.learn, args.questions, args.distractors, args.seed
    )
    base = Settings(home=home, name=f"tagrecall_{args.set}", falkor_idle_timeout=600, auto_tagging=False)
    if not base.llm.llm_model:
        raise SystemExit("set KBGRAPH_LLM_BASE_URL and KBGRAPH_LLM_MODEL (e.g. from `kbgraph llm start`)")
    shutil.rmtree(home / "eval" / "tagrecall", ignore_errors=True)
    with KnowledgeBase(settings=base) as kb:
        kb.reset()
        llm = kb.llm
        kb.llm = None  # offline ingestion: the LLM only tags
        t0 = time.perf_counter()
        kb.ingest([f"{prefix}.corpus.jsonl"], progress=False)
        print(f"ingested {n_passages} passages offline in {time.perf_counter() - t0:.0f} s", flush=True)
        if args.classes:
            write_tag_classes(kb.store, [TagClass(name=c.strip()) for c in args.classes.split(",") if c.strip()])
        tagging = tag_chunks(kb.store, base, llm, kb.embedder, pending_chunks(kb.store))
        print(
            f"tagged {tagging.tagged}/{tagging.chunks} chunks: {tagging.tags} TAGGED edges, {tagging.new_tags} "
            f"tags, classes {tagging.classes}, {tagging.failed} failed, {tagging.seconds:.0f} s",
            flush=True,
        )
        on = base.updated({"auto_tagging": True})
        kb.llm = llm
        report = learn_tag_pairs(
            kb.query_context().with_settings(on),
            [QASample(question=q.question, gold_passage_ids=q.gold_passage_ids) for q in teach],
        )
        print(
            f"learned {len(report.pairs)} tag pairs from {report.learned}/{report.samples} questions "
            f"(skipped {report.skipped}); LLM {report.usage.calls} calls, {report.usage.seconds:.0f} s",
            flush=True,
        )
    results = {}
    for label, settings in (("off", base), ("on", on)):
        with KnowledgeBase(settings=settings) as kb:
            t0 = time.perf_counter()
            results[label] = evaluate(
                kb,
                prefix,
                methods=["propagation"],
                ingest=False,
                judge=False,
                fresh=True,
                out=home / "eval" / "tagrecall" / label,
                progress=False,
                plots=False,
            )
            print(f"auto_tagging {label}: {time.perf_counter() - t0:.0f} s", flush=True)
    print(f"\n{args.set} slice: {args.questions} questions, {n_passages} passages; method 'propagation', top-10 chunks")
    print(f"{'auto_tagging':13} {'R@2':>6} {'R@5':>6} {'R@10':>6}")
    for label, summary in results.items():
        m = summary.methods["propagation"].metrics
        print(f"{label:13} " + " ".join(f"{100 * (m.get(f'R@{k}') or 0):6.1f}" for k in (2, 5, 10)))


if __name__ == "__main__":
    main()
