"""The thread-safe work queue: :class:`QueueCore` behind one lock, plus waiting.

Ports the blocking half of ``util/workqueue/queue.go``. All state and every decision
live in :mod:`refimpl.workqueue.core`; this shell only holds the lock, parks ``get``
callers until an item or shutdown arrives, parks ``shut_down_with_drain`` until the
in-flight items are done, and runs the metrics refresh thread. Refines
``spec/WorkQueue.tla`` through the core.

Two conditions share the lock, as in CPython's ``queue.Queue``: ``_not_empty`` wakes one
getter per queued item (client-go's ``Signal``), ``_idle`` wakes every draining
shutdown when the last in-flight item is done. client-go uses one ``sync.Cond`` and
``Signal`` for both; with two draining callers one of them could then sleep forever
(client-go util/workqueue/queue.go ShutDownWithDrain; WQ-12; upstream PR #141079).
Separate conditions make that impossible without changing anything a single caller can
observe. Each condition is notified only while some thread is parked on it (the shell
counts getters and drainers around ``wait()``, under the lock): a notify nobody can
receive changes nothing, and skipping it is most of the shell's saving.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Generic, TypeVar

from refimpl.clock import Clock, RealClock
from refimpl.workqueue.core import MeteredQueueCore, QueueContainer, QueueCore
from refimpl.workqueue.metrics import MetricsProvider, QueueMetrics

__all__ = ["UNFINISHED_WORK_UPDATE_PERIOD", "Queue"]

T = TypeVar("T", bound=Hashable)

#: How often the unfinished-work gauges are refreshed (client-go: 500 ms).
UNFINISHED_WORK_UPDATE_PERIOD = 0.5


class Queue(Generic[T]):
    """client-go's ``TypedInterface``: add, get, done, len, shut_down[_with_drain].

    Usage contract: every ``get()`` that returns an item must be matched by exactly one
    ``done(item)``, normally in a ``finally`` block. Without it the item stays "in
    flight" forever: later ``add`` calls only mark it dirty, it is never handed out
    again, and ``shut_down_with_drain`` blocks.
    """

    def __init__(
        self,
        name: str = "",
        *,
        clock: Clock | None = None,
        metrics_provider: MetricsProvider | None = None,
        container: QueueContainer[T] | None = None,
        unfinished_work_update_period: float = UNFINISHED_WORK_UPDATE_PERIOD,
    ) -> None:
        self.name = name
        self._clock: Clock = clock if clock is not None else RealClock()
        # As in client-go, only a named queue with a provider records metrics.
        metrics = (
            QueueMetrics[T](metrics_provider, name, self._clock)
            if metrics_provider is not None and name
            else None
        )
        self._core: QueueCore[T] = (
            QueueCore(container) if metrics is None else MeteredQueueCore(metrics, container)
        )
        self._lock = threading.Lock()
        self._not_empty = threading.Condition(self._lock)
        self._idle = threading.Condition(self._lock)
        # Threads parked in get() / shut_down_with_drain(), counted under the lock
        # around their wait(): a notify with nobody parked is skipped, which is most of
        # a Condition's cost (every thread in a wait() is counted, so none is missed).
        self._getters = 0
        self._drainers = 0
        self._stop = threading.Event()
        self._tick = threading.Condition()  # the metrics loop parks here between refreshes
        self._metrics_thread: threading.Thread | None = None
        if metrics is not None:
            # As in client-go, the refresh loop exists only when metrics are real.
            self._metrics_thread = threading.Thread(
                target=self._update_unfinished_work_loop,
                args=(unfinished_work_update_period,),
                name=f"workqueue-metrics-{name}",
                daemon=True,
            )
            self._metrics_thread.start()

    # -- producer side ---------------------------------------------------------------

    def add(self, item: T) -> None:
        """Mark ``item`` as needing processing; ignored once shutting down."""
        with self._lock:
            if self._core.add(item) and self._getters:
                self._not_empty.notify()

    # -- consumer side ---------------------------------------------------------------

    def get(self) -> tuple[T | None, bool]:
        """Block until an item is available; return ``(item, False)``.

        Returns ``(None, True)`` once the queue is shut down *and* empty: after
        ``shut_down`` the items still queued are handed out first.
        """
        with self._lock:
            core = self._core
            if not core.can_get():
                # Nothing queued: park until add, a re-queueing done or shutdown wakes us.
                self._getters += 1
                try:
                    while not core.can_get():
                        self._not_empty.wait()
                finally:
                    self._getters -= 1
            return core.get()

    def done(self, item: T) -> None:
        """Finish ``item``; if it was added again meanwhile, queue it once more."""
        with self._lock:
            requeued, idle = self._core.done(item)
            if requeued and self._getters:
                self._not_empty.notify()
            if idle and self._drainers:
                self._idle.notify_all()

    def __len__(self) -> int:
        """Number of queued items (informational only: never gate add/get on it)."""
        with self._lock:
            return len(self._core)

    def len(self) -> int:
        """client-go's ``Len()`` (same as ``len(queue)``)."""
        return self.__len__()

    # -- shutdown --------------------------------------------------------------------

    def shut_down(self) -> None:
        """Ignore further adds; wake every getter. Queued items are still handed out.

        Also releases a ``shut_down_with_drain`` that is waiting. Idempotent.
        """
        with self._lock:
            self._core.shut_down()
            self._not_empty.notify_all()
            self._idle.notify_all()
        self._stop_metrics_thread()

    def shut_down_with_drain(self) -> None:
        """Shut down, then wait until every item already handed out is ``done``.

        This follows client-go's code rather than its comment: items that are queued
        but not yet handed out are not waited for, and neither is an item re-queued by
        the last ``done``. A later ``shut_down`` releases the wait. Calling this from a
        worker that holds an item deadlocks that worker, as in client-go.
        """
        with self._lock:
            core = self._core
            core.begin_drain()
            self._not_empty.notify_all()
            if not core.drain_complete():
                self._drainers += 1
                try:
                    while not core.drain_complete():
                        self._idle.wait()
                finally:
                    self._drainers -= 1
        self._stop_metrics_thread()

    def shutting_down(self) -> bool:
        with self._lock:
            return self._core.shutting_down

    # -- introspection for tests, the tour and the simulator -------------------------

    def snapshot(self) -> tuple[list[T], frozenset[T], frozenset[T]]:
        """A consistent copy of ``(queue, dirty, processing)``."""
        with self._lock:
            core = self._core
            return list(core.queue), frozenset(core.dirty), frozenset(core.processing)

    # -- metrics refresh ---------------------------------------------------------------

    def _update_unfinished_work_loop(self, period: float) -> None:
        with self._tick:
            while not self._stop.is_set():
                deadline = self._clock.now() + period
                while not self._stop.is_set() and self._clock.now() < deadline:
                    self._clock.wait_until(self._tick, deadline)
                if self._stop.is_set():
                    return
                self.update_unfinished_work()

    def update_unfinished_work(self) -> None:
        """Refresh the unfinished-work gauges now (the loop does it every period)."""
        with self._lock:
            self._core.update_unfinished_work()

    def _stop_metrics_thread(self) -> None:
        # client-go's ShutDown waits for its metrics goroutine (PR #135072, v1.35).
        with self._tick:
            self._stop.set()
            self._tick.notify_all()
        thread = self._metrics_thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
