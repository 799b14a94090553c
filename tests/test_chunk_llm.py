"""The chunk stage with an LLM (PIKE-RAG §5.2.1 recurrent split with forward summaries, Figure 5; §5.1.2 LLM
table summaries), on the real documents of examples/docs.

The LLM is kbgraph.llm.fake.ScriptedLLM (the real client's JSON handling and repair request, scripted
answers): what is under test is the protocol around the model (what each call receives, how its answers
become chunks, what happens when an answer is unusable), not the model's judgement.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from kbgraph.errors import LLMError
from kbgraph.ingest import prompts
from kbgraph.ingest.chunk import _Block, _block_units, _pack, build_structure
from kbgraph.ingest.chunk_units import render as _render
from kbgraph.ingest.chunk_llm import ChunkCut, _greedy, recurrent_split
from kbgraph.ingest.chunk_units import Unit
from kbgraph.ingest.nlp import split_sentences
from kbgraph.ingest.parse import ParsedDocument, parse_file
from kbgraph.ingest.tables import llm_summarize_table, summarize_table
from kbgraph.llm.base import Messages
from kbgraph.llm.json_answers import REPAIR_PROMPT
from kbgraph.llm.fake import ScriptedLLM
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore
from kbgraph.text import parse_markdown_table

MAX = 50 * 1024 * 1024
_LINE = re.compile(r"^\[(\d+)\] (.*)$")


def _norm(texts: Iterable[str]) -> str:
    """The non-space characters of ``texts`` in order (sentence splitting may move a space: '537.' can
    come back as '537 .'; no character may be lost, added or repeated)."""
    return "".join("".join(t.split()) for t in texts)


@pytest.fixture(scope="module")
def duck(examples_dir: Path) -> ParsedDocument:
    return parse_file(examples_dir / "docs/html/wikipedia_duck.html", max_bytes=MAX)


@pytest.fixture(scope="module")
def taxonomy(duck: ParsedDocument) -> list[str]:
    """The paragraphs of the Duck article's 'Taxonomy' section (424 words in 3 paragraphs)."""
    out: list[str] = []
    inside = False
    for el in duck.elements:
        if el.kind == "heading":
            inside = el.text == "Taxonomy"
        elif inside and el.kind == "text" and el.text.strip():
            out.append(el.text)
    assert len(out) == 3 and sum(len(t.split()) for t in out) > 400
    return out


def _units(paragraphs: list[str], chunk_tokens: int) -> list[Unit]:
    block = _Block("sec", "Duck > Taxonomy", paragraphs=[(t, None) for t in paragraphs])
    return _block_units(block, list(split_sentences(paragraphs)), chunk_tokens)


def _user(call: Messages) -> str:
    return next(m["content"] for m in call if m["role"] == "user")


def _window(prompt: str) -> list[str]:
    """The numbered sentences of a split prompt, checking the numbering is 0..last."""
    body = prompt.split("# Window", 1)[1].split("# Task", 1)[0]
    lines = [m for m in (_LINE.match(x) for x in body.splitlines()) if m]
    assert [int(m.group(1)) for m in lines] == list(range(len(lines)))
    last = int(re.search(r"numbered \[0\] to \[(\d+)\]", prompt).group(1))  # type: ignore[union-attr]
    assert last == len(lines) - 1
    return [m.group(2) for m in lines]


def _forward(prompt: str) -> str:
    return prompt.split("# Forward summary", 1)[1].split("# Window", 1)[0].split("\n", 1)[1].strip()


def _answer(ends: list[int], fs: str, tag: str = "") -> str:
    return json.dumps(
        {"chunks": [{"end": e, "summary": f"{tag}chunk ending at [{e}]"} for e in ends], "forward_summary": fs}
    )


# --- the recurrent split --------------------------------------------------------------------------------


def test_windows_forward_summaries_and_rolling_tail(taxonomy: list[str]) -> None:
    """Each call sees the forward summary the previous call returned and a window that starts right after the
    previous call's last cut; the uncut tail rolls into the next window; the chunks are the cut sentences
    with the model's summaries and concatenate to the section text."""
    units = _units(taxonomy, 60)
    answers: list[tuple[list[int], str]] = []

    def model(messages: Messages) -> str:
        prompt = _user(messages)
        n = len(_window(prompt))
        final = "The section ends with sentence" in prompt
        k = len(answers)
        # cut every 3 sentences; leave the last 2 of a non-final window for the next window
        stop = n if final else max(1, n - 2)
        ends = list(range(2, stop, 3))
        if not ends or ends[-1] != stop - 1:
            ends.append(stop - 1)
        answers.append((ends, f"FS-{k}: the section so far, through call {k}"))
        return _answer(ends, answers[-1][1], tag=f"call {k} ")

    llm = ScriptedLLM(model)
    chunks = recurrent_split(units, llm, chunk_tokens=60, window_tokens=150, title="Duck", section="Duck > Taxonomy")

    assert len(llm.calls) >= 4  # 424 words in windows of <= 150 words
    pos = 0
    for k, call in enumerate(llm.calls):
        prompt = _user(call)
        assert "# Document\nDuck\nSection: Duck > Taxonomy" in prompt
        # the forward summary is the previous answer's (none for the first window)
        assert _forward(prompt) == (prompts.NO_FORWARD_SUMMARY if k == 0 else answers[k - 1][1])
        # the window is the longest run of <= 150 words starting where the previous cuts stopped
        window = _window(prompt)
        assert window == [u.text for u in units[pos : pos + len(window)]]
        words = sum(u.tokens for u in units[pos : pos + len(window)])
        assert words <= 150
        final = pos + len(window) == len(units)
        if not final:
            assert words + units[pos + len(window)].tokens > 150
            assert "The section continues after sentence" in prompt
        else:
            assert "The section ends with sentence" in prompt
        pos += answers[k][0][-1] + 1
    assert pos == len(units)
    assert "The section ends with sentence" in _user(llm.calls[-1])
    assert all("The section ends" not in _user(c) for c in llm.calls[:-1])

    # chunks: one per cut, with its summary, in order, covering the section exactly once
    expected, pos = [], 0
    for k, (ends, _) in enumerate(answers):
        start = pos
        for e in ends:
            expected.append((_render(units[start : pos + e + 1]), f"call {k} chunk ending at [{e}]", k))
            start = pos + e + 1
        pos = start
    assert [(c.text, c.summary, c.window) for c in chunks] == expected
    assert all(c.source == "llm" for c in chunks)
    assert _norm(c.text for c in chunks) == _norm(taxonomy)
    assert "\n\n" in "".join(c.text for c in chunks)  # paragraph breaks kept


def test_boundary_not_in_the_window_falls_back_for_that_window_only(taxonomy: list[str]) -> None:
    """Call 1 names sentence [999] (not in the window), call 2 gives decreasing ends: those windows are split
    by the offline packing (no summary, <= chunk_tokens words), their last piece rolls into the next window,
    the forward summary is kept; the other windows stay the model's. No text is lost or repeated."""
    units = _units(taxonomy, 60)
    log: list[dict[str, Any]] = []

    def model(messages: Messages) -> str:
        prompt = _user(messages)
        n = len(_window(prompt))
        k = len(log)
        if k == 1:
            ends = [1, 999]
        elif k == 2:
            ends = [3, 1]
        else:
            ends = [n - 1] if "The section ends" in prompt else [max(0, n - 3)]
        log.append({"n": n, "prompt": prompt, "fs": f"FS-{k}"})
        return _answer(ends, f"FS-{k}")

    llm = ScriptedLLM(model)
    chunks = recurrent_split(units, llm, chunk_tokens=60, window_tokens=150, title="Duck", section="Duck > Taxonomy")

    assert _norm(c.text for c in chunks) == _norm(taxonomy)  # covers the section, nothing twice
    by_window = {w: [c for c in chunks if c.window == w] for w in range(len(log))}
    assert [c.source for c in by_window[0]] == ["llm"]
    for w in (1, 2):
        assert by_window[w] and all(c.source == "fallback" and c.summary is None for c in by_window[w])
        assert all(len(c.text.split()) <= 60 for c in by_window[w])
    assert all(c.source == "llm" and c.summary for w in range(3, len(log)) for c in by_window[w])
    # the failed windows kept the forward summary of call 0; call 3 sees it too
    assert _forward(log[1]["prompt"]) == _forward(log[2]["prompt"]) == _forward(log[3]["prompt"]) == "FS-0"
    # window 1 starts after call 0's cut; its offline pieces are emitted but the last, which starts window 2
    pos1 = max(0, log[0]["n"] - 3) + 1
    w1 = units[pos1 : pos1 + log[1]["n"]]
    assert _window(log[1]["prompt"]) == [u.text for u in w1]
    groups = _greedy(w1, 60)
    assert len(groups) >= 2
    assert [c.text for c in by_window[1]] == [_render(g) for g in groups[:-1]]
    pos2 = pos1 + sum(len(g) for g in groups[:-1])
    assert _window(log[2]["prompt"])[0] == units[pos2].text == groups[-1][0].text
    assert len(log) >= 5


def test_invalid_json_gets_one_repair_then_falls_back(taxonomy: list[str]) -> None:
    units = _units(taxonomy, 60)
    n = len(units)
    # one window (the whole section): not JSON, then the repaired answer
    llm = ScriptedLLM(["Here are the chunks you asked for.", _answer([n // 2, n - 1], "all")])
    chunks = recurrent_split(units, llm, chunk_tokens=60, window_tokens=1000)
    assert len(llm.calls) == 2
    assert llm.calls[1][-1]["content"].startswith(REPAIR_PROMPT.split("{error}")[0])
    assert [c.source for c in chunks] == ["llm", "llm"]
    assert [c.text for c in chunks] == [_render(units[: n // 2 + 1]), _render(units[n // 2 + 1 :])]
    # still unusable after the repair: the offline packing (no overlap), nothing lost
    llm = ScriptedLLM(["no json", '{"chunks": "sentences 1 to 3"}'])
    chunks = recurrent_split(units, llm, chunk_tokens=60, window_tokens=1000)
    assert len(llm.calls) == 2
    assert [c.text for c in chunks] == [t for t, _ in _pack(units, 60, 0)]
    assert all(c.source == "fallback" and c.summary is None for c in chunks)
    assert _norm(c.text for c in chunks) == _norm(taxonomy)


def test_server_errors_propagate_and_sentence_numbers_are_lenient(taxonomy: list[str]) -> None:
    units = _units(taxonomy, 60)
    with pytest.raises(LLMError, match="unreachable"):
        recurrent_split(
            units, ScriptedLLM([LLMError("the LLM server is unreachable")]), chunk_tokens=60, window_tokens=1000
        )
    assert ChunkCut.model_validate({"end": "[7]", "summary": None}) == ChunkCut(end=7, summary="")
    assert ChunkCut.model_validate({"end": "S3"}).end == 3


# --- table summaries ---------------------------------------------------------------------------------------


def test_llm_table_summary_of_the_nics_table(examples_dir: Path) -> None:
    parsed = parse_file(examples_dir / "docs/pdf/fbi_nics_background_checks_2015-11.pdf", max_bytes=MAX)
    md = next(e.markdown for e in parsed.elements if e.kind == "table")
    caption, header, rows = parse_markdown_table(md)  # type: ignore[arg-type]
    states = [r[0] for r in rows]
    said = "Monthly NICS firearm background checks for November 2015, one row per state (Alabama, Alaska, ...)."
    llm = ScriptedLLM([json.dumps({"summary": said})])
    assert llm_summarize_table(md, llm, context="NICS report") == said  # type: ignore[arg-type]
    prompt = _user(llm.calls[0])
    assert "Caption: NICS Firearm Background Checks November - 2015" in prompt
    assert "Found in: NICS report" in prompt and f"It has {len(rows)} data rows" in prompt
    assert "| State / Territory | Permit | Handgun | Long Gun |" in prompt
    assert all(f"\n| {s} |" in prompt for s in states[:8])  # the first rows ...
    assert not any(f"\n| {s} |" in prompt for s in states[8:])  # ... and no more
    assert len(rows) > 50 and "Wyoming" in states
    # no usable answer even after the repair: the deterministic summary
    llm = ScriptedLLM(["It is a table.", '{"summary": "   "}'])
    assert llm_summarize_table(md, llm) == summarize_table(md)  # type: ignore[arg-type]
    assert len(llm.calls) == 2
    # a server failure is not hidden
    with pytest.raises(LLMError):
        llm_summarize_table(md, ScriptedLLM([LLMError("401")]))  # type: ignore[arg-type]


# --- build_structure and the offline path -----------------------------------------------------------------


def _model(messages: Messages) -> str:
    """A stateless scripted model for whole documents: cuts every 4 sentences (a non-final window leaves its
    last sentence), a forward summary naming the section and step, a summary quoting the chunk's first
    words; a fixed table summary; empty distillation answers."""
    prompt = _user(messages)
    if "# Window" in prompt:
        window = _window(prompt)
        section = re.search(r"^Section: (.*)$", prompt, re.M).group(1)  # type: ignore[union-attr]
        fs = _forward(prompt)
        step = 0 if fs == prompts.NO_FORWARD_SUMMARY else int(fs.rsplit("#", 1)[1]) + 1
        stop = len(window) if "The section ends" in prompt else max(1, len(window) - 1)
        ends = list(range(3, stop, 4))
        if not ends or ends[-1] != stop - 1:
            ends.append(stop - 1)
        starts = [0] + [e + 1 for e in ends[:-1]]
        cuts = [{"end": e, "summary": "About: " + " ".join(window[s].split()[:4])} for s, e in zip(starts, ends)]
        return json.dumps({"chunks": cuts, "forward_summary": f"{section} #{step}"})
    if prompt.startswith("# Table"):
        caption = re.search(r"^Caption: (.*)$", prompt, re.M).group(1)  # type: ignore[union-attr]
        return json.dumps({"summary": f"LLM table summary of {caption}."})
    if "extract as many questions" in prompt:
        return '{"questions": []}'
    if "Extract the knowledge graph" in prompt:
        return '{"entities": [], "triples": []}'
    raise AssertionError(f"unexpected prompt: {prompt[:200]}")


def test_offline_path_is_unchanged_and_the_llm_only_touches_long_blocks_and_tables(duck: ParsedDocument) -> None:
    offline = build_structure(duck)[2]
    assert offline == build_structure(duck, llm=None, llm_split=True)[2]
    assert all(c.summary is None for c in offline if c.kind == "text")
    assert all(c.summary == summarize_table(c.text) for c in offline if c.kind == "table")
    # the offline packing with its one-sentence overlap is what ran: a long section's chunks overlap
    citations = [c for c in offline if c.section_path.endswith("Citations")]
    assert len(citations) >= 3
    assert all(b.text.split()[0] in a.text for a, b in itertools.pairwise(citations))

    # an LLM without the recurrent split: same text chunks, only the table summaries are the LLM's
    llm = ScriptedLLM(_model)
    no_split = build_structure(duck, llm=llm, llm_split=False)[2]
    assert [(c.id, c.text) for c in no_split] == [(c.id, c.text) for c in offline]
    assert [c.summary for c in no_split if c.kind == "text"] == [None] * sum(c.kind == "text" for c in offline)
    assert [c.summary for c in no_split if c.kind == "table"] == [
        "LLM table summary of Duck.",
        "LLM table summary of Authority control databases.",
    ]
    assert len(llm.calls) == 2  # the two tables, nothing else

    # with the split: sections that fit in one chunk are untouched, long ones are the LLM's
    llm = ScriptedLLM(_model)
    document, _, chunks = build_structure(duck, llm=llm)
    # sections of <= 256 words (their blocks fit in one chunk; on this page no long section holds a table)
    size: dict[str, int] = {}
    for c in offline:
        if c.kind == "text":
            size[c.section_path] = size.get(c.section_path, 0) + len(c.text.split())
    short = {p for p, n in size.items() if n <= 256}
    assert "Duck > Taxonomy" not in short and "Duck > Etymology" in short
    assert [(c.text, c.summary) for c in chunks if c.kind == "text" and c.section_path in short] == [
        (c.text, c.summary) for c in offline if c.kind == "text" and c.section_path in short
    ]
    long = [c for c in chunks if c.kind == "text" and c.section_path not in short]
    assert long and all(c.summary and c.summary.startswith("About: ") for c in long)
    assert all(" ".join(c.text.split()).startswith(c.summary[len("About: ") :]) for c in long)  # type: ignore[index]  # its own summary
    assert [c.order for c in chunks] == list(range(len(chunks)))
    # every paragraph of the page is in the text chunks once, in reading order
    paragraphs = [e.text for e in duck.elements if e.kind not in ("heading", "table") and e.text.strip()]
    assert _norm(c.text for c in chunks if c.kind == "text") == _norm(paragraphs)


# --- a real ingestion ------------------------------------------------------------------------------------


def test_ingested_chunks_and_summaries_land_in_the_graph(
    store: GraphStore, backend_settings: Settings, duck: ParsedDocument, examples_dir: Path
) -> None:
    from kbgraph.ingest.pipeline import Ingestor
    from kbgraph.kb import KnowledgeBase
    from kbgraph.models import stable_id

    assert backend_settings.ingest.llm_chunking  # the default
    settings = backend_settings.updated({"llm_chunk_window_tokens": 300})
    expected = build_structure(
        duck, llm=ScriptedLLM(_model), llm_window_tokens=settings.ingest.llm_chunk_window_tokens
    )[2]
    llm = ScriptedLLM(_model)
    ingestor = Ingestor(
        store, settings, llm=llm, progress=False, embedder=lambda: KnowledgeBase(settings=settings).embedder
    )
    report = ingestor.run([examples_dir / "docs/html/wikipedia_duck.html"])
    assert report.errors == [] and report.added == 1
    assert report.chunks == len(expected)
    # the long sections went through the split in windows of <= 300 words, each call carrying the forward
    # summary of the section's previous call (sections run concurrently; each one's calls are in order)
    by_section: dict[str, list[str]] = {}
    for c in llm.calls:
        if "# Window" in _user(c):
            by_section.setdefault(re.search(r"^Section: (.*)$", _user(c), re.M).group(1), []).append(_user(c))  # type: ignore[union-attr]
    assert sorted(by_section) == ["Duck > Notes > Citations", "Duck > Notes > Sources", "Duck > Taxonomy"]
    for section, calls in by_section.items():
        assert len(calls) >= 2, section
        assert [_forward(p) for p in calls] == [prompts.NO_FORWARD_SUMMARY] + [
            f"{section} #{j}" for j in range(len(calls) - 1)
        ]
    assert sum(_user(c).startswith("# Table") for c in llm.calls) == 2

    rows = store.run("browse/document", {"document": stable_id("doc", duck.uri), "limit": 10_000, "per_chunk": 0})
    got = [r["chunk"] for r in rows]
    assert [(c["id"], c["order"], c["text"], c.get("summary"), c["kind"]) for c in got] == [
        (c.id, c.order, c.text, c.summary, c.kind) for c in expected
    ]
    tables = [c for c in got if c["kind"] == "table"]
    assert [c["summary"] for c in tables] == [
        "LLM table summary of Duck.",
        "LLM table summary of Authority control databases.",
    ]
    taxonomy = [c for c in got if c["section_path"] == "Duck > Taxonomy"]
    assert len(taxonomy) >= 2 and all(c["summary"].startswith("About: ") for c in taxonomy)
    assert store.stats().relationships["NEXT"] == len(expected) - 1
    paragraphs = [e.text for e in duck.elements if e.kind not in ("heading", "table") and e.text.strip()]
    assert _norm(c["text"] for c in got if c["kind"] == "text") == _norm(paragraphs)
