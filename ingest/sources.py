"""Where ingestion finds its documents (kbgraph.ingest.pipeline; PIKE-RAG §5.1, the files of a knowledge base).

``discover`` walks the paths given into the files to parse (and those to skip, with the reason);
``uri_to_path`` and ``file_of`` turn a document's ``file://`` URI (a passage's ``#id`` included) back into
the path the report names.

Exclusions (``Exclusions``), in gitignore syntax through ``pathspec``: the default rules (``DEFAULT_EXCLUDES``:
Office owner files, ``.DS_Store``, ``Thumbs.db``, editor backups), the ``--exclude`` patterns of the run
(matched below each path given), and a ``.kbgraphignore`` file in any folder walked (its patterns relative
to that folder, for everything below it). As in git, the last rule that matches decides and ``!pattern``
takes a file back. An excluded file or folder is reported as skipped with the rule that excluded it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kbgraph.ingest.metadata import SIDECAR_SUFFIX, is_sidecar
from kbgraph.ingest.report import FileError, FileOutcome
from kbgraph.ingest.parse import skip_reason

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

    from kbgraph.ingest.ocr import OcrOptions

#: The file in a folder whose lines (gitignore syntax) exclude files below it.
IGNORE_FILE = ".kbgraphignore"
#: Rules every walk applies first: pattern -> what such a file is.
DEFAULT_EXCLUDES: dict[str, str] = {
    "~$*": "Office owner file (its document is open in Office)",
    ".DS_Store": "macOS folder settings",
    "Thumbs.db": "Windows thumbnail cache",
    "*~": "editor backup",
}


@dataclass(frozen=True)
class _Rules:
    """One group of rules: its patterns compiled by pathspec (``GitIgnoreSpec``), relative to ``base``, and
    where each line comes from (``origins``: "the default rules (…)", "--exclude", "<folder>/.kbgraphignore
    line 3")."""

    spec: GitIgnoreSpec
    base: Path
    lines: tuple[str, ...]
    origins: tuple[str, ...]


class Exclusions:
    """The exclusion rules of one walk (see the module docstring). ``exclude``: the run's ``--exclude``
    patterns. Raises ValueError naming a bad pattern."""

    def __init__(self, exclude: Iterable[str] = ()):
        self.exclude = [p.strip() for p in exclude if p and p.strip()]
        for p in self.exclude:
            try:
                _spec([p])
            except Exception as exc:  # pathspec's pattern error: a usage error
                raise ValueError(f"bad --exclude pattern {p!r}: {exc}") from exc

    def root_rules(self, root: Path, *, defaults: bool = True) -> list[_Rules]:
        """The default rules (unless not ``defaults``) and the ``--exclude`` patterns, relative to ``root``."""
        lines = [(p, f"the default rules ({what})") for p, what in DEFAULT_EXCLUDES.items()] if defaults else []
        lines += [(p, "--exclude") for p in self.exclude]
        return [_rules(root, lines)] if lines else []

    def folder_rules(self, folder: Path, errors: list[FileError]) -> list[_Rules]:
        """The rules of ``folder``'s ``.kbgraphignore`` (none when it has none; a bad file is an error of the run
        and excludes nothing)."""
        path = folder / IGNORE_FILE
        if not path.is_file():
            return []
        try:
            text = path.read_text(encoding="utf-8-sig", errors="replace")
        except OSError as exc:
            errors.append(FileError(path=str(path), error=f"cannot read {IGNORE_FILE}: {exc.strerror}"))
            return []
        lines = [(line.rstrip("\r"), f"{path} line {n}") for n, line in enumerate(text.split("\n"), start=1)]
        try:
            return [_rules(folder, lines)]
        except Exception as exc:
            errors.append(FileError(path=str(path), error=f"bad pattern, nothing excluded by it: {exc}"))
            return []

    @staticmethod
    def match(rules: list[_Rules], entry: Path, is_dir: bool) -> str | None:
        """Why ``entry`` is excluded by ``rules`` ("excluded by <origin>: <pattern>"), or None. Within a group
        and across groups (outer folders first) the last rule that matches decides; a negated one
        (``!pattern``) takes the entry back."""
        verdict: str | None = None
        for group in rules:
            try:
                rel = entry.relative_to(group.base).as_posix()
            except ValueError:
                continue
            result = group.spec.check_file(rel + ("/" if is_dir else ""))
            i = result.index
            if result.include is None or i is None:  # (no pattern matched: both None)
                continue
            verdict = f"excluded by {group.origins[i]}: {group.lines[i].strip()}" if result.include else None
        return verdict


def _spec(lines: list[str]) -> GitIgnoreSpec:
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _rules(base: Path, lines: list[tuple[str, str]]) -> _Rules:
    return _Rules(
        spec=_spec([t for t, _ in lines]),
        base=base,
        lines=tuple(t for t, _ in lines),
        origins=tuple(o for _, o in lines),
    )


def discover(
    paths: Iterable[str | Path],
    errors: list[FileError],
    skipped: list[FileOutcome] | None = None,
    *,
    exclude: Iterable[str] = (),
    ocr: OcrOptions | None = None,
    within: Iterable[Path] | None = None,
    relative: dict[Path, str] | None = None,
) -> list[Path]:
    """Every file under ``paths`` (directories walked, symlinks followed once, loops reported in ``errors``),
    resolved and de-duplicated. Returned: the files to parse. A file found in a directory that an exclusion
    rule leaves out (``Exclusions``: the defaults, ``exclude``, ``.kbgraphignore``) or that no parser reads
    (``parse.skip_reason``: an image without OCR, an archive, an unknown type, legacy Office without
    LibreOffice, a broken link) is not returned but appended to ``skipped`` as a ``skipped`` outcome with the
    reason and fix; an excluded folder is one such outcome. A file named explicitly is always returned (tried),
    so it fails with that reason instead, unless an ``exclude`` pattern matches its name. Other hidden files and
    directories (name starting with '.', e.g. ``.git``) are ignored silently: they are tool state, not
    documents. ``ocr``: the run's ``kbgraph.ingest.ocr.OcrOptions`` (whether images are read; default
    ``auto``). ``within``: resolved folders that fence the run (``kbgraph serve``'s ``serve_ingest_roots``): a
    path given or found whose resolved target (symbolic links, ``..``) is outside all of them is skipped
    unread, with the reason. ``relative``, when given, gets {resolved file: its posix path relative to the path
    given that found it (the file name for a file given by itself)}: the metadata's ``folder`` and ``path``
    (kbgraph.ingest.metadata). A metadata sidecar (``<file>.meta.json``) found in a folder is not a document: it
    is reported skipped, and read with its file."""
    finder = _Discovery(
        errors, skipped, Exclusions(exclude), ocr, [Path(w) for w in within] if within is not None else None
    )
    for raw in paths:
        finder.given(Path(raw).expanduser())
    unique: dict[Path, str] = {}
    for f, rel in finder.found:
        unique.setdefault(f.resolve(), rel)
    if relative is not None:
        relative.update(unique)
    return list(unique)


class _Discovery:
    """One ``discover``: the files ``found`` (with their path relative to the path given), in order; what it
    skips goes to ``skipped`` (when given), what fails to ``errors``; ``fence``: the resolved folders of
    ``within`` (None: no fence)."""

    def __init__(
        self,
        errors: list[FileError],
        skipped: list[FileOutcome] | None,
        exclusions: Exclusions,
        ocr: OcrOptions | None,
        fence: list[Path] | None,
    ):
        self.errors, self.skipped, self.exclusions, self.ocr, self.fence = errors, skipped, exclusions, ocr, fence
        self.found: list[tuple[Path, str]] = []
        self.seen_dirs: set[tuple[int, int]] = set()

    def given(self, path: Path) -> None:
        """A path given to the run: a folder walked, a file tried (unless an ``exclude`` pattern matches it)."""
        exclusions = self.exclusions
        if self.outside(path):
            return
        if path.is_dir():
            self.walk(path, exclusions.root_rules(path), path)
        elif path.is_file():
            if excluded := exclusions.match(exclusions.root_rules(path.parent, defaults=False), path, False):
                self.skip(path, excluded)
            else:
                self.found.append((path, path.name))
        else:
            self.errors.append(FileError(path=str(path), error="no such file or directory"))

    def skip(self, entry: Path, reason: str) -> None:
        if self.skipped is not None:
            path = entry.resolve() if entry.exists() else entry.parent.resolve() / entry.name  # (a broken link)
            self.skipped.append(FileOutcome(path=str(path), outcome="skipped", reason=reason))

    def outside(self, entry: Path) -> bool:
        """True (and reported skipped) when ``entry`` leads outside the ``within`` fence."""
        if self.fence is None:
            return False
        target = entry.resolve()
        if any(target == root or target.is_relative_to(root) for root in self.fence):
            return False
        if self.skipped is not None:
            self.skipped.append(
                FileOutcome(
                    path=str(entry),
                    outcome="skipped",
                    reason=(f"outside the allowed folders (serve_ingest_roots): it leads to {target}, not read"),
                )
            )
        return True

    def walk(self, directory: Path, rules: list[_Rules], root: Path) -> None:
        """The entries of ``directory`` (found under the path ``root``), in name order, each once: symbolic link
        loops and unreadable folders reported in ``errors``."""
        errors = self.errors
        try:
            st = directory.stat()
        except OSError as exc:
            errors.append(FileError(path=str(directory), error=f"cannot read directory: {exc.strerror}"))
            return
        key = (st.st_dev, st.st_ino)
        if key in self.seen_dirs:
            errors.append(FileError(path=str(directory), error="symlink loop: directory already visited, skipped"))
            return
        self.seen_dirs.add(key)
        try:
            entries = sorted(directory.iterdir())
        except OSError as exc:
            errors.append(FileError(path=str(directory), error=f"cannot list directory: {exc.strerror}"))
            return
        rules = rules + self.exclusions.folder_rules(directory, errors)
        for entry in entries:
            if not self.outside(entry):
                self.entry(entry, rules, root)

    def entry(self, entry: Path, rules: list[_Rules], root: Path) -> None:
        """One entry of a folder: walked, found, or skipped with its reason (hidden ones silently unless an
        exclusion rule names them)."""
        is_dir = entry.is_dir()
        excluded = self.exclusions.match(rules, entry, is_dir)
        if entry.name.startswith("."):
            if excluded:  # .DS_Store: reported; .git, .kbgraphignore: tool state, silent
                self.skip(entry, excluded)
            return
        if excluded:
            self.skip(entry, excluded)
        elif is_dir:
            self.walk(entry, rules, root)
        elif not entry.is_file():
            broken = entry.is_symlink() and not entry.exists()
            self.skip(
                entry,
                "broken symbolic link: its target is gone"
                if broken
                else "not a regular file (a device, socket or pipe)",
            )
        elif is_sidecar(entry):
            self.skip(
                entry,
                f"the metadata sidecar of {entry.name[: -len(SIDECAR_SUFFIX)]}: read with it, not "
                "ingested as a document",
            )
        elif reason := skip_reason(entry, self.ocr):
            self.skip(entry, reason)
        else:
            self.found.append((entry, entry.relative_to(root).as_posix()))


def file_of(uri: str) -> str:
    """The file path of a document's URI (a passage's ``#id`` dropped)."""
    return uri_to_path(uri.split("#", 1)[0])


def uri_to_path(uri: str) -> str:
    """The path of a ``file://`` URI (its ``#fragment`` kept as ``path#fragment``); any other URI as is."""
    from urllib.parse import unquote, urlparse

    if uri.startswith("file://"):
        parsed = urlparse(uri)
        return unquote(parsed.path) + (f"#{parsed.fragment}" if parsed.fragment else "")
    return uri


__all__ = ["DEFAULT_EXCLUDES", "IGNORE_FILE", "Exclusions", "discover", "file_of", "uri_to_path"]
