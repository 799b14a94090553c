"""Document metadata (issue 58): what every Document carries as properties for filters to select on.

The standard keys (``kbgraph.models.STANDARD_METADATA_KEYS``) and the user's own keys, merged from these layers,
each over the ones before it (``merge``):

1. the file system and the path: ``folder``, ``path``, ``file_type`` (``path_metadata``: from the file's path
   relative to the folder given to ingest), ``modified`` (mtime) and ``created`` (a birth time, where the
   platform keeps one) (``kbgraph.ingest.properties.file_system_metadata``);
2. the file's own properties: PDF metadata, Office core properties (author, created, modified), and the
   ``language`` of its text (``ParsedDocument.properties``; ``kbgraph.ingest.properties``);
3. the YAML front matter of a Markdown file, or a passage's ``metadata`` object in a .jsonl corpus
   (``ParsedDocument.front_matter``);
4. the sidecar ``<file>.meta.json`` next to the file (``read_sidecar``; never ingested as a document);
5. ``kbgraph ingest --meta KEY=VALUE`` (``parse_meta_options``), the same for every file of the run.

A user's key matches ``KEY`` and is none of ``RESERVED_DOCUMENT_PROPERTIES``, but for ``title`` in front matter
and sidecars: then it is the document's title (``apply_metadata``). A value is a ``MetadataValue``: text, an
integer, a float, a boolean or a list of texts; a date or time becomes ISO 8601 text (``to_value``); a key with no
value (None, '', []) is left out. Anything else fails the file with an ``IngestError`` naming the key and the
source. The merged keys become top-level Document properties (``d.team``) and ``d.metadata_keys`` lists them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, cast

from pydantic import BaseModel, ConfigDict, Field

from kbgraph.errors import IngestError
from kbgraph.models import RESERVED_DOCUMENT_PROPERTIES, MetadataValue
from kbgraph.text import one_line
from kbgraph.ingest.properties import file_system_metadata, iso_utc

if TYPE_CHECKING:
    from kbgraph.ingest.parse import ParsedDocument

#: What a user's metadata key looks like.
KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: The name a file's sidecar ends with, after the file's own name (``report.pdf.meta.json``).
SIDECAR_SUFFIX = ".meta.json"
#: Bytes a sidecar may hold.
MAX_SIDECAR_BYTES = 1_000_000
#: A front matter block: a first line ``---``, the YAML, a line ``---`` or ``...``.
_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)(?:\r?\n)?^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S | re.M)
#: Characters a text value may hold.
MAX_VALUE_CHARS = 10_000


class Origin(BaseModel):
    """Where a source comes from in its run: ``path``, its path relative to the folder given to ingest (posix; the
    file name for a file given by itself), and ``meta``, the run's ``--meta`` keys (checked: ``parse_meta_options``
    or ``check_meta``)."""

    model_config = ConfigDict(frozen=True)

    path: str
    meta: dict[str, MetadataValue] = Field(default_factory=dict)


def check_key(key: object, source: str, *, title: bool = False) -> str:
    """``key`` if it may name a user's metadata key (``KEY``, not reserved; ``title`` only when ``title``), else
    IngestError naming it and ``source`` (e.g. "report.pdf.meta.json")."""
    if not isinstance(key, str) or not KEY.match(key):
        raise IngestError(
            f"{source}: bad metadata key {one_line(repr(key), 80)}: a key is letters, digits and _, "
            "not starting with a digit"
        )
    if key in RESERVED_DOCUMENT_PROPERTIES and not (title and key == "title"):
        where = "a front matter block or a sidecar" if key == "title" else "nobody"
        raise IngestError(f"{source}: metadata key {key!r} is reserved (kbgraph writes it; set by {where})")
    return key


def to_value(value: object, key: str, source: str) -> MetadataValue | None:
    """``value`` as a Document property holds it: text (at most ``MAX_VALUE_CHARS``), an integer, a finite float, a
    boolean, a list of texts; a datetime as ``iso_utc`` text, a date as ``'2021-03-04'``; None for no value (None,
    blank text, an empty list). Raises IngestError naming ``key`` and ``source`` for anything else (a nested
    object, a list of other things, NaN)."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise IngestError(f"{source}: metadata key {key!r}: {value} is not a number a property can hold")
        return value
    if isinstance(value, datetime):
        return iso_utc(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        text = value.strip()
        if len(text) > MAX_VALUE_CHARS:
            raise IngestError(
                f"{source}: metadata key {key!r}: text of {len(text):,} characters, over {MAX_VALUE_CHARS:,}"
            )
        return text or None
    if isinstance(value, list | tuple):
        items = [to_value(v, key, source) if isinstance(v, str | date) else v for v in value]
        if not all(isinstance(v, str) for v in items if v is not None):
            raise IngestError(
                f"{source}: metadata key {key!r}: a list must hold only texts (found "
                f"{one_line(repr(list(value)), 100)})"
            )
        texts = [cast(str, v) for v in items if v is not None]
        return texts or None
    kind = "a nested object" if isinstance(value, Mapping) else f"a {type(value).__name__}"
    raise IngestError(
        f"{source}: metadata key {key!r}: {kind} is not a metadata value (text, a number, true/false, "
        "a date or a list of texts)"
    )


def user_metadata(mapping: object, source: str, *, title: bool = True) -> dict[str, MetadataValue]:
    """The keys of a user's ``mapping`` (a front matter block, a sidecar, a passage's ``metadata``) checked
    (``check_key``; ``title`` allowed when ``title``) and their values converted (``to_value``), keys with no value
    left out. Raises IngestError naming the key and ``source``, or when ``mapping`` is not a mapping."""
    if not isinstance(mapping, Mapping):
        raise IngestError(f"{source}: metadata must be an object of keys and values, not {type(mapping).__name__}")
    out: dict[str, MetadataValue] = {}
    for key, raw in mapping.items():
        value = to_value(raw, check_key(key, source, title=title), source)
        if value is not None:
            out[key] = value
    if isinstance(out.get("title"), list):
        raise IngestError(f"{source}: metadata key 'title': a title is one text, not a list")
    return out


def typed(text: str) -> MetadataValue:
    """A ``--meta`` value by its look: an integer, a float, true/false (any case), else the text itself."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if re.fullmatch(r"[+-]?\d+", low):
        return int(low)
    if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+)(e[+-]?\d+)?", low) and math.isfinite(float(low)):
        return float(low)
    return text


def parse_meta_options(items: Sequence[str]) -> dict[str, MetadataValue]:
    """``["team=hr", "year=2021"]`` (``kbgraph ingest --meta``) -> ``{"team": "hr", "year": 2021}`` (``typed``; a
    later key wins). Raises ValueError (a usage error) for an item without '=' or a bad or reserved key (``title``
    too: a title belongs to one file)."""
    out: dict[str, MetadataValue] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"--meta {item!r}: expected KEY=VALUE")
        try:
            check_key(key.strip(), "--meta")
        except IngestError as exc:
            raise ValueError(str(exc)) from None
        if value.strip():
            out[key.strip()] = typed(value.strip())
    return out


def check_meta(meta: Mapping[str, object]) -> dict[str, MetadataValue]:
    """A run's ``meta`` given as a mapping (``KnowledgeBase.ingest(meta=...)``) checked as ``--meta`` keys are;
    ValueError naming a bad key or value."""
    try:
        return user_metadata(meta, "--meta", title=False)
    except IngestError as exc:
        raise ValueError(str(exc)) from None


def path_metadata(relative: str) -> dict[str, MetadataValue]:
    """``folder`` (ending in '/', '' at the root), ``path`` and ``file_type`` (lower-case extension, no dot; absent
    without one) of a file at the posix path ``relative`` to the folder given to ingest."""
    rel = PurePosixPath(relative)
    folder = "" if str(rel.parent) in ("", ".") else f"{rel.parent.as_posix()}/"
    out: dict[str, MetadataValue] = {"folder": folder, "path": rel.as_posix()}
    if rel.suffix[1:]:
        out["file_type"] = rel.suffix[1:].lower()
    return out


def sidecar_of(path: Path) -> Path:
    """The sidecar of the file ``path``: ``<path>.meta.json`` beside it."""
    return path.with_name(path.name + SIDECAR_SUFFIX)


def is_sidecar(path: Path) -> bool:
    """Is ``path`` a metadata sidecar (its name ends in ``.meta.json``)?"""
    return path.name.lower().endswith(SIDECAR_SUFFIX) and len(path.name) > len(SIDECAR_SUFFIX)


def read_sidecar(path: Path, *, title: bool = True) -> dict[str, MetadataValue]:
    """The user's keys in the sidecar of ``path`` (``sidecar_of``; {} when there is none): a JSON object of keys
    and values (``user_metadata``; ``title`` allowed when ``title``). Raises IngestError naming the sidecar for one
    that cannot be read, is not JSON or holds a bad key or value."""
    side = sidecar_of(path)
    try:
        if not side.is_file():
            return {}
        if side.stat().st_size > MAX_SIDECAR_BYTES:
            raise IngestError(f"{side.name}: a sidecar of over {MAX_SIDECAR_BYTES:,} bytes")
        text = side.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise IngestError(f"{side.name}: cannot read the metadata sidecar: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise IngestError(f"{side.name}: the metadata sidecar is not UTF-8 text") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise IngestError(
            f"{side.name}: the metadata sidecar is not valid JSON ({exc.msg}, line {exc.lineno})"
        ) from exc
    return user_metadata(data, side.name, title=title)


def merge(*layers: Mapping[str, MetadataValue]) -> dict[str, MetadataValue]:
    """The layers merged, each over the ones before it (the module's order: file system, file properties, front
    matter, sidecar, --meta)."""
    out: dict[str, MetadataValue] = {}
    for layer in layers:
        out.update(layer)
    return out


def given_title(sidecar: Mapping[str, MetadataValue], front_matter: Mapping[str, MetadataValue]) -> str | None:
    """The title the user gives a file: its sidecar's ``title``, else its front matter's, else None."""
    title = sidecar.get("title") or front_matter.get("title")
    return None if title is None else one_line(str(title), 300)


def file_metadata(doc: ParsedDocument, title: str | None) -> str:
    """The JSON of what ``doc``'s own bytes gave (its properties and front matter) and the ``title`` the user gave
    it: the Document's ``file_metadata``, from which a re-ingest of the unchanged file merges its metadata anew
    without parsing it (``kbgraph.ingest.refresh``)."""
    return json.dumps(
        {"properties": doc.properties, "front_matter": doc.front_matter, "title": title},
        sort_keys=True,
        ensure_ascii=False,
    )


def base_layer(path: Path, origin: Origin) -> dict[str, MetadataValue]:
    """The lowest layer of the metadata of the file ``path``: the file system's (``modified``, ``created``) and the
    path's (``folder``, ``path``, ``file_type`` from ``origin.path``)."""
    return merge(file_system_metadata(path), path_metadata(origin.path))


def split_front_matter(text: str) -> tuple[dict[str, object] | None, str]:
    """(the YAML front matter of a Markdown text, the text after it): a block that opens the text with a line
    ``---`` and closes with a line ``---`` or ``...``, and parses as a YAML mapping; (None, ``text``) when the text
    has none (a block that is no mapping, a thematic break, is text). Raises IngestError for a block that is not
    valid YAML, naming its line."""
    m = _FRONT_MATTER.match(text)
    if m is None:
        return None, text
    import yaml

    try:
        data = yaml.safe_load(m.group(1))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        raise IngestError(f"front matter: not valid YAML{where}: {one_line(exc, 160)}") from exc
    if data is None:  # an empty block
        data = {}
    if not isinstance(data, dict):
        return None, text
    return data, text[m.end() :]


def apply_metadata(docs: Sequence[ParsedDocument], path: Path, origin: Origin) -> None:
    """Merge the metadata of ``docs`` (the documents parsed from ``path``) into each ``doc.metadata`` and
    ``doc.file_metadata`` (``base_layer``, then each document's own layers, its file's sidecar and the run's
    ``--meta``). A title the user gives
    (sidecar, front matter) becomes the document's title, its other titles its alternatives. Raises IngestError
    for a bad sidecar (a passage corpus's sidecar may not set ``title``: its passages have their own)."""
    corpus = any("#" in d.uri for d in docs)
    sidecar = read_sidecar(path, title=not corpus)
    low = base_layer(path, origin)
    for doc in docs:
        merged = merge(low, doc.properties, doc.front_matter, sidecar, origin.meta)
        title = given_title(sidecar, doc.front_matter)
        if title and not corpus:
            others = [t for t in (doc.title, *doc.title_alternatives) if t.casefold() != title.casefold()]
            doc.title, doc.title_alternatives = title, list(dict.fromkeys(others))
        doc.metadata = {k: v for k, v in merged.items() if k != "title"}
        doc.file_metadata = file_metadata(doc, None if corpus else title)


def same_values(a: Mapping[str, object], b: Mapping[str, object]) -> bool:
    """Do two metadata maps hold the same keys and values, types included (``True`` is not ``1``)?"""
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def update_row(
    doc_id: str, old: Mapping[str, object], new: Mapping[str, MetadataValue], file_meta: str | None
) -> dict[str, object]:
    """A row of ``ingest/update_metadata``: the document's ``metadata`` with None for every ``old`` key gone (a
    null removes the property), ``metadata_keys`` (the new keys, sorted) and ``file_metadata``."""
    values: dict[str, object] = {k: None for k in old if k not in new}
    values.update(new)
    return {"id": doc_id, "metadata": values, "metadata_keys": sorted(new), "file_metadata": file_meta}


__all__ = [
    "KEY",
    "SIDECAR_SUFFIX",
    "Origin",
    "apply_metadata",
    "base_layer",
    "check_key",
    "check_meta",
    "file_metadata",
    "given_title",
    "is_sidecar",
    "iso_utc",
    "merge",
    "parse_meta_options",
    "path_metadata",
    "read_sidecar",
    "same_values",
    "sidecar_of",
    "split_front_matter",
    "to_value",
    "typed",
    "update_row",
    "user_metadata",
]
