"""tests/test_llm_real.py's knowledge-base tests on the local Neo4j: the table document ingested by the real
llama.cpp server, then Algorithm 1 and a baseline on its question. A module of its own so that pytest-xdist
(`--dist loadfile`, README.md) runs it beside the FalkorDB half instead of after it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kbgraph.settings import Settings
from tests.llm_server_fixture import LLMServerInfo
from tests.test_llm_real import (  # noqa: F401 (the module's autouse fixture and tests, collected here on Neo4j)
    LLMKnowledgeBase,
    _answer_budget_of_llm_max_tokens,
    llm_kb_on,
    test_ingestion_with_a_real_llm_builds_the_llm_layers,
    test_multi_hop_questions_with_a_real_llm,
)


@pytest.fixture(scope="module")
def llm_kb(
    neo4j_settings: Settings, llm_server: LLMServerInfo, tmp_path_factory: pytest.TempPathFactory, examples_dir: Path
) -> Iterator[LLMKnowledgeBase]:
    """The LLM knowledge base on the session's local Neo4j."""
    yield from llm_kb_on("neo4j", neo4j_settings, llm_server, tmp_path_factory, examples_dir)
