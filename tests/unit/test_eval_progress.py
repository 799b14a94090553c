"""Progress of ``kbgraph eval``'s question loop where no bar is shown (cron, CI, a log; kbgraph.eval.runner):
a line on the ``kbgraph.eval`` logger at least every HEARTBEAT_SECONDS seconds and at the last (question, method) pair."""

from __future__ import annotations

import logging

import pytest

from kbgraph.eval import runner


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "kbgraph.eval"]


def test_without_a_bar_a_line_every_heartbeat(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "HEARTBEAT_SECONDS", 0.0)
    caplog.set_level(logging.INFO, logger="kbgraph.eval")
    with runner._progress(False, 3) as advance:
        for _ in range(3):
            advance()
    lines = _lines(caplog)
    assert len(lines) == 3, lines
    assert lines[0].startswith("evaluating: 1 of 3 (question, method) pairs done")
    assert lines[-1].startswith("evaluating: 3 of 3 ")


def test_between_heartbeats_only_the_last_pair_is_told(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="kbgraph.eval")
    with runner._progress(False, 1_200) as advance:
        for _ in range(1_200):
            advance()
    lines = _lines(caplog)
    assert len(lines) == 1 and lines[0].startswith("evaluating: 1,200 of 1,200 "), lines
