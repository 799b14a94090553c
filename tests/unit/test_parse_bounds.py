"""The parse bounds' logic (kbgraph.ingest.bounds, kbgraph.ingest.bounds_pdf; issue 58 finding 1) on zip packages
and streams built here: declared and actual sizes, ratios, member and element counts, the time bound, and the
capped PDF stream decoders. tests/test_bombs.py parses the same files end to end."""

from __future__ import annotations

import io
import threading
import time
import zipfile
import zlib
from pathlib import Path

import pytest

from kbgraph.errors import IngestError
from kbgraph.ingest import bounds
from kbgraph.ingest.bounds import ParseBounds, check_zip
from kbgraph.ingest.bounds_pdf import decode
from kbgraph.settings import Settings
from tests import bomb_files as bf
from tests.unit.conftest import REPO

HANDBOOK = REPO / "examples/docs/docx/us_doj_chapter13_standing_trustee_handbook.docx"


def _check(data: bytes, limits: ParseBounds | None = None, name: str = "f.docx") -> bounds.Budget:
    with bounds.using(limits, name) as budget:
        check_zip(data, name)
    return budget


def test_the_review_bomb_is_the_size_it_was() -> None:
    """18 KB on disk, word/document.xml over 12 MB (issue 58: 18,395 bytes, 12 MB)."""
    data = bf.docx_bomb()
    assert 15_000 < len(data) < 22_000
    assert zipfile.ZipFile(io.BytesIO(data)).getinfo("word/document.xml").file_size > 12_000_000


def test_the_defaults_are_the_settings_and_real_files_pass() -> None:
    assert ParseBounds() == ParseBounds.from_settings(Settings())
    assert ParseBounds.from_settings(Settings(max_xml_elements=5)).max_xml_elements == 5
    budget = _check(HANDBOOK.read_bytes())
    assert 100_000 < budget.elements < 120_000 and 5_000_000 < budget.expanded < 6_000_000  # every member read


def test_the_review_bomb_is_refused_by_its_ratio_then_by_its_elements() -> None:
    data = bf.docx_bomb()
    with pytest.raises(IngestError, match=r"compression ratio too high: f.docx member word/document.xml declares"):
        _check(data)
    with pytest.raises(IngestError, match=r"too many XML elements: f.docx holds more than 1,000,000"):
        _check(data, ParseBounds(max_compression_ratio=0))
    assert _check(data, ParseBounds.off()).elements == 0  # off: not even read


def test_a_forged_size_is_caught_as_it_inflates() -> None:
    """Both headers say 500 bytes; the member inflates to 5 MB: refused at byte 501, whatever the bounds."""
    real = bf.with_member(bf.docx_bomb(0), "word/document.xml", bf.docx_document_xml("x", 0) + b" " * 5_000_000)
    forged = bf.forged_size(real, "word/document.xml", 500)
    assert zipfile.ZipFile(io.BytesIO(forged)).getinfo("word/document.xml").file_size == 500
    t0 = time.perf_counter()
    with pytest.raises(IngestError, match=r"forged size: f.docx's member word/document.xml declares 500 bytes"):
        _check(forged, ParseBounds(max_compression_ratio=0, max_expanded_bytes=0, max_member_bytes=0))
    assert time.perf_counter() - t0 < 0.5
    with pytest.raises(IngestError, match="compression ratio"):  # told the truth: its actual ratio, ~1000-fold
        _check(real)


def test_actual_sizes_are_bounded_in_total_and_per_member() -> None:
    data = bf.zip_bytes({"a.bin": b"\0" * 3_000_000, "b.bin": b"\0" * 3_000_000})
    assert _check(data, ParseBounds(max_compression_ratio=0)).expanded == 6_000_000
    with pytest.raises(
        IngestError,
        match=r"too large when unpacked: f.docx member a.bin declares 3,000,000 bytes.*"
        "max_member_bytes",
    ):
        _check(data, ParseBounds(max_compression_ratio=0, max_member_bytes=2_999_999))
    with pytest.raises(IngestError, match=r"declares 6,000,000 bytes in 2 members.*max_expanded_bytes"):
        _check(data, ParseBounds(max_compression_ratio=0, max_expanded_bytes=5_000_000))


def test_small_members_are_bounded_by_the_package_ratio() -> None:
    """Twenty members of 900 KB each (under the 1 MiB grace of a member, ~1000-fold each): the package, 18 MB
    from ~20 KB, is refused as a whole."""
    data = bf.zip_bytes({f"p{i}.xml": b" " * 900_000 for i in range(20)})
    with pytest.raises(IngestError, match=r"compression ratio too high: f.docx expands [0-9,]+-fold, to 18,000,000 "):
        _check(data)
    assert _check(data, ParseBounds(max_compression_ratio=0)).expanded == 18_000_000


def test_members_are_counted_before_the_directory_is_read() -> None:
    with pytest.raises(IngestError, match=r"too many members: f.docx holds more than 1,000 files.*max_zip_members"):
        _check(bf.many_members(1_001), ParseBounds(max_zip_members=1_000))
    assert _check(bf.many_members(990), ParseBounds(max_zip_members=1_000)).expanded > 990


@pytest.mark.parametrize(("build", "member"), [(bf.odt_bomb, "content.xml"), (bf.epub_bomb, "c1.xhtml")])
def test_xml_elements_of_each_package_are_counted(build: object, member: str) -> None:
    """Each package's XML is counted as it inflates, up to the bound (a bound of 50,000 here: the default's million
    is the review bomb's test above, and counting to it takes a second per package)."""
    assert callable(build)
    with pytest.raises(
        IngestError, match=f"too many XML elements: f.docx holds more than 50,000.*counted up to {member}"
    ):
        _check(build(100_000), ParseBounds(max_compression_ratio=0, max_xml_elements=50_000))
    assert _check(build(1_000), ParseBounds()).elements > 1_000


def test_malformed_xml_is_counted_by_its_tags() -> None:
    """A member that stops being well-formed early still has its elements counted (by their ``<name``)."""
    xml = b"<a><b></a>" + b"<p/>" * 2_000
    with pytest.raises(IngestError, match="too many XML elements"):
        _check(bf.zip_bytes({"x.xml": xml}), ParseBounds(max_xml_elements=1_000))


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-8-sig"])
def test_xml_in_utf16_or_after_a_bom_is_counted(encoding: str) -> None:
    xml = (f'<?xml version="1.0" encoding="{encoding[:6].upper()}"?><a>' + "<p/>" * 2_000 + "</a>").encode(encoding)
    with pytest.raises(IngestError, match="too many XML elements"):
        _check(bf.zip_bytes({"word/document.xml": xml}), ParseBounds(max_xml_elements=1_000))
    assert _check(bf.zip_bytes({"word/document.xml": xml})).elements == 2_001


def test_the_time_bound_interrupts_python_code_and_leaves_nothing_pending() -> None:
    t0 = time.perf_counter()
    with pytest.raises(
        IngestError,
        match=r"parse too long: slow.docx was still being parsed after 0\.[0-9] s.*"
        "max_parse_seconds",
    ):
        with bounds.using(ParseBounds(max_parse_seconds=0.1), "slow.docx"):
            while True:
                sum(range(1000))
    assert time.perf_counter() - t0 < 1.0
    with pytest.raises(IngestError, match="parse too long"):  # swallowed by the parser: refused all the same
        with bounds.using(ParseBounds(max_parse_seconds=0.1), "slow.docx"):
            end = time.perf_counter() + 0.3
            while time.perf_counter() < end:
                try:
                    sum(range(1000))
                except BaseException:  # noqa: BLE001,S110 - what a careless library does
                    pass
    with bounds.using(ParseBounds(max_parse_seconds=0.1), "fast.docx"):
        pass
    time.sleep(0.2)  # the timer of a finished parse does not fire later
    assert sum(range(10)) == 45


def test_the_time_bound_is_per_thread() -> None:
    errors: list[str] = []

    def slow() -> None:
        try:
            with bounds.using(ParseBounds(max_parse_seconds=0.2), "t.docx"):
                while True:
                    sum(range(1000))
        except IngestError as exc:
            errors.append(str(exc))

    worker = threading.Thread(target=slow)
    worker.start()
    worker.join(3)
    assert not worker.is_alive() and errors and "t.docx" in errors[0]


# --- PDF stream decoders ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("filters", "encode"), bf.ENCODINGS)
def test_each_filter_decodes_exactly_and_stops_at_its_limit(filters: list[str], encode: object) -> None:
    assert callable(encode)
    raw = encode(bf.STREAM_TEXT)
    assert b"".join(decode(raw, filters, 10 * len(bf.STREAM_TEXT))) == bf.STREAM_TEXT
    got = sum(len(c) for c in decode(raw, filters, 50_000))
    assert 50_000 <= got < 50_000 + 2 * bounds.SLICE


def test_a_flate_bomb_is_decoded_with_a_cap_not_whole() -> None:
    """24 MB of zeros in ~110 KB: counted up to the cap, 16 MB, in slices, never held."""
    comp = zlib.compressobj(1)
    block = b"\0" * (1 << 20)
    raw = b"".join(comp.compress(block) for _ in range(24)) + comp.flush()
    t0 = time.perf_counter()
    sizes = [len(c) for c in decode(raw, ["FlateDecode"], 16 << 20)]
    assert max(sizes) <= bounds.SLICE and 16 << 20 <= sum(sizes) < (16 << 20) + bounds.SLICE
    assert time.perf_counter() - t0 < 2.0


def test_an_image_codec_ends_the_chain() -> None:
    assert b"".join(decode(b"\xff\xd8jpeg", ["DCTDecode"], 100)) == b"\xff\xd8jpeg"


def test_files_of_the_tests_exist(tmp_path: Path) -> None:
    """(tests/bomb_files.py's zips are valid zips)"""
    for data in (bf.docx_bomb(10), bf.odt_bomb(10), bf.epub_bomb(10), bf.many_members(3)):
        assert zipfile.ZipFile(io.BytesIO(data)).testzip() is None
