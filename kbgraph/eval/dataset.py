"""Multi-hop QA data sets in the normalized format of ``examples/multihop`` (PIKE-RAG §6.1; paper 003 §4).

``<prefix>.questions.jsonl``: one ``{"id", "question", "answers", "gold_titles", "gold_passage_ids", "meta"}``
a line; ``<prefix>.corpus.jsonl`` beside it: ``{"id", "title", "text"}`` passages (one passage = one Document
of the knowledge base, whose URI fragment is the passage id: kbgraph.ingest.parse).

A long-document set (``examples/longdoc``) has a documents folder instead of a corpus: ``<prefix>.documents/``
or ``documents/`` beside the questions file, ingested as it is, and questions with ``"gold_pages": [{"document":
"<path relative to that folder>", "page": <1-based page>}]`` (kbgraph.eval.pages: page@k, doc@k). A data set is named by
its prefix path, its questions file, or a folder holding one questions file (:func:`load_dataset`).
Questions are sampled reproducibly with ``random.Random(seed)`` (:func:`select_questions`).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from kbgraph.errors import ConfigError
from kbgraph.eval.pages import GoldPage


class EvalQuestion(BaseModel):
    """One question of a normalized multi-hop data set."""

    id: str
    question: str
    answers: list[str] = Field(default_factory=list)
    gold_titles: list[str] = Field(default_factory=list)
    gold_passage_ids: list[str] = Field(default_factory=list)
    gold_pages: list[GoldPage] = Field(default_factory=list)  # long-document sets (kbgraph.eval.pages)
    meta: dict[str, Any] = Field(default_factory=dict)

    @property
    def gold_page_keys(self) -> list[str]:
        """The evidence pages as ``"<document>#p<page>"`` keys (kbgraph.eval.pages.page_key)."""
        return [g.key for g in self.gold_pages]


class Dataset(BaseModel):
    """A question file, the passage corpus or documents folder beside it (None if absent) and the name the KB
    gets."""

    name: str
    questions_path: Path
    corpus_path: Path | None = None
    documents_path: Path | None = None  # a long-document set's folder (kbgraph.eval.pages)
    questions: list[EvalQuestion] = Field(default_factory=list, repr=False)


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_") or "dataset"


def load_dataset(path: str | Path) -> Dataset:
    """Read a data set from ``<prefix>`` (``<prefix>.questions.jsonl`` + ``<prefix>.corpus.jsonl``), a
    ``*.questions.jsonl`` file, or a folder with exactly one. Name: ``<folder>_<prefix>``, e.g.
    ``2wikimultihopqa_dev500``. Raises ConfigError when nothing or several sets are found, or a line is not a
    valid question."""
    p = Path(path).expanduser()
    if p.name.endswith(".questions.jsonl") and p.is_file():
        qpath = p
    elif Path(f"{p}.questions.jsonl").is_file():
        qpath = Path(f"{p}.questions.jsonl")
    elif p.is_dir():
        found = sorted(p.glob("*.questions.jsonl"))
        if len(found) != 1:
            what = (
                "no *.questions.jsonl"
                if not found
                else f"{len(found)} question files ({', '.join(f.name for f in found)})"
            )
            raise ConfigError(f"{p} holds {what}; name one as <folder>/<prefix>")
        qpath = found[0]
    else:
        raise ConfigError(f"no data set at {p}: expected <prefix>.questions.jsonl (and <prefix>.corpus.jsonl)")
    qpath = qpath.resolve()
    prefix = qpath.name[: -len(".questions.jsonl")]
    corpus = qpath.with_name(f"{prefix}.corpus.jsonl")
    questions = []
    for lineno, line in enumerate(qpath.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            obj["id"] = str(obj.get("id") if obj.get("id") not in (None, "") else lineno)
            questions.append(EvalQuestion.model_validate(obj))
        except ValueError as exc:
            raise ConfigError(
                f"{qpath.name} line {lineno}: not a question object ({str(exc).splitlines()[0]})"
            ) from exc
    if not questions:
        raise ConfigError(f"{qpath} has no questions")
    documents = _documents_folder(qpath, prefix)
    _check_gold_documents(qpath, documents, questions)
    return Dataset(
        name=_safe_name(f"{qpath.parent.name}_{prefix}"),
        questions_path=qpath,
        corpus_path=corpus if corpus.is_file() else None,
        documents_path=documents,
        questions=questions,
    )


def _documents_folder(qpath: Path, prefix: str) -> Path | None:
    """``<prefix>.documents/`` beside the questions file, else ``documents/``, else None."""
    for candidate in (qpath.with_name(f"{prefix}.documents"), qpath.with_name("documents")):
        if candidate.is_dir():
            return candidate
    return None


def _check_gold_documents(qpath: Path, documents: Path | None, questions: Sequence[EvalQuestion]) -> None:
    """Raises ConfigError when a question has gold pages but there is no documents folder, or names a document
    that is not in it (a bare file name matches the file in any of its folders)."""
    paged = [q for q in questions if q.gold_pages]
    if not paged:
        return
    if documents is None:
        raise ConfigError(
            f"{qpath.name}: questions have gold_pages but there is no documents folder beside it "
            f"({qpath.name[: -len('.questions.jsonl')]}.documents/ or documents/)"
        )
    names = {p.name for p in documents.rglob("*") if p.is_file()}
    for q in paged:
        for g in q.gold_pages:
            if not (documents / g.document).is_file() and not ("/" not in g.document and g.document in names):
                raise ConfigError(
                    f"{qpath.name}: question {q.id} names gold document {g.document!r}, which is not in {documents}"
                )


def select_questions(
    questions: Sequence[EvalQuestion], *, sample: int | None, limit: int | None, seed: int
) -> list[EvalQuestion]:
    """``sample`` questions drawn with ``random.Random(seed)`` (kept in file order), then the first
    ``limit`` of those; all questions when both are None."""
    chosen = list(questions)
    if sample is not None and sample < len(chosen):
        keep = sorted(random.Random(seed).sample(range(len(chosen)), sample))
        chosen = [chosen[i] for i in keep]
    return chosen[:limit] if limit is not None else chosen
