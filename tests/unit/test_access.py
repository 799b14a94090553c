"""Scoped API keys of `kbgraph serve` (kbgraph.serve.access, used read-only here): a key's scope check and
the keys file, TOML or JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbgraph.errors import ConfigError
from kbgraph.serve.access import MASTER, Forbidden, KeyScope, inside, key_hash, load_keys

DIGEST = key_hash("kbg_secret")


def test_a_key_may_use_its_knowledge_bases_with_its_rights() -> None:
    key = KeyScope(name="team-a", kbs=("team-a", "team-a-*"), rights=frozenset({"read"}))
    key.check("team-a", "read")
    key.check("team-a-docs", "read")
    with pytest.raises(Forbidden, match="may not use knowledge base 'team-b'"):
        key.check("team-b", "read")
    with pytest.raises(Forbidden, match="no 'write' right"):
        key.check("team-a", "write")
    MASTER.check("anything", "write")


def test_globs_match_case_sensitively() -> None:
    key = KeyScope(name="k", kbs=("Docs-?",))
    assert key.allows_kb("Docs-1") and not key.allows_kb("docs-1") and not key.allows_kb("Docs-12")


def test_load_keys_from_toml_and_json(tmp_path: Path) -> None:
    toml = tmp_path / "keys.toml"
    toml.write_text(
        f'[[keys]]\nname = "a"\nsha256 = "{DIGEST.upper()}"\nkbs = "kb1"\nrights = ["read", "WRITE"]\n'
        f'[[keys]]\nname = "b"\nsha256 = "{DIGEST}"\nkbs = ["*"]\nrights = ["read"]\n'
        'revoked = "2026-11-27T09:00:00Z"\n'
    )
    a, b = load_keys(toml)
    assert a.kbs == ("kb1",) and a.rights == {"read", "write"} and a.sha256 == DIGEST and a.revoked is None
    assert b.revoked == "2026-11-27T09:00:00Z"
    js = tmp_path / "keys.json"
    js.write_text(json.dumps({"keys": [{"name": "c", "sha256": DIGEST, "kbs": ["x"], "rights": ["write"]}]}))
    assert load_keys(js) == [KeyScope(name="c", kbs=("x",), rights=frozenset({"write"}), sha256=DIGEST)]
    assert load_keys(tmp_path / "missing.toml") == []


@pytest.mark.parametrize(
    "entry, message",
    [
        ('name = "a"\nsha256 = "abc"\nrights = ["read"]', "not 64 hex digits"),
        (f'name = "a"\nsha256 = "{DIGEST}"\nrights = ["admin"]', "unknown right 'admin'"),
        (f'name = "a"\nsha256 = "{DIGEST}"\nrights = []', "at least one right"),
        (f'sha256 = "{DIGEST}"\nrights = ["read"]', "malformed"),
    ],
)
def test_a_malformed_keys_file_names_the_file_and_the_fix(tmp_path: Path, entry: str, message: str) -> None:
    path = tmp_path / "keys.toml"
    path.write_text(f"[[keys]]\n{entry}\n")
    with pytest.raises(ConfigError, match=message) as info:
        load_keys(path)
    assert str(path) in str(info.value) and "kbgraph serve keys" in str(info.value)


def test_a_path_is_inside_a_root_only_below_it(tmp_path: Path) -> None:
    root = tmp_path / "root"
    assert inside(root / "a" / "b.txt", [root]) and inside(root, [root])
    assert not inside(tmp_path / "rootless" / "x", [root]) and not inside(tmp_path, [root])
