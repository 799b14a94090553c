"""What a file may expand to while ingestion stage 1 parses it (issue 58, finding 1: an 18,395-byte .docx whose
``word/document.xml`` is 12 MB of 2,000,000 empty paragraphs took 110 s and ~700 MB of a server's memory; only the
size on disk was bounded, by ``max_file_bytes``).

Checked before a parser reads the file (``ParseBounds``, from the ingest settings; each 0 = no bound):

- **zip packages** (.docx, .pptx, .xlsx/.xlsm, .ods, .odt, .epub, and an Office Open XML file saved as .doc/.ppt;
  ``check_zip``, called by ``parse.parse_bytes``, so an e-mail's attachments too): the members counted from the
  bytes before ``zipfile`` builds its directory (``max_zip_members``); their declared sizes, each
  (``max_member_bytes``) and in total (``max_expanded_bytes``), and compression ratios (``max_compression_ratio``,
  of a member or the package once over ``RATIO_GRACE_BYTES``). Then every member is inflated from its local
  header to the end of its deflate stream, trusting neither size the headers declare, in slices that are counted
  and dropped (memory stays flat): a member that expands past its declared size is refused (a forged header),
  and so are the actual sizes and ratios over the bounds. A member whose bytes start with ``<`` is fed to expat
  on the way, which counts its elements (entities expanded; a malformed rest counted by its ``<name`` tags):
  over ``max_xml_elements`` in the whole file, refused.
- **PDF** (``kbgraph.ingest.bounds_pdf.check_pdf``, called by ``parse_pdf`` once PyMuPDF opened the file): pages
  (``max_pdf_pages``) and the decoded size of every stream but images, each and in total, decoded here with a cap.
- **time**: ``using`` (around ``parse.parse_file``) refuses a file still parsing after ``max_parse_seconds``. A
  watchdog thread raises ``ParseTimeout`` (a BaseException, which the parsers' ``except Exception`` does not catch)
  in the parsing thread at its next Python instruction, and again every half second until the parse is out; a long
  call inside a C library (one MuPDF page, one lxml parse) ends first, and the size bounds above keep those short.
  Should a library swallow every one, the file is refused all the same when its parse returns.

The budgets are per file: an e-mail's attachments share their message's. Over a bound: ``IngestError`` naming the
member, the figure, the limit and the setting to raise; the run reports the file failed and goes on.
"""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import io
import re
import threading
import time
import xml.parsers.expat
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from types import TracebackType
from typing import TYPE_CHECKING

from kbgraph.errors import IngestError
from kbgraph.settings_groups import IngestSettings

if TYPE_CHECKING:
    from kbgraph.settings import Settings

#: Extensions read from a zip package (an Office Open XML file named .doc/.ppt is checked by its PK header).
ZIP_FORMATS = (".docx", ".pptx", ".xlsx", ".xlsm", ".ods", ".odt", ".epub")
#: A member (or package) holding fewer bytes than this is not refused for its compression ratio (small XML parts
#: of real packages compress 20-100-fold; Apache POI's grace is 100 KB).
RATIO_GRACE_BYTES = 1 << 20
#: Bytes inflated at a time (each slice is counted, fed to the XML counter and dropped).
SLICE = 1 << 16
_CENTRAL_DIR = b"PK\x01\x02"  # the signature of each central-directory entry zipfile accepts
_LOCAL = b"PK\x03\x04"
_TAG = re.compile(rb"<\x00?[A-Za-z_:]")  # a start tag (UTF-8 or UTF-16), where expat gave up
#: How an XML member starts: markup, or the byte-order mark of UTF-8, UTF-16 (LE, BE) or UTF-32 (LE, BE); or UTF-16
#: markup without one.
_XML_STARTS = (b"<", b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff", b"\x00<")


def _default(name: str) -> int | float:
    value = IngestSettings.model_fields[name].default
    assert isinstance(value, (int, float))
    return value


@dataclass(frozen=True)
class ParseBounds:
    """The bounds of one parse (settings of the same names; 0 = no bound)."""

    max_expanded_bytes: int = field(default_factory=lambda: int(_default("max_expanded_bytes")))
    max_member_bytes: int = field(default_factory=lambda: int(_default("max_member_bytes")))
    max_compression_ratio: float = field(default_factory=lambda: float(_default("max_compression_ratio")))
    max_zip_members: int = field(default_factory=lambda: int(_default("max_zip_members")))
    max_xml_elements: int = field(default_factory=lambda: int(_default("max_xml_elements")))
    max_pdf_pages: int = field(default_factory=lambda: int(_default("max_pdf_pages")))
    max_parse_seconds: float = field(default_factory=lambda: float(_default("max_parse_seconds")))

    @classmethod
    def from_settings(cls, settings: Settings) -> ParseBounds:
        return cls(**{f.name: getattr(settings.ingest, f.name) for f in fields(cls)})

    @classmethod
    def off(cls) -> ParseBounds:
        """No bound at all (what the parse did before them; benchmarks/bomb_rss.py's "off")."""
        return cls(**{f.name: 0 for f in fields(cls)})


@dataclass
class Budget:
    """What the file being parsed has used of its bounds so far (its attachments add to it)."""

    bounds: ParseBounds
    expanded: int = 0
    elements: int = 0


_BUDGET: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("kbgraph_parse_budget", default=None)


def current() -> Budget:
    """The budget of the parse under way; outside ``using``, a fresh one with the default bounds."""
    return _BUDGET.get() or Budget(ParseBounds())


class ParseTimeout(BaseException):  # noqa: N818 - raised into the parsing thread, never seen outside ``using``
    """Raised in the parsing thread when ``max_parse_seconds`` is over (a BaseException: the parsers' ``except
    Exception`` blocks let it through)."""


@contextlib.contextmanager
def using(bounds: ParseBounds | None, name: str) -> Iterator[Budget]:
    """Parse the file ``name`` under ``bounds`` (None: the defaults): a fresh budget, and the time bound."""
    budget = Budget(bounds or ParseBounds())
    token = _BUDGET.set(budget)
    try:
        with _Deadline(budget.bounds.max_parse_seconds, name):
            yield budget
    finally:
        _BUDGET.reset(token)


def _set_async_exc(thread_id: int, exc: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc) if exc else None)


class _Deadline:
    """Raises ``ParseTimeout`` in this thread once ``seconds`` are over (0: never), again every ``REFIRE`` s until
    the parse is out (one raised inside a weakref callback or a finalizer is only printed, and a library may
    swallow it), then ``IngestError`` from ``__exit__``."""

    REFIRE = 0.5

    def __init__(self, seconds: float, name: str):
        self.seconds, self.name = seconds, name
        self._lock = threading.Lock()
        self._armed = self._fired = False
        self._thread = threading.get_ident()
        self._done = threading.Event()
        self._start = time.monotonic()

    def __enter__(self) -> _Deadline:
        if self.seconds > 0:
            self._armed = True
            threading.Thread(target=self._watch, name=f"kbgraph-parse-deadline-{self._thread}", daemon=True).start()
        return self

    def _watch(self) -> None:
        wait = self.seconds
        while not self._done.wait(wait):
            with self._lock:
                if not self._armed:
                    return
                self._fired = True
                _set_async_exc(self._thread, ParseTimeout)
            wait = self.REFIRE

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        if self.seconds <= 0:
            return
        while True:  # disarm; a ParseTimeout delivered meanwhile is dropped (and one still pending cleared)
            try:
                with self._lock:
                    self._armed = False
                    if self._fired:
                        _set_async_exc(self._thread, None)
                break
            except ParseTimeout:
                continue
        self._done.set()
        if self._fired or isinstance(ev, ParseTimeout):
            took = time.monotonic() - self._start
            raise IngestError(
                f"parse too long: {self.name} was still being parsed after {took:.1f} s, over the limit of "
                f"{self.seconds:g} s (a decompression bomb or a very large file? raise max_parse_seconds to ingest it)"
            ) from None


# --- zip packages ----------------------------------------------------------------------------------------------


def is_zip_format(ext: str, data: bytes) -> bool:
    """``parse_bytes`` reads a file of type ``ext`` with these bytes as a zip package."""
    return ext in ZIP_FORMATS or (ext in (".doc", ".ppt") and data.startswith(_LOCAL))


def _refuse(what: str, name: str, detail: str, setting: str) -> IngestError:
    return IngestError(f"{what}: {name} {detail} (a decompression bomb? raise {setting} to ingest it)")


def _ratio_over(bounds: ParseBounds, expanded: int, compressed: int) -> float | None:
    if bounds.max_compression_ratio <= 0 or expanded <= RATIO_GRACE_BYTES:
        return None
    ratio = expanded / max(compressed, 1)
    return ratio if ratio > bounds.max_compression_ratio else None


def check_zip(data: bytes, name: str) -> None:
    """Refuse the zip package ``data`` (the file ``name``) when it expands beyond the bounds of the parse under
    way (``current``); its sizes and XML elements are charged to that parse's budget. A file that is no zip is
    left to its parser (which says so)."""
    budget = current()
    b = budget.bounds
    if b == ParseBounds.off():
        return
    if b.max_zip_members and data.count(_CENTRAL_DIR) > b.max_zip_members:  # before zipfile builds its entries
        raise _refuse("too many members", name, f"holds more than {b.max_zip_members:,} files", "max_zip_members")
    if not zipfile.is_zipfile(io.BytesIO(data)):
        return
    before = budget.expanded
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
            _check_declared(infos, name, budget)
            for info in infos:
                _check_member(zf, info, data, name, budget)
    except IngestError:
        raise
    except Exception as exc:  # BadZipFile, EOFError, OSError, LZMAError...: no reader would read it either
        raise IngestError(f"corrupt or unreadable zip package {name}: {type(exc).__name__}: {exc}") from exc
    expanded = budget.expanded - before
    if (ratio := _ratio_over(b, expanded, len(data))) is not None:
        raise _refuse(
            "compression ratio too high",
            name,
            f"expands {ratio:,.0f}-fold, to {expanded:,} bytes from "
            f"{len(data):,}, over the limit of {b.max_compression_ratio:g}",
            "max_compression_ratio",
        )


def _check_declared(infos: list[zipfile.ZipInfo], name: str, budget: Budget) -> None:
    b = budget.bounds
    if b.max_zip_members and len(infos) > b.max_zip_members:
        raise _refuse(
            "too many members",
            name,
            f"holds {len(infos):,} files, over the limit of {b.max_zip_members:,}",
            "max_zip_members",
        )
    total = budget.expanded
    for info in infos:
        total += info.file_size
        if b.max_member_bytes and info.file_size > b.max_member_bytes:
            raise _refuse(
                "too large when unpacked",
                name,
                f"member {info.filename} declares {info.file_size:,} bytes, over the limit of {b.max_member_bytes:,}",
                "max_member_bytes",
            )
        if (ratio := _ratio_over(b, info.file_size, info.compress_size)) is not None:
            raise _refuse(
                "compression ratio too high",
                name,
                f"member {info.filename} declares {info.file_size:,} "
                f"bytes from {info.compress_size:,}, {ratio:,.0f}-fold, over the limit of "
                f"{b.max_compression_ratio:g}",
                "max_compression_ratio",
            )
    if b.max_expanded_bytes and total > b.max_expanded_bytes:
        raise _refuse(
            "too large when unpacked",
            name,
            f"declares {total:,} bytes in {len(infos):,} members, over the limit of {b.max_expanded_bytes:,}",
            "max_expanded_bytes",
        )


class _XmlCounter:
    """Counts the elements of one XML member as its bytes arrive, against the file's budget."""

    def __init__(self, member: str, name: str, budget: Budget):
        self.member, self.name, self.budget = member, name, budget
        self.parser: xml.parsers.expat.XMLParserType | None = xml.parsers.expat.ParserCreate()
        self.parser.StartElementHandler = self._start

    def _start(self, tag: str, attrs: object) -> None:
        self._charge(1)

    def _charge(self, n: int) -> None:
        budget, limit = self.budget, self.budget.bounds.max_xml_elements
        budget.elements += n
        if limit and budget.elements > limit:
            raise _refuse(
                "too many XML elements",
                self.name,
                f"holds more than {limit:,} (counted up to {self.member})",
                "max_xml_elements",
            )

    def feed(self, chunk: bytes, final: bool = False) -> None:
        if self.parser is not None:
            try:
                self.parser.Parse(chunk, final)
                return
            except xml.parsers.expat.ExpatError:  # not well-formed from here: count its tags instead
                self.parser = None
        self._charge(len(_TAG.findall(chunk)))


def _check_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, data: bytes, name: str, budget: Budget) -> None:
    """Inflate ``info`` with caps (its declared size, the member and total bounds), counting its XML elements."""
    b = budget.bounds
    caps = [info.file_size]
    if b.max_member_bytes:
        caps.append(b.max_member_bytes)
    if b.max_expanded_bytes:
        caps.append(b.max_expanded_bytes - budget.expanded)
    cap = min(caps)
    counter: _XmlCounter | None = None
    size = 0
    consumed = [info.compress_size]  # the compressed bytes read (a deflated member's: measured)
    for chunk in _inflate(zf, info, data, cap + 1, name, consumed):
        if size == 0 and b.max_xml_elements and chunk.lstrip(b" \t\r\n").startswith(_XML_STARTS):
            counter = _XmlCounter(info.filename, name, budget)
        size += len(chunk)
        if size > cap:
            if size > info.file_size:
                raise IngestError(
                    f"forged size: {name}'s member {info.filename} declares {info.file_size:,} bytes "
                    "but expands to more (a decompression bomb or a corrupt file)"
                )
            limit, setting = (
                (b.max_member_bytes, "max_member_bytes")
                if b.max_member_bytes and size > b.max_member_bytes
                else (b.max_expanded_bytes, "max_expanded_bytes")
            )
            raise _refuse(
                "too large when unpacked", name, f"expands past {limit:,} bytes at member {info.filename}", setting
            )
        if counter is not None:
            counter.feed(chunk)
    if counter is not None:
        counter.feed(b"", final=True)
    budget.expanded += size
    if (ratio := _ratio_over(b, size, consumed[0])) is not None:
        raise _refuse(
            "compression ratio too high",
            name,
            f"member {info.filename} expands {ratio:,.0f}-fold, to "
            f"{size:,} bytes from {consumed[0]:,}, over the limit of {b.max_compression_ratio:g}",
            "max_compression_ratio",
        )


def _inflate(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, data: bytes, limit: int, name: str, consumed: list[int]
) -> Iterator[bytes]:
    """The bytes of member ``info`` in slices, at most ``limit`` of them. A deflated member is inflated from its
    local header's end to its stream's end (no declared size trusted; ``consumed[0]`` becomes the compressed bytes
    it took); a stored one is its declared bytes; bzip2 and LZMA through ``zipfile`` (which stops at the declared
    size); an encrypted member or another method is not read (no reader here reads it either)."""
    if info.flag_bits & 0x1 or info.compress_type not in (
        zipfile.ZIP_STORED,
        zipfile.ZIP_DEFLATED,
        zipfile.ZIP_BZIP2,
        zipfile.ZIP_LZMA,
    ):
        return
    if info.compress_type in (zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
        with zf.open(info) as fh:
            while limit > 0 and (chunk := fh.read(min(SLICE, limit))):
                limit -= len(chunk)
                yield chunk
        return
    start = _data_offset(data, info, name)
    view = memoryview(data)
    if info.compress_type == zipfile.ZIP_STORED:
        end = min(start + info.compress_size, start + limit, len(data))
        for i in range(start, end, SLICE):
            yield bytes(view[i : min(i + SLICE, end)])
        return
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    pos = start
    while limit > 0 and not inflater.eof:
        try:
            if inflater.unconsumed_tail:
                chunk = inflater.decompress(inflater.unconsumed_tail, min(SLICE, limit))
            elif pos < len(data):
                chunk = inflater.decompress(view[pos : pos + SLICE], min(SLICE, limit))
                pos = min(pos + SLICE, len(data))
            elif not (chunk := inflater.decompress(b"", min(SLICE, limit))):  # (what it still holds, if anything)
                raise IngestError(f"corrupt or unreadable zip package {name}: member {info.filename} is truncated")
        except zlib.error as exc:
            raise IngestError(f"corrupt or unreadable zip package {name}: member {info.filename}: {exc}") from exc
        limit -= len(chunk)
        consumed[0] = pos - start - len(inflater.unconsumed_tail) - len(inflater.unused_data)
        if chunk:
            yield chunk


def _data_offset(data: bytes, info: zipfile.ZipInfo, name: str) -> int:
    at = info.header_offset
    header = data[at : at + 30]
    if len(header) < 30 or header[:4] != _LOCAL:
        raise IngestError(f"corrupt or unreadable zip package {name}: member {info.filename} has no local header")
    return at + 30 + int.from_bytes(header[26:28], "little") + int.from_bytes(header[28:30], "little")


__all__ = ["Budget", "ParseBounds", "ParseTimeout", "ZIP_FORMATS", "check_zip", "current", "is_zip_format", "using"]
