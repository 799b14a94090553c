"""``kbgraph rank train --model <m> --shipped`` rebuilds each shipped ranker model byte for byte (issue 59): the
library, not a benchmark script, makes kbgraph/resources/ranker/{default,gbm,blend}.json from the repo's three
sets (kbgraph.eval.rank_train_shipped).

Slow: the three sets' corpora (6,185 passages) are ingested once into a home kept between runs (tests/conftest.py
``_test_cache``, keyed by the ingestion's code and the corpora: ~6 min on 2 cores the first time), the pools are
collected and the models fitted every run (~3 min for the three). A parameter of a fit changed (BLEND_PARAMS,
PARAMS, the pool, the head, C), or a change to retrieval that moves the pools, turns this test red until the
models are fitted again with the command and shipped. The unit test beside it (tests/unit/test_shipped_models.py)
checks the files' provenance without a store.

Opt-in (``KBGRAPH_TEST_SHIPPED_MODELS=1``): two ingestions of the same corpus by the same code do not yet give the
same knowledge base (on this machine 79 of HotpotQA's 100 pools differed between two fresh ingestions, in their Chunk vector
seeds among others; the cause is not traced), so the bytes match on the knowledge bases
the shipped models were fitted on, the ones this test keeps in its cache home, and not on a machine that ingests
them anew. With the variable unset the test is skipped.
"""

from __future__ import annotations

import filecmp
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbgraph.eval.rank_train_shipped import TRAINERS, repo_sets
from tests.conftest import REPO, _test_cache

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("KBGRAPH_TEST_SHIPPED_MODELS") != "1",
        reason="opt-in (KBGRAPH_TEST_SHIPPED_MODELS=1): a fresh ingestion does not give the same pools",
    ),
]

#: What the repo sets' knowledge bases are made by: a change to any starts an empty home (a fresh ingest).
INGEST_SOURCES = sorted(
    str(p.relative_to(REPO))
    for pattern in (
        "ingest/**/*.py",
        "kbgraph/embed/*.py",
        "kbgraph/store/*.py",
        "kbgraph/settings*.py",
        "cypher/ingest/*.cypher",
        "cypher/schema/*.cypher",
        "cypher/fragments/*.cypher",
    )
    for p in REPO.glob(pattern)
) + [str(p.relative_to(REPO)) for s in repo_sets() for p in (s.with_name(s.name + ".corpus.jsonl"),)]
DISTS = ["falkordb", "onnxruntime", "spacy", "numpy", "torch", "transformers", "sentence-transformers"]


@pytest.fixture(scope="module")
def repo_home() -> Path:
    """A home holding the repo sets' knowledge bases (named as ``kbgraph rank train`` names them), its models/ the
    session's ONNX export (conftest ``falkor_home``'s)."""
    home = _test_cache("repo-sets", INGEST_SOURCES, DISTS)
    models = _test_cache(
        "onnx-models",
        ["kbgraph/embed/onnx_export.py", "kbgraph/embed/onnx_model.py", "kbgraph/embed/onnx_quant.py"],
        ["torch", "transformers", "sentence-transformers", "onnx", "onnxruntime"],
    )
    if not (home / "models").exists():
        (home / "models").symlink_to(models, target_is_directory=True)
    return home


@pytest.mark.parametrize("model", ["linear", "gbm", "blend"])
def test_rank_train_rebuilds_the_shipped_model(
    repo_home: Path, tmp_path: Path, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kbgraph.cli import app

    monkeypatch.setenv("KBGRAPH_FALKOR_IDLE_TIMEOUT", "0")
    out = tmp_path / f"{model}.json"
    result = CliRunner().invoke(
        app, ["--home", str(repo_home), "rank", "train", "--model", model, "--shipped", "--out", str(out), "--json"]
    )
    assert result.exit_code == 0, result.output
    shipped = TRAINERS[model].shipped()
    assert filecmp.cmp(out, shipped, shallow=False), (
        f"kbgraph rank train --model {model} --shipped no longer gives {shipped.name}: a fit's parameter or the "
        f"pools changed; if that is meant, ship the new file (and its recall, docs/scoring.md)"
    )
