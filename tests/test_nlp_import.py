"""spaCy is loaded without torch (kbgraph.ingest.nlp.import_spacy: thinc would import it at import time), and
torch stays importable afterwards. Each check runs in a fresh interpreter: the test process has torch loaded."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


def test_spacy_pipeline_without_torch_then_torch_imports() -> None:
    out = _run("""
        import sys
        from kbgraph.ingest.nlp import load_nlp, split_sentences
        nlp = load_nlp()
        doc = nlp("Angela Merkel visited Paris in 2015. She met the mayor.")
        print("torch" in sys.modules, [e.label_ for e in doc.ents], list(split_sentences(["One. Two three."])))
        import torch
        print(torch.ones(3).sum().item())
    """).splitlines()
    assert out[0] == "False ['PERSON', 'GPE', 'DATE'] [['One.', 'Two three.']]"
    assert out[1] == "3.0"


def test_torch_already_imported_is_left_alone() -> None:
    out = _run("""
        import sys
        import torch
        from kbgraph.ingest.nlp import load_nlp
        load_nlp()
        import thinc.compat
        print(sys.modules["torch"] is torch, thinc.compat.has_torch)
    """)
    assert out == "True True"


def test_html_parse_does_not_import_torch(examples_dir: Path) -> None:
    html = next((examples_dir / "docs" / "html").glob("*.html"))
    out = _run(f"""
        import sys
        from pathlib import Path
        from kbgraph.ingest.parse import parse_file
        doc = parse_file(Path({str(html)!r}), max_bytes=1 << 28)
        print("torch" in sys.modules, "spacy" in sys.modules, len(doc.elements) > 10)
    """)
    assert out == "False True True"  # unstructured imports spaCy, which must not bring torch
