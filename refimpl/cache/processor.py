"""Fan-out from one informer to many handlers: the shared processor and its listeners.

Ports ``sharedProcessor``, ``processorListener`` and the notification types of
``tools/cache/shared_informer.go``, and ``synctrack.SingleFileTracker``. Each listener
owns an unbounded buffer and delivers to its handler one notification at a time, in
distribution order, so a slow handler never blocks the informer or the other handlers.
Refines ``spec/Informer.tla``: variables ``pending[h]`` (a listener's buffer) and
actions ``Distribute`` and ``Dispatch(h)``.

A listener can run threaded (``start()``: one thread, client-go's ``run``) or be driven
by hand (``dispatch_one()``), which is how the simulator and the property tests use it.

Differences from client-go, on purpose:

* a handler that raises is reported (:mod:`refimpl.cache.error_report`: on stderr by
  default, once per distinct error, with the informer's and the handler's name) and the
  listener goes on with the next notification (client-go crashes the process by
  default, or, with ``ReallyCrash`` off, logs through klog and sleeps 1 s);
* an initial-list ``on_add`` that raises still counts as finished for the
  registration's ``has_synced`` (in client-go a panic skips the count, so the
  registration would never report synced).
"""

from __future__ import annotations

import logging
import math
import threading
from collections import deque
from typing import Any

import attrs

from refimpl.cache.error_report import ErrorReporter
from refimpl.cache.handlers import ResourceEventHandler
from refimpl.clock import Clock
from refimpl.meta import Object

__all__ = [
    "MINIMUM_RESYNC_PERIOD",
    "AddNotification",
    "DeleteNotification",
    "Notification",
    "ProcessorListener",
    "SharedProcessor",
    "SingleFileTracker",
    "UpdateNotification",
    "check_period_value",
    "determine_resync_period",
    "handler_resync_period",
    "is_resync_update",
]

log = logging.getLogger("refimpl.cache.processor")

#: Handlers may not ask for a resync more often than this (client-go: 1 s).
MINIMUM_RESYNC_PERIOD = 1.0


@attrs.frozen
class AddNotification:
    new_obj: Any
    is_in_initial_list: bool


@attrs.frozen
class UpdateNotification:
    old_obj: Any
    new_obj: Any


@attrs.frozen
class DeleteNotification:
    old_obj: Any


Notification = AddNotification | UpdateNotification | DeleteNotification


class SingleFileTracker:
    """Has a handler returned from every initial-list add it was given?

    ``has_synced`` becomes true once upstream (the informer) has synced and the count
    of started-but-unfinished initial adds is zero; once true it stays true.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._upstream = False
        self._synced = threading.Event()

    def start(self) -> None:
        with self._lock:
            self._count += 1

    def finished(self) -> None:
        with self._lock:
            self._count -= 1
            if self._count < 0:
                raise RuntimeError("SingleFileTracker: finished() without start()")
            if self._count == 0 and self._upstream:
                self._synced.set()

    def upstream_has_synced(self) -> None:
        with self._lock:
            self._upstream = True
            if self._count == 0:
                self._synced.set()

    def has_synced(self) -> bool:
        return self._synced.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)


def check_period_value(argument: str, value: object) -> float:
    """``value`` as a period in seconds: a real number, finite, not negative.

    client-go takes a ``time.Duration`` (an integer, so never NaN); a negative one is
    treated as 0 there. Python lets NaN through every comparison, which would make an
    informer that silently never (or always) resyncs, so both are refused, naming
    ``argument``.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{argument} must be a number of seconds, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{argument} must be a finite number >= 0, got {value!r}")
    return float(value)


def handler_resync_period(
    requested: float | None, default: float, check_period: float, started: bool
) -> tuple[float, float]:
    """client-go's rules for a new handler's resync period.

    Returns ``(period, check_period)``: the handler's requested period (the informer's
    default if None, raised to :data:`MINIMUM_RESYNC_PERIOD`) and the informer's check
    period, which a shorter request lowers before the informer starts; after start the
    request is raised to the check period instead.
    """
    period = default if requested is None else requested
    check_period_value("resync_period", period)
    if period > 0:
        period = max(period, MINIMUM_RESYNC_PERIOD)
        if period < check_period:
            if started:
                log.info("resync period %s raised to the check period %s", period, check_period)
                period = check_period
            else:
                check_period = period
    return period, check_period


def is_resync_update(old: object, new: object) -> bool:
    """An update that did not change the resourceVersion: a resync, or a relist of an
    unchanged object (client-go compares RVs whatever the delta type, PR #107507)."""
    return (
        isinstance(old, Object)
        and isinstance(new, Object)
        and old.resource_version == new.resource_version
    )


def determine_resync_period(desired: float, check: float) -> float:
    """The period a listener really gets, given the informer's check period."""
    if desired == 0:
        return 0.0
    if check == 0:
        log.info("resync period %s ignored: this informer does not resync", desired)
        return 0.0
    if desired < check:
        log.info("resync period %s raised to the resync check period %s", desired, check)
        return check
    return desired


class ProcessorListener:
    """One handler's buffer and delivery loop (client-go ``processorListener``)."""

    def __init__(
        self,
        handler: ResourceEventHandler[Any],
        requested_resync_period: float,
        resync_period: float,
        now: float,
        name: str = "",
        reporter: ErrorReporter | None = None,
    ) -> None:
        self.handler = handler
        self.name = name or type(handler).__name__
        #: Where a raising handler is reported (the informer's reporter, named after it).
        self.reporter = reporter if reporter is not None else ErrorReporter("(unnamed)")
        self.requested_resync_period = requested_resync_period
        self.resync_period = resync_period
        self.next_resync = now + resync_period
        self.sync_tracker = SingleFileTracker()
        #: Notifications distributed and not yet delivered, oldest first (unbounded).
        self.pending: deque[Notification] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._delivering = False
        self._thread: threading.Thread | None = None
        self.delivered = 0
        self.failures = 0

    # -- fed by the processor -----------------------------------------------------------

    def add(self, notification: Notification) -> None:
        if isinstance(notification, AddNotification) and notification.is_in_initial_list:
            self.sync_tracker.start()
        with self._cond:
            if self._closed:
                return
            self.pending.append(notification)
            self._cond.notify()

    def close(self) -> None:
        """Stop: undelivered notifications are dropped; a callback in progress finishes."""
        with self._cond:
            self._closed = True
            self.pending.clear()
            self._cond.notify_all()

    # -- delivery -----------------------------------------------------------------------

    def dispatch_one(self) -> bool:
        """Deliver the oldest pending notification; False if there was none."""
        with self._cond:
            if self._closed or not self.pending:
                return False
            notification = self.pending.popleft()
            self._delivering = True
        try:
            self._deliver(notification)
        finally:
            with self._cond:
                self._delivering = False
                self._cond.notify_all()
        return True

    def _deliver(self, n: Notification) -> None:
        method = "on_delete"
        try:
            if isinstance(n, UpdateNotification):
                method = "on_update"
                self.handler.on_update(n.old_obj, n.new_obj)
            elif isinstance(n, AddNotification):
                method = "on_add"
                self.handler.on_add(n.new_obj, n.is_in_initial_list)
            else:
                self.handler.on_delete(n.old_obj)
        except Exception as err:
            self.failures += 1
            self.reporter.report(f"handler {self.name} {method}", err)
        finally:
            self.delivered += 1
            if isinstance(n, AddNotification) and n.is_in_initial_list:
                self.sync_tracker.finished()

    def start(self) -> None:
        """Deliver from a thread of its own until closed."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name=f"listener-{self.name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self.pending and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
            self.dispatch_one()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def idle(self) -> bool:
        """Nothing pending and no callback running."""
        with self._cond:
            return not self.pending and not self._delivering

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until :meth:`idle` (real time; for tests and shutdown)."""
        with self._cond:
            return self._cond.wait_for(
                lambda: (not self.pending and not self._delivering) or self._closed, timeout
            )

    # -- resync bookkeeping ---------------------------------------------------------------

    def should_resync(self, now: float) -> bool:
        return self.resync_period != 0 and now >= self.next_resync

    def determine_next_resync(self, now: float) -> None:
        self.next_resync = now + self.resync_period

    def has_synced(self) -> bool:
        return self.sync_tracker.has_synced()


class SharedProcessor:
    """Distributes each notification to every listener (client-go ``sharedProcessor``).

    ``listeners`` maps each listener to its *syncing* flag: a resync notification (an
    update whose resourceVersion did not change) goes only to listeners whose flag is
    set. A flag starts true, so until the first resync check every such update reaches
    every listener.
    """

    def __init__(self, clock: Clock, *, threaded: bool = True) -> None:
        self._clock = clock
        self._threaded = threaded
        self._lock = threading.RLock()
        self._started_cond = threading.Condition(self._lock)
        self.listeners: dict[ProcessorListener, bool] | None = {}
        self.listeners_started = False

    def add_listener(self, listener: ProcessorListener) -> bool:
        """Register ``listener``; start it if the processor runs. Returns whether it runs."""
        with self._lock:
            if self.listeners is None:
                return False
            self.listeners[listener] = True
            if self.listeners_started and self._threaded:
                listener.start()
            return self.listeners_started

    def remove_listener(self, listener: ProcessorListener) -> None:
        with self._lock:
            if self.listeners is None or listener not in self.listeners:
                return
            del self.listeners[listener]
        listener.close()

    def distribute(self, notification: Notification, sync: bool) -> None:
        with self._lock:
            # Early notifications wait for the listeners to start (PR #136509's fix waits
            # without blocking writers; a Condition on our lock does the same).
            while self.listeners and not self.listeners_started:
                self._started_cond.wait()
            if not self.listeners:
                return  # no listeners, or stopped: the notification is dropped
            for listener, syncing in self.listeners.items():
                if not sync or syncing:
                    listener.add(notification)

    def run(self) -> None:
        """Start every listener (threads in threaded mode)."""
        with self._lock:
            if self.listeners is None:
                return
            if self._threaded:
                for listener in self.listeners:
                    listener.start()
            self.listeners_started = True
            self._started_cond.notify_all()

    def stop(self) -> None:
        """Close every listener (pending notifications are dropped) and wait for them."""
        with self._lock:
            listeners = list(self.listeners or ())
            self.listeners = None
            self.listeners_started = False
            self._started_cond.notify_all()
        for listener in listeners:
            listener.close()
        for listener in listeners:
            listener.join()

    def should_resync(self) -> bool:
        """Mark the listeners due for a resync now; True if any is."""
        with self._lock:
            if not self.listeners:
                return False
            now = self._clock.now()
            needed = False
            for listener in self.listeners:
                due = listener.should_resync(now)
                self.listeners[listener] = due
                if due:
                    needed = True
                    listener.determine_next_resync(now)
            return needed

    def resync_check_period_changed(self, check_period: float) -> None:
        with self._lock:
            for listener in self.listeners or ():
                listener.resync_period = determine_resync_period(
                    listener.requested_resync_period, check_period
                )

    def snapshot(self) -> list[ProcessorListener]:
        with self._lock:
            return list(self.listeners or ())
