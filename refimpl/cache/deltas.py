"""The vocabulary the FIFOs speak: delta types, deltas and their payloads.

Plain immutable values and small protocols; no state, no locks, no clock. Ports the
type definitions of client-go ``tools/cache/delta_fifo.go`` (``DeltaType``, ``Delta``,
``Deltas``, ``KeyListerGetter``, ``TransformFunc``, ``ErrFIFOClosed``) and
``the_real_fifo.go`` (``ReplacedAllInfo``, ``SyncAllInfo``, ``BookmarkInfo``). In the
TLA+ specs (``spec/DeltaFIFO.tla``, ``spec/RealFIFO.tla``) a delta is a ``[type, obj]``
record and these are the values of the ``type`` field.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Protocol, cast, runtime_checkable

import attrs

from refimpl.meta import DeletedFinalStateUnknown, Object

__all__ = [
    "BATCHABLE_TYPES",
    "BookmarkInfo",
    "Delta",
    "DeltaType",
    "Deltas",
    "FIFOClosedError",
    "KeyListerGetter",
    "PopProcessFunc",
    "ProcessBatchFunc",
    "ReplacedAllInfo",
    "SyncAllInfo",
    "TransformFunc",
    "newest",
    "oldest",
    "tombstone",
]


class DeltaType(enum.StrEnum):
    """What happened to an object. The values are client-go's strings."""

    ADDED = "Added"
    UPDATED = "Updated"
    DELETED = "Deleted"
    #: A relist item (DeltaFIFO with ``emit_delta_type_replaced``, non-atomic RealFIFO).
    REPLACED = "Replaced"
    #: A periodic resync of a stored object (or a relist item without ``Replaced``).
    SYNC = "Sync"
    #: RealFIFO atomic mode only: the whole relist as one entry (:class:`ReplacedAllInfo`).
    REPLACED_ALL = "ReplacedAll"
    #: RealFIFO atomic mode only: resync every stored object (:class:`SyncAllInfo`).
    SYNC_ALL = "SyncAll"
    #: RealFIFO atomic mode only: the watch reached a resource version (:class:`BookmarkInfo`).
    BOOKMARK = "Bookmark"


#: The types RealFIFO.pop_batch may put in one batch: one object each, one key each.
BATCHABLE_TYPES = frozenset(
    {DeltaType.SYNC, DeltaType.REPLACED, DeltaType.ADDED, DeltaType.UPDATED, DeltaType.DELETED}
)


@attrs.frozen
class Delta:
    """One event: its type and its object (an API object, a tombstone, or one of the
    ``*Info`` payloads below for the RealFIFO-only types)."""

    type: DeltaType
    object: object


#: A key's events, oldest first. DeltaFIFO never hands out an empty one.
Deltas = list[Delta]


def oldest(deltas: Deltas) -> Delta | None:
    """The first delta, or ``None`` for an empty list (client-go ``Deltas.Oldest``)."""
    return deltas[0] if deltas else None


def newest(deltas: Deltas) -> Delta | None:
    """The last delta, or ``None`` for an empty list (client-go ``Deltas.Newest``)."""
    return deltas[-1] if deltas else None


@attrs.frozen
class ReplacedAllInfo:
    """Payload of a ``ReplacedAll`` delta: the complete (transformed) relist result."""

    resource_version: str
    objects: tuple[object, ...]


@attrs.frozen
class SyncAllInfo:
    """Payload of a ``SyncAll`` delta (carries nothing: the store is read at processing)."""


@attrs.frozen
class BookmarkInfo:
    """Payload of a ``Bookmark`` delta."""

    resource_version: str


class FIFOClosedError(Exception):
    """``pop`` on a FIFO that is closed and empty (client-go ``ErrFIFOClosed``)."""

    def __init__(self) -> None:
        super().__init__("the FIFO is closed and has nothing left to pop")


#: Runs on every object before it is queued (see each FIFO for the exceptions to that
#: rule). It may return a new object or the same one changed in place; raising rejects
#: the object and nothing is queued.
TransformFunc = Callable[[object], object]

#: ``process(deltas, is_in_initial_list)``: what ``pop`` runs on the popped entry.
#: An exception propagates out of ``pop``; the entry is not re-queued (client-go removed
#: ``ErrRequeue`` in v1.33, PR #129568).
PopProcessFunc = Callable[[Deltas, bool], None]

#: ``process_batch(deltas, is_in_initial_list)`` for ``RealFIFO.pop_batch``: one delta per
#: distinct key.
ProcessBatchFunc = Callable[[list[Delta], bool], None]


@runtime_checkable
class KeyListerGetter(Protocol):
    """What a FIFO needs from the informer's store to detect deletions and resync
    (client-go ``KeyListerGetter``). :class:`refimpl.cache.store.Indexer` satisfies it.

    ``get_by_key`` returns ``(obj, exists)``; raising an exception is how a lookup
    *error* is reported (client-go returns a non-nil ``err``), and the FIFOs treat it
    exactly as client-go treats that error.
    """

    def list_keys(self) -> list[str]: ...

    def get_by_key(self, key: str) -> tuple[object | None, bool]: ...


def tombstone(key: str, obj: object | None) -> DeletedFinalStateUnknown:
    """``DeletedFinalStateUnknown(key, obj)``, unwrapping ``obj`` if it is a tombstone
    itself, so tombstones never nest (upstream #115620 fixed DFSU-in-DFSU).

    A FIFO with a custom key function may carry objects other than :class:`Object`;
    like client-go, the tombstone carries whatever was last known.
    """
    if isinstance(obj, DeletedFinalStateUnknown):
        obj = obj.obj
    return DeletedFinalStateUnknown(key, cast("Object | None", obj))
