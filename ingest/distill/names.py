"""Entity names and ids: how a surface form becomes the key entities merge on (PIKE-RAG §5.3.1).

Entities of the distilled-knowledge layer are merged across chunks and documents by their normalised name
and type (``entity_id``); a date merges on its ISO form when it parses (``normalize_date``). A document title
of a passage corpus is a ``TITLE`` entity (``title_entity``); a noun chunk that ends a triple and is no named
entity is a ``CONCEPT``.
"""

from __future__ import annotations

import re
import unicodedata

from kbgraph.models import EntityRecord, stable_id

TITLE_TYPE = "TITLE"
CONCEPT_TYPE = "CONCEPT"

#: Runs of whitespace (collapsed to one space in names, tags and triples).
SPACE = re.compile(r"\s+")
_PUNCT = re.compile(r"[^\w\s]+")
_MONTHS = {
    m: i
    for i, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for m in names
}
_MONTH_RE = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DMY = re.compile(rf"^(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_RE}\s*,?\s*(\d{{3,4}})$")
_MDY = re.compile(rf"^{_MONTH_RE}\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:\s*,\s*|\s+)(\d{{3,4}})$")
_MY = re.compile(rf"^{_MONTH_RE}\s*,?\s*(\d{{3,4}})$")


def normalize_name(name: str) -> str:
    """The merge key of an entity name: NFKC, casefolded, apostrophes removed, other punctuation as
    spaces, whitespace collapsed, a leading 'the ' dropped. 'The Beatles' == 'beatles';
    "St. George's" == 'st georges'."""
    s = unicodedata.normalize("NFKC", name).casefold()
    s = s.replace("'", "").replace("’", "").replace("`", "")
    s = SPACE.sub(" ", _PUNCT.sub(" ", s)).strip()
    if s.startswith("the "):
        s = s[4:]
    return s


def normalize_date(text: str) -> str | None:
    """ISO form (YYYY-MM-DD or YYYY-MM) of a full calendar date in a common English format, else None.
    '6 December 1951', 'December 6, 1951' and '6th of Dec. 1951' all give '1951-12-06'."""
    s = SPACE.sub(" ", text.strip().casefold())
    if m := _DMY.match(s):
        day, month, year = int(m.group(1)), _MONTHS[m.group(2)], int(m.group(3))
    elif m := _MDY.match(s):
        month, day, year = _MONTHS[m.group(1)], int(m.group(2)), int(m.group(3))
    elif m := _MY.match(s):
        return f"{int(m.group(2)):04d}-{_MONTHS[m.group(1)]:02d}"
    else:
        return None
    if not 1 <= day <= 31:
        return None
    return f"{year:04d}-{month:02d}-{day:02d}"


def entity_key(name: str, type_: str) -> str:
    """The normalised name an entity merges on (dates in ISO form when they parse)."""
    if type_ == "DATE" and (iso := normalize_date(name)):
        return iso
    return normalize_name(name)


def entity_id(name: str, type_: str) -> str:
    """Stable id of the entity (name, type): ``stable_id('ent', normalised name, type)``."""
    return stable_id("ent", entity_key(name, type_), type_)


def title_entity(title: str) -> EntityRecord:
    """The TITLE entity of a document title."""
    return EntityRecord(id=entity_id(title, TITLE_TYPE), name=title.strip(), type=TITLE_TYPE)


def clean_surface(text: str) -> str:
    """A span's text as an entity name: whitespace collapsed, a leading 'the ', a trailing possessive 's
    and edge punctuation dropped ('the Beatles's' -> 'Beatles')."""
    text = SPACE.sub(" ", text).strip()
    if text.lower().startswith("the ") and len(text) > 4 and text[:1] == "t":
        text = text[4:]
    for suffix in ("'s", "’s"):
        if text.endswith(suffix):
            text = text[: -len(suffix)]
    return text.strip(" ,;:-–(")


__all__ = [
    "CONCEPT_TYPE",
    "SPACE",
    "TITLE_TYPE",
    "clean_surface",
    "entity_id",
    "entity_key",
    "normalize_date",
    "normalize_name",
    "title_entity",
]
