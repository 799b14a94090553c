"""Check the long-document development set: every gold document exists, every gold page is in it.

Usage: python examples/longdoc/check.py [--questions PATH]

Reads dev.questions.jsonl beside this file (one JSON object a line), opens each gold document under
documents/ with PyMuPDF, and fails (exit 1) on a missing document, a page outside 1..page_count, a
malformed record, a duplicate id, an unknown domain/kind, or a `meta.series` that is unknown or names a
series its gold documents are not in. Prints the documents (domain, pages, size), the question counts per
domain and per kind, and per look-alike series (documents, questions with `meta.series`, and all questions
whose gold pages lie in the series). Standard library and PyMuPDF only.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

try:
    import pymupdf
except ImportError:  # PyMuPDF < 1.24 names its module fitz only
    import fitz as pymupdf  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent
DOCUMENTS = HERE / "documents"
DOMAINS = ("government", "manuals", "papers", "policies")
KINDS = ("fact", "table", "procedure", "definition", "multi-page")
KEYS = {"id", "question", "answers", "gold_pages", "meta"}
# Look-alike series: documents of one kind and layout that differ by year, revision or title.
SERIES = {
    "nist-csd-annual-report": (
        "government/IR7653-2009AnnualReport.pdf",
        "government/IR7751-2010AnnualReport.pdf",
        "government/IR7816-2011AnnualReport.pdf",
    ),
    "nist-sp800-126-scap": (
        "policies/SP800-126.pdf",
        "policies/SP800-126r1.pdf",
        "policies/SP800-126r2.pdf",
        "policies/SP800-126r3.pdf",
    ),
    "r-manuals-4.2.2": (
        "manuals/R-admin.pdf",
        "manuals/R-data.pdf",
        "manuals/R-intro.pdf",
        "manuals/R-lang.pdf",
        "manuals/R-ints.pdf",
    ),
}


def page_counts() -> dict[str, int]:
    """Page count of every PDF under documents/, keyed by its path relative to documents/."""
    counts = {}
    for pdf in sorted(DOCUMENTS.glob("*/*.pdf")):
        with pymupdf.open(pdf) as doc:
            counts[pdf.relative_to(DOCUMENTS).as_posix()] = doc.page_count
    return counts


def check(path: Path) -> int:
    counts = page_counts()
    errors: list[str] = []
    seen: set[str] = set()
    by_domain: Counter[str] = Counter()
    by_kind: Counter[str] = Counter()
    by_domain_kind: Counter[tuple[str, str]] = Counter()
    by_document: Counter[str] = Counter()
    by_series: Counter[str] = Counter()
    tagged_series: Counter[str] = Counter()
    records = 0
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        records += 1
        where = f"{path.name}:{n}"
        try:
            q = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"{where}: not JSON ({exc})")
            continue
        if set(q) != KEYS:
            errors.append(f"{where}: keys {sorted(q)} != {sorted(KEYS)}")
            continue
        qid = q["id"]
        if qid in seen:
            errors.append(f"{where}: duplicate id {qid}")
        seen.add(qid)
        if not isinstance(q["question"], str) or not q["question"].strip():
            errors.append(f"{where}: {qid}: empty question")
        if (
            not isinstance(q["answers"], list)
            or not q["answers"]
            or not all(isinstance(a, str) and a.strip() for a in q["answers"])
        ):
            errors.append(f"{where}: {qid}: answers must be a non-empty list of strings")
        meta = q["meta"]
        domain, kind = meta.get("domain"), meta.get("kind")
        if domain not in DOMAINS:
            errors.append(f"{where}: {qid}: unknown domain {domain!r}")
        if kind not in KINDS:
            errors.append(f"{where}: {qid}: unknown kind {kind!r}")
        gold = q["gold_pages"]
        if not isinstance(gold, list) or not gold:
            errors.append(f"{where}: {qid}: gold_pages must be a non-empty list")
            continue
        if kind == "multi-page" and len(gold) < 2:
            errors.append(f"{where}: {qid}: a multi-page question needs two or more gold pages")
        for g in gold:
            document, page = g.get("document"), g.get("page")
            if document not in counts:
                errors.append(f"{where}: {qid}: no document documents/{document}")
                continue
            if not document.startswith(f"{domain}/"):
                errors.append(f"{where}: {qid}: {document} is not in domain {domain}")
            if not isinstance(page, int) or isinstance(page, bool) or not 1 <= page <= counts[document]:
                errors.append(f"{where}: {qid}: page {page!r} outside 1..{counts[document]} of {document}")
        documents = {g.get("document") for g in gold if g.get("document") in counts}
        for document in documents:
            by_document[document] += 1
        series = meta.get("series")
        if series is not None:
            if series not in SERIES:
                errors.append(f"{where}: {qid}: unknown series {series!r}")
            else:
                tagged_series[series] += 1
                outside = sorted(d for d in documents if d not in SERIES[series])
                if outside:
                    errors.append(f"{where}: {qid}: {', '.join(outside)} not in series {series}")
        for name, members in SERIES.items():
            if documents & set(members):
                by_series[name] += 1
        by_domain[domain] += 1
        by_kind[kind] += 1
        by_domain_kind[(domain, kind)] += 1

    print(f"{'document':52} {'pages':>5} {'MB':>6} {'questions':>9}")
    total_bytes = 0
    for document, pages in counts.items():
        size = (DOCUMENTS / document).stat().st_size
        total_bytes += size
        print(f"{document:52} {pages:5d} {size / 1e6:6.2f} {by_document[document]:9d}")
    print(f"{len(counts)} documents, {sum(counts.values())} pages, {total_bytes / 1e6:.1f} MB")
    unused = [d for d in counts if not by_document[d]]
    if unused:
        errors.append(f"documents without a question: {', '.join(unused)}")
    print()
    print(f"{'domain':12}" + "".join(f"{k:>12}" for k in KINDS) + f"{'total':>8}")
    for domain in DOMAINS:
        row = "".join(f"{by_domain_kind[(domain, k)]:12d}" for k in KINDS)
        print(f"{domain:12}{row}{by_domain[domain]:8d}")
    print(f"{'total':12}" + "".join(f"{by_kind[k]:12d}" for k in KINDS) + f"{records:8d}")
    print()
    print(f"{'series':24} {'documents':>9} {'pages':>6} {'MB':>6} {'tagged':>7} {'questions':>9}")
    for name, members in SERIES.items():
        missing = [d for d in members if d not in counts]
        if missing:
            errors.append(f"series {name}: no document(s) {', '.join(missing)}")
        present = [d for d in members if d in counts]
        pages = sum(counts[d] for d in present)
        size = sum((DOCUMENTS / d).stat().st_size for d in present)
        print(f"{name:24} {len(present):9d} {pages:6d} {size / 1e6:6.2f} {tagged_series[name]:7d} {by_series[name]:9d}")
    if errors:
        print(f"\n{len(errors)} problem(s):", file=sys.stderr)
        for e in errors:
            print(f"  {e}", file=sys.stderr)
        return 1
    print(f"\nok: {records} questions, every gold document exists and every gold page is within it")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, default=HERE / "dev.questions.jsonl")
    return check(parser.parse_args().questions)


if __name__ == "__main__":
    sys.exit(main())
