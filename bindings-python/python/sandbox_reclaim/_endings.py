"""What a run's ending resolves with or raises (the ending's layout is the
core's: ``proto/src/wire.rs``)."""

from __future__ import annotations

import json
from typing import Any

from . import _native
from ._errors import SandboxReclaimFailedError

(_, _RESOLVE_NOTHING, _RESOLVE_STRING, _RESOLVE_JSON, _REJECT_HOST_ERROR, _REJECT_RECLAIM_FAILED) = _native.protocol()["endings"]


def finish(batch: tuple[Any, ...], values: dict[int, Any]) -> Any:
    """What the run's ending resolves with, or raises."""
    ending = batch[2]
    if ending in (_RESOLVE_STRING, _RESOLVE_NOTHING, _RESOLVE_JSON):
        return None if ending == _RESOLVE_NOTHING else json.loads(batch[3]) if ending == _RESOLVE_JSON else batch[3]
    if ending == _REJECT_RECLAIM_FAILED:
        raise SandboxReclaimFailedError._from_core(batch[3], batch[4], batch[5])
    error = values.get(batch[3]) if ending == _REJECT_HOST_ERROR else None
    if isinstance(error, BaseException):
        raise error
    raise RuntimeError(f"sandbox_reclaim: the flow ended on what it could not read (ending {ending})")
