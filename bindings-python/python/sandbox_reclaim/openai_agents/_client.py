"""The mixin every reclaiming client is: it overrides ``create``, ``resume``,
``delete`` and the session wrapper, each calling the SDK's own first, and
nothing else, so snapshots, manifests and ``pause_on_exit`` stay the SDK's."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from agents.logger import logger as sdk_logger
from agents.sandbox.session.sandbox_session import SandboxSession

from .._protocols import SandboxInstanceStore, SandboxProvider
from ._lifecycle import Reclaim, Vendor


class ReclaimedSession(SandboxSession):
    """The SDK's session, plus: its record is written once ``start`` has made
    the backend exist (vendors that create lazily), and its ``shutdown``
    (what ``async with session`` ends with, for sessions a developer passes
    in with ``session=``) ends with the honest destroy."""

    _sandbox_reclaim_client: ReclaimingClient

    async def start(self) -> None:
        await super().start()
        await self._sandbox_reclaim_client.after_start(self)

    async def shutdown(self) -> None:
        try:
            await super().shutdown()
        finally:
            await self._sandbox_reclaim_client.finish(self)


_RECLAIMED: dict[type[SandboxSession], type[ReclaimedSession]] = {SandboxSession: ReclaimedSession}


def _reclaimed(kind: type[SandboxSession]) -> type[ReclaimedSession]:
    """:class:`ReclaimedSession` over the session class the SDK's client
    wrapped with (a vendor's own wrapper, as Vercel's, keeps its overrides)."""
    made = _RECLAIMED.get(kind)
    if made is None:
        made = type(f"Reclaimed{kind.__name__}", (ReclaimedSession, kind), {})
        _RECLAIMED[kind] = made
    return made


class ReclaimingClient:
    """Mixed in before the SDK's client class (``class X(ReclaimingClient,
    sdk.X)``). Keyword arguments of its own: ``instances`` (any instance store;
    default: the command's default SQLite store), ``owner`` (default
    :data:`sandbox_reclaim.DEFAULT_OWNER`), ``provider`` (this project's
    provider that destroys by id; default: the vendor's, configured from the
    vendor's own variables)."""

    _vendor: ClassVar[Vendor]
    _reclaim: Reclaim

    def __init__(
        self,
        *args: Any,
        instances: SandboxInstanceStore | None = None,
        owner: str | None = None,
        provider: SandboxProvider | None = None,
        **kwargs: Any,
    ) -> None:
        self._reclaim = Reclaim(self._vendor, self, instances=instances, owner=owner, provider=provider, logger=sdk_logger)
        super().__init__(*args, **kwargs)

    # -- what the SDK calls --------------------------------------------------

    async def create(self, *, options: Any = None, **kwargs: Any) -> SandboxSession:
        session: SandboxSession = await super().create(  # type: ignore[misc]
            options=self._labelled(options), **kwargs
        )
        await self._adopt(session)
        return session

    async def resume(self, state: Any) -> SandboxSession:
        # Read before: the SDK rewrites `state` in place when it replaces the sandbox.
        before = (self._reclaim.key(state), self._reclaim.sandbox_id(state))
        session: SandboxSession = await super().resume(state)  # type: ignore[misc]
        after = session._inner.state
        if before[1] is not None and (self._reclaim.key(after), self._reclaim.sandbox_id(after)) != before:
            # The SDK replaced the sandbox (the old one was gone, or could not
            # be reused): the old record is reclaimed by the reference's rules
            # (destroy by id, already gone is success), never just overwritten.
            await self._reclaim.reclaim(before[0], after)
        await self._adopt(session)
        return session

    async def delete(self, session: SandboxSession) -> SandboxSession:
        try:
            result: SandboxSession = await super().delete(session)  # type: ignore[misc]
        finally:
            await self.finish(session)
        return result

    def _wrap_session(self, inner: Any, *, instrumentation: Any = None) -> SandboxSession:
        session: SandboxSession = super()._wrap_session(  # type: ignore[misc]
            inner, instrumentation=instrumentation
        )
        session.__class__ = _reclaimed(type(session))
        reclaimed: ReclaimedSession = session  # type: ignore[assignment]
        reclaimed._sandbox_reclaim_client = self
        return session

    # -- what a vendor module may refine -------------------------------------

    def _labelled(self, options: Any) -> Any:
        """``options`` with our labels beneath the user's (default: unchanged,
        for vendors labelled after the sandbox exists)."""
        return options

    async def _label_existing(self, session: SandboxSession) -> None:
        """Labels a sandbox that exists now (vendors with no create-time labels)."""

    # -- shared --------------------------------------------------------------

    async def _adopt(self, session: SandboxSession) -> None:
        """Records (and labels) what the SDK just made, or, when that fails or
        is cancelled, has the SDK tear it down before the error goes on: a
        session the caller never gets must not leave a sandbox billing that
        no record names."""
        try:
            await self._created(session)
        except BaseException:
            try:
                await asyncio.shield(super().delete(session))  # type: ignore[misc]
            except BaseException as teardown:  # the first error is the one to raise
                sdk_logger.error("sandbox-reclaim: tearing down an unrecorded sandbox failed: %s", teardown)
            raise

    async def _created(self, session: SandboxSession) -> None:
        """Labels (where the vendor labels an existing sandbox) and records the
        session's sandbox once its id exists and differs from what we recorded;
        a vendor that creates lazily gets here again after ``start``."""
        state = session._inner.state
        sandbox_id = self._reclaim.sandbox_id(state)
        if sandbox_id is None or getattr(session, "_sandbox_reclaim_recorded", None) == sandbox_id:
            return
        # Recorded first: from then on the sweep knows it, labelled or not.
        await self._reclaim.record(state)
        session._sandbox_reclaim_recorded = sandbox_id  # type: ignore[attr-defined]
        await self._label_existing(session)

    async def after_start(self, session: SandboxSession) -> None:
        await self._created(session)

    async def finish(self, session: SandboxSession) -> None:
        """The honest destroy, once per session (``shutdown`` and ``delete``
        both end with it; the second finds nothing left to do). A failure of
        its own (the store unreachable: a destroy that fails is the ledger's)
        is logged through the SDK's logger, never raised into the SDK's
        teardown, and the next of the two tries again."""
        if getattr(session, "_sandbox_reclaim_done", False):
            return
        state = session._inner.state
        try:
            recorded = getattr(session, "_sandbox_reclaim_recorded", None)
            forgot = recorded is not None and self._reclaim.sandbox_id(state) is None
            if forgot and not getattr(state, "pause_on_exit", False):
                # The SDK's teardown forgot the id (Modal's clears `sandbox_id`):
                # the record still names the sandbox, and the reclaim destroys by it.
                await asyncio.shield(self._reclaim.reclaim(self._reclaim.key(state), state))
            else:
                await asyncio.shield(self._reclaim.finish(state))
        except Exception as error:
            sdk_logger.error(
                "sandbox-reclaim: reclaiming session %s failed (sandbox-reclaim reconcile finds it): %s",
                self._reclaim.key(state),
                error,
            )
            return
        session._sandbox_reclaim_done = True  # type: ignore[attr-defined]
