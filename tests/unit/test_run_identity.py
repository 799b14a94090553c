"""The run identity of `kbgraph eval` (kbgraph.eval.runfolder): every setting but the volatile ones, the
embedding model's weights, the ranker model's file and kbgraph's version; a folder of another identity is
refused on resume."""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

import pytest
from pydantic import SecretStr

from kbgraph.errors import ConfigError
from kbgraph.eval import runfolder as rf
from kbgraph.query.propagation.ranking_learned import default_model_path
from kbgraph.settings import GROUPS, TOP_LEVEL, Settings

if TYPE_CHECKING:
    from kbgraph.eval.dataset import Dataset


def target(tmp_path: Path, **settings: Any) -> SimpleNamespace:
    """What run_identity reads of a knowledge base: its settings and name (no store opened)."""
    s = Settings(**{"home": tmp_path / "home", "embedding_model": "unit-test-model", **settings})
    return SimpleNamespace(settings=s, name=s.name)


#: A stand-in Dataset: run_identity reads its three paths only.
DATASET = cast(
    "Dataset",
    SimpleNamespace(questions_path=Path("examples/multihop/2wiki/2wiki.jsonl"), corpus_path=None, documents_path=None),
)


def identity(tmp_path: Path, **settings: Any) -> dict[str, Any]:
    return rf.run_identity(target(tmp_path, **settings), DATASET, seed=0, sample=None, depth=10, judge_model=None)


def all_settings() -> set[str]:
    return set(TOP_LEVEL) | {name for model in GROUPS.values() for name in model.model_fields}


@pytest.mark.parametrize("change", [{"ranker": "weights"}, {"vector_layers": ["AtomicQuestion"]}])
def test_resuming_after_a_change_of_ranker_or_vector_layers_is_refused(tmp_path: Path, change: dict[str, Any]) -> None:
    run_dir = tmp_path / "run"
    rf.open_run_folder(run_dir, identity(tmp_path))
    changed = identity(tmp_path, **change)
    with pytest.raises(ConfigError, match=f"another configuration .*settings.{next(iter(change))}"):
        rf.open_run_folder(run_dir, changed)
    rf.open_run_folder(run_dir, changed, fresh=True)  # --fresh starts the folder over with the new identity
    assert json.loads((run_dir / rf.RUN).read_text())["identity"] == changed["identity"]


@pytest.mark.parametrize(
    "change",
    [
        {"ranker_bm25_k": 10},
        {"rescore_k": 5},
        {"l1_k": 3},
        {"hirag_th2": 2},
        {"decomposer_model": "proposer"},
        {"late_chunking": False},
        {"ranker_pool": 20},
        {"llm_response_format": "none"},
        {"static_layers": []},
        {"embedding_backend": "torch"},
        {"ocr_dpi": 200},
        {"name": "other"},
        {"neo4j_database": "kb2"},
    ],
)
def test_every_setting_that_shapes_results_is_in_the_identity(tmp_path: Path, change: dict[str, Any]) -> None:
    before, after = identity(tmp_path), identity(tmp_path, **change)
    assert before["identity"] != after["identity"]
    name = next(iter(change))
    assert f"settings.{name}" in rf.identity_diff(before, after)


@pytest.mark.parametrize(
    "change",
    [
        {"llm_timeout": 5.0},
        {"llm_api_key": "sk-other"},
        {"llm_max_concurrency": 2},
        {"neo4j_bolt_port": 7688},
        {"serve_port": 9000},
        {"api_key": "secret"},
        {"batch_size": 10},
        {"tag_workers": 1},
        {"debug": True},
        {"llm_base_url": "http://127.0.0.1:9999/v1"},
        {"llm_server_ctx": 8192},
        {"embedding_cache": False},
    ],
)
def test_volatile_settings_may_change_between_runs(tmp_path: Path, change: dict[str, Any]) -> None:
    run_dir = tmp_path / "run"
    rf.open_run_folder(run_dir, identity(tmp_path))
    rf.open_run_folder(run_dir, identity(tmp_path, **change))  # no ConfigError


def test_every_setting_is_in_the_identity_or_volatile_with_a_reason(tmp_path: Path) -> None:
    fields = all_settings()
    volatile = rf.volatile_settings()
    assert set(volatile) <= fields, f"not settings: {sorted(set(volatile) - fields)}"
    assert all(reason.strip() for reason in volatile.values())
    in_identity = set(identity(tmp_path)["settings"])
    assert in_identity == fields - set(volatile)
    assert not in_identity & set(volatile)


def test_no_secret_and_no_path_is_in_the_identity(tmp_path: Path) -> None:
    """A secret must never reach run.json; a path may change between runs (what it holds is hashed)."""
    volatile = rf.volatile_settings()
    for model in (*GROUPS.values(), Settings):
        for name, info in model.model_fields.items():  # type: ignore[attr-defined]
            if name in GROUPS:
                continue
            kind = repr(info.annotation)
            if "SecretStr" in kind or "Path" in kind:
                assert name in volatile, f"{name} ({kind}) is a secret or a path: list it in VOLATILE_SETTINGS"
    run_dir = tmp_path / "run"
    rf.open_run_folder(run_dir, identity(tmp_path, llm_api_key="sk-do-not-store", neo4j_password="pw-do-not-store"))
    text = (run_dir / rf.RUN).read_text()
    assert "do-not-store" not in text


def test_run_json_is_readable_and_holds_the_settings_and_their_hash(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    ident = identity(tmp_path, seed_k=7)
    rf.open_run_folder(run_dir, ident)
    stored = json.loads((run_dir / rf.RUN).read_text())
    assert stored["settings"]["seed_k"] == 7 and stored["settings"]["ranker"] == "blend"  # the default
    assert stored["kbgraph"] == version("kbgraph") and stored["format"] == rf.IDENTITY_FORMAT
    assert stored["identity"] == rf.identity_hash(stored) == ident["identity"]
    assert stored["ranker"]["model_sha256"]
    assert stored["embedder"] == {"model": "unit-test-model", "weights_sha256": None}


def test_an_old_run_json_gives_a_clear_error_not_a_crash(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    old = {
        "dataset": str(DATASET.questions_path),
        "corpus": None,
        "seed": 0,
        "sample": None,
        "depth": 10,
        "kb": "default",
        "backend": "falkordb",
        "embedding_model": "unit-test-model",
        "embedding_dimension": 384,
        "llm_model": None,
        "judge_model": None,
        "settings": {"seed_k": 20, "weight_chunk": 1.0},
    }
    (run_dir / rf.RUN).write_text(json.dumps(old))
    with pytest.raises(ConfigError, match="older kbgraph.*--fresh"):
        rf.open_run_folder(run_dir, identity(tmp_path))
    (run_dir / rf.RUN).write_text("{not json")
    with pytest.raises(ConfigError, match="unreadable.*--fresh"):
        rf.open_run_folder(run_dir, identity(tmp_path))
    rf.open_run_folder(run_dir, identity(tmp_path), fresh=True)


def test_the_ranker_model_is_identified_by_its_content_not_its_path(tmp_path: Path) -> None:
    shipped = json.loads(default_model_path().read_text())
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(shipped))
    b.write_text(json.dumps(shipped))
    same_a, same_b = (identity(tmp_path, ranker="learned", ranker_model=p) for p in (a, b))
    assert same_a["identity"] == same_b["identity"]
    b.write_text(json.dumps({**shipped, "intercept": shipped.get("intercept", 0.0) + 1}))
    assert identity(tmp_path, ranker="learned", ranker_model=b)["identity"] != same_a["identity"]
    assert rf.ranker_identity(Settings(ranker="weights")) == {"ranker": "weights", "model_sha256": None}


def test_kbgraph_version_and_the_embedding_model_are_in_the_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = identity(tmp_path)
    with monkeypatch.context() as patch:
        patch.setattr(rf, "kbgraph_version", lambda: "0.0.0-other")
        assert "kbgraph" in rf.identity_diff(before, identity(tmp_path))
    other = identity(tmp_path, embedding_model="openai:text-embedding-3-small")
    assert other["embedder"] == {"model": "openai:text-embedding-3-small", "weights_sha256": None}
    assert other["identity"] != before["identity"]


def test_a_secret_value_is_written_as_whether_it_is_set() -> None:
    assert rf._plain(SecretStr("x")) is True and rf._plain(SecretStr("")) is False
    assert rf._plain([Path("/a"), Path("/b")]) == ["/a", "/b"]


def test_the_blend_ranker_is_identified_by_both_shipped_models_its_weight_and_its_head() -> None:
    blend = rf.ranker_identity(Settings(ranker="blend"))
    learned = rf.ranker_identity(Settings(ranker="learned"))
    gbm = rf.ranker_identity(Settings(ranker="gbm"))
    assert blend["model_sha256"] and blend["model_sha256"] not in (learned["model_sha256"], gbm["model_sha256"])
    assert (blend["blend_weight"], blend["blend_k"]) == (4.0, 15)
    assert rf.ranker_identity(Settings(ranker="blend", ranker_blend_weight=1.0))["blend_weight"] == 1.0
    assert rf.ranker_identity(Settings(ranker="blend", ranker_blend_k=0))["blend_k"] == 0
