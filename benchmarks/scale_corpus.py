"""The passage corpus of benchmarks/scale.py: the repo's real passages first, then generated ones, deterministic
for a seed, written as a kbgraph passage corpus (``.jsonl``, one ``{"id", "title", "text"}`` a line, the format
``kbgraph ingest`` and ``kbgraph eval`` read: kbgraph.ingest.parse.parse_passages_jsonl).

    .venv/bin/python -m benchmarks.scale_corpus --size 10000 --out /tmp/scale-corpus.jsonl [--seed 37]
        [--questions 200]

**Order** (a corpus of size N is the first N passages of this order, so every size contains the smaller ones):

1. the gold passages of the recall questions: the first ``--questions`` (200) questions of
   examples/multihop/2wikimultihopqa/dev500, in file order, their ``gold_passage_ids`` in the order they first
   appear (200 questions: 502 passages); fewer questions when the smallest size cannot hold their gold passages;
2. the other 2Wiki dev500 passages, in file order (the distractors of those questions come first);
3. MuSiQue (hipporag_train100) and HotpotQA (hipporag_train100) passages, in file order
   (3,301 + 1,890 + 994 = 6,185 real passages in all);
4. generated passages ``gen:0``, ``gen:1``, ... (below).

**Generation** (``random.Random(seed)``, one generator drawn in passage order, so passage ``gen:i`` is the same in
every corpus that holds it): the 6,185 real passages are cut into sentences (after ``.``, ``!`` or ``?`` followed
by white space and a capital letter or digit) and their named entities found once with kbgraph's own spaCy
pipeline (``kbgraph.ingest.nlp.load_nlp``, en_core_web_sm: PERSON, GPE, LOC, ORG, FAC are replaced; dates,
numbers, nationalities and the rest are kept). Generated passage i:

* picks a template passage uniformly among the real ones; keeps its first sentence; each later sentence is kept
  with probability 1/2, else replaced by a sentence drawn uniformly from all real sentences (so the length mix
  is the sources': 53 % 2Wiki, 31 % MuSiQue, 16 % HotpotQA);
* gets a fresh title: a fresh name of the template title's kind if the title is one of its entities, else a new "work" title
  of 1-3 generated words, with the template's parenthesis kept (``(film)``, ``(1975 film)``); a title taken
  before gets `` (2)``, `` (3)``, ...;
* replaces every occurrence of the template title (without its parenthesis) by the new title, and every entity
  of the kept sentences by a name of its kind (one name per distinct entity text in the passage; a one-word
  PERSON that is the last word of a replaced longer PERSON gets that name's last word): with probability 1/4 a
  name drawn uniformly from the names of that kind generated so far (entities shared across passages, as real
  links between articles are), else a fresh one (so distinct entities grow with the corpus rather than
  collapsing into a few);
* names are built from syllables (onset + vowel, 30 x 12 of them, then a coda, often none, e.g. "Brailor
  Vatheon"): PERSON = first name of 2-3 syllables + last name of 2-3 syllables; GPE, LOC, FAC = 2-3 syllables + a suffix of ("", "ton", "burg",
  "ville", "ford", "port", "ia", " Falls", " Valley"); ORG = a place name + one of ("University", "Records",
  "Football Club", "Company", "Institute", "Party", "Orchestra", "Press"). A title is always a fresh name; the
  space is about 10^12 person names, so fresh names practically never collide.

The seed (default 37, issue 37) and the spaCy model version fix the corpus; ``--size`` only cuts it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.common import SETS, corpus_path, set_path

QUESTIONS = set_path("2wiki").with_name("dev500.questions.jsonl")
SOURCES = [corpus_path(name) for name in SETS]  # 2Wiki, MuSiQue, HotpotQA
SEED = 37
REPLACED = ("PERSON", "GPE", "LOC", "ORG", "FAC")
P_KEEP_SENTENCE = 0.5
P_REUSE_NAME = 0.25

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_PAREN = re.compile(r"^(.*?)\s*(\([^()]*\))\s*$")

ONSETS = [
    "b",
    "c",
    "d",
    "f",
    "g",
    "h",
    "j",
    "k",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "t",
    "v",
    "w",
    "z",
    "br",
    "ch",
    "cl",
    "dr",
    "gr",
    "kr",
    "pr",
    "sh",
    "st",
    "th",
    "tr",
    "vr",
]
VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "ia", "io", "ou", "ei", "au"]
CODAS = ["", "", "", "n", "r", "l", "s", "th", "nd", "rt", "m", "x"]
PLACE_SUFFIXES = ["", "ton", "burg", "ville", "ford", "port", "ia", " Falls", " Valley"]
ORG_SUFFIXES = ["University", "Records", "Football Club", "Company", "Institute", "Party", "Orchestra", "Press"]


@dataclass
class Source:
    """A real passage cut into sentences, each with its entities (start, end, label) relative to the sentence."""

    id: str
    title: str
    sentences: list[tuple[str, list[tuple[int, int, str]]]] = field(default_factory=list)


def _word(rng: random.Random, syllables: int) -> str:
    """``syllables`` times onset + vowel, then a coda (often none)."""
    return ("".join(rng.choice(ONSETS) + rng.choice(VOWELS) for _ in range(syllables)) + rng.choice(CODAS)).capitalize()


def fresh_name(rng: random.Random, kind: str) -> str:
    """A new name of entity kind ``kind`` (PERSON, GPE, LOC, FAC, ORG, or WORK for a title)."""
    if kind == "PERSON":
        return f"{_word(rng, rng.choice((2, 3)))} {_word(rng, rng.choice((2, 3)))}"
    if kind == "WORK":
        return " ".join(_word(rng, rng.choice((1, 2, 3))) for _ in range(rng.choice((1, 2, 3))))
    place = _word(rng, rng.choice((2, 3))) + rng.choice(PLACE_SUFFIXES)
    return f"{place} {rng.choice(ORG_SUFFIXES)}" if kind == "ORG" else place


def real_passages(question_count: int, min_size: int) -> tuple[list[dict], list[dict]]:
    """(the real passages in the order of the docstring, the recall questions): the first ``question_count``
    2Wiki dev500 questions, fewer if their gold passages do not fit in ``min_size``."""
    questions = [json.loads(x) for x in QUESTIONS.read_text(encoding="utf-8").splitlines() if x.strip()]
    chosen: list[dict] = []
    gold: dict[str, None] = {}
    for q in questions[:question_count]:
        more = [p for p in q["gold_passage_ids"] if p not in gold]
        if len(gold) + len(more) > min_size:
            break
        chosen.append(q)
        gold.update(dict.fromkeys(more))
    passages: list[dict] = []
    for src in SOURCES:
        passages += [json.loads(x) for x in src.read_text(encoding="utf-8").splitlines() if x.strip()]
    by_id = {p["id"]: p for p in passages}
    first = [by_id[g] for g in gold]
    return first + [p for p in passages if p["id"] not in gold], chosen


def sources(passages: list[dict], cache: Path | None = None) -> list[Source]:
    """The passages cut into sentences with their entities (kbgraph's spaCy pipeline, NER only); kept in the
    JSON file ``cache`` (keyed by the passages and the spaCy model's name and version) when given."""
    from kbgraph.ingest.nlp import load_nlp

    nlp = load_nlp()
    key = hashlib.sha256(json.dumps([passages, nlp.meta.get("name"), nlp.meta.get("version")]).encode()).hexdigest()
    if cache is not None and cache.is_file():
        saved = json.loads(cache.read_text(encoding="utf-8"))
        if saved.get("key") == key:
            return [
                Source(
                    id=x["id"],
                    title=x["title"],
                    sentences=[(t, [tuple(e) for e in ents]) for t, ents in x["sentences"]],
                )
                for x in saved["sources"]
            ]
    keep = {"ner", "tok2vec"}
    disable = [name for name in nlp.pipe_names if name not in keep]
    out = []
    docs = nlp.pipe((p["text"] for p in passages), disable=disable, batch_size=64)
    for p, doc in zip(passages, docs, strict=True):
        ents = [(e.start_char, e.end_char, e.label_) for e in doc.ents if e.label_ in REPLACED]
        src = Source(id=p["id"], title=p["title"])
        pos = 0
        for sent in _SENTENCE_END.split(p["text"]):
            start = p["text"].find(sent, pos)
            end = start + len(sent)
            pos = end
            src.sentences.append((sent, [(a - start, b - start, lab) for a, b, lab in ents if start <= a and b <= end]))
        out.append(src)
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"key": key, "sources": [vars(x) for x in out]}), encoding="utf-8")
    return out


class Generator:
    """Generated passages gen:0, gen:1, ... from ``srcs`` (see the module docstring), in order."""

    def __init__(self, srcs: list[Source], seed: int = SEED):
        self.srcs = srcs
        self.rng = random.Random(seed)
        self.sentences = [(s, e) for src in srcs for s, e in src.sentences if s.strip()]
        self.names: dict[str, list[str]] = {k: [] for k in (*REPLACED, "WORK")}
        self.titles: set[str] = set()
        self.i = 0

    def _name(self, kind: str, fresh: bool = False) -> str:
        pool = self.names[kind]
        if not fresh and pool and self.rng.random() < P_REUSE_NAME:
            return self.rng.choice(pool)
        name = fresh_name(self.rng, kind)
        pool.append(name)
        return name

    def next(self) -> dict:
        rng = self.rng
        tpl = rng.choice(self.srcs)
        kept = [tpl.sentences[0]] + [
            s if rng.random() < P_KEEP_SENTENCE else rng.choice(self.sentences) for s in tpl.sentences[1:]
        ]
        m = _PAREN.match(tpl.title)
        base, paren = (m.group(1), " " + m.group(2)) if m else (tpl.title, "")
        mapping: dict[str, str] = {}
        kinds = {sent[a:b]: lab for sent, ents in tpl.sentences for a, b, lab in ents}
        new_base = self._name(kinds.get(base, "WORK"), fresh=True)
        mapping[base] = new_base
        title = new_base + paren
        n = 2
        while title in self.titles:
            title, n = f"{new_base}{paren} ({n})", n + 1
        self.titles.add(title)
        parts = []
        for sent, ents in kept:
            out, pos = [], 0
            for a, b, lab in ents:
                if a < pos:
                    continue
                text = sent[a:b]
                if text not in mapping:
                    mapping[text] = self._surname(text, lab, mapping) or self._name(lab)
                out += [sent[pos:a], mapping[text]]
                pos = b
            out.append(sent[pos:])
            parts.append("".join(out))
        text = " ".join(parts)
        if base and len(base) > 3:
            text = text.replace(base, new_base)
        passage = {"id": f"gen:{self.i}", "title": title, "text": text}
        self.i += 1
        return passage

    @staticmethod
    def _surname(text: str, label: str, mapping: dict[str, str]) -> str | None:
        """A one-word PERSON that is the last word of an already replaced longer name: that name's last word."""
        if label != "PERSON" or " " in text:
            return None
        for old, new in mapping.items():
            if " " in old and old.split()[-1] == text:
                return new.split()[-1]
        return None


def build(
    size: int,
    *,
    seed: int = SEED,
    questions: int = 200,
    min_size: int | None = None,
    cache: Path | None = None,
    log=print,
) -> tuple[list[dict], list[dict]]:
    """(the first ``size`` passages of the corpus, the recall questions); ``min_size`` (default ``size``): the
    smallest corpus the questions' gold passages must fit in; ``cache``: the entity file of ``sources``."""
    real, chosen = real_passages(questions, min(size, min_size or size))
    if size <= len(real):
        return real[:size], chosen
    log(f"finding the entities of {len(real):,} real passages (spaCy)...")
    gen = Generator(sources(real, cache), seed)
    return real + [gen.next() for _ in range(size - len(real))], chosen


def write_jsonl(passages: list[dict], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for p in passages:
            f.write(json.dumps(p, ensure_ascii=False) + "\n")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--show", type=int, default=0, help="print the first N generated passages")
    ap.add_argument("--cache", type=Path, default=None, help="JSON file keeping the real passages' entities")
    args = ap.parse_args()
    passages, chosen = build(args.size, seed=args.seed, questions=args.questions, cache=args.cache)
    write_jsonl(passages, args.out)
    print(
        f"{len(passages):,} passages ({sum(p['id'].startswith('gen:') for p in passages):,} generated), "
        f"{len(chosen)} recall questions -> {args.out}"
    )
    for p in [p for p in passages if p["id"].startswith("gen:")][: args.show]:
        print(json.dumps(p, ensure_ascii=False))


if __name__ == "__main__":
    main()
