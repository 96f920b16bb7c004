"""A shared informer without threads: the same parts as ``SharedIndexInformer``, stepped.

:class:`SimInformer` is an :class:`~refimpl.cache.informer_core.InformerCore` (Indexer,
non-threaded SharedProcessor, the FIFO *core* chosen per ``FifoMode``, processing and
registration) plus a :class:`~refimpl.cache.reflector.SteppedReflector` and counters
for monitors. It never blocks, sleeps, reads the wall clock or starts a thread: the
simulator calls ``step_reflector``, ``pop`` and ``listener.dispatch_one`` one at a time.
Ports the wiring of client-go ``tools/cache/shared_informer.go`` / ``controller.go``
(``processLoop``); refines ``spec/Informer.tla`` (variables ``store``, ``queue``/``items``/
``synced``, ``notifications``, ``applied``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from refimpl.apiserver import CoreWatch
from refimpl.cache.delta_fifo import DeltaFIFOCore
from refimpl.cache.deltas import Delta, DeltaType, ReplacedAllInfo
from refimpl.cache.handlers import ResourceEventHandler
from refimpl.cache.informer_core import (
    AppliedKind,
    FifoMode,
    FifoWriter,
    InformerCore,
    ListMode,
)
from refimpl.cache.listwatch import ListerWatcher
from refimpl.cache.process_deltas import process_deltas, process_deltas_in_batch
from refimpl.cache.processor import ProcessorListener
from refimpl.cache.real_fifo import RealFIFOCore
from refimpl.cache.reflector import SteppedReflector, WaitForEvent, WaitForList, WaitUntil
from refimpl.cache.store import IndexFunc
from refimpl.clock import FakeClock
from refimpl.eras import LATEST, Era
from refimpl.meta import (
    DeletedFinalStateUnknown,
    Object,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_key_func,
)

__all__ = ["AppliedKind", "SimInformer", "delta_state"]


def _rv(obj: object) -> int:
    """An object's resourceVersion as an int (0 for tombstones without an object)."""
    if isinstance(obj, DeletedFinalStateUnknown):
        obj = obj.obj
    if isinstance(obj, Object) and obj.resource_version:
        return int(obj.resource_version)
    return 0


class _FifoWriter(FifoWriter):
    """The simulator's reflector store: the shared sync-checking writer over the FIFO
    core, as its own class so a test can break the sim's writes and nothing else."""

    __slots__ = ()


class SimInformer(InformerCore):
    """client-go's shared index informer as a set of steps.

    Same choices as :class:`~refimpl.cache.shared_informer.SharedIndexInformer` (both
    are an :class:`~refimpl.cache.informer_core.InformerCore`): the FIFO per
    ``fifo_mode``; RealFIFO pops in batches when ``batch``; each popped entry updates
    the indexer and then distributes (store before notify); ``has_synced`` is re-checked
    after every FIFO write and every processed pop; a handler added after ``start``
    first gets ``on_add(obj, True)`` for the cached objects.

    One difference: ``list_mode`` defaults to ``ListMode.LIST_WATCH`` (client-go before
    v1.35), not watch-list, because the simulator's reflector phases and spec traces
    follow spec/Informer.tla, whose reflector lists and then watches; pass
    ``ListMode.WATCH_LIST`` for client-go's current default.

    Hooks for monitors: ``on_applied(kind, obj, old)`` runs after each store write and
    before its notification is distributed; ``on_synced()`` runs once, when
    ``has_synced`` turns true. ``initial_list`` is set before that sync check, so a
    monitor can check that sync means "the whole first list is cached".
    """

    clock: FakeClock

    def __init__(
        self,
        lw: ListerWatcher,
        *,
        clock: FakeClock,
        fifo_mode: FifoMode | str = FifoMode.REAL_ATOMIC,
        list_mode: ListMode | str = ListMode.LIST_WATCH,
        batch: bool = True,
        resync_period: float = 0.0,
        indexers: Mapping[str, IndexFunc] | None = None,
        seed: int = 0,
        name: str = "informer",
        on_applied: Callable[[AppliedKind, object, object | None], None] | None = None,
        on_synced: Callable[[], None] | None = None,
        era: Era = LATEST,
    ) -> None:
        super().__init__(
            lw,
            clock=clock,
            resync_period=resync_period,
            indexers=indexers,
            fifo_mode=fifo_mode,
            list_mode=list_mode,
            batch=batch,
            seed=seed,
            name=name,
            on_applied=on_applied,
            on_synced=on_synced,
            era=era,
        )
        #: The FIFO core itself: nothing else drives it.
        self.fifo: RealFIFOCore | DeltaFIFOCore = self.fifo_core
        #: The objects and RV of the first relist handed to the FIFO (None before it).
        self.initial_list: tuple[tuple[object, ...], str] | None = None
        self.pops = 0
        self.lists = 0
        self.resyncs = 0
        self.reflector: SteppedReflector | None = None

    # -- life cycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Build the reflector and start the (hand-driven) listeners. The first
        ``step_reflector`` then lists."""
        if self.started:
            raise RuntimeError(f"informer {self.name} already started")
        self.reflector = self._new_reflector(SteppedReflector, _FifoWriter(self.fifo, self))
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
            return now >= w.deadline or (w.resync_at is not None and now >= w.resync_at)
        if isinstance(w, WaitForList):
            return True  # its lister decides (the simulator's never defers an answer)
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
        if isinstance(w, WaitForList):
            return "list"
        return "watch"

    def next_deadline(self) -> float | None:
        return None if self.reflector is None else self.reflector.next_deadline()

    def last_sync_resource_version(self) -> str:
        r = self.reflector
        return "" if r is None else r.last_sync_resource_version()

    def _after_replace(self, objects: Sequence[object], resource_version: str) -> None:
        self.lists += 1
        if self.initial_list is None:
            self.initial_list = (tuple(objects), resource_version)

    def _after_resync(self) -> None:
        self.resyncs += 1

    # -- the process loop -------------------------------------------------------------------

    def can_pop(self) -> bool:
        return len(self.fifo) > 0

    def pop(self) -> list[Delta]:
        """One processing step (:meth:`InformerCore.process_next`), counted. The
        processing functions are looked up in this module, so a test can break them for
        the simulator alone."""
        self.pops += 1
        return self.process_next(process_deltas, process_deltas_in_batch)

    # -- handlers ---------------------------------------------------------------------------

    def add_event_handler(
        self, handler: ResourceEventHandler, resync_period: float | None = None, *, name: str = ""
    ) -> ProcessorListener:
        """Register ``handler`` (same resync-period rules as the threaded informer). After
        ``start`` it first receives ``on_add(obj, True)`` for exactly the cached objects.
        Raises :class:`~refimpl.cache.informer_core.InformerStoppedError` once stopped."""
        return self._register(handler, resync_period, name)

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
        """The FIFO's contents as ``[type, key, rv]`` (DeltaFIFO: key -> that list;
        a ReplacedAll entry is ``[type, rv, [[key, rv], ...]]``, the listed objects)."""
        fifo = self.fifo
        if isinstance(fifo, DeltaFIFOCore):
            return [[k, [delta_state(d) for d in fifo.items[k]]] for k in fifo.queue]
        return [delta_state(d) for d in fifo.items]


def delta_state(d: Delta) -> list[Any]:
    """A delta as trace lines show it: ``[type, key, rv]`` (a tombstone's type ends in
    "(DFSU)"), ``[ReplacedAll, rv, [[key, rv], ...]]``, ``[SyncAll]``, ``[Bookmark, rv]``."""
    obj = d.object
    if d.type is DeltaType.REPLACED_ALL and isinstance(obj, ReplacedAllInfo):
        # The listed objects, as RealFIFO.tla's ReplacedAll entry holds them.
        listed = [[deletion_handling_meta_namespace_key_func(o), _rv(o)] for o in obj.objects]
        return [str(d.type), int(obj.resource_version or 0), listed]
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
