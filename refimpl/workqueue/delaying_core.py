"""The delaying queue's waiting room as a plain state machine.

Owns the min-heap of waiting items and the item -> ready-time map; never blocks, sleeps
or reads a clock (``now`` is passed in). Ports the state of ``waitingLoop`` in
``util/workqueue/delaying_queue.go`` (``waitForPriorityQueue``, ``insert``). Refines the
delay abstraction of ``spec/WorkQueue.tla``: a waiting item is one whose ``Add`` is
pending; the spec lets it fire at any later step, the code at ``ready_at``.

Rules: an item waits at most once; a repeated ``insert`` keeps the *earlier* ready
time; ``pop_due(now)`` releases every item whose ready time is ``<= now``, earliest
first. Entries with equal ready times leave in insertion order (Go's heap leaves that
order unspecified).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Hashable
from typing import Generic, TypeVar

from refimpl.clock import check_duration
from refimpl.workqueue.core import check_item

__all__ = ["DelayingCore", "check_add_after"]

T = TypeVar("T", bound=Hashable)


def check_add_after(item: object, delay: float) -> None:
    """Refuse what ``add_after`` cannot honour: an unhashable item, a NaN or +inf delay
    (Go durations are finite integers); negative and -inf delays mean "now"."""
    check_duration(delay, "add_after")
    check_item(item)
    if math.isinf(delay) and delay > 0:
        raise ValueError("add_after: delay must be finite")


class DelayingCore(Generic[T]):
    __slots__ = ("_heap", "_seq", "waiting")

    def __init__(self) -> None:
        #: item -> (ready_at, seq) of its live heap entry. Invariant: exactly the items
        #: that will be added when their time comes.
        self.waiting: dict[T, tuple[float, int]] = {}
        # Heap entries superseded by an earlier ready time stay behind and are skipped.
        self._heap: list[tuple[float, int, T]] = []
        self._seq = 0

    def insert(self, item: T, ready_at: float) -> bool:
        """Wait for ``item`` until ``ready_at``; keep the earlier time if already waiting.

        Returns True when the earliest ready time changed (the timer must be re-armed).
        """
        current = self.waiting.get(item)
        if current is not None and current[0] <= ready_at:
            return False
        before = self.next_ready_at()
        self._seq += 1
        self.waiting[item] = (ready_at, self._seq)
        heapq.heappush(self._heap, (ready_at, self._seq, item))
        return before is None or ready_at < before

    def pop_due(self, now: float) -> list[T]:
        """Remove and return every item whose ready time is ``<= now``, earliest first."""
        due: list[T] = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            ready_at, seq, item = heapq.heappop(heap)
            if self.waiting.get(item) == (ready_at, seq):
                del self.waiting[item]
                due.append(item)
        return due

    def next_ready_at(self) -> float | None:
        """The earliest ready time still waiting, or None."""
        heap = self._heap
        while heap:
            ready_at, seq, item = heap[0]
            if self.waiting.get(item) == (ready_at, seq):
                return ready_at
            heapq.heappop(heap)  # a superseded entry: drop it now
        return None

    def clear(self) -> None:
        """Drop every waiting item (shutdown)."""
        self.waiting.clear()
        self._heap.clear()

    def __len__(self) -> int:
        return len(self.waiting)
