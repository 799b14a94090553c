"""Ingestion stages 3-4: distill (atomic tags, entities, triples, mentions) and embed.

Real text from the shared multi-hop sets, the real spaCy pipeline and the real embedding model. The LLM path
is driven by a scripted fake implementing the ``complete_json`` protocol: what is tested there is the
mapping of LLM output into records, not the LLM.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np
import pytest
from pydantic import BaseModel

from kbgraph.errors import ConfigError
from kbgraph.ingest import prompts
from kbgraph.llm.base import Usage
from kbgraph.llm.json_stream import TextSink
from kbgraph.embed.base import Embedder
from kbgraph.ingest.distill import (
    AtomicQuestions,
    Distilled,
    ExtractedKnowledge,
    TitleMatcher,
    distill,
    entity_id,
    link_title_mentions,
    normalize_date,
    normalize_name,
    title_entity,
)
from kbgraph.models import ChunkRecord, stable_id
from kbgraph.settings import Settings
from kbgraph.llm.base import Messages

if TYPE_CHECKING:
    from openai import OpenAI
    from spacy.language import Language

Row = dict[str, Any]  # a corpus line: id, title, text
Corpus = dict[str, Row]
WikiDistilled = tuple[list[ChunkRecord], dict[str, str], Distilled]
M = TypeVar("M", bound=BaseModel)

# --- data -------------------------------------------------------------------------------------------


def _load(path: Path) -> Corpus:
    return {row["id"]: row for row in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


@pytest.fixture(scope="module")
def wiki(examples_dir: Path) -> Corpus:
    return _load(examples_dir / "multihop/2wikimultihopqa/dev500.corpus.jsonl")


@pytest.fixture(scope="module")
def musique(examples_dir: Path) -> Corpus:
    return _load(examples_dir / "multihop/musique/hipporag_train100.corpus.jsonl")


def _chunks(rows: list[Row]) -> tuple[list[ChunkRecord], dict[str, str]]:
    chunks: list[ChunkRecord] = []
    titles: dict[str, str] = {}
    for row in rows:
        doc_id = stable_id("doc", row["id"])
        titles[doc_id] = row["title"]
        chunks.append(
            ChunkRecord(
                id=stable_id("chunk", row["id"]), document_id=doc_id, parent_id=doc_id, text=row["text"], order=0
            )
        )
    return chunks, titles


@pytest.fixture(scope="module")
def nlp() -> Language:
    from kbgraph.ingest.nlp import load_nlp

    return load_nlp()


# 2Wiki dev500 passages 7-19: Charles Mathew / James Charles Mathew (father and son), two films and their
# directors (a bridge-comparison question's four gold passages), Charles Coburn (named in two passages).
WIKI_IDS = [f"2wiki500:{i}" for i in range(0, 20)]


@pytest.fixture(scope="module")
def wiki_distilled(wiki: Corpus, nlp: Language) -> WikiDistilled:
    chunks, titles = _chunks([wiki[i] for i in WIKI_IDS])
    return chunks, titles, distill(chunks, nlp=nlp, titles=titles)


def _by_text(chunks: list[ChunkRecord], wiki: Corpus, pid: str) -> ChunkRecord:
    return next(c for c in chunks if c.text == wiki[pid]["text"])


# --- names and ids ----------------------------------------------------------------------------------


def test_normalize_name_and_dates() -> None:
    assert normalize_name("The Beatles") == normalize_name("beatles") == "beatles"
    assert normalize_name("St. George's") == "st georges"
    assert normalize_name("  Sleep,   My Love ") == "sleep my love"
    assert normalize_date("6 December 1951") == normalize_date("December 6, 1951") == "1951-12-06"
    assert normalize_date("6th of Dec. 1951") == "1951-12-06"
    assert normalize_date("April 1897") == "1897-04"
    assert normalize_date("the 1940s") is None
    assert entity_id("6 December 1951", "DATE") == entity_id("December 6, 1951", "DATE")
    assert entity_id("Paris", "GPE") != entity_id("Paris", "PERSON")  # merged by name AND type
    assert entity_id("The Beatles", "ORG") == entity_id("Beatles", "ORG")


# --- offline distillation on real passages -----------------------------------------------------------


def test_sentences_become_atomic_tags(wiki_distilled: WikiDistilled, wiki: Corpus) -> None:
    chunks, _titles, (questions, _e, _t, _m) = wiki_distilled
    daigo = _by_text(chunks, wiki, "2wiki500:3")  # "Daigo's reign spanned ... He is named after ..."
    tags = [q for q in questions if q.chunk_id == daigo.id]
    assert [q.text for q in tags] == [
        "Daigo's reign spanned the years from 897 through 930.",
        "He is named after his place of burial.",
    ]
    assert all(q.kind == "sentence" and q.id == stable_id("aq", daigo.id, q.text) for q in tags)
    assert {q.chunk_id for q in questions} == {c.id for c in chunks}  # every chunk has a tag
    assert len({q.id for q in questions}) == len(questions)


def test_entities_found_by_spacy_are_really_there(wiki_distilled: WikiDistilled, wiki: Corpus) -> None:
    chunks, _titles, (_q, entities, _t, mentions) = wiki_distilled
    by_id = {e.id: e for e in entities}
    names = {(e.name, e.type) for e in entities}
    assert ("Douglas Sirk", "PERSON") in names
    assert ("Claudette Colbert", "PERSON") in names
    assert ("Charles James Mathew", "PERSON") in names
    assert ("Columbia Pictures", "ORG") in names
    assert ("World War II", "EVENT") in names
    sleep = _by_text(chunks, wiki, "2wiki500:10")
    mentioned = {by_id[m.entity_id].name for m in mentions if m.chunk_id == sleep.id}
    assert {"Douglas Sirk", "Claudette Colbert", "Robert Cummings", "Don Ameche", "Sleep, My Love"} <= mentioned
    # numbers are not entities; dates with a digit are, in one form whatever the spelling
    assert not any(e.type in ("CARDINAL", "ORDINAL", "MONEY", "PERCENT", "QUANTITY", "TIME") for e in entities)
    assert entity_id("December 18, 1904", "DATE") in by_id
    assert not any(e.type == "DATE" and not any(ch.isdigit() for ch in e.name) for e in entities)
    # every mention points at an entity that is returned, and no mention is repeated
    assert all(m.entity_id in by_id for m in mentions)
    assert len({(m.chunk_id, m.entity_id) for m in mentions}) == len(mentions)


def test_entity_merged_across_chunks(wiki_distilled: WikiDistilled, wiki: Corpus) -> None:
    chunks, _titles, (_q, entities, _t, mentions) = wiki_distilled
    grant = [e for e in entities if e.name == "Cary Grant"]
    assert len(grant) == 1 and grant[0].type == "PERSON"
    merrier = _by_text(
        chunks, wiki, "2wiki500:11"
    )  # "This film was remade in 1966 as Walk, Don't Run, with Cary Grant"
    walk = _by_text(chunks, wiki, "2wiki500:16")  # "... starring Cary Grant in his final film role"
    assert {m.chunk_id for m in mentions if m.entity_id == grant[0].id} == {merrier.id, walk.id}
    assert grant[0].id == entity_id("cary  grant", "PERSON")
    # the son's passage ('Sir James Charles Mathew') and the father's own passage share the PERSON
    father = [e for e in entities if e.name == "James Charles Mathew" and e.type == "PERSON"]
    assert len(father) == 1
    son, father_page = _by_text(chunks, wiki, "2wiki500:7"), _by_text(chunks, wiki, "2wiki500:8")
    assert {son.id, father_page.id} <= {m.chunk_id for m in mentions if m.entity_id == father[0].id}


def test_title_entities_link_passages(wiki_distilled: WikiDistilled, wiki: Corpus) -> None:
    chunks, titles, (_q, entities, _t, mentions) = wiki_distilled
    by_id = {e.id: e for e in entities}
    sirk_title = title_entity("Douglas Sirk")
    assert by_id[sirk_title.id].type == "TITLE"
    sleep = _by_text(chunks, wiki, "2wiki500:10")
    sirk_page = _by_text(chunks, wiki, "2wiki500:19")
    pairs = {(m.chunk_id, m.entity_id) for m in mentions}
    assert (sirk_page.id, sirk_title.id) in pairs  # its own title
    assert (sleep.id, sirk_title.id) in pairs  # names it: the film -> director hop
    # 'Sir James Charles Mathew' in the son's passage names the father's passage, and the shorter title
    # 'Charles Mathew' inside it is not a second mention
    son = _by_text(chunks, wiki, "2wiki500:7")
    father = title_entity("James Charles Mathew")
    assert (son.id, father.id) in pairs
    # 'Charles James (footballer)' matches as 'Charles James', but not inside the longer name
    # 'Charles James Fox'
    fox = _by_text(chunks, wiki, "2wiki500:0")
    assert (fox.id, title_entity("Charles James (footballer)").id) not in pairs


def test_link_title_mentions_alone(wiki: Corpus, nlp: Language) -> None:
    chunks, titles = _chunks([wiki["2wiki500:10"], wiki["2wiki500:11"]])
    corpus_titles = {"x": "Douglas Sirk", "y": "George Stevens", "z": "Sleep", "w": "World War II"}
    mentions = link_title_mentions(chunks, corpus_titles, nlp)
    pairs = {(m.chunk_id, m.entity_id) for m in mentions}
    assert (chunks[0].id, title_entity("Douglas Sirk").id) in pairs
    assert (chunks[1].id, title_entity("George Stevens").id) in pairs
    assert (chunks[1].id, title_entity("World War II").id) in pairs
    assert (chunks[0].id, title_entity("Douglas Sirk").id) in pairs
    # the one-word title 'Sleep' matches only with its exact case: 'Sleep, My Love' does, nothing else
    assert (chunks[1].id, title_entity("Sleep").id) not in pairs
    assert len(pairs) == len(mentions)
    assert link_title_mentions(chunks, {}, nlp) == []


def test_title_matcher_disambiguator_and_case(nlp: Language) -> None:
    m = TitleMatcher(nlp, ["Anthony Robinson (Unitarian)", "The More the Merrier", "sleep"])
    found = m.find(nlp.make_doc("A sermon by Anthony Robinson; the more the merrier, said The More The Merrier."))
    texts = [span.text for span, _ids in found]
    assert texts == ["Anthony Robinson", "The More The Merrier"]
    assert found[0][1] == [title_entity("Anthony Robinson (Unitarian)").id]


def test_triples_map_to_entities(wiki_distilled: WikiDistilled, wiki: Corpus) -> None:
    chunks, _titles, (_q, entities, triples, mentions) = wiki_distilled
    sleep = _by_text(chunks, wiki, "2wiki500:10")
    t = next(t for t in triples if t.chunk_id == sleep.id and t.predicate == "directed by")
    assert (t.subject, t.object) == ("Sleep, My Love", "Douglas Sirk")
    # a span that is a document title resolves to the TITLE entity, so the triple itself is the hop
    assert (t.subject_id, t.object_id) == (title_entity("Sleep, My Love").id, title_entity("Douglas Sirk").id)
    assert t.text == "Sleep, My Love directed by Douglas Sirk"
    assert t.id == stable_id("tri", sleep.id, t.subject, t.predicate, t.object)
    goode = _by_text(chunks, wiki, "2wiki500:5")  # "... an English footballer who plays for Northampton Town."
    texts = {t.text for t in triples if t.chunk_id == goode.id}
    assert "Charles James Goode play for Northampton Town" in texts
    assert "Charles James Goode born 3 August 1995" in texts
    # a pronoun subject resolves to the passage's title entity: "He is named after his place of burial."
    daigo = _by_text(chunks, wiki, "2wiki500:3")
    assert any(t.subject == "Emperor Daigo" and t.predicate == "named after" for t in triples if t.chunk_id == daigo.id)
    pairs = {(m.chunk_id, m.entity_id) for m in mentions}
    for t in triples:  # both ends are entities the chunk mentions
        assert (t.chunk_id, t.subject_id) in pairs and (t.chunk_id, t.object_id) in pairs
        assert t.subject_id != t.object_id


def test_musique_passage(musique: Corpus, nlp: Language) -> None:
    chunks, titles = _chunks([musique["musique_train100:0"]])
    questions, entities, triples, _m = distill(chunks, nlp=nlp, titles=titles)
    names = {(e.name, e.type) for e in entities}
    assert ("Jan Philip Solovej", "PERSON") in names
    assert ("American Institute of Physics", "ORG") in names
    assert ("University of Copenhagen", "ORG") in names
    assert ("Journal of Mathematical Physics", "TITLE") in names
    assert len(questions) == 4
    # 'The journal was first published ... in January 1960': 'the journal' is the passage's subject
    assert any(t.text == "Journal of Mathematical Physics published in January 1960" for t in triples)


def test_deterministic_and_without_triples(wiki: Corpus, nlp: Language) -> None:
    chunks, titles = _chunks([wiki[i] for i in WIKI_IDS[:8]])
    a = distill(chunks, nlp=nlp, titles=titles)
    b = distill(list(chunks), nlp=nlp, titles=dict(titles))
    assert [[r.model_dump() for r in part] for part in a] == [[r.model_dump() for r in part] for part in b]
    q, e, t, m = distill(chunks, nlp=nlp, titles=titles, triples=False)
    assert t == [] and {x.id for x in e if x.type != "CONCEPT"} == {x.id for x in a[1] if x.type != "CONCEPT"}
    assert len(q) >= len(chunks)


def test_pipeline_state_is_restored(wiki: Corpus, nlp: Language) -> None:
    before = (list(nlp.pipe_names), list(nlp.disabled))
    chunks, titles = _chunks([wiki["2wiki500:10"]])
    distill(chunks, nlp=nlp, titles=titles, triples=False)
    distill(chunks, nlp=nlp, titles=titles, triples=True)
    assert (list(nlp.pipe_names), list(nlp.disabled)) == before


@pytest.mark.slow
def test_two_processes_give_the_same_records(wiki: Corpus, nlp: Language) -> None:
    chunks, titles = _chunks(list(wiki.values())[:150])
    one = distill(chunks, nlp=nlp, titles=titles, n_process=1)
    two = distill(chunks, nlp=nlp, titles=titles, n_process=2)
    assert [[r.model_dump() for r in part] for part in one] == [[r.model_dump() for r in part] for part in two]


def test_table_chunk_tags(nlp: Language) -> None:
    table = (
        "| Film | Director | Year |\n|---|---|---|\n| Sleep, My Love | Douglas Sirk | 1948 |\n"
        "| The More the Merrier | George Stevens | 1943 |"
    )
    chunk = ChunkRecord(
        id="chunk:t",
        document_id="doc:t",
        parent_id="doc:t",
        text=table,
        kind="table",
        summary="Films of the 1940s and their directors.",
        order=0,
    )
    questions, entities, _t, mentions = distill([chunk], nlp=nlp)
    assert [q.text for q in questions] == [
        "Films of the 1940s and their directors.",
        "Film: Sleep, My Love; Director: Douglas Sirk; Year: 1948",
        "Film: The More the Merrier; Director: George Stevens; Year: 1943",
    ]
    assert ("George Stevens", "PERSON") in {(e.name, e.type) for e in entities}
    assert {m.chunk_id for m in mentions} == {"chunk:t"}


def test_empty_input(nlp: Language) -> None:
    assert distill([], nlp=nlp) == ([], [], [], [])
    blank = ChunkRecord(id="c", document_id="d", parent_id="d", text="   ", order=0)
    assert distill([blank], nlp=nlp) == ([], [], [], [])


# --- LLM path -----------------------------------------------------------------------------------------


class ScriptedLLM:
    """An LLM (``kbgraph.llm.base.LLM``) whose ``complete_json`` gives the canned answer of the schema asked for,
    recording the prompts it was sent; ``complete`` is never asked."""

    def __init__(self, answers: dict[type[BaseModel], object]) -> None:
        self.answers = answers
        self.calls: list[tuple[Messages, type[BaseModel]]] = []
        self.usage = Usage()

    def complete(
        self,
        messages: Messages,
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> str:
        raise AssertionError("distillation asks for JSON answers only")

    def complete_json(
        self,
        messages: Messages,
        schema: type[M],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        sink: TextSink | None = None,
    ) -> M:
        self.calls.append((messages, schema))
        answer = self.answers[schema]
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, dict):
            return schema.model_validate(answer)
        assert isinstance(answer, schema), answer
        return answer


def test_llm_path_maps_output_to_records(wiki: Corpus, nlp: Language) -> None:
    chunks, titles = _chunks([wiki["2wiki500:10"]])
    llm = ScriptedLLM(
        {
            AtomicQuestions: {
                "questions": [
                    "1. Who directed Sleep, My Love?",
                    "Which actors starred in Sleep, My Love?",
                    "who directed sleep, my love?",  # a duplicate
                    "",
                ]
            },
            ExtractedKnowledge: {
                "entities": [
                    {"name": "Sleep, My Love", "type": "work of art"},
                    {"name": "Douglas Sirk", "type": "PERSON"},
                    {"name": "Claudette Colbert", "type": "person"},
                    {"name": "1948", "type": "DATE"},
                    {"name": "film noir", "type": "genre"},  # unknown type -> CONCEPT
                ],
                "triples": [
                    {"subject": "Sleep, My Love", "predicate": "Directed by", "object": "Douglas Sirk"},
                    {"subject": "Sleep, My Love", "predicate": "stars", "object": "Claudette Colbert"},
                    {"subject": "Sleep, My Love", "predicate": "is a", "object": "American film"},  # new concept
                ],
            },
        }
    )
    questions, entities, triples, mentions = distill(chunks, llm=llm, nlp=nlp, titles=titles)
    # the paper's prompt (Task section verbatim), the chunk with its title, a JSON schema per call
    sent = {schema: msgs for msgs, schema in llm.calls}
    assert set(sent) == {AtomicQuestions, ExtractedKnowledge}
    user = sent[AtomicQuestions][1]["content"]
    assert prompts.ATOMIC_QUESTION_TAGGING_PROMPT.split("# Output Format")[0] in user
    assert "Title: Sleep, My Love. Content: Sleep, My Love is a 1948" in user
    assert sent[AtomicQuestions][0]["content"] == prompts.ATOMIC_QUESTION_SYSTEM_PROMPT

    assert [q.text for q in questions] == ["Who directed Sleep, My Love?", "Which actors starred in Sleep, My Love?"]
    assert all(q.kind == "question" and q.chunk_id == chunks[0].id for q in questions)
    by_name = {(e.name, e.type): e for e in entities}
    assert ("Douglas Sirk", "PERSON") in by_name and ("film noir", "CONCEPT") in by_name
    assert ("Sleep, My Love", "WORK_OF_ART") in by_name and ("American film", "CONCEPT") in by_name
    # the same entity id as the offline extractor gives the same (name, type)
    assert by_name[("Douglas Sirk", "PERSON")].id == entity_id("Douglas Sirk", "PERSON")
    directed = next(t for t in triples if t.predicate == "directed by")
    # a name that is the document's title resolves to the TITLE entity (the graph's hop)
    assert directed.subject_id == title_entity("Sleep, My Love").id
    assert directed.object_id == by_name[("Douglas Sirk", "PERSON")].id
    assert directed.text == "Sleep, My Love directed by Douglas Sirk"
    pairs = {(m.chunk_id, m.entity_id) for m in mentions}
    assert {(chunks[0].id, e.id) for e in entities} == pairs


def test_llm_failure_falls_back_to_offline(wiki: Corpus, nlp: Language) -> None:
    chunks, titles = _chunks([wiki["2wiki500:3"]])
    llm = ScriptedLLM({AtomicQuestions: ValueError("model returned prose"), ExtractedKnowledge: {}})
    questions, entities, _t, _m = distill(chunks, llm=llm, nlp=nlp, titles=titles)
    assert [q.kind for q in questions] == ["sentence", "sentence"]
    assert title_entity("Emperor Daigo").id in {e.id for e in entities}


def test_atomizing_runs_at_its_own_temperature_and_json_decisions_at_zero(
    falkor_settings: Settings, tmp_path: Path
) -> None:
    """Issue 28 defect 4: knowledge atomizing at temperature 0.7 (PIKE-RAG §6.1, paper 003 A.3), the setting
    ``atomizing_temperature``; the extraction request and every JSON decision at ``llm_temperature`` (0). Read
    from the requests the scripted LLM client received in a real ingestion (embedded FalkorDB)."""
    import uuid

    from kbgraph.kb import KnowledgeBase
    from kbgraph.llm.fake import ScriptedLLM as Client
    from kbgraph.query.methods.classify import classify_question

    (tmp_path / "hopper.txt").write_text(
        "Grace Hopper developed the first compiler at Remington Rand in 1952.", encoding="utf-8"
    )

    def model(messages: Messages) -> str:
        prompt = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        if "extract as many questions" in prompt:
            return json.dumps({"questions": ["Who developed the first compiler?"]})
        if "Extract the knowledge graph" in prompt:
            return json.dumps({"entities": [], "triples": []})
        if "# Classes" in prompt:
            return json.dumps({"rationale": "", "kind": "factual", "subtype": None})
        raise AssertionError(prompt[:200])

    def ingest(**update: Any) -> dict[str, set[float]]:
        settings = falkor_settings.updated({"name": f"atom{uuid.uuid4().hex[:8]}", **update})
        with KnowledgeBase(settings=settings) as kb:
            kb.reset()
            kb.llm = client = Client(model)
            report = kb.ingest([tmp_path / "hopper.txt"], progress=False)
            assert report.added == 1 and kb.stats().nodes["AtomicQuestion"] == 1
            kb.reset()
        temperatures: dict[str, set[float]] = {}
        for r in client.requests:
            temperatures.setdefault(r["purpose"], set()).add(r["temperature"])
        return temperatures

    assert ingest() == {"AtomicQuestions": {0.7}, "ExtractedKnowledge": {0.0}}
    assert ingest(atomizing_temperature=0.0) == {"AtomicQuestions": {0.0}, "ExtractedKnowledge": {0.0}}
    assert Settings().llm.atomizing_temperature == 0.7 and Settings().llm.llm_temperature == 0.0
    decision = Client(model)  # a JSON decision (the classification of 'auto') at the client's temperature, 0
    classify_question("Who developed the first compiler?", decision)
    assert [(r["purpose"], r["temperature"]) for r in decision.requests] == [("ClassifyOutput", 0.0)]


def test_atomic_question_prompt_is_the_papers() -> None:
    p = prompts.ATOMIC_QUESTION_TAGGING_PROMPT
    assert p.startswith(
        "# Task\nYour task is to extract as many questions as possible that are relevant and can "
        "be answered by the given content."
    )
    assert "avoid to use pronouns like it, he, she, they, the company, the person etc." in p
    assert "Output your answers line by line, with each question on a new line, without itemized" in p
    assert p.format(content="X").rstrip().endswith("# Content\nX\n\n# Output")
    assert AtomicQuestions.model_validate({"questions": "Q1?\n- Q2?\n"}).questions == ["Q1?", "Q2?"]


# --- embeddings -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    from kbgraph.embed import get_embedder

    return get_embedder(Settings())


def test_embedder_shape_dtype_norm(embedder: Embedder) -> None:
    texts = ["Douglas Sirk was a German film director.", "Sleep, My Love is a 1948 film noir.", ""]
    v = embedder.embed(texts)
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v[:2], axis=1), 1.0, atol=1e-5)
    assert embedder.dimension == 384 and embedder.model_name == "all-MiniLM-L6-v2"
    empty = embedder.embed([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32


def test_embedder_semantics(embedder: Embedder) -> None:
    a, b, c = embedder.embed(
        [
            "Who directed the film Sleep, My Love?",
            "Which director made the movie Sleep, My Love?",
            "The Journal of Mathematical Physics is published monthly.",
        ]
    )
    assert float(a @ b) > 0.7 > float(a @ c)
    # batching does not change the vectors
    one = embedder.embed(["Who directed the film Sleep, My Love?"])[0]
    assert np.allclose(one, a, atol=1e-5)


def test_get_embedder_is_cached(embedder: Embedder) -> None:
    from kbgraph.embed import get_embedder

    assert get_embedder(Settings()) is embedder


def test_dimension_mismatch_is_a_config_error(embedder: Embedder) -> None:
    from kbgraph.embed import get_embedder

    with pytest.raises(ConfigError) as err:
        get_embedder(Settings(embedding_dimension=768))
    assert "384" in str(err.value) and "768" in str(err.value)


def test_import_does_not_load_torch() -> None:
    code = (
        "import sys, kbgraph.embed, kbgraph.ingest.distill; "
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'spacy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_unreachable_hub_model_is_a_config_error(tmp_path: Path) -> None:
    code = (
        "from kbgraph.embed import get_embedder\n"
        "from kbgraph.settings import Settings\n"
        "from kbgraph.errors import ConfigError\n"
        "try:\n"
        "    get_embedder(Settings(embedding_model='sentence-transformers/no-such-model-kbgraph'))\n"
        "except ConfigError as e:\n"
        "    print('CONFIG', e)\n"
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.stdout.startswith("CONFIG cannot load embedding model 'sentence-transformers/no-such-model-kbgraph'")
    assert "KBGRAPH_EMBEDDING_MODEL" in out.stdout


@dataclass
class _Item:
    index: int
    embedding: list[float]


@dataclass
class _Response:
    data: list[_Item]


@dataclass
class _FakeEmbeddingsAPI:
    """``OpenAI().embeddings``: ``create`` only."""

    requests: list[dict[str, Any]] = field(default_factory=list)

    def create(self, **kwargs: Any) -> _Response:
        self.requests.append(kwargs)
        # returned out of order, unnormalised: the embedder must sort by index and normalise
        items = [_Item(i, [float(len(t)), 1.0, 0.0, 2.0]) for i, t in enumerate(kwargs["input"])]
        return _Response(list(reversed(items)))


@dataclass
class _FakeOpenAI:
    embeddings: _FakeEmbeddingsAPI = field(default_factory=_FakeEmbeddingsAPI)


def test_openai_embedder_batches_orders_and_normalises() -> None:
    from kbgraph.embed import OpenAIEmbedder, check_dimension, make_embedder

    client = _FakeOpenAI()
    e = OpenAIEmbedder("local-embedder", batch_size=2, client=cast("OpenAI", client))  # embeddings.create only
    texts = ["a", "bb", "ccc", "", "eeeee"]
    v = e.embed(texts)
    assert v.shape == (5, 4) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-6)
    assert [len(r["input"]) for r in client.embeddings.requests] == [2, 2, 1]
    assert client.embeddings.requests[1]["input"] == ["ccc", " "]  # empty text sent as a space
    expected = np.array([len(t) or 1 for t in texts], dtype=np.float32)
    assert np.allclose(v[:, 0] / v[:, 1], expected)  # row i belongs to text i
    assert e.dimension == 4 and e.model_name == "openai:local-embedder"
    with pytest.raises(ConfigError, match="4-dimensional .* embedding_dimension is 384"):
        check_dimension(e, 384)
    made = make_embedder(Settings(embedding_model="openai:text-embedding-3-small", embedding_dimension=512))
    assert isinstance(made, OpenAIEmbedder) and made.requested_dimensions == 512 and made.dimension == 512
