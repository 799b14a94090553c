"""The web app of `kbgraph serve` (issue 57, kbgraph.serve.webapp) in a real browser: headless Chromium (Debian
``chromium``, driven by Playwright with the system binary, as tests/test_browser_e2e.py) against a real uvicorn
server over a real store holding the NICS report, on both stores.

Ask: the Kentucky question answered through the SSE stream, the Kentucky row cited, its passage opened with its PDF
page as an image (loaded through a blob: URL) and its
neighbours. Why: the evidence graph drawn by Cytoscape.js with question, chunk and document nodes (counted in the
page), the score terms as bars. Explore: the Kentucky entity found by name and drawn, its chunk expanded from the
panel (its document among the neighbours), the next page of neighbours behind the "N more" node, colours of the
Browser style, the browse queries as views. Documents: the list, an upload followed to its job's end (each file's
outcome) and listed, each file's state followed live (queued ... done, a broken file failed with its reason), the
ingestion runs with their counts, newest first, then the upload deleted. A hostile document (markup and script in its
title and text) is shown as text on every page that shows it, and runs nothing.
Every request the page makes goes to the server's own origin, no Content-Security-Policy violation, the assets
total at most 1 MB. With API keys: the page asks for one; a read-only key (told by GET /v1/kb/{name}/rights) sees no upload or
delete and the API refuses a forced upload (403); a key scoped to another knowledge base is told so and offered
nothing.

Screenshots of each page go to the test's tmp_path; set ``KBGRAPH_UI_SCREENSHOTS=docs/ui`` to keep them
(docs/ui.md shows them). Without chromium or playwright the test skips, or FAILS when CI=true.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from kbgraph.kb import KnowledgeBase  # noqa: E402
from kbgraph.query.methods.registry import METHODS  # noqa: E402
from kbgraph.serve.access import add_key  # noqa: E402
from kbgraph.serve.app import create_app  # noqa: E402
from kbgraph.serve.webapp import CSP, assets, meta  # noqa: E402
from kbgraph.settings import Settings  # noqa: E402
from tests.backends import BACKENDS  # noqa: E402
from tests.serve_fixture import QUESTION, build_kb, offline, running  # noqa: E402
from tests.test_browser_e2e import CHROMIUM, CHROMIUM_ARGS, IN_CI, TIMEOUT_MS  # noqa: E402

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

try:
    from playwright.sync_api import expect
except ImportError:  # playwright_api skips (or fails under CI)
    expect = None  # type: ignore[assignment]

pytestmark = pytest.mark.slow  # Chromium, and an ingest of a sample document

NOTE_NAME = "ferry-timetable.md"
NOTE = "# Ferry timetable\n\nThe ferry to Kilnsea leaves at 7 every morning and returns at 18.\n"
MAX_ASSET_BYTES = 1_000_000
#: Records each CSP violation the page sees (a Playwright init script: not part of the page, not blocked by it).
CSP_PROBE = (
    "window.__csp = []; document.addEventListener('securitypolicyviolation', "
    "e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"
)
#: Records the states each file of an upload went through on the Documents page ({file name: [state, ...]}), as the
#: page showed them (its aria-live list of the job's files).
FILE_STATES_PROBE = """window.__fileStates = {};
document.addEventListener('DOMContentLoaded', () => new MutationObserver(() => {
  for (const li of document.querySelectorAll('#jobs li.file')) {
    const seen = (window.__fileStates[li.textContent.split(':')[0]] ||= []);
    if (seen[seen.length - 1] !== li.dataset.state) seen.push(li.dataset.state);
  }
}).observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true}));"""
BROKEN_NAME = "broken-scan.pdf"
ASSET_BYTES_JS = """() => performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))
  .filter(e => !new URL(e.name).pathname.startsWith('/v1/') && !new URL(e.name).pathname.startsWith('/readyz'))
  .map(e => [new URL(e.name).pathname, e.decodedBodySize])"""

#: (base URL, settings, backend)
Served = tuple[str, Settings, str]


@pytest.fixture(scope="module")
def falkor_kb(falkor_settings: Settings, examples_dir: Path) -> Iterator[Settings]:
    """A FalkorDB knowledge base holding the NICS report (one PDF: the test's ingest stays short)."""
    settings = offline(falkor_settings, name=f"ui{uuid.uuid4().hex[:8]}")
    build_kb(settings, examples_dir)
    yield settings
    with KnowledgeBase(settings=settings) as kb:
        kb.reset()


@pytest.fixture(scope="module", params=BACKENDS)
def served(request: pytest.FixtureRequest, examples_dir: Path) -> Iterator[Served]:
    if request.param == "falkordb":
        settings = request.getfixturevalue("falkor_kb")
    else:
        settings = offline(request.getfixturevalue("neo4j_settings"))
        build_kb(settings, examples_dir)
    with running(create_app(settings)) as url:
        yield url, settings, request.param
    if request.param != "falkordb":
        with KnowledgeBase(settings=settings) as kb:
            kb.reset()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's chromium driven by Playwright (no `playwright install`), as in tests/test_browser_e2e.py."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("playwright is not installed: pip install -e '.[test]'")
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        unavailable(f"no chromium at {CHROMIUM}: apt-get install chromium (or set KBGRAPH_CHROMIUM)")
    expect.set_options(timeout=TIMEOUT_MS)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


def unavailable(msg: str) -> NoReturn:
    if IN_CI:
        pytest.fail(msg, pytrace=False)
    pytest.skip(msg)


@contextlib.contextmanager
def opened(browser: Browser, url: str, tmp_path: Path) -> Iterator[tuple[Page, list[str], list[str]]]:
    """A fresh context's page on ``url`` with every request URL it makes and its errors recorded; a screenshot of
    the page on failure."""
    context: BrowserContext = browser.new_context(viewport={"width": 1360, "height": 900}, accept_downloads=False)
    context.set_default_timeout(TIMEOUT_MS)
    context.add_init_script(CSP_PROBE)
    context.add_init_script(FILE_STATES_PROBE)
    requests: list[str] = []
    errors: list[str] = []
    context.on("request", lambda r: requests.append(r.url))
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    try:
        yield page, requests, errors
    except BaseException:
        with contextlib.suppress(Exception):
            page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
            print(f"screenshot of the failure: {tmp_path / 'failure.png'}; page errors: {errors}")
        raise
    finally:
        context.close()


def shoot(page: Page, tmp_path: Path, name: str, backend: str) -> None:
    """A screenshot of the page as ``name``.png in tmp_path, kept in KBGRAPH_UI_SCREENSHOTS (FalkorDB run)."""
    shot = tmp_path / f"{name}.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    keep = os.environ.get("KBGRAPH_UI_SCREENSHOTS")
    if keep and backend == "falkordb":
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, Path(keep) / shot.name)


#: axe-core as ``npm ci --prefix tests/lint`` installs it (tests/lint/package.json pins the version).
AXE_JS = Path(__file__).parent / "lint" / "node_modules" / "axe-core" / "axe.min.js"


def accessible(page: Page, where: str) -> None:
    """axe-core (``KBGRAPH_AXE_JS``, else :data:`AXE_JS`) run on the page as it is: no serious or critical
    violation. (Evaluated by Playwright, outside the page's CSP.) Without axe-core the check is skipped, or FAILS
    when CI=true (.ci/run installs it)."""
    source = Path(os.environ.get("KBGRAPH_AXE_JS") or AXE_JS)
    if not source.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"axe-core not found at {source}: run `npm ci --prefix tests/lint`", pytrace=False)
        return
    page.evaluate(source.read_text(encoding="utf-8"))
    found = page.evaluate("""async () => (await axe.run(document, {resultTypes: ['violations']})).violations
        .filter(v => v.impact === 'serious' || v.impact === 'critical')
        .map(v => `${v.impact} ${v.id}: ${v.nodes.slice(0, 4).map(n => n.target.join(' ')).join(', ')}`)""")
    assert found == [], f"{where}: {found}"


def same_origin(requests: list[str], url: str) -> None:
    others = [r for r in requests if not r.startswith((url + "/", f"blob:{url}/"))]  # blob: the page's own objects
    assert requests and not others, others


def test_pages(served: Served, browser: Browser, tmp_path: Path) -> None:
    url, settings, backend = served
    note = tmp_path / NOTE_NAME
    note.write_text(NOTE, encoding="utf-8")
    broken = tmp_path / BROKEN_NAME
    broken.write_bytes(b"%PDF-1.4\nnot a pdf at all\n")

    # the server side first: the page and its files, with the CSP, no key needed, the API behind the guard
    with urllib.request.urlopen(url + "/") as r:
        page_csp, page_html = r.headers["content-security-policy"], r.read().decode()
    assert page_csp == CSP and "default-src 'self'" in CSP and "unsafe" not in CSP
    assert '<script type="module" src="/ui/js/main.js">' in page_html and "<script>" not in page_html
    assert " style=" not in page_html and "http" not in page_html.replace("http-equiv", "")

    with opened(browser, url, tmp_path) as (page, requests, errors):
        first = page.goto(url + "/", wait_until="domcontentloaded")
        assert first is not None and first.headers["content-security-policy"] == CSP
        page.locator("body[data-ready='true']").wait_for()
        assert page.locator("#kb-name").input_value() == settings.name  # /readyz names the served KB
        # the method picker lists the registry
        options = page.locator("#method option").evaluate_all("os => os.map(o => o.value)")
        assert options == [
            "",
            *[m.name for m in METHODS.values() if m.kind == "retrieval"],
            *[m.name for m in METHODS.values() if m.kind == "answer"],
        ]

        # --- Ask: typed, sent with Enter, streamed; the Kentucky row cited
        page.locator("#question").fill(QUESTION)
        page.locator("#question").press("Enter")
        expect(page.locator("#answer-text")).to_contain_text("12,155")
        cards = page.locator("#citations .card")
        expect(cards.first).to_be_visible()
        kentucky = cards.filter(has_text="Kentucky").first
        expect(kentucky).to_contain_text("NICS Firearm Background Checks")
        expect(kentucky.locator(".where")).to_contain_text("page 1")
        timing = page.evaluate("window.kbgraph.app.timing")
        print(f"{backend}: first answer shown {timing['answer_ms']:.0f} ms after the question was sent")
        answer = page.evaluate("window.kbgraph.app.answer")
        assert answer["retrieval_only"] and answer["chunks"][0]["breakdown"]
        # the citation opens its passage with its neighbours in reading order
        kentucky.get_by_role("button", name="Open passage").click()
        expect(page.locator("#passage-text mark")).to_contain_text("| Kentucky | 264,140 | 12,155 |")  # the row
        page.wait_for_function(
            "() => document.querySelector('#passage-before').textContent"
            " || document.querySelector('#passage-after').textContent"
        )  # the neighbours came
        context = page.locator("#passage-before").inner_text() + page.locator("#passage-after").inner_text()
        assert "BEFORE" in context.upper() or "AFTER" in context.upper(), context
        expect(page.locator("#passage-where")).to_contain_text("page 1")
        # and its PDF page as an image (GET .../page.png with the key, shown through a blob: URL), the row marked
        page_img = page.locator("#passage-page-img")
        expect(page_img).to_be_visible()
        page.wait_for_function(
            "() => { const i = document.querySelector('#passage-page-img'); return i.complete && i.naturalWidth > 0; }"
        )
        src, alt = page_img.get_attribute("src") or "", page_img.get_attribute("alt") or ""
        assert src.startswith("blob:") and "Page 1" in alt, (src, alt)
        page.wait_for_timeout(300)
        accessible(page, "ask")
        shoot(page, tmp_path, "ask", backend)
        page.keyboard.press("Escape")  # closes the passage, focus back on its card's button
        expect(page.locator("#passage")).to_be_hidden()

        # --- Why: the evidence graph, question -> chunks -> documents, drawn by Cytoscape.js
        page.get_by_role("link", name="Why", exact=True).click()
        page.wait_for_function("() => window.kbgraph.cy && window.kbgraph.cy.nodes().length > 0")
        labels: list[str] = page.evaluate("window.kbgraph.cy.nodes().map(n => n.data('label'))")
        edges: int = page.evaluate("window.kbgraph.cy.edges().length")
        assert labels.count("Question") == 1 and labels.count("Document") == 1, labels
        drawn = set(page.evaluate("window.kbgraph.cy.nodes('[label = \"Chunk\"]').map(n => n.id())"))
        assert {c["chunk_id"] for c in answer["citations"]} | {c["id"] for c in answer["chunks"]} <= drawn
        assert edges >= len(answer["chunks"]) * 2, (labels, edges)  # question -> ... -> chunk -> document
        terms = sum(len(c["breakdown"]) + len(c["ranking"]) for c in answer["chunks"])
        expect(page.locator("#terms .bars dt")).to_have_count(terms)  # a bar per score term and ranker term
        expect(page.locator("#legend li")).to_have_count(len(set(labels)))
        page.locator("#terms .term-card h3 button").first.click()  # a passage selected from the list (keyboard path)
        expect(page.locator("#node-detail h3")).to_have_text("Chunk")
        assert page.evaluate("window.kbgraph.cy.nodes(':selected').length") == 1
        page.wait_for_timeout(300)
        accessible(page, "why")
        shoot(page, tmp_path, "why", backend)

        # --- Explore: the Kentucky entity found by name, drawn, expanded; a view
        explore(page, tmp_path, backend)

        # --- Documents: listed; an upload followed to the end of its job, listed, then deleted
        page.get_by_role("link", name="Documents").click()
        rows = page.locator("#docs-body tr")
        expect(rows).to_have_count(1)
        expect(rows.first).to_contain_text("NICS Firearm Background Checks")
        assert int(rows.first.locator("td.num").inner_text()) > 0
        page.locator("#files").set_input_files([str(note), str(broken)])
        page.get_by_role("button", name="Upload and ingest").click()
        expect(page.locator("#jobs .job.done")).to_contain_text("1 added")
        # each file followed live in the aria-live list of the job: queued, ..., done or failed with the reason
        assert page.locator("#jobs").get_attribute("aria-live") == "polite"
        files = page.locator("#jobs .job.done .files li")
        expect(files).to_have_count(2)
        expect(files.first).to_have_text(f"{NOTE_NAME}: ingested (1 chunk)")
        expect(files.nth(1)).to_contain_text(f"{BROKEN_NAME}: failed — ")
        states = page.evaluate("window.__fileStates")
        # (queued or already running when the upload's answer is read: the job starts at once)
        assert states[NOTE_NAME][0] in ("queued", "running") and states[NOTE_NAME][-1] == "done", states
        assert states[BROKEN_NAME][0] in ("queued", "running") and states[BROKEN_NAME][-1] == "failed", states
        assert set(states[NOTE_NAME]) <= {"queued", "running", "writing", "done"}, states
        expect(rows).to_have_count(2)
        # the ingestion runs, newest first: the upload's (a file failed), then the sample's
        runs = page.locator("#runs-body tr.run")
        expect(runs).to_have_count(2)
        expect(runs.first.locator("td.added")).to_have_text("1")
        expect(runs.first.locator("td.failed")).to_have_text("1")
        expect(runs.first.locator(".pill")).to_have_text("failed")
        expect(page.locator("#runs-body tr.run-errors").first).to_contain_text("1 failure and why")
        expect(runs.nth(1).locator("td.added")).to_have_text("1")
        assert int(runs.nth(1).locator("td.chunks").inner_text()) > 1
        ferry = rows.filter(has_text="Ferry timetable")
        expect(ferry.locator(".pill")).to_have_text("complete")
        expect(ferry.locator("td.source")).to_contain_text(NOTE_NAME)
        page.wait_for_timeout(200)
        accessible(page, "documents")
        shoot(page, tmp_path, "documents", backend)
        ferry.get_by_role("button", name="Delete Ferry timetable").click()
        expect(page.locator("#confirm-dialog")).to_be_visible()
        page.locator("#confirm-ok").click()
        expect(rows).to_have_count(1)
        expect(page.locator("#notice")).to_contain_text("Deleted")

        # --- what the page did: its own origin only, no CSP violation, no error, at most 1 MB of assets
        same_origin(requests, url)
        assert page.evaluate("window.__csp") == []
        assert not [e for e in errors if "favicon" not in e], errors
        sizes = dict(page.evaluate(ASSET_BYTES_JS))
        table = assets()
        assert sizes and set(sizes) <= set(table), sizes
        total = sum(len(table[p].body) for p in sizes)
        print(f"{backend}: {len(sizes)} assets, {total:,} bytes")
        assert "/ui/vendor/cytoscape/cytoscape.esm.min.mjs" in sizes and total <= MAX_ASSET_BYTES
        served_total = sum(len(a.body) for p, a in table.items() if p != "/")  # everything the app could load
        assert served_total <= MAX_ASSET_BYTES


def explore(page: Page, tmp_path: Path, backend: str) -> None:
    """The Explore page on the NICS report: find Kentucky, draw it, expand its chunk, page on, show views."""
    page.get_by_role("link", name="Explore").click()
    page.locator("#find").fill("Kentucky")
    page.locator("#find").press("Enter")
    hit = page.locator("#hits .hit", has_text="Kentucky").first
    expect(hit).to_contain_text("Entity")
    hit.click()
    page.wait_for_function(
        "() => window.kbgraph.explore && window.kbgraph.explore.nodes('[label = \"Chunk\"]').length > 0"
    )
    nodes = "window.kbgraph.explore.nodes().map(n => n.data('label'))"
    assert page.evaluate(nodes).count("Entity") >= 1
    expect(page.locator("#explore-detail h3")).to_have_text("Entity")
    expect(page.locator("#explore-detail .caption")).to_have_text("Kentucky")
    # one palette: the Browser style's colour of each label, as on the Why page
    colours = page.evaluate(
        "Object.fromEntries(window.kbgraph.explore.nodes().map(n => [n.data('label'), n.data('color')]))"
    )
    style: dict[str, dict[str, str]] = meta()["style"]  # type: ignore[assignment]
    assert colours["Entity"] == style["Entity"]["color"] and colours["Chunk"] == style["Chunk"]["color"], colours
    # the chunk expanded from the panel's list of neighbours (the keyboard's way): its document comes
    page.locator("#explore-detail .neighbours button", has_text="Chunk").first.click()
    expect(page.locator("#explore-detail h3")).to_have_text("Chunk")
    page.wait_for_function("() => window.kbgraph.explore.nodes('[label = \"Document\"]').length === 1")
    expect(page.locator("#explore-detail dt", has_text="text")).to_be_visible()
    # the chunk has more neighbours than a page: the rest behind its "N more" node, a page per tap
    more = page.locator("#explore-detail #expand-button")
    expect(more).to_contain_text("more of")
    before = page.evaluate("window.kbgraph.explore.nodes().length")
    page.evaluate("window.kbgraph.explore.nodes('[label = \"More\"]')[0].emit('tap')")
    page.wait_for_function(f"() => window.kbgraph.explore.nodes().length > {before}")
    expect(page.locator("#explore-status")).to_contain_text("neighbours, 24 shown")
    page.wait_for_timeout(300)
    accessible(page, "explore")
    shoot(page, tmp_path, "explore", backend)
    # the browse queries as views: the document's layers, then the top entities
    page.locator("#view").select_option("document")
    page.get_by_role("button", name="Show", exact=True).click()
    expect(page.locator("#explore-status")).to_contain_text("a document's three layers")
    labels = page.evaluate(nodes)
    assert labels.count("Document") == 1 and labels.count("Chunk") >= 2, labels
    edges = page.evaluate("window.kbgraph.explore.edges().map(e => e.data('type'))")
    assert edges.count("HAS_CHUNK") == labels.count("Chunk"), edges
    page.locator("#view").select_option("top_entities")
    page.locator("#view-limit").fill("5")
    page.get_by_role("button", name="Show", exact=True).click()
    expect(page.locator("#explore-status")).to_contain_text("5 nodes")
    assert set(page.evaluate(nodes)) == {"Entity"}
    accessible(page, "explore-view")


def _readonly_upload(page: Page, kb: str) -> int:
    """The status of an upload forced from the page with its read-only key (no control for it is shown)."""
    status: int = page.evaluate(
        """async (kb) => {
        const form = new FormData();
        form.append('files', new Blob(['# x\\n\\ny\\n'], {type: 'text/markdown'}), 'forced.md');
        const r = await fetch(`/v1/kb/${kb}/ingest`, {method: 'POST', body: form,
            headers: {Authorization: `Bearer ${sessionStorage.getItem('kbgraph.key')}`}});
        return r.status; }""",
        kb,
    )
    return status


def test_keys(falkor_kb: Settings, browser: Browser, tmp_path: Path) -> None:
    """With API keys: the page loads without one and asks for it; a refused key is asked again; a read-only key
    sees no upload or delete control (and a forced upload is the API's 403); a key that may write sees them."""
    keys = tmp_path / "keys.toml"
    reader, _ = add_key(keys, kbs=[falkor_kb.name], rights=["read"], name="reader")
    writer, _ = add_key(keys, kbs=[falkor_kb.name], rights=["read", "write"], name="writer")
    stranger, _ = add_key(keys, kbs=["other-kb"], rights=["read", "write"], name="stranger")
    settings = falkor_kb.updated({"api_keys_file": keys})
    with running(create_app(settings)) as url, opened(browser, url, tmp_path) as (page, requests, errors):
        with urllib.request.urlopen(url + "/ui/meta.json") as r:  # the app's files need no key
            assert [m["name"] for m in json.load(r)["methods"]] == list(METHODS)
        page.goto(url + "/", wait_until="domcontentloaded")
        dialog = page.locator("#key-dialog")
        expect(dialog).to_be_visible()
        expect(page.locator("#key-why")).to_contain_text("asks for an API key")
        page.locator("#key-input").fill("kbg_not-a-key")
        page.locator("#key-input").press("Enter")
        expect(page.locator("#key-why")).to_contain_text("refused")
        accessible(page, "key")
        shoot(page, tmp_path, "key", "falkordb")
        page.locator("#key-input").fill(reader)
        page.locator("#key-input").press("Enter")
        expect(dialog).to_be_hidden()
        page.locator("body[data-ready='true']").wait_for()
        # a scoped key is not told the served knowledge base by /readyz: the user names it
        page.locator("#kb-name").fill(falkor_kb.name)
        page.locator("#kb-name").press("Enter")
        page.get_by_role("link", name="Documents").click()
        expect(page.locator("#docs-body tr")).to_have_count(1)
        expect(page.locator("#readonly-note")).to_be_visible()
        expect(page.locator("#upload-form")).to_be_hidden()
        expect(page.locator("#docs-body button")).to_have_count(0)
        expect(page.locator("#runs-body tr.run").last.locator(".pill")).to_have_text("completed")  # runs are read
        accessible(page, "documents-readonly")
        shoot(page, tmp_path, "documents-readonly", "falkordb")
        # the rights came from GET .../rights: no ingest was tried to learn them
        assert page.evaluate("window.kbgraph.app.rights") == {"read": True, "write": False}
        assert any(r.endswith(f"/v1/kb/{falkor_kb.name}/rights") for r in requests)
        assert not [r for r in requests if r.endswith("/ingest")], requests
        assert _readonly_upload(page, falkor_kb.name) == 403
        assert page.evaluate("sessionStorage.getItem('kbgraph.key')") == reader
        # the reader may ask
        page.get_by_role("link", name="Ask").click()
        page.locator("#question").fill(QUESTION)
        page.get_by_role("button", name="Ask", exact=True).click()
        expect(page.locator("#citations .card").filter(has_text="Kentucky").first).to_be_visible()

        # the key forgotten, a writer's key: upload and delete are offered
        page.get_by_role("button", name="Forget key").click()
        page.locator("#key-input").fill(writer)
        page.locator("#key-input").press("Enter")
        page.get_by_role("link", name="Documents").click()
        expect(page.locator("#upload-form")).to_be_visible()
        expect(page.locator("#docs-body button", has_text="Delete")).to_have_count(1)

        # a key of another knowledge base: told so, offered nothing (the API's 403 for every read)
        page.get_by_role("button", name="Forget key").click()
        page.locator("#key-input").fill(stranger)
        page.locator("#key-input").press("Enter")
        expect(page.locator("#notice")).to_contain_text(f"may not use the knowledge base {falkor_kb.name}")
        expect(page.locator("#upload-form")).to_be_hidden()
        expect(page.locator("#docs-body button")).to_have_count(0)
        assert page.evaluate("window.kbgraph.app.rights") == {"read": False, "write": False}
        page.get_by_role("link", name="Explore").click()
        page.locator("#find").fill("Kentucky")
        page.locator("#find").press("Enter")
        expect(page.locator("#explore-status")).to_contain_text("other-kb")  # the 403's detail names its scope
        same_origin(requests, url)
        assert page.evaluate("window.__csp") == []
        unexpected = [e for e in errors if "401" not in e and "403" not in e and "422" not in e]
        assert not unexpected, errors  # the refused key, the forced upload and the rights probe are expected


def test_webapp_host_and_files(falkor_kb: Settings) -> None:
    """Without a browser: the app keeps the guard's Host check, serves only its own files, and needs no key."""
    import httpx

    keyed = falkor_kb.updated({"api_key": "kbg_master-for-the-test"})
    with running(create_app(keyed)) as url, httpx.Client(base_url=url, timeout=30) as c:
        page = c.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert page.headers["content-security-policy"] == CSP and page.headers["x-frame-options"] == "DENY"
        assert c.get("/", headers={"if-none-match": page.headers["etag"]}).status_code == 304
        assert c.head("/ui/js/main.js").status_code == 200 and c.head("/ui/js/main.js").content == b""
        assert c.get("/ui/js/main.js").headers["content-type"].startswith("text/javascript")
        for path in ("/ui/nope.js", "/ui/../pyproject.toml", "/ui/%2e%2e/__init__.py", "/ui/vendor"):
            assert c.get(path).status_code in (400, 401, 404), path  # never a file: 401 once normalised outside /ui/
        assert c.get("/", headers={"host": "evil.example"}).status_code == 421  # DNS rebinding
        assert c.post("/ui/app.css").status_code == 405
        assert c.get(f"/v1/kb/{falkor_kb.name}/documents").status_code == 401  # the API still wants the key
        for path, asset in assets().items():  # the app's own code writes no HTML from strings (dom.js: text only)
            if path.endswith(".js"):
                code = asset.body.decode()
                assert not [
                    w
                    for w in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function")
                    if w in code
                ], path
        licence = c.get("/ui/vendor/cytoscape/LICENSE").text
        version = c.get("/ui/vendor/cytoscape/VERSION.json").json()
        assert "MIT" in licence and version["package"] == "cytoscape" and version["license"] == "MIT"


#: Its file name is its title (a .txt file): markup too.
HOSTILE_NAME = "Ferry <img src=x onerror=\"window.__pwned='title'\"> rules.txt"
#: Markup in a document's title and text: each would run script if the page took it as HTML.
HOSTILE = (
    "Ferry <img src=x onerror=\"window.__pwned='title'\"> <script>window.__pwned='script'</script> rules\n\n"
    "The ferry <img src=x onerror=\"window.__pwned='text'\"> to Kilnsea <b>leaves</b> at 7. "
    "<svg onload=\"window.__pwned='svg'\"></svg> <a href=\"javascript:window.__pwned='link'\">timetable</a>\n"
)


def test_hostile_text_is_inert(falkor_settings: Settings, browser: Browser, tmp_path: Path) -> None:
    """A document whose title and text hold markup and script (stored as written: the API returns it) is shown as
    text on the Ask, Explore and Documents pages: no element of it is made, no script of it runs, no request it
    names is made (every text from the server goes in as text: dom.js)."""
    import httpx

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / HOSTILE_NAME).write_text(HOSTILE, encoding="utf-8")
    settings = offline(falkor_settings, name=f"xss{uuid.uuid4().hex[:8]}")
    with KnowledgeBase(settings=settings) as kb:
        kb.reset()
        assert kb.ingest([docs], progress=False).added == 1
    try:
        with running(create_app(settings)) as url, opened(browser, url, tmp_path) as (page, requests, errors):
            with httpx.Client(base_url=url, timeout=60) as c:  # the markup reaches the page as data
                listed = c.get(f"/v1/kb/{settings.name}/documents").json()["documents"][0]
                hit = c.post(f"/v1/kb/{settings.name}/search", json={"question": "ferry Kilnsea", "k": 1}).json()
            assert "onerror" in listed["title"] and "onerror" in hit["chunks"][0]["text"], (listed, hit)
            page.goto(url + "/", wait_until="domcontentloaded")
            page.locator("body[data-ready='true']").wait_for()
            page.locator("#question").fill("When does the ferry to Kilnsea leave?")
            page.locator("#question").press("Enter")
            card = page.locator("#citations .card").first
            expect(card).to_contain_text("onerror")  # shown as text
            card.get_by_role("button", name="Open passage").click()
            expect(page.locator("#passage-text")).to_contain_text("<svg onload")
            page.keyboard.press("Escape")
            page.get_by_role("link", name="Explore").click()
            page.locator("#view").select_option("document")  # the document's layers; its chunk's text in the panel
            page.get_by_role("button", name="Show", exact=True).click()
            page.wait_for_function(
                "() => window.kbgraph.explore && window.kbgraph.explore.nodes('[label = \"Chunk\"]').length"
            )
            page.evaluate("window.kbgraph.explore.nodes('[label = \"Chunk\"]')[0].emit('tap')")
            expect(page.locator("#explore-detail .caption")).to_contain_text("<img")
            page.get_by_role("link", name="Documents").click()
            expect(page.locator("#docs-body tr").first).to_contain_text("onerror")
            page.wait_for_timeout(300)
            made = page.evaluate("""() => [...document.querySelectorAll('main img, main script, main svg, main b, main a')]
                .filter(e => /onerror|onload|pwned|javascript:/.test(e.outerHTML)
                             || e.closest('#citations, #passage, #docs-body, #explore-detail, #hits'))
                .filter(e => !e.id)  // the page's own (#passage-page-img), not the document's
                .map(e => e.outerHTML.slice(0, 120))""")
            assert made == [], made
            assert page.evaluate("window.__pwned") is None
            assert not [r for r in requests if r.rstrip("/").endswith("/x") or "javascript:" in r], requests
            same_origin(requests, url)
            assert page.evaluate("window.__csp") == []
    finally:
        with KnowledgeBase(settings=settings) as kb:
            kb.reset()
