"""The package's exceptions."""

from __future__ import annotations

from . import _native


class SandboxReclaimError(Exception):
    """Base class of the errors this package raises itself.

    Errors raised by a store's ``get``/``delete`` are never wrapped: they
    propagate as the very exception object the store raised.
    """


class SandboxReclaimFailedError(SandboxReclaimError):
    """Raised by a :func:`sandbox_reclaimer` callable when the outcome is
    ``destroy-failed``: the provider's destroy failed and the instance record
    was deleted anyway, so the sandbox may still be running.

    It is an exception rather than a return value because a sweep (TanStack's
    ``reapDetachedRuns``) only learns that a sandbox was not reclaimed from a
    failure. Like the reference's error it carries no cause (``__cause__`` and
    ``__context__`` are ``None``): the destroy's exception is on the ``warn``
    log line, which has the same ``runId`` and ``sandboxKey``.
    """

    run_id: str
    sandbox_key: str | None

    def __init__(self, run_id: str, sandbox_key: str | None = None) -> None:
        super().__init__(_native.reclaim_failed_message(run_id, sandbox_key))
        self.run_id = run_id
        self.sandbox_key = sandbox_key

    def __reduce__(self) -> tuple[type[SandboxReclaimFailedError], tuple[str, str | None]]:
        # The default would call cls(message): rebuild from the fields instead.
        return (type(self), (self.run_id, self.sandbox_key))

    @classmethod
    def _from_core(cls, run_id: str, sandbox_key: str | None, message: str) -> SandboxReclaimFailedError:
        """Built by the driver with the message the core already sent."""
        error = cls.__new__(cls)
        Exception.__init__(error, message)
        error.run_id = run_id
        error.sandbox_key = sandbox_key
        return error


class SandboxDestroyTimeoutError(SandboxReclaimError, TimeoutError):
    """A provider's ``destroy`` did not finish within ``destroy_timeout``: its
    task was cancelled and the reclaim took the destroy-failed path. It is the
    ``error`` of that ``warn`` line, and its message the leak entry's."""

    provider_sandbox_id: str
    timeout_ms: int

    def __init__(self, provider_sandbox_id: str, timeout_ms: int) -> None:
        super().__init__(_native.destroy_timeout_message(provider_sandbox_id, timeout_ms))
        self.provider_sandbox_id = provider_sandbox_id
        self.timeout_ms = timeout_ms

    @property
    def timeout(self) -> float:
        """The deadline in seconds, as ``destroy_timeout`` was given."""
        return self.timeout_ms / 1000

    def __reduce__(self) -> tuple[type[SandboxDestroyTimeoutError], tuple[str, int]]:
        return (type(self), (self.provider_sandbox_id, self.timeout_ms))

    @classmethod
    def _from_core(cls, provider_sandbox_id: str, timeout_ms: int, message: str) -> SandboxDestroyTimeoutError:
        """Built by the driver with the message the core already sent."""
        error = cls.__new__(cls)
        Exception.__init__(error, message)
        error.provider_sandbox_id = provider_sandbox_id
        error.timeout_ms = timeout_ms
        return error


class SandboxStoreError(SandboxReclaimError):
    """A durable store (SQLite, PostgreSQL) failed: it could not be opened,
    migrated or reached, or a query failed. Refused input is a ``ValueError``
    instead, raised before anything is written."""


class SandboxStoreOpenError(SandboxStoreError):
    """A store could not be opened: the database was unreachable, a migration
    failed, or the SQLite file is not ours (another application's tables, or a
    table of ours in a shape we did not create), in which case it was left
    unchanged."""


class SchemaTooNewError(SandboxStoreOpenError):
    """The database was migrated by a newer version of this library: its
    schema is at version ``found``, this one knows up to ``supported``."""

    found: int
    supported: int

    def __init__(self, message: str, found: int, supported: int) -> None:
        super().__init__(message)
        self.found = found
        self.supported = supported

    def __reduce__(self) -> tuple[type[SchemaTooNewError], tuple[str, int, int]]:
        return (type(self), (str(self), self.found, self.supported))


class SandboxProviderError(SandboxReclaimError):
    """A native provider (Docker, local) failed; the message is the
    backend's. Refused input is a ``ValueError`` naming the field instead."""


class SandboxNotOwnedError(SandboxProviderError):
    """The ownership guard: the sandbox exists but carries another owner (or
    none), so the provider refused to touch it. ``sandbox_id`` is the id it
    was handed."""

    sandbox_id: str

    def __init__(self, message: str, sandbox_id: str) -> None:
        super().__init__(message)
        self.sandbox_id = sandbox_id

    def __reduce__(self) -> tuple[type[SandboxNotOwnedError], tuple[str, str]]:
        return (type(self), (str(self), self.sandbox_id))
