"""kbgraph's BM25 takes bm25s's numpy backend without importing numba (query/bm25.py ``load_library``: ~0.25 s of
a cold ``kbgraph ask``), while numba stays importable for anyone else in the process (unstructured's PDF layout).
In a fresh interpreter, since this one may have imported bm25s already."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CHECK = """
import json, sys
from kbgraph.query.bm25 import load_library
bm25s = load_library()
after_bm25s = "numba" in sys.modules
import numba
print(json.dumps({"numba_in_bm25s": bm25s.NUMBA_AVAILABLE, "imported_with_bm25s": after_bm25s,
                  "numba_later": hasattr(numba, "njit"), "same": load_library() is bm25s}))
"""


def test_bm25s_without_numba_and_numba_still_importable() -> None:
    pytest.importorskip("numba")
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=True, timeout=120)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"numba_in_bm25s": False, "imported_with_bm25s": False, "numba_later": True, "same": True}
