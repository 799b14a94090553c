"""Bounded JSON answers against the real model (issue 28): llama.cpp's server with SmolLM2-135M-Instruct (the
``llm_server`` fixture) answers the prompts whose answers a 135M model used to leave cut by ``max_tokens``
(unbounded strings, list items repeated until the limit): Algorithm 1's proposer, MIGRES' Query Generator and
Leaf Module, the QA prompt, and LLM knowledge atomizing at its temperature 0.7. Each answer is valid JSON of
its bounded schema, within the bounds, with no repair request; no greedy answer was cut (the server's
finish_reason), and a sampled one that was (1 in 10 at 0.7: repeated years and digits write ~1.3 characters a
token, past the budget's 3) is answered by its whole items. A 135M model answers badly: the content is not
checked, only that the answer completes."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from pydantic import BaseModel, SecretStr

from kbgraph.ingest import prompts as ingest_prompts
from kbgraph.ingest.distill.llm import ATOMIZING_TEMPERATURE
from kbgraph.ingest.distill.schemas import MAX_ITEMS, MAX_QUESTION_CHARS, AtomicQuestions
from kbgraph.llm.base import Messages
from kbgraph.llm.bounds import unbounded_paths
from kbgraph.llm.client import OpenAIClient
from kbgraph.query import prompts
from kbgraph.query.answering import QAOutput
from kbgraph.query.methods.decompose import SUB_QUESTION_CHARS, SUB_QUESTIONS, Proposal
from kbgraph.query.methods.migres import MAX_QUERIES, MAX_STATEMENTS, LeafOutput, NewQueries
from kbgraph.query.prompts import migres as migres_prompts
from kbgraph.settings import Settings
from tests.llm_server_fixture import LLMServerInfo

pytestmark = pytest.mark.slow

QUESTION = "Who was born first, the director of the film Wild Ride or the director of The Pagan?"
PASSAGE = (
    "Wild Ride is a 1960 American film directed by Harvey Berman. The Pagan is a 1929 American drama film "
    "directed by W. S. Van Dyke. Harvey Berman was born in 1926 in New York. W. S. Van Dyke was born on "
    "March 21, 1889 in San Diego, California, and died in 1943."
)


@pytest.fixture(scope="module")
def llm(llm_server: LLMServerInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenAIClient]:
    """The real server through OpenAIClient, with the 50-question benchmark's 256-token setting and a fresh
    response cache (every answer a real request)."""
    settings = Settings(
        home=tmp_path_factory.mktemp("home"),
        llm_base_url=llm_server.base_url,
        llm_model=llm_server.model,
        llm_api_key=SecretStr("none"),
        llm_timeout=600.0,
        llm_max_tokens=256,
        llm_cache_dir=tmp_path_factory.mktemp("llm-cache"),
    )
    client = OpenAIClient(settings)
    yield client
    client.close()


#: A prompt: its messages, the schema of its answer and its temperature (None: the client's).
Case = Callable[[], tuple[Messages, type[BaseModel], float | None]]
CASES: list[tuple[str, Case]] = [
    ("Proposal", lambda: (prompts.proposer_messages(QUESTION, ""), Proposal, None)),
    (
        "NewQueries",
        lambda: (
            migres_prompts.query_messages(QUESTION, [QUESTION], [], "The birth dates of the two directors."),
            NewQueries,
            None,
        ),
    ),
    ("LeafOutput", lambda: (migres_prompts.leaf_messages([QUESTION], [("Wild Ride", PASSAGE)]), LeafOutput, None)),
    ("QAOutput", lambda: (prompts.answer_messages(QUESTION, PASSAGE), QAOutput, None)),
    (
        "AtomicQuestions",
        lambda: (ingest_prompts.atomic_question_messages(PASSAGE, "Wild Ride"), AtomicQuestions, ATOMIZING_TEMPERATURE),
    ),
]


@pytest.mark.parametrize("name,case", CASES, ids=[c[0] for c in CASES])
def test_small_model_completes_its_bounded_json(llm: OpenAIClient, name: str, case: Case) -> None:
    messages, schema, temperature = case()
    assert unbounded_paths(schema) == []
    answer = llm.complete_json(messages, schema, temperature=temperature)
    assert isinstance(answer, schema)
    report = llm.json_report()[name]
    assert report["failed"] == 0 and report["repaired"] == 0, report
    if temperature is None:  # greedy: the answer closes within the schema's token budget
        assert report["cut"] == 0, report
    else:  # sampled (0.7): 4 of 40 answers ran into short tokens past the budget; their whole items are kept
        assert report["cut"] == report["salvaged"], report
    if isinstance(answer, Proposal):  # the schema sent requires the list and a non-empty item
        assert 1 <= len(answer.sub_questions) <= SUB_QUESTIONS
        assert all(len(q) <= SUB_QUESTION_CHARS for q in answer.sub_questions)
    if isinstance(answer, NewQueries):
        assert 1 <= len(answer.queries) <= MAX_QUERIES
    if isinstance(answer, LeafOutput):
        assert len(answer.useful_information) <= MAX_STATEMENTS
    if isinstance(answer, AtomicQuestions):
        assert len(answer.questions) <= MAX_ITEMS and all(len(q) <= MAX_QUESTION_CHARS for q in answer.questions)
