"""List features of the gbm ranker (kbgraph.query.propagation.ranking_gbm): what a candidate chunk is to the rest of the pool.

The linear ranker's features (kbgraph.query.propagation.ranking_learned) describe one chunk at a time. These describe a chunk
against the pool's *anchors*, the candidates a ranker trusts before ordering, which is how the second passage of
a multi-hop question is recognised: it names, or is named by, a passage the question names, or it shares a rare
name with one. Features of a chunk c in pool P for question q (:data:`GBM_FEATURES`, in row order):

* the linear ranker's :data:`kbgraph.query.propagation.ranking_learned.FEATURES`;
* ``rank_<Layer>``: 1 / (1 + rank of c in P by that layer's term), 0 without the term, for every layer but
  Chunk (whose rank is ``rank_chunk``);
* for each anchor set A (``q``: the candidates whose title q names, ``title_in_q``; ``chunk``, ``weighted``,
  ``bm25``: the top 3 of P by Chunk similarity, by weighted sum, by BM25 rank), the maximum over the anchors a
  in A of another title than c's of

  ==================  =========================================================================================
  ``ent_<A>``         1 / log2(1 + n) over the names c and a share, n = the pool chunks having that name
  ``bridge_<A>``      the same over the shared names that are not words of q (the bridge of a two-hop question)
  ``named_by_<A>``    1 if a's title or text contains c's title (a links to c), else 0
  ``names_<A>``       1 if c's title or text contains a's title (c links to a), else 0
  ``pair_cover_<A>``  the share of q's word stems that c and a cover together
  ==================  =========================================================================================

* ``q_names``: the share of c's names that are words of q; ``doc_rank``: c's position among the pool chunks of
  its own title (0 = first); ``q_cover``: the share of q's word stems c covers.

A *name* is a run of 3 or more letters, digits or '-' starting with a capital letter (capitalised
:data:`STOPWORDS` left out). A title (without its "(...)" disambiguator, at least 3 characters) is found in a
text on word boundaries, case-insensitive. q's *stems* are its words of 3 characters or more outside
:data:`STOPWORDS`, Snowball-stemmed (PyStemmer, a dependency of kbgraph); c covers a stem when a word of its title
or text starts with it. Everything is computed from the candidates' titles and texts: no graph traversal.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np

from kbgraph.query.propagation.ranking_learned import FEATURES, LAYERS, Candidate, feature_rows
from kbgraph.text import contains_phrase, strip_disambiguator

#: Anchor sets of the list features, and the relations computed to each.
ANCHORS = ("q", "chunk", "weighted", "bm25")
RELATIONS = ("ent", "bridge", "named_by", "names", "pair_cover")
#: Every feature of the gbm ranker, in the order of a feature row.
RANK_FEATURES = tuple(f"rank_{layer}" for layer in LAYERS if layer != "Chunk")
LIST_FEATURES = (*(f"{r}_{a}" for a in ANCHORS for r in RELATIONS), "q_names", "doc_rank", "q_cover")
GBM_FEATURES = (*FEATURES, *RANK_FEATURES, *LIST_FEATURES)
#: Words left out of the question coverage features.
STOPWORDS = frozenset(
    "a about after all also although an and any are as at be been before but by can could despite did do does "
    "during following for from had has have he her him his how however if in into is it its many may more most not "
    "of on one or other she since than that the their them then there these they this those through to today was "
    "were what when where which while who whom whose why will with would".split()
)
#: Anchors per ranked anchor set (``chunk``, ``weighted``, ``bm25``).
TOP = 3

_NAME = re.compile(r"[A-Z][\w-]{2,}")
_CAPITAL_STOP = frozenset(w.capitalize() for w in STOPWORDS)
_WORD = re.compile(r"\w+")


@lru_cache(maxsize=1)
def _stem() -> Callable[[list[str]], list[str]]:
    try:
        import Stemmer  # PyStemmer, a dependency of kbgraph (bm25)
    except ImportError:  # pragma: no cover - PyStemmer is a dependency of kbgraph
        return lambda words: words
    return Stemmer.Stemmer("english").stemWords  # type: ignore[no-any-return]


def question_stems(question: str) -> list[str]:
    """The stems of ``question``'s words that the coverage features count: lower-case, 3 characters or more,
    not in :data:`STOPWORDS`, Snowball-stemmed, distinct, in order."""
    ws = [w for w in _WORD.findall(question.lower()) if len(w) >= 3 and w not in STOPWORDS]
    return list(dict.fromkeys(_stem()(ws)))


def names(text: str) -> set[str]:
    """The names of ``text``: its runs of 3 characters or more of letters, digits and '-' that start with a
    capital letter ("Jam's" -> "Jam"), capitalised stop words left out."""
    return set(_NAME.findall(text)) - _CAPITAL_STOP


@lru_cache(maxsize=4096)
def _title(title: str) -> str:
    t = strip_disambiguator(title or "").strip().lower()
    return t if len(t) >= 3 else ""


#: What the list features read of one candidate: its title and text lower-case, and the text's names.
Facts = tuple[str, frozenset[str]]


def text_facts(title: str, text: str) -> Facts:
    """The :data:`Facts` of a candidate of document title ``title`` and text ``text``."""
    return f"{title} {text}".lower(), frozenset(names(text))


def list_rows(question: str, pool: Sequence[Candidate], texts: Sequence[str]) -> np.ndarray:
    """float64 (len(pool), len(GBM_FEATURES)): the gbm ranker's feature rows of the pool's candidates, in pool
    order (sorted best first by the weighted sum, as :func:`kbgraph.query.propagation.ranking_learned.feature_rows` wants), from
    their terms, titles and ``texts`` (one per candidate, "" when unknown)."""
    return facts_rows(question, pool, [text_facts(c.title, t) for c, t in zip(pool, texts, strict=True)])


def facts_rows(
    question: str, pool: Sequence[Candidate], facts: Sequence[Facts], base: np.ndarray | None = None
) -> np.ndarray:
    """:func:`list_rows` from each candidate's :data:`Facts` (:func:`text_facts`) instead of its text; ``base``:
    the pool's :func:`kbgraph.query.propagation.ranking_learned.feature_rows` when already computed (the blend ranker's)."""
    n = len(pool)
    out = np.zeros((n, len(GBM_FEATURES)))
    if n == 0:
        return out
    base = feature_rows(question, pool) if base is None else base
    out[:, : len(FEATURES)] = base
    terms = base[:, _TERM_COLUMNS]  # Chunk's rank is rank_chunk
    rank = np.empty_like(terms)
    np.put_along_axis(rank, np.argsort(-terms, axis=0, kind="stable"), np.arange(n, dtype=float)[:, None], axis=0)
    out[:, _RANK_COLUMNS] = np.where(terms > 0, 1.0 / (1.0 + rank), 0.0)
    titles = [_title(c.title) for c in pool]
    lowered = [f[0] for f in facts]
    # question coverage: cover[i, b] = c_i has a word starting with the question's stem b
    stems = question_stems(question)
    cover = np.zeros((n, max(1, len(stems))), dtype=bool)
    for b, stem in enumerate(stems):
        cover[:, b] = [stem in text and contains_phrase(text, stem, prefix=True) for text in lowered]
    anchors = {
        "q": np.flatnonzero(base[:, _TITLE_IN_Q] > 0).tolist(),
        "chunk": np.argsort(-base[:, _CHUNK], kind="stable")[:TOP].tolist(),
        "weighted": list(range(min(TOP, n))),
        "bm25": [i for i in np.argsort(-base[:, _RANK_BM25], kind="stable")[:TOP].tolist() if base[i, _RANK_BM25] > 0],
    }
    every = sorted({j for js in anchors.values() for j in js})  # the anchors, each once
    at = {j: k for k, j in enumerate(every)}
    found = [f[1] for f in facts]
    in_q = {w.capitalize() for w in _WORD.findall(question.lower())} | set(_WORD.findall(question))
    rel = _relations(titles, lowered, found, every, cover if stems else None, in_q, [c.title for c in pool])
    for ai, a in enumerate(ANCHORS):
        if anchors[a]:
            start = _FIRST_RELATION + ai * len(RELATIONS)
            out[:, start : start + len(RELATIONS)] = rel[[at[j] for j in anchors[a]]].max(axis=0)
    sizes = np.array([len(ns) for ns in found], dtype=float)
    in_names = np.array([len(ns & in_q) for ns in found], dtype=float)
    out[:, _COL["q_names"]] = np.divide(in_names, sizes, out=np.zeros(n), where=sizes > 0)
    out[:, _COL["q_cover"]] = cover.sum(axis=1) / len(stems) if stems else 0.0
    seen: dict[str, int] = {}
    doc_rank = _COL["doc_rank"]
    for i, c in enumerate(pool):
        out[i, doc_rank] = seen.get(c.title, 0)
        seen[c.title] = seen.get(c.title, 0) + 1
    return out


def _relations(
    titles: list[str],
    lowered: list[str],
    found: list[frozenset[str]],
    every: list[int],
    cover: np.ndarray | None,
    in_q: set[str],
    own_titles: list[str],
) -> np.ndarray:
    """float64 (len(every), n, len(RELATIONS)): each anchor's relations to every candidate (the module's table), 0
    for the candidates of the anchor's own title."""
    n, m = len(found), len(every)
    # names shared with an anchor, weighted by how few pool chunks have them (a name of the question is no bridge)
    wanted = frozenset().union(*(found[j] for j in every))
    index = {x: v for v, x in enumerate(wanted)}
    has = np.zeros((n, len(index)), dtype=bool)
    for i, ns in enumerate(found):
        for x in ns & wanted:
            has[i, index[x]] = True
    count = has.sum(axis=0)
    weight = np.divide(1.0, np.log2(1.0 + count), out=np.zeros(len(index)), where=count > 0)
    rel = np.zeros((m, n, len(RELATIONS)))
    if len(index):
        bridge = weight * np.array([x not in in_q for x in index])
        anchor = has[every]  # (m, names)
        rel[:, :, 0] = (has[None, :, :] * (anchor * weight)[:, None, :]).max(axis=2)
        rel[:, :, 1] = (has[None, :, :] * (anchor * bridge)[:, None, :]).max(axis=2)
    for k, j in enumerate(every):
        lj, tj = lowered[j], titles[j]
        rel[k, :, 2] = [1.0 if ti and ti in lj and contains_phrase(lj, ti) else 0.0 for ti in titles]
        if tj:
            rel[k, :, 3] = [1.0 if tj in li and contains_phrase(li, tj) else 0.0 for li in lowered]
    if cover is not None:
        rel[:, :, 4] = (cover[None, :, :] | cover[every][:, None, :]).sum(axis=2) / cover.shape[1]
    ids: dict[str, int] = {}
    own = np.array([ids.setdefault(t, len(ids)) for t in own_titles])
    rel[own[every][:, None] == own[None, :]] = 0.0
    return rel


_COL = {f: i for i, f in enumerate(GBM_FEATURES)}
_TERM_COLUMNS = [FEATURES.index(layer) for layer in LAYERS[1:]]
_RANK_COLUMNS = [_COL[f"rank_{layer}"] for layer in LAYERS[1:]]
_TITLE_IN_Q, _CHUNK, _RANK_BM25 = FEATURES.index("title_in_q"), FEATURES.index("Chunk"), FEATURES.index("rank_bm25")
_FIRST_RELATION = _COL[f"{RELATIONS[0]}_{ANCHORS[0]}"]
