"""kbgraph.filters: the model's bounds, the --where syntax, and the compilation of each operator to a predicate
whose keys and values are parameters only (issue 58)."""

from __future__ import annotations

import pytest

from kbgraph import cypher
from kbgraph.errors import QueryError
from kbgraph.filters import Catalogue, compile_filter, describe, parse_filter, parse_where
from kbgraph.filters.model import MAX_DEPTH, MAX_LEAVES

CATALOGUE = Catalogue(
    {
        "folder": frozenset({"text"}),
        "year": frozenset({"number"}),
        "tags": frozenset({"list"}),
        "draft": frozenset({"bool"}),
        "title": frozenset({"text"}),
        "mixed": frozenset({"list", "text"}),
    },
    3,
)


def compiled(where: list[str]) -> tuple[str, dict[str, object]]:
    filt = parse_where(where)
    assert filt is not None
    return compile_filter(filt, CATALOGUE)


@pytest.mark.parametrize(
    ("where", "predicate", "values"),
    [
        (["folder=hr/"], "d[$f0k] = $f0v", ["hr/"]),
        (["tags=policy"], "$f0v IN d[$f0k]", ["policy"]),
        (["folder=hr/|eng/"], "d[$f0k] IN $f0v", [["hr/", "eng/"]]),
        (["tags=a|b"], "any(x IN d[$f0k] WHERE x IN $f0v)", [["a", "b"]]),
        (["folder^=hr/"], "d[$f0k] STARTS WITH $f0v", ["hr/"]),
        (["year>=2021"], "(d[$f0k] >= $f0v)", [2021]),
        (["year>2021"], "(d[$f0k] > $f0v)", [2021]),
        (["year<=2021"], "(d[$f0k] <= $f0v)", [2021]),
        (["year<2021.5"], "(d[$f0k] < $f0v)", [2021.5]),
        (["draft=false"], "d[$f0k] = $f0v", [False]),
        (["folder?"], "d[$f0k] IS NOT NULL", [None]),
        (["!folder?"], "(NOT d[$f0k] IS NOT NULL)", [None]),
        (["folder!=hr/"], "(NOT d[$f0k] = $f0v)", ["hr/"]),
        (["folder^=hr/", "year>=2021"], "(d[$f0k] STARTS WITH $f0v AND (d[$f1k] >= $f1v))", ["hr/", 2021]),
    ],
)
def test_each_operator_compiles_to_parameters(where: list[str], predicate: str, values: list[object]) -> None:
    text, params = compiled(where)
    assert text == predicate
    assert [params[f"f{i}v"] for i in range(len(values))] == values
    assert all(params[f"f{i}k"] for i in range(len(values)))


def test_json_and_or_not_compile() -> None:
    filt = parse_filter(
        {
            "op": "or",
            "filters": [
                {
                    "op": "and",
                    "filters": [
                        {"op": "eq", "key": "folder", "value": "hr/"},
                        {"op": "range", "key": "year", "gte": 2020, "lt": 2022},
                    ],
                },
                {"op": "not", "filter": {"op": "exists", "key": "draft"}},
            ],
        }
    )
    text, params = compile_filter(filt, CATALOGUE)
    assert text == "((d[$f0k] = $f0v AND (d[$f1k] >= $f1v AND d[$f2k] < $f2v)) OR (NOT d[$f3k] IS NOT NULL))"
    assert params["f1k"] == params["f2k"] == "year" and (params["f1v"], params["f2v"]) == (2020, 2022)


@pytest.mark.parametrize(
    "hostile",
    [
        "hr/' OR 1=1 //",
        "x') RETURN d //",
        "}) MATCH (n) DETACH DELETE n //",
        '" OR true OR "',
        "\\' \\\" $f0v {{x}}",
    ],
)
def test_a_hostile_value_is_a_parameter(hostile: str) -> None:
    text, params = compile_filter(parse_filter({"op": "eq", "key": "folder", "value": hostile}), CATALOGUE)
    assert text == "d[$f0k] = $f0v" and params["f0v"] == hostile
    statement = cypher.compose("filters/documents", "neo4j", text)
    assert hostile not in statement and "'" not in text


def test_a_predicate_with_a_literal_is_refused() -> None:
    with pytest.raises(ValueError, match="parameters"):
        cypher.compose("filters/documents", "falkordb", "d.folder = 'hr/'")


def test_unknown_reserved_and_mistyped_keys_name_the_key() -> None:
    with pytest.raises(QueryError, match=r"unknown filter key 'foldr'.*did you mean 'folder'"):
        compiled(["foldr=hr/"])
    with pytest.raises(QueryError, match="'embedding' is kbgraph's own"):
        compiled(["embedding?"])
    with pytest.raises(QueryError, match=r"'year' holds numbers: 'recent' is not one"):
        compiled(["year>=recent"])
    with pytest.raises(QueryError, match="'year' holds numbers, not only text: a prefix needs text"):
        compiled(["year^=20"])
    with pytest.raises(QueryError, match="'tags' holds lists of text: a range"):
        compiled(["tags>=a"])
    with pytest.raises(QueryError, match="a list in some documents"):
        compiled(["mixed=a"])


def test_text_values_are_typed_by_the_key() -> None:
    assert compiled(["year=2021"])[1]["f0v"] == 2021
    assert compiled(["title>=2021"])[1]["f0v"] == "2021"  # a text key compares text (ISO dates: created>=2021)
    assert compile_filter(parse_filter({"op": "eq", "key": "title", "value": 7}), CATALOGUE).params["f0v"] == "7"


@pytest.mark.parametrize(
    "bad",
    [
        {"op": "eq", "key": "x y", "value": 1},
        {"op": "eq", "key": "x"},
        {"op": "range", "key": "year"},
        {"op": "range", "key": "year", "gte": 1, "gt": 2},
        {"op": "like", "key": "x", "value": 1},
        {"op": "in", "key": "x", "values": []},
        {"op": "eq", "key": "x", "value": {"nested": 1}},
        {"op": "and", "filters": []},
        "not json",
        {"op": "eq", "key": "x", "value": 1, "extra": 2},
    ],
)
def test_invalid_filters_are_query_errors(bad: object) -> None:
    with pytest.raises(QueryError, match="invalid filter"):
        parse_filter(bad)


def test_bounds_of_a_hostile_tree() -> None:
    deep: dict[str, object] = {"op": "exists", "key": "x"}
    for _ in range(MAX_DEPTH):
        deep = {"op": "not", "filter": deep}
    with pytest.raises(QueryError, match="nests at most"):
        parse_filter(deep)
    wide = {"op": "and", "filters": [{"op": "and", "filters": [{"op": "exists", "key": "x"}] * MAX_LEAVES}] * 2}
    with pytest.raises(QueryError, match="at most"):
        parse_filter(wide)


def test_where_syntax_and_its_description() -> None:
    filt = parse_where(["folder ^= hr/", "year>=2021", "team=a|b", "title='x|y'", "!draft?"])
    assert filt is not None
    assert describe(filt) == "(folder^=hr/ and year>=2021 and team=a|b and title=x|y and not draft?)"
    assert parse_where([]) is None
    with pytest.raises(QueryError, match="is not a condition"):
        parse_where(["folder"])


def test_overfetch_and_the_seeding_rule() -> None:
    from kbgraph.query.propagation.seeding import exact_seeds
    from kbgraph.settings import Settings
    from kbgraph.store.scope import overfetch

    assert overfetch(20, 1.0) == 30 and overfetch(20, 0.1) == 300 and overfetch(20, 0.001) == 600
    assert overfetch(0, 0.5) == 0 and overfetch(20, 0.0) == 600
    auto = Settings()
    assert not exact_seeds(auto, 0.10, 330)  # the bound covers a tenth: over-fetched
    assert exact_seeds(auto, 0.01, 330)  # a hundredth it does not: exact
    assert not exact_seeds(auto, 0.01, 50_000)  # unless too large to compute: over-fetched at the bound
    assert exact_seeds(auto.updated({"filter_seeding": "exact"}), 0.5, 10**6)
    assert not exact_seeds(auto.updated({"filter_seeding": "overfetch"}), 0.001, 3)


def test_scopes_intersect() -> None:
    from kbgraph.store.scope import DocumentScope, intersect

    a = DocumentScope(frozenset({"d1", "d2"}), frozenset({"c1", "c2", "c3"}), 10, "team=hr")
    b = DocumentScope(frozenset({"d2", "d3"}), frozenset({"c3", "c4"}), 10, "year>=2021")
    both = intersect(a, b)
    assert both is not None and both.documents == {"d2"} and both.chunks == {"c3"}
    assert both.label == "team=hr and year>=2021"
    assert intersect(None, b) is b and intersect(a, None) is a and intersect(None, None) is None
