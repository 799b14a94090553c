"""Settings in groups (issue 30): one name per setting in the environment, kbgraph.toml (flat or by group table)
and keywords, the precedence init > environment > kbgraph.toml > defaults for each group, validated copies, the
``kbgraph config`` output, and docs/settings.md generated from the field descriptions."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

import pytest
from pydantic import SecretStr, ValidationError
from pydantic.fields import FieldInfo

from kbgraph import settings_doc
from kbgraph.settings import GROUPS, SETTING_GROUPS, TOP_LEVEL, VECTOR_LAYER_CHOICES, Settings, env_names
from kbgraph.store import backend_name

#: Every environment variable of the flat Settings class before the groups (derived once from
#: `git show main:kbgraph/settings.py` at 2b171c8, its fields' KBGRAPH_<NAME> and validation aliases).
OLD_ENV_NAMES = [
    "KBGRAPH_NAME",
    "KBGRAPH_HOME",
    "KBGRAPH_URI",
    "NEO4J_URI",
    "KBGRAPH_NEO4J_USERNAME",
    "NEO4J_USERNAME",
    "KBGRAPH_NEO4J_PASSWORD",
    "NEO4J_PASSWORD",
    "KBGRAPH_NEO4J_DATABASE",
    "NEO4J_DATABASE",
    "KBGRAPH_CONNECT_TIMEOUT",
    "KBGRAPH_DATA_DIR",
    "KBGRAPH_FALKOR_IDLE_TIMEOUT",
    "KBGRAPH_FALKOR_START_TIMEOUT",
    "KBGRAPH_NEO4J_LOCAL_HOME",
    "KBGRAPH_NEO4J_BOLT_PORT",
    "KBGRAPH_NEO4J_HTTP_PORT",
    "KBGRAPH_NEO4J_HEAP",
    "KBGRAPH_NEO4J_PAGECACHE",
    "KBGRAPH_BATCH_SIZE",
    "KBGRAPH_MAX_FILE_BYTES",
    "KBGRAPH_OCR",
    "KBGRAPH_OCR_LANGUAGES",
    "KBGRAPH_OCR_DPI",
    "KBGRAPH_CHUNK_TOKENS",
    "KBGRAPH_CHUNK_OVERLAP_SENTENCES",
    "KBGRAPH_LLM_CHUNKING",
    "KBGRAPH_LLM_CHUNK_WINDOW_TOKENS",
    "KBGRAPH_INGEST_GROUP_SIZE",
    "KBGRAPH_INGEST_GROUP_CHARS",
    "KBGRAPH_INGEST_OVERLAP_WRITES",
    "KBGRAPH_LOCK_TIMEOUT",
    "KBGRAPH_LEASE_TTL",
    "KBGRAPH_EMBEDDING_MODEL",
    "KBGRAPH_EMBEDDING_DIMENSION",
    "KBGRAPH_EMBEDDING_BATCH_SIZE",
    "KBGRAPH_EMBEDDING_BATCH_TOKENS",
    "KBGRAPH_EMBEDDING_BACKEND",
    "KBGRAPH_EMBEDDING_PRECISION",
    "KBGRAPH_EMBEDDING_CACHE",
    "KBGRAPH_EMBEDDING_CACHE_DIR",
    "KBGRAPH_VECTOR_LAYERS",
    "KBGRAPH_LATE_CHUNKING",
    "KBGRAPH_STATIC_LAYERS",
    "KBGRAPH_STATIC_MODELS_DIR",
    "KBGRAPH_SEED_K",
    "KBGRAPH_FULLTEXT_K",
    "KBGRAPH_RESCORE_K",
    "KBGRAPH_WEIGHT_CHUNK",
    "KBGRAPH_WEIGHT_QUESTION",
    "KBGRAPH_WEIGHT_TRIPLE",
    "KBGRAPH_WEIGHT_ENTITY",
    "KBGRAPH_WEIGHT_SECTION",
    "KBGRAPH_WEIGHT_DOCUMENT",
    "KBGRAPH_WEIGHT_FULLTEXT",
    "KBGRAPH_WEIGHT_HOP",
    "KBGRAPH_WEIGHT_TITLE_HOP",
    "KBGRAPH_WEIGHT_NEXT",
    "KBGRAPH_HOP_FROM",
    "KBGRAPH_MAX_ENTITY_DEGREE",
    "KBGRAPH_RANKER",
    "KBGRAPH_RANKER_MODEL",
    "KBGRAPH_RANKER_POOL",
    "KBGRAPH_RANKER_BM25_K",
    "KBGRAPH_AUTO_TAGGING",
    "KBGRAPH_WEIGHT_TAG",
    "KBGRAPH_TAG_THRESHOLD",
    "KBGRAPH_TAG_VECTOR_K",
    "KBGRAPH_TAG_MAX_CHUNKS",
    "KBGRAPH_TAG_REWRITE",
    "KBGRAPH_TAG_CLASS_SAMPLE",
    "KBGRAPH_TAG_WORKERS",
    "KBGRAPH_DECOMPOSE_ROUNDS",
    "KBGRAPH_DECOMPOSE_CANDIDATES",
    "KBGRAPH_DECOMPOSE_THRESHOLD",
    "KBGRAPH_NAIVE_K",
    "KBGRAPH_NAIVE_THRESHOLD",
    "KBGRAPH_HR_K",
    "KBGRAPH_HR_THRESHOLD",
    "KBGRAPH_HR_QUESTION_K",
    "KBGRAPH_HR_QUESTION_THRESHOLD",
    "KBGRAPH_SELF_ASK_ROUNDS",
    "KBGRAPH_MIGRES_ITERATIONS",
    "KBGRAPH_MIGRES_RETRIEVER",
    "KBGRAPH_MIGRES_BM25_K1",
    "KBGRAPH_MIGRES_BM25_B",
    "KBGRAPH_MIGRES_RETRIEVE_K",
    "KBGRAPH_MIGRES_PASSAGES",
    "KBGRAPH_MIGRES_THRESHOLD",
    "KBGRAPH_MIGRES_QUERIES",
    "KBGRAPH_MIGRES_KNOWLEDGE_PROMPTING",
    "KBGRAPH_HIRAG_ROUNDS",
    "KBGRAPH_HIRAG_TH1",
    "KBGRAPH_HIRAG_TH2",
    "KBGRAPH_HIRAG_TH3",
    "KBGRAPH_HIRAG_MIN_MATCH",
    "KBGRAPH_DECOMPOSER_ROUNDS",
    "KBGRAPH_DECOMPOSER_ALPHA",
    "KBGRAPH_DECOMPOSER_K_PRIME",
    "KBGRAPH_DECOMPOSER_DELTA_PRIME",
    "KBGRAPH_DECOMPOSER_SAMPLES",
    "KBGRAPH_DECOMPOSER_UNTIL_CORRECT",
    "KBGRAPH_DECOMPOSER_CORRECT_SCORE",
    "KBGRAPH_DECOMPOSER_MODEL",
    "KBGRAPH_L1_K",
    "KBGRAPH_LLM_BASE_URL",
    "OPENAI_BASE_URL",
    "KBGRAPH_LLM_API_KEY",
    "OPENAI_API_KEY",
    "KBGRAPH_LLM_MODEL",
    "KBGRAPH_LLM_TEMPERATURE",
    "KBGRAPH_ATOMIZING_TEMPERATURE",
    "KBGRAPH_LLM_TIMEOUT",
    "KBGRAPH_LLM_MAX_RETRIES",
    "KBGRAPH_LLM_CACHE_DIR",
    "KBGRAPH_LLM_MAX_TOKENS",
    "KBGRAPH_LLM_MAX_CONCURRENCY",
    "KBGRAPH_LLM_RESPONSE_FORMAT",
    "KBGRAPH_LLM_SERVER_PORT",
    "KBGRAPH_LLM_SERVER_DIR",
    "KBGRAPH_LLM_SERVER_MODEL",
    "KBGRAPH_LLM_SERVER_CTX",
    "KBGRAPH_LLM_SERVER_THREADS",
    "KBGRAPH_LLM_SERVER_PARALLEL",
    "KBGRAPH_SERVE_HOST",
    "KBGRAPH_SERVE_PORT",
    "KBGRAPH_SERVE_STORE_CONNECTIONS",
    "KBGRAPH_API_KEY",
    "KBGRAPH_MCP_ALLOW_INGEST",
    "KBGRAPH_MAX_REQUEST_BYTES",
    "KBGRAPH_MAX_UPLOAD_BYTES",
    "KBGRAPH_SERVE_INGEST_ROOTS",
    "KBGRAPH_API_KEYS_FILE",
    "KBGRAPH_DEBUG",
]
#: The other names of the flat class's aliased fields.
OLD_ALIASES = {
    "NEO4J_URI": "uri",
    "NEO4J_USERNAME": "neo4j_username",
    "NEO4J_PASSWORD": "neo4j_password",
    "NEO4J_DATABASE": "neo4j_database",
    "OPENAI_BASE_URL": "llm_base_url",
    "OPENAI_API_KEY": "llm_api_key",
}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No setting in the environment; KBGRAPH_CONFIG points at tmp_path/kbgraph.toml (absent until written)."""
    for key in list(os.environ):
        if key.upper().startswith(("KBGRAPH_", "NEO4J_", "OPENAI_")):
            monkeypatch.delenv(key)
    toml = tmp_path / "kbgraph.toml"
    monkeypatch.setenv("KBGRAPH_CONFIG", str(toml))
    monkeypatch.chdir(tmp_path)
    return toml


def _info(name: str) -> FieldInfo:
    model = GROUPS[SETTING_GROUPS[name]] if name in SETTING_GROUPS else Settings
    return model.model_fields[name]


def _read(s: Settings, name: str) -> Any:
    value = getattr(getattr(s, SETTING_GROUPS[name]), name) if name in SETTING_GROUPS else getattr(s, name)
    return value.get_secret_value() if isinstance(value, SecretStr) else value


def _values(name: str) -> list[Any]:
    """Three distinct valid values of setting ``name``, none its default, as Python values of its type."""
    info = _info(name)
    ann, default = info.annotation, info.get_default(call_default_factory=True)
    args = [a for a in get_args(ann) if a is not type(None)] if get_origin(ann) not in (None, list, Literal) else []
    base = args[0] if args else ann
    if get_origin(base) is Annotated:  # UserPath
        base = get_args(base)[0]
    if get_origin(base) is Literal:
        choices = [c for c in get_args(base) if c != default]
        return (choices * 3)[:3]
    if name in ("vector_layers", "static_layers"):
        return [["Entity"], ["Triple"], ["Section", "Document"]]
    if name == "serve_ingest_roots":
        return [[Path("/r1")], [Path("/r2")], [Path("/r3"), Path("/r4")]]
    if name == "embedding_backend":
        return ["onnx", "torch", "onnx"]
    if base is bool:
        return [not default, not default, not default]
    if base is int:
        start = default if isinstance(default, int) else 16
        return [start + 1, start + 2, start + 3]
    if base is float:
        start = default if isinstance(default, float) else 1.0  # type: ignore[assignment]
        return [start + 0.25, start + 0.5, start + 0.75]
    if base is Path:
        return [Path("/p/one"), Path("/p/two"), Path("/p/three")]
    return [f"{name}-one", f"{name}-two", f"{name}-three"]


def _env_text(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def _toml_text(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(json.dumps(str(v)) for v in value) + "]"
    if isinstance(value, (bool, int, float)):
        return json.dumps(value)
    return json.dumps(str(value))


def _representative(group: str) -> str:
    """A setting of ``group`` whose env name is KBGRAPH_<NAME> (the first such)."""
    return next(n for n in GROUPS[group].model_fields if env_names(n) == (f"KBGRAPH_{n.upper()}",))


# --- the environment names ---------------------------------------------------------------------------------


def test_every_old_environment_name_is_still_read(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(OLD_ENV_NAMES) == len(set(OLD_ENV_NAMES))
    current = {e for n in [*TOP_LEVEL, *SETTING_GROUPS] for e in env_names(n)}
    assert set(OLD_ENV_NAMES) <= current, f"environment names gone: {set(OLD_ENV_NAMES) - current}"
    for env in OLD_ENV_NAMES:
        name = OLD_ALIASES.get(env) or env.removeprefix("KBGRAPH_").lower()
        value = _values(name)[0]
        monkeypatch.setenv(env, _env_text(value))
        got = _read(Settings(), name)
        expected = value.expanduser() if isinstance(value, Path) else value
        assert got == expected, f"{env}={_env_text(value)!r} gave {name} = {got!r}"
        monkeypatch.delenv(env)


def test_neo4j_and_openai_aliases_and_kbgraph_names(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", "bolt://neo4j-name:7687")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    s = Settings()
    assert (s.store.uri, backend_name(s)) == ("bolt://neo4j-name:7687", "neo4j")
    assert s.llm.llm_api_key is not None and s.llm.llm_api_key.get_secret_value() == "sk-openai"
    monkeypatch.setenv("KBGRAPH_URI", "")  # the empty URI is the embedded store, as before
    monkeypatch.delenv("NEO4J_URI")
    assert backend_name(Settings()) == "falkordb"


# --- precedence per group: init > environment > kbgraph.toml > defaults ----------------------------------------


@pytest.mark.parametrize("group", list(GROUPS))
def test_precedence_per_group(group: str, clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = _representative(group)
    info = _info(name)
    v_toml, v_env, v_init = _values(name)
    default = info.get_default(call_default_factory=True)
    assert _read(Settings(), name) == (default.get_secret_value() if isinstance(default, SecretStr) else default)

    clean_env.write_text(f"{name} = {_toml_text(v_toml)}\n", encoding="utf-8")  # flat key, as before the groups
    assert _read(Settings(), name) == v_toml
    clean_env.write_text(f"[{group}]\n{name} = {_toml_text(v_init)}\n", encoding="utf-8")  # or its group's table
    assert _read(Settings(), name) == v_init

    clean_env.write_text(f"{name} = {_toml_text(v_toml)}\n", encoding="utf-8")
    monkeypatch.setenv(f"KBGRAPH_{name.upper()}", _env_text(v_env))
    assert _read(Settings(), name) == v_env  # environment over kbgraph.toml
    assert _read(Settings(**{name: v_init}), name) == v_init  # keyword over environment
    assert _read(Settings(**{group: {name: v_init}}), name) == v_init  # type: ignore[arg-type]  # the group given whole, too
    # a keyword of another setting of the group leaves this one to the environment
    other = next((n for n in GROUPS[group].model_fields if n != name), None)
    if other is not None:
        assert _read(Settings(**{other: _values(other)[0]}), name) == v_env


def test_table_of_kbgraph_toml_below_the_environment(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clean_env.write_text('seed_k = 7\n[retrieval]\nweight_hop = 0.2\n[store]\nuri = "bolt://toml:1"\n')
    monkeypatch.setenv("NEO4J_URI", "bolt://env:2")
    s = Settings()
    assert (s.retrieval.seed_k, s.retrieval.weight_hop, s.store.uri) == (7, 0.2, "bolt://env:2")


# --- bad input ---------------------------------------------------------------------------------------------


def test_bad_values_name_the_setting(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBGRAPH_SEED_K", "0")
    with pytest.raises(ValidationError, match=r"retrieval\.seed_k"):
        Settings()
    monkeypatch.delenv("KBGRAPH_SEED_K")
    with pytest.raises(ValidationError, match="unknown vector layer 'Chunks'"):
        Settings(vector_layers="Entity,Chunks")
    clean_env.write_text("[retrieval]\nsed_k = 5\n")  # a typo in a group's table is an error, not ignored
    with pytest.raises(ValidationError, match=r"retrieval\.sed_k"):
        Settings()
    clean_env.write_text("[retrieval]\nuri = 'bolt://x:1'\n")  # a setting under another group's table
    with pytest.raises(ValidationError, match=r"retrieval\.uri"):
        Settings()


def test_unknown_flat_names_stay_ignored(clean_env: Path) -> None:
    clean_env.write_text("no_such_setting = 1\n")
    assert Settings(another_unknown=2).retrieval.seed_k == 20


# --- copies ------------------------------------------------------------------------------------------------


def test_updated_routes_flat_names_and_validates(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = Settings(seed_k=3, name="kb1")
    monkeypatch.setenv("KBGRAPH_SEED_K", "9")
    c = s.updated({"weight_hop": 0.0, "uri": "bolt://h:1"}, name="kb2")
    assert (c.name, c.retrieval.seed_k, c.retrieval.weight_hop, backend_name(c)) == ("kb2", 3, 0.0, "neo4j")
    assert (s.name, s.retrieval.weight_hop, s.store.uri) == ("kb1", 0.3, None)  # the original is unchanged
    assert s.model_copy(update={"ranker": "weights"}).retrieval.ranker == "weights"  # pydantic's name, routed
    with pytest.raises(ValidationError, match=r"retrieval\.seed_k"):
        s.updated(seed_k=0)
    with pytest.raises(ValidationError, match="unknown vector layer"):
        s.model_copy(update={"vector_layers": ["Nope"]})
    assert s.updated(neo4j_password="pw").store.neo4j_password.get_secret_value() == "pw"
    assert s.updated(home="~/x").home == Path("~/x").expanduser()


def test_flat_and_masked_views(clean_env: Path) -> None:
    s = Settings(llm_api_key="sk-secret", seed_k=4, serve_ingest_roots="/a,/b")
    flat = s.flat()
    assert set(flat) == set(TOP_LEVEL) | set(SETTING_GROUPS) and flat["seed_k"] == 4
    masked = s.masked()
    assert masked["retrieval"]["seed_k"] == 4 and masked["llm"]["llm_api_key"] == "****"
    assert masked["serve"]["serve_ingest_roots"] == ["/a", "/b"] and masked["llm"]["llm_base_url"] is None
    assert "sk-secret" not in json.dumps(masked)


def test_groups_list_every_setting_once() -> None:
    names = [n for m in GROUPS.values() for n in m.model_fields]
    assert len(names) == len(set(names)) == len(SETTING_GROUPS)
    assert not (set(names) | set(TOP_LEVEL)) & set(GROUPS)
    for name in names:
        assert (_info(name).description or "").strip(), f"{name} has no description"
    assert set(VECTOR_LAYER_CHOICES) >= set(Settings().embedding.vector_layers)


# --- kbgraph config ----------------------------------------------------------------------------------------


def test_config_cli_prints_groups_with_environment_names(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from typer.testing import CliRunner

    from kbgraph.cli import app

    monkeypatch.setenv("KBGRAPH_SEED_K", "11")
    monkeypatch.setenv("NEO4J_PASSWORD", "hunter2")
    runner = CliRunner()
    out = runner.invoke(app, ["--kb", "cfgkb", "config", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["name"] == "cfgkb" and data["retrieval"]["seed_k"] == 11
    assert data["store"]["neo4j_password"] == "****" and "hunter2" not in out.stdout
    assert data["backend"] == "falkordb" and data["kb_dir"].endswith("cfgkb")
    monkeypatch.setenv("COLUMNS", "250")
    out = runner.invoke(app, ["config"])
    assert out.exit_code == 0, out.output
    row = next(line for line in out.stdout.splitlines() if "retrieval.seed_k" in line)
    assert "KBGRAPH_SEED_K" in row and "11" in row
    row = next(line for line in out.stdout.splitlines() if "store.neo4j_password" in line)
    assert "NEO4J_PASSWORD" in row and "hunter2" not in out.stdout


# --- docs/settings.md ----------------------------------------------------------------------------------------


def test_docs_settings_md_is_generated_from_the_descriptions() -> None:
    text = settings_doc.DOC.read_text(encoding="utf-8")
    assert settings_doc.splice(text, settings_doc.render()) == text, (
        "docs/settings.md is stale: run python -m kbgraph.settings_doc --write"
    )
    for name in [*TOP_LEVEL, *SETTING_GROUPS]:
        for env in env_names(name):
            assert f"`{env}`" in text


def test_the_kbgraph_toml_example_of_docs_settings_md(clean_env: Path) -> None:
    text = settings_doc.DOC.read_text(encoding="utf-8")
    clean_env.write_text(text.split("```toml\n", 1)[1].split("```", 1)[0], encoding="utf-8")
    s = Settings()
    assert (s.name, s.retrieval.seed_k, s.store.uri) == ("papers", 30, "bolt://127.0.0.1:7687")
    assert (s.retrieval.weight_hop, s.retrieval.ranker) == (0.2, "weights")


def test_settings_doc_check_and_bad_file(tmp_path: Path) -> None:
    doc = tmp_path / "settings.md"
    doc.write_text(f"intro\n\n{settings_doc.BEGIN}\nold table\n{settings_doc.END}\n\noutro\n")
    assert settings_doc.main(["--check", "--doc", str(doc)]) == 1
    assert settings_doc.main(["--write", "--doc", str(doc)]) == 0
    assert settings_doc.main(["--check", "--doc", str(doc)]) == 0
    text = doc.read_text()
    assert text.startswith("intro\n\n") and text.endswith("\n\noutro\n") and "| `retrieval.seed_k` |" in text
    doc.write_text("no markers\n")
    with pytest.raises(ValueError, match="no generated block"):
        settings_doc.main(["--check", "--doc", str(doc)])
