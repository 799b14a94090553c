"""A learned decomposer in Algorithm 1: PIKE-RAG §5.3.3, "This trained proposer can then directly suggest atomic
queries q^t during inference, which means lines 3 to 5 in Algorithm 1 can be replaced by a single call to this
learned proposer" (paper 000).

With ``settings.decomposer.decomposer_model`` set (a model fine-tuned on ``kbgraph decomposer sft`` data, served by the same
OpenAI-compatible endpoint as ``llm_model``), each round of Algorithm 1 (kbgraph.query.methods.decompose) is:

1. one request to that model with Algorithm 3's ``prompt_x`` (kbgraph.query.prompts.decomposer): the question and
   the (sub-question, chunk) pairs of the earlier rounds, exactly as the SFT pairs were written;
2. its ``prompt_y`` reply: ``<decompose>False</decompose>`` ends the loop (lines 6-8); ``<decompose>True</decompose>
   <sub-question>q^t</sub-question>`` is the atomic query;
3. line 10, "Fetch the relevant chunk c^t corresponding to q^t": the atomic question of the knowledge base nearest
   to q^t (vector index, cosine >= δ, chunks already in the context excluded, top K listed) and its chunk. No LLM
   is asked to select: the model was trained to propose the atomic question that was selected.

The trace marks such a round ``selection='learned'`` and its note names the model.
"""

from __future__ import annotations

from kbgraph.query.answering import context_of
from kbgraph.query.context import QueryContext
from kbgraph.query.graph import chunk_details, retrieve_atomic, scored_chunk
from kbgraph.query.models import ScoredChunk, TraceRound
from kbgraph.query.prompts.decomposer import messages_x, parse_y


def learned_steps(context: list[ScoredChunk], trace: list[TraceRound]) -> list[tuple[str, str]]:
    """The (q^i, a^i) pairs so far: each earlier round's selected atomic question with its chunk as the prompts
    show it (``Title: ... Content: ...``), as ``decomposer_sft.sft_pairs`` writes them."""
    chosen = [r.selected for r in trace if r.chunk_id and r.selected is not None]
    return [(s.text, context_of([c])) for s, c in zip(chosen, context, strict=False)]


def learned_round(
    ctx: QueryContext,
    question: str,
    context: list[ScoredChunk],
    focus: list[str],
    trace: list[TraceRound],
    rnd: TraceRound,
) -> bool:
    """Lines 3-5 (and 10-11) of Algorithm 1 with the learned proposer ``ctx.settings.decomposer.decomposer_model``: one
    request; on a sub-question, its nearest atomic question's chunk joins ``context`` (and its text ``focus``).
    Fills ``rnd``. Returns False when the loop ends (no further sub-question, an unreadable reply, nothing
    reaches δ). Raises LLMError for a failing server."""
    settings, store = ctx.settings, ctx.store
    model = settings.decomposer.decomposer_model
    reply = ctx.need_llm().complete(messages_x(question, learned_steps(context, trace)), model=model)
    rnd.selection, rnd.thinking = "learned", reply.strip()[:1000]
    decompose, sub = parse_y(reply)
    if decompose is None:
        rnd.note = f"stopped: the learned proposer {model} gave no <decompose> answer"
        return False
    if not decompose or sub is None:  # (a sub-question comes with decompose True)
        rnd.note = f"stopped: the learned proposer {model} needs no further sub-question"
        return False
    rnd.proposals = [sub]
    known = {c.id for c in context}
    rnd.candidates = retrieve_atomic(
        store,
        [sub],
        ctx.embedder.embed([sub]),
        k=settings.decompose.decompose_candidates,
        threshold=settings.decompose.decompose_threshold,
        exclude=known,
    )
    if not rnd.candidates:
        rnd.note = f"stopped: no atomic question reaches similarity {settings.decompose.decompose_threshold:g} (learned proposer)"
        return False
    chosen = rnd.candidates[0]
    row = chunk_details(store, [chosen.chunk_id]).get(chosen.chunk_id, {"id": chosen.chunk_id})
    rnd.selected, rnd.chunk_id = chosen, chosen.chunk_id
    context.append(scored_chunk(row, chosen.score))
    focus.append(chosen.text or question)
    rnd.note = f"learned proposer {model}: lines 3-5 in one call (PIKE-RAG §5.3.3)"
    return True
