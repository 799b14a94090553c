"""Question answering with a real LLM: PIKE-RAG's Algorithm 1 (``pike``) against the paper's baselines
(``naive``, ``naive_hr``, ``self_ask``, ``cot``) and the companion systems MIGRES (``migres``, paper 002) and
HiRAG (``hirag``, paper 004) on the same knowledge base, same embedder, same questions
(PIKE-RAG §6.1's protocol; the paper ran 500 2WikiMultihopQA dev questions).

    .venv/bin/python -m benchmarks.llm_qa --base-url http://127.0.0.1:8088/v1 --model SmolLM2-135M-Instruct.Q4_1 \\
        [--dataset examples/multihop/2wikimultihopqa/dev500] [--limit 50] [--methods pike,naive,...] [--max-tokens 256] \\
        [--home DIR] [--api-key KEY] [--judge-model M] [--llm-ingest] [--set KEY=VALUE ...] [--out DIR]
        [--table-only]

Prints, per method: EM, F1 and LLM-judged accuracy (%), tokens per question (prompt / completion, from the
server's ``usage``), LLM calls and seconds per question, rounds per question of the iterative methods (pike,
migres, hirag: mean rounds and the share of questions with more than one), and pike's ratio to naive on each;
then, per answer schema, the JSON answers valid at once, repaired, failed and cut by the token limit (the
server's ``finish_reason`` "length"), and the share valid. ``--set KEY=VALUE`` changes a setting of the
methods (e.g. ``--set migres_retriever=graph --methods migres``; the run folder then needs its own ``--out``).
Records are appended to ``<out>/results.jsonl`` as each question finishes and the per-schema counts to
``<out>/json_report.json`` every 15 s, so a run cut short still gives its table: ``--table-only`` prints it
from the folder. The knowledge base is built once under --home
(default ~/.kbgraph-bench) offline (spaCy distillation, no LLM: the methods differ in how they answer, not in
the graph), or with the LLM's atomic questions with --llm-ingest. Run folders and answers are kept in
``<home>/llm-qa/<dataset>`` (or ``--out``) so a re-run resumes; the LLM response cache makes repeated requests free (use a
fresh --home to measure again). Tokens and seconds come from real requests only (cached answers excluded).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import threading
import time
from datetime import date
from pathlib import Path
from typing import Any

from kbgraph.eval import DEFAULT_KS, evaluate, load_dataset, summarize
from kbgraph.eval.runfolder import RESULTS, QuestionRecord, Results
from kbgraph.kb import KnowledgeBase
from kbgraph.llm.client import OpenAIClient
from kbgraph.query.methods.registry import ANSWER_METHODS
from kbgraph.settings import Settings

from benchmarks.common import DEFAULT_HOME, REPO, set_path

DEFAULT_DATASET = set_path("2wiki")
JSON_REPORT = "json_report.json"
#: The trace entry type of each iterative method's rounds.
ROUND_TYPES = {"pike": "pike", "migres": "migres", "hirag": "hirag"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", required=True, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8088/v1")
    ap.add_argument("--model", required=True)
    ap.add_argument("--api-key", default=os.environ.get("KBGRAPH_LLM_API_KEY", "none"))
    ap.add_argument("--dataset", default=str(DEFAULT_DATASET))
    ap.add_argument("--limit", type=int, default=50)
    ap.add_argument("--methods", default=",".join(("pike", "naive", "naive_hr", "self_ask", "cot", "migres", "hirag")))
    ap.add_argument(
        "--max-tokens", type=int, default=None, help="completion tokens per request (KBGRAPH_LLM_MAX_TOKENS)"
    )
    ap.add_argument("--judge-model", default=None)
    ap.add_argument("--home", default=str(DEFAULT_HOME))
    ap.add_argument("--llm-ingest", action="store_true", help="ingest with the LLM (atomic questions, §5.3.1)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per LLM request")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a setting of the methods")
    ap.add_argument("--out", default=None, help="run folder (default <home>/llm-qa/<dataset>)")
    ap.add_argument(
        "--cache-dir",
        default=None,
        help="LLM response cache (default <home>/llm-qa/llm-cache); a fresh one measures every request",
    )
    ap.add_argument("--table-only", action="store_true", help="print the table of the run folder's records")
    args = ap.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    unknown = sorted(set(methods) - set(ANSWER_METHODS))
    if unknown:
        ap.error(f"not LLM methods: {', '.join(unknown)} (choose from {', '.join(ANSWER_METHODS)})")
    overrides = dict(_setting(a, ap) for a in args.set)

    ds = load_dataset(args.dataset)
    home = Path(args.home).expanduser()
    out = Path(args.out).expanduser() if args.out else home / "llm-qa" / ds.name
    if args.table_only:
        _print(_records(out, methods, args.limit), methods, args, _load_report(out), overrides)
        return
    llm_settings = dict(
        llm_base_url=args.base_url,
        llm_model=args.model,
        llm_api_key=args.api_key,
        llm_timeout=args.timeout,
        llm_cache_dir=Path(args.cache_dir).expanduser() if args.cache_dir else home / "llm-qa" / "llm-cache",
    )
    if args.max_tokens:
        llm_settings["llm_max_tokens"] = args.max_tokens
    kb_name = f"{ds.name}{'_llm' if args.llm_ingest else ''}_falkordb"
    settings = Settings(
        home=home, name=kb_name, falkor_idle_timeout=0, **(llm_settings if args.llm_ingest else {}), **overrides
    )
    llm = OpenAIClient(Settings(home=home, **llm_settings))
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    earlier = _load_report(out)  # counts of an earlier, interrupted process on this folder
    saver = _ReportSaver(out, llm, earlier)
    with KnowledgeBase(settings=settings) as kb, saver:
        report = kb.ingest([ds.corpus_path], progress=False)
        print(
            f"knowledge base {kb_name}: {report.added} added, {report.unchanged} unchanged "
            f"({time.perf_counter() - started:.0f} s)",
            flush=True,
        )
        evaluate(
            kb,
            ds,
            methods=methods,
            limit=args.limit,
            judge=True,
            judge_model=args.judge_model,
            llm=llm,
            ingest=False,
            out=out,
            plots=False,
            log=lambda m: print(m, flush=True),
        )
    _print(_records(out, methods, args.limit), methods, args, saver.merged(), overrides)


def _setting(arg: str, ap: argparse.ArgumentParser) -> tuple[str, str]:
    key, sep, value = arg.partition("=")
    if not sep or key not in Settings.model_fields:
        ap.error(f"--set {arg}: expected KEY=VALUE with KEY a setting (e.g. migres_retriever=graph)")
    return key, value


class _ReportSaver:
    """Writes ``llm.json_report()`` (plus the counts of an earlier process) to ``<out>/json_report.json`` every
    15 s and on exit, so a run cut short keeps its per-schema counts."""

    def __init__(self, out: Path, llm: OpenAIClient, earlier: dict[str, dict[str, float]]):
        self.path, self.llm, self.earlier = out / JSON_REPORT, llm, earlier
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def merged(self) -> dict[str, dict[str, float]]:
        now = self.llm.json_report()
        names = sorted(set(now) | set(self.earlier))
        keys = ("answers", "repaired", "failed", "cut", "salvaged")
        return {n: {k: now.get(n, {}).get(k, 0) + self.earlier.get(n, {}).get(k, 0) for k in keys} for n in names}

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.merged(), indent=1))
        tmp.replace(self.path)

    def _loop(self) -> None:
        while not self._stop.wait(15.0):
            self.save()

    def __enter__(self) -> _ReportSaver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.save()


def _load_report(out: Path) -> dict[str, dict[str, float]]:
    try:
        return json.loads((out / JSON_REPORT).read_text())
    except (OSError, ValueError):
        return {}


def _records(out: Path, methods: list[str], limit: int) -> list[QuestionRecord]:
    """The folder's records of ``methods`` on the questions every method finished (the first ``limit``)."""
    recs = [r for r in Results(out / RESULTS).records.values() if r.method in methods]
    order = list(dict.fromkeys(r.question_id for r in recs))[:limit]
    done = {m: {r.question_id for r in recs if r.method == m and r.error is None} for m in methods}
    common = [q for q in order if all(q in done[m] for m in methods if done[m])]
    keep = set(common)
    return [r for r in recs if r.question_id in keep]


def _rounds(records: list[QuestionRecord], method: str) -> str:
    """Mean rounds per question and the share of questions with more than one (pike: the rounds that added a
    chunk too)."""
    kind = ROUND_TYPES.get(method)
    recs = [r for r in records if r.method == method and r.error is None]
    if kind is None or not recs:
        return ""
    rounds = [sum(1 for t in r.trace if t.get("type") == kind) for r in recs]
    text = f"{sum(rounds) / len(rounds):.2f} rounds/q, {100 * sum(n > 1 for n in rounds) / len(rounds):.0f} % > 1"
    if kind == "pike":
        added = [sum(1 for t in r.trace if t.get("type") == kind and t.get("chunk_id")) for r in recs]
        text += (
            f", {sum(added) / len(added):.2f} chunks added/q, {100 * sum(a > 0 for a in added) / len(added):.0f} % >= 1"
        )
    return text


def _print(
    records: list[QuestionRecord],
    methods: list[str],
    args: Any,
    report: dict[str, dict[str, float]],
    overrides: dict[str, str],
) -> None:
    commit = _git("rev-parse", "--short", "HEAD")
    questions = len({r.question_id for r in records})
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"\n{date.today()} commit {commit} on {os.cpu_count()} cores ({platform.machine()}), load {load}; model "
        f"{args.model} at {args.base_url}; {questions} questions every method finished"
        + (f"; settings {overrides}" if overrides else "")
    )
    summary = summarize(records, methods=methods, ks=DEFAULT_KS)
    head = f"{'method':9} {'EM':>6} {'F1':>6} {'Acc':>6} {'judged':>6} {'prompt tok/q':>13} {'compl tok/q':>12} {'calls/q':>8} {'s/q':>7}"
    print(head)
    rows = {}
    for name in methods:
        m = summary.get(name)
        if m is None or not m.questions:
            print(f"{name:9} no finished question")
            continue
        pct = {k: (100 * v if v is not None else float("nan")) for k, v in m.metrics.items()}
        tok = m.tokens_per_question
        rows[name] = {
            "EM": pct.get("em"),
            "F1": pct.get("f1"),
            "Acc": pct.get("accuracy"),
            "prompt": tok.get("prompt", 0.0),
            "completion": tok.get("completion", 0.0),
            "calls": tok.get("calls", 0.0),
            "s": m.latency_ms.get("mean", 0.0) / 1000,
        }
        r = rows[name]
        print(
            f"{name:9} {r['EM']:6.1f} {r['F1']:6.1f} {r['Acc']:6.1f} {m.judged:6d} {r['prompt']:13.0f} {r['completion']:12.0f} "
            f"{r['calls']:8.1f} {r['s']:7.1f}  {_rounds(records, name)}"
        )
    if "pike" in rows and "naive" in rows:
        p, n = rows["pike"], rows["naive"]
        ratios = {
            k: (p[k] / n[k] if n[k] else float("nan"))
            for k in ("EM", "F1", "Acc", "prompt", "completion", "calls", "s")
        }
        print("pike/naive " + " ".join(f"{k} {v:.2f}x" for k, v in ratios.items()))
        print(
            f"pike - naive F1: {p['F1'] - n['F1']:+.1f} points (paper goal with a capable model: >= +5 at <= 8.8k tokens/q)"
        )
    print(
        "\nJSON answers per schema (valid at once / repaired / failed / requests cut by the token limit (of them "
        "answered by their whole items); valid share):"
    )
    for name, s in sorted(report.items()):
        answers, repaired, failed, cut, salvaged = (
            int(s.get(k, 0)) for k in ("answers", "repaired", "failed", "cut", "salvaged")
        )
        total = answers + failed
        share = 100 * answers / total if total else float("nan")
        print(
            f"  {name:18} {answers - repaired:5d} / {repaired:4d} / {failed:4d} / {cut:4d} ({salvaged:3d})   "
            f"{share:5.1f} % valid"
        )
    print(
        f"\ncommand: .venv/bin/python -m benchmarks.llm_qa --base-url {args.base_url} --model {args.model} "
        f"--dataset {args.dataset} --limit {args.limit} --methods {','.join(methods)}"
        + (f" --max-tokens {args.max_tokens}" if args.max_tokens else "")
        + "".join(f" --set {k}={v}" for k, v in overrides.items())
        + (f" --out {args.out}" if args.out else "")
        + (f" --cache-dir {args.cache_dir}" if args.cache_dir else "")
    )


def _git(*argv: str) -> str:
    try:
        return subprocess.run(["git", *argv], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    main()
