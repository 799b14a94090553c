"""``kbgraph tags``: placeholder until its verbs land; ``register(app)`` adds them to the ``kbgraph`` command."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the ``tags`` verbs to ``app`` (none yet)."""
