"""DeltaFIFO: a queue of keys, each with the list of events that happened to it.

:class:`DeltaFIFOCore` owns ``items`` (key -> non-empty Deltas), ``queue`` (keys, each
once) and the sync bookkeeping; it never blocks, sleeps, reads a clock or starts a
thread. :class:`DeltaFIFO` is its shell (one lock, one condition, ``pop`` waits). Ports
client-go ``tools/cache/delta_fifo.go``. Refines ``spec/DeltaFIFO.tla``: variables
``queue``, ``items``, ``populated``, ``initialPopulationCount``, ``synced``, ``closed``.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence

from refimpl.blocking import WouldBlock
from refimpl.cache.deltas import (
    Delta,
    Deltas,
    DeltaType,
    FIFOClosedError,
    KeyListerGetter,
    PopProcessFunc,
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

__all__ = ["DeltaFIFO", "DeltaFIFOCore"]

_log = logging.getLogger("refimpl.cache")


def _is_deletion_dup(older: Delta, newer: Delta) -> Delta | None:
    """The survivor when two consecutive deltas collapse, else ``None``.

    Only a pair of ``Deleted`` collapses. The older one survives unless it is a tombstone:
    a real final state beats a tombstone, and between two tombstones the newer wins.
    """
    if older.type is not DeltaType.DELETED or newer.type is not DeltaType.DELETED:
        return None
    if isinstance(older.object, DeletedFinalStateUnknown):
        return newer
    return older


class DeltaFIFOCore:
    """The DeltaFIFO state machine (client-go tools/cache/delta_fifo.go; FIFO-1 to FIFO-9).

    Every method either completes or raises before changing ``items``/``queue``, except
    :meth:`replace` and :meth:`resync`, which (like client-go) stop at the first failing
    object and leave what they queued before it.
    """

    def __init__(
        self,
        *,
        key_func: KeyFunc = meta_namespace_key_func,
        known_objects: KeyListerGetter | None = None,
        emit_delta_type_replaced: bool = False,
        transformer: TransformFunc | None = None,
    ) -> None:
        #: key -> its deltas, oldest first. Invariant: every value is non-empty, never
        #: holds two adjacent ``Deleted``, and no tombstone in it wraps a tombstone.
        self.items: dict[str, Deltas] = {}
        #: Keys in pop order. Invariant: no duplicates and ``set(queue) == items.keys()``.
        self.queue: deque[str] = deque()
        #: True once anything was added/updated/deleted or the first replace happened.
        self.populated = False
        #: Pops left before the first replace's keys have all been handed out.
        self.initial_population_count = 0
        #: ``populated and initial_population_count == 0`` was once true. Monotone.
        self.synced = False
        self.closed = False
        self.key_func = key_func
        self.known_objects = known_objects
        self.emit_delta_type_replaced = emit_delta_type_replaced
        self.transformer = transformer

    # -- helpers ----------------------------------------------------------------------

    def key_of(self, obj: object) -> str:
        """The key of ``obj``: a Deltas' newest object, a tombstone's own key, or
        ``key_func``. Raises :class:`ObjectKeyError`."""
        if isinstance(obj, list):
            if not obj:
                raise ObjectKeyError(obj, "0 length Deltas object; can't get key")
            last = obj[-1]
            obj = last.object if isinstance(last, Delta) else last
        if isinstance(obj, DeletedFinalStateUnknown):
            return obj.key
        return self.key_func(obj)

    def _check_synced(self) -> None:
        if self.populated and self.initial_population_count == 0:
            self.synced = True

    def _lookup(self, key: str) -> tuple[object | None, bool, Exception | None]:
        """``known_objects.get_by_key`` with its exception turned into a value."""
        assert self.known_objects is not None
        try:
            obj, exists = self.known_objects.get_by_key(key)
        except Exception as err:
            return None, False, err
        return obj, exists, None

    def _queue_action(
        self, emitted: DeltaType, obj: object, internal: DeltaType | None = None
    ) -> None:
        """Append ``Delta(emitted, obj)`` to its key, collapsing a Deleted pair.

        The transformer runs unless ``obj`` is a tombstone or the *internal* type is
        Sync (resync hands in store objects that were transformed already; upstream PR
        #124344 fixed a data race by skipping them). A new key goes to the tail of the
        queue; a queued key keeps its place.
        """
        if internal is None:
            internal = emitted
        key = self.key_of(obj)
        if (
            self.transformer is not None
            and not isinstance(obj, DeletedFinalStateUnknown)
            and internal is not DeltaType.SYNC
        ):
            obj = self.transformer(obj)
        new = Delta(emitted, obj)
        deltas = self.items.get(key)
        if deltas is None:
            self.items[key] = [new]
            self.queue.append(key)
            return
        survivor = _is_deletion_dup(deltas[-1], new)
        if survivor is None:
            deltas.append(new)
        else:
            deltas[-1] = survivor

    # -- producer side ----------------------------------------------------------------

    def add(self, obj: object) -> None:
        """Queue ``Added(obj)``. Like client-go, marks the FIFO populated even when
        ``obj`` then fails to key (:class:`ObjectKeyError`) or to transform."""
        self.populated = True
        self._check_synced()
        self._queue_action(DeltaType.ADDED, obj)

    def update(self, obj: object) -> None:
        """Queue ``Updated(obj)`` (same rules as :meth:`add`)."""
        self.populated = True
        self._check_synced()
        self._queue_action(DeltaType.UPDATED, obj)

    def delete(self, obj: object) -> None:
        """Queue ``Deleted(obj)`` unless nobody knows the key.

        Skipped (nothing queued) when the key has no queued deltas and either there are
        no ``known_objects`` or they were looked up successfully and lack the key; a
        failing lookup does not skip. Raises :class:`ObjectKeyError` before any change.
        """
        key = self.key_of(obj)
        self.populated = True
        self._check_synced()
        queued = key in self.items
        if self.known_objects is None:
            if not queued:
                return
        else:
            _, exists, err = self._lookup(key)
            if err is None and not exists and not queued:
                return
        self._queue_action(DeltaType.DELETED, obj)

    def replace(self, objects: Sequence[object], resource_version: str = "") -> None:
        """Queue a relist: every listed object, then tombstones for what vanished.

        1. each object, in list order, as ``Replaced`` (``Sync`` unless
           ``emit_delta_type_replaced``; transformed either way), even for a key whose
           newest delta is ``Deleted`` (upstream #83911);
        2. for each queued key not listed: ``Deleted(DFSU(key, newest queued object))``,
           a tombstone's inner object unwrapped (upstream #115620: before it, a queued
           Added whose object vanished was never deleted -- a ghost in the cache);
        3. for each key of ``known_objects`` not listed and with nothing queued:
           ``Deleted(DFSU(key, stored object))`` (``None`` if the lookup fails).

        ``resource_version`` is ignored. The first replace sets the initial population
        to the number of distinct listed keys plus the tombstones queued (upstream
        #96797). A list item that fails to key or transform aborts right there, leaving
        earlier items queued and the FIFO not populated (client-go does the same).
        """
        action = DeltaType.REPLACED if self.emit_delta_type_replaced else DeltaType.SYNC
        listed: set[str] = set()
        for obj in objects:
            listed.add(self.key_of(obj))
            self._queue_action(action, obj, internal=DeltaType.REPLACED)

        deletions = 0
        for key in [k for k in self.items if k not in listed]:
            # tombstone() unwraps a queued tombstone: never a DFSU inside a DFSU.
            newest_obj = self.items[key][-1].object
            deletions += 1  # counted even when dedup absorbs it into a queued Deleted
            self._queue_action(DeltaType.DELETED, tombstone(key, newest_obj))

        if self.known_objects is not None:
            for key in self.known_objects.list_keys():
                if key in listed or key in self.items:
                    continue
                stored, exists, err = self._lookup(key)
                if err is not None:
                    _log.warning("lookup of %r failed (%s); tombstone without object", key, err)
                    stored = None
                elif not exists:
                    _log.info("key %r vanished from known objects; tombstone without object", key)
                    stored = None
                deletions += 1
                self._queue_action(DeltaType.DELETED, tombstone(key, stored))

        if not self.populated:
            self.populated = True
            self.initial_population_count = len(listed) + deletions
            self._check_synced()

    def resync(self) -> None:
        """Queue ``Sync(stored object)`` for every known key with nothing queued.

        Keys with queued deltas are skipped so a stale store copy never lands after a
        newer event. Sync objects are not transformed. Failed or empty lookups are
        logged and skipped; a stored object that cannot be keyed raises
        :class:`ObjectKeyError` (keys before it stay queued). No-op without
        ``known_objects``.
        """
        if self.known_objects is None:
            return
        for key in self.known_objects.list_keys():
            obj, exists, err = self._lookup(key)
            if err is not None:
                _log.warning("lookup of %r failed (%s); not resyncing it", key, err)
                continue
            if not exists:
                _log.info("key %r vanished from known objects; not resyncing it", key)
                continue
            if self.key_of(obj) in self.items:
                continue
            self._queue_action(DeltaType.SYNC, obj)

    def close(self) -> None:
        """Stop waiting pops once the queue is empty. Producers are not blocked."""
        self.closed = True

    # -- consumer side ----------------------------------------------------------------

    def can_pop(self) -> bool:
        """True when :meth:`pop_ready` would not raise :class:`WouldBlock`."""
        return bool(self.queue) or self.closed

    def pop_ready(self) -> tuple[str, Deltas, bool]:
        """Remove the head key: ``(key, deltas, is_in_initial_list)``.

        ``is_in_initial_list`` is read before the initial count is decremented, and
        ``synced`` may flip right here -- *before* the caller processes the last initial
        key (client-go's DeltaFIFO does the same; RealFIFO waits for processing).
        Raises :class:`FIFOClosedError` when closed and empty, :class:`WouldBlock` when
        merely empty.
        """
        if not self.queue:
            if self.closed:
                raise FIFOClosedError()
            raise WouldBlock("pop on an empty DeltaFIFO would block")
        is_in_initial_list = not self.synced
        key = self.queue.popleft()
        if self.initial_population_count > 0:
            self.initial_population_count -= 1
            self._check_synced()
        return key, self.items.pop(key), is_in_initial_list

    def has_synced(self) -> bool:
        return self.synced

    def __len__(self) -> int:
        return len(self.queue)


class DeltaFIFO(FIFOShell[DeltaFIFOCore]):
    """The thread-safe DeltaFIFO: client-go's API over :class:`DeltaFIFOCore`.

    ``pop`` runs ``process`` while holding the FIFO lock, as client-go does: producers
    wait until it returns. The lock is re-entrant, so ``process`` may call back into the
    FIFO (``has_synced``, ``add``) without deadlocking.
    """

    def __init__(
        self,
        *,
        key_func: KeyFunc = meta_namespace_key_func,
        known_objects: KeyListerGetter | None = None,
        emit_delta_type_replaced: bool = False,
        transformer: TransformFunc | None = None,
        name: str = "DeltaFIFO",
        core: DeltaFIFOCore | None = None,
    ) -> None:
        """``core``: wrap a core built elsewhere (the informer chooses its FIFO core
        first) instead of building one from the options, which must then be left at
        their defaults. The core must not be driven directly afterwards."""
        if core is None:
            core = DeltaFIFOCore(
                key_func=key_func,
                known_objects=known_objects,
                emit_delta_type_replaced=emit_delta_type_replaced,
                transformer=transformer,
            )
        elif (key_func, known_objects, emit_delta_type_replaced, transformer) != (
            meta_namespace_key_func,
            None,
            False,
            None,
        ):
            raise ValueError("pass a core or the options to build one, not both")
        super().__init__(core, name)

    def pop(self, process: PopProcessFunc) -> Deltas:
        """Wait for a key, remove it and run ``process(deltas, is_in_initial_list)``
        under the FIFO lock; return the deltas.

        Raises :class:`FIFOClosedError` once closed and empty. An exception from
        ``process`` propagates; the key is gone either way (no requeue).
        """
        with self._lock:
            self._wait_for_items()
            _, deltas, is_in_initial_list = self._core.pop_ready()
            process(deltas, is_in_initial_list)
            return deltas

    # -- introspection for tests and the simulator -------------------------------------

    def snapshot(self) -> tuple[list[str], dict[str, Deltas]]:
        """A consistent copy of ``(queue, items)``."""
        with self._lock:
            core = self._core
            return list(core.queue), {k: list(v) for k, v in core.items.items()}
