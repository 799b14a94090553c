"""The settings groups of the question-answering methods beside score propagation: decomposition ('pike'), the
baselines (naive RAG, Self-Ask, hierarchical retrieval), MIGRES, HiRAG, decomposer training data and level routing.
Each field with its default, bounds, description and the paper's section it follows; held by
``kbgraph.settings.Settings`` as the other groups (kbgraph.settings_groups)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kbgraph.settings_groups import SettingsGroup

__all__ = [
    "BaselineSettings",
    "DecomposeSettings",
    "DecomposerSettings",
    "HiragSettings",
    "MigresSettings",
    "RoutingSettings",
]


class DecomposeSettings(SettingsGroup):
    """Knowledge-aware decomposition, method 'pike' (PIKE-RAG §5.3.2 Algorithm 1; paper 003 §3.4)."""

    decompose_rounds: int = Field(5, ge=1, description="N: decomposition rounds (chunks in the final context).")
    decompose_candidates: int = Field(4, ge=1, description="K: atomic questions retrieved per proposal.")
    decompose_threshold: float = Field(0.5, description="δ: minimum cosine of an atomic question to a proposal.")


class BaselineSettings(SettingsGroup):
    """The baselines: naive RAG, Self-Ask and hierarchical retrieval (PIKE-RAG Fig. 11; kbgraph.query)."""

    naive_k: int = Field(16, ge=1, description="Naive RAG: chunks retrieved from the Chunk vector index.")
    naive_threshold: float = Field(0.2, description="Naive RAG (and Self-Ask): minimum chunk cosine.")
    # hierarchical retrieval, Fig. 11 (methods 'hierarchical' and 'naive_hr'; kbgraph.query.methods.hierarchical): PIKE-RAG
    # §6.1 "a maximum of 8 chunks with a more stringent threshold of 0.5", 003 A.3 "4 relevant atomic tags for
    # each atomic query but with a higher threshold 0.5"
    hr_k: int = Field(
        8, ge=1, description="Hierarchical retrieval (hierarchical, naive_hr): chunks by path (a), Chunk vector index."
    )
    hr_threshold: float = Field(0.5, description="Hierarchical retrieval: minimum cosine of a path (a) chunk.")
    hr_question_k: int = Field(
        4, ge=1, description="Hierarchical retrieval: atomic questions by path (b), each leading to its chunk."
    )
    hr_question_threshold: float = Field(
        0.5, description="Hierarchical retrieval: minimum cosine of a path (b) atomic question."
    )
    self_ask_rounds: int = Field(
        5,
        ge=1,
        description="Self-Ask (self_ask, self_ask_hr): follow-up questions "
        "before the final answer (N = 5, paper 003 §4.1).",
    )


class MigresSettings(SettingsGroup):
    """MIGRES, method 'migres' (paper 002 §3, hyper-parameters of its Table 12; kbgraph.query.methods.migres)."""

    migres_iterations: int = Field(5, ge=1, description="T: max iteration steps (002 Table 12, multi-hop QA).")
    migres_retriever: Literal["graph", "bm25"] = Field(
        "bm25",
        description="Retriever per query: 'bm25' (the paper's, §4.1, with migres_bm25_k1 and "
        "migres_bm25_b) or 'graph' (layer seeds + score propagation, kbgraph's).",
    )
    migres_bm25_k1: float = Field(
        0.9,
        ge=0.0,
        description="k1 of MIGRES' BM25 retriever (002 §4.1: 0.9); the 'bm25' method of /search keeps bm25s' 1.5.",
    )
    migres_bm25_b: float = Field(
        0.4,
        ge=0.0,
        le=1.0,
        description="b of MIGRES' BM25 retriever (002 §4.1: 0.4); the 'bm25' method of /search keeps 0.75.",
    )
    migres_retrieve_k: int = Field(50, ge=1, description="Chunks retrieved per query (002 Table 12).")
    migres_passages: int = Field(5, ge=1, description="k: most chunks shown to the Leaf Module per iteration.")
    # θ chosen by the paper's rule (Table 12: > 80% of questions find a passage above θ), measured with the
    # original questions against each corpus with all-MiniLM-L6-v2; 20th percentile of the best passage's
    # cosine: 2Wiki 0.569, HotpotQA 0.562, MuSiQue 0.478 (examples/multihop), so 0.45 holds on all three.
    migres_threshold: float = Field(
        0.45, description="θ: minimum cosine (embedder as re-rank model) of a chunk and of a sentence to its query."
    )
    migres_queries: int = Field(3, ge=1, description="New queries per iteration (002 §3.2: no more than three).")
    migres_knowledge_prompting: bool = Field(True, description="LLM knowledge when no chunk passes θ (002 §4.5).")


class HiragSettings(SettingsGroup):
    """HiRAG, method 'hirag' (paper 004 §4, Algorithm 1 of its appendix A.2; kbgraph.query.methods.hirag)."""

    # The paper names th1-th3 without printing their values except "the maximum number of retrievals is set to
    # 4" (§4.4, §5.3); th1, th2 and the match floor are those of the authors' code (github.com/2282588541a/HiRAG,
    # code/retreive.py wiki_search2: a tie is more than one exact title; the 4th retrieval changes document).
    hirag_rounds: int = Field(5, ge=1, description="Most sub-questions (004 A.1: at most 5 decomposed sub-problems).")
    hirag_th1: int = Field(
        1,
        ge=1,
        description="th1: more documents titled exactly as the entity than this are a "
        "tie: the sub-question is rewritten (Algorithm 1 line 20).",
    )
    hirag_th2: int = Field(
        3,
        ge=1,
        description="th2: tries at the chunk level per document before the "
        "document-level rethink (Algorithm 1 line 30).",
    )
    hirag_th3: int = Field(
        4,
        ge=1,
        description="th3: tries before giving up, then the fallback retrieval "
        "(Algorithm 1 line 33; 004 §5.3: at most 4 retrievals).",
    )
    hirag_min_match: float = Field(
        0.8,
        description="Least lexical match of a document's title or mentioned "
        "entity to the sub-question's entity (authors' code: 0.8).",
    )


class DecomposerSettings(SettingsGroup):
    """Decomposer training data (PIKE-RAG §5.3.3, §6.4, Algorithms 2 and 3; kbgraph.eval.decomposer_*)."""

    # The paper gives N (§6.4: "a maximum limit of 10 rounds") and only K' > K, δ' < δ; α, K', δ' and the
    # number of trajectories per question are not given: the defaults below are kbgraph's.
    decomposer_rounds: int = Field(10, ge=1, description="N of Algorithm 2 (§6.4: at most 10 rounds).")
    decomposer_alpha: float = Field(
        1.0,
        ge=0,
        description="α: UCB exploration weight of context sampling (Algorithm 2 line 5; not given in the paper).",
    )
    decomposer_k_prime: int = Field(
        8,
        ge=1,
        description="K' > K: atomic questions retrieved per proposal (Algorithm 2 line 7; not given in the paper).",
    )
    decomposer_delta_prime: float = Field(
        0.3,
        description="δ' < δ: minimum cosine of a retrieved atomic question "
        "(Algorithm 2 line 7; not given in the paper).",
    )
    decomposer_samples: int = Field(
        4,
        ge=1,
        description="Trajectories per question at most; S and V are shared "
        "by a question's trajectories (not given in the paper).",
    )
    decomposer_until_correct: bool = Field(
        True, description="Stop a question's trajectories at the first correct answer (§6.4)."
    )
    decomposer_correct_score: float = Field(
        1.0, description="A trajectory is correct when its score (judge accuracy, else F1) reaches this."
    )
    decomposer_model: str | None = Field(
        None, description="A fine-tuned proposer (same endpoint): Algorithm 1 lines 3-5 become one call to it (§5.3.3)."
    )


class RoutingSettings(SettingsGroup):
    """Question classification and level routing, methods 'auto' and 'l1' (PIKE-RAG §3.2, §4.2, §5.2;
    kbgraph.query.methods.classify, kbgraph.query.methods.l1)."""

    l1_k: int = Field(
        5,
        ge=1,
        description="L1 system (method 'l1', the factual route of 'auto'): chunks of "
        "score-propagation retrieval given to the QA prompt.",
    )
