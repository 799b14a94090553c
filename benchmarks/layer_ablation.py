"""Which layer vectors earn their embedding time (issue 15, direction 1): passage Recall@2/@5 of 'propagation'
(layer seeds + score propagation, PIKE-RAG §5.2.3) with one vector-seeded layer's seeds removed at a time
(setting ``vector_layers``: its nodes, edges and full-text stay), against all layers on, on 2Wiki dev500 and
MuSiQue train100; and the seconds each layer's embedding costs on the whole corpus (its node count x the
per-text time measured on its own texts of a corpus sample, same process, same embedder, no cache).

    .venv/bin/python -m benchmarks.layer_ablation [--sets 2wiki,musique] [--questions N] [--home DIR]
        [--sample 400] [--check-build LAYERS]

The knowledge bases are those of benchmarks/retrieval_recall.py (``<home>/<set>_falkordb``, built with every
layer embedded on first use: run this before changing ``vector_layers`` on them). ``--check-build LAYERS``
(comma-separated, '' = Chunk only) also builds ``<home>/<set>_v<LAYERS>`` with only those vectors and counts
the questions whose top-10 chunks differ from the query-time ablation of the same layers on the full KB (a KB
built without a layer's vectors must retrieve what the full KB retrieves with that layer's seeds off).
Decision rule of the issue: a layer whose vectors add < 0.5 R@5 on both sets is not embedded by default.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from benchmarks.query import passage_ids  # benchmarks/query.py
from benchmarks.common import DEFAULT_HOME, set_path

from kbgraph.embed import get_embedder
from kbgraph.ingest.chunk import build_structure
from kbgraph.ingest.distill import distill
from kbgraph.ingest.embed_layers import layer_texts
from kbgraph.ingest.parse import parse_passages_jsonl
from kbgraph.kb import KnowledgeBase
from kbgraph.models import DocumentGraph, stable_id
from kbgraph.query.propagation.propagate import propagate
from kbgraph.query.propagation.seeding import seed_layers
from kbgraph.settings import VECTOR_LAYER_CHOICES, Settings

K_CHUNKS = 10
RULE = 0.5  # R@5 points a layer's vectors must add on at least one set


def ablations(combos: str = "") -> list[tuple[str, list[str]]]:
    """(name, vector_layers) pairs: all on, each layer off alone, Chunk only, then each of ``combos``
    ("A,B;A,B,C": sets of layers on, named by their initials, e.g. "+AQ,T")."""
    rows = [("all on", list(VECTOR_LAYER_CHOICES))]
    rows += [(f"- {label}", [x for x in VECTOR_LAYER_CHOICES if x != label]) for label in VECTOR_LAYER_CHOICES]
    rows += [("Chunk only", [])]
    for combo in filter(None, combos.split(";")):
        layers = [x.strip() for x in combo.split(",") if x.strip()]
        rows.append(("+" + ",".join("".join(c for c in x if c.isupper()) for x in layers), layers))
    return rows


def retrieve_all(kb: KnowledgeBase, questions: list[dict], vecs, layers: list[str]) -> list[list[str]]:
    """Top-``K_CHUNKS`` chunk ids per question by 'propagation' with ``vector_layers=layers``."""
    s = kb.settings.updated({"vector_layers": layers})
    out = []
    for q, v in zip(questions, vecs, strict=True):
        chunks = propagate(kb.store, s, seed_layers(kb.store, s, q["question"], v.tolist()), k=K_CHUNKS)
        out.append(chunks)
    return out


def recall(questions: list[dict], results) -> tuple[float, float]:
    """Passage R@2, R@5 (%) over gold_passage_ids, k counted in distinct passages (as kbgraph.eval)."""
    r2, r5 = [], []
    for q, chunks in zip(questions, results, strict=True):
        got, gold = passage_ids(chunks), set(q["gold_passage_ids"])
        r2.append(len(gold & set(got[:2])) / len(gold))
        r5.append(len(gold & set(got[:5])) / len(gold))
    return 100 * statistics.mean(r2), 100 * statistics.mean(r5)


def sample_texts(corpus: Path, sample: int, settings: Settings) -> list[tuple[str, list, list[str]]]:
    """``kbgraph.ingest.embed_layers.layer_texts`` of the first ``sample`` passages, chunked and distilled as
    ingestion does them (titles linked across the sample)."""
    docs = list(parse_passages_jsonl(corpus))[:sample]
    titles = {stable_id("doc", d.uri): d.title for d in docs}
    graphs = [
        DocumentGraph(document=doc, sections=secs, chunks=chunks)
        for doc, secs, chunks in (
            build_structure(
                d, chunk_tokens=settings.ingest.chunk_tokens, overlap_sentences=settings.ingest.chunk_overlap_sentences
            )
            for d in docs
        )
    ]
    q, e, t, _ = distill([c for g in graphs for c in g.chunks], titles=titles)
    graphs[0].questions, graphs[0].entities, graphs[0].triples = q, e, t  # texts only: owners do not matter
    return layer_texts(graphs)


def layer_seconds(texts, counts: dict[str, int], settings: Settings) -> dict[str, dict]:
    """Per layer: texts in the KB (node count), seconds per text measured on the layer's sample ``texts``
    (``sample_texts``) with the raw embedder of ``settings`` (no cache), and their product: the seconds the
    layer's embedding costs the whole corpus."""
    embedder = get_embedder(settings)
    embedder.embed(["warm-up"])
    out = {}
    for label, _records, batch in texts:
        t0 = time.perf_counter()
        embedder.embed(batch)
        per_text = (time.perf_counter() - t0) / max(1, len(batch))
        out[label] = {
            "sample": len(batch),
            "ms_per_text": 1000 * per_text,
            "texts": counts.get(label, 0),
            "seconds": per_text * counts.get(label, 0),
        }
    return out


def build_check(home: Path, name: str, corpus: Path, layers: list[str], questions, vecs, full: KnowledgeBase) -> str:
    """Build ``<home>/<name>_v<layers>`` with only ``layers`` embedded; compare its top-10 chunk ids per question
    with the query-time ablation of the full KB. Returns a one-line verdict."""
    tag = "-".join(layers) or "chunk"
    s = Settings(home=home, name=f"{name}_v{tag}", falkor_idle_timeout=600, llm_model=None, vector_layers=layers)
    with KnowledgeBase(settings=s) as kb:
        t0 = time.perf_counter()
        kb.ingest([corpus], progress=False)
        built = time.perf_counter() - t0
        got = retrieve_all(kb, questions, vecs, layers)
    want = retrieve_all(full, questions, vecs, layers)
    differ = sum([c.id for c in a] != [c.id for c in b] for a, b in zip(got, want, strict=True))
    return (
        f"{name}: KB built with vector_layers={layers or '[] (Chunk only)'} in {built:.0f} s: "
        f"{differ} of {len(questions)} questions' top-{K_CHUNKS} differ from the query-time ablation"
    )


def int8_check(
    home: Path,
    name: str,
    corpus: Path,
    layers: list[str],
    questions,
    full: KnowledgeBase,
    texts,
    fp32_cost: dict[str, dict],
) -> dict:
    """Build ``<home>/<name>_int8_<layers>`` with ``embedding_precision='int8'`` and only ``layers``
    embedded; its 'propagation' recall (int8 question vectors) against the fp32 KB's with the same layers
    (query-time), and the embedding seconds of those layers (sample-timed, as ``layer_seconds``) at both."""
    tag = "-".join(layers) or "chunk"
    s = Settings(
        home=home,
        name=f"{name}_int8_{tag}",
        falkor_idle_timeout=600,
        llm_model=None,
        vector_layers=layers,
        embedding_precision="int8",
    )
    fp32_vecs = full.embedder.embed([q["question"] for q in questions])
    fp32 = recall(questions, retrieve_all(full, questions, fp32_vecs, layers))
    int8_cost = layer_seconds(texts, full.stats().nodes, s)
    with KnowledgeBase(settings=s) as kb:
        t0 = time.perf_counter()
        kb.ingest([corpus], progress=False)
        built = time.perf_counter() - t0
        int8 = recall(
            questions, retrieve_all(kb, questions, kb.embedder.embed([q["question"] for q in questions]), layers)
        )
    on = ["Chunk", *layers]
    return {
        "fp32": fp32,
        "int8": int8,
        "built": built,
        "layers": layers,
        "fp32_s": sum(fp32_cost[x]["seconds"] for x in on),
        "int8_s": sum(int8_cost[x]["seconds"] for x in on),
        "per_layer": {x: fp32_cost[x]["ms_per_text"] / int8_cost[x]["ms_per_text"] for x in on},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="2wiki,musique")
    ap.add_argument("--questions", type=int, default=None, help="first N questions of each set (default: all)")
    ap.add_argument("--home", default=str(DEFAULT_HOME))
    ap.add_argument("--sample", type=int, default=400, help="passages whose texts time each layer's embedding")
    ap.add_argument("--check-build", default=None, metavar="LAYERS")
    ap.add_argument("--int8", default=None, metavar="LAYERS", help="also build an int8 KB with these vector layers")
    ap.add_argument("--skip-ablation", action="store_true", help="only the costs and the --check-build/--int8 runs")
    ap.add_argument("--combos", default="", metavar="A,B;A,B,C", help="also these vector_layers sets (';' between)")
    args = ap.parse_args()
    home = Path(args.home)
    print(f"cores {os.cpu_count()}, load average {os.getloadavg()[0]:.1f} at start", flush=True)
    table, costs, checks, int8 = {}, {}, [], {}
    for name in args.sets.split(","):
        base = set_path(name)
        questions = [json.loads(x) for x in Path(f"{base}.questions.jsonl").read_text().splitlines()]
        questions = questions[: args.questions] if args.questions else questions
        corpus = Path(f"{base}.corpus.jsonl")
        settings = Settings(
            home=home,
            name=f"{name}_falkordb",
            falkor_idle_timeout=600,
            llm_model=None,
            vector_layers=list(VECTOR_LAYER_CHOICES),
        )
        with KnowledgeBase(settings=settings) as kb:
            kb.ingest([corpus], progress=False)  # built on first use, unchanged afterwards
            vecs = kb.embedder.embed([q["question"] for q in questions])
            for label, layers in [] if args.skip_ablation else ablations(args.combos):
                t0 = time.perf_counter()
                table[(name, label)] = recall(questions, retrieve_all(kb, questions, vecs, layers))
                r2, r5 = table[(name, label)]
                print(f"  {name} {label:18} R@2 {r2:5.1f} R@5 {r5:5.1f} ({time.perf_counter() - t0:.0f} s)", flush=True)
            texts = sample_texts(corpus, args.sample, settings)
            costs[name] = layer_seconds(texts, kb.stats().nodes, settings)
            if args.check_build is not None:
                layers = [x.strip() for x in args.check_build.split(",") if x.strip()]
                checks.append(build_check(home, name, corpus, layers, questions, vecs, kb))
                print(f"  {checks[-1]}", flush=True)
            if args.int8 is not None:
                layers = [x.strip() for x in args.int8.split(",") if x.strip()]
                int8[name] = int8_check(home, name, corpus, layers, questions, kb, texts, costs[name])
                print(f"  {name} int8: {int8[name]}", flush=True)
    if not args.skip_ablation:
        report(table, costs, checks, args.sets.split(","), args.combos)
    else:
        print(*checks, sep="\n")
    if int8:
        layers = next(iter(int8.values()))["layers"]
        print("\nint8 (dynamic quantisation) vs fp32, 'propagation', vector layers", layers)
        print(
            f"{'set':9} {'fp32 R@2':>9} {'fp32 R@5':>9} {'int8 R@2':>9} {'int8 R@5':>9} {'embed s fp32':>13} "
            f"{'embed s int8':>13} {'speed-up':>9}"
        )
        for name, r in int8.items():
            print(
                f"{name:9} {r['fp32'][0]:9.1f} {r['fp32'][1]:9.1f} {r['int8'][0]:9.1f} {r['int8'][1]:9.1f} "
                f"{r['fp32_s']:13.1f} {r['int8_s']:13.1f} {r['fp32_s'] / r['int8_s']:8.2f}x"
            )
            print(
                "          per-layer speed-up: "
                + ", ".join(f"{k} {v:.2f}x" for k, v in r["per_layer"].items())
                + f"; int8 KB built in {r['built']:.0f} s"
            )
    print(f"load average {os.getloadavg()[0]:.1f} at the end", flush=True)


def report(table, costs, checks, sets: list[str], combos: str = "") -> None:
    print(
        f"\nPassage recall (%) of 'propagation', top-{K_CHUNKS} chunks; delta = all on minus the row (what the "
        "layer's vectors add)"
    )
    print(f"{'vector seeds':18} " + " ".join(f"{s + ' R@2':>11} {s + ' R@5':>11} {'ΔR@5':>6}" for s in sets))
    for label, _ in ablations(combos):
        cells = []
        for s in sets:
            r2, r5 = table[(s, label)]
            cells.append(f"{r2:11.1f} {r5:11.1f} {table[(s, 'all on')][1] - r5:6.1f}")
        print(f"{label:18} " + " ".join(cells))
    print("\nEmbedding cost per layer (whole corpus = node count x seconds per text on a sample, no cache)")
    print(f"{'layer':15} " + " ".join(f"{s + ' texts':>13} {'ms/text':>8} {'seconds':>8}" for s in sets))
    for label in ("Chunk", *VECTOR_LAYER_CHOICES):
        print(
            f"{label:15} "
            + " ".join(
                f"{costs[s][label]['texts']:13,} {costs[s][label]['ms_per_text']:8.2f} {costs[s][label]['seconds']:8.1f}"
                for s in sets
            )
        )
    print("\nDecision (a layer whose vectors add < 0.5 R@5 on both sets is not embedded by default):")
    for label in VECTOR_LAYER_CHOICES:
        gains = {s: table[(s, "all on")][1] - table[(s, f"- {label}")][1] for s in sets}
        keep = any(g >= RULE for g in gains.values())
        saved = sum(costs[s][label]["seconds"] for s in sets)
        print(
            f"  {label:15} adds "
            + ", ".join(f"{s} {g:+.1f}" for s, g in gains.items())
            + f" R@5 -> {'keep' if keep else 'off'} ({saved:.0f} s of embedding over these corpora)"
        )
    for line in checks:
        print(line)


if __name__ == "__main__":
    main()
