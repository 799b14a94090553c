"""Records of the query side: what retrieval returns (``ScoredChunk`` with its score ``Contribution``s, the
layer ``Seeds`` of PIKE-RAG §5.2.3) and what ``KnowledgeBase.ask`` returns (``Answer``, PIKE-RAG §5.3,
Algorithm 1). Every query module imports its records from here; this module imports no other query module."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Discriminator, Field, Tag


class Contribution(BaseModel):
    """One term of a chunk's score (kbgraph.query.propagation): ``weight`` × ``similarity`` (× ``factor``) =
    ``score``."""

    layer: str  # Chunk | AtomicQuestion | Triple | Entity | FullText | Section | Document | Hop | Next
    node_id: str
    text: str = ""
    similarity: float
    weight: float
    factor: float = 1.0
    score: float


class ScoredChunk(BaseModel):
    """A retrieved chunk with its provenance (for citations) and, with explain, its score breakdown. ``score``
    is the method's own: a propagated score, a cosine similarity in [-1, 1] or a BM25 score."""

    id: str
    score: float
    text: str = ""
    summary: str | None = None
    kind: str = "text"
    page: int | None = None
    section_path: str = ""
    document_id: str = ""
    document_title: str = ""
    document_uri: str = ""
    breakdown: list[Contribution] = Field(default_factory=list)


class Seeds(BaseModel):
    """Per layer: node id -> (similarity, text); and the question's embedding (``dimension`` floats), which
    makes the Chunk term exact for candidate chunks outside the Chunk seeds (None: those get 0)."""

    layers: dict[str, dict[str, tuple[float, str]]] = Field(default_factory=dict)
    query_vector: list[float] | None = None


class Citation(BaseModel):
    """A chunk the answer rests on. ``page`` is 1-based for paged formats; ``quote`` is the chunk's most
    relevant sentence (or its beginning)."""

    chunk_id: str
    document: str
    document_uri: str = ""
    section: str = ""
    page: int | None = None
    quote: str = ""


class Candidate(BaseModel):
    """An atomic question retrieved for a proposal: its similarity and the chunk it belongs to."""

    question_id: str
    text: str
    chunk_id: str
    score: float
    query: str = ""  # the proposal (or, in a fallback, the original question) that retrieved it


class TraceRound(BaseModel):
    """One round of Algorithm 1: proposals (line 3), candidates (line 4), the selection (line 5), and the
    chunk that joined the context (line 10), or None when the round stopped the loop. Also the rounds of
    the baselines that retrieve step by step (naive_hr, self_ask)."""

    type: Literal["pike"] = "pike"
    round: int
    thinking: str = ""
    proposals: list[str] = Field(default_factory=list)
    candidates: list[Candidate] = Field(default_factory=list)
    selected: Candidate | None = None
    chunk_id: str | None = None
    note: str = ""
    # '' (the proposals found candidates), 'question_atoms' or 'question_chunks': the backup retrieval used
    fallback: str = ""
    selection: str = ""  # 'atom' (atomic tag selection), 'chunk' (backup chunk selection) or '' (none)
    selector_thinking: str = ""


class MigresRound(BaseModel):
    """One iteration of MIGRES (paper 002 §3; kbgraph.query.migres): fields owned by that module."""

    type: Literal["migres"] = "migres"
    round: int


class HiragRound(BaseModel):
    """One round of HiRAG (paper 004 §4, Algorithm 1 of its appendix A.2; kbgraph.query.hirag): fields owned
    by that module."""

    type: Literal["hirag"] = "hirag"
    round: int


def _trace_type(v: Any) -> str:
    """The ``type`` of a trace item, a model or its dict; items saved before ``type`` existed are 'pike'."""
    return (v.get("type") if isinstance(v, dict) else getattr(v, "type", None)) or "pike"


#: One item of ``Answer.trace``: a round of the method that answered, told apart by ``type``.
TraceStep = Annotated[
    Annotated[TraceRound, Tag("pike")] | Annotated[MigresRound, Tag("migres")] | Annotated[HiragRound, Tag("hirag")],
    Discriminator(_trace_type),
]


class UsageReport(BaseModel):
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    cached_calls: int = 0


class Answer(BaseModel):
    """The answer with its citations and rationale. ``retrieval_only``: no LLM was configured, the answer is
    the 1-3 best-matching sentences or table rows of the top chunks, one a line, each ending with the
    ``[n]`` of its citation (n = 1-based index into ``citations``)."""

    question: str
    answer: str
    method: str
    rationale: str = ""
    retrieval_only: bool = False
    citations: list[Citation] = Field(default_factory=list)
    trace: list[TraceStep] = Field(default_factory=list)
    chunks: list[ScoredChunk] = Field(default_factory=list)
    usage: UsageReport = Field(default_factory=UsageReport)


class AskEvent(BaseModel):
    """One item of a streamed ask (``KnowledgeBase.ask(..., stream=True)``, kbgraph.query.streaming), by ``type``:

    * ``"delta"``: ``text``, the next piece of the answer text, as the LLM writes it;
    * ``"reset"``: the deltas so far are void and the answer text starts again (the LLM's JSON answer was
      unusable and a repair request follows, or the final answer differs from what was streamed);
    * ``"round"``: ``round``, one round of Algorithm 1 (PIKE-RAG §5.3.2) as soon as it finished;
    * ``"answer"``: ``answer``, the final :class:`Answer`, the same as without streaming; always the last item.

    The deltas after the last reset joined equal ``answer.answer``."""

    type: Literal["delta", "reset", "round", "answer"]
    text: str = ""
    round: TraceStep | None = None
    answer: Answer | None = None
