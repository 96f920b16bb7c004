"""The model the queue state machines check a queue against: client-go queue.go's
dirty/processing rules (WQ-1 to WQ-4) on a plain list and two sets."""

from __future__ import annotations

from typing import Generic, TypeVar

from hypothesis import strategies as st

#: The items the state machines queue: small ints or strings, sortable for drawing.
T = TypeVar("T", int, str)


class QueueModel(Generic[T]):
    def __init__(self) -> None:
        self.queue: list[T] = []
        self.dirty: set[T] = set()
        self.processing: set[T] = set()

    def add(self, x: T) -> None:
        """A dirty item is not added twice; one in flight waits for its done."""
        if x in self.dirty:
            return
        self.dirty.add(x)
        if x not in self.processing:
            self.queue.append(x)

    def get(self) -> T:
        x = self.queue.pop(0)
        self.dirty.discard(x)
        self.processing.add(x)
        return x

    def done(self, x: T) -> None:
        """Done re-queues an item made dirty while it was in flight."""
        self.processing.discard(x)
        if x in self.dirty:
            self.queue.append(x)

    def done_drawn(self, data: st.DataObject) -> T:
        """Done for an in-flight item that ``data`` draws: that item."""
        x = data.draw(st.sampled_from(sorted(self.processing)))
        self.done(x)
        return x
