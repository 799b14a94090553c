"""Prompts of the distill stage (knowledge atomizing and triple extraction).

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
ATOMIC_QUESTION_SYSTEM_PROMPT = (
    "You are a helpful AI assistant good at content understanding and asking question."
)

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
