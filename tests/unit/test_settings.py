"""Settings parsing and validation (kbgraph.settings, kbgraph.settings_groups): flat names routed into groups,
precedence, bounds, list settings, secrets."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from kbgraph.settings import GROUPS, SETTING_GROUPS, Settings, env_names, route


def test_flat_names_are_routed_into_their_groups() -> None:
    assert route({"seed_k": 5, "llm_model": "m", "name": "kb"}) == {
        "retrieval": {"seed_k": 5},
        "llm": {"llm_model": "m"},
        "name": "kb",
    }
    # an environment alias and a lower-cased one route to the setting
    assert route({"NEO4J_URI": "bolt://x"}) == {"store": {"uri": "bolt://x"}}
    # a group given whole keeps its keys, a flat setting goes on top
    assert route({"retrieval": {"seed_k": 1, "hop_from": 2}, "seed_k": 3}) == {
        "retrieval": {"seed_k": 3, "hop_from": 2}
    }


def test_a_flat_keyword_and_a_group_give_the_same_settings() -> None:
    s = Settings(seed_k=5, retrieval={"hop_from": 1})
    assert s.retrieval.seed_k == 5 and s.retrieval.hop_from == 1
    assert Settings(retrieval={"seed_k": 5}).retrieval.seed_k == 5


def test_precedence_keyword_over_environment_over_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "kbgraph.toml"
    config.write_text("seed_k = 3\nhop_from = 4\n[retrieval]\nfulltext_k = 6\n")
    monkeypatch.setenv("KBGRAPH_CONFIG", str(config))
    monkeypatch.setenv("KBGRAPH_HOP_FROM", "7")
    s = Settings()
    assert (s.retrieval.seed_k, s.retrieval.hop_from, s.retrieval.fulltext_k) == (3, 7, 6)
    assert Settings(hop_from=9).retrieval.hop_from == 9


def test_bounds_and_choices_are_validated() -> None:
    with pytest.raises(ValidationError, match="seed_k"):
        Settings(seed_k=0)
    with pytest.raises(ValidationError, match="ranker"):
        Settings(ranker="bogus")
    with pytest.raises(ValidationError, match="embedding_backend"):
        Settings(embedding_backend="cuda")
    with pytest.raises(ValidationError):
        Settings(retrieval={"no_such_setting": 1})  # a group forbids unknown keys


def test_vector_layers_from_a_list_or_a_comma_separated_string(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings(vector_layers="Entity, Chunk,Triple,Entity").embedding.vector_layers == ["Entity", "Triple"]
    monkeypatch.setenv("KBGRAPH_VECTOR_LAYERS", "Document")
    s = Settings()
    assert s.embedding.vector_layers == ["Document"]
    assert s.embedding.vector_layers_off == {"Section", "AtomicQuestion", "Triple", "Entity"}
    with pytest.raises(ValidationError, match="unknown vector layer 'Paragraph'"):
        Settings(vector_layers=["Paragraph"])


def test_static_layers_apply_only_to_vector_layers_of_a_local_model() -> None:
    s = Settings(vector_layers=["Entity", "Triple"], static_layers=["Entity", "Document"])
    assert s.embedding.static_vector_layers == {"Entity"}
    assert not Settings(embedding_model="openai:text-embedding-3-small").embedding.static_vector_layers


def test_updated_is_a_validated_copy_and_leaves_the_original() -> None:
    s = Settings(seed_k=5)
    t = s.updated({"seed_k": 6}, hop_from=2)
    assert (t.retrieval.seed_k, t.retrieval.hop_from, s.retrieval.seed_k) == (6, 2, 5)
    assert s.model_copy(update={"seed_k": 8}).retrieval.seed_k == 8
    with pytest.raises(ValidationError):
        s.updated(seed_k=-1)


@pytest.mark.parametrize(
    "changes",
    [
        {"weight_hop": 0.0, "ranker": "weights"},  # two settings of one group
        {"seed_k": 3, "llm_model": "m", "serve_port": 9000},  # three groups
        {"retrieval": {"hop_from": 2}, "seed_k": 4},  # a group given whole, a flat setting on top
        {"NEO4J_URI": "bolt://db:7687"},  # an environment alias
        {"vector_layers": "AtomicQuestion,Document"},  # a value a group's own validator reads
        {"name": "other", "seed_k": 9},  # a top-level field: the constructor's path
    ],
)
def test_updated_equals_the_constructors_validation(
    changes: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast path (only the changed groups validated, no settings source built again) gives what validating
    every field again gives, reads no environment, and shares no group with the original."""
    s = Settings(name="kb", seed_k=5, hop_from=1)
    monkeypatch.setenv("KBGRAPH_HOP_FROM", "7")  # read by neither: the copy keeps the original's values
    monkeypatch.setenv("KBGRAPH_MAX_ENTITY_DEGREE", "3")
    data = {k: dict(getattr(s, k)) if k in GROUPS else getattr(s, k) for k in Settings.model_fields}
    for key, value in route(changes).items():
        data[key] = {**data[key], **value} if key in GROUPS else value
    full = Settings.model_validate(data)
    copy = s.updated(changes)
    assert copy.model_dump() == full.model_dump()
    assert copy.retrieval.max_entity_degree == s.retrieval.max_entity_degree
    assert all(getattr(copy, g) is not getattr(s, g) for g in GROUPS)
    assert s.retrieval.seed_k == 5 and s.name == "kb"


def test_an_invalid_update_names_its_group() -> None:
    with pytest.raises(ValidationError) as caught:
        Settings().updated({"seed_k": -1})
    assert caught.value.errors()[0]["loc"] == ("retrieval", "seed_k")


def test_store_uri_and_derived_folders(tmp_path: Path) -> None:
    # (the backend a URI names: tests/unit/test_store_backends.py)
    assert Settings(uri="  ").store.uri is None
    s = Settings(home=tmp_path, name="kb1")
    assert s.kb_dir == tmp_path / "kb1" and s.neo4j_dir == tmp_path / "neo4j-local"
    assert Settings(home=tmp_path, data_dir=tmp_path / "d").kb_dir == tmp_path / "d"
    assert Settings(home="~/x").home == Path("~/x").expanduser()


def test_masked_hides_secrets_and_flat_lists_every_setting() -> None:
    s = Settings(llm_api_key="sk-123", home="/tmp/h")
    masked = s.masked()
    assert masked["llm"]["llm_api_key"] == "****" and masked["store"]["neo4j_password"] == "****"
    assert masked["serve"]["api_key"] is None and masked["home"] == "/tmp/h"
    assert "sk-123" not in repr(masked)
    assert set(s.flat()) == {"name", "home", "debug", *SETTING_GROUPS}


def test_env_names_of_a_setting() -> None:
    assert env_names("seed_k") == ("KBGRAPH_SEED_K",)
    assert env_names("uri") == ("KBGRAPH_URI", "NEO4J_URI")
    assert "OPENAI_API_KEY" in env_names("llm_api_key")
    with pytest.raises(KeyError):
        env_names("retrieval")
    with pytest.raises(KeyError):
        env_names("no_such_setting")


def test_every_setting_has_a_description_and_one_group() -> None:
    for group, model in GROUPS.items():
        for name, info in model.model_fields.items():
            assert info.description and info.description.strip(), f"{group}.{name} has no description"
            assert SETTING_GROUPS[name] == group
