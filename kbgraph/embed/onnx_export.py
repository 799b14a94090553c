"""The one-time export of a sentence-transformers encoder to ONNX with torch (``export_onnx``), checked against
torch on a few sentences before it is used (cosine >= ``EXPORT_MIN_COSINE``). See ``kbgraph.embed.onnx_model``
for which models qualify and where the file goes."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kbgraph.embed.base import normalise
from kbgraph.embed.onnx_model import ModelSpec, load_tokenizer, pad_batch, pool, prepare_texts, read_model_spec
from kbgraph.embed.onnx_runtime import open_session
from kbgraph.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["EXPORT_MIN_COSINE", "OPSET", "export_onnx", "write_once"]

log = logging.getLogger("kbgraph.embed_onnx")  # the name it had before the kbgraph.embed package

OPSET = 17
#: Export check: every probe sentence's ONNX vector must have at least this cosine to the torch vector.
EXPORT_MIN_COSINE = 0.9999
_PROBES = [
    "Who directed the film Sleep, My Love?",
    "Douglas Sirk",
    "The Journal of Mathematical Physics is a monthly peer-reviewed journal published by the American "
    "Institute of Physics.",
    "",
]


def export_onnx(model_dir: str | Path, out_path: str | Path, *, lock_timeout: float = 600.0) -> Path:
    """Export the encoder of the sentence-transformers model at ``model_dir`` to ``out_path`` (ONNX opset 17,
    dynamic batch and sequence axes; output ``last_hidden_state``) unless that file exists. Imports torch.

    The file appears atomically (written to a temporary name in the same folder, checked against torch on a
    few sentences, then renamed); a file lock beside it keeps two processes from exporting at once (the
    second waits and reuses the first's file). Returns ``out_path``."""
    out_path = Path(out_path)
    if out_path.is_file():
        return out_path
    spec = read_model_spec(model_dir)
    out_path.parent.mkdir(parents=True, exist_ok=True)

    def write(tmp: Path) -> None:
        t0 = time.perf_counter()
        _export(spec, tmp)
        log.info("exported %s to %s in %.1f s", spec.folder, out_path, time.perf_counter() - t0)

    return write_once(out_path, write, "exporting", lock_timeout)


def write_once(out_path: Path, write: Callable[[Path], None], doing: str, lock_timeout: float) -> Path:
    """Make ``out_path`` unless it exists: ``write(tmp)`` fills a temporary file in the same folder, which is
    then renamed, under a file lock beside it (a second process waits and reuses the first's file).
    ConfigError naming the lock after ``lock_timeout`` s; ``doing`` names the work in that message."""
    from filelock import FileLock, Timeout

    try:
        with FileLock(str(out_path) + ".lock", timeout=lock_timeout):
            if out_path.is_file():  # another process made it while we waited
                return out_path
            tmp = out_path.with_name(f".{out_path.stem}.{os.getpid()}.{threading.get_ident()}.tmp.onnx")
            try:
                write(tmp)
                os.replace(tmp, out_path)
            finally:
                tmp.unlink(missing_ok=True)
    except Timeout as exc:
        raise ConfigError(
            f"another process has been {doing} {out_path} for {lock_timeout:.0f} s; "
            f"remove {out_path}.lock if no kbgraph process is running"
        ) from exc
    return out_path


def _export(spec: ModelSpec, path: Path) -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise ConfigError(
            f"exporting the embedding model to ONNX needs torch and transformers: pip install 'kbgraph[ingest]' ({exc})"
        ) from exc
    try:
        import onnx  # noqa: F401 - torch.onnx.export needs it
    except ImportError as exc:
        raise ConfigError(
            f"exporting the embedding model to ONNX needs the onnx package: pip install 'kbgraph[ingest]' ({exc})"
        ) from exc
    import inspect
    import warnings

    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except Exception:  # noqa: BLE001 - cosmetic
        pass
    # Eager attention: the traced graph then applies the attention mask as plain tensor ops (SDPA/flash
    # paths may skip the mask when the tracing batch has no padding, which would bake that in).
    model = AutoModel.from_pretrained(str(spec.transformer_dir), attn_implementation="eager", dtype=torch.float32)
    model.eval()
    accepted = inspect.signature(model.forward).parameters
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if "token_type_ids" in accepted else [])

    class _Encoder(torch.nn.Module):  # type: ignore[misc]  # torch is not analysed (pyproject.toml [tool.mypy])
        def __init__(self, inner: torch.nn.Module):
            super().__init__()
            self.inner = inner

        def forward(self, *args: torch.Tensor) -> torch.Tensor:
            hidden: torch.Tensor = self.inner(**dict(zip(names, args, strict=True))).last_hidden_state
            return hidden

    tok = load_tokenizer(spec)
    # a batch with padding in it, so that the masking path is what gets traced
    feeds = pad_batch(tok.encode_batch(prepare_texts(spec, _PROBES[:2])), spec.pad_token_id)
    args = tuple(torch.from_numpy(feeds[k]) for k in names)
    axes = {k: {0: "batch", 1: "sequence"} for k in [*names, "last_hidden_state"]}
    encoder = _Encoder(model).eval()  # (the exporter restores the wrapper's mode onto the model: dropout!)
    with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TracerWarnings about shape-dependent Python branches
        torch.onnx.export(
            encoder,
            args,
            str(path),
            dynamo=False,
            opset_version=OPSET,
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            do_constant_folding=True,
        )
        # check the exported graph against torch on a padded batch of varied lengths
        probe = pad_batch(tok.encode_batch(prepare_texts(spec, _PROBES)), spec.pad_token_id)
        encoder.eval()
        ref_hidden = encoder(*(torch.from_numpy(probe[k]) for k in names)).numpy()
    ref = _unit(pool(ref_hidden, probe["attention_mask"], spec.pooling))
    session = open_session(path, threads=1)
    got_hidden = session.run(None, {k: probe[k] for k in names})[0]
    got = _unit(pool(got_hidden, probe["attention_mask"], spec.pooling))
    cos = float((ref * got).sum(axis=1).min())
    if not cos >= EXPORT_MIN_COSINE:
        raise ConfigError(
            f"the ONNX export of {spec.folder} does not match torch (cosine {cos:.6f}); "
            "set KBGRAPH_EMBEDDING_BACKEND=torch"
        )


def _unit(vectors: np.ndarray) -> np.ndarray:
    return normalise(vectors, vectors.shape[1])
