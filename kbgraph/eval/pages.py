"""Page-level gold and metrics for long-document sets (``examples/longdoc``): page@k and doc@k.

A long-document set is a folder of documents (PDF, Office, HTML, ...) ingested as they are, and questions whose
gold is a list of evidence pages, ``{"document": "<path relative to the documents folder>", "page": <1-based
physical page>}``. A retrieved chunk is keyed by the same two things: its document's path relative to the
documents folder (kbgraph.ingest.sources.file_of of its URI) and its ``page``.

* **page@k** = 1 when one of the first k chunks lies on an evidence page of its document, else 0 (k counted in
  chunks, as a reader sees them: two chunks of one page take two ranks).
* **doc@k** = 1 when one of the first k chunks comes from a gold document, else 0.
* **page_recall@k** = |evidence pages ∩ pages of the first k chunks| / |evidence pages| (a question whose
  answer spans two pages needs both).

Every metric is ``None`` for a question without gold pages (left out of means). A gold document written as a
bare file name (no ``/``) also matches a chunk of a document with that file name in any folder, so that a set
whose gold names files can be scored on a folder that groups them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, Field

PAGE_SEP = "#p"
UNPAGED = 0  # a chunk without a page (HTML, Markdown): its key is "<document>#p0"


class GoldPage(BaseModel):
    """One evidence page: the document's path relative to the set's documents folder (POSIX separators) and
    the 1-based physical page index (pymupdf's page number + 1, not the printed page label)."""

    document: str = Field(min_length=1)
    page: int = Field(ge=1)

    @property
    def key(self) -> str:
        """``"<document>#p<page>"``, the key chunks are matched by (:func:`page_key`)."""
        return page_key(self.document, self.page)


def page_key(document: str, page: int | None) -> str:
    """``"<document>#p<page>"`` (``#p0`` for a chunk without a page)."""
    return f"{PurePosixPath(document).as_posix()}{PAGE_SEP}{page or UNPAGED}"


def split_key(key: str) -> tuple[str, int]:
    """(document, page) of a :func:`page_key`. Raises ValueError for a string that is not one."""
    document, sep, page = key.rpartition(PAGE_SEP)
    if not sep or not document:
        raise ValueError(f"not a page key: {key!r}")
    return document, int(page)


def relative_document(path: str, root: Path | None) -> str:
    """The document of a chunk as the gold names it: ``path`` relative to ``root`` in POSIX form when it lies
    under it, else its file name (``root`` None: the file name)."""
    p = Path(path)
    if root is not None:
        try:
            return p.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            pass
    return p.name


def _doc_matches(document: str, gold_documents: set[str], gold_names: set[str]) -> bool:
    return document in gold_documents or PurePosixPath(document).name in gold_names


def _gold(gold: Iterable[str], k: int) -> tuple[set[str], set[str], set[str]] | None:
    """(gold page keys, gold documents, gold bare file names), or None without gold. Raises ValueError for k < 1."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    keys = set(gold)
    if not keys:
        return None
    docs = {split_key(key)[0] for key in keys}
    return keys, docs, {d for d in docs if "/" not in d}


def _bare_key(key: str, names: set[str]) -> str | None:
    """The key of a chunk's page under its bare file name when the gold names that file bare, else None."""
    document, page = split_key(key)
    name = PurePosixPath(document).name
    return page_key(name, page) if name in names else None


def page_hit_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float | None:
    """page@k: 1.0 when one of the first ``k`` chunk keys (``ranked``, :func:`page_key`, rank order, one per
    chunk) is a gold page, else 0.0; None without gold. Raises ValueError for k < 1."""
    g = _gold(gold, k)
    if g is None:
        return None
    keys, _docs, names = g
    return float(any(key in keys or _bare_key(key, names) in keys for key in ranked[:k]))


def doc_hit_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float | None:
    """doc@k: 1.0 when one of the first ``k`` chunks comes from a gold document, else 0.0; None without gold.
    Raises ValueError for k < 1."""
    g = _gold(gold, k)
    if g is None:
        return None
    _keys, docs, names = g
    return float(any(_doc_matches(split_key(key)[0], docs, names) for key in ranked[:k]))


def page_recall_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float | None:
    """page_recall@k: the fraction of gold pages that one of the first ``k`` chunks lies on; None without gold.
    Raises ValueError for k < 1."""
    g = _gold(gold, k)
    if g is None:
        return None
    keys, _docs, names = g
    found = {key for key in ranked[:k] if key in keys} | {
        b for key in ranked[:k] if (b := _bare_key(key, names)) in keys
    }
    return len(found) / len(keys)


def page_metrics(ranked: Sequence[str], gold: Sequence[str], ks: Sequence[int]) -> dict[str, float | None]:
    """``page@k``, ``doc@k`` and ``page_recall@k`` for each k (empty when there are no gold pages)."""
    if not gold:
        return {}
    out: dict[str, float | None] = {}
    for k in ks:
        out[f"page@{k}"] = page_hit_at_k(ranked, gold, k)
        out[f"doc@{k}"] = doc_hit_at_k(ranked, gold, k)
        out[f"page_recall@{k}"] = page_recall_at_k(ranked, gold, k)
    return out


def page_metric_keys(ks: Sequence[int]) -> list[str]:
    """The keys :func:`page_metrics` gives, in report order: page@k, then doc@k, then page_recall@k."""
    return [f"page@{k}" for k in ks] + [f"doc@{k}" for k in ks] + [f"page_recall@{k}" for k in ks]
