"""``kbgraph tags``: auto-tagging (PIKE-RAG §5.2.2). ``register(app)`` adds the ``tags`` group to the ``kbgraph``
command; each verb is one library call.

* ``kbgraph tags classes``: the tag classes of the knowledge base (``KnowledgeBase.tag_classes``, i.e.
  ``kbgraph.tagging.tag_classes``), proposed by the LLM at the first ingest with ``auto_tagging`` on.
* ``kbgraph tags learn --qa FILE.jsonl | --dataset PREFIX``: the tag pair collection from QA samples
  (``kbgraph.eval.tag_pairs.learn_tag_pairs``); ``kbgraph tags pairs`` lists it (``list_tag_pairs``).
"""

from __future__ import annotations

import typer

from kbgraph.cli import common
from kbgraph.errors import ConfigError
from kbgraph.kb import KnowledgeBase
from kbgraph.eval.dataset import load_dataset
from kbgraph.eval.tag_pairs import dataset_samples, learn_tag_pairs, list_tag_pairs, load_qa_samples

tags_app = typer.Typer(no_args_is_help=True, help="Auto-tagging (PIKE-RAG §5.2.2): tag classes, corpus and query tags.")


@tags_app.command("classes")
def classes_cmd(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """The tag classes (proposed once per knowledge base by the LLM at the first ingest with auto_tagging on),
    with the number of corpus tags of each."""
    from rich.table import Table

    with KnowledgeBase(settings=common.existing_settings()) as kb:
        classes = kb.tag_classes()
    if as_json:
        common.print_json([c.model_dump() for c in classes])
        return
    if not classes:
        common.console.print("no tag classes yet: ingest with an LLM configured and KBGRAPH_AUTO_TAGGING=true")
        return
    table = Table("tag class", "description", "tags", title=f"tag classes of {kb.name}")
    for c in classes:
        table.add_row(c.name, c.description, f"{c.tags:,}")
    common.console.print(table)


@tags_app.command("learn")
def learn_cmd(
    qa: str | None = typer.Option(
        None, "--qa", help='JSONL of {"question", "chunk_ids"} or {"question", "gold_passage_ids"} lines.'
    ),
    dataset: str | None = typer.Option(
        None,
        "--dataset",
        "-d",
        help="Data set <prefix> (as kbgraph eval): its "
        "questions and gold passages; the KB is named after it unless --kb.",
    ),
    limit: int | None = typer.Option(None, "--limit", help="Only the first N (selected) questions."),
    sample: int | None = typer.Option(None, "--sample", help="N questions drawn at random with --seed."),
    seed: int = typer.Option(0, "--seed", help="Seed of --sample."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Learn the tag pair collection (PIKE-RAG §5.2.2) from QA samples: the LLM maps each question's tags to
    its gold chunks' corpus tags -> (:Tag {side: 'query'})-[:MAPS_TO {score}]->(:Tag). Re-learning updates the
    scores. Needs an LLM and a corpus tagged at ingest (KBGRAPH_AUTO_TAGGING=true)."""

    if (qa is None) == (dataset is None):
        raise ConfigError("give one of --qa FILE.jsonl or --dataset PREFIX")
    settings = common.settings()
    if dataset is not None:
        name = common.State.overrides.get("name") or load_dataset(dataset).name
        settings = settings.updated({"name": name})
        samples = dataset_samples(dataset, limit=limit, sample=sample, seed=seed)
    elif qa is not None:  # (exactly one of the two is given)
        samples = load_qa_samples(qa)[:limit] if limit is not None else load_qa_samples(qa)
    with KnowledgeBase(settings=settings) as kb:
        report = learn_tag_pairs(kb, samples)
    if as_json:
        common.print_json(report.model_dump())
        return
    u = report.usage
    common.console.print(
        f"{report.learned}/{report.samples} samples gave tag pairs: {len(report.pairs)} pairs from "
        f"{report.query_tags} query tags ({report.edges} MAPS_TO edges written); LLM: {u.calls} calls "
        f"({u.cached_calls} cached), {u.prompt_tokens + u.completion_tokens:,} tokens, {u.seconds:.1f} s",
        highlight=False,
    )
    for why, n in report.skipped.items():
        common.err_console.print(f"[yellow]skipped[/] {n}: {why}", highlight=False)


@tags_app.command("pairs")
def pairs_cmd(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """The tag pair collection: query tag -> corpus tag, score and samples (kbgraph tags learn)."""
    from rich.table import Table

    with KnowledgeBase(settings=common.existing_settings()) as kb:
        pairs = list_tag_pairs(kb.store)
    if as_json:
        common.print_json([p.model_dump() for p in pairs])
        return
    table = Table("query tag", "corpus tag", "score", "samples", title=f"tag pairs of {kb.name}")
    for p in pairs:
        table.add_row(p.query_tag, p.corpus_tag, f"{p.score:.2f}", str(p.samples))
    common.console.print(table)


def register(app: typer.Typer) -> None:
    """Add the ``tags`` group to ``app``."""
    app.add_typer(tags_app, name="tags")
