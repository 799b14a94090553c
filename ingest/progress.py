"""What ``kbgraph ingest`` tells a person or a log while it runs (kbgraph.ingest.pipeline).

One account of the run (:class:`Progress`) behind two displays:

* :class:`LogProgress` (stdout or stderr not a terminal: cron, CI, ``| tee``): one ``kbgraph.ingest`` log line
  per stage per group, with the stage's counts, seconds and rate and the run's totals, e.g.::

      group 2 embed: 5,210 texts in 41.3 s (126 texts/s) | files 12/136, 40 documents, 1,712 chunks written, 3:12 elapsed

  and, whenever ``interval`` seconds (30) pass without a line, a heartbeat line naming the stage under way and
  for how long, so a run is never silent for longer than that (a heartbeat thread; no stage needs to report).
* :class:`RichProgress` (both a terminal): bars on stderr, files done of the files found, chunks written,
  and the stage under way.

"files d/t": t is the number of files found before anything is parsed; a file is done when all its
documents are written, or it is unchanged, or it failed. A passage corpus (.jsonl) is one file.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress as RichBars

log = logging.getLogger("kbgraph.ingest")

#: Seconds without a line after which LogProgress writes a heartbeat.
HEARTBEAT_SECONDS = 30.0


def file_key(uri: str) -> str:
    """The source file of a document URI (a passage's ``#id`` dropped)."""
    return uri.split("#", 1)[0]


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class Stage:
    """One stage of one group under way; ``done(n, unit, detail)`` records what it did (for its line)."""

    def __init__(self, name: str, group: int, what: str):
        self.name, self.group, self.what = name, group, what
        self.started = time.monotonic()
        self.n: int | None = None
        self.unit = ""
        self.detail = ""

    def done(self, n: int, unit: str, detail: str = "") -> None:
        self.n, self.unit, self.detail = n, unit, detail


class Progress:
    """The account of a run: ``files_total`` found up front; the pipeline reports files read
    (``file_read``), documents written or failed (``written``, ``document_failed``) and runs each stage of
    a group inside ``stage(...)``. Thread-safe enough for a heartbeat reader (counters only grow)."""

    def __init__(self, files_total: int):
        self.files_total = files_total
        self.files_done = 0
        self.documents = 0  # written
        self.chunks = 0  # written
        self.unchanged = 0  # documents
        self.failed = 0  # files
        self.group = 0
        self.started = time.monotonic()
        self.current: Stage | None = None
        self._left: dict[str, int] = {}  # file key -> its documents not yet written or failed
        self._read = 0  # files read since the last group's parse line
        self._read_started = time.monotonic()

    # --- the pipeline's calls ---------------------------------------------------------------------
    def file_read(self, key: str, *, fresh: int, unchanged: int = 0, failed: bool = False) -> None:
        """A file was hashed or parsed: ``fresh`` documents of it go on to be written (0: done now)."""
        self._read += 1
        self.unchanged += unchanged
        if failed:
            self.failed += 1
        if fresh:
            self._left[key] = self._left.get(key, 0) + fresh
        else:
            self._file_done()

    def written(self, uris: list[str], chunks: int) -> None:
        """Documents (by URI) were written with ``chunks`` chunks in all."""
        self.documents += len(uris)
        self.chunks += chunks
        for uri in uris:
            self._document_done(uri)

    def document_failed(self, uri: str) -> None:
        self._document_done(uri)

    def group_ready(self, group: int, documents: int, chars: int) -> None:
        """A group of ``documents`` is complete (the files read since the last group filled it)."""
        self.group = group
        seconds = time.monotonic() - self._read_started
        self.line(
            f"group {group} parse: {self._read} files read in {seconds:.1f} s ({_rate(self._read, seconds, 'files')})"
            f" -> {documents:,} documents, {chars:,} characters to write"
        )
        self._read = 0
        self._read_started = time.monotonic()

    @contextlib.contextmanager
    def stage(self, name: str, what: str, *, group: int | None = None, quiet: bool = False) -> Iterator[Stage]:
        """Run one stage (``what``: what it works on, for heartbeats); its line is written at the end
        unless ``quiet``."""
        st = Stage(name, self.group if group is None else group, what)
        outer, self.current = self.current, st
        try:
            yield st
        finally:
            self.current = outer
        if not quiet:
            self.stage_done(st)

    def finish(self) -> None:
        """The last line: what the run did."""
        self.line(
            f"done: {self.documents:,} documents written, {self.unchanged:,} unchanged, {self.failed} files failed"
        )

    # --- display hooks ----------------------------------------------------------------------------
    def line(self, text: str) -> None:
        """A progress line (LogProgress logs it; RichProgress shows it as the current stage)."""

    def stage_done(self, st: Stage) -> None:
        seconds = time.monotonic() - st.started
        count = f"{st.n:,} {st.unit}" if st.n is not None else st.what
        rate = f" ({_rate(st.n, seconds, st.unit)})" if st.n is not None else ""
        detail = f": {st.detail}" if st.detail else ""
        self.line(f"group {st.group} {st.name}: {count} in {seconds:.1f} s{rate}{detail}")

    def totals(self) -> str:
        return (
            f"files {self.files_done}/{self.files_total}, {self.documents:,} documents, {self.chunks:,} chunks written, "
            f"{_clock(time.monotonic() - self.started)} elapsed"
        )

    def close(self) -> None:
        """Stop background work (heartbeats)."""

    # --- internals --------------------------------------------------------------------------------
    def _document_done(self, uri: str) -> None:
        key = file_key(uri)
        left = self._left.get(key)
        if left is None:
            return
        if left <= 1:
            del self._left[key]
            self._file_done()
        else:
            self._left[key] = left - 1

    def _file_done(self) -> None:
        self.files_done += 1


def _rate(n: int, seconds: float, unit: str) -> str:
    return f"{n / seconds:,.1f} {unit}/s" if seconds > 0 else f"{n:,} {unit}"


class LogProgress(Progress):
    """Lines on the ``kbgraph.ingest`` logger; a heartbeat thread writes one whenever ``interval`` seconds
    passed without a line (:meth:`beat`, checked every ``min(1, interval / 4)`` s). ``clock``: seconds, monotonic
    (tests pass their own); ``heartbeats=False``: no thread (a test calls :meth:`beat` itself)."""

    def __init__(
        self,
        files_total: int,
        *,
        interval: float = HEARTBEAT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        heartbeats: bool = True,
    ):
        super().__init__(files_total)
        self.interval = interval
        self._clock = clock
        self._last = clock()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._beat, name="kbgraph-ingest-heartbeat", daemon=True)
        self.line(f"{files_total:,} files to read")
        if heartbeats:
            self._thread.start()

    def line(self, text: str) -> None:
        with self._lock:
            log.info("%s | %s", text, self.totals())
            self._last = self._clock()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def beat(self) -> bool:
        """Write a heartbeat line if ``interval`` seconds of ``clock`` passed since the last line (a heartbeat is
        a line too); True when it wrote one."""
        with self._lock:
            due = self._clock() - self._last >= self.interval
        if due:
            self.line(self._heartbeat())
        return due

    def _beat(self) -> None:
        tick = min(1.0, self.interval / 4)
        while not self._stop.wait(tick):
            self.beat()

    def _heartbeat(self) -> str:
        st = self.current
        if st is None:
            return "working"
        where = "reading" if st.name == "parse" else f"group {st.group} {st.name}"
        return f"still {where}: {st.what}, {time.monotonic() - st.started:.0f} s so far"


class RichProgress(Progress):
    """Bars on stderr (a rich ``Progress``): files done of those found, chunks written, the stage under way."""

    def __init__(self, files_total: int, progress: RichBars):
        super().__init__(files_total)
        self.progress = progress
        self._files = progress.add_task("files", total=files_total)
        self._chunks = progress.add_task("chunks", total=None)
        self._stage = progress.add_task("", total=None)

    def line(self, text: str) -> None:
        self._refresh(text)

    @contextlib.contextmanager
    def stage(self, name: str, what: str, *, group: int | None = None, quiet: bool = False) -> Iterator[Stage]:
        label = (
            f"reading {what}" if name == "parse" else f"group {self.group if group is None else group} {name}: {what}"
        )
        self.progress.update(self._stage, description=label)
        with super().stage(name, what, group=group, quiet=quiet) as st:
            yield st

    def _refresh(self, text: str | None = None) -> None:
        self.progress.update(self._files, completed=self.files_done)
        self.progress.update(self._chunks, completed=self.chunks)
        if text is not None:
            self.progress.update(self._stage, description=text)

    def _file_done(self) -> None:
        super()._file_done()
        self.progress.update(self._files, completed=self.files_done)

    def written(self, uris: list[str], chunks: int) -> None:
        super().written(uris, chunks)
        self._refresh()


@contextlib.contextmanager
def open_progress(files_total: int, *, bars: bool, interval: float = HEARTBEAT_SECONDS) -> Iterator[Progress]:
    """The run's progress display for ``files_total`` files found: ``RichProgress`` bars on stderr when
    ``bars``, else ``LogProgress`` lines (a heartbeat at most ``interval`` seconds apart, stopped on exit)."""
    if not bars:
        bar = LogProgress(files_total, interval=interval)
        try:
            yield bar
        finally:
            bar.close()
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as RichBars

    with RichBars(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
    ) as progress:
        yield RichProgress(files_total, progress)
