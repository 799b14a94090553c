"""The kbgraph style of Neo4j Browser, applied by the server on connect.

The style is ``kbgraph/resources/neo4j-browser/kbgraph.grass`` (GraSS; package data of ``kbgraph.resources``).
:func:`post_connect_cmd` turns it into the value of the Neo4j server setting ``browser.post_connect_cmd``:
``style <the GraSS as JSON>``. Neo4j Browser 5.24 runs that command after connecting; its ``:style`` command
parses JSON first (then GraSS), so the whole style travels inline, with no URL to serve and no
``browser.remote_content_hostname_whitelist`` entry (a ``:style <url>`` would need both), and with no ``;``
that Browser would take for a command separator. The local Neo4j (kbgraph.neo4j_local.server) sets it on every
start; docker/docker-compose.yml carries the same value.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from kbgraph.resources import resource


def grass_path() -> Path:
    """The GraSS file, package data of the installed kbgraph (``kbgraph.resources``)."""
    return Path(str(resource("neo4j-browser", "kbgraph.grass")))


_RULE = re.compile(r"([^{}\s][^{}]*?)\s*\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}", re.S)


def parse_grass(text: str) -> dict[str, dict[str, str]]:
    """GraSS text -> {selector: {property: value}}, values as Neo4j Browser keeps them (quotes removed).
    ``/* */`` comments are dropped here, but Browser's own parser does not know them: keep .grass files free of
    comments. Raises ValueError for text with no rule."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out: dict[str, dict[str, str]] = {}
    for selector, body in _RULE.findall(text):
        props: dict[str, str] = {}
        for decl in body.split(";"):
            key, sep, value = decl.partition(":")
            if sep and key.strip():
                props[key.strip()] = value.strip().strip("\"'")
        out[selector.strip()] = props
    if not out:
        raise ValueError("no GraSS rule found")
    return out


@lru_cache(maxsize=4)
def _grass_json(path: str) -> str:
    style = parse_grass(Path(path).read_text(encoding="utf-8"))
    text = json.dumps(style, separators=(",", ":"), ensure_ascii=True)
    if ";" in text:
        raise ValueError(f"{path}: a ';' in a value would split browser.post_connect_cmd")
    return text


def grass_json(path: Path | None = None) -> str:
    """The style as compact JSON (what Browser's ``:style`` accepts inline)."""
    return _grass_json(str(path or grass_path()))


def post_connect_cmd(path: Path | None = None) -> str:
    """The value of the Neo4j setting ``browser.post_connect_cmd`` that applies the kbgraph style on connect."""
    return "style " + grass_json(path)
