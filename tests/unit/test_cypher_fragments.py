"""One Cypher statement per name (issue 59): a statement is written once, its per-store pieces named as fragments
(``{{name: arg, ...}}``, defined in ``cypher/fragments/<dialect>.cypher``, filled in by ``kbgraph.cypher.load``);
whole-file variants (``<name>.<dialect>.cypher``) are kept only where a statement truly differs.

The tree's own statements: no two files of one statement differ by :data:`MAX_SMALL_DIFF` lines or fewer (such a
pair is a copy: write it once with fragments); every fragment a statement names is defined by every store that
serves it, with the same parameters; every store defines the same fragments and none is unused. Then the syntax
itself, on a statement tree of the test's own.
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbgraph import cypher
from kbgraph.errors import CypherNotFound

#: Two files of one statement that differ by this many lines or fewer (lines removed + lines added, comment and
#: blank lines left out) are a copy: the issue counted 42 such neo4j/falkordb pairs.
MAX_SMALL_DIFF = 4


def _code_lines(path: Path) -> list[str]:
    return [
        ln.rstrip()
        for ln in path.read_text(encoding="utf-8").splitlines()
        if ln.strip() and not ln.lstrip().startswith("//")
    ]


def changed_lines(a: list[str], b: list[str]) -> int:
    """Lines removed plus lines added from ``a`` to ``b`` (difflib)."""
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    return sum((i2 - i1) + (j2 - j1) for tag, i1, i2, j1, j2 in ops if tag != "equal")


def variant_files(root: Path) -> dict[str, list[Path]]:
    """statement name -> its files (the plain one and each dialect's), for the names written more than once."""
    out = {}
    for name in sorted(cypher.names(root)):
        candidates = [root / f"{name}{suffix}.cypher" for suffix in ("", *(f".{d}" for d in cypher.DIALECTS))]
        found = [p for p in candidates if p.is_file()]
        if len(found) > 1:
            out[name] = found
    return out


def small_pairs(root: Path) -> list[str]:
    """'name: a vs b (n lines)' for each two files of one statement that differ by MAX_SMALL_DIFF lines or fewer."""
    out = []
    for name, paths in variant_files(root).items():
        for a, b in itertools.combinations(paths, 2):
            n = changed_lines(_code_lines(a), _code_lines(b))
            if n <= MAX_SMALL_DIFF:
                out.append(f"{name}: {a.name} vs {b.name} ({n} lines)")
    return out


def test_no_two_variants_of_a_statement_differ_by_a_few_lines() -> None:
    small = small_pairs(cypher.cypher_root())
    assert not small, (
        f"{len(small)} statement(s) written twice with {MAX_SMALL_DIFF} or fewer lines between the copies: write one "
        f"<name>.cypher and name the differences as fragments (cypher/fragments/<dialect>.cypher):\n" + "\n".join(small)
    )


def test_the_rule_catches_a_copy(tmp_path: Path) -> None:
    (tmp_path / "g").mkdir()
    body = "MATCH (c:Chunk)\nWHERE c.id IN $ids\nRETURN c.id AS id, {} AS score\n"
    (tmp_path / "g/s.neo4j.cypher").write_text("// a comment\n" + body.format("vector.similarity.cosine(c.e, $v)"))
    (tmp_path / "g/s.falkordb.cypher").write_text(body.format("vec.cosineDistance(c.e, vecf32($v))"))
    (tmp_path / "g/t.cypher").write_text("MATCH (n) RETURN n\n")
    (tmp_path / "g/t.falkordb.cypher").write_text("CALL db.x() YIELD a\nWITH a\nWHERE a > 1\nRETURN a\n")
    assert small_pairs(tmp_path) == ["g/s: s.neo4j.cypher vs s.falkordb.cypher (2 lines)"]  # t: 5 lines, kept


def test_every_fragment_used_is_defined_for_every_store() -> None:
    missing = []
    for dialect in cypher.DIALECTS:
        defined = cypher.fragments(dialect)
        for name, path in cypher.statements(dialect).items():
            for fragment, args in cypher.placeholders(cypher.strip_comments(path.read_text(encoding="utf-8"))):
                if fragment not in defined:
                    missing.append(f"{dialect}: {name} names {{{{{fragment}}}}}, not defined")
                elif len(args) != len(defined[fragment].params):
                    missing.append(
                        f"{dialect}: {name} gives {{{{{fragment}}}}} {len(args)} argument(s), "
                        f"it takes {defined[fragment].params}"
                    )
            assert "{{" not in cypher.load(name, dialect), name  # what the store is sent holds no fragment
    assert not missing, "\n".join(missing)


def test_every_store_defines_the_same_fragments_and_each_is_used() -> None:
    by_dialect = {d: {f.name: f.params for f in cypher.fragments(d).values()} for d in cypher.DIALECTS}
    first, *others = by_dialect
    for dialect in others:
        assert by_dialect[dialect] == by_dialect[first], f"{dialect} and {first} define other fragments or parameters"
    used = {
        fragment
        for dialect in cypher.DIALECTS
        for path in cypher.statements(dialect).values()
        for fragment, _ in cypher.placeholders(cypher.strip_comments(path.read_text(encoding="utf-8")))
    }
    assert used == set(by_dialect[first]), f"defined but never used: {sorted(set(by_dialect[first]) - used)}"


def test_browse_statements_hold_no_fragment() -> None:
    """kbgraph.browse shows a browse/ statement's file as written (with its comments), so it fills in nothing."""
    for dialect in cypher.DIALECTS:
        for name, path in cypher.statements(dialect).items():
            if name.startswith("browse/"):
                assert not cypher.placeholders(path.read_text(encoding="utf-8")), name


# --- the syntax, on a tree of the test's own ---------------------------------------------------------------------


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A cypher root with fragments for neo4j, falkordb and 'child' (extends neo4j), and a few statements."""
    (tmp_path / "g").mkdir()
    (tmp_path / "fragments").mkdir()
    (tmp_path / "fragments/neo4j.cypher").write_text(
        "// comment {{not: a, header}} =\n"
        "{{vector: list}} = {{list}}\n"
        "{{score: a, b}} = vector.similarity.cosine({{a}}, {{b}})\n"
        "\n"
        "{{index: name, label}} =\n"
        "CREATE INDEX {{name}} IF NOT EXISTS\n"
        "// a comment inside a body\n"
        "FOR (n:{{label}}) ON (n.id)\n"
        "{{order}} = DESC\n"
    )
    (tmp_path / "fragments/falkordb.cypher").write_text(
        "{{vector: list}} = vecf32({{list}})\n"
        "{{score: a, b}} = vec.cosineDistance({{a}}, vecf32({{b}}))\n"
        "{{index: name, label}} = CREATE INDEX FOR (n:{{label}}) ON (n.id)\n"
        "{{order}} = ASC\n"
    )
    (tmp_path / "fragments/child.cypher").write_text("{{order}} =\n")  # an empty fragment
    for name, text in {
        "g/set": "// {{a comment}} is no fragment\nUNWIND $rows AS row\nSET n.embedding = {{vector:row.embedding}};",
        "g/score": "RETURN {{ score : c.embedding, coalesce($a, [1.0, 2.0]) }} AS s ORDER BY s {{order}}",
        "g/map": "MATCH (n {id: $id}) SET n += {e: {{vector: $v}}}",
        "g/index": "{{index: chunk_id, Chunk}}",
        "g/unknown": "RETURN {{nope}}",
        "g/arity": "RETURN {{vector: $a, $b}}",
        "g/stray": "RETURN '{{ x y }}'",
    }.items():
        (tmp_path / f"{name}.cypher").write_text(text)
    monkeypatch.setattr(cypher, "cypher_root", lambda: tmp_path)
    monkeypatch.setitem(cypher.DIALECTS, "child", ("child", "neo4j"))
    cypher.load.cache_clear()
    yield tmp_path
    cypher.load.cache_clear()


def test_fragments_are_filled_in_per_dialect(root: Path) -> None:
    assert cypher.load("g/set", "neo4j") == "UNWIND $rows AS row\nSET n.embedding = row.embedding"
    assert cypher.load("g/set", "falkordb") == "UNWIND $rows AS row\nSET n.embedding = vecf32(row.embedding)"
    assert cypher.load("g/score", "neo4j") == (
        "RETURN vector.similarity.cosine(c.embedding, coalesce($a, [1.0, 2.0])) AS s ORDER BY s DESC"
    )
    assert cypher.load("g/score", "falkordb") == (
        "RETURN vec.cosineDistance(c.embedding, vecf32(coalesce($a, [1.0, 2.0]))) AS s ORDER BY s ASC"
    )
    assert cypher.load("g/map", "falkordb") == "MATCH (n {id: $id}) SET n += {e: vecf32($v)}"
    assert cypher.load("g/index", "neo4j") == "CREATE INDEX chunk_id IF NOT EXISTS\nFOR (n:Chunk) ON (n.id)"
    assert cypher.load("g/index", "falkordb") == "CREATE INDEX FOR (n:Chunk) ON (n.id)"
    assert "g/set" in cypher.statements("neo4j")
    assert not any(name.startswith("fragments/") for name in cypher.names())  # fragment files are no statements


def test_a_dialect_reads_the_fragments_of_the_dialects_it_extends(root: Path) -> None:
    assert cypher.load("g/score", "child").endswith("ORDER BY s")  # its own (empty) {{order}}
    assert cypher.load("g/set", "child") == cypher.load("g/set", "neo4j")  # neo4j's {{vector}}
    assert set(cypher.fragments("child")) == set(cypher.fragments("neo4j"))


def test_a_fragment_no_store_defines_or_a_wrong_call_is_an_error(root: Path) -> None:
    with pytest.raises(CypherNotFound, match=r"no fragment \{\{nope\}\} for dialect neo4j"):
        cypher.load("g/unknown", "neo4j")
    with pytest.raises(ValueError, match=r"takes 1 argument\(s\) \(list\).*got 2"):
        cypher.load("g/arity", "falkordb")
    with pytest.raises(ValueError, match="that is no fragment"):
        cypher.load("g/stray", "neo4j")


@pytest.mark.parametrize(
    ("text", "args"),
    [
        (None, ()),
        ("$embedding", ("$embedding",)),
        (" a ,b ", ("a", "b")),
        ("f(a, b), [1, 2], 'x, y'", ("f(a, b)", "[1, 2]", "'x, y'")),
        ("'it\\'s, here', `odd, name`", ("'it\\'s, here'", "`odd, name`")),
        ("CASE WHEN 'Chunk' IN $l THEN $s ELSE $e END", ("CASE WHEN 'Chunk' IN $l THEN $s ELSE $e END",)),
    ],
)
def test_arguments_split_at_the_commas_outside_brackets_and_quotes(text: str | None, args: tuple[str, ...]) -> None:
    assert cypher.split_args(text) == args


@pytest.mark.parametrize("text", ["a,", "f(a", "a)", "[a, (b]", "'open"])
def test_malformed_arguments_are_an_error(text: str) -> None:
    with pytest.raises(ValueError):
        cypher.split_args(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("RETURN 1\n{{a}} = 1\n", "before the first"),
        ("{{a}} = 1\n{{a}} = 2\n", "defined twice"),
        ("{{a: x, x}} = {{x}}\n", "parameter twice"),
        ("{{a: x}} = f({{y}})\n", "names \\['y'\\]"),
        ("{{a}} = {{b: 1}}\n", "names a fragment"),
    ],
)
def test_malformed_fragment_files_are_an_error(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cypher.parse_fragments(text, tmp_path / "x.cypher")
