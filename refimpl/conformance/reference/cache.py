"""The reference side for ``store``, ``delta_fifo`` and ``real_fifo``.

Owns the created instances' cores (:class:`~refimpl.cache.store.ThreadSafeMap` behind an
:class:`~refimpl.cache.store.Indexer`, :class:`~refimpl.cache.delta_fifo.DeltaFIFOCore`,
:class:`~refimpl.cache.real_fifo.RealFIFOCore`) and, for the FIFOs, the "known objects"
store the harness fills with ``known_add``/``known_delete`` (an informer's indexer in
real use). Never blocks: ``pop_nowait`` answers ``empty`` instead of waiting. Ports
nothing itself; refines ``spec/DeltaFIFO.tla`` and ``spec/RealFIFO.tla`` through the cores.

Where client-go's order is Go map order (keys that ``replace`` or ``resync`` take from
the known objects), the entries they queue form a *tie group*: ``pop_nowait`` may hand
out any member at the head, and the steered reference follows the adapter's choice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from refimpl.blocking import WouldBlock
from refimpl.cache.delta_fifo import DeltaFIFOCore
from refimpl.cache.deltas import (
    BookmarkInfo,
    Delta,
    DeltaType,
    FIFOClosedError,
    ReplacedAllInfo,
    SyncAllInfo,
)
from refimpl.cache.fifo_shell import FIFOCore
from refimpl.cache.real_fifo import RealFIFOCore
from refimpl.cache.store import Indexer, IndexFunc
from refimpl.conformance.protocol import COMPONENTS, SPEC_METHODS, Handler, ProtocolError
from refimpl.meta import DeletedFinalStateUnknown, Object, deletion_handling_meta_namespace_key_func

__all__ = [
    "INDEX_FUNCS",
    "CacheParts",
    "DeltaFIFOComponent",
    "RealFIFOComponent",
    "StoreComponent",
    "delta_from_json",
    "object_from_json",
    "to_json",
]


#: The FIFO core a component drives.
C = TypeVar("C", bound=FIFOCore)


def _labels_index(obj: object) -> list[str]:
    if not isinstance(obj, Object):
        raise TypeError(f"cannot index {obj!r}")
    return sorted(f"{k}={v}" for k, v in obj.labels.items())


def _namespace_index(obj: object) -> list[str]:
    if not isinstance(obj, Object):
        raise TypeError(f"cannot index {obj!r}")
    return [obj.namespace]


#: The index functions an adapter must know by name (docs/protocol.md).
INDEX_FUNCS: dict[str, IndexFunc] = {"namespace": _namespace_index, "labels": _labels_index}


def object_from_json(value: Any) -> Object:
    """A protocol object ``{namespace, name, rv, labels}`` as a refimpl Object."""
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise ProtocolError("bad_request", f"an object needs a string 'name': {value!r}")
    namespace = value.get("namespace", "")
    rv = value.get("rv", "")
    labels = value.get("labels", {})
    if not isinstance(namespace, str) or not isinstance(rv, str) or not isinstance(labels, dict):
        raise ProtocolError("bad_request", f"malformed object {value!r}")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        raise ProtocolError("bad_request", f"labels must map strings to strings: {labels!r}")
    return Object(name=value["name"], namespace=namespace, resource_version=rv, labels=labels)


def to_json(value: object) -> Any:
    """The protocol form of an object, tombstone or RealFIFO payload."""
    if value is None:
        return None
    if isinstance(value, Object):
        return {
            "namespace": value.namespace,
            "name": value.name,
            "rv": value.resource_version,
            "labels": dict(sorted(value.labels.items())),
        }
    if isinstance(value, DeletedFinalStateUnknown):
        return {"tombstone": {"key": value.key, "obj": to_json(value.obj)}}
    if isinstance(value, ReplacedAllInfo):
        return {
            "replaced_all": {
                "rv": value.resource_version,
                "objects": [to_json(o) for o in value.objects],
            }
        }
    if isinstance(value, SyncAllInfo):
        return {"sync_all": {}}
    if isinstance(value, BookmarkInfo):
        return {"bookmark": {"rv": value.resource_version}}
    raise TypeError(f"no protocol form for {value!r}")


def delta_json(delta: Delta) -> dict[str, Any]:
    return {"type": str(delta.type), "object": to_json(delta.object)}


def delta_from_json(value: Any) -> Delta:
    """The inverse of :func:`delta_json`: a protocol delta as a refimpl Delta (raises
    ProtocolError or ValueError on anything else, e.g. a nested tombstone)."""
    if not isinstance(value, dict) or not isinstance(value.get("object"), dict):
        raise ProtocolError("bad_request", f"a delta is {{type, object}}: {value!r}")
    kind = DeltaType(str(value.get("type")))
    obj = value["object"]
    payload: object
    if kind is DeltaType.REPLACED_ALL:
        info = obj.get("replaced_all") or {}
        objects = tuple(object_from_json(o) for o in info.get("objects", []))
        payload = ReplacedAllInfo(str(info.get("rv", "")), objects)
    elif kind is DeltaType.SYNC_ALL:
        payload = SyncAllInfo()
    elif kind is DeltaType.BOOKMARK:
        payload = BookmarkInfo(str((obj.get("bookmark") or {}).get("rv", "")))
    elif isinstance(obj.get("tombstone"), dict):
        inner = obj["tombstone"].get("obj")
        stored = None if inner is None else object_from_json(inner)
        payload = DeletedFinalStateUnknown(str(obj["tombstone"].get("key")), stored)
    else:
        payload = object_from_json(obj)
    return Delta(kind, payload)


def _obj(args: dict[str, Any]) -> Object:
    return object_from_json(args.get("obj"))


def _objs(args: dict[str, Any]) -> list[Object]:
    objs = args.get("objs")
    if not isinstance(objs, list):
        raise ProtocolError("bad_request", "'args.objs' must be a list of objects")
    return [object_from_json(o) for o in objs]


def _str(args: dict[str, Any], name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str):
        raise ProtocolError("bad_request", f"'args.{name}' must be a string, got {value!r}")
    return value


def _sorted_objects(objs: Sequence[object]) -> list[Any]:
    return [to_json(o) for o in sorted(objs, key=deletion_handling_meta_namespace_key_func)]


class CacheParts:
    """Factories the broken adapters replace (the reference uses the real cores)."""

    def __init__(self) -> None:
        self.delta_fifo: Callable[..., DeltaFIFOCore] = DeltaFIFOCore
        self.real_fifo: Callable[..., RealFIFOCore] = RealFIFOCore
        self.indexer: Callable[..., Indexer] = Indexer


class StoreComponent:
    """client-go ``cache.NewIndexer(DeletionHandlingMetaNamespaceKeyFunc, indexers)``."""

    methods = COMPONENTS["store"]

    def __init__(self, options: dict[str, Any], parts: CacheParts) -> None:
        names = options.get("indexers", sorted(INDEX_FUNCS))
        if not isinstance(names, list) or any(n not in INDEX_FUNCS for n in names):
            raise ProtocolError(
                "unsupported", f"indexers must be a subset of {sorted(INDEX_FUNCS)}"
            )
        self.store = parts.indexer(indexers={n: INDEX_FUNCS[n] for n in names})
        #: Each protocol method's handler, given the call's args.
        self.handlers: dict[str, Callable[[dict[str, Any]], Any]] = {
            "add": self.m_add,
            "update": self.m_update,
            "delete": self.m_delete,
            "replace": self.m_replace,
            "get_by_key": self.m_get_by_key,
            "list_keys": self.m_list_keys,
            "list": self.m_list,
            "by_index": self.m_by_index,
            "index_keys": self.m_index_keys,
            "list_index_func_values": self.m_list_index_func_values,
        }

    def call(self, method: str, args: dict[str, Any], actual: dict[str, Any] | None) -> Any:
        handler = self.handlers.get(method)
        if handler is None:
            raise ProtocolError("unsupported", f"a store has no method {method!r}")
        return handler(args)

    def m_add(self, args: dict[str, Any]) -> None:
        self.store.add(_obj(args))

    def m_update(self, args: dict[str, Any]) -> None:
        self.store.update(_obj(args))

    def m_delete(self, args: dict[str, Any]) -> None:
        self.store.delete(_obj(args))

    def m_replace(self, args: dict[str, Any]) -> None:
        self.store.replace(_objs(args), str(args.get("rv", "")))

    def m_get_by_key(self, args: dict[str, Any]) -> Any:
        obj, exists = self.store.get_by_key(_str(args, "key"))
        return {"exists": exists, "obj": to_json(obj) if exists else None}

    def m_list_keys(self, args: dict[str, Any]) -> Any:
        return sorted(self.store.list_keys())

    def m_list(self, args: dict[str, Any]) -> Any:
        return _sorted_objects(self.store.list())

    def m_by_index(self, args: dict[str, Any]) -> Any:
        return _sorted_objects(self.store.by_index(_str(args, "index"), _str(args, "value")))

    def m_index_keys(self, args: dict[str, Any]) -> Any:
        return sorted(self.store.index_keys(_str(args, "index"), _str(args, "value")))

    def m_list_index_func_values(self, args: dict[str, Any]) -> Any:
        return sorted(self.store.list_index_func_values(_str(args, "index")))

    def after_advance(self) -> None:
        pass

    def describe(self) -> str:
        items = ", ".join(
            f"{k}@{getattr(v, 'resource_version', '?')}" for k, v in sorted(self._items())
        )
        return f"items={{{items}}}"

    def _items(self) -> list[tuple[str, object]]:
        return [(k, self.store.get_by_key(k)[0]) for k in self.store.list_keys()]


class _FIFOComponent(Generic[C]):
    """What DeltaFIFO and RealFIFO share: the known-objects fixture, the dispatch and the
    methods that only pass a call on to the core."""

    methods: tuple[str, ...] = ()
    #: The core under test (the subclass builds it).
    fifo: C

    def __init__(self) -> None:
        self.known = Indexer()
        self.group: dict[int, int] = {}  # id(queue entry) -> tie group
        self._next_group = 0
        #: Each protocol method's handler (the subclass adds its own; ``methods`` says
        #: which the component offers).
        self.handlers: dict[str, Handler] = {
            "known_add": self.m_known_add,
            "known_delete": self.m_known_delete,
            "add": self.m_add,
            "update": self.m_update,
            "delete": self.m_delete,
            "has_synced": self.m_has_synced,
            "close": self.m_close,
            "is_closed": self.m_is_closed,
        }

    def _new_group(self, entries: list[object]) -> None:
        if len(entries) > 1:
            self._next_group += 1
            for entry in entries:
                self.group[id(entry)] = self._next_group

    def call(self, method: str, args: dict[str, Any], actual: dict[str, Any] | None) -> Any:
        if method not in self.methods:
            raise ProtocolError("unsupported", f"this FIFO has no method {method!r}")
        return self.handlers[method](args, actual)

    def m_known_add(self, args: dict[str, Any], actual: Any) -> None:
        """The known-objects fixture (the indexer a DeltaFIFO consults) gains ``obj``."""
        self.known.update(_obj(args))

    def m_known_delete(self, args: dict[str, Any], actual: Any) -> None:
        self.known.delete(_obj(args))

    def m_add(self, args: dict[str, Any], actual: Any) -> None:
        self.fifo.add(_obj(args))

    def m_update(self, args: dict[str, Any], actual: Any) -> None:
        self.fifo.update(_obj(args))

    def m_delete(self, args: dict[str, Any], actual: Any) -> None:
        self.fifo.delete(_obj(args))

    def m_has_synced(self, args: dict[str, Any], actual: Any) -> bool:
        return self.fifo.has_synced()

    def m_close(self, args: dict[str, Any], actual: Any) -> None:
        self.fifo.close()

    def m_is_closed(self, args: dict[str, Any], actual: Any) -> bool:
        return self.fifo.closed

    def after_advance(self) -> None:
        pass

    def describe(self) -> str:
        return ""


class DeltaFIFOComponent(_FIFOComponent[DeltaFIFOCore]):
    """client-go ``NewDeltaFIFOWithOptions`` with the default key function."""

    methods = COMPONENTS["delta_fifo"]

    def __init__(self, options: dict[str, Any], parts: CacheParts) -> None:
        super().__init__()
        self.fifo = parts.delta_fifo(
            known_objects=self.known if options.get("known_objects", True) else None,
            emit_delta_type_replaced=bool(options.get("emit_delta_type_replaced", True)),
        )
        # Keys are str; tie groups are tracked per key, by value (see _mark).
        self.key_group: dict[str, int] = {}
        self.handlers |= {
            "replace": self.m_replace,
            "resync": self.m_resync,
            "pop_nowait": self.m_pop_nowait,
        }

    def _mark_new_keys(self, before: set[str], deterministic: set[str]) -> None:
        """Keys appended by the last call, except ``deterministic`` ones, came in Go map
        order: put them in one tie group."""
        new = [k for k in self.fifo.queue if k not in before and k not in deterministic]
        if len(new) > 1:
            self._next_group += 1
            for k in new:
                self.key_group[k] = self._next_group

    def m_replace(self, args: dict[str, Any], actual: Any) -> None:
        objs = _objs(args)
        before = set(self.fifo.queue)
        self.fifo.replace(objs, str(args.get("rv", "")))
        self._mark_new_keys(before, {self.fifo.key_of(o) for o in objs})

    def m_resync(self, args: dict[str, Any], actual: Any) -> None:
        before = set(self.fifo.queue)
        self.fifo.resync()
        self._mark_new_keys(before, set())

    def head_choices(self) -> list[str]:
        queue = self.fifo.queue
        if not queue:
            return []
        group = self.key_group.get(queue[0])
        if group is None:
            return [queue[0]]
        return [k for k in queue if self.key_group.get(k) == group]

    def m_pop_nowait(self, args: dict[str, Any], actual: Any) -> Any:
        wanted = _popped_key(actual)
        choices = self.head_choices()
        if wanted is not None and wanted in choices[1:]:
            self.fifo.queue.remove(wanted)
            self.fifo.queue.appendleft(wanted)
        try:
            key, deltas, initial = self.fifo.pop_ready()
        except WouldBlock:
            return {"kind": "empty"}
        except FIFOClosedError:
            return {"kind": "closed"}
        self.key_group.pop(key, None)
        return {"kind": "item", "deltas": [delta_json(d) for d in deltas], "initial": initial}

    def describe(self) -> str:
        shown = []
        for key in self.fifo.queue:
            types = ",".join(str(d.type) for d in self.fifo.items[key])
            shown.append(f"{key}:[{types}]")
        known = ",".join(sorted(self.known.list_keys()))
        return f"queue=[{' '.join(shown)}] known={{{known}}}" + (
            " closed" if self.fifo.closed else ""
        )


def _popped_key(actual: Any) -> str | None:
    if not isinstance(actual, dict):
        return None
    result = actual.get("result")
    if not isinstance(result, dict) or result.get("kind") != "item":
        return None
    deltas = result.get("deltas")
    if not isinstance(deltas, list) or not deltas or not isinstance(deltas[-1], dict):
        return None
    obj = deltas[-1].get("object")
    if isinstance(obj, dict) and "tombstone" in obj and isinstance(obj["tombstone"], dict):
        key = obj["tombstone"].get("key")
        return key if isinstance(key, str) else None
    if isinstance(obj, dict) and isinstance(obj.get("name"), str):
        ns = obj.get("namespace") or ""
        return f"{ns}/{obj['name']}" if ns else str(obj["name"])
    return None


class RealFIFOComponent(_FIFOComponent[RealFIFOCore]):
    """client-go ``NewRealFIFOWithOptions``: atomic (no known objects) or not."""

    methods = COMPONENTS["real_fifo"] + SPEC_METHODS["real_fifo"]

    def __init__(self, options: dict[str, Any], parts: CacheParts) -> None:
        super().__init__()
        #: pop_begin took an entry whose process function has not returned yet.
        self.taken = False
        #: A replace's tombstone of a queued key comes in the order that key was first
        #: queued (client-go the_real_fifo.go reconcileReplacement); when that order is
        #: an open one the adapter decides later, so is theirs. id(first queued entry)
        #: -> that key's tombstones (one per replace), and id(tombstone) -> the
        #: tombstones of its replace not yet placed.
        self.follower: dict[int, list[Delta]] = {}
        self.followers: dict[int, list[Delta]] = {}
        atomic = bool(options.get("atomic", False))
        self.fifo = parts.real_fifo(
            known_objects=None if atomic else self.known, atomic_events=atomic
        )
        self.handlers |= {
            "replace": self.m_replace,
            "resync": self.m_resync,
            "pop_nowait": self.m_pop_nowait,
            "pop_begin": self.m_pop_begin,
            "pop_end": self.m_pop_end,
            "pop_batch_nowait": self.m_pop_batch_nowait,
        }

    def _mark_new(self, before: int, keep: Callable[[Delta], bool]) -> None:
        new = list(self.fifo.items)[before:]
        self._new_group([d for d in new if keep(d)])

    def m_replace(self, args: dict[str, Any], actual: Any) -> None:
        objs = _objs(args)
        before = len(self.fifo.items)
        # Each queued key's first entry (the keys: those seen in the log).
        first: dict[str, Delta] = {}
        for d in self.fifo.items:
            if d.type in _KEYED:
                first.setdefault(self.fifo.key_of(d), d)
        self.fifo.replace(objs, str(args.get("rv", "")))
        if not self.fifo.atomic_events:
            self._link_tombstones(list(self.fifo.items)[before:], first)
        # Tombstones for known keys never seen in the log come in Go map order.
        self._mark_new(
            before,
            lambda d: d.type is DeltaType.DELETED and self.fifo.key_of(d) not in first,
        )

    def m_resync(self, args: dict[str, Any], actual: Any) -> None:
        before = len(self.fifo.items)
        self.fifo.resync()
        self._mark_new(before, lambda d: d.type is DeltaType.SYNC)

    def _link_tombstones(self, new: list[Delta], first: dict[str, Delta]) -> None:
        """Tie a replace's tombstones of queued keys to those keys' first entries when
        the order of those is still open (see ``follower``)."""
        tombs = [d for d in new if d.type is DeltaType.DELETED and self.fifo.key_of(d) in first]
        leaders = [first[self.fifo.key_of(d)] for d in tombs]
        if len(tombs) < 2 or not any(id(lead) in self.group for lead in leaders):
            return
        for lead, tomb in zip(leaders, tombs, strict=True):
            self.follower.setdefault(id(lead), []).append(tomb)
            self.followers[id(tomb)] = tombs

    def _leaving(self, entry: Delta) -> None:
        """``entry`` is taken: each tombstone it leads is the next of its replace's
        tombstones still queued (it moves to the first of their places)."""
        self.group.pop(id(entry), None)
        for tomb in self.follower.pop(id(entry), []):
            self._place(tomb)

    def _place(self, tomb: Delta) -> None:
        items = self.fifo.items
        unplaced = self.followers.pop(id(tomb), [])
        queued = {id(t) for t in unplaced}
        places = [i for i, d in enumerate(items) if id(d) in queued]
        here = next((i for i in places if items[i] is tomb), None)
        if here is not None and places[0] != here:
            items[places[0]], items[here] = items[here], items[places[0]]
        # Placed: the replace's later tombstones go after it.
        unplaced[:] = [t for t in unplaced if t is not tomb]

    def m_pop_nowait(self, args: dict[str, Any], actual: Any) -> Any:
        items = self.fifo.items
        if items and actual is not None and id(items[0]) in self.group:
            group = self.group[id(items[0])]
            wanted = actual.get("result", {}).get("deltas") if isinstance(actual, dict) else None
            for i, entry in enumerate(items):
                if self.group.get(id(entry)) != group:
                    continue
                if wanted == [delta_json(entry)] and i > 0:
                    del items[i]
                    items.appendleft(entry)
                    break
        answer = self._take()
        if answer.get("kind") == "item":
            self.fifo.finish(1)
        return answer

    def _take(self, batch: bool = False) -> dict[str, Any]:
        """Take one entry (a batch: ``take_batch``) and answer as pop_nowait; ``batch``
        when two or more were taken. Finishing is the caller's."""
        try:
            if batch:
                deltas, initial = self.fifo.take_batch()
            else:
                delta, initial = self.fifo.take_one()
                deltas = [delta]
        except WouldBlock:
            return {"kind": "empty"}
        except FIFOClosedError:
            return {"kind": "closed"}
        for delta in deltas:
            self._leaving(delta)
        kind = "item" if len(deltas) == 1 else "batch"
        return {"kind": kind, "deltas": [delta_json(d) for d in deltas], "initial": initial}

    # -- spec walks: Pop split where its process function runs
    def m_pop_begin(self, args: dict[str, Any], actual: Any) -> Any:
        """Pop up to its process function, which then waits for pop_end; answers as
        pop_nowait. Producers may call in between only in atomic mode (v1.36+ releases
        the lock while processing); otherwise they would block on the FIFO's lock."""
        if self.taken:
            raise ProtocolError("bad_request", "pop_begin while a pop_begin is unfinished")
        answer = self._take()
        self.taken = answer.get("kind") == "item"
        return answer

    def m_pop_end(self, args: dict[str, Any], actual: Any) -> None:
        """The process function returns and Pop finishes."""
        if not self.taken:
            raise ProtocolError("bad_request", "pop_end without an unfinished pop_begin")
        self.taken = False
        self.fifo.finish(1)

    def m_pop_batch_nowait(self, args: dict[str, Any], actual: Any) -> Any:
        """PopBatch with process functions that do nothing: a batch of two or more
        entries (``processBatch``), or one entry (``processSingle``), as pop_nowait."""
        if self.taken:
            raise ProtocolError("bad_request", "pop_batch_nowait while a pop_begin is unfinished")
        answer = self._take(batch=True)
        if "deltas" in answer:
            self.fifo.finish(len(answer["deltas"]))
        return answer

    def describe(self) -> str:
        shown = " ".join(f"{d.type}:{_short(d.object)}" for d in self.fifo.items)
        known = ",".join(sorted(self.known.list_keys()))
        return f"log=[{shown}] known={{{known}}}" + (" closed" if self.fifo.closed else "")


_KEYED = frozenset(
    {DeltaType.ADDED, DeltaType.UPDATED, DeltaType.DELETED, DeltaType.REPLACED, DeltaType.SYNC}
)


def _short(obj: object) -> str:
    if isinstance(obj, Object):
        return f"{deletion_handling_meta_namespace_key_func(obj)}@{obj.resource_version}"
    if isinstance(obj, DeletedFinalStateUnknown):
        return f"DFSU({obj.key})"
    return type(obj).__name__
