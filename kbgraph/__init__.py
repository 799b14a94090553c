"""kbgraph: a graph-database-centric knowledge base implementing PIKE-RAG.

from kbgraph import KnowledgeBase
with KnowledgeBase() as kb:
    print(kb.stats())
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.2.0"
__all__ = ["KnowledgeBase", "Settings", "__version__"]

if TYPE_CHECKING:
    from kbgraph.kb import KnowledgeBase
    from kbgraph.settings import Settings


def __getattr__(name: str):  # lazy: keep `import kbgraph` cheap for the CLI
    if name == "KnowledgeBase":
        from kbgraph.kb import (
            KnowledgeBase,
        )  # lazy: `import kbgraph` stays cheap (no cycle: every module imports the root)

        return KnowledgeBase
    if name == "Settings":
        from kbgraph.settings import Settings  # lazy: `import kbgraph` stays cheap

        return Settings
    raise AttributeError(name)
