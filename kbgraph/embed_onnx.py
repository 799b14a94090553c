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
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kbgraph.errors import ConfigError

log = logging.getLogger(__name__)

OPSET = 17
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
#: Export check: every probe sentence's ONNX vector must have at least this cosine to the torch vector.
EXPORT_MIN_COSINE = 0.9999
_PROBES = [
    "Who directed the film Sleep, My Love?",
    "Douglas Sirk",
    "The Journal of Mathematical Physics is a monthly peer-reviewed journal published by the American "
    "Institute of Physics.",
    "",
]


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
        tok_cfg = _read_json(transformer_dir / "tokenizer_config.json") if (
            transformer_dir / "tokenizer_config.json").is_file() else {}
        limits = [int(v) for v in (tok_cfg.get("model_max_length"), config.get("max_position_embeddings"))
                  if isinstance(v, int | float) and v < 1_000_000]
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
        folder=folder, transformer_dir=transformer_dir, weights=weights,
        max_seq_length=int(max_len) if max_len else None, do_lower_case=bool(sbert.get("do_lower_case")),
        pooling=pooling, hidden_size=hidden, pad_token_id=int(pad_id), prompt=prompt,
    )


# --- where the export lives ---------------------------------------------------------------------------------


def models_dir(home: str | Path) -> Path:
    return Path(home).expanduser() / "models"


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


def load_tokenizer(spec: ModelSpec) -> Any:
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


def pad_batch(encodings: Sequence[Any], pad_id: int) -> dict[str, np.ndarray]:
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
    mean_sum = counts = None
    for mode in modes:
        if mode == "cls":
            out.append(hidden[rows, mask.argmax(axis=1)])
        elif mode == "max":
            out.append(np.where(m[:, :, None] > 0, hidden, -np.inf).max(axis=1))
        elif mode in ("mean", "mean_sqrt_len_tokens"):
            if mean_sum is None:
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


def _l2(v: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(v / norms, dtype=np.float32)


# --- export ----------------------------------------------------------------------------------------------------


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
    from filelock import FileLock, Timeout

    try:
        with FileLock(str(out_path) + ".lock", timeout=lock_timeout):
            if out_path.is_file():  # another process exported it while we waited
                return out_path
            tmp = out_path.with_name(f".{out_path.stem}.{os.getpid()}.{threading.get_ident()}.tmp.onnx")
            try:
                t0 = time.perf_counter()
                _export(spec, tmp)
                os.replace(tmp, out_path)
                log.info("exported %s to %s in %.1f s", spec.folder, out_path, time.perf_counter() - t0)
            finally:
                tmp.unlink(missing_ok=True)
    except Timeout as exc:
        raise ConfigError(f"another process has been exporting {out_path} for {lock_timeout:.0f} s; "
                          f"remove {out_path}.lock if no kbgraph process is running") from exc
    return out_path


def _export(spec: ModelSpec, path: Path) -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise ConfigError(f"exporting the embedding model to ONNX needs torch and transformers: "
                          f"pip install 'kbgraph[ingest]' ({exc})") from exc
    try:
        import onnx  # noqa: F401 - torch.onnx.export needs it
    except ImportError as exc:
        raise ConfigError(f"exporting the embedding model to ONNX needs the onnx package: "
                          f"pip install 'kbgraph[ingest]' ({exc})") from exc
    import inspect
    import warnings

    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except Exception:  # noqa: BLE001 - cosmetic
        pass
    # Eager attention: the traced graph then applies the attention mask as plain tensor ops (SDPA/flash
    # paths may skip the mask when the tracing batch has no padding, which would bake that in).
    model = AutoModel.from_pretrained(str(spec.transformer_dir), attn_implementation="eager",
                                      dtype=torch.float32)
    model.eval()
    accepted = inspect.signature(model.forward).parameters
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if "token_type_ids" in accepted else [])

    class _Encoder(torch.nn.Module):
        def __init__(self, inner: Any):
            super().__init__()
            self.inner = inner

        def forward(self, *args: Any) -> Any:
            return self.inner(**dict(zip(names, args, strict=True))).last_hidden_state

    tok = load_tokenizer(spec)
    # a batch with padding in it, so that the masking path is what gets traced
    feeds = pad_batch(tok.encode_batch(prepare_texts(spec, _PROBES[:2])), spec.pad_token_id)
    args = tuple(torch.from_numpy(feeds[k]) for k in names)
    axes = {k: {0: "batch", 1: "sequence"} for k in [*names, "last_hidden_state"]}
    encoder = _Encoder(model).eval()  # (the exporter restores the wrapper's mode onto the model: dropout!)
    with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TracerWarnings about shape-dependent Python branches
        torch.onnx.export(encoder, args, str(path), dynamo=False, opset_version=OPSET,
                          input_names=names, output_names=["last_hidden_state"], dynamic_axes=axes,
                          do_constant_folding=True)
        # check the exported graph against torch on a padded batch of varied lengths
        probe = pad_batch(tok.encode_batch(prepare_texts(spec, _PROBES)), spec.pad_token_id)
        encoder.eval()
        ref_hidden = encoder(*(torch.from_numpy(probe[k]) for k in names)).numpy()
    ref = _l2(pool(ref_hidden, probe["attention_mask"], spec.pooling))
    session = _session(path, threads=1)
    got_hidden = session.run(None, {k: probe[k] for k in names})[0]
    got = _l2(pool(got_hidden, probe["attention_mask"], spec.pooling))
    cos = float((ref * got).sum(axis=1).min())
    if not cos >= EXPORT_MIN_COSINE:
        raise ConfigError(f"the ONNX export of {spec.folder} does not match torch (cosine {cos:.6f}); "
                          "set KBGRAPH_EMBEDDING_BACKEND=torch")


# --- inference -------------------------------------------------------------------------------------------------


def default_threads() -> int:
    """Intra-op threads when none are configured: OMP_NUM_THREADS if set, else the CPUs this process may
    run on (at most 8). See OnnxEmbedder for why not 1 as with torch."""
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(8, cpus))


def _session(path: Path, threads: int) -> Any:
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise ConfigError(f"the ONNX embedding backend needs onnxruntime: pip install onnxruntime ({exc}), "
                          "or set KBGRAPH_EMBEDDING_BACKEND=torch") from exc
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = max(1, int(threads))
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3
    # no busy-waiting between runs: the CPU goes back to spaCy and the store (no measurable cost here)
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])


class OnnxEmbedder:
    """A sentence-transformers model run by onnxruntime (CPU) from its ONNX export; implements ``Embedder``.

    ``onnx_path``: the export (``export_onnx``); ``model_dir``: the sentence-transformers folder (tokenizer,
    pooling config); ``model_name``: the name reported (the configured ``embedding_model``).
    Texts are tokenised all at once, sorted by length and run in batches of ``batch_size`` so that a batch
    pads little. ``threads``: onnxruntime intra-op threads, default ``default_threads()``.

    Measured on 2 cores (all-MiniLM-L6-v2, 2Wiki texts, batch 64): 1 thread 470 entity names/s, 80 sentences/s,
    24 passages/s, one query 10 ms; 2 threads 850/s, 160/s, 46/s, 6.5 ms when the second core is free, and
    still no slower than 1 thread with a Neo4j server busy on 1.5 cores (torch with 2 threads collapses
    there, hence its 1-thread default). Dynamic int8 quantisation (onnxruntime.quantization) was 1.6x faster
    but only cosine 0.95-0.99 to the torch vectors (per-channel: mean 0.992, worst 0.965), so it is not used."""

    def __init__(self, onnx_path: str | Path, model_dir: str | Path, *, model_name: str | None = None,
                 batch_size: int = 64, threads: int | None = None, spec: ModelSpec | None = None):
        self.onnx_path = Path(onnx_path)
        self.spec = spec if spec is not None else read_model_spec(model_dir)
        self._name = model_name or self.spec.folder.name
        self.batch_size = max(1, int(batch_size))
        self.threads = threads if threads is not None else default_threads()
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: list[str] = []
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self.spec.dimension

    def _load(self) -> tuple[Any, Any]:
        if self._session is None:
            with self._lock:
                if self._session is None:
                    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
                    self._tokenizer = load_tokenizer(self.spec)
                    session = _session(self.onnx_path, self.threads)
                    self._inputs = [i.name for i in session.get_inputs()]
                    self._session = session
        return self._session, self._tokenizer

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        session, tok = self._load()
        encodings = tok.encode_batch(prepare_texts(self.spec, texts))
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(encodings), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            feeds = pad_batch([encodings[i] for i in idx], self.spec.pad_token_id)
            hidden = session.run(None, {k: feeds[k] for k in self._inputs})[0]
            out[idx] = pool(hidden, feeds["attention_mask"], self.spec.pooling)
        return _l2(out)

    def __repr__(self) -> str:
        return f"OnnxEmbedder({self._name!r}, {str(self.onnx_path)!r})"


__all__ = [
    "ModelSpec",
    "OnnxEmbedder",
    "UnsupportedModelError",
    "export_onnx",
    "onnx_path_for",
    "read_model_spec",
    "weights_hash",
]
