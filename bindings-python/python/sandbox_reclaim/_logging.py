"""Adapts a ``logging.Logger``/``LoggerAdapter`` to the reclaim logger methods."""

from __future__ import annotations

import logging
from typing import Any, cast

from ._protocols import ReclaimLogger

WARN_LEVEL = logging.WARNING
"""``warn`` lines: something is wrong but the reclaim goes on."""
ERRORS_LEVEL = logging.ERROR
"""``errors`` lines: the reclaimer failed its job; a sandbox may be leaking."""
SANDBOX_LEVEL = logging.DEBUG
"""``sandbox`` lines: routine lifecycle news."""


class StdlibLogger:
    """Sends reclaim lines to a stdlib logger, the meta as ``extra`` (so a
    formatter can use ``%(runId)s``)."""

    __slots__ = ("_target",)

    def __init__(self, target: logging.Logger | logging.LoggerAdapter[Any]) -> None:
        self._target = target

    def warn(self, message: str, meta: dict[str, Any]) -> None:
        self._log(WARN_LEVEL, message, meta)

    def errors(self, message: str, meta: dict[str, Any]) -> None:
        self._log(ERRORS_LEVEL, message, meta)

    def sandbox(self, message: str, meta: dict[str, Any]) -> None:
        self._log(SANDBOX_LEVEL, message, meta)

    def _log(self, level: int, message: str, meta: dict[str, Any]) -> None:
        target = self._target
        if not target.isEnabledFor(level):
            return
        if isinstance(target, logging.LoggerAdapter):
            # An adapter's process() may replace `extra` with its own (the
            # default before 3.13 does): merge, so neither side is lost.
            message, kwargs = target.process(message, {"extra": meta})
            extra = kwargs.get("extra")
            kwargs["extra"] = meta if extra is None or extra is meta else {**extra, **meta}
            kwargs.setdefault("stacklevel", 4)
            target.logger.log(level, message, **kwargs)
        else:
            target.log(level, message, extra=meta, stacklevel=4)


def adapt_logger(logger: object) -> ReclaimLogger | None:
    """The logger the interpreter calls, or ``None``. Raises ``TypeError``
    naming what is missing before anything else happens."""
    if logger is None:
        return None
    if isinstance(logger, (logging.Logger, logging.LoggerAdapter)):
        return StdlibLogger(logger)
    for method in ("warn", "errors", "sandbox"):
        if not callable(getattr(logger, method, None)):
            raise TypeError(
                f"logger must be a logging.Logger, a logging.LoggerAdapter or an object with "
                f"warn/errors/sandbox methods; {type(logger).__name__} has no callable `{method}`"
            )
    return cast(ReclaimLogger, logger)
