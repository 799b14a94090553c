"""The chunk stage with an LLM: the recurrent text split of PIKE-RAG §5.2.1 (Figure 5) and LLM table
summaries (§5.1.2), used by ``kbgraph.ingest.chunk.build_structure`` when an LLM is configured.

**Recurrent split** (§5.2.1: "the algorithm iteratively splits the text into chunks ... Each chunk is
summarized using a predefined prompt template that incorporates both the forward summary and the current
chunk ... The algorithm adjusts the text by removing the processed chunk and updating the forward summary").
The input is the sentence units of one section block (spaCy sentences, over-long sentences already cut
into ``chunk_tokens``-word pieces, see ``chunk.py``). Then, until no unit is left:

1. the *window* is the longest run of leading units with at most ``window_tokens`` words (at least one);
2. the LLM gets the forward summary (empty at the start of the section) and the window, one numbered
   sentence per line (``prompts.RECURRENT_SPLIT_PROMPT``), and answers :class:`WindowSplit` JSON: the
   chunks it cuts from the start of the window, each as the number of its last sentence plus a summary,
   and the updated forward summary. When the window is not the end of the section the model is told to
   stop after the last complete topic; when it is, to cover it all;
3. each cut becomes a chunk (its sentences rendered as in the offline path: paragraph breaks as blank
   lines), with the model's summary; the forward summary is replaced by the new one; the window's
   sentences after the last cut stay at the head of the text and start the next window.

Because chunks are cut at sentence numbers, never from text the model writes, a chunk's text is always
the section's own text. Chunks do not overlap (the summaries carry the context), so the chunks of a
section concatenate to exactly its sentences, in order.

**Robustness.** An answer that is not valid JSON for the schema gets the LLM layer's one repair request
(``BaseLLM.complete_json``). An answer that still fails, or whose boundaries are not in the window (a
number outside [0, last], not increasing, or no chunk at all), makes that one window fall back to the
offline rule: its units are packed greedily into chunks of at most ``chunk_tokens`` words (no overlap, no
summary); unless the window ends the section, the last of those chunks is not emitted but rolls into the
next window, and the forward summary is kept. Each step consumes at least one sentence, so the loop ends
and no text is lost or repeated. Errors of the LLM server itself (unreachable, 401, ...: an ``LLMError``
not caused by an unusable answer) propagate: the document fails and is retried by the next run.

Sections that fit in one chunk (``<= chunk_tokens`` words) are not sent to the LLM: there is nothing to
split, and they stay exactly as offline (no summary).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, Field, field_validator

from kbgraph.ingest import prompts
from kbgraph.ingest.chunk_units import Unit, render
from kbgraph.llm.bounds import MaxChars, MaxItems, answer_schema
from kbgraph.llm.base import usable_json
from kbgraph.ingest.tables import llm_summarize_table
from kbgraph.llm.base import LLM

log = logging.getLogger(__name__)

#: The caller's keys of the blocks and tables of one document (kbgraph.ingest.chunk: id() of the block).
K = TypeVar("K", bound=Hashable)

_NUMBER = re.compile(r"^\s*\[?\s*[A-Za-z]?\s*(\d+)\s*\]?\s*$")
_WS = re.compile(r"\s+")


# --- the LLM's answer ----------------------------------------------------------------------------------


#: Bounds of a window's answer (kbgraph.llm.bounds sizes the token budget from them): chunks cut from one
#: window, characters of a chunk's summary and of the forward summary.
MAX_CUTS = 8
SUMMARY_CHARS = 240
FORWARD_SUMMARY_CHARS = 400


class ChunkCut(BaseModel):
    """One chunk cut from the start of the window: the number of its last sentence and its summary."""

    end: int = Field(description="number of the chunk's last sentence")
    summary: Annotated[str, MaxChars(SUMMARY_CHARS)] = ""

    @field_validator("end", mode="before")
    @classmethod
    def _number(cls, v: Any) -> Any:
        # "[3]", "3", "S3" all mean sentence 3
        if isinstance(v, str) and (m := _NUMBER.match(v)):
            return int(m.group(1))
        return v

    @field_validator("summary", mode="before")
    @classmethod
    def _summary(cls, v: Any) -> Any:
        return "" if v is None else _WS.sub(" ", str(v)).strip()


@answer_schema
class WindowSplit(BaseModel):
    """The LLM's answer for one window (``prompts.RECURRENT_SPLIT_PROMPT``), at most ``MAX_CUTS`` chunks (a
    window's later sentences start the next window)."""

    chunks: Annotated[list[ChunkCut], MaxItems(MAX_CUTS)] = Field(default_factory=list)
    forward_summary: Annotated[str, MaxChars(FORWARD_SUMMARY_CHARS)] = ""

    @field_validator("forward_summary", mode="before")
    @classmethod
    def _fs(cls, v: Any) -> Any:
        return "" if v is None else _WS.sub(" ", str(v)).strip()


class SplitChunk(BaseModel):
    """A chunk of the recurrent split. ``page``: the page of its first sentence. ``summary``: the LLM's
    (None for a fallback chunk). ``source``: 'llm' (cut by the model) or 'fallback' (offline packing of a
    window whose answer was unusable). ``window``: the 0-based step that produced it."""

    text: str
    page: int | None = None
    summary: str | None = None
    source: Literal["llm", "fallback"] = "llm"
    window: int = 0


# --- one section -------------------------------------------------------------------------------------


def _window_size(units: Sequence[Unit], window_tokens: int) -> int:
    size = total = 0
    for u in units:
        if size and total + u.tokens > window_tokens:
            break
        size += 1
        total += u.tokens
    return size


def number_window(units: Sequence[Unit]) -> str:
    """The window as the model sees it: '[i] sentence' lines, a blank line between paragraphs."""
    lines: list[str] = []
    prev = None
    for i, u in enumerate(units):
        if prev is not None and u.para != prev:
            lines.append("")
        lines.append(f"[{i}] {u.text}")
        prev = u.para
    return "\n".join(lines)


def _greedy(units: Sequence[Unit], chunk_tokens: int) -> list[list[Unit]]:
    """The offline packing (``chunk._pack`` without overlap), as groups of units."""
    groups: list[list[Unit]] = []
    cur: list[Unit] = []
    size = 0
    for u in units:
        if cur and size + u.tokens > chunk_tokens:
            groups.append(cur)
            cur, size = [], 0
        cur.append(u)
        size += u.tokens
    if cur:
        groups.append(cur)
    return groups


def _check(answer: WindowSplit, n: int) -> str | None:
    """Why the cuts cannot be used for a window of ``n`` sentences, or None."""
    if not answer.chunks:
        return "no chunk cut"
    prev = -1
    for c in answer.chunks:
        if not 0 <= c.end < n:
            return f"sentence [{c.end}] is not in the window ([0]..[{n - 1}])"
        if c.end <= prev:
            return f"chunk ends are not increasing ([{prev}] then [{c.end}])"
        prev = c.end
    return None


def _ask(llm: LLM, messages: list[dict[str, str]]) -> tuple[WindowSplit | None, str]:
    """The model's answer, or (None, why) when it is unusable even after the LLM layer's repair."""
    return usable_json(llm, messages, WindowSplit)


def recurrent_split(
    units: Sequence[Unit],
    llm: LLM,
    *,
    chunk_tokens: int,
    window_tokens: int,
    title: str = "",
    section: str = "",
) -> list[SplitChunk]:
    """Split one section block with the LLM (see the module docstring for the protocol).

    ``units``: the block's sentence units in reading order (each at most ``chunk_tokens`` words);
    ``llm``: an object with ``complete_json(messages, schema)``; ``chunk_tokens``: the target chunk size in
    words (also the fallback's maximum); ``window_tokens``: words per window (raised to ``chunk_tokens`` if
    smaller); ``title``/``section``: the document title and section path shown to the model.
    Returns the chunks in order; their sentences are exactly ``units``, each once. Raises LLMError only when
    the LLM server fails (not for unusable answers).
    """
    window_tokens = max(window_tokens, chunk_tokens)
    rest = list(units)
    forward = ""
    out: list[SplitChunk] = []
    step = 0
    while rest:
        n = _window_size(rest, window_tokens)
        window, final = rest[:n], n == len(rest)
        messages = prompts.recurrent_split_messages(
            number_window(window),
            last=n - 1,
            final=final,
            forward_summary=forward,
            title=title,
            section=section,
            chunk_tokens=chunk_tokens,
        )
        answer, why = _ask(llm, messages)
        if answer is not None:
            why = _check(answer, n) or ""
        if answer is not None and not why:
            start = 0
            for cut in answer.chunks:
                group = window[start : cut.end + 1]
                out.append(
                    SplitChunk(
                        text=render(group), page=group[0].page, summary=cut.summary or None, source="llm", window=step
                    )
                )
                start = cut.end + 1
            consumed = start
            forward = answer.forward_summary or forward
        else:
            log.info("LLM split of %r window %d unusable (%s); offline split for this window", section, step, why)
            groups = _greedy(window, chunk_tokens)
            if not final and len(groups) > 1:
                groups = groups[:-1]  # the window's tail starts the next window
            for group in groups:
                out.append(SplitChunk(text=render(group), page=group[0].page, source="fallback", window=step))
            consumed = sum(len(g) for g in groups)
        rest = rest[consumed:]
        step += 1
    return out


# --- a document's blocks and tables, concurrently -----------------------------------------------------------


def llm_chunk_stage(
    llm: LLM,
    splits: Mapping[K, tuple[Sequence[Unit], str]],
    tables: Mapping[K, tuple[str, str]],
    *,
    title: str,
    chunk_tokens: int,
    window_tokens: int,
    workers: int = 4,
) -> tuple[dict[K, list[SplitChunk]], dict[K, str]]:
    """Run the recurrent split of every block in ``splits`` ({key: (units, section path)}) and the LLM
    summary of every table in ``tables`` ({key: (markdown, section path)}) with up to ``workers`` requests
    in flight (the steps of one block are sequential: each needs the previous forward summary).
    Returns ({key: chunks}, {key: table summary}). Raises LLMError when the LLM server fails."""

    def split(key: K) -> list[SplitChunk]:
        units, path = splits[key]
        return recurrent_split(
            units, llm, chunk_tokens=chunk_tokens, window_tokens=window_tokens, title=title, section=path
        )

    def table(key: K) -> str:
        markdown, path = tables[key]
        context = f"{title} > {path}" if path else title
        return llm_summarize_table(markdown, llm, context=context)

    if not splits and not tables:
        return {}, {}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        split_futures = {k: pool.submit(split, k) for k in splits}
        table_futures = {k: pool.submit(table, k) for k in tables}
        chunks = {k: f.result() for k, f in split_futures.items()}
        summaries = {k: f.result() for k, f in table_futures.items()}
    return chunks, summaries


__all__ = ["ChunkCut", "SplitChunk", "WindowSplit", "llm_chunk_stage", "number_window", "recurrent_split"]
