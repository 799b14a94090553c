"""The bounds of a PDF (``kbgraph.ingest.bounds``, issue 58 finding 1), checked by ``parse_pdf`` once PyMuPDF
opened the file and before a page is read:

- **pages**: ``max_pdf_pages`` (MuPDF's page count, which a lying page tree inflates, so it refuses that too);
- **decoded streams**: every stream but images and embedded files (page contents, forms, fonts, object and
  cross-reference streams: what text extraction decodes) is decoded here from its raw bytes, in slices that are
  counted and dropped, through its filter chain (FlateDecode, LZWDecode, RunLengthDecode, ASCII85Decode,
  ASCIIHexDecode; an image codec ends the chain, counted as its input), never trusting ``/Length`` or ``/DL``:
  one stream over ``max_member_bytes``, or all of them over ``max_expanded_bytes``, refuses the file. PyMuPDF has
  no capped decode of its own (``xref_stream`` decodes a stream whole in memory).

Images are not counted: the text layer does not decode them (OCR renders the page at ``ocr_dpi``, whatever the
resolution of its images). The time the check takes is within the file's ``max_parse_seconds``.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from kbgraph.errors import IngestError
from kbgraph.ingest.bounds import SLICE, ParseBounds, current

if TYPE_CHECKING:
    from pymupdf import Document

_NAME = re.compile(r"/([A-Za-z0-9]+)")
_NOT_READ = ("/Image", "/EmbeddedFile")  # a stream's /Subtype or /Type the text layer does not decode
_A85_WS = re.compile(rb"[\s\x00]+")
_HEX = re.compile(rb"[^0-9A-Fa-f]+")


def check_pdf(doc: Document, name: str) -> None:
    """Refuse the open PDF ``doc`` (the file ``name``) over the bounds of the parse under way (``bounds.current``);
    its decoded stream bytes are charged to that parse's budget."""
    budget = current()
    b = budget.bounds
    if b == ParseBounds.off():
        return
    if b.max_pdf_pages and doc.page_count > b.max_pdf_pages:
        raise IngestError(
            f"too many pages: {name} has {doc.page_count:,} pages, over the limit of {b.max_pdf_pages:,} "
            "(raise max_pdf_pages to ingest it)"
        )
    if not (b.max_member_bytes or b.max_expanded_bytes):
        return
    for xref in range(1, doc.xref_length()):
        if not doc.xref_is_stream(xref) or any(doc.xref_get_key(xref, k)[1] in _NOT_READ for k in ("Subtype", "Type")):
            continue
        caps = [b.max_member_bytes] if b.max_member_bytes else []
        if b.max_expanded_bytes:
            caps.append(b.max_expanded_bytes - budget.expanded)
        cap = min(caps)
        size = 0
        filters = _NAME.findall(doc.xref_get_key(xref, "Filter")[1] or "")
        for chunk in decode(doc.xref_stream_raw(xref), filters, cap + 1):
            size += len(chunk)
        if size > cap:
            limit, setting = (
                (b.max_member_bytes, "max_member_bytes")
                if b.max_member_bytes and size > b.max_member_bytes
                else (b.max_expanded_bytes, "max_expanded_bytes")
            )
            raise IngestError(
                f"too large when decoded: {name} expands past {limit:,} bytes at PDF object {xref} "
                f"({' '.join(filters) or 'unfiltered'}) (a decompression bomb? raise {setting} to ingest it)"
            )
        budget.expanded += size


def decode(raw: bytes, filters: list[str], limit: int) -> Iterator[bytes]:
    """The decoded bytes of a stream with these ``filters`` (names without the slash), in slices, at most about
    ``limit`` of them; a filter this cannot decode (an image codec, Crypt) passes its input on."""
    chunks: Iterator[bytes] = (raw[i : i + SLICE] for i in range(0, len(raw), SLICE))
    for f in filters:
        step = _FILTERS.get(f)
        if step is None:
            break
        chunks = step(chunks, limit)
    total = 0
    for chunk in chunks:
        total += len(chunk)
        yield chunk
        if total >= limit:
            return


def _flate(chunks: Iterator[bytes], limit: int) -> Iterator[bytes]:
    inflater = zlib.decompressobj()
    out = 0
    for chunk in chunks:
        data = chunk
        while data and out < limit and not inflater.eof:
            try:
                piece = inflater.decompress(data, SLICE)
            except zlib.error:
                return  # MuPDF keeps what decoded before the damage: so does the count
            data = inflater.unconsumed_tail
            out += len(piece)
            if piece:
                yield piece
        if out >= limit or inflater.eof:
            return
    while out < limit and not inflater.eof and (piece := inflater.decompress(b"", SLICE)):  # what it still holds
        out += len(piece)
        yield piece


def _lzw(chunks: Iterator[bytes], limit: int) -> Iterator[bytes]:
    """LZWDecode (EarlyChange 1, PDF's default)."""
    table: list[bytes] = [bytes([i]) for i in range(256)] + [b"", b""]
    width, buf, bits, prev, out = 9, 0, 0, b"", 0
    piece = bytearray()
    for chunk in chunks:
        for byte in chunk:
            buf, bits = ((buf << 8) | byte) & 0xFFFFFF, bits + 8
            while bits >= width:
                bits -= width
                code = (buf >> bits) & ((1 << width) - 1)
                if code == 256:  # clear table
                    del table[258:]
                    width, prev = 9, b""
                    continue
                if code == 257 or code > len(table):  # end of data (or damage: MuPDF stops there too)
                    yield bytes(piece)
                    return
                entry = table[code] if code < len(table) else prev + prev[:1]
                if prev and len(table) < 4096:
                    table.append(prev + entry[:1])
                piece += entry
                prev = entry
                if len(table) + 1 >= 1 << width and width < 12:
                    width += 1
                if len(piece) >= SLICE:
                    out += len(piece)
                    yield bytes(piece)
                    piece.clear()
                    if out >= limit:
                        return
    yield bytes(piece)


def _run_length(chunks: Iterator[bytes], limit: int) -> Iterator[bytes]:
    pending, out = b"", 0
    for chunk in chunks:
        data, i, piece = pending + chunk, 0, bytearray()
        while i < len(data):
            n = data[i]
            if n == 128:
                yield bytes(piece)
                return
            if n < 128:
                if i + 1 + n + 1 > len(data):
                    break
                piece += data[i + 1 : i + 2 + n]
                i += n + 2
            else:
                if i + 1 >= len(data):
                    break
                piece += data[i + 1 : i + 2] * (257 - n)
                i += 2
            if out + len(piece) >= limit:
                break
        pending = data[i:]
        out += len(piece)
        yield bytes(piece)
        if out >= limit:
            return


def _ascii85(chunks: Iterator[bytes], limit: int) -> Iterator[bytes]:
    pending, out = b"", 0
    for chunk in chunks:
        text = pending + _A85_WS.sub(b"", chunk).replace(b"z", b"!!!!!")
        end = text.find(b"~>")
        if end >= 0:
            text = text[:end]
        cut = len(text) if end >= 0 else len(text) - len(text) % 5
        try:
            piece = base64.a85decode(text[:cut])
        except ValueError:
            return
        pending = text[cut:]
        out += len(piece)
        yield piece
        if end >= 0 or out >= limit:
            return


def _ascii_hex(chunks: Iterator[bytes], limit: int) -> Iterator[bytes]:
    pending, out = b"", 0
    for chunk in chunks:
        end = chunk.find(b">")
        digits = pending + _HEX.sub(b"", chunk if end < 0 else chunk[:end])
        if end >= 0 and len(digits) % 2:
            digits += b"0"
        cut = len(digits) - len(digits) % 2
        piece = binascii.unhexlify(digits[:cut])
        pending = digits[cut:]
        out += len(piece)
        yield piece
        if end >= 0 or out >= limit:
            return


_FILTERS = {
    "FlateDecode": _flate,
    "Fl": _flate,
    "LZWDecode": _lzw,
    "LZW": _lzw,
    "RunLengthDecode": _run_length,
    "RL": _run_length,
    "ASCII85Decode": _ascii85,
    "A85": _ascii85,
    "ASCIIHexDecode": _ascii_hex,
    "AHx": _ascii_hex,
}

__all__ = ["check_pdf", "decode"]
