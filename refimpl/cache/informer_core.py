"""The informer without threads: FIFO choice, one processing step, fan-out, registration.

:class:`InformerCore` owns the indexer, the processor, the chosen FIFO *core* and the
sync flag; it never blocks, sleeps, reads the wall clock or starts a thread. Ports the
thread-free part of client-go ``tools/cache/shared_informer.go`` (``sharedIndexInformer``:
``OnAdd``/``OnUpdate``/``OnDelete``, ``AddEventHandlerWithOptions``, ``HasSynced``) and
``controller.go`` (``newQueueFIFO``, one ``processLoop`` iteration). Refines
``spec/Informer.tla``: ``store`` is the indexer, ``queue``/``items``/``synced`` the FIFO,
``notifications`` the listeners' buffers, ``applied`` what ``on_applied`` reports;
:meth:`InformerCore.process_next` is the spec's ``Pop`` followed, per delta, by
``StoreWrite`` (the indexer write in ``process_deltas``) and ``Distribute`` (the
``on_add``/``on_update``/``on_delete`` below).

Which FIFO (docs/02-inside-the-informers-queue.md): ``FifoMode.REAL_ATOMIC`` is client-go's default
since v1.36 (RealFIFO with atomic relists/resyncs, unlock-while-processing, bookmarks
and batch popping); ``FifoMode.REAL`` is v1.33-v1.35 (RealFIFO with the indexer as
known objects); ``FifoMode.DELTA`` is v1.32 and before (DeltaFIFO with ``Replaced``).

How the reflector fills it (docs/03-the-cache-you-read-from.md):
``ListMode.WATCH_LIST`` is client-go's default since v1.35 (one streaming watch with
the initial state, a list only as a fallback); ``ListMode.LIST_WATCH`` is v1.34 and
before (a list, then a watch).

The threaded ``SharedIndexInformer`` and the simulator's ``SimInformer`` both extend it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, Literal, Protocol

from refimpl._typing import TypeVar
from refimpl.cache.delta_fifo import DeltaFIFOCore
from refimpl.cache.deltas import Delta, DeltaType, TransformFunc
from refimpl.cache.error_report import ErrorReporter
from refimpl.cache.handlers import ResourceEventHandler
from refimpl.cache.listwatch import ListerWatcher
from refimpl.cache.process_deltas import process_deltas, process_deltas_in_batch
from refimpl.cache.processor import (
    AddNotification,
    DeleteNotification,
    ProcessorListener,
    SharedProcessor,
    UpdateNotification,
    check_period_value,
    determine_resync_period,
    handler_resync_period,
    is_resync_update,
)
from refimpl.cache.real_fifo import RealFIFO, RealFIFOCore
from refimpl.cache.reflector import ListMode, Reflector, ReflectorStore, SteppedReflector
from refimpl.cache.store import Indexer, TypedIndexFunc
from refimpl.clock import Clock
from refimpl.eras import LATEST, Era
from refimpl.meta import Object, meta_namespace_key_func, split_meta_namespace_key

__all__ = [
    "AppliedKind",
    "FifoMode",
    "FifoWriter",
    "GenericLister",
    "InformerCore",
    "InformerStoppedError",
    "ListMode",
    "ObjT",
    "StepHook",
    "new_fifo_core",
]

#: What ``process_deltas`` did to the store just before it called the informer.
AppliedKind = Literal["add", "update", "delete"]


#: A tracing hook (see :attr:`InformerCore.step_hook`): ``(event, deltas)``.
StepHook = Callable[[str, Sequence[Delta]], None]

#: ``process_deltas`` or ``process_deltas_in_batch``: (handler, store, deltas, initial).
ProcessFunc = Callable[[ResourceEventHandler[Any], Indexer[Any], Sequence[Delta], bool], None]


#: The threaded or the stepped reflector: the same options, different drivers.
R = TypeVar("R", Reflector, SteppedReflector)

#: The informer's object type, for the type checker only: what its handlers receive and
#: its indexer and lister hand out. An :class:`~refimpl.meta.Object` (its key function
#: needs one); plain ``SharedIndexInformer(lw)`` is ``SharedIndexInformer[Object]``.
ObjT = TypeVar("ObjT", bound=Object, default=Object)


class FifoMode(enum.StrEnum):
    REAL_ATOMIC = "real-atomic"
    REAL = "real"
    DELTA = "delta"


def new_fifo_core(
    mode: FifoMode,
    indexer: Indexer[Any],
    transform: TransformFunc | None = None,
    era: Era = LATEST,
) -> RealFIFOCore | DeltaFIFOCore:
    """The FIFO core an informer of ``mode`` uses (client-go ``newQueueFIFO``; up to
    v1.17 ``NewDeltaFIFO``, without ``Replaced`` deltas)."""
    if mode is FifoMode.REAL_ATOMIC:
        return RealFIFOCore(
            key_func=meta_namespace_key_func,
            transformer=transform,
            atomic_events=True,
            unlock_while_processing=True,
            emit_delta_type_bookmark=True,
        )
    if mode is FifoMode.REAL:
        return RealFIFOCore(
            key_func=meta_namespace_key_func, known_objects=indexer, transformer=transform
        )
    return DeltaFIFOCore(
        known_objects=indexer,
        emit_delta_type_replaced=era.emit_delta_type_replaced,
        transformer=transform,
    )


class InformerStoppedError(RuntimeError):
    """The informer has stopped: no new handlers or indexers."""


class GenericLister(Generic[ObjT]):
    """Reads from the informer's indexer only: never a request to the server.

    Typed like the informer: ``SharedIndexInformer[Pod].lister()`` lists ``Pod``s
    (client-go's generated listers are per type; this one is generic). Anything stored
    that is not an :class:`~refimpl.meta.Object` is skipped.
    """

    def __init__(self, indexer: Indexer[ObjT]) -> None:
        self._indexer = indexer

    def list(self, selector: Mapping[str, str] | None = None) -> list[ObjT]:
        items: list[ObjT] = [o for o in self._indexer.list() if isinstance(o, Object)]
        if not selector:
            return items
        return [o for o in items if all(o.labels.get(k) == v for k, v in selector.items())]

    def get(self, namespace: str, name: str) -> ObjT | None:
        key = f"{namespace}/{name}" if namespace else name
        obj, exists = self._indexer.get_by_key(key)
        return obj if exists and isinstance(obj, Object) else None

    def get_by_key(self, key: str) -> ObjT | None:
        split_meta_namespace_key(key)  # a malformed key is an error, not a miss
        obj, exists = self._indexer.get_by_key(key)
        return obj if exists and isinstance(obj, Object) else None


class _FifoProducer(Protocol):
    """The producer side of a FIFO, core or shell alike."""

    def add(self, obj: object) -> None: ...
    def update(self, obj: object) -> None: ...
    def delete(self, obj: object) -> None: ...
    def replace(self, objects: Sequence[object], resource_version: str = "") -> None: ...
    def resync(self) -> None: ...


class FifoWriter:
    """The FIFO (a core, or a shell around it) as the reflector sees it: re-checks the
    informer's sync after each write, so ``has_synced`` turns true as soon as the FIFO
    says so, and tells the informer of each relist and resync (``_after_replace``,
    ``_after_resync``). Bookmarks reach only a RealFIFO (DeltaFIFO has none)."""

    __slots__ = ("_bookmark", "_fifo", "_informer")

    def __init__(self, fifo: _FifoProducer, informer: InformerCore[Any]) -> None:
        self._fifo = fifo
        self._informer = informer
        self._bookmark: Callable[[str], None] | None = (
            fifo.bookmark if isinstance(fifo, RealFIFO | RealFIFOCore) else None
        )

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
        informer = self._informer
        informer._after_replace(objects, resource_version)
        informer._check_synced()

    def resync(self) -> None:
        self._fifo.resync()
        self._informer._after_resync()

    def bookmark(self, resource_version: str) -> None:
        if self._bookmark is not None:
            self._bookmark(resource_version)


class InformerCore(Generic[ObjT]):
    """One list/watch's cache and fan-out, as plain state: client-go's
    ``sharedIndexInformer`` minus its goroutines and locks.

    Generic in the object type (see :data:`ObjT`), like client-go's
    ``TypedSharedIndexInformer[T]``; the processing below is untyped.

    ``resync_period`` is the default handler resync period and the initial resync check
    period (0: never resync). The FIFO core is built here, per ``fifo_mode``; the
    reflector and whatever drives it belong to the subclass. Subclasses own ``started``
    and ``stopped`` and may set ``_fifo_has_synced`` to a locked reader of the FIFO.

    Hooks for monitors: ``on_applied(kind, obj, old)`` runs after each store write and
    before its notification is distributed; ``on_synced()`` runs once, when
    ``has_synced`` turns true.

    A tracing hook, off (None) by default and then one attribute test per call:
    ``step_hook(event, deltas)`` runs after each code step of processing, named for
    it -- ``"popped"`` (a DeltaFIFO key's deltas, after ``pop_ready``), ``"taken"``
    (RealFIFO entries, after ``take_one``/``take_batch``), ``"distributed"`` (one
    handler call fanned out to the listeners; ``deltas`` empty) and ``"finished"``
    (the taken entries counted done and sync re-checked). With the indexer's
    ``on_write`` (the store write) these are the steps trace validation records
    (refimpl/tla/trace.py): spec/Informer.tla's Pop, StoreWrite, Distribute
    and spec/InformerAtomic.tla's Take, ApplyEntry, Distribute, Finish.
    """

    #: See the class docstring; None (off) unless a tracer sets it.
    step_hook: StepHook | None = None

    def __init__(
        self,
        lw: ListerWatcher,
        *,
        clock: Clock,
        resync_period: float = 0.0,
        indexers: Mapping[str, TypedIndexFunc[ObjT]] | None = None,
        fifo_mode: FifoMode | str = FifoMode.REAL_ATOMIC,
        list_mode: ListMode | str = ListMode.WATCH_LIST,
        batch: bool = True,
        transform: TransformFunc | None = None,
        seed: int | None = None,
        name: str = "informer",
        threaded_listeners: bool = False,
        on_applied: Callable[[AppliedKind, object, object | None], None] | None = None,
        on_synced: Callable[[], None] | None = None,
        era: Era = LATEST,
    ) -> None:
        check_period_value("resync_period", resync_period)
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {name!r}")
        self.name = name
        #: Reports raising handlers, transforms and processing steps (loud by default).
        self.errors = ErrorReporter(name)
        #: The last error that kept the informer from syncing (None once synced).
        self._last_sync_error: BaseException | None = None
        self.lw = lw
        self.clock = clock
        self._seed = seed
        self.fifo_mode = FifoMode(fifo_mode)
        #: The client-go release line its reflector decides like (refimpl/eras.py).
        self.era = era
        #: Up to v1.17, while a delta is processed: whether it is a Sync delta, which
        #: decided its notification's sync (None: the resourceVersion rule decides).
        self._sync_delta: bool | None = None
        self.list_mode = ListMode(list_mode)
        #: Pop RealFIFO entries in batches (DeltaFIFO always pops one key).
        self.batch = batch
        self.indexer: Indexer[ObjT] = Indexer(indexers=dict(indexers or {}))
        self.processor = SharedProcessor(clock, threaded=threaded_listeners)
        self.default_event_handler_resync_period = resync_period
        #: The smallest handler resync period; shrinks only before start.
        self.resync_check_period = resync_period
        self.fifo_core: RealFIFOCore | DeltaFIFOCore = self._new_fifo_core(transform)
        #: Reads the FIFO's sync; a threaded subclass points it at the locked shell.
        self._fifo_has_synced: Callable[[], bool] = self.fifo_core.has_synced
        self.on_applied = on_applied
        self.on_synced = on_synced
        self.started = False
        self.stopped = False
        #: The FIFO once reported synced after a write or a processed entry. Monotone.
        self.synced = False
        #: Errors from processing that client-go would swallow; kept for tests/tools.
        self.process_errors: list[BaseException] = []

    def _new_fifo_core(self, transform: TransformFunc | None) -> RealFIFOCore | DeltaFIFOCore:
        return new_fifo_core(self.fifo_mode, self.indexer, self._reported(transform), self.era)

    def _reported(self, transform: TransformFunc | None) -> TransformFunc | None:
        """``transform``, reporting what it raises before the FIFO fails the list.

        In client-go a transform error fails the Replace, so the reflector relists
        forever and ``HasSynced`` never turns true -- with one klog line per attempt as
        the only trace. Here the error is reported (once per distinct error) and kept
        for :meth:`last_sync_error` and ``wait_for_cache_sync``'s explanation.
        """
        if transform is None:
            return None
        if not callable(transform):
            raise TypeError(f"transform must be callable, got {transform!r}")

        def reported(obj: object) -> object:
            try:
                return transform(obj)
            except Exception as err:
                self._last_sync_error = err
                self.errors.report("transform", err)
                raise

        return reported

    def last_sync_error(self) -> BaseException | None:
        """Why the informer has not synced yet: the last error a transform or a
        processing step raised, or None (always None once synced). Not in client-go,
        where such errors only reach the log."""
        return None if self.synced else self._last_sync_error

    def _process_failed(self, err: Exception) -> None:
        """client-go ignores processing errors (after logging them); record and report."""
        self.process_errors.append(err)
        self._last_sync_error = err
        self.errors.report("processing", err)

    def _new_reflector(self, driver: type[R], store: ReflectorStore) -> R:
        """The reflector feeding ``store`` (a :class:`FifoWriter`), resyncing every
        ``resync_check_period`` when some listener is due."""
        return driver(
            self.lw,
            store,
            name=self.name,
            resync_period=self.resync_check_period,
            clock=self.clock,
            seed=self._seed,
            should_resync=self.processor.should_resync,
            use_watch_list=self.list_mode is ListMode.WATCH_LIST,
            era=self.era,
        )

    # -- processing ---------------------------------------------------------------------

    def process_next(
        self,
        single: ProcessFunc = process_deltas,
        batch: ProcessFunc = process_deltas_in_batch,
    ) -> list[Delta]:
        """One iteration of client-go's processLoop on the FIFO core: take an entry (a
        batch for a batching RealFIFO), update the indexer and distribute (``single``
        for one entry, ``batch`` for more), finish, then re-check sync. Processing
        errors are recorded and otherwise ignored, as in client-go. Raises
        ``WouldBlock`` when the FIFO is empty, ``FIFOClosedError`` when it is also
        closed."""
        fifo = self.fifo_core
        if isinstance(fifo, RealFIFOCore):
            if self.batch:
                deltas, initial = fifo.take_batch()
            else:
                one, initial = fifo.take_one()
                deltas = [one]
            if self.step_hook is not None:
                self.step_hook("taken", deltas)
            self.process_taken(deltas, initial, single, batch)
            return deltas
        _, deltas, initial = fifo.pop_ready()
        if self.step_hook is not None:
            self.step_hook("popped", deltas)
        try:
            if self.era.emit_delta_type_replaced:
                single(self, self.indexer, deltas, initial)
            else:
                self._process_sync_by_delta_type(single, deltas, initial)
        except Exception as err:
            self._process_failed(err)
        self._check_synced()
        return deltas

    def _process_sync_by_delta_type(
        self, single: ProcessFunc, deltas: Sequence[Delta], initial: bool
    ) -> None:
        """Up to v1.17 ``HandleDeltas`` took a notification's sync from the delta type:
        every ``Sync`` delta -- a resync, but also each item of a relist, added or
        updated -- reached only the handlers due for resync (#86015)."""
        try:
            for delta in deltas:
                self._sync_delta = delta.type is DeltaType.SYNC
                single(self, self.indexer, [delta], initial)
        finally:
            self._sync_delta = None

    def process_taken(
        self,
        deltas: Sequence[Delta],
        initial: bool,
        single: ProcessFunc = process_deltas,
        batch: ProcessFunc = process_deltas_in_batch,
    ) -> None:
        """The second half of :meth:`process_next` for a RealFIFO: process entries
        already taken from the core (``take_one``/``take_batch``; with
        ``unlock_while_processing`` producers may have run since), finish them, then
        re-check sync. spec/InformerAtomic.tla's ``ApplyEntry``, ``Distribute`` and
        ``Finish``."""
        fifo = self.fifo_core
        if not isinstance(fifo, RealFIFOCore):
            raise TypeError("process_taken is for a RealFIFO; a DeltaFIFO pops and processes")
        try:
            if len(deltas) == 1:
                single(self, self.indexer, deltas, initial)
            else:
                batch(self, self.indexer, deltas, initial)
        except Exception as err:
            self._process_failed(err)
        finally:
            fifo.finish(len(deltas))
        self._check_synced()
        if self.step_hook is not None:
            self.step_hook("finished", deltas)

    def finish_taken(self, count: int) -> None:
        """The tail of :meth:`process_taken` on its own: count ``count`` processed
        entries done, then re-check sync. spec/InformerAtomic.tla's ``Finish``; the
        replay calls it after driving the store write and the handler calls itself."""
        fifo = self.fifo_core
        if not isinstance(fifo, RealFIFOCore):
            raise TypeError("finish_taken is for a RealFIFO")
        fifo.finish(count)
        self._check_synced()

    def _check_synced(self) -> None:
        if self.synced or not self._fifo_has_synced():
            return
        self.synced = True
        for listener in self.processor.snapshot():
            listener.sync_tracker.upstream_has_synced()
        if self.on_synced is not None:
            self.on_synced()

    def _after_replace(self, objects: Sequence[object], resource_version: str) -> None:
        """Called after each relist reached the FIFO, before sync is re-checked."""

    def _after_resync(self) -> None:
        """Called after each resync reached the FIFO."""

    # -- the informer is the handler process_deltas calls -------------------------------

    def on_add(self, obj: object, is_in_initial_list: bool) -> None:
        if self.on_applied is not None:
            self.on_applied("add", obj, None)
        self.processor.distribute(AddNotification(obj, is_in_initial_list), bool(self._sync_delta))
        if self.step_hook is not None:
            self.step_hook("distributed", ())

    def on_update(self, old: object, new: object) -> None:
        if self.on_applied is not None:
            self.on_applied("update", new, old)
        # Same resourceVersion: a resync (or a relist of an unchanged object).
        sync = is_resync_update(old, new) if self._sync_delta is None else self._sync_delta
        self.processor.distribute(UpdateNotification(old, new), sync)
        if self.step_hook is not None:
            self.step_hook("distributed", ())

    def on_delete(self, obj: object) -> None:
        if self.on_applied is not None:
            self.on_applied("delete", obj, None)
        self.processor.distribute(DeleteNotification(obj), False)
        if self.step_hook is not None:
            self.step_hook("distributed", ())

    # -- handlers -----------------------------------------------------------------------

    def _register(
        self, handler: ResourceEventHandler[Any], resync_period: float | None, name: str
    ) -> ProcessorListener:
        """client-go's ``AddEventHandlerWithOptions``: the resync rules, then a listener
        that, after start, first gets ``on_add(obj, True)`` for exactly the cached
        objects and inherits the informer's sync. Raises :class:`InformerStoppedError`."""
        missing = [
            m
            for m in ("on_add", "on_update", "on_delete")
            if not callable(getattr(handler, m, None))
        ]
        if missing:
            # client-go's type system refuses these; a Python informer would otherwise
            # accept them and fail (quietly) on every notification.
            raise TypeError(
                f"handler must be a ResourceEventHandler (on_add, on_update, on_delete), "
                f"got {handler!r}, which lacks {', '.join(missing)}"
            )
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {name!r}")
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
            self.clock.now(),
            name=name,
            reporter=self.errors,
        )
        self._add_listener(listener)
        if self.started and self.synced:
            listener.sync_tracker.upstream_has_synced()
        return listener

    def _add_listener(self, listener: ProcessorListener) -> None:
        """Add ``listener``; after start, queue the cache to it as initial adds. Must not
        interleave with processing (a threaded subclass holds its delta lock)."""
        self.processor.add_listener(listener)
        if self.started:
            for obj in self.indexer.list():
                listener.add(AddNotification(obj, True))

    # -- state --------------------------------------------------------------------------

    def has_synced(self) -> bool:
        """The FIFO delivered the whole first list to the indexer. Says nothing about
        handlers (see each listener's ``has_synced``)."""
        return self.synced

    def get_store(self) -> Indexer[ObjT]:
        return self.indexer

    def get_indexer(self) -> Indexer[ObjT]:
        return self.indexer

    def lister(self) -> GenericLister[ObjT]:
        return GenericLister(self.indexer)

    def add_indexers(self, indexers: Mapping[str, TypedIndexFunc[ObjT]]) -> None:
        if self.stopped:
            raise InformerStoppedError("indexer was not added: the informer has stopped")
        self.indexer.add_indexers(indexers)
