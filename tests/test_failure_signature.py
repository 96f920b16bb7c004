"""A finding's signature (``Failure.signature``): component, what failed, and the method
of the failing step; what decides whether two failures of a run are one finding."""

from __future__ import annotations

import pytest

from refimpl.conformance.search.config import Failure, FailureKind, Step


def _failure(kind: FailureKind, message: str, methods: list[str]) -> Failure:
    steps = [Step({"method": m}, None, None) for m in methods]
    return Failure(kind, "informer", steps, message, example=1, found_after=0.0)


@pytest.mark.parametrize(
    ("kind", "message", "expected"),
    [
        ("invariant", "INF-3 a handler missed a notification", "informer/INF-3/step"),
        ("invariant", "the cache broke FIFO-7; then REF-1", "informer/FIFO-7/step"),
        ("invariant", "no ID in this message", "informer/invariant/step"),
        ("disagreement", "pop answered a@2, the reference a@1 (INF-3)", "informer/differs/step"),
        ("adapter", "the adapter exited with status 2", "informer/adapter/step"),
    ],
)
def test_signature_names_component_what_and_failing_method(
    kind: FailureKind, message: str, expected: str
) -> None:
    assert _failure(kind, message, ["create", "step"]).signature == expected


def test_signature_uses_the_last_step_and_survives_an_empty_trace() -> None:
    assert _failure("invariant", "REF-3 x", ["step", "relist"]).signature == "informer/REF-3/relist"
    assert _failure("adapter", "did not start", []).signature == "informer/adapter/-"
