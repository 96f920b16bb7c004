"""Bad input and broken usage contracts (edge cases of WQ-1 to WQ-14
and the worker-loop mistakes of docs/05-the-worker-loop.md).

Bad input must fail loudly and leave the queue unchanged; misuse that client-go
tolerates must have client-go's exact consequence (including the harmful ones).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from refimpl.clock import FakeClock
from refimpl.workqueue import (
    DelayingQueue,
    ItemExponentialFailureRateLimiter,
    Queue,
    RateLimitingQueue,
)

if TYPE_CHECKING:
    from conftest import BackgroundCall, Eventually

    InThread = Callable[[Callable[[], Any], str], BackgroundCall]
    Later = Callable[[Any], None]

STILL_BLOCKED = 0.05

pytestmark = pytest.mark.timeout(60)

#: Every kind of unhashable item. ``set`` gets its own test below: Python's set
#: operations turn a ``set`` argument into a ``frozenset`` instead of raising.
UNHASHABLE: list[Any] = [[1], {"a": 1}, ([1],), bytearray(b"x")]
CLEAR = "must be hashable"


def _check_invariants(q: Queue[Any]) -> None:
    queue, dirty, processing = q.snapshot()
    assert len(queue) == len(set(queue)), f"duplicate in queue: {queue}"
    assert set(queue) <= dirty
    assert not set(queue) & processing


# -- unhashable items -----------------------------------------------------------------------


@pytest.mark.parametrize("bad", UNHASHABLE, ids=lambda b: type(b).__name__)
def test_unhashable_items_are_rejected_and_change_nothing(bad: Any) -> None:
    q: Queue[Any] = Queue()
    q.add("a")
    q.add("b")
    q.get()
    before = q.snapshot()
    with pytest.raises(TypeError, match=CLEAR) as info:
        q.add(bad)
    assert type(bad).__name__ in str(info.value)
    with pytest.raises(TypeError, match=CLEAR):
        q.done(bad)
    assert q.snapshot() == before
    q.shut_down()
    with pytest.raises(TypeError, match=CLEAR):
        q.add(bad)  # still an error after shutdown, not silently ignored


def test_set_items_are_rejected_like_other_unhashables() -> None:
    q: Queue[Any] = Queue()
    q.add(frozenset({1, 2}))
    assert q.get() == (frozenset({1, 2}), False)
    before = q.snapshot()
    with pytest.raises(TypeError, match=CLEAR):
        q.done({1, 2})
    with pytest.raises(TypeError, match=CLEAR):
        q.add({1, 2})
    assert q.snapshot() == before


def test_set_subclass_items_are_rejected_by_done_even_for_an_equal_frozenset() -> None:
    class Tagged(set[int]):
        pass

    q: Queue[Any] = Queue()
    q.add(frozenset({1, 2}))
    q.get()
    before = q.snapshot()
    with pytest.raises(TypeError, match=CLEAR):
        q.done(Tagged({1, 2}))  # would otherwise finish the frozenset in flight
    assert q.snapshot() == before


@pytest.mark.parametrize("bad", [*UNHASHABLE, {1, 2}], ids=lambda b: type(b).__name__)
def test_unhashable_items_rejected_by_add_after_and_add_rate_limited(
    bad: Any, fake_clock: FakeClock, shut_down_later: Later
) -> None:
    calls: list[object] = []

    class Recording:
        def when(self, item: Any) -> float:
            calls.append(item)
            return 1.0

        def forget(self, item: Any) -> None:
            calls.append(item)

        def num_requeues(self, item: Any) -> int:
            return 0

    q = RateLimitingQueue[Any](Recording(), clock=fake_clock)
    shut_down_later(q)
    for delay in (1.0, 0.0):
        with pytest.raises(TypeError, match=CLEAR):
            q.add_after(bad, delay)
    with pytest.raises(TypeError, match=CLEAR):
        q.add_rate_limited(bad)
    assert calls == [], "the limiter must not record a failure for a rejected item"
    assert q.waiting() == {}
    assert q.queue.snapshot() == ([], frozenset(), frozenset())


# -- done() outside the contract ---------------------------------------------------------------


def test_done_of_an_item_never_handed_out_changes_nothing() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    q.add("b")
    q.get()
    before = q.snapshot()
    q.done("never-seen")
    assert q.snapshot() == before


def test_done_twice_without_readd_changes_nothing() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    q.get()
    q.done("a")
    before = q.snapshot()
    q.done("a")
    assert q.snapshot() == before == ([], frozenset(), frozenset())


def test_done_of_a_queued_item_pushes_a_second_copy() -> None:
    """client-go has no guard: two workers can then hold the same key at once."""
    q: Queue[str] = Queue()
    q.add("x")
    q.add("y")
    q.done("x")  # x is queued, not in flight
    queue, dirty, processing = q.snapshot()
    assert queue == ["x", "y", "x"]
    assert dirty == {"x", "y"} and processing == set()
    assert len(q) == 3
    first = q.get()
    assert first == ("x", False)
    # x is no longer dirty, but a copy is still queued behind y.
    assert q.snapshot()[0] == ["y", "x"]
    q.get()
    second = q.get()
    assert second == ("x", False)  # handed out again while the first holder has it
    assert q.snapshot()[2] == {"x", "y"}


# -- delays ------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, -math.nan, math.inf])
def test_nan_and_infinite_delays_are_rejected(bad: float, dq: DelayingQueue[str]) -> None:
    with pytest.raises(ValueError, match="add_after"):
        dq.add_after("x", bad)
    assert dq.waiting() == {}
    assert len(dq) == 0


@pytest.mark.parametrize("bad", ["1", None, True, 1j])
def test_non_numeric_delays_are_rejected(bad: Any, dq: DelayingQueue[str]) -> None:
    with pytest.raises(TypeError, match="add_after"):
        dq.add_after("x", bad)
    assert dq.waiting() == {}
    assert len(dq) == 0


@pytest.mark.parametrize("delay", [-1e-9, -5.0, -math.inf])
def test_negative_delay_adds_immediately(delay: float, dq: DelayingQueue[str]) -> None:
    dq.add_after("x", delay)
    assert dq.waiting() == {}
    assert dq.get() == ("x", False)


# -- calls after shutdown ----------------------------------------------------------------------


def test_calls_after_shut_down(fake_clock: FakeClock, eventually: Eventually) -> None:
    dq: DelayingQueue[str] = DelayingQueue(clock=fake_clock)
    dq.add("queued")
    dq.add("held")
    dq.add("queued2")
    assert dq.get() == ("queued", False)
    dq.add("queued")  # dirty while in flight
    dq.shut_down()
    dq.add("new")
    dq.add_after("later", 1.0)
    dq.add_after("now", 0.0)
    fake_clock.step(2.0)
    assert dq.waiting() == {}
    assert dq.queue.snapshot()[0] == ["held", "queued2"]
    dq.done("queued")  # still re-queues the dirty item after shutdown
    assert dq.queue.snapshot()[0] == ["held", "queued2", "queued"]
    got = [dq.get() for _ in range(3)]
    assert got == [("held", False), ("queued2", False), ("queued", False)]
    assert dq.get() == (None, True)
    assert dq.get() == (None, True)
    for x in ("held", "queued2", "queued"):
        dq.done(x)
    assert dq.queue.snapshot() == ([], frozenset(), frozenset())


# -- workers that break -------------------------------------------------------------------------


class Boom(Exception):
    pass


def _failing_worker(q: Queue[str], readd: bool) -> None:
    item, shutdown = q.get()
    assert item is not None and not shutdown
    try:
        if readd:
            q.add(item)
        raise Boom(item)
    finally:
        q.done(item)


@pytest.mark.parametrize("readd", [False, True])
def test_worker_that_raises_but_calls_done_leaves_queue_consistent(
    readd: bool, in_thread: InThread
) -> None:
    q: Queue[str] = Queue()
    q.add("x")
    q.add("y")
    worker = in_thread(lambda: _failing_worker(q, readd), "failing-worker")
    with pytest.raises(Boom):
        worker.result()
    _check_invariants(q)
    queue, _, processing = q.snapshot()
    assert processing == set()
    assert queue == (["y", "x"] if readd else ["y"])
    q.add("x")
    assert q.snapshot()[0] == ["y", "x"]
    assert q.get() == ("y", False)
    assert q.get() == ("x", False)


def test_worker_that_never_calls_done_leaves_the_key_stuck(in_thread: InThread) -> None:
    q: Queue[str] = Queue()
    q.add("x")
    assert q.get() == ("x", False)  # ...and the worker forgets done("x")
    q.add("x")
    q.add("x")
    assert q.snapshot() == ([], frozenset({"x"}), frozenset({"x"}))
    getter = in_thread(q.get, "get")
    assert not getter.finished.wait(STILL_BLOCKED), "stuck key handed out again"
    q.add("y")
    assert getter.result() == ("y", False)
    q.done("y")
    drain = in_thread(q.shut_down_with_drain, "drain")
    assert not drain.finished.wait(STILL_BLOCKED), "drain returned with x still in flight"
    assert not drain.finished.wait(STILL_BLOCKED)
    q.shut_down()  # the only way out
    drain.result()
    # x is still dirty and in flight; nothing was handed out twice.
    assert q.snapshot() == ([], frozenset({"x"}), frozenset({"x"}))
    assert q.get() == (None, True)


def test_forget_is_not_done(fake_clock: FakeClock, in_thread: InThread) -> None:
    """RL-6: forget only clears the limiter's memory."""
    q = RateLimitingQueue[str](ItemExponentialFailureRateLimiter[str](1.0, 10.0), clock=fake_clock)
    q.add("x")
    assert q.get() == ("x", False)
    q.forget("x")
    q.add("x")
    assert q.queue.snapshot() == ([], frozenset({"x"}), frozenset({"x"}))
    drain = in_thread(q.shut_down_with_drain, "drain")
    assert not drain.finished.wait(STILL_BLOCKED), "forget ended the processing"
    q.done("x")  # only done does; its re-queue of x does not hold the drain back
    drain.result()
    assert q.get() == ("x", False)


def test_drain_called_by_a_worker_holding_an_item_blocks_it(in_thread: InThread) -> None:
    q: Queue[str] = Queue()
    q.add("x")

    def worker() -> None:
        item, _ = q.get()
        q.shut_down_with_drain()  # waits for itself
        assert item is not None
        q.done(item)

    w = in_thread(worker, "self-draining-worker")
    assert not w.finished.wait(STILL_BLOCKED)
    q.shut_down()
    w.result()
    assert q.snapshot() == ([], frozenset(), frozenset())
