"""The gbm ranker's list features (kbgraph.query.propagation.ranking_lists ``facts_rows``) equal a straightforward per-pair
reference (each candidate against each anchor, each text searched for each title and stem at every position, as
the module docstring says) on random pools built to hit the edge cases: titles inside other words, repeated
titles, titles the question names, names shared by many candidates, empty texts, no BM25 hits. Any faster
rewrite of ``facts_rows`` (issue 39) must keep this green: the features, hence the scores, exactly equal."""

from __future__ import annotations

import math
import random
import re

import numpy as np
import pytest

from kbgraph.query.propagation.ranking_learned import FEATURES, LAYERS, Candidate, feature_rows
from kbgraph.query.propagation.ranking_lists import (
    ANCHORS,
    GBM_FEATURES,
    RELATIONS,
    TOP,
    _title,
    facts_rows,
    question_stems,
    text_facts,
)

WORDS = [
    "film",
    "films",
    "filming",
    "director",
    "directed",
    "born",
    "river",
    "the",
    "of",
    "and",
    "in",
    "1982",
    "alien",
    "aliens",
    "runner",
    "blade",
    "scott",
    "fox",
    "studio",
    "was",
    "is",
    "a",
    "who",
    "team",
]
TITLES = [
    "Blade Runner (film)",
    "Blade Runner",
    "Ridley Scott",
    "Alien (film)",
    "Alien 3",
    "Fox",
    "Fox Studio",
    "Scott",
    "Of",
    "X",
    "Runner-up",
    "Zoë Baker",
    "River Team (band)",
    "",
]


def _contains(text: str, phrase: str, prefix: bool = False) -> bool:
    """``phrase`` in ``text`` with a non-alphanumeric character (or the text's edge) before it, and after it
    unless ``prefix``: every occurrence tried."""
    for at in range(len(text) - len(phrase) + 1):
        if text[at : at + len(phrase)] != phrase:
            continue
        end = at + len(phrase)
        if (at == 0 or not text[at - 1].isalnum()) and (prefix or end == len(text) or not text[end].isalnum()):
            return True
    return False


def reference(question: str, pool: list[Candidate], texts: list[str]) -> np.ndarray:
    """The list features pair by pair (kbgraph.query.propagation.ranking_lists module docstring)."""
    n = len(pool)
    out = np.zeros((n, len(GBM_FEATURES)))
    base = feature_rows(question, pool)
    out[:, : len(FEATURES)] = base
    col = {f: i for i, f in enumerate(GBM_FEATURES)}
    for layer in LAYERS[1:]:
        terms = base[:, FEATURES.index(layer)]
        for i in range(n):
            rank = sum(1 for k in range(n) if terms[k] > terms[i] or (terms[k] == terms[i] and k < i))
            out[i, col[f"rank_{layer}"]] = 1.0 / (1.0 + rank) if terms[i] > 0 else 0.0
    facts = [text_facts(c.title, t) for c, t in zip(pool, texts, strict=True)]
    lowered, found = [f[0] for f in facts], [f[1] for f in facts]
    titles = [_title(c.title) for c in pool]
    stems = question_stems(question)
    covers = [{s for s in stems if _contains(lowered[i], s, prefix=True)} for i in range(n)]
    fi = {f: i for i, f in enumerate(FEATURES)}

    def by(key: str) -> list[int]:
        return sorted(range(n), key=lambda i: (-base[i, fi[key]], i))[:TOP]

    anchors = {
        "q": [i for i in range(n) if base[i, fi["title_in_q"]] > 0],
        "chunk": by("Chunk"),
        "weighted": list(range(min(TOP, n))),
        "bm25": [i for i in by("rank_bm25") if base[i, fi["rank_bm25"]] > 0],
    }
    in_q = {w.capitalize() for w in re.findall(r"\w+", question.lower())} | set(re.findall(r"\w+", question))
    for a in ANCHORS:
        for i in range(n):
            best = dict.fromkeys(RELATIONS, 0.0)
            for j in anchors[a]:
                if pool[j].title == pool[i].title:
                    continue
                shared = found[i] & found[j]
                weights = {x: 1.0 / math.log2(1 + sum(1 for f in found if x in f)) for x in shared}
                got = {
                    "ent": max(weights.values(), default=0.0),
                    "bridge": max((w for x, w in weights.items() if x not in in_q), default=0.0),
                    "named_by": 1.0 if titles[i] and _contains(lowered[j], titles[i]) else 0.0,
                    "names": 1.0 if titles[j] and _contains(lowered[i], titles[j]) else 0.0,
                    "pair_cover": len(covers[i] | covers[j]) / len(stems) if stems else 0.0,
                }
                best = {r: max(best[r], got[r]) for r in RELATIONS}
            for r in RELATIONS:
                out[i, col[f"{r}_{a}"]] = best[r]
    for i in range(n):
        out[i, col["q_names"]] = len(found[i] & in_q) / len(found[i]) if found[i] else 0.0
        out[i, col["q_cover"]] = len(covers[i]) / len(stems) if stems else 0.0
        out[i, col["doc_rank"]] = sum(1 for k in range(i) if pool[k].title == pool[i].title)
    return out


def random_pool(rng: random.Random) -> tuple[str, list[Candidate], list[str]]:
    n = rng.choice([1, 2, 5, 12, 30])
    pool, texts = [], []
    bm25 = rng.sample(range(n), k=rng.randrange(min(n, 6) + 1))
    for i in range(n):
        title = rng.choice(TITLES)
        parts = []
        for _ in range(rng.randrange(25)):
            r = rng.random()
            parts.append(
                rng.choice(TITLES) if r < 0.25 else rng.choice(WORDS).capitalize() if r < 0.5 else rng.choice(WORDS)
            )
        sep = [" ", " ", ", ", "-", "'s ", ". ", "("]
        text = "".join(p + rng.choice(sep) for p in parts)
        terms = {
            layer: (rng.choice([0.0, 0.3, 0.5, rng.random()]), 1.0) for layer in rng.sample(LAYERS, k=rng.randrange(4))
        }
        rank = bm25.index(i) if i in bm25 else None
        pool.append(
            Candidate(
                terms=terms,
                title=title,
                weighted=rng.choice([0.5, rng.random()]),
                bm25=0.0 if rank is None else 1.0 / (1 + rank),
                bm25_rank=rank,
            )
        )
        texts.append(text)
    pool.sort(key=lambda c: -c.weighted)
    question = " ".join(rng.choice([*WORDS, *TITLES]) for _ in range(rng.randrange(1, 8))) + "?"
    return question, pool, texts


@pytest.mark.parametrize("seed", range(40))
def test_list_features_equal_the_per_pair_reference(seed: int) -> None:
    question, pool, texts = random_pool(random.Random(seed))
    got = facts_rows(question, pool, [text_facts(c.title, t) for c, t in zip(pool, texts, strict=True)])
    want = reference(question, pool, texts)
    wrong = [(i, GBM_FEATURES[f]) for i, f in np.argwhere(got != want)]
    assert not wrong, (question, wrong[:5])
