"""The threaded Queue shell: blocking get, wake-ups, shutdown and draining shutdown.

shut_down_with_drain follows client-go's *code* (util/workqueue/queue.go
ShutDownWithDrain; WQ-12): it waits only for items already handed out, returns after the
last in-flight done even if that done re-queued the item, and a later shut_down releases
it. Blocking calls run in bounded daemon threads; a "still blocked" check waits a short
real time (never virtual time).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from queue_model import QueueModel

from refimpl.workqueue import InMemoryMetricsProvider, Queue

if TYPE_CHECKING:
    from conftest import BackgroundCall, Eventually

    InThread = Callable[[Callable[[], Any], str], BackgroundCall]

#: How long a "this call is still blocked" check waits (real time, deliberately short).
STILL_BLOCKED = 0.05

pytestmark = pytest.mark.timeout(60)


def _threads_named(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name]


# -- the shell against the rule table (single thread, never blocking) ---------------------


class QueueShellMachine(RuleBasedStateMachine):
    """The locked shell must expose exactly the core's transitions (WQ-1 to WQ-13)."""

    def __init__(self) -> None:
        super().__init__()
        self.q: Queue[int] = Queue()
        self.m = QueueModel[int]()
        self.shut = False

    @rule(x=st.integers(0, 5))
    def add(self, x: int) -> None:
        self.q.add(x)
        if not self.shut:
            self.m.add(x)

    @precondition(lambda self: bool(self.m.queue) or self.shut)
    @rule()
    def get(self) -> None:
        if not self.m.queue:
            assert self.q.get() == (None, True)
            return
        x = self.m.get()
        assert self.q.get() == (x, False)

    @precondition(lambda self: bool(self.m.processing))
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        self.q.done(self.m.done_drawn(data))

    @rule()
    def shut_down(self) -> None:
        self.q.shut_down()
        self.shut = True

    @precondition(lambda self: not self.m.processing)
    @rule()
    def shut_down_with_drain_idle(self) -> None:
        # Nothing in flight: returns at once even with items queued.
        self.q.shut_down_with_drain()
        self.shut = True

    @invariant()
    def matches(self) -> None:
        queue, dirty, processing = self.q.snapshot()
        assert queue == self.m.queue
        assert dirty == self.m.dirty
        assert processing == self.m.processing
        assert len(self.q) == self.q.len() == len(self.m.queue)
        assert self.q.shutting_down() == self.shut


TestQueueShellMachine = QueueShellMachine.TestCase
TestQueueShellMachine.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)


# -- blocking get ---------------------------------------------------------------------


def test_get_blocks_until_an_item_is_added(in_thread: InThread) -> None:
    q: Queue[str] = Queue()
    getter = in_thread(q.get, "get")
    assert not getter.finished.wait(STILL_BLOCKED)
    q.add("x")
    assert getter.result() == ("x", False)
    assert q.snapshot() == ([], frozenset(), frozenset({"x"}))


def test_get_blocks_until_shut_down(in_thread: InThread) -> None:
    q: Queue[str] = Queue()
    getters = [in_thread(q.get, f"get-{i}") for i in range(3)]
    assert not getters[0].finished.wait(STILL_BLOCKED)
    q.shut_down()
    assert [g.result() for g in getters] == [(None, True)] * 3


def test_each_blocked_getter_receives_a_distinct_item(
    in_thread: InThread, eventually: Eventually
) -> None:
    q: Queue[int] = Queue()
    getters = [in_thread(q.get, f"get-{i}") for i in range(4)]
    for i in range(3):
        q.add(i)
    eventually(lambda: sum(g.done() for g in getters) == 3, "three getters served")
    served = [g for g in getters if g.done()]
    waiting = [g for g in getters if not g.done()]
    assert sorted(g.result()[0] for g in served) == [0, 1, 2]
    assert not any(g.result()[1] for g in served)
    q.shut_down()
    assert [g.result() for g in waiting] == [(None, True)]


def test_done_wakes_a_getter_for_an_item_readded_in_flight(in_thread: InThread) -> None:
    q: Queue[str] = Queue()
    q.add("x")
    assert q.get() == ("x", False)
    q.add("x")
    getter = in_thread(q.get, "get")
    assert not getter.finished.wait(STILL_BLOCKED), "x handed out while still in flight"
    q.done("x")
    assert getter.result() == ("x", False)


def test_queued_items_are_handed_out_after_shut_down() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    q.add("b")
    q.shut_down()
    assert q.shutting_down()
    q.add("c")
    assert q.get() == ("a", False)
    assert q.get() == ("b", False)
    assert q.get() == (None, True)
    assert q.get() == (None, True)
    q.shut_down()  # idempotent


def test_no_metrics_thread_without_a_provider() -> None:
    Queue[str]("shell-no-metrics")
    assert _threads_named("workqueue-metrics-shell-no-metrics") == []


def test_no_metrics_thread_for_an_unnamed_queue() -> None:
    """client-go: metrics (and their refresh goroutine) need a name as well."""
    q: Queue[str] = Queue(metrics_provider=InMemoryMetricsProvider())
    assert _threads_named("workqueue-metrics-") == []
    q.shut_down()


@pytest.mark.parametrize("how", ["shut_down", "shut_down_with_drain"])
def test_metrics_thread_stops_at_shutdown(how: str) -> None:
    name = f"shell-metrics-{how}"
    q: Queue[str] = Queue(name, metrics_provider=InMemoryMetricsProvider())
    assert len(_threads_named(f"workqueue-metrics-{name}")) == 1
    getattr(q, how)()
    assert _threads_named(f"workqueue-metrics-{name}") == []


# -- shut_down_with_drain ---------------------------------------------------------------


def test_drain_returns_at_once_when_nothing_is_in_flight(in_thread: InThread) -> None:
    q: Queue[str] = Queue()
    q.add("a")
    q.add("b")
    in_thread(q.shut_down_with_drain, "drain").result()
    # Queued, not started items are not waited for -- and are still handed out.
    assert q.get() == ("a", False)
    assert q.get() == ("b", False)
    assert q.get() == (None, True)


def test_drain_waits_for_every_in_flight_item(in_thread: InThread) -> None:
    q: Queue[str] = Queue()
    for x in "abc":
        q.add(x)
    assert q.get() == ("a", False)
    assert q.get() == ("b", False)
    drain = in_thread(q.shut_down_with_drain, "drain")
    assert not drain.finished.wait(STILL_BLOCKED)
    q.add("z")  # ignored: shutting down
    q.done("a")
    assert not drain.finished.wait(STILL_BLOCKED), "returned with b still in flight"
    q.done("b")
    drain.result()
    assert q.snapshot() == (["c"], frozenset({"c"}), frozenset())


def test_drain_releases_blocked_getters(in_thread: InThread) -> None:
    q: Queue[str] = Queue()
    q.add("a")
    q.get()
    getter = in_thread(q.get, "get")
    drain = in_thread(q.shut_down_with_drain, "drain")
    assert getter.result() == (None, True)
    q.done("a")
    drain.result()


def test_drain_returns_after_last_done_even_if_it_requeued(in_thread: InThread) -> None:
    q: Queue[str] = Queue()
    q.add("x")
    assert q.get() == ("x", False)
    q.add("x")  # dirty while in flight: done will re-queue it
    drain = in_thread(q.shut_down_with_drain, "drain")
    assert not drain.finished.wait(STILL_BLOCKED)
    q.done("x")
    try:
        drain.result(timeout=1.0)
        # The re-queued item is still handed out after the drain returned.
        assert q.get() == ("x", False)
    finally:
        q.shut_down()  # release the drain thread if the bug kept it waiting


def test_later_shut_down_releases_a_waiting_drain(in_thread: InThread) -> None:
    q: Queue[str] = Queue()
    q.add("x")
    q.get()
    drain = in_thread(q.shut_down_with_drain, "drain")
    assert not drain.finished.wait(STILL_BLOCKED)
    q.shut_down()
    drain.result()
    # x is still in flight; its done is accepted afterwards as usual.
    assert q.snapshot()[2] == {"x"}
    q.done("x")
    assert q.snapshot() == ([], frozenset(), frozenset())


def test_two_concurrent_draining_callers_both_return(
    in_thread: InThread, eventually: Eventually
) -> None:
    q: Queue[str] = Queue()
    q.add("x")
    q.add("y")
    q.get()
    q.get()
    drains = [in_thread(q.shut_down_with_drain, f"drain-{i}") for i in range(2)]
    assert not any(d.finished.wait(STILL_BLOCKED) for d in drains)
    q.done("x")
    assert not any(d.finished.wait(STILL_BLOCKED) for d in drains)
    q.done("y")
    for d in drains:
        d.result()


def test_drain_after_plain_shut_down_still_waits(in_thread: InThread) -> None:
    q: Queue[str] = Queue()
    q.add("x")
    q.get()
    q.shut_down()
    drain = in_thread(q.shut_down_with_drain, "drain")
    assert not drain.finished.wait(STILL_BLOCKED)
    q.done("x")
    drain.result()


# -- notifications go only to threads that wait (issue 12) -----------------------------------


class _CountingCondition:
    """Wraps a Condition and counts notify / notify_all calls."""

    def __init__(self, cond: threading.Condition) -> None:
        self.cond = cond
        self.notified = 0

    def __enter__(self) -> bool:
        return self.cond.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self.cond.__exit__(*exc)

    def wait(self, timeout: float | None = None) -> bool:
        return self.cond.wait(timeout)

    def notify(self, n: int = 1) -> None:
        self.notified += 1
        self.cond.notify(n)

    def notify_all(self) -> None:
        self.notified += 1
        self.cond.notify_all()


def _counting_queue() -> tuple[Queue[str], _CountingCondition, _CountingCondition]:
    """A queue whose not-empty and idle conditions count their notifications."""
    q: Queue[str] = Queue()
    not_empty, idle = _CountingCondition(q._not_empty), _CountingCondition(q._idle)
    q._not_empty, q._idle = not_empty, idle  # type: ignore[assignment]
    return q, not_empty, idle


def test_no_notification_when_nobody_waits() -> None:
    q, not_empty, idle = _counting_queue()
    for _ in range(3):
        q.add("x")
        item, _ = q.get()
        q.add("x")  # dirty while in flight: done re-queues it
        q.done(item)  # type: ignore[arg-type]
        assert q.get() == ("x", False)
        q.done("x")  # idle again
    assert (not_empty.notified, idle.notified) == (0, 0)


def test_a_waiting_getter_is_notified_by_add_and_by_a_requeueing_done(
    in_thread: InThread, eventually: Eventually
) -> None:
    q, not_empty, _ = _counting_queue()
    q.add("x")
    assert q.get() == ("x", False)
    q.add("x")  # dirty while in flight
    getter = in_thread(q.get, "get")
    eventually(lambda: q._getters == 1, "the getter waits")
    q.done("x")  # re-queues x: the waiting getter must be woken
    assert getter.result() == ("x", False)
    assert not_empty.notified == 1
    getter = in_thread(q.get, "get")
    eventually(lambda: q._getters == 1, "the getter waits again")
    q.add("y")
    assert getter.result() == ("y", False)
    assert not_empty.notified == 2
    assert q._getters == 0


def test_a_waiting_drain_is_notified_by_the_last_done(
    in_thread: InThread, eventually: Eventually
) -> None:
    q, _, idle = _counting_queue()
    q.add("x")
    q.get()
    drainer = in_thread(q.shut_down_with_drain, "drain")
    eventually(lambda: q._drainers == 1, "the drain waits")
    q.done("x")
    assert drainer.result() is None
    assert idle.notified == 1
    assert q._drainers == 0
