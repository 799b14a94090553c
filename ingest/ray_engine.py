"""The ``ray`` ingestion engine (setting ``ingest_engine``; ``kbgraph ingest --engine ray``): the compute of a run
fanned out on a Ray cluster, the writes kept in the run's own process.

The run (``kbgraph.ingest.pipeline``; this engine's side of it: ``kbgraph.ingest.ray_run.RayEngine``, a row of
``kbgraph.ingest.engines``) does what needs the knowledge base itself, exactly as the ``local`` engine does: it holds the lock, hashes every file before parsing it (an unchanged file never reaches Ray),
reads passage corpora (.jsonl) and drops their unchanged passages, and at the end writes every document through
the same complete-only write path (``kbgraph.ingest.groups.GroupRunner``: one unit of work per group, a failed
group retried one document at a time), records the ``(:IngestionRun)`` and prints the same progress lines.
What goes to Ray is the work in between, as a Ray Data pipeline over the files and passages left::

    sources -> parse + chunk (tasks) -> distill (actors holding spaCy) -> embed (actors holding the embedder;
    one GPU each when the cluster has GPUs) -> back to the run, in order, one group per row

Every stage calls the functions the ``local`` engine calls (``kbgraph.ingest.compute``), so both engines build
the same records. A document that fails in a stage is reported failed and the others go on (a failed parse
fails its file); an error that no document would survive (``groups.FATAL``: a missing package, a bad
setting) stops the run as in the ``local`` engine.

``--ray-address`` (setting ``ray_address``) joins a running cluster, whose nodes need kbgraph installed (the
same version) and, for the embedder and spaCy, the same models; without it ``ray.init`` starts a local Ray on
this machine with ``ingest_workers`` CPUs (default: its cores), a small object store, no dashboard. Ray is
imported here only (``import_ray``) and only when this engine runs.
"""

from __future__ import annotations

import logging
import math
import os
import pickle
import socket
import time
import warnings
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from kbgraph.errors import ConfigError, IngestError
from kbgraph.home import EMBED_CACHE
from kbgraph.ingest.report import error_line
from kbgraph.models import DocumentGraph
from kbgraph.settings import Settings
from kbgraph.embed import get_embedder
from kbgraph.embed.cache import CachedEmbedder
from kbgraph.ingest.compute import chunk_documents, distill_graphs, embed_graphs, parse_source, titles_for
from kbgraph.ingest.groups import FATAL
from kbgraph.ingest.nlp import load_nlp
from kbgraph.ingest.sources import uri_to_path
from kbgraph.llm.base import LLM
from kbgraph.embed.base import Embedder

if TYPE_CHECKING:
    import numpy as np

    from kbgraph.ingest.metadata import Origin
    from kbgraph.ingest.parse import ParsedDocument

# unstructured (imported by the parsers in the workers) sends usage analytics unless this is set
os.environ.setdefault("DO_NOT_TRACK", "1")

log = logging.getLogger("kbgraph.ingest")

#: What to install when Ray is missing.
RAY_HINT = "pip install 'kbgraph[ray]'"
#: Object store of a local Ray (bytes): documents cross it once per stage, and are small next to the models.
OBJECT_STORE_BYTES = 256 * 1024 * 1024
#: Passages of a corpus packed into one row of the pipeline's source (a task per passage costs more than it does).
PASSAGES_PER_ROW = 64


def import_ray() -> ModuleType:
    """The ``ray`` module with Ray Data; ConfigError naming the extra to install when it is missing."""
    try:
        import ray
        import ray.data  # noqa: F401 - the Data library comes with the ray[data] extra
    except ImportError as exc:
        raise ConfigError(f"ingest_engine=ray needs Ray Data, which is not installed ({exc}): {RAY_HINT}") from exc
    for name in ("ray", "ray.data"):  # Ray's notices would interleave with the progress lines (ray.data has its own)
        logging.getLogger(name).setLevel(logging.ERROR)
    module: ModuleType = ray
    return module


def check_address(address: str | None, timeout: float = 10.0) -> None:
    """ConfigError when the Ray cluster at ``address`` (host:port, or ray://host:port) does not accept a TCP
    connection within ``timeout`` seconds; Ray itself would retry for many minutes. None and ``auto`` pass."""
    if not address or address in ("auto", "local"):
        return
    host, _, port = address.split("://", 1)[-1].rpartition(":")
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout).close()
    except (OSError, ValueError) as exc:
        raise ConfigError(f"no Ray cluster answers at {address!r} (setting ray_address, --ray-address): {exc}") from exc


# --- the records that travel through the pipeline ------------------------------------------------
@dataclass
class Work:
    """One document (or one file that failed to parse) on its way through the stages. ``path``: its source
    file; ``doc``: the parsed document; ``graph``: its records so far; ``error``: why it failed (``parsed``
    False: the file failed to parse, else the document failed in a later stage); ``fatal``: an error that stops
    the run; ``seconds``: its parse and chunk time."""

    path: str
    doc: ParsedDocument | None = None
    graph: DocumentGraph | None = None
    error: str | None = None
    parsed: bool = True
    fatal: BaseException | None = None
    seconds: dict[str, float] = field(default_factory=dict)  # parse (the file's first document), chunk

    @property
    def ok(self) -> bool:
        return self.graph is not None and self.error is None and self.fatal is None


@dataclass
class Batch:
    """A group of documents as the pipeline hands it back: its ``works`` in order, ``seconds`` the workers
    spent per stage (parse, chunk, distill, embed) and what the stages made (``questions``, ``triples``,
    ``entities``, ``texts`` embedded)."""

    works: list[Work]
    seconds: dict[str, float] = field(default_factory=dict)
    questions: int = 0
    triples: int = 0
    entities: int = 0
    texts: int = 0


def _fatal(exc: BaseException) -> BaseException:
    """``exc`` as it can travel back to the run (an exception that does not pickle becomes a ConfigError)."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - any pickling failure
        return ConfigError(error_line(exc))


def _rows(key: str, objects: Sequence[Work] | Sequence[Batch]) -> dict[str, np.ndarray]:
    import numpy as np

    col = np.empty(len(objects), dtype=object)
    col[:] = [pickle.dumps(o, protocol=pickle.HIGHEST_PROTOCOL) for o in objects]
    return {key: col}


# --- the stages (run in Ray workers) ---------------------------------------------------------------
def parse_chunk(batch: dict[str, np.ndarray], *, settings: Settings, llm: LLM | None) -> dict[str, np.ndarray]:
    """Stage 1-2 (a Ray task per row): a file (``path``) is parsed, its metadata merged with its ``origin`` (a
    pickled ``kbgraph.ingest.metadata.Origin``); the passages packed in ``docs`` were read by the run. Each document is chunked; one ``Work`` row per document (or per file that failed to parse)."""
    out: list[Work] = []
    for path, packed, origin in zip(batch["path"], batch["docs"], batch["origin"], strict=True):
        t0 = time.perf_counter()
        err: str | None = None
        docs: list[ParsedDocument] = []
        if packed:
            docs = pickle.loads(packed)
        else:
            try:
                docs = parse_source(Path(path), settings, pickle.loads(origin) if origin else None)
            except IngestError as exc:
                err = str(exc)
            except Exception as exc:  # noqa: BLE001 - a parser bug fails the file, not the run
                err = f"{type(exc).__name__}: {exc}"
        parse_s = 0.0 if packed else time.perf_counter() - t0
        if err is not None:
            out.append(Work(str(path), error=err, parsed=False, seconds={"parse": parse_s}))
            continue
        for i, doc in enumerate(docs):
            t1 = time.perf_counter()
            work = Work(str(path), doc=doc)
            try:
                work.graph = chunk_documents([doc], settings, llm=llm)[0]
            except FATAL as exc:
                work.fatal = _fatal(exc)
            except Exception as exc:  # noqa: BLE001 - this document fails, the others go on
                work.error = error_line(exc)
            work.seconds = {"parse": parse_s if i == 0 else 0.0, "chunk": time.perf_counter() - t1}
            out.append(work)
    return _rows("work", out)


class Distiller:
    """Stage 3 (a Ray actor holding spaCy): a batch of ``Work`` rows distilled together -> one ``Batch`` row.
    A batch that fails is distilled again one document at a time, so only the failing document fails."""

    def __init__(self, settings: Settings, llm: LLM | None, titles: Mapping[str, str] | None):
        self.settings, self.llm, self.titles = settings, llm, titles
        load_nlp()  # loaded once per actor, before the first batch

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        works: list[Work] = [pickle.loads(b) for b in batch["work"]]
        out = Batch(works, seconds={"parse": 0.0, "chunk": 0.0, "distill": 0.0, "embed": 0.0})
        for w in works:
            for stage, s in w.seconds.items():
                out.seconds[stage] += s
        t0 = time.perf_counter()
        ok = [w for w in works if w.ok]
        titles = titles_for([w.doc for w in ok if w.doc is not None], self.titles)  # (each has its doc)
        if not self._distill(ok, out, titles) and len(ok) > 1:
            for w in ok:
                self._distill([w], out, titles)
        out.seconds["distill"] = time.perf_counter() - t0
        return _rows("batch", [out])

    def _distill(self, works: list[Work], out: Batch, titles: Mapping[str, str] | None) -> bool:
        if not works:
            return True
        try:
            d = distill_graphs(
                [w.graph for w in works if w.graph is not None], self.settings, llm=self.llm, titles=titles, n_process=1
            )
        except FATAL as exc:
            for w in works:
                w.fatal = _fatal(exc)
            return True
        except Exception as exc:  # noqa: BLE001 - recorded (one document) or retried one by one
            if len(works) == 1:
                works[0].error = error_line(exc)
                return True
            return False
        out.questions += len(d.questions)
        out.triples += len(d.triples)
        out.entities += len(d.entities)
        return True


class EmbedActor:
    """Stage 4 (a Ray actor holding the embedder, one GPU when the cluster has GPUs): one ``Batch`` row embedded
    (every layer switched on); a batch that fails is embedded again one document at a time."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.embedder = make_embedder(settings)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        out: list[Batch] = []
        for b in batch["batch"]:
            group: Batch = pickle.loads(b)
            t0 = time.perf_counter()
            ok = [w for w in group.works if w.ok]
            if not self._embed(ok, group) and len(ok) > 1:
                for w in ok:
                    self._embed([w], group)
            group.seconds["embed"] = time.perf_counter() - t0
            out.append(group)
        return _rows("batch", out)

    def _embed(self, works: list[Work], group: Batch) -> bool:
        if not works:
            return True
        try:
            group.texts += embed_graphs([w.graph for w in works if w.graph is not None], self.settings, self.embedder)
        except FATAL as exc:
            for w in works:
                w.fatal = _fatal(exc)
        except Exception as exc:  # noqa: BLE001 - recorded (one document) or retried one by one
            if len(works) > 1:
                return False
            works[0].error = error_line(exc)
        return True


def make_embedder(settings: Settings) -> Embedder:
    """The embedder of ``settings`` as a knowledge base makes it: the model, behind the embedding cache when
    ``embedding_cache`` is on (each machine of a cluster keeps its own)."""
    embedder = get_embedder(settings)
    if settings.embedding.embedding_cache:
        folder = settings.embedding.embedding_cache_dir or settings.home / EMBED_CACHE
        embedder = CachedEmbedder(embedder, folder / "embeddings.sqlite3")
    return embedder


# --- the run's side --------------------------------------------------------------------------------
class RayCompute:
    """The Ray Data pipeline of one run: ``batches(sources)`` yields the groups computed, in order. ``llm``: the
    run's LLM (None offline), sent to the workers; ``titles``: {document id: title} of the passage corpora read
    by the run."""

    def __init__(self, settings: Settings, *, llm: LLM | None = None, titles: Mapping[str, str] | None = None):
        self.settings, self.llm, self.titles = settings, llm, dict(titles or {})
        self.address = settings.ingest.ray_address
        self.workers = settings.ingest.ingest_workers
        self.gpus = 0

    def batches(
        self, files: Sequence[Path], passages: Sequence[ParsedDocument], origins: Mapping[Path, Origin] | None = None
    ) -> Generator[Batch, None, None]:
        """Parse ``files`` and chunk, distill and embed their documents and the parsed ``passages`` (documents
        read by the run) on Ray; yields one ``Batch`` per group, in the order of the sources. ``origins``: where
        each file comes from in the run (its metadata's path and ``--meta``; default its name). Starts a local Ray
        (or connects to ``ray_address``) and shuts it down when done or abandoned."""
        ray = import_ray()
        started = self._init(ray)
        try:
            yield from self._pipeline(ray, files, passages, origins or {})
        finally:
            if started:
                ray.shutdown()

    def _init(self, ray: ModuleType) -> bool:
        """Start or join Ray (quietly); True when this call did (and shuts it down at the end)."""
        if ray.is_initialized():
            self.workers = self.workers or int(ray.cluster_resources().get("CPU", 1))
            return False
        quiet = {
            "include_dashboard": False,
            "logging_level": logging.ERROR,
            "log_to_driver": False,
            "configure_logging": False,
        }
        try:
            if self.address:
                ray.init(address=self.address, **quiet)
            else:
                cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
                ray.init(num_cpus=self.workers or cpus, object_store_memory=OBJECT_STORE_BYTES, **quiet)
        except ConnectionError as exc:
            raise ConfigError(f"cannot join the Ray cluster at {self.address!r} (setting ray_address): {exc}") from exc
        self.workers = self.workers or int(ray.cluster_resources().get("CPU", 1))
        return True

    def _pipeline(
        self, ray: ModuleType, files: Sequence[Path], passages: Sequence[ParsedDocument], origins: Mapping[Path, Origin]
    ) -> Iterator[Batch]:
        ctx = ray.data.DataContext.get_current()
        ctx.execution_options.preserve_order = True  # groups come back, and are written, in the sources' order
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False
        rows = [
            {"path": str(p), "docs": b"", "origin": pickle.dumps(origins[p]) if p in origins else b""} for p in files
        ]
        for i in range(0, len(passages), PASSAGES_PER_ROW):
            part = list(passages[i : i + PASSAGES_PER_ROW])
            rows.append(
                {
                    "path": _file_path(part[0].uri),
                    "docs": pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL),
                    "origin": b"",
                }
            )
        if not rows:
            return
        n_docs = len(files) + len(passages)
        workers = max(1, self.workers or 1)
        size = max(1, min(self.settings.ingest.ingest_group_size, math.ceil(n_docs / (2 * workers))))
        self.gpus = int(ray.cluster_resources().get("GPU", 0))
        # one per GPU; on CPU one per worker: Ray runs an actor of a fraction of a CPU with OMP_NUM_THREADS=1, so
        # an embedder uses one core (ONNX Runtime's intra-op threads follow it, kbgraph.embed.onnx_runtime)
        embedders = self.gpus or workers
        # logical CPUs per process, so that every stage fits the cluster at once (a stage never waits for another)
        cpu = min(1.0, float(ray.cluster_resources().get("CPU", workers)) / (2 * workers + embedders))
        ds = ray.data.from_items(rows, override_num_blocks=len(rows))
        ds = ds.map_batches(
            parse_chunk,
            batch_size=1,
            fn_kwargs={"settings": self.settings, "llm": self.llm},
            num_cpus=cpu,
            compute=ray.data.TaskPoolStrategy(size=workers),
        )
        # max_restarts=0: a worker that dies fails the run (interrupted; the next run redoes what is not complete),
        # as a crash of the local engine does, rather than restarting with arguments the object store may have lost
        # (map_batches has no named max_restarts yet: passing it as a remote argument warns of a deprecation)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*ray_remote_args.*deprecated")
            ds = ds.map_batches(
                Distiller,
                batch_size=size,
                num_cpus=cpu,
                compute=ray.data.ActorPoolStrategy(size=workers),
                fn_constructor_kwargs={"settings": self.settings, "llm": self.llm, "titles": self.titles},
                max_restarts=0,
            )
            ds = ds.map_batches(
                EmbedActor,
                batch_size=1,
                num_cpus=cpu,
                compute=ray.data.ActorPoolStrategy(size=embedders),
                fn_constructor_kwargs={"settings": self.settings},
                max_restarts=0,
                num_gpus=1 if self.gpus else None,
            )
        log.info(
            "ray: %d files and %d passages, %d workers, %d embedders%s, groups of %d documents",
            len(files),
            len(passages),
            workers,
            embedders,
            " (1 GPU each)" if self.gpus else "",
            size,
        )
        for row in ds.iter_rows():
            batch: Batch = pickle.loads(row["batch"])
            yield batch


def _file_path(uri: str) -> str:
    return uri_to_path(uri.split("#", 1)[0])


__all__ = [
    "OBJECT_STORE_BYTES",
    "RAY_HINT",
    "Batch",
    "Distiller",
    "EmbedActor",
    "RayCompute",
    "Work",
    "check_address",
    "import_ray",
    "make_embedder",
    "parse_chunk",
]
