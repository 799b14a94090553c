"""Static embeddings for short texts (issue 15 direction 3, kbgraph.embed.static_model, setting static_layers):
the model2vec model distilled from the packaged all-MiniLM-L6-v2, built once and reloaded from disk; a knowledge
base whose Entity and Triple vectors come from it, on both stores, seeded at query time with the question's
vector from the same static model (and the other layers with the transformer's)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from kbgraph.embed import static_model
from kbgraph.embed.static_model import StaticEmbedder, build_static_model, get_static_embedder, static_model_dir
from kbgraph.errors import ConfigError
from kbgraph.kb import KnowledgeBase
from kbgraph.query.propagation import seeding
from kbgraph.query.propagation.seeding import seed_layers
from kbgraph.settings import VECTOR_LAYER_CHOICES, Settings
from kbgraph.store import backend_name

from tests.musique_sample import musique_sample

STATIC = ["Entity", "Triple"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, Path]:
    """(settings of a fresh home, the static model's folder): the suite's folder (KBGRAPH_STATIC_MODELS_DIR,
    tests/conftest.py), which the session's first test that needs it distils, on a fresh machine here or in the
    first ingestion, under the file lock every other test and process then waits on: one distillation a session."""
    settings = Settings(home=tmp_path_factory.mktemp("static-home"))
    teacher, out = static_model_dir(settings)
    assert out.parent == Path(os.environ["KBGRAPH_STATIC_MODELS_DIR"])
    assert build_static_model(teacher, out) == out and (out / "config.json").is_file()
    return settings, out


@pytest.mark.slow  # `built` distils the static model on a fresh machine (~10 s quiet, minutes on 2 busy cores)
def test_static_embedder_shapes_determinism_and_built_once(built: tuple[Settings, Path]) -> None:
    settings, out = built
    static_model._CACHE.clear()
    stamp = (out / "config.json").stat().st_mtime_ns
    emb = get_static_embedder(settings)
    assert isinstance(emb, StaticEmbedder) and emb.model_name == "all-MiniLM-L6-v2+static"
    texts = ["Barack Obama", "Honolulu Hawaii birthplace", "photosynthesis in plants", "", "Barack Obama"]
    v = emb.embed(texts)
    assert v.shape == (5, 384) and v.dtype == np.float32 and v.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(v[[0, 1, 2]], axis=1), 1.0, atol=1e-5)
    assert np.array_equal(v[0], v[4]) and np.array_equal(v, emb.embed(texts))  # deterministic
    assert not v[3].any()  # no token: the zero vector, not NaN
    assert emb.embed([]).shape == (0, 384)
    assert float(v[0] @ emb.embed(["Obama"])[0]) > float(v[0] @ v[2])  # a static model, still semantic
    static_model._CACHE.clear()
    assert get_static_embedder(settings) is not emb  # a new load ...
    assert (out / "config.json").stat().st_mtime_ns == stamp  # ... of the same folder: not distilled again


@pytest.mark.slow  # as above: `built`
def test_the_folder_loads_as_model2vec_loads_it(built: tuple[Settings, Path]) -> None:
    """static_model.load_folder (no huggingface_hub import: the cold ask's time) gives the model and the vectors
    model2vec's own from_pretrained gives for the same folder: tokens, config, normalisation, truncation."""
    from model2vec import StaticModel

    _, out = built
    ours, theirs = static_model.load_folder(out), StaticModel.from_pretrained(str(out))
    assert ours.tokens == theirs.tokens and ours.dim == theirs.dim
    assert (ours.normalize, ours.max_length, ours.config) == (theirs.normalize, theirs.max_length, theirs.config)
    texts = ["Barack Obama", "Where was the director of Alpha Film born?", "unknownword zzzq", "", "a " * 600]
    assert np.array_equal(ours.encode(texts), theirs.encode(texts))


def test_errors_name_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="KBGRAPH_STATIC_LAYERS"):
        static_model_dir(Settings(home=tmp_path, embedding_model="openai:text-embedding-3-small"))
    teacher = tmp_path / "broken-model"
    teacher.mkdir()
    (teacher / "config.json").write_text("{}", encoding="utf-8")
    out = tmp_path / "models" / "broken-static"
    with pytest.raises(ConfigError, match="building a static model .* failed.*KBGRAPH_STATIC_LAYERS"):
        build_static_model(teacher, out)
    assert not out.exists() and not [p for p in out.parent.iterdir() if p.name.endswith(".tmp")]  # nothing left


def test_setting_parses_and_only_counts_vector_layers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KBGRAPH_STATIC_LAYERS", raising=False)
    assert Settings().embedding.static_vector_layers == {"Entity"}  # the default
    monkeypatch.setenv("KBGRAPH_STATIC_LAYERS", "Entity, Triple")
    assert Settings().embedding.static_vector_layers == {"Entity"}  # Triple has no vectors by default
    monkeypatch.setenv("KBGRAPH_VECTOR_LAYERS", "AtomicQuestion,Triple,Entity")
    assert Settings().embedding.static_vector_layers == {"Entity", "Triple"}
    monkeypatch.delenv("KBGRAPH_VECTOR_LAYERS")
    assert Settings(vector_layers=["AtomicQuestion", "Entity"]).embedding.static_vector_layers == {"Entity"}
    assert not Settings(
        embedding_model="openai:text-embedding-3-small"
    ).embedding.static_vector_layers  # nothing to build from
    monkeypatch.setenv("KBGRAPH_STATIC_LAYERS", "")
    assert not Settings().embedding.static_vector_layers
    monkeypatch.setenv("KBGRAPH_STATIC_LAYERS", "Entity,Enitty")
    with pytest.raises(ValueError, match="unknown vector layer 'Enitty'"):
        Settings()


@pytest.fixture(scope="module")
def corpus(examples_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """12 MuSiQue passages (the gold passages of the first questions first) and those questions."""
    return musique_sample(examples_dir, tmp_path_factory.mktemp("static-corpus"), 12, 3)


@pytest.mark.slow  # `built`: the static model
def test_static_layers_ingested_and_seeded_with_the_static_model(
    backend_settings: Settings,
    corpus: tuple[Path, list[str]],
    built: tuple[Settings, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = backend_settings.updated({"static_layers": STATIC, "vector_layers": list(VECTOR_LAYER_CHOICES)})
    kb = KnowledgeBase(settings=settings)
    kb.reset()
    try:
        report = kb.ingest([corpus[0]], progress=False)
        assert report.added == 12 and report.failed == 0
        static = get_static_embedder(settings)
        # Neo4j 5.26's vector indexes score on quantised vectors (vector.quantization.enabled, default on)
        tol = 2e-3 if backend_name(settings) == "falkordb" else 0.03
        question = corpus[1][0]
        q_static, q_model = static.embed([question])[0], kb.embedder.embed([question])[0]
        seeds = seed_layers(kb.store, settings, question, q_model.tolist())
        for label in STATIC:  # stored vectors = the static model's; seeded with the static question vector
            hits = seeds.layers[label]
            assert hits, label
            ids, texts = list(hits), [text for _, text in hits.values()]
            stored = static.embed(texts)
            for node_id, vec in zip(ids, stored, strict=True):
                assert hits[node_id][0] == pytest.approx(max(0.0, float(vec @ q_static)), abs=tol), label
            exact = kb.store.vector_search(label, stored[0].tolist(), k=1)[0]
            assert exact.score == pytest.approx(1.0, abs=tol)  # the node's own vector is the static one
        # the other layers: the transformer's vectors, as before (Document: titles embedded on their own; the
        # sentence tags are pooled from their chunk's pass, late_chunking: tests/test_late_chunking.py)
        docs = seeds.layers["Document"]
        node_id, (score, text) = next(iter(docs.items()))
        assert score == pytest.approx(float(kb.embedder.embed([text])[0] @ q_model), abs=tol)
        plain = seed_layers(kb.store, settings.updated({"static_layers": []}), question, q_model.tolist())
        assert plain.layers["Entity"] != seeds.layers["Entity"]  # the switch is what made the difference
        # a static layer seeded alone (the hierarchical method's way) gets its static vector too; the Chunk layer
        # alone (the dense baseline) makes none: the static model is not asked
        alone = seed_layers(kb.store, settings, question, q_model.tolist(), layers=["Entity"]).layers["Entity"]
        assert alone.keys() == seeds.layers["Entity"].keys()
        assert [sim for sim, _ in alone.values()] == pytest.approx(
            [seeds.layers["Entity"][e][0] for e in alone], abs=tol
        )

        def no_static(*_: object) -> None:
            raise AssertionError("the static model was asked for a layer without static vectors")

        monkeypatch.setattr(seeding, "get_static_embedder", no_static)
        assert seed_layers(kb.store, settings, question, q_model.tolist(), layers=["Chunk"]).layers["Chunk"]
    finally:
        kb.close()


def test_static_model_dir_is_remembered_until_the_weights_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every question with static layers asks for the static model's folder: the model's spec is read once
    per process, and again when the teacher's weights file changes (size or modification time)."""
    from kbgraph.embed.sentence import packaged_model_path

    teacher = tmp_path / "teacher"
    teacher.mkdir()
    for item in packaged_model_path().iterdir():  # type: ignore[union-attr]
        if item.name != "model.safetensors":
            (teacher / item.name).symlink_to(item)
    shutil.copyfile(packaged_model_path() / "model.safetensors", teacher / "model.safetensors")  # type: ignore[operator]
    reads = []
    real = static_model.read_model_spec  # type: ignore[attr-defined]
    monkeypatch.setattr(static_model, "read_model_spec", lambda folder: reads.append(folder) or real(folder))  # type: ignore[func-returns-value]
    settings = Settings(home=tmp_path, embedding_model=str(teacher))
    first = static_model_dir(settings)
    assert static_model_dir(settings) == first and len(reads) == 1
    with open(teacher / "model.safetensors", "r+b") as f:  # new weights: one byte differs
        f.seek(1000)
        b = f.read(1)
        f.seek(1000)
        f.write(bytes([b[0] ^ 1]))
    os.utime(teacher / "model.safetensors", ns=(1, 1))
    second = static_model_dir(settings)
    assert len(reads) == 2 and second[1] != first[1]  # another hash, another static model folder
