"""Document metadata at ingest (issue 58) on both real stores: every source (front matter, sidecar, --meta, PDF and
Office properties, a jsonl passage's ``metadata``, the file system and the path), their precedence, bad keys and
values refused per file with the reason, the sidecar not ingested, and a metadata-only re-ingest that embeds
nothing and removes a key dropped (kbgraph.ingest.metadata, kbgraph.ingest.refresh)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kbgraph.embed.base import Embedder
from kbgraph.embed.cache import CachedEmbedder
from kbgraph.kb import KnowledgeBase
from kbgraph.models import stable_id
from kbgraph.settings import Settings

LEAVE = (
    "---\ntitle: Parental leave policy\nteam: hr\nowner: front\nlevel: 1\nyear: 2021\ntags: [leave, family]\n"
    "effective: 2021-03-04\n---\n# Leave\n\nEmployees may take sixteen weeks of paid parental leave after the "
    "birth or adoption of a child.\n"
)
MTIME = 1_600_000_000  # 2020-09-13T12:26:40Z


class CountingEmbedder:
    """The real embedder, its calls counted (``calls``: texts sent by ``embed`` and ``embed_spans``)."""

    def __init__(self, inner: Embedder):
        self.inner, self.calls = inner, 0

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def can_embed_spans(self) -> bool:
        return bool(getattr(self.inner, "can_embed_spans", False))

    def embed(self, texts: Sequence[str]) -> Any:
        self.calls += len(texts)
        return self.inner.embed(texts)

    def embed_spans(self, texts: Sequence[str], spans: Any) -> Any:
        self.calls += len(texts)
        return self.inner.embed_spans(texts, spans)  # type: ignore[attr-defined]


def _kb(settings: Settings) -> KnowledgeBase:
    kb = KnowledgeBase(settings=settings)
    kb.reset()
    return kb


def _pdf(path: Path) -> None:
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "Annual revenue grew by twelve percent in fiscal year 2021 thanks to European sales.")
    doc.set_metadata(
        {
            "author": "Jane Roe",
            "creationDate": "D:20210304050607Z",
            "modDate": "D:20220102040506+01'00'",
            "title": "Annual revenue report",
        }
    )
    doc.save(path)


def _office(folder: Path) -> None:
    import docx
    import openpyxl
    from pptx import Presentation

    d = docx.Document()
    d.add_paragraph("The deployment guide explains how engineers roll out the service to production clusters.")
    d.core_properties.author = "Ann Author"
    d.core_properties.created = datetime(2019, 5, 6, 7, 8, 9)
    d.core_properties.modified = datetime(2020, 5, 6, 7, 8, 9)
    d.save(str(folder / "guide.docx"))
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Platform roadmap"
    slide.placeholders[1].text = "The platform team will migrate every service to the new cluster next year."
    deck.core_properties.author = "Pat Presenter"
    deck.core_properties.created = datetime(2018, 1, 2, 3, 4, 5)
    deck.save(str(folder / "roadmap.pptx"))
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(["service", "owner"])
    ws.append(["billing", "finance team"])
    wb.properties.creator = "Xavier Sheet"
    wb.properties.created = datetime(2017, 1, 2, 3, 4, 5)
    wb.save(str(folder / "owners.xlsx"))


def _tree(root: Path) -> None:
    (root / "hr").mkdir(parents=True)
    (root / "finance").mkdir()
    (root / "eng" / "ops").mkdir(parents=True)
    (root / "hr" / "leave.md").write_text(LEAVE, encoding="utf-8")
    (root / "hr" / "leave.md.meta.json").write_text(json.dumps({"owner": "sidecar", "level": 2}), encoding="utf-8")
    _pdf(root / "finance" / "revenue.pdf")
    _office(root / "eng")
    notes = root / "eng" / "ops" / "notes.txt"
    notes.write_text("The operations team rotates the on-call schedule every Monday morning.", encoding="utf-8")
    (root / "eng" / "ops" / "notes.txt.meta.json").write_text(
        json.dumps({"title": "On-call rotation", "team": "ops", "reviewed": "2024-01-02", "confidential": True}),
        encoding="utf-8",
    )
    os.utime(notes, (MTIME, MTIME))
    passages = [
        {
            "id": "p1",
            "title": "Ada Lovelace",
            "text": "Ada Lovelace wrote the first program for the Analytical Engine.",
            "metadata": {"year": 1843, "topic": ["computing", "history"]},
        },
        {"id": "p2", "title": "Grace Hopper", "text": "Grace Hopper developed one of the first compilers."},
    ]
    (root / "passages.jsonl").write_text("\n".join(json.dumps(p) for p in passages) + "\n", encoding="utf-8")


def _by_path(kb: KnowledgeBase) -> dict[str, dict[str, Any]]:
    return {d["uri"].rsplit("/", 1)[-1]: d for d in kb.documents(limit=1000)}


def test_metadata_from_every_source(backend_settings: Settings, tmp_path: Path) -> None:
    root = tmp_path / "kb"
    _tree(root)
    kb = _kb(backend_settings)
    try:
        report = kb.ingest([root], progress=False, meta={"batch": 7, "owner": "meta"})
        assert (report.added, report.failed) == (8, 0), report.errors
        outcomes = {Path(f.path).name: (f.outcome, f.reason) for f in report.files}
        assert outcomes["leave.md.meta.json"][0] == "skipped" and "sidecar of leave.md" in str(
            outcomes["leave.md.meta.json"][1]
        )
        docs = _by_path(kb)
        assert not [u for u in docs if u.endswith(".meta.json")]  # a sidecar is no document

        leave = docs["leave.md"]
        assert leave["title"] == "Parental leave policy"  # the front matter's title
        m = leave["metadata"]
        assert (m["folder"], m["path"], m["file_type"], m["language"]) == ("hr/", "hr/leave.md", "md", "en")
        assert (m["team"], m["year"], m["tags"], m["effective"]) == ("hr", 2021, ["leave", "family"], "2021-03-04")
        assert (m["owner"], m["level"], m["batch"]) == ("meta", 2, 7)  # --meta > sidecar > front matter
        assert "title" not in m
        texts = _chunk_texts(kb, leave["id"])
        assert texts and not [t for t in texts if "team:" in t or "owner" in t or "---" in t]  # front matter is no text

        pdf = docs["revenue.pdf"]["metadata"]
        assert (pdf["author"], pdf["created"], pdf["modified"]) == (
            "Jane Roe",
            "2021-03-04T05:06:07Z",
            "2022-01-02T03:05:06Z",
        )
        assert (pdf["folder"], pdf["file_type"]) == ("finance/", "pdf")
        guide = docs["guide.docx"]["metadata"]
        assert (guide["author"], guide["created"], guide["modified"]) == (
            "Ann Author",
            "2019-05-06T07:08:09Z",
            "2020-05-06T07:08:09Z",
        )
        assert docs["roadmap.pptx"]["metadata"]["author"] == "Pat Presenter"
        assert docs["roadmap.pptx"]["metadata"]["created"] == "2018-01-02T03:04:05Z"
        sheet = docs["owners.xlsx"]["metadata"]
        assert (sheet["author"], sheet["created"], sheet["file_type"]) == (
            "Xavier Sheet",
            "2017-01-02T03:04:05Z",
            "xlsx",
        )

        notes = docs["notes.txt"]
        assert notes["title"] == "On-call rotation"  # the sidecar's title
        n = notes["metadata"]
        assert (n["folder"], n["path"], n["team"], n["reviewed"], n["confidential"]) == (
            "eng/ops/",
            "eng/ops/notes.txt",
            "ops",
            "2024-01-02",
            True,
        )
        assert n["modified"] == "2020-09-13T12:26:40Z"  # the file system's mtime
        assert ("created" in n) == hasattr(os.stat(root / "eng/ops/notes.txt"), "st_birthtime")

        p1, p2 = docs["passages.jsonl#p1"]["metadata"], docs["passages.jsonl#p2"]["metadata"]
        assert (p1["year"], p1["topic"], p1["path"], p1["file_type"], p1["batch"]) == (
            1843,
            ["computing", "history"],
            "passages.jsonl",
            "jsonl",
            7,
        )
        assert "year" not in p2 and p2["batch"] == 7
    finally:
        kb.close()


def _chunk_texts(kb: KnowledgeBase, doc_id: str) -> list[str]:
    return [row["chunk"]["text"] for row in kb.browse("document", document=doc_id, limit=100)]


def test_bad_keys_and_values_fail_their_file_with_the_reason(backend_settings: Settings, tmp_path: Path) -> None:
    root = tmp_path / "bad"
    root.mkdir()
    (root / "reserved.md").write_text("---\nuri: http://elsewhere\n---\nSome text about the reserved key case.\n")
    (root / "nested.txt").write_text("A plain text whose sidecar holds a nested object.")
    (root / "nested.txt.meta.json").write_text(json.dumps({"owner": {"name": "x"}}))
    (root / "malformed.txt").write_text("A plain text whose sidecar holds a malformed key.")
    (root / "malformed.txt.meta.json").write_text(json.dumps({"fiscal-year": 2021}))
    (root / "corpus.jsonl").write_text(json.dumps({"id": "a", "text": "A passage.", "metadata": {"id": "x"}}) + "\n")
    (root / "good.txt").write_text("A good file is ingested whatever the others hold.")
    kb = _kb(backend_settings)
    try:
        report = kb.ingest([root], progress=False)
        reasons = {Path(e.path).name: e.error for e in report.errors}
        assert (report.added, report.failed) == (1, 4), reasons
        assert "reserved.md: front matter: metadata key 'uri' is reserved" in reasons["reserved.md"]
        assert "nested.txt.meta.json: metadata key 'owner': a nested object" in reasons["nested.txt"]
        assert "malformed.txt.meta.json: bad metadata key 'fiscal-year'" in reasons["malformed.txt"]
        assert "corpus.jsonl line 1: metadata: metadata key 'id' is reserved" in reasons["corpus.jsonl"]
        with pytest.raises(ValueError, match="--meta: metadata key 'status' is reserved"):
            kb.ingest([root], progress=False, meta={"status": "x"})
    finally:
        kb.close()


def test_metadata_only_reingest_embeds_nothing_and_drops_keys(backend_settings: Settings, tmp_path: Path) -> None:
    root = tmp_path / "kb"
    _tree(root)
    kb = _kb(backend_settings)
    try:
        first = kb.ingest([root], progress=False, meta={"batch": 7})
        assert (first.added, first.failed) == (8, 0), first.errors
        counting = CountingEmbedder(kb.embedder)
        kb._embedder = counting  # the real embedder, counted
        sent = len(kb.store.sent)

        same = kb.ingest([root], progress=False, meta={"batch": 7})
        assert (same.unchanged, same.metadata_updated, counting.calls) == (8, 0, 0)

        side = root / "eng" / "ops" / "notes.txt.meta.json"
        side.write_text(json.dumps({"title": "On-call rotation", "team": "sre", "reviewed": "2024-01-02"}))
        kb.store.sent.clear()
        again = kb.ingest([root], progress=False, meta={"batch": 8})
        assert (again.added, again.updated, again.unchanged, again.failed) == (0, 0, 8, 0)
        assert again.metadata_updated == 8  # --meta changed for all, the sidecar for one
        assert counting.calls == 0, "a metadata-only re-ingest sent texts to the embedder"
        assert not [n for n in kb.store.sent if n.startswith(("ingest/upsert_", "admin/delete_"))], dict(kb.store.sent)
        docs = _by_path(kb)
        notes = docs["notes.txt"]
        assert (notes["metadata"]["team"], notes["metadata"]["batch"]) == ("sre", 8)
        assert "confidential" not in notes["metadata"]
        values = kb.store.run("ingest/document_values", {"id": notes["id"], "keys": ["confidential", "team"]})[0]
        assert dict(map(tuple, values["values"])) == {"confidential": None, "team": "sre"}  # the property is gone
        assert docs["passages.jsonl#p1"]["metadata"]["batch"] == 8 and docs["leave.md"]["metadata"]["batch"] == 8
        assert sent  # (the first run wrote)

        # a front-matter-only change re-parses the file but embeds no text again: the front matter is not in them
        cache = counting.inner
        assert isinstance(cache, CachedEmbedder)
        misses = cache.misses
        (root / "hr" / "leave.md").write_text(LEAVE.replace("team: hr", "team: people"), encoding="utf-8")
        fm = kb.ingest([root], progress=False, meta={"batch": 8})
        assert fm.failed == 0 and _by_path(kb)["leave.md"]["metadata"]["team"] == "people"
        assert cache.misses == misses, "a front-matter-only change embedded texts again"
    finally:
        kb.close()


def test_a_new_sidecar_title_rewrites_the_document(backend_settings: Settings, tmp_path: Path) -> None:
    """A title is in the texts embedded (the Document's, its sections' and chunks'): a sidecar's new title is not
    metadata only, the file is parsed and written again."""
    root = tmp_path / "t"
    root.mkdir()
    f = root / "memo.txt"
    f.write_text("The cafeteria will close early on Friday for the annual staff party.", encoding="utf-8")
    kb = _kb(backend_settings)
    try:
        assert kb.ingest([root], progress=False).added == 1
        (root / "memo.txt.meta.json").write_text(json.dumps({"title": "Cafeteria hours"}))
        again = kb.ingest([root], progress=False)
        assert (again.updated, again.metadata_updated) == (1, 0)
        doc = kb.documents()[0]
        assert doc["title"] == "Cafeteria hours" and doc["id"] == stable_id("doc", f.resolve().as_uri())
        assert datetime.fromisoformat(doc["metadata"]["modified"].replace("Z", "+00:00")) <= datetime.now(UTC)
    finally:
        kb.close()
