"""int8 dynamic quantisation of an ONNX export (setting ``embedding_precision='int8'``):
the encoder's MatMul weights become int8 with per-channel scales (``onnxruntime.quantization.quantize_dynamic``),
activations are quantised per batch at run time. On 2 cores all-MiniLM-L6-v2 runs ~1.6x faster, its vectors at
cosine ~0.99 to fp32 (worst ~0.97); retrieval recall: docs/benchmarks.md#int8-embeddings-embedding_precision
(benchmarks/layer_ablation.py).

The quantised file sits beside the export, ``<export stem>-int8.onnx``, written once (to a temporary name,
then renamed, under a file lock) and reused. Its vectors differ from fp32 ones, so the embedder reports the
model as ``<name>@int8``: the embedding cache keeps the two apart."""

from __future__ import annotations

from pathlib import Path

from kbgraph.errors import ConfigError
from kbgraph.embed.onnx_export import write_once

__all__ = ["INT8_SUFFIX", "quantize_int8", "quantized_path"]

INT8_SUFFIX = "@int8"


def quantized_path(onnx_path: str | Path) -> Path:
    """Where the int8 file of the export ``onnx_path`` lives: ``<stem>-int8.onnx`` in the same folder."""
    p = Path(onnx_path)
    return p.with_name(f"{p.stem}-int8.onnx")


def quantize_int8(onnx_path: str | Path, *, lock_timeout: float = 600.0) -> Path:
    """The int8 file of the fp32 export ``onnx_path`` (written on first use; ~5 s). ConfigError if
    onnxruntime's quantisation tools are missing or another process holds the lock for ``lock_timeout`` s."""
    out = quantized_path(onnx_path)
    if out.is_file():
        return out
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise ConfigError(
            f"embedding_precision 'int8' needs onnxruntime with its quantization tools "
            f"(pip install onnxruntime onnx) ({exc}); or set KBGRAPH_EMBEDDING_PRECISION=fp32"
        ) from exc

    def write(tmp: Path) -> None:
        quantize_dynamic(str(onnx_path), str(tmp), weight_type=QuantType.QInt8, per_channel=True)

    return write_once(out, write, "quantising", lock_timeout)
