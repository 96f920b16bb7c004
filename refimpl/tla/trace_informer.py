"""Trace validation against spec/Informer.tla and spec/InformerAtomic.tla (through
spec/trace/InformerTrace.tla and InformerAtomicTrace.tla): the mapping of the
simulator's whole-informer fields, the code steps inside a simulator step, and which
scenarios the specs can follow. Owns no state; see refimpl/tla/trace.py for the
mapping table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from refimpl.sim.trace_schema import (
    Answer,
    NoteRecord,
    ReflectorRecord,
    TraceRecord,
    WriteRecord,
    require,
)
from refimpl.tla.refine_informer_parts import shift_rvs
from refimpl.tla.trace_core import (
    StepRule,
    TraceLine,
    TraceMapping,
    _as_fn,
    _as_seq,
    _where,
    trace_lines,
)
from refimpl.tla.trace_fifo import (
    _FIFO_INIT,
    _NON_ATOMIC_ONLY,
    _REAL_INIT,
    _fifo_hints,
    _fifo_state,
    _head_deltas,
    _real_hints,
    _real_state,
)
from refimpl.tla.values import Fn, Value

__all__ = [
    "INFORMER_FAULTS",
    "INFORMER_SPECS",
    "STEPS",
    "SUB_STEPS",
    "checked_informer_lines",
    "informer_scenario_problems",
    "map_informer",
]

#: The specs of a whole informer: their traces need the simulator's ``spec`` fields.
INFORMER_SPECS = ("Informer", "InformerAtomic")


def _entry_steps(state: Mapping[str, Value]) -> int:
    """An upper bound on the spec steps processing every logged entry of an atomic
    RealFIFO state takes: Take, ApplyEntry and Finish each, plus one Distribute per
    handler call (a ReplacedAll: one per listed object and per deletion, at most the
    stored keys and the keys earlier entries added)."""
    log = _as_seq(state["log"])
    stored = len(_as_fn(state["store"]))
    steps = 0
    for entry in log:
        delta = _as_fn(entry)
        calls = 1
        if delta["type"] == "ReplacedAll":
            calls = len(_as_seq(delta["obj"])) + stored + len(log)
        steps += 3 + calls
    return steps


#: Informer specs: besides these, a line may take one Write per server write it shows
#: (history growth; the first line's include the scenario's initial objects too).
STEPS: dict[str, dict[str, StepRule]] = {
    "Informer": {
        # Resume the reflector loop to its next park point: a list and the open of its
        # watch (List, Connect), one watch event, a dropped watch and its re-watch
        # (WatchDrop, Connect), or the 410 answer to a watch request (Connect).
        "reflector": (frozenset({"List", "Connect", "WatchEvent", "WatchDrop"}), lambda s: 2),
        # process_next: pop one key's deltas, then per delta the store write and the
        # handler call (Pop, then StoreWrite and Distribute per delta).
        "pop": (frozenset({"Pop", "StoreWrite", "Distribute"}), lambda s: 1 + 2 * _head_deltas(s)),
        # One listener hands one notification to its handler (h0: Handle).
        "dispatch": (frozenset({"Handle"}), lambda s: 1),
        "compact": (frozenset({"Compact"}), lambda s: 1),
    },
    "InformerAtomic": {
        "reflector": (frozenset({"List", "Connect", "WatchEvent", "WatchDrop"}), lambda s: 2),
        # A batch, per entry: Take, ApplyEntry, a Distribute per handler call, Finish.
        "pop": (frozenset({"Take", "ApplyEntry", "Distribute", "Finish"}), _entry_steps),
        "dispatch": (frozenset({"Handle"}), lambda s: 1),
        "compact": (frozenset({"Compact"}), lambda s: 1),
    },
}


#: The code steps inside a simulator step (a line's ``sub``, recorded by the cores'
#: tracing hooks with spec traces) and the one spec action each is, per Informer spec.
#: Each such line takes exactly that one step; the simulator step's own line after
#: them takes none. The other specs check whole simulator steps: they drop these lines.
SUB_STEPS: dict[str, dict[str, str]] = {
    "Informer": {"popped": "Pop", "store-write": "StoreWrite", "distributed": "Distribute"},
    "InformerAtomic": {
        "taken": "Take",
        "store-write": "ApplyEntry",
        "distributed": "Distribute",
        "finished": "Finish",
    },
}

#: What the reflector got from the server in a step (``spec.answers``), each one spec
#: step it must take: a list handed to the FIFO (List), a watch opened (Connect), a
#: refused watch's 410 read (Connect), an open watch's end read (WatchDrop).
_ANSWERS = frozenset({"listed", "opened", "gone", "ended"})

# -- the informer -------------------------------------------------------------------------

_PHASES = ("list", "connect", "watch")
_WRITES = ("ADDED", "MODIFIED", "DELETED")
#: The simulator's notification kinds as the specs' (a tombstone's delete is a delete).
_NOTES = {"add": "add", "update": "update", "delete": "delete", "deleteDFSU": "delete"}


def _spec_rv(rv: int, what: str, *, absent: bool = False) -> int:
    """A server resourceVersion as the Informer specs number it: the code's server
    starts at 1 and its first write is 2, the specs' history at 0, so ``code = spec +
    1`` (as in refimpl/tla/refine_informer_state.py). With ``absent``, 0 ("no object") stays 0."""
    if rv == 0 and absent:
        return 0
    if rv < 2:
        raise ValueError(f"{what}: resourceVersion {rv} belongs to no write (the first is 2)")
    return rv - 1


def _rv_fn(value: Mapping[str, int], what: str, *, absent: bool = False) -> Fn:
    """An object key -> rv map as a partial spec map (entries that map to 0 dropped)."""
    out: dict[Value, Value] = {}
    for key, rv in value.items():
        spec_rv = _spec_rv(rv, f"{what}[{key}]", absent=absent)
        if spec_rv:
            out[key] = spec_rv
    return Fn(out)


def _write(value: WriteRecord, what: str) -> Fn:
    kind, key, rv = value
    if kind not in _WRITES:
        raise ValueError(f"{what}: expected [ADDED|MODIFIED|DELETED, key, rv], got {value!r}")
    return Fn({"type": kind, "key": key, "rv": _spec_rv(rv, f"{what}: rv")})


def _notification(value: NoteRecord, what: str) -> Fn:
    if value[0] not in _NOTES:
        raise ValueError(f"{what}: expected a notification [kind, key, rv], got {value!r}")
    kind = _NOTES[value[0]]
    rv = _spec_rv(value[2], f"{what}: rv", absent=kind == "delete")
    return Fn({"type": kind, "key": value[1], "rv": rv})


def _last_sync(reflector: ReflectorRecord, what: str) -> int:
    last = reflector["lastSyncRV"]
    if not (last == "" or last.isdigit()):
        raise ValueError(f"{what}: expected {{lastSyncRV: a resourceVersion}}, got {reflector!r}")
    return 0 if last == "" else _spec_rv(int(last), f"{what}: lastSyncRV")


def _informer_fifo(raw: TraceRecord, where: str, atomic: bool) -> dict[str, Value]:
    """The FIFO variables, the store and synced of either spec, in spec rvs."""
    try:
        return _informer_fifo_state(raw, where, atomic)
    except ValueError as err:
        raise ValueError(
            f"{err} (the Informer specs: Informer.tla needs --fifo delta, "
            "InformerAtomic.tla --fifo real-atomic)"
        ) from None


def _informer_fifo_state(raw: TraceRecord, where: str, atomic: bool) -> dict[str, Value]:
    if atomic:
        fifo = _real_state(raw, where)
        log = [_as_fn(d) for d in _as_seq(fifo["log"])]
        tombs = [d for d in log if isinstance(d["obj"], Fn) and d["obj"]["dfsu"] is True]
        if tombs or any(d["type"] in _NON_ATOMIC_ONLY for d in log):
            raise ValueError(
                f"{where}: the FIFO holds per-object relist entries; InformerAtomic.tla "
                "models an atomic RealFIFO (--fifo real-atomic)"
            )
        fifo["log"] = shift_rvs(fifo["log"], -1)
    else:
        fifo = _fifo_state(raw, where)
        fifo["items"] = shift_rvs(fifo["items"], -1)
    fifo["store"] = Fn({k: _spec_rv(rv, f"{where}: store[{k}]") for k, rv in raw["store"].items()})
    return fifo


def _informer_state(raw: TraceRecord, where: str, atomic: bool) -> dict[str, Value]:
    if "spec" not in raw:
        raise ValueError(
            f"{where}: no spec fields (the server's history, the reflector's phase, the "
            "handler's view): run the simulator with spec_trace=True, as the "
            "informer-spec scenario does"
        )
    spec = raw["spec"]
    require(raw, ("server", "compactedRV", "reflector", "pending"), where, "no informer state")
    phase = spec["phase"]
    if phase not in _PHASES:
        raise ValueError(
            f"{where}: the reflector is at {phase!r}, which the Informer specs do not "
            f"model (they have {', '.join(_PHASES)})"
        )
    history, pending, listener = spec["history"], raw["pending"], spec["listener"]
    if listener not in pending:
        raise ValueError(f"{where}: pending: no notifications of listener {listener!r}")
    compacted = raw["compactedRV"]
    return {
        "server": _rv_fn(raw["server"], f"{where}: server"),
        "history": tuple(_write(w, f"{where}: spec.history[{n}]") for n, w in enumerate(history)),
        # The server starts "compacted" at 1, the rv of the empty server.
        "compacted": 0 if compacted <= 1 else _spec_rv(compacted, f"{where}: compactedRV"),
        "reflector": phase,
        "lastSyncRV": _last_sync(raw["reflector"], f"{where}: reflector"),
        **_informer_fifo(raw, where, atomic),
        # The FIFO's own HasSynced where the line has it (a DeltaFIFO's flips at Pop).
        **({"synced": spec["fifoSynced"]} if "fifoSynced" in spec else {}),
        "notifications": tuple(
            _notification(n, f"{where}: pending[{listener}]") for n in pending[listener]
        ),
        "view": _rv_fn(spec["view"], f"{where}: spec.view"),
        "lastRV": _rv_fn(spec["lastRV"], f"{where}: spec.lastRV", absent=True),
    }


def _informer_init(atomic: bool) -> dict[str, Value]:
    fifo: dict[str, Value] = dict(_REAL_INIT if atomic else _FIFO_INIT)
    return {
        "server": Fn(),
        "history": (),
        "compacted": 0,
        "reflector": "list",
        "lastSyncRV": 0,
        **fifo,
        "notifications": (),
        "view": Fn(),
        "lastRV": Fn(),
    }


def _informer_keys(state: Mapping[str, Value]) -> set[Value]:
    keys: set[Value] = set()
    for name in ("server", "store", "view", "lastRV"):
        keys.update(_as_fn(state[name]))
    for name in ("history", "notifications"):
        keys.update(_as_fn(e)["key"] for e in _as_seq(state[name]))
    if "items" in state:
        keys.update(_as_fn(state["items"]))
    for d in _as_seq(state.get("log", ())):
        obj = _as_fn(d)["obj"]
        keys.update(_as_fn(o)["key"] for o in (_as_seq(obj) if isinstance(obj, tuple) else (obj,)))
    return keys


def _queued(state: Mapping[str, Value]) -> int:
    if "log" in state:
        return len(_as_seq(state["log"]))
    return sum(len(_as_seq(ds)) for ds in _as_fn(state["items"]).values())


def _appended(before: Value, after: Value) -> tuple[Value, ...]:
    old, new = _as_seq(before), _as_seq(after)
    return new[len(old) :] if new[: len(old)] == old else ()


def _informer_hints(
    before: Mapping[str, Value], after: Mapping[str, Value], acts: frozenset[str], atomic: bool
) -> set[Value]:
    """The orders a line shows, for TraceOrders (sets of more than 3 elements): the
    relist's list and the keys it tombstoned in map order; for an atomic pop, the keys
    it notified deletes for in a row (a ReplacedAll's deletions, in map order)."""
    shown: list[tuple[Value, ...]] = []
    if "List" in acts:
        listed, order = (_real_hints if atomic else _fifo_hints)(before, after)
        shown += [order] + ([listed] if listed is not None else [])
    if "ApplyEntry" in acts:
        run: list[Value] = []
        for note in (*_appended(before["notifications"], after["notifications"]), None):
            if note is not None and _as_fn(note)["type"] == "delete":
                run.append(_as_fn(note)["key"])
                continue
            shown += [tuple(run[a:b]) for a in range(len(run)) for b in range(a + 4, len(run) + 1)]
            run = []
    return {order for order in shown if len(order) > 3}


def _informer_module_state(state: Mapping[str, Value]) -> Mapping[str, Value]:
    return {**state, "history": len(_as_seq(state["history"]))}


def _answers(raw: TraceRecord) -> list[Answer]:
    return raw["spec"].get("answers", []) if "spec" in raw else []


def _fine_steps(raws: Sequence[TraceRecord], spec: str) -> dict[tuple[int, int | None], bool]:
    """(generation, step) -> whether its code-step lines (``sub``) are checked one spec
    action each (True), or are a take of Bookmark entries only, which the spec does
    not model (False). Steps whose code steps cannot be checked one by one are left
    out, so their own line is checked whole: a batch of several RealFIFO entries (one
    store transaction, then the handler calls) has no spec counterpart step by step."""
    out: dict[tuple[int, int | None], bool] = {}
    batches: set[tuple[int, int | None]] = set()
    for n, raw in enumerate(raws, 1):
        sub = raw.get("sub")
        if sub is None:
            continue
        where = _where(n, raw)
        if sub not in SUB_STEPS[spec]:
            raise ValueError(
                f"{where}: code step {sub!r} is not one {spec}.tla models (it has "
                f"{', '.join(SUB_STEPS[spec])}; the Informer specs: Informer.tla needs "
                "--fifo delta, InformerAtomic.tla --fifo real-atomic)"
            )
        key = (raw.get("generation", 0), raw.get("step"))
        if sub == "taken":
            taken = raw.get("taken", [])
            if not taken:
                raise ValueError(f"{where}: taken: expected the taken entries, got {taken!r}")
            if len(taken) > 1:
                batches.add(key)
            out[key] = any(not (isinstance(d, list) and d[:1] == ["Bookmark"]) for d in taken)
        else:
            out.setdefault(key, True)
    for key in batches:
        del out[key]
    return out


def map_informer(raws: Sequence[TraceRecord], spec: str) -> TraceMapping:
    atomic = spec == "InformerAtomic"
    states = [_informer_state(raw, _where(n, raw), atomic) for n, raw in enumerate(raws, 1)]
    initial = _informer_init(atomic)
    previous: Mapping[str, Value] = initial
    keys: set[Value] = set()
    longest = 0
    for n, (raw, state) in enumerate(zip(raws, states, strict=True), 1):
        old, new = _as_seq(previous["history"]), _as_seq(state["history"])
        if new[: len(old)] != old:
            raise ValueError(
                f"{_where(n, raw)}: spec.history does not extend the line before's "
                "(the server's writes are never undone)"
            )
        keys |= _informer_keys(state)
        longest = max(longest, _queued(state))
        previous = state
    lines: list[TraceLine] = []
    orders: set[Value] = set()
    previous = initial
    fine = _fine_steps(raws, spec)
    start: Mapping[str, Value] = initial  # the state before the current simulator step
    for raw, line in zip(raws, trace_lines(STEPS[spec], raws, states, initial), strict=True):
        acts, budget, least, in_flight = line.acts, line.budget, 0, False
        sub, key = raw.get("sub"), (line.generation, line.step)
        if sub is None:
            if key in fine:
                # Its code steps were lines of their own: the step's line takes none.
                acts, budget = frozenset(), 0
                # An atomic relist's deletions are notified in the order ApplyEntry
                # chose: the notifications of the whole step show it.
                orders |= _informer_hints(start, line.state, frozenset({"ApplyEntry"}), atomic)
            elif line.action == "reflector" and not line.reset:
                answers = _answers(raw)
                least = min(len(answers), budget)
        elif fine.get(key, False):
            acts, budget, least, in_flight = frozenset({SUB_STEPS[spec][sub]}), 1, 1, True
        else:
            # A take of Bookmark entries only: nothing the spec models (budget 0).
            acts, budget = frozenset(), 0
        writes = len(_as_seq(line.state["history"])) - len(_as_seq(previous["history"]))
        if writes and not line.reset:
            acts, budget = acts | {"Write"}, budget + writes
        orders |= _informer_hints(previous, line.state, acts, atomic)
        hints: dict[str, Value] = {"least": least, "open": in_flight}
        lines.append(attrs.evolve(line, acts=acts, budget=budget, hints=hints))
        if sub is None:
            start = line.state
        previous = line.state
    history = _as_seq(states[-1]["history"])
    fifo_module = "RealFIFO" if atomic else "DeltaFIFO"
    return TraceMapping(
        spec=spec,
        lines=tuple(lines),
        initial=initial,
        definitions={
            "TraceKeys": frozenset(keys),
            # Write needs Len(history) < MaxRV; the FIFO's producer bound, MaxRV * 4 + 4
            # queued entries, must stay above the longest FIFO of the trace.
            "TraceMaxRV": max(len(history), longest // 4, 1),
            "TraceHistoryData": history,
            "TraceOrderData": frozenset(orders),
        },
        substitutions=(
            "Keys <- TraceKeys",
            "MaxRV <- TraceMaxRV",
            f"Orders <- [{fifo_module}] TraceOrders",
            "TraceHistoryIn <- TraceHistoryData",
            "OrderHintsIn <- TraceOrderData",
            "TraceIn <- TraceData",
        ),
        encode=_informer_module_state,
    )


#: The simulator's faults the Informer specs can follow: a clean watch drop (WatchDrop),
#: compaction (Compact), and faults that change nothing they map (a failed list or
#: watch request, a failed controller write) or restart the informer (crash).
INFORMER_FAULTS = frozenset(
    {"close_watch", "compact", "list_error", "watch_error", "write_error", "crash"}
)


def informer_scenario_problems(scenario: str) -> list[str]:
    """What the simulator's ``scenario`` does that the Informer specs do not model
    (empty: its runs can be validated)."""
    from refimpl.cache.reflector import VERY_SHORT_WATCH
    from refimpl.sim.scenarios import get_scenario, parse_faults

    s = get_scenario(scenario)
    faults = parse_faults(None, s)
    problems = [f"the fault {k}" for k, w in faults.items() if w and k not in INFORMER_FAULTS]
    if s.resync_period > 0:
        problems.append(f"a resync every {s.resync_period:g} s")
    if s.compaction_window is not None:
        problems.append(f"compaction to the last {s.compaction_window} writes at each write")
    if faults["close_watch"] and s.watch_drop_after <= VERY_SHORT_WATCH:
        # client-go relists after a watch that ends within 1 s having delivered nothing.
        problems.append("watches that drop within a second of opening")
    return problems


def checked_informer_lines(raws: Sequence[TraceRecord], spec: str) -> list[TraceRecord]:
    """The lines checked against an Informer spec: all but the code-step lines of a
    RealFIFO batch (see ``_fine_steps``)."""
    fine = _fine_steps(raws, spec)
    return [r for r in raws if "sub" not in r or (r.get("generation", 0), r.get("step")) in fine]
