"""RealFIFO: an append-only log of events, popped strictly in arrival order.

:class:`RealFIFOCore` owns the log and the sync bookkeeping; it never blocks, sleeps,
reads a clock or starts a thread. :class:`RealFIFO` is its shell (one lock, one
condition; ``pop``/``pop_batch`` wait and may release the lock while processing). Ports
client-go ``tools/cache/the_real_fifo.go``. Refines ``spec/RealFIFO.tla``: variables
``log``, ``populated``, ``initialPopulationCount``, ``synced``, ``closed``.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable, Sequence

from refimpl.blocking import WouldBlock
from refimpl.cache.deltas import (
    BATCHABLE_TYPES,
    BookmarkInfo,
    Delta,
    Deltas,
    DeltaType,
    FIFOClosedError,
    KeyListerGetter,
    PopProcessFunc,
    ProcessBatchFunc,
    ReplacedAllInfo,
    SyncAllInfo,
    TransformFunc,
    tombstone,
)
from refimpl.cache.fifo_shell import FIFOShell
from refimpl.meta import (
    DeletedFinalStateUnknown,
    KeyFunc,
    ObjectKeyError,
    meta_namespace_key_func,
)

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "RealFIFO",
    "RealFIFOCore",
    "reconcile_replacement",
]

_log = logging.getLogger("refimpl.cache")

#: Most entries one ``pop_batch`` hands out; also half the unlock threshold.
DEFAULT_BATCH_SIZE = 1000


def reconcile_replacement(
    queued: Iterable[Delta],
    known_objects: KeyListerGetter,
    new_objects: Sequence[object],
    key_of: Callable[[object], str],
    on_delete: Callable[[DeletedFinalStateUnknown], None],
    on_replace: Callable[[object], None],
) -> None:
    """Work out what a relist means against a queued log and a store.

    Shared by the non-atomic ``RealFIFO.replace`` and by ``ReplacedAll`` processing
    (which passes an empty log and the store itself). In order:

    1. key every new object (:class:`ObjectKeyError` aborts before any callback);
    2. for each key seen in ``queued`` (first-appearance order) and not listed, whose
       *last* queued delta is not ``Deleted``: ``on_delete(DFSU(key, that object))``;
    3. for each ``known_objects`` key not listed and not seen in ``queued``:
       ``on_delete(DFSU(key, stored object))`` -- ``None`` if the lookup fails;
    4. ``on_replace(obj)`` for every new object, in list order.
    """
    new_keys = {key_of(obj) for obj in new_objects}

    last_queued: dict[str, Delta] = {}  # insertion order = first appearance
    for delta in queued:
        last_queued[key_of(delta.object)] = delta

    for key, delta in last_queued.items():
        if key in new_keys or delta.type is DeltaType.DELETED:
            continue
        on_delete(tombstone(key, delta.object))

    for key in known_objects.list_keys():
        if key in new_keys or key in last_queued:
            continue
        try:
            stored, exists = known_objects.get_by_key(key)
        except Exception as err:
            _log.warning("lookup of %r failed (%s); tombstone without object", key, err)
            stored = None
        else:
            if not exists:
                _log.warning("key %r vanished from known objects; tombstone without object", key)
                stored = None
        on_delete(tombstone(key, stored))

    for obj in new_objects:
        on_replace(obj)


class RealFIFOCore:
    """The RealFIFO state machine (client-go tools/cache/the_real_fifo.go; RF-1 to RF-4).

    Construction rules (client-go panics; refimpl raises ``ValueError``): atomic mode
    must not have ``known_objects``; non-atomic mode must have them and must not ask for
    ``unlock_while_processing`` or ``emit_delta_type_bookmark``.

    Popping is split in two so the shell can drop its lock in between: ``take_one`` /
    ``take_batch`` remove entries, ``finish(n)`` then does the bookkeeping that client-go
    defers until processing returned.
    """

    def __init__(
        self,
        *,
        key_func: KeyFunc = meta_namespace_key_func,
        known_objects: KeyListerGetter | None = None,
        transformer: TransformFunc | None = None,
        atomic_events: bool = False,
        unlock_while_processing: bool = False,
        emit_delta_type_bookmark: bool = False,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        if atomic_events:
            if known_objects is not None:
                raise ValueError("RealFIFO: known_objects must not be given when atomic_events")
        else:
            if unlock_while_processing:
                raise ValueError("RealFIFO: unlock_while_processing requires atomic_events")
            if known_objects is None:
                raise ValueError("RealFIFO: known_objects are required unless atomic_events")
            if emit_delta_type_bookmark:
                raise ValueError("RealFIFO: emit_delta_type_bookmark requires atomic_events")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"RealFIFO: batch_size must be a positive int, got {batch_size!r}")
        #: The event log, oldest first. Never merged, deduplicated or reordered.
        self.items: deque[Delta] = deque()
        self.populated = False
        #: Entries of the first replace not yet *processed* (decremented in ``finish``).
        self.initial_population_count = 0
        #: ``populated and initial_population_count == 0`` was once true. Monotone.
        self.synced = False
        self.closed = False
        self.key_func = key_func
        self.known_objects = known_objects
        self.transformer = transformer
        self.atomic_events = atomic_events
        self.unlock_while_processing = unlock_while_processing
        self.emit_delta_type_bookmark = emit_delta_type_bookmark
        self.batch_size = batch_size

    # -- helpers ----------------------------------------------------------------------

    def key_of(self, obj: object) -> str:
        """Key of a Deltas (its newest), a Delta, a tombstone, or via ``key_func``."""
        if isinstance(obj, list):
            if not obj:
                raise ObjectKeyError(obj, "0 length Deltas object; can't get key")
            obj = obj[-1]
        if isinstance(obj, Delta):
            obj = obj.object
        if isinstance(obj, DeletedFinalStateUnknown):
            return obj.key
        return self.key_func(obj)

    def _check_synced(self) -> None:
        if self.populated and self.initial_population_count == 0:
            self.synced = True

    def _append(self, type_: DeltaType, obj: object, *, skip_transform: bool = False) -> None:
        """Key (to reject unkeyable objects), transform unless a tombstone or told not
        to, append. Raises before appending on any failure."""
        self.key_of(obj)
        if (
            self.transformer is not None
            and not skip_transform
            and not isinstance(obj, DeletedFinalStateUnknown)
        ):
            obj = self.transformer(obj)
        self.items.append(Delta(type_, obj))

    # -- producer side ----------------------------------------------------------------

    def add(self, obj: object) -> None:
        """Append ``Added(obj)``. Marks the FIFO populated even if ``obj`` is rejected."""
        self.populated = True
        self._check_synced()
        self._append(DeltaType.ADDED, obj)

    def update(self, obj: object) -> None:
        """Append ``Updated(obj)`` (same rules as :meth:`add`)."""
        self.populated = True
        self._check_synced()
        self._append(DeltaType.UPDATED, obj)

    def delete(self, obj: object) -> None:
        """Append ``Deleted(obj)`` -- never filtered, even for a key nobody knows
        (contrast DeltaFIFO)."""
        self.populated = True
        self._check_synced()
        self._append(DeltaType.DELETED, obj)

    def bookmark(self, resource_version: str) -> None:
        """Append ``Bookmark(rv)`` if ``emit_delta_type_bookmark``; else nothing.
        Does not mark the FIFO populated."""
        if self.emit_delta_type_bookmark:
            self.items.append(Delta(DeltaType.BOOKMARK, BookmarkInfo(resource_version)))

    def replace(self, objects: Sequence[object], resource_version: str = "") -> None:
        """Queue a relist.

        Atomic: transform every object (any failure: nothing appended), then append one
        ``ReplacedAll`` entry; deletions are found at processing time (upstream #135462).
        Non-atomic: :func:`reconcile_replacement` against the queued log and
        ``known_objects`` -- tombstones first (not transformed), then ``Replaced`` for
        each object (transformed). A failure there stops midway, as in client-go.

        The first replace sets the initial population to the whole log length.
        """
        if self.atomic_events:
            objs = tuple(objects)
            if self.transformer is not None:
                objs = tuple(self.transformer(o) for o in objs)
            self.items.append(
                Delta(DeltaType.REPLACED_ALL, ReplacedAllInfo(resource_version, objs))
            )
        else:
            assert self.known_objects is not None
            reconcile_replacement(
                list(self.items),
                self.known_objects,
                objects,
                self.key_of,
                lambda dfsu: self._append(DeltaType.DELETED, dfsu, skip_transform=True),
                lambda obj: self._append(DeltaType.REPLACED, obj),
            )
        if not self.populated:
            self.populated = True
            self.initial_population_count = len(self.items)
            self._check_synced()

    def resync(self) -> None:
        """Atomic: append one ``SyncAll``. Non-atomic: append ``Sync(stored object)``
        (not transformed) for each known key that appears nowhere in the log; failed or
        empty lookups are logged and skipped. A queued entry that cannot be keyed raises
        :class:`ObjectKeyError` before anything is appended."""
        if self.atomic_events:
            self.items.append(Delta(DeltaType.SYNC_ALL, SyncAllInfo()))
            return
        if self.known_objects is None:
            return
        in_log = {self.key_of(d.object) for d in self.items}
        for key in self.known_objects.list_keys():
            if key in in_log:
                continue
            try:
                obj, exists = self.known_objects.get_by_key(key)
            except Exception as err:
                _log.warning("lookup of %r failed (%s); not resyncing it", key, err)
                continue
            if not exists:
                _log.warning("key %r vanished from known objects; not resyncing it", key)
                continue
            self._append(DeltaType.SYNC, obj, skip_transform=True)

    def close(self) -> None:
        self.closed = True

    # -- consumer side ----------------------------------------------------------------

    def can_pop(self) -> bool:
        """True when taking would not raise :class:`WouldBlock`."""
        return bool(self.items) or self.closed

    def _check_can_take(self) -> None:
        if not self.items:
            if self.closed:
                raise FIFOClosedError()
            raise WouldBlock("pop on an empty RealFIFO would block")

    def take_one(self) -> tuple[Delta, bool]:
        """Remove the head entry: ``(delta, is_in_initial_list)``. Call ``finish(1)``
        after processing it, whatever the outcome."""
        self._check_can_take()
        is_in_initial_list = not self.synced
        return self.items.popleft(), is_in_initial_list

    def take_batch(self) -> tuple[list[Delta], bool]:
        """Remove a batch from the head: ``(deltas, is_in_initial_list)``.

        The longest prefix of at most ``batch_size`` entries that stays inside the
        initial list while one is pending, holds only batchable types and has distinct
        keys. A non-batchable head is taken alone; an entry that cannot be keyed is
        taken and ends the batch. Call ``finish(len(deltas))`` after processing.
        """
        self._check_can_take()
        is_in_initial_list = not self.synced
        items = self.items
        seen: set[str] = set()
        n = 0
        limit = min(self.batch_size, len(items))
        while n < limit:
            if 0 < self.initial_population_count <= n:
                break  # never mix the initial list with what came after it
            delta = items[n]
            if delta.type not in BATCHABLE_TYPES:
                if n == 0:
                    n = 1
                break
            try:
                key = self.key_of(delta)
            except ObjectKeyError:
                n += 1
                break
            if key in seen:
                break
            seen.add(key)
            n += 1
        return [items.popleft() for _ in range(n)], is_in_initial_list

    def unlock_during_processing(self) -> bool:
        """Whether the shell may release its lock while processing what it just took:
        only with ``unlock_while_processing`` and fewer than two batches queued (above
        that, holding the lock throttles producers)."""
        return self.unlock_while_processing and len(self.items) < 2 * self.batch_size

    def finish(self, n: int) -> None:
        """Bookkeeping after ``n`` taken entries were processed: the initial count drops
        only now, so ``has_synced`` never turns true while the last initial entry is
        still being processed (upstream #136264)."""
        if self.initial_population_count > 0:
            self.initial_population_count -= n
            self._check_synced()

    def has_synced(self) -> bool:
        return self.synced

    def __len__(self) -> int:
        return len(self.items)


#: The shell's core options at their defaults (as they must be beside ``core=``).
_DEFAULT_OPTIONS = (meta_namespace_key_func, None, None, False, False, False, DEFAULT_BATCH_SIZE)


class RealFIFO(FIFOShell[RealFIFOCore]):
    """The thread-safe RealFIFO: client-go's API over :class:`RealFIFOCore`.

    ``pop``/``pop_batch`` hold the lock while processing, except when the core allows
    releasing it (``unlock_while_processing`` and a short queue). The lock is
    re-entrant, so processing may call back into the FIFO either way.
    """

    def __init__(
        self,
        *,
        key_func: KeyFunc = meta_namespace_key_func,
        known_objects: KeyListerGetter | None = None,
        transformer: TransformFunc | None = None,
        atomic_events: bool = False,
        unlock_while_processing: bool = False,
        emit_delta_type_bookmark: bool = False,
        batch_size: int = DEFAULT_BATCH_SIZE,
        name: str = "RealFIFO",
        core: RealFIFOCore | None = None,
    ) -> None:
        """``core``: wrap a core built elsewhere (the informer chooses its FIFO core
        first) instead of building one from the options, which must then be left at
        their defaults. The core must not be driven directly afterwards."""
        options = (
            key_func,
            known_objects,
            transformer,
            atomic_events,
            unlock_while_processing,
            emit_delta_type_bookmark,
            batch_size,
        )
        if core is None:
            core = RealFIFOCore(
                key_func=key_func,
                known_objects=known_objects,
                transformer=transformer,
                atomic_events=atomic_events,
                unlock_while_processing=unlock_while_processing,
                emit_delta_type_bookmark=emit_delta_type_bookmark,
                batch_size=batch_size,
            )
        elif options != _DEFAULT_OPTIONS:
            raise ValueError("pass a core or the options to build one, not both")
        super().__init__(core, name)

    def bookmark(self, resource_version: str) -> None:
        with self._lock:
            self._core.bookmark(resource_version)
            self._cond.notify_all()

    def _process(self, run: Callable[[], None], n: int) -> None:
        # Called with the lock held once. The bookkeeping in finish() happens under the
        # lock again, after processing, whether it succeeded or raised.
        core = self._core
        try:
            if core.unlock_during_processing():
                self._lock.release()
                try:
                    run()
                finally:
                    self._lock.acquire()
            else:
                run()
        finally:
            core.finish(n)

    def pop(self, process: PopProcessFunc) -> Deltas:
        """Wait for an entry, remove it, run ``process([delta], is_in_initial_list)``
        and return ``[delta]``. Raises :class:`FIFOClosedError` once closed and empty;
        an exception from ``process`` propagates (no requeue)."""
        with self._lock:
            self._wait_for_items()
            delta, is_in_initial_list = self._core.take_one()
            deltas: Deltas = [delta]
            self._process(lambda: process(deltas, is_in_initial_list), 1)
            return deltas

    def pop_batch(self, process_batch: ProcessBatchFunc, process_single: PopProcessFunc) -> None:
        """Wait, take a batch (see :meth:`RealFIFOCore.take_batch`) and run
        ``process_single([delta], flag)`` if it holds one entry, else
        ``process_batch(deltas, flag)``. Same closing and error rules as :meth:`pop`."""
        with self._lock:
            self._wait_for_items()
            deltas, is_in_initial_list = self._core.take_batch()
            if len(deltas) == 1:
                self._process(lambda: process_single(deltas, is_in_initial_list), 1)
            else:
                self._process(lambda: process_batch(deltas, is_in_initial_list), len(deltas))

    # -- introspection for tests and the simulator -------------------------------------

    def snapshot(self) -> list[Delta]:
        """A consistent copy of the queued log."""
        with self._lock:
            return list(self._core.items)
