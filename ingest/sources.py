"""Where ingestion finds its documents (kbgraph.ingest.pipeline; PIKE-RAG §5.1, the files of a knowledge base).

``discover`` walks the paths given into the files to parse (and those to skip, with the reason);
``uri_to_path`` and ``file_of`` turn a document's ``file://`` URI (a passage's ``#id`` included) back into
the path the report names.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kbgraph.ingest.report import FileError, FileOutcome


def discover(
    paths: Iterable[str | Path], errors: list[FileError], skipped: list[FileOutcome] | None = None
) -> list[Path]:
    """Every file under ``paths`` (directories walked, symlinks followed once, loops reported in ``errors``),
    resolved and de-duplicated. Returned: the files to parse. A file found in a directory that no parser
    reads (``parse.skip_reason``: an image, an archive, an unknown type, legacy Office without LibreOffice,
    a broken link) is not returned but appended to ``skipped`` as a ``skipped`` outcome with the reason and
    fix. A file named explicitly is always returned (tried), so it fails with that reason instead.
    Hidden files and directories (name starting with '.', e.g. ``.git``, ``.DS_Store``) are ignored
    silently: they are tool state, not documents."""
    from kbgraph.ingest.parse import skip_reason

    found: list[Path] = []
    seen_dirs: set[tuple[int, int]] = set()

    def skip(entry: Path, reason: str) -> None:
        if skipped is not None:
            path = entry.resolve() if entry.exists() else entry.parent.resolve() / entry.name  # (a broken link)
            skipped.append(FileOutcome(path=str(path), outcome="skipped", reason=reason))

    def walk(directory: Path) -> None:
        try:
            st = directory.stat()
        except OSError as exc:
            errors.append(FileError(path=str(directory), error=f"cannot read directory: {exc.strerror}"))
            return
        key = (st.st_dev, st.st_ino)
        if key in seen_dirs:
            errors.append(FileError(path=str(directory), error="symlink loop: directory already visited, skipped"))
            return
        seen_dirs.add(key)
        try:
            entries = sorted(directory.iterdir())
        except OSError as exc:
            errors.append(FileError(path=str(directory), error=f"cannot list directory: {exc.strerror}"))
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir():
                walk(entry)
            elif not entry.is_file():
                broken = entry.is_symlink() and not entry.exists()
                skip(entry, "broken symbolic link: its target is gone" if broken else
                     "not a regular file (a device, socket or pipe)")  # fmt: skip
            elif reason := skip_reason(entry):
                skip(entry, reason)
            else:
                found.append(entry)

    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            walk(path)
        elif path.is_file():
            found.append(path)
        else:
            errors.append(FileError(path=str(path), error="no such file or directory"))
    unique: dict[Path, None] = {}
    for f in found:
        unique.setdefault(f.resolve(), None)
    return list(unique)


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


__all__ = ["discover", "file_of", "uri_to_path"]
