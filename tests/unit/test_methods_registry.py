"""The method registry (kbgraph.query.methods.registry) as the one seam of a query method: a toy method added as one row
is found and run by the normal path (ask), every row's settings group exists and every method group is named,
and docs/methods.md is held to the registry (its method table) and to the settings (its departures table)."""

from __future__ import annotations

import re

import pytest

from kbgraph.errors import QueryError
from kbgraph.query import ask
from kbgraph.query.methods import registry as methods
from kbgraph.query.context import QueryContext
from kbgraph.query.methods.registry import METHODS, AnswerRow, RetrievalRow, get_method
from kbgraph.query.models import Answer, ScoredChunk
from kbgraph.settings import GROUPS, METHOD_GROUPS, SETTING_GROUPS, Settings
from tests.unit.conftest import REPO

DOC = REPO / "docs" / "methods.md"


def _ctx(llm: object | None = None) -> QueryContext:
    """A context no toy method reads (no store, no embedder)."""
    return QueryContext(store=None, settings=Settings(), embedder=None, llm=llm)  # type: ignore[arg-type]


def toy_retrieve(question: str, ctx: QueryContext, *, k: int, explain: bool = False) -> list[ScoredChunk]:
    return [ScoredChunk(id=f"toy:{i}", score=1.0 / (i + 1), text=question) for i in range(k)]


def toy_answer(question: str, ctx: QueryContext) -> Answer:
    return Answer(question=question, answer="toy", method="toy_answer")


def test_a_new_method_is_its_function_and_one_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """Adding a method = its module (here, the functions above) + its row: ask finds and runs it."""
    monkeypatch.setitem(METHODS, "toy", RetrievalRow("toy", toy_retrieve, "a toy retrieval method"))
    monkeypatch.setitem(METHODS, "toy_answer", AnswerRow("toy_answer", toy_answer, "a toy answer method"))
    chunks = ask.retrieve("  which toy?", _ctx(), k=3, method="toy")
    assert [c.id for c in chunks] == ["toy:0", "toy:1", "toy:2"]
    answer = ask.answer_question("  which toy?  ", _ctx(llm=object()), method="toy_answer")
    assert answer.answer == "toy" and answer.question == "which toy?"  # the question arrives clean
    assert get_method("toy", "retrieval").run is toy_retrieve
    with pytest.raises(QueryError, match="unknown answer method 'toy'"):
        get_method("toy", "answer")
    with pytest.raises(QueryError, match="unknown retrieval method 'toy_answer'"):
        ask.retrieve("q", _ctx(), k=1, method="toy_answer")


def test_rows_carry_their_kind_and_capabilities() -> None:
    for name, row in METHODS.items():
        assert row.name == name and row.summary
        assert (row.kind, row.needs_llm) == (("answer", True) if isinstance(row, AnswerRow) else ("retrieval", False))
    assert methods.NO_RETRIEVAL == ("cot",)  # the method answering from no chunk
    prepared = [m.name for m in METHODS.values() if isinstance(m, RetrievalRow) and m.prepare is not None]
    assert prepared == ["bm25"]  # its index is built or loaded before an evaluation's clock starts


def test_every_method_group_is_named_by_a_method() -> None:
    named = {row.settings_group for row in METHODS.values() if row.settings_group is not None}
    assert named <= set(GROUPS), f"rows name unknown settings groups: {named - set(GROUPS)}"
    assert named == set(METHOD_GROUPS), "a method group no method names, or a method naming a non-method group"
    orphans = [s for s, g in SETTING_GROUPS.items() if g in METHOD_GROUPS and g not in named]
    assert not orphans


def _table(text: str, heading: str | None) -> list[list[str]]:
    """The cells of the first Markdown table after ``heading`` (or in the text), header and rule dropped."""
    if heading is not None:
        text = text[text.index(heading) :]
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    return rows[2:]


def test_docs_method_table_matches_the_registry() -> None:
    names: list[str] = []
    for row in _table(DOC.read_text(encoding="utf-8"), None):
        names += re.findall(r"`([a-z0-9_]+)`", row[0])
    assert len(names) == len(set(names)), "a method listed twice in docs/methods.md"
    assert set(names) == set(METHODS), (
        f"docs/methods.md lists {sorted(set(names) - set(METHODS))} not registered; "
        f"registered but not listed: {sorted(set(METHODS) - set(names))}"
    )


def test_departures_name_real_settings() -> None:
    """Each departure's last column names the settings that give the paper's version back (`name` or
    `name=value`, each a setting of Settings, or a method of the registry), or says there is none."""
    rows = _table(DOC.read_text(encoding="utf-8"), "## Departures")
    assert len(rows) >= 10
    for paper, _the_paper, _kbgraph, restore in rows:
        named = re.findall(r"`([a-z][a-z0-9_]*)(?:=[^`]*)?`", restore)
        unknown = [n for n in named if n not in SETTING_GROUPS and n not in METHODS]
        assert not unknown, f"{paper}: not settings: {unknown}"
        assert named or restore.startswith(("none", "the default")), (
            f"{paper}: name the setting that restores the paper's version, or say 'none'"
        )
