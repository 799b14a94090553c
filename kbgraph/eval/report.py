"""The report of an evaluation: ``report.md`` (configuration, tables of answer metrics, retrieval, ratios to
the baselines, per question class when method 'auto' ran, tokens and latency; all figures in %, PIKE-RAG
§6.1, paper 003 §4 Table 8) and PNG plots under ``plots/`` (metrics per method, Recall@k curves, tokens per
question, latency). matplotlib is imported only in :func:`write_plots`, with the Agg backend (no display).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kbgraph.eval.pages import page_metric_keys
from kbgraph.eval.runfolder import REPORT, QuestionRecord
from kbgraph.eval.summary import BASELINES, NO_RETRIEVAL, EvalSummary

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}"


def _x(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}x"


def write_plots(run_dir: Path, summary: EvalSummary, records: Sequence[QuestionRecord]) -> list[str]:
    """PNG plots under ``<run_dir>/plots``; returns their paths relative to ``run_dir``. matplotlib is
    imported here only, with the Agg backend (no display)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    folder = run_dir / "plots"
    folder.mkdir(exist_ok=True)
    written: list[str] = []
    ms = {m: s for m, s in summary.methods.items() if s.questions}
    ks = summary.ks

    def save(fig: Figure, name: str) -> None:
        fig.tight_layout()
        fig.savefig(folder / name, dpi=110)
        plt.close(fig)
        written.append(f"plots/{name}")

    # metrics per method: answer metrics (LLM methods) and retrieval metrics (every method that retrieves)
    panels = []
    llm_ms = [m for m, s in ms.items() if s.kind == "llm"]
    if llm_ms:
        panels.append(("Answer metrics (%)", llm_ms, ["em", "f1", "precision", "recall", "accuracy"]))
    ret_ms = [m for m, s in ms.items() if m not in NO_RETRIEVAL]
    if ret_ms:
        panels.append(("Retrieval (%)", ret_ms, [f"R@{k}" for k in ks] + ["sf_recall"]))
    if panels:
        fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.2), squeeze=False)
        for ax, (title, names, keys) in zip(axes[0], panels, strict=True):
            width = 0.8 / max(1, len(names))
            for i, m in enumerate(names):
                vals = [100 * (ms[m].metrics.get(k) or 0.0) for k in keys]
                ax.bar([j + i * width for j in range(len(keys))], vals, width, label=m)
            ax.set_xticks([j + 0.4 - width / 2 for j in range(len(keys))], keys)
            ax.set_ylim(0, 100)
            ax.set_title(title)
            ax.legend(fontsize=8)
        save(fig, "metrics.png")

    if ret_ms:
        fig, ax = plt.subplots(figsize=(6, 4.2))
        for m in ret_ms:
            ax.plot(ks, [100 * (ms[m].metrics.get(f"R@{k}") or 0.0) for k in ks], marker="o", label=m)
        ax.set_xlabel("k (passages)")
        ax.set_ylabel("Recall@k (%)")
        ax.set_xticks(ks)
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title(f"Recall@k, {summary.dataset['name']}")
        save(fig, "recall_at_k.png")

    if llm_ms:
        fig, ax = plt.subplots(figsize=(6, 4.2))
        data = [[r.tokens.total for r in records if r.method == m and r.error is None] for m in llm_ms]
        ax.boxplot(data)
        ax.set_xticks(range(1, len(llm_ms) + 1), llm_ms)
        ax.set_ylabel("LLM tokens per question (prompt + completion)")
        ax.set_title("Tokens per question")
        save(fig, "tokens_per_question.png")

    if ms:
        fig, ax = plt.subplots(figsize=(6, 4.2))
        names = list(ms)
        ax.bar(names, [ms[m].latency_ms.get("p50", 0.0) for m in names], label="p50")
        ax.scatter(
            names,
            [ms[m].latency_ms.get("p95", 0.0) for m in names],
            color="black",
            marker="_",
            s=300,
            label="p95",
            zorder=3,
        )
        ax.set_yscale("log")
        ax.set_ylabel("latency per question (ms, log)")
        ax.legend(fontsize=8, loc="upper left")
        ax.tick_params(axis="x", labelrotation=30)
        save(fig, "latency.png")
    return written


def _class_table(s: EvalSummary) -> list[str]:
    """The report's "By question class" section: every method's figures over the questions of each class
    method 'auto' assigned (PIKE-RAG §3.2; ``EvalSummary.by_class``); no lines when 'auto' did not run."""
    if not s.by_class:
        return []
    keys = ["em", "f1", "accuracy"] + [f"R@{k}" for k in s.ks] + ["sf_recall"]
    lines = [
        "## By question class",
        "",
        "Questions grouped by the class method `auto` gave them (PIKE-RAG §3.2: factual, linkable_reasoning, "
        "predictive, creative; unknown = no usable classification) and the route it took (§4.2); every "
        "method's figures over the questions of that class only.",
        "",
        "| class | questions | routes (auto) | method | n | EM | F1 | Accuracy | " + " | ".join(keys[3:]) + " |",
        "|---|---|---|---|---|" + "---|" * len(keys),
    ]
    for name, c in s.by_class.items():
        routes = ", ".join(f"{r} {n}" for r, n in sorted(c.routes.items())) or "–"
        for m, x in c.methods.items():
            if x.questions:
                lines.append(
                    f"| {name} | {c.questions} | {routes} | {m} | {x.questions} | "
                    + " | ".join(_pct(x.metrics.get(k)) for k in keys)
                    + " |"
                )
    return lines + [""]


def _page_table(s: EvalSummary, ret_ms: list[str]) -> list[str]:
    """The report's page-level section for a long-document set (kbgraph.eval.pages): page@k, doc@k and
    page_recall@k per retrieval method; no lines when no question has gold pages."""
    keys = page_metric_keys(s.ks)
    paged = [m for m in ret_ms if any(s.methods[m].metrics.get(k) is not None for k in keys)]
    if not paged:
        return []
    lines = [
        "## Evidence pages (gold_pages)",
        "",
        "| method | n | " + " | ".join(keys) + " |",
        "|---|---|" + "---|" * len(keys),
    ]
    for m in paged:
        lines.append(
            f"| {m} | {s.methods[m].questions} | " + " | ".join(_pct(s.methods[m].metrics.get(k)) for k in keys) + " |"
        )
    if s.by_domain:
        short = [f"page@{k}" for k in s.ks] + [f"doc@{k}" for k in s.ks]
        lines += [
            "",
            "By domain (each domain's questions alone):",
            "",
            "| domain | method | n | " + " | ".join(short) + " |",
            "|---|---|---|" + "---|" * len(short),
        ]
        for domain, by_method in s.by_domain.items():
            for m in paged:
                x = by_method.get(m)
                if x is not None and x.questions:
                    lines.append(
                        f"| {domain} | {m} | {x.questions} | "
                        + " | ".join(_pct(x.metrics.get(k)) for k in short)
                        + " |"
                    )
    return lines + [
        "",
        "page@k: one of the first k chunks lies on an evidence page of its document; doc@k: one of "
        "them comes from a gold document; page_recall@k: the share of evidence pages the first k chunks "
        "lie on (k counted in chunks).",
        "",
    ]


def _retrieval_tables(s: EvalSummary, ret_ms: list[str]) -> list[str]:
    """The report's retrieval table (R@k and sf_recall of ``ret_ms``, the methods that retrieve) and the ratios of
    each to the baselines; no line without a retrieving method."""
    ms = s.methods
    lines: list[str] = []
    rkeys = [f"R@{k}" for k in s.ks] + ["sf_recall"]
    if ret_ms:
        lines += [
            "## Retrieval (passage recall over gold_passage_ids)",
            "",
            "| method | n | " + " | ".join(rkeys) + " |",
            "|---|---|" + "---|" * len(rkeys),
        ]
        for m in ret_ms:
            lines.append(f"| {m} | {ms[m].questions} | " + " | ".join(_pct(ms[m].metrics.get(k)) for k in rkeys) + " |")
        lines += [
            "",
            "R@k: the first k distinct passages of the chunks a method returned (LLM methods: their "
            "context, in the order it was built); sf_recall: supporting-fact recall over all of them.",
            "",
        ]
        with_ratio = [m for m in ret_ms if ms[m].ratios]
        if with_ratio:
            bases = [b for b in BASELINES if b in ms]
            lines += [
                "## Ratios to the baselines",
                "",
                "| method | " + " | ".join(f"{k} ÷ {b}" for b in bases for k in rkeys) + " |",
                "|---|" + "---|" * (len(bases) * len(rkeys)),
            ]
            for m in with_ratio:
                lines.append(
                    f"| {m} | " + " | ".join(_x(ms[m].ratios.get(b, {}).get(k)) for b in bases for k in rkeys) + " |"
                )
            lines.append("")
    return lines


def write_report(run_dir: Path, summary: EvalSummary) -> Path:
    """``report.md``: configuration, tables (answer metrics, retrieval, ratios, tokens, latency), plots."""
    s = summary
    ms = s.methods
    lines = [f"# Evaluation: {s.dataset['name']}", ""]
    lines += [
        f"{s.questions} of {s.dataset['questions_total']} questions; knowledge base `{s.kb['name']}` on "
        f"{s.kb['backend']}; embedder `{s.models['embedding_model']}`; LLM `{s.models['llm_model'] or 'none'}`; "
        f"judge `{s.models['judge_model'] or 'none'}`; retrieval depth {s.config['depth']} chunks; seed "
        f"{s.config['seed']}{'; sample ' + str(s.config['sample']) if s.config.get('sample') else ''}. "
        f"{s.new_records} records run now, {s.reused_records} reused from an earlier run; {s.seconds:.1f} s. "
        "All figures in % (PIKE-RAG §6.1; paper 003 §4, Table 8).",
        "",
    ]
    if s.skipped:
        lines += ["Skipped:", ""] + [f"- `{m}`: {why}" for m, why in s.skipped.items()] + [""]
    errs = {m: x.errors for m, x in ms.items() if x.errors}
    if errs:
        lines += [f"Failed questions (retried on the next run): {', '.join(f'{m} {n}' for m, n in errs.items())}", ""]
    llm_ms = [m for m, x in ms.items() if x.kind == "llm"]
    if llm_ms:
        lines += [
            "## Answers",
            "",
            "| method | n | EM | F1 | Precision | Recall | Accuracy (judged) |",
            "|---|---|---|---|---|---|---|",
        ]
        for m in llm_ms:
            x = ms[m].metrics
            lines.append(
                f"| {m} | {ms[m].questions} | {_pct(x.get('em'))} | {_pct(x.get('f1'))} | "
                f"{_pct(x.get('precision'))} | {_pct(x.get('recall'))} | {_pct(x.get('accuracy'))} "
                f"({ms[m].judged}) |"
            )
        lines.append("")
    ret_ms = [m for m in ms if m not in NO_RETRIEVAL]
    lines += _retrieval_tables(s, ret_ms)
    lines += _page_table(s, ret_ms)
    lines += _class_table(s)
    if llm_ms:
        lines += [
            "## Tokens per question (means)",
            "",
            "| method | LLM calls | prompt | completion | total | cached calls | judge tokens |",
            "|---|---|---|---|---|---|---|",
        ]
        for m in llm_ms:
            t = ms[m].tokens_per_question
            if t:
                lines.append(
                    f"| {m} | {t['calls']:.1f} | {t['prompt']:.0f} | {t['completion']:.0f} | {t['total']:.0f} | "
                    f"{t['cached_calls']:.1f} | {t['judge_total']:.0f} |"
                )
        lines.append("")
    if ms:
        lines += ["## Latency per question (ms)", "", "| method | p50 | p95 | mean |", "|---|---|---|---|"]
        for m, method_summary in ms.items():
            if lat := method_summary.latency_ms:
                lines.append(f"| {m} | {lat['p50']:.1f} | {lat['p95']:.1f} | {lat['mean']:.1f} |")
        lines.append("")
    if s.plots:
        lines += ["## Plots", ""] + [f"![{Path(p).stem}]({p})" for p in s.plots] + [""]
        if not llm_ms:
            lines += ["(No LLM method ran, so there is no tokens-per-question plot.)", ""]
    if s.ingest:
        lines += [
            "## Knowledge base",
            "",
            f"Ingestion of the corpus: {json.dumps(s.ingest)}",
            f"Nodes: {json.dumps(s.kb['nodes'])}",
            "",
        ]
    lines += ["## Versions", "", ", ".join(f"{k} {v}" for k, v in s.versions.items() if v and k != "platform"), ""]
    path = run_dir / REPORT
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
