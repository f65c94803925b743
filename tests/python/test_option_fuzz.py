"""The option readers on arbitrary values: every option of every flow, fed
strings (lone surrogates, non-ASCII, digits), numbers (NaN, infinities,
negatives, fractions, past 2**53), booleans, None, containers and objects.
Each call either runs or raises TypeError / ValueError naming the option;
nothing else (no other exception, no crash, no hang)."""

from __future__ import annotations

import math
import random
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import sandbox_reclaim as sr
from sandbox_reclaim import _native


class Provider:
    name = "docker"

    async def destroy(self, sandbox: Any) -> None:
        return None


def values(seed: int) -> Callable[[], Any]:
    chosen = random.Random(seed)
    pieces = ["", "a", "5", "-1", "1e3", "\ud800", "é", "∞", " ", "0x10", "10ms", "\x00", "NaN"]
    numbers = [0, 1, -1, 0.5, 2**53, 2**53 + 2, -(2**53), math.nan, math.inf, -math.inf, 5e-324, 1e300, 10**30]

    def text() -> str:
        return "".join(chosen.choice(pieces) for _ in range(chosen.randrange(4)))

    def value() -> Any:
        kind = chosen.randrange(9)
        if kind == 0:
            return text()
        if kind == 1:
            return chosen.choice(numbers)
        if kind == 2:
            return chosen.random() < 0.5
        if kind == 3:
            return None
        if kind == 4:
            return {}
        if kind == 5:
            return [chosen.choice(numbers)]
        if kind == 6:
            return object()
        if kind == 7:
            return chosen.randrange(10**6)
        return b"5"

    return value


FLOWS: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]] = {
    "reclaimAll": lambda options: sr.reclaim_all([], provider=Provider(), instances=sr.InMemorySandboxInstanceStore(), **options),
    "reconcile": lambda options: sr.reconcile(provider=Provider(), instances=sr.InMemorySandboxInstanceStore.with_ledger(), **options),
    "retryLeaks": lambda options: sr.retry_leaks(provider=Provider(), instances=sr.InMemorySandboxInstanceStore.with_ledger(), **options),
}


@pytest.mark.parametrize("flow", sorted(FLOWS))
async def test_any_option_value_runs_or_is_a_typed_error_naming_the_option(flow: str) -> None:
    value = values(0x5EED + len(flow))
    names = _native.option_names(flow)
    assert names, "the core names the options"
    for name in names:
        for _ in range(60):
            given = value()
            try:
                await FLOWS[flow]({name: given})
            except (TypeError, ValueError) as error:
                assert name in str(error), f"{flow} {name}={given!r}: the message names the option: {error}"
