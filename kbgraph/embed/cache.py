"""An on-disk embedding cache: (model, text) -> float32 vector, in one SQLite file.

Embedding dominates ingestion time on CPU (~110 sentences/s with all-MiniLM-L6-v2 on 2 cores), and most
texts recur: an edited document keeps most of its sentences, entity names repeat across documents, and the
same corpus is often loaded into a second knowledge base or store. ``CachedEmbedder`` wraps any embedder
and only sends the texts it has not seen. Safe for concurrent processes (WAL, busy timeout).

Late chunking (``embed_spans``; ``kbgraph.embed.late``) passes through when the wrapped
embedder offers it: a span's vector is cached under ``"late:" + sha1(model, text, span)``, a key no plain
text's (a bare sha1 hex) can equal, and a span with no vector (truncated, no token) as an empty blob.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import numpy as np

from kbgraph.embed.base import Embedder
from kbgraph.embed.late import SpanEmbedder, can_embed_spans


class CachedEmbedder:
    """Wraps ``embedder`` (``.embed(texts) -> float32 (n, d)``, ``.dimension``, ``.model_name``) with the
    cache file ``path``. Same shapes and values as the wrapped embedder."""

    def __init__(self, embedder: Embedder, path: Path):
        self.inner = embedder
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self.hits = 0
        self.misses = 0
        with self._conn() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS embedding (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(str(self.path), timeout=60)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    @property
    def can_embed_spans(self) -> bool:
        """Whether ``embed_spans`` works: the wrapped embedder offers late chunking."""
        return can_embed_spans(self.inner)

    def _key(self, text: str) -> str:
        return hashlib.sha1(f"{self.model_name}\x1f{text}".encode()).hexdigest()

    def _late_key(self, text: str, span: tuple[int, int]) -> str:
        return "late:" + hashlib.sha1(f"{self.model_name}\x1f{span[0]}:{span[1]}\x1f{text}".encode()).hexdigest()

    def _lookup(self, keys: Sequence[str]) -> dict[str, bytes]:
        conn = self._conn()
        found: dict[str, bytes] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            marks = ",".join("?" * len(part))
            found.update(conn.execute(f"SELECT key, vector FROM embedding WHERE key IN ({marks})", part))
        return found

    def _store(self, rows: list[tuple[str, bytes]]) -> None:
        with self._conn() as conn:
            conn.executemany("INSERT OR REPLACE INTO embedding (key, vector) VALUES (?, ?)", rows)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        dim = self.dimension
        out = np.zeros((len(texts), dim), dtype=np.float32)
        if not texts:
            return out
        keys = [self._key(t) for t in texts]
        found = self._lookup(keys)
        todo = list(dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in found))
        if todo:
            vectors = np.asarray(self.inner.embed(todo), dtype=np.float32)
            rows = [(self._key(t), v.tobytes()) for t, v in zip(todo, vectors, strict=True)]
            self._store(rows)
            found.update(rows)
        self.misses += len(todo)
        self.hits += len(texts) - len(todo)
        for i, k in enumerate(keys):
            out[i] = np.frombuffer(found[k], dtype=np.float32, count=dim)
        return out

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> tuple[np.ndarray, list[list[np.ndarray | None]]]:
        """The wrapped embedder's ``embed_spans`` (same shapes; ``kbgraph.embed.onnx_runtime``) through the
        cache: a text whose vector and every span's vector are cached is not sent (no forward pass); the
        others are sent whole, with all their spans. Counts texts in ``hits``/``misses``."""
        texts = list(texts)
        if len(spans) != len(texts):
            raise ValueError(f"embed_spans: {len(texts)} texts but {len(spans)} span lists")
        keys = [self._key(t) for t in texts]
        late_keys = [[self._late_key(t, sp) for sp in ss] for t, ss in zip(texts, spans, strict=True)]
        found = self._lookup(keys + [k for ks in late_keys for k in ks])
        todo = [i for i, k in enumerate(keys) if k not in found or any(lk not in found for lk in late_keys[i])]
        if todo:
            inner = cast(SpanEmbedder, self.inner)  # (callers check can_embed_spans first)
            vectors, late = inner.embed_spans([texts[i] for i in todo], [list(spans[i]) for i in todo])
            rows = [(keys[i], np.asarray(v, dtype=np.float32).tobytes()) for i, v in zip(todo, vectors, strict=True)]
            for i, vecs in zip(todo, late, strict=True):
                rows += [
                    (lk, b"" if v is None else np.asarray(v, dtype=np.float32).tobytes())
                    for lk, v in zip(late_keys[i], vecs, strict=True)
                ]
            self._store(rows)
            found.update(rows)
        self.misses += len(todo)
        self.hits += len(texts) - len(todo)
        dim = self.dimension
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for i, k in enumerate(keys):
            out[i] = np.frombuffer(found[k], dtype=np.float32, count=dim)
        pooled = [
            [np.frombuffer(found[lk], dtype=np.float32, count=dim).copy() if found[lk] else None for lk in ks]
            for ks in late_keys
        ]
        return out, pooled
