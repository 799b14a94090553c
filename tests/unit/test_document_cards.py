"""The document cards' words (kbgraph.query.propagation.cards, issue 56: documents that can be told apart): what a
card holds and how a revision, a version and a year become tokens of their own."""

from __future__ import annotations

import pytest

from kbgraph.query.propagation.cards import card_text, card_words, file_name_words

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("NIST SP 800-63 Revision 2", {"rev_2"}),
        ("Rev. 3 of the guide", {"rev_3"}),
        ("SP 800-126r2", {"rev_2"}),
        ("gnuplot 5.4 manual", {"5_4"}),
        ("FY2010 report", {"FY", "2010"}),
        ("2010AnnualReport", {"2010", "AnnualReport"}),
    ],
)
def test_what_tells_look_alikes_apart_is_a_token(text: str, tokens: set[str]) -> None:
    assert tokens <= set(card_words(text).split())


def test_a_question_and_a_card_spell_a_revision_the_same() -> None:
    assert "rev_2" in card_words("What does revision 2 change?").split()
    assert "rev_2" in card_words("SP800-126r2.pdf").split()
    assert "rev" not in card_words("the reverse side").split()  # a word that starts with 'rev' stays a word


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("/data/AMAZON_2017_10K.pdf", "AMAZON 2017 10K"),
        ("r-intro.pdf", "r intro"),
        ("/x/NIST.SP.800-53r5.pdf", "NIST SP 800 53r5"),
        ("plain", "plain"),
    ],
)
def test_a_file_name_gives_its_words(path: str, words: str) -> None:
    assert file_name_words(path) == words


def test_a_card_holds_title_alternatives_file_name_and_the_first_page_cut() -> None:
    row = {
        "title": "0001018724-18-000005",
        "alternatives": ["Annual Report 2017", None, ""],
        "uri": "file:///docs/ACME%20Corp_2017_report.pdf",
        "texts": ["ACME Corporation annual report for fiscal year 2017. " + "x" * 2000, "never reached"],
    }
    lines = card_text(row).split("\n")
    assert lines[:3] == ["0001018724-18-000005", "Annual Report 2017", "ACME Corp 2017 report"]
    assert lines[3].startswith("ACME Corporation annual report for fiscal year 2017.")
    assert len(lines[3]) == 1000 and "never" not in lines[3]
    assert card_text({"title": "", "alternatives": None, "uri": "", "texts": []}) == ""
