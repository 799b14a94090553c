"""Prompts of the learned (knowledge-aware) decomposer: PIKE-RAG §6.4, Algorithm 3's ``prompt_x`` and ``prompt_y``
(paper 000, "Prompt Template for prompt_x", "Prompt Template for prompt_y if a sub-question is provided / if no
sub-question is provided"), used to write the SFT pairs (kbgraph.eval.decomposer_sft) and to ask a fine-tuned
proposer at inference (kbgraph.query.methods.decomposer_learned, §5.3.3), so the model sees at inference exactly the
prompt it was trained on.

Sources, quoted verbatim except where noted:

* ``PROMPT_X``: "Based on the given information, determine whether a follow-up question is necessary or not.",
  the "Original Question" and "Existing Context" headings and the output format, verbatim. The paper fills
  "Existing Context" with "A list of sub-questions and their answers" without a layout; ours is one
  ``Sub-question i: ...`` line followed by ``Answer i: ...`` per step, where the answer is the chunk the
  sub-question selected (Algorithm 2 keeps chunks, not short answers: "our method preserves the entire chunk
  as contextual information", §6.5), as ``Title: <title>. Content: <text>`` like every other context here.
  An empty context is written ``None``.
* ``PROMPT_Y_TRUE`` / ``PROMPT_Y_FALSE``: verbatim.
* ``SYSTEM``: the decomposition system message of Algorithm 1's proposer (paper 003 A.7's prompts are used with
  it in the authors' code); the paper prints no system message for Algorithm 3.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

Messages = list[dict[str, str]]

SYSTEM = "You are a helpful AI assistant good at question decomposition."

PROMPT_X = """Based on the given information, determine whether a follow-up question is necessary or not.

Original Question
{question}

Existing Context
{context}
Make sure your output align with the following format:
<decompose>False</decompose>
OR
<decompose>True</decompose>
<sub-question>a follow-up question</sub-question>"""

PROMPT_Y_TRUE = "<decompose>True</decompose>\n<sub-question>{sub_question}</sub-question>"
PROMPT_Y_FALSE = "<decompose>False</decompose>"

_DECOMPOSE = re.compile(r"<decompose>\s*(true|false)\s*</decompose>", re.IGNORECASE)
_SUB_QUESTION = re.compile(r"<sub-question>\s*(.*?)\s*</sub-question>", re.IGNORECASE | re.DOTALL)


def prompt_x(question: str, steps: Sequence[tuple[str, str]]) -> str:
    """Algorithm 3 line 6: the original question and the (sub-question, answer) pairs so far."""
    lines = []
    for i, (sub, answer) in enumerate(steps, start=1):
        lines += [f"Sub-question {i}: {' '.join(sub.split())}", f"Answer {i}: {answer.strip()}"]
    return PROMPT_X.format(question=question.strip(), context="\n".join(lines) if lines else "None")


def prompt_y(decompose: bool, sub_question: str | None) -> str:
    """Algorithm 3 lines 8 and 13: the decomposition indicator and the sub-question (None when ``decompose`` is
    False)."""
    if decompose:
        return PROMPT_Y_TRUE.format(sub_question=" ".join((sub_question or "").split()))
    return PROMPT_Y_FALSE


def messages_x(question: str, steps: Sequence[tuple[str, str]]) -> Messages:
    """The chat request of ``prompt_x`` (system + user), as trained and as asked at inference."""
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt_x(question, steps)}]


def parse_y(text: str) -> tuple[bool | None, str | None]:
    """A proposer's reply in ``prompt_y`` form as (decompose, sub-question): (True, 'q') for a follow-up
    question, (False, None) when none is needed, (None, None) when the reply has no ``<decompose>`` tag, or says
    True without a non-empty ``<sub-question>``."""
    m = _DECOMPOSE.search(text or "")
    if m is None:
        return None, None
    if m.group(1).lower() == "false":
        return False, None
    sub = _SUB_QUESTION.search(text[m.end() :]) or _SUB_QUESTION.search(text)
    q = " ".join(sub.group(1).split()) if sub else ""
    return (True, q) if q else (None, None)
