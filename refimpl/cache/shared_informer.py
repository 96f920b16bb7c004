"""The shared informer: reflector -> FIFO -> indexer -> every registered handler.

Ports ``tools/cache/shared_informer.go`` (``sharedIndexInformer``) and the queue choice
of ``controller.go`` (``newQueueFIFO``, ``processLoop``). Owns the wiring and the
start/stop life cycle; every decision lives in the parts (FIFO cores,
``process_deltas``, the processor). Refines ``spec/Informer.tla``: ``store`` is the
indexer, ``fifo`` the chosen FIFO, ``pending`` the listeners' buffers.

Guarantees, as in client-go: for each delta the indexer is updated *before* the
notification is handed to any listener (``handle_deltas`` holds ``block_deltas`` for
the whole step, so registering a handler never interleaves with it); each handler sees
its notifications one at a time, in order; a slow handler delays only itself.

Which FIFO (semantics.md section 0.1): ``FifoMode.REAL_ATOMIC`` is client-go's default
since v1.36 (RealFIFO with atomic relists/resyncs, unlock-while-processing, bookmarks
and batch popping); ``FifoMode.REAL`` is v1.33-v1.35 (RealFIFO with the indexer as
known objects); ``FifoMode.DELTA`` is v1.32 and before (DeltaFIFO with ``Replaced``).

``has_synced`` is checked after each FIFO write and after each processed pop, so with
DeltaFIFO it turns true only once the last initial object is in the indexer (client-go
before v1.36 behaved so; since v1.36 DeltaFIFO's synced channel can close just before).
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from refimpl.cache.controller import ResourceEventHandler, process_deltas, process_deltas_in_batch
from refimpl.cache.delta_fifo import DeltaFIFO
from refimpl.cache.deltas import Delta, FIFOClosedError, TransformFunc
from refimpl.cache.listwatch import ListerWatcher
from refimpl.cache.processor import (
    AddNotification,
    DeleteNotification,
    ProcessorListener,
    SharedProcessor,
    UpdateNotification,
    determine_resync_period,
    handler_resync_period,
    is_resync_update,
)
from refimpl.cache.real_fifo import RealFIFO
from refimpl.cache.reflector import Reflector
from refimpl.cache.store import Indexer, IndexFunc
from refimpl.clock import Clock, RealClock
from refimpl.meta import Object, meta_namespace_key_func, split_meta_namespace_key

__all__ = [
    "CACHE_SYNC_POLL_PERIOD",
    "FifoMode",
    "GenericLister",
    "InformerStoppedError",
    "ResourceEventHandlerRegistration",
    "SharedIndexInformer",
    "wait_for_cache_sync",
]

log = logging.getLogger("refimpl.cache.shared_informer")

#: How often wait_for_cache_sync polls (client-go's syncedPollPeriod).
CACHE_SYNC_POLL_PERIOD = 0.1


class FifoMode(enum.StrEnum):
    REAL_ATOMIC = "real-atomic"
    REAL = "real"
    DELTA = "delta"


class InformerStoppedError(RuntimeError):
    """The informer has stopped: no new handlers or indexers."""


class ResourceEventHandlerRegistration:
    """The handle ``add_event_handler`` returns (client-go's registration)."""

    def __init__(self, informer: SharedIndexInformer, listener: ProcessorListener) -> None:
        self._informer = informer
        self.listener = listener

    def has_synced(self) -> bool:
        """True once the informer synced *and* this handler returned from every
        initial-list ``on_add`` it was given."""
        return self.listener.has_synced()


class GenericLister:
    """Reads from the informer's indexer only: never a request to the server."""

    def __init__(self, indexer: Indexer) -> None:
        self._indexer = indexer

    def list(self, selector: Mapping[str, str] | None = None) -> list[Object]:
        items = [o for o in self._indexer.list() if isinstance(o, Object)]
        if not selector:
            return items
        return [o for o in items if all(o.labels.get(k) == v for k, v in selector.items())]

    def get(self, namespace: str, name: str) -> Object | None:
        key = f"{namespace}/{name}" if namespace else name
        obj, exists = self._indexer.get_by_key(key)
        return obj if exists and isinstance(obj, Object) else None

    def get_by_key(self, key: str) -> Object | None:
        split_meta_namespace_key(key)  # a malformed key is an error, not a miss
        obj, exists = self._indexer.get_by_key(key)
        return obj if exists and isinstance(obj, Object) else None


class SharedIndexInformer:
    """client-go's ``SharedIndexInformer``: one list/watch, one cache, many handlers.

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
        indexers: Mapping[str, IndexFunc] | None = None,
        fifo_mode: FifoMode | str = FifoMode.REAL_ATOMIC,
        batch: bool = True,
        transform: TransformFunc | None = None,
        clock: Clock | None = None,
        seed: int | None = None,
        name: str = "informer",
        threaded_listeners: bool = True,
    ) -> None:
        if resync_period < 0:
            raise ValueError(f"resync_period must be >= 0, got {resync_period}")
        self.name = name
        self.lw = lw
        self.fifo_mode = FifoMode(fifo_mode)
        self.batch = batch
        self._clock: Clock = clock if clock is not None else RealClock()
        self._seed = seed
        self._transform = transform
        self.indexer = Indexer(indexers=dict(indexers or {}))
        self.processor = SharedProcessor(self._clock, threaded=threaded_listeners)
        self.default_event_handler_resync_period = resync_period
        self.resync_check_period = resync_period
        self.block_deltas = threading.Lock()
        self._started_lock = threading.Lock()
        self.started = False
        self.stopped = False
        self._synced = threading.Event()
        self.fifo: RealFIFO | DeltaFIFO | None = None
        self.reflector: Reflector | None = None
        self._threads: list[threading.Thread] = []
        #: Errors from processing that client-go would swallow; kept for tests/tools.
        self.process_errors: list[BaseException] = []

    # -- wiring -----------------------------------------------------------------------

    def _new_fifo(self) -> RealFIFO | DeltaFIFO:
        if self.fifo_mode is FifoMode.REAL_ATOMIC:
            return RealFIFO(
                key_func=meta_namespace_key_func,
                transformer=self._transform,
                atomic_events=True,
                unlock_while_processing=True,
                emit_delta_type_bookmark=True,
                name=f"RealFIFO {self.name}",
            )
        if self.fifo_mode is FifoMode.REAL:
            return RealFIFO(
                key_func=meta_namespace_key_func,
                known_objects=self.indexer,
                transformer=self._transform,
                name=f"RealFIFO {self.name}",
            )
        return DeltaFIFO(
            known_objects=self.indexer,
            emit_delta_type_replaced=True,
            transformer=self._transform,
            name=f"DeltaFIFO {self.name}",
        )

    def set_transform(self, transform: TransformFunc) -> None:
        with self._started_lock:
            if self.started:
                raise RuntimeError("informer has already started")
            self._transform = transform

    def run(self, stop: threading.Event) -> None:
        """Run until ``stop`` is set (blocks); then stop the listeners."""
        with self._started_lock:
            if self.started:
                log.warning("informer %s: run() called twice; ignoring", self.name)
                return
            fifo = self._new_fifo()
            self.fifo = fifo
            self.reflector = Reflector(
                self.lw,
                _SyncCheckingStore(fifo, self._check_synced),
                name=self.name,
                resync_period=self.resync_check_period,
                clock=self._clock,
                seed=self._seed,
                should_resync=self.processor.should_resync,
            )
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
            except Exception as err:  # client-go ignores processing errors silently
                self.process_errors.append(err)
                log.warning("informer %s: processing failed: %r", self.name, err)
            self._check_synced()

    def handle_deltas(self, deltas: Sequence[Delta], is_in_initial_list: bool) -> None:
        with self.block_deltas:
            process_deltas(self, self.indexer, deltas, is_in_initial_list)

    def handle_batch_deltas(self, deltas: Sequence[Delta], is_in_initial_list: bool) -> None:
        with self.block_deltas:
            process_deltas_in_batch(self, self.indexer, deltas, is_in_initial_list)

    def _check_synced(self) -> None:
        fifo = self.fifo
        if self._synced.is_set() or fifo is None or not fifo.has_synced():
            return
        self._synced.set()
        for listener in self.processor.snapshot():
            listener.sync_tracker.upstream_has_synced()

    # -- the informer is the handler process_deltas calls ------------------------------

    def on_add(self, obj: object, is_in_initial_list: bool) -> None:
        self.processor.distribute(AddNotification(obj, is_in_initial_list), False)

    def on_update(self, old: object, new: object) -> None:
        # Same resourceVersion: a resync (or a relist of an unchanged object).
        self.processor.distribute(UpdateNotification(old, new), is_resync_update(old, new))

    def on_delete(self, obj: object) -> None:
        self.processor.distribute(DeleteNotification(obj), False)

    # -- handlers ---------------------------------------------------------------------

    def add_event_handler(
        self,
        handler: ResourceEventHandler,
        resync_period: float | None = None,
        *,
        name: str = "",
    ) -> ResourceEventHandlerRegistration:
        """Register ``handler``. Added after start, it first receives ``on_add(obj,
        True)`` for exactly the objects cached at that moment, then every later change."""
        with self._started_lock:
            if self.stopped:
                raise InformerStoppedError(
                    f"handler {handler!r} not added: informer {self.name} has stopped"
                )
            period, check_period = handler_resync_period(
                resync_period,
                self.default_event_handler_resync_period,
                self.resync_check_period,
                self.started,
            )
            if check_period != self.resync_check_period:
                self.resync_check_period = check_period
                self.processor.resync_check_period_changed(check_period)
            listener = ProcessorListener(
                handler,
                period,
                determine_resync_period(period, self.resync_check_period),
                self._clock.now(),
                name=name,
            )
            if not self.started:
                self.processor.add_listener(listener)
                return ResourceEventHandlerRegistration(self, listener)
            with self.block_deltas:
                self.processor.add_listener(listener)
                for obj in self.indexer.list():
                    listener.add(AddNotification(obj, True))
            if self._synced.is_set():
                listener.sync_tracker.upstream_has_synced()
            return ResourceEventHandlerRegistration(self, listener)

    def remove_event_handler(self, registration: ResourceEventHandlerRegistration) -> None:
        """Unregister; pending notifications are dropped. Removing twice is a no-op."""
        if not isinstance(registration, ResourceEventHandlerRegistration):
            raise TypeError(f"not a registration of this informer: {registration!r}")
        with self._started_lock, self.block_deltas:
            self.processor.remove_listener(registration.listener)

    # -- state ------------------------------------------------------------------------

    def has_synced(self) -> bool:
        """The FIFO delivered the whole first list to the indexer. Says nothing about
        handlers (see ``ResourceEventHandlerRegistration.has_synced``)."""
        return self._synced.is_set()

    def has_started(self) -> bool:
        with self._started_lock:
            return self.started

    def is_stopped(self) -> bool:
        with self._started_lock:
            return self.stopped

    def last_sync_resource_version(self) -> str:
        reflector = self.reflector
        return "" if reflector is None else reflector.core.last_sync_resource_version

    def get_store(self) -> Indexer:
        return self.indexer

    def get_indexer(self) -> Indexer:
        return self.indexer

    def lister(self) -> GenericLister:
        return GenericLister(self.indexer)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        with self._started_lock:
            if self.stopped:
                raise InformerStoppedError("indexer was not added: the informer has stopped")
            self.indexer.add_indexers(indexers)


class _SyncCheckingStore:
    """The FIFO as the reflector sees it, re-checking ``has_synced`` after each write."""

    def __init__(self, fifo: RealFIFO | DeltaFIFO, check: Callable[[], None]) -> None:
        self._fifo = fifo
        self._check = check

    def add(self, obj: object) -> None:
        self._fifo.add(obj)
        self._check()

    def update(self, obj: object) -> None:
        self._fifo.update(obj)
        self._check()

    def delete(self, obj: object) -> None:
        self._fifo.delete(obj)
        self._check()

    def replace(self, objects: Sequence[object], resource_version: str) -> None:
        self._fifo.replace(objects, resource_version)
        self._check()

    def resync(self) -> None:
        self._fifo.resync()

    def bookmark(self, resource_version: str) -> None:
        if isinstance(self._fifo, RealFIFO):
            self._fifo.bookmark(resource_version)

    def transformer(self) -> Any:
        return self._fifo.transformer


def wait_for_cache_sync(
    stop: threading.Event, *has_synced: Callable[[], bool], poll: float = CACHE_SYNC_POLL_PERIOD
) -> bool:
    """Poll (every 100 ms, real time) until every function returns True (-> True) or
    ``stop`` is set (-> False)."""
    while True:
        if all(fn() for fn in has_synced):
            return True
        if stop.wait(poll):
            return all(fn() for fn in has_synced)
