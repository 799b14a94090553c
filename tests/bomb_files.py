"""Hostile files for the parse bounds (kbgraph.ingest.bounds; issue 58 finding 1), built in the test: zip packages
of each format kbgraph reads from a zip (.docx, .pptx, .xlsx, .odt, .epub) that expand far beyond their size, a
member whose headers lie about its size, a package of too many members, and PDFs of too many pages or a
content stream that inflates to more than the bound."""

from __future__ import annotations

import base64
import binascii
import io
import struct
import zipfile
import zlib
from collections.abc import Callable

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_DOCX_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
)
_DOCX_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
    'Target="word/document.xml"/></Relationships>'
)


def zip_bytes(members: dict[str, bytes | str], *, level: int = 9, stored: tuple[str, ...] = ()) -> bytes:
    """A zip of ``members`` (name -> content, in order), deflated at ``level`` but the ``stored`` ones."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for member, content in members.items():
            data = content.encode("utf-8") if isinstance(content, str) else content
            method = zipfile.ZIP_STORED if member in stored else zipfile.ZIP_DEFLATED
            z.writestr(zipfile.ZipInfo(member, (2024, 1, 1, 0, 0, 0)), data, compress_type=method, compresslevel=level)
    return buf.getvalue()


def docx_document_xml(text: str, empty_paragraphs: int) -> bytes:
    """``word/document.xml`` of one paragraph ``text`` and ``empty_paragraphs`` empty ``<w:p/>``."""
    head = f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="{W}"><w:body>'
    first = f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>"
    return (head + first).encode() + b"<w:p/>" * empty_paragraphs + b"</w:body></w:document>"


def docx_bomb(empty_paragraphs: int = 2_000_000) -> bytes:
    """The .docx of the security review: ~18 KB on disk, its ``word/document.xml`` 12 MB (one paragraph and
    ``empty_paragraphs`` empty ones)."""
    body = docx_document_xml("The one paragraph of a decompression bomb.", empty_paragraphs)
    return zip_bytes({"[Content_Types].xml": _DOCX_TYPES, "_rels/.rels": _DOCX_RELS, "word/document.xml": body})


def normal_docx(paragraphs: list[str]) -> bytes:
    """A small real .docx (python-docx) with a heading and ``paragraphs``."""
    import docx

    d = docx.Document()
    d.add_heading("Rhine shipping notes", level=1)
    for p in paragraphs:
        d.add_paragraph(p)
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def forged_size(package: bytes, member: str, declared: int) -> bytes:
    """``package`` with ``member``'s uncompressed size in its local header and central directory entry set to
    ``declared`` (its deflate stream, and CRC, unchanged): a header that lies."""
    data = bytearray(package)
    with zipfile.ZipFile(io.BytesIO(package)) as z:
        info = z.getinfo(member)
    struct.pack_into("<L", data, info.header_offset + 22, declared)  # local header: uncompressed size
    at = data.find(b"PK\x01\x02")  # the central directory entries, to find its own
    while at >= 0:
        n = struct.unpack_from("<H", data, at + 28)[0]
        if bytes(data[at + 46 : at + 46 + n]).decode() == member:
            struct.pack_into("<L", data, at + 24, declared)
            return bytes(data)
        at = data.find(b"PK\x01\x02", at + 4)
    raise AssertionError(f"no central directory entry for {member}")


def with_member(package: bytes, member: str, content: bytes) -> bytes:
    """``package`` with ``member`` replaced (or added) by ``content``."""
    with zipfile.ZipFile(io.BytesIO(package)) as z:
        members: dict[str, bytes | str] = {i.filename: z.read(i) for i in z.infolist()}
    members[member] = content
    return zip_bytes(members, stored=("mimetype",))


def xlsx_bomb(padding: int = 40_000_000) -> bytes:
    """A real .xlsx (openpyxl) whose sheet's XML carries ``padding`` bytes of whitespace: ~1000-fold compression."""
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws.append(["river", "length_km"])
    ws.append(["Rhine", 1230])
    buf = io.BytesIO()
    wb.save(buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        sheet = z.read("xl/worksheets/sheet1.xml")
    at = sheet.index(b"<sheetData>")
    return with_member(buf.getvalue(), "xl/worksheets/sheet1.xml", sheet[:at] + b" " * padding + sheet[at:])


def pptx_bomb(empty_paragraphs: int = 1_500_000) -> bytes:
    """A real .pptx (python-pptx) whose slide holds ``empty_paragraphs`` empty ``<a:p/>`` in its text box."""
    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])
    slide.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1)).text_frame.text = "Rhine barge tonnage"
    buf = io.BytesIO()
    deck.save(buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        xml = z.read("ppt/slides/slide1.xml")
    at = xml.index(b"</a:p>") + len(b"</a:p>")
    return with_member(buf.getvalue(), "ppt/slides/slide1.xml", xml[:at] + b"<a:p/>" * empty_paragraphs + xml[at:])


def odt_bomb(empty_paragraphs: int = 2_000_000, padding: int = 0) -> bytes:
    """An OpenDocument text of one paragraph and ``empty_paragraphs`` empty ``<text:p/>`` (then ``padding``
    bytes of whitespace)."""
    ns = (
        'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"'
    )
    content = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {ns} office:version="1.2">'
        "<office:body><office:text><text:p>The Rhine at Basel.</text:p>"
    ).encode()
    content += b"<text:p/>" * empty_paragraphs + b" " * padding
    content += b"</office:text></office:body></office:document-content>"
    manifest = (
        '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest '
        'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">'
        '<manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.text"/>'
        '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
        '<manifest:file-entry manifest:full-path="styles.xml" manifest:media-type="text/xml"/>'
        "</manifest:manifest>"
    )
    styles = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-styles {ns} office:version="1.2">'
        "<office:styles/></office:document-styles>"
    )
    return zip_bytes(
        {
            "mimetype": "application/vnd.oasis.opendocument.text",
            "META-INF/manifest.xml": manifest,
            "styles.xml": styles,
            "content.xml": content,
        },
        stored=("mimetype",),
    )


def epub_bomb(empty_paragraphs: int = 2_000_000) -> bytes:
    """An EPUB whose one chapter holds ``empty_paragraphs`` empty ``<p/>``."""
    container = (
        '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
        '<rootfiles><rootfile full-path="content.opf" media-type="application/oebps-package+xml"/></rootfiles>'
        "</container>"
    )
    opf = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="2.0" unique-identifier="id">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Bomb</dc:title><dc:identifier id="id">x'
        '</dc:identifier></metadata><manifest><item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/>'
        '</manifest><spine><itemref idref="c1"/></spine></package>'
    )
    chapter = (
        b'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>c1</title></head><body>'
        b"<p>The Rhine at Basel.</p>" + b"<p/>" * empty_paragraphs + b"</body></html>"
    )
    return zip_bytes(
        {
            "mimetype": "application/epub+zip",
            "META-INF/container.xml": container,
            "content.opf": opf,
            "c1.xhtml": chapter,
        },
        stored=("mimetype",),
    )


def many_members(n: int = 10_001) -> bytes:
    """A .docx package (the bomb's three parts, one paragraph) with ``n`` more tiny members."""
    members: dict[str, bytes | str] = {
        "[Content_Types].xml": _DOCX_TYPES,
        "_rels/.rels": _DOCX_RELS,
        "word/document.xml": docx_document_xml("A package of many parts.", 0),
    }
    members.update({f"word/media/m{i}.bin": b"x" for i in range(n)})
    return zip_bytes(members, level=1)


def pdf_pages(n: int) -> bytes:
    """A PDF, written here, of ``n`` pages sharing one content stream that shows a line of text."""
    stream = b"BT /F1 12 Tf 72 720 Td (The Rhine at Basel.) Tj ET"
    return pdf_bytes(stream, n)


def pdf_stream_bomb(expanded: int) -> bytes:
    """A one-page PDF, written here, whose content stream shows one line of text and then ``expanded`` bytes of
    whitespace, FlateDecode'd to a few hundred KB (no /DL; its /Length is the compressed size)."""
    comp = zlib.compressobj(9)
    parts = [comp.compress(b"BT /F1 12 Tf 72 720 Td (The Rhine at Basel.) Tj ET\n")]
    block = b" " * (1 << 20)
    for _ in range(expanded >> 20):
        parts.append(comp.compress(block))
    return pdf_bytes(b"".join(parts) + comp.flush(), 1, b" /Filter /FlateDecode")


def pdf_bytes(stream: bytes, pages: int, filters: bytes = b"") -> bytes:
    """A PDF of ``pages`` pages, each drawing the content ``stream`` (objects: catalog, page tree, font, stream,
    then the pages), with its cross-reference table."""
    kids = b" ".join(b"%d 0 R" % (5 + i) for i in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d%s >>\nstream\n" % (len(stream), filters) + stream + b"\nendstream",
    ]
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 3 0 R >> >> >>"
    objects += [page] * pages
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


# --- PDF stream filters (the decoders of kbgraph.ingest.bounds_pdf, checked against these and against MuPDF) ----


def lzw_encode(data: bytes) -> bytes:
    """PDF LZWDecode's encoding (EarlyChange 1)."""
    table = {bytes([i]): i for i in range(256)}
    width, bits, nbits, out, w = 9, 0, 0, bytearray(), b""

    def put(code: int) -> None:
        nonlocal bits, nbits
        bits, nbits = ((bits << width) | code) & 0xFFFFFFFF, nbits + width
        while nbits >= 8:
            nbits -= 8
            out.append((bits >> nbits) & 0xFF)

    put(256)
    for byte in data:
        wc = w + bytes([byte])
        if wc in table:
            w = wc
            continue
        put(table[w])
        table[wc] = len(table) + 2  # (codes 256 and 257 are clear and end)
        if len(table) + 2 >= 1 << width:
            width = min(width + 1, 12)
        if len(table) + 2 >= 4094:
            put(256)
            table, width = {bytes([i]): i for i in range(256)}, 9
        w = bytes([byte])
    if w:
        put(table[w])
    put(257)
    if nbits:
        out.append((bits << (8 - nbits)) & 0xFF)
    return bytes(out)


def run_length_encode(data: bytes) -> bytes:
    """PDF RunLengthDecode's encoding: 128-byte blocks, a repeated block as one run."""
    out = bytearray()
    for i in range(0, len(data), 128):
        block = data[i : i + 128]
        if block == block[:1] * len(block) and len(block) > 1:
            out += bytes([257 - len(block)]) + block[:1]
        else:
            out += bytes([len(block) - 1]) + block
    return bytes(out + b"\x80")


#: A content stream's worth of text and every byte value, to encode.
STREAM_TEXT = b"BT /F1 12 Tf (The Rhine at Basel) Tj ET\n" * 5_000 + b"\0" * 300 + bytes(range(256)) * 40
#: (filter chain as named in /Filter, its encoding)
ENCODINGS: list[tuple[list[str], Callable[[bytes], bytes]]] = [
    (["FlateDecode"], zlib.compress),
    (["Fl"], zlib.compress),  # the abbreviation (of inline images; MuPDF reads it in a stream too)
    (["LZWDecode"], lzw_encode),
    (["RunLengthDecode"], run_length_encode),
    (["ASCII85Decode"], lambda d: base64.a85encode(d) + b"~>"),
    (["ASCIIHexDecode"], lambda d: binascii.hexlify(d) + b">"),
    (["ASCII85Decode", "FlateDecode"], lambda d: base64.a85encode(zlib.compress(d)) + b"~>"),
    (["ASCIIHexDecode", "LZWDecode"], lambda d: binascii.hexlify(lzw_encode(d)) + b">"),
]
