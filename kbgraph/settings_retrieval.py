"""The query side's settings groups: retrieval (score propagation and its ranker, PIKE-RAG §5.2.3) and tagging
(auto-tagging, §5.2.2), each field with its default, bounds and description; the other knowledge-base groups are in
kbgraph.settings_groups, the query methods' in kbgraph.settings_methods. ``kbgraph.settings.Settings`` holds one of
each; docs/settings.md is generated from the descriptions (kbgraph.settings_doc)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kbgraph.settings_groups import SettingsGroup, UserPath


class RetrievalSettings(SettingsGroup):
    """Score propagation (PIKE-RAG §5.2.3, Fig. 8; kbgraph.query.propagation.propagate, docs/scoring.md) and the ranker."""

    seed_k: int = Field(20, ge=1, description="Vector top-k per layer (Chunk, AtomicQuestion, Triple, ...).")
    fulltext_k: int = Field(
        20,
        ge=0,
        description="Full-text top-k on Chunk.text and Entity.name (0 = off); the "
        "Chunk seeds are BM25's top k while ranker_bm25_k > 0 (docs/scoring.md).",
    )
    entity_fulltext: Literal["store", "bm25"] = Field(
        "store",
        description="Where the Entity.name full-text seeds come from: 'store', the store's full-text index, or "
        "'bm25', an index of the entities' names kept in memory (kbgraph.query.bm25, as the Chunk seeds; the same on "
        "both stores, one statement fewer per question: propagation p50 -2.8 ms on the long-document set at -1.1 "
        "page@5, slower and lower R@2 on the passage sets; docs/scoring.md).",
    )
    rescore_k: int = Field(
        20,
        ge=0,
        description="Candidate chunks (not among the Chunk seeds) whose exact question similarity is computed, "
        "per pass (0 = off: such chunks get no Chunk term).",
    )
    # Defaults measured on MuSiQue and 2Wiki (benchmarks/query.py, README): the chunk's own similarity
    # dominates; the other layers and the entity hop are small boosts (larger weights lowered Recall@5 below
    # dense); the title hop from the 3 best chunks carries the second hop of multi-hop questions.
    weight_chunk: float = Field(1.0, description="w_C: the chunk's own cosine similarity to the question.")
    weight_question: float = Field(0.1, description="w_Q: best similarity of the chunk's atomic questions.")
    weight_triple: float = Field(0.05, description="w_T: best similarity of the chunk's triples.")
    weight_entity: float = Field(0.05, description="w_E: best similarity of the entities the chunk mentions.")
    weight_section: float = Field(0.05, description="w_S: similarity of the chunk's section.")
    weight_document: float = Field(0.05, description="w_D: similarity of the chunk's document.")
    weight_document_text: float = Field(
        0.05,
        ge=0,
        description="w_DT: BM25 score of the chunk's document card (its title, other titles, file name's words and "
        "first page's beginning) over the question's best card, for chunks that already score; the best 5 cards, "
        "documents of 2 or more chunks (kbgraph.query.propagation.cards; 0 = off, as PIKE-RAG: docs/scoring.md).",
    )
    weight_fulltext: float = Field(
        0.05, description="w_F: full-text score of the chunk and of its entities' names (0 = no full-text seeds)."
    )
    weight_hop: float = Field(
        0.3,
        description="w_H: entity hop, from the hop_from best chunks to chunks sharing "
        "an entity, damped by log2(1 + the entity's degree).",
    )
    weight_title_hop: float = Field(
        0.5,
        description="w_TH: title hop, from the hop_from best chunks to the chunks "
        "of a document whose title they name, shared among those chunks.",
    )
    weight_next: float = Field(0.05, description="w_N: NEXT neighbours of the hop_from best chunks.")
    weight_triple_hop: float = Field(
        0.0,
        ge=0,
        description="w_R: triple hop, from the question's entities along "
        "their triples to the chunks mentioning the object, damped by log2(1 + the "
        "object's degree); 0 = off (docs/scoring.md).",
    )
    weight_tag: float = Field(
        0.1,
        description="w_G: the Tag layer of score propagation (chunks TAGGED with a mapped corpus tag; auto_tagging).",
    )
    hop_from: int = Field(3, ge=0, description="Top chunks whose entities and title links spread score.")
    hop_document_share: float = Field(
        0.1,
        gt=0,
        le=1,
        description="An entity hop into another document counts in "
        "full via an entity of <= this share of the documents, less above (IDF), 0 via one of all; 1 = off.",
    )
    adjacency_cache: bool = Field(
        True,
        description="Hold the graph score propagation walks (chunks, their texts, relationships and "
        "embeddings) in memory per corpus generation, built in the background at a process's second question, "
        "instead of three statements per question (kbgraph.query.propagation.adjacency; ~9 KB per chunk; false = the "
        "statements).",
    )
    collapse_repeated_chunks: bool = Field(
        True,
        description="Score propagation returns a chunk whose text equals a better-ranked one's (a passage "
        "repeated in a document or across documents) once: the repeat is left out and the next chunk taken "
        "(false = every copy, as ranked).",
    )
    max_chunks_per_page: int = Field(
        1,
        ge=0,
        description="Score propagation returns at most this many results per page of a document: the "
        "page's best chunk stands for it and carries the page's other ranked chunks as evidence (same_page, which "
        "an answer reads), and the next page takes the slot; 0 = every chunk a result. Pageless chunks unlimited.",
    )
    max_entity_degree: int = Field(50, ge=1, description="Entities in more chunks than this do not propagate.")
    filter_seeding: Literal["auto", "exact", "overfetch"] = Field(
        "auto",
        description="Seeds of a filtered question (--where, the API's filters, a key's document scope): "
        "'exact' = each layer's exact top seed_k among the allowed documents' nodes, computed over them; "
        "'overfetch' = each vector index's top seed_k / share x 1.5 (at most 30 x seed_k), the allowed ones kept; "
        "'auto' = over-fetch while that bound covers the scope (it holds >= 5 % of the chunks), else exact for a "
        "scope of at most filter_exact_chunks chunks (docs/filters.md, docs/benchmarks.md#filters).",
    )
    filter_exact_chunks: int = Field(
        20000,
        ge=0,
        description="With filter_seeding 'auto': the largest scope (chunks) whose seeds are computed "
        "exactly when over-fetching cannot cover it; a larger one is over-fetched at the bound.",
    )
    # the learned ranker over the propagation terms (kbgraph.query.propagation.ranking_learned; docs/scoring.md)
    ranker: Literal["learned", "weights", "gbm", "blend"] = Field(
        "blend",
        description="How propagation's candidate chunks are ordered: 'learned' = the fitted linear "
        "model over their score terms (ranker_model), 'weights' = the weighted sum of the weight_* settings, "
        "'gbm' = gradient-boosted trees over the same terms and list features (ranker_model; docs/scoring.md), "
        "'blend' = the learned ranker's order, its best ranker_blend_k re-ordered by the learned and gbm scores, "
        "each standardised over them, the gbm's weighted by ranker_blend_weight (kbgraph.query.propagation.ranking_blend; the "
        "default: above 'learned' held out on every passage set, level on long documents).",
    )
    ranker_blend_weight: float = Field(
        4.0,
        ge=0,
        description="ranker 'blend': the weight of the gbm's standardised score beside the learned "
        "ranker's (0 = the learned ranker's order). 4: chosen leave-one-set-out by R@2 + R@5 on the repo's sets "
        "(docs/benchmarks.md#the-blend-ranker-over-the-learned-head).",
    )
    ranker_blend_k: int = Field(
        15,
        ge=0,
        description="ranker 'blend': how many of the learned ranker's best candidates the blend "
        "re-orders (the head; 0 = the whole pool, by the same model). The rest follow in the learned order.",
    )
    ranker_model: UserPath | None = Field(
        None,
        description="A ranker model written by `kbgraph rank train` (--model gbm for ranker 'gbm'; default: "
        "the shipped one of the ranker, fitted on the repo's 2Wiki, MuSiQue and HotpotQA sets).",
    )
    ranker_pool: int = Field(50, ge=1, description="Best chunks by the weighted sum that the learned ranker re-orders.")
    ranker_bm25_k: int = Field(
        50,
        ge=0,
        description="BM25's top chunks that the learned ranker scores (its bm25 "
        "features) and adds to its pool; 0 = no BM25 (kbgraph.query.bm25), and the Chunk "
        "full-text seeds come from the store's full-text index.",
    )


class TaggingSettings(SettingsGroup):
    """Auto-tagging (PIKE-RAG §5.2.2): Tag nodes on chunks at ingest (kbgraph.ingest.autotag) and the question's
    tags mapped to them at query time (kbgraph.query.tags, kbgraph.eval.tag_pairs)."""

    auto_tagging: bool = Field(
        False,
        description="Tag chunks at ingest and questions at query time (needs an LLM). "
        "Off by default: it costs an LLM call per chunk at ingest and one per question.",
    )
    tag_threshold: float = Field(0.75, description="Min cosine of a question tag and a corpus Tag (vector index).")
    tag_vector_k: int = Field(3, ge=0, description="Nearest corpus Tags per question tag (0 = MAPS_TO only).")
    tag_max_chunks: int = Field(50, ge=1, description="Corpus Tags on more chunks than this do not seed retrieval.")
    tag_rewrite: bool = Field(True, description="Add the mapped tag names to the full-text query.")
    # corpus side (PIKE-RAG §5.2.2; kbgraph.ingest.autotag): tag classes and the corpus tag collection
    tag_class_sample: int = Field(
        8,
        ge=1,
        description="Chunks (spread over the corpus) the LLM reads to propose the tag classes, once per "
        "knowledge base, at the first ingest with auto_tagging on.",
    )
    tag_workers: int = Field(4, ge=1, description="Chunk tagging LLM requests in flight at once at ingest.")
