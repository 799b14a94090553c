"""A re-ingest that changes only a document's metadata (issue 58): the Document's metadata is updated in place
(``ingest/update_metadata``), nothing is parsed again, chunked or embedded.

* An unchanged file (same sha256, complete; kbgraph.ingest.unchanged): its metadata is merged anew without
  parsing it (``file_update``) from what its own bytes gave, kept as the Document's ``file_metadata`` (JSON of its
  properties, front matter and the title the user gave it), and from what lies outside the file now: its path
  and file system times, its sidecar, the run's ``--meta``. A different title the user gives it (sidecar) is not
  metadata only: the title is in the texts embedded, so the file is parsed and rewritten (so is a Document
  written before metadata existed: it has no ``file_metadata``).
* A parsed document whose content is unchanged (a passage of a changed corpus; a file whose bytes changed back):
  ``classify`` compares its merged metadata with the stored one.
* A passage corpus: its (:SourceFile) record keeps the sha256 of the metadata given it from outside the file
  (``outside_sha256``); when that changes, the corpus is read again (no passage is embedded unless its text
  changed) and its passages' metadata compared one by one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kbgraph.errors import IngestError
from kbgraph.ingest.metadata import Origin, base_layer, given_title, merge, read_sidecar, same_values, update_row
from kbgraph.models import stable_id
from kbgraph.store import GraphStore
from kbgraph.store.params import Row

if TYPE_CHECKING:
    from kbgraph.ingest.parse import ParsedDocument

#: Rows of ``ingest/update_metadata`` per statement.
UPDATE_BATCH = 5000


def stored_metadata(row: Mapping[str, object]) -> dict[str, object]:
    """The metadata of a Document as ``ingest/document_state`` returns it (``[key, value]`` pairs), as a dict."""
    pairs = row.get("metadata")
    if not isinstance(pairs, list | tuple):
        return {}
    return {str(p[0]): p[1] for p in pairs if isinstance(p, list | tuple) and len(p) == 2 and p[1] is not None}


def file_update(path: Path, origin: Origin, row: Mapping[str, object]) -> list[Row] | None:
    """For the unchanged file ``path`` whose Document is ``row`` (``ingest/document_state``): [] when its metadata is
    as stored, [the ``ingest/update_metadata`` row] when only its metadata changed, None when it must be parsed
    again (no ``file_metadata``, another title given, a sidecar that fails: the parse reports it)."""
    raw = row.get("file_metadata")
    if not isinstance(raw, str):
        return None
    try:
        own = json.loads(raw)
        properties, front = dict(own["properties"]), dict(own["front_matter"])
        sidecar = read_sidecar(path)
    except (ValueError, KeyError, TypeError, IngestError):
        return None
    if given_title(sidecar, front) != own.get("title"):
        return None
    merged = merge(base_layer(path, origin), properties, front, sidecar, origin.meta)
    new = {k: v for k, v in merged.items() if k != "title"}
    old = stored_metadata(row)
    if same_values(old, new):
        return []
    return [update_row(str(row["id"]), old, new, raw)]


def outside_sha256(path: Path, origin: Origin) -> str:
    """The sha256 of the metadata a passage corpus ``path`` gets from outside the file: its path, file system
    times, sidecar and the run's ``--meta`` (what its (:SourceFile) record keeps). Raises IngestError for a bad
    sidecar."""
    layers = [base_layer(path, origin), read_sidecar(path, title=False), origin.meta]
    return hashlib.sha256(json.dumps(layers, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class Changed:
    """The documents of one source sorted against the graph (``classify``): ``fresh`` to write (new, changed or
    incomplete), ``existing`` the ids among them already in the graph (replaced), ``unchanged`` counted, and
    ``updates`` the ``ingest/update_metadata`` rows of unchanged documents whose metadata changed."""

    fresh: list[ParsedDocument] = field(default_factory=list)
    existing: set[str] = field(default_factory=set)
    unchanged: int = 0
    updates: list[Row] = field(default_factory=list)


def classify(store: GraphStore, docs: Sequence[ParsedDocument]) -> Changed:
    """Sort the parsed ``docs`` against the graph (``ingest/document_state``, 5,000 ids a statement): a complete
    document of the same sha256 and title is unchanged (its metadata updated when it differs), any other is
    fresh."""
    ids = {stable_id("doc", d.uri): d for d in docs}
    keys = list(ids)
    state: dict[str, Row] = {}
    for start in range(0, len(keys), 5000):
        for row in store.run("ingest/document_state", {"ids": keys[start : start + 5000]}):
            state[row["id"]] = row
    out = Changed()
    for doc_id, doc in ids.items():
        old = state.get(doc_id)
        if (
            old
            and old.get("sha256") == doc.sha256
            and old.get("status") == "complete"
            and old.get("title") == doc.title
        ):
            out.unchanged += 1
            before = stored_metadata(old)
            if not same_values(before, doc.metadata) or old.get("file_metadata") != doc.file_metadata:
                out.updates.append(update_row(doc_id, before, doc.metadata, doc.file_metadata))
            continue
        if old is not None:
            out.existing.add(doc_id)
        out.fresh.append(doc)
    return out


def write_updates(store: GraphStore, rows: Sequence[Row]) -> int:
    """Write the metadata-only ``rows`` (``update_row``), ``UPDATE_BATCH`` a statement; returns the documents
    updated."""
    done = 0
    for start in range(0, len(rows), UPDATE_BATCH):
        got = store.run("ingest/update_metadata", {"rows": list(rows[start : start + UPDATE_BATCH])})
        done += int(got[0]["updated"]) if got else 0
    return done


__all__ = ["Changed", "classify", "file_update", "outside_sha256", "stored_metadata", "write_updates"]
