"""OpenDocument text, RTF, EPUB, reStructuredText, Org, XML and legacy .doc/.ppt -> elements; and why a file
is not read at all (``unread_reason``).

- **.odt**: pandoc (bundled by pypandoc-binary) converts it to .docx, read by
  ``parse_unstructured.parse_docx`` (heading styles -> sections, tables -> Markdown).
- **.rtf, .epub, .rst, .org**: ``unstructured``'s ``partition_rtf/epub/rst/org`` (pandoc -> HTML ->
  ``partition_html``), mapped like HTML (``Title`` -> heading, ``Table`` -> Markdown). An EPUB's title is its
  package's ``dc:title``. .rst/.org text is decoded first (any encoding ``decode_text`` reads).
- **.xml**: ``partition_xml``: the text of every element in document order, no headings.
- **.doc, .ppt**: LibreOffice (``soffice`` or ``libreoffice`` on PATH) converts them headless to
  .docx/.pptx, then read as those. Without it ``unread_reason`` names the fix and a directory ingest skips
  them. A .doc that is really RTF or .docx (Word saves both under that name) is read as what it is.

Errors: ``IngestError`` naming the file and the fix.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kbgraph.errors import IngestError
from kbgraph.ingest.decode import decode_text
from kbgraph.ingest.parse_common import UNKNOWN_ERROR, RawElement
from kbgraph.text import one_line
from kbgraph.ingest import parse_unstructured as pu
from kbgraph.ingest.ocr import OCR_IMAGES, OcrOptions

if TYPE_CHECKING:
    from unstructured.documents.elements import Element

#: Seconds LibreOffice may take to convert one legacy file.
SOFFICE_TIMEOUT = 180
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_WS = re.compile(r"\s+")

IMAGES = {
    ".png",
    ".jpg",
    ".jpeg",
    ".gif",
    ".bmp",
    ".tif",
    ".tiff",
    ".webp",
    ".heic",
    ".heif",
    ".svg",
    ".ico",
    ".jp2",
    ".psd",
    ".raw",
    ".cr2",
    ".nef",
}
AUDIO_VIDEO = {
    ".wav",
    ".mp3",
    ".m4a",
    ".flac",
    ".ogg",
    ".oga",
    ".opus",
    ".aac",
    ".wma",
    ".aiff",
    ".mid",
    ".mp4",
    ".m4v",
    ".mov",
    ".avi",
    ".mkv",
    ".webm",
    ".wmv",
    ".mpg",
    ".mpeg",
    ".3gp",
}
ARCHIVES = {
    ".zip",
    ".tar",
    ".gz",
    ".tgz",
    ".bz2",
    ".tbz2",
    ".xz",
    ".txz",
    ".7z",
    ".rar",
    ".zst",
    ".lz",
    ".lzma",
    ".cab",
    ".iso",
    ".dmg",
    ".jar",
    ".whl",
}
#: Office variants read by no parser here, and the format to save them as.
OFFICE_VARIANTS = {
    ".docm": ".docx",
    ".dotx": ".docx",
    ".dotm": ".docx",
    ".pptm": ".pptx",
    ".potx": ".pptx",
    ".ppsx": ".pptx",
    ".pps": ".pptx",
    ".xltx": ".xlsx",
    ".xltm": ".xlsx",
    ".xlsb": ".xlsx",
    ".odp": ".pptx",
    ".odg": ".pdf",
    ".pages": ".docx",
    ".numbers": ".xlsx",
    ".key": ".pptx",
    ".wpd": ".docx",
    ".wps": ".docx",
    ".one": ".docx",
    ".mht": ".html",
    ".mhtml": ".html",
    ".xps": ".pdf",
    ".oxps": ".pdf",
    ".djvu": ".pdf",
}
LEGACY = {
    ".doc": ("Word", "docx", "libreoffice-writer"),
    ".ppt": ("PowerPoint", "pptx", "libreoffice-impress"),
}
#: The OLE stream every legacy file of that kind holds (LibreOffice would import anything else as text).
LEGACY_STREAM = {".doc": "WordDocument", ".ppt": "PowerPoint Document"}


def office_binary() -> str | None:
    """Path of LibreOffice's ``soffice`` (or ``libreoffice``) on PATH, else None."""
    return shutil.which("soffice") or shutil.which("libreoffice")


def unread_reason(name: str, supported: list[str], ocr: OcrOptions | None = None) -> str | None:
    """Why a file called ``name`` is not read, with the fix, in one line; None when some parser reads it.
    ``supported``: the extensions read (``parse.supported_extensions()``); ``ocr``: the ``OcrOptions`` of the
    run (why an image is not read)."""
    ext = Path(name).suffix.lower()
    if name.startswith("~$"):
        return (
            "Office lock file (its document is open in Office): nothing to ingest; it goes when the document is closed"
        )
    if ext in LEGACY and not office_binary():
        app, new, pkg = LEGACY[ext]
        return (
            f"legacy {app} {ext} needs LibreOffice to convert it: install LibreOffice (soffice on PATH, e.g. "
            f"apt-get install {pkg}) or save the file as .{new}"
        )
    if ext in supported:
        return None
    if not ext:
        return "no file extension, so its type is unknown: rename it with its format's extension (e.g. notes.txt)"
    if ext in IMAGES:
        ocr = ocr or OcrOptions()
        if ocr.enabled:  # OCR runs, but not on this format
            read = ", ".join(sorted(OCR_IMAGES))
            return f"image format {ext} is not read by OCR: save it as PNG or JPEG (OCR reads {read})"
        return f"image: {ocr.why_not()}, or make a PDF with a text layer"
    if ext in AUDIO_VIDEO:
        return "audio/video: no speech-to-text model configured: transcribe it and ingest the transcript as .txt"
    if ext in ARCHIVES:
        return "archive: kbgraph does not unpack archives: extract it and ingest the extracted folder"
    if ext == ".json":
        return (
            'JSON data, not a document: write passages as JSON Lines (.jsonl, one {"id", "title", "text"} '
            "a line), or save text as .txt"
        )
    if ext in OFFICE_VARIANTS:
        return f"{ext} files are not read: save it as {OFFICE_VARIANTS[ext]} (or PDF)"
    return (
        f"unsupported file type '{ext}'; supported: {', '.join(supported)}; to ingest it as plain text, "
        "save a copy as .txt"
    )


# --- parsing -------------------------------------------------------------------------------------------


def parse_office(data: bytes, ext: str, name: str) -> tuple[str | None, list[RawElement]]:
    """(title, raw elements) of an .odt, .rtf, .epub, .rst, .org, .xml, .doc or .ppt file. Raises
    IngestError."""
    if ext in (".doc", ".ppt"):
        return _parse_legacy(data, ext, name)
    if ext == ".odt":
        _check_zip(data, name, ".odt")
        return pu.parse_docx(_pandoc_to_docx(data, "odt", name), name)
    if ext == ".xml":
        pu.quiet_unstructured()
        from unstructured.partition.xml import partition_xml

        els = _partition("XML", name, lambda: partition_xml(file=io.BytesIO(data)))
        return None, pu.from_unstructured(els, headings=False)
    if ext == ".epub":
        _check_zip(data, name, ".epub")
    elif ext in (".rst", ".org"):
        data = decode_text(data, name).encode("utf-8")
    pu.quiet_unstructured()
    module = __import__(f"unstructured.partition.{ext[1:]}", fromlist=["x"])
    partition = getattr(module, f"partition_{ext[1:]}")
    els = _partition(ext, name, lambda: partition(file=io.BytesIO(data)))
    return (_epub_title(data) if ext == ".epub" else None), pu.from_unstructured(els)


def _partition(kind: str, name: str, call: Callable[[], Iterable[Element]]) -> list[Element]:
    try:
        return list(call())
    except ImportError as exc:
        raise IngestError(
            f"cannot read {name}: {kind} needs {exc.name or exc} (pip install 'kbgraph[ingest]')"
        ) from exc
    except OSError as exc:
        if "pandoc" in str(exc).lower():
            raise IngestError(f"cannot read {name}: {kind} needs pandoc (pip install pypandoc-binary)") from exc
        raise IngestError(f"cannot read {name}: {one_line(exc, 200, empty=UNKNOWN_ERROR)}") from exc
    except Exception as exc:
        raise IngestError(f"corrupt or unreadable {kind} {name}: {_pandoc_message(exc)}") from exc


def _pandoc_message(exc: Exception) -> str:
    text = one_line(exc, 200, empty=UNKNOWN_ERROR)
    m = re.search(r"Pandoc died with exitcode \"?(\d+)\"? during conversion: (.*)", text)
    return f"pandoc: {m.group(2)[:160]}" if m else f"{type(exc).__name__}: {text}"


def _pandoc_to_docx(data: bytes, source: str, name: str) -> bytes:
    """``data`` in pandoc format ``source`` -> .docx bytes (pandoc in sandbox mode: no file or network access)."""
    try:
        import pypandoc
    except ImportError as exc:
        raise IngestError(
            f"cannot read {name}: .{source} needs pypandoc-binary (pip install 'kbgraph[ingest]')"
        ) from exc
    with tempfile.TemporaryDirectory(prefix="kbgraph-pandoc-") as tmp:
        src, out = Path(tmp) / f"in.{source}", Path(tmp) / "out.docx"
        src.write_bytes(data)
        try:
            pypandoc.convert_file(str(src), "docx", format=source, outputfile=str(out), sandbox=True)
        except OSError as exc:
            raise IngestError(f"cannot read {name}: .{source} needs pandoc (pip install pypandoc-binary)") from exc
        except Exception as exc:
            raise IngestError(f"corrupt or unreadable .{source} {name}: {_pandoc_message(exc)}") from exc
        return out.read_bytes()


def _parse_legacy(data: bytes, ext: str, name: str) -> tuple[str | None, list[RawElement]]:
    app, new, pkg = LEGACY[ext]
    if ext == ".doc" and data.lstrip()[:5] == b"{\\rtf":
        return parse_office(data, ".rtf", name)  # Word's "save as .doc" of an RTF document
    if data.startswith(b"PK\x03\x04"):  # an Office Open XML file under the old name
        return pu.parse_docx(data, name) if ext == ".doc" else pu.parse_pptx(data, name)
    if not data.startswith(_OLE_MAGIC):
        raise IngestError(f"corrupt or unreadable {ext} {name}: not a legacy {app} file (no OLE header)")
    try:
        import olefile

        with olefile.OleFileIO(io.BytesIO(data)) as ole:
            is_legacy = ole.exists(LEGACY_STREAM[ext])
    except ImportError:  # (olefile comes with python-oxmsg) no check: LibreOffice decides
        is_legacy = True
    except Exception:
        is_legacy = False
    if not is_legacy:
        raise IngestError(
            f"corrupt or unreadable {ext} {name}: not a legacy {app} file (no {LEGACY_STREAM[ext]} stream)"
        )
    binary = office_binary()
    if not binary:
        raise IngestError(f"cannot ingest {name}: {unread_reason(name, [])}")
    converted = _soffice_convert(binary, data, ext, new, name)
    return pu.parse_docx(converted, name) if new == "docx" else pu.parse_pptx(converted, name)


def _soffice_convert(binary: str, data: bytes, ext: str, target: str, name: str) -> bytes:
    """LibreOffice headless conversion in a private profile (so it runs beside an open LibreOffice)."""
    with tempfile.TemporaryDirectory(prefix="kbgraph-soffice-") as tmp:
        src = Path(tmp) / f"in{ext}"
        src.write_bytes(data)
        profile = (Path(tmp) / "profile").as_uri()
        cmd = [
            binary,
            f"-env:UserInstallation={profile}",
            "--headless",
            "--norestore",
            "--convert-to",
            target,
            "--outdir",
            tmp,
            str(src),
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, timeout=SOFFICE_TIMEOUT, check=False)
        except subprocess.TimeoutExpired as exc:
            raise IngestError(
                f"LibreOffice did not convert {name} within {SOFFICE_TIMEOUT} s: save it as .{target} by hand"
            ) from exc
        out = Path(tmp) / f"in.{target}"
        if not out.is_file() or out.stat().st_size == 0:
            output = proc.stderr.decode("utf-8", "replace") or proc.stdout.decode("utf-8", "replace")
            said = one_line(output, 200, empty=UNKNOWN_ERROR)
            raise IngestError(
                f"LibreOffice could not convert {name} to .{target} (corrupt or password-protected?): {said}"
            )
        return out.read_bytes()


def _check_zip(data: bytes, name: str, kind: str) -> None:
    if data.startswith(_OLE_MAGIC):
        raise IngestError(f"cannot read {name}: it is password-protected or not a {kind} (remove the password)")
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise IngestError(f"corrupt or unreadable {kind} {name}: not a ZIP package")


def _epub_title(data: bytes) -> str | None:
    """``dc:title`` of an EPUB's package document, if any."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            container = z.read("META-INF/container.xml").decode("utf-8", "replace")
            m = re.search(r'full-path="([^"]+)"', container)
            opf = z.read(m.group(1)).decode("utf-8", "replace") if m else ""
    except (KeyError, zipfile.BadZipFile, OSError):
        return None
    m = re.search(r"<dc:title[^>]*>(.*?)</dc:title>", opf, re.S)
    if not m:
        return None
    import html

    return _WS.sub(" ", html.unescape(re.sub(r"<[^>]+>", "", m.group(1)))).strip() or None
