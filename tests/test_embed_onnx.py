"""The ONNX Runtime embedding backend against the torch one, on the real all-MiniLM-L6-v2 and real 2Wiki text.

One export per session, into a temporary home, made the way a first ingestion with late chunking off makes it:
backend 'auto' with no export loads torch and writes the export after loading the model (with late chunking on,
the default, 'auto' exports before the first embedding: ``test_auto_with_late_chunking_exports_first``)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from kbgraph.errors import ConfigError
from kbgraph.settings import Settings

if TYPE_CHECKING:
    from kbgraph.embed import OnnxEmbedder, SentenceTransformerEmbedder

#: (torch embedder, its vectors of ``sentences``, the export path)
TorchRun = tuple["SentenceTransformerEmbedder", np.ndarray, Path]

# torch loads the model and exports it to ONNX in a home of this module's own (~100 s of CPU on 2 cores)
pytestmark = pytest.mark.slow

QUESTION = "Who directed the film Sleep, My Love?"


@pytest.fixture(scope="session")
def sentences(examples_dir: Path) -> list[str]:
    """50 real sentences of different lengths from the 2Wiki corpus (plus titles, which are short)."""
    out: list[str] = []
    with open(examples_dir / "multihop/2wikimultihopqa/dev500.corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            out.append(row["title"])
            out.extend(s for s in re.split(r"(?<=[.!?])\s+", row["text"]) if len(s) > 10)
            if len(out) >= 50:
                break
    out = out[:49] + [" ".join(out[:40])]  # and one longer than max_seq_length (truncated)
    assert len(out) == 50 and len(set(out)) > 40
    return out


@pytest.fixture(scope="session")
def onnx_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-home")


@pytest.fixture(scope="session")
def torch_run(onnx_home: Path, sentences: list[str]) -> TorchRun:
    """(torch embedder, its vectors of ``sentences``, the export path): backend 'auto' before any export."""
    from kbgraph.embed import SentenceTransformerEmbedder, make_embedder, onnx_model_path

    settings = Settings(home=onnx_home, embedding_backend="auto", late_chunking=False)
    path = onnx_model_path(settings)
    assert path is not None and path.parent == onnx_home / "models" and not path.exists()
    assert re.fullmatch(r"all-MiniLM-L6-v2-[0-9a-f]{16}\.onnx", path.name)
    embedder = make_embedder(settings)
    assert isinstance(embedder, SentenceTransformerEmbedder)
    vectors = embedder.embed(sentences)  # loads torch, then exports
    assert path.is_file()
    return embedder, vectors, path


@pytest.fixture(scope="session")
def onnx_embedder(torch_run: TorchRun, onnx_home: Path) -> OnnxEmbedder:
    from kbgraph.embed import make_embedder
    from kbgraph.embed import OnnxEmbedder

    embedder = make_embedder(Settings(home=onnx_home, embedding_backend="auto"))
    assert isinstance(embedder, OnnxEmbedder) and embedder.onnx_path == torch_run[2]
    return embedder


def test_onnx_matches_torch(torch_run: TorchRun, onnx_embedder: OnnxEmbedder, sentences: list[str]) -> None:
    _, ref, _ = torch_run
    got = onnx_embedder.embed(sentences)
    assert got.shape == ref.shape == (50, 384) and got.dtype == np.float32
    cos = (ref * got).sum(axis=1)
    assert cos.min() >= 0.9999, (cos.argmin(), cos.min())
    # small batches sorted by length: same rows, same order
    from kbgraph.embed import OnnxEmbedder

    small = OnnxEmbedder(onnx_embedder.onnx_path, onnx_embedder.spec.folder, batch_size=7, threads=1)
    assert np.allclose(small.embed(sentences), got, atol=2e-5)
    tight = OnnxEmbedder(onnx_embedder.onnx_path, onnx_embedder.spec.folder, batch_tokens=60, threads=1)
    assert np.allclose(tight.embed(sentences), got, atol=2e-5)  # token-capped batches (the long one alone)
    assert np.allclose(onnx_embedder.embed([sentences[3]])[0], got[3], atol=2e-5)


def test_onnx_shape_dtype_norm_empty(onnx_embedder: OnnxEmbedder) -> None:
    v = onnx_embedder.embed([QUESTION, "", "  Douglas Sirk  ", "x" * 5000])
    assert v.shape == (4, 384) and v.dtype == np.float32 and v.flags.c_contiguous
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    empty = onnx_embedder.embed([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32
    assert onnx_embedder.dimension == 384 and onnx_embedder.model_name == "all-MiniLM-L6-v2"
    a, b, c = onnx_embedder.embed(
        [
            QUESTION,
            "Which director made the movie Sleep, My Love?",
            "The Journal of Mathematical Physics is published monthly.",
        ]
    )
    assert float(a @ b) > 0.7 > float(a @ c)


def test_export_is_reused(torch_run: TorchRun, onnx_home: Path) -> None:
    from kbgraph.embed import make_embedder
    from kbgraph.embed import OnnxEmbedder, export_onnx

    path = torch_run[2]
    before = path.stat().st_mtime_ns
    assert export_onnx(_packaged(), path) == path
    onnx = make_embedder(Settings(home=onnx_home, embedding_backend="onnx"))
    assert isinstance(onnx, OnnxEmbedder) and onnx.onnx_path == path
    assert path.stat().st_mtime_ns == before
    assert not list(path.parent.glob("*.tmp*"))  # the temporary file was renamed, nothing left behind


def _packaged() -> Path:
    from kbgraph.embed import packaged_model_path

    path = packaged_model_path()
    assert path is not None
    return path


def test_auto_with_late_chunking_exports_first(
    torch_run: TorchRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Late chunking (the default) needs the ONNX embedder's token states: under 'auto' a fresh home exports
    before the first embedding instead of after a torch load; a failed export is remembered and stays on torch;
    late chunking off keeps torch-first. (The exporter itself is the session's real one in ``torch_run``; here it
    copies that file, so only the decision is under test.)"""
    import shutil

    from kbgraph.embed import OnnxEmbedder, SentenceTransformerEmbedder, make_embedder, onnx_model_path
    from kbgraph.embed import onnx_export

    exported: list[Path] = []

    def copy_export(folder: Path, path: Path) -> Path:
        exported.append(path)
        shutil.copyfile(torch_run[2], path)
        return path

    monkeypatch.setattr(onnx_export, "export_onnx", copy_export)
    off = tmp_path / "off"
    assert isinstance(
        make_embedder(Settings(home=off, embedding_backend="auto", late_chunking=False)), SentenceTransformerEmbedder
    )
    assert exported == [] and not onnx_model_path(Settings(home=off)).exists()  # type: ignore[union-attr]

    on = Settings(home=tmp_path / "on", embedding_backend="auto")
    assert on.embedding.late_chunking is True  # the default
    path = onnx_model_path(on)
    path.parent.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
    e = make_embedder(on)
    assert isinstance(e, OnnxEmbedder) and e.onnx_path == path and exported == [path]
    assert e.can_embed_spans

    def broken(folder: Path, path: Path) -> Path:
        raise RuntimeError("exporter crashed")

    monkeypatch.setattr(onnx_export, "export_onnx", broken)
    bad = Settings(home=tmp_path / "bad", embedding_backend="auto")
    onnx_model_path(bad).parent.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
    with caplog.at_level("WARNING", logger="kbgraph.embed"):
        assert isinstance(make_embedder(bad), SentenceTransformerEmbedder)
    failed = onnx_model_path(bad).with_name(onnx_model_path(bad).name + ".failed")  # type: ignore[union-attr]
    assert "exporter crashed" in failed.read_text() and "staying on torch" in caplog.text
    monkeypatch.setattr(onnx_export, "export_onnx", copy_export)  # remembered: not tried again
    assert isinstance(make_embedder(bad), SentenceTransformerEmbedder) and exported == [path]


def test_torch_backend_ignores_export(torch_run: TorchRun, onnx_home: Path) -> None:
    from kbgraph.embed import SentenceTransformerEmbedder, make_embedder

    assert isinstance(make_embedder(Settings(home=onnx_home, embedding_backend="torch")), SentenceTransformerEmbedder)
    with pytest.raises(ValueError):
        Settings(embedding_backend="tensorrt")


def test_cold_process_uses_onnx_without_torch(
    torch_run: TorchRun, onnx_embedder: OnnxEmbedder, onnx_home: Path, tmp_path: Path
) -> None:
    code = textwrap.dedent("""
        import sys, time
        t = time.perf_counter()
        from kbgraph.embed import get_embedder
        e = get_embedder()
        v = e.embed([sys.argv[1]])
        print(type(e).__name__, round(time.perf_counter() - t, 2), 'torch' in sys.modules,
              'sentence_transformers' in sys.modules, 'transformers' in sys.modules)
        print(' '.join(repr(float(x)) for x in v[0]))
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KBGRAPH_")}
    env.update(
        KBGRAPH_HOME=str(onnx_home), KBGRAPH_EMBEDDING_BACKEND="auto", KBGRAPH_CONFIG=str(tmp_path / "none.toml")
    )
    out = subprocess.run(
        [sys.executable, "-c", code, QUESTION], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert out.returncode == 0, out.stderr
    head, vec = out.stdout.strip().splitlines()
    kind, _secs, torch_loaded, st_loaded, tf_loaded = head.split()
    assert (kind, torch_loaded, st_loaded, tf_loaded) == ("OnnxEmbedder", "False", "False", "False")
    v = np.array([float(x) for x in vec.split()], dtype=np.float32)
    assert np.allclose(v, onnx_embedder.embed([QUESTION])[0], atol=1e-5)


def test_export_waits_for_the_lock(tmp_path: Path) -> None:
    from filelock import FileLock

    from kbgraph.embed import export_onnx

    out = tmp_path / "m.onnx"
    with FileLock(str(out) + ".lock"):
        with pytest.raises(ConfigError, match="another process"):
            export_onnx(_packaged(), out, lock_timeout=0.2)
    assert not out.exists()


def test_unsupported_model_stays_on_torch(tmp_path: Path) -> None:
    from kbgraph.embed import SentenceTransformerEmbedder, make_embedder
    from kbgraph.embed import UnsupportedModelError, read_model_spec

    folder = tmp_path / "dense-model"
    folder.mkdir()
    (folder / "modules.json").write_text(
        json.dumps(
            [
                {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
            ]
        )
    )
    with pytest.raises(UnsupportedModelError, match="Dense"):
        read_model_spec(folder)
    e = make_embedder(Settings(home=tmp_path, embedding_model=str(folder), embedding_backend="auto"))
    assert isinstance(e, SentenceTransformerEmbedder)  # (not loaded)
    with pytest.raises(ConfigError, match="cannot run on ONNX"):
        make_embedder(Settings(home=tmp_path, embedding_model=str(folder), embedding_backend="onnx"))


def test_pooling_modes() -> None:
    from kbgraph.embed import pool

    hidden = np.arange(2 * 3 * 2, dtype=np.float32).reshape(2, 3, 2)  # rows: [[0,1],[2,3],[4,5]], [[6,7],...]
    mask = np.array([[1, 1, 0], [1, 1, 1]])
    assert np.allclose(pool(hidden, mask, ["mean"]), [[1, 2], [8, 9]])
    assert np.allclose(pool(hidden, mask, ["cls"]), [[0, 1], [6, 7]])
    assert np.allclose(pool(hidden, mask, ["max"]), [[2, 3], [10, 11]])
    assert np.allclose(pool(hidden, mask, ["lasttoken"]), [[2, 3], [10, 11]])
    assert np.allclose(
        pool(hidden, mask, ["mean_sqrt_len_tokens"]), [[2 / 2**0.5, 4 / 2**0.5], [24 / 3**0.5, 27 / 3**0.5]]
    )
    assert pool(hidden, mask, ["cls", "mean"]).shape == (2, 4)


def test_import_stays_cheap() -> None:
    code = (
        "import sys, kbgraph.embed; "
        "print(sorted(m for m in ('torch', 'onnxruntime', 'tokenizers', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
