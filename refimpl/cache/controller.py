"""Applying popped deltas: update the store first, then tell the handler.

Stateless functions over a :class:`~refimpl.cache.store.Store` and a
:class:`ResourceEventHandler`; nothing here locks, blocks or keeps state. Ports client-go
``tools/cache/controller.go`` (``processDeltas``, ``processDeltasInBatch``,
``processReplacedAllInfo``, the ``ResourceEventHandler`` adapters). Refines the
``Process`` action of ``spec/Informer.tla``: variables ``store`` and ``notifications``
(store-before-notify: every handler call sees the store already updated).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, runtime_checkable

import attrs

from refimpl._typing import TypeVar
from refimpl.cache.deltas import (
    BookmarkInfo,
    Delta,
    DeltaType,
    ReplacedAllInfo,
    SyncAllInfo,
)
from refimpl.cache.real_fifo import reconcile_replacement
from refimpl.cache.store import (
    Store,
    Transaction,
    TransactionError,
    TransactionStore,
    TransactionType,
)
from refimpl.meta import (
    DeletedFinalStateUnknown,
    KeyFunc,
    Object,
    ObjectKeyError,
    deletion_handling_meta_namespace_key_func,
)

__all__ = [
    "BatchProcessingError",
    "FilteringResourceEventHandler",
    "ResourceEventHandler",
    "ResourceEventHandlerDetailedFuncs",
    "ResourceEventHandlerFuncs",
    "process_deltas",
    "process_deltas_in_batch",
]


#: The object type a handler is written for (contravariant: a handler of ``Object``
#: serves an informer of any ``Object[...]``). Plain ``ResourceEventHandler`` means
#: ``ResourceEventHandler[Object]``.
ObjT_contra = TypeVar("ObjT_contra", contravariant=True, default=Object)
#: The object type of the function-based handlers below.
ObjT = TypeVar("ObjT", default=Object)


@runtime_checkable
class ResourceEventHandler(Protocol[ObjT_contra]):
    """Receives notifications (client-go ``ResourceEventHandler``; generic like its
    ``TypedResourceEventHandler[T]``).

    ``on_delete`` may receive a :class:`~refimpl.meta.DeletedFinalStateUnknown` whose
    ``obj`` is stale or ``None``, hence its parameter type
    ``T | DeletedFinalStateUnknown[T]``. Handlers must not change the objects they
    get: they are the store's own.

    The type parameter is for the type checker only: the informer does not check at
    run time that what it delivers is a ``T`` (``SharedIndexInformer[Pod]`` promises
    that the list/watch produces ``Pod``s).
    """

    def on_add(self, obj: ObjT_contra, is_in_initial_list: bool) -> None: ...
    def on_update(self, old: ObjT_contra, new: ObjT_contra) -> None: ...
    def on_delete(self, obj: ObjT_contra | DeletedFinalStateUnknown[ObjT_contra]) -> None: ...


@attrs.frozen
class ResourceEventHandlerFuncs(Generic[ObjT]):
    """A handler from optional callables; ``add_func`` does not see the initial-list
    flag (client-go ``ResourceEventHandlerFuncs`` and ``TypedResourceEventHandlerFuncs``:
    one generic class serves both here)."""

    add_func: Callable[[ObjT], None] | None = None
    update_func: Callable[[ObjT, ObjT], None] | None = None
    delete_func: Callable[[ObjT | DeletedFinalStateUnknown[ObjT]], None] | None = None

    def on_add(self, obj: ObjT, is_in_initial_list: bool) -> None:
        if self.add_func is not None:
            self.add_func(obj)

    def on_update(self, old: ObjT, new: ObjT) -> None:
        if self.update_func is not None:
            self.update_func(old, new)

    def on_delete(self, obj: ObjT | DeletedFinalStateUnknown[ObjT]) -> None:
        if self.delete_func is not None:
            self.delete_func(obj)


@attrs.frozen
class ResourceEventHandlerDetailedFuncs(Generic[ObjT]):
    """Like :class:`ResourceEventHandlerFuncs`, but ``add_func`` also receives
    ``is_in_initial_list`` (client-go ``ResourceEventHandlerDetailedFuncs``)."""

    add_func: Callable[[ObjT, bool], None] | None = None
    update_func: Callable[[ObjT, ObjT], None] | None = None
    delete_func: Callable[[ObjT | DeletedFinalStateUnknown[ObjT]], None] | None = None

    def on_add(self, obj: ObjT, is_in_initial_list: bool) -> None:
        if self.add_func is not None:
            self.add_func(obj, is_in_initial_list)

    def on_update(self, old: ObjT, new: ObjT) -> None:
        if self.update_func is not None:
            self.update_func(old, new)

    def on_delete(self, obj: ObjT | DeletedFinalStateUnknown[ObjT]) -> None:
        if self.delete_func is not None:
            self.delete_func(obj)


@attrs.frozen
class FilteringResourceEventHandler(Generic[ObjT]):
    """Forwards only objects that pass ``filter_func``.

    An update whose new object starts passing becomes ``on_add(new, False)``; one whose
    old object stops passing becomes ``on_delete(old)`` (the old object, not a
    tombstone). ``filter_func`` must also cope with tombstones in ``on_delete``, hence
    its parameter type ``T | DeletedFinalStateUnknown[T]`` (client-go's typed variant
    filters the tombstone's possibly-nil object instead).
    """

    filter_func: Callable[[ObjT | DeletedFinalStateUnknown[ObjT]], bool]
    handler: ResourceEventHandler[ObjT]

    def on_add(self, obj: ObjT, is_in_initial_list: bool) -> None:
        if self.filter_func(obj):
            self.handler.on_add(obj, is_in_initial_list)

    def on_update(self, old: ObjT, new: ObjT) -> None:
        new_passes = self.filter_func(new)
        old_passes = self.filter_func(old)
        if new_passes and old_passes:
            self.handler.on_update(old, new)
        elif new_passes:
            self.handler.on_add(new, False)
        elif old_passes:
            self.handler.on_delete(old)

    def on_delete(self, obj: ObjT | DeletedFinalStateUnknown[ObjT]) -> None:
        if self.filter_func(obj):
            self.handler.on_delete(obj)


class BatchProcessingError(Exception):
    """Some deltas of a batch failed; ``errors`` holds the underlying exceptions."""

    def __init__(self, message: str, errors: Sequence[Exception]) -> None:
        self.errors = list(errors)
        super().__init__(f"{message}: {self.errors}")


def _stored(store: Store[Any], obj: object) -> tuple[object | None, bool]:
    # client-go treats a Get error like "absent"; the following Add then fails with the
    # same key error, which is what the caller sees.
    try:
        return store.get(obj)
    except ObjectKeyError:
        return None, False


_T = TypeVar("_T")


def _payload(delta: Delta, cls: type[_T]) -> _T:
    if not isinstance(delta.object, cls):
        raise TypeError(
            f"a {delta.type} delta must carry a {cls.__name__}, got {type(delta.object).__name__}"
        )
    return delta.object


def process_deltas(
    handler: ResourceEventHandler[Any],
    store: Store[Any],
    deltas: Sequence[Delta],
    is_in_initial_list: bool,
    key_func: KeyFunc = deletion_handling_meta_namespace_key_func,
) -> None:
    """Apply ``deltas`` (oldest first) to ``store`` and notify ``handler`` after each.

    * ``Sync``/``Replaced``/``Added``/``Updated``: if the key is stored, ``update`` then
      ``on_update(old, obj)``; else ``add`` then ``on_add(obj, is_in_initial_list)``. The
      handler follows store presence, not the delta type.
    * ``Deleted``: ``delete`` (a no-op for an absent key), then ``on_delete(obj)`` always.
    * ``Bookmark``: ``store.bookmark(rv)``, no handler call.
    * ``SyncAll``: ``on_update(o, o)`` for every stored object, then stop: later deltas
      in the same call are ignored, as in client-go.
    * ``ReplacedAll``: see :func:`process_replaced_all`.

    A store error propagates and the remaining deltas are not applied. A payload of the
    wrong type for ``ReplacedAll``/``SyncAll``/``Bookmark`` raises ``TypeError``.
    ``key_func`` is used by ``ReplacedAll`` only.
    """
    for delta in deltas:
        obj = delta.object
        match delta.type:
            case DeltaType.REPLACED_ALL:
                info = _payload(delta, ReplacedAllInfo)
                process_replaced_all(handler, store, info, is_in_initial_list, key_func)
            case DeltaType.SYNC_ALL:
                _payload(delta, SyncAllInfo)
                for stored in store.list():
                    handler.on_update(stored, stored)
                return
            case DeltaType.SYNC | DeltaType.REPLACED | DeltaType.ADDED | DeltaType.UPDATED:
                old, exists = _stored(store, obj)
                if exists:
                    store.update(obj)
                    handler.on_update(old, obj)
                else:
                    store.add(obj)
                    handler.on_add(obj, is_in_initial_list)
            case DeltaType.DELETED:
                store.delete(obj)
                handler.on_delete(obj)
            case DeltaType.BOOKMARK:
                store.bookmark(_payload(delta, BookmarkInfo).resource_version)


def process_replaced_all(
    handler: ResourceEventHandler[Any],
    store: Store[Any],
    info: ReplacedAllInfo,
    is_in_initial_list: bool,
    key_func: KeyFunc = deletion_handling_meta_namespace_key_func,
) -> None:
    """Apply an atomic relist (upstream #135462, v1.36).

    Deletions are the stored keys missing from the list (tombstones carrying the
    stored object); each listed object is paired with its stored predecessor, if any.
    Then the store is replaced *whole*, and only then does the handler hear
    ``on_delete`` for every deletion, followed by ``on_update(old, new)`` or
    ``on_add(new, is_in_initial_list)`` per listed object in list order -- so handlers
    and listers see the complete post-relist state. An unkeyable object raises before
    the store is touched.
    """
    deletions: list[DeletedFinalStateUnknown] = []
    replacements: list[tuple[object | None, bool, object]] = []

    def on_replace(obj: object) -> None:
        old, exists = _stored(store, obj)
        replacements.append((old, exists, obj))

    reconcile_replacement([], store, info.objects, key_func, deletions.append, on_replace)
    store.replace(info.objects, info.resource_version)
    for dfsu in deletions:
        handler.on_delete(dfsu)
    for old, exists, new in replacements:
        if exists:
            handler.on_update(old, new)
        else:
            handler.on_add(new, is_in_initial_list)


def process_deltas_in_batch(
    handler: ResourceEventHandler[Any],
    store: Store[Any],
    deltas: Sequence[Delta],
    is_in_initial_list: bool,
    key_func: KeyFunc = deletion_handling_meta_namespace_key_func,
) -> None:
    """Apply a ``pop_batch`` batch (one delta per distinct key, batchable types only).

    With a :class:`~refimpl.cache.store.TransactionStore`, all writes go in one
    transaction and the handler calls follow in batch order; if some writes could not be
    keyed, only the applied ones are notified and :class:`BatchProcessingError` is
    raised. A non-batchable type raises ``ValueError`` before the store is touched.
    Without transactions each delta goes through :func:`process_deltas`; failures are
    collected and raised together as :class:`BatchProcessingError`.
    """
    if not isinstance(store, TransactionStore):
        errors: list[Exception] = []
        for delta in deltas:
            try:
                process_deltas(handler, store, [delta], is_in_initial_list, key_func)
            except Exception as err:
                errors.append(err)
        if errors:
            raise BatchProcessingError("unexpected error when handling deltas", errors)
        return

    txns: list[Transaction] = []
    callbacks: list[Callable[[], None]] = []
    for delta in deltas:
        obj = delta.object
        match delta.type:
            case DeltaType.SYNC | DeltaType.REPLACED | DeltaType.ADDED | DeltaType.UPDATED:
                old, exists = _stored(store, obj)
                if exists:
                    txns.append(Transaction(TransactionType.UPDATE, obj))
                    callbacks.append(functools.partial(handler.on_update, old, obj))
                else:
                    txns.append(Transaction(TransactionType.ADD, obj))
                    callbacks.append(functools.partial(handler.on_add, obj, is_in_initial_list))
            case DeltaType.DELETED:
                txns.append(Transaction(TransactionType.DELETE, obj))
                callbacks.append(functools.partial(handler.on_delete, obj))
            case _:
                raise ValueError(f"delta type {delta.type} is not supported in batch processing")

    try:
        store.transaction(*txns)
    except TransactionError as err:
        for i in err.successful_indices:
            callbacks[i]()
        raise BatchProcessingError("not all items in the batch were processed", err.errors) from err
    for callback in callbacks:
        callback()
