"""
The native half of the `sandbox_reclaim` package (Rust, pyo3). Internal:
use the package API. (Its stub, `_native.pyi`, is generated from
`bindings-python/src` by `scripts/gen_native_stub.sh`: do not edit it.)
"""

from _typeshed import SupportsGetItem
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from os import PathLike
from sandbox_reclaim._records import AuditEntry, DueLeak, LeakEntry, NewLeak, SandboxInstanceRecord
from typing import Any, List, SupportsFloat, SupportsIndex, final
from typing_extensions import disjoint_base

__all__ = ["HostLoop", "HostedProvider", "InMemoryLeakLedgerStore", "InMemorySandboxInstanceStore", "InlineSteps", "ManagedProvider", "SqlStore", "_bind_error_types", "_bind_record_types", "_shutdown", "abandon", "bind_inline_helpers", "check_record_whole", "complete", "complete_leaks", "connect_postgres", "creation_labels", "default_store_path", "destroy_timeout_message", "docker_provider", "host_check_module", "host_emit", "host_fail", "host_hosted_providers", "host_managed_providers", "host_open", "host_plan", "hosted_option_names", "hosted_provider", "hosted_vendors", "local_provider", "open_sqlite", "option_names", "owner_labels", "protocol", "reclaim_deadline", "reclaim_failed_message", "respell_options", "run_cli", "scoped_read_methods", "scoped_reads", "start_reclaim", "start_reclaim_all", "start_reconcile", "start_retry", "stop", "timeout", "vendor_owner_labels_json"]

@final
class HostLoop:
    """
    The command's pass loop for `--providers` (`sandbox_reclaim_cli::hosted`):
    `_cli.py` reports what happened and does the step each call answers,
    `("pass", number | None)`, `("sleep", until_ms)` or `("exit", code)`;
    every decision, line and exit code is the command crate's.
    """
    def __new__(cls, plan: str, /) -> HostLoop: ...
    def failed(self, kind: str, message: str, now: SupportsIndex, /) -> tuple[str, Any]:
        """
        The pass raised: ``kind`` ``option`` (a TypeError/ValueError),
        ``store`` (a SandboxStoreError) or ``other``, with its message.
        """
    def passed(self, report: str, now: SupportsIndex, /) -> tuple[str, Any]:
        """
        The pass returned ``report`` (the core's camelCase JSON).
        """
    def signal(self, name: str, /) -> int | None:
        """
        SIGINT/SIGTERM: ``None`` (stop the pass, wake the sleep), or the code to exit with at once.
        """
    def start(self, now: SupportsIndex, /) -> tuple[str, Any]:
        """
        The first step, at ``now`` (epoch ms): ``(step, value)``.
        """
    def woke(self, now: SupportsIndex, /) -> tuple[str, Any]:
        """
        The sleep ended (its time, or a signal).
        """

@final
class HostedProvider:
    """
    A native hosted provider handle (any vendor); operations return
    awaitables. `sandbox_reclaim` wraps it.
    """
    @property
    def api_url(self, /) -> str:
        """
        The API base URL in use.
        """
    @property
    def can_lookup(self, /) -> bool:
        """
        Whether it looks up registered sandboxes by id (a vendor with a get,
        unless the listing takes every sandbox).
        """
    def check_access(self, /) -> Awaitable[None]:
        """
        Awaitable of one small authenticated call; raises naming the variable
        to set when the vendor refuses the credential.
        """
    def destroy(self, sandbox_id: str, /) -> Awaitable[None]:
        """
        Awaitable destroying sandbox `sandbox_id` for good (already gone is success).
        """
    def list_sandboxes(self, /) -> Awaitable[list[tuple[str, int | None, str | None, str | None, bool]]]:
        """
        Awaitable of `[(id, created_at | None, owner | None, key | None, deleting), ...]`:
        every sandbox under the owner, for the orphan sweep.
        """
    def lookup(self, ids: SupportsGetItem[int, str], /) -> Awaitable[list[tuple[str, int | None, str | None, str | None, bool]]]:
        """
        Awaitable of `[(id, created_at | None, owner | None, key | None, deleting), ...]`:
        the sandboxes of `ids` that still exist, read by id.
        """
    @property
    def name(self, /) -> str:
        """
        The provider name instance records carry.
        """
    @property
    def owner(self, /) -> str:
        """
        The owner namespace the listing is filtered by.
        """

@final
class InMemoryLeakLedgerStore(InMemorySandboxInstanceStore):
    """
    An in-memory store that also keeps a leak ledger: a failed destroy's
    record removal and the leak entry happen under one lock.
    """
    def __new__(cls, /) -> InMemoryLeakLedgerStore: ...
    def append_audit(self, entries: SupportsGetItem[int, AuditEntry], /) -> None:
        """
        Appends audit rows (`AuditEntry`s), in order.
        """
    def claim_leaks(self, provider: str, limit: int, lease: float, /) -> list[LeakEntry]:
        """
        Claims up to `limit` of `provider`'s entries for `lease` seconds.
        """
    def claim_sweep(self, provider: str, holder: str, lease_ms: int, now: int, /) -> bool:
        """
        Takes `provider`'s orphan sweep for `holder` until `now + lease_ms`; `False` if another holds it.
        """
    def count_leaks(self, /, provider: str | None = None) -> int:
        """
        How many leak entries are pending, of one provider or all.
        """
    def defer_leak(self, entry: LeakEntry, message: str, failed_at: int, next_attempt_at: int, /) -> bool:
        """
        A claimed entry failed again: attempts + 1, `message` kept, due at `next_attempt_at`.
        """
    def delete_recording_leak(self, key: str, leak: NewLeak, /) -> None:
        """
        Deletes the record `key` and records `leak` (a `NewLeak`) in one step.
        """
    def due_leaks(self, provider: str, limit: int, lease_ms: int | None, now: int, /) -> list[DueLeak]:
        """
        `provider`'s entries due at `now` (`DueLeak`s), claimed for `lease_ms` (`None`: only listed).
        """
    def expire_idle(self, key: str, updated_at: int, leak: NewLeak, /) -> bool:
        """
        Deletes record `key` if its `updated_at` is still `updated_at` and
        records `leak` (reason `idle`, due at once); `False` when it changed.
        """
    def list_audit(self, /, since: int | None = None, limit: int | None = None) -> list[AuditEntry]:
        """
        Audit rows with `at >= since`, oldest first, at most `limit`.
        """
    def list_leaks(self, /, provider: str | None = None) -> list[LeakEntry]:
        """
        Pending leak entries (`LeakEntry`), oldest first, of one provider or all.
        """
    def list_stale(self, older_than: int, limit: int, /) -> list[SandboxInstanceRecord]:
        """
        Records last updated before `older_than`, oldest first, at most `limit`.
        """
    def lookup_candidates(self, provider: str, since: int, limit: int, /) -> list[str]:
        """
        At most `limit` registered ids of `provider` for a lookup by id: last
        written or deleted at or after `since`, named by nothing now, not
        known gone; never checked first, then least recently checked first.
        """
    def lookup_checked(self, provider: str, gone: SupportsGetItem[int, str], checked: SupportsGetItem[int, str], now: int, /) -> None:
        """
        What a lookup learned: `gone` are gone, `checked` were checked at `now` (epoch ms).
        """
    def prune(self, provider: str, registry_before: int, audit_before: int, /) -> None:
        """
        Bounded growth: deletes `provider`'s registry rows last seen before
        `registry_before` and its audit rows from before `audit_before` (epoch ms).
        """
    def record_leak(self, leak: NewLeak, reason: str, next_attempt_at: int, /) -> None:
        """
        Records `leak` with `reason`, due at `next_attempt_at`.
        """
    def record_retry_failure(self, entry: LeakEntry, message: str, failed_at: int, /) -> bool:
        """
        Bumps a claimed entry's attempts, keeps `message` and releases the claim.
        """
    def referenced_among(self, provider: str, ids: SupportsGetItem[int, str], destroyed_since: int, mark: int, /) -> list[str]:
        """
        Those of `ids` a record or a leak entry references now, that an audit
        row says was destroyed (or a leak retry resolved) at or after
        `destroyed_since` (epoch ms), or whose record was deleted after
        `mark`; sorted, each once.
        """
    def registered_among(self, provider: str, ids: SupportsGetItem[int, str], since: int, /) -> list[str]:
        """
        Those of `ids` the registry names (a record of `provider` names it
        now, or one last written or deleted at or after `since` did); sorted.
        """
    def registered_sandboxes(self, provider: str, since: int, /) -> list[str]:
        """
        The registry: every sandbox id of `provider` an instance record named
        whose record still exists or was last written or deleted at or after
        `since` (epoch ms).
        """
    def release_sweep(self, provider: str, holder: str, /) -> None:
        """
        Gives `provider`'s sweep back if `holder` still holds it.
        """
    def resolve_leak(self, entry: LeakEntry, /) -> bool:
        """
        Removes a claimed entry whose sandbox is now destroyed; `False`: its
        claim had passed to another retrier, and nothing was written.
        """
    def sandbox_references(self, provider: str, destroyed_since: int | None = None, /) -> list[str]:
        """
        Every sandbox id of `provider` a record or a leak entry references,
        and (with `destroyed_since`, epoch ms) every one an audit row says
        was destroyed at or after it.
        """
    def sweep_mark(self, provider: str, /) -> int:
        """
        A mark of the store's record deletions, taken before a sweep lists
        (see `referenced_among`): a whole number that never goes down.
        """

@disjoint_base
class InMemorySandboxInstanceStore:
    """
    The native half of the in-memory store (the core's): synchronous methods
    that `sandbox_reclaim.InMemorySandboxInstanceStore` wraps. It copies
    records in and out: mutating nothing a caller holds can change what it stores.
    """
    def __len__(self, /) -> int: ...
    def __new__(cls, /) -> InMemorySandboxInstanceStore:
        """
        A store without a leak ledger, like the reference's.
        """
    def __repr__(self, /) -> str: ...
    def delete(self, key: str, /) -> None:
        """
        Deletes the record under `key`; a missing key is a no-op.
        """
    def get(self, key: str, /) -> SandboxInstanceRecord | None:
        """
        The record stored under `key`, or `None`.
        """
    def records(self, /) -> list[SandboxInstanceRecord]:
        """
        Every record, sorted by key.
        """
    def upsert(self, record: SandboxInstanceRecord, /) -> None:
        """
        Stores a copy of `record`, replacing any under the same key. A record
        breaking the store contract is refused (`ValueError` naming the field)
        before anything is written.
        """
    @staticmethod
    def with_ledger() -> InMemoryLeakLedgerStore:
        """
        A store that also keeps a leak ledger (`InMemoryLeakLedgerStore`).
        """

@final
class InlineSteps:
    """
    The awaitable `_driver.drive` awaits: awaiting it runs a flow's lone host
    calls with no deadline natively (call, await, answer the machine), and
    answers the first batch it cannot run inline (unstarted), or the run's
    ending. `now`: the driver's clock, `None` for the wall clock; `logs`: the
    flow has a logger (without one, its log effects are skipped).
    """
    def __await__(self, /) -> Generator[Any, None, tuple[Any, ...]]: ...
    def __iter__(self, /) -> InlineSteps: ...
    def __new__(cls, batch: tuple[Any, ...], provided: Mapping[str, Sequence[Any]], store: Mapping[str, Any], values: dict[int, Any], now: Callable[[], int] | None, logs: bool, /) -> InlineSteps: ...
    def __next__(self, /) -> Any: ...
    def close(self, /) -> None: ...
    def send(self, /, value: Any) -> Any: ...
    def throw(self, /, *args: "object") -> Any: ...

@final
class ManagedProvider:
    """
    A native Docker or local provider handle; operations return awaitables.
    `sandbox_reclaim` wraps it.
    """
    def create(self, key: str, labels: dict[str, str] | None = None, /) -> Awaitable[tuple[str, str, int]]:
        """
        Awaitable of `(key, id, created_at)` of the sandbox for `key`.
        """
    def destroy(self, sandbox_id: str, /) -> Awaitable[None]:
        """
        Awaitable destroying sandbox `sandbox_id` (already gone is success).
        """
    def exec(self, sandbox_id: str, argv: SupportsGetItem[int, str], /) -> Awaitable[tuple[str, str, int]]:
        """
        Awaitable of `(stdout, stderr, exit_code)` of `argv` run in `sandbox_id`.
        """
    def isolation(self, /) -> str | None:
        """
        The local provider's isolation (`"namespaces"` / `"process-group"`); `None` for Docker.
        """
    def list(self, /) -> Awaitable[List[tuple[str, str, int]]]:
        """
        Awaitable of `[(key, id, created_at), ...]`, oldest first.
        """
    def list_sandboxes(self, /) -> Awaitable[List[tuple[str, int | None, str | None, str | None]]]:
        """
        Awaitable of `[(id, created_at | None, owner | None, key | None), ...]`
        for the orphan sweep, ordered by id: every sandbox of this owner,
        unreadable ones included with their unknown fields `None` (the sweep
        fails closed on them).
        """
    @property
    def name(self, /) -> str:
        """
        The provider name instance records carry.
        """
    @property
    def owner(self, /) -> str:
        """
        The owner namespace its sandboxes carry.
        """

@final
class SqlStore:
    """
    A native SQLite or PostgreSQL store handle; every method returns an
    awaitable. `sandbox_reclaim` wraps it.
    """
    def append_audit(self, entries: SupportsGetItem[int, AuditEntry], /) -> Awaitable[None]:
        """
        Awaitable appending audit rows (`AuditEntry`s), in order.
        """
    def claim_leaks(self, provider: str, limit: int, lease: float, /) -> Awaitable[list[LeakEntry]]:
        """
        Awaitable claiming up to `limit` of `provider`'s entries for `lease` seconds.
        """
    def claim_sweep(self, provider: str, holder: str, lease_ms: int, now: int, /) -> Awaitable[bool]:
        """
        Awaitable of whether `holder` took (or renewed) `provider`'s orphan sweep.
        """
    def close(self, /) -> Awaitable[None]:
        """
        Awaitable closing the pool; later calls fail.
        """
    def count_leaks(self, /, provider: str | None = None) -> Awaitable[int]:
        """
        Awaitable of how many leak entries are pending.
        """
    def defer_leak(self, entry: LeakEntry, message: str, failed_at: int, next_attempt_at: int, /) -> Awaitable[bool]:
        """
        Awaitable deferring a claimed entry that failed again.
        """
    def delete(self, key: str, /) -> Awaitable[None]:
        """
        Awaitable deleting `key` (a missing key is a no-op).
        """
    def delete_recording_leak(self, key: str, leak: NewLeak, /) -> Awaitable[None]:
        """
        Awaitable deleting `key` and recording `leak` in one transaction.
        """
    def due_leaks(self, provider: str, limit: int, lease_ms: int | None, now: int, /) -> Awaitable[list[DueLeak]]:
        """
        Awaitable of `provider`'s due entries (`DueLeak`s), claimed for `lease_ms` (`None`: only listed).
        """
    def expire_idle(self, key: str, updated_at: int, leak: NewLeak, /) -> Awaitable[bool]:
        """
        Awaitable of whether record `key` (still at `updated_at`) was expired into the ledger.
        """
    def get(self, key: str, /) -> Awaitable[SandboxInstanceRecord | None]:
        """
        Awaitable of the record under `key`, or `None`.
        """
    def list_audit(self, /, since: int | None = None, limit: int | None = None) -> Awaitable[list[AuditEntry]]:
        """
        Awaitable of the audit rows with `at >= since`, oldest first, at most `limit`.
        """
    def list_leaks(self, /, provider: str | None = None) -> Awaitable[list[LeakEntry]]:
        """
        Awaitable of the pending leak entries, oldest first.
        """
    def list_stale(self, older_than: int, limit: int, /) -> Awaitable[list[SandboxInstanceRecord]]:
        """
        Awaitable of the records last updated before `older_than`, oldest first, at most `limit`.
        """
    def lookup_candidates(self, provider: str, since: int, limit: int, /) -> Awaitable[list[str]]:
        """
        Awaitable of at most `limit` registered ids of `provider` for a lookup
        by id: last written or deleted at or after `since`, named by nothing
        now, not known gone; never checked first, then least recently checked.
        """
    def lookup_checked(self, provider: str, gone: SupportsGetItem[int, str], checked: SupportsGetItem[int, str], now: int, /) -> Awaitable[None]:
        """
        Awaitable writing what a lookup learned: `gone` are gone, `checked`
        were checked at `now` (epoch ms).
        """
    def prune(self, provider: str, registry_before: int, audit_before: int, /) -> Awaitable[None]:
        """
        Awaitable of bounded growth: deletes `provider`'s registry rows last
        seen before `registry_before` and its audit rows from before
        `audit_before` (epoch ms).
        """
    def record_leak(self, leak: NewLeak, reason: str, next_attempt_at: int, /) -> Awaitable[None]:
        """
        Awaitable recording `leak` with `reason`, due at `next_attempt_at`.
        """
    def record_retry_failure(self, entry: LeakEntry, message: str, failed_at: int, /) -> Awaitable[bool]:
        """
        Awaitable bumping a claimed entry's attempts and releasing the claim.
        """
    def referenced_among(self, provider: str, ids: SupportsGetItem[int, str], destroyed_since: int, mark: int, /) -> Awaitable[list[str]]:
        """
        Awaitable of those of `ids` a record or a leak entry references now,
        that an audit row says was destroyed (or a leak retry resolved) at or
        after `destroyed_since` (epoch ms), or whose record was deleted after
        `mark`; sorted, each once.
        """
    def registered_among(self, provider: str, ids: SupportsGetItem[int, str], since: int, /) -> Awaitable[list[str]]:
        """
        Awaitable of those of `ids` the registry names (a record of `provider`
        names it now, or one last written or deleted at or after `since` did).
        """
    def registered_sandboxes(self, provider: str, since: int, /) -> Awaitable[list[str]]:
        """
        Awaitable of the registry: every sandbox id of `provider` an instance
        record named whose record still exists or was last written or deleted
        at or after `since` (epoch ms).
        """
    def release_sweep(self, provider: str, holder: str, /) -> Awaitable[None]:
        """
        Awaitable giving `provider`'s sweep back if `holder` still holds it.
        """
    def resolve_leak(self, entry: LeakEntry, /) -> Awaitable[bool]:
        """
        Awaitable removing a claimed entry whose sandbox is now destroyed.
        """
    def sandbox_references(self, provider: str, destroyed_since: int | None = None, /) -> Awaitable[list[str]]:
        """
        Awaitable of every sandbox id of `provider` a record or a leak entry
        references, and (with `destroyed_since`, epoch ms) every one an audit
        row says was destroyed at or after it.
        """
    def sweep_mark(self, provider: str, /) -> Awaitable[int]:
        """
        Awaitable of a mark of the store's record deletions, taken before a
        sweep lists (see `referenced_among`): a whole number that never goes down.
        """
    def upsert(self, record: SandboxInstanceRecord, /) -> Awaitable[None]:
        """
        Awaitable storing `record`; a record breaking the contract raises now.
        """

def _bind_error_types(store: type[Exception], provider: type[Exception], not_owned: type[Exception], store_open: type[Exception], schema_too_new: type[Exception], /) -> None:
    """
    Called once by `sandbox_reclaim/__init__.py` with `SandboxStoreError`,
    `SandboxProviderError`, `SandboxNotOwnedError`, `SandboxStoreOpenError`
    and `SchemaTooNewError`.
    """

def _bind_record_types(instance: type[SandboxInstanceRecord], leak_entry: type[LeakEntry], due_leak: type[DueLeak], audit_entry: type[AuditEntry], /) -> None:
    """
    Called once by `sandbox_reclaim/__init__.py` with its `SandboxInstanceRecord`,
    `LeakEntry`, `DueLeak` and `AuditEntry` classes. Registration (rather than
    importing them from here) avoids an import cycle between the package and
    its native module.
    """

def _shutdown() -> None:
    """
    Registered with `atexit` by the package: waits (without the GIL) for
    completions in progress, then makes later ones skip Python entirely.
    """

def abandon(run: SupportsIndex, /) -> None:
    """
    Forgets run `run` (the driver gave up on it, or it was cancelled).
    """

def bind_inline_helpers(error_message: Callable[[BaseException], str], instance_fields: Callable[[object], tuple[str, str]], record_type: type[SandboxInstanceRecord], coroutine_type: type[Any], /) -> None:
    """
    Called once at import by `_driver.py`.
    """

def check_record_whole(owner: str, field: str, wire: str, value: object, count: bool, /) -> None:
    """
    Checks a record's whole-number field by the core's rule (an `int` in
    `0..=2^53-1`, or `0..2^32` for a `count`); raises its refusal.
    """

def complete(run: SupportsIndex, id: SupportsIndex, kind: SupportsIndex, a: str | None, b: str | None, now: SupportsIndex, /) -> tuple[Any, ...]:
    """
    Feeds how effect `id` of run `run` settled (see `wire::completion`).
    """

def complete_leaks(run: SupportsIndex, id: SupportsIndex, sandbox_ids: SupportsGetItem[int, str], now: SupportsIndex, /) -> tuple[Any, ...]:
    """
    Feeds a `claim_leaks` answer: the provider sandbox id of each entry.
    """

def connect_postgres(url: str, /, *, schema: str = ..., instances_table: str = ..., leaks_table: str = ..., schema_version_table: str = ..., max_connections: int = ...) -> Awaitable[SqlStore]:
    """
    Connects to PostgreSQL at `url`; awaitable of a `SqlStore`. An option left
    out takes the core's default (`PostgresOptions::default()`).
    """

def creation_labels(owner: str, key: str | None, created_at_ms: SupportsIndex, /) -> dict[str, str]:
    """
    The labels to set at create when the key is not known yet, with the creation time.
    """

def default_store_path() -> str:
    """
    The command's default store (`store.db` in the platform's data directory),
    where a client with no store given records its sandboxes.
    """

def destroy_timeout_message(provider_sandbox_id: str, timeout_ms: SupportsIndex, /) -> str:
    """
    The message of `SandboxDestroyTimeoutError`, built by the core.
    """

def docker_provider(image: str, keep_alive: SupportsGetItem[int, str] | None, network_mode: str | None, cpus: SupportsFloat | SupportsIndex | None, memory_bytes: SupportsIndex | None, owner: str | None, name: str | None, docker_host: str | None, /) -> ManagedProvider:
    """
    A `DockerProvider` for this configuration (connecting is lazy).
    """

def host_check_module(plan: str, found: str, /) -> int | None:
    """
    Checks what ``_cli.py`` found in the providers module (a JSON
    description, ``sandbox_reclaim_cli::providers_module::Found``) against the
    plan; every rule and message is the command crate's. Answers ``None`` when
    the pass may run, else the exit code (the refusal already printed).
    """

def host_emit(plan: str, report: str, pass_number: SupportsIndex | None, /) -> int:
    """
    Prints `report` (the core's camelCase JSON report) for `plan` exactly as
    the binary would and answers the exit code (0, or 1 when still leaking);
    `pass_number`: the pass with `--every`. `ValueError` for a malformed plan
    or report.
    """

def host_fail(command: str, json: bool, kind: str, subject: str | None, message: str, /) -> int:
    """
    Prints a failure the script met before any pass (`kind` `usage` with the
    flag as `subject`, `unavailable` with what, or `failed`) exactly as the
    binary prints its failures, for `command` (`--json`: `json`); answers the
    exit code.
    """

def host_hosted_providers(plan: str, /) -> list[HostedProvider]:
    """
    The hosted command's `--e2b`, `--sprites`, ... providers, built
    natively from the plan's flags, config and environment (no credential
    crosses to Python), in the plan's `hosted` order.
    """

def host_managed_providers(plan: str, /) -> list[ManagedProvider]:
    """
    The command plan's `--docker` and `--local` providers, configured as the
    binary configures them, in that order.
    """

def host_open(plan: str, /) -> Awaitable[SqlStore | int]:
    """
    Opens the plan's store and checks `--docker`/`--local` exactly as the
    binary does (`sandbox_reclaim_cli::host::host_open`): an awaitable of the
    native `SqlStore`, or of the exit code (an int) once the failure is
    printed as the binary prints it.
    """

def host_plan(args: SupportsGetItem[int, str], /) -> str | int:
    """
    What to run for `args`: the plan as JSON text (a str), or, when refused,
    the exit code once the refusal is printed as the binary prints it.
    """

def hosted_option_names(vendor: str, /) -> list[str]:
    """
    The option names `vendor` (`e2b`, `sprites`, ...) takes, as Python
    spells them: what the provider's constructor hands to the core as plain values.
    """

def hosted_provider(vendor: str, options_json: str, /) -> HostedProvider:
    """
    A vendor's provider (`E2bProvider`, `SpritesProvider`, ...) from the user's
    plain option values (JSON), checked and defaulted by the core (a wrong
    type is a `TypeError`, a value out of range a `ValueError`); credentials
    left out are read from the vendor's variables. Nothing is sent.
    """

def hosted_vendors() -> list[tuple[str, str]]:
    """
    Every hosted vendor as `(key, class)`, in the core's order: what the
    package builds its provider classes' table from.
    """

def local_provider(base_dir: str | PathLike[str], owner: str | None, keep_alive: SupportsGetItem[int, str] | None, isolation: str | None, name: str | None, /) -> ManagedProvider:
    """
    A `LocalProvider` for this configuration (creates `base_dir`, probes namespaces). Unix only.
    """

def open_sqlite(path: str, /, *, busy_timeout: float = ..., max_connections: int = ...) -> Awaitable[SqlStore]:
    """
    Opens (creating if missing) the SQLite store at `path`; awaitable of a
    `SqlStore`. An option left out takes the core's default
    (`SqliteOptions::default()`).
    """

def option_names(flow: str, /) -> list[str]:
    """
    The option names `flow` (`reclaimAll`, `reconcile`, `retryLeaks`) takes,
    as Python spells them: what the declaration hands to the core as plain values.
    """

def owner_labels(owner: str, key: str, /) -> dict[str, str]:
    """
    The labels / metadata to attach at create so the sweep knows the sandbox.
    """

def protocol() -> dict[str, Any]:
    """
    The batch layout and the fixed names the driver checks input against, as
    a dict (read once at import).
    """

def reclaim_deadline(options_json: str, /) -> int | None:
    """
    A reclaim's destroy deadline in milliseconds (the user's
    `destroy_timeout` in seconds, as plain JSON), checked by the core; called
    only when one was given.
    """

def reclaim_failed_message(run_id: str, sandbox_key: str | None = None) -> str:
    """
    The message of `SandboxReclaimFailedError`, built by the core.
    """

def respell_options(flow: str, plan_json: str, /) -> str:
    """
    `flow`'s options as the command's pass plan (JSON) names them (Node's
    spelling, milliseconds), respelled as Python's keyword arguments
    (snake_case, seconds), as JSON: the hosted command passes every option
    the core names without a list of its own.
    """

def run_cli(args: SupportsGetItem[int, str], /) -> int:
    """
    Runs the command with `args` (without the program name), without the
    GIL; answers its exit code. Output goes straight to the process's stdout
    and stderr.
    """

def scoped_read_methods() -> list[str]:
    """
    The scoped sweep's store methods, in order: a store has all or none.
    """

def scoped_reads(present: SupportsGetItem[int, bool], /) -> bool:
    """
    Whether a store is scoped, given which of `scoped_read_methods()` it
    has: all → `True`, none → `False`; some → `TypeError` with the core's text.
    """

def start_reclaim(reclaimer: bool, run_id: str, sandbox_key: str | None, provider_name: str, store_has_ledger: bool, destroy_timeout_ms: SupportsIndex | None, now: SupportsIndex, /) -> tuple[Any, ...]:
    """
    Starts `reclaim_sandbox` (`reclaimer` false) or a `sandbox_reclaimer` call.
    """

def start_reclaim_all(options_json: str, records: SupportsGetItem[int, tuple[str, str | None]], providers: SupportsGetItem[int, str], store_has_ledger: bool, progress: bool, stopped: bool, now: SupportsIndex, /) -> tuple[Any, ...]:
    """
    Starts `reclaim_all`: `records` are `(run_id, sandbox_key)` pairs, in
    order; `providers` the providers' names, numbered in this order;
    `stopped`: the caller stopped it before it began (nothing starts).
    """

def start_reconcile(options_json: str, providers: SupportsGetItem[int, tuple[str, bool, bool, str | None]], host_name: str, progress: bool, stopped: bool, registry: bool, prune: bool, scoped: bool, now: SupportsIndex, /) -> tuple[Any, ...]:
    """
    Starts `reconcile`: `providers` are `(name, can_list, can_lookup, owner or None)`, in order;
    `registry`: the store has `registered_sandboxes`; `prune`: it has `prune`;
    `scoped`: it has `sweep_mark`, `referenced_among`, `registered_among`,
    `lookup_candidates` and `lookup_checked` (a sweep then reads only what it listed).
    """

def start_retry(options_json: str, provider_name: str, now: SupportsIndex, /) -> tuple[Any, ...]:
    """
    Starts `retry_leaks` for the provider named `provider_name`.
    """

def stop(run: SupportsIndex, now: SupportsIndex, /) -> tuple[Any, ...]:
    """
    Tells run `run` its caller cancelled it (a stop event, a task cancel):
    nothing new starts, what runs settles or reaches its deadline.
    """

def timeout(run: SupportsIndex, now: SupportsIndex, /) -> tuple[Any, ...]:
    """
    Tells run `run` the time (its deadline was reached).
    """

def vendor_owner_labels_json(owner: str, key: str, vendor: str, /) -> str:
    """
    What a sandbox of `vendor` carries so the sweep knows it, in the shape
    the vendor takes at create, as JSON (`owner_labels` parses it).
    """
