"""Embedding batches bounded by texts and padded tokens (kbgraph.embed.onnx_runtime.token_batches; issue 15:
long texts in small batches keep the embedder's memory flat). That the vectors do not depend on the batching is
in tests/test_embed_onnx.py::test_onnx_matches_torch."""

from __future__ import annotations

import pytest

from kbgraph.embed.onnx_runtime import token_batches


@pytest.mark.parametrize(
    ("lengths", "max_texts", "max_tokens", "expected"),
    [
        ([3, 1, 2], 64, 2048, [[1, 2, 0]]),  # shortest first, one batch
        ([10, 10, 10, 10, 10], 2, 2048, [[0, 1], [2, 3], [4]]),  # the text cap
        ([100, 100, 100, 100], 64, 250, [[0, 1], [2, 3]]),  # 3 x 100 > 250 padded tokens
        ([5, 5, 300, 5], 64, 256, [[0, 1, 3], [2]]),  # a text over the budget runs alone
        ([8, 8, 120], 64, 256, [[0, 1], [2]]),  # 3 x 120 = 360 > 256: the long one waits
        ([], 64, 2048, []),
    ],
)
def test_token_batches(lengths: list[int], max_texts: int, max_tokens: int, expected: list[list[int]]) -> None:
    batches = list(token_batches(lengths, max_texts, max_tokens))
    assert batches == expected
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for b in batches:
        assert len(b) <= max_texts
        assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= max_tokens
