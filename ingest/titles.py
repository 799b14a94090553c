"""A document's title, chosen from what the file says about itself: its metadata title (PDF Info / XMP, Office
core properties), the heading on its first page, and its file name (issue 56: a PDF's metadata title is often a
code such as an accession number, a product id or the exporting tool's file name, while the first page and the
file name say what the document is).

Each candidate is cleaned to one line. A candidate is **unusable** when it is empty, a file name or placeholder
("Untitled", "Microsoft Word - x.docx"), or a **code**: no word of three letters or more, or only short words
glued to digits (``0001018724-18-000005``, ``SP800-61r2``; ``ADBE 10-K FY22`` is kept: ``ADBE`` is a word).
The title is the usable metadata title; else the document's one top-level heading; else the more informative
(distinct words of two letters or more, and four-digit years) of its first page's heading and its file name.
The others are kept as ``alternatives``: the Document layer's text (kbgraph.ingest.embed_layers) names all of
them, so a question naming the file's words finds a document titled by its cover.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, Field

MAX_TITLE_CHARS = 300
#: A heading longer than this is a sentence, not a title.
MAX_HEADING_CHARS = 160

_WS = re.compile(r"\s+")
_PLACEHOLDER = re.compile(
    r"(\.(exe|docx?|pdf|tmp|indd|qxd|qxp|rtf|txt|xlsx?|pptx?|odt|dvi|ps|tex)$)|^untitled\b|"
    r"^(document ?\d*|title|slide \d+|no title|none|null|unknown)$",
    re.I,
)
_OFFICE_PREFIX = re.compile(r"^microsoft (word|powerpoint|excel) - ", re.I)
_WORD = re.compile(r"[^\W\d_]{2,}", re.UNICODE)
_LONG_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)
_YEAR = re.compile(r"(?<!\d)(1[89]|20)\d\d(?!\d)")


class TitleChoice(BaseModel):
    """The chosen title and the other usable candidates (distinct, in the order metadata, heading, file
    name)."""

    title: str
    alternatives: list[str] = Field(default_factory=list)

    @property
    def label(self) -> str:
        """The title and its alternatives as one line, ``"title — alternative — ..."``: the Document layer's
        text."""
        return " — ".join([self.title, *self.alternatives])


def clean_title(text: str | None) -> str:
    """``text`` on one line, white space collapsed, an Office export prefix dropped, cut at
    ``MAX_TITLE_CHARS``."""
    t = _WS.sub(" ", text or "").strip()
    return _OFFICE_PREFIX.sub("", t)[:MAX_TITLE_CHARS].strip()


def file_name_title(path: str | Path) -> str:
    """The file name as words: the stem with ``_``, ``-`` runs and dots turned into spaces
    (``AMAZON_2017_10K.pdf`` -> ``AMAZON 2017 10K``; ``SP800-61rev2`` stays one token per part)."""
    stem = Path(path).stem
    return _WS.sub(" ", re.sub(r"[_.]+|(?<=[^\W\d_])-(?=[^\W\d_])", " ", stem)).strip() or Path(path).name


def is_code(text: str) -> bool:
    """True when ``text`` names nothing a reader would search for: no word of three letters or more, or
    only short all-capital words each glued to digits (an id such as ``SP800-61r2``)."""
    words = _LONG_WORD.findall(text)
    if not words:
        return True
    tokens = re.split(r"[\s/]+", text)
    return all(_glued_to_digits(t) for t in tokens if _LONG_WORD.search(t))


def _glued_to_digits(token: str) -> bool:
    return bool(re.search(r"\d", token)) and len(_WORD.findall(token)) <= 2 and len(token) <= 16


def usable(text: str) -> bool:
    """A candidate worth keeping: not empty, not a placeholder or file name, not a code."""
    return bool(text) and not _PLACEHOLDER.search(text) and not is_code(text)


def informativeness(text: str) -> int:
    """Distinct words of two letters or more (case folded) plus distinct four-digit years."""
    return len({w.casefold() for w in _WORD.findall(text)}) + len(set(_YEAR.findall(text)))


def choose_title(
    metadata: str | None, heading: str | None, path: str | Path, *, heading_names_document: bool = False
) -> TitleChoice:
    """The title of the document at ``path`` from its metadata title and first-page heading (either None).

    A usable metadata title is the title. Else a heading that names the document (``heading_names_document``:
    its one top-level heading) is; else the more informative of the first-page heading and the file name (ties:
    the heading). The other usable candidates, distinct ignoring case, are the alternatives. A file whose every
    candidate is a code gets its file name's words. Never raises."""
    heading_text = clean_title(heading)
    if len(heading_text) > MAX_HEADING_CHARS:
        heading_text = ""
    meta, name = clean_title(metadata), file_name_title(path)
    kept: list[str] = []
    for c in (meta, heading_text, name):
        if usable(c) and c.casefold() not in {k.casefold() for k in kept}:
            kept.append(c)
    if not kept:
        return TitleChoice(title=name)
    if usable(meta) or (heading_names_document and usable(heading_text)):
        best = 0
    else:  # a first-page heading against the file name: the more informative
        best = max(range(len(kept)), key=lambda i: (informativeness(kept[i]), -i))
    return TitleChoice(title=kept[best], alternatives=[c for i, c in enumerate(kept) if i != best])
