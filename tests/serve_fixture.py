"""Helpers of tests/test_serve.py and tests/test_mcp.py: a real uvicorn server on 127.0.0.1 (a free port, in a
thread of the test process) and a small knowledge base built from examples/docs."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings

NICS = "docs/pdf/fbi_nics_background_checks_2015-11.pdf"
SENATE = "docs/pdf/us_senate_expenditures.pdf"
QUESTION = "How many handgun checks were there in Kentucky in November 2015?"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def offline(settings: Settings, **update: Any) -> Settings:
    """``settings`` without an LLM (retrieval-only answers), with ``update`` over them."""
    return settings.updated({"llm_model": None, "llm_base_url": None, **update})


def build_kb(settings: Settings, examples: Path, files: Sequence[str] = (NICS,)) -> None:
    """Empty the knowledge base of ``settings`` and ingest ``files`` (paths under examples/)."""
    with KnowledgeBase(settings=settings) as kb:
        kb.reset()
        report = kb.ingest([examples / f for f in files], progress=False)
        assert report.failed == 0 and report.added == len(files), report.errors


@contextmanager
def running(app: FastAPI, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve the ASGI ``app`` with uvicorn on ``host`` and a free port; yields its base URL on 127.0.0.1."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, name="uvicorn-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
