"""Question answering with a real LLM: PIKE-RAG's Algorithm 1 (``pike``) against the paper's baselines
(``naive``, ``naive_hr``, ``self_ask``, ``cot``) and the companion systems MIGRES (``migres``, paper 002) and
HiRAG (``hirag``, paper 004) on the same knowledge base, same embedder, same questions
(PIKE-RAG §6.1's protocol; the paper ran 500 2WikiMultihopQA dev questions).

    .venv/bin/python benchmarks/llm_qa.py --base-url http://127.0.0.1:8088/v1 --model SmolLM2-135M-Instruct.Q4_1 \\
        [--dataset examples/multihop/2wikimultihopqa/dev500] [--limit 50] [--methods pike,naive,...] [--max-tokens 256] \\
        [--home DIR] [--api-key KEY] [--judge-model M] [--llm-ingest]

Prints, per method: EM, F1 and LLM-judged accuracy (%), tokens per question (prompt / completion, from the
server's ``usage``), LLM calls and seconds per question, and pike's ratio to naive on each; then, per prompt,
the share of JSON answers that needed a repair request. The knowledge base is built once under --home
(default ~/.kbgraph-bench) offline (spaCy distillation, no LLM: the methods differ in how they answer, not in
the graph), or with the LLM's atomic questions with --llm-ingest. Run folders and answers are kept in
``<home>/llm-qa/<dataset>`` so a re-run resumes; the LLM response cache makes repeated requests free (use a
fresh --home to measure again). Tokens and seconds come from real requests only (cached answers excluded).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import time
from datetime import date
from pathlib import Path

from kbgraph.kb import KnowledgeBase
from kbgraph.llm.client import OpenAIClient
from kbgraph.eval import evaluate, load_dataset
from kbgraph.query.methods import ANSWER_METHODS
from kbgraph.settings import Settings

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATASET = REPO / "examples" / "multihop" / "2wikimultihopqa" / "dev500"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", required=True, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8088/v1")
    ap.add_argument("--model", required=True)
    ap.add_argument("--api-key", default=os.environ.get("KBGRAPH_LLM_API_KEY", "none"))
    ap.add_argument("--dataset", default=str(DEFAULT_DATASET))
    ap.add_argument("--limit", type=int, default=50)
    ap.add_argument("--methods", default=",".join(("pike", "naive", "naive_hr", "self_ask", "cot", "migres", "hirag")))
    ap.add_argument("--max-tokens", type=int, default=None, help="completion tokens per request (KBGRAPH_LLM_MAX_TOKENS)")
    ap.add_argument("--judge-model", default=None)
    ap.add_argument("--home", default=str(Path.home() / ".kbgraph-bench"))
    ap.add_argument("--llm-ingest", action="store_true", help="ingest with the LLM (atomic questions, §5.3.1)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per LLM request")
    args = ap.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    unknown = sorted(set(methods) - set(ANSWER_METHODS))
    if unknown:
        ap.error(f"not LLM methods: {', '.join(unknown)} (choose from {', '.join(ANSWER_METHODS)})")

    ds = load_dataset(args.dataset)
    home = Path(args.home).expanduser()
    llm_settings = dict(llm_base_url=args.base_url, llm_model=args.model, llm_api_key=args.api_key,
                        llm_timeout=args.timeout, llm_cache_dir=home / "llm-qa" / "llm-cache")  # fmt: skip
    if args.max_tokens:
        llm_settings["llm_max_tokens"] = args.max_tokens
    kb_name = f"{ds.name}{'_llm' if args.llm_ingest else ''}_falkordb"
    settings = Settings(home=home, name=kb_name, falkor_idle_timeout=0, **(llm_settings if args.llm_ingest else {}))
    llm = OpenAIClient(Settings(home=home, **llm_settings))
    started = time.perf_counter()
    with KnowledgeBase(settings=settings) as kb:
        report = kb.ingest([ds.corpus_path], progress=False)
        print(f"knowledge base {kb_name}: {report.added} added, {report.unchanged} unchanged "
              f"({time.perf_counter() - started:.0f} s)", flush=True)  # fmt: skip
        summary = evaluate(
            kb, ds, methods=methods, limit=args.limit, judge=True, judge_model=args.judge_model, llm=llm,
            ingest=False, out=home / "llm-qa" / ds.name, plots=False, log=lambda m: print(m, flush=True),
        )  # fmt: skip
    _print(summary, methods, args, llm)


def _print(summary, methods: list[str], args, llm) -> None:
    commit = _git("rev-parse", "--short", "HEAD")
    print(f"\n{date.today()} commit {commit} on {os.cpu_count()} cores ({platform.machine()}); model {args.model} at "
          f"{args.base_url}; {summary.questions} questions of {summary.dataset.get('name')}")  # fmt: skip
    head = f"{'method':9} {'EM':>6} {'F1':>6} {'Acc':>6} {'prompt tok/q':>13} {'compl tok/q':>12} {'calls/q':>8} {'s/q':>7}"
    print(head)
    rows = {}
    for name in methods:
        m = summary.methods.get(name)
        if m is None:
            print(f"{name:9} skipped: {summary.skipped.get(name, 'no result')}")
            continue
        pct = {k: (100 * v if v is not None else float("nan")) for k, v in m.metrics.items()}
        tok = m.tokens_per_question
        rows[name] = {
            "EM": pct.get("em"), "F1": pct.get("f1"), "Acc": pct.get("accuracy"),
            "prompt": tok.get("prompt", 0.0), "completion": tok.get("completion", 0.0),
            "calls": tok.get("calls", 0.0), "s": m.latency_ms.get("mean", 0.0) / 1000,
        }  # fmt: skip
        r = rows[name]
        print(f"{name:9} {r['EM']:6.1f} {r['F1']:6.1f} {r['Acc']:6.1f} {r['prompt']:13.0f} {r['completion']:12.0f} "
              f"{r['calls']:8.1f} {r['s']:7.1f}")  # fmt: skip
    if "pike" in rows and "naive" in rows:
        p, n = rows["pike"], rows["naive"]
        ratios = {k: (p[k] / n[k] if n[k] else float("nan")) for k in ("EM", "F1", "Acc", "prompt", "completion", "calls", "s")}
        print("pike/naive " + " ".join(f"{k} {v:.2f}x" for k, v in ratios.items()))
        print(f"pike - naive F1: {p['F1'] - n['F1']:+.1f} points (paper goal with a capable model: >= +5 at <= 8.8k tokens/q)")
    print("\nJSON answers per prompt (answers / repaired / failed, share needing a repair):")
    for prompt, s in llm.json_report().items():
        print(f"  {prompt:18} {s['answers']:5.0f} / {s['repaired']:4.0f} / {s['failed']:4.0f}   {100 * s['repair_share']:5.1f} %")
    print(f"\ncommand: .venv/bin/python benchmarks/llm_qa.py --base-url {args.base_url} --model {args.model} "
          f"--dataset {args.dataset} --limit {args.limit} --methods {','.join(methods)}"
          + (f" --max-tokens {args.max_tokens}" if args.max_tokens else ""))  # fmt: skip


def _git(*argv: str) -> str:
    try:
        return subprocess.run(["git", *argv], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    main()
