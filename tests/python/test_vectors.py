"""Every parity vector on a virtual clock against Python host objects; the
untimed ones without store faults also against the native stores (in memory,
SQLite, PostgreSQL), where key identity is proven as keys cross into Rust."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import sandbox_reclaim as sr
from harness import (
    Vector,
    load_fleet_vectors,
    load_vectors,
    run_fleet_vector,
    run_vector,
    run_vector_native_store,
    runs_on_native_store,
)
from services import drop_schema, fresh_schema, pg_url

VECTORS = load_vectors()
FLEET_VECTORS = load_fleet_vectors()


def test_vectors_are_loaded() -> None:
    assert len(VECTORS) >= 200
    assert len({vector["name"] for vector in VECTORS}) == len(VECTORS), "names are unique"


@pytest.mark.parametrize("vector", VECTORS, ids=[vector["name"] for vector in VECTORS])
async def test_vector(vector: Vector) -> None:
    await run_vector(vector)


def test_fleet_vectors_are_loaded() -> None:
    apis = {vector["api"] for vector in FLEET_VECTORS}
    assert apis == {"reclaimAll", "reconcile"} and len(FLEET_VECTORS) >= 32
    names = [vector["name"] for vector in VECTORS + FLEET_VECTORS]
    assert len(set(names)) == len(names), "names are unique across every file"


@pytest.mark.parametrize("vector", FLEET_VECTORS, ids=[vector["name"] for vector in FLEET_VECTORS])
async def test_fleet_vector(vector: Vector) -> None:
    await run_fleet_vector(vector)


NATIVE = [vector for vector in VECTORS if runs_on_native_store(vector)]
KEY_IDENTITY = [vector for vector in NATIVE if vector.get("nativeStores")]


@pytest.mark.parametrize("vector", NATIVE, ids=[vector["name"] for vector in NATIVE])
async def test_vector_on_native_memory_store(vector: Vector) -> None:
    store = sr.InMemorySandboxInstanceStore.with_ledger() if vector["store"].get("ledger") else sr.InMemorySandboxInstanceStore()
    await run_vector_native_store(vector, store)


async def _run_key_identity(store: sr.SqliteSandboxInstanceStore | sr.PostgresSandboxInstanceStore) -> None:
    assert len(KEY_IDENTITY) >= 100
    for vector in KEY_IDENTITY:
        for instance in vector["store"]["instances"]:
            await store.delete(instance["key"])
        await run_vector_native_store(vector, store)
        for instance in vector["store"]["instances"]:
            await store.delete(instance["key"])


async def test_key_identity_in_the_sqlite_store() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        store = await sr.SqliteSandboxInstanceStore.open(str(Path(scratch) / "keys.db"))
        try:
            await _run_key_identity(store)
        finally:
            await store.close()


async def test_key_identity_in_the_postgres_store() -> None:
    url = pg_url()
    schema = fresh_schema("py_keys")
    store = await sr.PostgresSandboxInstanceStore.connect(url, schema=schema, max_connections=2)
    try:
        await _run_key_identity(store)
    finally:
        await store.close()
        drop_schema(url, schema)
