"""The title chooser (kbgraph.ingest.titles, issue 56): a metadata title that is a code, a file name or empty
gives way to the first page's heading or the file name; the others are kept as alternatives. Pure cases; real
PDFs in tests/test_titles_pdf.py."""

from __future__ import annotations

import pytest

from kbgraph.ingest.titles import choose_title, file_name_title, is_code, usable


@pytest.mark.parametrize("code", ["0001018724-18-000005", "SP800-61r2", "FIPS200", "12345", "", "  ", "ab-12"])
def test_codes_are_not_titles(code: str) -> None:
    assert is_code(code) and not usable(code)


@pytest.mark.parametrize(
    "title",
    [
        "ADBE 10-K FY22",
        "AMCOR PLC",
        "Debian Policy Manual",
        "zoo: An S3 Class",
        "NIST SP 800-61 Revision 2, Computer Security Incident Handling Guide",
    ],
)
def test_words_are_titles(title: str) -> None:
    assert not is_code(title) and usable(title)


@pytest.mark.parametrize("junk", ["cfitsio.dvi", "report.docx", "Untitled", "untitled document"])
def test_file_names_and_placeholders_are_not_titles(junk: str) -> None:
    assert not usable(junk)


def test_file_name_as_words() -> None:
    assert file_name_title("AMAZON_2017_10K.pdf") == "AMAZON 2017 10K"
    assert file_name_title("/x/R-admin.pdf") == "R admin"
    assert file_name_title("NIST.SP.800-63b.pdf") == "NIST SP 800-63b"


def test_a_code_gives_way_to_the_file_name_and_the_heading() -> None:
    c = choose_title("0001018724-18-000005", "UNITED STATES SECURITIES AND EXCHANGE COMMISSION", "AMAZON_2017_10K.pdf")
    assert c.title == "UNITED STATES SECURITIES AND EXCHANGE COMMISSION"  # the most informative
    assert c.alternatives == ["AMAZON 2017 10K"]  # kept: the Document layer names it
    assert "0001018724" not in c.label and "AMAZON 2017 10K" in c.label


def test_a_good_metadata_title_wins_ties_and_keeps_the_others() -> None:
    c = choose_title("Debian Policy Manual", "Debian Policy Manual", "policy.pdf")
    assert c.title == "Debian Policy Manual" and c.alternatives == ["policy"]


def test_every_candidate_a_code_gives_the_file_name() -> None:
    assert choose_title("0001018724-18-000005", None, "FIPS200.pdf").title == "FIPS200"


def test_a_sentence_is_no_heading_title() -> None:
    long = "This chapter describes " + "the many things that follow in this chapter " * 6
    assert choose_title(None, long, "R-data.pdf").title == "R data"


def test_the_one_top_level_heading_beats_the_file_name() -> None:
    assert choose_title(None, "Duck", "wikipedia_duck.html", heading_names_document=True).title == "Duck"
    # a cover heading that is not the document's one top-level heading competes with the file name
    c = choose_title(None, "Proposed Rules", "us_federal_register_2020-17221.pdf")
    assert c.title == "us federal register 2020-17221" and c.alternatives == ["Proposed Rules"]


@pytest.mark.parametrize("title", ["Title here", "Document control policy", "Unknown Pleasures liner notes"])
def test_a_placeholder_word_starting_a_real_title_is_kept(title: str) -> None:
    assert usable(title)
    assert choose_title(title, None, "a.md").title == title


@pytest.mark.parametrize("junk", ["Title", "document1", "Document 3", "Slide 1", "none"])
def test_whole_placeholders_are_refused(junk: str) -> None:
    assert not usable(junk)
