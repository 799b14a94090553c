"""``kbgraph models``: make the models the settings need now (kbgraph.embed.prepare ``make_models``), so that the
first ingestion of a home does not (the README's set-up step); ``register(app)`` adds it to the ``kbgraph``
command."""

from __future__ import annotations

import typer

from kbgraph.cli import common
from kbgraph.cli.common import console, err_console, print_json
from kbgraph.embed.prepare import make_models, missing_models


def models_cmd(
    check: bool = typer.Option(False, "--check", help="Make nothing: list what is missing, exit 1 if anything is."),
    as_json: bool = typer.Option(False, "--json", help="What was made (or is missing) as JSON."),
) -> None:
    """Make the embedding models this home needs (the ONNX export of the embedding model, the static model of
    the static layers) now, at once: ~30 s on 2 cores, once per home. Ingestion makes a missing one itself."""
    s = common.settings()
    if check:
        todo = [{"kind": args[0], "path": args[2]} for args in missing_models(s)]
        if as_json:
            print_json(todo)
        for item in [] if as_json else todo:
            console.print(f"missing: the {item['kind']} model, {item['path']}", highlight=False)
        if not todo and not as_json:
            console.print("every model is made")
        raise typer.Exit(1 if todo else 0)
    with err_console.status("making the models (once per home)"):
        made = make_models(s)
    if as_json:
        print_json([m.model_dump() for m in made])
        return
    for m in made:
        console.print(f"made the {m.kind} model in {m.seconds:.1f} s: {m.path}", highlight=False)
    if not made:
        console.print("every model is made")


def register(app: typer.Typer) -> None:
    """Add ``models`` to the ``kbgraph`` command."""
    app.command("models")(models_cmd)
