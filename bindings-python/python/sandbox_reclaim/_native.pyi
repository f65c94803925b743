"""Type stubs of the native module (Rust, pyo3). Internal: use the package API."""

import builtins
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from typing import Any

from ._records import AuditEntry, DueLeak, LeakEntry, NewLeak, SandboxInstanceRecord

def reclaim_failed_message(run_id: str, sandbox_key: str | None = None) -> str:
    """The message of SandboxReclaimFailedError, built by the core."""

def _bind_record_types(
    instance: type[SandboxInstanceRecord],
    leak_entry: type[LeakEntry],
    due_leak: type[DueLeak],
    audit_entry: type[AuditEntry],
    /,
) -> None: ...
def destroy_timeout_message(provider_sandbox_id: str, timeout_ms: int, /) -> str:
    """The message of SandboxDestroyTimeoutError, built by the core."""

def protocol() -> dict[str, Any]:
    """The batch layout (proto/src/wire.rs) and the names the driver checks against."""

Batch = tuple[Any, ...]

def start_reclaim(
    reclaimer: bool,
    run_id: str,
    sandbox_key: str | None,
    provider_name: str,
    store_has_ledger: bool,
    destroy_timeout_ms: int | None,
    now: int,
    /,
) -> Batch: ...
def reclaim_deadline(options_json: str, /) -> int | None:
    """A reclaim's destroy_timeout (seconds, as plain JSON) checked by the core, in milliseconds."""

def respell_options(flow: str, plan_json: str, /) -> str:
    """``flow``'s options as the command's plan names them (camelCase, ms),
    respelled as keyword arguments (snake_case, seconds), as JSON."""

def option_names(flow: str, /) -> list[str]:
    """The option arguments ``flow`` (reclaimAll, reconcile, retryLeaks) hands to the core."""

def start_retry(options_json: str, provider_name: str, now: int, /) -> Batch: ...
def start_reclaim_all(
    options_json: str,
    records: list[tuple[str, str | None]],
    providers: list[str],
    store_has_ledger: bool,
    progress: bool,
    stopped: bool,
    now: int,
    /,
) -> Batch: ...
def start_reconcile(
    options_json: str,
    providers: list[tuple[str, bool, str | None]],
    host_name: str,
    progress: bool,
    stopped: bool,
    registry: bool,
    prune: bool,
    now: int,
    /,
) -> Batch: ...
def stop(run: int, now: int, /) -> Batch: ...
def complete(run: int, id: int, kind: int, a: str | None, b: str | None, now: int, /) -> Batch: ...
def complete_leaks(run: int, id: int, sandbox_ids: list[str], now: int, /) -> Batch: ...
def timeout(run: int, now: int, /) -> Batch: ...
def abandon(run: int, /) -> None: ...
def bind_inline_helpers(error_message: Callable[[BaseException], str], instance_fields: Callable[[object], tuple[str, str]],
                        record_type: type, coroutine_type: type, /) -> None: ...

class InlineSteps:
    """Awaiting it runs a flow's lone host calls with no deadline natively
    (call, await, answer the machine); answers the first other batch,
    unstarted, or the ending. ``now``: the driver's clock, ``None`` for the wall
    clock; ``logs``: the flow has a logger (without one, log effects are skipped)."""

    def __init__(self, batch: Batch, provided: Mapping[str, Sequence[Any]], store: Mapping[str, Any],
                 values: dict[int, Any], now: Callable[[], int] | None, logs: bool, /) -> None: ...
    def __await__(self) -> Generator[Any, None, Batch]: ...

class InMemorySandboxInstanceStore:
    """The native half of the in-memory store (the core's): synchronous
    methods that ``sandbox_reclaim.InMemorySandboxInstanceStore`` wraps."""

    def __init__(self) -> None: ...
    @staticmethod
    def with_ledger() -> InMemoryLeakLedgerStore:
        """A store that also keeps a leak ledger."""
    def get(self, key: str, /) -> SandboxInstanceRecord | None:
        """The record stored under ``key``, or ``None``."""
    def upsert(self, record: SandboxInstanceRecord, /) -> None:
        """Stores a copy; ``ValueError`` naming the field for a record breaking the store contract."""
    def delete(self, key: str, /) -> None:
        """Deletes the record; a missing key is a no-op."""
    def records(self) -> list[SandboxInstanceRecord]:
        """Every record, sorted by key."""
    def __len__(self) -> int: ...

def _shutdown() -> None:
    """Registered with atexit: native completions stop touching the interpreter."""

def _bind_error_types(
    store: type[Exception],
    provider: type[Exception],
    not_owned: type[Exception],
    store_open: type[Exception],
    schema_too_new: type[Exception],
    /,
) -> None: ...

class InMemoryLeakLedgerStore(InMemorySandboxInstanceStore):
    """An in-memory store with a leak ledger."""

    def __init__(self) -> None: ...
    def delete_recording_leak(self, key: str, leak: NewLeak, /) -> None:
        """Deletes the record and records the leak, in one step."""
    def list_leaks(self, provider: str | None = None) -> list[LeakEntry]:
        """Pending leak entries, oldest first, of one provider or of all."""
    def count_leaks(self, provider: str | None = None) -> int:
        """How many leak entries are pending, of one provider or of all."""
    def claim_leaks(self, provider: str, limit: int, lease: float, /) -> list[LeakEntry]:
        """Claims up to ``limit`` of ``provider``'s entries for ``lease`` seconds."""
    def resolve_leak(self, entry: LeakEntry, /) -> bool:
        """Removes a claimed entry whose sandbox is now destroyed."""
    def record_retry_failure(self, entry: LeakEntry, message: str, failed_at: int, /) -> bool:
        """Bumps a claimed entry's attempts, keeps ``message`` and releases the claim."""
    def list_stale(self, older_than: int, limit: int, /) -> list[SandboxInstanceRecord]: ...
    def expire_idle(self, key: str, updated_at: int, leak: NewLeak, /) -> bool: ...
    def sandbox_references(self, provider: str, destroyed_since: int | None = None, /) -> list[str]: ...
    def registered_sandboxes(self, provider: str, since: int, /) -> list[str]: ...
    def prune(self, provider: str, registry_before: int, audit_before: int, /) -> None: ...
    def record_leak(self, leak: NewLeak, reason: str, next_attempt_at: int, /) -> None: ...
    def due_leaks(self, provider: str, limit: int, lease_ms: int | None, now: int, /) -> list[DueLeak]: ...
    def defer_leak(self, entry: LeakEntry, message: str, failed_at: int, next_attempt_at: int, /) -> bool: ...
    def claim_sweep(self, provider: str, holder: str, lease_ms: int, now: int, /) -> bool: ...
    def release_sweep(self, provider: str, holder: str, /) -> None: ...
    def append_audit(self, entries: list[AuditEntry], /) -> None: ...
    def list_audit(self, since: int | None = None, limit: int | None = None) -> list[AuditEntry]: ...

class SqlStore:
    """A native SQLite or PostgreSQL store handle; every method returns an awaitable."""

    def get(self, key: str, /) -> Awaitable[SandboxInstanceRecord | None]: ...
    def upsert(self, record: SandboxInstanceRecord, /) -> Awaitable[None]: ...
    def delete(self, key: str, /) -> Awaitable[None]: ...
    def delete_recording_leak(self, key: str, leak: NewLeak, /) -> Awaitable[None]: ...
    def list_leaks(self, provider: str | None = None) -> Awaitable[list[LeakEntry]]: ...
    def count_leaks(self, provider: str | None = None) -> Awaitable[int]: ...
    def claim_leaks(self, provider: str, limit: int, lease: float, /) -> Awaitable[list[LeakEntry]]: ...
    def resolve_leak(self, entry: LeakEntry, /) -> Awaitable[bool]: ...
    def record_retry_failure(self, entry: LeakEntry, message: str, failed_at: int, /) -> Awaitable[bool]: ...
    def list_stale(self, older_than: int, limit: int, /) -> Awaitable[list[SandboxInstanceRecord]]: ...
    def expire_idle(self, key: str, updated_at: int, leak: NewLeak, /) -> Awaitable[bool]: ...
    def sandbox_references(self, provider: str, destroyed_since: int | None = None, /) -> Awaitable[list[str]]: ...
    def registered_sandboxes(self, provider: str, since: int, /) -> Awaitable[list[str]]: ...
    def prune(self, provider: str, registry_before: int, audit_before: int, /) -> Awaitable[None]: ...
    def record_leak(self, leak: NewLeak, reason: str, next_attempt_at: int, /) -> Awaitable[None]: ...
    def due_leaks(self, provider: str, limit: int, lease_ms: int | None, now: int, /) -> Awaitable[list[DueLeak]]: ...
    def defer_leak(
        self, entry: LeakEntry, message: str, failed_at: int, next_attempt_at: int, /
    ) -> Awaitable[bool]: ...
    def claim_sweep(self, provider: str, holder: str, lease_ms: int, now: int, /) -> Awaitable[bool]: ...
    def release_sweep(self, provider: str, holder: str, /) -> Awaitable[None]: ...
    def append_audit(self, entries: list[AuditEntry], /) -> Awaitable[None]: ...
    def list_audit(self, since: int | None = None, limit: int | None = None) -> Awaitable[list[AuditEntry]]: ...
    def close(self) -> Awaitable[None]: ...

def check_record_whole(owner: str, field: str, wire: str, value: object, count: bool, /) -> None:
    """Checks a record's whole-number field by the core's rule; raises its refusal."""

def open_sqlite(
    path: str, /, *, busy_timeout: float = ..., max_connections: int = ...
) -> Awaitable[SqlStore]:
    """An option left out takes the core's default (`SqliteOptions::default()`)."""

def connect_postgres(
    url: str,
    /,
    *,
    schema: str = ...,
    instances_table: str = ...,
    leaks_table: str = ...,
    schema_version_table: str = ...,
    max_connections: int = ...,
) -> Awaitable[SqlStore]:
    """An option left out takes the core's default (`PostgresOptions::default()`)."""

HandleTuple = tuple[str, str, int]
ListedTuple = tuple[str, int | None, str | None, str | None]

class ManagedProvider:
    """A native Docker or local provider handle; operations return awaitables."""

    @property
    def name(self) -> str: ...
    @property
    def owner(self) -> str: ...
    def destroy(self, sandbox_id: str, /) -> Awaitable[None]: ...
    def create(self, key: str, labels: dict[str, str] | None = None, /) -> Awaitable[HandleTuple]: ...
    def list(self) -> Awaitable[builtins.list[HandleTuple]]: ...
    def list_sandboxes(self) -> Awaitable[builtins.list[ListedTuple]]: ...
    def exec(self, sandbox_id: str, argv: builtins.list[str], /) -> Awaitable[tuple[str, str, int]]: ...
    def isolation(self) -> str | None: ...

def docker_provider(
    image: str,
    keep_alive: list[str] | None,
    network_mode: str | None,
    cpus: float | None,
    memory_bytes: int | None,
    owner: str | None,
    name: str | None,
    docker_host: str | None,
    /,
) -> ManagedProvider: ...
def local_provider(
    base_dir: str, owner: str | None, keep_alive: list[str] | None, isolation: str | None, name: str | None, /
) -> ManagedProvider: ...

class HostedProvider:
    """A native hosted provider handle (E2B, Daytona, Vercel); operations return awaitables."""

    @property
    def name(self) -> str: ...
    @property
    def owner(self) -> str: ...
    @property
    def api_url(self) -> str: ...
    def destroy(self, sandbox_id: str, /) -> Awaitable[None]: ...
    def list_sandboxes(self) -> Awaitable[list[tuple[str, int | None, str | None, str | None, bool]]]: ...
    def check_access(self) -> Awaitable[None]: ...

def hosted_option_names(vendor: str, /) -> list[str]: ...
def hosted_provider(vendor: str, options_json: str, /) -> HostedProvider: ...
def owner_labels(owner: str, key: str, /) -> dict[str, str]: ...
def host_hosted_providers(plan: str, /) -> list[HostedProvider]: ...
def host_managed_providers(plan: str, /) -> list[ManagedProvider]: ...

# ---- the `sandbox-reclaim` console script (sandbox_reclaim/_cli.py) ----

def run_cli(args: list[str], /) -> int:
    """Runs the command exactly as the binary does (without the GIL) and
    answers its exit code; ``args`` without the program name."""

def host_plan(args: list[str], /) -> str | int:
    """What to run for ``args``: the plan as JSON text, or, when refused, the
    exit code once the refusal is printed as the binary prints it."""

def host_check_module(plan: str, found: str, /) -> int | None:
    """Checks what the script found in the ``--providers`` module (JSON)
    against the plan; ``None`` when the pass may run, else the exit code once
    the refusal is printed."""

def host_emit(plan: str, report: str, pass_number: int | None, /) -> int:
    """Prints the report (camelCase JSON) for the plan as the binary would;
    answers the exit code. ``ValueError`` for a malformed plan or report."""

def host_fail(command: str, json: bool, kind: str, subject: str | None, message: str, /) -> int:
    """Prints a failure met before any pass (``usage`` naming the flag,
    ``unavailable`` naming what, ``failed``) as the binary prints it; answers
    the exit code."""

def host_open(plan: str, /) -> Awaitable[SqlStore | int]:
    """Opens the plan's store and checks ``--docker``/``--local`` as the
    binary does; the native store, or the exit code once the failure is printed."""

class HostLoop:
    """The command's pass loop for ``--providers``: each call answers the next
    step, ``("pass", number | None)``, ``("sleep", until_ms)`` or ``("exit", code)``."""

    def __init__(self, plan: str, /) -> None: ...
    def start(self, now: int, /) -> tuple[str, Any]: ...
    def passed(self, report: str, now: int, /) -> tuple[str, Any]: ...
    def failed(self, kind: str, message: str, now: int, /) -> tuple[str, Any]: ...
    def woke(self, now: int, /) -> tuple[str, Any]: ...
    def signal(self, name: str, /) -> int | None:
        """``None``: stop the pass and wake the sleep; else exit at once with the code."""
