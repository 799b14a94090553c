"""Prompt of question classification, method 'auto' (kbgraph.query.methods.classify): PIKE-RAG (paper 000) §3.2 "Task
classification" and Figure 1 "Illustrative examples of distinct question types".

Sources: the four class definitions and the four linkable-reasoning subtypes are §3.2's own sentences, quoted
verbatim from its paragraphs "Factual Questions", "Linkable-Reasoning Questions", "Predictive Questions" and
"Creative Questions", except that the references to Figure 1 ("As shown in Figure 1, ...") are left out and
the subtype sentences are put under their subtype; the examples are Figure 1's questions (FDA biosimilar
products), one per class and subtype, with Figure 1's footer ("Answers explicitly present in corpus" /
"implicitly exist" / "not present"); the PDF extraction's "Amjevitा" is spelled Amjevita. The paper prints no
classification prompt: the task sentence, the output format and the system message are ours. The output keys
are ``rationale``, ``kind`` and ``subtype``, the fields of ``classify.QuestionClass``.

Templates use ``str.format``; ``{{`` and ``}}`` are literal braces. kbgraph's LLM client adds the JSON schema of
the expected answer to the system message.
"""

from __future__ import annotations

Messages = list[dict[str, str]]

SYSTEM_CLASSIFY = "You are a helpful AI assistant good at analysing what a question needs to be answered."

# --- §3.2 Task classification, Figure 1 --------------------------------------------------------------------
CLASSIFY = """# Task
Your task is to classify the given question into one of four classes of questions, by what answering it \
requires from a knowledge base of documents.

# Classes
1. factual: These questions seek specific, concrete pieces of information explicitly presented in the \
original corpus. This class of questions can be effectively answered if the relevant fact is successfully \
retrieved. (Answers explicitly present in corpus.)
   Example: "Is Abrilada an interchangeable biosimilar product?"
2. linkable_reasoning: Answering these questions necessitates gathering pertinent information from diverse \
sources and/or executing multi-step reasoning. The answers may be implicitly distributed across multiple \
texts. (Answers implicitly exist in corpus.) Subtypes:
   - bridging: bridging questions involve sequentially bridging multiple entities to derive the answer.
     Example: "What are the BLA IDs of the biosimilar product applications for HUMIRA that have been \
successfully approved?"
   - comparative: comparative questions focus on comparing specified attributes of two entities.
     Example: "Please provide the product name of the latest biosimilar product for HUMIRA that was \
successfully approved."
   - quantitative: quantitative questions require statistical analysis based on the retrieved data.
     Example: "How many interchangeable biosimilar products have been approved by the FDA?"
   - summarizing: summarizing questions require condensing or synthesizing information from multiple sources \
or large volumes of text into a concise, coherent summary.
     Example: "Please analyze the labels and see if you can find major differences in the clinical study \
approaches between Idacio, Cyltezo, and Amjevita."
3. predictive: For this type of questions, the answers are not directly available in the original text and \
may not be purely factual, necessitating inductive reasoning and prediction based on existing facts. \
(Answers not present in corpus.)
   Example: "Please provide an approximate prediction: How many biosimilar products are expected to be \
approved in 2024?"
4. creative: Addressing creative questions necessitates creative thinking based on the availability of \
factual information and an understanding of the underlying principles and rules. (Answers not present in \
corpus.)
   Example: "Assuming a biosimilar candidate with Humira as the reference, how can one prepare for the BLA to \
minimize the application time?"

# Output Format
Please output in following JSON format:
{{
    "rationale": <your analysis of what answering the question requires>,
    "kind": <one of "factual", "linkable_reasoning", "predictive", "creative">,
    "subtype": <for linkable_reasoning one of "bridging", "comparative", "quantitative", "summarizing"; \
otherwise null>
}}
# Question
{question}
# Your Output"""


def classify_messages(question: str) -> Messages:
    """The chat messages that ask the LLM to classify ``question`` (§3.2, Figure 1)."""
    return [
        {"role": "system", "content": SYSTEM_CLASSIFY},
        {"role": "user", "content": CLASSIFY.format(question=question)},
    ]
