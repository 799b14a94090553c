"""The sentence units chunks are made of, shared by the greedy packing (kbgraph.ingest.chunk) and the recurrent
LLM splitter (kbgraph.ingest.chunk_llm): a unit, and the text of a run of units with its paragraph breaks."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Unit:
    """A sentence (or a window of an over-long sentence) on its way into a chunk."""

    text: str
    page: int | None
    para: int  # paragraph index inside its block: a change means a paragraph break
    tokens: int


def render(units: list[Unit]) -> str:
    """The text of consecutive units: a space between sentences of a paragraph, a blank line between paragraphs."""
    out = ""
    prev = None
    for u in units:
        if prev is None:
            out = u.text
        elif u.para != prev.para:
            out += "\n\n" + u.text
        else:
            out += " " + u.text
        prev = u
    return out.strip()
