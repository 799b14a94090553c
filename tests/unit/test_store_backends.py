"""The store seam's registry and capabilities (issue 40): a backend is picked by URI scheme in one table
(``kbgraph.store.SCHEMES``), callers ask its class (not connected, no driver imported), and Cypher statements fall
back along the dialect's chain (``kbgraph.cypher.DIALECTS``) to the plain file."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbgraph import cypher
from kbgraph.errors import ConfigError, CypherNotFound
from kbgraph.settings import Settings
from kbgraph.store import SCHEMES, GraphStore, backend_name, store_class


@pytest.mark.parametrize(
    ("uri", "backend", "per_kb"),
    [
        (None, "falkordb", False),
        ("falkor://h:1", "falkordb", False),
        ("redis://h:1", "falkordb", False),
        ("bolt://h:7687", "neo4j", True),
        ("neo4j://h:7687", "neo4j", True),
        ("neo4j+s://x.io", "neo4j", True),
        ("bolt+ssc://h:1", "neo4j", True),
    ],
)
def test_scheme_picks_the_store_class(uri: str | None, backend: str, per_kb: bool) -> None:
    before = set(sys.modules)  # (in the whole suite other tests have imported the drivers already)
    s = Settings(uri=uri)
    cls = store_class(s)
    assert issubclass(cls, GraphStore) and (cls.backend, backend_name(s), cls.database_per_kb) == (
        backend,
        backend,
        per_kb,
    )
    assert cls.dialect in cypher.DIALECTS and cls.display_name
    loaded = set(sys.modules) - before
    assert not {"redis", "falkordb", "neo4j"} & loaded  # nothing connected


@pytest.mark.parametrize("uri", ["http://h:1", "localhost:7687", "mysql://h/db"])
def test_unknown_scheme_is_a_config_error(uri: str) -> None:
    with pytest.raises(ConfigError, match="unsupported store URI"):
        store_class(Settings(uri=uri))


def test_every_scheme_names_a_store() -> None:
    assert "" in SCHEMES  # no URI: the embedded store
    for cls in SCHEMES.values():
        assert issubclass(cls, GraphStore)


def test_location_and_browser_url_without_connecting(tmp_path: Path) -> None:
    embedded = Settings(home=tmp_path, name="kb1")
    assert store_class(embedded).kb_location(embedded) == str((tmp_path / "kb1").resolve())
    assert store_class(embedded).browser_url(embedded) is None
    neo = Settings(uri="bolt://127.0.0.1:7687", neo4j_database="kb2", neo4j_http_port=7475)
    assert store_class(neo).kb_location(neo) == "bolt://127.0.0.1:7687 (database kb2)"
    assert store_class(neo).browser_url(neo) == "http://127.0.0.1:7475/browser/"
    other = neo.updated({"uri": "neo4j://db.example:7687"})
    assert store_class(other).browser_url(other) == "http://db.example:7474/browser/"
    aura = neo.updated({"uri": "neo4j+s://x.databases.neo4j.io"})
    assert store_class(aura).browser_url(aura) == "https://browser.neo4j.io/"


@pytest.fixture
def statements_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A cypher root of three statements and a dialect 'child' that extends 'neo4j'."""
    (tmp_path / "g").mkdir()
    for name, text in {
        "g/plain.cypher": "RETURN 'plain'",
        "g/plain.neo4j.cypher": "RETURN 'neo4j'",
        "g/common.cypher": "RETURN 'common'",
        "g/own.child.cypher": "RETURN 'child'",
        "g/only.falkordb.cypher": "RETURN 'falkordb'",
    }.items():
        (tmp_path / name).write_text(f"// comment\n{text};\n")
    monkeypatch.setattr(cypher, "cypher_root", lambda: tmp_path)
    monkeypatch.setitem(cypher.DIALECTS, "child", ("child", "neo4j"))
    cypher.load.cache_clear()
    yield tmp_path
    cypher.load.cache_clear()


def test_statements_fall_back_along_the_dialect_chain(statements_root: Path) -> None:
    assert cypher.chain("child") == (".child", ".neo4j", "")
    assert cypher.load("g/own", "child") == "RETURN 'child'"  # its own variant
    assert cypher.load("g/plain", "child") == "RETURN 'neo4j'"  # the parent's
    assert cypher.load("g/common", "child") == "RETURN 'common'"  # the plain file
    assert cypher.load("g/plain", "falkordb") == "RETURN 'plain'"
    with pytest.raises(CypherNotFound):
        cypher.load("g/only", "child")  # another dialect's variant is never read
    assert set(cypher.statements("child")) == {"g/own", "g/plain", "g/common"}
    assert set(cypher.statements("falkordb")) == {"g/plain", "g/common", "g/only"}
    with pytest.raises(ValueError, match="unknown Cypher dialect"):
        cypher.load("g/plain", "nope")


def test_every_dialect_serves_every_plain_statement() -> None:
    plain = {n for n, p in cypher.statements("neo4j").items() if p.name.count(".") == 1}
    for dialect in cypher.DIALECTS:
        assert plain <= set(cypher.statements(dialect))
