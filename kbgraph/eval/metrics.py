"""Evaluation metrics of PIKE-RAG §6.1 (paper 000) and paper 003 §4 / Appendix A.4.

Answer metrics, on SQuAD-normalised answers (lower case; punctuation, the articles a / an / the and extra
white space removed; Rajpurkar et al. 2016, official evaluation script):

* **EM**: 1.0 when the normalised answer equals the normalised label, else 0.0.
* **Precision**, **Recall**, **F1** on normalised tokens: with ``common`` the size of the multiset
  intersection of answer tokens and label tokens, precision = common / |answer tokens|, recall =
  common / |label tokens| (PIKE-RAG §6.1: "the proportion of relevant tokens from the answer labels that are
  captured in the response"), F1 = their harmonic mean; 0.0 when nothing is shared. An answer and a label
  that are both empty after normalisation score 1.0; one empty and the other not, 0.0.
* Several answer labels: each metric is the **maximum over the labels**, taken metric by metric (PIKE-RAG
  §6.1: "we employ a conservative scoring approach for EM, F1, Precision, and Recall by retaining the
  highest score achieved"). LLM-judged **Accuracy** sees all labels at once (kbgraph.eval).

Retrieval metrics, over passage ids (one multi-hop passage = one Document; a chunk's passage id is the
``#fragment`` of its document URI, see ``passage_ids``):

* **Recall@k** = |gold ∩ first k distinct retrieved passages| / |gold|, with k counted in passages, not
  chunks (a passage split into two chunks takes one rank).
* **Supporting-fact recall** (paper 003 Appendix A.4, Table 8, "Recall*": "the recall of the supporting
  facts provided by these datasets") = |gold ∩ passages in the context the method used| / |gold|. The
  normalized data sets give supporting facts at passage level (``gold_passage_ids``), so this is recall over
  every passage of the final context, whatever its size.

Every retrieval metric is ``None`` for a question without gold passages (excluded from means by ``mean``).
All scores are fractions in [0, 1].
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from urllib.parse import unquote

from pydantic import BaseModel

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, drop punctuation, drop the articles a/an/the, collapse white space.
    ``"The  Eiffel-Tower!"`` -> ``"eiffeltower"``."""
    text = (text or "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def answer_tokens(text: str) -> list[str]:
    """Tokens of the normalised answer (split on white space)."""
    return normalize_answer(text).split()


class AnswerScores(BaseModel):
    """EM, F1, precision and recall of one answer, each in [0, 1]."""

    em: float = 0.0
    f1: float = 0.0
    precision: float = 0.0
    recall: float = 0.0


def exact_match(prediction: str, label: str) -> float:
    """1.0 when the normalised strings are equal, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(label))


def token_scores(prediction: str, label: str) -> AnswerScores:
    """EM, precision, recall and F1 of ``prediction`` against one ``label`` (normalised tokens)."""
    pred, gold = answer_tokens(prediction), answer_tokens(label)
    em = float(pred == gold)
    if not pred or not gold:  # both empty: a match; one empty: nothing shared
        return AnswerScores(em=em, f1=em, precision=em, recall=em)
    common = sum((Counter(pred) & Counter(gold)).values())
    if common == 0:
        return AnswerScores(em=em)
    precision, recall = common / len(pred), common / len(gold)
    return AnswerScores(em=em, f1=2 * precision * recall / (precision + recall), precision=precision, recall=recall)


def answer_scores(prediction: str, labels: Sequence[str] | str) -> AnswerScores:
    """The scores of ``prediction`` against several answer labels: each metric's maximum over the labels
    (PIKE-RAG §6.1). No labels: all 0.0."""
    if isinstance(labels, str):
        labels = [labels]
    per_label = [token_scores(prediction, label) for label in labels]
    if not per_label:
        return AnswerScores()
    return AnswerScores(
        em=max(s.em for s in per_label),
        f1=max(s.f1 for s in per_label),
        precision=max(s.precision for s in per_label),
        recall=max(s.recall for s in per_label),
    )


# --- retrieval ------------------------------------------------------------------------------------------
def passage_id(document_uri: str) -> str:
    """The passage id of a document URI: the unescaped ``#fragment`` of a passage corpus document
    (``file:///c.jsonl#musique%3A6`` -> ``musique:6``), else the URI itself."""
    return unquote(document_uri.rsplit("#", 1)[-1]) if "#" in document_uri else document_uri


def passage_ids(document_uris: Iterable[str]) -> list[str]:
    """Distinct passage ids of ranked chunks' document URIs, in first-seen (rank) order."""
    out: dict[str, None] = {}
    for uri in document_uris:
        if uri:
            out.setdefault(passage_id(uri), None)
    return list(out)


def recall_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float | None:
    """|gold ∩ ranked[:k]| / |gold| over distinct ids (``ranked`` deduplicated in order first); None
    when there is no gold id. Raises ValueError for k < 1."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    gold_set = set(gold)
    if not gold_set:
        return None
    top = list(dict.fromkeys(ranked))[:k]
    return len(gold_set.intersection(top)) / len(gold_set)


def supporting_fact_recall(context: Iterable[str], gold: Iterable[str]) -> float | None:
    """|gold ∩ context| / |gold| (paper 003 Table 8, Recall*); None when there is no gold id."""
    gold_set = set(gold)
    if not gold_set:
        return None
    return len(gold_set.intersection(context)) / len(gold_set)


def mean(values: Iterable[float | None]) -> float | None:
    """Arithmetic mean of the values that are not None; None when there are none."""
    vals = [float(v) for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None
