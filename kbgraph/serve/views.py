"""What a restricted API key sees of the server's file system: no absolute path.

An unrestricted caller (no keys configured, ``KBGRAPH_API_KEY``, a key with every right on every knowledge base:
kbgraph.serve.access.unrestricted) gets every response as the library makes it. For any other key, the responses
of the ``/v1`` routes and the MCP tools go through a :class:`PathView` of the knowledge base first:

* a path or ``file://`` URI in a path field (:data:`PATH_FIELDS`: a document's ``uri``, a chunk's or citation's
  ``document_uri``, a job's ``paths``, a report's ``path``) is shown relative to the folder it lies in, the
  knowledge base's upload folder or one of ``serve_ingest_roots`` (``report.pdf``, ``hr/leave.md``), or as its
  file name when it lies in neither (a document ingested from the CLI); a passage's ``#id`` is kept;
* the absolute paths inside a message (:data:`TEXT_FIELDS`: a job's ``error``, a file's ``reason``, an ingestion
  run's ``errors`` in a browse row) the same way;
* the store's ``location`` (its data folder, or its server's URI) is left empty.

Other strings (a chunk's text, a section's heading path) are never changed. The view is a display: a document
is still deleted by its id.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

from pydantic import BaseModel

from kbgraph.serve.access import resolved_roots
from kbgraph.serve.uploads import uploads_dir
from kbgraph.settings import Settings

PATH_FIELDS = frozenset({"uri", "document_uri", "path", "paths"})
TEXT_FIELDS = frozenset({"error", "errors", "reason"})
HIDDEN_FIELDS = frozenset({"location"})
#: An absolute path (or file:// URI) inside a message: starts the text or follows a space, quote or bracket.
_IN_TEXT = re.compile(r"(?<![\w/.:~-])(?:file://)?/[^\s'\"()\[\]{},;]+")

M = TypeVar("M", bound=BaseModel)


class PathView:
    """Shows server paths relative to ``folders`` (resolved; the first that holds a path wins), else by name."""

    def __init__(self, folders: Iterable[Path]):
        self.folders = [PurePosixPath(Path(f).expanduser().resolve()) for f in folders]

    def path(self, value: str) -> str:
        """``value`` as the restricted key sees it: relative to its folder, or its file name; not a path: as is."""
        fragment = ""
        if value.startswith("file://"):
            parsed = urlparse(value)
            target, fragment = unquote(parsed.path), (f"#{parsed.fragment}" if parsed.fragment else "")
        elif value.startswith("/"):
            target = value
        else:
            return value
        path = PurePosixPath(target)
        for folder in self.folders:
            if path.is_relative_to(folder) and path != folder:
                return str(path.relative_to(folder)) + fragment
        return path.name + fragment

    def text(self, value: str) -> str:
        """``value`` with each absolute path in it shown by :meth:`path`."""
        return _IN_TEXT.sub(lambda m: self.path(m.group(0)), value)

    def data(self, value: Any, field: str | None = None) -> Any:
        """JSON-able ``value`` (dicts, lists, strings) with its path fields, messages and location rewritten."""
        if isinstance(value, dict):
            return {k: ("" if k in HIDDEN_FIELDS and isinstance(v, str) else self.data(v, k)) for k, v in value.items()}
        if isinstance(value, list):
            return [self.data(v, field) for v in value]
        if isinstance(value, str) and field in PATH_FIELDS:
            return self.path(value)
        if isinstance(value, str) and field in TEXT_FIELDS:
            return self.text(value)
        return value

    def model(self, model: M) -> M:
        """A copy of ``model`` as the restricted key sees it (validated as its class)."""
        return type(model).model_validate(self.data(model.model_dump(mode="json")))


def view_of(settings: Settings) -> PathView:
    """The view of the knowledge base of ``settings``: relative to its upload folder, then to each of
    ``serve_ingest_roots``."""
    return PathView([uploads_dir(settings), *resolved_roots(settings.serve.serve_ingest_roots)])
