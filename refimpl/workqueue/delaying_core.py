"""The delaying queue's waiting room as a plain state machine.

Owns the heap of waiting entries and the item -> entry map; never blocks, sleeps or
reads a clock (``now`` is passed in, in integer nanoseconds). Ports the state of
``waitingLoop`` in ``util/workqueue/delaying_queue.go`` (``waitForPriorityQueue``,
``insert``) together with the algorithm of Go's ``container/heap`` (``Push``, ``Pop``,
``Fix`` and their ``up``/``down``). Refines the delay abstraction of
``spec/WorkQueue.tla``: a waiting item is one whose ``Add`` is pending; the spec lets it
fire at any later step, the code at ``ready_at``.

Rules: an item waits at most once; a repeated ``insert`` with an earlier ready time
moves the entry in place (``heap.Fix``), a later or equal one is ignored;
``pop_due(now)`` releases entries while the heap's root is ready (``ready_at <= now``),
popping the root each time, exactly as client-go's loop peeks and pops.

The heap is ordered by ready time only. Entries with equal ready times therefore leave
in the order Go's sift-up/sift-down happen to give -- deterministic for a given sequence
of operations, but not insertion order: three entries pushed with one ready time leave
first, third, second. We reproduce that order step for step rather than choosing a
"nicer" one, so refimpl and client-go agree on every sequence.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Generic, TypeVar

from refimpl.clock import check_duration, to_ns
from refimpl.workqueue.core import check_item

__all__ = ["AddAfter", "DelayingCore", "WaitFor", "check_add_after"]

T = TypeVar("T", bound=Hashable)


def check_add_after(item: object, delay: float) -> None:
    """Refuse what ``add_after`` cannot honour: an unhashable item, a NaN or +inf delay
    (Go durations are finite integers); negative and -inf delays mean "now"."""
    check_duration(delay, "add_after")
    check_item(item)
    if math.isinf(delay) and delay > 0:
        raise ValueError("add_after: delay must be finite")


class AddAfter(Generic[T]):
    """``add_after`` and ``add_after_ns`` for both delaying queues, the threaded
    :class:`~refimpl.workqueue.DelayingQueue` and the virtual-time one: the checks and the
    conversion to integer nanoseconds. Each queue supplies ``_add_after_ns``, which
    receives a checked item and decides what the delay means for it."""

    def add_after(self, item: T, delay: float) -> None:
        """Add ``item`` once ``delay`` seconds have passed on this queue's clock.

        ``delay <= 0`` adds at once. If ``item`` is already waiting, the earlier ready
        time wins. Ignored after shutdown. NaN or +inf delays raise ``ValueError``. The
        delay is converted once to integer nanoseconds (:func:`refimpl.clock.to_ns`).
        """
        check_add_after(item, delay)
        self._add_after_ns(item, to_ns(delay) if delay > 0 else 0)

    def add_after_ns(self, item: T, delay_ns: int) -> None:
        """:meth:`add_after` with the delay in integer nanoseconds."""
        check_item(item)
        self._add_after_ns(item, delay_ns)

    def _add_after_ns(self, item: T, delay_ns: int) -> None:
        raise NotImplementedError


class WaitFor(Generic[T]):
    """One waiting entry (client-go's ``waitFor``): the item, when it is due (integer
    nanoseconds) and its current position in the heap (kept up to date by swaps)."""

    __slots__ = ("index", "item", "ready_at")

    def __init__(self, item: T, ready_at: int, index: int) -> None:
        self.item = item
        self.ready_at = ready_at
        self.index = index

    def __repr__(self) -> str:
        return f"WaitFor({self.item!r}, ready_at={self.ready_at}, index={self.index})"


class DelayingCore(Generic[T]):
    __slots__ = ("_heap", "waiting")

    def __init__(self) -> None:
        #: item -> its live heap entry. Invariant: exactly the items that will be added
        #: when their time comes, and ``waiting[x] is _heap[waiting[x].index]``.
        self.waiting: dict[T, WaitFor[T]] = {}
        self._heap: list[WaitFor[T]] = []

    # -- Go's container/heap over self._heap, Less = strictly earlier ready time ----------

    def _swap(self, i: int, j: int) -> None:
        heap = self._heap
        a, b = heap[j], heap[i]
        heap[i], heap[j] = a, b
        a.index, b.index = i, j

    def _up(self, j: int) -> None:
        heap = self._heap
        while j > 0:
            parent = (j - 1) // 2
            # Stop unless the child is strictly earlier: ties never move up.
            if not heap[j].ready_at < heap[parent].ready_at:
                break
            self._swap(parent, j)
            j = parent

    def _down(self, i0: int, n: int) -> bool:
        """Sift ``i0`` down within the first ``n`` slots; True if it moved."""
        heap = self._heap
        i = i0
        while True:
            left = 2 * i + 1
            if left >= n:
                break
            child = left
            right = left + 1
            # The right child is taken only when strictly earlier than the left one.
            if right < n and heap[right].ready_at < heap[left].ready_at:
                child = right
            if not heap[child].ready_at < heap[i].ready_at:
                break
            self._swap(i, child)
            i = child
        return i > i0

    def _push(self, entry: WaitFor[T]) -> None:
        entry.index = len(self._heap)
        self._heap.append(entry)
        self._up(entry.index)

    def _pop(self) -> WaitFor[T]:
        n = len(self._heap) - 1
        self._swap(0, n)
        self._down(0, n)
        entry = self._heap.pop()
        entry.index = -1
        return entry

    def _fix(self, i: int) -> None:
        if not self._down(i, len(self._heap)):
            self._up(i)

    # -- the waiting loop's operations ------------------------------------------------

    def insert(self, item: T, ready_at: int) -> bool:
        """Wait for ``item`` until ``ready_at`` (ns); an already waiting item only moves
        to an earlier time (client-go's ``insert``).

        Returns True when the earliest ready time changed (the timer must be re-armed).
        """
        existing = self.waiting.get(item)
        if existing is not None and not ready_at < existing.ready_at:
            return False  # the common retry of a waiting item: nothing to do
        heap = self._heap
        before = heap[0].ready_at if heap else None
        if existing is not None:
            existing.ready_at = ready_at
            self._fix(existing.index)
        else:
            entry = WaitFor(item, ready_at, -1)
            self._push(entry)
            self.waiting[item] = entry
        return before is None or ready_at < before

    def pop_due(self, now: int) -> list[T]:
        """Pop entries while the heap's root is due (``ready_at <= now``); return their
        items in the order popped, which is the order client-go adds them."""
        due: list[T] = []
        heap = self._heap
        waiting = self.waiting
        while heap and heap[0].ready_at <= now:
            item = self._pop().item
            del waiting[item]
            due.append(item)
        return due

    def next_ready_at(self) -> int | None:
        """The earliest ready time still waiting (ns), or None."""
        heap = self._heap
        return heap[0].ready_at if heap else None

    def ready_times(self) -> dict[T, int]:
        """Each waiting item and its ready time in ns (a copy)."""
        return {item: entry.ready_at for item, entry in self.waiting.items()}

    def clear(self) -> None:
        """Drop every waiting item (shutdown)."""
        for entry in self._heap:
            entry.index = -1
        self.waiting.clear()
        self._heap.clear()

    def __len__(self) -> int:
        return len(self.waiting)
