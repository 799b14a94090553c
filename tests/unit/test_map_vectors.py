"""Vectors in statement parameters (kbgraph.store.params.map_vectors): each array becomes the driver's form, at
the top level and in rows; an array that several parameters hold is converted once (retrieve/seed_vectors sends
the question's vector once per vector index)."""

from __future__ import annotations

import numpy as np
import pytest

from kbgraph.store.params import map_vectors

pytestmark = pytest.mark.unit


def test_each_array_is_converted_once_and_every_place_gets_its_form() -> None:
    calls: list[int] = []

    def convert(vector: np.ndarray) -> list[float]:
        calls.append(id(vector))
        return [float(x) for x in vector]

    shared, other = np.array([1.0, 2.0], dtype=np.float32), np.array([3.0], dtype=np.float32)
    params = {
        "embedding": shared,
        "chunk_embedding": shared,
        "entity_embedding": other,
        "k": 5,
        "rows": [{"id": "a", "embedding": shared}, {"id": "b", "embedding": other}],
        "ids": ["x", "y"],
    }
    out = map_vectors(params, convert)
    assert sorted(calls) == sorted([id(shared), id(other)])  # two arrays, two conversions
    assert out["embedding"] == out["chunk_embedding"] == out["rows"][0]["embedding"] == [1.0, 2.0]
    assert out["entity_embedding"] == out["rows"][1]["embedding"] == [3.0]
    assert out["k"] == 5 and out["ids"] == ["x", "y"] and out["rows"][1]["id"] == "b"
    assert isinstance(params["embedding"], np.ndarray)  # the caller's parameters are left as they were


def test_equal_arrays_that_are_not_the_same_object_are_each_converted() -> None:
    calls: list[int] = []

    def convert(vector: np.ndarray) -> list[float]:
        calls.append(id(vector))
        return [float(x) for x in vector]

    a, b = np.zeros(2, dtype=np.float32), np.zeros(2, dtype=np.float32)
    map_vectors({"x": a, "y": b}, convert)
    assert sorted(calls) == sorted([id(a), id(b)])
