"""Trace validation against spec/WorkQueue.tla (through spec/trace/WorkQueueTrace.tla):
the mapping of the simulator's work-queue fields. Owns no state; see
refimpl/tla/trace.py for the mapping table and the technique.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from refimpl.sim.trace_schema import TraceRecord, require
from refimpl.tla.trace_core import (
    StepRule,
    TraceMapping,
    _where,
    trace_lines,
)
from refimpl.tla.values import Fn, ModelValue, Value

__all__ = ["NO_ITEM", "STEPS", "map_workqueue"]

#: WorkQueue's NoItem constant (a model value, so it equals no key).
NO_ITEM = ModelValue("NoItem")


def _waiting(state: Mapping[str, Value]) -> int:
    waiting = state["waiting"]
    assert isinstance(waiting, frozenset)
    return len(waiting)


STEPS: dict[str, StepRule] = {
    # A handler's notification enqueues at most one key.
    "dispatch": (frozenset({"Add"}), lambda s: 1),
    # get() first fires due delayed adds, then hands out the head.
    "get": (frozenset({"Ready", "Get"}), lambda s: 1 + _waiting(s)),
    # process_next_work_item: add_rate_limited (AddAfter; Add if the delay is 0)
    # on failure, then Done.
    "done": (frozenset({"Add", "AddAfter", "Done"}), lambda s: 2),
    "advance": (frozenset({"Ready"}), _waiting),
}


def _workqueue_state(raw: TraceRecord, where: str) -> dict[str, Value]:
    require(
        raw,
        ("queue", "dirty", "processing", "waiting", "workers"),
        where,
        "no work queue state",
        "only scenarios with a controller (e.g. replicaset) have a work queue",
    )
    return {
        "queue": tuple(raw["queue"]),
        "dirty": frozenset(raw["dirty"]),
        "processing": frozenset(raw["processing"]),
        "shuttingDown": raw.get("shuttingDown", False),
        "drain": raw.get("drain", False),
        "holding": Fn(
            {f"w{j}": NO_ITEM if k is None else k for j, (k, _) in enumerate(raw["workers"])}
        ),
        "stopped": frozenset(raw.get("stopped", [])),
        "waiting": frozenset(raw["waiting"]),
        "drainer": raw.get("drainer", "idle"),
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


def map_workqueue(raws: Sequence[TraceRecord]) -> TraceMapping:
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
    lines = trace_lines(STEPS, raws, states, initial)
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
