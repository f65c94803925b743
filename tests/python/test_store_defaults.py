"""Issue #16: the SQL stores' options hold no default in Python. An option the
caller leaves out does not cross to the native side at all, which takes the
core's default (``SqliteOptions`` / ``PostgresOptions::default()``, as the
Node binding does); an explicit ``None`` is refused with a ``TypeError``
naming the option."""

from __future__ import annotations

import inspect
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from services import drop_schema, fresh_schema, needs, pg_url

import sandbox_reclaim as sr
from sandbox_reclaim import _native

UNREACHABLE = "postgres://nobody@127.0.0.1:1/none"  # never reached: options are refused first
POSTGRES_OPTIONS = ("schema", "instances_table", "leaks_table", "schema_version_table", "max_connections")


def spy(monkeypatch: pytest.MonkeyPatch, name: str) -> list[dict[str, Any]]:
    """Records the keyword arguments each call of ``_native.<name>`` receives, then calls it."""
    calls: list[dict[str, Any]] = []
    real = getattr(_native, name)

    def recording(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(_native, name, recording)
    return calls


def test_no_store_option_has_a_default_in_python() -> None:
    for factory in (sr.SqliteSandboxInstanceStore.open, sr.PostgresSandboxInstanceStore.connect):
        for parameter in list(inspect.signature(factory).parameters.values())[1:]:
            assert repr(parameter.default) == "<the core's default>", (factory.__name__, parameter.name)
    assert "30 s" in (sr.SqliteSandboxInstanceStore.open.__doc__ or "")
    assert '"sandbox_leaks"' in (sr.PostgresSandboxInstanceStore.connect.__doc__ or "")


async def test_sqlite_options_left_out_take_the_core_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = spy(monkeypatch, "open_sqlite")
    async with await sr.SqliteSandboxInstanceStore.open(tmp_path / "defaults.db") as store:
        assert await store.count_leaks() == 0
    async with await sr.SqliteSandboxInstanceStore.open(tmp_path / "given.db", max_connections=2) as store:
        assert await store.count_leaks() == 0
    assert calls == [{}, {"max_connections": 2}]


async def test_native_open_sqlite_without_options_opens(tmp_path: Path) -> None:
    store = await _native.open_sqlite(str(tmp_path / "native.db"))
    try:
        assert await store.count_leaks(None) == 0
    finally:
        await store.close()


@pytest.mark.parametrize("field", ("busy_timeout", "max_connections"))
async def test_sqlite_option_given_as_none_is_a_type_error(tmp_path: Path, field: str) -> None:
    path = tmp_path / "never.db"
    none: dict[str, Any] = {field: None}
    with pytest.raises(TypeError, match=f"`{field}` must be"):
        await sr.SqliteSandboxInstanceStore.open(path, **none)
    with pytest.raises(TypeError, match=f"`{field}` must be"):
        await _native.open_sqlite(str(path), **none)
    assert not path.exists(), "a refused option must not create the file"


@pytest.mark.parametrize("field", POSTGRES_OPTIONS)
async def test_postgres_option_given_as_none_is_a_type_error(field: str) -> None:
    none: dict[str, Any] = {field: None}
    with pytest.raises(TypeError, match=f"`{field}` must be"):
        await sr.PostgresSandboxInstanceStore.connect(UNREACHABLE, **none)
    with pytest.raises(TypeError, match=f"`{field}` must be"):
        await _native.connect_postgres(UNREACHABLE, **none)


def schema_tables(url: str, schema: str) -> list[str]:
    psql = shutil.which("psql")
    needs("psql (not on PATH)", psql is not None, "it lists the schema's tables (it ships with the PostgreSQL server)")
    assert psql is not None
    query = f"SELECT table_name FROM information_schema.tables WHERE table_schema = '{schema}' ORDER BY 1"
    listed = subprocess.run([psql, url, "-At", "-c", query], check=True, capture_output=True, text=True, timeout=60)
    return listed.stdout.split()


async def test_postgres_options_left_out_take_the_core_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    url, schema = pg_url(), fresh_schema("defaults")
    calls = spy(monkeypatch, "connect_postgres")
    try:
        async with await sr.PostgresSandboxInstanceStore.connect(url, schema=schema) as store:
            assert await store.count_leaks() == 0
        assert calls == [{"schema": schema}]
        tables = schema_tables(url, schema)
        for default in ("sandbox_instances", "sandbox_leaks", "sandbox_reclaim_schema_version"):
            assert default in tables, tables
    finally:
        drop_schema(url, schema)
