"""Structured outputs: how a JSON-answering prompt asks the server to constrain its answer.

Every JSON prompt (atomic questions, triples, chunk split, proposer, selector, judge...) carries its pydantic
model's JSON schema in the system message (``kbgraph.llm.json_answers``). Where the endpoint supports it, the
same schema also goes into the request's ``response_format`` so the server constrains decoding to it. The
modes, tried in this order when ``llm_response_format`` is ``auto``:

* ``json_schema``: ``{"type": "json_schema", "json_schema": {"name", "schema", "strict": false}}``, the OpenAI
  form, which vLLM, llama.cpp's ``llama-server`` and Ollama's OpenAI endpoint accept;
* ``json_object_schema``: ``{"type": "json_object", "schema": {...}}``, the form llama-cpp-python's server
  accepts (it rejects ``json_schema`` with HTTP 500 "Input should be 'text' or 'json_object'");
* ``json_object``: ``{"type": "json_object"}``, valid JSON of any shape;
* ``none``: no ``response_format``: the schema in the prompt and one repair request only.

A mode the server rejects (HTTP 400/422/500 naming ``response_format``) is dropped and the request is sent
again with the next one; the first mode that is answered is remembered per endpoint (base URL + model) in
``<llm_cache_dir>/response_formats.json``, so a later process does not probe again. ``strict`` stays false:
OpenAI's strict mode needs ``additionalProperties: false`` on every object, which pydantic's schemas lack.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

Mode = Literal["json_schema", "json_object_schema", "json_object", "none"]
MODES: tuple[Mode, ...] = ("json_schema", "json_object_schema", "json_object", "none")
MEMORY_FILE = "response_formats.json"

_REJECTION = re.compile(r"response_format|json_schema|json_object|Input should be 'text'", re.IGNORECASE)


def schema_name(schema: type[BaseModel]) -> str:
    """The schema's name as OpenAI allows it (``^[a-zA-Z0-9_-]{1,64}$``)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__)[:64] or "answer"


def sent_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema sent for ``schema`` (in ``response_format`` and in the prompt): pydantic's, and for a
    schema whose class sets ``EVERY_FIELD_REQUIRED = True`` every property of every object required. A field
    with a default is optional in pydantic's schema, and a constrained decoder then may close the object
    without it: SmolLM2-135M answered the proposer with only ``thinking`` on 8 of 20 questions, ending
    Algorithm 1 at once. Only the schemas whose loop stops on an empty answer opt in (the proposer, MIGRES'
    query generator): required, the lists a small model fills to their bounds (atomic questions, entities,
    triples) made its answers longer and more often cut. The defaults still apply to an answer from an endpoint
    that does not constrain decoding (validation uses the model, not this schema)."""
    js = schema.model_json_schema()
    if getattr(schema, "EVERY_FIELD_REQUIRED", False):
        _require_all(js)
    return js


def _require_all(node: Any) -> None:
    """Mark every property required in a JSON schema node and the schemas below it (in place)."""
    if isinstance(node, dict):
        props = node.get("properties")
        if isinstance(props, dict) and props:
            node["required"] = list(props)
            for sub in props.values():
                _require_all(sub)
        for key, value in node.items():
            if key != "properties":
                _require_all(value)
    elif isinstance(node, list):
        for value in node:
            _require_all(value)


def response_format(mode: Mode, schema: type[BaseModel]) -> dict[str, Any] | None:
    """The ``response_format`` request field for ``mode`` (None for ``none``); the schema is
    :func:`sent_schema`'s."""
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": schema_name(schema), "schema": sent_schema(schema), "strict": False},
        }
    if mode == "json_object_schema":
        return {"type": "json_object", "schema": sent_schema(schema)}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def mode_of(fmt: dict[str, Any] | None) -> Mode:
    """The mode a ``response_format`` value was made for."""
    if not fmt:
        return "none"
    if fmt.get("type") == "json_schema":
        return "json_schema"
    return "json_object_schema" if "schema" in fmt else "json_object"


def next_mode(mode: Mode) -> Mode:
    """The mode to fall back to after ``mode`` was rejected (``none`` stays ``none``)."""
    i = MODES.index(mode)
    return MODES[min(i + 1, len(MODES) - 1)]


def is_rejection(status: int | None, message: str) -> bool:
    """Does an error answer say the server does not take this ``response_format``? (400, 422 or 500 whose
    message names the field; llama-cpp-python answers 500, vLLM 400, others 422.)"""
    return status in (400, 422, 500) and bool(_REJECTION.search(message or ""))


class FormatMemory:
    """Which mode each endpoint answered, in ``<folder>/response_formats.json`` ({endpoint: mode}).
    Shared by the clients of one process (a lock) and across processes (atomic rename on write); a
    missing or unreadable file is an empty memory."""

    _lock = threading.Lock()

    def __init__(self, folder: Path | None) -> None:
        self.path = Path(folder) / MEMORY_FILE if folder is not None else None
        self._memory: dict[str, str] = {}
        if self.path is not None and self.path.is_file():
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                self._memory = {str(k): str(v) for k, v in data.items() if v in MODES}
            except (OSError, ValueError, AttributeError):
                self._memory = {}

    def get(self, endpoint: str) -> Mode | None:
        mode = self._memory.get(endpoint)
        return mode if mode in MODES else None

    def put(self, endpoint: str, mode: Mode) -> None:
        with self._lock:
            if self._memory.get(endpoint) == mode:
                return
            self._memory[endpoint] = mode
            if self.path is None:
                return
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(json.dumps(self._memory, indent=1, sort_keys=True), encoding="utf-8")
                tmp.replace(self.path)
            except OSError:
                pass  # a read-only home: the memory lasts for this process only


class JSONStats(BaseModel):
    """JSON answers of one prompt (by schema name): ``answers`` validated, of which ``repaired`` needed the
    repair request, and ``failed`` that were unusable even after it; ``cut``: requests (first or repair) the
    server stopped at the token limit (``finish_reason`` "length"); ``salvaged``: answers taken from the whole
    items of a cut answer (``kbgraph.llm.json_answers.salvage_cut``) instead of a repair."""

    answers: int = 0
    repaired: int = 0
    failed: int = 0
    cut: int = 0
    salvaged: int = 0

    @property
    def repair_share(self) -> float:
        """Share of requests that needed a repair (repaired + failed over all), 0.0 when none."""
        total = self.answers + self.failed
        return (self.repaired + self.failed) / total if total else 0.0
