"""The groups of kbgraph's knowledge-base settings: one pydantic model per part (store, ingest, embedding; the
query side's retrieval and tagging are in kbgraph.settings_retrieval), each field with its default, bounds and
description; the query methods' groups are in kbgraph.settings_methods, the LLM, local LLM server and HTTP server groups in kbgraph.settings_services.
``kbgraph.settings.Settings`` holds one of each
(``GROUPS``) and routes the flat names (environment variables, kbgraph.toml keys, keywords) into them;
docs/settings.md is generated from the descriptions (kbgraph.settings_doc)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AliasChoices, BaseModel, ConfigDict, Field, SecretStr
from pydantic import field_validator
from pydantic_settings import NoDecode

#: Layers whose vectors the setting ``vector_layers`` switches (the Chunk layer is always embedded).
VECTOR_LAYER_CHOICES: tuple[str, ...] = ("Document", "Section", "AtomicQuestion", "Triple", "Entity")

#: A folder or file path, ``~`` expanded.
UserPath = Annotated[Path, AfterValidator(lambda p: p.expanduser())]


def comma_items(v: Any) -> list[str]:
    """The items of a setting given as a comma-separated string (environment, CLI) or as a list, each stripped,
    blanks dropped (the ``mode="before"`` validators of list settings)."""
    items = v.split(",") if isinstance(v, str) else list(v)
    return [item for item in (str(x).strip() for x in items) if item]


def _layer_list(v: Any) -> Any:
    """A comma-separated string (environment, CLI) or a list; labels checked, Chunk dropped (always on)."""
    out: list[str] = []
    for item in comma_items(v):
        if item != "Chunk" and item not in out:
            if item not in VECTOR_LAYER_CHOICES:
                raise ValueError(f"unknown vector layer {item!r}: choose from {', '.join(VECTOR_LAYER_CHOICES)}")
            out.append(item)
    return out


class SettingsGroup(BaseModel):
    """A group of settings: a namespace (``settings.<group>.<name>``); each name is also a flat setting. The
    groups of the services kbgraph talks to or offers (LLM, local LLM server, HTTP server) are in
    kbgraph.settings_services."""

    model_config = ConfigDict(extra="forbid", validate_default=True, populate_by_name=True)


class StoreSettings(SettingsGroup):
    """The graph store: which one, its credentials, the embedded FalkorDB server and the local Neo4j."""

    # --- store selection ------------------------------------------------------------------
    uri: str | None = Field(
        None,
        validation_alias=AliasChoices("KBGRAPH_URI", "NEO4J_URI"),
        description="Graph store URI: bolt://, neo4j://, neo4j+s://, falkor://host:port; empty = embedded FalkorDB.",
    )
    neo4j_username: str = Field(
        "neo4j",
        validation_alias=AliasChoices("KBGRAPH_NEO4J_USERNAME", "NEO4J_USERNAME"),
        description="Neo4j user name.",
    )
    neo4j_password: SecretStr = Field(
        SecretStr("kbgraph-local"),
        validation_alias=AliasChoices("KBGRAPH_NEO4J_PASSWORD", "NEO4J_PASSWORD"),
        description="Neo4j password (the local Neo4j of `kbgraph neo4j start` is set up with the default).",
    )
    neo4j_database: str = Field(
        "neo4j",
        validation_alias=AliasChoices("KBGRAPH_NEO4J_DATABASE", "NEO4J_DATABASE"),
        description="Neo4j database of the knowledge base (Community hosts one database).",
    )
    connect_timeout: float = Field(10.0, description="Seconds to wait for a store connection.")
    # --- writing ------------------------------------------------------------------------
    batch_size: int = Field(1000, ge=1, description="Rows per UNWIND batch.")
    vector_ef_construction: int = Field(
        50,
        ge=4,
        le=4096,
        description="efConstruction of the embedded FalkorDB's HNSW vector indexes, given when an index is "
        "created: lower writes and loads faster (the server rebuilds its vector indexes at every start), higher "
        "finds closer neighbours (docs/benchmarks.md#hnsw-efconstruction-vector_ef_construction). A knowledge base "
        "keeps the value it was created with until `kbgraph reset`. Neo4j keeps its own (100).",
    )

    # --- embedded FalkorDB ------------------------------------------------------------------
    data_dir: UserPath | None = Field(None, description="Embedded store data folder; default <home>/<name>.")
    falkor_idle_timeout: float = Field(
        900.0,
        description="Seconds the embedded FalkorDB server stays up with no command before it "
        "stops itself (0 = never). It outlives CLI calls so the vector index is not rebuilt each time.",
    )
    falkor_start_timeout: float = Field(120.0, description="Seconds to wait for the embedded server.")
    falkor_reload_after_compaction: bool = Field(
        True,
        description="After an ingestion or deletion that rewrote the embedded server's append-only file, start "
        "the server again, so that the answers right after it are those of every later start (its vector indexes "
        "rebuilt from the snapshot; tests/test_restart_determinism.py); skipped while another client uses the "
        "server (its next start does it). Costs one load of the graph: 2.0 s for examples/docs (22,931 nodes), 7.2 s "
        "for 2Wiki (3,301 passages, 81,478 nodes), 3 % of its ingest "
        "(docs/benchmarks.md#the-reload-after-a-compaction). Off: the answers right after an ingest may "
        "differ at the margins from those after a restart; ties of the full-text seeds are broken by id either way.",
    )

    # --- local Neo4j (kbgraph.neo4j_local) ------------------------------------------------------
    neo4j_local_home: UserPath | None = Field(None, description="Local Neo4j folder; default <home>/neo4j-local.")
    neo4j_bolt_port: int = Field(7687, ge=1, le=65535, description="Bolt port of the local Neo4j on 127.0.0.1.")
    neo4j_http_port: int = Field(7474, ge=1, le=65535, description="HTTP (Browser) port of the local Neo4j.")
    neo4j_heap: str = Field("1g", description="Java heap of the local Neo4j (-Xmx), e.g. 1g, 512m.")
    neo4j_pagecache: str = Field("256m", description="Page cache of the local Neo4j (server.memory.pagecache.size).")
    neo4j_jvm_options: str = Field(
        "",
        description="More JVM options of the local Neo4j, split as a shell splits "
        "words, e.g. '-XX:+UseSerialGC'. The test suite runs it with "
        "'-XX:TieredStopAtLevel=1 -XX:+UseSerialGC' (about 30 % less CPU over short "
        "runs; a long-lived server answers faster with the JVM's defaults).",
    )

    @field_validator("uri", mode="before")
    @classmethod
    def _empty_uri(cls, v: Any) -> Any:
        return None if isinstance(v, str) and not v.strip() else v


class IngestSettings(SettingsGroup):
    """Ingestion: parsing and OCR, chunking, the groups of documents processed together, the run's lock."""

    max_file_bytes: int = Field(200 * 1024 * 1024, ge=1, description="Files larger than this are refused.")
    # --- what a file may expand to (kbgraph.ingest.bounds: decompression bombs; 0 = no bound) ---------
    max_expanded_bytes: int = Field(
        512 * 1024 * 1024,
        ge=0,
        description="A zip-based file (.docx .pptx .xlsx .xlsm .ods .odt .epub) whose "
        "members, declared or as they actually inflate (read with a cap, headers not trusted), hold more bytes than "
        "this is refused before it is parsed; so is a PDF whose streams but images decode to more (0 = no bound; "
        "e-mail attachments count towards their message's).",
    )
    max_member_bytes: int = Field(
        256 * 1024 * 1024,
        ge=0,
        description="The same bound for one zip member or one PDF stream (0 = no bound).",
    )
    max_compression_ratio: float = Field(
        200.0,
        ge=0,
        description="A zip member (or the whole package) over 1 MiB that inflates more than this many "
        "times its compressed size is refused (a 12 MB XML part in an 18 KB .docx: 650-fold; real Office parts "
        "3-30-fold; 0 = no bound).",
    )
    max_zip_members: int = Field(
        10_000,
        ge=0,
        description="A zip-based file of more members than this is refused "
        "(counted from its bytes before its directory is read; 0 = no bound).",
    )
    max_xml_elements: int = Field(
        1_000_000,
        ge=0,
        description="A zip-based file whose XML members hold more elements than this in all (counted "
        "by a streaming parser as they inflate) is refused before it is parsed (0 = no bound). A parse costs about "
        "15-70 µs of CPU and 0.3-0.7 KB of memory an element: the 480 KB sample .docx, 106,000 elements, 1.6 s and "
        "+70 MB; a .docx of 990,000 empty paragraphs 66 s and +330 MB (benchmarks/bomb_rss.py). A server taking "
        "files from untrusted callers may lower it: time and memory scale with it.",
    )
    max_pdf_pages: int = Field(10_000, ge=0, description="A PDF of more pages than this is refused (0 = no bound).")
    max_parse_seconds: float = Field(
        600.0,
        ge=0,
        description="A file still being parsed after this many seconds is refused (OCR included; a "
        "call inside a C library, one PDF page, finishes first; 0 = no bound).",
    )
    ocr: Literal["auto", "off"] = Field(
        "auto",
        description="OCR of scanned PDF pages (no text layer; pages with text never) and images (.png .jpg "
        ".tif .bmp .webp) through Tesseract (kbgraph.ingest.ocr): auto = on when the `tesseract` binary is found "
        "(apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-osd); off = images skipped, scanned PDFs "
        'fail with "needs OCR first".',
    )
    ocr_languages: str = Field(
        "eng",
        description="Tesseract languages joined by +, e.g. eng+kor+chi_sim; each needs "
        "its tesseract-ocr-<lang> package, a missing one fails the document naming "
        "it.",
    )
    ocr_dpi: int = Field(
        300,
        ge=72,
        le=1200,
        description="Resolution scanned PDF pages are rendered at for OCR (cost grows with its square).",
    )
    chunk_tokens: int = Field(256, ge=16, description="Target chunk size in words.")
    chunk_overlap_sentences: int = Field(1, ge=0, description="Sentences repeated between chunks.")
    llm_chunking: bool = Field(
        True,
        description="With an LLM configured: split sections longer than chunk_tokens with the recurrent LLM "
        "splitter (PIKE-RAG §5.2.1; chunks get summaries, no overlap). Ignored without an LLM.",
    )
    llm_chunk_window_tokens: int = Field(
        768, ge=32, description="Words of section text the LLM splitter sees per call (at least chunk_tokens)."
    )
    ingest_group_size: int = Field(
        512,
        ge=1,
        description="At most this many documents are processed (chunk, distill, embed, write) "
        "together, in one unit of work. Large groups let spaCy use 2 processes and the embedder sort texts "
        "by length (2Wiki 600 passages: groups of 64 embed in 65 s, of 256 in 43 s, of 600 in 41 s).",
    )
    ingest_group_chars: int = Field(
        1_000_000,
        ge=1,
        description="A group also closes once its documents hold this many characters "
        "(bounds memory and the unit of work for large documents; ~1 min of embedding on 2 cores).",
    )
    # --- overlapped graph writes (ingest/groups.py) ---------------------------
    ingest_overlap_writes: bool = Field(
        True,
        description="Write group k to the store in a background thread (the database does the work) while "
        "group k+1 is embedded; documents are still written in order and a failed write is retried one document "
        "at a time. False = each group's write runs in turn.",
    )
    lock_timeout: float = Field(3600.0, description="Seconds `ingest --wait` waits for another run's lock.")
    lease_ttl: float = Field(
        60.0,
        ge=1.0,
        description="Neo4j: seconds the ingest lease in the database lasts unless renewed; a run "
        "renews it every third of that while it lives, and a run on another machine takes it over only once it "
        "expired (the embedded FalkorDB store keeps the file lock in the knowledge base's folder).",
    )
    ingest_writers: Literal["lease", "claims"] = Field(
        "lease",
        description="Neo4j: how runs on several machines share the database. lease = one run at a time "
        "(the ingest lease; the others exit 75 or --wait); claims = runs write at once, each taking the files no "
        "live run has claimed (a claim per file in the database, renewed like the lease, taken over lease_ttl s "
        "after its run died) and reporting the others skipped; a run with --prune still takes the lease and "
        "runs alone. The embedded FalkorDB store always runs one writer (its file lock).",
    )
    # --- the engine (kbgraph.ingest.ray_engine) --------------------------------
    ingest_engine: Literal["local", "ray"] = Field(
        "local",
        description="Where parse, chunk, distill and embed run: local = this process (spaCy's worker "
        "processes on large groups); ray = a Ray cluster (tasks parse and chunk, actors holding spaCy distill, "
        "actors holding the embedder embed, one GPU each when the cluster has GPUs), while this process checks, "
        "writes and records the run as with local. Needs `pip install 'kbgraph[ray]'`.",
    )
    ray_address: str | None = Field(
        None,
        description="ingest_engine=ray: the Ray cluster to join (e.g. ray://head:10001 or auto); none = start "
        "a local Ray on this machine for the run (ingest_workers CPUs, no dashboard).",
    )
    ingest_workers: int | None = Field(
        None,
        ge=1,
        description="ingest_engine=ray: parse tasks, distill actors and embed actors running at once "
        "(embed actors: one per GPU when the cluster has GPUs, each on one CPU thread otherwise); none = the machine's cores (a local Ray) or the cluster's CPUs.",
    )


class EmbeddingSettings(SettingsGroup):
    """Embeddings: the model and its runtime, the cache, which layers get vectors, late chunking, static models."""

    embedding_model: str = Field(
        "all-MiniLM-L6-v2",
        description="sentence-transformers model name or path, or openai:<model> for an "
        "OpenAI-compatible embeddings endpoint.",
    )
    embedding_dimension: int = Field(
        384, ge=1, description="Components of the embedding model's vectors (the vector indexes' dimension)."
    )
    embedding_batch_size: int = Field(64, ge=1, description="Texts per embedding batch, at most.")
    embedding_batch_tokens: int = Field(
        2048,
        ge=1,
        description="Padded tokens per embedding batch, at most (ONNX backend): long texts go in smaller batches, "
        'which keeps the embedder\'s memory flat (benchmarks/HISTORY.md, "Ingestion").',
    )
    embedding_backend: str = Field(
        "auto",
        pattern=r"^(auto|torch|onnx)$",
        description="Runtime of a sentence-transformers model: auto = ONNX Runtime once <home>/models has the "
        "model's ONNX export (written by the first torch load), else torch; onnx = export if needed, then "
        "ONNX; torch = always torch.",
    )
    embedding_precision: Literal["fp32", "int8"] = Field(
        "fp32",
        description="int8 = the ONNX export dynamically quantised (kbgraph.embed.onnx_quant; ~1.6x faster on "
        "CPU, vectors at cosine ~0.99 to fp32); applies when the ONNX backend runs (not torch, not openai:). "
        "Keep one precision per knowledge base: vectors of both in one index are comparable but not identical.",
    )
    embedding_cache: bool = Field(True, description="Keep computed embeddings on disk and reuse them.")
    embedding_cache_dir: UserPath | None = Field(
        None, description="Embedding cache folder; default <home>/embed-cache."
    )

    # --- which layers get vectors (ingest/embed_layers.py, query/propagation/propagate.py) ------
    vector_layers: Annotated[list[str], NoDecode] = Field(
        ["AtomicQuestion", "Entity", "Section", "Document"],  # docs/benchmarks.md#layer-vectors-vector_layers
        description="Layers embedded at ingest and vector-seeded at query time, besides Chunk (always): a list "
        "or comma-separated labels of " + ", ".join(VECTOR_LAYER_CHOICES) + ". The default leaves Triple out: "
        "its vectors cost ~31 KB of store memory per passage and the learned ranker holds its leave-one-set-out "
        "recall without them (docs/benchmarks.md#layer-vectors-vector_layers); add Triple to restore every layer. "
        "A layer that is off keeps its nodes, edges and full-text; vectors it already has stay in the store "
        "unused. Turning a layer on for an existing knowledge base gives vectors only to nodes created afterwards: "
        "rebuild it (reset, then ingest; the embedding cache keeps that cheap) for all of them. "
        "Algorithm 1 (pike) and H-R retrieve atomic questions by vector: keep AtomicQuestion for them.",
    )

    entity_types_without_vectors: Annotated[list[str], NoDecode] = Field(
        ["DATE"],  # docs/benchmarks.md#entity-vectors-without-dates-entity_types_without_vectors
        description="Entity types whose Entity nodes get no vector (a list or comma-separated types): by default "
        "the dates (~12 % of the entities, ~4.5 KB of store memory per passage on 2Wiki); they are still found by "
        "name (the Entity.name full-text seeds) and through the chunks that mention them. Adding CONCEPT (key "
        "noun phrases) saves ~11 KB more per passage at ~1 point of MuSiQue R@5. [] = every entity embedded (when "
        "Entity is a vector layer). Changing it for an existing knowledge base applies to entities created "
        "afterwards: rebuild it (reset, then ingest) for all of them.",
    )

    # --- late chunking (kbgraph/embed/late.py, ingest/embed_late.py) ------------------
    late_chunking: bool = Field(
        True,  # the default: docs/benchmarks.md#late-chunking-late_chunking (2Wiki R@5 87.1, MuSiQue 68.7)
        description="Sentence-level atomic tags get the mean of their tokens' states in their chunk's own "
        "forward pass (late chunking, Günther et al. 2024) instead of a second pass each: faster ingestion, "
        "context-aware tag vectors. Needs the ONNX backend (under embedding_backend=auto the ONNX export is then "
        "made before the first ingestion) and a mean-pooling model (all-MiniLM-L6-v2); other embedders, and tags "
        "not found in the chunk or cut by the model's token limit, are embedded as before. False = every tag "
        "embedded on its own (the hierarchical method's atomic-question search gains ~1 R@5 point).",
    )

    # --- static embeddings (kbgraph/embed/static_model.py) ---------------------------
    static_layers: Annotated[list[str], NoDecode] = Field(
        ["Entity"],  # Entity only: docs/benchmarks.md#static-embeddings-static_layers (Entity+Triple lost MuSiQue R@5)
        description="Layers embedded by a static model distilled from embedding_model (model2vec: one vector per "
        "token, a text = their mean; microseconds a text) instead of the model itself, at ingest and for the "
        "question's vector on those layers' indexes: a list or comma-separated labels of "
        + ", ".join(VECTOR_LAYER_CHOICES)
        + " (meant for short texts). Applies to sentence-transformers models "
        "(not openai:). Changing it for an existing knowledge base: rebuild it (reset, then ingest; the embedding "
        "cache keeps that cheap), or its layers are searched with the other model's question vector.",
    )
    static_dimension: int | None = Field(
        None,
        ge=8,
        description="Dimensions of the static model's vectors: model2vec's PCA at distillation keeps this many "
        "principal components; none = the model's own (embedding_dimension). The vector indexes of static_layers "
        "get this dimension, the others keep embedding_dimension. Fewer dimensions cost less store memory: on 2Wiki "
        "64 saves ~25 KB per passage (-30 %), 128 ~19 KB, at 0.1-0.5 points of 2Wiki R@5 and R@1 (MuSiQue R@5 "
        "up to +1.8; docs/benchmarks.md#static-entity-vectors-with-fewer-dimensions-static_dimension). Changing it "
        "for an existing knowledge base: rebuild it (reset, then ingest); opening it otherwise raises "
        "SchemaMismatch naming the dimension it was built with.",
    )
    static_models_dir: UserPath | None = Field(
        None,
        description="Where distilled static models are kept (one per embedding model's weights, shared by "
        "every knowledge base that points here); default <home>/models.",
    )

    @field_validator("vector_layers", "static_layers", mode="before")
    @classmethod
    def _layers(cls, v: Any) -> Any:
        return _layer_list(v)

    @field_validator("entity_types_without_vectors", mode="before")
    @classmethod
    def _types(cls, v: Any) -> Any:
        return list(dict.fromkeys(t.upper() for t in comma_items(v)))

    @property
    def vector_layers_off(self) -> frozenset[str]:
        """The labels of VECTOR_LAYER_CHOICES not in ``vector_layers``: no vectors written, no vector seeds."""
        return frozenset(VECTOR_LAYER_CHOICES) - set(self.vector_layers)

    @property
    def static_vector_layers(self) -> frozenset[str]:
        """The layers whose vectors come from the static model: ``static_layers`` that are also vector layers;
        none for an ``openai:`` embedding model (no local weights to build a static model from)."""
        return self.static_model_layers & frozenset(self.vector_layers)

    @property
    def static_model_layers(self) -> frozenset[str]:
        """The layers whose vector indexes hold the static model's vectors, whether their vectors are on or not:
        ``static_layers``; none for an ``openai:`` embedding model."""
        if (self.embedding_model or "").strip().lower().startswith("openai:"):
            return frozenset()
        return frozenset(self.static_layers)

    @property
    def static_model_dimension(self) -> int:
        """The static model's dimension: ``static_dimension`` when it is set, else ``embedding_dimension``."""
        return self.static_dimension if self.static_dimension is not None else self.embedding_dimension

    def vector_dimension(self, label: str) -> int:
        """The dimension of ``label``'s vector index (a label of kbgraph.models.VECTOR_LABELS):
        ``static_model_dimension`` for a layer of ``static_model_layers``, else ``embedding_dimension``."""
        return self.static_model_dimension if label in self.static_model_layers else self.embedding_dimension
