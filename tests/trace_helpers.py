"""What the trace validation tests share (tests/test_tlc_trace_*.py): the ``tlc`` mark,
hand-made WorkQueue and DeltaFIFO trace lines, simulator runs as trace lines, and the
generated module read back (refimpl/tla/trace_core.py writes it).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import pytest

from refimpl.sim.simulator import Simulator
from refimpl.tla import trace as tr
from refimpl.tla.runner import (
    tlc_unavailable_reason,
)
from refimpl.tla.values import Fn, ModelValue, Value, parse_value

T = TypeVar("T")


_REASON = tlc_unavailable_reason()


needs_tlc = [
    pytest.mark.tlc,
    pytest.mark.skipif(_REASON is not None, reason=f"TLC not available: {_REASON}"),
    pytest.mark.timeout(180),
]


def tlc(fn: Any) -> Any:
    for mark in reversed(needs_tlc):
        fn = mark(fn)
    return fn


def index_of_first(items: Sequence[T], pred: Callable[[T], object], what: str) -> int:
    """The 1-based index of the first item satisfying ``pred``."""
    for n, item in enumerate(items, 1):
        if pred(item):
            return n
    raise AssertionError(f"no trace line {what}: pick another seed")


def wq(
    step: int,
    action: str,
    queue: Sequence[str] = (),
    dirty: Sequence[str] = (),
    processing: Sequence[str] = (),
    workers: Sequence[str | None] = (None, None),
    waiting: Sequence[str] = (),
    gen: int = 0,
) -> dict[str, Any]:
    """A simulator trace line as far as the work queue mapping reads it."""
    return {
        "step": step,
        "action": action,
        "desc": "",
        "generation": gen,
        "queue": list(queue),
        "dirty": sorted(dirty),
        "processing": sorted(processing),
        "waiting": {k: 1.5 for k in waiting},
        "workers": [[w, "idle" if w is None else "got"] for w in workers],
    }


#: Add a; worker 0 gets it; a is re-added in flight; the reconcile fails, so done
#: re-queues a (dirty) and adds it rate-limited; the delay passes (a is dirty: no-op);
#: the process crashes.
WQ_TRACE = [
    wq(1, "dispatch", ["a"], ["a"]),
    wq(2, "get", [], [], ["a"], ("a", None)),
    wq(3, "dispatch", [], ["a"], ["a"], ("a", None)),
    wq(4, "reconcile", [], ["a"], ["a"], ("a", None)),
    wq(5, "done", ["a"], ["a"], [], waiting=["a"]),
    wq(6, "advance", ["a"], ["a"], []),
    wq(7, "crash", gen=1),
]


def ff(
    step: int,
    action: str,
    fifo: Sequence[tuple[str, Sequence[tuple[str, int]]]],
    store: dict[str, int],
    synced: bool,
    gen: int = 0,
) -> dict[str, Any]:
    """A trace line as the DeltaFIFO mapping reads it; deltas as (type, rv)."""
    return {
        "step": step,
        "action": action,
        "generation": gen,
        "fifo": [[k, [[t, k, rv] for t, rv in ds]] for k, ds in fifo],
        "store": dict(store),
        "synced": synced,
    }


#: List a@1, b@2; pop a; watch: a updated @5; pop b (the last initial key: synced),
#: pop a; a client write (no FIFO change); relist: a@5 and c@6 listed, b gone from the
#: server (a tombstone at its stored rv, after the listed keys); pop a.
FIFO_TRACE = [
    ff(1, "reflector", [("a", [("Replaced", 1)]), ("b", [("Replaced", 2)])], {}, False),
    ff(2, "pop", [("b", [("Replaced", 2)])], {"a": 1}, False),
    ff(3, "reflector", [("b", [("Replaced", 2)]), ("a", [("Updated", 5)])], {"a": 1}, False),
    ff(4, "pop", [("a", [("Updated", 5)])], {"a": 1, "b": 2}, True),
    ff(5, "pop", [], {"a": 5, "b": 2}, True),
    ff(6, "client", [], {"a": 5, "b": 2}, True),
    ff(
        7,
        "reflector",
        [("a", [("Replaced", 5)]), ("c", [("Replaced", 6)]), ("b", [("Deleted(DFSU)", 2)])],
        {"a": 5, "b": 2},
        True,
    ),
    ff(8, "pop", [("c", [("Replaced", 6)]), ("b", [("Deleted(DFSU)", 2)])], {"a": 5, "b": 2}, True),
]


#: List four objects, pop them all, then a resync queues Sync for all four in the
#: (map) order d, b, a, c; then the process crashes.
_LISTED = [("a", 1), ("b", 2), ("c", 3), ("d", 4)]


RESYNC_TRACE = [
    ff(1, "reflector", [(k, [("Replaced", rv)]) for k, rv in _LISTED], {}, False),
    *(
        ff(
            2 + j,
            "pop",
            [(k, [("Replaced", rv)]) for k, rv in _LISTED[j + 1 :]],
            dict(_LISTED[: j + 1]),
            j == 3,
        )
        for j in range(4)
    ),
    ff(
        6,
        "reflector",
        [(k, [("Sync", rv)]) for k, rv in (("d", 4), ("b", 2), ("a", 1), ("c", 3))],
        {"a": 1, "b": 2, "c": 3, "d": 4},
        True,
    ),
    ff(7, "crash", [], {}, False, gen=1),
]


def fifo_obj(key: str, rv: int, dfsu: bool = False) -> Fn:
    return Fn({"key": key, "rv": rv, "dfsu": dfsu})


def fifo_delta(kind: str, key: str, rv: int, dfsu: bool = False) -> Fn:
    return Fn({"type": kind, "obj": fifo_obj(key, rv, dfsu)})


def simulate(scenario: str, seed: int, steps: int = 300, fifo: str = "real-atomic") -> list[str]:
    out = io.StringIO()
    Simulator(scenario, seed=seed, fifo_mode=fifo, trace=out).run(steps)
    return out.getvalue().splitlines()


def as_tla(value: Value) -> Value:
    """``value`` with every empty function written as the empty sequence: the same TLA+
    value, which TLC prints (and values.py reads back) as ``<<>>``."""
    if isinstance(value, Fn):
        return Fn({k: as_tla(v) for k, v in value.items()}) if len(value) else ()
    if isinstance(value, tuple):
        return tuple(as_tla(v) for v in value)
    if isinstance(value, frozenset):
        return frozenset(as_tla(v) for v in value)
    return value


def parse_generated(module: str) -> tuple[dict[str, Value], list[Value]]:
    """The definitions and TraceData records of a generated module, read back."""
    defs: dict[str, Value] = {}
    records: list[Value] = []
    in_data = False
    for line in module.splitlines():
        if line == "TraceData == <<":
            in_data = True
        elif line == ">>":
            in_data = False
        elif in_data:
            text = line.split("  \\*")[0].strip().rstrip(",")
            record = parse_value(text)
            assert isinstance(record, Fn)
            ref = record["state"]
            assert isinstance(ref, ModelValue)
            records.append(record.updated("state", defs[ref.name]))
        elif " == " in line and not line.startswith(("----", "(*")):
            name, _, text = line.partition(" == ")
            defs[name] = parse_value(text)
    return defs, records


def changed_lines(m: tr.TraceMapping) -> Iterator[tr.TraceLine]:
    """The lines whose mapped state differs from the line before."""
    previous = m.initial
    for line in m.lines:
        if line.state != previous:
            yield line
        previous = line.state
