"""A re-run over unchanged sources does not parse them (kbgraph.ingest.unchanged), on both real stores.

The parsers are the real ones, wrapped to count their calls. A file is recognised as unchanged from the
sha256 of its raw bytes and its stored Document; a passage corpus from its (:SourceFile) record and the
number of complete passages under its URI. A changed file, a changed corpus, a deleted passage and --prune
are checked too.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import kbgraph.ingest.compute as compute_module  # the parsers as the ingestion calls them
import pytest

from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings

WRITES = (
    "ingest/upsert_",
    "ingest/link_",
    "ingest/mark_documents_complete",
    "admin/delete_",
    "ingest/record_source",
    "ingest/forget_source",
)


@pytest.fixture
def parse_calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Calls of the real parsers, by name."""
    calls: Counter[str] = Counter()
    for name in ("parse_file", "parse_passages_jsonl"):
        real = getattr(compute_module, name)

        def counted(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            calls[_name] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(compute_module, name, counted)
    return calls


def test_unchanged_sources_are_not_parsed(
    backend_settings: Settings, examples_dir: Path, tmp_path: Path, parse_calls: Counter[str]
) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.txt").write_text("Grace Hopper developed the first compiler at Remington Rand.", encoding="utf-8")
    (src / "b.txt").write_text("Ada Lovelace wrote the first program for the Analytical Engine.", encoding="utf-8")
    shutil.copy(examples_dir / "docs/pdf/fbi_nics_background_checks_2015-11.pdf", src / "nics.pdf")
    lines = (examples_dir / "multihop/musique/hipporag_train100.corpus.jsonl").read_text(encoding="utf-8").splitlines()
    corpus = src / "passages.jsonl"
    corpus.write_text("\n".join(lines[:10]) + "\n", encoding="utf-8")
    kb = KnowledgeBase(settings=backend_settings)
    kb.reset()
    try:
        first = kb.ingest([src], progress=False)
        assert (first.added, first.failed) == (13, 0)
        assert parse_calls == {"parse_file": 3, "parse_passages_jsonl": 1}
        assert kb.stats().nodes["SourceFile"] == 1

        # nothing changed: no parser runs, nothing is written, everything is reported unchanged
        parse_calls.clear()
        kb.store.sent.clear()
        again = kb.ingest([src], progress=False, prune=True)
        assert sum(parse_calls.values()) == 0, parse_calls
        assert (again.added, again.updated, again.unchanged, again.deleted, again.failed) == (0, 0, 13, 0, 0)
        assert not [n for n in kb.store.sent if n.startswith(WRITES)], dict(kb.store.sent)

        # one file changed: only it is parsed
        (src / "b.txt").write_text("Ada Lovelace is regarded as the first computer programmer.", encoding="utf-8")
        parse_calls.clear()
        changed = kb.ingest([src], progress=False)
        assert parse_calls == {"parse_file": 1}
        assert (changed.added, changed.updated, changed.unchanged) == (0, 1, 12)

        # one passage changed: the corpus is parsed, its other passages are unchanged
        edited = lines[:10]
        edited[3] = edited[3].replace('"text": "', '"text": "Edited. ', 1)
        assert edited[3] != lines[3]
        corpus.write_text("\n".join(edited) + "\n", encoding="utf-8")
        parse_calls.clear()
        passage = kb.ingest([src], progress=False)
        assert parse_calls == {"parse_passages_jsonl": 1}
        assert (passage.added, passage.updated, passage.unchanged) == (0, 1, 12)
        parse_calls.clear()
        assert kb.ingest([src], progress=False).unchanged == 13 and sum(parse_calls.values()) == 0

        # a passage deleted from the graph: the unchanged corpus is parsed again and the passage comes back
        uri = f"{corpus.resolve().as_uri()}#"
        victim = next(r["uri"] for r in kb.store.run("ingest/list_documents") if r["uri"].startswith(uri))
        assert kb.delete(victim)["documents"] == 1
        parse_calls.clear()
        back = kb.ingest([src], progress=False)
        assert parse_calls == {"parse_passages_jsonl": 1}
        assert (back.added, back.unchanged) == (1, 12)
        assert kb.stats().nodes["Document"] == 13
    finally:
        kb.close()
