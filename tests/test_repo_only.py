"""The suite and the benchmarks read only the repository: a user's clone has nothing beside it.

Two checks: the sources of tests/ and benchmarks/ name no path outside the repo (a sibling data folder, an absolute
machine path, an environment variable standing in for one), and at run time conftest's audit hook records
every file the test process opens in a sibling of the repo (the session then fails).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import ModuleType

import pytest


def _conftest() -> ModuleType:
    """tests/conftest.py as pytest imported it (its module name depends on pytest's import mode)."""
    here = Path(__file__).with_name("conftest.py")
    for mod in list(sys.modules.values()):
        if getattr(mod, "__file__", None) and Path(mod.__file__) == here:  # type: ignore[arg-type]
            return mod
    raise RuntimeError("tests/conftest.py is not loaded")


conftest = _conftest()
REPO = conftest.REPO
#: How a path outside the repo gets written: a parent of the repo, a machine path, the old variable.
_OLD = "sha" + "red"  # the old sibling data folder's name, assembled so this file does not name it
FORBIDDEN = [
    (re.compile(r"parents\[(?:[2-9])\]"), "a parent of the repository (parents[2+])"),
    (re.compile(r"""["']\.\./"""), "a relative path out of the repository ('../')"),
    (re.compile(r"""["']/(?:work|home|root|Users|mnt|srv)/"""), "an absolute machine path"),
    (re.compile("KBGRAPH_" + _OLD.upper()), "an environment variable standing in for outside data"),
    (re.compile(rf"""/\s*["']{_OLD}["']|["']{_OLD}/|["']{_OLD}["']\s*/"""), "the old sibling data folder"),
]


def _sources() -> list[Path]:
    files = sorted((REPO / "tests").rglob("*.py")) + sorted((REPO / "benchmarks").rglob("*.py"))
    return [f for f in files if "node_modules" not in f.parts and f.name != Path(__file__).name]


def offences(text: str) -> list[str]:
    out = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        for pattern, why in FORBIDDEN:
            if pattern.search(line):
                out.append(f"line {lineno}: {why}: {line.strip()[:100]}")
    return out


def test_the_scanner_catches_each_way_out() -> None:
    """The scanner is able to fail: each pattern catches a line that once read the sibling data folder. The
    lines are assembled here so that this file itself names no path outside the repo."""
    up, folder, machine = "..", _OLD, "/" + "work"
    var = "KBGRAPH_" + folder.upper()
    bad = [
        f'DATA = Path(__file__).resolve().parents[2] / "{folder}" / "data"',
        f'base = Path("{up}/{folder}/data/docs")',
        f'DATA = Path(os.environ.get("{var}", "{machine}/{folder}"))',
    ]
    for line in bad:
        assert offences(line), line
    assert not offences('EXAMPLES = Path(__file__).resolve().parents[1] / "examples"')


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(REPO)))
def test_sources_name_no_path_outside_the_repo(path: Path) -> None:
    found = offences(path.read_text(encoding="utf-8"))
    assert not found, f"{path.relative_to(REPO)} reads outside the repository:\n" + "\n".join(found)


def test_the_runtime_guard_records_a_read_beside_the_repo(tmp_path: Path) -> None:
    """conftest's audit hook sees an open() of a sibling of the repo (the file need not exist)."""
    probe = REPO.parent / "kbgraph-sibling" / "x.kbgraph-guard-probe"
    assert conftest.outside_repo(probe)
    assert not conftest.outside_repo(REPO / "examples" / "docs")
    assert not conftest.outside_repo(REPO.parent / ".kbgraph" / "neo4j-test")
    assert not conftest.outside_repo(tmp_path / "x")
    before = len(conftest.OUTSIDE_READS)
    with pytest.raises(OSError):
        open(probe, encoding="utf-8")  # noqa: SIM115 - must fail: nothing is there
    assert conftest.OUTSIDE_READS[before:] == [str(probe)]


def test_examples_are_in_the_repo(examples_dir: Path) -> None:
    assert (examples_dir / "docs" / "SOURCES.md").is_file()
    for prefix in ("2wikimultihopqa/dev500", "musique/hipporag_train100", "hotpotqa/hipporag_train100"):
        for part in ("questions", "corpus"):
            assert (examples_dir / "multihop" / f"{prefix}.{part}.jsonl").stat().st_size > 10_000
