"""End to end in a real Neo4j Browser: headless Chromium (Debian ``chromium``, driven by Playwright with the
system binary; no ``playwright install``) opens the Browser of the test Neo4j, logs in through the connect form,
checks that the server's ``browser.post_connect_cmd`` applied the kbgraph style, runs the ``document`` query
as `kbgraph browse` prints it (``:param`` lines + statement, from the URL that puts it into the editor), then
the same query with its values written in, and checks the drawn graph and the table view against the rows
kbgraph gets for the same query. A screenshot of the result frame goes to the test's tmp_path; set
``KBGRAPH_SCREENSHOT=<path>`` to keep a copy (docs/images/neo4j-browser.png in the README came from here).

Without chromium or playwright the test skips, or FAILS when CI=true.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import pytest

from kbgraph import browse
from kbgraph.kb import KnowledgeBase
from kbgraph.neo4j_local import browser_style
from kbgraph.settings import Settings

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page, Playwright

try:
    from playwright.sync_api import expect
except ImportError:  # the playwright_api fixture skips (or fails under CI)
    expect = None  # type: ignore[assignment]

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
PDF = "docs/pdf/us_federal_register_2020-17221.pdf"
TITLE = "Proposed Rules"
PARAMS = {"document": TITLE, "limit": 6, "per_chunk": 2}
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
TIMEOUT_MS = 60_000


def _unavailable(msg: str) -> NoReturn:
    if IN_CI:
        pytest.fail(msg, pytrace=False)
    pytest.skip(msg)


@pytest.fixture(scope="module")
def playwright_api() -> Iterator[Playwright]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed: pip install -e '.[test]'")
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        _unavailable(f"no chromium at {CHROMIUM}: apt-get install chromium (or set KBGRAPH_CHROMIUM)")
    expect.set_options(timeout=TIMEOUT_MS)
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def neo4j_kb(neo4j_settings: Settings, examples_dir: Path) -> Iterator[KnowledgeBase]:
    """The test Neo4j holding one real PDF (53 chunks under 31 sections)."""
    kb = KnowledgeBase(settings=neo4j_settings)
    kb.reset()
    report = kb.ingest([examples_dir / PDF], progress=False)
    assert report.errors == [] and report.added == 1
    yield kb
    kb.reset()
    kb.close()


def _connect(page: Page, settings: Settings) -> Locator:
    """Log in through the connect form if Browser shows it (on the first visit; after a reload Browser
    usually reconnects with the credentials it kept), then wait until it is connected: it then runs the
    server's post-connect command, which draws the `:style` frame. Returns that frame."""
    style = (
        page.locator("[data-testid='frame']")
        .filter(has=page.locator("[data-testid='frameCommand']", has_text=":style {"))
        .first
    )
    form = page.locator("input[data-testid='password']")
    style.or_(form).first.wait_for()
    if not style.is_visible():
        page.locator("input[data-testid='username']").fill(settings.store.neo4j_username)
        form.fill(settings.store.neo4j_password.get_secret_value())
        page.locator("button[data-testid='connect']").click()
    style.wait_for()
    return style


def _wait_until(check: Callable[[], object], what: str, timeout: float = TIMEOUT_MS / 1000) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        time.sleep(0.25)


def _frames(page: Page) -> list[str]:
    """The commands of the frames Browser shows, newest first (for failure messages)."""
    return [" ".join(t.split())[:80] for t in page.locator("[data-testid='frameCommand']").all_inner_texts()]


def _run_until(page: Page, shown: Callable[[], object], what: str, attempts: int = 3, wait_s: float = 20) -> None:
    """Press the editor's Run button until `shown()` holds. On a slow fresh machine Browser has been seen to
    take a click on Run without running anything (CI, stop 10: no result frame after 60 s), so a click
    that produced no frame within `wait_s` is repeated; running the same script twice is harmless here."""
    run = page.locator("[data-testid='editor-Run']")
    for _ in range(attempts):
        run.click()
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if shown():
                return
            time.sleep(0.25)
    raise AssertionError(f"Run never showed {what}; frames shown: {_frames(page)}")


def _caption_fits(caption: str, title: str) -> bool:
    """Browser fits a caption into its circle by dropping words and cutting the last one short
    ('Airworthiness Directives; The Boeing Company Airplanes' -> 'Airworthiness Th…'): the caption's words,
    but the cut one, are words of the title, in order, starting with its first; the cut one starts a title word."""
    words, title_words = caption.split(), title.split()
    if caption.endswith("…"):
        *whole, cut = caption[:-1].split() or [""]
    else:
        whole, cut = words, ""
    if not whole or whole[0] != title_words[0]:
        return False
    pos = 0
    for word in whole:
        if word not in title_words[pos:]:
            return False
        pos = title_words.index(word, pos) + 1
    return not cut or any(w.startswith(cut) for w in title_words[pos:])


def test_document_query_in_neo4j_browser(playwright_api: Playwright, neo4j_kb: KnowledgeBase, tmp_path: Path) -> None:
    settings = neo4j_kb.settings
    out = browse.render("document", PARAMS, settings)
    rows = neo4j_kb.browse("document", **PARAMS)
    assert len(rows) == PARAMS["limit"]
    expected_ids = {
        n["id"]
        for r in rows
        for n in [r["document"], r["chunk"], *r["sections"], *r["questions"], *r["triples"], *r["entities"]]
    }
    section_titles = {s["title"] for r in rows for s in r["sections"]}
    assert len(section_titles) >= 3
    style = browser_style.parse_grass(browser_style.grass_path().read_text(encoding="utf-8"))

    context = playwright_api.chromium.launch_persistent_context(
        str(tmp_path / "chromium-profile"),
        executable_path=CHROMIUM,
        args=CHROMIUM_ARGS,
        headless=True,
        viewport={"width": 1500, "height": 1000},
    )
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        # 1. connect: the URL carries the Bolt address and database; log in with the test password
        page.goto(out.browser_url, wait_until="domcontentloaded")
        page.locator("input[data-testid='password']").wait_for()
        # the server's browser.post_connect_cmd ran `:style {...}`: a style frame with our GraSS
        assert "node.Document" in _connect(page, settings).inner_text()

        # 2. the script as `kbgraph browse document` prints it, put into the editor by its URL; run it
        page.goto(out.url, wait_until="domcontentloaded")
        _connect(page, settings)
        editor = page.locator("[data-testid='activeEditor']")
        editor.filter(has_text=":param document").wait_for()
        icon = "[data-testid='multi-statement-list-icon']"
        script_frame = page.locator("[data-testid='frame']").filter(has=page.locator(icon)).first  # the newest
        _run_until(page, lambda: script_frame.count() > 0, "the multi-statement frame of the :param script")
        icons = script_frame.locator(icon)
        expect(icons).to_have_count(len(PARAMS) + 1)
        for i in range(len(PARAMS) + 1):  # each :param line and the query ran without error
            expect(icons.nth(i)).to_have_attribute("title", "Status: success")

        # 3. the query with the values written in: one run, the graph frame
        page.goto(out.graph_url, wait_until="domcontentloaded")
        _connect(page, settings)
        editor.filter(has_text="MATCH (d:Document)").wait_for()
        frame = page.locator("[data-testid='frame']").filter(has=page.locator("[data-testid='vizInspector']")).first
        _run_until(page, lambda: frame.count() > 0, "the graph frame of the document query")
        nodes = frame.locator("g.node")
        # every node of the result is drawn, and the relationships between them (Browser fetches and draws
        # those between the nodes of a result: at least a spanning tree here)
        expect(frame.get_by_text(f"Displaying {len(expected_ids)} nodes", exact=False).first).to_be_visible()
        expect(nodes).to_have_count(len(expected_ids))
        _wait_until(lambda: frame.locator("g.relationship").count() >= len(expected_ids) - 1, "relationships drawn")
        page.wait_for_timeout(2000)  # let the layout settle for the screenshot
        # the captions come from the style: the Document's title, in the Document colour
        captions = [
            " ".join(t.split())
            for t in nodes.evaluate_all(
                "els => els.map(g => Array.from(g.querySelectorAll('text.caption')).map(t => t.textContent).join(' '))"
            )
        ]
        fills = nodes.evaluate_all("els => els.map(g => g.querySelector('circle.b-outline').getAttribute('fill'))")
        documents = [c for c, f in zip(captions, fills, strict=True) if f.upper() == style["node.Document"]["color"]]
        assert documents == [TITLE], (captions, fills)
        sections = [c for c, f in zip(captions, fills, strict=True) if f.upper() == style["node.Section"]["color"]]
        assert len(sections) == len(section_titles)
        for title in section_titles:
            assert any(_caption_fits(c, title) for c in sections), (title, sections)
        frame.locator("button[title='Fullscreen']").first.click()  # the result frame fills the window
        page.wait_for_timeout(1500)
        frame.locator("button[aria-label='zoom-to-fit']").click()
        page.wait_for_timeout(2500)
        shot = tmp_path / "neo4j-browser.png"
        page.screenshot(path=str(shot))
        assert shot.stat().st_size > 20_000
        if os.environ.get("KBGRAPH_SCREENSHOT"):
            shutil.copyfile(shot, os.environ["KBGRAPH_SCREENSHOT"])

        # 4. the table view lists the full titles
        frame.get_by_role("button", name="Table").or_(frame.get_by_text("Table", exact=True)).first.click()
        for title in sorted({TITLE, *section_titles}):
            expect(frame).to_contain_text(f'"{title}"')
    except BaseException:
        with contextlib.suppress(Exception):
            page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
            print(f"screenshot of the failure: {tmp_path / 'failure.png'}")
        raise
    finally:
        context.close()
