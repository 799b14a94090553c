"""``kbgraph ask``, ``kbgraph retrieve`` and ``kbgraph eval``: the query verbs of the command line, one library
call each.

Registered on the ``kbgraph`` app by :func:`register`. The method names in their help come from the registry
(kbgraph.query.methods.registry), so the help lists exactly the methods that run. Settings, consoles and the JSON
printer are kbgraph.cli.common's. ``ask --stream`` prints the answer as the LLM writes it
(``KnowledgeBase.ask(..., stream=True)``); ``--stream --json`` prints one ``AskEvent`` JSON object
per line (not a usage error: the same events as the HTTP API's SSE). ``ask`` and ``retrieve`` take ``--where``
conditions (repeatable, all required: kbgraph.filters.parse_where; docs/filters.md): only the documents whose
metadata they allow are read.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import typer

from kbgraph.cli import common
from kbgraph.errors import KBGraphError
from kbgraph.filters import Filter, parse_where
from kbgraph.query.ask import clean_question
from kbgraph.query.methods.registry import ALL_METHODS, methods_help
from kbgraph.cli.render import render_answer, render_round
from kbgraph.kb import KnowledgeBase, evaluate_dataset

if TYPE_CHECKING:
    from kbgraph.query.models import Answer, AskEvent, ScoredChunk
    from kbgraph.query.rationale import SavedRationale

WHERE_HELP = (
    "Only documents whose metadata meet this condition (repeatable, all required): key=value, key!=value, "
    "key=a|b, key^=prefix, key>=v, key>v, key<=v, key<v, key? (has it), !key? (docs/filters.md)."
)


def _where(conditions: list[str] | None) -> Filter | None:
    """The filter of the ``--where`` conditions (None for none); QueryError (exit 2) for one that is not one."""
    return parse_where(conditions or [])


def ask_cmd(
    question: str = typer.Argument(..., help="The question."),
    method: str | None = typer.Option(None, "--method", "-m", help=methods_help() + "."),
    k: int = typer.Option(5, "--k", help="Evidence chunks for retrieval-only answers."),
    trace: bool = typer.Option(False, "--trace", help="Print the rationale round by round."),
    explain: bool = typer.Option(False, "--explain", help="Print each chunk's score breakdown."),
    as_json: bool = typer.Option(
        False, "--json", help="Print the whole Answer as JSON (with --stream: one JSON event per line)."
    ),
    save: bool = typer.Option(
        False,
        "--save",
        help="Write the rationale into the graph as a (:Question) node (see `kbgraph browse question`).",
    ),
    stream: bool = typer.Option(
        False,
        "--stream",
        help="Print the answer as the LLM writes it, then the citations (--trace: rounds as they finish).",
    ),
    where: list[str] | None = typer.Option(None, "--where", "-w", help=WHERE_HELP),
) -> None:
    """Answer a question from the knowledge base, with citations.

    Exit 2 on a usage error (an empty question, a --where that is not a condition or names a key no document
    has), 66 when the knowledge base does not exist (nothing is made: ingest into it first)."""

    question = clean_question(question)  # a usage error before the knowledge base is looked for
    filt = _where(where)
    with KnowledgeBase(settings=common.existing_settings()) as kb:
        if stream:
            with kb.ask(question, method=method, k=k, explain=explain, save=save, stream=True, filters=filt) as events:
                answer = _print_stream(events, trace=trace, as_json=as_json, saved=lambda: kb.last_saved)
        else:
            answer = kb.ask(question, method=method, k=k, explain=explain, save=save, filters=filt)
    if as_json:
        if not stream:
            extra = {"saved": kb.last_saved.model_dump()} if kb.last_saved else {}
            common.print_json({**answer.model_dump(), **extra})
        return
    render_answer(common.console, answer, trace=trace and not stream, explain=explain, body=not stream, route=trace)
    if kb.last_saved:
        saved = kb.last_saved
        common.err_console.print(
            f"saved as {saved.question_id}: {saved.used} USED, {saved.sub_questions} sub-questions, "
            f"{saved.matched} MATCHED; see it with `kbgraph browse question --param question={saved.question_id}`",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


def retrieve_cmd(
    question: str = typer.Argument(..., help="The question."),
    method: str = typer.Option(
        "propagation", "--method", "-m", help="A retrieval method: propagation, hierarchical, dense or bm25."
    ),
    k: int = typer.Option(10, "--k", help="How many chunks."),
    explain: bool = typer.Option(False, "--explain", help="With each chunk's score breakdown (in --json)."),
    as_json: bool = typer.Option(False, "--json", help="Print the chunks as JSON (ScoredChunk objects)."),
    where: list[str] | None = typer.Option(None, "--where", "-w", help=WHERE_HELP),
) -> None:
    """The top-k chunks for a question, without an answer (no LLM): score, document, page, text.

    Exit 2 on a usage error (an empty question, an unknown method, a --where that is not a condition or names a
    key no document has), 66 when the knowledge base does not exist."""
    question = clean_question(question)  # a usage error before the knowledge base is looked for
    filt = _where(where)
    with KnowledgeBase(settings=common.existing_settings()) as kb:
        chunks = kb.retrieve(question, k=k, method=method, explain=explain, filters=filt)
    if as_json:
        common.print_json([c.model_dump(mode="json") for c in chunks])
        return
    _print_chunks(chunks)


def _print_chunks(chunks: list[ScoredChunk]) -> None:
    """One block per chunk, best first: rank, score, document title, page, section, id, its first 300 characters."""
    if not chunks:
        common.err_console.print("no chunk found (with --where: no document meets the conditions?)")
    for i, c in enumerate(chunks, 1):
        where = ", ".join(x for x in (c.page and f"page {c.page}", c.section_path) if x)
        common.console.print(
            f"[{i}] {c.score:.4f}  {c.document_title}" + (f" — {where}" if where else "") + f"  ({c.id})",
            highlight=False,
            markup=False,
        )
        text = " ".join((c.text or c.summary or "").split())
        common.console.print(f"    {text[:300]}", style="dim", highlight=False, markup=False)


def _print_stream(
    events: Iterable[AskEvent], *, trace: bool, as_json: bool, saved: Callable[[], SavedRationale | None]
) -> Answer:
    """Print a streamed ask as it comes: with ``as_json`` one ``AskEvent`` JSON object per line (the ``answer``
    line also has ``saved``), else the answer text piece by piece (stdout, flushed) and, with ``trace``,
    Algorithm 1's rounds as they finish. Returns the final Answer."""
    out, started = sys.stdout, False
    for event in events:
        if as_json:
            line = event.model_dump(mode="json", exclude_none=True)
            if event.type == "answer" and (rationale := saved()) is not None:
                line["saved"] = rationale.model_dump(mode="json")
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
            out.flush()
        elif event.type == "round" and trace and event.round is not None:
            if started:
                out.write("\n")
                started = False
            render_round(common.console, event.round)
        elif event.type in ("delta", "reset"):
            if not started:
                common.console.print("[bold]Answer[/]")
                started = True
            if event.type == "reset":
                out.write("\n")
                common.err_console.print("[dim](the answer so far is void: the LLM is asked again)[/]")
            out.write(event.text)
            out.flush()
        if event.type == "answer" and event.answer is not None:
            if not as_json:
                out.write("\n" if started else "")
                out.flush()
            return event.answer
    raise KBGraphError("the answer stream ended without an answer")


def eval_cmd(
    dataset: str = typer.Option(
        ..., "--dataset", "-d", help="Data set: <prefix> of <prefix>.questions.jsonl/.corpus.jsonl, or its folder."
    ),
    methods: str | None = typer.Option(
        None,
        "--methods",
        "-m",
        help=f"Comma-separated: {','.join(ALL_METHODS)} (answer methods need an LLM). Default: all.",
    ),
    limit: int | None = typer.Option(None, "--limit", help="Only the first N (selected) questions."),
    sample: int | None = typer.Option(None, "--sample", help="N questions drawn at random with --seed."),
    seed: int = typer.Option(0, "--seed", help="Seed of --sample."),
    out: str | None = typer.Option(None, "--out", help="Run folder (default ./kbgraph-eval/<data set>)."),
    fresh: bool = typer.Option(False, "--fresh", help="Discard the run folder's earlier results."),
    judge: bool | None = typer.Option(None, "--judge/--no-judge", help="LLM-judged accuracy (default: with an LLM)."),
    judge_model: str | None = typer.Option(None, "--judge-model", help="Model of the judge (default: the LLM's)."),
    depth: int = typer.Option(10, "--depth", help="Chunks each retrieval method returns."),
    no_ingest: bool = typer.Option(False, "--no-ingest", help="Do not ingest the data set's corpus first."),
    as_json: bool = typer.Option(False, "--json", help="Print summary.json."),
) -> None:
    """Evaluate methods on a multi-hop QA data set (PIKE-RAG §6): answers, Recall@k, report with plots.

    The knowledge base is named after the data set unless --kb is given; an interrupted run resumes."""
    from rich.table import Table

    if not sys.stderr.isatty():  # cron, CI, a log: the ingest's and the question loop's progress as lines on stderr
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    err = common.err_console
    summary = evaluate_dataset(
        dataset,
        settings=common.settings(),
        kb_name=common.State.overrides.get("name"),
        methods=[m.strip() for m in methods.split(",") if m.strip()] if methods else None,
        limit=limit,
        sample=sample,
        seed=seed,
        out=out,
        fresh=fresh,
        judge=judge,
        judge_model=judge_model,
        depth=depth,
        ingest=not no_ingest,
        log=None if as_json else lambda msg: err.print(msg, highlight=False),
    )
    if as_json:
        sys.stdout.write(summary.model_dump_json(indent=2) + "\n")
        return
    table = Table(title=f"{summary.dataset['name']}: {summary.questions} questions")
    table.add_column("method", no_wrap=True)
    paged = any(m.metrics.get(f"page@{summary.ks[0]}") is not None for m in summary.methods.values())
    # a long-document set (kbgraph.eval.pages): page@k and doc@k in place of passage recall
    rcols = (
        [f"{w}@{k}" for w in ("page", "doc") for k in summary.ks] if paged else [f"R@{k}" for k in summary.ks] + ["SF"]
    )
    base = "page@5" if paged else "R@5"
    for col in ("n", "EM", "F1", "Acc", *rcols, f"{base} ÷ dense"):
        table.add_column(col, justify="right")

    def pct(v: float | None) -> str:
        return "–" if v is None else f"{100 * v:.1f}"

    for name, m in summary.methods.items():
        ratio = m.ratios.get("dense", {}).get(base)
        table.add_row(
            name,
            str(m.questions),
            pct(m.metrics.get("em")),
            pct(m.metrics.get("f1")),
            pct(m.metrics.get("accuracy")),
            *[pct(m.metrics.get("sf_recall" if c == "SF" else c)) for c in rcols],
            "–" if ratio is None else f"{ratio:.2f}x",
        )
    common.console.print(table)
    for why in dict.fromkeys(summary.skipped.values()):
        names = ", ".join(n for n, w in summary.skipped.items() if w == why)
        err.print(f"[yellow]skipped[/] {names}: {why}", highlight=False)
    common.console.print(f"report: {summary.report}")


def register(app: typer.Typer) -> None:
    """Add ``ask``, ``retrieve`` and ``eval`` to ``app``."""
    app.command("ask")(ask_cmd)
    app.command("retrieve")(retrieve_cmd)
    app.command("eval")(eval_cmd)
