"""The console script's reading of its command line (kbgraph.launch.parse_global): which verb, and which knowledge
base the global options name, before the verbs are imported."""

from __future__ import annotations

import pytest

import typer

from kbgraph.cli import app
from kbgraph.launch import PRESTART_VERBS, _VALUED, parse_global


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["ask", "What is X?"], ("ask", {})),
        (["--kb", "docs", "ask", "q"], ("ask", {"name": "docs"})),
        (["--kb=docs", "--home", "/data/kb", "--debug", "ask", "q"], ("ask", {"name": "docs", "home": "/data/kb"})),
        (["--uri", "bolt://h:7687", "ask", "q"], ("ask", {"uri": "bolt://h:7687"})),
        (["ingest", "--kb", "other", "docs/"], ("ingest", {})),  # options after the verb are the verb's
        (["ask", "--kb"], ("ask", {})),
    ],
)
def test_the_verb_and_the_global_options(argv: list[str], expected: tuple[str, dict[str, str]]) -> None:
    assert parse_global(argv) == expected


@pytest.mark.parametrize(
    "argv", [[], ["--help"], ["ask", "--help"], ["-h"], ["--kb"], ["--version", "ask", "q"], ["--kb", "docs"]]
)
def test_a_line_without_a_verb_to_start_for_is_left_alone(argv: list[str]) -> None:
    assert parse_global(argv) == (None, {})


def test_only_verbs_that_open_the_store_start_it() -> None:
    assert PRESTART_VERBS == {"ask"}


def test_the_launcher_knows_every_global_option_of_the_cli() -> None:
    # kbgraph.launch reads the global options before kbgraph.cli is imported, from its own table: the same options
    options = {
        opt: bool(getattr(param, "is_flag", False))
        for param in typer.main.get_command(app).params
        for opt in param.opts
    }
    assert options == {**dict.fromkeys(_VALUED, False), "--debug": True}
