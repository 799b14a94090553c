"""The per-page cost of OCR (issue 31), and that a PDF with a text layer costs the same with OCR on as off.

    .venv/bin/python -m benchmarks.ocr [--pages 5] [--repeat 3] [--scan-dpi 200] [--ocr-dpi 300]

Made in a temporary folder, from the same ``--pages`` A4 pages of English prose (2Wiki passages, ~2,000
characters a page, 11 pt): ``text.pdf``, the pages with their text layer; ``scan.pdf``, each page rendered at
``--scan-dpi`` (a scanner's resolution) and put alone into a PDF (no text layer); and each rendered page as a
PNG file. Each is parsed by ``kbgraph.ingest.parse.parse_file`` (the ingest's ``parse`` stage, where OCR runs):
``text.pdf`` with ``ocr=off`` (the baseline: what it cost before OCR existed) and with ``ocr=auto`` (after a
warm-up parse of each, the mean of ``TEXT_TIMES`` parses a round); ``scan.pdf``
and the PNGs with ``ocr=auto`` (Tesseract, ``eng``, scanned pages rendered at ``--ocr-dpi``, the setting
``ocr_dpi``). The runs alternate, ``--repeat`` rounds; printed: the median seconds per file and per page, and
the share of the scan's words found (the words of the text layer, case-folded, found in the OCR'd text).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
from collections import Counter
import tempfile
import time
from pathlib import Path

from benchmarks.common import corpus_path

CORPUS = corpus_path("2wiki")
PAGE_CHARS = 2000
BOX = (60, 60, 535, 790)  # the text's rectangle on an A4 page
#: Times a text-layer PDF is parsed per round (its seconds are the mean).
TEXT_TIMES = 20


def make_sample(folder: Path, pages: int, scan_dpi: int) -> dict[str, list[Path]]:
    """``text.pdf``, ``scan.pdf`` and ``page<i>.png`` of ``pages`` pages of prose (see the module doc)."""
    import pymupdf

    def fits(text: str) -> bool:  # (insert_textbox writes nothing when the text does not fit)
        return pymupdf.open().new_page(width=595, height=842).insert_textbox(BOX, text, fontsize=11) >= 0

    passages = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    texts: list[str] = []
    page_text = ""
    for p in passages:  # a page takes passages while it holds fewer than PAGE_CHARS and they fit
        para = f"{p['title']}\n{p['text']}\n\n"
        if not fits(para):
            continue
        if len(page_text) >= PAGE_CHARS or not fits(page_text + para):
            texts.append(page_text.strip())
            page_text = ""
            if len(texts) == pages:
                break
        page_text += para
    text_pdf, scan_pdf = pymupdf.open(), pymupdf.open()
    pngs = []
    for i, text in enumerate(texts, start=1):
        page = text_pdf.new_page(width=595, height=842)
        assert page.insert_textbox(BOX, text, fontsize=11) >= 0
        pix = page.get_pixmap(dpi=scan_dpi)
        png = folder / f"page{i}.png"
        pix.save(png)
        pngs.append(png)
        scan = scan_pdf.new_page(width=595, height=842)
        scan.insert_image(scan.rect, filename=str(png))
    text_pdf.save(folder / "text.pdf")
    scan_pdf.save(folder / "scan.pdf")
    return {"text": [folder / "text.pdf"], "scan": [folder / "scan.pdf"], "png": pngs}


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--scan-dpi", type=int, default=200)
    ap.add_argument("--ocr-dpi", type=int, default=300)
    args = ap.parse_args()

    from kbgraph.ingest.ocr import OcrOptions, tesseract_binary
    from kbgraph.ingest.parse import parse_file

    if tesseract_binary() is None:
        raise SystemExit(
            "Tesseract is not installed: apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-osd"
        )
    version = subprocess.run(["tesseract", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    runs = {  # name -> (files, OCR options)
        "text.pdf, ocr=off": ("text", OcrOptions(mode="off", dpi=args.ocr_dpi)),
        "text.pdf, ocr=auto": ("text", OcrOptions(mode="auto", dpi=args.ocr_dpi)),
        "scan.pdf, ocr=auto": ("scan", OcrOptions(mode="auto", dpi=args.ocr_dpi)),
        "PNG files, ocr=auto": ("png", OcrOptions(mode="auto", dpi=args.ocr_dpi)),
    }
    with tempfile.TemporaryDirectory() as tmp:
        files = make_sample(Path(tmp), args.pages, args.scan_dpi)
        pages = len(files["png"])
        seconds: dict[str, list[float]] = {name: [] for name in runs}
        texts: dict[str, str] = {}
        ocr_pages: dict[str, int] = {}
        for options in (runs["text.pdf, ocr=off"][1], runs["text.pdf, ocr=auto"][1]):  # warm-up, not timed
            parse_file(files["text"][0], max_bytes=1 << 30, ocr=options)
        for _ in range(args.repeat):
            for name, (kind, options) in runs.items():
                times = TEXT_TIMES if kind == "text" else 1  # (a text-layer parse takes milliseconds)
                t0 = time.perf_counter()
                for _ in range(times):
                    docs = [parse_file(f, max_bytes=1 << 30, ocr=options) for f in files[kind]]
                seconds[name].append((time.perf_counter() - t0) / times)
                texts[name] = "\n".join(e.text for d in docs for e in d.elements)
                ocr_pages[name] = sum(len(d.ocr_pages) for d in docs)
    truth = Counter(_words(texts["text.pdf, ocr=off"]))
    print(
        f"{pages} A4 pages of prose ({truth.total():,} words), scanned at {args.scan_dpi} dpi, OCR at "
        f"{args.ocr_dpi} dpi, {version}, {os.cpu_count()} cores, median of {args.repeat}"
    )
    print(f"{'run':22} {'s/file':>8} {'s/page':>8} {'OCR pages':>9} {'words found':>11}")
    for name in runs:
        median = statistics.median(seconds[name])
        recall = (Counter(_words(texts[name])) & truth).total() / truth.total()
        per_file = median / len(files[runs[name][0]])
        print(f"{name:22} {per_file:8.3f} {median / pages:8.3f} {ocr_pages[name]:9d} {100 * recall:10.1f}%")
    off, auto = (statistics.median(seconds[n]) for n in ("text.pdf, ocr=off", "text.pdf, ocr=auto"))
    print(
        f"text.pdf, ocr=auto / ocr=off: {auto / off:.2f}x (every round: "
        + ", ".join(
            f"{a / o:.2f}" for a, o in zip(seconds["text.pdf, ocr=auto"], seconds["text.pdf, ocr=off"], strict=True)
        )
        + ")"
    )


if __name__ == "__main__":
    main()
