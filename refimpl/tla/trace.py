"""Trace validation: simulator traces (JSON lines) checked by TLC against
spec/WorkQueue.tla, spec/DeltaFIFO.tla, spec/RealFIFO.tla, spec/Informer.tla and
spec/InformerAtomic.tla, through spec/trace/<Spec>Trace.tla.

Owns no state and never runs TLC on import: only :func:`validate` does, and it raises
:class:`~refimpl.tla.runner.TlcUnavailable` without a jar or java. Refines nothing.

The lines of ``Simulator.abstract_state`` (refimpl/sim/simulator.py) are mapped to the
spec's variables (:func:`map_trace`), written as a module that EXTENDS
spec/trace/<Spec>Trace.tla with the trace as a constant (:func:`trace_module`), and TLC
decides whether some behaviour of the spec passes through every line (the technique is
described in spec/trace/WorkQueueTrace.tla).

The mappings (spec variable = trace field)::

    WorkQueue  queue = queue (head first); dirty, processing = those lists as sets;
               waiting = keys of waiting; holding["w<j>"] = workers[j][0], or NoItem;
               shuttingDown, drain, stopped, drainer = the fields of those names if
               present, else FALSE, FALSE, {}, "idle" -- the simulator's trace has no
               such fields: it never shuts a live queue down (a crash discards it).
    DeltaFIFO  queue = the keys of fifo in order; items[k] = k's deltas ([type, key,
               rv] -> [type, obj |-> [key, rv, dfsu]], "Deleted(DFSU)" = a tombstone);
               store[k] = store[k], absent = 0; synced = synced.  Needs ``--fifo delta``.
    RealFIFO   log = fifo without Bookmark entries (not modelled; processing one changes
               nothing mapped), a ReplacedAll [type, rv, [[key, rv], ...]] -> [type,
               obj |-> the listed objects]; processing = <<>> (a simulator pop takes
               and processes at once); store, synced as for DeltaFIFO.  Atomic = TRUE
               for ``--fifo real-atomic``, FALSE for ``--fifo real`` (``atomic``; by
               default FALSE iff the trace shows Replaced, Sync or tombstone entries).
    Informer   (needs the ``spec`` fields: ``Simulator(spec_trace=True)``, as the
    and        informer-spec scenario does; ``--fifo delta`` for Informer,
    Informer-  ``--fifo real-atomic`` for InformerAtomic.) Every rv is the code's - 1
    Atomic     (the code's server starts at 1, as refine_informer.py maps it); keys
               are the simulator's "namespace/name" strings, the same in every field.
               server[k] = server[k], absent = 0; history = spec.history, every write
               (type, key, rv) the simulator saw the server make, compacted or not
               (written into the module as its length, a prefix of TraceHistoryData);
               compacted = compactedRV - 1; reflector = spec.phase (the park point of
               the reflector loop: not started or the relist backoff = "list"; the
               backoff after a failed watch request, or an unread 410 answer = "connect";
               reading an open watch = "watch"; anything else cannot be mapped);
               lastSyncRV = reflector.lastSyncRV ("" = 0); the FIFO variables, store
               and synced as for DeltaFIFO / atomic RealFIFO; notifications =
               pending[spec.listener] (h0), "deleteDFSU" = delete; view, lastRV =
               spec.view, spec.lastRV (a recording handler behind h0; absent = 0).
               synced = spec.fifoSynced (the FIFO's own HasSynced). Left to the
               spec: populated, initialPopulationCount, applied. Processing is
               recorded at the code's own steps: the cores' tracing hooks
               (Indexer.on_write, InformerCore.step_hook) make each pop / take, store
               write, handler call and finish a line of its own (``sub``), which
               takes exactly its one spec action (:data:`SUB_STEPS`); between them
               the processing variables (popped, outbox; processing, outbox,
               written) are left to the spec, at every other line they are empty.
               A reflector line takes at least one spec step per ``spec.answers``
               entry. A crash restarts everything but the server from Init.

Each code step (the line's ``action``) may take the spec steps of :data:`STEPS`; any
other code step must leave the mapped variables unchanged. A change of ``generation``
(a controller crash) restarts from the spec's Init. Model constants are the values the
trace uses: Keys = every key it mentions, Workers = ``w0 .. w<n-1>``, RVs = every
resourceVersion. For DeltaFIFO the arguments of producer steps come from the trace too
(the objects it shows, each line's relist result, the key orders it shows; see
spec/trace/DeltaFIFOTrace.tla): that narrows Next, so a trace can only be wrongly
rejected, never wrongly accepted. For the Informer specs, Keys = every key, MaxRV = the
number of writes (or more, so the FIFO bound MaxRV * 4 + 4 is never reached), a line
may also take one Write per write it shows, and each Write must append the trace's next
write; list and deletion orders of more than 3 elements come from the trace.

What the Informer specs do not model, and so the trace cannot show: resync, an ERROR 410
on an open watch, a watch that ends within a second having delivered nothing (client-go
then relists), compaction of part of the history, lost notifications, the watch-list
stream. ``python -m refimpl.tla.trace --spec Informer --sim informer-spec`` runs a
scenario without them (:func:`informer_scenario_problems` says what another lacks).
"""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from refimpl.tla.manifest import default_spec_dir
from refimpl.tla.output import Status, TlcResult
from refimpl.tla.refine_informer import shift_rvs
from refimpl.tla.runner import TlcRun, TlcUnavailable, refused, run_tlc
from refimpl.tla.values import Fn, ModelValue, Value, format_value

__all__ = [
    "INFORMER_FAULTS",
    "INFORMER_SPECS",
    "SPECS",
    "STEPS",
    "FailedStep",
    "TraceCheckError",
    "TraceLine",
    "TraceMapping",
    "TraceResult",
    "checked_lines",
    "informer_scenario_problems",
    "map_trace",
    "read_trace",
    "trace_module",
    "validate",
]

#: The specs a trace can be checked against.
SPECS = ("WorkQueue", "DeltaFIFO", "RealFIFO", "Informer", "InformerAtomic")

#: The specs of a whole informer: their traces need the simulator's ``spec`` fields.
INFORMER_SPECS = ("Informer", "InformerAtomic")

#: WorkQueue's NoItem constant (a model value, so it equals no key).
NO_ITEM = ModelValue("NoItem")

#: (spec actions, how many spec steps) a code step may take. The count depends on the
#: mapped state before the step: a clock advance (and a get, which fires due items
#: first) fires each waiting key at most once. Code steps not listed take no spec step.
StepRule = tuple[frozenset[str], Callable[[Mapping[str, Value]], int]]


def _waiting(state: Mapping[str, Value]) -> int:
    waiting = state["waiting"]
    assert isinstance(waiting, frozenset)
    return len(waiting)


def _head_deltas(state: Mapping[str, Value]) -> int:
    """How many deltas the head key of a (mapped) DeltaFIFO state holds."""
    queue = _as_seq(state["queue"])
    if not queue:
        return 0
    items = _as_fn(state["items"])
    return len(_as_seq(items[queue[0]])) if queue[0] in items else 0


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


STEPS: dict[str, dict[str, StepRule]] = {
    "WorkQueue": {
        # A handler's notification enqueues at most one key.
        "dispatch": (frozenset({"Add"}), lambda s: 1),
        # get() first fires due delayed adds, then hands out the head.
        "get": (frozenset({"Ready", "Get"}), lambda s: 1 + _waiting(s)),
        # process_next_work_item: add_rate_limited (AddAfter; Add if the delay is 0)
        # on failure, then Done.
        "done": (frozenset({"Add", "AddAfter", "Done"}), lambda s: 2),
        "advance": (frozenset({"Ready"}), _waiting),
    },
    "DeltaFIFO": {
        # One reflector step hands one event, one relist or one resync to the FIFO.
        "reflector": (
            frozenset({"Add", "Update", "Delete", "Replace", "Resync"}),
            lambda s: 1,
        ),
        # Pop hands out one key's deltas and process_deltas applies them to the store.
        "pop": (frozenset({"Pop"}), lambda s: 1),
    },
    "RealFIFO": {
        "reflector": (
            frozenset({"Add", "Update", "Delete", "Replace", "Resync"}),
            lambda s: 1,
        ),
        # A batch pops up to every queued entry: Take and Process each (atomic), or Pop.
        "pop": (frozenset({"Pop", "Take", "Process"}), lambda s: 2 * len(_as_seq(s["log"]))),
    },
    # Informer specs: besides these, a line may take one Write per server write it
    # shows (history growth; the first line's include the scenario's initial objects).
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


class TraceCheckError(RuntimeError):
    """TLC ran but reached no verdict (a parse or evaluation error, a timeout)."""


@attrs.frozen
class TraceLine:
    """One trace line mapped to the spec: the state after the code step, and what the
    code step may do in spec terms."""

    index: int  # 1-based position in the trace
    step: int | None  # the simulator's step number
    action: str
    desc: str
    generation: int
    state: Mapping[str, Value]
    acts: frozenset[str]
    budget: int
    reset: bool
    #: Spec-specific hints, more fields of the record (DeltaFIFO: ``lists``; the
    #: Informer specs: ``least``, the fewest spec steps the code step must take, and
    #: ``open``, whether processing is under way at this line).
    hints: Mapping[str, Value] = attrs.field(factory=dict)

    def record(self, state: Value | None = None) -> Fn:
        """The TLA+ record Trace[index]; ``state`` replaces the state (the generated
        module names each distinct state once and refers to it)."""
        return Fn(
            {
                "state": Fn(self.state) if state is None else state,
                "acts": frozenset(self.acts),
                "budget": self.budget,
                "reset": self.reset,
                **self.hints,
            }
        )


@attrs.frozen
class TraceMapping:
    """A whole trace mapped: the lines, Init's mapped state, and the constants to bind.

    ``definitions`` are written into the generated module (name -> value);
    ``substitutions`` are the cfg's ``CONSTANTS`` lines.
    """

    spec: str
    lines: tuple[TraceLine, ...]
    initial: Mapping[str, Value]
    definitions: Mapping[str, Value]
    substitutions: tuple[str, ...]
    #: How a state is written into the module (None: as it is); the Informer specs
    #: write the server's history as its length (a prefix of ``TraceHistoryData``).
    encode: Callable[[Mapping[str, Value]], Mapping[str, Value]] | None = None

    def module_state(self, state: Mapping[str, Value]) -> Fn:
        """``state`` as the generated module holds it."""
        return Fn(state if self.encode is None else self.encode(state))


@attrs.frozen
class FailedStep:
    """The first trace line no spec behaviour reaches, and the line before it."""

    index: int
    step: int | None
    action: str
    desc: str
    acts: frozenset[str]
    budget: int
    before: Mapping[str, Value]  # mapped state of line index-1 (Init for line 1)
    after: Mapping[str, Value]  # mapped state of line index
    least: int = 0  # the fewest spec steps the code step had to take

    def changed(self) -> dict[str, tuple[Value, Value]]:
        """The mapped variables the code step changed: name -> (before, after)."""
        return {
            k: (self.before[k], self.after[k])
            for k in self.after
            if self.before[k] != self.after[k]
        }

    def describe(self) -> str:
        bound = f"{self.least} to {self.budget}" if self.least else f"up to {self.budget}"
        allowed = (
            f"{bound} of {', '.join(sorted(self.acts))}"
            if self.budget and self.acts
            else "no spec step"
        )
        lines = [
            f"line {self.index} (simulator step {self.step}, {self.action}"
            + (f": {self.desc}" if self.desc else "")
            + f") is not reached by {allowed} from "
            + (f"line {self.index - 1}" if self.index > 1 else "the initial state")
        ]
        for name, (old, new) in self.changed().items():
            if isinstance(old, Fn) and isinstance(new, Fn):
                # A function (holding, items, store): only the entries that differ.
                for key in sorted(old.keys() | new.keys(), key=format_value):
                    if old.get(key) != new.get(key):
                        lines.append(
                            f"  {name}[{format_value(key)}]: {_show(old.get(key))} -> "
                            f"{_show(new.get(key))}"
                        )
            elif isinstance(old, tuple) and isinstance(new, tuple) and new[: len(old)] == old:
                # A sequence that grew (the server's history, the notifications).
                lines.append(f"  {name}: appended {format_value(new[len(old) :])}")
            else:
                lines.append(f"  {name}: {format_value(old)} -> {format_value(new)}")
        return "\n".join(lines)


def _show(value: Value | None) -> str:
    return "(absent)" if value is None else format_value(value)


@attrs.frozen
class TraceResult:
    """TLC's verdict on a trace."""

    spec: str
    ok: bool
    lines: int  # lines in the trace
    steps_checked: int  # lines matched by a spec behaviour (all of them when ok)
    failed: FailedStep | None
    distinct_states: int | None
    wall_seconds: float
    tlc: TlcResult

    def summary(self) -> str:
        head = (
            f"{self.spec}: trace of {self.lines} lines "
            + ("is a behaviour of the spec" if self.ok else "REJECTED")
            + f" ({self.steps_checked} lines matched, {self.distinct_states} TLC states, "
            f"{self.wall_seconds:.1f}s)"
        )
        return head if self.failed is None else head + "\n" + self.failed.describe()


# -- reading ------------------------------------------------------------------------------


def read_trace(lines: Iterable[str | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """JSON lines (or already decoded objects) as dicts; blank lines are skipped.
    Raises ValueError naming the line that is not a JSON object."""
    out: list[dict[str, Any]] = []
    for n, line in enumerate(lines, 1):
        if isinstance(line, Mapping):
            out.append(dict(line))
            continue
        if not isinstance(line, str):
            raise TypeError(f"trace line {n}: expected str or mapping, got {type(line).__name__}")
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"trace line {n}: not JSON ({err}): {line[:80]!r}") from None
        if not isinstance(data, dict):
            raise ValueError(f"trace line {n}: expected a JSON object, got {line[:80]!r}")
        out.append(data)
    return out


def _where(n: int, raw: Mapping[str, Any]) -> str:
    step = raw.get("step")
    return f"trace line {n}" + (f" (step {step})" if step is not None else "")


def _str(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what}: expected a string key, got {value!r}")
    return value


def _keys(value: Any, what: str) -> frozenset[Value]:
    if isinstance(value, Mapping):
        value = list(value)
    if not isinstance(value, list):
        raise ValueError(f"{what}: expected a list of keys, got {value!r}")
    return frozenset(_str(v, what) for v in value)


def _bool(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{what}: expected true or false, got {value!r}")
    return value


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what}: expected a non-negative integer, got {value!r}")
    return value


# -- the work queue -----------------------------------------------------------------------


def _workqueue_state(raw: Mapping[str, Any], where: str) -> dict[str, Value]:
    missing = [f for f in ("queue", "dirty", "processing", "waiting", "workers") if f not in raw]
    if missing:
        raise ValueError(
            f"{where}: no work queue state (missing {', '.join(missing)}); only scenarios "
            "with a controller (e.g. replicaset) have a work queue"
        )
    queue = raw["queue"]
    if not isinstance(queue, list):
        raise ValueError(f"{where}: queue: expected a list, got {queue!r}")
    workers = raw["workers"]
    if not isinstance(workers, list):
        raise ValueError(f"{where}: workers: expected a list, got {workers!r}")
    holding: dict[Value, Value] = {}
    for j, w in enumerate(workers):
        if not isinstance(w, list) or not w:
            raise ValueError(f"{where}: workers[{j}]: expected [key or null, phase], got {w!r}")
        holding[f"w{j}"] = NO_ITEM if w[0] is None else _str(w[0], f"{where}: workers[{j}]")
    drainer = raw.get("drainer", "idle")
    if drainer not in ("idle", "waiting", "returned"):
        raise ValueError(f"{where}: drainer: expected idle, waiting or returned, got {drainer!r}")
    return {
        "queue": tuple(_str(k, f"{where}: queue") for k in queue),
        "dirty": _keys(raw["dirty"], f"{where}: dirty"),
        "processing": _keys(raw["processing"], f"{where}: processing"),
        "shuttingDown": _bool(raw.get("shuttingDown", False), f"{where}: shuttingDown"),
        "drain": _bool(raw.get("drain", False), f"{where}: drain"),
        "holding": Fn(holding),
        "stopped": _keys(raw.get("stopped", []), f"{where}: stopped"),
        "waiting": _keys(raw["waiting"], f"{where}: waiting"),
        "drainer": drainer,
    }


def _workqueue_init(workers: int) -> dict[str, Value]:
    return {
        "queue": (),
        "dirty": frozenset(),
        "processing": frozenset(),
        "shuttingDown": False,
        "drain": False,
        "holding": Fn({f"w{j}": NO_ITEM for j in range(workers)}),
        "stopped": frozenset(),
        "waiting": frozenset(),
        "drainer": "idle",
    }


def _map_workqueue(raws: Sequence[Mapping[str, Any]]) -> TraceMapping:
    states = [_workqueue_state(raw, _where(n, raw)) for n, raw in enumerate(raws, 1)]
    counts = {len(s["holding"]) for s in states if isinstance(s["holding"], Fn)}
    if len(counts) != 1:
        raise ValueError(f"the number of workers changes within the trace: {sorted(counts)}")
    (workers,) = counts
    keys: set[Value] = set()
    for s in states:
        for name in ("dirty", "processing", "waiting"):
            value = s[name]
            assert isinstance(value, frozenset)
            keys |= value
        queue, holding = s["queue"], s["holding"]
        assert isinstance(queue, tuple) and isinstance(holding, Fn)
        keys.update(queue)
        keys.update(v for v in holding.values() if v != NO_ITEM)
    initial = _workqueue_init(workers)
    lines = _lines("WorkQueue", raws, states, initial)
    return TraceMapping(
        spec="WorkQueue",
        lines=lines,
        initial=initial,
        definitions={
            "TraceKeys": frozenset(keys),
            "TraceWorkers": frozenset(f"w{j}" for j in range(workers)),
        },
        substitutions=(
            "Keys <- TraceKeys",
            "Workers <- TraceWorkers",
            "NoItem = NoItem",
            "TraceIn <- TraceData",
        ),
    )


# -- the DeltaFIFO ------------------------------------------------------------------------


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


def _fifo_state(raw: Mapping[str, Any], where: str) -> dict[str, Value]:
    missing = [f for f in ("fifo", "store", "synced") if f not in raw]
    if missing:
        raise ValueError(f"{where}: no informer state (missing {', '.join(missing)})")
    fifo = raw["fifo"]
    if not isinstance(fifo, list):
        raise ValueError(f"{where}: fifo: expected a list, got {fifo!r}")
    queue: list[Value] = []
    items: dict[Value, Value] = {}
    for entry in fifo:
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
    store = raw["store"]
    if not isinstance(store, Mapping):
        raise ValueError(f"{where}: store: expected an object key -> rv, got {store!r}")
    stored: dict[Value, Value] = {}
    for key, rv in store.items():
        rv = _int(rv, f"{where}: store[{key}]")
        if rv == 0:
            raise ValueError(f"{where}: store[{key}]: a stored object without a resourceVersion")
        stored[key] = rv
    return {
        "queue": tuple(queue),
        "items": Fn(items),
        "store": Fn(stored),
        "synced": _bool(raw["synced"], f"{where}: synced"),
    }


_FIFO_INIT: dict[str, Value] = {"queue": (), "items": Fn(), "store": Fn(), "synced": False}


def _as_fn(value: Value) -> Fn:
    assert isinstance(value, Fn)
    return value


def _as_seq(value: Value) -> tuple[Value, ...]:
    assert isinstance(value, tuple)
    return value


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


def _map_delta_fifo(raws: Sequence[Mapping[str, Any]]) -> TraceMapping:
    states = [_fifo_state(raw, _where(n, raw)) for n, raw in enumerate(raws, 1)]
    keys: set[Value] = set()
    rvs: set[Value] = set()
    objs: set[Value] = set()
    longest = 0
    for s in states:
        items, store = _as_fn(s["items"]), _as_fn(s["store"])
        keys.update(items)
        keys.update(store)
        longest = max(longest, sum(len(_as_seq(v)) for v in items.values()))
        for value in items.values():
            for d in _as_seq(value):
                obj = _as_fn(_as_fn(d)["obj"])
                if obj["rv"] != 0:
                    rvs.add(obj["rv"])
                if not obj["dfsu"]:
                    objs.add(obj)
        for key, rv in store.items():
            rvs.add(rv)
            assert isinstance(key, str) and isinstance(rv, int)
            objs.add(_obj(key, rv, False))
    lines: list[TraceLine] = []
    orders: set[Value] = set()
    previous: Mapping[str, Value] = _FIFO_INIT
    for line in _lines("DeltaFIFO", raws, states, _FIFO_INIT):
        # A relist of nothing is always possible; one of something shows in the line.
        lists: set[Value] = set()
        if "Replace" in line.acts:
            listed, order = _fifo_hints(previous, line.state)
            lists = {()} if listed is None else {(), listed}
            if len(order) > 3:  # TraceOrders tries every order of up to 3 keys
                orders.add(order)
        lines.append(attrs.evolve(line, hints={"lists": frozenset(lists)}))
        previous = line.state
    return TraceMapping(
        spec="DeltaFIFO",
        lines=tuple(lines),
        initial=_FIFO_INIT,
        definitions={
            "TraceKeys": frozenset(keys),
            "TraceRVs": frozenset(rvs) or frozenset({1}),
            "TraceMaxQueued": longest + 1,
            "TraceObjData": frozenset(objs),
            "TraceOrderData": frozenset(orders),
        },
        substitutions=(
            "Keys <- TraceKeys",
            "RVs <- TraceRVs",
            "MaxQueued <- TraceMaxQueued",
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


def _real_state(raw: Mapping[str, Any], where: str) -> dict[str, Value]:
    base = _fifo_state({**raw, "fifo": []}, where)  # store and synced, checked
    fifo = raw["fifo"]
    if not isinstance(fifo, list):
        raise ValueError(f"{where}: fifo: expected a list, got {fifo!r}")
    entries = [_real_entry(e, f"{where}: fifo[{n}]") for n, e in enumerate(fifo)]
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


def _map_real_fifo(raws: Sequence[Mapping[str, Any]], atomic: bool | None) -> TraceMapping:
    states = [_real_state(raw, _where(n, raw)) for n, raw in enumerate(raws, 1)]
    if atomic is None:
        atomic = _is_atomic(states)
    keys: set[Value] = set()
    rvs: set[Value] = set()
    objs: set[Value] = set()
    for s in states:
        for d in _as_seq(s["log"]):
            obj = _as_fn(d)["obj"]
            for o in _as_seq(obj) if isinstance(obj, tuple) else (obj,):
                o = _as_fn(o)
                keys.add(o["key"])
                if o["rv"] != 0:
                    rvs.add(o["rv"])
                if not o["dfsu"]:
                    objs.add(o)
        for key, rv in _as_fn(s["store"]).items():
            assert isinstance(key, str) and isinstance(rv, int)
            keys.add(key)
            rvs.add(rv)
            objs.add(_obj(key, rv, False))
    lines: list[TraceLine] = []
    orders: set[Value] = set()
    previous: Mapping[str, Value] = _REAL_INIT
    for line in _lines("RealFIFO", raws, states, _REAL_INIT):
        lists: set[Value] = set()
        if "Replace" in line.acts:
            listed, order = _real_hints(previous, line.state)
            lists = {()} if listed is None else {(), listed}
            # A relist's tombstones are two orders: logged keys, then stored ones.
            for cut in range(len(order) + 1):
                for part in (order[:cut], order[cut:]):
                    if len(part) > 3:  # TraceOrders tries every order of up to 3 keys
                        orders.add(part)
            if not atomic:  # the order ReconciledEntries CHOOSEs, for every list tried
                for listed_objs in lists:
                    gone = _gone_order(previous, _as_seq(listed_objs))
                    if len(gone) > 3:
                        orders.add(gone)
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
        previous = line.state
    return TraceMapping(
        spec="RealFIFO",
        lines=tuple(lines),
        initial=_REAL_INIT,
        definitions={
            "TraceKeys": frozenset(keys),
            "TraceRVs": frozenset(rvs) or frozenset({1}),
            "TraceObjData": frozenset(objs),
            "TraceOrderData": frozenset(orders),
        },
        substitutions=(
            "Keys <- TraceKeys",
            "RVs <- TraceRVs",
            "MaxQueued = 1",
            f"Atomic = {'TRUE' if atomic else 'FALSE'}",
            "Orders <- TraceOrders",
            "ProducerMayRun <- Unbounded",
            "TraceObjsIn <- TraceObjData",
            "OrderHintsIn <- TraceOrderData",
            "TraceIn <- TraceData",
        ),
    )


# -- the informer -------------------------------------------------------------------------

_PHASES = ("list", "connect", "watch")
_WRITES = ("ADDED", "MODIFIED", "DELETED")
#: The simulator's notification kinds as the specs' (a tombstone's delete is a delete).
_NOTES = {"add": "add", "update": "update", "delete": "delete", "deleteDFSU": "delete"}


def _spec_rv(value: Any, what: str, *, absent: bool = False) -> int:
    """A server resourceVersion as the Informer specs number it: the code's server
    starts at 1 and its first write is 2, the specs' history at 0, so ``code = spec +
    1`` (as in refimpl/tla/refine_informer.py). With ``absent``, 0 ("no object") stays 0."""
    rv = _int(value, what)
    if rv == 0 and absent:
        return 0
    if rv < 2:
        raise ValueError(f"{what}: resourceVersion {rv} belongs to no write (the first is 2)")
    return rv - 1


def _rv_fn(value: Any, what: str, *, absent: bool = False) -> Fn:
    """An object key -> rv map as a partial spec map (entries that map to 0 dropped)."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{what}: expected an object key -> rv, got {value!r}")
    out: dict[Value, Value] = {}
    for key, rv in value.items():
        spec_rv = _spec_rv(rv, f"{what}[{key}]", absent=absent)
        if spec_rv:
            out[_str(key, what)] = spec_rv
    return Fn(out)


def _write(value: Any, what: str) -> Fn:
    if not (isinstance(value, list) and len(value) == 3 and value[0] in _WRITES):
        raise ValueError(f"{what}: expected [ADDED|MODIFIED|DELETED, key, rv], got {value!r}")
    rv = _spec_rv(value[2], f"{what}: rv")
    return Fn({"type": value[0], "key": _str(value[1], what), "rv": rv})


def _notification(value: Any, what: str) -> Fn:
    if not (isinstance(value, list) and len(value) == 3 and value[0] in _NOTES):
        raise ValueError(f"{what}: expected a notification [kind, key, rv], got {value!r}")
    kind = _NOTES[value[0]]
    rv = _spec_rv(value[2], f"{what}: rv", absent=kind == "delete")
    return Fn({"type": kind, "key": _str(value[1], what), "rv": rv})


def _last_sync(reflector: Any, what: str) -> int:
    last = reflector.get("lastSyncRV") if isinstance(reflector, Mapping) else None
    if not isinstance(last, str) or not (last == "" or last.isdigit()):
        raise ValueError(f"{what}: expected {{lastSyncRV: a resourceVersion}}, got {reflector!r}")
    return 0 if last == "" else _spec_rv(int(last), f"{what}: lastSyncRV")


def _informer_fifo(raw: Mapping[str, Any], where: str, atomic: bool) -> dict[str, Value]:
    """The FIFO variables, the store and synced of either spec, in spec rvs."""
    try:
        return _informer_fifo_state(raw, where, atomic)
    except ValueError as err:
        raise ValueError(
            f"{err} (the Informer specs: Informer.tla needs --fifo delta, "
            "InformerAtomic.tla --fifo real-atomic)"
        ) from None


def _informer_fifo_state(raw: Mapping[str, Any], where: str, atomic: bool) -> dict[str, Value]:
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
    store = _as_fn(fifo["store"])
    fifo["store"] = Fn({k: _spec_rv(rv, f"{where}: store[{k}]") for k, rv in store.items()})
    return fifo


def _informer_state(raw: Mapping[str, Any], where: str, atomic: bool) -> dict[str, Value]:
    spec = raw.get("spec")
    if not isinstance(spec, Mapping):
        raise ValueError(
            f"{where}: no spec fields (the server's history, the reflector's phase, the "
            "handler's view): run the simulator with spec_trace=True, as the "
            "informer-spec scenario does"
        )
    missing = [f for f in ("server", "compactedRV", "reflector", "pending") if f not in raw]
    missing += [
        f"spec.{f}" for f in ("history", "phase", "listener", "view", "lastRV") if f not in spec
    ]
    if missing:
        raise ValueError(f"{where}: no informer state (missing {', '.join(missing)})")
    phase = spec["phase"]
    if phase not in _PHASES:
        raise ValueError(
            f"{where}: the reflector is at {phase!r}, which the Informer specs do not "
            f"model (they have {', '.join(_PHASES)})"
        )
    history, pending, listener = spec["history"], raw["pending"], spec["listener"]
    if not isinstance(history, list):
        raise ValueError(f"{where}: spec.history: expected a list, got {history!r}")
    if not isinstance(pending, Mapping) or not isinstance(pending.get(listener), list):
        raise ValueError(f"{where}: pending: no notifications of listener {listener!r}")
    compacted = _int(raw["compactedRV"], f"{where}: compactedRV")
    return {
        "server": _rv_fn(raw["server"], f"{where}: server"),
        "history": tuple(_write(w, f"{where}: spec.history[{n}]") for n, w in enumerate(history)),
        # The server starts "compacted" at 1, the rv of the empty server.
        "compacted": 0 if compacted <= 1 else _spec_rv(compacted, f"{where}: compactedRV"),
        "reflector": phase,
        "lastSyncRV": _last_sync(raw["reflector"], f"{where}: reflector"),
        **_informer_fifo(raw, where, atomic),
        # The FIFO's own HasSynced where the line has it (a DeltaFIFO's flips at Pop).
        **(
            {"synced": _bool(spec["fifoSynced"], f"{where}: spec.fifoSynced")}
            if "fifoSynced" in spec
            else {}
        ),
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


def _answers(raw: Mapping[str, Any], line: TraceLine) -> list[str]:
    spec = raw.get("spec")
    answers = spec.get("answers", []) if isinstance(spec, Mapping) else []
    if not isinstance(answers, list) or not set(answers) <= _ANSWERS:
        raise ValueError(
            f"trace line {line.index} (step {line.step}): spec.answers: expected a list "
            f"of {', '.join(sorted(_ANSWERS))}, got {answers!r}"
        )
    return answers


def _fine_steps(raws: Sequence[Mapping[str, Any]], spec: str) -> dict[tuple[int, int | None], bool]:
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
            taken = raw.get("taken")
            if not isinstance(taken, list) or not taken:
                raise ValueError(f"{where}: taken: expected the taken entries, got {taken!r}")
            if len(taken) > 1:
                batches.add(key)
            out[key] = any(not (isinstance(d, list) and d[:1] == ["Bookmark"]) for d in taken)
        else:
            out.setdefault(key, True)
    for key in batches:
        del out[key]
    return out


def _map_informer(raws: Sequence[Mapping[str, Any]], spec: str) -> TraceMapping:
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
    for raw, line in zip(raws, _lines(spec, raws, states, initial), strict=True):
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
                answers = _answers(raw, line)
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


# -- all ---------------------------------------------------------------------------------


def _lines(
    spec: str,
    raws: Sequence[Mapping[str, Any]],
    states: Sequence[Mapping[str, Value]],
    initial: Mapping[str, Value],
) -> tuple[TraceLine, ...]:
    rules = STEPS[spec]
    out: list[TraceLine] = []
    previous = initial
    generation: int | None = None
    for n, (raw, state) in enumerate(zip(raws, states, strict=True), 1):
        where = _where(n, raw)
        gen = _int(raw.get("generation", 0), f"{where}: generation")
        action = raw.get("action", "")
        if not isinstance(action, str):
            raise ValueError(f"{where}: action: expected a string, got {action!r}")
        step = raw.get("step")
        if step is not None:
            step = _int(step, f"{where}: step")
        reset = generation is not None and gen != generation
        acts, budget_of = rules.get(action, (frozenset(), lambda s: 0))
        budget = 0 if reset else budget_of(previous)
        out.append(
            TraceLine(
                index=n,
                step=step,
                action=action,
                desc=str(raw.get("desc", "")),
                generation=gen,
                state=state,
                acts=acts if budget else frozenset(),
                budget=budget,
                reset=reset,
            )
        )
        previous, generation = state, gen
    return tuple(out)


def checked_lines(raws: Sequence[dict[str, Any]], spec: str) -> list[dict[str, Any]]:
    """The lines of a decoded trace that are checked against ``spec``: the FIFO and
    work-queue specs check whole simulator steps, so they drop the code-step lines
    (``sub``); the Informer specs drop only those of a RealFIFO batch (see
    ``_fine_steps``). A line's index in the verdict counts these lines."""
    if spec not in INFORMER_SPECS:
        return [r for r in raws if "sub" not in r]
    fine = _fine_steps(raws, spec)
    return [r for r in raws if "sub" not in r or (r.get("generation", 0), r.get("step")) in fine]


def map_trace(
    lines: Iterable[str | Mapping[str, Any]],
    spec: str = "WorkQueue",
    *,
    atomic: bool | None = None,
) -> TraceMapping:
    """Map a simulator trace (JSON lines or decoded dicts) to ``spec``'s variables.
    ``atomic`` is RealFIFO's ``Atomic`` (None: from the trace, see ``_is_atomic``).

    Raises ValueError for an empty trace, an unknown spec, or a line that lacks what
    the spec needs or holds what it cannot express (each error names the line).
    """
    if spec not in SPECS:
        raise ValueError(f"unknown spec {spec!r}; trace validation knows {', '.join(SPECS)}")
    raws = read_trace(lines)
    if not raws:
        raise ValueError("the trace is empty")
    raws = checked_lines(raws, spec)
    if spec in INFORMER_SPECS:
        return _map_informer(raws, spec)
    if spec == "WorkQueue":
        return _map_workqueue(raws)
    if spec == "RealFIFO":
        return _map_real_fifo(raws, atomic)
    return _map_delta_fifo(raws)


_ACTION_NAME = re.compile(r"[^A-Za-z0-9_-]")


def trace_module(mapping: TraceMapping, name: str | None = None) -> tuple[str, str]:
    """``(module text, cfg text)`` of the generated model ``name`` (default
    ``<Spec>TraceRun``): it EXTENDS spec/trace/<Spec>Trace.tla and defines the trace
    (``TraceData``, one record per line) and the model constants."""
    name = name if name is not None else f"{mapping.spec}TraceRun"
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(f"not a TLA+ module name: {name!r}")
    out = [
        f"{'-' * 4} MODULE {name} {'-' * 4}",
        f"(* Generated by refimpl/tla/trace.py from a simulator trace of "
        f"{len(mapping.lines)} lines. *)",
        f"EXTENDS {mapping.spec}Trace",
        "",
    ]
    for def_name, value in mapping.definitions.items():
        out.append(f"{def_name} == {format_value(value)}")
    # Each distinct state once: most code steps leave the mapped state unchanged.
    names: dict[Fn, str] = {}
    out.append("")
    for line in mapping.lines:
        state = mapping.module_state(line.state)
        if state not in names:
            names[state] = f"TraceState{len(names) + 1}"
            out.append(f"{names[state]} == {format_value(state)}")
    out += ["", "TraceData == <<"]
    for line in mapping.lines:
        sep = "," if line.index < len(mapping.lines) else ""
        label = _ACTION_NAME.sub("?", line.action)
        record = line.record(ModelValue(names[mapping.module_state(line.state)]))
        out.append(f"    {format_value(record)}{sep}  \\* {line.index}: step {line.step} {label}")
    out += [">>", "=" * 8, ""]
    cfg = [
        "CONSTANTS",
        *(f"    {s}" for s in mapping.substitutions),
        "",
        "INIT TraceInit",
        "NEXT TraceNext",
        "",
        "INVARIANT ReportLine",
        "",
        "CHECK_DEADLOCK FALSE",
        "",
    ]
    return "\n".join(out), "\n".join(cfg)


# -- running TLC --------------------------------------------------------------------------

_REACHED = re.compile(r'^<<"trace-line", (\d+)>>\s*$', re.MULTILINE)


def _least(line: TraceLine) -> int:
    least = line.hints.get("least", 0)
    return least if isinstance(least, int) and not isinstance(least, bool) else 0


def _verdict(mapping: TraceMapping, run: TlcRun) -> TraceResult:
    result = run.result
    reached = [int(m) for m in _REACHED.findall(run.output)]
    total = len(mapping.lines)
    if result.status is not Status.PASS or not reached:
        hint = ""
        if "StackOverflowError" in run.output:
            # DeltaFIFO.tla's EnqAll recurses once per delta a relist or resync queues,
            # and TLC's lazy arguments make that a deep Java stack.
            hint = (
                f" (after line {max(reached, default=0)}: a relist or resync this large "
                "needs a bigger Java stack than TLC's default, e.g. java -Xss16m)"
            )
        raise TraceCheckError(
            f"TLC reached no verdict on the {mapping.spec} trace ({result.status.value}"
            + (f", {result.violated}" if result.violated else "")
            + f"){hint}: {result.message or run.output[-2000:]}"
        )
    matched = max(reached)
    failed: FailedStep | None = None
    if matched < total:
        line = mapping.lines[matched]  # the first line not reached: index matched + 1
        failed = FailedStep(
            index=line.index,
            step=line.step,
            action=line.action,
            desc=line.desc,
            acts=line.acts,
            budget=line.budget,
            before=mapping.initial if matched == 0 else mapping.lines[matched - 1].state,
            after=line.state,
            least=_least(line),
        )
    return TraceResult(
        spec=mapping.spec,
        ok=failed is None,
        lines=total,
        steps_checked=matched,
        failed=failed,
        distinct_states=result.distinct_states,
        wall_seconds=run.wall_seconds,
        tlc=result,
    )


def validate(
    trace_lines: Iterable[str | Mapping[str, Any]],
    spec: str = "WorkQueue",
    *,
    spec_dir: Path | None = None,
    timeout: float = 300.0,
    keep: Path | None = None,
    jar: Path | None = None,
    java: Path | None = None,
    atomic: bool | None = None,
) -> TraceResult:
    """Check with TLC that the trace is a behaviour of ``spec`` (see the module doc).

    ``keep`` names a folder to write the generated module and cfg into (kept for
    inspection); otherwise they live in a temporary folder. Raises ValueError for a
    trace that does not map (:func:`map_trace`), :class:`TlcUnavailable` without a jar
    or java, and :class:`TraceCheckError` when TLC ends without a verdict.
    """
    mapping = map_trace(trace_lines, spec, atomic=atomic)
    spec_dir = spec_dir if spec_dir is not None else default_spec_dir()
    module_text, cfg_text = trace_module(mapping)
    name = f"{mapping.spec}TraceRun"
    with tempfile.TemporaryDirectory(prefix="refimpl-trace-") as tmp:
        folder = keep if keep is not None else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        module, cfg = folder / f"{name}.tla", folder / f"{name}.cfg"
        module.write_text(module_text)
        cfg.write_text(cfg_text)
        try:
            run = run_tlc(
                module,
                cfg,
                workers="1",
                timeout=timeout,
                jar=jar,
                java=java,
                library=[spec_dir, spec_dir / "trace"],
            )
        except subprocess.TimeoutExpired as err:
            raise TraceCheckError(
                f"TLC did not finish the {mapping.spec} trace in {timeout} s"
            ) from err
    return _verdict(mapping, run)


# -- command line -------------------------------------------------------------------------


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


def _simulate(scenario: str, seed: int, steps: int, fifo: str, spec: str) -> list[str]:
    from refimpl.sim.simulator import Simulator

    spec_trace = spec in INFORMER_SPECS
    if spec_trace:
        problems = informer_scenario_problems(scenario)
        if problems:
            raise ValueError(
                f"scenario {scenario} has what the Informer specs do not model: "
                f"{'; '.join(problems)}. Use --sim informer-spec"
            )
    out = io.StringIO()
    Simulator(scenario, seed=seed, fifo_mode=fifo, trace=out, spec_trace=spec_trace).run(steps)
    return out.getvalue().splitlines()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m refimpl.tla.trace``: validate a trace file, or a fresh simulator run."""
    parser = argparse.ArgumentParser(
        prog="python -m refimpl.tla.trace",
        description="Check a simulator trace against a TLA+ spec with TLC (needs TLA2TOOLS_JAR).",
    )
    parser.add_argument("trace", nargs="?", type=Path, help="JSON-lines trace file")
    parser.add_argument("--spec", choices=SPECS, default="WorkQueue")
    parser.add_argument("--sim", metavar="SCENARIO", help="run the simulator instead of a file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument(
        "--fifo",
        default=None,
        help="FIFO mode for --sim (default: delta for DeltaFIFO and Informer, else real-atomic)",
    )
    parser.add_argument("--keep", type=Path, help="folder to keep the generated module in")
    args = parser.parse_args(argv)
    if (args.trace is None) == (args.sim is None):
        parser.error("give a trace file or --sim SCENARIO")
    try:
        if args.sim is not None:
            delta = args.spec in ("DeltaFIFO", "Informer")
            fifo = args.fifo or ("delta" if delta else "real-atomic")
            lines: list[str] = _simulate(args.sim, args.seed, args.steps, fifo, args.spec)
        else:
            lines = args.trace.read_text().splitlines()
        result = validate(lines, args.spec, keep=args.keep)
    except (ValueError, TraceCheckError, TlcUnavailable) as exc:
        return refused(exc, "error: ", tlc_prefix="cannot run TLC: ")
    print(result.summary())
    return 0 if result.ok else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
