"""``owner_labels(owner, key, vendor)``: every case of
tests/vectors/labels/owner-labels.json through the Python binding (Rust and
Node run the same cases). An error is a ``ValueError`` naming its field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sandbox_reclaim import KubernetesMarks, _native, owner_labels

VECTORS = json.loads((Path(__file__).resolve().parents[1] / "vectors/labels/owner-labels.json").read_text())


@pytest.mark.parametrize("case", VECTORS["cases"], ids=lambda case: str(case["name"]))
def test_every_vector(case: dict[str, Any]) -> None:
    call: Any = owner_labels  # the vendor comes from JSON: typed by the overloads only below
    args = [case["owner"], case["key"]] + ([case["vendor"]] if "vendor" in case else [])
    if "error" in case:
        with pytest.raises(ValueError) as refused:
            call(*args)
        message = str(refused.value)
        assert f"`{case['error']['field']}`" in message and case["error"]["match"] in message, message
    else:
        assert call(*args) == case["expect"]


def test_every_vendor_has_a_case_and_the_shapes_are_typed() -> None:
    covered = {case.get("vendor") for case in VECTORS["cases"]}
    assert [key for key, _ in _native.hosted_vendors() if key not in covered] == []
    # The overloads type each shape (mypy --strict checks these lines).
    labels: dict[str, str] = owner_labels("team-a", "k", "e2b")
    strings: list[str] = owner_labels("team-a", "k", "upstash-box")
    metadata: KubernetesMarks = owner_labels("team-a", "k", "kubernetes")
    assert (labels["io.sandbox-reclaim.owner"], strings, metadata["annotations"]) == ("team-a", ["sr:team-a"], {"io.sandbox-reclaim.key": "k"})
    with pytest.raises(TypeError, match="vendor"):
        owner_labels("team-a", "k", 3)  # type: ignore[call-overload]
