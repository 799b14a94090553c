"""Records of the query side: what retrieval returns (``ScoredChunk`` with its score ``Contribution``s, the
layer ``Seeds`` of PIKE-RAG §5.2.3) and what ``KnowledgeBase.ask`` returns (``Answer``, PIKE-RAG §5.3,
Algorithm 1). Every query module imports its records from here; this module imports no other query module."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Discriminator, Field, Tag


class Contribution(BaseModel):
    """One term of a chunk's score (kbgraph.query.propagation.propagate): ``weight`` × ``similarity`` (× ``factor``) =
    ``score``."""

    #: The score term: a layer's seeds (Chunk, AtomicQuestion, Triple, Entity, EntityText, FullText, Tag, Section,
    #: Document) or a hop (Hop, TitleHop, Next, TripleHop); docs/scoring.md.
    term: str
    node_id: str
    text: str = ""
    similarity: float
    weight: float
    factor: float = 1.0
    score: float


class RankerTerm(BaseModel):
    """One feature's part in the learned ranker's score of a chunk (kbgraph.query.propagation.ranking_learned): the feature's
    ``value`` and its ``contribution`` w·(value - μ)/σ; a chunk's contributions plus the model's intercept
    are its score."""

    feature: str
    value: float
    contribution: float


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
    ranking: list[RankerTerm] = Field(default_factory=list)  # with explain and ranker=learned
    #: One result per page (setting ``max_chunks_per_page``): the page's further chunks that ranked before the top k
    #: was filled, best first. The result stands for its page; these are its evidence too (an answer reads them:
    #: kbgraph.query.graph ``with_pages``), not results of their own.
    same_page: list[ScoredChunk] = Field(default_factory=list)


class Seeds(BaseModel):
    """Per layer: node id -> (similarity, text); and the question's embedding (``dimension`` floats), which
    makes the Chunk term exact for candidate chunks outside the Chunk seeds (None: those get 0)."""

    layers: dict[str, dict[str, tuple[float, str]]] = Field(default_factory=dict)
    query_vector: list[float] | None = None
    question: str = ""  # the text the seeds were searched with (the learned ranker's title feature)
    #: BM25's top ``ranker_bm25_k`` chunks for ``question``, (chunk id, BM25 score) best first: the learned
    #: ranker's bm25 features and pool additions (empty with ranker=weights).
    bm25: list[tuple[str, float]] = Field(default_factory=list)
    #: The corpus generation read with the seeds (kbgraph.query.bm25 ``corpus_generation``): the key of the
    #: in-memory adjacency (kbgraph.query.propagation.adjacency); None when it was not read.
    generation: list[Any] | None = None


class Citation(BaseModel):
    """A chunk the answer rests on: ``chunk_id``, its document's title (``document_title``; its id when it has
    none) and source URI, ``section`` (the section path), ``page`` (1-based for paged formats, else None) and
    ``quote`` (the chunk's most relevant sentence, or its beginning)."""

    chunk_id: str
    document_title: str
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
    # 'atom' (atomic tag selection), 'chunk' (backup chunk selection), 'learned' (the learned proposer of
    # settings.decomposer.decomposer_model, PIKE-RAG §5.3.3: lines 3-5 in one call) or '' (none)
    selection: str = ""
    selector_thinking: str = ""


class MigresRound(BaseModel):
    """One iteration of MIGRES (paper 002 §3; kbgraph.query.methods.migres): the queries (iteration 1: the question
    itself, §3.1; later: the Query Generator's for the Main Module's ``missing_information``), the passages
    the re-ranking filter kept with their kept sentences (§3.2), the LLM's own knowledge when it kept none
    (``knowledge_prompting``, §4.5), the Leaf Module's extractions and the Main Module's judgement."""

    class MigresSentence(BaseModel):
        """A sentence (a table row for a table chunk) the filter kept: its cosine to the passage's query."""

        text: str
        score: float

    class MigresPassage(BaseModel):
        """A chunk the filter kept for ``query``: its cosine to the query (``score``), the sentences kept and
        ``whole`` when the chunk scored above all of its sentences and was kept whole (§3.2)."""

        chunk_id: str
        query: str
        score: float
        document_title: str = ""
        whole: bool = False
        sentences: list[MigresRound.MigresSentence] = Field(default_factory=list)

    class MigresExtraction(BaseModel):
        """A statement of the Leaf Module and the chunks it cites; ``knowledge``: it rests on the LLM's own
        knowledge (§4.5), so it cites no chunk."""

        info: str
        chunk_ids: list[str] = Field(default_factory=list)
        knowledge: bool = False

    type: Literal["migres"] = "migres"
    round: int
    missing_information: str = ""
    generated: bool = False  # the queries come from the Query Generator (False: the question itself)
    queries: list[str] = Field(default_factory=list)
    retriever: str = ""  # 'graph' or 'bm25' (settings.migres.migres_retriever)
    retrieved: int = 0  # chunks retrieved for the queries, before the filter
    passages: list[MigresPassage] = Field(default_factory=list)
    knowledge_prompting: bool = False
    knowledge: list[str] = Field(default_factory=list)  # the LLM's text per query (never a citation)
    extractions: list[MigresExtraction] = Field(default_factory=list)
    dropped: list[str] = Field(default_factory=list)  # statements citing no passage shown: left out
    answerable: bool = False
    answer: str = ""
    confidence: int | None = None
    explanation: str = ""
    note: str = ""

    def sub_questions(self) -> list[str]:
        """The iteration's targeted single-hop queries, saved as (:SubQuestion) nodes of the rationale
        (kbgraph.query.rationale); none in iteration 1, which retrieves with the question itself."""
        return list(self.queries) if self.generated else []

    def summary_lines(self) -> list[str]:
        """What ``kbgraph ask --trace`` prints for this round, one line each (kbgraph.cli.render)."""
        lines = [f"round {self.round}: queries {self.queries}"]
        if self.missing_information:
            lines.insert(1, f"missing: {self.missing_information}")
        lines.append(f"{self.retriever or 'retrieval'}: {self.retrieved} chunks, {len(self.passages)} kept")
        for p in self.passages:
            what = "whole chunk" if p.whole else "; ".join(f"{s.score:.2f} “{s.text[:120]}”" for s in p.sentences)
            lines.append(f"  {p.score:.2f} {p.document_title or p.chunk_id} [{p.chunk_id}]: {what}")
        if self.knowledge_prompting:
            lines.append("knowledge prompting (no chunk passed the filter; not a citation):")
            lines += [f"  “{k[:160]}”" for k in self.knowledge]
        for e in self.extractions:
            source = "LLM knowledge" if e.knowledge else ", ".join(e.chunk_ids)
            lines.append(f"extracted: {e.info} ← {source}")
        lines += [f"dropped (no support): {d}" for d in self.dropped]
        if self.answerable:
            conf = f" (confidence {self.confidence})" if self.confidence is not None else ""
            lines.append(f"answerable: {self.answer}{conf}")
        elif self.explanation or self.answer:
            lines.append(f"unanswerable: {self.explanation}")
        if self.note:
            lines.append(self.note)
        return lines


class HiragRound(BaseModel):
    """One round of HiRAG (paper 004 §4, Algorithm 1 of its appendix A.2; kbgraph.query.methods.hirag): the Decomposer's
    sub-question (or its stop: ``stop``), the entity and the candidate documents of the Retriever's document
    level (§4.3), a tie and the rewritten sub-question (th1, eq. 4), every chunk tried with the Filter's verdict
    (§4.4; ``rethink``: the highest rethink level reached), the fallback retrieval used and the sub-answer."""

    class HiragDocument(BaseModel):
        """A candidate document: its lexical ``match`` to the entity (2 = exact), the name it matched by
        (``via`` 'title' or 'entity') and whether the round tried one of its chunks."""

        document_id: str
        title: str
        match: float
        via: str
        name: str = ""
        tried: bool = False

    class HiragAttempt(BaseModel):
        """One single-candidate try (Algorithm 1 loop step ``t``): the chunk, its ``score`` (cosine to the
        sub-question, or the propagation score for a fallback), ``level`` ('first': the first chunk of the first
        document; 'chunk': a chunk-level rethink; 'document': the first chunk after a document-level rethink;
        'fallback'), the Filter's response r (eq. 6) and the Verify verdict."""

        t: int
        level: str
        chunk_id: str
        document_id: str = ""
        document_title: str = ""
        score: float = 0.0
        response: str = ""
        verified: bool = False
        verdict: str = ""  # the Verify answer as written

    type: Literal["hirag"] = "hirag"
    round: int
    sub_question: str = ""
    # '' (the sub-question was answered or given up), 'enough' (the Definer: "That's enough"), 'repeat' (a
    # sub-question asked before) or 'empty' (no sub-question): the loop stopped at this round
    stop: str = ""
    decomposer_output: str = ""
    entity: str = ""
    documents: list[HiragDocument] = Field(default_factory=list)
    tie: list[str] = Field(default_factory=list)  # titles of the tied documents (more than th1)
    rewrite: str = ""  # q* (eq. 4)
    rewrite_from: str = ""  # 'answer' (an earlier sub-answer names the entity) or 'question' (the original)
    attempts: list[HiragAttempt] = Field(default_factory=list)
    rethink: str = ""  # '', 'chunk' or 'document': the highest rethink level reached at the document level
    # '' or why the whole-KB propagation retrieval ran: 'tie', 'no_document' (no title or entity matched) or
    # 'gave_up' (th3 tries, or the candidates ran out); fallback_query is what it retrieved with
    fallback: str = ""
    fallback_query: str = ""
    answer: str = ""  # the verified sub-answer ('' when none was verified)
    chunk_id: str | None = None  # the verified chunk
    note: str = ""

    def sub_questions(self) -> list[str]:
        """The round's sub-question, saved as (:SubQuestion) nodes of the rationale (kbgraph.query.rationale);
        none for a round that stopped the loop."""
        return [self.sub_question] if self.sub_question and not self.stop else []

    def summary_lines(self) -> list[str]:
        """What ``kbgraph ask --trace`` prints for this round, one line each (kbgraph.cli.render)."""
        if self.stop == "enough":
            return [f"round {self.round}: “{self.decomposer_output[:120]}” → the Definer: answerable, stop"]
        if self.stop:
            why = "a repeated sub-question" if self.stop == "repeat" else "no sub-question"
            return [f"round {self.round}: {why} “{(self.sub_question or self.decomposer_output)[:120]}” → stop"]
        lines = [f"round {self.round}: sub-question “{self.sub_question}”"]
        if self.entity:
            docs = "; ".join(f"{d.title} ({d.match:.2f} {d.via}{', tried' if d.tried else ''})" for d in self.documents)
            lines.append(f"entity “{self.entity}”: {docs or 'no matching document'}")
        if self.tie:
            lines.append(f"tie: {len(self.tie)} documents titled like the entity ({'; '.join(self.tie[:5])})")
        if self.rewrite:
            lines.append(
                f"rewrite (with the {'earlier answer' if self.rewrite_from == 'answer' else 'question'}): "
                f"“{self.rewrite}”"
            )
        fallback = ""
        if self.fallback:
            why = {"tie": "tie", "no_document": "no matching document", "gave_up": "gave up"}.get(self.fallback, "")
            fallback = f"fallback ({why}): propagation retrieval over the whole KB for “{self.fallback_query}”"
        for a in self.attempts:
            if fallback and a.level == "fallback":
                lines.append(fallback)
                fallback = ""
            where = f"{a.document_title or a.document_id} [{a.chunk_id}]"
            lines.append(
                f"try {a.t} ({a.level}) {a.score:.3f} {where}: {'yes' if a.verified else 'no'} — “{a.response[:120]}”"
            )
        if fallback:  # no chunk to try
            lines.append(fallback)
        if self.rethink:
            lines.append(f"rethink: up to the {self.rethink} level")
        lines.append(f"answer: {self.answer} [{self.chunk_id}]" if self.chunk_id else "answer: none verified")
        if self.note:
            lines.append(self.note)
        return lines


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
    ``[n]`` of its citation (n = 1-based index into ``citations``). Method 'auto' (kbgraph.query.methods.classify,
    PIKE-RAG §3.2, §4.2) sets ``question_class`` (factual | linkable_reasoning | predictive | creative |
    unknown), ``question_subtype`` (bridging | comparative | quantitative | summarizing, linkable reasoning
    only) and ``route`` (``"<level>:<method>"``: ``"L1:l1"`` or ``"L2:pike"``); None for every other method."""

    question: str
    answer: str
    method: str
    rationale: str = ""
    retrieval_only: bool = False
    citations: list[Citation] = Field(default_factory=list)
    trace: list[TraceStep] = Field(default_factory=list)
    chunks: list[ScoredChunk] = Field(default_factory=list)
    usage: UsageReport = Field(default_factory=UsageReport)
    question_class: str | None = None
    question_subtype: str | None = None
    route: str | None = None


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
