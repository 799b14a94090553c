"""The web app's first answer (issue 57: "the Ask page's first answer on the sample knowledge base shows <= 1 s after
the click on a warm server, measured in the browser"): ``kbgraph serve`` (uvicorn in this process) over the sample
documents (examples/docs, no LLM: retrieval-only answers), the page opened in headless Chromium (Debian's
``/usr/bin/chromium`` driven by Playwright, as tests/test_webapp_browser.py), the Kentucky question asked ``--repeats``
times after one warm-up ask; p50/p95 of what the page measures itself (``window.kbgraph.app.timing``: ``answer_ms``
from the click to the whole answer read from the SSE stream of ``POST /ask``, ``first_ms`` to its first event) and of
the click to the answer shown as Playwright sees it. The baseline in the same invocation: the same request (the
page's body: k 5, explain, stream) sent by httpx to the same server, read to the end.

    .venv/bin/python -m benchmarks.webapp_first_answer [--home DIR] [--repeats 20] [--question "..."]

The knowledge base ``webapp-docs`` is built once under ``--home`` (default ~/.kbgraph-bench/webapp); later runs
reuse it. Output: a JSON line per phase and a table with date, commit and cores.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.common import DEFAULT_HOME, EXAMPLES, REPO

from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings

NAME = "webapp-docs"
QUESTION = "How many handgun checks were there in Kentucky in November 2015?"
CHROMIUM = os.environ.get("KBGRAPH_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def settings_for(home: Path) -> Settings:
    """The sample knowledge base's settings: no LLM (the page's answer is retrieval-only, as on a fresh clone)."""
    return Settings(home=home, name=NAME).updated({"llm_model": None, "llm_base_url": None})


def build(settings: Settings) -> None:
    """examples/docs ingested into the knowledge base of ``settings`` (nothing when it holds documents)."""
    with KnowledgeBase(settings=settings) as kb:
        if kb.stats().nodes.get("Document", 0):
            return
        t0 = time.perf_counter()
        report = kb.ingest([EXAMPLES / "docs"], progress=False)
    print(json.dumps({"ingest_s": round(time.perf_counter() - t0, 1), "documents": report.added}), flush=True)


@contextmanager
def serving(settings: Settings) -> Iterator[str]:
    """``kbgraph serve``'s application on a free loopback port (uvicorn in a thread); yields its base URL."""
    import socket

    import uvicorn

    from kbgraph.serve.app import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="uvicorn-bench", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise SystemExit("kbgraph serve did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)


def quantiles(values: list[float]) -> dict[str, float]:
    """p50 and p95 (nearest rank) of ``values``, in ms, one decimal."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]
    return {"p50": round(statistics.median(ordered), 1), "p95": round(p95, 1), "n": len(ordered)}


def in_browser(url: str, question: str, repeats: int) -> dict[str, list[float]]:
    """Ask ``question`` on the page ``repeats`` times after one warm-up; the page's own timings and Playwright's
    click-to-shown, in ms."""
    from playwright.sync_api import sync_playwright

    out: dict[str, list[float]] = {"answer_ms": [], "first_ms": [], "shown_ms": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1360, "height": 900})
        page.goto(url + "/", wait_until="domcontentloaded")
        page.locator("body[data-ready='true']").wait_for(timeout=60_000)
        page.locator("#question").fill(question)
        for i in range(repeats + 1):
            page.evaluate("window.kbgraph.app.timing = null")
            t0 = time.perf_counter()
            page.get_by_role("button", name="Ask", exact=True).click()
            page.wait_for_function(
                "() => window.kbgraph.app.timing !== null && document.querySelector('#citations .card')", timeout=60_000
            )
            shown = (time.perf_counter() - t0) * 1000
            timing = page.evaluate("window.kbgraph.app.timing")
            if i == 0:
                continue  # the warm-up: the server's first question loads what later ones reuse
            out["answer_ms"].append(float(timing["answer_ms"]))
            out["first_ms"].append(float(timing["first_ms"]))
            out["shown_ms"].append(shown)
        browser.close()
    return out


def over_http(url: str, question: str, repeats: int) -> list[float]:
    """The page's request sent by httpx and read to its end, ``repeats`` times after one warm-up, in ms."""
    import httpx

    body = {"question": question, "k": 5, "explain": True, "stream": True}
    times = []
    with httpx.Client(base_url=url, timeout=60) as client:
        for i in range(repeats + 1):
            t0 = time.perf_counter()
            with client.stream("POST", f"/v1/kb/{NAME}/ask", json=body, headers={"Accept": "text/event-stream"}) as r:
                r.raise_for_status()
                text = "".join(r.iter_text())
            if "event: answer" not in text:
                raise SystemExit(f"no answer event in the stream: {text[:300]}")
            if i:
                times.append((time.perf_counter() - t0) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, default=DEFAULT_HOME / "webapp")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--question", default=QUESTION)
    args = parser.parse_args()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
    settings = settings_for(args.home)
    build(settings)
    with serving(settings) as url:
        http = over_http(url, args.question, args.repeats)  # the baseline first: the server is warm for both
        page = in_browser(url, args.question, args.repeats)
        http_after = over_http(url, args.question, args.repeats)
    rows = {
        "browser: click -> answer (page)": page["answer_ms"],
        "browser: click -> first event (page)": page["first_ms"],
        "browser: click -> shown (Playwright)": page["shown_ms"],
        "httpx: the same request": http + http_after,
    }
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    print(
        json.dumps(
            {
                "date": datetime.now(UTC).date().isoformat(),
                "commit": commit,
                "nproc": os.cpu_count(),
                **{k: quantiles(v) for k, v in rows.items()},
            }
        ),
        flush=True,
    )
    print(
        f"\n{datetime.now(UTC).date()} commit {commit}, {os.cpu_count()} cores, {args.repeats} asks warm, "
        f"FalkorDB embedded, no LLM\n\n| measured | p50 ms | p95 ms |\n|---|---:|---:|"
    )
    for name, values in rows.items():
        q = quantiles(values)
        print(f"| {name} | {q['p50']:.0f} | {q['p95']:.0f} |")


if __name__ == "__main__":
    main()
