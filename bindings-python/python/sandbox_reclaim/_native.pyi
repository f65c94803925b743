"""Type stubs of the native module (Rust, pyo3). Internal: use the package API."""

from typing import Any, Final

from ._records import LeakEntry, NewLeak, SandboxInstanceRecord

OP_GET: Final[int]
OP_DESTROY: Final[int]
OP_DELETE: Final[int]
OP_DELETE_RECORDING_LEAK: Final[int]
OP_FINISH: Final[int]
OP_FAIL: Final[int]
OP_LOG: Final[int]

LogLine = tuple[str, str, dict[str, Any]]
Step = tuple[int, Any, list[LogLine] | None]

def reclaim_failed_message(run_id: str, sandbox_key: str | None = None) -> str:
    """The message of SandboxReclaimFailedError, built by the core."""

def _bind_record_types(instance: type[SandboxInstanceRecord], leak_entry: type[LeakEntry], /) -> None: ...
def start(
    run_id: str,
    sandbox_key: str | None,
    provider_name: str,
    instances: object,
    has_ledger: bool,
    reclaimer: bool,
    with_logs: bool,
    /,
) -> tuple[Drive, int, Any, list[LogLine] | None]: ...

class Drive:
    """One reclaim in progress: feed an answer, get the next step."""

    def loaded(self, instance: object, /) -> Step: ...
    def destroyed(self) -> Step: ...
    def destroy_failed(self, error: BaseException, /) -> Step: ...
    def resume(self) -> Step: ...

class InMemorySandboxInstanceStore:
    """An instance store in memory (the core's). Copies records in and out.

    Passed as is to ``reclaim_sandbox`` it is answered natively, without
    building records in Python."""

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

class InMemoryLeakLedgerStore(InMemorySandboxInstanceStore):
    """An in-memory store with a leak ledger."""

    def __init__(self) -> None: ...
    def delete_recording_leak(self, key: str, leak: NewLeak, /) -> None:
        """Deletes the record and records the leak, in one step."""
    def list_leaks(self, provider: str | None = None) -> list[LeakEntry]:
        """Pending leak entries, oldest first, of one provider or of all."""
