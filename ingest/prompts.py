"""Prompts of the distill stage (knowledge atomizing and triple extraction), and of the chunk stage with an
LLM (the recurrent split of PIKE-RAG §5.2.1 and table summaries; see the section at the end).

``ATOMIC_QUESTION_TAGGING_PROMPT`` is the "Atomic Question Tagging Prompt" of paper 003, "From Complex to
Atomic: Enhancing Augmented Generation via Knowledge-Aware Dual Rewriting and Reasoning" (the KAR³ paper
that PIKE-RAG §5.3.1 builds on), Appendix A.7, reproduced verbatim. The PDF text extraction in
``shared/papers/003_e5f16f8fdebedefc.txt`` repeats two lines ("Output Format", "{content") and wraps lines at
the page width; the text below undoes those artefacts only, and agrees word for word with the authors'
released code (microsoft/PIKE-RAG, ``pikerag/prompts/tagging/atom_question_tagging.py``, which also supplies
the system prompt and the ``Title: ... Content: ...`` encoding used when a chunk has a title).

The paper's prompt asks for one question a line. kbgraph talks to the LLM through a JSON-mode client
(``complete_json(messages, schema)``), so ``ATOMIC_QUESTION_TAGGING_PROMPT_JSON`` keeps the paper's Task
section word for word and changes only the Output Format section to a JSON object.

``TRIPLE_EXTRACTION_PROMPT`` is kbgraph's own (the papers give none): entities typed with the same labels
the offline spaCy extractor uses, so that LLM-distilled and spaCy-distilled entities merge on (name, type).
"""

from __future__ import annotations

#: System prompt of the authors' code for atomic question tagging.
ATOMIC_QUESTION_SYSTEM_PROMPT = "You are a helpful AI assistant good at content understanding and asking question."

#: Paper 003, Appendix A.7, "Atomic Question Tagging Prompt" (verbatim; placeholder ``{content}``).
ATOMIC_QUESTION_TAGGING_PROMPT = """# Task
Your task is to extract as many questions as possible that are relevant and can be answered by the given content. Please try to be diverse and avoid extracting duplicated or similar questions. Make sure your question contain necessary entity names and avoid to use pronouns like it, he, she, they, the company, the person etc.

# Output Format
Output your answers line by line, with each question on a new line, without itemized symbols or numbers.

# Content
{content}

# Output
"""

#: The same prompt for a JSON-mode client: Task section unchanged, Output Format asks for JSON.
ATOMIC_QUESTION_TAGGING_PROMPT_JSON = """# Task
Your task is to extract as many questions as possible that are relevant and can be answered by the given content. Please try to be diverse and avoid extracting duplicated or similar questions. Make sure your question contain necessary entity names and avoid to use pronouns like it, he, she, they, the company, the person etc.

# Output Format
Output a JSON object {{"questions": [...]}}: a list with one question per item, without itemized symbols or numbers.

# Content
{content}

# Output
"""

#: Entity types an extractor may use (spaCy OntoNotes labels kbgraph keeps, plus CONCEPT).
ENTITY_TYPES: tuple[str, ...] = (
    "PERSON",
    "NORP",
    "FAC",
    "ORG",
    "GPE",
    "LOC",
    "PRODUCT",
    "EVENT",
    "WORK_OF_ART",
    "LAW",
    "LANGUAGE",
    "DATE",
    "CONCEPT",
)

TRIPLE_EXTRACTION_SYSTEM_PROMPT = (
    "You are a precise information-extraction assistant. You only state facts written in the given content."
)

#: kbgraph's triple-extraction prompt (placeholders ``{content}``, ``{entity_types}``).
TRIPLE_EXTRACTION_PROMPT = """# Task
Extract the knowledge graph of the given content.
1. List every named entity the content mentions (people, organisations, places, works, events, products,
   laws, languages, nationalities and groups, dates) and the key concepts it is about. Give each entity its
   name exactly as written in the content (the fullest form used, not a pronoun) and one type from:
   {entity_types}.
2. List the facts of the content as (subject, predicate, object) triples. Subject and object must be names
   from your entity list, written exactly the same way. The predicate is a short lower-case verb phrase
   (for example "born in", "directed by", "member of", "located in"). Resolve pronouns to the entity they
   refer to. Do not add facts that are not stated in the content.

# Output Format
Output a JSON object:
{{"entities": [{{"name": "...", "type": "..."}}, ...],
 "triples": [{{"subject": "...", "predicate": "...", "object": "..."}}, ...]}}

# Content
{content}

# Output
"""


def encode_content(content: str, title: str | None = None) -> str:
    """The chunk as the authors' code presents it to the LLM: ``Title: <title>. Content: <content>``."""
    return f"Title: {title}. Content: {content}" if title else content


def atomic_question_messages(content: str, title: str | None = None) -> list[dict[str, str]]:
    """Chat messages asking for the atomic questions of one chunk (JSON output)."""
    return [
        {"role": "system", "content": ATOMIC_QUESTION_SYSTEM_PROMPT},
        {
            "role": "user",
            "content": ATOMIC_QUESTION_TAGGING_PROMPT_JSON.format(content=encode_content(content, title)),
        },
    ]


def triple_extraction_messages(content: str, title: str | None = None) -> list[dict[str, str]]:
    """Chat messages asking for the entities and triples of one chunk (JSON output)."""
    return [
        {"role": "system", "content": TRIPLE_EXTRACTION_SYSTEM_PROMPT},
        {
            "role": "user",
            "content": TRIPLE_EXTRACTION_PROMPT.format(
                content=encode_content(content, title), entity_types=", ".join(ENTITY_TYPES)
            ),
        },
    ]


# --- chunking and table summaries (PIKE-RAG §5.2.1, §5.1.2) ----------------------------------------------

RECURRENT_SPLIT_SYSTEM_PROMPT = (
    "You split documents into coherent, self-contained passages for a retrieval index and summarize each "
    "passage. You never rewrite the text: you only say where each passage ends."
)

#: kbgraph's own prompt for one step of the recurrent text split of PIKE-RAG §5.2.1 (Figure 5: the text is
#: split iteratively; each step sees the forward summary of what came before plus the current text, returns
#: the chunk cut from its start with the chunk's summary, and the forward summary is updated for the next
#: step). Based on that description and on the idea of the authors' released splitter (microsoft/PIKE-RAG,
#: ``LLMPoweredRecursiveSplitter``: the model is shown numbered lines and names the last line of the first
#: part instead of copying text); the wording, the sentence numbering, several chunks per step and the JSON
#: answer are kbgraph's. Placeholders: ``{title}``, ``{section}``, ``{forward_summary}``, ``{window}``,
#: ``{last}``, ``{chunk_tokens}``, ``{continuation}``.
RECURRENT_SPLIT_PROMPT = """# Document
{title}
Section: {section}

# Forward summary (what the section said before the window)
{forward_summary}

# Window
The next part of the section, one sentence per line, each line starting with its number in brackets; a blank
line separates paragraphs. Sentences are numbered [0] to [{last}].

{window}

# Task
1. Cut chunks from the start of the window. A chunk is a run of consecutive whole sentences about one topic,
   about {chunk_tokens} words long: shorter where a topic ends, longer rather than separating a rule from its
   conditions, a term from its definition, or the items of a list from their introduction. The first chunk
   starts at sentence [0]; each further chunk starts right after the end of the previous one.
2. {continuation}
3. Summarize each chunk in one or two sentences that name what it is about; use the forward summary to say
   what "it", "this", "the above" and similar words refer to.
4. Write the new forward summary: at most 120 words summarizing the section from its beginning to the end of
   your last chunk (the old forward summary updated with your chunks).

# Output Format
Output a JSON object:
{{"chunks": [{{"end": <number of the chunk's last sentence>, "summary": "..."}}, ...],
 "forward_summary": "..."}}

# Output
"""

#: The step-2 instruction of RECURRENT_SPLIT_PROMPT for a window that is not the end of its section.
SPLIT_CONTINUES = (
    "The section continues after sentence [{last}]. Stop after the last topic that is complete inside the "
    "window: the sentences after your last chunk move to the next window, so do not end a chunk in the middle "
    "of a topic that goes on. Cut at least one chunk."
)
#: The step-2 instruction for the window that ends its section.
SPLIT_FINAL = (
    "The section ends with sentence [{last}]: your chunks must cover every sentence of the window, the last "
    "chunk ending at [{last}]."
)
#: What the forward summary says at the start of a section.
NO_FORWARD_SUMMARY = "(none: the window starts the section)"


def recurrent_split_messages(
    window: str, *, last: int, final: bool, forward_summary: str, title: str, section: str, chunk_tokens: int
) -> list[dict[str, str]]:
    """Chat messages for one step of the recurrent split (JSON output). ``window``: the numbered sentences;
    ``last``: the number of its last sentence; ``final``: the window ends the section."""
    continuation = (SPLIT_FINAL if final else SPLIT_CONTINUES).format(last=last)
    return [
        {"role": "system", "content": RECURRENT_SPLIT_SYSTEM_PROMPT},
        {
            "role": "user",
            "content": RECURRENT_SPLIT_PROMPT.format(
                title=title or "(untitled)",
                section=section or "(document body)",
                forward_summary=forward_summary or NO_FORWARD_SUMMARY,
                window=window,
                last=last,
                chunk_tokens=chunk_tokens,
                continuation=continuation,
            ),
        },
    ]


TABLE_SUMMARY_SYSTEM_PROMPT = "You describe tables for a search index, briefly and only from what the table shows."

#: kbgraph's table summary prompt (PIKE-RAG §5.1.2: tables become chunks summarized by an LLM; the paper gives
#: no prompt). Placeholders: ``{caption}``, ``{context}``, ``{n_rows}``, ``{shown}``, ``{table}``.
TABLE_SUMMARY_PROMPT = """# Table
Caption: {caption}
Found in: {context}
It has {n_rows} data rows; the header and the first {shown} rows are:

{table}

# Task
Write one to three sentences saying what the table is about, which columns it has (what they measure, with
units if shown) and what its rows are keyed by (for example "one row per state" or "one row per fiscal
year"), naming a few row keys. Do not invent values; do not list every row.

# Output Format
Output a JSON object {{"summary": "..."}}.

# Output
"""


def table_summary_messages(
    table: str, *, caption: str | None, n_rows: int, shown: int, context: str | None = None
) -> list[dict[str, str]]:
    """Chat messages asking for a 1-3 sentence summary of a table (JSON output). ``table``: Markdown of the
    header and the first ``shown`` rows; ``n_rows``: the table's data rows; ``context``: document > section."""
    return [
        {"role": "system", "content": TABLE_SUMMARY_SYSTEM_PROMPT},
        {
            "role": "user",
            "content": TABLE_SUMMARY_PROMPT.format(
                caption=caption or "(none)",
                context=context or "(unknown)",
                n_rows=n_rows,
                shown=shown,
                table=table,
            ),
        },
    ]
