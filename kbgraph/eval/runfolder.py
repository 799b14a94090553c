"""The run folder of an evaluation (PIKE-RAG §6; paper 003 §4): what makes a run resumable.

* ``run.json``: the configuration that defines the run (:func:`run_identity`: every setting but the few
  volatile ones of :data:`VOLATILE_SETTINGS`, the embedding model's weights and the ranker model's sha256,
  kbgraph's version, and the hash of all that). Resuming with another configuration raises ConfigError (use
  another folder or ``fresh``); ``limit``, ``methods`` and ``ks`` may change between runs
  (:func:`open_run_folder`).
* ``results.jsonl``: one :class:`QuestionRecord` per (question, method), appended and flushed as each
  finishes, so an interrupted run resumes where it stopped (:class:`Results`: finished pairs are skipped,
  failed ones retried; a line cut short by a crash is dropped).
* ``summary.json`` and ``report.md`` (kbgraph.eval.summary, kbgraph.eval.report), plots under ``plots/``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, SecretStr

from kbgraph.errors import ConfigError
from kbgraph.store import backend_name
from kbgraph.embed.onnx_model import models_dir, read_model_spec, UnsupportedModelError, weights_hash
from kbgraph.embed.sentence import local_model_dir
from kbgraph.query.propagation.rankers import get_ranker
from kbgraph.settings import GROUPS

if TYPE_CHECKING:
    from kbgraph.eval.dataset import Dataset
    from kbgraph.eval.target import EvalTarget
    from kbgraph.settings import Settings

RESULTS, RUN, SUMMARY, REPORT = "results.jsonl", "run.json", "summary.json", "report.md"


class Tokens(BaseModel):
    """LLM requests and tokens one record spent (from ``answering.UsageMeter``)."""

    calls: int = 0
    prompt: int = 0
    completion: int = 0
    cached_calls: int = 0

    @property
    def total(self) -> int:
        return self.prompt + self.completion


class QuestionRecord(BaseModel):
    """One line of ``results.jsonl``: one method on one question. Retrieval metrics are computed from
    ``retrieved_passage_ids`` (the passages of ``retrieved_chunk_ids``, as the KB returned them, in rank
    order). ``latency_s``: wall time of the method call (question embedding included; judge excluded)."""

    question_id: str
    method: str
    question: str
    gold_answers: list[str] = Field(default_factory=list)
    gold_passage_ids: list[str] = Field(default_factory=list)
    answer: str | None = None
    retrieval_only: bool = False
    metrics: dict[str, float | None] = Field(default_factory=dict)
    retrieved_chunk_ids: list[str] = Field(default_factory=list)
    retrieved_passage_ids: list[str] = Field(default_factory=list)
    # long-document sets (kbgraph.eval.pages): the evidence pages and each retrieved chunk's page key, in rank order
    gold_pages: list[str] = Field(default_factory=list)
    retrieved_pages: list[str] = Field(default_factory=list)
    domain: str | None = None  # the question's ``meta.domain`` (the report's figures by domain)
    trace: list[dict[str, Any]] = Field(default_factory=list)
    rationale: str = ""
    judgement: str | None = None
    tokens: Tokens = Field(default_factory=Tokens)
    judge_tokens: Tokens = Field(default_factory=Tokens)
    latency_s: float = 0.0
    error: str | None = None
    finished_at: str = ""
    # method 'auto' (PIKE-RAG §3.2, §4.2; kbgraph.query.methods.classify): the question's class and the route it took
    question_class: str | None = None
    question_subtype: str | None = None
    route: str | None = None


#: Settings left out of the run identity (:func:`run_identity`), by the reason they may change between the runs
#: of one folder: each changes how a run goes or where things are, never which chunks or answers come back. Every
#: other setting is in the identity, a new one included: tests/unit/test_run_identity.py walks every field and
#: fails on a name here that is no setting, and on a secret or path that is in the identity.
VOLATILE_SETTINGS: dict[str, tuple[str, ...]] = {
    # never written to run.json
    "a secret or credential": ("neo4j_username", "neo4j_password", "llm_api_key", "api_key"),
    # where data, caches and servers are; what they hold is the identity's (kb, backend, neo4j_database,
    # llm_model, embedder and ranker hashes)
    "a folder, file or address": (
        "home",
        "data_dir",
        "neo4j_local_home",
        "uri",
        "embedding_cache_dir",
        "static_models_dir",
        "ranker_model",
        "llm_cache_dir",
        "llm_base_url",
    ),
    "a timeout or retry count (a failed question is retried on resume)": (
        "connect_timeout",
        "falkor_idle_timeout",
        "falkor_start_timeout",
        "lock_timeout",
        "lease_ttl",
        "llm_timeout",
        "llm_max_retries",
    ),
    "concurrency, batching of writes or memory: the same graph and answers": (
        "batch_size",
        "ingest_overlap_writes",
        "tag_workers",
        "llm_max_concurrency",
        "neo4j_heap",
        "neo4j_pagecache",
        "neo4j_jvm_options",
    ),
    "a port of the local Neo4j server": ("neo4j_bolt_port", "neo4j_http_port"),
    "a cache of exact vectors: the same vectors either way": ("embedding_cache",),
    "read by nothing (tracebacks: `kbgraph --debug`)": ("debug",),
}
#: Groups of settings of other commands, left out whole: ``kbgraph llm start``'s (eval talks to the endpoint,
#: llm_base_url and llm_model) and ``kbgraph serve``'s.
VOLATILE_GROUPS: dict[str, str] = {
    "llm_server": "settings of `kbgraph llm start` (eval uses the endpoint: llm_base_url, llm_model)",
    "serve": "settings of `kbgraph serve` and `kbgraph mcp`",
}

#: The form of run.json's identity: 2 = every setting but the volatile ones, hashed (``identity``).
IDENTITY_FORMAT = 2


def volatile_settings() -> dict[str, str]:
    """{setting: why it may change between the runs of one folder}: :data:`VOLATILE_SETTINGS` and every setting
    of :data:`VOLATILE_GROUPS`."""
    out = {name: reason for reason, names in VOLATILE_SETTINGS.items() for name in names}
    for group, reason in VOLATILE_GROUPS.items():
        out.update(dict.fromkeys(GROUPS[group].model_fields, reason))
    return out


def _plain(value: object) -> object:
    """A setting's value as JSON (paths as strings, a secret only as whether it is set)."""
    if isinstance(value, SecretStr):
        return bool(value.get_secret_value())
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def identity_settings(settings: Settings) -> dict[str, Any]:
    """Every setting of ``settings`` by its flat name, sorted, but the volatile ones (:func:`volatile_settings`)."""
    volatile = volatile_settings()
    return {k: _plain(v) for k, v in sorted(settings.flat().items()) if k not in volatile}


def embedder_identity(settings: Settings) -> dict[str, Any]:
    """The embedding model: its name and, for a sentence-transformers model on disk, the sha256 of its weights
    (remembered in <home>/models by path, size and mtime, as the ONNX export's name is; None for an
    ``openai:`` model or one not on disk yet)."""
    name = (settings.embedding.embedding_model or "").strip()
    digest = None
    folder = None if name.lower().startswith("openai:") else local_model_dir(name)
    if folder is not None:
        try:
            digest = weights_hash(read_model_spec(folder).weights, models_dir(settings.home))
        except (UnsupportedModelError, OSError, ValueError):
            digest = None
    return {"model": name, "weights_sha256": digest}


def ranker_identity(settings: Settings) -> dict[str, Any]:
    """The ranker (kbgraph.query.propagation.rankers): its name, ``model_sha256`` and the other settings that define its order
    (the row's ``identity``: the blend's ``blend_weight`` and ``blend_k``). ``model_sha256``: None for a ranker of
    no model file ('weights'); the sha256 of its one model file (``ranker_model``, else the ranker's shipped one:
    'learned', 'gbm'); one sha256 of the digests of several ('blend': both shipped models, the learned one and the
    blend's gbm); None when a file is missing (the run then stops with the ranker's own ConfigError)."""
    row = get_ranker(settings.retrieval.ranker)
    digests = [_sha256(p) for p in row.models(settings)]
    if not digests or None in digests:
        digest = None
    elif len(digests) == 1:
        digest = digests[0]
    else:
        digest = hashlib.sha256(":".join(map(str, digests)).encode()).hexdigest()
    return {"ranker": row.name, "model_sha256": digest, **row.identity(settings)}


def _sha256(path: str | Path) -> str | None:
    """sha256 (hex) of the file at ``path``; None when it cannot be read."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def kbgraph_version() -> str:
    """kbgraph's version as installed (as summary.json's ``versions`` give it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kbgraph")
    except PackageNotFoundError:
        return "unknown"


def identity_hash(identity: dict[str, Any]) -> str:
    """sha256 of ``identity`` (its ``identity`` key left out) as canonical JSON."""
    body = {k: v for k, v in identity.items() if k != "identity"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def run_identity(
    kb: EvalTarget, dataset: Dataset, *, seed: int, sample: int | None, depth: int, judge_model: str | None
) -> dict[str, Any]:
    """What ``run.json`` holds: the configuration that defines a run (data set, seed, sample, depth, KB, every
    setting but the volatile ones (:data:`VOLATILE_SETTINGS`), the embedding model's weights, the ranker's
    model, kbgraph's version) and its hash ``identity``. Results of another identity are never mixed in."""
    s = kb.settings
    identity = {
        "format": IDENTITY_FORMAT,
        "kbgraph": kbgraph_version(),
        "dataset": str(dataset.questions_path),
        "corpus": str(dataset.corpus_path) if dataset.corpus_path else None,
        **({"documents": str(dataset.documents_path)} if dataset.documents_path else {}),
        "seed": seed,
        "sample": sample,
        "depth": depth,
        "kb": kb.name,
        "backend": backend_name(s),
        "embedding_model": s.embedding.embedding_model,
        "embedding_dimension": s.embedding.embedding_dimension,
        "llm_model": s.llm.llm_model,
        "judge_model": judge_model,
        "embedder": embedder_identity(s),
        "ranker": ranker_identity(s),
        "settings": identity_settings(s),
    }
    identity["identity"] = identity_hash(identity)
    return identity


def identity_diff(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The keys in which two identities differ (``settings.<name>`` for a setting; the hash left out)."""
    diff = [
        k
        for k in sorted(set(before) | set(after))
        if k not in ("identity", "settings") and before.get(k) != after.get(k)
    ]
    b, a = before.get("settings") or {}, after.get("settings") or {}
    if isinstance(b, dict) and isinstance(a, dict):
        diff += [f"settings.{k}" for k in sorted(set(b) | set(a)) if b.get(k) != a.get(k)]
    elif b != a:
        diff.append("settings")
    return diff


class Results:
    """``results.jsonl``: the latest record per (question, method), appended one flushed line at a time.
    A line cut short by a crash is dropped on open."""

    def __init__(self, path: Path):
        self.path = path
        self.records: dict[tuple[str, str], QuestionRecord] = {}
        if path.is_file():
            data = path.read_bytes()
            if data and not data.endswith(b"\n"):  # a line cut by kill -9: drop it before appending
                data = data[: data.rfind(b"\n") + 1]
                path.write_bytes(data)
            for line in data.decode("utf-8").splitlines():
                try:
                    rec = QuestionRecord.model_validate_json(line)
                except ValueError:
                    continue
                self.records[(rec.question_id, rec.method)] = rec

    def done(self, qid: str, method: str) -> bool:
        rec = self.records.get((qid, method))
        return rec is not None and rec.error is None

    def add(self, rec: QuestionRecord) -> None:
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(rec.model_dump_json() + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self.records[(rec.question_id, rec.method)] = rec


def open_run_folder(run_dir: Path, identity: dict[str, Any], *, fresh: bool = False) -> None:
    """Create ``run_dir`` and its ``run.json`` (``identity``), or check that an existing one holds the same
    identity. ``fresh``: delete the folder's results, summary, report and plots first. Raises ConfigError
    when the folder holds results of another configuration."""
    run_dir.mkdir(parents=True, exist_ok=True)
    run_file = run_dir / RUN
    if fresh:
        for name in (RESULTS, RUN, SUMMARY, REPORT):
            (run_dir / name).unlink(missing_ok=True)
        shutil.rmtree(run_dir / "plots", ignore_errors=True)
    if run_file.is_file():
        try:
            before = json.loads(run_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"{run_file} is unreadable ({type(exc).__name__}): pass another --out, or --fresh to "
                "discard its results"
            ) from None
        if not isinstance(before, dict) or before.get("format") != identity.get("format"):
            raise ConfigError(
                f"{run_dir} holds results of an older kbgraph, whose run.json did not record every setting (so "
                "they may come from another configuration): pass another --out, or --fresh to discard them"
            )
        if before.get("identity") != identity["identity"]:
            diff = identity_diff(before, identity) or ["identity"]
            raise ConfigError(
                f"{run_dir} holds results of another configuration (differs in: {', '.join(diff)}); "
                "pass another --out, or --fresh to discard them"
            )
    else:
        run_file.write_text(json.dumps(identity, indent=2, ensure_ascii=False), encoding="utf-8")
