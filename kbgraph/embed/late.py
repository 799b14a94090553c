"""Late chunking: vectors of character spans of a text pooled from the text's own forward pass.

Günther et al. 2024, "Late Chunking: Contextual Chunk Embeddings Using Long-Context Embedding Models"
(arXiv 2409.04701), §3: run the encoder once over the whole text, then mean-pool the final token states of each
span's tokens into that span's vector (and L2-normalise it). kbgraph uses it for the sentence-level atomic tags of
a chunk (setting ``late_chunking``; paper 003 Table 13: a chunk's sentences are its atomic
tags): they cost no second pass through the model, and each vector carries its chunk's context.

This module maps spans to tokens (the ``tokenizers`` Encoding offsets) and pools; the forward pass is
``kbgraph.embed.onnx_runtime.OnnxEmbedder.embed_spans``. Only for mean pooling (all-MiniLM-L6-v2): other
pooling modes have no per-span analogue that matches how the model was trained.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from kbgraph.embed.base import Embedder

if TYPE_CHECKING:
    from tokenizers import Encoding

__all__ = ["Span", "SpanEmbedder", "can_embed_spans", "pool_spans", "token_range"]

#: A character span ``(start, end)`` of a text, end exclusive, in Python string indices.
Span = tuple[int, int]


class SpanEmbedder(Embedder, Protocol):
    """An embedder that also embeds spans of its texts (late chunking): the ONNX embedder of a mean-pooling model,
    or the embedding cache around one (:func:`can_embed_spans`)."""

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[Span]]
    ) -> tuple[np.ndarray, list[list[np.ndarray | None]]]: ...


def can_embed_spans(embedder: Embedder) -> bool:
    """Does ``embedder`` offer ``embed_spans`` (late chunking)? True for the ONNX embedder of a mean-pooling
    model and for a cache around one; False for every other embedder (torch, OpenAI...)."""
    return bool(getattr(embedder, "can_embed_spans", False)) and callable(getattr(embedder, "embed_spans", None))


def token_range(encoding: Encoding, span: Span, text: str, shift: int = 0) -> tuple[int, int] | None:
    """The token indices ``[i, j)`` of ``encoding`` (a ``tokenizers.Encoding`` of ``text``, possibly with
    ``shift`` characters of prompt before it) whose characters overlap ``span`` of ``text``; None when the span
    covers no token (empty, whitespace only, out of range) or runs past the tokens that survived truncation
    (``max_seq_length``): a partial vector would stand for only part of the sentence."""
    a, b = span
    if not 0 <= a < b <= len(text):
        return None
    a, b = a + shift, b + shift
    offsets, special = encoding.offsets, encoding.special_tokens_mask
    hits = [k for k, (s, e) in enumerate(offsets) if not special[k] and s < e and s < b and e > a]
    if not hits:
        return None
    if encoding.overflowing:  # truncated: the span must end before the text the model did not see
        kept = max(e for k, (s, e) in enumerate(offsets) if not special[k])
        if b > kept and text[max(a, kept - shift) : b - shift].strip():
            return None
    return hits[0], hits[-1] + 1


def pool_spans(
    hidden: np.ndarray, encoding: Encoding, text: str, spans: Sequence[Span], shift: int = 0
) -> list[np.ndarray | None]:
    """One L2-normalised float32 vector (h,) per span of ``text``: the mean of ``hidden`` (the text's final
    token states, (seq, h), seq >= its tokens) over the span's tokens (``token_range``), or None for a span with
    no token or cut by truncation."""
    out: list[np.ndarray | None] = []
    for span in spans:
        rng = token_range(encoding, span, text, shift)
        if rng is None:
            out.append(None)
            continue
        vec = np.asarray(hidden[rng[0] : rng[1]], dtype=np.float32).mean(axis=0)
        norm = float(np.linalg.norm(vec))
        out.append((vec / norm).astype(np.float32) if norm > 0 else None)
    return out
