"""Setting ``embedding_precision='int8'`` (issue 15, direction 4; kbgraph.embed.onnx_quant): the ONNX export
quantised once beside itself, vectors close to fp32, reported under another model name so that the embedding
cache never hands an fp32 vector to an int8 knowledge base or back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

import numpy as np

from kbgraph.embed import get_embedder, make_embedder, onnx_model_path
from kbgraph.embed.cache import CachedEmbedder
from kbgraph.embed.onnx_quant import quantized_path
from kbgraph.embed.onnx_runtime import OnnxEmbedder
from kbgraph.settings import Settings


def test_int8_embedder_quantises_once_and_stays_close_to_fp32(
    falkor_settings: Settings, examples_dir: Path, tmp_path: Path
) -> None:
    passages = [
        json.loads(x) for x in (examples_dir / "multihop" / "musique" / "hipporag_train100.corpus.jsonl").open()
    ][:24]
    texts = [p["title"] for p in passages] + [p["text"] for p in passages]
    fp32_settings = falkor_settings.updated({"embedding_backend": "onnx"})
    int8_settings = fp32_settings.updated({"embedding_precision": "int8"})
    fp32, int8 = make_embedder(fp32_settings), cast(OnnxEmbedder, make_embedder(int8_settings))
    export = onnx_model_path(fp32_settings)
    assert int8.onnx_path == quantized_path(export) and int8.onnx_path.is_file() and export.is_file()  # type: ignore[arg-type, union-attr]
    assert int8.model_name == fp32.model_name + "@int8"
    mtime = int8.onnx_path.stat().st_mtime_ns
    assert (
        cast(OnnxEmbedder, make_embedder(int8_settings)).onnx_path.stat().st_mtime_ns == mtime
    )  # reused, not rewritten

    a, b = fp32.embed(texts), int8.embed(texts)
    assert b.shape == a.shape and b.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    cos = (a * b).sum(axis=1)
    assert cos.min() > 0.97 and cos.mean() > 0.985, (cos.min(), cos.mean())
    assert not np.allclose(a, b, atol=1e-4)  # really another model

    assert get_embedder(int8_settings) is not get_embedder(fp32_settings)
    cache = tmp_path / "cache.sqlite"
    CachedEmbedder(fp32, cache).embed(texts[:3])
    cached = CachedEmbedder(int8, cache)
    np.testing.assert_array_equal(cached.embed(texts[:3]), int8.embed(texts[:3]))  # int8's, not the cached fp32
    assert cached.misses == 3 and cached.hits == 0
