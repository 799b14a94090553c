"""Prompts of HiRAG, method 'hirag' (paper 004, "Hierarchical Retrieval-Augmented Generation Model with Rethink
for Multi-hop Question Answering"; kbgraph.query.methods.hirag).

The paper prints one prompt, the Decomposer's, and only in outline (§4.2: "Background: - You are an expert at
analyzing problems... Goal ... Constraint ... Workflow ... Example ... Initialization: Now, a first simple
question."). The full prompts are those of the authors' code (github.com/2282588541a/HiRAG, code/prompt.py,
class ``Prompt``), quoted verbatim, typos included ("konwn information", "3st"), with two changes: the
four-space indentation the class body put before every line but the first is removed, and trailing blank lines
are cut (each builder below adds the input lines as the authors' code/HiRAG.py does).

* ``DECOMPOSER`` (Decomposer + Definer, §4.2, eq. 1; Algorithm 1 ``Decompose``): ``cot_prompt``, the system
  message of a conversation whose first user turn is "Let's break down this complex question" + the question
  and whose later turns alternate sub-question (assistant) / sub-answer (user), as code/HiRAG.py builds it. The
  authors never fill its ``{question}`` placeholder; here it is filled with the question.
* ``ENTITY`` (the Retriever's e = LLM(q), §4.3 eq. 3): ``find_prompt``.
* ``SUB_ANSWER`` (the Filter's r = LLM(q, c_s), §4.4 eq. 6): ``ret_prompt``; the sub-answer is the text after
  "Answer the Question" (the authors' ``exact_answer``).
* ``VERIFY`` (the Filter's Verify, §4.4; Algorithm 1 ``CanSolved``): ``can_answer_prompt`` (asked once; the
  authors ask it five times and take the majority).
* ``DESCRIBE`` (the rewrite q* = LLM(q, a*), §4.3 eq. 4; Algorithm 1 line 8): ``google_entity_prompt``, which
  describes the entity from the earlier sub-answer that names it; the description is appended to the
  sub-question, as the authors' code does.
* ``REWRITE`` (q* = LLM(q, x) when no earlier sub-answer names the entity, §4.3, Algorithm 1 line 12): not in
  the paper, and the authors' code searches with q unchanged there; ours, in the form of the code's
  ``revise_prompt`` ("the subquestion may have some fault, you need to correct it"), asks for the sub-question
  made unambiguous with the original question.
* ``SUMMARIZER`` (o = Summarizer(A, x), §4.2 eq. 2; Algorithm 1 ``Output = LLM(x, A)``): ``ans_prompt``'s
  instruction and its two examples, whose outputs are given in the JSON form kbgraph validates
  ({"rationale": the step-by-step analysis, "answer": the answer}), so the final answer goes through the
  shared JSON answer path (kbgraph.query.answering) and can stream. The authors sample it three to seven times
  and vote; here it is asked once.

The paper prints no other system message; ``SYSTEM`` (every prompt but the Decomposer's) is ours. Templates are
filled with ``str.replace`` of their ``{question}`` only; every other input is appended as in the authors' code.
"""

from __future__ import annotations

from collections.abc import Sequence

Messages = list[dict[str, str]]

SYSTEM = "You are a helpful AI assistant on question answering."

#: The Decomposer's first user turn, before the question (authors' code/HiRAG.py).
DECOMPOSER_START = "Let's break down this complex question"
#: What the Decomposer is told when a sub-question found no verified answer (Algorithm 1 returns ''; its
#: workflow step 2.1: "If the user is unable to answer the current simple question, rephrase a simple question").
NO_ANSWER = "I am unable to answer this simple question."

# --- Decomposer and Definer (§4.2, eq. 1; authors' cot_prompt) --------------------------------------------
DECOMPOSER = """# Question Decomposition Specialist

## Background
- You are an expert at analyzing problems and are good at breaking down difficult problems into simple problems.
- A person facing the problem {question} is asking you for help. The question is hard to answer directly.

## Goal
Helping the user decompose the question and tell the user at the right time that the problem can be solved.

## Constraint
- Forget all the knowledge you've learned before and decide whether to continue decomposing the question based \
only on the user's answers.
- To make it easier for the user to answer, only one simple question is asked at once.
- You can only decompose the question, do not answer it directly.

## Workflow
1. Analyse the original complex question and formulate a simple question based on that complex question.
2. Receive the user's answer to the simple question at hand.
2.1 If the user is unable to answer the current simple question, rephrase a simple question.
2.2 If the user answers the current simple question, analyze all currently known simple questions and user \
responses.
2.2.1 If you think that all the currently known simple questions and answers are sufficient to answer the initial \
complex question, say "That's enough."
2.2.2 Otherwise, ask a new simple question.
3. Repeat step 2 until the complex question can be answered.

## Example
- Complex Question: What is the award that the director of film Wearing Velvet Slippers Under A Golden Umbrella won?
- Progress of Decomposition:
    1st Simple Question: Who is the director of film Wearing Velvet Slippers Under A Golden Umbrella won?
    1st Answer: the director of film Wearing Velvet Slippers Under A Golden Umbrella won is Wunna.
    2nd Simple Question: What awards has Wunna won?
    2nd Answer: Wunna won Myanmar Motion Picture Academy Awards.
- Final Output: That's enough.

- Complex Question: Are North Marion High School (Oregon) and Seoul High School both located in the same country?
- Progress of Decomposition:
    1st Simple Question: what country is North Marion High School (Oregon) located in?
    1st Answer:North Marion High School (Oregon) is  located in United States.
    2nd Simple Question:what country is Seoul High School located in?
    2nd Answer:Seoul High School is located in South Korea.
- Final Output: That's enough.

- Complex Question:Who is the maternal grandfather of Antiochus X Eusebes?
- Progress of Decomposition:
    1st Simple Question: Who is the mother of Antiochus X Eusebes?
    1st Answer:the mother of Antiochus X Eusebes is Cleopatra IV.
    2nd Simple Question:who is the father of Cleopatra IV?
    2nd Answer:the father of Cleopatra IV is Ptolemy VIII Physcon.
- Final Output: That's enough.

- Complex Question:Where was the place of death of Anastasia Of Serbia's husband?
- Progress of Decomposition:
    1st Simple Question: Who is the husband of Anastasia Of Serbia?
    1st Answer:the husband of Anastasia Of Serbia is Stefan Nemanja.
    2nd Simple Question:Where was the place of death of Stefan Nemanja?
    2nd Answer:the place of death of Stefan Nemanja is Holy Monastery Hilandar, Moni Chilandariou, Greece.
- Final Output: That's enough.

- Complex Question:Which film has the director died earlier, Condemned Women or Faces In The Dark?
- Progress of Decomposition:
    1st Simple Question: What is the director of the film Condemned Women?
    1st Answer:the director of the film Condemned Women is Lew Landers.
    2nd Simple Question:What is the director of the film Faces In The Dark?
    2nd Answer:the director of the film Faces In The Dark is David Eady.
    3st Simple Question: When did Lew Landers die?
    3st Answer:Lew Landers die on 16 December 1962.
    4st Simple Question: When did David Eady die?
    4st Answer:David Eady die on April 5, 2009.
- Final Output: That's enough.

## Initialization
Now, a first simple question.
"""

# --- Retriever: entity of the sub-question (§4.3, eq. 3; authors' find_prompt) ---------------------------
ENTITY = """I need you to extract the subject from the question, and I'll tell you the question and ask you to \
return the subject. Your response should contain only the answer and nothing else.Examples are as follows:
##question:Who is the director of Jaws？
##output:Jaws

##question:Where is Steven Spielberg from?
##output:Steven Spielberg

##question:what is the date of death of Elio Petri?
##output:Elio Petri

##question:what is the date of death of Franco Rossi (director)?
##output:Franco Rossi (director)

##question:"""

# --- Filter: sub-answer from the chunk (§4.4, eq. 6; authors' ret_prompt) --------------------------------
SUB_ANSWER = """you should answer the question with the konwn information .You should first analyze the question \
and the konwn information given and finally give the answer.Let's think step by step!
##question:Who is the director of film Polish-Russian War (Film)?
##konwn information:Polish-Russian War (Wojna polsko-ruska) is a 2009 Polish film directed by Xawery Żuławski \
based on the novel Polish-Russian War under the white-red flag by Dorota Masłowska.
##output:1. Analyzing the Question:
- The question seeks to identify the director of the film "Polish-Russian War (Wojna polsko-ruska)."
- The known information provided is that the film was directed by Xawery Żuławski.
- Additionally, it's mentioned that the film is based on the novel "Polish-Russian War under the white-red flag" \
by Dorota Masłowska.

2. Known Information:
- The director of the film is Xawery Żuławski.
- The film is based on the novel by Dorota Masłowska.

3. Answer the Question:
- The director of the film "Polish-Russian War (Wojna polsko-ruska)" is Xawery Żuławski.

##question:Who is the mother of Xawery Żuławski?
##konwn information:Xawery Żuławski (born 22 December 1971 in Warsaw) is a Polish film director.

In 1995 he graduated National Film School in Łódź. He is the son of actress Małgorzata Braunek and director \
Andrzej Żuławski. His second feature Wojna polsko-ruska (2009), adapted from the controversial best-selling novel \
by Dorota Masłowska, won First Prize in the New Polish Films competition at the 9th Era New Horizons Film \
Festival in Wrocław. In 2013, he stated he intends to direct a Polish novel "Zły" by Leopold Tyrmand.
##output:1. Analyzing the Question:
- The question seeks to identify the mother of Xawery Żuławski.
- The known information provided includes Xawery Żuławski's birthdate, occupation as a Polish film director, and \
details about his education and career.
- It's mentioned that his mother is an actress named Małgorzata Braunek and his father is a director named \
Andrzej Żuławski.

2. Known Information:
- Xawery Żuławski was born on December 22, 1971, in Warsaw, Poland.
- He is a Polish film director.
- His mother is actress Małgorzata Braunek.
- His father is director Andrzej Żuławski.

3. Answer the Question:
- The mother of Xawery Żuławski is Małgorzata Braunek.
"""

# --- Filter, Verify: can the sub-question be answered (§4.4; authors' can_answer_prompt) -----------------
VERIFY = """Based on the input and the question, you have to tell me if you can answer the question.Your answer \
must be yes or no
##input:The spouse of Grand Duke Kirill Vladimirovich of Russia is not known.
##question:what is the spouse of Grand Duke Kirill Vladimirovich of Russia?
##output:no

##input:The director of the film "Thomas Jefferson" is Ken Burns.
##question:what is the director of Thomas Jefferson(Film)?
##output:yes


##input:"""

# --- rewrite with an earlier sub-answer (§4.3, eq. 4; authors' google_entity_prompt) ---------------------
DESCRIBE = """You need to describe an entity in a information.I will give you the entity and information,You need \
to describe an entity based the information .examples are as follows:
##entity:Xawery Żuławski
##information:The director of the film "Polish-Russian War (Wojna polsko-ruska)" is Xawery Żuławski.
##output:Xawery Żuławski is the director of the film "Polish-Russian War (Wojna polsko-ruska)".

##entity:Małgorzata Braunek.
##information:The mother of Xawery Żuławski is Małgorzata Braunek.
##output:Małgorzata Braunek is the mother of Xawery Żuławski.
"""

# --- rewrite with the original question (§4.3, Algorithm 1 line 12; ours, in the form of revise_prompt) -------
REWRITE = """you are given a question and a subquestion. the subquestion names an entity that several documents \
share, so it is ambiguous; you need to rewrite it with the details of the question so that it names one entity. \
Your response should contain only the rewritten subquestion and nothing else.Examples are as follows:
##question:Who is the mother of the director of film Polish-Russian War (Film)?
##subquestion:Who directed Polish-Russian War?
##output:Who directed the 2009 film Polish-Russian War?

"""

# --- Summarizer (§4.2, eq. 2; authors' ans_prompt, outputs as JSON) ------------------------------------------
SUMMARIZER = """you should answer the question with the konwn information .You should first analyze the question \
and the konwn information given and finally give the answer.Let's think step by step
##question:Who is the mother of the director of film Polish-Russian War (Film)?
##konwn information:The director of Polish-Russian War is Xawery Żuławski., Xawery Žuławski's mother is Małgorzata \
Braunek.
##output:{"rationale": "Step 1: Analyze the Question The question asks for the mother of the director of the film \
\\"Polish-Russian War (Film).\\" Step 2: Analyze the Known Information We know that the director of the film \
\\"Polish-Russian War (Film)\\" is Xawery Żuławski. Additionally, we are given that Xawery Żuławski's mother is \
Małgorzata Braunek. Step 3: Answer the Question Based on the known information, the mother of the director of \
the film \\"Polish-Russian War (Film)\\" is Małgorzata Braunek.", "answer": "Małgorzata Braunek"}
##question:Which film came out first, Blind Shaft or The Mask Of Fu Manchu?
##konwn information:the publication date of Blind Shaft is 2003., the publication date of The Mask Of Fu Manchu is \
1932.
##output:{"rationale": "Step 1: Analyze the Question The question asks which film, \\"Blind Shaft\\" or \\"The Mask \
Of Fu Manchu,\\" was released first. Step 2: Analyze the Known Information We know that \\"Blind Shaft\\" was \
released in 2003, and \\"The Mask Of Fu Manchu\\" was released in 1932. Step 3: Answer the Question Based on \
the known information, \\"The Mask Of Fu Manchu\\" came out first, in 1932, while \\"Blind Shaft\\" was released \
in 2003.", "answer": "The Mask Of Fu Manchu"}

"""


def _user(text: str) -> Messages:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}]


def decomposer_messages(question: str, turns: Sequence[tuple[str, str]]) -> Messages:
    """The Decomposer's conversation (authors' code/HiRAG.py ``cot_messaeges``): ``DECOMPOSER`` as the system
    message, the question, then per earlier round its sub-question (assistant) and sub-answer (user)."""
    out = [
        {"role": "system", "content": DECOMPOSER.replace("{question}", question)},
        {"role": "user", "content": DECOMPOSER_START + question},
    ]
    for sub_question, sub_answer in turns:
        out += [{"role": "assistant", "content": sub_question}, {"role": "user", "content": sub_answer or NO_ANSWER}]
    return out


def entity_messages(sub_question: str) -> Messages:
    return _user(ENTITY + sub_question + "\n##output: ")


def sub_answer_messages(sub_question: str, knowledge: str) -> Messages:
    return _user(SUB_ANSWER + "\n##question:" + sub_question + "\n##konwn information:" + knowledge + "\n##output:")


def verify_messages(sub_question: str, response: str) -> Messages:
    return _user(VERIFY + response + "\n##question:" + sub_question + "\n##output:")


def describe_messages(entity: str, information: str) -> Messages:
    return _user(DESCRIBE + "##entity:" + entity + "\n##information:" + information + "\n##output:")


def rewrite_messages(question: str, sub_question: str) -> Messages:
    return _user(REWRITE + "##question:" + question + "\n##subquestion:" + sub_question + "\n##output:")


def summarizer_messages(question: str, sub_answers: Sequence[str]) -> Messages:
    """``SUMMARIZER`` over the sub-answers, joined with ", " as the authors' code joins its known information."""
    known = ", ".join(a for a in sub_answers if a)
    return _user(SUMMARIZER + "##question:" + question + "\n##konwn information:" + known + "\n##output:")
