"""Work-queue metrics (WQ-14; client-go util/workqueue/metrics.go) with
InMemoryMetricsProvider and a FakeClock.

The queues here use a huge refresh period so the background refresh never races with
an explicit ``update_unfinished_work()``; one test checks the refresh loop itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from refimpl.clock import FakeClock
from refimpl.workqueue import DelayingQueue, InMemoryMetricsProvider, Queue
from refimpl.workqueue.core import MeteredQueueCore, QueueCore
from refimpl.workqueue.metrics import QueueMetrics, QueueMetricSet

if TYPE_CHECKING:
    from conftest import Eventually

    Later = Callable[[Any], None]

NEVER = 1e12  # refresh period that never elapses in a test


def _queue(
    name: str, clock: FakeClock, later: Later, period: float = NEVER
) -> tuple[Queue[str], QueueMetricSet]:
    """A queue named ``name`` with in-memory metrics, shut down at teardown, and its
    metric set."""
    provider = InMemoryMetricsProvider()
    q: Queue[str] = Queue(
        name, clock=clock, metrics_provider=provider, unfinished_work_update_period=period
    )
    later(q)
    return q, provider[name]


def test_adds_counts_only_newly_dirty_adds_and_depth_follows_dirty(
    fake_clock: FakeClock, shut_down_later: Later
) -> None:
    q, m = _queue("m-adds", fake_clock, shut_down_later)
    for x in ["a", "a", "b", "a"]:
        q.add(x)
    assert m.adds.value == 2
    assert m.depth.value == 2
    assert q.get() == ("a", False)
    assert m.depth.value == 1
    q.add("a")  # in flight, newly dirty: counted (client-go counts it in depth too)
    q.add("a")  # already dirty: not counted
    assert m.adds.value == 3
    assert m.depth.value == 2
    q.done("a")  # re-queued by done: no new add
    assert m.adds.value == 3
    assert m.depth.value == 2
    q.shut_down()
    q.add("c")  # ignored after shutdown: no metric
    assert m.adds.value == 3


def test_latency_is_measured_from_the_first_add(
    fake_clock: FakeClock, shut_down_later: Later
) -> None:
    q, m = _queue("m-latency", fake_clock, shut_down_later)
    q.add("a")
    fake_clock.step(2.0)
    q.add("a")  # a repeat does not restart the clock
    fake_clock.step(1.0)
    assert q.get() == ("a", False)
    assert m.latency.observations == [3.0]
    fake_clock.step(1.0)
    q.add("a")  # re-dirtied while in flight at +4
    fake_clock.step(1.0)
    q.done("a")
    fake_clock.step(4.0)
    q.get()
    assert m.latency.observations == [3.0, 5.0]


def test_work_duration_is_get_to_done(fake_clock: FakeClock, shut_down_later: Later) -> None:
    q, m = _queue("m-work", fake_clock, shut_down_later)
    q.add("a")
    fake_clock.step(10.0)
    q.get()
    fake_clock.step(4.0)
    q.done("a")
    assert m.work_duration.observations == [4.0]
    q.done("never-handed-out")  # nothing to measure
    q.done("a")  # a second done: nothing to measure either
    assert m.work_duration.observations == [4.0]


def test_unfinished_work_and_longest_running_processor(
    fake_clock: FakeClock, shut_down_later: Later
) -> None:
    q, m = _queue("m-unfinished", fake_clock, shut_down_later)
    q.add("a")
    q.add("b")
    q.get()
    fake_clock.step(1.0)
    q.get()
    fake_clock.step(2.0)
    q.update_unfinished_work()
    assert m.unfinished_work_seconds.value == 5.0  # 3 + 2
    assert m.longest_running_processor_seconds.value == 3.0
    q.done("a")
    q.update_unfinished_work()
    assert m.unfinished_work_seconds.value == 2.0
    assert m.longest_running_processor_seconds.value == 2.0
    q.done("b")
    q.update_unfinished_work()
    assert m.unfinished_work_seconds.value == 0.0
    assert m.longest_running_processor_seconds.value == 0.0
    q.add("c")
    q.get()
    q.shut_down()
    fake_clock.step(7.0)
    q.update_unfinished_work()  # client-go stops refreshing once shut down
    assert m.unfinished_work_seconds.value == 0.0


def test_refresh_loop_updates_gauges_every_period_of_fake_time(
    fake_clock: FakeClock, eventually: Eventually, shut_down_later: Later
) -> None:
    q, m = _queue("m-loop", fake_clock, shut_down_later, period=0.5)
    q.add("a")
    q.get()
    fake_clock.step(0.25)
    fake_clock.step(0.25)
    eventually(lambda: m.unfinished_work_seconds.value == 0.5, "refresh at +0.5 s")
    assert m.longest_running_processor_seconds.value == 0.5


def test_retries_count_every_accepted_add_after(
    fake_clock: FakeClock, shut_down_later: Later
) -> None:
    provider = InMemoryMetricsProvider()
    dq: DelayingQueue[str] = DelayingQueue("m-retries", clock=fake_clock, metrics_provider=provider)
    shut_down_later(dq)
    m = provider["m-retries"]
    dq.add_after("a", 1.0)
    dq.add_after("a", 2.0)  # discarded (later than the waiting one) but still a retry
    dq.add_after("b", 0.0)
    dq.add_after("c", -1.0)
    assert m.retries.value == 4
    with pytest.raises(ValueError):
        dq.add_after("d", math.nan)
    assert m.retries.value == 4
    dq.add("e")  # plain adds are not retries
    assert m.retries.value == 4
    # The inner queue reports under the same name.
    assert m.adds.value == 3
    dq.shut_down()
    dq.add_after("f", 1.0)
    assert m.retries.value == 4


def test_unnamed_queue_records_no_metrics(fake_clock: FakeClock, shut_down_later: Later) -> None:
    provider = InMemoryMetricsProvider()
    dq: DelayingQueue[str] = DelayingQueue(clock=fake_clock, metrics_provider=provider)
    shut_down_later(dq)
    dq.add("a")
    dq.add_after("b", 0.0)
    m = provider[""]
    assert m.adds.value == 0
    assert m.retries.value == 0


# -- a state machine over QueueCore + QueueMetrics ------------------------------------------


class MetricsMachine(RuleBasedStateMachine):
    """Metrics against a model of 1.4: add (newly dirty) / get / done / refresh."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock(0.0)
        self.provider = InMemoryMetricsProvider()
        self.core: QueueCore[int] = MeteredQueueCore(
            QueueMetrics[int](self.provider, "sm", self.clock)
        )
        self.m = self.provider["sm"]
        self.adds = 0
        self.first_add: dict[int, float] = {}
        self.started: dict[int, float] = {}
        self.latencies: list[float] = []
        self.durations: list[float] = []

    @rule(x=st.integers(0, 4))
    def add(self, x: int) -> None:
        newly_dirty = not self.core.shutting_down and x not in self.core.dirty
        self.core.add(x)
        if newly_dirty:
            self.adds += 1
            self.first_add.setdefault(x, self.clock.now())

    @precondition(lambda self: len(self.core) > 0)
    @rule()
    def get(self) -> None:
        x, _ = self.core.get()
        assert x is not None
        now = self.clock.now()
        self.latencies.append(now - self.first_add.pop(x))
        self.started[x] = now

    @precondition(lambda self: bool(self.core.processing))
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        x = data.draw(st.sampled_from(sorted(self.core.processing)))
        self.core.done(x)
        self.durations.append(self.clock.now() - self.started.pop(x))

    @rule(dt=st.sampled_from([0.5, 1.0, 2.0]))
    def step(self, dt: float) -> None:
        self.clock.step(dt)

    @rule()
    def refresh(self) -> None:
        before = (
            self.m.unfinished_work_seconds.value,
            self.m.longest_running_processor_seconds.value,
        )
        self.core.update_unfinished_work()
        after = (
            self.m.unfinished_work_seconds.value,
            self.m.longest_running_processor_seconds.value,
        )
        if self.core.shutting_down:
            assert after == before
            return
        ages = [self.clock.now() - t for t in self.started.values()]
        assert after == (sum(ages), max(ages, default=0.0))

    @rule()
    def shut_down(self) -> None:
        self.core.shut_down()

    @invariant()
    def counters(self) -> None:
        assert self.m.adds.value == self.adds
        assert self.m.depth.value == len(self.core.dirty)
        assert self.m.latency.observations == self.latencies
        assert self.m.work_duration.observations == self.durations


TestMetricsMachine = MetricsMachine.TestCase
TestMetricsMachine.settings = settings(max_examples=150, stateful_step_count=50, deadline=None)
