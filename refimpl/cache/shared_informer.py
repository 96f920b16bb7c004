"""The shared informer: reflector -> FIFO -> indexer -> every registered handler.

Ports ``tools/cache/shared_informer.go`` (``sharedIndexInformer``) and the queue choice
of ``controller.go`` (``newQueueFIFO``, ``processLoop``). Adds to
:class:`~refimpl.cache.informer_core.InformerCore` (the FIFO choice, processing,
fan-out and registration rules) only the threads, the locks and the start/stop life
cycle: the reflector thread, the process-loop thread over the FIFO *shell* wrapped
around the core's FIFO, and ``block_deltas``. Refines ``spec/Informer.tla``: ``store``
is the indexer, ``queue``/``items``/``synced`` the chosen FIFO, ``notifications`` the
listeners' buffers.

Guarantees, as in client-go: for each delta the indexer is updated *before* the
notification is handed to any listener (``handle_deltas`` holds ``block_deltas`` for
the whole step, so registering a handler never interleaves with it); each handler sees
its notifications one at a time, in order; a slow handler delays only itself.

Which FIFO: see :class:`~refimpl.cache.informer_core.FifoMode` (REAL_ATOMIC is
client-go's default since v1.36, REAL v1.33-v1.35, DELTA v1.32 and before). How the
reflector gets its state: :class:`~refimpl.cache.reflector.ListMode` (WATCH_LIST is
client-go's default since v1.35, LIST_WATCH v1.34 and before).

``has_synced`` is checked after each FIFO write and after each processed pop, reading
the FIFO through its lock, so with DeltaFIFO it turns true only once the last initial
object is in the indexer (client-go before v1.36 behaved so; since v1.36 DeltaFIFO's
synced channel can close just before).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from refimpl.cache.delta_fifo import DeltaFIFO
from refimpl.cache.deltas import Delta, FIFOClosedError, TransformFunc
from refimpl.cache.error_report import errors_log
from refimpl.cache.handlers import ResourceEventHandler
from refimpl.cache.informer_core import (
    FifoMode,
    FifoWriter,
    GenericLister,
    InformerCore,
    InformerStoppedError,
    ListMode,
    ObjT,
)
from refimpl.cache.listwatch import ListerWatcher
from refimpl.cache.process_deltas import process_deltas, process_deltas_in_batch
from refimpl.cache.processor import ProcessorListener, check_period_value
from refimpl.cache.real_fifo import RealFIFO, RealFIFOCore
from refimpl.cache.reflector import Reflector
from refimpl.cache.store import TypedIndexFunc
from refimpl.clock import Clock, RealClock

__all__ = [
    "CACHE_SYNC_POLL_PERIOD",
    "FifoMode",
    "GenericLister",
    "InformerStoppedError",
    "ListMode",
    "ResourceEventHandlerRegistration",
    "SharedIndexInformer",
    "not_synced_reason",
    "wait_for_cache_sync",
]

log = logging.getLogger("refimpl.cache.shared_informer")

#: How often wait_for_cache_sync polls (client-go's syncedPollPeriod).
CACHE_SYNC_POLL_PERIOD = 0.1


class ResourceEventHandlerRegistration:
    """The handle ``add_event_handler`` returns (client-go's registration)."""

    def __init__(self, informer: SharedIndexInformer[Any], listener: ProcessorListener) -> None:
        self._informer = informer
        self.listener = listener

    def has_synced(self) -> bool:
        """True once the informer synced *and* this handler returned from every
        initial-list ``on_add`` it was given."""
        return self.listener.has_synced()


class SharedIndexInformer(InformerCore[ObjT]):
    """client-go's ``SharedIndexInformer``: one list/watch, one cache, many handlers.

    Generic in the object type, like client-go's ``TypedSharedIndexInformer[T]``:
    ``SharedIndexInformer[Pod](lw)`` takes ``ResourceEventHandler[Pod]`` handlers and
    ``Pod``-typed indexers, and its indexer and lister return ``Pod``s. The parameter
    is a promise about what ``lw`` produces, for the type checker; nothing checks it
    at run time. Unnamed, it is :class:`~refimpl.meta.Object`.

    ``resync_period`` is the default handler resync period and the informer's initial
    resync check period (0: never resync). ``clock`` and ``seed`` make time and the
    reflector's jitter deterministic. ``threaded_listeners=False`` leaves delivery to
    whoever calls ``listener.dispatch_one()`` (the simulator, tests).
    """

    def __init__(
        self,
        lw: ListerWatcher,
        *,
        resync_period: float = 0.0,
        indexers: Mapping[str, TypedIndexFunc[ObjT]] | None = None,
        fifo_mode: FifoMode | str = FifoMode.REAL_ATOMIC,
        list_mode: ListMode | str = ListMode.WATCH_LIST,
        batch: bool = True,
        transform: TransformFunc | None = None,
        clock: Clock | None = None,
        seed: int | None = None,
        name: str = "informer",
        threaded_listeners: bool = True,
    ) -> None:
        super().__init__(
            lw,
            clock=clock if clock is not None else RealClock(),
            resync_period=resync_period,
            indexers=indexers,
            fifo_mode=fifo_mode,
            list_mode=list_mode,
            batch=batch,
            transform=transform,
            seed=seed,
            name=name,
            threaded_listeners=threaded_listeners,
        )
        self.block_deltas = threading.Lock()
        #: Guards ``started``/``stopped`` and registration against the life cycle.
        self._started_lock = threading.Lock()
        #: The shell around ``fifo_core``; None before ``run``.
        self.fifo: RealFIFO | DeltaFIFO | None = None
        self.reflector: Reflector | None = None
        self._threads: list[threading.Thread] = []

    # -- wiring -----------------------------------------------------------------------

    def set_transform(self, transform: TransformFunc) -> None:
        with self._started_lock:
            if self.started:
                raise RuntimeError("informer has already started")
            self.fifo_core.transformer = self._reported(transform)

    def run(self, stop: threading.Event) -> None:
        """Run until ``stop`` is set (blocks); then stop the listeners."""
        with self._started_lock:
            if self.started:
                log.warning("informer %s: run() called twice; ignoring", self.name)
                return
            core = self.fifo_core
            fifo: RealFIFO | DeltaFIFO = (
                RealFIFO(core=core, name=f"RealFIFO {self.name}")
                if isinstance(core, RealFIFOCore)
                else DeltaFIFO(core=core, name=f"DeltaFIFO {self.name}")
            )
            self.fifo = fifo
            # From now on the FIFO is shared between threads: read its sync under its
            # lock, so a DeltaFIFO popped but not yet processed does not count as synced.
            self._fifo_has_synced = fifo.has_synced
            self.reflector = self._new_reflector(Reflector, FifoWriter(fifo, self))
            self.started = True
        self.processor.run()
        reflector_thread = threading.Thread(
            target=self.reflector.run, args=(stop,), name=f"reflector-{self.name}", daemon=True
        )
        loop_thread = threading.Thread(
            target=self._process_loop, args=(fifo,), name=f"process-{self.name}", daemon=True
        )
        self._threads = [reflector_thread, loop_thread]
        reflector_thread.start()
        loop_thread.start()
        stop.wait()
        fifo.close()
        for thread in self._threads:
            thread.join()
        with self._started_lock:
            self.stopped = True
        self.processor.stop()

    def start(self, stop: threading.Event) -> threading.Thread:
        """``run`` in a daemon thread; returns the thread."""
        thread = threading.Thread(target=self.run, args=(stop,), name=self.name, daemon=True)
        thread.start()
        return thread

    def _process_loop(self, fifo: RealFIFO | DeltaFIFO) -> None:
        while True:
            try:
                if self.batch and isinstance(fifo, RealFIFO):
                    fifo.pop_batch(self.handle_batch_deltas, self.handle_deltas)
                else:
                    fifo.pop(self.handle_deltas)
            except FIFOClosedError:
                return
            except Exception as err:  # client-go logs processing errors and goes on
                self._process_failed(err)
            self._check_synced()

    def handle_deltas(self, deltas: Sequence[Delta], is_in_initial_list: bool) -> None:
        with self.block_deltas:
            process_deltas(self, self.indexer, deltas, is_in_initial_list)

    def handle_batch_deltas(self, deltas: Sequence[Delta], is_in_initial_list: bool) -> None:
        with self.block_deltas:
            process_deltas_in_batch(self, self.indexer, deltas, is_in_initial_list)

    # -- handlers ---------------------------------------------------------------------

    def add_event_handler(
        self,
        handler: ResourceEventHandler[ObjT],
        resync_period: float | None = None,
        *,
        name: str = "",
    ) -> ResourceEventHandlerRegistration:
        """Register ``handler``. Added after start, it first receives ``on_add(obj,
        True)`` for exactly the objects cached at that moment, then every later change.
        Raises :class:`InformerStoppedError` once the informer has stopped."""
        with self._started_lock:
            return ResourceEventHandlerRegistration(
                self, self._register(handler, resync_period, name)
            )

    def _add_listener(self, listener: ProcessorListener) -> None:
        # The snapshot of initial adds must not interleave with a processing step.
        with self.block_deltas:
            super()._add_listener(listener)

    def remove_event_handler(self, registration: ResourceEventHandlerRegistration) -> None:
        """Unregister; pending notifications are dropped. Removing twice is a no-op."""
        if not isinstance(registration, ResourceEventHandlerRegistration):
            raise TypeError(f"not a registration of this informer: {registration!r}")
        with self._started_lock, self.block_deltas:
            self.processor.remove_listener(registration.listener)

    # -- state ------------------------------------------------------------------------

    def has_started(self) -> bool:
        with self._started_lock:
            return self.started

    def is_stopped(self) -> bool:
        with self._started_lock:
            return self.stopped

    def last_sync_resource_version(self) -> str:
        reflector = self.reflector
        return "" if reflector is None else reflector.core.last_sync_resource_version

    def add_indexers(self, indexers: Mapping[str, TypedIndexFunc[ObjT]]) -> None:
        with self._started_lock:
            super().add_indexers(indexers)


def wait_for_cache_sync(
    stop: threading.Event,
    *has_synced: Callable[[], bool],
    poll: float = CACHE_SYNC_POLL_PERIOD,
    timeout: float | None = None,
) -> bool:
    """Poll (every 100 ms, real time) until every function returns True (-> True), or
    ``stop`` is set or ``timeout`` seconds pass (-> False).

    client-go's ``WaitForCacheSync`` has no timeout (callers pass a stop channel that
    closes on one) and says only "failed to sync". When it gives up here, it says why on
    the ``refimpl.errors`` logger (stderr by default): which functions had not synced
    and, for an informer's ``has_synced``, its :meth:`~InformerCore.last_sync_error`.
    """
    if timeout is not None:
        check_period_value("timeout", timeout)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        if all(fn() for fn in has_synced):
            return True
        wait = poll if deadline is None else min(poll, max(0.0, deadline - time.monotonic()))
        stopped = stop.wait(wait)
        if all(fn() for fn in has_synced):
            return True
        if stopped or (deadline is not None and time.monotonic() >= deadline):
            cause = "stop was set" if stopped else f"timed out after {timeout} s"
            errors_log.error("wait_for_cache_sync: %s; %s", cause, not_synced_reason(has_synced))
            return False


def not_synced_reason(has_synced: Sequence[Callable[[], bool]]) -> str:
    """Which of ``has_synced`` are false, and the last error of their informers."""
    parts: list[str] = []
    for fn in has_synced:
        if fn():
            continue
        owner = getattr(fn, "__self__", None)
        if isinstance(owner, InformerCore):
            err = owner.last_sync_error()
            why = f": last error {err!r}" if err is not None else " (no error seen yet)"
            parts.append(f"informer {owner.name} has not synced{why}")
        else:
            parts.append(f"{getattr(fn, '__qualname__', repr(fn))} is still False")
    return "; ".join(parts) or "all synced just now"
