"""While .ci/run builds llama.cpp's server beside the suite (KBGRAPH_TEST_LLM_WAIT): the tests needing it wait for
the build's exit code and fail on a failed build (tests/llm_server_fixture.py), and their files run after all
others (tests/conftest.py)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import llm_files_last
from tests.llm_server_fixture import wait_for_the_build


def test_no_build_under_way_returns_at_once() -> None:
    wait_for_the_build("", timeout=0)


def test_a_finished_build_lets_the_test_go_on(tmp_path: Path) -> None:
    (tmp_path / "exit-code").write_text("0\n")
    wait_for_the_build(str(tmp_path / "exit-code"), timeout=0)


def test_a_failed_build_fails_the_test(tmp_path: Path) -> None:
    (tmp_path / "exit-code").write_text("1\n")
    with pytest.raises(pytest.fail.Exception, match="failed \\(exit 1\\)"):
        wait_for_the_build(str(tmp_path / "exit-code"), timeout=0)


def test_a_build_that_does_not_end_fails_the_test(tmp_path: Path) -> None:
    with pytest.raises(pytest.fail.Exception, match="has not ended within"):
        wait_for_the_build(str(tmp_path / "exit-code"), timeout=0)


def test_the_wait_ends_when_the_build_does(tmp_path: Path) -> None:
    status = tmp_path / "exit-code"
    timer = threading.Timer(0.1, status.write_text, args=("0\n",))
    timer.start()
    try:
        wait_for_the_build(str(status), timeout=30, poll=0.02)
    finally:
        timer.cancel()
    assert status.read_text() == "0\n"


class Item:
    """The two attributes of a pytest item that llm_files_last reads."""

    def __init__(self, path: str, *fixtures: str) -> None:
        self.path = Path(path)
        self.fixturenames = list(fixtures)
        self.name = f"{path}{fixtures}"


def test_files_needing_the_server_go_last_in_order() -> None:
    items: list[Any] = [
        Item("tests/test_a.py"),
        Item("tests/test_b.py", "kb"),
        Item("tests/test_b.py", "llm_server"),
        Item("tests/test_c.py", "llm_installed"),
        Item("tests/test_d.py", "kb"),
        Item("tests/test_b.py"),
    ]
    ordered = [i.name for i in llm_files_last(items)]
    assert ordered == [items[i].name for i in (0, 4, 1, 2, 3, 5)]
