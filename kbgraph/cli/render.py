"""Terminal rendering of an Answer (rich): the answer, numbered citations, and optionally the rationale
(Algorithm 1 rounds) and the score breakdown of each retrieved chunk."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from kbgraph.query.models import Answer, TraceRound, TraceStep


def render_answer(
    console: Console,
    answer: Answer,
    *,
    trace: bool = False,
    explain: bool = False,
    body: bool = True,
    route: bool | None = None,
) -> None:
    """The answer, its citations, with ``trace`` the rounds, with ``explain`` the score breakdown, and the LLM
    usage. ``body=False``: without the heading and the answer text (a streamed answer printed them already).
    ``route`` (default: ``trace``): method 'auto''s line "class: … → route …" (:func:`route_line`), at the head
    of the rationale, or alone when the rounds are not printed here (a streamed ask printed them already)."""
    show_route = (trace if route is None else route) and answer.route is not None
    if body:
        tag = (
            " [dim](retrieval only, no LLM: the best-matching evidence; \\[n] = citation n)[/]"
            if answer.retrieval_only
            else ""
        )
        console.print(f"[bold]Answer[/]{tag}")
        console.print(answer.answer, highlight=False, markup=False)
    if answer.citations:
        console.print("\n[bold]Citations[/]")
        for i, c in enumerate(answer.citations, 1):
            where = ", ".join(x for x in (c.section and f"section {c.section}", c.page and f"page {c.page}") if x)
            console.print(f"[{i}] {c.document_title}" + (f" — {where}" if where else ""), highlight=False, markup=False)
            if c.quote:
                console.print(f"    “{c.quote[:240]}”", style="dim", highlight=False, markup=False)
    if trace and (answer.trace or show_route):
        console.print("\n[bold]Rationale[/]")
        if show_route:
            console.print(route_line(answer), highlight=False, markup=False)
        for r in answer.trace:
            render_round(console, r)
    elif show_route:
        console.print("\n" + route_line(answer), highlight=False, markup=False)
    if explain and answer.chunks:
        console.print(
            "\n[bold]Score breakdown[/] (the weighted sum: each score term's best contribution, summed; with the "
            "learned ranker, the chunk's score is the ranker's)"
        )
        for chunk in answer.chunks:
            table = Table(
                title=f"{chunk.score:.4f}  {chunk.document_title} {chunk.section_path}".strip(), title_justify="left"
            )
            for col in ("term", "node", "similarity", "weight", "factor", "score"):
                table.add_column(col)
            for t in chunk.breakdown:
                label = (t.text or t.node_id)[:60]
                table.add_row(
                    t.term, label, f"{t.similarity:.4f}", f"{t.weight:g}", f"{t.factor:.3f}", f"{t.score:.4f}"
                )
            console.print(table)
            if chunk.ranking:
                ranked = Table(
                    title="learned ranker (score = intercept + sum of contributions; docs/scoring.md)",
                    title_justify="left",
                )
                for col in ("feature", "value", "contribution"):
                    ranked.add_column(col)
                for term in sorted(chunk.ranking, key=lambda t: -abs(t.contribution)):
                    if term.value or term.contribution:
                        ranked.add_row(term.feature, f"{term.value:.4f}", f"{term.contribution:+.4f}")
                console.print(ranked)
    u = answer.usage
    if u.calls:
        console.print(
            f"\n[dim]{u.calls} LLM calls, {u.prompt_tokens}+{u.completion_tokens} tokens, {u.seconds:.1f} s[/]"
        )


def route_line(answer: Answer) -> str:
    """Method 'auto''s classification and route (kbgraph.query.methods.classify, PIKE-RAG §3.2, §4.2), e.g.
    ``class: linkable_reasoning (bridging) → route L2:pike``; '' for an answer of any other method."""
    if answer.route is None:
        return ""
    sub = f" ({answer.question_subtype})" if answer.question_subtype else ""
    return f"class: {answer.question_class}{sub} → route {answer.route}"


def render_round(console: Console, r: TraceStep) -> None:
    """One round of Algorithm 1: its proposals, candidates (→ the selected one) and note; a MIGRES or HiRAG
    round as its own ``summary_lines()``."""
    if not isinstance(r, TraceRound):
        for i, line in enumerate(r.summary_lines()):
            console.print(line if i == 0 else f"  {line}", highlight=False, markup=False)
        return
    console.print(f"round {r.round}: proposals {r.proposals}", highlight=False, markup=False)
    for cand in r.candidates:
        mark = "→" if r.selected and cand.question_id == r.selected.question_id else " "
        console.print(f"  {mark} {cand.score:.3f} {cand.text}", highlight=False, markup=False)
    if r.note:
        console.print(f"  {r.note}", style="dim", highlight=False, markup=False)
