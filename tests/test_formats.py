"""Every common office format: read with a kept library, or refused with one line naming why and the fix;
in a directory ingest every file found is accounted for (ingested, updated, unchanged, failed, skipped).

Files are made here under tmp_path with the libraries that write them (openpyxl, pandas/odfpy, python-docx,
the standard library's zipfile and email), or shipped under tests/data (an Outlook .msg and a legacy .xls,
which nothing kbgraph depends on can write: tests/data/make_fixtures.py made them).
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import shutil
import subprocess
import sys
import wave
import zipfile
from email.message import EmailMessage
from email.mime.message import MIMEMessage
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from pathlib import Path

import pytest

from kbgraph.errors import IngestError
from kbgraph.ingest.decode import decode_text
from kbgraph.ingest.parse import ParsedDocument, parse_file, skip_reason
from kbgraph.ingest.parse_sheets import BLOCK_ROWS
from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings

DATA = Path(__file__).resolve().parent / "data"
MAX = 50_000_000
OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def _raises(path: Path, pattern: str) -> str:
    with pytest.raises(IngestError, match=pattern) as info:
        parse_file(path, max_bytes=MAX)
    msg = str(info.value)
    assert "\n" not in msg and path.name in msg, msg
    return msg


def _texts(doc: ParsedDocument) -> list[str]:
    return [e.text for e in doc.elements]


# --- files of each kind ----------------------------------------------------------------------------------


def make_xlsx(path: Path, rows: int = 100) -> Path:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Revenue"
    ws.append(["Quarterly revenue by region"])  # a title line above the header
    ws.append([])
    ws.append(["Region", "Quarter", "Revenue (kEUR)", "Booked", None, None])
    for i in range(rows):
        ws.append([f"Region {i}", f"Q{i % 4 + 1}", 1000 + i * 1.5, dt.date(2023, 1, 1) + dt.timedelta(days=i)])
    wb.create_sheet("Empty")
    staff = wb.create_sheet("Staff")
    staff.append(["Name", "Role", "Remote"])
    staff.append(["Ada Lovelace", "Lead", True])
    wb.save(path)
    return path


def make_ods(path: Path) -> Path:
    import pandas as pd

    with pd.ExcelWriter(path, engine="odf") as writer:
        pd.DataFrame({"City": ["Basel", "Bern"], "Population": [177_000, 134_000]}).to_excel(
            writer, sheet_name="Cities", index=False
        )
    return path


def make_odt(path: Path) -> Path:
    from odf import dc
    from odf.opendocument import OpenDocumentText
    from odf.style import Style, TextProperties
    from odf.table import Table, TableCell, TableColumn, TableRow
    from odf.text import H, P

    doc = OpenDocumentText()
    doc.meta.addElement(dc.Title(text="Harbour Report"))
    styles = []
    for n, size in ((1, "18pt"), (2, "14pt")):
        st = Style(name=f"Heading {n}", family="paragraph")
        st.addElement(TextProperties(fontsize=size, fontweight="bold"))
        doc.styles.addElement(st)
        styles.append(st)
    doc.text.addElement(H(outlinelevel=1, stylename=styles[0], text="Harbour Report"))
    doc.text.addElement(P(text="The Rhine harbour in Basel handled 6 million tonnes of cargo in 2023."))
    doc.text.addElement(H(outlinelevel=2, stylename=styles[1], text="Cargo"))
    table = Table(name="Cargo")
    table.addElement(TableColumn(numbercolumnsrepeated=2))
    for row in (("Good", "Tonnes"), ("Grain", "1200"), ("Oil", "3400")):
        tr = TableRow()
        table.addElement(tr)
        for value in row:
            cell = TableCell()
            cell.addElement(P(text=value))
            tr.addElement(cell)
    doc.text.addElement(table)
    doc.save(str(path))
    return path


def make_epub(path: Path) -> Path:
    opf = """<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
 <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
  <dc:identifier id="id">urn:uuid:0b6f1c9e-2a4e-4b8e-9d0a-1f2e3d4c5b6a</dc:identifier>
  <dc:title>River Tales</dc:title><dc:language>en</dc:language>
  <meta property="dcterms:modified">2024-01-01T00:00:00Z</meta>
 </metadata>
 <manifest>
  <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
  <item id="c1" href="ch1.xhtml" media-type="application/xhtml+xml"/>
 </manifest>
 <spine><itemref idref="c1"/></spine>
</package>"""
    chapter = """<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>One</title></head><body>
<h1>The Ferry</h1><p>The ferryman of Basel crosses the Rhine without an engine, pulled by the current.</p>
<h2>Fares</h2>
<table><tr><th>Ticket</th><th>Price</th></tr><tr><td>Adult</td><td>1.60 CHF</td></tr></table>
</body></html>"""
    nav = """<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><head><title>Nav</title></head>
<body><nav epub:type="toc"><ol><li><a href="ch1.xhtml">The Ferry</a></li></ol></nav></body></html>"""
    container = """<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>
<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>"""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("mimetype", "application/epub+zip")
        z.writestr("META-INF/container.xml", container)
        z.writestr("OEBPS/content.opf", opf)
        z.writestr("OEBPS/nav.xhtml", nav)
        z.writestr("OEBPS/ch1.xhtml", chapter)
    return path


RTF = (
    r"{\rtf1\ansi\deff0{\fonttbl{\f0 Times New Roman;}}\f0\fs24 {\b Lab Notes}\par "
    r"The sample from the Rhine contained 12 mg of nitrate per litre, Z\'fcrich reported.\par}"
)
RST = "Lab Notes\n=========\n\nThe sample contained nitrate.\n\nMethods\n-------\n\nWe used ion chromatography.\n"
ORG = "* Lab Notes\nThe sample contained nitrate.\n** Methods\nWe used ion chromatography.\n"
XML = (
    '<?xml version="1.0" encoding="UTF-8"?><catalog><book id="1"><title>River Tales</title>'
    "<author>Ada Lovelace</author><summary>Stories of the Rhine ferries of Basel.</summary>"
    "</book></catalog>"
)


def wav_bytes() -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x00" * 800)
    return buf.getvalue()


def eml_with_audio() -> bytes:
    m = EmailMessage()
    m["From"], m["To"], m["Subject"] = "ada@example.com", "grace@example.com", "Voice memo"
    m.set_content("Please listen to the attached memo about the Basel office move.")
    m.add_attachment(wav_bytes(), maintype="audio", subtype="wav", filename="memo.wav")
    m.add_attachment(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, maintype="image", subtype="png", filename="logo.png")
    m.add_attachment(
        b"Agenda: budget, hiring, the harbour lease.", maintype="text", subtype="plain", filename="agenda.txt"
    )
    m.add_attachment(
        b"PK\x03\x04 not really a document",
        maintype="application",
        subtype="vnd.openxmlformats-officedocument.wordprocessingml.document",
        filename="broken.docx",
    )
    return m.as_bytes()


def eml_digest() -> bytes:
    d = MIMEMultipart("digest")
    d["From"], d["To"], d["Subject"] = "list@example.com", "grace@example.com", "Rivers digest, issue 42"
    for i, river in enumerate(("Rhine", "Aare")):
        inner = MIMEText(f"The {river} flows through Switzerland; message {i + 1} of the digest.")
        inner["From"], inner["Subject"] = f"member{i}@example.com", f"About the {river}"
        d.attach(MIMEMessage(inner))
    return d.as_bytes()


def docx_with_broken_grid(path: Path) -> Path:
    """A DOCX whose table python-docx cannot lay out: a vertical merge that continues from no cell above
    (first row) and a cell whose gridSpan is not a number."""
    import docx
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    d = docx.Document()
    d.add_heading("Budget report", 1)
    d.add_paragraph("Spending rose in 2023.")
    table = d.add_table(rows=3, cols=3)
    for r, row in enumerate(table.rows):
        for c, cell in enumerate(row.cells):
            cell.text = f"cell {r}-{c}"
    tc = table.rows[0]._tr.tc_lst[1]
    tc.get_or_add_tcPr().append(OxmlElement("w:vMerge"))  # "continue" with nothing above
    span = OxmlElement("w:gridSpan")
    span.set(qn("w:val"), "two")
    table.rows[2]._tr.tc_lst[0].get_or_add_tcPr().append(span)
    d.add_heading("Outlook", 2)
    d.add_paragraph("We expect growth in Basel.")
    d.save(path)  # type: ignore[arg-type]
    return path


# --- parsing -------------------------------------------------------------------------------------------


def test_spreadsheets_are_tables_with_their_header_rows(tmp_path: Path) -> None:
    doc = parse_file(make_xlsx(tmp_path / "revenue.xlsx"), max_bytes=MAX)
    assert doc.title == "revenue" and doc.mime.endswith("spreadsheetml.sheet")
    kinds = [(e.kind, e.text if e.kind == "heading" else None) for e in doc.elements]
    assert kinds == [("heading", "Revenue")] + [("table", None)] * 3 + [("heading", "Staff"), ("table", None)]
    blocks = [e.text for e in doc.elements[1:4]]
    for block in blocks:  # each row block repeats the header and says which rows it holds
        assert "| Region | Quarter | Revenue (kEUR) | Booked |\n|---|---|---|---|" in block, block
    assert blocks[0].startswith(f"**Quarterly revenue by region (rows 1-{BLOCK_ROWS} of 100)**")
    assert "(rows 81-100 of 100)" in blocks[2]
    assert "| Region 0 | Q1 | 1000 | 2023-01-01 |" in blocks[0]
    assert "| Region 99 | Q4 | 1148.5 | 2023-04-10 |" in blocks[2]
    assert doc.elements[5].text == "| Name | Role | Remote |\n|---|---|---|\n| Ada Lovelace | Lead | TRUE |"

    xls = parse_file(DATA / "ledger.xls", max_bytes=MAX)
    assert [e.text for e in xls.elements if e.kind == "heading"] == ["Revenue", "Staff"]
    assert "| Basel | Q2 | 1410.5 |" in xls.elements[1].text and "| Ada Lovelace | 2021-04-01 |" in xls.elements[3].text

    ods = parse_file(make_ods(tmp_path / "cities.ods"), max_bytes=MAX)
    assert _texts(ods) == ["Cities", "| City | Population |\n|---|---|\n| Basel | 177000 |\n| Bern | 134000 |"]

    csv_file = tmp_path / "people.csv"  # semicolons and Windows-1252, as Excel writes them in Europe
    csv_file.write_bytes('Name;City;Note\nZoë;Zürich;"says ""hi""; twice"\nAda;London;\n'.encode("cp1252"))
    assert _texts(parse_file(csv_file, max_bytes=MAX)) == [
        '| Name | City | Note |\n|---|---|---|\n| Zoë | Zürich | says "hi"; twice |\n| Ada | London |  |'
    ]
    tsv = tmp_path / "people.tsv"
    tsv.write_text("Name\tAge\nAda\t36\n\nGrace\t85\n", encoding="utf-8")
    assert _texts(parse_file(tsv, max_bytes=MAX)) == ["| Name | Age |\n|---|---|\n| Ada | 36 |\n| Grace | 85 |"]

    (tmp_path / "blank.csv").write_text(",,\n,,\n", encoding="utf-8")
    _raises(tmp_path / "blank.csv", r"no data in blank\.csv")
    (tmp_path / "broken.xlsx").write_bytes(b"PK\x03\x04" + os.urandom(500))
    _raises(tmp_path / "broken.xlsx", r"corrupt or unreadable \.xlsx broken\.xlsx")
    (tmp_path / "locked.xlsx").write_bytes(OLE + os.urandom(500))
    _raises(tmp_path / "locked.xlsx", r"password-protected")


def test_odt_rtf_epub_rst_org_xml(tmp_path: Path) -> None:
    odt = parse_file(make_odt(tmp_path / "harbour.odt"), max_bytes=MAX)
    assert [(e.kind, e.level) for e in odt.elements] == [
        ("heading", 1),
        ("text", None),
        ("heading", 2),
        ("table", None),
    ]
    assert odt.title == "Harbour Report" and "| Grain | 1200 |" in odt.elements[3].text

    (tmp_path / "notes.rtf").write_text(RTF, encoding="ascii")
    assert _texts(parse_file(tmp_path / "notes.rtf", max_bytes=MAX)) == [
        "Lab Notes",
        "The sample from the Rhine contained 12 mg of nitrate per litre, Zürich reported.",
    ]

    epub = parse_file(make_epub(tmp_path / "tales.epub"), max_bytes=MAX)
    assert epub.title == "River Tales"
    assert [e.text for e in epub.elements if e.kind == "heading"] == ["The Ferry", "Fares"]
    assert any(e.kind == "table" and "| Adult | 1.60 CHF |" in e.text for e in epub.elements)

    for ext, text in ((".rst", RST), (".org", ORG)):
        (tmp_path / f"lab{ext}").write_bytes(text.encode("latin-1"))
        doc = parse_file(tmp_path / f"lab{ext}", max_bytes=MAX)
        assert [(e.kind, e.level, e.text) for e in doc.elements] == [
            ("heading", 1, "Lab Notes"),
            ("text", None, "The sample contained nitrate."),
            ("heading", 2, "Methods"),
            ("text", None, "We used ion chromatography."),
        ], ext

    (tmp_path / "catalog.xml").write_text(XML, encoding="utf-8")
    assert _texts(parse_file(tmp_path / "catalog.xml", max_bytes=MAX)) == [
        "River Tales",
        "Ada Lovelace",
        "Stories of the Rhine ferries of Basel.",
    ]

    (tmp_path / "bad.epub").write_bytes(b"PK\x03\x04" + os.urandom(300))
    _raises(tmp_path / "bad.epub", r"corrupt or unreadable \.epub bad\.epub")
    (tmp_path / "bad.odt").write_bytes(os.urandom(300))
    _raises(tmp_path / "bad.odt", r"corrupt or unreadable \.odt bad\.odt")
    (tmp_path / "bad.xml").write_text("<a><b>unclosed", encoding="utf-8")
    _raises(tmp_path / "bad.xml", r"bad\.xml")


def test_outlook_msg_keeps_body_and_text_attachment_and_skips_audio() -> None:
    doc = parse_file(DATA / "memo.msg", max_bytes=MAX)
    assert doc.title == "Basel office move" and doc.mime == "application/vnd.ms-outlook"
    texts = _texts(doc)
    assert texts[0].startswith('From: "Ada Lovelace" <ada@example.com>. To: grace@example.com. Date: 2025-02-10')
    assert "The Basel office moves to the Rhine harbour on 3 March 2025. Movers arrive at 8:00." in texts
    i = texts.index("Attachment: floor-plan.txt")
    assert doc.elements[i].kind == "heading" and "archive room is on level 2" in texts[i + 1]
    assert len(doc.warnings) == 1 and "attachment 'voice-note.wav' (audio/wav) skipped" in doc.warnings[0]
    assert "speech-to-text" in doc.warnings[0]


def test_email_attachments_digest_and_utf16(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "memo.eml").write_bytes(eml_with_audio())
    with monkeypatch.context() as m:  # without Tesseract on PATH (tests/test_ocr.py reads images)
        m.setenv("PATH", str(tmp_path / "no-bin"))
        doc = parse_file(tmp_path / "memo.eml", max_bytes=MAX)
    texts = _texts(doc)
    assert "Please listen to the attached memo about the Basel office move." in texts
    assert texts[texts.index("Attachment: agenda.txt") + 1] == "Agenda: budget, hiring, the harbour lease."
    warned = {w.split("'")[1]: w for w in doc.warnings}
    assert set(warned) == {"memo.wav", "logo.png", "broken.docx"}, doc.warnings
    assert "speech-to-text" in warned["memo.wav"] and "no OCR configured" in warned["logo.png"]
    assert "corrupt or unreadable .docx broken.docx" in warned["broken.docx"]

    (tmp_path / "digest.eml").write_bytes(eml_digest())
    digest = parse_file(tmp_path / "digest.eml", max_bytes=MAX)
    assert digest.title == "Rivers digest, issue 42" and digest.warnings == []
    headings = [e.text for e in digest.elements if e.kind == "heading"]
    assert headings == ["E-mail: About the Rhine", "E-mail: About the Aare"]
    assert "The Aare flows through Switzerland; message 2 of the digest." in _texts(digest)

    mail = (
        "From: Jürg <jurg@example.ch>\r\nTo: ada@example.com\r\nSubject: Grüße aus Zürich\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n\r\nDer Bericht über die Brücke ist fertig.\r\n"
    )
    for enc, bom in (("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff")):
        (tmp_path / f"{enc}.eml").write_bytes(bom + mail.encode(enc))
        doc = parse_file(tmp_path / f"{enc}.eml", max_bytes=MAX)
        assert doc.title == "Grüße aus Zürich" and "Der Bericht über die Brücke ist fertig." in _texts(doc), enc

    (tmp_path / "nothing.eml").write_text("just a line of text without headers\n", encoding="utf-8")
    _raises(tmp_path / "nothing.eml", r"not an e-mail: nothing\.eml has no RFC 822 headers")


def test_utf16_utf32_text_is_decoded_and_binary_refused(tmp_path: Path) -> None:
    text = "Grüße aus München. Das Wetter ist schön.\n\nZweiter Absatz über Straßen."
    cases = {
        "u16le": b"\xff\xfe" + text.encode("utf-16-le"),
        "u16be": b"\xfe\xff" + text.encode("utf-16-be"),
        "u32le": b"\xff\xfe\x00\x00" + text.encode("utf-32-le"),
        "u32be": b"\x00\x00\xfe\xff" + text.encode("utf-32-be"),
        "u16le-nobom": text.encode("utf-16-le"),
    }
    for stem, data in cases.items():
        for ext in (".txt", ".md"):
            path = tmp_path / f"{stem}{ext}"
            path.write_bytes(data)
            assert _texts(parse_file(path, max_bytes=MAX)) == text.split("\n\n"), path.name
    assert decode_text("ünïcödé, 12 €".encode("utf-8-sig"), "x") == "ünïcödé, 12 €"

    (tmp_path / "blob.txt").write_bytes(os.urandom(2048))
    _raises(tmp_path / "blob.txt", r"cannot decode blob\.txt: binary data")
    (tmp_path / "nul.txt").write_bytes(b"header\x00\x01\x02 data " * 50)
    _raises(tmp_path / "nul.txt", r"nul\.txt: binary data \(NUL bytes\)")
    (tmp_path / "fake16.txt").write_bytes(b"\xff\xfe" + b"\x00\xd8" + b"a\x00")  # a lone surrogate
    _raises(tmp_path / "fake16.txt", r"cannot decode fake16\.txt: it starts with a UTF-16 byte-order mark")


def test_docx_table_with_broken_grid_keeps_the_document(tmp_path: Path) -> None:
    doc = parse_file(docx_with_broken_grid(tmp_path / "budget.docx"), max_bytes=MAX)
    assert [(e.kind, e.text if e.kind != "table" else None) for e in doc.elements] == [
        ("heading", "Budget report"),
        ("text", "Spending rose in 2023."),
        ("table", None),
        ("heading", "Outlook"),
        ("text", "We expect growth in Basel."),
    ]
    table = doc.elements[2].text
    assert "| cell 0-0 | cell 0-1 | cell 0-2 |" in table and "| cell 2-0 | cell 2-1 | cell 2-2 |" in table
    assert len(doc.warnings) == 1 and doc.warnings[0].startswith("table 1 (after 'Spending rose in 2023.')")
    assert "irregular merged-cell grid" in doc.warnings[0]


def test_unread_kinds_say_why_and_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "old.doc").write_bytes(OLE + os.urandom(1024))
    (tmp_path / "old.ppt").write_bytes(OLE + os.urandom(1024))
    if shutil.which("soffice") or shutil.which("libreoffice"):  # junk in an OLE box is not converted
        _raises(tmp_path / "old.doc", r"corrupt or unreadable \.doc old\.doc: not a legacy Word file")
    with monkeypatch.context() as m:  # without LibreOffice on PATH
        m.setenv("PATH", str(tmp_path / "no-bin"))
        msg = _raises(tmp_path / "old.doc", r"install LibreOffice .* or save the file as \.docx")
        assert "legacy Word .doc needs LibreOffice" in msg
        _raises(tmp_path / "old.ppt", r"legacy PowerPoint \.ppt needs LibreOffice.*save the file as \.pptx")
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # without Tesseract (tests/test_ocr.py reads images)
    for name, pattern in (
        ("photo.jpg", r"image: no OCR configured.*tesseract"),
        ("backup.zip", r"archive: kbgraph does not unpack archives: extract it"),
        ("data.json", r"JSON data, not a document.*\.jsonl"),
        ("talk.mp3", r"no speech-to-text model configured"),
        ("macro.docm", r"save it as \.docx"),
        ("script.py", r"unsupported file type '\.py'.*save a copy as \.txt"),
        ("Makefile", r"no file extension"),
    ):
        (tmp_path / name).write_bytes(b"x" * 10)
        msg = _raises(tmp_path / name, pattern)
        assert skip_reason(tmp_path / name) in msg  # type: ignore[operator]
    assert skip_reason(tmp_path / "~$report.docx").startswith("Office lock file")  # type: ignore[union-attr]
    for name in ("a.pdf", "a.xlsx", "a.csv", "a.msg", "a.epub", "a.jsonl"):
        assert skip_reason(tmp_path / name) is None, name


@pytest.mark.slow  # LibreOffice (soffice) writes and converts the files
def test_legacy_doc_and_ppt_are_converted_with_libreoffice(tmp_path: Path) -> None:
    """With LibreOffice on PATH a legacy .doc/.ppt is converted and read (made here by LibreOffice from a
    .docx/.pptx that python-docx/python-pptx wrote). CI installs LibreOffice: there a missing one fails."""
    import docx
    import pptx

    if not (shutil.which("soffice") or shutil.which("libreoffice")):
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("LibreOffice (soffice) is not installed; .ci/run installs libreoffice-writer-nogui")
        pytest.skip("LibreOffice not installed")

    d = docx.Document()
    d.add_heading("Ferry timetable", 1)
    d.add_paragraph("The first ferry leaves Basel at 9:00.")
    d.save(tmp_path / "t.docx")  # type: ignore[arg-type]
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Harbour budget"
    slide.placeholders[1].text = "The harbour needs 2 million francs for new cranes."
    deck.save(tmp_path / "t.pptx")  # type: ignore[arg-type]
    binary = shutil.which("soffice") or shutil.which("libreoffice")
    profile = f"-env:UserInstallation={(tmp_path / 'p').as_uri()}"
    for src, fmt in (("t.docx", "doc"), ("t.pptx", "ppt")):
        cmd = [
            binary,
            profile,
            "--headless",
            "--convert-to",
            fmt,
            "--outdir",
            str(tmp_path / "out"),
            str(tmp_path / src),
        ]
        subprocess.run(cmd, check=True, timeout=180, capture_output=True)  # type: ignore[arg-type]
    doc = parse_file(tmp_path / "out" / "t.doc", max_bytes=MAX)
    assert doc.mime == "application/msword" and doc.title == "Ferry timetable"
    assert "The first ferry leaves Basel at 9:00." in _texts(doc)
    ppt = parse_file(tmp_path / "out" / "t.ppt", max_bytes=MAX)
    assert "Harbour budget" in _texts(ppt) and "The harbour needs 2 million francs for new cranes." in _texts(ppt)


# --- a directory: every file accounted for ---------------------------------------------------------------


def _office_dir(root: Path) -> dict[str, str]:
    """A folder like a shared drive's, and the outcome expected for each file (by name)."""
    d = root / "share"
    (d / "mail").mkdir(parents=True)
    (d / ".git").mkdir()
    (d / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    (d / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    make_xlsx(d / "revenue.xlsx", rows=5)
    shutil.copy(DATA / "ledger.xls", d / "ledger.xls")
    shutil.copy(DATA / "memo.msg", d / "mail" / "memo.msg")
    make_ods(d / "cities.ods")
    make_odt(d / "harbour.odt")
    make_epub(d / "tales.epub")
    (d / "people.csv").write_text("Name,City\nAda,London\n", encoding="utf-8")
    (d / "people.tsv").write_text("Name\tCity\nGrace\tNew York\n", encoding="utf-8")
    (d / "notes.rtf").write_text(RTF, encoding="ascii")
    (d / "lab.rst").write_text(RST, encoding="utf-8")
    (d / "lab.org").write_text(ORG, encoding="utf-8")
    (d / "catalog.xml").write_text(XML, encoding="utf-8")
    (d / "mail" / "memo.eml").write_bytes(eml_with_audio())
    (d / "mail" / "digest.eml").write_bytes(eml_digest())
    text = "Grüße aus München. Die Brücke über den Rhein wird 2025 erneuert."
    (d / "utf16.txt").write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    (d / "utf32.txt").write_bytes(b"\xff\xfe\x00\x00" + text.replace("2025", "2026").encode("utf-32-le"))
    docx_with_broken_grid(d / "budget.docx")
    (d / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(200))
    with zipfile.ZipFile(d / "backup.zip", "w") as z:
        z.writestr("inside.txt", "not unpacked")
    (d / "config.json").write_text('{"a": 1}', encoding="utf-8")
    (d / "old.doc").write_bytes(OLE + os.urandom(512))
    (d / "broken.xlsx").write_bytes(b"PK\x03\x04" + os.urandom(300))
    (d / "gone.txt").symlink_to(d / "missing-target.txt")
    expected = {
        name: "ingested"
        for name in (
            "revenue.xlsx",
            "ledger.xls",
            "memo.msg",
            "cities.ods",
            "harbour.odt",
            "tales.epub",
            "people.csv",
            "people.tsv",
            "notes.rtf",
            "lab.rst",
            "lab.org",
            "catalog.xml",
            "memo.eml",
            "digest.eml",
            "utf16.txt",
            "utf32.txt",
            "budget.docx",
        )
    }
    ocr = shutil.which("tesseract") is not None  # a broken image is then read, and fails
    expected.update(
        {
            "photo.png": "failed" if ocr else "skipped",
            "backup.zip": "skipped",
            "config.json": "skipped",
            "gone.txt": "skipped",
            ".DS_Store": "skipped",
            "broken.xlsx": "failed",
        }
    )
    expected["old.doc"] = "failed" if (shutil.which("soffice") or shutil.which("libreoffice")) else "skipped"
    return expected


def test_directory_ingest_accounts_for_every_file(backend_settings: Settings, tmp_path: Path) -> None:
    expected = _office_dir(tmp_path)
    share = tmp_path / "share"
    kb = KnowledgeBase(settings=backend_settings)
    kb.reset()
    try:
        report = kb.ingest([share], progress=False)
        got = {Path(f.path).name: f for f in report.files}
        assert {n: f.outcome for n, f in got.items()} == expected
        assert len(report.files) == len(expected)  # .git is not a file of the share; .DS_Store is excluded
        assert report.skipped == sum(1 for o in expected.values() if o == "skipped")
        failed = sum(1 for o in expected.values() if o == "failed")
        assert (report.added, report.failed, report.exit_code) == (17, failed, 1)
        assert ("corrupt or unreadable image photo.png" if shutil.which("tesseract") else "no OCR configured") in (  # type: ignore[operator]
            got["photo.png"].reason
        )
        assert "extract it" in got["backup.zip"].reason  # type: ignore[operator]
        assert "broken symbolic link" in got["gone.txt"].reason  # type: ignore[operator]
        assert got[".DS_Store"].reason == "excluded by the default rules (macOS folder settings): .DS_Store"
        assert got["broken.xlsx"].reason.startswith("corrupt or unreadable .xlsx broken.xlsx")  # type: ignore[union-attr]
        assert all(f.documents == 1 and f.chunks >= 1 for f in got.values() if f.outcome == "ingested")  # type: ignore[operator]
        assert [w.split("'")[1] for w in got["memo.eml"].warnings] == ["memo.wav", "logo.png", "broken.docx"]
        assert got["budget.docx"].warnings and got["budget.docx"].warnings[0].startswith("table 1")
        assert got["memo.msg"].warnings and got["revenue.xlsx"].warnings == []
        # nothing half-written: the failed and skipped files have no document; every layer is linked
        uris = {r["uri"].rsplit("/", 1)[-1] for r in kb.store.run("ingest/list_documents")}
        assert uris == {n for n, o in expected.items() if o == "ingested"}
        assert kb.store.orphans() == []
        hits = kb.store.fulltext_search("Chunk", "Zurich Basel Revenue", k=10)
        assert any("| Basel | Q2 | 1410.5 |" in h.properties["text"] for h in hits)
        # the second run: everything unchanged, the same files skipped and failed, still reported
        again = kb.ingest([share], progress=False)
        outcomes = {Path(f.path).name: f.outcome for f in again.files}
        assert outcomes == {n: ("unchanged" if o == "ingested" else o) for n, o in expected.items()}
        assert again.added == 0 and again.unchanged == 17
    finally:
        kb.close()


def test_skipped_files_alone_exit_0_and_the_cli_lists_them(falkor_settings: Settings, tmp_path: Path) -> None:
    """`kbgraph ingest --json` lists every file; the human summary names each skipped file, one line each."""
    settings = falkor_settings.updated({"name": "formats_cli"})
    d = tmp_path / "inbox"
    d.mkdir()
    (d / "note.txt").write_text("The Basel ferry runs on the current of the Rhine.", encoding="utf-8")
    (d / "scan.jpg").write_bytes(b"\xff\xd8\xff" + os.urandom(100))
    (d / "archive.tar.gz").write_bytes(os.urandom(100))
    env = {
        **os.environ,
        "KBGRAPH_HOME": str(settings.home),
        "KBGRAPH_NAME": settings.name,
        "KBGRAPH_OCR": "off",
        "KBGRAPH_DATA_DIR": str(settings.kb_dir),
        "KBGRAPH_FALKOR_IDLE_TIMEOUT": "0",
        "KBGRAPH_EMBEDDING_CACHE_DIR": str(settings.embedding.embedding_cache_dir),
    }
    KnowledgeBase(settings=settings).reset()
    run = subprocess.run(
        [sys.executable, "-m", "kbgraph.cli", "ingest", "--json", str(d)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout)
    assert report["skipped"] == 2 and report["added"] == 1 and report["failed"] == 0
    assert {(Path(f["path"]).name, f["outcome"]) for f in report["files"]} == {
        ("note.txt", "ingested"),
        ("scan.jpg", "skipped"),
        ("archive.tar.gz", "skipped"),
    }
    run = subprocess.run(
        [sys.executable, "-m", "kbgraph.cli", "ingest", str(d)], env=env, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "1 unchanged" in run.stdout and "2 skipped" in run.stdout
    lines = [line for line in run.stderr.splitlines() if line.startswith("skipped:")]
    assert len(lines) == 2 and any("scan.jpg: image: OCR is off" in line for line in lines), run.stderr


# --- issue 31: UTF-16 without a BOM, .ndjson, passage-corpus fields, control characters ------------------


def test_utf16_without_bom_le_and_be_is_text(tmp_path: Path) -> None:
    """ASCII text saved as UTF-16 without a byte-order mark (LE and BE; a .txt and an e-mail) is read as text
    (NUL pattern of ASCII text), not refused as binary data."""
    text = "Fake text for testing.\n\nThe ferry leaves Basel at nine o'clock."
    mail = (
        "From: ada@example.com\r\nTo: bob@example.com\r\nSubject: Ferry times\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n\r\nThe ferry leaves Basel at nine o'clock.\r\n"
    )
    for enc in ("utf-16-le", "utf-16-be"):
        (tmp_path / f"{enc}.txt").write_bytes(text.encode(enc))
        assert _texts(parse_file(tmp_path / f"{enc}.txt", max_bytes=MAX)) == text.split("\n\n"), enc
        (tmp_path / f"{enc}.eml").write_bytes(mail.encode(enc))
        doc = parse_file(tmp_path / f"{enc}.eml", max_bytes=MAX)
        assert doc.title == "Ferry times" and "The ferry leaves Basel at nine o'clock." in _texts(doc), enc
    assert decode_text("a\u00e9b".encode("utf-16-be"), "x") == "a\u00e9b"
    (tmp_path / "nul.txt").write_bytes(b"header\x00\x01\x02 data " * 50)  # NULs, but not the pattern of UTF-16
    _raises(tmp_path / "nul.txt", r"binary data \(NUL bytes\)")


def test_ndjson_is_json_lines(tmp_path: Path) -> None:
    from kbgraph.ingest.parse import parse_passages_jsonl
    from kbgraph.ingest.report import FileError, FileOutcome
    from kbgraph.ingest.sources import discover
    from kbgraph.ingest.unchanged import is_corpus

    d = tmp_path / "corpus"
    d.mkdir()
    lines = [
        {"id": "p1", "title": "Rhine", "text": "The Rhine flows through Basel."},
        {"id": "p2", "title": "Aare", "text": "The Aare flows through Bern."},
    ]
    (d / "rivers.ndjson").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    errors: list[FileError] = []
    skipped: list[FileOutcome] = []
    assert [p.name for p in discover([d], errors, skipped)] == ["rivers.ndjson"] and not skipped and not errors
    assert skip_reason(d / "rivers.ndjson") is None and is_corpus(d / "rivers.ndjson")
    docs = list(parse_passages_jsonl(d / "rivers.ndjson"))
    assert [x.title for x in docs] == ["Rhine", "Aare"] and docs[0].uri.endswith("rivers.ndjson#p1")


def test_jsonl_that_is_no_passage_corpus_names_the_fields_it_expected(tmp_path: Path) -> None:
    from kbgraph.ingest.parse import parse_passages_jsonl

    path = tmp_path / "events.jsonl"
    path.write_text('{"ts": 1, "event": "login", "user": "ada"}\n', encoding="utf-8")
    with pytest.raises(IngestError) as info:
        list(parse_passages_jsonl(path))
    msg = str(info.value)
    assert "events.jsonl line 1" in msg and "not a passage corpus" in msg, msg
    assert all(f'"{k}"' in msg for k in ("id", "title", "text")), msg
    assert "event, ts, user" in msg, msg  # the keys it found
    path.write_text('["a", "list"]\n', encoding="utf-8")
    with pytest.raises(IngestError, match=r'line 1: not a passage corpus.*"text".*found a JSON array'):
        list(parse_passages_jsonl(path))


def test_control_characters_are_stripped_from_every_parser(tmp_path: Path) -> None:
    """C0 control characters (a PDF's bullets as U+0007, form feeds, escapes) never reach a chunk; tab,
    newline and CR stay whitespace."""
    from kbgraph.ingest.parse import parse_passages_jsonl

    bad = "\x07 First point\x01 of\x0cthe list\x1b.\tTabbed."
    (tmp_path / "a.txt").write_text(f"{bad}\n\nSecond\x02 paragraph.", encoding="utf-8")
    (tmp_path / "a.md").write_text(f"# Title\x07 here\n\n{bad}\n", encoding="utf-8")
    (tmp_path / "a.csv").write_text("Name,Note\nAda,\x07bullet\x02\n", encoding="utf-8")
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": "1", "title": "T\x07", "text": bad}) + "\n", encoding="utf-8")
    docs = [parse_file(tmp_path / n, max_bytes=MAX) for n in ("a.txt", "a.md", "a.csv")]
    docs += list(parse_passages_jsonl(tmp_path / "a.jsonl"))
    for doc in docs:
        for text in [doc.title, *_texts(doc)]:
            assert not any(ord(c) < 32 and c not in "\t\n\r" for c in text), (doc.uri, text)
    assert _texts(docs[0])[0] == "First point of the list. Tabbed."
    assert docs[1].title == "Title here" and docs[3].title == "T"
    assert "| Ada | bullet |" in docs[2].elements[0].text


# --- issue 31: exclusions -------------------------------------------------------------------------------


def _excluded_tree(root: Path) -> Path:
    d = root / "share"
    (d / "drafts").mkdir(parents=True)
    (d / "keep").mkdir()
    for name in (
        "report.txt",
        "~$report.docx",
        "Thumbs.db",
        "notes.txt~",
        "scratch.md",
        "keep/a.md",
        "keep/b.log.md",
        "drafts/plan.txt",
        "keep/secret.txt",
        "keep/public.txt",
    ):
        (d / name).write_text("The harbour opens at nine.", encoding="utf-8")
    (d / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    (d / ".git").mkdir()
    (d / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    (d / ".kbgraphignore").write_text("# drafts stay out\ndrafts/\n*.log.md\n", encoding="utf-8")
    (d / "keep" / ".kbgraphignore").write_text("*.txt\n!public.txt\n", encoding="utf-8")
    return d


def test_exclusions_defaults_kbgraphignore_and_exclude_globs(tmp_path: Path) -> None:
    from kbgraph.ingest.report import FileError, FileOutcome
    from kbgraph.ingest.sources import discover

    d = _excluded_tree(tmp_path)
    errors: list[FileError] = []
    skipped: list[FileOutcome] = []
    found = discover([d], errors, skipped, exclude=["scratch.*"])
    assert not errors, errors
    names = sorted(p.relative_to(d.resolve()).as_posix() for p in found)
    assert names == ["keep/a.md", "keep/public.txt", "report.txt"], names
    why = {Path(s.path).relative_to(d.resolve()).as_posix(): s.reason for s in skipped}
    assert why == {
        "~$report.docx": "excluded by the default rules (Office owner file (its document is open in Office)): ~$*",
        ".DS_Store": "excluded by the default rules (macOS folder settings): .DS_Store",
        "Thumbs.db": "excluded by the default rules (Windows thumbnail cache): Thumbs.db",
        "notes.txt~": "excluded by the default rules (editor backup): *~",
        "scratch.md": "excluded by --exclude: scratch.*",
        "drafts": f"excluded by {d / '.kbgraphignore'} line 2: drafts/",
        "keep/b.log.md": f"excluded by {d / '.kbgraphignore'} line 3: *.log.md",
        "keep/secret.txt": f"excluded by {d / 'keep' / '.kbgraphignore'} line 1: *.txt",
    }, why
    # a file named explicitly is tried unless an --exclude pattern matches it
    skipped = []
    named = discover([d / "Thumbs.db", d / "scratch.md"], errors, skipped, exclude=["scratch.*"])
    assert named == [(d / "Thumbs.db").resolve()]
    assert [s.reason for s in skipped] == ["excluded by --exclude: scratch.*"]


def test_cli_exclude_option_reports_the_rule(falkor_settings: Settings, tmp_path: Path) -> None:
    """`kbgraph ingest --exclude GLOB` (repeatable) leaves files out and lists them as skipped with the rule."""
    settings = falkor_settings.updated({"name": "formats_exclude"})
    d = tmp_path / "inbox"
    d.mkdir()
    (d / "note.txt").write_text("The Basel ferry runs on the current of the Rhine.", encoding="utf-8")
    (d / "draft.txt").write_text("Not ready yet.", encoding="utf-8")
    (d / "old.md").write_text("# Old\n\nOutdated.", encoding="utf-8")
    (d / "~$note.docx").write_bytes(b"\x00" * 162)
    env = {
        **os.environ,
        "KBGRAPH_HOME": str(settings.home),
        "KBGRAPH_NAME": settings.name,
        "KBGRAPH_DATA_DIR": str(settings.kb_dir),
        "KBGRAPH_FALKOR_IDLE_TIMEOUT": "0",
        "KBGRAPH_EMBEDDING_CACHE_DIR": str(settings.embedding.embedding_cache_dir),
    }
    KnowledgeBase(settings=settings).reset()
    run = subprocess.run(
        [sys.executable, "-m", "kbgraph.cli", "ingest", "--json", "--exclude", "draft*", "--exclude", "*.md", str(d)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout)
    outcomes = {Path(f["path"]).name: (f["outcome"], f["reason"]) for f in report["files"]}
    assert outcomes == {
        "note.txt": ("ingested", None),
        "draft.txt": ("skipped", "excluded by --exclude: draft*"),
        "old.md": ("skipped", "excluded by --exclude: *.md"),
        "~$note.docx": (
            "skipped",
            "excluded by the default rules (Office owner file (its document is open in Office)): ~$*",
        ),
    }, outcomes
