"""Question classification and level routing, method 'auto' (the default with an LLM): PIKE-RAG (paper 000)
§3.2 "Task classification", §3.3 "RAG system level" (Table 1) and §4.2 "Phased system development".

1. **Classify** (§3.2, Figure 1): one JSON request (``prompts.classify``) puts the question into one of four
   classes: ``factual`` (answers explicitly present in the corpus), ``linkable_reasoning`` with its subtype
   ``bridging`` | ``comparative`` | ``quantitative`` | ``summarizing`` (answers implicitly in the corpus),
   ``predictive`` or ``creative`` (answers not present in the corpus), with the LLM's rationale
   (:class:`QuestionClass`). The LLM sees the question only: §3.2 notes that "the classification of a
   question may shift with changes in the knowledge base" (its Q1/Q2/Q3), which a classifier reading the
   question alone cannot see. The class is parsed as the enum of the answer's JSON schema (``Kind``: the
   schema sent as ``response_format`` constrains it to those four values), not by substring: a value is one of
   them up to letter case and the separator between its words ('Linkable-Reasoning' is linkable_reasoning),
   and anything else ('non-factual', 'predictive (not factual)', 'Linkable & Reasoning (multiple facts)') is
   invalid, which gets the client's one repair request. An answer that is still no valid JSON of a known class
   is kind ``unknown`` (not an error). A subtype that is not one of the four is dropped (None).
2. **Route** (:func:`route`; §3.3 Table 1, §4.2): the lowest level whose system answers the class.

   ==================  =====  ==========================================================================
   class               level  method run (its function in the registry, kbgraph.query.methods.registry)
   ==================  =====  ==========================================================================
   factual             L1     'l1': score-propagation retrieval (§5.2.3) + the QA prompt (kbgraph.query.methods.l1)
   linkable_reasoning  L2     'pike': knowledge-aware task decomposition, Algorithm 1 (§5.3.2)
   predictive          L2     'pike'; the answer's rationale states the class and that L3 is not built
   creative            L2     'pike'; the answer's rationale states the class and that L4 is not built
   unknown             L2     'pike' (the most capable system built); the rationale says why
   ==================  =====  ==========================================================================

   L3 (predictive: knowledge structuring and induction, a forecasting submodule) and L4 (creative:
   multi-agent planning) are sketched in §4.2 and Table 2, not specified: the paper gives no algorithm,
   prompt or evaluation for them, so kbgraph routes those classes to L2 and says so in the answer.

The :class:`~kbgraph.query.models.Answer` of the routed method comes back with ``method='auto'``,
``question_class`` (the kind), ``question_subtype``, ``route`` (``"<level>:<method>"``, e.g. ``"L2:pike"``), its
rationale prefixed with the classification, and the usage of both steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, field_validator

from kbgraph.llm.base import LLM, usable_json
from kbgraph.llm.bounds import MaxChars, answer_schema
from kbgraph.query.answering import UsageMeter
from kbgraph.query.context import QueryContext
from kbgraph.query.methods.decompose import answer_pike
from kbgraph.query.graph import text_of
from kbgraph.query.methods.l1 import answer_l1
from kbgraph.query.models import Answer
from kbgraph.query.prompts.classify import classify_messages

#: The four classes of §3.2 (Figure 1), the enum of the classification answer's JSON schema.
Kind = Literal["factual", "linkable_reasoning", "predictive", "creative"]
#: The four linkable-reasoning subtypes of §3.2.
Subtype = Literal["bridging", "comparative", "quantitative", "summarizing"]
KINDS: tuple[str, ...] = get_args(Kind)
SUBTYPES: tuple[str, ...] = get_args(Subtype)
#: Level of the system that answers each class (§3.3 Table 1, §4.2); L3/L4 are not built: L2 answers.
LEVELS: dict[str, str] = {
    "factual": "L1",
    "linkable_reasoning": "L2",
    "predictive": "L2",
    "creative": "L2",
    "unknown": "L2",
}
#: The answer method (kbgraph.query.methods.registry) of each level built.
LEVEL_METHODS: dict[str, str] = {"L1": "l1", "L2": "pike"}
#: Those methods' functions, the registry's own (kbgraph.query.methods.registry lists this module's ``answer_auto``, so
#: this module imports the two functions rather than the registry; tests/unit/test_classify_routes.py checks
#: that they are the registry's).
LEVEL_RUN: dict[str, Callable[[str, QueryContext], Answer]] = {"l1": answer_l1, "pike": answer_pike}
#: What the paper's level for a class would be, where kbgraph answers it lower (§3.3 Table 1).
_UNBUILT = {
    "predictive": ("L3", "knowledge structuring and induction and a forecasting submodule"),
    "creative": ("L4", "multi-agent planning"),
}


def enum_value(v: Any, allowed: tuple[str, ...]) -> Any:
    """``v`` as the member of ``allowed`` it spells, up to letter case, surrounding space and the separator
    between words (space, '-', '_' or '&': 'Linkable-Reasoning', 'linkable & reasoning'); any other value is
    returned unchanged, for the schema's enum to reject. Never a substring match: 'non-factual' is no class."""
    if not isinstance(v, str):
        return v
    t = "_".join(v.strip().lower().replace("-", " ").replace("_", " ").replace("&", " ").split())
    return t if t in allowed else v


@answer_schema
class ClassifyOutput(BaseModel):
    """The JSON answer of the classification prompt (§3.2): the LLM's ``rationale``, the ``kind`` and, for
    linkable-reasoning questions, the ``subtype`` (None otherwise, or when it names no subtype)."""

    rationale: Annotated[str, MaxChars(400)] = ""
    kind: Kind
    subtype: Subtype | None = None

    @field_validator("rationale", mode="before")
    @classmethod
    def _rationale(cls, v: Any) -> str:
        return text_of(v)

    @field_validator("kind", mode="before")
    @classmethod
    def _enum_kind(cls, v: Any) -> Any:
        return enum_value(v, KINDS)

    @field_validator("subtype", mode="before")
    @classmethod
    def _enum_subtype(cls, v: Any) -> str | None:
        t = enum_value(v, SUBTYPES)
        return t if t in SUBTYPES else None

    def model_post_init(self, _context: Any) -> None:
        if self.kind != "linkable_reasoning":
            self.subtype = None


class QuestionClass(ClassifyOutput):
    """A question's class (§3.2): ``kind`` one of ``KINDS``, or ``unknown`` when the LLM gave no usable
    classification (``rationale`` then says why); ``subtype`` for ``linkable_reasoning`` only."""

    # a question's class adds "unknown" (no usable classification) to the kinds of the LLM's answer: pydantic
    # lets a subclass redeclare a field, mypy reads it as an incompatible override
    kind: Literal[Kind, "unknown"]  # type: ignore[assignment]


def classify_question(question: str, llm: LLM) -> QuestionClass:
    """The class of ``question`` by one JSON request to ``llm`` (§3.2, ``prompts.classify``). An answer that is
    not valid classification JSON even after the client's repair request gives ``kind='unknown'`` with the
    reason as ``rationale``. Raises LLMError only for a failing server (unreachable, 401, timeouts)."""
    out, why = usable_json(llm, classify_messages(question), ClassifyOutput)
    if out is None:
        return QuestionClass(kind="unknown", rationale=f"no valid classification JSON from the LLM: {why}")
    return QuestionClass.model_validate(out.model_dump())


def route(kind: str) -> str:
    """The level ('L1' or 'L2') that answers questions of ``kind`` (§3.3 Table 1, §4.2; module docstring):
    factual -> L1; linkable_reasoning, predictive, creative and unknown -> L2 (L3/L4 are not built)."""
    return LEVELS.get(kind, "L2")


def class_statement(qc: QuestionClass, level: str) -> str:
    """The rationale's first paragraph: the class, the classifier's reasoning, the route and, for predictive
    and creative questions, that the paper's L3/L4 system is not built."""
    name = qc.kind + (f" ({qc.subtype})" if qc.subtype else "")
    text = f"Question class: {name} (PIKE-RAG §3.2); answered by the {level} system ({LEVEL_METHODS[level]})."
    if qc.kind in _UNBUILT:
        paper_level, modules = _UNBUILT[qc.kind]
        text += (
            f" A {qc.kind} question needs an {paper_level} system ({modules}, §3.3 Table 1, §4.2), which the "
            f"paper sketches but does not specify; kbgraph answers it with the L2 system, so this answer "
            f"rests on the retrieved facts, not on an {paper_level} module."
        )
    elif qc.kind == "unknown":
        text += " The classification failed, so the most capable system built (L2) answers."
    if qc.rationale:
        text += f" Classifier: {qc.rationale}"
    return text


def answer_auto(question: str, ctx: QueryContext) -> Answer:
    """Classify ``question`` (§3.2) and answer it with the method of its level (§4.2, module docstring),
    looked up in the registry. Returns that method's Answer with ``method='auto'``, ``question_class``,
    ``question_subtype``, ``route`` (``"L1:l1"`` or ``"L2:pike"``), the classification stated at the start
    of its rationale, and the usage of the classification and the routed method together. In a streamed ask
    the routed method streams as usual (the final answer carries the class and route).
    Args:
        question: the clean question.
        ctx: the knowledge base (store, settings, embedder; ``ctx.llm`` required).
    Returns:
        The routed method's ``Answer`` (above).
    Raises:
        QueryError: ``ctx.llm`` is None.
        LLMError: the LLM server fails (an unusable classification routes to L2).
        StoreError: the store fails a statement."""
    llm = ctx.need_llm()
    meter = UsageMeter(llm)
    qc = classify_question(question, llm)
    level = route(qc.kind)
    method = LEVEL_METHODS[level]
    answer: Answer = LEVEL_RUN[method](question, ctx)
    statement = class_statement(qc, level)
    answer.rationale = f"{statement}\n\n{answer.rationale}" if answer.rationale else statement
    answer.method, answer.question_class, answer.question_subtype = "auto", qc.kind, qc.subtype
    answer.route = f"{level}:{method}"
    answer.usage = meter.report()
    return answer
