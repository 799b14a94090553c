"""Prompts of MIGRES, method 'migres' (paper 002, "LLMs Know What They Need: Leveraging a Missing Information
Guided Framework to Empower Retrieval-Augmented Generation"; kbgraph.query.methods.migres).

Sources, quoted verbatim except where noted:

* ``MAIN`` (Main Module, §3.2): the "Main Instruction" of Appendix F (Table 14, "Cases of MIGRES"). The paper
  prints the answer format with its braces lost in extraction ("format "answer": "text": your answer, ...");
  the braces are restored as the case outputs in the same table show them:
  ``{"answer": {"text": ..., "confidence": ...}, "explanation": ..., "missing_information": ...}``.
* ``QUERY`` (Query Generator of the Retrieval Module, §3.2 "no more than three new distinct queries"): the
  "Query Instruction" of Appendix F. The paper shows its inputs only as placeholders ("[Original Question]
  [Historical Questions] [Known Info] Missing Information: ... New queries:") and its output as one query a
  line; the labelled input lines and the output format sentence (``{"queries": [...]}``, so the answer is
  schema-validated JSON like every other prompt here) are ours.
* ``LEAF`` (Leaf Module, §3.2): the "Leaf Instruction" of Appendix F, with the passage list as the paper's
  cases print it ("Passage 0: (Title: ...) text"). The sentence "The provided passages might be irrelevant and
  contain no useful information." is taken from the extraction prompt of the preliminary experiment
  (Appendix B, Table 9), which is otherwise the same instruction; it keeps a model from inventing
  information when the filter let only weak passages through.
* ``KNOWLEDGE`` (LLM knowledge prompting, §3.2 and §4.5): "Prompt for knowledge prompting", Appendix C
  (Table 11), verbatim (its "Generation relevant information" included). A plain completion, no JSON.

The paper prints no system messages; ``SYSTEM`` is ours. Templates use ``str.format``; ``{{`` and ``}}`` are
literal braces. kbgraph's LLM client adds the JSON schema of the expected answer to the system message.
"""

from __future__ import annotations

from collections.abc import Sequence

Messages = list[dict[str, str]]

SYSTEM = "You are a helpful AI assistant on question answering."

# --- Main Module (§3.2; Appendix F "Main Instruction") -----------------------------------------------------
MAIN = """Answer the Question based solely on the provided Information. If the Information is insufficient to \
answer the Question, the answer should be "unanswerable", and you should provide your explanation and a summary \
of missing information. Otherwise, write an accurate and concise answer to the Question with a confidence score \
varying from 1 (not confident) to 5 (very confident) then explain. Your response should be under the format \
{{"answer": {{"text": your answer, "confidence": confidence score}}, "explanation": your explanation, \
"missing_information": the summary of missing information}}. Please generate a dict format response.
Information: {information}
Question: {question}
Your response:"""

# --- Retrieval Module, Query Generator (§3.2; Appendix F "Query Instruction") -------------------------------
QUERY = """Based on the Original Question, Historical Questions, Known Information and Missing Information, write \
no more than 3 queries that ask for Missing Information to solve the Original Question. If the missing information \
is multi-hop, decompose it into several simple and single-hop queries. The new queries should not contain \
redundant information and should differ from the Original Question and Historical Questions. Your response should \
be under the format {{"queries": [new queries]}}.
Original Question: {question}
Historical Questions: {history}
Known Information: {known}
Missing Information: {missing}
New queries:"""

# --- Leaf Module (§3.2; Appendix F "Leaf Instruction", Appendix B Table 9) ----------------------------------
LEAF = """Given the following Question and Passages, please distillate useful information from the Passages to \
address the Question effectively and list the support passage index for each distilled information. Your response \
should be under the format {{"useful_information": [{{"info": statement of distilled useful information combining \
the question, "support_passages": [indexes of support passages]}}]}}. The provided passages might be irrelevant and \
contain no useful information. Not provided information should not appear in your response. Please generate a \
dict format response.
{passages}
Question: {question}
Your response:"""

# --- LLM knowledge prompting (§4.5; Appendix C Table 11) ----------------------------------------------------
KNOWLEDGE = """Generation relevant information to the given question.
Question: {question}
Information:"""


def _user(prompt: str) -> Messages:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]


def main_messages(question: str, information: Sequence[str]) -> Messages:
    """The Main Module's request: the known information (the statements joined by spaces, as the paper's
    Memory Module shows "Known Info"; '' when there is none yet) and the original question."""
    return _user(MAIN.format(information=" ".join(s.strip() for s in information if s.strip()), question=question))


def query_messages(question: str, history: Sequence[str], known: Sequence[str], missing: str) -> Messages:
    """The Query Generator's request: the original question, the queries asked so far (the Memory Module's
    "Historical Questions"), the known information and the Main Module's missing information."""
    prompt = QUERY.format(
        question=question,
        history=" ".join(history),
        known=" ".join(s.strip() for s in known if s.strip()),
        missing=missing,
    )
    return _user(prompt)


def passage_list(passages: Sequence[tuple[str, str]]) -> str:
    """Passages as the paper's cases number them: ``Passage i: (Title: <title>) <text>``, i from 0; an
    untitled passage (LLM knowledge) is ``Passage i: <text>``."""
    return "\n".join(
        f"Passage {i}: (Title: {title}) {text}" if title else f"Passage {i}: {text}"
        for i, (title, text) in enumerate(passages)
    )


def leaf_messages(queries: Sequence[str], passages: Sequence[tuple[str, str]]) -> Messages:
    """The Leaf Module's request: the (title, text) passages, numbered from 0, and the iteration's queries
    as its Question (joined, as the paper's Case 2 does for two queries)."""
    return _user(LEAF.format(passages=passage_list(passages), question=" ".join(queries)))


def knowledge_messages(query: str) -> Messages:
    """LLM knowledge prompting for one query (a plain completion)."""
    return _user(KNOWLEDGE.format(question=query))
