"""The direction a PDF page is read in (kbgraph.ingest.pdf_layout.upright_rotation, issue 38): MuPDF text-dict
blocks built in memory, their lines' ``dir`` vectors in the unrotated page's coordinates (y pointing down)."""

from __future__ import annotations

from typing import cast

import pytest

from kbgraph.ingest.pdf_layout import TextBlock, upright_rotation

RIGHT, UP, LEFT, DOWN = (1.0, 0.0), (0.0, -1.0), (-1.0, 0.0), (0.0, 1.0)


def _blocks(*lines: tuple[tuple[float, float], str]) -> list[TextBlock]:
    """One text block of ``lines`` (direction, text), and an image block, which counts for nothing."""
    # the members upright_rotation reads, not a whole TextBlock
    return cast(
        list[TextBlock],
        [{"type": 0, "lines": [{"dir": d, "spans": [{"text": text}]} for d, text in lines]}, {"type": 1}],
    )


@pytest.mark.parametrize(("direction", "rotation"), [(RIGHT, 0), (UP, 90), (LEFT, 180), (DOWN, 270)])
def test_the_rotation_that_makes_the_text_read_left_to_right(direction: tuple[float, float], rotation: int) -> None:
    """Text written upward on the unrotated page reads left to right under /Rotate 90 (clockwise), and so on."""
    assert upright_rotation(_blocks((direction, "Hello World Test Text"))) == rotation
    assert upright_rotation(_blocks((direction, "Hello World Test Text")), current=90) == rotation


def test_most_characters_decide_and_a_tie_keeps_the_page_rotation() -> None:
    body = (RIGHT, "The ferry to Sark leaves the stone quay at seven every morning.")
    assert upright_rotation(_blocks(body, (DOWN, "DRAFT 2024"))) == 0  # a margin stamp does not turn the page
    assert upright_rotation(_blocks((DOWN, "x" * 80), (RIGHT, "page 3"))) == 270
    assert upright_rotation(_blocks((RIGHT, "abcd"), (UP, "ab  cd"))) == 0  # (blanks do not count)
    assert upright_rotation(_blocks((RIGHT, "abcd"), (UP, "ab  cd")), current=90) == 90


def test_no_text_or_diagonal_text_only_gives_none() -> None:
    assert upright_rotation([]) is None
    assert upright_rotation(_blocks((RIGHT, "   "))) is None
    assert upright_rotation(_blocks(((0.7071, -0.7071), "WATERMARK"))) is None
