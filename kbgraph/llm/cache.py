"""On-disk LLM response cache: one SQLite file, safe for several threads and processes.

Key = sha256 of ``json.dumps({model, messages, temperature, max_tokens, response_format}, sort_keys=True)``
(see :func:`cache_key`). Values are the answer texts; an answer the server cut at the token limit is kept
with its limit (``cut_at``) and comes back as a :class:`kbgraph.llm.json_answers.CutAnswer`, so a replay takes
the same path as the first run (the cut answer's whole items, or its repair). WAL journal + a busy timeout let concurrent
ingestion processes share one cache; every operation opens its own short-lived connection.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from kbgraph.llm.json_answers import CutAnswer, cut_answer

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL,
    cut INTEGER NOT NULL DEFAULT 0,
    cut_at INTEGER
)
"""
#: Columns added since the first cache files (name -> definition), added to an older file when it is opened.
_ADDED = {"cut": "INTEGER NOT NULL DEFAULT 0", "cut_at": "INTEGER"}


def cache_key(
    *,
    model: str,
    messages: list[dict[str, str]],
    temperature: float,
    max_tokens: int | None,
    response_format: str = "none",
) -> str:
    """The cache key of one request (what the answer depends on)."""
    payload: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "response_format": response_format,  # the structured-output mode (kbgraph.llm.structured)
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


class ResponseCache:
    """Answer texts by request key in ``<folder>/responses.sqlite3``."""

    FILENAME = "responses.sqlite3"

    def __init__(self, folder: Path, *, timeout: float = 30.0) -> None:
        self.folder = Path(folder).expanduser()
        self.path = self.folder / self.FILENAME
        self.timeout = timeout
        self.folder.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
            except sqlite3.OperationalError:
                pass  # another process holds the file right now; it set WAL already or will
            conn.execute(_SCHEMA)
            have = {row[1] for row in conn.execute("PRAGMA table_info(responses)")}
            for name, definition in _ADDED.items():
                if name not in have:
                    try:
                        conn.execute(f"ALTER TABLE responses ADD COLUMN {name} {definition}")
                    except sqlite3.OperationalError as exc:  # another process added it first
                        if "duplicate column" not in str(exc):
                            raise

    def _connect(self) -> closing[sqlite3.Connection]:
        # isolation_level=None: autocommit, each statement is its own transaction.
        conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        conn.execute("PRAGMA synchronous=NORMAL")  # with WAL: no corruption risk, fsync only at checkpoints
        return closing(conn)

    def get(self, key: str) -> str | None:
        """The answer of ``key`` (a CutAnswer when the server had cut it), or None."""
        with self._connect() as conn:
            row = conn.execute("SELECT response, cut, cut_at FROM responses WHERE key = ?", (key,)).fetchone()
        if not row:
            return None
        text, cut, cut_at = row
        return cut_answer(text, cut_at) if cut else str(text)

    def put(self, key: str, model: str, response: str) -> None:
        """Keep ``response`` for ``key``; a CutAnswer with its ``max_tokens``."""
        cut_at = response.max_tokens if isinstance(response, CutAnswer) else None
        with self._connect() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO responses (key, model, response, created, cut, cut_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (key, model, str(response), time.time(), int(isinstance(response, CutAnswer)), cut_at),
            )

    def delete(self, key: str) -> None:
        with self._connect() as conn:
            conn.execute("DELETE FROM responses WHERE key = ?", (key,))

    def __len__(self) -> int:
        with self._connect() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def clear(self) -> None:
        with self._connect() as conn:
            conn.execute("DELETE FROM responses")
