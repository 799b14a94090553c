"""What the parsers of ingestion stage 1 share, below all of them (kbgraph.ingest.parse dispatches to them):
the formats read (``MIME_TYPES``), the warnings of the document being parsed (``warn``), the message of an
exception without one (``UNKNOWN_ERROR``), and the dispatch itself for the parsers that read files inside a
file (an e-mail's attachments: :func:`dispatch`), which kbgraph.ingest.parse registers when imported so that no
parser imports the module that imports it."""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Literal, Required, TypedDict

from kbgraph.text import one_line

log = logging.getLogger("kbgraph.ingest.parse")  # the warnings' logger of old (kbgraph.ingest.parse's)

#: What an error message says when the exception had none (``one_line``'s ``empty`` in the parsers).
UNKNOWN_ERROR = "unknown error"

#: extension -> MIME type of every format ``parse_file`` reads.
MIME_TYPES: dict[str, str] = {
    ".pdf": "application/pdf",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".html": "text/html",
    ".htm": "text/html",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".eml": "message/rfc822",
    ".msg": "application/vnd.ms-outlook",
    ".txt": "text/plain",
    ".text": "text/plain",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".xlsm": "application/vnd.ms-excel.sheet.macroEnabled.12",
    ".xls": "application/vnd.ms-excel",
    ".ods": "application/vnd.oasis.opendocument.spreadsheet",
    ".csv": "text/csv",
    ".tsv": "text/tab-separated-values",
    ".odt": "application/vnd.oasis.opendocument.text",
    ".rtf": "application/rtf",
    ".epub": "application/epub+zip",
    ".rst": "text/x-rst",
    ".org": "text/x-org",
    ".xml": "application/xml",
    ".doc": "application/msword",
    ".ppt": "application/vnd.ms-powerpoint",
}

#: Warnings of the document being parsed (``warn``); None outside ``parse_file``.
WARNINGS: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("kbgraph_parse_warnings", default=None)


#: What the file being parsed says about itself (``describe``): its properties (author, created, modified; a PDF's
#: or an Office document's, kbgraph.ingest.properties) and its front matter (a Markdown file's, checked by
#: kbgraph.ingest.metadata.user_metadata); None outside ``parse_file`` and inside the parse of a file within a file
#: (an e-mail's attachment: its author is not the e-mail's).
FILE_PROPERTIES: contextvars.ContextVar[dict[str, object] | None] = contextvars.ContextVar(
    "kbgraph_parse_properties", default=None
)
FRONT_MATTER: contextvars.ContextVar[dict[str, object] | None] = contextvars.ContextVar(
    "kbgraph_parse_front_matter", default=None
)


def describe(
    *, properties: Mapping[str, object] | None = None, front_matter: Mapping[str, object] | None = None
) -> None:
    """Record what the file being parsed says about itself (``FILE_PROPERTIES``, ``FRONT_MATTER``): the parser that
    has it open calls it; nothing is recorded outside ``parse_file`` or for a file within a file."""
    for sink, values in ((FILE_PROPERTIES.get(), properties), (FRONT_MATTER.get(), front_matter)):
        if sink is not None and values:
            sink.update(values)


def warn(message: str) -> None:
    """Record a one-line warning against the document being parsed (it ends up in
    ``ParsedDocument.warnings`` and the ingest report). Outside ``parse_file`` it is only logged."""
    message = one_line(message, 300)
    sink = WARNINGS.get()
    if sink is None:
        log.warning("%s", message)
    elif message not in sink:
        sink.append(message)


class RawElement(TypedDict, total=False):
    """One element as a parser returns it, in reading order (``kbgraph.ingest.parse.normalize_elements`` cleans
    it into an ``Element``): ``kind``, its ``text``, a heading's ``level`` (1 = top), the 1-based ``page`` where
    known, a table's ``markdown`` (its ``text`` too); ``styled``: a .docx heading found by its style
    (``parse_unstructured.parse_docx``, which reads it)."""

    kind: Required[Literal["heading", "text", "table"]]
    text: str
    level: int | None
    page: int | None
    markdown: str | None
    styled: bool


#: ``parse_bytes(data, ext, name) -> (title, raw elements)``: the dispatch by file type.
ParseBytes = Callable[[bytes, str, str], tuple[str | None, list[RawElement]]]
#: ``skip_reason(path) -> why the file is not read, or None``.
SkipReason = Callable[[Path], str | None]

_DISPATCH: list[tuple[ParseBytes, SkipReason]] = []


def register_dispatch(parse_bytes: ParseBytes, skip_reason: SkipReason) -> None:
    """Called once by kbgraph.ingest.parse as it is imported: its ``parse_bytes`` and ``skip_reason``."""
    _DISPATCH[:] = [(parse_bytes, skip_reason)]


def dispatch() -> tuple[ParseBytes, SkipReason]:
    """kbgraph.ingest.parse's ``parse_bytes`` and ``skip_reason`` (a parser runs only under ``parse_bytes``, so
    they are registered by then). A file within a file is parsed under ``within_file``."""
    if not _DISPATCH:
        raise RuntimeError("kbgraph.ingest.parse is not imported: it dispatches the files to their parsers")
    return _DISPATCH[0]


@contextlib.contextmanager
def within_file() -> Iterator[None]:
    """While a file within the file being parsed (an e-mail's attachment) is parsed: what it says about itself is
    not recorded (``describe``): the attachment's author is not the e-mail's."""
    properties, front_matter = FILE_PROPERTIES.set(None), FRONT_MATTER.set(None)
    try:
        yield
    finally:
        FRONT_MATTER.reset(front_matter)
        FILE_PROPERTIES.reset(properties)
