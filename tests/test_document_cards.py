"""The document cards on both stores (kbgraph.query.propagation.cards, issue 56: documents that can be told
apart): three look-alike reports whose chunks say the same and whose titles are codes; only the file name and the
first page tell the year. With ``weight_document_text`` the question's year finds its report; with 0 (PIKE-RAG's
formula) the cards are not read."""

from __future__ import annotations

import numpy as np
import pytest

from kbgraph.ingest.write import write_documents
from kbgraph.models import ChunkRecord, DocumentGraph, DocumentRecord
from kbgraph.query.bm25 import corpus_generation
from kbgraph.query.models import Seeds
from kbgraph.query.propagation import cards
from kbgraph.query.propagation.propagate import propagate
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore

DIM = 384
YEARS = (2017, 2018, 2019)


def _vec(seed: int) -> list[float]:
    v = np.random.default_rng(seed).normal(size=DIM)
    out: list[float] = (v / np.linalg.norm(v)).tolist()
    return out


def _reports() -> list[DocumentGraph]:
    """One report per year: title an accession-like code, file ``ACME_<year>_annual.pdf``, page 1 naming the
    year, page 2 the same sentence in every report (the chunk a question about revenue finds)."""
    graphs = []
    for n, year in enumerate(YEARS):
        doc = DocumentRecord(
            id=f"doc:{year}",
            uri=f"file:///reports/ACME_{year}_annual.pdf",
            title=f"0001018724-{n}",
            mime="application/pdf",
            sha256=str(year),
            embedding=_vec(n),
        )
        texts = [f"ACME Corporation annual report, fiscal year {year}.", "Revenue grew because widgets sold well."]
        chunks = [
            ChunkRecord(
                id=f"c{year}_{p}",
                document_id=doc.id,
                parent_id=doc.id,
                text=text,
                order=p,
                page=p + 1,
                embedding=_vec(100 + p),
            )
            for p, text in enumerate(texts)
        ]
        graphs.append(DocumentGraph(document=doc, chunks=chunks))
    return graphs


def _settings(base: Settings, weight: float) -> Settings:
    return base.updated(
        {
            "weight_chunk": 1.0,
            "weight_question": 0.0,
            "weight_triple": 0.0,
            "weight_entity": 0.0,
            "weight_fulltext": 0.0,
            "weight_section": 0.0,
            "weight_document": 0.0,
            "weight_document_text": weight,
            "weight_hop": 0.0,
            "weight_title_hop": 0.0,
            "weight_next": 0.0,
            "rescore_k": 0,
            "ranker": "weights",
        }
    )


@pytest.fixture(autouse=True)
def _fresh_cards() -> None:
    cards._SHARED.clear()  # one process's card index per knowledge base: each test's store is a new one


def test_the_year_of_a_question_finds_its_report_by_file_name_and_first_page(
    store: GraphStore, backend_settings: Settings
) -> None:
    write_documents(store, _reports())
    s = _settings(backend_settings, 0.2)
    question = "How did ACME's revenue grow in fiscal 2018?"
    found = cards.card_seeds(store, s, question, corpus_generation(store))
    assert next(iter(found)) == "doc:2018" and found["doc:2018"][0] == pytest.approx(1.0)
    assert all(score < 1.0 for doc, (score, _) in found.items() if doc != "doc:2018")
    assert found["doc:2018"][1] == "0001018724-1"  # the text --explain shows: the document's title

    same = {f"c{year}_1": (0.8, "") for year in YEARS}  # the revenue chunk: one sentence in every report
    got = propagate(store, s, Seeds(layers={"Chunk": same, "DocumentText": found}), k=3, explain=True)
    assert got[0].id == "c2018_1"
    (prior,) = [t for t in got[0].breakdown if t.term == "DocumentText"]
    assert prior.node_id == "doc:2018" and got[0].score == pytest.approx(0.8 + 0.2 * 1.0)

    off = _settings(backend_settings, 0.0)
    assert cards.card_seeds(store, off, question, corpus_generation(store)) == {}
    plain = propagate(store, off, Seeds(layers={"Chunk": same, "DocumentText": found}), k=3, explain=True)
    assert plain and all(c.score == pytest.approx(0.8) for c in plain)  # 0: the prior is not added
    assert not [t for c in plain for t in c.breakdown if t.term == "DocumentText"]


def test_a_document_of_one_chunk_has_no_card(store: GraphStore, backend_settings: Settings) -> None:
    """A passage's card would be the passage itself, which the full-text term already scores."""
    reports = _reports()
    reports[1].chunks = reports[1].chunks[:1]
    write_documents(store, reports)
    found = cards.card_seeds(store, _settings(backend_settings, 0.2), "ACME report 2018", corpus_generation(store))
    assert found and "doc:2018" not in found


def test_a_new_document_is_in_the_cards_of_the_next_generation(store: GraphStore, backend_settings: Settings) -> None:
    reports = _reports()
    write_documents(store, reports[:2])
    s = _settings(backend_settings, 0.2)
    question = "ACME annual report 2019"
    assert "doc:2019" not in cards.card_seeds(store, s, question, corpus_generation(store))
    write_documents(store, reports[2:])
    assert next(iter(cards.card_seeds(store, s, question, corpus_generation(store)))) == "doc:2019"
