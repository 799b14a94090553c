"""Data files that ship inside the kbgraph wheel as package data of ``kbgraph.resources``.

=============================  ==========================================================================
``neo4j-local/pom.xml``        the Maven project that assembles the local Neo4j 5 server from Maven Central
                               (``kbgraph.neo4j_local``; ``neo4j-local/README.md`` describes it)
``neo4j-browser/kbgraph.grass``  the Neo4j Browser style of the three layers (PIKE-RAG §3.1, Fig. 3) that
                               ``kbgraph.neo4j_local.browser_style`` turns into ``browser.post_connect_cmd``
=============================  ==========================================================================

Every file is found one way, :func:`resource` (``importlib.resources`` on the installed package), in a source
checkout (editable install) and in a wheel alike.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable

__all__ = ["resource"]


def resource(*parts: str) -> Traversable:
    """The packaged file ``kbgraph/resources/<parts...>`` (e.g. ``resource("neo4j-local", "pom.xml")``).

    Returns a Traversable (a ``pathlib.Path`` for an installed, unzipped package); it may not exist: callers
    read it and turn a missing file into their own error."""
    return files(__name__).joinpath(*parts)
