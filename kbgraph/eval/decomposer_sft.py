"""Supervised fine-tuning data for a knowledge-aware decomposer: PIKE-RAG §6.4 Algorithm 3 "Transform each
decomposition trajectory into data pairs for SFT" (paper 000), over the trajectories of Algorithm 2
(kbgraph.eval.decomposer_data).

A trajectory (q, [(q^1, a^1), ..., (q^t, a^t)], a) gives t + 1 pairs (lines 4-14):

    x_i     = prompt_x(q, [(q^1, a^1), ..., (q^{i-1}, a^{i-1})])    y_i     = prompt_y(True, q^i)     i = 1..t
    x_{t+1} = prompt_x(q, [(q^1, a^1), ..., (q^t, a^t)])            y_{t+1} = prompt_y(False, None)

q^i is the atomic question selected in round i and a^i the chunk it brought into the context (the prompts:
kbgraph.query.prompts.decomposer). Line 8 prints ``prompt_y(True, a^i)``, but ``prompt_y`` "takes two inputs: a
decomposition indicator and an optional sub-question" and its template writes ``<sub-question>{The given
sub-question}</sub-question>``: y_i carries q^i.

§6.4 trains "exclusively on decomposition trajectories that successfully lead to correct answers":
``min_score`` keeps trajectories whose score (judge accuracy, else F1) reaches it. Identical pairs (a question's
trajectories share their first steps) are written once. Output: chat fine-tuning JSONL, one
``{"messages": [{"role": "system", ...}, {"role": "user", x_i}, {"role": "assistant", y_i}]}`` a line, the
format OpenAI's fine-tuning API, TRL's SFTTrainer and LLaMA-Factory's ShareGPT/OpenAI loaders read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import BaseModel, Field

from kbgraph.errors import ConfigError
from kbgraph.eval.decomposer_data import Trajectory
from kbgraph.query.prompts import context_string
from kbgraph.query.prompts.decomposer import SYSTEM, prompt_x, prompt_y

TRAJECTORIES = "trajectories.jsonl"


class SFTPair(BaseModel):
    """One (x_i, y_i) of Algorithm 3, with where it comes from: the question id, the trajectory's ``sample``
    index and ``step`` i (1-based; t + 1 for the closing pair)."""

    question_id: str
    sample: int
    step: int
    x: str
    y: str

    def chat(self) -> dict[str, list[dict[str, str]]]:
        """The pair as one chat fine-tuning record: system, user (x_i), assistant (y_i)."""
        return {
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": self.x},
                {"role": "assistant", "content": self.y},
            ]
        }


class SFTReport(BaseModel):
    """What :func:`write_sft` wrote: trajectories read and kept (score >= ``min_score``), pairs written,
    duplicate pairs skipped, and the output path."""

    trajectories: int = 0
    kept: int = 0
    pairs: int = 0
    duplicates: int = 0
    min_score: float = 0.0
    out: Path
    questions: int = 0
    steps: dict[int, int] = Field(default_factory=dict)  # sub-questions per kept trajectory -> trajectories


def answer_text(title: str, text: str) -> str:
    """a^i: the chunk as every context of the prompts shows it (``Title: <title>. Content: <text>``)."""
    return context_string([(title, text)])


def sft_pairs(traj: Trajectory) -> list[SFTPair]:
    """Algorithm 3 on one trajectory: t + 1 pairs for its t selected sub-questions (module docstring)."""
    steps = [(q, answer_text(c.title, c.text)) for q, c in traj.sub_questions()]
    pairs = [
        SFTPair(
            question_id=traj.question_id,
            sample=traj.sample,
            step=i,
            x=prompt_x(traj.question, steps[: i - 1]),
            y=prompt_y(True, steps[i - 1][0]),
        )
        for i in range(1, len(steps) + 1)
    ]  # lines 4-10
    pairs.append(
        SFTPair(
            question_id=traj.question_id,
            sample=traj.sample,
            step=len(steps) + 1,
            x=prompt_x(traj.question, steps),
            y=prompt_y(False, None),
        )
    )  # lines 12-14
    return pairs


def read_trajectories(path: str | Path) -> Iterator[Trajectory]:
    """The trajectories of ``trajectories.jsonl`` (or of a ``kbgraph decomposer collect`` folder holding it), in
    file order; a last line cut short by a crash is skipped. Raises ConfigError when there is no such file."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / TRAJECTORIES
    if not p.is_file():
        raise ConfigError(f"no {TRAJECTORIES} at {p}: give the folder `kbgraph decomposer collect --out` wrote")
    lines = p.read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield Trajectory.model_validate_json(line)
        except ValueError as exc:
            if n == len(lines):  # an interrupted write
                return
            raise ConfigError(f"{p.name} line {n} is not a trajectory ({str(exc).splitlines()[0]})") from exc


def write_sft(trajectories: Iterable[Trajectory] | str | Path, out: str | Path, *, min_score: float = 1.0) -> SFTReport:
    """Write Algorithm 3's pairs of every trajectory whose ``score`` >= ``min_score`` to ``out`` as chat
    fine-tuning JSONL (module docstring); ``trajectories``: the trajectories or a collect folder / its
    ``trajectories.jsonl``. Returns the counts. Raises ConfigError for a missing input."""
    source = read_trajectories(trajectories) if isinstance(trajectories, (str, Path)) else trajectories
    out = Path(out).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    report = SFTReport(out=out.resolve(), min_score=min_score)
    seen: set[tuple[str, str]] = set()
    questions: set[str] = set()
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for traj in source:
            report.trajectories += 1
            if traj.score < min_score:
                continue
            report.kept += 1
            questions.add(traj.question_id)
            pairs = sft_pairs(traj)
            report.steps[len(pairs) - 1] = report.steps.get(len(pairs) - 1, 0) + 1
            for pair in pairs:
                if (pair.x, pair.y) in seen:
                    report.duplicates += 1
                    continue
                seen.add((pair.x, pair.y))
                f.write(json.dumps(pair.chat(), ensure_ascii=False) + "\n")
                report.pairs += 1
    tmp.replace(out)
    report.questions = len(questions)
    return report
