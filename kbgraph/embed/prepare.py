"""The models a fresh home must make before it can embed, made in the background while ingestion parses and
distils (``prepare_models``): the ONNX export of the embedding model (``kbgraph.embed.onnx_export``, ~8 s with
torch) and the static model of the static layers (``kbgraph.embed.static_model``, model2vec's distillation,
~27 s). Each is made by a child interpreter of its own, started when the run starts, so neither torch nor
model2vec is imported by the ingesting process; the run's own ``get_embedder`` and ``get_static_embedder`` then
wait on the same file locks and find the files made (docs/benchmarks.md#the-sample-documents: a fresh home's
first ingest of the sample documents).

A run that reaches its embed stage before a child has taken the model's lock (a small run: the child is still
starting) makes the model itself, and the child then finds it made. A child that fails leaves nothing behind: the
run then makes the file itself, in its own process, and reports that failure as before (``kbgraph.embed.factory``;
a failed export is remembered in ``<file>.failed``, ``export_failed``).
"""

from __future__ import annotations

import importlib.util
import logging
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from kbgraph.embed.base import OPENAI_PREFIX
from kbgraph.embed.factory import export_failed, onnx_model_path
from kbgraph.embed.onnx_export import export_onnx
from kbgraph.embed.sentence import local_model_dir
from kbgraph.embed.static_model import build_static_model, static_model_dir
from kbgraph.errors import ConfigError, KBGraphError
from kbgraph.settings import Settings

__all__ = ["MadeModel", "ModelError", "make_models", "missing_models", "prepare_models"]

log = logging.getLogger("kbgraph.embed")


def missing_models(settings: Settings) -> list[list[str]]:
    """The arguments of this module's command (``python -m kbgraph.embed.prepare``) for each model
    ``settings`` will use that is not made yet: ``["onnx", model folder, export path]`` when the embedder would
    export (backend ``onnx``, or ``auto`` with ``late_chunking``; not after a remembered failure, not without
    the ``onnx`` package), ``["static", teacher folder, static model folder, dimension or ""]`` when a static
    layer is on. Empty when everything is there (or the model is remote: nothing to make)."""
    e = settings.embedding
    name = (e.embedding_model or "").strip()
    if not name or name.lower().startswith(OPENAI_PREFIX):
        return []
    todo: list[list[str]] = []
    backend = (e.embedding_backend or "auto").strip().lower()
    path = onnx_model_path(settings) if backend == "onnx" or (backend == "auto" and e.late_chunking) else None
    if (
        path is not None
        and not path.is_file()
        and not export_failed(path).exists()
        and importlib.util.find_spec("onnx")
    ):
        todo.append(["onnx", str(local_model_dir(name)), str(path)])  # (a path: the model is a local folder)
    if e.static_vector_layers:
        try:
            teacher, out = static_model_dir(settings)
        except ConfigError:
            return todo  # the run raises it where it needs the model
        if not (out / "config.json").is_file():
            todo.append(["static", str(teacher), str(out), str(e.static_dimension or "")])
    return todo


@contextmanager
def prepare_models(settings: Settings, wanted: bool = True) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Start a child per model in ``missing_models(settings)`` (none unless ``wanted``) and yield them. On
    leaving, stop those still running: a run that embeds waits for its models on their file locks, so a child
    still running made something this run did not use (a run whose every file failed or was unchanged); it stops
    cleanly (SIGTERM: its temporary file is removed, a half-made model is never renamed into place) and the next
    run that needs the model makes it."""
    children: list[subprocess.Popen[bytes]] = []
    if wanted:
        for args in missing_models(settings):
            log.info("making the %s model in the background: %s", args[0], args[2])
            children.append(_start(args, stderr=subprocess.DEVNULL))
    try:
        yield children
    finally:
        for child in children:
            if child.poll() is None:
                child.terminate()
            child.wait()


def _start(args: list[str], stderr: int) -> subprocess.Popen[bytes]:
    """A child interpreter running this module's command with ``args`` (one of ``missing_models``'), its output
    discarded and its error output to ``stderr`` (``subprocess.DEVNULL`` or ``PIPE``)."""
    return subprocess.Popen(
        [sys.executable, "-m", "kbgraph.embed.prepare", *args], stdout=subprocess.DEVNULL, stderr=stderr
    )


class ModelError(KBGraphError):
    """A model could not be made (``make_models``): the message names it and ends with the child's last lines."""


class MadeModel(BaseModel):
    """A model ``make_models`` made: ``kind`` (``onnx``: the embedding model's ONNX export; ``static``: the static
    model of the static layers), the file or folder it wrote, and the wall seconds from the start of
    ``make_models`` until it was seen finished."""

    kind: Literal["onnx", "static"]
    path: str
    seconds: float


def make_models(settings: Settings) -> list[MadeModel]:
    """Make now every model ``missing_models(settings)`` lists, each in a child interpreter of its own, at once,
    and wait for them (``kbgraph models``: the set-up step that spares the first ingestion of a home its ~35 s of
    CPU). Returns what was made, in ``missing_models`` order; [] when nothing was missing. Raises ModelError naming
    the model and the end of its child's error output when one fails; the others are still waited for, and what
    they made is kept."""
    started = time.monotonic()
    children = [(args, _start(args, stderr=subprocess.PIPE)) for args in missing_models(settings)]
    made, failed = [], []
    for args, child in children:
        _, err = child.communicate()
        if child.returncode == 0:
            kind: Literal["onnx", "static"] = "onnx" if args[0] == "onnx" else "static"
            made.append(MadeModel(kind=kind, path=args[2], seconds=round(time.monotonic() - started, 1)))
        else:
            tail = " | ".join(err.decode(errors="replace").strip().splitlines()[-3:])
            failed.append(f"the {args[0]} model ({args[2]}), exit {child.returncode}: {tail or 'no output'}")
    if failed:
        raise ModelError(
            "could not make " + "; ".join(failed) + " (`kbgraph ingest FOLDER` makes a missing model in "
            "its own process and reports the whole error; KBGRAPH_EMBEDDING_BACKEND=torch does without "
            "the ONNX export, KBGRAPH_STATIC_LAYERS= without the static model)"
        )
    return made


def _main(args: list[str]) -> int:
    """``onnx FOLDER OUT`` or ``static TEACHER OUT [DIMENSION]``: make that model unless it is there. SIGTERM
    exits through Python (``finally`` blocks remove the temporary file, the static build's child is killed)."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args[0] == "onnx":
        export_onnx(Path(args[1]), Path(args[2]))
    elif args[0] == "static":
        build_static_model(Path(args[1]), Path(args[2]), dimension=int(args[3]) if args[3:] and args[3] else None)
    else:
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
