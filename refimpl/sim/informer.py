"""A shared informer without threads: the same parts as ``SharedIndexInformer``, stepped.

:class:`SimInformer` owns a :class:`~refimpl.cache.reflector.SteppedReflector`, a FIFO
*core* (RealFIFOCore or DeltaFIFOCore, chosen per :class:`FifoMode` exactly as the
threaded informer chooses its shell), an Indexer and a non-threaded SharedProcessor. It
never blocks, sleeps, reads the wall clock or starts a thread: the simulator calls
``step_reflector``, ``pop`` and ``listener.dispatch_one`` one at a time. Ports the wiring
of client-go ``tools/cache/shared_informer.go`` / ``controller.go`` (``processLoop``);
refines ``spec/Informer.tla`` (variables ``store``, ``fifo``, ``pending``, ``synced``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from refimpl.apiserver import CoreWatch
from refimpl.cache.controller import ResourceEventHandler, process_deltas, process_deltas_in_batch
from refimpl.cache.delta_fifo import DeltaFIFOCore
from refimpl.cache.deltas import Delta, DeltaType, ReplacedAllInfo
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
from refimpl.cache.real_fifo import RealFIFOCore
from refimpl.cache.reflector import SteppedReflector, WaitForEvent, WaitUntil
from refimpl.cache.shared_informer import FifoMode
from refimpl.cache.store import Indexer, IndexFunc
from refimpl.clock import FakeClock
from refimpl.meta import (
    DeletedFinalStateUnknown,
    Object,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_key_func,
)

__all__ = ["AppliedKind", "SimInformer"]

#: What ``process_deltas`` did to the store just before it called the informer.
AppliedKind = Literal["add", "update", "delete"]


def _rv(obj: object) -> int:
    """An object's resourceVersion as an int (0 for tombstones without an object)."""
    if isinstance(obj, DeletedFinalStateUnknown):
        obj = obj.obj
    if isinstance(obj, Object) and obj.resource_version:
        return int(obj.resource_version)
    return 0


class _FifoWriter:
    """The FIFO core as the reflector sees it: re-checks ``has_synced`` after each
    write (as the threaded informer's store adapter does) and remembers the first
    relist, so a monitor can check that sync means "the whole first list is cached"."""

    __slots__ = ("_fifo", "_informer")

    def __init__(self, informer: SimInformer) -> None:
        self._informer = informer
        self._fifo = informer.fifo

    def add(self, obj: object) -> None:
        self._fifo.add(obj)
        self._informer._check_synced()

    def update(self, obj: object) -> None:
        self._fifo.update(obj)
        self._informer._check_synced()

    def delete(self, obj: object) -> None:
        self._fifo.delete(obj)
        self._informer._check_synced()

    def replace(self, objects: Sequence[object], resource_version: str) -> None:
        self._fifo.replace(objects, resource_version)
        inf = self._informer
        inf.lists += 1
        if inf.initial_list is None:
            inf.initial_list = (tuple(objects), resource_version)
        inf._check_synced()

    def resync(self) -> None:
        self._fifo.resync()
        self._informer.resyncs += 1

    def bookmark(self, resource_version: str) -> None:
        if isinstance(self._fifo, RealFIFOCore):
            self._fifo.bookmark(resource_version)


class SimInformer:
    """client-go's shared index informer as a set of steps.

    Same choices as :class:`~refimpl.cache.shared_informer.SharedIndexInformer`: the FIFO
    per ``fifo_mode`` (REAL_ATOMIC: atomic RealFIFO with bookmarks; REAL: RealFIFO with
    the indexer as known objects; DELTA: DeltaFIFO with ``Replaced``); RealFIFO pops in
    batches when ``batch``; each popped entry updates the indexer and then distributes
    (store before notify); ``has_synced`` is re-checked after every FIFO write and every
    processed pop; a handler added after ``start`` first gets ``on_add(obj, True)`` for
    the cached objects.

    Hooks for monitors: ``on_applied(kind, obj, old)`` runs after each store write and
    before its notification is distributed; ``on_synced()`` runs once, when
    ``has_synced`` turns true.
    """

    def __init__(
        self,
        lw: ListerWatcher,
        *,
        clock: FakeClock,
        fifo_mode: FifoMode | str = FifoMode.REAL_ATOMIC,
        batch: bool = True,
        resync_period: float = 0.0,
        indexers: Mapping[str, IndexFunc] | None = None,
        seed: int = 0,
        name: str = "informer",
        on_applied: Callable[[AppliedKind, object, object | None], None] | None = None,
        on_synced: Callable[[], None] | None = None,
    ) -> None:
        if resync_period < 0:
            raise ValueError(f"resync_period must be >= 0, got {resync_period}")
        self.name = name
        self.clock = clock
        self.fifo_mode = FifoMode(fifo_mode)
        self.batch = batch
        self.indexer = Indexer(indexers=dict(indexers or {}))
        self.processor = SharedProcessor(clock, threaded=False)
        self.default_event_handler_resync_period = resync_period
        self.resync_check_period = resync_period
        self.fifo: RealFIFOCore | DeltaFIFOCore = self._new_fifo()
        self.on_applied = on_applied
        self.on_synced = on_synced
        self.started = False
        self.stopped = False
        self.synced = False
        #: The objects and RV of the first relist handed to the FIFO (None before it).
        self.initial_list: tuple[tuple[object, ...], str] | None = None
        self.process_errors: list[BaseException] = []
        self.pops = 0
        self.lists = 0
        self.resyncs = 0
        self._seed = seed
        self.lw = lw
        self.reflector: SteppedReflector | None = None

    def _new_fifo(self) -> RealFIFOCore | DeltaFIFOCore:
        if self.fifo_mode is FifoMode.REAL_ATOMIC:
            return RealFIFOCore(
                key_func=meta_namespace_key_func,
                atomic_events=True,
                unlock_while_processing=True,
                emit_delta_type_bookmark=True,
            )
        if self.fifo_mode is FifoMode.REAL:
            return RealFIFOCore(key_func=meta_namespace_key_func, known_objects=self.indexer)
        return DeltaFIFOCore(known_objects=self.indexer, emit_delta_type_replaced=True)

    # -- life cycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Build the reflector and start the (hand-driven) listeners. The first
        ``step_reflector`` then lists."""
        if self.started:
            raise RuntimeError(f"informer {self.name} already started")
        self.reflector = SteppedReflector(
            self.lw,
            _FifoWriter(self),
            name=self.name,
            resync_period=self.resync_check_period,
            clock=self.clock,
            seed=self._seed,
            should_resync=self.processor.should_resync,
        )
        self.started = True
        self.processor.run()

    def stop(self) -> None:
        """Crash-stop: the reflector ends (closing its watch), the FIFO closes, every
        listener drops what it had not delivered."""
        if self.stopped:
            return
        self.stopped = True
        if self.reflector is not None:
            self.reflector.stop()
            self.reflector.run_until_blocked()
        self.fifo.close()
        self.processor.stop()

    # -- the reflector --------------------------------------------------------------------

    def current_watch(self) -> CoreWatch | None:
        """The watch the reflector is reading, if it is waiting for an event."""
        r = self.reflector
        if r is None:
            return None
        w = r.waiting
        if isinstance(w, WaitForEvent) and isinstance(w.watch, CoreWatch):
            return w.watch
        return None

    def reflector_ready(self) -> bool:
        """``step_reflector`` would make progress now."""
        r = self.reflector
        if r is None or r.done or self.stopped:
            return False
        w = r.waiting
        if w is None:
            return True
        now = self.clock.now()
        if isinstance(w, WaitUntil):
            return now >= w.deadline
        if w.resync_at is not None and now >= w.resync_at:
            return True
        watch = w.watch
        return watch.has_event() if isinstance(watch, CoreWatch) else True

    def step_reflector(self) -> bool:
        assert self.reflector is not None, "start() first"
        return self.reflector.step()

    def reflector_phase(self) -> str:
        r = self.reflector
        if r is None:
            return "new"
        if r.done:
            return "stopped"
        w = r.waiting
        if w is None:
            return "start"
        if isinstance(w, WaitUntil):
            return w.reason
        return "watch"

    def next_deadline(self) -> float | None:
        return None if self.reflector is None else self.reflector.next_deadline()

    def last_sync_resource_version(self) -> str:
        r = self.reflector
        return "" if r is None else r.last_sync_resource_version()

    # -- the process loop -------------------------------------------------------------------

    def can_pop(self) -> bool:
        return len(self.fifo) > 0

    def pop(self) -> list[Delta]:
        """One iteration of client-go's processLoop: take an entry (a batch for a
        batching RealFIFO), update the indexer and distribute, then the bookkeeping.
        Processing errors are recorded and otherwise ignored, as in client-go."""
        fifo = self.fifo
        self.pops += 1
        if isinstance(fifo, RealFIFOCore):
            if self.batch:
                deltas, initial = fifo.take_batch()
            else:
                one, initial = fifo.take_one()
                deltas = [one]
            try:
                if len(deltas) == 1:
                    process_deltas(self, self.indexer, deltas, initial)
                else:
                    process_deltas_in_batch(self, self.indexer, deltas, initial)
            except Exception as err:
                self.process_errors.append(err)
            finally:
                fifo.finish(len(deltas))
        else:
            _, deltas, initial = fifo.pop_ready()
            try:
                process_deltas(self, self.indexer, deltas, initial)
            except Exception as err:
                self.process_errors.append(err)
        self._check_synced()
        return deltas

    def _check_synced(self) -> None:
        if self.synced or not self.fifo.has_synced():
            return
        self.synced = True
        for listener in self.processor.snapshot():
            listener.sync_tracker.upstream_has_synced()
        if self.on_synced is not None:
            self.on_synced()

    def has_synced(self) -> bool:
        return self.synced

    # -- the informer is the handler process_deltas calls ----------------------------------

    def on_add(self, obj: object, is_in_initial_list: bool) -> None:
        if self.on_applied is not None:
            self.on_applied("add", obj, None)
        self.processor.distribute(AddNotification(obj, is_in_initial_list), False)

    def on_update(self, old: object, new: object) -> None:
        if self.on_applied is not None:
            self.on_applied("update", new, old)
        self.processor.distribute(UpdateNotification(old, new), is_resync_update(old, new))

    def on_delete(self, obj: object) -> None:
        if self.on_applied is not None:
            self.on_applied("delete", obj, None)
        self.processor.distribute(DeleteNotification(obj), False)

    # -- handlers ---------------------------------------------------------------------------

    def add_event_handler(
        self, handler: ResourceEventHandler, resync_period: float | None = None, *, name: str = ""
    ) -> ProcessorListener:
        """Register ``handler`` (same resync-period rules as the threaded informer). After
        ``start`` it first receives ``on_add(obj, True)`` for exactly the cached objects."""
        if self.stopped:
            raise RuntimeError(f"informer {self.name} has stopped")
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
            self.clock.now(),
            name=name,
        )
        self.processor.add_listener(listener)
        if self.started:
            for obj in self.indexer.list():
                listener.add(AddNotification(obj, True))
            if self.synced:
                listener.sync_tracker.upstream_has_synced()
        return listener

    def listeners(self) -> list[ProcessorListener]:
        return self.processor.snapshot()

    # -- abstract state (traces) ------------------------------------------------------------

    def store_state(self) -> dict[str, tuple[str, int]]:
        """key -> (uid, rv) of every cached object."""
        out: dict[str, tuple[str, int]] = {}
        for obj in self.indexer.list():
            if isinstance(obj, Object):
                out[meta_namespace_key_func(obj)] = (obj.uid, _rv(obj))
        return out

    def fifo_state(self) -> Any:
        """The FIFO's contents as ``[type, key, rv]`` (DeltaFIFO: key -> that list)."""
        fifo = self.fifo
        if isinstance(fifo, DeltaFIFOCore):
            return [[k, [_delta_state(d) for d in fifo.items[k]]] for k in fifo.queue]
        return [_delta_state(d) for d in fifo.items]


def _delta_state(d: Delta) -> list[Any]:
    obj = d.object
    if d.type is DeltaType.REPLACED_ALL and isinstance(obj, ReplacedAllInfo):
        return [str(d.type), int(obj.resource_version or 0), len(obj.objects)]
    if d.type is DeltaType.SYNC_ALL:
        return [str(d.type)]
    if d.type is DeltaType.BOOKMARK:
        return [str(d.type), int(getattr(obj, "resource_version", "0") or 0)]
    try:
        key = deletion_handling_meta_namespace_key_func(obj)
    except Exception:
        key = "?"
    tomb = isinstance(obj, DeletedFinalStateUnknown)
    return [str(d.type) + ("(DFSU)" if tomb else ""), key, _rv(obj)]
