"""Lists the ``# fmt: skip`` markers that change nothing (pyproject.toml [tool.ruff] keeps only markers on a
statement that ``ruff format`` would rewrite). For each marker of each tracked .py file: the file is formatted
with and without that one marker; the marker changes nothing when the two outputs differ only by the marker.
Prints ``path:line`` of each such marker and exits 1 if there is one. Usage: python scripts/fmt_skip_markers.py
[RUFF] (default .venv/bin/ruff); ~600 ruff runs, about half a minute."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

MARK = re.compile(r"\s*#\s*fmt:\s*skip\s*$")


def formatted(ruff: str, text: str, name: str) -> str:
    out = subprocess.run([ruff, "format", "--stdin-filename", name, "-"], input=text, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"ruff format failed on {name}: {out.stderr.strip()}")
    return out.stdout


def idle_markers(ruff: str, path: str) -> list[int]:
    """1-based lines of the markers of ``path`` that change nothing."""
    src = Path(path).read_text()
    lines = src.splitlines(keepends=True)
    marked = [i for i, line in enumerate(lines) if MARK.search(line.rstrip("\n"))]
    if not marked:
        return []
    with_all = formatted(ruff, src, path)
    idle = []
    for i in marked:
        line = lines[i]
        bare = MARK.sub("", line.rstrip("\n")) + ("\n" if line.endswith("\n") else "")
        without = formatted(ruff, "".join(lines[:i] + [bare] + lines[i + 1 :]), path)
        # a skipped statement is kept verbatim, so the marker's line appears as written in the formatted file
        if with_all.count(line) == 1 and without == with_all.replace(line, bare):
            idle.append(i + 1)
    return idle


def main() -> int:
    ruff = sys.argv[1] if len(sys.argv) > 1 else ".venv/bin/ruff"
    files = subprocess.run(["git", "ls-files", "*.py"], capture_output=True, text=True, check=True).stdout.split()
    found = [f"{f}:{n}" for f in files for n in idle_markers(ruff, f)]
    print("\n".join(found) or "every # fmt: skip marker keeps a statement ruff format would rewrite")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
