"""The native durable stores through the binding: the shared conformance
cases (tests/conformance) on the in-memory-with-ledger, SQLite and
PostgreSQL stores, option checking, and reclaiming through them."""

from __future__ import annotations

import asyncio
import inspect
import json
import pickle
import re
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

import pytest
from hosts import instance, run_record
from services import drop_schema, fresh_schema, pg_url

import sandbox_reclaim as sr

CONFORMANCE = Path(__file__).resolve().parents[1] / "conformance"
BACKENDS = ("memory", "sqlite", "postgres")


def _expand(value: Any) -> Any:
    """Replaces every ``{"$repeat": text, "times": n}`` with the repeated text."""
    if isinstance(value, dict):
        if "$repeat" in value:
            return value["$repeat"] * value["times"]
        return {key: _expand(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_expand(item) for item in value]
    return value


def load_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for file in sorted(CONFORMANCE.glob("*.json")):
        cases.extend(_expand(case) for case in json.loads(file.read_text())["cases"])
    assert len(cases) >= 30, f"expected the full case list, found {len(cases)}"
    return cases


CASES = load_cases()


async def settle(value: Any) -> Any:
    """Every store method is awaitable; a plain value (a sync host store) is taken as is."""
    return await value if inspect.isawaitable(value) else value


@asynccontextmanager
async def fresh_store(backend: str, tmp_path: Path) -> AsyncIterator[Any]:
    """A new, empty store of ``backend`` (a new file, a new schema)."""
    if backend == "memory":
        yield sr.InMemorySandboxInstanceStore.with_ledger()
    elif backend == "sqlite":
        sqlite = await sr.SqliteSandboxInstanceStore.open(tmp_path / f"{fresh_schema('store')}.db")
        try:
            yield sqlite
        finally:
            await sqlite.close()
    else:
        url, schema = pg_url(), fresh_schema()
        postgres = await sr.PostgresSandboxInstanceStore.connect(url, schema=schema, max_connections=2)
        try:
            yield postgres
        finally:
            await postgres.close()
            drop_schema(url, schema)


def named_entry(entry: dict[str, Any]) -> sr.LeakEntry:
    """The entry a step names by (provider, providerSandboxId); the rest does not identify it."""
    return sr.LeakEntry(entry.get("key", ""), entry["provider"], entry["providerSandboxId"], "", "", 0, 0)


def entries(found: list[sr.LeakEntry]) -> list[dict[str, Any]]:
    for entry in found:
        assert type(entry) is sr.LeakEntry
    return [entry.to_dict() for entry in found]


def snake(field: str) -> str:
    return re.sub(r"[A-Z]", lambda upper: "_" + upper.group(0).lower(), field)


async def upsert_step(store: Any, step: dict[str, Any]) -> None:
    expected = step.get("expectError")
    try:
        # A value SandboxInstanceRecord refuses never reaches the store: that
        # counts as refused too, as long as the error names the field.
        await settle(store.upsert(sr.SandboxInstanceRecord.from_dict(step["record"])))
    except (TypeError, ValueError) as error:
        assert expected is not None, f"upsert refused a valid record: {error}"
        field = expected["field"]
        assert field in str(error) or snake(field) in str(error), f"error does not name `{field}`: {error}"
        return
    assert expected is None, f"upsert accepted a record it must refuse ({expected})"


async def run_step(store: Any, step: dict[str, Any]) -> None:
    op = step["op"]
    if op == "together":
        # Issued in order (tasks start in creation order), none awaited before the next is issued.
        await asyncio.gather(*(run_step(store, inner) for inner in step["steps"]))
    elif op == "get":
        found = await settle(store.get(step["key"]))
        assert found is None or type(found) is sr.SandboxInstanceRecord
        assert (None if found is None else found.to_dict()) == step["expect"]
    elif op == "upsert":
        await upsert_step(store, step)
    elif op == "delete":
        assert await settle(store.delete(step["key"])) is None
    elif op == "deleteRecordingLeak":
        await settle(store.delete_recording_leak(step["key"], sr.NewLeak.from_dict(step["leak"])))
    elif op == "listLeaks":
        assert entries(await settle(store.list_leaks(step["provider"]))) == step["expect"]
    elif op == "countLeaks":
        assert await settle(store.count_leaks(step["provider"])) == step["expect"]
    elif op == "claimLeaks":
        claimed = await settle(store.claim_leaks(step["provider"], step["limit"], step["leaseMs"] / 1000))
        # Each claim's generation is the store's own: present, and otherwise as expected.
        assert all(isinstance(entry.claim, int) for entry in claimed), claimed
        assert [{k: v for k, v in entry.items() if k != "claim"} for entry in entries(claimed)] == step["expect"]
    elif op == "resolveLeak":
        await settle(store.resolve_leak(named_entry(step["entry"])))
    elif op == "recordRetryFailure":
        await settle(store.record_retry_failure(named_entry(step["entry"]), step["message"], step["failedAt"]))
    else:
        raise AssertionError(f"unknown op {op}")


@pytest.mark.parametrize("backend", BACKENDS)
async def test_store_conformance(backend: str, tmp_path: Path) -> None:
    failures: list[str] = []
    for case in CASES:
        async with fresh_store(backend, tmp_path) as store:
            for index, step in enumerate(case["steps"]):
                try:
                    await run_step(store, step)
                except AssertionError as problem:
                    failures.append(f"{backend} / {case['name']} / step {index} ({step['op']}): {str(problem)[:300]}")
                    break
    assert not failures, f"{len(failures)} of {len(CASES)} cases failed:\n" + "\n".join(failures)


# ---------------------------------------------------------------- options


async def test_sqlite_options_are_checked_before_opening(tmp_path: Path) -> None:
    path = tmp_path / "never.db"
    with pytest.raises(TypeError, match="busy_timeout"):
        await sr.SqliteSandboxInstanceStore.open(path, busy_timeout="5")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="busy_timeout"):
        await sr.SqliteSandboxInstanceStore.open(path, busy_timeout=-1.0)
    with pytest.raises(ValueError, match="max_connections"):
        await sr.SqliteSandboxInstanceStore.open(path, max_connections=0)
    with pytest.raises(TypeError, match="path"):
        await sr.SqliteSandboxInstanceStore.open(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="path"):
        await sr.SqliteSandboxInstanceStore.open(":memory:")
    assert not path.exists(), "a refused option must not create the file"


async def test_postgres_options_name_the_snake_case_field() -> None:
    url = "postgres://nobody@127.0.0.1:1/none"  # never reached: options are refused first
    with pytest.raises(ValueError, match="`instances_table`"):
        await sr.PostgresSandboxInstanceStore.connect(url, instances_table="bad name")
    with pytest.raises(ValueError, match="`schema`"):
        await sr.PostgresSandboxInstanceStore.connect(url, schema='x"; DROP')
    with pytest.raises(ValueError, match="`instances_table`"):
        await sr.PostgresSandboxInstanceStore.connect(url, instances_table="t", leaks_table="t")
    with pytest.raises(ValueError, match="max_connections"):
        await sr.PostgresSandboxInstanceStore.connect(url, max_connections=0)
    with pytest.raises(TypeError, match="schema"):
        await sr.PostgresSandboxInstanceStore.connect(url, schema=None)  # type: ignore[arg-type]


async def test_postgres_connect_failure_is_a_store_error() -> None:
    missing = pg_url().rsplit("/", 1)[0] + "/" + fresh_schema("no_such_database")
    with pytest.raises(sr.SandboxStoreError, match="could not open"):
        await sr.PostgresSandboxInstanceStore.connect(missing)


async def test_closed_store_raises_store_error(tmp_path: Path) -> None:
    store = await sr.SqliteSandboxInstanceStore.open(tmp_path / "closed.db")
    await store.close()
    with pytest.raises(sr.SandboxStoreError, match="closed") as raised:
        await store.get("k")
    assert type(raised.value) is sr.SandboxStoreError, "a failed call is not an open failure"


async def test_unopenable_sqlite_file_is_a_store_open_error(tmp_path: Path) -> None:
    with pytest.raises(sr.SandboxStoreOpenError, match="could not open"):
        await sr.SqliteSandboxInstanceStore.open(tmp_path / "no-such-directory" / "store.db")


# ---------------------------------------------------------------- files that are not ours


def sqlite_file(path: Path, sql: str) -> bytes:
    """Creates ``path`` with ``sql`` as another program would (rollback
    journal) and returns its bytes."""
    with closing(sqlite3.connect(path)) as database:
        database.executescript(sql)
    return path.read_bytes()


def journal_mode(path: Path) -> str:
    with closing(sqlite3.connect(path)) as database:
        mode: str = database.execute("PRAGMA journal_mode").fetchone()[0]
    return mode


def tables(path: Path) -> list[str]:
    with closing(sqlite3.connect(path)) as database:
        rows = database.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()
    return [name for (name,) in rows]


def assert_unchanged(path: Path, before: bytes, table_names: list[str]) -> None:
    assert path.read_bytes() == before, "not a byte of the file changed"
    assert before[18:20] == b"\x01\x01", "header bytes 18-19 still say rollback journal, not WAL"
    for side in ("-wal", "-shm", "-journal"):
        assert not Path(f"{path}{side}").exists(), f"no {side} file"
    assert journal_mode(path) == "delete"
    assert tables(path) == table_names, "no table was added"


@pytest.mark.parametrize(
    ("sql", "named", "table_names"),
    [
        (
            "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada');",
            "users",
            ["users"],
        ),
        ("CREATE TABLE sandbox_instances (id INTEGER PRIMARY KEY, blob BLOB);", "`sandbox_instances`", ["sandbox_instances"]),
    ],
    ids=["another-application", "misshapen-instances-table"],
)
async def test_sqlite_file_not_ours_is_refused_unchanged(
    tmp_path: Path, sql: str, named: str, table_names: list[str]
) -> None:
    path = tmp_path / "app.db"
    before = sqlite_file(path, sql)
    with pytest.raises(sr.SandboxStoreOpenError) as raised:
        await sr.SqliteSandboxInstanceStore.open(path)
    assert type(raised.value) is sr.SandboxStoreOpenError
    assert isinstance(raised.value, sr.SandboxStoreError)
    message = str(raised.value)
    assert str(path) in message and named in message, message
    assert_unchanged(path, before, table_names)


async def test_newer_schema_raises_schema_too_new_before_any_write(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    async with await sr.SqliteSandboxInstanceStore.open(path):
        pass
    with closing(sqlite3.connect(path)) as database, database:
        database.execute("INSERT INTO sandbox_reclaim_schema_version (version, applied_at) VALUES (99, 0)")
    before = path.read_bytes()
    with pytest.raises(sr.SchemaTooNewError, match="version 99") as raised:
        await sr.SqliteSandboxInstanceStore.open(path)
    error = raised.value
    assert isinstance(error, sr.SandboxStoreOpenError) and isinstance(error, sr.SandboxStoreError)
    assert (error.found, error.supported) == (99, 5)
    assert path.read_bytes() == before, "not a byte of the file changed"
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy), copy.found, copy.supported) == (sr.SchemaTooNewError, str(error), 99, 5)


def sql_in_another_process(path: Path, script: str) -> list[list[Any]]:
    """Runs ``script`` (statements separated by ``;``, the last one's rows
    answered) on ``path`` with Python's sqlite3 in a child process. Not in
    this one: the store's SQLite and Python's are two libraries here, and
    POSIX locks do not tell two libraries of one process apart (closing one's
    file releases the other's locks), so the two would read each other's
    pages mid-write ("file is not a database", "disk I/O error")."""
    program = (
        "import json, sqlite3, sys\n"
        "database = sqlite3.connect(sys.argv[1])\n"
        "rows = []\n"
        "with database:\n"
        "    for statement in sys.argv[2].split(';'):\n"
        "        rows = database.execute(statement).fetchall()\n"
        "database.close()\n"
        "print(json.dumps(rows))\n"
    )
    ran = subprocess.run([sys.executable, "-c", program, str(path), script], capture_output=True, text=True, check=True)
    rows: list[list[Any]] = json.loads(ran.stdout)
    return rows


async def test_a_version_2_file_migrates_to_3_and_registers_the_records_it_holds(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    async with await sr.SqliteSandboxInstanceStore.open(path) as store:
        await store.upsert(sr.SandboxInstanceRecord("k-old", "docker", "c-old", "t", 100))
    # Back to what version 2 left: no registry, no triggers, no claim column, none of version 5's
    # indexes, no later version rows.
    sql_in_another_process(
        path,
        "DROP TRIGGER sandbox_registry_on_insert; DROP TRIGGER sandbox_registry_on_update;"
        " DROP TRIGGER sandbox_registry_on_delete; DROP TRIGGER sandbox_registry_on_leak;"
        " DROP TABLE sandbox_registry; DROP TABLE sandbox_marks; DROP INDEX sandbox_instances_by_sandbox;"
        " DROP INDEX sandbox_audit_by_sandbox; DROP INDEX sandbox_audit_by_provider_at; DROP INDEX sandbox_leaks_due;"
        " ALTER TABLE sandbox_leaks DROP COLUMN claim;"
        " DELETE FROM sandbox_reclaim_schema_version WHERE version >= 3",
    )
    registry = "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'sandbox_registry'"
    assert sql_in_another_process(path, registry) == []
    async with await sr.SqliteSandboxInstanceStore.open(path) as store:
        rows = sql_in_another_process(path, "SELECT provider, provider_sandbox_id, sandbox_key, last_seen FROM sandbox_registry")
        assert rows == [["docker", "c-old", "k-old", 100]], "the migration registers what the records name"
        await store.delete("k-old")
        assert await store.registered_sandboxes("docker", 0) == ["c-old"], "kept after its record is deleted"
    assert sql_in_another_process(path, registry) == [["sandbox_registry"]]
    versions = sql_in_another_process(path, "SELECT version FROM sandbox_reclaim_schema_version ORDER BY version")
    assert versions == [[1], [2], [3], [4], [5]]


# ---------------------------------------------------------------- numbers out of range

OUT_OF_COUNT_RANGE = (0, -1, 2**32, 2**40, 2**70, 10**400)
NOT_INTS = ("4", 4.0, True, None)


@pytest.mark.parametrize("value", OUT_OF_COUNT_RANGE)
async def test_max_connections_out_of_range_states_the_range(tmp_path: Path, value: int) -> None:
    path = tmp_path / "never.db"
    expected = r"`max_connections` must be a whole number between 1 and 4294967295"
    with pytest.raises(ValueError, match=expected):
        await sr.SqliteSandboxInstanceStore.open(path, max_connections=value)
    with pytest.raises(ValueError, match=expected):
        await sr.PostgresSandboxInstanceStore.connect("postgres://nobody@127.0.0.1:1/none", max_connections=value)
    assert not path.exists(), "a refused option must not create the file"


@pytest.mark.parametrize("value", NOT_INTS)
async def test_max_connections_of_another_type_is_a_type_error(tmp_path: Path, value: Any) -> None:
    with pytest.raises(TypeError, match="`max_connections` must be an int"):
        await sr.SqliteSandboxInstanceStore.open(tmp_path / "never.db", max_connections=value)
    with pytest.raises(TypeError, match="`max_connections` must be an int"):
        await sr.PostgresSandboxInstanceStore.connect("postgres://nobody@127.0.0.1:1/none", max_connections=value)


@pytest.mark.parametrize("value", (-1, -0.5, 2_147_484.0, 2**70, 10**400, float("inf"), float("nan")))
async def test_busy_timeout_out_of_range_is_a_value_error(tmp_path: Path, value: float) -> None:
    path = tmp_path / "never.db"
    # SQLite waits at most an int of milliseconds (about 24.8 days).
    with pytest.raises(ValueError, match=r"`busy_timeout` must be a number of seconds between 0 and 2147483\.647"):
        await sr.SqliteSandboxInstanceStore.open(path, busy_timeout=value)
    assert not path.exists(), "a refused option must not create the file"


@asynccontextmanager
async def store_with_one_leak(tmp_path: Path) -> AsyncIterator[tuple[sr.SqliteSandboxInstanceStore, sr.LeakEntry]]:
    async with await sr.SqliteSandboxInstanceStore.open(tmp_path / "ledger.db") as store:
        await store.delete_recording_leak("k", sr.NewLeak("k", "docker", "ctr", "run", "boom", 5))
        [entry] = await store.list_leaks()
        yield store, entry
        assert await store.list_leaks() == [entry], "no refused call claimed or bumped the entry"


@pytest.mark.parametrize("limit", (-1, 2**32, 2**70, 10**400))
async def test_claim_leaks_limit_out_of_range_is_a_value_error(tmp_path: Path, limit: int) -> None:
    async with store_with_one_leak(tmp_path) as (store, _):
        with pytest.raises(ValueError, match=r"`limit` must be a whole number between 0 and 4294967295"):
            await store.claim_leaks("docker", limit, 0)


@pytest.mark.parametrize("limit", ("1", 1.0, True, None))
async def test_claim_leaks_limit_of_another_type_is_a_type_error(tmp_path: Path, limit: Any) -> None:
    async with store_with_one_leak(tmp_path) as (store, _):
        with pytest.raises(TypeError, match="`limit` must be an int"):
            await store.claim_leaks("docker", limit, 0)


@pytest.mark.parametrize("lease", (-1, 2**70, 10**400, float("inf"), float("nan")))
async def test_claim_leaks_lease_out_of_range_is_a_value_error(tmp_path: Path, lease: float) -> None:
    async with store_with_one_leak(tmp_path) as (store, _):
        with pytest.raises(ValueError, match="`lease` must be a number of seconds between 0 and"):
            await store.claim_leaks("docker", 1, lease)


@pytest.mark.parametrize("failed_at", (-1, 2**53, 2**64, 2**70, 10**400))
async def test_record_retry_failure_failed_at_out_of_range_is_a_value_error(tmp_path: Path, failed_at: int) -> None:
    async with store_with_one_leak(tmp_path) as (store, entry):
        with pytest.raises(ValueError, match=r"`failed_at` must be a whole number between 0 and 9007199254740991"):
            await store.record_retry_failure(entry, "again", failed_at)


@pytest.mark.parametrize("failed_at", (1.5, "6", True))
async def test_record_retry_failure_failed_at_of_another_type_is_a_type_error(tmp_path: Path, failed_at: Any) -> None:
    async with store_with_one_leak(tmp_path) as (store, entry):
        with pytest.raises(TypeError, match="`failed_at` must be an int"):
            await store.record_retry_failure(entry, "again", failed_at)


@asynccontextmanager
async def ledger_store(kind: str, tmp_path: Path) -> AsyncIterator[Any]:
    """An in-memory or SQLite ledger store holding one leak entry."""
    if kind == "memory":
        store: Any = sr.InMemorySandboxInstanceStore.with_ledger()
        await store.delete_recording_leak("k", sr.NewLeak("k", "docker", "ctr", "run", "boom", 5))
        yield store
        return
    async with await sr.SqliteSandboxInstanceStore.open(tmp_path / "ranges.db") as sqlite:
        await sqlite.delete_recording_leak("k", sr.NewLeak("k", "docker", "ctr", "run", "boom", 5))
        yield sqlite


@pytest.mark.parametrize("kind", ("memory", "sqlite"))
async def test_the_core_checks_every_number_a_store_method_takes(tmp_path: Path, kind: str) -> None:
    """The core (proto/src/options/arguments.rs) checks limits, leases and times: a
    wrong type is a TypeError, a value out of range a ValueError, each naming
    the argument as Python spells it, before anything is claimed or written."""
    async with ledger_store(kind, tmp_path) as store:
        [entry] = await store.list_leaks()
        limit_range = r"^`limit` must be a whole number between 0 and 4294967295, got "
        for limit in (-1, 2**32, 2**70):
            with pytest.raises(ValueError, match=limit_range + str(limit) + "$"):
                await store.claim_leaks("docker", limit, 0)
            with pytest.raises(ValueError, match=limit_range):
                await store.list_stale(0, limit)
            with pytest.raises(ValueError, match=limit_range):
                await store.due_leaks("docker", limit, None, 0)
            with pytest.raises(ValueError, match=limit_range):
                await store.list_audit(limit=limit)
        with pytest.raises(ValueError, match=r"got an int of 1329 bits$"):
            await store.claim_leaks("docker", 10**400, 0)
        for wrong_limit in (1.0, True, "1"):
            with pytest.raises(TypeError, match=r"^`limit` must be an int, got (float|bool|str)$"):
                await store.list_stale(0, wrong_limit)
        for lease in (-1, -0.5, 2**70, float("inf"), float("nan")):
            with pytest.raises(ValueError, match=r"^`lease` must be a number of seconds between 0 and 9007199254740\.99, got "):
                await store.claim_leaks("docker", 1, lease)
        for wrong_lease in ("1", None, True):
            with pytest.raises(TypeError, match=r"^`lease` must be a number of seconds, got (str|NoneType|bool)$"):
                await store.claim_leaks("docker", 1, wrong_lease)
        with pytest.raises(ValueError, match=r"^`lease_ms` must be a whole number between 0 and 9007199254740991, got -1$"):
            await store.claim_sweep("docker", "h", -1, 0)
        with pytest.raises(TypeError, match=r"^`lease_ms` must be an int, got float$"):
            await store.due_leaks("docker", 1, 1.5, 0)
        with pytest.raises(ValueError, match=r"^`now` must be a whole number between 0 and 9007199254740991, got 9007199254740992$"):
            await store.claim_sweep("docker", "h", 1, 2**53)
        with pytest.raises(ValueError, match=r"^`next_attempt_at` must be a whole number"):
            await store.defer_leak(entry, "again", 6, -1)
        with pytest.raises(TypeError, match=r"^`destroyed_since` must be an int, got str$"):
            await store.sandbox_references("docker", "0")
        with pytest.raises(ValueError, match=r"^`since` must be a whole number"):
            await store.list_audit(since=-1)
        # None means absent where the signature says so; the edges of each range are taken.
        assert await store.due_leaks("docker", 0, None, 0) == []
        assert await store.list_audit(since=None, limit=None) == []
        assert await store.list_stale(2**53 - 1, 2**32 - 1) == []
        assert await store.claim_leaks("docker", 0, 0.0) == []
        assert await store.list_leaks() == [entry], "no refused call claimed or bumped the entry"


def test_store_cannot_be_built_without_open() -> None:
    with pytest.raises(TypeError, match="open"):
        sr.SqliteSandboxInstanceStore(object())  # type: ignore[arg-type]


# ---------------------------------------------------------------- reclaim with a durable store


class FlakyProvider:
    """A Python provider whose destroy fails until ``healed``."""

    name = "docker"

    def __init__(self) -> None:
        self.healed = False
        self.destroyed: list[str] = []

    async def destroy(self, sandbox_id: str) -> None:
        await asyncio.sleep(0)
        if not self.healed:
            raise RuntimeError(f"engine down for {sandbox_id}")
        self.destroyed.append(sandbox_id)


StoreFactory = Callable[[Path], Any]


@pytest.mark.parametrize("backend", ("sqlite", "postgres"))
async def test_failed_destroy_is_recorded_then_retried(backend: str, tmp_path: Path) -> None:
    async with fresh_store(backend, tmp_path) as store:
        provider = FlakyProvider()
        for index in range(3):
            await store.upsert(instance(key=f"k-{index}", sandbox_id=f"ctr-{index}"))

        outcome = await sr.reclaim_sandbox(run_record("k-0", "run-0"), provider=provider, instances=store)
        assert outcome is sr.ReclaimOutcome.DESTROY_FAILED
        reclaim = sr.sandbox_reclaimer(provider=provider, instances=store)
        with pytest.raises(sr.SandboxReclaimFailedError):
            await reclaim(run_record("k-1", "run-1"))
        assert await store.get("k-0") is None and await store.get("k-1") is None, "records deleted anyway"
        assert await store.get("k-2") is not None

        leaks = await sr.list_leaks(store)
        assert [(leak.key, leak.provider_sandbox_id, leak.run_id, leak.attempts) for leak in leaks] == [
            ("k-0", "ctr-0", "run-0", 1),
            ("k-1", "ctr-1", "run-1", 1),
        ]
        assert leaks[0].last_error == "engine down for ctr-0"
        assert await store.count_leaks("docker") == 2 and await store.count_leaks("other") == 0

        summary = await sr.retry_leaks(provider=provider, instances=store)
        assert summary == sr.RetrySummary(retried=2, destroyed=0, still_failing=2)
        assert [leak.attempts for leak in await store.list_leaks()] == [2, 2]

        provider.healed = True
        summary = await sr.retry_leaks(provider=provider, instances=store, limit=1)
        assert summary == sr.RetrySummary(retried=1, destroyed=1, still_failing=0)
        summary = await sr.retry_leaks(provider=provider, instances=store)
        assert summary == sr.RetrySummary(retried=1, destroyed=1, still_failing=0)
        assert provider.destroyed == ["ctr-0", "ctr-1"]
        assert await store.list_leaks() == []
        assert await sr.retry_leaks(provider=provider, instances=store) == sr.RetrySummary(0, 0, 0)

        # The untouched record still reclaims normally.
        outcome = await sr.reclaim_sandbox(run_record("k-2", "run-2"), provider=provider, instances=store)
        assert outcome is sr.ReclaimOutcome.DESTROYED
        assert await store.get("k-2") is None


async def test_retry_leaks_with_in_memory_ledger_and_sync_provider() -> None:
    store = sr.InMemorySandboxInstanceStore.with_ledger()
    await store.upsert(instance())

    class Broken:
        name = "docker"

        def destroy(self, sandbox_id: str) -> None:
            raise OSError("still down")

    assert await sr.reclaim_sandbox(run_record(), provider=Broken(), instances=store) is sr.ReclaimOutcome.DESTROY_FAILED
    assert await sr.retry_leaks(provider=Broken(), instances=store) == sr.RetrySummary(1, 0, 1)
    [leak] = await store.list_leaks()
    assert (leak.attempts, leak.last_error) == (2, "still down")


async def test_retry_leaks_checks_its_arguments(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="instances"):
        await sr.retry_leaks(provider=FlakyProvider(), instances=sr.InMemorySandboxInstanceStore())
    store = sr.InMemorySandboxInstanceStore.with_ledger()
    with pytest.raises(TypeError, match="limit"):
        await sr.retry_leaks(provider=FlakyProvider(), instances=store, limit="3")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lease"):
        await sr.retry_leaks(provider=FlakyProvider(), instances=store, lease=float("nan"))
    with pytest.raises(TypeError, match="provider.name"):
        await sr.retry_leaks(provider=object(), instances=store)  # type: ignore[arg-type]


async def test_sqlite_store_is_an_async_context_manager(tmp_path: Path) -> None:
    async with await sr.SqliteSandboxInstanceStore.open(tmp_path / "ctx.db") as store:
        await store.upsert(instance())
    async with await sr.SqliteSandboxInstanceStore.open(tmp_path / "ctx.db") as reopened:
        found = await reopened.get(instance().key)
    assert found == instance()


class _AuditedSqlite(sr.SqliteSandboxInstanceStore):
    """A user's subclass that overrides what a reclaim calls."""

    seen: list[str] = []

    async def get(self, key: str) -> sr.SandboxInstanceRecord | None:
        self.seen.append(f"get {key}")
        return await super().get(key)

    async def delete(self, key: str) -> None:
        self.seen.append(f"delete {key}")
        await super().delete(key)


async def test_a_subclass_of_a_sql_store_is_called_through_its_own_methods(tmp_path: Path) -> None:
    # A flow calls a store's own methods: a subclass's overrides run.
    store = await _AuditedSqlite.open(tmp_path / "audited.db")
    plain = await sr.SqliteSandboxInstanceStore.open(tmp_path / "plain.db")
    provider = _Destroys()
    for each in (store, plain):
        await each.upsert(instance("k"))
    assert await sr.reclaim_sandbox(run_record("k"), provider=provider, instances=store) is sr.ReclaimOutcome.DESTROYED
    report = await sr.reclaim_all([run_record("k")], provider=provider, instances=plain)
    assert report.counts.destroyed == 1 and await plain.get("k") is None
    assert _AuditedSqlite.seen == ["get k", "delete k"]
    assert provider.destroyed == ["ctr-1", "ctr-1"]
    await store.close()
    await plain.close()


class _Destroys:
    name = "docker"

    def __init__(self) -> None:
        self.destroyed: list[str] = []

    async def destroy(self, sandbox_id: str) -> None:
        self.destroyed.append(sandbox_id)


async def test_flows_call_a_sql_store_natively_but_keep_a_subclass_override(tmp_path: Path) -> None:
    from sandbox_reclaim._stores import native_method

    provider = FlakyProvider()
    provider.healed = True
    async with await sr.SqliteSandboxInstanceStore.open(str(tmp_path / "plain.sqlite")) as store:
        # A store's own pass-through method: the flow calls the native one.
        assert native_method(store.get) is not store.get
        assert native_method(store.expire_idle) == store.expire_idle, "a method that checks first stays Python"
        for index in range(3):
            await store.upsert(instance(key=f"k-{index}", sandbox_id=f"ctr-{index}"))
        report = await sr.reclaim_all([run_record(f"k-{index}", f"run-{index}") for index in range(3)], provider=provider, instances=store)
        assert [line.outcome for line in report.records] == ["destroyed"] * 3
        assert [await store.get(f"k-{index}") for index in range(3)] == [None] * 3

    counting = await _AuditedSqlite.open(str(tmp_path / "counting.sqlite"))
    assert isinstance(counting, _AuditedSqlite), "open() builds the subclass"
    counting.seen = []  # its own list, not the class's
    try:
        assert native_method(counting.get) == counting.get, "an override is the subclass's own"
        await counting.upsert(instance(key="k-9", sandbox_id="ctr-9"))
        assert await sr.reclaim_sandbox(run_record("k-9", "run-9"), provider=provider, instances=counting) is sr.ReclaimOutcome.DESTROYED
        report = await sr.reclaim_all([run_record("k-9", "run-10")], provider=provider, instances=counting)
        assert counting.seen == ["get k-9", "delete k-9", "get k-9"], "every call went through the override"
        assert report.records[0].outcome == "not-found"
    finally:
        await counting.close()
