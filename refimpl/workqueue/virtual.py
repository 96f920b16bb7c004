"""A rate-limiting queue on virtual time, with no threads: the cores composed directly.

Composes :class:`~refimpl.workqueue.core.QueueCore`,
:class:`~refimpl.workqueue.delaying_core.DelayingCore` and a rate limiter the way
``util/workqueue/rate_limiting_queue.go`` and ``delaying_queue.go`` compose them, but the
delaying queue's timer thread is replaced by :meth:`VirtualRateLimitingQueue.fire_due`,
called by whoever owns time (the simulator, the tour, a test). ``get`` never blocks: it
raises :class:`~refimpl.blocking.WouldBlock` instead. Refines ``spec/WorkQueue.tla``
through its cores; the owner of the :class:`~refimpl.clock.FakeClock` decides when
delayed adds fire, as the spec's scheduler does.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TypeVar

from refimpl.clock import NS_PER_SECOND, FakeClock
from refimpl.workqueue.core import QueueCore
from refimpl.workqueue.delaying_core import DelayingCore
from refimpl.workqueue.rate_limiters import RateLimiter, default_controller_rate_limiter
from refimpl.workqueue.rate_limiting import RateLimiting

__all__ = ["VirtualRateLimitingQueue"]

T = TypeVar("T", bound=Hashable)


class VirtualRateLimitingQueue(RateLimiting[T]):
    """Same API as :class:`~refimpl.workqueue.RateLimitingQueue`, single-threaded."""

    def __init__(
        self,
        clock: FakeClock,
        rate_limiter: RateLimiter[T] | None = None,
    ) -> None:
        self.clock = clock
        self.core: QueueCore[T] = QueueCore()
        self.waiting: DelayingCore[T] = DelayingCore()
        #: shut_down has run: like the threaded shell, it runs once (client-go's stopOnce).
        self.shut_down_once = False
        self.rate_limiter = (
            rate_limiter
            if rate_limiter is not None
            else default_controller_rate_limiter(clock=clock)
        )

    # queue
    def add(self, item: T) -> None:
        self.core.add(item)

    def get(self) -> tuple[T | None, bool]:
        self.fire_due()
        return self.core.get()

    def done(self, item: T) -> None:
        self.core.done(item)

    def __len__(self) -> int:
        return len(self.core)

    def shut_down(self) -> None:
        """Once, as client-go's delaying queue (see DelayingQueue.shut_down, DQ-6)."""
        if self.shut_down_once:
            return
        self.shut_down_once = True
        self.core.shut_down()
        self.waiting.clear()

    def shutting_down(self) -> bool:
        return self.core.shutting_down

    # delaying: add_after and add_after_ns come from AddAfter, through RateLimiting
    def _add_after_ns(self, item: T, delay_ns: int) -> None:
        if self.core.shutting_down:
            return
        if delay_ns <= 0:
            self.core.add(item)
        else:
            self.waiting.insert(item, self.clock.now_ns() + delay_ns)

    def fire_due(self) -> list[T]:
        """Add every waiting item whose time has come; return them."""
        if self.core.shutting_down:
            return []
        due = self.waiting.pop_due(self.clock.now_ns())
        for item in due:
            self.core.add(item)
        return due

    def next_ready_at(self) -> float | None:
        """The next ready time in seconds (see :meth:`next_ready_at_ns`)."""
        ready = self.waiting.next_ready_at()
        return None if ready is None else ready / NS_PER_SECOND

    def next_ready_at_ns(self) -> int | None:
        return self.waiting.next_ready_at()

    def advance_to_next(self) -> bool:
        """Step the clock to the next ready time and fire it; False if nothing waits."""
        ready = self.waiting.next_ready_at()
        if ready is None:
            return False
        if ready > self.clock.now_ns():
            self.clock.set_time_ns(ready)
        self.fire_due()
        return True
