"""Where an ingestion group closes (kbgraph.ingest.groups.GroupCut): the one rule both engines follow, so that the
ray engine writes the local engine's units of work (settings ingest_group_size, ingest_group_chars)."""

from __future__ import annotations

from kbgraph.ingest.groups import GroupCut


def _groups(sizes: list[int], size: int, max_chars: int) -> list[list[int]]:
    """Documents of ``sizes`` characters, in order, cut as kbgraph.ingest.pipeline cuts them."""
    cut = GroupCut(size, max_chars)
    out: list[list[int]] = []
    open_group: list[int] = []
    for n in sizes:
        if cut.before(n):
            out.append(open_group)
            open_group = []
            cut.reset()
        open_group.append(n)
        if cut.add(n):
            out.append(open_group)
            open_group = []
            cut.reset()
    return out + ([open_group] if open_group else [])


def test_a_group_closes_at_its_size() -> None:
    assert _groups([1] * 8, size=3, max_chars=100) == [[1, 1, 1], [1, 1, 1], [1, 1]]


def test_a_group_closes_once_it_holds_the_characters() -> None:
    assert _groups([40, 40, 20, 10], size=10, max_chars=100) == [[40, 40, 20], [10]]


def test_a_group_closes_before_a_document_that_would_take_it_over() -> None:
    assert _groups([40, 40, 30, 10], size=10, max_chars=100) == [[40, 40], [30, 10]]


def test_a_huge_document_is_a_group_of_its_own() -> None:
    assert _groups([10, 500, 10], size=10, max_chars=100) == [[10], [500], [10]]


def test_reset_opens_an_empty_group() -> None:
    cut = GroupCut(2, 100)
    assert cut.add(60) is False and cut.before(50) is True
    cut.reset()
    assert (cut.count, cut.chars) == (0, 0) and cut.before(500) is False
