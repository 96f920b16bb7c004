"""Trace validation against spec/DeltaFIFO.tla and spec/RealFIFO.tla (through
spec/trace/DeltaFIFOTrace.tla and RealFIFOTrace.tla): the mapping of the simulator's
FIFO and store fields. Owns no state; see refimpl/tla/trace.py for the mapping table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from refimpl.sim.trace_schema import TraceRecord, require
from refimpl.tla.trace_core import (
    StepRule,
    TraceLine,
    TraceMapping,
    _as_fn,
    _as_seq,
    _int,
    _str,
    _where,
    trace_lines,
)
from refimpl.tla.values import Fn, Value

__all__ = ["DELTA_STEPS", "REAL_STEPS", "map_delta_fifo", "map_real_fifo"]


def _head_deltas(state: Mapping[str, Value]) -> int:
    """How many deltas the head key of a (mapped) DeltaFIFO state holds."""
    queue = _as_seq(state["queue"])
    if not queue:
        return 0
    items = _as_fn(state["items"])
    return len(_as_seq(items[queue[0]])) if queue[0] in items else 0


DELTA_STEPS: dict[str, StepRule] = {
    # One reflector step hands one event, one relist or one resync to the FIFO.
    "reflector": (
        frozenset({"Add", "Update", "Delete", "Replace", "Resync"}),
        lambda s: 1,
    ),
    # Pop hands out one key's deltas and process_deltas applies them to the store.
    "pop": (frozenset({"Pop"}), lambda s: 1),
}

REAL_STEPS: dict[str, StepRule] = {
    "reflector": (
        frozenset({"Add", "Update", "Delete", "Replace", "Resync"}),
        lambda s: 1,
    ),
    # A batch pops up to every queued entry: Take and Process each (atomic), or Pop.
    "pop": (frozenset({"Pop", "Take", "Process"}), lambda s: 2 * len(_as_seq(s["log"]))),
}


def _obj(key: str, rv: int, dfsu: bool) -> Fn:
    return Fn({"key": key, "rv": rv, "dfsu": dfsu})


_DELTA_TYPES = ("Added", "Updated", "Deleted", "Replaced", "Sync")


def _delta(value: Any, key: str, where: str) -> Fn:
    if (
        not isinstance(value, list)
        or len(value) != 3
        or not isinstance(value[0], str)
        or not isinstance(value[1], str)
    ):
        raise ValueError(f"{where}: expected a delta [type, key, rv], got {value!r}")
    kind, dkey, rv = value
    dfsu = kind.endswith("(DFSU)")
    kind = kind.removesuffix("(DFSU)")
    if kind not in _DELTA_TYPES or (dfsu and kind != "Deleted"):
        raise ValueError(f"{where}: delta type {value[0]!r} is not one DeltaFIFO.tla models")
    if dkey != key:
        raise ValueError(f"{where}: a delta for {dkey!r} is queued under {key!r}")
    rv = _int(rv, f"{where}: rv")
    if rv == 0 and not dfsu:
        raise ValueError(f"{where}: an object without a resourceVersion: {value!r}")
    return Fn({"type": kind, "obj": _obj(key, rv, dfsu)})


def _fifo_state(raw: TraceRecord, where: str) -> dict[str, Value]:
    require(raw, ("fifo", "store", "synced"), where, "no informer state")
    queue: list[Value] = []
    items: dict[Value, Value] = {}
    # The schema leaves the FIFO's entries to the mapping: a DeltaFIFO's and a
    # RealFIFO's differ in shape (refimpl/sim/informer.py delta_state).
    for entry in raw["fifo"]:
        if (
            isinstance(entry, list)
            and len(entry) == 2
            and isinstance(entry[0], str)
            and isinstance(entry[1], list)
        ):
            key = entry[0]
            if key in items:
                raise ValueError(f"{where}: key {key!r} queued twice")
            if not entry[1]:
                raise ValueError(f"{where}: key {key!r} queued with no deltas")
            queue.append(key)
            items[key] = tuple(_delta(d, key, f"{where}: fifo[{key}]") for d in entry[1])
        else:
            raise ValueError(
                f"{where}: fifo entry {entry!r} is not [key, deltas]: this looks like a "
                "RealFIFO log; check it against DeltaFIFO by running the simulator with "
                "--fifo delta (RealFIFO traces are not supported: see refimpl/tla/trace.py)"
            )
    stored: dict[Value, Value] = {}
    for key, rv in raw["store"].items():
        if rv == 0:
            raise ValueError(f"{where}: store[{key}]: a stored object without a resourceVersion")
        stored[key] = rv
    return {
        "queue": tuple(queue),
        "items": Fn(items),
        "store": Fn(stored),
        "synced": raw["synced"],
    }


_FIFO_INIT: dict[str, Value] = {"queue": (), "items": Fn(), "store": Fn(), "synced": False}


def _fifo_hints(
    before: Mapping[str, Value], after: Mapping[str, Value]
) -> tuple[tuple[Value, ...] | None, tuple[Value, ...]]:
    """What a producer step shows of its choices: the relist result, if Replaced deltas
    were appended (keys newly queued, in queue order, first), and the order of the keys
    queued in Go's map order: those a relist newly tombstoned, or all those a resync
    (or a single event) newly queued."""
    old_queue, new_queue = _as_seq(before["queue"]), _as_seq(after["queue"])
    old_items, new_items = _as_fn(before["items"]), _as_fn(after["items"])
    appended = tuple(k for k in new_queue if k not in old_queue)
    listed: dict[Value, Value] = {}
    for key, value in new_items.items():
        deltas = _as_seq(value)
        old = _as_seq(old_items[key]) if key in old_items else ()
        last = _as_fn(deltas[-1])
        if len(deltas) == len(old) + 1 and deltas[:-1] == old and last["type"] == "Replaced":
            listed[key] = last["obj"]
    if not listed:
        return None, appended
    first = [listed[k] for k in appended if k in listed]
    rest = [listed[k] for k in sorted(listed, key=str) if k not in appended]
    return tuple(first + rest), tuple(k for k in appended if k not in listed)


def map_delta_fifo(raws: Sequence[TraceRecord]) -> TraceMapping:
    states = [_fifo_state(raw, _where(n, raw)) for n, raw in enumerate(raws, 1)]
    seen = _Seen()
    longest = 0
    for s in states:
        items, store = _as_fn(s["items"]), _as_fn(s["store"])
        seen.keys.update(items)
        longest = max(longest, sum(len(_as_seq(v)) for v in items.values()))
        for value in items.values():
            for d in _as_seq(value):
                seen.queued(_as_fn(_as_fn(d)["obj"]))
        seen.stored(store)
    lines: list[TraceLine] = []
    orders: set[Value] = set()
    for line, _, lists, order in _relist_lines(DELTA_STEPS, raws, states, _FIFO_INIT, _fifo_hints):
        if order is not None:
            _add_order(orders, order)
        lines.append(attrs.evolve(line, hints={"lists": frozenset(lists)}))
    return _fifo_mapping(
        "DeltaFIFO",
        lines,
        _FIFO_INIT,
        seen,
        orders,
        max_queued={"TraceMaxQueued": longest + 1},
        # The simulator's informers run with the option on (client-go 1.18+).
        constants=("MaxQueued <- TraceMaxQueued", "EmitDeltaTypeReplaced = TRUE"),
    )


# -- what both FIFO mappings share --------------------------------------------------------


@attrs.define
class _Seen:
    """What a FIFO trace shows: its keys, its rvs and its objects (the TLC model's
    ``Keys``, ``RVs`` and ``TraceObjsIn``)."""

    keys: set[Value] = attrs.Factory(set)
    rvs: set[Value] = attrs.Factory(set)
    objs: set[Value] = attrs.Factory(set)

    def queued(self, obj: Fn) -> None:
        """An object in a queued delta (a tombstone is no object of its own)."""
        if obj["rv"] != 0:
            self.rvs.add(obj["rv"])
        if not obj["dfsu"]:
            self.objs.add(obj)

    def stored(self, store: Fn) -> None:
        for key, rv in store.items():
            assert isinstance(key, str) and isinstance(rv, int)
            self.keys.add(key)
            self.rvs.add(rv)
            self.objs.add(_obj(key, rv, False))


def _relists(listed: Value | None) -> set[Value]:
    """The lists a Replace line may have listed: nothing, or what the line shows."""
    return {()} if listed is None else {(), listed}


_Hints = Callable[
    [Mapping[str, Value], Mapping[str, Value]], tuple[tuple[Value, ...] | None, tuple[Value, ...]]
]


def _relist_lines(
    steps: Mapping[str, StepRule],
    raws: Sequence[TraceRecord],
    states: Sequence[Mapping[str, Value]],
    initial: Mapping[str, Value],
    hints: _Hints,
) -> Iterator[tuple[TraceLine, Mapping[str, Value], set[Value], tuple[Value, ...] | None]]:
    """Each mapped line (see :func:`trace_lines`) with the state before it and, for a
    line with a Replace, the lists it may have listed and the key order ``hints`` reads
    from it (no lists and ``None`` for any other line)."""
    previous = initial
    for line in trace_lines(steps, raws, states, initial):
        # A relist of nothing is always possible; one of something shows in the line.
        lists: set[Value] = set()
        order: tuple[Value, ...] | None = None
        if "Replace" in line.acts:
            listed, order = hints(previous, line.state)
            lists = _relists(listed)
        yield line, previous, lists, order
        previous = line.state


def _add_order(orders: set[Value], order: tuple[Value, ...]) -> None:
    if len(order) > 3:  # TraceOrders tries every order of up to 3 keys
        orders.add(order)


def _fifo_mapping(
    spec: str,
    lines: list[TraceLine],
    initial: Mapping[str, Value],
    seen: _Seen,
    orders: set[Value],
    *,
    max_queued: Mapping[str, Value],
    constants: tuple[str, ...],
) -> TraceMapping:
    """The mapping of a FIFO trace: ``max_queued`` is the definition of the queue bound
    (if the trace sets it), ``constants`` the spec's own constants' substitutions."""
    return TraceMapping(
        spec=spec,
        lines=tuple(lines),
        initial=initial,
        definitions={
            "TraceKeys": frozenset(seen.keys),
            "TraceRVs": frozenset(seen.rvs) or frozenset({1}),
            **max_queued,
            "TraceObjData": frozenset(seen.objs),
            "TraceOrderData": frozenset(orders),
        },
        substitutions=(
            "Keys <- TraceKeys",
            "RVs <- TraceRVs",
            *constants,
            "Orders <- TraceOrders",
            "ProducerMayRun <- Unbounded",
            "TraceObjsIn <- TraceObjData",
            "OrderHintsIn <- TraceOrderData",
            "TraceIn <- TraceData",
        ),
    )


# -- the RealFIFO -------------------------------------------------------------------------


def _real_entry(value: Any, where: str) -> Fn | None:
    """One RealFIFO log entry as RealFIFO.tla's Delta; None for a Bookmark."""
    if isinstance(value, list) and value and value[0] == "Bookmark":
        return None
    if isinstance(value, list) and value == ["SyncAll"]:
        return Fn({"type": "SyncAll", "obj": ()})
    if isinstance(value, list) and len(value) == 3 and value[0] == "ReplacedAll":
        listed = value[2]
        if not isinstance(listed, list):
            raise ValueError(
                f"{where}: a ReplacedAll entry without its listed objects ({value!r}); "
                "traces from before the listed objects were rendered cannot be checked"
            )
        objs: list[Value] = []
        for item in listed:
            if not isinstance(item, list) or len(item) != 2:
                raise ValueError(f"{where}: listed object {item!r} is not [key, rv]")
            key = _str(item[0], f"{where}: ReplacedAll")
            rv = _int(item[1], f"{where}: ReplacedAll[{key}]")
            if rv == 0:
                raise ValueError(f"{where}: listed object {key!r} without a resourceVersion")
            objs.append(_obj(key, rv, False))
        if len({_as_fn(o)["key"] for o in objs}) != len(objs):
            raise ValueError(f"{where}: a ReplacedAll entry lists a key twice: {value!r}")
        return Fn({"type": "ReplacedAll", "obj": tuple(objs)})
    if isinstance(value, list) and len(value) == 3 and isinstance(value[1], str):
        return _delta(value, value[1], where)
    raise ValueError(
        f"{where}: fifo entry {value!r} is not a RealFIFO log entry: a DeltaFIFO trace "
        "(--fifo delta) is checked with --spec DeltaFIFO"
    )


def _real_state(raw: TraceRecord, where: str) -> dict[str, Value]:
    base = _fifo_state({**raw, "fifo": []}, where)  # store and synced, checked
    entries = [_real_entry(e, f"{where}: fifo[{n}]") for n, e in enumerate(raw["fifo"])]
    return {
        "log": tuple(e for e in entries if e is not None),
        "processing": (),
        "store": base["store"],
        "synced": base["synced"],
    }


_REAL_INIT: dict[str, Value] = {"log": (), "processing": (), "store": Fn(), "synced": False}

_ATOMIC_ONLY = frozenset({"ReplacedAll", "SyncAll"})
_NON_ATOMIC_ONLY = frozenset({"Replaced", "Sync"})


def _is_atomic(states: Sequence[Mapping[str, Value]]) -> bool:
    """Atomic unless the log shows a per-object relist or resync (Replaced, Sync, a
    tombstone); the two modes differ in nothing else a trace shows."""
    kinds: set[Value] = set()
    for s in states:
        for d in _as_seq(s["log"]):
            entry = _as_fn(d)
            kinds.add(entry["type"])
            obj = entry["obj"]
            if isinstance(obj, Fn) and obj["dfsu"]:
                kinds.add("Replaced")
    if kinds & _ATOMIC_ONLY and kinds & _NON_ATOMIC_ONLY:
        raise ValueError("the trace mixes atomic (ReplacedAll, SyncAll) and per-object entries")
    return not kinds & _NON_ATOMIC_ONLY


def _real_hints(
    before: Mapping[str, Value], after: Mapping[str, Value]
) -> tuple[tuple[Value, ...] | None, tuple[Value, ...]]:
    """What a producer step appended: the relist result (a ReplacedAll's list, or the
    objects of the Replaced entries at the tail), and the keys it tombstoned or synced
    in order (Go's map order)."""
    old, new = _as_seq(before["log"]), _as_seq(after["log"])
    if new[: len(old)] != old:
        return None, ()
    appended = [_as_fn(d) for d in new[len(old) :]]
    if len(appended) == 1 and appended[0]["type"] == "ReplacedAll":
        return _as_seq(appended[0]["obj"]), ()
    replaced = [d["obj"] for d in appended if d["type"] == "Replaced"]
    order = tuple(_as_fn(d["obj"])["key"] for d in appended if d["type"] in ("Deleted", "Sync"))
    return (tuple(replaced) if replaced else None), order


def _gone_order(before: Mapping[str, Value], listed: Sequence[Value]) -> tuple[Value, ...]:
    """RealFIFO.tla's ``byFirst`` for a non-atomic relist of ``listed``: the logged keys
    not listed whose last entry is not a delete, in the order they were first logged."""
    names = {_as_fn(o)["key"] for o in listed}
    first: list[Value] = []
    last: dict[Value, Value] = {}
    for d in _as_seq(before["log"]):
        entry = _as_fn(d)
        obj = entry["obj"]
        if isinstance(obj, Fn):
            if obj["key"] not in last:
                first.append(obj["key"])
            last[obj["key"]] = entry["type"]
    return tuple(k for k in first if k not in names and last[k] != "Deleted")


def map_real_fifo(raws: Sequence[TraceRecord], atomic: bool | None) -> TraceMapping:
    states = [_real_state(raw, _where(n, raw)) for n, raw in enumerate(raws, 1)]
    if atomic is None:
        atomic = _is_atomic(states)
    seen = _Seen()
    for s in states:
        for d in _as_seq(s["log"]):
            obj = _as_fn(d)["obj"]
            for o in _as_seq(obj) if isinstance(obj, tuple) else (obj,):
                o = _as_fn(o)
                seen.keys.add(o["key"])
                seen.queued(o)
        seen.stored(_as_fn(s["store"]))
    lines: list[TraceLine] = []
    orders: set[Value] = set()
    steps = _relist_lines(REAL_STEPS, raws, states, _REAL_INIT, _real_hints)
    for line, previous, lists, order in steps:
        if order is not None:
            # A relist's tombstones are two orders: logged keys, then stored ones.
            for cut in range(len(order) + 1):
                for part in (order[:cut], order[cut:]):
                    _add_order(orders, part)
            if not atomic:  # the order ReconciledEntries CHOOSEs, for every list tried
                for listed_objs in lists:
                    _add_order(orders, _gone_order(previous, _as_seq(listed_objs)))
        # Atomic: Take and Process per entry; else one Pop per entry (half the budget).
        acts = line.acts - ({"Pop"} if atomic else {"Take", "Process"})
        budget = line.budget // 2 if not atomic and "Pop" in line.acts else line.budget
        lines.append(
            attrs.evolve(
                line,
                acts=acts if budget else frozenset(),
                budget=budget,
                hints={"lists": frozenset(lists)},
            )
        )
    return _fifo_mapping(
        "RealFIFO",
        lines,
        _REAL_INIT,
        seen,
        orders,
        max_queued={},
        constants=("MaxQueued = 1", f"Atomic = {'TRUE' if atomic else 'FALSE'}"),
    )
