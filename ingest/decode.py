"""Bytes of a text file -> str, whatever its encoding (``decode_text``): a byte-order mark (UTF-8, UTF-16 and
UTF-32, LE and BE), the NUL pattern of UTF-16 without one, UTF-8, else the encoding charset-normalizer finds
most likely. Used by every parser that reads text (plain text, .csv/.tsv, .rst/.org, e-mail bodies and text
attachments). Raises IngestError naming the file when the bytes are no text."""

from __future__ import annotations

import codecs

from kbgraph.errors import IngestError
from kbgraph.text import one_line

#: Preferred single-byte encodings when several fit a non-UTF-8 text about equally well.
WESTERN_ENCODINGS: tuple[str, ...] = ("cp1252", "latin_1", "iso8859_15")

#: Byte-order marks, longest first (the UTF-32 LE mark starts with the UTF-16 LE one).
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def decode_text(data: bytes, name: str) -> str:
    """Bytes of a text file -> str. A byte-order mark decides (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE); else the NUL
    pattern of mostly-ASCII UTF-16 without a BOM (``_bomless_utf16``); else UTF-8 when valid; else the encoding
    charset-normalizer finds most likely (cp1252, latin-1, BOM-less UTF-16 of other scripts…).
    Raises IngestError naming ``name`` when the bytes are no text (binary data, NUL bytes) or do not
    match their byte-order mark."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                text = data.decode(encoding)
            except UnicodeDecodeError as exc:
                label = encoding.upper().replace("-SIG", "")
                raise IngestError(
                    f"cannot decode {name}: it starts with a {label} byte-order mark but is not valid {label} "
                    f"({one_line(exc, 80)}); save it again as UTF-8"
                ) from exc
            return _no_nul(text, name)
    if b"\x00" in data and (utf16 := _bomless_utf16(data)):
        try:
            return _no_nul(data.decode(utf16), name)
        except (UnicodeDecodeError, IngestError):
            pass  # not UTF-16 after all: the checks below decide
    try:
        return _no_nul(data.decode("utf-8"), name)
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    matches = list(from_bytes(data))
    if not matches:
        raise IngestError(
            f"cannot decode {name}: binary data, not text in any known encoding; if it is a document, give it "
            "its format's extension"
        )
    best = min(matches, key=lambda m: m.chaos)
    if b"\x00" not in data:
        # Short texts fit several single-byte code pages about equally well; charset-normalizer then picks one
        # arbitrarily (cp1250 or cp1257 for French). Among the near-best, prefer Windows-1252 / Latin-1, by
        # far the most common non-UTF-8 encodings of Western text. (NUL bytes: UTF-16/32, never these.)
        near = [m for m in matches if m.chaos <= best.chaos + 0.1]
        for preferred in WESTERN_ENCODINGS:
            if any(m.encoding == preferred or preferred in m.could_be_from_charset for m in near):
                try:
                    return data.decode(preferred)
                except UnicodeDecodeError:
                    continue
    return _no_nul(str(best), name)


def _bomless_utf16(data: bytes) -> str | None:
    """``utf-16-le`` or ``utf-16-be`` when ``data`` shows the NUL pattern of UTF-16 text without a byte-order
    mark whose characters are mostly ASCII (a NUL high byte in at least 30% of the code units, on one side only:
    'a' is ``61 00`` in LE, ``00 61`` in BE), else None. Binary data and UTF-32 have NULs on both sides."""
    sample = data[:65536]
    units = len(sample) // 2
    if units < 2:
        return None
    even, odd = sample[0 : 2 * units : 2].count(0), sample[1 : 2 * units : 2].count(0)
    if odd >= 0.3 * units and even <= 0.01 * units:
        return "utf-16-le"
    if even >= 0.3 * units and odd <= 0.01 * units:
        return "utf-16-be"
    return None


def _no_nul(text: str, name: str) -> str:
    if "\x00" in text:
        raise IngestError(
            f"cannot read {name}: binary data (NUL bytes), not text; if it is a document, give it its format's "
            "extension"
        )
    return text
