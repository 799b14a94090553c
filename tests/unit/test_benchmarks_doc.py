"""docs/benchmarks.md is a reference, not a log (issue 59): today's figure of each measure in at most ``MAX_LINES``
lines, the history in benchmarks/HISTORY.md. Every reference into either file must name a section that exists there:

- a markdown link whose target resolves to one of them with a ``#fragment`` (``[x](benchmarks.md#a)`` in docs/,
  ``[x](docs/benchmarks.md#a)`` in the README, ``[x](#a)`` inside the file itself);
- the file's path from the repository root with a fragment, anywhere in a text file (code comments, docstrings,
  settings' descriptions), e.g. ``docs/benchmarks.md`` + ``#`` + an anchor;
- the path followed by a quoted section name (``docs/benchmarks.md, "Cold start: ..."``): a heading must begin so.

Anchors are GitHub's: the heading's text lower-cased, its punctuation dropped (letters, digits, ``_`` and ``-``
kept), spaces made hyphens, ``-1``, ``-2`` ... after a repeated one."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.unit.conftest import REPO

MAX_LINES = 600
DOC = Path("docs/benchmarks.md")
HISTORY = Path("benchmarks/HISTORY.md")
#: Text files that may hold a reference; folders never searched (dot-folders are skipped too: .git, .venv, ...).
SUFFIXES = {".md", ".py", ".toml", ".txt", ".cfg", ".ini", ".yml", ".yaml", ".sh", ".rst"}
SKIP_DIRS = {"node_modules", "__pycache__", "site-packages", "build", "dist"}

HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
FENCE = re.compile(r"^ {0,3}(```|~~~)")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")
LINK = re.compile(r"\]\(\s*<?([^()\s<>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
PATHS = r"(docs/benchmarks\.md|benchmarks/HISTORY\.md)"
PATH_REF = re.compile(r"(?<![\w./-])" + PATHS + r"#([\w%-]+)")
QUOTED = r"(?:\"([^\"]{2,120})\"|“([^”]{2,120})”|'([^']{2,120})')"  # a section's name in quotes
QUOTED_REF = re.compile(r"(?<![\w./-])" + PATHS + r"(?:#[\w%-]*)?(?:,\s*(?:#:?\s*)?|[ \t]+)" + QUOTED)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading's text (before de-duplication)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link or image: its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def plain(heading: str) -> str:
    """A heading's text as it reads (no code ticks, emphasis or link targets), lower-cased, for quoted names."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return re.sub(r"\s+", " ", re.sub(r"[`*_]", "", text)).strip().lower()


def sections(path: Path) -> tuple[set[str], list[str]]:
    """The anchors of a markdown file and its headings' texts (headings inside fenced code are not headings)."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    texts: list[str] = []
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        anchors.update(HTML_ANCHOR.findall(line))
        found = None if fenced else HEADING.match(line)
        if found:
            base = anchor(found.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            anchors.add(base if count == 0 else f"{base}-{count}")
            texts.append(plain(found.group(1)))
    return anchors, texts


def text_files(root: Path) -> list[Path]:
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        found.extend(Path(folder) / name for name in sorted(files) if Path(name).suffix in SUFFIXES)
    return found


def broken_references(root: Path, skip: frozenset[Path] = frozenset()) -> list[str]:
    """Every reference under ``root`` into docs/benchmarks.md or benchmarks/HISTORY.md that names no section there,
    as ``file:line: what``."""
    known = {rel: sections(root / rel) for rel in (DOC, HISTORY) if (root / rel).is_file()}
    by_path = {(root / rel).resolve(): rel for rel in (DOC, HISTORY)}
    broken: list[str] = []
    for path in text_files(root):
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.resolve() in skip or not ("benchmarks.md" in text or "HISTORY.md" in text or "](#" in text):
            continue
        refs: list[tuple[int, Path, str, str]] = []  # (offset, file referred to, fragment, the reference as written)
        if path.suffix == ".md":
            for link in LINK.finditer(text):
                target, _, fragment = link.group(1).partition("#")
                if fragment and "://" not in target:
                    rel = by_path.get((path.parent / target).resolve() if target else path.resolve())
                    if rel is not None:
                        refs.append((link.start(), rel, fragment, link.group(0)))
        refs += [(ref.start(), Path(ref.group(1)), ref.group(2), ref.group(0)) for ref in PATH_REF.finditer(text)]
        where = path.relative_to(root)
        for at, rel, fragment, shown in refs:
            line = text.count("\n", 0, at) + 1
            if rel not in known:
                broken.append(f"{where}:{line}: {shown}: {rel} does not exist")
            elif unquote(fragment) not in known[rel][0]:
                broken.append(f"{where}:{line}: {shown}: no such section in {rel}")
        for ref in QUOTED_REF.finditer(text):
            rel = Path(ref.group(1))
            quoted = next(group for group in ref.groups()[1:] if group is not None)
            name = plain(re.sub(r"\s*\n\s*(?:#:?\s*)?", " ", quoted).strip().rstrip(".…"))
            if rel in known and not any(heading.startswith(name) for heading in known[rel][1]):
                line = text.count("\n", 0, ref.start()) + 1
                broken.append(f"{where}:{line}: {rel} names no section {name!r}")
    return broken


def test_the_reference_is_short() -> None:
    lines = len((REPO / DOC).read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, (
        f"{DOC} has {lines} lines (at most {MAX_LINES}): keep today's figure of each measure there and move the "
        f"figures it replaces to {HISTORY}"
    )


def test_every_reference_names_a_section_that_exists() -> None:
    broken = broken_references(REPO, skip=frozenset({Path(__file__).resolve()}))
    assert not broken, "references to missing sections (GitHub anchors of the headings):\n" + "\n".join(broken)


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("Learned ranker (`benchmarks/ranker_loso.py`)", "learned-ranker-benchmarksranker_losopy"),
        ("How fast does it ingest?", "how-fast-does-it-ingest"),
        ("The cost curve: 1,000 to 10,000 passages", "the-cost-curve-1000-to-10000-passages"),
        ("Cold start: a `kbgraph ask` process", "cold-start-a-kbgraph-ask-process"),
        ("Layer vectors: `vector_layers`", "layer-vectors-vector_layers"),
        ("Past one process, measured (`benchmarks/scale_out.py`)", "past-one-process-measured-benchmarksscale_outpy"),
    ],
)
def test_anchors_are_githubs(heading: str, expected: str) -> None:
    assert anchor(heading) == expected


def test_a_missing_section_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "docs" / "benchmarks.md").write_text("# B\n\n## How big?\n\n## How big?\n", encoding="utf-8")
    (tmp_path / "benchmarks" / "HISTORY.md").write_text("# Log\n\n```\n## not a heading\n```\n", encoding="utf-8")
    doc = "docs/benchmarks" + ".md"
    (tmp_path / "docs" / "a.md").write_text(
        "[ok](benchmarks.md#how-big) [ok](benchmarks.md#how-big-1) [bad](benchmarks.md#how-small)\n"
        "[bad](../benchmarks/HISTORY.md#not-a-heading)\n",
        encoding="utf-8",
    )
    (tmp_path / "m.py").write_text(
        f'# ({doc}#how-big) ({doc}#gone)\n# ({doc}, "How big?") ({doc}, "Nope")\n', encoding="utf-8"
    )
    broken = broken_references(tmp_path)
    assert sorted(b.split(": ")[1] for b in broken) == sorted(
        [
            "](benchmarks.md#how-small)",
            "](../benchmarks/HISTORY.md#not-a-heading)",
            f"{doc}#gone",
            f"{doc} names no section 'nope'",
        ]
    ), broken
