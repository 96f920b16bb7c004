"""Applying popped deltas: update the store first, then tell the handler.

Stateless functions over a :class:`~refimpl.cache.store.Store` and a
:class:`~refimpl.cache.handlers.ResourceEventHandler`; nothing here locks, blocks or
keeps state. Ports client-go ``tools/cache/controller.go`` (``processDeltas``,
``processDeltasInBatch``, ``processReplacedAllInfo``; the handlers are in
:mod:`refimpl.cache.handlers`). Refines the ``StoreWrite`` then ``Distribute`` steps of
``spec/Informer.tla`` (``ApplyEntry`` then ``Distribute`` in ``spec/InformerAtomic.tla``):
variables ``store`` and ``notifications`` (store-before-notify, INF-1: every handler call
sees the store already updated).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from refimpl._typing import TypeVar
from refimpl.cache.deltas import (
    BookmarkInfo,
    Delta,
    DeltaType,
    ReplacedAllInfo,
    SyncAllInfo,
)
from refimpl.cache.handlers import ResourceEventHandler
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
    ObjectKeyError,
    deletion_handling_meta_namespace_key_func,
)

__all__ = [
    "BatchProcessingError",
    "process_deltas",
    "process_deltas_in_batch",
    "process_replaced_all",
]


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
