"""Every parity vector, against Python host objects and against the native store."""

from __future__ import annotations

import pytest
from harness import Vector, load_vectors, run_vector, run_vector_native_store, runs_on_native_store

VECTORS = load_vectors()


def test_vectors_are_loaded() -> None:
    assert len(VECTORS) >= 40
    assert len({vector["name"] for vector in VECTORS}) == len(VECTORS), "names are unique"


@pytest.mark.parametrize("vector", VECTORS, ids=[vector["name"] for vector in VECTORS])
async def test_vector(vector: Vector) -> None:
    await run_vector(vector)


NATIVE = [vector for vector in VECTORS if runs_on_native_store(vector)]


@pytest.mark.parametrize("vector", NATIVE, ids=[vector["name"] for vector in NATIVE])
async def test_vector_on_native_store(vector: Vector) -> None:
    await run_vector_native_store(vector)
