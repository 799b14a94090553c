"""Progress of an ingestion run in log mode (stdout or stderr not a terminal: cron, CI, `| tee`): a line per
stage per group with counts, seconds, rate and the run's totals ("files d/t", t = the files found before
anything is parsed), and a heartbeat whenever the interval passed without a line, so a slow stage is never
silent; and `kbgraph ingest` with stderr captured prints those lines.

A slow embedder (the real one, plus a pause per call) makes each group's embed stage long enough that, without
the heartbeat, the log would be silent for several seconds.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from kbgraph.embed.base import Embedder
from kbgraph.ingest.pipeline import Ingestor

from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings

if TYPE_CHECKING:
    import numpy as np

STAGE_LINE = re.compile(
    r"^group (\d+) (parse|chunk|distill|embed|write): .* in \d+\.\d s \([\d,.]+ \w+/s\).* \| "
    r"files (\d+)/(\d+), [\d,]+ documents, [\d,]+ chunks written, \d+:\d\d elapsed$"
)
PAUSE = 1.0  # seconds the slow embedder pauses per call (a call per non-empty layer and group)
INTERVAL = 0.25  # heartbeat interval of the test run


class SlowEmbedder:
    """The embedder ``embedder`` (``kbgraph.embed.base.Embedder``), pausing PAUSE s at each call."""

    def __init__(self, embedder: Embedder) -> None:
        self.inner = embedder
        self.calls = 0

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        time.sleep(PAUSE)
        return self.inner.embed(texts)


def _corpus(examples_dir: Path, folder: Path) -> tuple[int, int]:
    folder.mkdir()
    (folder / "a.txt").write_text("Grace Hopper developed the first compiler at Remington Rand.", encoding="utf-8")
    (folder / "b.txt").write_text("Ada Lovelace wrote the first program for the Analytical Engine.", encoding="utf-8")
    lines = (examples_dir / "multihop/musique/hipporag_train100.corpus.jsonl").read_text(encoding="utf-8").splitlines()
    (folder / "passages.jsonl").write_text("\n".join(lines[:12]) + "\n", encoding="utf-8")
    return 3, 14  # files, documents


def test_log_lines_per_stage_per_group_with_files_done_of_found_and_heartbeats(
    falkor_settings: Settings, examples_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    files, documents = _corpus(examples_dir, tmp_path / "in")
    settings = falkor_settings.updated({"name": f"progress{uuid.uuid4().hex[:8]}", "ingest_group_size": 8})
    kb = KnowledgeBase(settings=settings)
    kb.reset()
    try:
        slow = SlowEmbedder(kb.embedder)
        ingestor = Ingestor(kb.store, settings, progress=False, embedder=slow, progress_interval=INTERVAL)
        caplog.set_level(logging.INFO, logger="kbgraph.ingest")
        report = ingestor.run([tmp_path / "in"])
        assert (report.added, report.failed) == (documents, 0)
        groups = kb.store.sent["ingest/mark_documents_complete"]
        assert groups == 2  # 8 + 6 documents
        records = [r for r in caplog.records if r.name == "kbgraph.ingest"]
        lines = [r.getMessage() for r in records]
        assert lines[0].startswith(f"{files} files to read | files 0/{files}")
        stages = [(m.group(1), m.group(2), int(m.group(3)), int(m.group(4))) for m in map(STAGE_LINE.match, lines) if m]
        for g in range(1, groups + 1):  # a line per stage per group, in order
            assert [s for gg, s, _, _ in stages if gg == str(g)] == ["parse", "chunk", "distill", "embed", "write"], g
        assert {t for *_, t in stages} == {files}  # t: the files found up front
        done = [d for *_, d, _ in stages]
        assert done == sorted(done) and done[-1] == files
        write = [line for line in lines if re.match(r"group \d+ write: ", line)]
        assert "8 documents in" in write[0] and "6 documents in" in write[1]
        assert re.search(
            r"group 1 distill: [\d,]+ chunks in .*atomic questions, .*triples, .*entities", "\n".join(lines)
        )
        assert lines[-1].startswith(f"done: {documents} documents written") and f"files {files}/{files}" in lines[-1]
        # heartbeats: each group's embed stage lasts several pauses (one per non-empty layer: chunks, atomic
        # questions, entities with the default vector_layers), many intervals, and the heartbeat thread wrote during
        # it (the schedule itself: test_heartbeat_schedule, on a test clock)
        embed = [float(m.group(1)) for m in (re.match(r"group \d+ embed: .* in (\d+\.\d) s", x) for x in lines) if m]
        assert len(embed) == groups and min(embed) >= 3 * PAUSE and slow.calls >= 3 * groups
        assert any(line.startswith("still group 1 embed: ") for line in lines)
    finally:
        kb.close()


def test_heartbeat_schedule(caplog: pytest.LogCaptureFixture) -> None:
    """A heartbeat is written exactly when ``interval`` seconds passed without a line, by the progress's clock (a
    test clock here: no wall-clock gaps to measure on a busy machine); any line, a heartbeat too, restarts the
    wait; the heartbeat names the stage under way."""
    from kbgraph.ingest.progress import LogProgress

    now = [1000.0]
    caplog.set_level(logging.INFO, logger="kbgraph.ingest")
    p = LogProgress(3, interval=30.0, clock=lambda: now[0], heartbeats=False)
    schedule = []
    for step in (0.0, 29.9, 0.1, 0.0, 29.0, 1.0, 45.0, 45.0):  # seconds the clock moves before each check
        now[0] += step
        schedule.append(p.beat())
    assert schedule == [False, False, True, False, False, True, True, True]
    now[0] += 20.0
    p.line("group 1 parse: a line")  # a stage line restarts the wait
    now[0] += 20.0
    assert not p.beat()
    now[0] += 10.0
    with p.stage("embed", "14 chunks", group=2):
        assert p.beat()
    p.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "kbgraph.ingest"]
    assert lines[0].startswith("3 files to read") and len(lines) == 1 + 4 + 1 + 1 + 1  # the stage's own line last
    assert lines[-2].startswith("still group 2 embed: 14 chunks, ")
    assert sum(line.startswith("working |") or line.startswith("still ") for line in lines) == 5


def test_cli_with_stderr_captured_prints_progress_lines(
    falkor_settings: Settings, examples_dir: Path, tmp_path: Path
) -> None:
    files, documents = _corpus(examples_dir, tmp_path / "in")
    name = f"progresscli{uuid.uuid4().hex[:6]}"
    env = {
        **os.environ,
        "KBGRAPH_HOME": str(falkor_settings.home),
        "KBGRAPH_NAME": name,
        "KBGRAPH_DATA_DIR": str(falkor_settings.kb_dir),
        "KBGRAPH_FALKOR_IDLE_TIMEOUT": "0",
        "KBGRAPH_EMBEDDING_CACHE_DIR": str(falkor_settings.embedding.embedding_cache_dir),
    }
    cli = subprocess.run(
        [sys.executable, "-m", "kbgraph.cli", "ingest", str(tmp_path / "in")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert cli.returncode == 0, cli.stderr
    assert f"{files} files to read" in cli.stderr
    for stage in ("parse", "chunk", "distill", "embed", "write"):
        assert re.search(rf"INFO group 1 {stage}: .* \| files \d+/{files}, ", cli.stderr), stage
    assert f"done: {documents} documents written" in cli.stderr
    with KnowledgeBase(settings=falkor_settings.updated({"name": name})) as kb:
        kb.reset()
