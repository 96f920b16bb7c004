"""The rate-limiting queue: retries with per-item backoff.

Ports ``util/workqueue/rate_limiting_queue.go``: ``add_rate_limited(item)`` is
``add_after(item, limiter.when(item))``; ``forget`` and ``num_requeues`` go straight to
the limiter. No state of its own beyond the limiter's; refines ``spec/WorkQueue.tla``
through the delaying queue (a rate-limited add is a delayed add).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Generic, TypeVar

from refimpl.clock import Clock
from refimpl.workqueue.core import check_item
from refimpl.workqueue.delaying import DelayingQueue
from refimpl.workqueue.metrics import MetricsProvider
from refimpl.workqueue.queue import Queue
from refimpl.workqueue.rate_limiters import RateLimiter, default_controller_rate_limiter

__all__ = ["RateLimiting", "RateLimitingQueue"]

T = TypeVar("T", bound=Hashable)


class RateLimiting(Generic[T]):
    """The three rate-limiting calls, for any queue with ``add_after`` and a
    ``rate_limiter`` attribute (the threaded and the virtual-time queue share them)."""

    rate_limiter: RateLimiter[T]

    if TYPE_CHECKING:  # provided by the queue class; no stub at run time to shadow it

        def add_after(self, item: T, delay: float) -> None: ...

    def add_rate_limited(self, item: T) -> None:
        """Add ``item`` after the limiter's delay. The limiter records a failure even if
        the item is already waiting, queued or in flight (client-go does the same)."""
        check_item(item)
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Reset ``item``'s backoff; call it when processing succeeded. Not ``done``."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        """Failures recorded for ``item`` since the last ``forget``."""
        return self.rate_limiter.num_requeues(item)


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
        self.rate_limiter: RateLimiter[T] = (
            rate_limiter
            if rate_limiter is not None
            else default_controller_rate_limiter(clock=self._clock)
        )
