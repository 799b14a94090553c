"""OCR through Tesseract: scanned PDF pages and image files become text.

- **PDF pages without a text layer** (``parse_pdf``): the page is rendered at ``ocr_dpi`` and read by Tesseract
  through PyMuPDF (``Pixmap.pdfocr_tobytes``, as ``page.get_textpage_ocr(full=True)`` does, without its clipping
  of a rotated page); the text page then goes through the same layout analysis as any other page. Page by
  page: a page with text is never OCR'd, so a half-scanned PDF keeps its text layer where it has one and a PDF
  with a text layer costs what it did before.
- **Image files** (``OCR_IMAGES``: PNG, JPEG, TIFF with all its frames, BMP, WebP): ``pytesseract`` on the
  image (Pillow; EXIF orientation applied); words are grouped into Tesseract's lines and paragraphs and each
  page carries the mean word confidence.
- **Rotation**: Tesseract's orientation detection (OSD, ``pytesseract.image_to_osd``) on each page or image
  before it is read; a page scanned sideways or upside down is turned upright first.

Settings (``OcrOptions.from_settings``): ``ocr`` (``auto``: on when the ``tesseract`` binary is on PATH;
``off``), ``ocr_languages`` (Tesseract's ``eng+kor+chi_sim`` form), ``ocr_dpi``. The options of the parse
under way live in a context variable (``using``), as the parse warnings do, so an image attached to an
e-mail is read the same way. Each OCR'd page is recorded (``note``): the document is then marked
``ocr = true`` with its pages listed, and its chunks carry the page's confidence when Tesseract gave one.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import io
import logging
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kbgraph.errors import IngestError
from kbgraph.text import one_line
from kbgraph.ingest.parse_common import RawElement, warn

if TYPE_CHECKING:
    from PIL.Image import Image
    from pymupdf import Page, TextPage

    from kbgraph.ingest.pdf_layout import TextBlock
    from kbgraph.settings import Settings

log = logging.getLogger(__name__)

#: Image files read by OCR: extension -> MIME type.
OCR_IMAGES: dict[str, str] = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
    ".bmp": "image/bmp",
    ".webp": "image/webp",
}
#: The Debian packages of Tesseract with English (a user adds tesseract-ocr-<lang> for other languages).
APT_PACKAGES = "tesseract-ocr tesseract-ocr-eng tesseract-ocr-osd"
INSTALL_HINT = f"install Tesseract (apt-get install {APT_PACKAGES}; pip install pytesseract)"
#: Resolution of the image the orientation is detected on (OSD needs no more).
OSD_DPI = 150
#: Seconds Tesseract may take on one page or image.
OCR_TIMEOUT = 300


@dataclass(frozen=True)
class OcrOptions:
    """``mode``: ``auto`` (on when Tesseract is installed) or ``off``; ``languages``: Tesseract's language
    string (``eng``, ``eng+deu``); ``dpi``: resolution scanned PDF pages are rendered at."""

    mode: str = "auto"
    languages: str = "eng"
    dpi: int = 300

    @classmethod
    def from_settings(cls, settings: Settings) -> OcrOptions:
        return cls(mode=settings.ingest.ocr, languages=settings.ingest.ocr_languages, dpi=settings.ingest.ocr_dpi)

    @property
    def enabled(self) -> bool:
        """OCR runs: not ``off`` and the ``tesseract`` binary is on PATH."""
        return self.mode != "off" and tesseract_binary() is not None

    def why_not(self) -> str:
        """Why OCR does not run, with the fix (for skip and error messages)."""
        if self.mode == "off":
            return "OCR is off (setting ocr=off): set KBGRAPH_OCR=auto to read it with Tesseract"
        return f"no OCR configured (kbgraph reads text, not pictures): {INSTALL_HINT}"


@dataclass
class OcrRecord:
    """What OCR read in the parse under way: ``pages`` OCR'd (1-based; an image file's frames) and the mean
    word confidence (0..100) of those Tesseract gave one for."""

    pages: list[int] = field(default_factory=list)
    confidence: dict[int, float] = field(default_factory=dict)


_OPTIONS: contextvars.ContextVar[OcrOptions | None] = contextvars.ContextVar("kbgraph_ocr_options", default=None)
_RECORD: contextvars.ContextVar[OcrRecord | None] = contextvars.ContextVar("kbgraph_ocr_record", default=None)


def tesseract_binary() -> str | None:
    """Path of the ``tesseract`` binary on PATH, else None."""
    return shutil.which("tesseract")


def current() -> OcrOptions:
    """The OCR options of the parse under way (the defaults outside ``using``)."""
    return _OPTIONS.get() or OcrOptions()


@contextlib.contextmanager
def using(options: OcrOptions | None) -> Iterator[OcrRecord]:
    """Parse with ``options`` (None: the defaults); yields the record of the pages OCR reads meanwhile."""
    record = OcrRecord()
    t1, t2 = _OPTIONS.set(options or OcrOptions()), _RECORD.set(record)
    try:
        yield record
    finally:
        _OPTIONS.reset(t1)
        _RECORD.reset(t2)


def note(page: int, confidence: float | None = None) -> None:
    """Record that ``page`` was read by OCR (with Tesseract's mean word confidence when known)."""
    record = _RECORD.get()
    if record is None:
        return
    if page not in record.pages:
        record.pages.append(page)
    if confidence is not None:
        record.confidence[page] = round(confidence, 1)


@functools.lru_cache(maxsize=4)
def _installed_languages(binary: str) -> frozenset[str]:
    try:
        out = subprocess.run([binary, "--list-langs"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(line.strip() for line in out.splitlines()[1:] if line.strip())


def check_languages(options: OcrOptions) -> None:
    """IngestError naming the package to install when Tesseract lacks a language of ``options``."""
    binary = tesseract_binary()
    if binary is None:
        raise IngestError(options.why_not())
    have = _installed_languages(binary)
    missing = [lang for lang in options.languages.split("+") if lang and have and lang not in have]
    if missing:
        pkgs = " ".join(f"tesseract-ocr-{m.lower().replace('_', '-')}" for m in missing)
        raise IngestError(
            f"Tesseract has no language data for {'+'.join(missing)} (setting ocr_languages="
            f"{options.languages}): apt-get install {pkgs}"
        )


def _pytesseract() -> ModuleType:
    try:
        import pytesseract
    except ImportError as exc:
        raise IngestError(f"OCR needs the pytesseract package: pip install pytesseract ({INSTALL_HINT})") from exc
    module: ModuleType = pytesseract  # (untyped: no py.typed)
    return module


def detect_rotation(image: Image) -> int:
    """Degrees (0, 90, 180, 270) to turn ``image`` (PIL) counter-clockwise so that its text is upright, from
    Tesseract's OSD; 0 when OSD cannot tell (too little text, no osd data)."""
    pytesseract = _pytesseract()
    try:
        osd = pytesseract.image_to_osd(
            image, config="--psm 0", output_type=pytesseract.Output.DICT, timeout=OCR_TIMEOUT
        )
    except Exception as exc:  # TesseractError "Too few characters", missing osd.traineddata
        log.debug("OSD failed: %s", one_line(exc, 200, empty="unknown error"))
        return 0
    rotate = int(osd.get("rotate", 0) or 0) % 360
    return rotate if float(osd.get("orientation_conf", 0) or 0) >= 1.0 else 0


def upright(image: Image) -> Image:
    """``image`` (PIL) turned upright: EXIF orientation, then Tesseract's OSD."""
    from PIL import ImageOps

    image = ImageOps.exif_transpose(image)
    rotate = detect_rotation(image)
    # OSD's "rotate" is the clockwise turn that makes the text upright; PIL rotates counter-clockwise.
    return image.rotate(-rotate, expand=True) if rotate else image


# --- PDF pages ---------------------------------------------------------------------------------------------


def needs_ocr(page: Page, blocks: list[TextBlock]) -> bool:
    """A PDF page is OCR'd when it has no text at all (``blocks``: its text dict's blocks) but shows an image."""
    has_text = any(
        span.get("text", "").strip()
        for b in blocks
        if b.get("type") == 0
        for line in b.get("lines", [])
        for span in line.get("spans", [])
    )
    return not has_text and bool(page.get_image_info())


def pdf_page_textpage(page: Page, options: OcrOptions) -> TextPage | None:
    """An OCR text page of a PDF page without text (the whole page rendered at ``options.dpi`` and read by
    Tesseract through PyMuPDF, ``_full_page_ocr``), the page first turned upright (OSD) when it was scanned
    sideways, its words in the upright page's coordinates; None (and a parse warning) when Tesseract fails on
    it. Raises IngestError when OCR cannot run at all (a language missing)."""
    from PIL import Image

    check_languages(options)
    pix = page.get_pixmap(dpi=OSD_DPI)
    rotate = detect_rotation(Image.frombytes("RGB" if pix.n < 4 else "RGBA", (pix.width, pix.height), pix.samples))
    if rotate:
        page.set_rotation((page.rotation + rotate) % 360)  # the in-memory document only
    try:
        textpage = _full_page_ocr(page, options)
    except Exception as exc:  # one page's failure keeps the others
        warn(f"page {page.number + 1}: OCR failed: {one_line(exc, 200, empty='unknown error')}")
        return None
    note(page.number + 1)
    return textpage


def _full_page_ocr(page: Page, options: OcrOptions) -> TextPage:
    """PyMuPDF's ``get_textpage_ocr(full=True)`` without its derotation: that maps the OCR'd words of a rotated
    page back to the unrotated page and then clips them to the rotated one, so that a sideways scan lost its
    lines outside the overlap of the two (the first line of a landscape page, the last ones of a portrait
    page). Here the words stay in the upright page's coordinates (``page.rect`` after ``set_rotation``), the
    space the layout analysis reads top to bottom."""
    import weakref

    import pymupdf

    pix = page.get_pixmap(dpi=options.dpi)  # (rendered as rotated)
    tessdata = pymupdf.get_tessdata()
    ocr_pdf = pymupdf.Document(stream=pix.pdfocr_tobytes(compress=False, language=options.languages, tessdata=tessdata))
    try:
        ocr_page = ocr_pdf.load_page(0)
        unzoom = page.rect.width / ocr_page.rect.width
        flags = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP
        textpage: TextPage = ocr_page.get_textpage(flags=flags, matrix=pymupdf.Matrix(unzoom, unzoom))
    finally:
        ocr_pdf.close()
    textpage.parent = weakref.proxy(page)
    return textpage


# --- image files -------------------------------------------------------------------------------------------

_WS = re.compile(r"\s+")


def parse_image(data: bytes, ext: str, name: str) -> tuple[str | None, list[RawElement]]:
    """(None, elements) of an image file read by OCR: one text element per paragraph Tesseract finds, its
    lines kept as lines (a table's rows stay rows); a multi-frame TIFF page by page. Raises IngestError."""
    options = current()
    if not options.enabled:
        raise IngestError(f"cannot read image {name}: {options.why_not()}")
    check_languages(options)
    pytesseract = _pytesseract()
    from PIL import Image, ImageSequence, UnidentifiedImageError

    try:
        img = Image.open(io.BytesIO(data))
        img.load()
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise IngestError(f"corrupt or unreadable image {name}: {one_line(exc, 200, empty='unknown error')}") from exc
    elements: list[RawElement] = []
    for number, frame in enumerate(ImageSequence.Iterator(img), start=1):
        frame = frame.convert("RGB") if frame.mode not in ("RGB", "L") else frame.copy()
        frame = upright(frame)
        try:
            data_ = pytesseract.image_to_data(
                frame,
                lang=options.languages,
                config="--psm 3",
                output_type=pytesseract.Output.DICT,
                timeout=OCR_TIMEOUT,
            )
        except Exception as exc:
            raise IngestError(f"OCR of {name} failed: {one_line(exc, 200, empty='unknown error')}") from exc
        paragraphs, confidence = _paragraphs(data_)
        note(number, confidence)
        elements += [{"kind": "text", "text": p, "page": number} for p in paragraphs]
    return None, elements


def _paragraphs(d: dict[str, list[Any]]) -> tuple[list[str], float | None]:  # (pytesseract's DICT: untyped)
    """Paragraphs and the mean word confidence of pytesseract's ``image_to_data`` output. A paragraph whose
    lines have column gaps (a word gap wider than twice the line's height: a table without rulings) is one
    paragraph per line, so that its rows stay rows."""
    lines: dict[tuple[int, int, int], list[tuple[str, int, int, int]]] = {}
    confs: list[float] = []
    for i, word in enumerate(d["text"]):
        word = (word or "").strip()
        conf = float(d["conf"][i])
        if not word or conf < 0:
            continue
        confs.append(conf)
        key = (d["block_num"][i], d["par_num"][i], d["line_num"][i])
        lines.setdefault(key, []).append((word, d["left"][i], d["width"][i], d["height"][i]))
    paras: dict[tuple[int, int], list[tuple[str, bool]]] = {}
    for (block, par, _), words in lines.items():
        height = max(h for *_, h in words)
        gaps = [b[1] - (a[1] + a[2]) for a, b in zip(words, words[1:], strict=False)]
        paras.setdefault((block, par), []).append((" ".join(w for w, *_ in words), any(g > 2 * height for g in gaps)))
    out: list[str] = []
    for rows in paras.values():
        if len(rows) > 1 and sum(tabular for _, tabular in rows) * 2 >= len(rows):
            out += [text for text, _ in rows]
        else:
            out.append("\n".join(text for text, _ in rows))
    return out, (sum(confs) / len(confs) if confs else None)


__all__ = [
    "OCR_IMAGES",
    "OcrOptions",
    "OcrRecord",
    "current",
    "needs_ocr",
    "note",
    "parse_image",
    "pdf_page_textpage",
    "tesseract_binary",
    "using",
]
