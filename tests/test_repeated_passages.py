"""A passage repeated in a document and across documents (the sample Chapter 13 handbook repeats whole passages)
is returned once by score propagation (setting ``collapse_repeated_chunks``, on by default): the best-ranked
copy is kept, the others are left out and the next chunks taken, so ``k`` distinct passages come back. Off, every
copy comes back as ranked. Both stores, both the weighted sum and the learned ranker, a planted corpus."""

from __future__ import annotations

import numpy as np
import pytest

from kbgraph.ingest.write import write_documents
from kbgraph.models import ChunkRecord, DocumentGraph, DocumentRecord
from kbgraph.query.graph import distinct_top, with_pages
from kbgraph.query.propagation.propagate import propagate
from kbgraph.query.propagation.seeding import seed_layers
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore

QUESTION = "What must the standing trustee assign to employees?"
REPEATED = "To the extent possible, the standing trustee must assign employees duties that separate functions."
OTHERS = [
    "The standing trustee must maintain and review records of employee training.",
    "Employees must not handle both receipts and disbursements of plan payments.",
    "The trustee files an annual report with the United States Trustee.",
    "A proof of claim may be filed by an entity that holds a claim against the debtor.",
]


def _vec(seed: int, near: list[float] | None = None, noise: float = 1.0) -> list[float]:
    v = np.random.default_rng(seed).normal(size=384) * noise
    if near is not None:
        v = v + np.asarray(near)
    return (v / np.linalg.norm(v)).tolist()  # type: ignore[no-any-return]


def _graphs() -> list[DocumentGraph]:
    """Document H: the passage at chunks 0, 2 and 4 (one vector, as one text embeds to one vector), others
    between; document G: the passage again, then one other chunk."""
    passage = _vec(1)
    h = DocumentRecord(
        id="doc:H", uri="file:///h.txt", title="Handbook", mime="text/plain", sha256="h", embedding=_vec(2)
    )
    g = DocumentRecord(id="doc:G", uri="file:///g.txt", title="Guide", mime="text/plain", sha256="g", embedding=_vec(3))
    texts = [REPEATED, OTHERS[0], REPEATED, OTHERS[1], REPEATED]
    vecs = [passage, _vec(11, passage, 0.05), passage, _vec(13, passage, 0.06), passage]
    hc = [
        ChunkRecord(id=f"h{i}", document_id=h.id, parent_id=h.id, text=t, order=i, embedding=v)
        for i, (t, v) in enumerate(zip(texts, vecs))
    ]
    gc = [
        ChunkRecord(id="g0", document_id=g.id, parent_id=g.id, text=REPEATED, order=0, embedding=passage),
        ChunkRecord(
            id="g1", document_id=g.id, parent_id=g.id, text=OTHERS[2], order=1, embedding=_vec(21, passage, 0.07)
        ),
    ]
    return [DocumentGraph(document=h, chunks=hc), DocumentGraph(document=g, chunks=gc)]


@pytest.mark.parametrize("ranker", ["weights", "learned"])
def test_a_repeated_passage_is_returned_once(store: GraphStore, backend_settings: Settings, ranker: str) -> None:
    write_documents(store, _graphs())
    qvec = _vec(99, _vec(1), 0.02)  # nearest the repeated passage, then the chunks placed near it
    settings = backend_settings.updated({"ranker": ranker})

    def top(collapse: bool) -> list[tuple[str, str]]:
        s = settings.updated({"collapse_repeated_chunks": collapse})
        chunks = propagate(store, s, seed_layers(store, s, QUESTION, qvec), k=3)
        return [(c.id, c.text) for c in chunks]

    every = top(False)
    assert [text for _, text in every] == [REPEATED] * 3  # as ranked: three copies of one passage
    once = top(True)
    assert len(once) == 3 and len({text for _, text in once}) == 3
    assert once[0] == every[0]  # the best copy is the one kept
    assert [text for _, text in once].count(REPEATED) == 1


def test_distinct_top_reads_further_only_after_a_repeat(store: GraphStore) -> None:
    write_documents(store, _graphs())
    store.sent.clear()
    ids, rows = distinct_top(store, ["h1", "h3", "g1"], 2)
    assert ids == ["h1", "h3"] and set(rows) == {"h1", "h3"} and store.sent["retrieve/chunk_details"] == 1
    store.sent.clear()
    ids, rows = distinct_top(store, ["h0", "h2", "h4", "g0", "h1", "h3", "g1"], 3)
    assert ids == ["h0", "h1", "h3"] and rows["h0"]["text"] == REPEATED
    assert store.sent["retrieve/chunk_details"] == 2  # the first 3, then the next 3
    assert distinct_top(store, ["h0", "h2"], 3)[0] == ["h0"]  # fewer distinct passages than k: all of them


def _paged_graphs() -> list[DocumentGraph]:
    """Document P: chunks p0, p1 on page 1 and p2 on page 2, all near one vector (p0 nearest); document W
    (no pages, like a passage or an HTML file): w0 and w1 beside them."""
    centre = _vec(5)
    p = DocumentRecord(
        id="doc:P", uri="file:///p.pdf", title="Paged", mime="application/pdf", sha256="p", embedding=_vec(6)
    )
    w = DocumentRecord(id="doc:W", uri="file:///w.html", title="Web", mime="text/html", sha256="w", embedding=_vec(7))
    pages = [1, 1, 2]
    pc = [
        ChunkRecord(
            id=f"p{i}",
            document_id=p.id,
            parent_id=p.id,
            text=OTHERS[i],
            order=i,
            page=pages[i],
            embedding=_vec(30 + i, centre, 0.03 * (i + 1)),
        )
        for i in range(3)
    ]
    wc = [
        ChunkRecord(
            id=f"w{i}",
            document_id=w.id,
            parent_id=w.id,
            text=f"{OTHERS[3]} ({i})",
            order=i,
            embedding=_vec(40 + i, centre, 0.2 + 0.01 * i),
        )
        for i in range(2)
    ]
    return [DocumentGraph(document=p, chunks=pc), DocumentGraph(document=w, chunks=wc)]


def test_one_chunk_per_page(store: GraphStore, backend_settings: Settings) -> None:
    """max_chunks_per_page: the second chunk of page 1 gives its slot to page 2; chunks without a page are not
    limited; 0 = every chunk as ranked."""
    write_documents(store, _paged_graphs())
    assert distinct_top(store, ["p0", "p1", "p2", "w0", "w1"], 3, per_page=1)[0] == ["p0", "p2", "w0"]
    assert distinct_top(store, ["p0", "p1", "p2", "w0", "w1"], 3)[0] == ["p0", "p1", "p2"]
    assert distinct_top(store, ["w0", "w1", "p0"], 2, per_page=1)[0] == ["w0", "w1"]
    later: dict[str, list[str]] = {}  # the page's chunk left out rides with its page's result, row and all
    ids, rows = distinct_top(store, ["p0", "p1", "p2", "w0"], 2, per_page=1, same_page=later)
    assert ids == ["p0", "p2"] and later == {"p0": ["p1"]} and set(rows) == {"p0", "p1", "p2"}
    qvec = _vec(98, _vec(5), 0.02)
    for per_page, expect_two_on_page_1 in ((1, False), (0, True)):
        s = backend_settings.updated({"ranker": "weights", "max_chunks_per_page": per_page})
        top = propagate(store, s, seed_layers(store, s, QUESTION, qvec), k=3)
        pages = [(c.document_id, c.page) for c in top if c.page is not None]
        assert (pages.count(("doc:P", 1)) == 2) is expect_two_on_page_1, (per_page, [c.id for c in top])
        if per_page:  # page 1's result carries p1 as evidence; an answer reads it after p0 (with_pages)
            assert [c.id for c in top[0].same_page] == ["p1"] and top[0].same_page[0].page == 1
            assert [c.id for c in with_pages(top)][:2] == ["p0", "p1"]
        else:
            assert not any(c.same_page for c in top)
