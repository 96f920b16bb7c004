"""The informer's local cache: a keyed map of objects plus secondary indices.

:class:`ThreadSafeMap` is the core (items, indexers, indices, last resource version; it
never locks, blocks or reads a clock); :class:`Indexer` is the shell that keys and
transforms objects and holds one lock around the core. Ports client-go
``tools/cache/store.go`` (``cache``, ``Store``), ``thread_safe_store.go``
(``threadSafeMap``, ``storeIndex``), ``index.go`` and ``listers.go`` (``ListAll``,
``ListAllByNamespace``). Refines ``spec/Informer.tla`` variable ``store`` (a function from
keys to objects); the indices sit below that abstraction: :class:`ThreadSafeMap` also
refines ``spec/Indexer.tla`` (items and one index; ``refimpl/tla/refine_indexer.py``).

Index invariant (IDX-1), true after every public call returns: for every
index ``n``, key ``k`` and value ``v``: ``k in indices[n][v]`` iff ``k in items`` and
``v in indexers[n](items[k])``; no value maps to an empty set.
"""

from __future__ import annotations

import builtins
import enum
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Generic, Protocol, cast, runtime_checkable

import attrs

from refimpl._typing import TypeVar
from refimpl.cache.deltas import TransformFunc
from refimpl.meta import (
    DeletedFinalStateUnknown,
    KeyFunc,
    Object,
    ObjectKeyError,
    deletion_handling_meta_namespace_key_func,
)

__all__ = [
    "NAMESPACE_INDEX",
    "IndexFunc",
    "IndexFuncError",
    "Indexer",
    "IndexerConflictError",
    "Selector",
    "Store",
    "StoredT",
    "ThreadSafeMap",
    "Transaction",
    "TransactionError",
    "TransactionStore",
    "TransactionType",
    "TypedIndexFunc",
    "UnknownIndexError",
    "list_all",
    "list_all_by_namespace",
    "meta_namespace_index_func",
]

_log = logging.getLogger("refimpl.cache")

#: Maps an object to the index values it is filed under (zero, one or several). Raising
#: means the object cannot be indexed.
IndexFunc = Callable[[object], Sequence[str]]

#: What a store holds. Unnamed (``Indexer()``, ``Store``) it is ``object``, as before the
#: store was generic; an informer's indexer is ``Indexer[T]`` for its object type.
StoredT = TypeVar("StoredT", default=object)

#: An index function for objects of type ``T`` (client-go ``TypedIndexFunc[T]``).
#: :data:`IndexFunc` (any object) is one for every ``T``.
TypedIndexFunc = Callable[[StoredT], Sequence[str]]

#: The name of the index :func:`meta_namespace_index_func` is registered under.
NAMESPACE_INDEX = "namespace"


def meta_namespace_index_func(obj: object) -> list[str]:
    """Index an object by its namespace (``""`` for cluster-scoped objects).

    Raises ``TypeError`` for anything that is not an :class:`Object` (client-go returns
    ``[""]`` together with an error, which a mutation turns into a panic).
    """
    if not isinstance(obj, Object):
        raise TypeError(f"object has no meta: {type(obj).__name__} is not an Object")
    return [obj.namespace]


class IndexerConflictError(ValueError):
    """``add_indexers`` named an index that already exists; nothing was added."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = sorted(names)
        super().__init__(f"indexer conflict: {self.names}")


class UnknownIndexError(ValueError):
    """A query named an index that was never registered."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"index with name {name!r} does not exist")


class IndexFuncError(Exception):
    """An index function failed while the store was being changed.

    client-go panics here. refimpl raises instead, and computes every index value
    *before* changing anything, so the store is left exactly as it was.
    """

    def __init__(self, key: str, index_name: str, err: BaseException) -> None:
        self.key = key
        self.index_name = index_name
        super().__init__(
            f"unable to calculate an index entry for key {key!r} on index {index_name!r}: {err}"
        )


def _checked_values(index_name: str, values: object) -> tuple[str, ...]:
    # A bare string is the classic slip (return "ns" instead of ["ns"]): it would be
    # filed under each of its characters. Refuse it instead of corrupting the index.
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise TypeError(
            f"index function {index_name!r} must return a sequence of strings, "
            f"got {type(values).__name__}: {values!r}"
        )
    out = tuple(values)
    for v in out:
        if not isinstance(v, str):
            raise TypeError(
                f"index function {index_name!r} returned a non-string value {v!r} "
                f"({type(v).__name__})"
            )
    return out


def _rv_of(obj: object) -> str | None:
    """The object's resource version, or ``None`` when it has no meta (e.g. a tombstone)."""
    return obj.resource_version if isinstance(obj, Object) else None


_IndexPlan = list[tuple[str, tuple[str, ...], tuple[str, ...]]]


class ThreadSafeMap:
    """The state of client-go's ``threadSafeMap``: items, indexers, indices and the
    last resource version seen. Not locked itself: :class:`Indexer` owns the one lock.

    Mutations first compute every index value they need and only then change state, so
    a failing index function (:class:`IndexFuncError`) leaves everything untouched.
    Listing orders are insertion order (client-go: Go's random map order); query results
    over index sets come in sorted key order. Neither order is part of the contract.
    """

    __slots__ = ("indexers", "indices", "items", "rv")

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        #: key -> object. Objects are shared, never copied: treat them as immutable.
        self.items: dict[str, object] = {}
        #: index name -> index function. Only ever grows (``add_indexers``).
        self.indexers: dict[str, IndexFunc] = dict(indexers) if indexers else {}
        #: index name -> index value -> keys. Invariant: see the module docstring; no
        #: value maps to an empty set (upstream #84970: emptied sets leaked memory).
        self.indices: dict[str, dict[str, set[str]]] = {}
        #: The resource version of the last object written or of the last replace /
        #: bookmark (client-go v1.36, PR #134827).
        self.rv = ""

    # -- index maintenance -------------------------------------------------------------

    def _values_for_update(self, name: str, key: str, obj: object) -> tuple[str, ...]:
        func = self.indexers[name]
        try:
            values = func(obj)
        except Exception as err:
            raise IndexFuncError(key, name, err) from err
        return _checked_values(name, values)

    def _plan(self, key: str, old: object | None, new: object | None) -> _IndexPlan:
        plan: _IndexPlan = []
        for name in self.indexers:
            old_values = self._values_for_update(name, key, old) if old is not None else ()
            new_values = self._values_for_update(name, key, new) if new is not None else ()
            plan.append((name, old_values, new_values))
        return plan

    def _apply(self, key: str, plan: _IndexPlan) -> None:
        for name, old_values, new_values in plan:
            # The common case: one value, unchanged -- nothing to move.
            if len(old_values) == 1 and len(new_values) == 1 and old_values[0] == new_values[0]:
                continue
            index = self.indices.setdefault(name, {})
            for value in old_values:
                keys = index.get(value)
                if keys is None:
                    continue
                keys.discard(key)
                if not keys:
                    del index[value]
            for value in new_values:
                index.setdefault(value, set()).add(key)

    # -- mutations ---------------------------------------------------------------------

    def update(self, key: str, obj: object) -> None:
        """Insert or overwrite ``key`` (client-go's Add and Update are the same)."""
        plan = self._plan(key, self.items.get(key), obj)
        self.items[key] = obj
        self._apply(key, plan)
        rv = _rv_of(obj)
        if rv is not None:
            self.rv = rv

    add = update

    def delete(self, key: str) -> None:
        """Remove ``key`` and its index entries; a missing key is a no-op."""
        old = self.items.get(key)
        if key not in self.items:
            return
        plan = self._plan(key, old, None)
        del self.items[key]
        self._apply(key, plan)

    def delete_with_object(self, key: str, obj: object | None) -> None:
        """:meth:`delete`, then take the resource version from ``obj`` if it has one.

        As in client-go the version moves even when ``key`` was absent; a tombstone has
        no meta, so deleting through one leaves it unchanged.
        """
        self.delete(key)
        rv = _rv_of(obj) if obj is not None else None
        if rv is not None:
            self.rv = rv

    def replace(self, items: dict[str, object], resource_version: str) -> None:
        """Swap in ``items`` (the core takes ownership) and rebuild every index."""
        new_indices: dict[str, dict[str, set[str]]] = {}
        for name in self.indexers:
            index: dict[str, set[str]] = {}
            for key, obj in items.items():
                for value in self._values_for_update(name, key, obj):
                    index.setdefault(value, set()).add(key)
            new_indices[name] = index
        self.items = items
        self.indices = new_indices
        self.rv = resource_version

    def add_indexers(self, new_indexers: Mapping[str, IndexFunc]) -> None:
        """Register more indices and index the items already stored.

        Raises :class:`IndexerConflictError` (and adds none) if any name is taken.
        """
        conflict = self.indexers.keys() & new_indexers.keys()
        if conflict:
            raise IndexerConflictError(conflict)
        staged = ThreadSafeMap(new_indexers)
        staged.replace(dict(self.items), self.rv)  # computes the new indices, or raises
        self.indexers.update(new_indexers)
        self.indices.update(staged.indices)

    def bookmark(self, resource_version: str) -> None:
        self.rv = resource_version

    # -- queries -----------------------------------------------------------------------

    def get(self, key: str) -> tuple[object | None, bool]:
        if key in self.items:
            return self.items[key], True
        return None, False

    def list(self) -> builtins.list[object]:
        return list(self.items.values())

    def list_keys(self) -> builtins.list[str]:
        return list(self.items)

    def _index_func(self, name: str) -> IndexFunc:
        func = self.indexers.get(name)
        if func is None:
            raise UnknownIndexError(name)
        return func

    def index(self, name: str, obj: object) -> builtins.list[object]:
        """Objects sharing any index value with ``obj``. The index function's own
        exception propagates unchanged (client-go returns it rather than panicking)."""
        values = _checked_values(name, self._index_func(name)(obj))
        index = self.indices.get(name, {})
        keys: set[str] = set()
        for value in values:
            keys |= index.get(value, set())
        return [self.items[k] for k in sorted(keys)]

    def index_keys(self, name: str, value: str) -> builtins.list[str]:
        """Keys filed under ``value``, sorted."""
        self._index_func(name)
        return sorted(self.indices.get(name, {}).get(value, ()))

    def by_index(self, name: str, value: str) -> builtins.list[object]:
        return [self.items[k] for k in self.index_keys(name, value)]

    def list_index_func_values(self, name: str) -> builtins.list[str]:
        """Values currently present in index ``name``; ``[]`` for an unknown name."""
        return list(self.indices.get(name, {}))

    def get_indexers(self) -> dict[str, IndexFunc]:
        """A copy of the registered index functions."""
        return dict(self.indexers)


# -- the Store interface and its transactions ------------------------------------------


class TransactionType(enum.StrEnum):
    ADD = "Add"
    UPDATE = "Update"
    DELETE = "Delete"


@attrs.frozen
class Transaction:
    """One write of a batch applied by :meth:`Indexer.transaction`."""

    type: TransactionType
    object: object


class TransactionError(Exception):
    """Some transactions of a batch could not be keyed; the others *were* applied.

    ``successful_indices`` are the positions (in the caller's list) that were applied.
    """

    def __init__(
        self,
        successful_indices: list[int],
        total_transactions: int,
        errors: list[Exception],
    ) -> None:
        self.successful_indices = successful_indices
        self.total_transactions = total_transactions
        self.errors = errors
        failed = total_transactions - len(successful_indices)
        super().__init__(f"{failed} of {total_transactions} transactions failed: {errors}")


@runtime_checkable
class Store(Protocol[StoredT]):
    """client-go's ``Store`` interface (v1.36), as
    :func:`~refimpl.cache.process_deltas.process_deltas` and the listers use it.
    :class:`Indexer` implements it.

    ``add``/``update``/``delete``/``get`` raise :class:`~refimpl.meta.ObjectKeyError` for
    an object that cannot be keyed. Generic in the stored type (plain ``Store`` is
    ``Store[object]``); ``delete`` and ``get`` also take a tombstone.
    """

    def add(self, obj: StoredT) -> None: ...
    def update(self, obj: StoredT) -> None: ...
    def delete(self, obj: StoredT | DeletedFinalStateUnknown[StoredT]) -> None: ...
    def list(self) -> builtins.list[StoredT]: ...
    def list_keys(self) -> builtins.list[str]: ...
    def get(
        self, obj: StoredT | DeletedFinalStateUnknown[StoredT]
    ) -> tuple[StoredT | None, bool]: ...
    def get_by_key(self, key: str) -> tuple[StoredT | None, bool]: ...
    def replace(self, objects: Sequence[StoredT], resource_version: str) -> None: ...
    def resync(self) -> None: ...
    def last_store_sync_resource_version(self) -> str: ...
    def bookmark(self, resource_version: str) -> None: ...


@runtime_checkable
class TransactionStore(Protocol):
    """A store that applies a batch of writes under one lock (client-go
    ``TransactionStore``, used by batch processing since v1.35)."""

    def transaction(self, *txns: Transaction) -> None: ...


class Indexer(Generic[StoredT]):
    """A thread-safe, indexed store: client-go's ``cache`` behind ``NewIndexer`` /
    ``NewStore`` (a store is an indexer without indexers).

    Generic in what it stores, like client-go's ``TypedIndexer[T]``: ``Indexer[Pod]``
    takes ``Pod``s (and tombstones, to delete) and its reads return ``Pod``s. Plain
    ``Indexer()`` is ``Indexer[object]``. The parameter is for the type checker only:
    nothing checks at run time what goes in.

    Keys come from ``key_func`` (default: the tombstone-aware
    :func:`~refimpl.meta.deletion_handling_meta_namespace_key_func`, as informers use;
    client-go has no default). ``transformer``, if given, runs on objects written by
    ``add``/``update``/``replace``, outside the lock; its exception propagates and
    nothing is written (client-go wraps it as ``transforming: ...``).

    Misuse: objects handed out are the stored ones, not copies -- changing one in place
    silently desynchronises the indices, exactly as in client-go.
    """

    def __init__(
        self,
        key_func: KeyFunc = deletion_handling_meta_namespace_key_func,
        indexers: Mapping[str, TypedIndexFunc[StoredT]] | None = None,
        *,
        transformer: TransformFunc | None = None,
    ) -> None:
        self._key_func = key_func
        self._transformer = transformer
        # Re-entrant so an index function or transformer that reads the store cannot
        # deadlock it (Go's RWMutex would).
        self._lock = threading.RLock()
        # The core is untyped: only objects of type StoredT ever reach the functions.
        self._map = ThreadSafeMap(cast("Mapping[str, IndexFunc] | None", indexers))
        #: A tracing hook, off (None) by default: called after every write (add, update,
        #: delete -- of an absent key too --, replace, transaction), outside the lock.
        #: Trace validation records the store write as its own step with it.
        self.on_write: Callable[[], None] | None = None

    def _key(self, obj: object) -> str:
        return self._key_func(obj)

    def _transform(self, obj: object) -> object:
        return obj if self._transformer is None else self._transformer(obj)

    # -- writes ------------------------------------------------------------------------

    def add(self, obj: StoredT) -> None:
        """Insert or overwrite (identical to :meth:`update`, as in client-go)."""
        self._put(obj)

    def update(self, obj: StoredT) -> None:
        """Insert or overwrite (identical to :meth:`add`, as in client-go)."""
        self._put(obj)

    def _put(self, obj: StoredT) -> None:
        key = self._key(obj)
        stored = self._transform(obj)
        with self._lock:
            self._map.update(key, stored)
        if self.on_write is not None:
            self.on_write()

    def delete(self, obj: StoredT | DeletedFinalStateUnknown[StoredT]) -> None:
        """Remove the object's key (a tombstone works too); missing keys are ignored."""
        key = self._key(obj)
        with self._lock:
            self._map.delete_with_object(key, obj)
        if self.on_write is not None:
            self.on_write()

    def replace(self, objects: Sequence[StoredT], resource_version: str) -> None:
        """Make the store hold exactly ``objects`` (last one wins per key) in one step.

        Every object is keyed and transformed before anything changes, so a failure
        leaves the store untouched.
        """
        items: dict[str, object] = {}
        for obj in objects:
            key = self._key(obj)
            items[key] = self._transform(obj)
        with self._lock:
            self._map.replace(items, resource_version)
        if self.on_write is not None:
            self.on_write()

    def resync(self) -> None:
        """Nothing to do (kept for the ``Store`` interface)."""

    def bookmark(self, resource_version: str) -> None:
        """Record that the store is in sync up to ``resource_version``."""
        with self._lock:
            self._map.bookmark(resource_version)

    def last_store_sync_resource_version(self) -> str:
        """The last resource version written, replaced or bookmarked.

        client-go answers ``""`` unless the ``AtomicFIFO`` gate is on; refimpl follows
        v1.36's default (gate on) and always answers.
        """
        with self._lock:
            return self._map.rv

    def transaction(self, *txns: Transaction) -> None:
        """Key every write, then apply the keyed ones in order under one lock.

        No transformer runs (as in client-go: batch processing hands in objects the
        FIFO already transformed). The resource version becomes that of the last
        applied write's object, if it has one. If some objects could not be keyed, the
        others are still applied and :class:`TransactionError` is raised afterwards. A
        key function raising anything but ObjectKeyError aborts before any write.
        """
        keyed: builtins.list[tuple[Transaction, str]] = []
        successful: builtins.list[int] = []
        errors: builtins.list[Exception] = []
        for i, txn in enumerate(txns):
            if not isinstance(txn, Transaction):
                raise TypeError(f"transaction {i} is a {type(txn).__name__}, not a Transaction")
            try:
                key = self._key(txn.object)
            except ObjectKeyError as err:
                errors.append(err)
                continue
            successful.append(i)
            keyed.append((txn, key))
        if keyed:
            with self._lock:
                for txn, key in keyed:
                    if txn.type is TransactionType.DELETE:
                        self._map.delete(key)
                    else:
                        self._map.update(key, txn.object)
                rv = _rv_of(keyed[-1][0].object)
                if rv is not None:
                    self._map.rv = rv
            if self.on_write is not None:
                self.on_write()
        if errors:
            raise TransactionError(successful, len(txns), errors)

    def add_indexers(self, new_indexers: Mapping[str, TypedIndexFunc[StoredT]]) -> None:
        """Register more indices, indexing what is already stored (allowed any time).

        Raises :class:`IndexerConflictError` if a name is taken, or
        :class:`IndexFuncError` if an existing item cannot be indexed; either way
        nothing is added.
        """
        with self._lock:
            self._map.add_indexers(cast("Mapping[str, IndexFunc]", new_indexers))

    # -- reads -------------------------------------------------------------------------

    def get(self, obj: StoredT | DeletedFinalStateUnknown[StoredT]) -> tuple[StoredT | None, bool]:
        return self.get_by_key(self._key(obj))

    def get_by_key(self, key: str) -> tuple[StoredT | None, bool]:
        if not isinstance(key, str):  # else a None key is an AttributeError deep inside
            raise TypeError(f"key must be a str, got {key!r}")
        with self._lock:
            return cast("tuple[StoredT | None, bool]", self._map.get(key))

    def list(self) -> builtins.list[StoredT]:
        with self._lock:
            return cast("builtins.list[StoredT]", self._map.list())

    def list_keys(self) -> builtins.list[str]:
        with self._lock:
            return self._map.list_keys()

    def index(self, index_name: str, obj: StoredT) -> builtins.list[StoredT]:
        """Stored objects sharing an index value with ``obj``.

        Raises :class:`UnknownIndexError`, or whatever the index function raises.
        """
        with self._lock:
            return cast("builtins.list[StoredT]", self._map.index(index_name, obj))

    def index_keys(self, index_name: str, indexed_value: str) -> builtins.list[str]:
        """Sorted keys filed under ``indexed_value``; raises :class:`UnknownIndexError`."""
        with self._lock:
            return self._map.index_keys(index_name, indexed_value)

    def by_index(self, index_name: str, indexed_value: str) -> builtins.list[StoredT]:
        """Objects filed under ``indexed_value``; raises :class:`UnknownIndexError`."""
        with self._lock:
            return cast("builtins.list[StoredT]", self._map.by_index(index_name, indexed_value))

    def list_index_func_values(self, index_name: str) -> builtins.list[str]:
        """Values present in the index; ``[]`` for an unknown index (no error)."""
        with self._lock:
            return self._map.list_index_func_values(index_name)

    def get_indexers(self) -> dict[str, TypedIndexFunc[StoredT]]:
        """A copy of the registered index functions (client-go hands out its own map;
        refimpl never aliases it)."""
        with self._lock:
            return cast("dict[str, TypedIndexFunc[StoredT]]", self._map.get_indexers())

    # -- introspection for tests and the simulator -------------------------------------

    def snapshot_indices(self) -> dict[str, dict[str, frozenset[str]]]:
        """A consistent copy of every index."""
        with self._lock:
            return {
                name: {value: frozenset(keys) for value, keys in index.items()}
                for name, index in self._map.indices.items()
            }


# -- listers ---------------------------------------------------------------------------

#: ``None`` or an empty mapping selects everything; a mapping requires those labels
#: (equality-based, like ``a=b,c=d``); a callable receives the labels and decides.
Selector = Mapping[str, str] | Callable[[Mapping[str, str]], bool] | None


def _labels_of(obj: object) -> Mapping[str, str]:
    if not isinstance(obj, Object):
        raise TypeError(f"object has no meta: {type(obj).__name__} is not an Object")
    return obj.labels


def _selects_all(selector: Selector) -> bool:
    return selector is None or (isinstance(selector, Mapping) and len(selector) == 0)


def _matches(selector: Selector, labels: Mapping[str, str]) -> bool:
    if selector is None:
        return True
    if isinstance(selector, Mapping):
        return all(labels.get(k) == v for k, v in selector.items())
    return bool(selector(labels))


def list_all(store: Store[StoredT], selector: Selector = None) -> list[StoredT]:
    """Every stored object whose labels match ``selector`` (client-go ``ListAll``).

    Selecting everything returns the store's list without looking at labels; otherwise
    a stored item that is not an :class:`Object` raises ``TypeError``.
    """
    items = store.list()
    if _selects_all(selector):
        return items
    return [obj for obj in items if _matches(selector, _labels_of(obj))]


def list_all_by_namespace(
    indexer: Indexer[StoredT], namespace: str, selector: Selector = None
) -> list[StoredT]:
    """Objects in ``namespace`` matching ``selector`` (client-go ``ListAllByNamespace``).

    ``namespace=""`` means all namespaces. Uses the ``"namespace"`` index; without it,
    logs and falls back to a full scan filtered by namespace, as client-go does.
    """
    if namespace == "":
        return list_all(indexer, selector)
    try:
        items = indexer.by_index(NAMESPACE_INDEX, namespace)
    except UnknownIndexError as err:
        _log.info("cannot list by namespace through the index (%s); scanning", err)
        out: list[StoredT] = []
        for obj in indexer.list():
            if not isinstance(obj, Object):
                raise TypeError(
                    f"object has no meta: {type(obj).__name__} is not an Object"
                ) from None
            if obj.namespace == namespace and _matches(selector, obj.labels):
                out.append(obj)
        return out
    if _selects_all(selector):
        return items
    return [obj for obj in items if _matches(selector, _labels_of(obj))]
