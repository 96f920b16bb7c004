"""QueueCore against an independent model of client-go util/workqueue/queue.go.

The model is a list (hand-out order) and two sets (dirty, processing), updated by the
rules of WQ-1 to WQ-9 (docs/invariants.md) and nothing else. A Hypothesis state machine
drives the core and the model side by side; the examples below pin the individual rules.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from refimpl.blocking import WouldBlock
from refimpl.workqueue.core import FifoContainer, QueueCore

ITEMS = st.integers(min_value=0, max_value=6)


class QueueModel:
    """queue.go's Add/Get/Done/ShutDown rules, written from WQ-1 to WQ-9 (independent of
    the core's code)."""

    def __init__(self) -> None:
        self.queue: list[int] = []
        self.dirty: set[int] = set()
        self.processing: set[int] = set()
        self.shutting_down = False
        self.drain = False

    def add(self, x: int) -> None:
        if self.shutting_down or x in self.dirty:
            return
        self.dirty.add(x)
        if x not in self.processing:
            self.queue.append(x)

    def get(self) -> tuple[int | None, bool]:
        if not self.queue:
            assert self.shutting_down, "model: get would block"
            return None, True
        x = self.queue.pop(0)
        self.processing.add(x)
        self.dirty.discard(x)
        return x, False

    def done(self, x: int) -> bool:
        self.processing.discard(x)
        if x in self.dirty:
            self.queue.append(x)
            return True
        return False

    def shut_down(self) -> None:
        self.shutting_down, self.drain = True, False

    def begin_drain(self) -> None:
        self.shutting_down, self.drain = True, True

    def can_get(self) -> bool:
        return bool(self.queue) or self.shutting_down


class QueueCoreMachine(RuleBasedStateMachine):
    """Core and model in lock-step; ``owed`` tracks adds not yet answered by a get."""

    def __init__(self) -> None:
        super().__init__()
        self.core: QueueCore[int] = QueueCore()
        self.model = QueueModel()
        # Items accepted by add() and not handed out by a get() since: the liveness
        # obligation. Kept apart from the model's dirty set on purpose.
        self.owed: set[int] = set()

    @initialize()
    def start_empty(self) -> None:
        assert len(self.core) == 0
        assert not self.core.can_get()

    @rule(x=ITEMS)
    def add(self, x: int) -> None:
        accepted = not self.model.shutting_down
        wake = self.core.add(x)
        queued_before = len(self.model.queue)
        self.model.add(x)
        # The core asks its shell to wake a getter exactly when something was pushed.
        assert wake == (len(self.model.queue) > queued_before)
        if accepted:
            self.owed.add(x)

    @rule()
    def get_would_block(self) -> None:
        if self.model.can_get():
            return
        with pytest.raises(WouldBlock):
            self.core.get()

    @precondition(lambda self: self.model.can_get())
    @rule()
    def get(self) -> None:
        expected = self.model.get()
        got = self.core.get()
        assert got == expected
        if got[0] is not None:
            self.owed.discard(got[0])

    @precondition(lambda self: bool(self.model.processing))
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        x = data.draw(st.sampled_from(sorted(self.model.processing)), label="done item")
        requeued, idle = self.core.done(x)
        assert requeued == self.model.done(x)
        # "idle" tells a draining shutdown to re-check: exactly when nothing is in
        # flight any more, whether or not the item was re-queued.
        assert idle == (not self.model.processing)

    @rule()
    def shut_down(self) -> None:
        self.core.shut_down()
        self.model.shut_down()

    @rule()
    def begin_drain(self) -> None:
        self.core.begin_drain()
        self.model.begin_drain()

    @invariant()
    def no_item_twice_in_queue(self) -> None:
        queued = list(self.core.queue)
        assert len(queued) == len(set(queued)), queued

    @invariant()
    def queued_items_are_dirty(self) -> None:
        assert set(self.core.queue) <= self.core.dirty

    @invariant()
    def nothing_queued_is_in_flight(self) -> None:
        assert not (set(self.core.queue) & self.core.processing)

    @invariant()
    def agrees_with_model(self) -> None:
        assert list(self.core.queue) == self.model.queue
        assert self.core.dirty == self.model.dirty
        assert self.core.processing == self.model.processing
        assert len(self.core) == len(self.model.queue)
        assert self.core.shutting_down == self.model.shutting_down
        assert self.core.drain == self.model.drain
        assert self.core.can_get() == self.model.can_get()
        assert self.core.drain_complete() == (not self.model.processing or not self.model.drain)

    @invariant()
    def owed_items_are_dirty(self) -> None:
        assert self.owed <= self.core.dirty

    def teardown(self) -> None:
        # Liveness: finish everything in flight, then get/done until nothing is left;
        # every owed item must be handed out along the way.
        handed_out: list[int] = []
        for x in sorted(self.core.processing):
            self.core.done(x)
        rounds = 0
        while len(self.core) > 0:
            rounds += 1
            assert rounds < 1000, "draining did not terminate"
            item, shutdown = self.core.get()
            assert not shutdown and item is not None
            handed_out.append(item)
            self.core.done(item)
        assert self.owed <= set(handed_out), (self.owed, handed_out)
        assert not self.core.dirty
        assert not self.core.processing


TestQueueCoreMachine = QueueCoreMachine.TestCase
TestQueueCoreMachine.settings = settings(max_examples=200, stateful_step_count=50, deadline=None)


# -- the rule table, row by row ---------------------------------------------------------


def _core_with(*items: int) -> QueueCore[int]:
    """A live core with ``items`` added in order."""
    core: QueueCore[int] = QueueCore()
    for x in items:
        core.add(x)
    return core


def test_repeated_adds_collapse_and_keep_first_position() -> None:
    core: QueueCore[str] = QueueCore()
    for x in ["a", "b", "a", "c", "b", "a"]:
        core.add(x)
    assert list(core.queue) == ["a", "b", "c"]
    assert core.dirty == {"a", "b", "c"}


def test_add_while_in_flight_is_queued_by_done_at_the_tail() -> None:
    core: QueueCore[str] = QueueCore()
    core.add("a")
    core.add("b")
    assert core.get() == ("a", False)
    assert core.add("a") is False  # marked dirty, not pushed
    assert list(core.queue) == ["b"]
    assert core.dirty == {"a", "b"}
    core.add("c")
    assert core.add("a") is False  # already re-marked: nothing at all
    assert core.done("a") == (True, True)  # re-queued, and nothing else in flight
    assert list(core.queue) == ["b", "c", "a"]
    assert core.processing == set()


def test_get_moves_head_to_processing_and_clears_dirty() -> None:
    core = _core_with(1)
    assert core.get() == (1, False)
    assert core.processing == {1}
    assert core.dirty == set()
    assert len(core) == 0


def test_get_on_empty_live_queue_would_block() -> None:
    core: QueueCore[int] = QueueCore()
    assert not core.can_get()
    with pytest.raises(WouldBlock):
        core.get()


def test_done_without_readd_reports_idle_only_when_last() -> None:
    core = _core_with(1, 2)
    core.get()
    core.get()
    assert core.done(1) == (False, False)
    assert core.done(2) == (False, True)


def test_done_that_requeues_the_last_in_flight_item_reports_idle() -> None:
    core = _core_with(1)
    core.get()
    core.add(1)
    requeued, idle = core.done(1)
    assert requeued
    assert idle, "nothing is in flight any more, so a draining shutdown must re-check"


def test_shutdown_keeps_queued_items_and_ignores_adds() -> None:
    core = _core_with(1, 2)
    core.shut_down()
    assert core.add(3) is False
    assert core.get() == (1, False)
    assert core.get() == (2, False)
    assert core.get() == (None, True)
    assert core.get() == (None, True)
    assert core.dirty == set()


def test_done_after_shutdown_still_requeues_a_dirty_item() -> None:
    core = _core_with(1)
    core.get()
    core.add(1)
    core.shut_down()
    assert core.done(1) == (True, True)
    assert core.get() == (1, False)
    assert core.done(1) == (False, True)
    assert core.get() == (None, True)


def test_drain_complete_follows_processing_and_drain_flag() -> None:
    core = _core_with(1, 2)
    core.get()
    core.begin_drain()
    assert core.shutting_down and core.drain
    assert not core.drain_complete()
    core.shut_down()  # a later plain shutdown cuts the drain short
    assert core.drain_complete()
    core.begin_drain()
    assert not core.drain_complete()
    core.done(1)
    # Queued-but-not-started item 2 is not waited for (client-go's code).
    assert core.drain_complete()
    assert list(core.queue) == [2]


class RecordingStack:
    """A LIFO container that records touch() calls (the pluggable Queue[T])."""

    def __init__(self) -> None:
        self.items: deque[str] = deque()
        self.touched: list[str] = []

    def touch(self, item: str) -> None:
        self.touched.append(item)

    def push(self, item: str) -> None:
        self.items.append(item)

    def pop(self) -> str:
        return self.items.pop()

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[str]:
        return iter(self.items)


def test_custom_container_sets_order_and_is_touched_only_for_waiting_items() -> None:
    stack = RecordingStack()
    core: QueueCore[str] = QueueCore(stack)
    core.add("a")
    core.add("b")
    core.add("a")  # waiting, not in flight: touch
    assert stack.touched == ["a"]
    assert core.get() == ("b", False)  # LIFO
    core.add("b")  # in flight, newly dirty: no touch
    core.add("b")  # in flight and dirty: no touch
    assert stack.touched == ["a"]
    core.done("b")
    assert list(stack) == ["a", "b"]
    assert core.get() == ("b", False)


def test_default_container_is_fifo() -> None:
    fifo: FifoContainer[int] = FifoContainer()
    fifo.push(1)
    fifo.push(2)
    fifo.touch(1)
    assert fifo.pop() == 1
    assert len(fifo) == 1
