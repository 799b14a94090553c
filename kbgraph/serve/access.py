"""Who may do what on ``kbgraph serve`` (issue 29): the folders ingestion may read.

**Ingest roots** (setting ``serve_ingest_roots``, ``KBGRAPH_SERVE_INGEST_ROOTS``): a path given to
``POST /v1/kb/{name}/ingest {"paths": [...]}`` or to the MCP tool ``ingest`` is resolved (symbolic links and
``..``) and must lie inside one of the roots (also resolved), else :class:`Forbidden` (HTTP 403) naming the
setting, before the job is queued, so nothing is read. No roots = path ingestion off (uploads still work, they
are kept under the server's own ``<home>/<kb>/uploads``). A folder inside a root is walked with the roots as a
fence: a symbolic link in it that leads outside every root is a skipped file of the report, never read
(``KnowledgeBase.ingest(within=...)``). The CLI is not limited.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from kbgraph.errors import KBGraphError


class Forbidden(KBGraphError):
    """A request outside what the server allows (HTTP 403): a path outside ``serve_ingest_roots``. The message
    names the setting."""

    exit_code = 2


# --- ingest roots ---------------------------------------------------------------------------------------------
def resolved_roots(roots: Iterable[Path | str]) -> list[Path]:
    """The roots, ``~`` expanded and resolved (symbolic links, ``..``)."""
    return [Path(r).expanduser().resolve() for r in roots]


def inside(path: Path, roots: Sequence[Path]) -> bool:
    """True when ``path`` (already resolved) is one of ``roots`` or under one."""
    return any(path == root or path.is_relative_to(root) for root in roots)


def check_ingest_paths(paths: Iterable[str | Path], roots: Iterable[Path | str]) -> list[str]:
    """``paths`` resolved (symbolic links followed, ``..`` removed), each inside one of ``roots`` (resolved too).
    Raises Forbidden naming ``serve_ingest_roots`` for the first path outside every root, or for any path when
    there are no roots (path ingestion off). Nothing is opened or read: only the path names are resolved."""
    fence = resolved_roots(roots)
    paths = [str(p) for p in paths]
    if not fence:
        raise Forbidden(
            "ingesting server paths is off: set serve_ingest_roots (KBGRAPH_SERVE_INGEST_ROOTS, comma-separated "
            "folders) to the folders the server may read, or upload the files (multipart `files` parts)"
        )
    out: list[str] = []
    for raw in paths:
        if "\x00" in raw:
            raise Forbidden("a path with a NUL character is outside serve_ingest_roots")
        target = Path(raw).expanduser().resolve()
        if not inside(target, fence):
            shown = raw.encode("unicode_escape").decode("ascii")[:200]
            raise Forbidden(
                f"{shown!r} is outside serve_ingest_roots ({', '.join(str(r) for r in fence)}): give a path "
                "under one of them (symbolic links and '..' are resolved first), or add its folder to "
                "serve_ingest_roots (KBGRAPH_SERVE_INGEST_ROOTS)"
            )
        out.append(str(target))
    return out
