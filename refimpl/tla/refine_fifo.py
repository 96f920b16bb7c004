"""The refinement mappings from the FIFO code to spec/DeltaFIFOClose.tla and
spec/RealFIFOClose.tla (spec/DeltaFIFO.tla and spec/RealFIFO.tla with Close).

Owns no state; builds cores from spec states and reads them back. Objects map as::

    [key |-> k, rv |-> r, dfsu |-> FALSE]   Object(name=k, resource_version=str(r))
    [key |-> k, rv |-> r, dfsu |-> TRUE]    DeletedFinalStateUnknown(k, Object(k, str(r)))
    [key |-> k, rv |-> 0, dfsu |-> TRUE]    DeletedFinalStateUnknown(k, None)
    [type |-> t, obj |-> o]                 Delta(DeltaType(t), <o mapped>)
    store[k] = r (0: absent)                Indexer holding Object(k, str(r))

Both FIFOs::

    closed                  core.closed
    consumer                the caller's: "running", "waiting" (its pop found the core
                            unable to pop: WouldBlock) or "exited" (its pop raised
                            FIFOClosedError)
    Close                   core.close()
    Wait / Exit             the consumer's pop raising WouldBlock / FIFOClosedError
    producers               also wake a waiting consumer (the shell's broadcast)

DeltaFIFO (DeltaFIFOCore with ``known_objects=store``, ``emit_delta_type_replaced``)::

    queue                   tuple(core.queue)
    items[k]                core.items.get(k, [])
    populated, synced       core.populated, core.synced
    initialPopulationCount  core.initial_population_count
    Add(o) / Update(o) / Delete(o)   core.add / update / delete(<o>)
    Replace(l)              core.replace([<o> for o in l])
    Resync                  core.resync()
    Pop                     key, deltas, initial = core.pop_ready();
                            process_deltas(handler, store, deltas, initial)

RealFIFO (RealFIFOCore; ``atomic`` mode without ``known_objects``, else with
``known_objects=store``)::

    log                     tuple(core.items)
    processing              the entries taken and not yet finished (atomic mode), else <<>>
    populated, synced, initialPopulationCount   as above
    Add / Update / Delete / Replace / Resync    the core methods of the same name
    Pop (non-atomic)        d, initial = core.take_one(); process_deltas(...); core.finish(1)
    PopBatch (non-atomic)   ds, initial = core.take_batch() with two or more entries;
                            process_deltas_in_batch(...); core.finish(len(ds))
                            (a batch of one goes to the single path: the move Pop)
    Take (atomic)           d, initial = core.take_one()   (the shell unlocks here)
    TakeBatch (atomic)      core.take_batch() with two or more entries
    Process (atomic)        process_deltas / process_deltas_in_batch(..., taken, initial);
                            core.finish(len(taken))

Go's map order (which known key comes first in a relist's tombstones or a resync) is
any order in the specs; the mapping lets the store list its keys in every order, so
every order the code can produce is one code move.
"""

from __future__ import annotations

import functools
import itertools
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence

import attrs

from refimpl.blocking import WouldBlock
from refimpl.cache.delta_fifo import DeltaFIFOCore
from refimpl.cache.deltas import Delta, DeltaType, FIFOClosedError, ReplacedAllInfo, SyncAllInfo
from refimpl.cache.process_deltas import process_deltas, process_deltas_in_batch
from refimpl.cache.real_fifo import RealFIFOCore
from refimpl.cache.store import Indexer
from refimpl.meta import DeletedFinalStateUnknown, Object
from refimpl.tla.replay import Move
from refimpl.tla.values import Fn, Value

__all__ = [
    "DeltaFIFOMapping",
    "RealFIFOMapping",
    "delta_fifo_vars",
    "delta_from_spec",
    "delta_to_spec",
    "load_delta_fifo",
    "load_real_fifo",
    "object_from_spec",
    "object_to_spec",
    "real_fifo_vars",
    "relists",
]


def object_from_spec(value: Value) -> object:
    """A spec object or tombstone record as a code object."""
    if not isinstance(value, Fn):
        raise TypeError(f"not a spec object: {value!r}")
    key, rv, dfsu = str(value["key"]), value["rv"], value["dfsu"]
    if not isinstance(rv, int):
        raise TypeError(f"spec object rv should be an integer: {value!r}")
    if dfsu:
        return DeletedFinalStateUnknown(
            key, Object(name=key, resource_version=str(rv)) if rv else None
        )
    return Object(name=key, resource_version=str(rv))


def object_to_spec(obj: object) -> Value:
    """A code object or tombstone as a spec record (the inverse of the above)."""
    if isinstance(obj, DeletedFinalStateUnknown):
        inner = obj.obj
        rv = int(inner.resource_version) if inner is not None else 0
        return Fn({"key": obj.key, "rv": rv, "dfsu": True})
    if isinstance(obj, Object):
        return Fn({"key": obj.name, "rv": int(obj.resource_version), "dfsu": False})
    raise TypeError(f"no spec form for {type(obj).__name__}: {obj!r}")


def delta_from_spec(value: Value) -> Delta:
    if not isinstance(value, Fn):
        raise TypeError(f"not a spec delta: {value!r}")
    kind = DeltaType(str(value["type"]))
    payload = value["obj"]
    if kind is DeltaType.REPLACED_ALL:
        assert isinstance(payload, tuple)
        return Delta(kind, ReplacedAllInfo("", tuple(object_from_spec(o) for o in payload)))
    if kind is DeltaType.SYNC_ALL:
        return Delta(kind, SyncAllInfo())
    return Delta(kind, object_from_spec(payload))


def delta_to_spec(delta: Delta) -> Value:
    payload: Value
    if isinstance(delta.object, ReplacedAllInfo):
        payload = tuple(object_to_spec(o) for o in delta.object.objects)
    elif isinstance(delta.object, SyncAllInfo):
        payload = ()
    else:
        payload = object_to_spec(delta.object)
    return Fn({"type": str(delta.type), "obj": payload})


def store_from_spec(value: Value) -> Indexer:
    if not isinstance(value, Fn):
        raise TypeError(f"spec variable store should be a function, got {value!r}")
    store = Indexer()
    for key, rv in value.items():
        if rv:
            store.add(Object(name=str(key), resource_version=str(rv)))
    return store


def store_to_spec(store: Indexer, keys: Iterable[str]) -> Fn:
    out: dict[Value, Value] = {}
    for key in keys:
        obj, exists = store.get_by_key(key)
        out[key] = int(obj.resource_version) if exists and isinstance(obj, Object) else 0
    return Fn(out)


def _load_sync(core: DeltaFIFOCore | RealFIFOCore, state: Mapping[str, Value]) -> None:
    core.closed = bool(state.get("closed", False))
    core.populated = bool(state["populated"])
    count = state["initialPopulationCount"]
    if not isinstance(count, int):
        raise TypeError(f"spec variable initialPopulationCount should be an int: {count!r}")
    core.initial_population_count = count
    core.synced = bool(state["synced"])


def load_delta_fifo(
    core: DeltaFIFOCore,
    state: Mapping[str, Value],
    delta: Callable[[Value], Delta] = delta_from_spec,
) -> None:
    """Put ``core`` in the DeltaFIFO state named by the spec variables ``queue``,
    ``items``, ``populated``, ``initialPopulationCount`` and ``synced``; ``delta``
    makes a spec delta the code's."""
    queue = state["queue"]
    items = state["items"]
    if not isinstance(queue, tuple) or not isinstance(items, Fn):
        raise TypeError(f"spec variables queue/items malformed: {queue!r}, {items!r}")
    core.queue = deque(str(k) for k in queue)
    core.items = {
        str(k): [delta(d) for d in ds] for k, ds in items.items() if isinstance(ds, tuple) and ds
    }
    _load_sync(core, state)


def delta_fifo_vars(
    core: DeltaFIFOCore,
    keys: Iterable[str],
    spec: Callable[[Delta], Value] = delta_to_spec,
) -> dict[str, Value]:
    """The DeltaFIFO spec variables of ``core`` (the inverse of :func:`load_delta_fifo`);
    ``spec`` makes a delta the spec's."""
    items: dict[Value, Value] = {k: tuple(spec(d) for d in core.items.get(k, [])) for k in keys}
    return {
        "queue": tuple(core.queue),
        "items": Fn(items),
        "populated": core.populated,
        "initialPopulationCount": core.initial_population_count,
        "synced": core.synced,
    }


def load_real_fifo(
    core: RealFIFOCore,
    state: Mapping[str, Value],
    delta: Callable[[Value], Delta] = delta_from_spec,
) -> list[tuple[Delta, bool]]:
    """Put ``core`` in the RealFIFO state named by ``log``, ``populated``,
    ``initialPopulationCount`` and ``synced``; returns the entry ``processing`` names
    (taken by the caller, not held by the core), if any. ``delta`` makes a spec delta
    the code's."""
    log = state["log"]
    if not isinstance(log, tuple):
        raise TypeError(f"spec variable log should be a sequence: {log!r}")
    core.items = deque(delta(d) for d in log)
    _load_sync(core, state)
    taken: list[tuple[Delta, bool]] = []
    processing = state.get("processing", ())
    assert isinstance(processing, tuple)
    for entry in processing:
        assert isinstance(entry, Fn)
        taken.append((delta(entry["delta"]), bool(entry["initial"])))
    return taken


def real_fifo_vars(
    core: RealFIFOCore,
    taken: Sequence[tuple[Delta, bool]],
    spec: Callable[[Delta], Value] = delta_to_spec,
) -> dict[str, Value]:
    """The RealFIFO spec variables of ``core`` plus the taken entry (``processing``);
    ``spec`` makes a delta the spec's."""
    return {
        "log": tuple(spec(d) for d in core.items),
        "populated": core.populated,
        "initialPopulationCount": core.initial_population_count,
        "synced": core.synced,
        "processing": tuple(Fn({"delta": spec(d), "initial": i}) for d, i in taken),
    }


def relists(keys: Sequence[str], rvs: Sequence[int]) -> list[tuple[Fn, ...]]:
    """Every relist result of the model: objects with distinct keys, in any order
    (the spec's ``Lists``)."""
    out: list[tuple[Fn, ...]] = []
    for n in range(len(keys) + 1):
        for chosen in itertools.permutations(keys, n):
            for versions in itertools.product(rvs, repeat=n):
                out.append(
                    tuple(
                        Fn({"key": k, "rv": r, "dfsu": False})
                        for k, r in zip(chosen, versions, strict=True)
                    )
                )
    return out


def _with_consumer(
    queue_vars: Mapping[str, Value],
    store: Indexer,
    keys: Sequence[str],
    core: DeltaFIFOCore | RealFIFOCore,
    consumer: str,
) -> dict[str, Value]:
    """A FIFO spec's state: the queue's own variables, then the ones both FIFO specs
    add: ``store``, ``closed`` and ``consumer``."""
    return {
        **queue_vars,
        "store": store_to_spec(store, keys),
        "closed": core.closed,
        "consumer": consumer,
    }


@attrs.frozen
class _Ordered:
    """The store as ``known_objects``, listing its keys in a chosen order (Go's map
    order is unspecified; the spec allows every order)."""

    store: Indexer
    order: tuple[str, ...]

    def list_keys(self) -> list[str]:
        return list(self.order)

    def get_by_key(self, key: str) -> tuple[object | None, bool]:
        return self.store.get_by_key(key)


class _NullHandler:
    def on_add(self, obj: object, is_in_initial_list: bool) -> None:
        pass

    def on_update(self, old: object, new: object) -> None:
        pass

    def on_delete(self, obj: object) -> None:
        pass


def _key_orders(store: Indexer) -> list[tuple[str, ...]]:
    return list(itertools.permutations(sorted(store.list_keys())))


def _queued_deltas(state: Mapping[str, Value]) -> int:
    items = state["items"]
    assert isinstance(items, Fn)
    return sum(len(v) for v in items.values() if isinstance(v, tuple))


#: One producer call: the order of the known objects (None: the store's own), the
#: core's method and its arguments.
_Call = tuple[tuple[str, ...] | None, str, tuple[object, ...]]


@attrs.frozen
class DeltaFIFOMapping:
    """Callable for :func:`refimpl.tla.replay.replay` over a DeltaFIFO graph.

    ``keys``, ``rvs``, ``max_queued`` and ``emit_delta_type_replaced`` are the model's
    constants (MCDeltaFIFO.tla, MCDeltaFIFONoReplaced.tla); producer moves are made
    only while fewer than ``max_queued`` deltas are queued, as in the spec.
    ``factory`` builds the core under test.
    """

    keys: tuple[str, ...]
    rvs: tuple[int, ...]
    max_queued: int
    factory: Callable[..., DeltaFIFOCore] = DeltaFIFOCore
    emit_delta_type_replaced: bool = True

    def build(
        self, state: Mapping[str, Value], order: tuple[str, ...] | None = None
    ) -> tuple[DeltaFIFOCore, Indexer]:
        store = store_from_spec(state["store"])
        known = _Ordered(store, order if order is not None else tuple(store.list_keys()))
        core = self.factory(
            known_objects=known, emit_delta_type_replaced=self.emit_delta_type_replaced
        )
        load_delta_fifo(core, state)
        return core, store

    def spec_state(self, core: DeltaFIFOCore, store: Indexer, consumer: str) -> dict[str, Value]:
        return _with_consumer(delta_fifo_vars(core, self.keys), store, self.keys, core, consumer)

    def __call__(self, state: Mapping[str, Value]) -> Iterable[Move]:
        consumer = str(state["consumer"])
        moves = _producer_moves(
            self.keys,
            self.rvs,
            room=_queued_deltas(state) < self.max_queued,
            orders=lambda: _key_orders(self.build(state)[1]),
            called=functools.partial(self._called, state, _woken(consumer)),
        )
        if consumer == "running":
            core, store = self.build(state)
            try:
                _, deltas, initial = core.pop_ready()
            except WouldBlock:
                moves.append(Move("Wait", (), self.spec_state(core, store, "waiting")))
            except FIFOClosedError:
                moves.append(Move("Exit", (), self.spec_state(core, store, "exited")))
            else:
                process_deltas(_NullHandler(), store, deltas, initial)
                moves.append(Move("Pop", (), self.spec_state(core, store, consumer)))
        return moves

    def _called(self, state: Mapping[str, Value], consumer: str, call: _Call) -> dict[str, Value]:
        order, method, args = call
        core, store = self.build(state, order)
        getattr(core, method)(*args)
        return self.spec_state(core, store, consumer)


def _producer_moves(
    keys: Sequence[str],
    rvs: Sequence[int],
    *,
    room: bool,
    orders: Callable[[], Sequence[tuple[str, ...] | None]],
    called: Callable[[_Call], dict[str, Value]],
) -> list[Move]:
    """The producer's moves, the same for both FIFOs: while there is ``room``, Add /
    Update / Delete of every object, Replace with every relist and Resync (in every
    ``orders`` of the known objects); then Close."""
    moves: list[Move] = []
    objs = [Fn({"key": k, "rv": r, "dfsu": False}) for k in keys for r in rvs]
    if room:
        for o in objs:
            for action, method in (("Add", "add"), ("Update", "update"), ("Delete", "delete")):
                moves.append(Move(action, (o,), called((None, method, (object_from_spec(o),)))))
        known_orders = orders()
        for listed in relists(keys, rvs):
            for order in known_orders:
                listed_objs = [object_from_spec(o) for o in listed]
                moves.append(Move("Replace", (listed,), called((order, "replace", (listed_objs,)))))
        for order in known_orders:
            moves.append(Move("Resync", (), called((order, "resync", ()))))
    moves.append(Move("Close", (), called((None, "close", ()))))
    return moves


def _woken(consumer: str) -> str:
    """The consumer after a producer call or Close: the shell wakes a waiting pop."""
    return "running" if consumer == "waiting" else consumer


def _process(store: Indexer, taken: Sequence[tuple[Delta, bool]]) -> None:
    """Process what the consumer took: one entry as ``pop`` does, a batch as
    ``pop_batch`` does (one ``is_in_initial_list`` for the whole batch)."""
    deltas = [d for d, _ in taken]
    initial = taken[0][1]
    if len(deltas) == 1:
        process_deltas(_NullHandler(), store, deltas, initial)
    else:
        process_deltas_in_batch(_NullHandler(), store, deltas, initial)


@attrs.frozen
class RealFIFOMapping:
    """Callable for :func:`refimpl.tla.replay.replay` over a RealFIFO graph
    (MCRealFIFO.tla / MCRealFIFOAtomic.tla); ``atomic`` selects the mode."""

    keys: tuple[str, ...]
    rvs: tuple[int, ...]
    max_queued: int
    atomic: bool
    factory: Callable[..., RealFIFOCore] = RealFIFOCore

    def build(
        self, state: Mapping[str, Value], order: tuple[str, ...] | None = None
    ) -> tuple[RealFIFOCore, Indexer, list[tuple[Delta, bool]]]:
        store = store_from_spec(state["store"])
        if self.atomic:
            core = self.factory(atomic_events=True, unlock_while_processing=True)
        else:
            known = _Ordered(store, order if order is not None else tuple(store.list_keys()))
            core = self.factory(known_objects=known)
        return core, store, load_real_fifo(core, state)

    def spec_state(
        self,
        core: RealFIFOCore,
        store: Indexer,
        taken: Sequence[tuple[Delta, bool]],
        consumer: str,
    ) -> dict[str, Value]:
        return _with_consumer(real_fifo_vars(core, taken), store, self.keys, core, consumer)

    def __call__(self, state: Mapping[str, Value]) -> Iterable[Move]:
        consumer = str(state["consumer"])
        log = state["log"]
        assert isinstance(log, tuple)
        moves = _producer_moves(
            self.keys,
            self.rvs,
            room=len(log) < self.max_queued,
            orders=lambda: [None] if self.atomic else _key_orders(self.build(state)[1]),
            called=functools.partial(self._called, state, _woken(consumer)),
        )
        core, store, taken = self.build(state)
        if taken:
            # Atomic: the taken entries are processed, then the bookkeeping.
            _process(store, taken)
            core.finish(len(taken))
            moves.append(Move("Process", (), self.spec_state(core, store, [], consumer)))
            return moves
        if consumer != "running":
            return moves
        try:
            one = core.take_one()
        except WouldBlock:
            moves.append(Move("Wait", (), self.spec_state(core, store, taken, "waiting")))
            return moves
        except FIFOClosedError:
            moves.append(Move("Exit", (), self.spec_state(core, store, taken, "exited")))
            return moves
        moves.append(self._consume("Pop", "Take", core, store, [one]))
        core, store, taken = self.build(state)
        batch, initial = core.take_batch()
        if len(batch) >= 2:
            entries = [(d, initial) for d in batch]
            moves.append(self._consume("PopBatch", "TakeBatch", core, store, entries))
        return moves

    def _called(self, state: Mapping[str, Value], consumer: str, call: _Call) -> dict[str, Value]:
        order, method, args = call
        core, store, taken = self.build(state, order)
        getattr(core, method)(*args)
        return self.spec_state(core, store, taken, consumer)

    def _consume(
        self,
        whole: str,
        take: str,
        core: RealFIFOCore,
        store: Indexer,
        entries: list[tuple[Delta, bool]],
    ) -> Move:
        """The move after taking ``entries``: in atomic mode only the take (the shell
        unlocks while processing); otherwise processing and finishing too, one step
        under the lock."""
        if self.atomic:
            return Move(take, (), self.spec_state(core, store, entries, "running"))
        _process(store, entries)
        core.finish(len(entries))
        return Move(whole, (), self.spec_state(core, store, [], "running"))
