"""ONNX Runtime backend for sentence-transformers models (no torch at query time).

``import torch`` alone takes 8-11 s here, so a cold ``kbgraph ask`` spent most of its time importing torch to
embed one question. A sentence-transformers model made of a Hugging Face encoder, a ``Pooling`` module and an
optional ``Normalize`` module (all-MiniLM-L6-v2, bge, e5, gte, mpnet...) is exported once with torch to
``<home>/models/<model-name>-<weights hash>.onnx`` (``export_onnx``) and then run by ``OnnxEmbedder``:
tokenised with the ``tokenizers`` library from the model folder's ``tokenizer.json`` (no transformers import),
the encoder run by onnxruntime on CPU, and the pooling of ``1_Pooling/config.json`` applied in numpy, then
L2-normalised. Vectors match the torch ones to cosine >= 0.9999.

The file name carries a hash of the model's weights file, so changed weights get a new export; the hash is
remembered in ``<home>/models/weights-sha256.json`` (keyed by path, size and mtime) so a cold process does
not re-read the 90 MB weights each time.

Models with other modules (Dense, a prompt excluded from pooling, images...) raise ``UnsupportedModelError``
from ``read_model_spec``; ``kbgraph.embed.get_embedder`` then keeps the torch backend.

This module reads a model folder (``ModelSpec``), names the export, and holds the numpy tokenising and pooling
shared by the embedder (``onnx_runtime``) and the export check (``onnx_export``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kbgraph.errors import ConfigError
from kbgraph.home import MODELS

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

__all__ = [
    "ModelSpec",
    "UnsupportedModelError",
    "load_tokenizer",
    "models_dir",
    "onnx_path_for",
    "pad_batch",
    "pool",
    "prepare_texts",
    "read_model_spec",
    "safe_model_name",
    "weights_hash",
]

log = logging.getLogger("kbgraph.embed_onnx")  # the name it had before the kbgraph.embed package

#: Pooling modes of sentence-transformers' Pooling module, in the order it concatenates them.
_POOLING_ORDER = ("cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken")
_LEGACY_POOLING_KEYS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
_HASH_MEMO = "weights-sha256.json"


class UnsupportedModelError(ConfigError):
    """The model folder is not a plain encoder + Pooling (+ Normalize) sentence-transformers model."""


@dataclass(frozen=True)
class ModelSpec:
    """What ``OnnxEmbedder`` needs to reproduce a sentence-transformers model's ``encode``."""

    folder: Path  # the sentence-transformers model folder (modules.json)
    transformer_dir: Path  # the Hugging Face encoder folder (config.json, tokenizer.json, weights)
    weights: Path
    max_seq_length: int | None
    do_lower_case: bool
    pooling: tuple[str, ...]
    hidden_size: int
    pad_token_id: int
    prompt: str  # the default prompt prepended to every text ('' for none)

    @property
    def dimension(self) -> int:
        return self.hidden_size * len(self.pooling)


def _read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _pooling_modes(config: dict[str, Any]) -> tuple[str, ...]:
    mode = config.get("pooling_mode")
    if mode is None:
        modes = tuple(m for key, m in _LEGACY_POOLING_KEYS.items() if config.get(key))
        modes = modes or ("mean",)
    else:
        modes = (mode,) if isinstance(mode, str) else tuple(mode)
    for m in modes:
        if m not in _POOLING_ORDER:
            raise UnsupportedModelError(f"pooling mode {m!r} is not supported by the ONNX backend")
    return modes


def read_model_spec(folder: str | Path) -> ModelSpec:
    """Read a sentence-transformers model folder; UnsupportedModelError unless it is an encoder, a Pooling
    module and optionally a Normalize module, with a fast tokenizer (tokenizer.json) and a weights file."""
    folder = Path(folder)
    try:
        modules = _read_json(folder / "modules.json")
    except (OSError, ValueError) as exc:
        raise UnsupportedModelError(f"{folder} has no readable modules.json ({exc})") from exc
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise UnsupportedModelError(f"modules {kinds} of {folder} are not Transformer, Pooling[, Normalize]")
    transformer_dir = folder / (modules[0].get("path") or "")
    pooling_config = _read_json(folder / (modules[1].get("path") or "") / "config.json")
    pooling = _pooling_modes(pooling_config)

    sbert: dict[str, Any] = {}
    for name in ("sentence_bert_config.json", "sentence_xlnet_config.json"):
        if (transformer_dir / name).is_file():
            sbert = _read_json(transformer_dir / name)
            break
    config = _read_json(transformer_dir / "config.json")
    if config.get("is_encoder_decoder") or "text_config" in config:
        raise UnsupportedModelError(f"{folder} is not a text encoder")
    hidden = int(config.get("hidden_size") or config.get("dim") or config.get("d_model") or 0)
    declared = pooling_config.get("word_embedding_dimension") or pooling_config.get("embedding_dimension")
    if declared and hidden and int(declared) != hidden:
        raise UnsupportedModelError(f"{folder}: pooling dimension {declared} != hidden size {hidden}")
    hidden = hidden or int(declared or 0)
    if not hidden:
        raise UnsupportedModelError(f"{folder}: unknown hidden size")
    if not (transformer_dir / "tokenizer.json").is_file():
        raise UnsupportedModelError(f"{transformer_dir} has no tokenizer.json (fast tokenizer)")
    weights = next((transformer_dir / n for n in _WEIGHT_FILES if (transformer_dir / n).is_file()), None)
    if weights is None:
        raise UnsupportedModelError(f"{transformer_dir} has no single weights file ({', '.join(_WEIGHT_FILES)})")

    max_len = sbert.get("max_seq_length")
    if max_len is None:  # sentence-transformers: the tokenizer's limit, capped by the position embeddings
        tok_cfg = (
            _read_json(transformer_dir / "tokenizer_config.json")
            if (transformer_dir / "tokenizer_config.json").is_file()
            else {}
        )
        limits = [
            int(v)
            for v in (tok_cfg.get("model_max_length"), config.get("max_position_embeddings"))
            if isinstance(v, int | float) and v < 1_000_000
        ]
        max_len = min(limits) if limits else None

    tok_json = _read_json(transformer_dir / "tokenizer.json")
    pad_id = (tok_json.get("padding") or {}).get("pad_id")
    if pad_id is None:
        pad_id = config.get("pad_token_id")
    if pad_id is None:
        pad_id = 0

    prompt = ""
    st_cfg_path = folder / "config_sentence_transformers.json"
    if st_cfg_path.is_file():
        st_cfg = _read_json(st_cfg_path)
        default = st_cfg.get("default_prompt_name")
        if default:
            prompt = (st_cfg.get("prompts") or {}).get(default) or ""
    if prompt and pooling_config.get("include_prompt") is False:
        raise UnsupportedModelError(f"{folder} excludes its default prompt from pooling")
    return ModelSpec(
        folder=folder,
        transformer_dir=transformer_dir,
        weights=weights,
        max_seq_length=int(max_len) if max_len else None,
        do_lower_case=bool(sbert.get("do_lower_case")),
        pooling=pooling,
        hidden_size=hidden,
        pad_token_id=int(pad_id),
        prompt=prompt,
    )


# --- where the export lives ---------------------------------------------------------------------------------


def models_dir(home: str | Path) -> Path:
    return Path(home).expanduser() / MODELS


def weights_hash(weights: Path, memo_dir: Path | None = None) -> str:
    """sha256 (hex) of ``weights``, remembered in ``memo_dir``/weights-sha256.json by (path, size, mtime)."""
    weights = Path(weights).resolve()
    st = weights.stat()
    key = str(weights)
    stamp = [st.st_size, st.st_mtime_ns]
    memo_path = memo_dir / _HASH_MEMO if memo_dir is not None else None
    memo: dict[str, Any] = {}
    if memo_path is not None:
        try:
            memo = _read_json(memo_path)
            entry = memo.get(key)
            if isinstance(entry, dict) and entry.get("stamp") == stamp and entry.get("sha256"):
                return str(entry["sha256"])
        except (OSError, ValueError):
            memo = {}
    with open(weights, "rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
    if memo_path is not None:
        memo[key] = {"stamp": stamp, "sha256": digest}
        try:
            memo_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = memo_path.with_name(f".{memo_path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps(memo, indent=1), encoding="utf-8")
            os.replace(tmp, memo_path)
        except OSError as exc:  # a read-only home: hash again next time
            log.debug("cannot write %s: %s", memo_path, exc)
    return digest


def safe_model_name(name: str) -> str:
    """A file-name-safe form of a model name ('BAAI/bge-small-en-v1.5' -> 'BAAI--bge-small-en-v1.5')."""
    name = name.strip().rstrip("/\\")
    if os.sep in name or "/" in name:
        p = Path(name)
        name = p.name if p.is_dir() else name.replace("/", "--")
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "model"


def onnx_path_for(home: str | Path, model_name: str, spec: ModelSpec) -> Path:
    """``<home>/models/<model-name>-<first 16 hex digits of the weights' sha256>.onnx``."""
    mdir = models_dir(home)
    return mdir / f"{safe_model_name(model_name)}-{weights_hash(spec.weights, mdir)[:16]}.onnx"


# --- tokenising and pooling (numpy; shared by the embedder and the export check) ---------------------------


def load_tokenizer(spec: ModelSpec) -> Tokenizer:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(spec.transformer_dir / "tokenizer.json"))
    tok.no_padding()
    if spec.max_seq_length:
        tok.enable_truncation(max_length=spec.max_seq_length)  # counts the special tokens, as transformers does
    else:
        tok.no_truncation()
    return tok


def prepare_texts(spec: ModelSpec, texts: Sequence[str]) -> list[str]:
    out = [t if isinstance(t, str) else str(t) for t in texts]
    if spec.prompt:
        out = [spec.prompt + t for t in out]
    if spec.do_lower_case:
        out = [t.lower() for t in out]
    return out


def pad_batch(encodings: Sequence[Encoding], pad_id: int) -> dict[str, np.ndarray]:
    """input_ids, attention_mask and token_type_ids (int64, right-padded to the longest encoding)."""
    n = len(encodings)
    width = max(1, max(len(e.ids) for e in encodings))
    ids = np.full((n, width), pad_id, dtype=np.int64)
    mask = np.zeros((n, width), dtype=np.int64)
    types = np.zeros((n, width), dtype=np.int64)
    for i, e in enumerate(encodings):
        k = len(e.ids)
        ids[i, :k] = e.ids
        mask[i, :k] = e.attention_mask
        types[i, :k] = e.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def pool(hidden: np.ndarray, mask: np.ndarray, modes: Sequence[str]) -> np.ndarray:
    """sentence-transformers' Pooling over token embeddings (n, seq, h) with attention mask (n, seq)."""
    hidden = np.asarray(hidden, dtype=np.float32)
    m = mask.astype(np.float32)
    n, seq, h = hidden.shape
    rows = np.arange(n)
    out: list[np.ndarray] = []
    mean_sum: np.ndarray | None = None
    counts: np.ndarray | None = None
    for mode in modes:
        if mode == "cls":
            out.append(hidden[rows, mask.argmax(axis=1)])
        elif mode == "max":
            out.append(np.where(m[:, :, None] > 0, hidden, -np.inf).max(axis=1))
        elif mode in ("mean", "mean_sqrt_len_tokens"):
            if mean_sum is None or counts is None:
                mean_sum = np.einsum("nsh,ns->nh", hidden, m)
                counts = np.maximum(m.sum(axis=1, keepdims=True), 1e-9)
            out.append(mean_sum / (counts if mode == "mean" else np.sqrt(counts)))
        elif mode == "weightedmean":
            weights = np.arange(1, seq + 1, dtype=np.float32)[None, :] - mask.argmax(axis=1)[:, None]
            wm = m * weights
            out.append(np.einsum("nsh,ns->nh", hidden, wm) / np.maximum(wm.sum(axis=1, keepdims=True), 1e-9))
        elif mode == "lasttoken":
            flipped = mask[:, ::-1]
            last = seq - 1 - flipped.argmax(axis=1)
            last = np.where(flipped.max(axis=1) == 0, 0, last)
            out.append(hidden[rows, last] * m[rows, last][:, None])
        else:  # read_model_spec rejects others
            raise UnsupportedModelError(f"pooling mode {mode!r}")
    return np.concatenate(out, axis=1) if len(out) > 1 else out[0]
