"""The delaying queue: DelayingCore + QueueCore on explicit times, and the threaded
DelayingQueue driven by a FakeClock (semantics.md section 1.5).

Shell tests never sleep to let time pass: virtual time moves only by ``clock.step``;
the only real-time waits are bounded waits for the timer thread to react.
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from refimpl.clock import FakeClock
from refimpl.workqueue import MAX_WAIT, DelayingCore, DelayingQueue, Queue
from refimpl.workqueue.core import QueueCore

if TYPE_CHECKING:
    from conftest import BackgroundCall, Eventually

    InThread = Callable[[Callable[[], Any], str], BackgroundCall]
    Later = Callable[[Any], None]

ITEMS = st.sampled_from("abcde")


# -- DelayingCore + QueueCore on explicit times ------------------------------------------


class DelayingMachine(RuleBasedStateMachine):
    """Waiting room and queue on explicit times in half seconds (many ties on purpose).

    Model: item -> (ready_at, order), where ``order`` is the sequence number of the
    insert that set the current ready time; due items leave by (ready_at, order).
    The queue side uses the dirty/processing rules of section 1.1.
    """

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        self.core: DelayingCore[str] = DelayingCore()
        self.queue: QueueCore[str] = QueueCore()
        self.waiting: dict[str, tuple[float, int]] = {}
        self.order = 0
        self.m_queue: list[str] = []
        self.m_dirty: set[str] = set()
        self.m_processing: set[str] = set()

    def _model_add(self, x: str) -> None:
        if x in self.m_dirty:
            return
        self.m_dirty.add(x)
        if x not in self.m_processing:
            self.m_queue.append(x)

    @rule(x=ITEMS, halves=st.integers(min_value=0, max_value=12))
    def insert(self, x: str, halves: int) -> None:
        ready = self.now + halves / 2
        earliest_before = min((r for r, _ in self.waiting.values()), default=None)
        current = self.waiting.get(x)
        changed = self.core.insert(x, ready)
        if current is not None and current[0] <= ready:
            # Already waiting with an earlier (or equal) time: the new record is dropped.
            assert changed is False
            return
        self.order += 1
        self.waiting[x] = (ready, self.order)
        assert changed == (earliest_before is None or ready < earliest_before)

    @rule(halves=st.integers(min_value=0, max_value=8))
    def advance(self, halves: int) -> None:
        self.now += halves / 2
        due = self.core.pop_due(self.now)
        expected = sorted(
            (entry for entry in self.waiting.items() if entry[1][0] <= self.now),
            key=lambda entry: entry[1],
        )
        assert due == [x for x, _ in expected]
        for x, _ in expected:
            del self.waiting[x]
        for x in due:
            self.queue.add(x)
            self._model_add(x)

    @precondition(lambda self: len(self.m_queue) > 0)
    @rule()
    def get(self) -> None:
        x = self.m_queue.pop(0)
        self.m_processing.add(x)
        self.m_dirty.discard(x)
        assert self.queue.get() == (x, False)

    @precondition(lambda self: len(self.m_processing) > 0)
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        x = data.draw(st.sampled_from(sorted(self.m_processing)))
        self.m_processing.discard(x)
        if x in self.m_dirty:
            self.m_queue.append(x)
        self.queue.done(x)

    @invariant()
    def waiting_room_matches_model(self) -> None:
        assert {x: r for x, (r, _) in self.core.waiting.items()} == {
            x: r for x, (r, _) in self.waiting.items()
        }
        assert len(self.core) == len(self.waiting)
        assert self.core.next_ready_at() == min((r for r, _ in self.waiting.values()), default=None)

    @invariant()
    def nothing_overdue_is_left_waiting(self) -> None:
        # Everything due at the last pop_due left; later inserts are never in the past.
        assert all(r >= self.now for r, _ in self.waiting.values())

    @invariant()
    def queue_matches_model(self) -> None:
        assert list(self.queue.queue) == self.m_queue
        assert self.queue.dirty == self.m_dirty
        assert self.queue.processing == self.m_processing


TestDelayingMachine = DelayingMachine.TestCase
TestDelayingMachine.settings = settings(max_examples=200, stateful_step_count=50, deadline=None)


def test_core_equal_times_leave_in_insertion_order() -> None:
    core: DelayingCore[str] = DelayingCore()
    for x in ["c", "a", "b"]:
        core.insert(x, 5.0)
    core.insert("z", 4.0)
    assert core.pop_due(3.999) == []
    assert core.pop_due(4.999) == ["z"]
    assert core.pop_due(5.0) == ["c", "a", "b"]
    assert core.pop_due(100.0) == []


def test_core_earliest_wins_and_fires_once() -> None:
    core: DelayingCore[str] = DelayingCore()
    assert core.insert("x", 0.050) is True
    assert core.insert("x", 0.070) is False
    assert core.waiting["x"][0] == 0.050
    assert core.insert("x", 0.030) is True
    assert core.next_ready_at() == 0.030
    assert core.pop_due(0.029) == []
    assert core.pop_due(0.030) == ["x"]
    # The superseded 50 ms entry must not fire a second time.
    assert core.pop_due(1.0) == []
    assert core.next_ready_at() is None
    assert len(core) == 0


def test_core_clear_drops_everything() -> None:
    core: DelayingCore[int] = DelayingCore()
    core.insert(1, 1.0)
    core.insert(2, 2.0)
    core.clear()
    assert len(core) == 0
    assert core.pop_due(10.0) == []


# -- the threaded DelayingQueue with a FakeClock -------------------------------------------


def _settled(dq: DelayingQueue[Any], clock: FakeClock) -> Callable[[], bool]:
    """True once the timer thread has released everything due at the clock's time.

    ``waiting()`` takes the timer's lock, and the timer adds due items to the queue
    before releasing it, so once nothing due is left waiting the adds have happened.
    """

    def check() -> bool:
        now = clock.now()
        return all(ready > now for ready in dq.waiting().values())

    return check


def test_add_after_appears_only_after_the_clock_steps(
    fake_clock: FakeClock, eventually: Eventually, in_thread: InThread, shut_down_later: Later
) -> None:
    dq: DelayingQueue[str] = DelayingQueue(clock=fake_clock)
    shut_down_later(dq)
    dq.add_after("x", 2.0)
    assert dq.waiting() == {"x": fake_clock.now() + 2.0}
    assert len(dq) == 0
    getter = in_thread(dq.get, "blocked-get")
    fake_clock.step(2.0)
    assert getter.result() == ("x", False)
    assert dq.waiting() == {}
    dq.done("x")
    eventually(lambda: not dq.waiting(), "waiting room empty")


def test_nothing_fires_early(
    fake_clock: FakeClock, eventually: Eventually, shut_down_later: Later
) -> None:
    dq: DelayingQueue[str] = DelayingQueue(clock=fake_clock)
    shut_down_later(dq)
    dq.add_after("x", 1.0)
    dq.add_after("sentinel", 0.5)
    fake_clock.step(0.999)
    # The sentinel is released in the same pass that would release x if it were due.
    eventually(lambda: len(dq) == 1, "sentinel released")
    assert dq.queue.snapshot()[0] == ["sentinel"]
    assert "x" in dq.waiting()
    fake_clock.step(0.001)
    eventually(lambda: len(dq) == 2, "x released at exactly its ready time")
    assert dq.queue.snapshot()[0] == ["sentinel", "x"]


def test_equal_ready_times_are_released_in_insertion_order(
    fake_clock: FakeClock, eventually: Eventually, shut_down_later: Later
) -> None:
    dq: DelayingQueue[str] = DelayingQueue(clock=fake_clock)
    shut_down_later(dq)
    for x in ["c", "a", "d", "b"]:
        dq.add_after(x, 3.0)
    dq.add_after("first", 1.0)
    fake_clock.step(5.0)
    eventually(lambda: len(dq) == 5, "all released")
    assert [dq.get()[0] for _ in range(5)] == ["first", "c", "a", "d", "b"]


@pytest.mark.parametrize(
    ("first", "second", "fires_at"), [(0.050, 0.070, 0.050), (0.050, 0.030, 0.030)]
)
def test_repeated_add_after_keeps_the_earliest_and_fires_once(
    first: float,
    second: float,
    fires_at: float,
    fake_clock: FakeClock,
    eventually: Eventually,
    shut_down_later: Later,
) -> None:
    dq: DelayingQueue[str] = DelayingQueue(clock=fake_clock)
    shut_down_later(dq)
    start = fake_clock.now()
    dq.add_after("x", first)
    dq.add_after("x", second)
    assert dq.waiting() == {"x": start + fires_at}
    dq.add_after("late", 0.1)
    fake_clock.set_time(start + fires_at)
    eventually(lambda: len(dq) == 1, "x released")
    assert dq.get() == ("x", False)
    dq.done("x")
    fake_clock.set_time(start + 0.1)
    eventually(lambda: len(dq) == 1, "late released")
    # x fired once: the superseded record did not bring it back.
    assert dq.queue.snapshot()[0] == ["late"]


@pytest.mark.parametrize("delay", [0, 0.0, -1.0, -math.inf])
def test_non_positive_delay_adds_synchronously(
    delay: float, fake_clock: FakeClock, shut_down_later: Later
) -> None:
    dq: DelayingQueue[str] = DelayingQueue(clock=fake_clock)
    shut_down_later(dq)
    dq.add_after("x", delay)
    # No clock step and no waiting: the add happened inside add_after.
    assert len(dq) == 1
    assert dq.waiting() == {}


def test_item_beyond_the_heartbeat_period_still_fires(
    fake_clock: FakeClock, eventually: Eventually, shut_down_later: Later
) -> None:
    dq: DelayingQueue[str] = DelayingQueue(clock=fake_clock)
    shut_down_later(dq)
    dq.add_after("x", 2.5 * MAX_WAIT)
    for _ in range(2):
        fake_clock.step(MAX_WAIT)
        eventually(_settled(dq, fake_clock), "timer caught up")
        assert len(dq) == 0
    fake_clock.step(0.5 * MAX_WAIT)
    eventually(lambda: len(dq) == 1, "x released")


def test_timer_add_dedups_against_the_state_at_firing_time(
    fake_clock: FakeClock, eventually: Eventually, shut_down_later: Later
) -> None:
    dq: DelayingQueue[str] = DelayingQueue(clock=fake_clock)
    shut_down_later(dq)
    # queued when it fires: still one copy
    dq.add("q")
    dq.add_after("q", 1.0)
    # in flight when it fires: re-queued by done
    dq.add("p")
    assert dq.get() == ("q", False)
    assert dq.get() == ("p", False)
    dq.add("q")
    dq.add_after("p", 1.0)
    fake_clock.step(1.0)
    eventually(_settled(dq, fake_clock), "timer fired")
    queue, dirty, processing = dq.queue.snapshot()
    assert queue == []
    assert dirty == {"q", "p"} and processing == {"q", "p"}
    dq.done("q")
    dq.done("p")
    assert dq.queue.snapshot()[0] == ["q", "p"]


def test_add_after_then_add_makes_the_item_available_at_once(
    fake_clock: FakeClock, eventually: Eventually, shut_down_later: Later
) -> None:
    """semantics.md 1.9 mistake 8: the later timer add is processed again if the item
    is no longer dirty when it fires."""
    dq: DelayingQueue[str] = DelayingQueue(clock=fake_clock)
    shut_down_later(dq)
    dq.add_after("x", 1.0)
    dq.add("x")
    assert dq.get() == ("x", False)
    dq.done("x")
    fake_clock.step(1.0)
    eventually(lambda: len(dq) == 1, "timer add delivered x a second time")


def test_shut_down_drops_waiting_items_and_stops_the_timer(
    fake_clock: FakeClock, eventually: Eventually
) -> None:
    dq: DelayingQueue[str] = DelayingQueue("dq-shutdown", clock=fake_clock)
    dq.add_after("x", 1.0)
    dq.add("y")
    dq.shut_down()
    assert not [t for t in threading.enumerate() if t.name == "workqueue-delaying-dq-shutdown"]
    assert dq.waiting() == {}
    fake_clock.step(2.0)
    assert dq.get() == ("y", False)
    assert dq.get() == (None, True)
    dq.add_after("z", 0.0)
    dq.add_after("z", 1.0)
    assert dq.waiting() == {}
    assert len(dq) == 0
    dq.shut_down()  # idempotent


def test_shut_down_with_drain_drops_waiting_items_and_stops_the_timer(
    fake_clock: FakeClock, in_thread: InThread
) -> None:
    dq: DelayingQueue[str] = DelayingQueue("dq-drain", clock=fake_clock)
    dq.add("held")
    assert dq.get() == ("held", False)
    dq.add_after("x", 1.0)
    drain = in_thread(dq.shut_down_with_drain, "drain")
    dq.done("held")
    drain.result()
    assert dq.waiting() == {}
    assert not [t for t in threading.enumerate() if t.name == "workqueue-delaying-dq-drain"]
    fake_clock.step(2.0)
    assert dq.get() == (None, True)


def test_add_after_feeds_an_injected_queue(
    fake_clock: FakeClock, eventually: Eventually, shut_down_later: Later
) -> None:
    inner: Queue[str] = Queue(clock=fake_clock)
    dq: DelayingQueue[str] = DelayingQueue(clock=fake_clock, queue=inner)
    shut_down_later(dq)
    dq.add_after("x", 1.0)
    fake_clock.step(1.0)
    eventually(lambda: len(inner) == 1, "x added to the injected queue")
    assert inner.get() == ("x", False)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_random_add_after_and_steps_match_the_core(
    seed: int, fake_clock: FakeClock, eventually: Eventually, shut_down_later: Later
) -> None:
    """The threaded queue releases exactly what DelayingCore + QueueCore would."""
    rng = random.Random(seed)
    dq: DelayingQueue[int] = DelayingQueue(clock=fake_clock)
    shut_down_later(dq)
    ref_wait: DelayingCore[int] = DelayingCore()
    ref_queue: QueueCore[int] = QueueCore()
    for step in range(40):
        op = rng.random()
        x = rng.randrange(6)
        if op < 0.5:
            delay = rng.choice([0.0, 0.5, 1.0, 1.0, 2.0, 3.5])
            dq.add_after(x, delay)
            if delay <= 0:
                ref_queue.add(x)
            else:
                ref_wait.insert(x, fake_clock.now() + delay)
        elif op < 0.65 and ref_queue.can_get():
            expected = ref_queue.get()
            assert expected[0] is not None
            assert dq.get() == expected, f"seed={seed} step={step}"
        elif op < 0.8 and ref_queue.processing:
            item = rng.choice(sorted(ref_queue.processing))
            ref_queue.done(item)
            dq.done(item)
        else:
            fake_clock.step(rng.choice([0.25, 0.5, 1.0]))
            for due in ref_wait.pop_due(fake_clock.now()):
                ref_queue.add(due)
        eventually(_settled(dq, fake_clock), f"timer caught up (seed={seed} step={step})")
        queue, dirty, processing = dq.queue.snapshot()
        assert queue == list(ref_queue.queue), f"seed={seed} step={step}"
        assert dirty == ref_queue.dirty, f"seed={seed} step={step}"
        assert processing == ref_queue.processing, f"seed={seed} step={step}"
        assert set(dq.waiting()) == set(ref_wait.waiting), f"seed={seed} step={step}"


# -- the fake clock the shells rely on ---------------------------------------------------


def test_fake_clock_wakes_a_waiter_when_stepped_past_its_deadline(in_thread: InThread) -> None:
    clock = FakeClock(0.0)
    sleeper = in_thread(lambda: clock.sleep(2.0), "fake-sleep")
    clock.step(1.0)
    assert not sleeper.finished.wait(0.05)
    clock.step(1.0)
    sleeper.result()


def test_fake_clock_rejects_going_backwards_and_nan() -> None:
    clock = FakeClock(5.0)
    with pytest.raises(ValueError, match="backwards"):
        clock.step(-1.0)
    with pytest.raises(ValueError, match="backwards"):
        clock.set_time(4.0)
    with pytest.raises(ValueError, match="NaN"):
        clock.step(math.nan)
    assert clock.now() == 5.0


def test_fake_clock_has_no_waiters_after_the_timer_thread_exits(
    fake_clock: FakeClock, eventually: Eventually
) -> None:
    dq: DelayingQueue[str] = DelayingQueue(clock=fake_clock)
    eventually(fake_clock.has_waiters, "timer thread parked on the clock")
    dq.shut_down()  # joins the timer thread
    assert not fake_clock.has_waiters()
