"""The cause of a failed Neo4j start or build, as one line read from Java's output (``kbgraph.neo4j_local``).

Java prints stack traces, a timestamp on every log line and generic JVM lines ("Could not create the Java
Virtual Machine"); an error message should name the first error and its root cause only.
"""

from __future__ import annotations

import re
from pathlib import Path

from kbgraph.text import one_line

__all__ = ["log_line", "meaningful", "last_meaningful_line", "startup_failure"]

_LOG_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d[ T]\S+\s+")
_GENERIC = re.compile(r"^Error: (Could not create the Java Virtual Machine|A fatal exception has occurred)")


def log_line(text: str, limit: int = 300) -> str:
    """``text`` as one line of at most ``limit`` characters (``kbgraph.text.one_line``) without the log
    timestamp Neo4j puts in front (``2025-01-31 10:00:00.000+0000 ERROR ...`` -> ``ERROR ...``)."""
    return one_line(_LOG_PREFIX.sub("", " ".join(text.split())), limit)


def meaningful(text: str) -> str | None:
    """The cause of a failure in Java output, as one line.

    The first error line (ERROR, an exception, ``Invalid ...``), followed by the root cause (the last
    ``Caused by:``) when that adds something; else the last line. Stack frames and the JVM's generic
    "Could not create the Java Virtual Machine" lines are skipped. None for output without a line.
    """
    lines = [
        ln.strip()
        for ln in text.splitlines()
        if ln.strip() and not ln.lstrip().startswith(("at ", "...")) and not _GENERIC.match(ln.strip())
    ][-400:]
    if not lines:
        return None
    tops = [
        ln for ln in lines if re.search(r"\bERROR\b|Exception|Error\b|^Invalid", ln) and not ln.startswith("Caused by:")
    ]
    causes = [ln for ln in lines if ln.startswith("Caused by:")]
    if not tops and not causes:
        return log_line(lines[-1])
    top = log_line(tops[0], 220) if tops else None
    if causes:
        root = causes[-1].removeprefix("Caused by:").strip()
        msg = root.split(": ", 1)[-1]
        if top is None:
            return log_line(root, 220)
        if msg[:60] not in tops[0]:
            return f"{top} (root cause: {log_line(root, 180)})"
    return top


def last_meaningful_line(*logs: Path) -> str:
    """The root cause of a failed start from the first of ``logs`` that has any output."""
    for log in logs:
        try:
            why = meaningful(log.read_text(errors="replace"))
        except OSError:
            continue
        if why:
            return why
    return "no log output"


def startup_failure(console_log: Path) -> str | None:
    """The cause when Neo4j logged 'ERROR Failed to start' (it keeps running when, e.g., the HTTP port is
    taken), else None."""
    try:
        text = console_log.read_text(errors="replace")
    except OSError:
        return None
    if re.search(r"\bERROR\b.*(Failed to start|Exception)", text):
        return meaningful(text)
    return None
