"""The replay-based shrinker, ``minimize()`` in refimpl/conformance/runner.py.

Two levels. The algorithm alone, with the replay replaced by a pure function of the
request list (so each case is exact and fast): pairs of steps that are only needed by
each other go together, which contiguous chunks cannot do. And end to end against a
broken adapter from adapters/broken: the shrunk trace keeps the usage contract (no
``done`` of an item the adapter did not hand out) unless ``--misuse`` was asked for.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from refimpl.conformance import runner
from refimpl.conformance.report import Step
from refimpl.conformance.runner import Config, Failure, RunContext, minimize, try_trace

BROKEN = Path(__file__).resolve().parent.parent / "adapters" / "broken" / "adapter.py"


def call(method: str, **args: Any) -> dict[str, Any]:
    return {"op": "call", "instance": "x", "method": method, "args": args}


CREATE = {"op": "create", "instance": "x", "component": "queue", "options": {}}


def failure_of(requests: Sequence[dict[str, Any]]) -> Failure:
    steps = [Step(r, {"result": None}, {"result": None}) for r in requests]
    return Failure("disagreement", "queue", steps, "differs", example=1, found_after=0.0)


def with_oracle(
    monkeypatch: pytest.MonkeyPatch, fails: Callable[[list[dict[str, Any]]], bool]
) -> RunContext:
    """A context whose replays answer ``fails(requests)`` without any adapter."""

    def replay(
        ctx: RunContext, component: str, requests: Sequence[dict[str, Any]]
    ) -> Failure | None:
        return failure_of(requests) if fails(list(requests)) else None

    monkeypatch.setattr(runner, "try_trace", replay)
    return RunContext(Config(command=["unused"], shrink_budget=10.0), io.StringIO())


def balanced_and_ends_in_len(requests: list[dict[str, Any]]) -> bool:
    """Fails iff ``add a`` and ``shut_down`` are there, every add has a get (as many of
    each) and the last step is ``len``: an extra ``add``/``get_nowait`` pair can only go
    together."""
    methods = [r.get("method") for r in requests]
    adds = [r for r in requests if r.get("method") == "add"]
    return (
        methods[-1] == "len"
        and call("add", item="a") in adds
        and "shut_down" in methods
        and len(adds) == methods.count("get_nowait")
    )


PADDED = [
    CREATE,
    call("add", item="b"),  # only its get needs it, and it needs its get
    call("add", item="a"),
    call("shut_down"),
    call("get_nowait"),
    call("get_nowait"),
    call("len"),
]


def test_a_step_and_the_step_that_consumes_it_go_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctx = with_oracle(monkeypatch, balanced_and_ends_in_len)
    assert balanced_and_ends_in_len(PADDED)
    shrunk = [s.request for s in minimize(ctx, failure_of(PADDED)).steps]
    assert shrunk == [
        CREATE,
        call("add", item="a"),
        call("shut_down"),
        call("get_nowait"),
        call("len"),
    ]


def test_chunks_alone_cannot_remove_that_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    """The case above needs pair removal: no contiguous run of PADDED can go."""
    ctx = with_oracle(monkeypatch, balanced_and_ends_in_len)
    monkeypatch.setattr(runner, "_drop_pair", lambda best, still_fails: None)
    assert len(minimize(ctx, failure_of(PADDED)).steps) == len(PADDED)


def test_pairs_are_tried_after_chunks_and_chunks_again_after_a_pair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two independent padding pairs plus removable noise: everything extra goes."""
    ctx = with_oracle(monkeypatch, balanced_and_ends_in_len)
    padded = [
        CREATE,
        call("add", item="c"),
        call("len"),
        call("add", item="b"),
        call("add", item="a"),
        call("shut_down"),
        call("shutting_down"),
        call("get_nowait"),
        call("get_nowait"),
        call("get_nowait"),
        call("len"),
    ]
    assert balanced_and_ends_in_len(padded)
    assert len(minimize(ctx, failure_of(padded)).steps) == 5


# done-forgets-requeue: Done drops an item re-added while it was in flight. Without the
# get_nowait, "done b" is a stray Done of a queued item, which client-go answers by
# queueing b a second time (len 2) and the broken queue does not (len 1): a shorter
# failure, but one that shows a misuse the run never asked for.
DONE_TRACE = [
    CREATE,
    call("add", item="b"),
    call("get_nowait"),
    call("add", item="b"),
    call("done", item="b"),
    call("len"),
]


def shrink_on_broken(bug: str, requests: list[dict[str, Any]], *, misuse: bool) -> list[Any]:
    """``requests`` replayed on the broken adapter ``bug``, then minimised."""
    config = Config(
        command=[sys.executable, str(BROKEN), "--bug", bug],
        shrink_budget=10.0,
        seed=1,
        misuse=misuse,
        progress=False,
    )
    ctx = RunContext(config, io.StringIO())
    try:
        ctx.start_adapter()
        found = try_trace(ctx, "queue", requests)
        assert found is not None
        return [s.request for s in minimize(ctx, found).steps]
    finally:
        ctx.close()


@pytest.mark.timeout(60)
def test_shrinking_keeps_the_usage_contract() -> None:
    shrunk = shrink_on_broken("done-forgets-requeue", DONE_TRACE, misuse=False)
    assert shrunk == DONE_TRACE


@pytest.mark.timeout(60)
def test_with_misuse_the_stray_done_is_allowed() -> None:
    shrunk = shrink_on_broken("done-forgets-requeue", DONE_TRACE, misuse=True)
    assert call("get_nowait") not in shrunk
    assert len(shrunk) < len(DONE_TRACE)


# ring-grows-out-of-order, seed 1 of tests/test_conformance_broken.py before get/done
# units: 14 steps, and no one or two of them can go without a stray done (removing
# "get_nowait -> b" makes "done b" a misuse). With each get and its done one unit,
# the shrinker reaches the 8-step form (a wrapped ring of b, c grows when a is pushed).
RING_TRACE = [
    CREATE,
    call("add", item="a"),
    call("add", item="b"),
    call("get_nowait"),
    call("add", item="c"),
    call("get_nowait"),
    call("done", item="b"),
    call("get_nowait"),
    call("done", item="a"),
    call("add", item="c"),
    call("add", item="b"),
    call("done", item="c"),
    call("add", item="a"),
    call("get_nowait"),
]


@pytest.mark.timeout(60)
def test_a_get_and_its_done_go_together() -> None:
    shrunk = shrink_on_broken("ring-grows-out-of-order", RING_TRACE, misuse=False)
    assert len(shrunk) == 8, shrunk


@pytest.mark.timeout(60)
def test_without_get_done_units_the_ring_trace_stays_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runner, "_consumers", lambda steps: {})
    shrunk = shrink_on_broken("ring-grows-out-of-order", RING_TRACE, misuse=False)
    assert len(shrunk) > 8, shrunk


def test_an_advance_and_the_state_after_it_are_dropped_together() -> None:
    """A steered reference learns from the ``state`` after an ``advance`` what the adapter
    woke up to do; dropping either one alone would leave the reference guessing."""
    advance = {"op": "advance", "seconds": 1.0}
    requests = [CREATE, call("start"), advance, call("state"), call("state")]
    best = failure_of(requests)
    assert runner._without(best, {3}) == [CREATE, call("start"), call("state")]
    assert runner._without(best, {2}) == [CREATE, call("start"), call("state")]
    # A state that does not follow an advance goes alone.
    assert runner._without(best, {4}) == requests[:4]
