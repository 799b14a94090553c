"""A small passage corpus for ingestion tests: ``musique_sample(examples_dir, out_dir, passages, questions)``
writes the gold passages of the first ``questions`` MuSiQue questions, then other passages up to ``passages``,
to ``out_dir/musique<passages>.jsonl`` and returns (that path, the questions' texts)."""

from __future__ import annotations

import json
from pathlib import Path


def musique_sample(examples_dir: Path, out_dir: Path, passages: int, questions: int) -> tuple[Path, list[str]]:
    base = examples_dir / "multihop" / "musique"
    qs = [json.loads(x) for x in (base / "hipporag_train100.questions.jsonl").open()][:questions]
    rows = {p["id"]: p for p in map(json.loads, (base / "hipporag_train100.corpus.jsonl").open())}
    chosen = list(dict.fromkeys(pid for q in qs for pid in q["gold_passage_ids"]))
    chosen += [pid for pid in rows if pid not in chosen][: passages - len(chosen)]
    path = out_dir / f"musique{passages}.jsonl"
    path.write_text("".join(json.dumps(rows[pid]) + "\n" for pid in chosen), encoding="utf-8")
    return path, [q["question"] for q in qs]
