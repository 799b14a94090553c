"""A sentence-transformers model run by onnxruntime on CPU from its ONNX export (``OnnxEmbedder``): no torch
import, so a cold ``kbgraph ask`` embeds its question in about a second. See ``kbgraph.embed.onnx_model``."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kbgraph.embed.base import cpu_count, normalise
from kbgraph.embed.late import Span, pool_spans
from kbgraph.embed.onnx_model import ModelSpec, load_tokenizer, pad_batch, pool, prepare_texts, read_model_spec
from kbgraph.errors import ConfigError

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

__all__ = ["OnnxEmbedder", "default_threads", "open_session"]


def default_threads() -> int:
    """Intra-op threads when none are configured: OMP_NUM_THREADS if set, else the CPUs this process may
    run on (at most 8). See OnnxEmbedder for why not 1 as with torch."""
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, min(8, cpu_count()))


def open_session(path: Path, threads: int) -> Any:
    """An onnxruntime CPU session on ``path`` with ``threads`` intra-op threads, no busy-waiting.
    ConfigError if onnxruntime is not installed."""
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise ConfigError(
            f"the ONNX embedding backend needs onnxruntime: pip install onnxruntime ({exc}), "
            "or set KBGRAPH_EMBEDDING_BACKEND=torch"
        ) from exc
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = max(1, int(threads))
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3
    # no busy-waiting between runs: the CPU goes back to spaCy and the store (no measurable cost here)
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])


def token_batches(lengths: Sequence[int], max_texts: int, max_tokens: int) -> Iterator[list[int]]:
    """Indices into ``lengths`` (token counts), shortest first, cut into batches of at most ``max_texts``
    indices whose padded size (count x longest) is at most ``max_tokens``; a text longer than ``max_tokens``
    forms a batch of its own. Every index appears exactly once."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batch: list[int] = []
    for i in order:  # ascending: the newest text is the batch's longest
        if batch and (len(batch) >= max_texts or (len(batch) + 1) * lengths[i] > max_tokens):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


class OnnxEmbedder:
    """A sentence-transformers model run by onnxruntime (CPU) from its ONNX export; implements ``Embedder``.

    ``onnx_path``: the export (``export_onnx``); ``model_dir``: the sentence-transformers folder (tokenizer,
    pooling config); ``model_name``: the name reported (the configured ``embedding_model``).
    Texts are tokenised all at once, sorted by length and run in batches of at most ``batch_size`` texts and
    at most ``batch_tokens`` padded tokens (texts x longest in the batch; a single longer text runs alone), so
    that a batch pads little and long texts do not blow up the activations. Measured on 2 cores, 2,000 2Wiki
    passages: 64-text batches alone grew the process by 0.93 GB in 20.1 s, a 2,048-token budget by 0.12 GB in
    17.0-17.5 s (512-1,024: the same time); 3,300 titles still run 64 a batch (2.2-2.3 s either way; 16 a
    batch took 3.0 s).
    ``threads``: onnxruntime intra-op threads, default ``default_threads()``.

    Measured on 2 cores (all-MiniLM-L6-v2, 2Wiki texts, batch 64): 1 thread 470 entity names/s, 80 sentences/s,
    24 passages/s, one query 10 ms; 2 threads 850/s, 160/s, 46/s, 6.5 ms when the second core is free, and
    still no slower than 1 thread with a Neo4j server busy on 1.5 cores (torch with 2 threads collapses
    there, hence its 1-thread default). Dynamic int8 quantisation (onnxruntime.quantization) was 1.6x faster
    but only cosine 0.95-0.99 to the torch vectors (per-channel: mean 0.992, worst 0.965): an option, setting
    ``embedding_precision='int8'`` (``kbgraph.embed.onnx_quant``; its activations are quantised per batch, so
    a text's int8 vector also varies with the batch it is embedded in, cosine ~0.99)."""

    def __init__(
        self,
        onnx_path: str | Path,
        model_dir: str | Path,
        *,
        model_name: str | None = None,
        batch_size: int = 64,
        batch_tokens: int = 2048,
        threads: int | None = None,
        spec: ModelSpec | None = None,
    ):
        self.onnx_path = Path(onnx_path)
        self.spec = spec if spec is not None else read_model_spec(model_dir)
        self._name = model_name or self.spec.folder.name
        self.batch_size = max(1, int(batch_size))
        self.batch_tokens = max(1, int(batch_tokens))
        self.threads = threads if threads is not None else default_threads()
        self._session: Any = None
        self._tokenizer: Tokenizer | None = None
        self._inputs: list[str] = []
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self.spec.dimension

    def _load(self) -> tuple[Any, Tokenizer]:  # (an onnxruntime InferenceSession: untyped)
        if self._session is None:
            with self._lock:
                if self._session is None:
                    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
                    self._tokenizer = load_tokenizer(self.spec)
                    session = open_session(self.onnx_path, self.threads)
                    self._inputs = [i.name for i in session.get_inputs()]
                    self._session = session
        assert self._tokenizer is not None  # loaded before the session
        return self._session, self._tokenizer

    @property
    def can_embed_spans(self) -> bool:
        """Whether ``embed_spans`` works: the model pools by mean alone (late chunking)."""
        return tuple(self.spec.pooling) == ("mean",)

    def _forward(self, texts: Sequence[str]) -> Iterator[tuple[list[int], np.ndarray, np.ndarray, list[Encoding]]]:
        """Per batch: (indices into ``texts``, final token states (b, seq, h), attention mask (b, seq), the
        encodings of all ``texts``). Texts are sorted by token count and cut by ``token_batches``."""
        session, tok = self._load()
        encodings = tok.encode_batch(prepare_texts(self.spec, texts))
        for idx in token_batches([len(e.ids) for e in encodings], self.batch_size, self.batch_tokens):
            feeds = pad_batch([encodings[i] for i in idx], self.spec.pad_token_id)
            hidden = session.run(None, {k: feeds[k] for k in self._inputs})[0]
            yield idx, hidden, feeds["attention_mask"], encodings

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for idx, hidden, mask, _ in self._forward(texts):
            out[idx] = pool(hidden, mask, self.spec.pooling)
        return normalise(out, self.dimension)

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[Span]]
    ) -> tuple[np.ndarray, list[list[np.ndarray | None]]]:
        """Late chunking (Günther et al. 2024, arXiv 2409.04701 §3; ``kbgraph.embed.late``): the texts'
        vectors, float32 (len(texts), dimension), equal to ``embed(texts)``, and from the same forward pass
        one vector per character span ``(start, end)`` of each text (``spans[i]`` for ``texts[i]``): the
        L2-normalised mean of the span's final token states, float32 (dimension,), or None for a span that
        covers no token or runs past ``max_seq_length`` tokens (truncated). ConfigError unless
        ``can_embed_spans`` (mean pooling); ValueError if ``spans`` and ``texts`` differ in length."""
        if not self.can_embed_spans:
            raise ConfigError(
                f"late chunking needs a mean-pooling model; {self._name!r} pools by "
                f"{'+'.join(self.spec.pooling)}: set KBGRAPH_LATE_CHUNKING=false"
            )
        if len(spans) != len(texts):
            raise ValueError(f"embed_spans: {len(texts)} texts but {len(spans)} span lists")
        late: list[list[np.ndarray | None]] = [[None] * len(s) for s in spans]
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32), late
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        shift = len(self.spec.prompt)
        for idx, hidden, mask, encodings in self._forward(texts):
            out[idx] = pool(hidden, mask, self.spec.pooling)
            for row, i in enumerate(idx):
                text = texts[i] if isinstance(texts[i], str) else str(texts[i])
                if self.spec.do_lower_case and len(text.lower()) != len(text):
                    continue  # lower-casing moved the characters: the offsets no longer match the spans
                late[i] = pool_spans(hidden[row], encodings[i], text, spans[i], shift)
        return normalise(out, self.dimension), late

    def __repr__(self) -> str:
        return f"OnnxEmbedder({self._name!r}, {str(self.onnx_path)!r})"
