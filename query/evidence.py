"""The retrieval-only answer (PIKE-RAG §5.2.3 shown as is, no generation): the 2-3 sentences or table rows
of the top chunks most similar to the question, one per line, each ending with the marker ``[n]`` of its
citation (``evidence_answer``). Headings, captions and fragments are left out (``quotable``); a table row
whose label the question names comes first. Nothing in the answer is absent from the cited chunks.

``sentences`` is also how the LLM methods pick a citation's quote (kbgraph.query.answering).
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from functools import lru_cache

import numpy as np

from kbgraph.embed.base import Embedder
from kbgraph.query.models import Citation, ScoredChunk
from kbgraph.text import parse_markdown_table

#: Evidence units in an offline answer (at most), and how far below the best unit's score another unit may
#: score and still be shown (the second unit is shown down to twice the margin).
ANSWER_UNITS = 3
UNIT_MARGIN = 0.12
#: Score bonus of a table row whose label (its first non-numeric cell) the question names, and of each
#: column header it names (at most three).
ROW_LABEL_BONUS = 0.3
COLUMN_BONUS = 0.02
#: Score lost per rank of the unit's chunk in the retrieval, so ties go to the better-ranked chunk.
RANK_PENALTY = 0.02
MAX_UNIT_CHARS = 700
QUOTE_CHARS = 400

# A sentence ends at . ! or ? (then optional reference marks like [5], closing quotes or brackets) before
# white space and an upper-case letter, digit, quote or bracket.
_END = re.compile(r"[.!?](?:\[[^\[\]\s]{1,16}\])*[\"'”’)\]]*(?=\s+[A-Z0-9\"'(“‘\[§])")
# No sentence ends after a bare list enumerator ('1.', 'b)', 'iv.') or an abbreviation / initial.
_ENUMERATOR = re.compile(r"^\(?(?:\d{1,3}|[a-zA-Z]|[ivxIVX]{1,5})\s*[.)]$")
_ABBREVIATION = re.compile(
    r"(?:^|[\s(])(?:(?:[A-Za-z]\.){1,4}|e\.g\.|i\.e\.|Mr\.|Mrs\.|Ms\.|Dr\.|St\.|No\.|Nos\.|vs\.|cf\.|Inc\.|Ltd\.|"
    r"Co\.|Jr\.|Sr\.|Fig\.|Figs\.|Sec\.|Secs\.|Art\.|Vol\.|pp?\.|approx\.)$"
)
# Wikipedia-style reference marks ('[5]', '[a]', '[citation needed]'): dropped from the answer's text so
# they are not mistaken for its own citation markers.
_REFERENCE = re.compile(r"\[(?:\d{1,3}|[a-z]|[a-z ]{3,24} needed|note \d{1,3}|nb \d{1,3})\]", re.I)
_CAPTION = re.compile(
    r"^(?:figure|fig\.|table|tab\.|chart|exhibit|plate|image|photo|map|graph|diagram|illustration|box)"
    r"\s*(?:\d+|(?-i:[IVXLC]+|[A-Z])\b)[\w.\-]*\s*(?:[:.\-–—]|$|\s)",
    re.I,
)
_WORD = re.compile(r"[^\W\d_][\w'’\-]*")
_SMALL_WORDS = {
    "a",
    "an",
    "and",
    "as",
    "at",
    "by",
    "for",
    "from",
    "in",
    "into",
    "of",
    "on",
    "or",
    "the",
    "to",
    "with",
    "vs",
    "via",
    "per",
}
_TERMINAL = tuple('.!?;:"”’)')
_PLACEHOLDER_HEADER = re.compile(r"^Column \d+$")  # tables written before headers were kept
#: A list enumerator or numbered heading prefix ('C.', '2.', 'CHAPTER 1 –'), dropped by _norm.
_HEADING_PREFIX = re.compile(r"^(?:chapter|part|section|article)?\s*(?:\d+|[A-Z]|[ivxIVX]+)\s*[.)–—:-]\s*", re.I)


def sentences(text: str) -> list[str]:
    """Split text into sentences (regex; cheap, good enough for quoting). Paragraphs (blank lines, or a line
    starting a list or table) never join; inside one, a sentence ends at . ! ? (reference marks such as
    '[5]' stay with it) before a capital, digit or quote, but not after a list enumerator ('1.') or an
    abbreviation or initial ('U.S.', 'e.g.', 'No.')."""
    parts: list[str] = []
    for para in re.split(r"\n\s*\n|\n(?=[#|*-])", text):
        start = 0
        for m in _END.finditer(para):
            piece = para[start : m.end()].strip()
            if not piece or _ENUMERATOR.match(piece) or _ABBREVIATION.search(piece):
                continue
            parts.append(piece)
            start = m.end()
        rest = para[start:].strip()
        if rest:
            parts.append(rest)
    return parts


class _Unit:
    """One quotable piece of a chunk: ``text`` as shown in the answer, ``quote`` as it stands in the chunk
    (the citation's quote), ``row`` for table rows, ``label`` the row label the question names ('' if none)."""

    __slots__ = ("chunk", "pos", "text", "quote", "row", "label", "bonus", "score")

    def __init__(
        self, chunk: int, pos: int, text: str, quote: str, row: bool = False, label: str = "", bonus: float = 0.0
    ) -> None:
        self.chunk, self.pos, self.text, self.quote = chunk, pos, text, quote
        self.row, self.label, self.bonus, self.score = row, label, bonus, 0.0


def _named(phrase: str, question: str) -> bool:
    """True when ``question`` contains ``phrase`` as whole words (case-insensitive); phrases under 3
    characters or without a letter never match."""
    phrase = " ".join(phrase.lower().strip("*").split())
    text = question.lower()
    if len(phrase) < 3 or phrase not in text or not re.search(r"[^\W\d_]", phrase):  # most rows: no regex
        return False
    return re.search(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", text) is not None


#: Chunk texts whose split into units is kept (:func:`_table` and :func:`_sentence_units`): the same chunks
#: come back for many questions, and the split depends on the text alone.
SPLIT_CACHE = 2048


@lru_cache(maxsize=SPLIT_CACHE)
def _table(text: str) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """(header, rows) of a Markdown table chunk (kbgraph.text.parse_markdown_table), placeholder headers
    ('Column 2') blanked; kept per text."""
    _caption, header, rows = parse_markdown_table(text)
    return tuple("" if _PLACEHOLDER_HEADER.match(h) else h for h in header), tuple(tuple(r) for r in rows)


@lru_cache(maxsize=SPLIT_CACHE)
def _sentence_units(text: str, limit: int) -> tuple[tuple[int, str, str], ...]:
    """(position, text as shown, quote) of the first ``limit`` sentences of ``text`` that show anything
    (reference marks, emphasis and heading marks dropped from the shown text); kept per text."""
    out = []
    for pos, s in enumerate(sentences(text)[:limit]):
        shown = " ".join(_REFERENCE.sub("", s).strip("*# ").split())
        if shown:
            out.append((pos, shown, " ".join(s.split())))
    return tuple(out)


def _row_units(chunk: ScoredChunk, index: int, question: str, limit: int) -> list[_Unit]:
    """A table chunk's rows as units, 'header: value' pairs; a row whose label the question names, in a table
    with a column the question names, is its cell: the label's pair and the named columns' (issue 56: the
    Kentucky question's handgun checks, not the whole row)."""
    header, rows = _table(chunk.text)
    named_at = [i for i, h in enumerate(header) if h and _named(h, question)]
    named_columns = len({header[i] for i in named_at})
    units = []
    for pos, row in enumerate(rows):
        at = next((i for i, v in enumerate(row) if v.strip()), 0)
        label = row[at] if row else ""
        named = label if _named(label, question) else ""
        if pos >= limit and not named:
            continue
        pairs = [f"{h}: {v}" if h else v for h, v in zip(header, row, strict=False) if v.strip()]
        if len(pairs) < 2:
            continue
        cell = [i for i in named_at if i != at and i < len(row) and row[i].strip()] if named else []
        if cell:
            pairs = [f"{header[i]}: {row[i]}" if header[i] else row[i] for i in (at, *cell) if i < len(header)]
        text = "; ".join(pairs)
        bonus = (ROW_LABEL_BONUS if named else 0.0) + COLUMN_BONUS * min(named_columns, 3)
        units.append(_Unit(index, pos, text, text, row=True, label=named, bonus=bonus))
    return units


def _units(chunk: ScoredChunk, index: int, question: str, limit: int = 60) -> list[_Unit]:
    if chunk.kind == "table":
        rows = _row_units(chunk, index, question, limit)
        if rows:
            return rows
    return [_Unit(index, pos, shown, quote) for pos, shown, quote in _sentence_units(chunk.text, limit)]


def evidence_units(chunk: ScoredChunk, limit: int = 60) -> list[str]:
    """The quotable units of a chunk: its sentences, or for a table its rows written as 'header: value'
    pairs (so that a row embeds with its column names)."""
    return [u.text for u in _units(chunk, 0, "", limit)] or [chunk.text[:300]]


@lru_cache(maxsize=SPLIT_CACHE * 8)
def _norm(text: str) -> str:
    """Lower-case words only, list enumerators ('C.', '2.', 'CHAPTER 1 –') dropped: for comparing a
    sentence with a heading."""
    text = _HEADING_PREFIX.sub("", text.strip())
    return " ".join(w.lower() for w in _WORD.findall(text))


def quotable(text: str, headings: AbstractSet[str] = frozenset()) -> bool:
    """Whether a sentence can stand alone as evidence: not a caption ('Figure 3: …', 'Table 2 …'), not a
    heading (no final punctuation and mostly capitalised words, or one of ``headings`` — normalised section
    path parts and the document title), and long enough to be a sentence (at least 3 words; under 5 words
    it must end like a sentence or carry a number)."""
    text = text.strip()
    if headings and _norm(text) in headings:
        return False
    return _sentence_like(text)


@lru_cache(maxsize=SPLIT_CACHE * 8)
def _sentence_like(text: str) -> bool:
    """:func:`quotable` without the headings (``text`` stripped): kept per text."""
    words = _WORD.findall(text)
    if len(words) < 3 or _CAPTION.match(text):
        return False
    ends = text.endswith(_TERMINAL)
    if not ends:
        if text.isupper():
            return False
        long_words = [w for w in words if w.lower() not in _SMALL_WORDS]
        if len(words) <= 12 and long_words and sum(w[0].isupper() for w in long_words) >= 0.6 * len(long_words):
            return False
    return len(words) >= 5 or ends or bool(re.search(r"\d", text))


def _headings(chunk: ScoredChunk) -> set[str]:
    parts = [p for p in chunk.section_path.split(" > ") if p.strip()] + [chunk.document_title]
    return {_norm(p) for p in parts if _norm(p)}


def _pick(units: list[_Unit]) -> list[_Unit]:
    """The answer's units: the best, then up to ANSWER_UNITS - 1 more within UNIT_MARGIN of it (the second
    within twice that), distinct texts only. Rows of a table whose label the question names push out the
    other rows of tables."""
    if any(u.label for u in units):
        units = [u for u in units if u.label or not u.row]
    ranked = sorted(units, key=lambda u: (-u.score, u.chunk, u.pos))
    picked: list[_Unit] = []
    seen: set[str] = set()
    for u in ranked:
        key = _norm(u.text)
        if key in seen:
            continue
        if picked:
            margin = UNIT_MARGIN * (2 if len(picked) == 1 else 1)
            if u.score < picked[0].score - margin:
                break
        picked.append(u)
        seen.add(key)
        if len(picked) == ANSWER_UNITS:
            break
    return picked


def evidence_answer(question: str, chunks: list[ScoredChunk], embedder: Embedder) -> tuple[str, list[Citation]]:
    """The offline answer and its citations.

    Answer: the ANSWER_UNITS best evidence units of the top chunks, one per line, each ending with the
    marker ``[n]`` of its citation (1-based into the returned list). A unit is a sentence (see
    ``quotable``: no headings, captions or fragments) or a table row as 'header: value' pairs; its score is
    its cosine similarity to the question, minus RANK_PENALTY per rank of its chunk, plus ROW_LABEL_BONUS
    when it is a table row whose label the question names (and COLUMN_BONUS per column named). Citations:
    one per chunk, in retrieval order, quoting the chunk's unit in the answer or else its best unit;
    chunks that repeat an earlier citation's quote (overlapping chunks) share it. Deterministic for a
    deterministic embedder. Returns ('', []) without chunks."""
    if not chunks:
        return "", []
    per_chunk = [_units(c, i, question) for i, c in enumerate(chunks)]
    flat = [u for group in per_chunk for u in group]
    if not flat:
        return "", []
    vecs = np.asarray(embedder.embed([question, *[u.text for u in flat]]), dtype=np.float32)
    sims = vecs[1:] @ vecs[0]
    for u, sim in zip(flat, sims, strict=True):
        u.score = float(sim) - RANK_PENALTY * u.chunk + u.bonus
    headings = [_headings(c) for c in chunks]  # once per chunk, not per unit
    good = [u for u in flat if u.row or quotable(u.text, headings[u.chunk])]
    good_ids = {id(u) for u in good}
    picked = _pick(good or flat)
    chosen: dict[int, _Unit] = {}  # chunk index -> its first picked unit
    for u in picked:
        chosen.setdefault(u.chunk, u)
    citations: list[Citation] = []
    marker: dict[int, int] = {}
    for i, (chunk, group) in enumerate(zip(chunks, per_chunk, strict=True)):
        pool = [u for u in group if id(u) in good_ids] or group
        best = chosen.get(i) or (max(pool, key=lambda u: (u.score, -u.pos)) if pool else None)
        quote = best.quote[:QUOTE_CHARS] if best else " ".join(chunk.text.split())[:QUOTE_CHARS]
        same = next(
            (n for n, c in enumerate(citations) if c.quote == quote and c.document_title == chunk.document_title), None
        )
        if same is not None:  # overlapping chunks: one citation per quote
            marker[i] = same + 1
            continue
        citations.append(
            Citation(
                chunk_id=chunk.id,
                document_title=chunk.document_title,
                document_uri=chunk.document_uri,
                section=chunk.section_path,
                page=chunk.page,
                quote=quote,
            )
        )
        marker[i] = len(citations)
    lines = []
    for u in picked:
        text = u.text if len(u.text) <= MAX_UNIT_CHARS else u.text[: MAX_UNIT_CHARS - 1].rstrip() + "…"
        lines.append(f"{text} [{marker[u.chunk]}]")
    return "\n".join(lines), citations
