"""The rate-limiting queue: retries with per-item backoff.

Ports ``util/workqueue/rate_limiting_queue.go``: ``add_rate_limited(item)`` is
``add_after(item, limiter.when(item))``, in integer nanoseconds; ``forget`` and
``num_requeues`` go straight to the limiter. No state of its own beyond the limiter's;
refines ``spec/WorkQueue.tla`` through the delaying queue (a rate-limited add is a
delayed add).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from typing import TypeVar

from refimpl.clock import Clock, check_duration, to_ns
from refimpl.workqueue.core import check_item
from refimpl.workqueue.delaying import DelayingQueue
from refimpl.workqueue.delaying_core import AddAfter
from refimpl.workqueue.metrics import MetricsProvider
from refimpl.workqueue.queue import Queue
from refimpl.workqueue.rate_limiters import RateLimiter, default_controller_rate_limiter

__all__ = ["RateLimiting", "RateLimitingQueue"]

T = TypeVar("T", bound=Hashable)


class RateLimiting(AddAfter[T]):
    """The three rate-limiting calls, for any queue with ``add_after_ns`` (the threaded
    and the virtual-time queue share them).

    Setting ``rate_limiter`` also picks, once, how to ask it for a delay in integer
    nanoseconds: its ``when_ns`` when it has one (every limiter in refimpl does), else
    its ``when`` in seconds converted by :func:`refimpl.clock.to_ns`.
    """

    _rate_limiter: RateLimiter[T]
    _when_ns: Callable[[T], int]

    @property
    def rate_limiter(self) -> RateLimiter[T]:
        return self._rate_limiter

    @rate_limiter.setter
    def rate_limiter(self, limiter: RateLimiter[T]) -> None:
        self._rate_limiter = limiter
        when_ns: Callable[[T], int] | None = getattr(limiter, "when_ns", None)
        self._when_ns = when_ns if when_ns is not None else self._foreign_when_ns

    def _foreign_when_ns(self, item: T) -> int:
        # A limiter with ``when`` only: its seconds go through add_after's checks once.
        delay = self._rate_limiter.when(item)
        check_duration(delay, "when()")
        if delay > 0 and math.isinf(delay):
            raise ValueError("when(): delay must be finite")
        return to_ns(delay) if delay > 0 else 0

    def add_rate_limited(self, item: T) -> None:
        """Add ``item`` after the limiter's delay. The limiter records a failure even if
        the item is already waiting, queued or in flight (client-go does the same).

        The item is checked once, before the limiter sees it; the delay is integer
        nanoseconds from there on.
        """
        check_item(item)
        self._add_after_ns(item, self._when_ns(item))

    def forget(self, item: T) -> None:
        """Reset ``item``'s backoff; call it when processing succeeded. Not ``done``."""
        self._rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        """Failures recorded for ``item`` since the last ``forget``."""
        return self._rate_limiter.num_requeues(item)


class RateLimitingQueue(RateLimiting[T], DelayingQueue[T]):
    """client-go's ``TypedRateLimitingInterface``.

    ``forget`` only clears the limiter's memory of failures: it does not remove the item
    from the queue, and it is not a substitute for ``done``.
    """

    def __init__(
        self,
        rate_limiter: RateLimiter[T] | None = None,
        name: str = "",
        *,
        clock: Clock | None = None,
        metrics_provider: MetricsProvider | None = None,
        queue: Queue[T] | None = None,
    ) -> None:
        super().__init__(name, clock=clock, metrics_provider=metrics_provider, queue=queue)
        self.rate_limiter = (
            rate_limiter
            if rate_limiter is not None
            else default_controller_rate_limiter(clock=self._clock)
        )
