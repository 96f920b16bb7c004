"""The delaying queue: ``add_after(item, delay)`` on top of a :class:`Queue`.

Ports ``util/workqueue/delaying_queue.go``. The waiting room is
:class:`~refimpl.workqueue.delaying_core.DelayingCore`; this shell adds one lock, the
timer thread (client-go's ``waitingLoop``) and the 10 s heartbeat. Refines the delay
abstraction of ``spec/WorkQueue.tla`` through the core.

client-go hands each record to its loop over a 1000-slot channel; here ``add_after``
inserts under the lock directly, which is what the loop does on receipt. The
observable rules are the same: a non-positive delay adds at once (synchronously); a
repeated ``add_after`` of a waiting item keeps the earliest ready time; an item is added
through the ordinary ``add`` when due, so dirty/processing de-duplication applies at that
moment; waiting items are dropped at shutdown.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import TypeVar

from refimpl.clock import NS_PER_SECOND, Clock, RealClock, to_ns
from refimpl.workqueue.delaying_core import AddAfter, DelayingCore
from refimpl.workqueue.metrics import MetricsProvider, RetryMetrics
from refimpl.workqueue.queue import Queue

__all__ = ["MAX_WAIT", "DelayingQueue"]

T = TypeVar("T", bound=Hashable)

#: The waiting loop wakes at least this often even if no timer fires (client-go: 10 s).
MAX_WAIT = 10.0
_MAX_WAIT_NS = to_ns(MAX_WAIT)


class DelayingQueue(AddAfter[T]):
    """client-go's ``TypedDelayingInterface``: a queue plus ``add_after``."""

    def __init__(
        self,
        name: str = "",
        *,
        clock: Clock | None = None,
        metrics_provider: MetricsProvider | None = None,
        queue: Queue[T] | None = None,
    ) -> None:
        self.name = name
        self._clock: Clock = clock if clock is not None else RealClock()
        self.queue: Queue[T] = (
            queue
            if queue is not None
            else Queue(name, clock=self._clock, metrics_provider=metrics_provider)
        )
        self._retries = (  # only a named queue records metrics, as in client-go
            RetryMetrics(metrics_provider, name) if metrics_provider is not None and name else None
        )
        self._core: DelayingCore[T] = DelayingCore()
        self._queue_core = self.queue._core  # read-only: its shutting_down flag
        self._cond = threading.Condition(threading.Lock())
        self._stopped = False
        #: shut_down has run (client-go's stopOnce guards the whole of ShutDown).
        self._shut_down_once = False
        self._thread = threading.Thread(
            target=self._waiting_loop, name=f"workqueue-delaying-{name}", daemon=True
        )
        self._thread.start()

    # -- the delaying part -------------------------------------------------------------

    def _add_after_ns(self, item: T, delay_ns: int) -> None:
        # Reading the flag without the queue's lock is
        # what client-go's ShuttingDown() answers too: a shutdown racing this call may
        # land on either side of it.
        if self._queue_core.shutting_down:
            return
        if self._retries is not None:
            self._retries.retry()
        if delay_ns <= 0:
            self.queue.add(item)
            return
        with self._cond:
            if self._stopped:
                return  # client-go drops the record once stopCh is closed
            if self._core.insert(item, self._clock.now_ns() + delay_ns):
                self._cond.notify()

    def waiting(self) -> dict[T, float]:
        """Items waiting and their ready times in seconds (a copy, for tests and the
        tour)."""
        with self._cond:
            return {item: ready / NS_PER_SECOND for item, ready in self._core.ready_times().items()}

    def _waiting_loop(self) -> None:
        clock = self._clock
        with self._cond:
            while not self._stopped:
                if self._queue_core.shutting_down:
                    break
                now = clock.now_ns()
                for item in self._core.pop_due(now):
                    self.queue.add(item)
                next_ready = self._core.next_ready_at()
                deadline = now + _MAX_WAIT_NS
                if next_ready is not None and next_ready < deadline:
                    deadline = next_ready
                # Clocks wait in seconds; ns / 1e9 is monotone, so the clock's own
                # "now >= deadline" agrees with ours in nanoseconds.
                clock.wait_until(self._cond, deadline / NS_PER_SECOND)
            self._core.clear()

    def _stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._core.clear()
            self._cond.notify_all()
        if self._thread is not threading.current_thread():
            self._thread.join()

    # -- the queue part, delegated -----------------------------------------------------

    def add(self, item: T) -> None:
        self.queue.add(item)

    def get(self) -> tuple[T | None, bool]:
        return self.queue.get()

    def done(self, item: T) -> None:
        self.queue.done(item)

    def __len__(self) -> int:
        return len(self.queue)

    def len(self) -> int:
        return len(self.queue)

    def shutting_down(self) -> bool:
        return self.queue.shutting_down()

    def shut_down(self) -> None:
        """Shut the queue down and stop the timer; waiting items are dropped.

        Runs once, as client-go's delaying queue does (delaying_queue.go ShutDown is a
        ``stopOnce``): a second call does not reach the queue, so after
        ``shut_down(); shut_down_with_drain()`` another ``shut_down`` does not cut the
        drain short (a plain :class:`Queue`'s would, WQ-12).
        """
        with self._cond:
            if self._shut_down_once:
                return
            self._shut_down_once = True
        self.queue.shut_down()
        self._stop()

    def shut_down_with_drain(self) -> None:
        """Drain the queue (see :meth:`Queue.shut_down_with_drain`); waiting items are
        dropped. client-go leaves its loop to notice at its next wake-up (at most 10 s);
        we stop it at once, which nobody can observe except as a thread ending sooner."""
        self.queue.shut_down_with_drain()
        self._stop()
