"""Document metadata (issue 58; kbgraph.ingest.metadata, kbgraph.ingest.properties, kbgraph.ingest.refresh): keys
and values checked, --meta typed, front matter split off, PDF and Office dates, the path's keys, the layers'
precedence and the metadata-only update rows. Pure cases; real files and stores in tests/test_metadata.py."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from kbgraph.errors import IngestError
from kbgraph.ingest.metadata import (
    Origin,
    base_layer,
    check_key,
    check_meta,
    is_sidecar,
    merge,
    parse_meta_options,
    path_metadata,
    read_sidecar,
    same_values,
    split_front_matter,
    to_value,
    typed,
    update_row,
    user_metadata,
)
from kbgraph.ingest.properties import (
    detect_language,
    file_system_metadata,
    iso_utc,
    office_properties,
    ooxml_core_properties,
    pdf_date,
    pdf_properties,
)
from kbgraph.ingest.refresh import file_update, stored_metadata
from kbgraph.models import RESERVED_DOCUMENT_PROPERTIES


@pytest.mark.parametrize("key", ["team", "_x", "Year2", "fiscal_year"])
def test_good_keys(key: str) -> None:
    assert check_key(key, "s") == key


@pytest.mark.parametrize("key", ["2x", "a-b", "a b", "", "ü", "a.b", 3])
def test_malformed_keys_are_refused_naming_key_and_source(key: object) -> None:
    with pytest.raises(IngestError, match=r"^x\.meta\.json: bad metadata key"):
        check_key(key, "x.meta.json")


@pytest.mark.parametrize("key", sorted(RESERVED_DOCUMENT_PROPERTIES - {"title"}))
def test_reserved_keys_are_refused(key: str) -> None:
    with pytest.raises(IngestError, match=rf"front matter: metadata key '{key}' is reserved"):
        check_key(key, "front matter", title=True)


def test_title_only_where_allowed() -> None:
    assert check_key("title", "sidecar", title=True) == "title"
    with pytest.raises(IngestError, match="'title' is reserved"):
        check_key("title", "--meta")
    with pytest.raises(ValueError, match="'title' is reserved"):
        parse_meta_options(["title=x"])


def test_values() -> None:
    assert to_value(" hr ", "k", "s") == "hr"
    assert to_value(3, "k", "s") == 3 and to_value(1.5, "k", "s") == 1.5 and to_value(True, "k", "s") is True
    assert to_value(["a", "b"], "k", "s") == ["a", "b"]
    assert to_value(date(2021, 3, 4), "k", "s") == "2021-03-04"
    assert to_value(datetime(2021, 3, 4, 5, 6, 7), "k", "s") == "2021-03-04T05:06:07Z"
    plus_two = timezone(timedelta(hours=2))
    assert to_value(datetime(2021, 3, 4, 7, 6, 7, tzinfo=plus_two), "k", "s") == "2021-03-04T05:06:07Z"
    assert to_value(None, "k", "s") is None and to_value("  ", "k", "s") is None and to_value([], "k", "s") is None


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ({"a": 1}, "a nested object"),
        ([1, "a"], "a list must hold only texts"),
        ([["a"]], "a list must hold only texts"),
        (float("nan"), "not a number"),
    ],
)
def test_bad_values_are_refused_naming_key_and_source(value: object, why: str) -> None:
    with pytest.raises(IngestError, match=rf"^a\.md: front matter: metadata key 'owner': .*{why}"):
        user_metadata({"owner": value}, "a.md: front matter")


def test_user_metadata_leaves_out_empty_values() -> None:
    assert user_metadata({"a": "", "b": None, "c": [], "d": 0, "e": False}, "s") == {"d": 0, "e": False}
    with pytest.raises(IngestError, match="must be an object"):
        user_metadata(["a"], "s")


def test_meta_options_are_typed() -> None:
    got = parse_meta_options(
        ["team=hr", "year=2021", "ratio=1.5", "public=TRUE", "draft=false", "code=007x", "note=a=b", "empty="]
    )
    assert got == {
        "team": "hr",
        "year": 2021,
        "ratio": 1.5,
        "public": True,
        "draft": False,
        "code": "007x",
        "note": "a=b",
    }
    assert type(got["year"]) is int and type(got["public"]) is bool
    assert typed("-3") == -3 and typed("1e3") == 1000.0 and typed("nan") == "nan"
    for bad in (["team"], ["2x=1"], ["id=1"]):
        with pytest.raises(ValueError, match="--meta"):
            parse_meta_options(bad)
    with pytest.raises(ValueError, match="a nested object"):
        check_meta({"a": {"b": 1}})


def test_front_matter_is_split_off() -> None:
    meta, body = split_front_matter("---\ntitle: Leave\nteam: hr\nwhen: 2021-03-04\n---\n# Heading\n\nText.\n")
    assert meta == {"title": "Leave", "team": "hr", "when": date(2021, 3, 4)}
    assert body == "# Heading\n\nText.\n"
    assert split_front_matter("---\n...\nbody")[0] == {}
    for text in ("# No front matter\n---\n", "---\nJust a heading\n---\nbody", "text\n---\na: 1\n---\n"):
        assert split_front_matter(text) == (None, text)
    with pytest.raises(IngestError, match=r"front matter: not valid YAML \(line 3\)"):
        split_front_matter("---\na: 1\nb: [unclosed\n---\nbody")


def test_pdf_dates() -> None:
    assert pdf_date("D:20210304050607Z") == "2021-03-04T05:06:07Z"
    assert pdf_date("D:20210304060607+01'00'") == "2021-03-04T05:06:07Z"
    assert pdf_date("D:20210304000607-05'30") == "2021-03-04T05:36:07Z"
    assert pdf_date("D:2021") == "2021-01-01T00:00:00Z"
    assert pdf_date("") is None and pdf_date("yesterday") is None and pdf_date(None) is None
    assert pdf_date("D:20211304") is None  # month 13
    got = pdf_properties({"author": "  Jane   Roe ", "creationDate": "D:20210304050607Z", "modDate": "", "title": "x"})
    assert got == {"author": "Jane Roe", "created": "2021-03-04T05:06:07Z"}


def test_office_core_properties() -> None:
    class Core:
        author = "Ann"
        created = datetime(2020, 1, 2, 3, 4, 5)
        modified = None

    assert office_properties(Core()) == {"author": "Ann", "created": "2020-01-02T03:04:05Z"}
    core = (
        '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" '
        'xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><dc:creator>Xl Author</dc:creator>'
        '<dcterms:created xsi:type="dcterms:W3CDTF">2019-05-06T07:08:09Z</dcterms:created>'
        '<dcterms:modified xsi:type="dcterms:W3CDTF">2020-05-06T09:08:09+02:00</dcterms:modified>'
        "</cp:coreProperties>"
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("docProps/core.xml", core)
    assert ooxml_core_properties(buf.getvalue()) == {
        "author": "Xl Author",
        "created": "2019-05-06T07:08:09Z",
        "modified": "2020-05-06T07:08:09Z",
    }
    assert ooxml_core_properties(b"not a zip") == {}


def test_path_keys() -> None:
    assert path_metadata("hr/policies/Leave.PDF") == {
        "folder": "hr/policies/",
        "path": "hr/policies/Leave.PDF",
        "file_type": "pdf",
    }
    assert path_metadata("notes.txt") == {"folder": "", "path": "notes.txt", "file_type": "txt"}
    assert path_metadata("README") == {"folder": "", "path": "README"}
    assert is_sidecar(Path("a.pdf.meta.json")) and not is_sidecar(Path(".meta.json")) and not is_sidecar(Path("a.json"))


def test_file_system_times(tmp_path: Path) -> None:
    f = tmp_path / "a.txt"
    f.write_text("x")
    import os

    os.utime(f, (1_600_000_000, 1_600_000_000))
    got = file_system_metadata(f)
    assert got["modified"] == iso_utc(datetime.fromtimestamp(1_600_000_000, UTC)) == "2020-09-13T12:26:40Z"
    assert ("created" in got) == hasattr(os.stat(f), "st_birthtime")  # Linux keeps none: absent
    assert file_system_metadata(tmp_path / "gone") == {}


def test_precedence_meta_over_sidecar_over_front_matter_over_file_over_file_system(tmp_path: Path) -> None:
    f = tmp_path / "a.md"
    f.write_text("x")
    (tmp_path / "a.md.meta.json").write_text(json.dumps({"team": "sidecar", "owner": "sidecar", "year": 2020}))
    low = base_layer(f, Origin(path="docs/a.md"))
    assert low["folder"] == "docs/" and "modified" in low
    got = merge(
        low,
        {"modified": "2001-01-01T00:00:00Z", "author": "file"},
        {"author": "front", "team": "front", "kind": "front"},
        read_sidecar(f),
        {"team": "meta"},
    )
    assert got["modified"] == "2001-01-01T00:00:00Z"  # the file's own over the file system
    assert (got["author"], got["kind"], got["owner"], got["team"], got["year"]) == (
        "front",
        "front",
        "sidecar",
        "meta",
        2020,
    )


def test_bad_sidecars(tmp_path: Path) -> None:
    f = tmp_path / "a.txt"
    side = tmp_path / "a.txt.meta.json"
    assert read_sidecar(f) == {}
    for text, why in (
        ("{", "not valid JSON"),
        ("[1]", "must be an object"),
        ('{"uri": "x"}', "'uri' is reserved"),
        ('{"x": {"y": 1}}', "a nested object"),
    ):
        side.write_text(text)
        with pytest.raises(IngestError, match=rf"^a\.txt\.meta\.json: .*{why}"):
            read_sidecar(f)
    side.write_text('{"title": "T"}')
    assert read_sidecar(f) == {"title": "T"}
    with pytest.raises(IngestError, match="'title' is reserved"):
        read_sidecar(f, title=False)  # a corpus's passages keep their titles


def test_update_rows_remove_keys_gone() -> None:
    row = update_row("doc:1", {"team": "hr", "old": 1}, {"team": "sales"}, "{}")
    assert row == {
        "id": "doc:1",
        "metadata": {"old": None, "team": "sales"},
        "metadata_keys": ["team"],
        "file_metadata": "{}",
    }
    assert not same_values({"a": True}, {"a": 1}) and same_values({"a": 1, "b": [1]}, {"b": [1], "a": 1})
    assert stored_metadata({"metadata": [["a", 1], ["b", None]]}) == {"a": 1}


def test_unchanged_file_update(tmp_path: Path) -> None:
    f = tmp_path / "a.txt"
    f.write_text("x")
    origin = Origin(path="a.txt", meta={"batch": 1})
    own = json.dumps({"properties": {"language": "en"}, "front_matter": {}, "title": None})
    now = merge(base_layer(f, origin), {"language": "en"}, {"batch": 1})
    row = {"id": "doc:1", "metadata": [[k, v] for k, v in now.items()], "file_metadata": own}
    assert file_update(f, origin, row) == []  # as stored
    got = file_update(f, Origin(path="a.txt", meta={"batch": 2}), row)
    assert got is not None and got[0]["metadata"]["batch"] == 2
    (tmp_path / "a.txt.meta.json").write_text('{"title": "New title"}')
    assert file_update(f, origin, row) is None  # another title: parsed and rewritten
    assert file_update(f, origin, {**row, "file_metadata": None}) is None  # written before metadata existed


def test_language() -> None:
    assert detect_language("The committee approved the annual budget after a long debate about funding.") == "en"
    assert detect_language("Der Ausschuss hat den Jahreshaushalt nach einer langen Debatte genehmigt.") == "de"
    assert detect_language("too short") is None and detect_language("1234 5678 9012 3456 7890 1234") is None
