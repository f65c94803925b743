"""The flows, as declarations: each checks its arguments (``TypeError`` /
``ValueError`` naming the field, before any host call), reads every host
attribute once, and starts the core's machine on the generic driver
(``_driver.py``). No rule lives here."""

from __future__ import annotations

import asyncio
import inspect
import socket
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeAlias

from . import _native
from ._checks import exact
from ._driver import LEVELS, Host, drive, now
from ._logging import adapt_logger
from ._options import DEFAULT, options_json
from ._protocols import FleetStore, ReclaimLogger, SandboxInstanceStore, SandboxProvider
from ._records import LeakEntry, ReclaimOutcome, RunRecord
from ._reports import FleetReclaimReport, ReconcileReport, RetrySummary
from ._stores import native_method

Logger: TypeAlias = "ReclaimLogger | logging.Logger | logging.LoggerAdapter[Any]"
"""A reclaim logger: stdlib loggers map ``warn``/``errors``/``sandbox`` to WARNING/ERROR/DEBUG."""

RecordInput: TypeAlias = RunRecord | Mapping[str, Any]
"""A ``RunRecord``, or a mapping in the camelCase wire form (read with ``RunRecord.from_dict``)."""

_OUTCOMES = {outcome.value: outcome for outcome in ReclaimOutcome}

# The option arguments each flow hands to the core (which checks and defaults them).
_RECLAIM_ALL_OPTIONS = _native.option_names("reclaimAll")
_RECONCILE_OPTIONS = _native.option_names("reconcile")
_RETRY_OPTIONS = _native.option_names("retryLeaks")


def _run_record(record: object) -> RunRecord:
    if isinstance(record, RunRecord):
        return record
    if isinstance(record, Mapping):
        return RunRecord.from_dict(record)
    raise TypeError(f"record must be a RunRecord or a wire-form mapping, got {type(record).__name__}")


def _method(owner: str, target: object, name: str) -> Callable[..., Any]:
    method: Callable[..., Any] | None = getattr(target, name, None)
    if not callable(method):
        raise TypeError(f"{owner}.{name} must be a method (sync or async); {type(target).__name__} has none")
    return method


def _optional_method(owner: str, target: object, name: str) -> Callable[..., Any] | None:
    """A method the contract lets a host object leave out: None when absent."""
    method: object = getattr(target, name, None)
    if method is not None and not callable(method):
        raise TypeError(f"{owner}.{name} must be a method (sync or async) when present")
    return method


def _provider_name(provider: object) -> str:
    name = getattr(provider, "name", None)
    if type(name) is not str:
        if not isinstance(name, str):
            raise TypeError(f"provider.name must be a str, got {type(name).__name__}")
    return name if name.isascii() else exact(name, "provider.name")


def _deadline(destroy_timeout: object) -> int | None:
    """A reclaim's ``destroy_timeout`` (seconds) as the core checks it, in milliseconds."""
    return _native.reclaim_deadline(options_json(("destroy_timeout",), {"destroy_timeout": destroy_timeout}))


def _log_methods(logger: object) -> dict[str, Callable[[str, dict[str, Any]], object]] | None:
    adapted = adapt_logger(logger)
    return None if adapted is None else {level: getattr(adapted, level) for level in LEVELS}


def _reclaim_host(provider: object, instances: object, logger: object, read_name: bool) -> tuple[Host, bool, str | None]:
    """The checked host of a reclaim; whether its store keeps a ledger (it does
    exactly when it has a callable ``delete_recording_leak``); and, with
    ``read_name``, the provider's name (read once)."""
    name = _provider_name(provider) if read_name else None
    # Inline checks: this runs on every reclaim (_method says what is missing).
    destroy = getattr(provider, "destroy", None)
    get = getattr(instances, "get", None)
    delete = getattr(instances, "delete", None)
    if not (callable(destroy) and callable(get) and callable(delete)):
        destroy = _method("provider", provider, "destroy")
        get = _method("instances", instances, "get")
        delete = _method("instances", instances, "delete")
    ledger = getattr(instances, "delete_recording_leak", None)
    ledger = native_method(ledger) if callable(ledger) else None
    log = None if logger is None else _log_methods(logger)
    store = {"get": native_method(get), "delete": native_method(delete), "delete_recording_leak": ledger}
    host = Host({"destroy": (destroy,)}, store, log)
    return host, ledger is not None, name


def _record_fields(record: object) -> tuple[str, str | None]:
    """The run record's two fields a reclaim reads, each read once."""
    run = record if type(record) is RunRecord else _run_record(record)
    run_id, sandbox_key = run.run_id, run.sandbox_key
    if not run_id.isascii():
        exact(run_id, "record.run_id")
    if sandbox_key is not None and not sandbox_key.isascii():
        exact(sandbox_key, "record.sandbox_key")
    return run_id, sandbox_key


async def reclaim_sandbox(
    record: RecordInput,
    *,
    provider: SandboxProvider,
    instances: SandboxInstanceStore,
    logger: Logger | None = None,
    # ---- generated by scripts/gen_declarations.py from the Rust types (proto/src): do not edit [reclaim_sandbox options] ----
    destroy_timeout: float | None = None,
    # ---- end of generated declarations [reclaim_sandbox options] ----
) -> ReclaimOutcome:
    """Destroys the sandbox a terminal run was bound to, then deletes its record.

    1. no ``sandbox_key`` → ``NO_SANDBOX_KEY``, no I/O;
    2. no instance record → ``NOT_FOUND``;
    3. a record of another provider → ``PROVIDER_MISMATCH``, nothing touched;
    4. destroy, then delete the record *even if destroy failed*, answering
       ``DESTROYED`` or ``DESTROY_FAILED``.

    An exception from ``instances.get``/``delete`` propagates unchanged.
    Out-of-contract arguments raise ``TypeError``/``ValueError`` before any
    host call.

    Options (checked, and defaulted, by the core):

    .. ---- generated by scripts/gen_declarations.py from the Rust types (proto/src): do not edit [reclaim_sandbox options doc] ----

    * ``destroy_timeout``: Cancel a destroy still running after this long (its signal aborts, its
      task is cancelled) and take the destroy-failed path with a ``SandboxDestroyTimeoutError``.
      Absent: no deadline, as the reference. Seconds, at least 0.001.

    .. ---- end of generated declarations [reclaim_sandbox options doc] ----
    """
    run_id, sandbox_key = _record_fields(record)
    host, ledger, name = _reclaim_host(provider, instances, logger, True)
    timeout = None if destroy_timeout is None else _deadline(destroy_timeout)
    arguments = (False, run_id, sandbox_key, name, ledger, timeout)
    outcome: str = await drive(_native.start_reclaim, arguments, host)
    return _OUTCOMES[outcome]


def sandbox_reclaimer(
    *,
    provider: SandboxProvider,
    instances: SandboxInstanceStore,
    logger: Logger | None = None,
    # ---- generated by scripts/gen_declarations.py from the Rust types (proto/src): do not edit [sandbox_reclaimer options] ----
    destroy_timeout: float | None = None,
    # ---- end of generated declarations [sandbox_reclaimer options] ----
) -> Callable[[RecordInput], Awaitable[None]]:
    """Adapts :func:`reclaim_sandbox` to a sweep's ``reclaim(record)`` hook.

    The callable logs the outcome (``sandbox`` level) and returns ``None``,
    except on ``destroy-failed``: it logs at ``errors`` level and raises
    :class:`SandboxReclaimFailedError`, so the sweep sees the leak. The
    options are checked here, once; ``provider.name`` is read per reclaim.

    Options (checked, and defaulted, by the core):

    .. ---- generated by scripts/gen_declarations.py from the Rust types (proto/src): do not edit [sandbox_reclaimer options doc] ----

    * ``destroy_timeout``: Cancel a destroy still running after this long (its signal aborts, its
      task is cancelled) and take the destroy-failed path with a ``SandboxDestroyTimeoutError``.
      Absent: no deadline, as the reference. Seconds, at least 0.001.

    .. ---- end of generated declarations [sandbox_reclaimer options doc] ----
    """
    _provider_name(provider)
    host, ledger, _ = _reclaim_host(provider, instances, logger, False)
    timeout = None if destroy_timeout is None else _deadline(destroy_timeout)

    async def reclaim(record: RecordInput) -> None:
        run_id, sandbox_key = _record_fields(record)
        arguments = (True, run_id, sandbox_key, _provider_name(provider), ledger, timeout)
        await drive(_native.start_reclaim, arguments, host)

    return reclaim


async def retry_leaks(
    *,
    provider: SandboxProvider,
    instances: object,
    # ---- generated by scripts/gen_declarations.py from the Rust types (proto/src): do not edit [retry_leaks options] ----
    limit: int = DEFAULT,
    lease: float = DEFAULT,
    destroy_timeout: float | None = None,
    # ---- end of generated declarations [retry_leaks options] ----
) -> RetrySummary:
    """Retries the destroy of ``provider``'s pending leaks in ``instances``'
    ledger: claims up to ``limit`` entries for ``lease`` seconds (so two
    retriers never take the same one), destroys each while the lease holds,
    removes the entry on success and records the failure (attempts + 1, new
    error) otherwise. No destroy starts, or keeps running, after the lease.

    ``instances`` is any store with a leak ledger (``claim_leaks``,
    ``resolve_leak``, ``record_retry_failure``; sync or async), native or not.

    Options (checked, and defaulted, by the core):

    .. ---- generated by scripts/gen_declarations.py from the Rust types (proto/src): do not edit [retry_leaks options doc] ----

    * ``limit``: Most leaks claimed in this call. A whole number, at least 0. Default 100.
    * ``lease``: How long a claim holds before another retrier may take the entry: no destroy starts
      after it ends, and one still running then is cancelled and its entry left to its new holder.
      Seconds, at least 0.001. Default 300 s (5 min).
    * ``destroy_timeout``: Cancel a destroy still running after this long and record it as failed.
      Absent: no deadline. Seconds, at least 0.001.

    .. ---- end of generated declarations [retry_leaks options doc] ----
    """
    name = _provider_name(provider)
    destroy = _method("provider", provider, "destroy")
    ledger = "instances (a store with a leak ledger)"
    claim = _method(ledger, instances, "claim_leaks")
    resolve = _method(ledger, instances, "resolve_leak")
    record_failure = _method(ledger, instances, "record_retry_failure")
    store = {"claim_leaks": claim, "resolve_leak": resolve, "record_retry_failure": record_failure}
    store = {name: native_method(method) for name, method in store.items()}
    host = Host(provided={"destroy": (destroy,)}, store=store)
    options = options_json(_RETRY_OPTIONS, locals())
    summary = await drive(_native.start_retry, (options, name), host)
    return RetrySummary.from_dict(summary)


async def list_leaks(instances: object, provider: str | None = None) -> list[LeakEntry]:
    """The pending leak entries of a store with a ledger (sync or async
    ``list_leaks``), oldest first, of one provider or of all."""
    method = getattr(instances, "list_leaks", None)
    if not callable(method):
        raise TypeError(f"`instances` must have a leak ledger (list_leaks); {type(instances).__name__} has none")
    entries = method(provider)
    if hasattr(entries, "__await__"):
        entries = await entries
    result: list[LeakEntry] = entries
    return result


# ---- fleet passes ----

ProgressCallback: TypeAlias = Callable[[dict[str, Any]], object]
"""Called with each progress event of a fleet pass (a fresh dict in the
camelCase JSON form, see the package README); never awaited by the pass."""

FLEET_STORE_METHODS = (
    "list_stale",
    "expire_idle",
    "sandbox_references",
    "record_leak",
    "due_leaks",
    "defer_leak",
    "resolve_leak",
    "claim_sweep",
    "release_sweep",
    "append_audit",
)
"""The store methods :func:`reconcile` calls (sync or async)."""

SCOPED_READS: tuple[str, ...] = tuple(_native.scoped_read_methods())
"""The store methods a sweep asks about what it listed: a store has all five
(then :func:`reconcile` reads only what a sweep listed) or none."""


def _scoped_reads(instances: object, fleet: dict[str, Callable[..., Any]]) -> bool:
    """Whether ``instances`` has all of :data:`SCOPED_READS` (each read once,
    kept in ``fleet``); one with some but not all is refused (``TypeError``
    naming the first missing), before any call."""
    found = [_optional_method("instances", instances, name) for name in SCOPED_READS]
    # The core decides (and words the refusal of a partial store).
    if not _native.scoped_reads([method is not None for method in found]):
        return False
    for name, method in zip(SCOPED_READS, found):
        fleet[name] = native_method(method)
    return True


def _progress(on_progress: object) -> ProgressCallback | None:
    if on_progress is not None and not callable(on_progress):
        raise TypeError(f"`on_progress` must be callable or None, got {type(on_progress).__name__}")
    return on_progress


def _stop_event(stop: object) -> asyncio.Event | None:
    if stop is not None and not isinstance(stop, asyncio.Event):
        raise TypeError(f"`stop` must be an asyncio.Event or None, got {type(stop).__name__}")
    return stop


def _providers(provider: object, providers: object) -> list[object]:
    """The pass's providers, in order (their number is their index)."""
    if provider is not None and providers is not None:
        raise TypeError("give `provider` or `providers`, not both")
    if provider is not None:
        return [provider]
    if providers is None:
        raise TypeError("`providers` (or `provider`) is required")
    if isinstance(providers, (str, bytes, Mapping)) or not isinstance(providers, Iterable):
        raise TypeError(f"`providers` must be a sequence of providers, got {type(providers).__name__}")
    return list(providers)


def _references(method: Callable[..., Any]) -> Callable[..., Any]:
    """A store's ``sandbox_references``. One written before it took
    ``destroyed_since`` (a single argument) still works: it spares what the
    records and ledger reference, without the audit log's recent destroys."""
    try:
        parameters = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):
        return method
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return method
    return lambda provider, destroyed_since: method(provider)


def _lister(provider: object) -> Callable[..., Any] | None:
    """The method the orphan sweep lists a provider's sandboxes with:
    ``list_sandboxes`` (the managed providers'), else ``list``; ``None`` when
    it has neither (no sweep: reported ``unavailable``)."""
    for name in ("list_sandboxes", "list"):
        method: Callable[..., Any] | None = getattr(provider, name, None)
        if callable(method):
            return method
    return None


def _looker(provider: object, label: str) -> Callable[..., Any] | None:
    """The method the orphan sweep looks registered sandboxes up by id
    with: ``lookup(ids)``, optional (``None``: the sweep judges the listing
    alone). Anything else there is a ``TypeError`` naming the field."""
    method = getattr(provider, "lookup", None)
    if method is None:
        return None
    if not callable(method):
        raise TypeError(f"{label}.lookup must be a function when present")
    looker: Callable[..., Any] = method
    return looker


def _provider_owner(provider: object, label: str) -> str | None:
    """A provider's own ``owner`` (a str attribute), which wins over the pass's;
    ``None`` when it has none. Anything else is a ``TypeError`` naming the
    field (Node's wording): sweeping under the pass's owner instead would fail
    open, destroying another namespace's sandboxes."""
    owner = getattr(provider, "owner", None)
    if owner is None:
        return None
    if not isinstance(owner, str):
        raise TypeError(f"{label}.owner must be a string when present")
    return exact(owner, f"{label}.owner")


async def reclaim_all(
    records: Iterable[RecordInput],
    *,
    provider: SandboxProvider | None = None,
    providers: Sequence[SandboxProvider] | None = None,
    instances: SandboxInstanceStore,
    logger: Logger | None = None,
    # ---- generated by scripts/gen_declarations.py from the Rust types (proto/src): do not edit [reclaim_all options] ----
    concurrency: int = DEFAULT,
    per_provider_concurrency: int | None = None,
    destroy_timeout: float | None = None,
    budget: float | None = None,
    # ---- end of generated declarations [reclaim_all options] ----
    on_progress: ProgressCallback | None = None,
    stop: asyncio.Event | None = None,
) -> FleetReclaimReport:
    """Reclaims many runs side by side, each exactly as :func:`reclaim_sandbox`
    would (same store and provider calls, log lines and outcomes), and answers
    one line per record, in order. Never raises because one record failed: a
    store failure is reported on its record (``error``).

    * a record goes to the provider whose ``name`` its instance record names
      (none: ``provider-mismatch``, nothing touched);
    * at most ``concurrency`` records in progress, at most
      ``per_provider_concurrency`` destroys in flight per provider; records
      sharing a ``sandbox_key`` are reclaimed once (the others: ``duplicate``);
    * after ``budget`` seconds, or once ``stop`` is set, no record starts: the
      rest is ``deferred``, untouched; what runs settles or reaches its
      ``destroy_timeout`` (seconds) and the report is returned. Cancelling the
      calling task does the same, then raises ``CancelledError``.

    ``on_progress(event)`` is called (never awaited) as each record ends.
    Options are checked (``TypeError``/``ValueError`` naming them) before any
    host call.

    Options (checked, and defaulted, by the core):

    .. ---- generated by scripts/gen_declarations.py from the Rust types (proto/src): do not edit [reclaim_all options doc] ----

    * ``concurrency``: Records in progress at once; a record writing its outcome gives its slot to
      the next one meanwhile, with at most this many such writes at once. A whole number, at least
      1. Default 16.
    * ``per_provider_concurrency``: Destroys in flight per provider. Absent: ``concurrency``. A
      whole number, at least 1.
    * ``destroy_timeout``: Cancel a destroy still running after this long: it counts as failed.
      Absent: no deadline. Seconds, at least 0.001.
    * ``budget``: Start nothing new after this long; the rest is reported ``deferred``. Absent: no
      budget. Seconds, at least 0.001.

    .. ---- end of generated declarations [reclaim_all options doc] ----
    """
    options = options_json(_RECLAIM_ALL_OPTIONS, locals())
    rows = [_record_fields(record) for record in _records(records)]
    chosen = _providers(provider, providers)
    names = [_provider_name(one) for one in chosen]
    destroys = [_method("provider", one, "destroy") for one in chosen]
    get = _method("instances", instances, "get")
    delete = _method("instances", instances, "delete")
    ledger = getattr(instances, "delete_recording_leak", None)
    ledger = native_method(ledger) if callable(ledger) else None
    progress = _progress(on_progress)
    event = _stop_event(stop)
    log = None if logger is None else _log_methods(logger)
    store = {"get": native_method(get), "delete": native_method(delete), "delete_recording_leak": ledger}
    host = Host(provided={"destroy": destroys}, store=store, log=log, progress=progress)
    stopped = event is not None and event.is_set()
    arguments = (options, rows, names, ledger is not None, progress is not None, stopped)
    report = await drive(_native.start_reclaim_all, arguments, host, stoppable=True, stop=event)
    return FleetReclaimReport.from_dict(report)


def _records(records: object) -> Iterable[Any]:
    if isinstance(records, (str, bytes, Mapping, RunRecord)) or not isinstance(records, Iterable):
        raise TypeError(f"`records` must be an iterable of RunRecord (or wire-form mappings), got {type(records).__name__}")
    return records


async def reconcile(
    *,
    provider: SandboxProvider | None = None,
    providers: Sequence[SandboxProvider] | None = None,
    instances: FleetStore,
    # ---- generated by scripts/gen_declarations.py from the Rust types (proto/src): do not edit [reconcile options] ----
    dry_run: bool = DEFAULT,
    retry_leaks: bool = DEFAULT,
    concurrency: int = DEFAULT,
    per_provider_concurrency: int | None = None,
    destroy_timeout: float | None = None,
    budget: float | None = None,
    orphan_grace: float = DEFAULT,
    max_idle: float | None = None,
    limit: int = DEFAULT,
    lease: float = DEFAULT,
    backoff: float = DEFAULT,
    max_backoff: float = DEFAULT,
    registry_retention: float = DEFAULT,
    audit_retention: float = DEFAULT,
    owner: str | None = None,
    host: str | None = None,
    # ---- end of generated declarations [reconcile options] ----
    on_progress: ProgressCallback | None = None,
    stop: asyncio.Event | None = None,
) -> ReconcileReport:
    """One pass over everything that may still be billing (durations in seconds):

    1. with ``max_idle``, records idle longer than that are expired into the
       leak ledger (a conditional delete: a record touched meanwhile is left);
    2. per provider, side by side: due ledger entries are claimed for
       ``lease`` and destroyed (failures back off from ``backoff``, doubling
       up to ``max_backoff``); and one pass at a time sweeps the provider's
       **orphans**: sandboxes it lists under the expected owner (the
       provider's own ``owner``, else ``owner``, else ``"sandbox-reclaim"``),
       referenced by no record and no ledger entry, created more than
       ``orphan_grace`` ago. The sweep fails closed: a failing listing, or
       one sandbox of unknown creation time or owner, destroys nothing of
       that provider (``unavailable``).

    **The registry.** A sandbox listed *unlabelled* (owner ``""``, as
    ``sweep_unlabelled=True`` hosted providers report one without our label,
    e.g. created by TanStack's providers) is ours too when the store's
    ``registered_sandboxes(provider, since)`` names it: every sandbox an
    instance record named, kept after the record is deleted, counted while
    its record was last written or deleted within ``registry_retention``
    (seconds) of the pass. A sandbox labelled for another owner is never
    ours, registered or not; an unlabelled one the registry does not name is
    counted ``foreign`` and left alone. ``registered_sandboxes`` is optional:
    a store without it names nothing (only labelled sandboxes are swept).

    **Bounded growth.** The pass that takes a provider's sweep (never a dry
    run) calls the store's ``prune(provider, registry_before, audit_before)``
    once, with the pass's time less ``registry_retention`` and less
    ``audit_retention`` (epoch ms): registry rows last seen before the first
    and audit rows from before the second are deleted. ``prune`` is optional
    (a store without it keeps every row; the native stores have it), and a
    failing one fails nothing.

    **Scoped reads.** A store with all of :data:`SCOPED_READS`
    (``sweep_mark``, ``referenced_among``, ``registered_among``,
    ``lookup_candidates``, ``lookup_checked``; the native stores have them)
    is swept by asking about what it listed: the deletion mark, the listing,
    then batched questions about the listed ids, so a pass's store work
    follows what it lists, not the store's history. A store with none is
    swept the older way (``sandbox_references`` and ``registered_sandboxes``
    read before listing); one with only some is refused (``TypeError``
    naming the first missing) before any call.

    Providers list through ``list_sandboxes()`` or ``list()`` (sync or async;
    items with ``id``, ``created_at`` (epoch ms or an aware datetime),
    ``owner``, ``key``, or wire-form dicts); without either they get no
    sweep. ``instances`` is a store with every fleet method
    (:data:`FLEET_STORE_METHODS`, and optionally ``registered_sandboxes``,
    ``prune`` and the :data:`SCOPED_READS`):
    the native stores have them all. Every
    destroy attempt is written to its audit log (``host``: this machine's
    name unless given). ``dry_run`` only reads and answers the plan;
    ``retry_leaks=False`` sweeps orphans (and expires idle records) only.

    ``budget``, ``stop`` and task cancellation stop it as in
    :func:`reclaim_all`. A store write failure ends the pass with that error
    once what runs has settled. Options are checked before any host call.

    Options (checked, and defaulted, by the core):

    .. ---- generated by scripts/gen_declarations.py from the Rust types (proto/src): do not edit [reconcile options doc] ----

    * ``dry_run``: Plan only: read, change nothing, report what would be destroyed (``planned``).
      Default ``False``.
    * ``retry_leaks``: Retry the ledger's due leaks; off: sweep orphans and expire idle records only
      (the command's ``orphans``). Default ``True``.
    * ``concurrency``: Destroys in flight at once. A whole number, at least 1. Default 16.
    * ``per_provider_concurrency``: Destroys in flight per provider. Absent: ``concurrency``. A
      whole number, at least 1.
    * ``destroy_timeout``: Cancel a destroy or a listing still running after this long: it counts as
      failed. Absent: no deadline. Seconds, at least 0.001.
    * ``budget``: Start nothing new after this long; the rest is reported ``deferred``. Absent: no
      budget. Seconds, at least 0.001.
    * ``orphan_grace``: Spare unreferenced sandboxes younger than this (by their creation time as
      the provider lists it). Seconds, at least 0. Default 600 s (10 min).
    * ``max_idle``: Expire records not updated for this long into the ledger (reason ``idle``).
      Absent: no idle expiry. Seconds, at least 0.001.
    * ``limit``: Most ledger entries claimed per provider, stale records read, and registered
      sandboxes a provider looks up by id. A whole number, at least 1. Default 1000.
    * ``lease``: How long claims (ledger entries, a provider's sweep) hold. Seconds, at least 0.001.
      Default 300 s (5 min).
    * ``backoff``: The first wait after a failed retry, doubling per failure: after an entry's n-th
      failed destroy its next attempt waits this × 2^(n−1), at most ``max_backoff`` (a reclaim's
      failed destroy is failure 1). Seconds, at least 0. Default 30 s.
    * ``max_backoff``: The longest wait between retries. Seconds, at least 0. Default 3600 s (1 h).
    * ``registry_retention``: How long after its record was last written or deleted the store's
      registry still names a sandbox as ours, so that an unlabelled listed sandbox it names is
      swept. Ignored by a store without the registry. Seconds, at least 0. Default 2,592,000 s (30
      days).
    * ``audit_retention``: How long the audit log keeps a row: the pass that takes a provider's
      sweep prunes that provider's audit rows older than this (and its registry rows past the
      registry retention). Ignored by a store without ``prune``. Seconds, at least 0. Default
      7,776,000 s (90 days).
    * ``owner``: The owner namespace of providers that name none. Default ``"sandbox-reclaim"``.
    * ``host``: Who runs the pass: the audit rows' ``host``. Absent: this machine's host name.

    .. ---- end of generated declarations [reconcile options doc] ----
    """
    options = options_json(_RECONCILE_OPTIONS, locals())
    chosen = _providers(provider, providers)
    names = [_provider_name(one) for one in chosen]
    destroys = [_method("provider", one, "destroy") for one in chosen]
    lists = [_lister(one) for one in chosen]
    fleet = {name: native_method(_method("instances (a fleet store)", instances, name)) for name in FLEET_STORE_METHODS}
    fleet["sandbox_references"] = _references(fleet["sandbox_references"])
    registered = _optional_method("instances", instances, "registered_sandboxes")
    if registered is not None:
        fleet["registered_sandboxes"] = registered
    pruner = _optional_method("instances", instances, "prune")
    if pruner is not None:
        fleet["prune"] = pruner
    scoped = _scoped_reads(instances, fleet)
    progress = _progress(on_progress)
    event = _stop_event(stop)
    labels = ["provider"] if provider is not None else [f"providers[{index}]" for index in range(len(chosen))]
    owners = [_provider_owner(one, label) for one, label in zip(chosen, labels)]
    lookups = [_looker(one, label) for one, label in zip(chosen, labels)]
    plans = [
        (name, lister is not None, looker is not None, owner)
        for name, lister, looker, owner in zip(names, lists, lookups, owners)
    ]
    bound = Host(provided={"destroy": destroys, "list": lists, "lookup": lookups}, store=fleet, progress=progress)
    stopped = event is not None and event.is_set()
    arguments = (
        options,
        plans,
        socket.gethostname(),
        progress is not None,
        stopped,
        registered is not None,
        pruner is not None,
        scoped,
    )
    report = await drive(_native.start_reconcile, arguments, bound, stoppable=True, stop=event)
    return ReconcileReport.from_dict(report)
