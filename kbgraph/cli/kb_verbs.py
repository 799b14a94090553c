"""The verbs of the ``kbgraph`` command on one knowledge base: ``config``, ``stats``, ``ingest``, ``browse``,
``delete``, ``reset``; ``register(app)`` adds them. Each is one library call (kbgraph.kb)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from kbgraph.cli import common
from kbgraph.cli.common import console, err_console, print_json
from kbgraph.browse import can_open_browser, CATALOGUE, parse_param_args, render
from kbgraph.errors import ConfigError
from kbgraph.settings import env_names, GROUPS
from kbgraph.store import backend_name
from kbgraph.kb import KnowledgeBase
from kbgraph.ingest.engines import ENGINES, engines_help
from kbgraph.ingest.metadata import parse_meta_options
from kbgraph.ingest.sources import Exclusions

if TYPE_CHECKING:
    from kbgraph.ingest.report import IngestReport


# --- knowledge base -----------------------------------------------------------------------------
def config_cmd(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Print the effective settings by group (secrets masked), each with its environment variable."""
    s = common.settings()
    try:
        backend = backend_name(s)
    except ConfigError as exc:  # shown, not raised: `config` is where a wrong setting is looked for
        backend = str(exc)
    data = {**s.masked(), "backend": backend, "kb_dir": str(s.kb_dir)}
    if as_json:
        print_json(data)
        return
    table = Table("setting", "environment", "value", title="kbgraph settings")
    for key, value in data.items():
        if key in GROUPS:
            table.add_section()
            for name, v in value.items():
                table.add_row(f"{key}.{name}", ", ".join(env_names(name)), "" if v is None else str(v))
        else:
            env = ", ".join(env_names(key)) if key in type(s).model_fields else ""
            table.add_row(key, env, "" if value is None else str(value))
    console.print(table)


def stats_cmd(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Node counts per label and relationship counts per type.

    Exit 66 when the knowledge base does not exist (nothing is made: ingest into it first)."""

    with KnowledgeBase(settings=common.existing_settings()) as kb:
        st = kb.stats()
    if as_json:
        print_json(st.model_dump())
        return
    console.print(f"[bold]{kb.name}[/] on {st.backend} at {st.location}")
    table = Table("label / relationship type", "count")
    for key, count in st.nodes.items():
        table.add_row(f"(:{key})", f"{count:,}")
    for key, count in st.relationships.items():
        table.add_row(f"[:{key}]", f"{count:,}")
    console.print(table if st.nodes else "the graph is empty")


def ingest_cmd(
    paths: list[str] = typer.Argument(..., help="Files, directories, or .jsonl passage corpora."),
    prune: bool = typer.Option(False, "--prune", help="Delete documents whose source vanished."),
    wait: bool = typer.Option(False, "--wait", help="Wait for another run's lock instead of exiting 75."),
    as_json: bool = typer.Option(False, "--json", help="Print the run summary as JSON."),
    exclude: list[str] = typer.Option(
        [],
        "--exclude",
        metavar="GLOB",
        help="Leave out files matching GLOB "
        "(gitignore syntax; repeatable), besides .kbgraphignore files and the defaults.",
    ),
    engine: str | None = typer.Option(
        None,
        "--engine",
        metavar=engines_help(),
        help="Where parse, chunk, distill and "
        "embed run: local (this process) or ray (a Ray cluster; writes stay here). "
        "Setting ingest_engine.",
    ),
    ray_address: str | None = typer.Option(
        None,
        "--ray-address",
        metavar="ADDRESS",
        help="--engine ray: the cluster to join; default: a local Ray. Setting ray_address.",
    ),
    workers: int | None = typer.Option(
        None,
        "--workers",
        min=1,
        metavar="N",
        help="--engine ray: parse tasks and distill actors at once; default: the cores. Setting ingest_workers.",
    ),
    meta: list[str] = typer.Option(
        [],
        "--meta",
        metavar="KEY=VALUE",
        help="A metadata key of every document of "
        "this run (repeatable; over a sidecar's and the file's own; 2021 and 1.5 are "
        "numbers, true/false booleans, anything else text).",
    ),
) -> None:
    """Ingest documents into the knowledge base (incremental; safe to run from cron).

    Every file found is reported: ingested, updated, unchanged, failed (with why) or skipped (a kind of file
    kbgraph does not read, found in a directory: with why and the fix); --json lists them under "files".
    Left out, and reported as skipped with the rule: Office owner files (~$*), .DS_Store, Thumbs.db, editor
    backups (*~), files matching --exclude, and those a .kbgraphignore (gitignore syntax) in a folder excludes.
    Exit 0 when no file failed (skipped files do not fail a run), 1 when some failed, 2 on a usage or
    configuration error, 75 when another run holds the lock."""
    import logging

    try:
        Exclusions(exclude)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--exclude") from exc
    try:
        metadata = parse_meta_options(meta)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--meta") from exc

    if not (sys.stderr.isatty() and sys.stdout.isatty()):  # cron, CI, `| tee`: progress as log lines on stderr
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    if engine is not None and engine not in ENGINES:
        raise typer.BadParameter(f"{engine!r}: choose {' or '.join(ENGINES)}", param_hint="--engine")
    given = {"ingest_engine": engine, "ray_address": ray_address, "ingest_workers": workers}
    settings = common.settings().updated({k: v for k, v in given.items() if v is not None})
    with KnowledgeBase(settings=settings) as kb:
        report = kb.ingest(paths, prune=prune, wait=wait, exclude=exclude, meta=metadata)
    if as_json:
        print_json(report.model_dump())
    else:
        console.print(
            f"[bold]{report.status}[/]: {report.added} added, {report.updated} updated, "
            f"{report.unchanged} unchanged{_new_metadata(report)}, {report.deleted} deleted, {report.failed} failed, "
            f"{report.skipped} skipped; {report.chunks} chunks in {report.seconds['total']:.1f} s"
        )
        _print_ingest_files(report)
    raise typer.Exit(report.exit_code)


def _new_metadata(report: IngestReport) -> str:
    """ " (N with new metadata)" after the unchanged count when a run updated metadata alone, else ""."""
    return f" ({report.metadata_updated} with new metadata)" if report.metadata_updated else ""


#: Skipped files with the same reason are listed one a line up to this many, then summed up.
SKIPPED_LISTED = 10


def _print_ingest_files(report: IngestReport) -> None:
    """Failed files (one line each, on stderr), warnings, and skipped files: one line each, or per reason
    when more than SKIPPED_LISTED share it ("skipped 57 files (a.png, b.png, … +54 more): image: …")."""
    from collections import defaultdict
    from pathlib import Path

    from rich.text import Text

    def out(label: str, style: str, text: str) -> None:
        err_console.print(Text.assemble((label, style), " ", text), highlight=False, soft_wrap=True)

    for err in report.errors:
        out("failed:", "red", f"{err.path}: {err.error}")
    for f in report.files:
        for warning in f.warnings:
            out("warning:", "yellow", f"{f.path}: {warning}")
    by_reason: dict[str, list[str]] = defaultdict(list)
    for f in report.files:
        if f.outcome == "skipped":
            by_reason[f.reason or "skipped"].append(f.path)
    for reason, paths in by_reason.items():
        if len(paths) <= SKIPPED_LISTED:
            for path in paths:
                out("skipped:", "yellow", f"{path}: {reason}")
        else:
            names = ", ".join(Path(p).name for p in paths[:3])
            more = f"({names}, … +{len(paths) - 3} more; --json lists them)"
            out(f"skipped {len(paths)} files", "yellow", f"{more}: {reason}")


def browse_cmd(
    name: str | None = typer.Argument(None, help="A ready query (omit to list them)."),
    param: list[str] | None = typer.Option(None, "--param", "-p", help="name=value, repeatable."),
    open_browser: bool = typer.Option(False, "--open", help="Open the Browser URL (where a desktop exists)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Print a ready Neo4j Browser query with its parameters as `:param` lines, and the Browser URL."""
    if name is None:
        if as_json:
            print_json([q.model_dump() for q in CATALOGUE.values()])
            return
        table = Table("query", "shows", "parameters (default)", title="kbgraph browse QUERY [--param k=v]")
        for q in CATALOGUE.values():
            table.add_row(q.name, q.title, ", ".join(f"{p.name}={p.default!r}" for p in q.params))
        console.print(table)
        return
    out = render(name, parse_param_args(param), common.settings())
    if as_json:
        print_json(out.model_dump())
    else:
        sys.stdout.write(
            f"// {out.title}\n{out.script}\n// Neo4j Browser, this script in the editor: {out.url}\n"
            "// (Browser runs a script statement by statement and shows a summary of each; the parameters stay\n"
            "// set, so run the query once more on its own to see its graph, or open the query with the values\n"
            f"// written in: {out.graph_url or 'not possible, a value holds & or #'})\n"
        )
        if out.note:
            err_console.print(f"note: {out.note}", highlight=False, markup=False, soft_wrap=True)
    if open_browser:
        import webbrowser

        if not can_open_browser() or not webbrowser.open(out.url):
            err_console.print("no desktop browser here: open the URL above yourself", highlight=False, markup=False)


def delete_cmd(document: str = typer.Argument(..., help="Document id (doc:…) or its source path/URI.")) -> None:
    """Remove one document's whole subgraph and the entities no other document uses."""

    with KnowledgeBase(settings=common.existing_settings()) as kb:
        counts = kb.delete(document)
    if not counts["documents"]:
        err_console.print(f"no document {document!r} in knowledge base {kb.name!r}")
        raise typer.Exit(1)
    console.print(", ".join(f"{v} {k}" for k, v in counts.items()) + " deleted")


def reset_cmd(yes: bool = typer.Option(False, "--yes", help="Do not ask.")) -> None:
    """Delete every node and relationship of the knowledge base."""

    s = common.settings()
    if not yes and not typer.confirm(f"Delete everything in knowledge base {s.name!r} ({backend_name(s)})?"):
        raise typer.Exit(1)
    with KnowledgeBase(settings=s) as kb:
        kb.reset()
    console.print(f"knowledge base {s.name!r} is empty")


def register(app: typer.Typer) -> None:
    """Add ``config``, ``stats``, ``ingest``, ``browse``, ``delete``, ``reset`` to ``app``."""
    app.command("config")(config_cmd)
    app.command("stats")(stats_cmd)
    app.command("ingest")(ingest_cmd)
    app.command("browse")(browse_cmd)
    app.command("delete")(delete_cmd)
    app.command("reset")(reset_cmd)
