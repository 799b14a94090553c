"""Prompts of knowledge-aware task decomposition and of the baselines.

Sources, quoted verbatim except where noted:

* ``PROPOSER``, ``SELECTOR``, ``ANSWER``: paper 003 ("From Complex to Atomic", Appendix A.7 "Prompt
  Design": "Atomic Query Proposer Prompt", "Atomic Tag Selection Prompt", "Question Answering Prompt"),
  used by Algorithm 1 lines 3, 5 and 14 (§3.4; PIKE-RAG §5.3.2). Changes: two PDF-extraction typos fixed
  ("sub-guestions" -> "sub-questions", "# Ouestion" -> "# Question"); "Let's think step by step.", which the
  extraction placed above the QA prompt, closes the user message as in the authors' code
  (pikerag/prompts/qa/generation.py); ``{yes_or_no_limit}`` is always empty (the authors fill it from the
  gold answer labels, which a deployed system does not have).
* ``CHUNK_SELECTOR``: not in the papers; the "backup selection protocol" of the authors' code
  (microsoft/PIKE-RAG, pikerag/prompts/decomposition/atom_based.py ``chunk_selection_template``, enabled in
  examples/*/configs/atomic_decompose.yml), asked when the atomic selector selects nothing.
* ``COT``: Zero-Shot CoT baseline (PIKE-RAG §6.1; paper 003 §4.2) with the authors' prompt
  (pikerag/prompts/qa/generation.py ``generation_qa_template``).
* ``SELF_ASK``: Press et al. (2023), the four demonstrations and the "Are follow up questions needed here: /
  Follow up: / Intermediate answer: / So the final answer is:" pattern, as in the authors' code
  (pikerag/prompts/self_ask/self_ask.py).
* ``JUDGE``: the Accuracy (Acc) metric of PIKE-RAG §6.1 and paper 003 §4 ("GPT-4 acts as an evaluator,
  assessing the correctness of a response in relation to the question and the correct answer labels"; all
  labels are given at once). The papers do not print the prompt; this is the authors' evaluator prompt
  (microsoft/PIKE-RAG, pikerag/workflows/evaluation/metrics/llm.py ``answer_judge_template``), used by
  kbgraph.eval.

Templates use ``str.format``; ``{{`` and ``}}`` are literal braces. The JSON keys are those of the paper.
kbgraph's LLM client adds the JSON schema of the expected answer to the system message.
"""

from __future__ import annotations

from collections.abc import Sequence

Messages = list[dict[str, str]]

SYSTEM_DECOMPOSE = "You are a helpful AI assistant good at question decomposition."
SYSTEM_QA = "You are a helpful AI assistant on question answering."
SYSTEM_SELF_ASK = "You are a helpful AI assistant good at question-answering."

# --- Algorithm 1, line 3: atomic query proposer (003 A.7) -----------------------------------------------
PROPOSER = """# Task
Your task is to analyse the providing context then raise atomic sub-questions for the
knowledge that can help you answer the question better. Think in different ways and
raise as many diverse questions as possible.
# Output Format
Please output in following JSON format:
{{
    "thinking": <your thinking for this task, including analysis to the question and
the given context>,
    "sub_questions": <a list of sub-questions indicating what you need>
}}
# Context
The context we already have:
{chosen_content}
# Question
{content}
# Your Output"""

# --- Algorithm 1, line 5: atomic tag selection (003 A.7) ------------------------------------------------
SELECTOR = """# Task
Your task is to analyse the providing context then decide which sub-questions may
be useful to be answered before you can answer the given question. Select a most
relevant sub-question from the given question list, avoid selecting sub-question that
can already be answered with the given context or with your own knowledge.
# Output Format
Please output in following JSON format:
{{
    "thinking": <your thinking for this selection task>,
    "question_idx": <a sub-question index, an integer from 1 to {num_atom_questions}>
}}
# Context
The context we already have:
{chosen_content}
# Sub-Questions You Can Choose From
{atom_question_list_str}
# Question
{content}
# Your Output"""

# --- backup selection (authors' code, not in the papers) -------------------------------------------------
CHUNK_SELECTOR = """# Task
Your task is to analyse the providing context then decide which paragraph in the list may be useful for you to answer the given question. Select a most relevant paragraph from the given paragraph list.

# Output Format
Please output in following JSON format:
{{
    "thinking": <A string. Your thinking for this selection task.>,
    "paragraph_idx": <An integer. A paragraph index from 1 to {num_chunks}.>
}}

# Context
The context we already have:
{chosen_content}

# Paragraph List You Can Choose From
{chunk_list_str}

# Question
{content}

# Your output:"""

# --- Algorithm 1, line 14 (and every baseline that reads retrieved chunks): question answering (003 A.7) -
ANSWER = """# Task
Your task is to answer a question referring to a given context, if any. For answering
the Question at the end, you need to first read the articles, reports, or context
provided, then give your final answer.
# Output format
Your output should strictly follow the format below. Make sure your output parsable by
json in Python.
{{
    "answer": <Your Answer, format it as a string.>,
    "rationale": <rationale behind your choice>
}}
# Context, if any
{context_if_any}
# Question
{content}{yes_or_no_limit}

Let's think step by step."""

# --- Zero-Shot CoT (authors' generation_qa_template) -----------------------------------------------------
COT = """# Task
Your task is to give your answer to the given question.

# Output format
Your output should strictly follow the format below. Make sure your output parsable by json in Python.
{{
    "answer": <a string. Your answer.>,
    "rationale": <a string. Rationale behind your answer.>
}}

# Question
{content}

Let's think step by step."""

# --- Self-Ask (Press et al. 2023; authors' self_ask_template) ----------------------------------------------
SELF_ASK_FOLLOW_UP = "Are follow up questions needed here:"
SELF_ASK_FOLLOW = "Follow up:"
SELF_ASK_INTERMEDIATE = "Intermediate answer:"
SELF_ASK_FINAL = "So the final answer is:"

SELF_ASK = """Question: Who lived longer, Muhammad Ali or Alan Turing?
Are follow up questions needed here: Yes.
Follow up: How old was Muhammad Ali when he died?
Intermediate answer: Muhammad Ali was 74 years old when he died.
Are follow up questions needed here: Yes.
Follow up: How old was Alan Turing when he died?
Intermediate answer: Alan Turing was 41 years old when he died.
Are follow up questions needed here: No.
So the final answer is: Muhammad Ali

Question: When was the founder of craigslist born?
Are follow up questions needed here: Yes.
Follow up: Who was the founder of craigslist?
Intermediate answer: Craigslist was founded by Craig Newmark.
Are follow up questions needed here: Yes.
Follow up: When was Craig Newmark born?
Intermediate answer: Craig Newmark was born on December 6, 1952.
Are follow up questions needed here: No.
So the final answer is: December 6, 1952

Question: Who was the maternal grandfather of George Washington?
Are follow up questions needed here: Yes.
Follow up: Who was the mother of George Washington?
Intermediate answer: The mother of George Washington was Mary Ball Washington.
Are follow up questions needed here: Yes.
Follow up: Who was the father of Mary Ball Washington?
Intermediate answer: The father of Mary Ball Washington was Joseph Ball.
Are follow up questions needed here: No.
So the final answer is: Joseph Ball

Question: Are both the directors of Jaws and Casino Royale from the same country?
Are follow up questions needed here: Yes.
Follow up: Who is the director of Jaws?
Intermediate answer: The director of Jaws is Steven Spielberg.
Are follow up questions needed here: Yes.
Follow up: Where is Steven Spielberg from?
Intermediate answer: The United States.
Are follow up questions needed here: Yes.
Follow up: Who is the director of Casino Royale?
Intermediate answer: The director of Casino Royale is Martin Campbell.
Are follow up questions needed here: Yes.
Follow up: Where is Martin Campbell from?
Intermediate answer: New Zealand.
Are follow up questions needed here: No.
So the final answer is: No

Question: {content}
{followup_context}
{asking_prefix}"""


# --- message builders ----------------------------------------------------------------------------------
def context_string(chunks: Sequence[tuple[str, str]]) -> str:
    """The chosen chunks as the papers' context: one ``Title: <title>. Content: <text>`` paragraph per
    chunk (authors' ``atom_infos_to_context_string``); empty when there are none."""
    parts = [f"Title: {title}. Content: {text}" if title else text for title, text in chunks]
    return "\n\n".join(p.strip() for p in parts if p.strip())


def proposer_messages(question: str, context: str) -> Messages:
    return [
        {"role": "system", "content": SYSTEM_DECOMPOSE},
        {"role": "user", "content": PROPOSER.format(chosen_content=context, content=question)},
    ]


def selector_messages(question: str, context: str, atom_questions: Sequence[str]) -> Messages:
    listing = "".join(f"Question {i}: {text}\n" for i, text in enumerate(atom_questions, start=1))
    prompt = SELECTOR.format(
        num_atom_questions=len(atom_questions),
        chosen_content=context,
        atom_question_list_str=listing,
        content=question,
    )
    return [{"role": "system", "content": SYSTEM_QA}, {"role": "user", "content": prompt}]


def chunk_selector_messages(question: str, context: str, paragraphs: Sequence[tuple[str, str]]) -> Messages:
    listing = "".join(
        f"Paragraph {i}: Title: {title}. Content: {text}\n" if title else f"Paragraph {i}: {text}\n"
        for i, (title, text) in enumerate(paragraphs, start=1)
    )
    prompt = CHUNK_SELECTOR.format(
        num_chunks=len(paragraphs), chosen_content=context, chunk_list_str=listing, content=question
    )
    return [{"role": "system", "content": SYSTEM_QA}, {"role": "user", "content": prompt}]


def answer_messages(question: str, context: str) -> Messages:
    prompt = ANSWER.format(context_if_any=context, content=question, yes_or_no_limit="")
    return [{"role": "system", "content": SYSTEM_QA}, {"role": "user", "content": prompt}]


def cot_messages(question: str) -> Messages:
    return [{"role": "system", "content": SYSTEM_QA}, {"role": "user", "content": COT.format(content=question)}]


def self_ask_messages(question: str, followups: Sequence[tuple[str, str]], *, final: bool) -> Messages:
    """The Self-Ask prompt with the follow-ups so far; ``final`` asks for the final answer directly."""
    context = "\n".join(
        f"{SELF_ASK_FOLLOW_UP} Yes.\n{SELF_ASK_FOLLOW} {q}\n{SELF_ASK_INTERMEDIATE} {a}" for q, a in followups
    )
    prefix = f"{SELF_ASK_FOLLOW_UP} No.\n{SELF_ASK_FINAL} " if final else f"{SELF_ASK_FOLLOW_UP} "
    prompt = SELF_ASK.format(content=question, followup_context=context, asking_prefix=prefix).strip()
    return [{"role": "system", "content": SYSTEM_SELF_ASK}, {"role": "user", "content": prompt}]


# --- evaluation: LLM-judged accuracy (PIKE-RAG §6.1; paper 003 §4) ----------------------------------------
SYSTEM_JUDGE = "You are a helpful AI assistant good at question answering and answer scoring."
JUDGE = """# Task
Providing a question and its correct answer labels, your task is to analyze whether a given answer is correct or not. An answer is treated as correct if the meaning of any label is expressed in the answer. Redundant expression in answer is allowed.

# Question
{question}

# Correct Answer Labels
{labels}

# Answer that Require Judgment
{content}

Is the answer correct or not? You output should only be "Yes" or "No"."""


def judge_messages(question: str, labels: Sequence[str], answer: str) -> Messages:
    """The accuracy judge's request: the question, every answer label (one a line) and the answer."""
    prompt = JUDGE.format(question=question, labels="\n".join(labels), content=answer)
    return [{"role": "system", "content": SYSTEM_JUDGE}, {"role": "user", "content": prompt}]
