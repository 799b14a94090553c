"""What the benchmarks share: the repository's folders, the repo's three labelled multi-hop sets, the default
home of their knowledge bases and the Cypher of a raw FalkorDB server.

The sets' table is the library's (kbgraph.eval.rank_train_shipped ``REPO_SETS``: the shipped ranker models were
fitted on them, in that order): short name -> prefix under examples/multihop of ``<prefix>.questions.jsonl`` and
``<prefix>.corpus.jsonl``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from kbgraph import cypher
from kbgraph.eval.rank_train_shipped import REPO_SETS

#: The repository's root, its examples and the multi-hop sets' folder.
REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
MULTIHOP = EXAMPLES / "multihop"
#: short name ("2wiki", "musique", "hotpotqa") -> the set's prefix under :data:`MULTIHOP`.
SETS: dict[str, str] = dict(REPO_SETS)
#: The default ``--home`` of the benchmarks' knowledge bases (``<home>/<set>_<store>``).
DEFAULT_HOME = Path.home() / ".kbgraph-bench"
#: A label or property name that :func:`statement` writes into a statement.
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def set_path(name: str) -> Path:
    """The prefix path of the repo set ``name`` (a key of :data:`SETS`; KeyError otherwise): give it to
    kbgraph.eval.dataset ``load_dataset``."""
    return MULTIHOP / SETS[name]


def corpus_path(name: str) -> Path:
    """The passage corpus (JSONL) of the repo set ``name``."""
    return MULTIHOP / f"{SETS[name]}.corpus.jsonl"


def statement(name: str, **identifiers: str) -> str:
    """The FalkorDB text of the statement ``name`` (``<group>/<statement>`` under cypher/, fragments filled in),
    for a benchmark that speaks to a FalkorDB server without a store (``GRAPH.QUERY``; a store runs the same
    statement with ``store.run(name, params)``). ``identifiers``: for a statement over a label or property that
    Cypher cannot take as a parameter (DDL), each backticked ```$key``` of the file becomes ```value```. Raises
    ValueError for a value that is no plain identifier, or a key the statement does not name."""
    text = cypher.load(name, "falkordb")
    for key, value in identifiers.items():
        slot = f"`${key}`"
        if not IDENTIFIER.fullmatch(value) or slot not in text:
            raise ValueError(f"{name}: {key}={value!r} is no plain identifier, or the statement has no {slot}")
        text = text.replace(slot, f"`{value}`")
    return text


def snake(label: str) -> str:
    """``AtomicQuestion`` -> ``atomic_question``: a label as the names of its statements spell it
    (``schema/vector_atomic_question``)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", label).lower()


def rerun(file: str) -> list[str]:
    """The command that runs the benchmark module of ``file`` (its ``__file__``) again in a child process, as
    ``python -m benchmarks.<name>``: run it with ``cwd=REPO``."""
    return [sys.executable, "-m", f"benchmarks.{Path(file).stem}"]
