"""The delaying queue: DelayingCore + QueueCore on explicit times, and the threaded
DelayingQueue driven by a FakeClock (client-go util/workqueue/delaying_queue.go; DQ-1 to
DQ-7).

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
from queue_model import QueueModel

from refimpl.clock import FakeClock, to_ns
from refimpl.workqueue import MAX_WAIT, DelayingCore, DelayingQueue, Queue
from refimpl.workqueue.core import QueueCore

if TYPE_CHECKING:
    from conftest import BackgroundCall, Eventually

    InThread = Callable[[Callable[[], Any], str], BackgroundCall]
    Later = Callable[[Any], None]

ITEMS = st.sampled_from("abcde")


# -- DelayingCore + QueueCore on explicit times ------------------------------------------


MS = 1_000_000  # nanoseconds
HALF = 500 * MS


class GoHeapModel:
    """An independent, deliberately plain transcription of Go's ``container/heap``
    (``Push``/``Pop``/``Fix``, ``up``/``down``) over ``[ready_at, item]`` pairs, plus
    client-go's ``insert`` and its waiting loop's peek-and-pop. Positions are found by
    searching the list, not tracked, so it shares no bookkeeping with DelayingCore."""

    def __init__(self) -> None:
        self.h: list[list[Any]] = []

    def less(self, i: int, j: int) -> bool:
        return bool(self.h[i][0] < self.h[j][0])

    def swap(self, i: int, j: int) -> None:
        self.h[i], self.h[j] = self.h[j], self.h[i]

    def up(self, j: int) -> None:
        while True:
            i = int((j - 1) / 2)  # Go's integer division truncates toward zero
            if i == j or not self.less(j, i):
                break
            self.swap(i, j)
            j = i

    def down(self, i0: int, n: int) -> bool:
        i = i0
        while True:
            j1 = 2 * i + 1
            if j1 >= n:
                break
            j = j1
            j2 = j1 + 1
            if j2 < n and self.less(j2, j1):
                j = j2
            if not self.less(j, i):
                break
            self.swap(i, j)
            i = j
        return i > i0

    def insert(self, item: str, ready_at: int) -> None:
        for i, (when, x) in enumerate(self.h):
            if x == item:
                if when > ready_at:
                    self.h[i][0] = ready_at
                    if not self.down(i, len(self.h)):
                        self.up(i)
                return
        self.h.append([ready_at, item])
        self.up(len(self.h) - 1)

    def release(self, now: int) -> list[str]:
        out: list[str] = []
        while self.h and not self.h[0][0] > now:
            n = len(self.h) - 1
            self.swap(0, n)
            self.down(0, n)
            out.append(self.h.pop()[1])
        return out

    def ready_times(self) -> dict[str, int]:
        return {x: when for when, x in self.h}


class DelayingMachine(RuleBasedStateMachine):
    """Waiting room and queue on explicit integer-nanosecond times in steps of half a
    second (many ties on purpose). The waiting room's model is :class:`GoHeapModel`: due
    items must leave in exactly the order Go's heap gives. The queue side uses the
    dirty/processing rules of client-go's queue.go (WQ-1 to WQ-4)."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        self.core: DelayingCore[str] = DelayingCore()
        self.queue: QueueCore[str] = QueueCore()
        self.model = GoHeapModel()
        self.m = QueueModel[str]()

    @rule(x=ITEMS, halves=st.integers(min_value=0, max_value=12))
    def insert(self, x: str, halves: int) -> None:
        ready = self.now + halves * HALF
        waiting = self.model.ready_times()
        earliest_before = min(waiting.values(), default=None)
        current = waiting.get(x)
        changed = self.core.insert(x, ready)
        self.model.insert(x, ready)
        if current is not None and current <= ready:
            # Already waiting with an earlier (or equal) time: the new record is dropped.
            assert changed is False
            return
        assert changed == (earliest_before is None or ready < earliest_before)

    @rule(halves=st.integers(min_value=0, max_value=8))
    def advance(self, halves: int) -> None:
        self.now += halves * HALF
        due = self.core.pop_due(self.now)
        assert due == self.model.release(self.now)
        for x in due:
            self.queue.add(x)
            self.m.add(x)

    @precondition(lambda self: len(self.m.queue) > 0)
    @rule()
    def get(self) -> None:
        x = self.m.get()
        assert self.queue.get() == (x, False)

    @precondition(lambda self: len(self.m.processing) > 0)
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        self.queue.done(self.m.done_drawn(data))

    @invariant()
    def waiting_room_matches_model(self) -> None:
        waiting = self.model.ready_times()
        assert self.core.ready_times() == waiting
        assert len(self.core) == len(waiting)
        assert self.core.next_ready_at() == min(waiting.values(), default=None)
        # The heap itself, slot for slot, and the entries' recorded positions.
        assert [(e.ready_at, e.item) for e in self.core._heap] == [tuple(e) for e in self.model.h]
        assert all(self.core._heap[e.index] is e for e in self.core.waiting.values())

    @invariant()
    def nothing_overdue_is_left_waiting(self) -> None:
        # Everything due at the last pop_due left; later inserts are never in the past.
        assert all(r >= self.now for r in self.model.ready_times().values())

    @invariant()
    def queue_matches_model(self) -> None:
        assert list(self.queue.queue) == self.m.queue
        assert self.queue.dirty == self.m.dirty
        assert self.queue.processing == self.m.processing


TestDelayingMachine = DelayingMachine.TestCase
TestDelayingMachine.settings = settings(max_examples=200, stateful_step_count=50, deadline=None)


@pytest.mark.parametrize("seed", [12, 1207, 80_512])
def test_core_release_order_equals_go_heap_on_long_random_runs(seed: int) -> None:
    """Longer add_after/advance sequences than the state machine reaches (seed fixed)."""
    rng = random.Random(seed)
    core: DelayingCore[str] = DelayingCore()
    model = GoHeapModel()
    now = 0
    for step in range(3000):
        if rng.random() < 0.6:
            x = rng.choice("abcdefghijklmnop")
            ready = now + rng.choice([1, 2, 2, 3, 5, 8]) * MS
            core.insert(x, ready)
            model.insert(x, ready)
        else:
            now += rng.choice([0, 1, 2, 3]) * MS
            assert core.pop_due(now) == model.release(now), f"seed={seed} step={step}"


def test_core_equal_times_leave_in_go_heap_order() -> None:
    # client-go: AddAfter a, b, c with one deadline; the heap gives a, c, b.
    core: DelayingCore[str] = DelayingCore()
    for x in ["a", "b", "c"]:
        core.insert(x, 10 * MS)
    assert core.pop_due(10 * MS) == ["a", "c", "b"]
    for x in ["c", "a", "b"]:
        core.insert(x, 5 * MS)
    core.insert("z", 4 * MS)
    assert core.pop_due(4 * MS - 1) == []
    assert core.pop_due(5 * MS - 1) == ["z"]
    # Inserted c, a, b; z's sift-up and pop reshuffle the ties.
    assert core.pop_due(5 * MS) == ["a", "b", "c"]
    assert core.pop_due(100 * MS) == []


def test_core_earlier_deadline_moves_the_entry_in_place() -> None:
    # heap.Fix moves b where it already sits instead of re-pushing it, so b (last to get
    # 10 ms) leaves second; re-sequencing it as a new entry would make it leave last.
    core: DelayingCore[str] = DelayingCore()
    model = GoHeapModel()
    for x, at in [("a", 10), ("b", 20), ("c", 10), ("d", 10), ("b", 10)]:
        core.insert(x, at * MS)
        model.insert(x, at * MS)
    expected = model.release(10 * MS)
    assert core.pop_due(10 * MS) == expected == ["a", "b", "c", "d"]


def test_core_earliest_wins_and_fires_once() -> None:
    core: DelayingCore[str] = DelayingCore()
    assert core.insert("x", 50 * MS) is True
    assert core.insert("x", 70 * MS) is False
    assert core.waiting["x"].ready_at == 50 * MS
    assert core.insert("x", 30 * MS) is True
    assert core.next_ready_at() == 30 * MS
    assert core.pop_due(29 * MS) == []
    assert core.pop_due(30 * MS) == ["x"]
    # The moved entry must not fire a second time.
    assert core.pop_due(1000 * MS) == []
    assert core.next_ready_at() is None
    assert len(core) == 0


def test_core_clear_drops_everything() -> None:
    core: DelayingCore[int] = DelayingCore()
    core.insert(1, 1000 * MS)
    core.insert(2, 2000 * MS)
    core.clear()
    assert len(core) == 0
    assert core.pop_due(10_000 * MS) == []


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
    fake_clock: FakeClock, eventually: Eventually, in_thread: InThread, dq: DelayingQueue[str]
) -> None:
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
    fake_clock: FakeClock, eventually: Eventually, dq: DelayingQueue[str]
) -> None:
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


def test_equal_ready_times_are_released_in_go_heap_order(
    fake_clock: FakeClock, eventually: Eventually, dq: DelayingQueue[str]
) -> None:
    for x in ["c", "a", "d", "b"]:
        dq.add_after(x, 3.0)
    dq.add_after("first", 1.0)
    fake_clock.step(5.0)
    eventually(lambda: len(dq) == 5, "all released")
    # Insertion order would be c, a, d, b; client-go's heap hands them out like this.
    assert [dq.get()[0] for _ in range(5)] == ["first", "a", "b", "d", "c"]


def test_issue_12_equal_deadlines_leave_as_in_client_go(
    fake_clock: FakeClock, eventually: Eventually, dq: DelayingQueue[str]
) -> None:
    for x in "abc":
        dq.add_after(x, 0.010)
    fake_clock.step(0.010)
    eventually(lambda: len(dq) == 3, "all released")
    assert [dq.get()[0] for _ in range(3)] == ["a", "c", "b"]


def test_issue_12_nine_then_one_millisecond_reach_a_ten_millisecond_deadline(
    fake_clock: FakeClock, eventually: Eventually, dq: DelayingQueue[str]
) -> None:
    dq.add_after("a", 0.010)
    fake_clock.step(0.009)
    fake_clock.step(0.001)  # 0.009 + 0.001 < 0.01 in floats; exactly 10 ms in ns
    eventually(lambda: len(dq) == 1, "a released at exactly 10 ms")


@pytest.mark.parametrize(
    ("first", "second", "fires_at"), [(0.050, 0.070, 0.050), (0.050, 0.030, 0.030)]
)
def test_repeated_add_after_keeps_the_earliest_and_fires_once(
    first: float,
    second: float,
    fires_at: float,
    fake_clock: FakeClock,
    eventually: Eventually,
    dq: DelayingQueue[str],
) -> None:
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
def test_non_positive_delay_adds_synchronously(delay: float, dq: DelayingQueue[str]) -> None:
    dq.add_after("x", delay)
    # No clock step and no waiting: the add happened inside add_after.
    assert len(dq) == 1
    assert dq.waiting() == {}


def test_item_beyond_the_heartbeat_period_still_fires(
    fake_clock: FakeClock, eventually: Eventually, dq: DelayingQueue[str]
) -> None:
    dq.add_after("x", 2.5 * MAX_WAIT)
    for _ in range(2):
        fake_clock.step(MAX_WAIT)
        eventually(_settled(dq, fake_clock), "timer caught up")
        assert len(dq) == 0
    fake_clock.step(0.5 * MAX_WAIT)
    eventually(lambda: len(dq) == 1, "x released")


def test_timer_add_dedups_against_the_state_at_firing_time(
    fake_clock: FakeClock, eventually: Eventually, dq: DelayingQueue[str]
) -> None:
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
    fake_clock: FakeClock, eventually: Eventually, dq: DelayingQueue[str]
) -> None:
    """DQ-5: the later timer add is processed again if the item
    is no longer dirty when it fires."""
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


def test_a_second_shut_down_does_not_end_a_drain(
    fake_clock: FakeClock, in_thread: InThread
) -> None:
    """client-go's delaying queue runs ShutDown once (DQ-6): after ShutDown and a
    ShutDownWithDrain, another ShutDown does not reach the queue, so the drain still
    waits for the in-flight item (a plain queue's ShutDown would release it, WQ-12)."""
    dq: DelayingQueue[str] = DelayingQueue("dq-once", clock=fake_clock)
    dq.add("held")
    assert dq.get() == ("held", False)
    dq.shut_down()
    drain = in_thread(dq.shut_down_with_drain, "drain")
    dq.shut_down()
    assert not drain.finished.wait(0.2), "a second shut_down ended the drain"
    dq.done("held")
    drain.result()


def test_a_plain_queue_shut_down_ends_a_drain_every_time(
    fake_clock: FakeClock, in_thread: InThread
) -> None:
    q: Queue[str] = Queue(clock=fake_clock)
    q.add("held")
    assert q.get() == ("held", False)
    q.shut_down()
    drain = in_thread(q.shut_down_with_drain, "drain")
    q.shut_down()
    drain.result()


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
                ref_wait.insert(x, fake_clock.now_ns() + to_ns(delay))
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
            for due in ref_wait.pop_due(fake_clock.now_ns()):
                ref_queue.add(due)
        eventually(_settled(dq, fake_clock), f"timer caught up (seed={seed} step={step})")
        queue, dirty, processing = dq.queue.snapshot()
        assert queue == list(ref_queue.queue), f"seed={seed} step={step}"
        assert dirty == ref_queue.dirty, f"seed={seed} step={step}"
        assert processing == ref_queue.processing, f"seed={seed} step={step}"
        assert set(dq.waiting()) == set(ref_wait.waiting), f"seed={seed} step={step}"


# -- the fake clock the shells rely on ---------------------------------------------------


def test_fake_clock_keeps_integer_nanoseconds() -> None:
    # Every pair of millisecond steps that adds up to a deadline reaches it exactly
    # (with float seconds, 0.009 + 0.001 and 0.007 + 0.003 fall short of 0.01).
    for total in range(1, 101):
        for first in range(total + 1):
            clock = FakeClock(0.0)
            clock.step(first / 1000)
            clock.step((total - first) / 1000)
            assert clock.now_ns() == total * 1_000_000, (first, total)
            assert clock.now() == total / 1000, (first, total)
    clock = FakeClock(0.5)
    clock.step_ns(1)
    clock.set_time_ns(clock.now_ns() + 2)
    assert clock.now_ns() == 500_000_003


def test_fake_clock_set_time_reaches_a_float_deadline() -> None:
    clock = FakeClock(0.0)
    for t in (0.1 + 0.2, 1 / 3, 2.000_000_000_5, 7.0):
        clock.set_time(t)
        assert clock.now() >= t
    clock.set_time(12_345_678_901 / 1e9)  # an exact nanosecond time lands on itself
    assert clock.now_ns() == 12_345_678_901


def test_to_ns_rounds_to_the_nearest_nanosecond() -> None:
    assert to_ns(0.009) == 9_000_000
    assert to_ns(1e-9) == 1
    assert to_ns(0.4e-9) == 0
    assert to_ns(3) == 3_000_000_000
    assert to_ns(123_456_789.0) == 123_456_789_000_000_000
    assert to_ns(4_000_000.000_000_1) == 4_000_000_000_000_100  # beyond the float fast path
    assert to_ns(-0.25) == -250_000_000


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
