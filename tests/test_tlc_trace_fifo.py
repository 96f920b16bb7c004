"""Trace validation against spec/DeltaFIFO.tla and spec/RealFIFO.tla
(refimpl/tla/trace_fifo.py).

Without a jar: the mapping of hand-made DeltaFIFO and RealFIFO traces (relists, order
hints, the RealFIFO's atomic mode read from the trace), and that RealFIFO code steps
change the mapped state only as the step table says. With a jar (``tlc``): simulator
traces are behaviours of spec/RealFIFO.tla (atomic and not), and corrupted traces --
edited, or produced by a resync that syncs queued keys -- are rejected at their line.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trace_helpers import (
    FIFO_TRACE,
    RESYNC_TRACE,
    as_tla,
    changed_lines,
    ff,
    fifo_delta,
    fifo_obj,
    index_of_first,
    parse_generated,
    simulate,
    tlc,
)

from refimpl.cache.delta_fifo import DeltaFIFOCore
from refimpl.cache.deltas import DeltaType
from refimpl.tla import trace as tr
from refimpl.tla import trace_fifo
from refimpl.tla.values import Fn


def test_delta_fifo_mapping_of_a_hand_made_trace() -> None:
    m = tr.map_trace(FIFO_TRACE, "DeltaFIFO")
    relist = m.lines[6].state
    assert relist["queue"] == ("a", "c", "b")
    assert relist["items"] == Fn(
        {
            "a": (fifo_delta("Replaced", "a", 5),),
            "c": (fifo_delta("Replaced", "c", 6),),
            "b": (fifo_delta("Deleted", "b", 2, dfsu=True),),
        }
    )
    assert relist["store"] == Fn({"a": 5, "b": 2})
    assert m.lines[3].state["synced"] is True
    assert [(ln.action, ln.budget) for ln in m.lines][:3] == [
        ("reflector", 1),
        ("pop", 1),
        ("reflector", 1),
    ]
    assert m.lines[5].budget == 0 and m.lines[5].acts == frozenset()
    d = m.definitions
    assert d["TraceKeys"] == frozenset("abc")
    assert d["TraceRVs"] == frozenset({1, 2, 5, 6})
    assert d["TraceMaxQueued"] == 4  # the longest FIFO holds 3 deltas
    assert d["TraceObjData"] == frozenset(
        {fifo_obj("a", 1), fifo_obj("b", 2), fifo_obj("a", 5), fifo_obj("c", 6)}
    )
    # Relists as the lines show them; the empty list is always possible; only a
    # reflector step may relist.
    assert [line.hints["lists"] for line in m.lines] == [
        frozenset({(), (fifo_obj("a", 1), fifo_obj("b", 2))}),
        frozenset(),
        frozenset({()}),  # an event, not a relist
        frozenset(),
        frozenset(),
        frozenset(),
        frozenset({(), (fifo_obj("a", 5), fifo_obj("c", 6))}),
        frozenset(),
    ]
    assert d["TraceOrderData"] == frozenset()  # one tombstoned key: any order is tried


def test_delta_fifo_order_hints_come_from_the_trace() -> None:
    m = tr.map_trace(RESYNC_TRACE, "DeltaFIFO")
    assert m.definitions["TraceOrderData"] == frozenset({("d", "b", "a", "c")})
    assert m.lines[-1].reset and m.lines[-1].state["queue"] == ()


def test_a_relist_order_puts_newly_queued_keys_first() -> None:
    before = tr.map_trace(FIFO_TRACE[:1], "DeltaFIFO").lines[0].state
    # a and b queued; the relist lists c (new) and b; a (queued) and z (only stored)
    # get tombstones.
    after_line = ff(
        2,
        "reflector",
        [
            ("a", [("Replaced", 1), ("Deleted(DFSU)", 1)]),
            ("b", [("Replaced", 2), ("Replaced", 7)]),
            ("c", [("Replaced", 8)]),
            ("z", [("Deleted(DFSU)", 3)]),
        ],
        {},
        False,
    )
    after = tr.map_trace([FIFO_TRACE[0], after_line], "DeltaFIFO").lines[1].state
    listed, order = trace_fifo._fifo_hints(before, after)
    assert listed == (fifo_obj("c", 8), fifo_obj("b", 7))
    assert order == ("z",)


@tlc
def test_a_resync_of_queued_keys_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real code bug: resync queues Sync also for keys that have deltas queued (the
    stale store copy would land after a newer event). Rejected where it first happens."""

    def resync_everything(self: DeltaFIFOCore) -> None:
        assert self.known_objects is not None
        for key in self.known_objects.list_keys():
            obj, exists, err = self._lookup(key)
            if exists and err is None:
                self._queue_action(DeltaType.SYNC, obj)

    monkeypatch.setattr(DeltaFIFOCore, "resync", resync_everything)
    lines = [json.loads(line) for line in simulate("informer", seed=1, steps=120, fifo="delta")]
    monkeypatch.undo()

    def syncs_a_queued_key(pair: tuple[dict[str, Any], dict[str, Any]]) -> bool:
        before, after = (dict((k, ds) for k, ds in d["fifo"]) for d in pair)
        return any(
            k in before and len(ds) > len(before[k]) and ds[-1][0] == "Sync"
            for k, ds in after.items()
        )

    n = 1 + index_of_first(
        list(itertools.pairwise(lines)),
        syncs_a_queued_key,
        "where the broken resync syncs a queued key",
    )
    result = tr.validate(lines, "DeltaFIFO")
    assert result.failed is not None and result.failed.index == n, result.summary()
    assert result.failed.action == "reflector"


def rf(
    step: int, action: str, fifo: list[Any], store: dict[str, int], synced: bool
) -> dict[str, Any]:
    return {
        "step": step,
        "action": action,
        "desc": "",
        "generation": 0,
        "fifo": fifo,
        "store": store,
        "synced": synced,
    }


#: Atomic: relist [a1, b2]; a bookmark; update a; pop (ReplacedAll); pop (the bookmark);
#: resync; pop (Updated); pop (SyncAll).
REAL_TRACE = [
    rf(1, "reflector", [["ReplacedAll", 5, [["a", 1], ["b", 2]]]], {}, False),
    rf(2, "bookmark", [["ReplacedAll", 5, [["a", 1], ["b", 2]]], ["Bookmark", 6]], {}, False),
    rf(
        3,
        "reflector",
        [["ReplacedAll", 5, [["a", 1], ["b", 2]]], ["Bookmark", 6], ["Updated", "a", 7]],
        {},
        False,
    ),
    rf(4, "pop", [["Bookmark", 6], ["Updated", "a", 7]], {"a": 1, "b": 2}, True),
    rf(5, "pop", [["Updated", "a", 7]], {"a": 1, "b": 2}, True),
    rf(6, "reflector", [["Updated", "a", 7], ["SyncAll"]], {"a": 1, "b": 2}, True),
    rf(7, "pop", [["SyncAll"]], {"a": 7, "b": 2}, True),
    rf(8, "pop", [], {"a": 7, "b": 2}, True),
]


def test_real_fifo_mapping_of_a_hand_made_trace() -> None:
    m = tr.map_trace(REAL_TRACE, "RealFIFO")
    a1, b2, a7 = (Fn({"key": k, "rv": r, "dfsu": False}) for k, r in (("a", 1), ("b", 2), ("a", 7)))
    replaced_all = Fn({"type": "ReplacedAll", "obj": (a1, b2)})
    updated = Fn({"type": "Updated", "obj": a7})
    assert m.lines[0].state["log"] == (replaced_all,)
    assert m.lines[1].state == m.lines[0].state  # a bookmark maps to nothing
    assert m.lines[2].state["log"] == (replaced_all, updated)
    assert m.lines[3].state == {
        "log": (updated,),
        "processing": (),
        "store": Fn({"a": 1, "b": 2}),
        "synced": True,
    }
    assert m.lines[5].state["log"] == (updated, Fn({"type": "SyncAll", "obj": ()}))
    assert m.lines[0].hints == {"lists": frozenset({(), (a1, b2)})}
    # Atomic: Take and Process per queued entry; the bookmark step takes none.
    assert (m.lines[3].acts, m.lines[3].budget) == (frozenset({"Take", "Process"}), 4)
    assert (m.lines[1].acts, m.lines[1].budget) == (frozenset(), 0)
    assert m.definitions["TraceObjData"] == frozenset({a1, b2, a7})
    assert "    Atomic = TRUE" in tr.trace_module(m)[1].splitlines()
    # Forced non-atomic: one Pop per entry.
    n = tr.map_trace(REAL_TRACE, "RealFIFO", atomic=False)
    assert (n.lines[3].acts, n.lines[3].budget) == (frozenset({"Pop"}), 2)
    assert "    Atomic = FALSE" in tr.trace_module(n)[1].splitlines()


def test_real_fifo_mode_comes_from_the_trace() -> None:
    atomic = tr.map_trace(simulate("informer", 1, 120, "real-atomic"), "RealFIFO")
    plain = tr.map_trace(simulate("informer", 1, 120, "real"), "RealFIFO")
    assert "    Atomic = TRUE" in tr.trace_module(atomic)[1]
    assert "    Atomic = FALSE" in tr.trace_module(plain)[1]
    mixed = [REAL_TRACE[0], rf(2, "reflector", [["Sync", "a", 1]], {}, False)]
    with pytest.raises(ValueError, match="mixes atomic"):
        tr.map_trace(mixed, "RealFIFO")


def test_non_atomic_relist_hints_the_order_the_spec_chooses() -> None:
    log = [["Added", k, n] for n, k in enumerate("edcba", 1)]
    relist = [
        *log,
        *(["Deleted(DFSU)", k, n] for n, k in enumerate("edcb", 1)),
        ["Replaced", "a", 9],
    ]
    m = tr.map_trace(
        [rf(1, "reflector", log[:1], {}, False)]
        + [rf(n, "reflector", log[:n], {}, False) for n in range(2, 6)]
        + [rf(6, "reflector", relist, {}, False)],
        "RealFIFO",
    )
    orders = m.definitions["TraceOrderData"]
    assert isinstance(orders, frozenset)
    assert ("e", "d", "c", "b") in orders  # the tombstones, first-logged first
    assert ("e", "d", "c", "b", "a") in orders  # what a relist of nothing would tombstone


@pytest.mark.parametrize("fifo", ["real-atomic", "real"])
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_real_fifo_code_steps_change_only_as_listed(fifo: str, seed: int) -> None:
    m = tr.map_trace(simulate("informer", seed, steps=150, fifo=fifo), "RealFIFO")
    for line in changed_lines(m):
        assert line.reset or line.budget > 0, f"seed {seed}: line {line.index} ({line.action})"
    _, records = parse_generated(tr.trace_module(m)[0])
    assert records == [as_tla(line.record()) for line in m.lines], f"seed {seed}"


@tlc
def test_hand_made_real_fifo_trace_is_a_behaviour_and_corruptions_are_not() -> None:
    result = tr.validate(REAL_TRACE, "RealFIFO")
    assert result.ok and result.steps_checked == len(REAL_TRACE), result.summary()
    # The ReplacedAll is processed but b never reaches the store.
    lost = [*REAL_TRACE[:3], {**REAL_TRACE[3], "store": {"a": 1}}, *REAL_TRACE[4:]]
    result = tr.validate(lost, "RealFIFO")
    assert result.failed is not None and result.failed.index == 4, result.summary()
    assert "line 4 (simulator step 4, pop) is not reached" in result.summary()


REAL_RUNS = [
    ("informer", 1, "real-atomic"),
    ("replicaset", 1, "real-atomic"),
    ("informer", 2, "real"),
    ("replicaset", 1, "real"),
]


@tlc
@pytest.mark.parametrize(
    ("scenario", "seed", "fifo"), REAL_RUNS, ids=[f"{r[2]}-{r[0]}-seed{r[1]}" for r in REAL_RUNS]
)
def test_real_fifo_simulator_traces_are_behaviours(scenario: str, seed: int, fifo: str) -> None:
    lines = simulate(scenario, seed, steps=300, fifo=fifo)
    result = tr.validate(lines, "RealFIFO", atomic=fifo == "real-atomic")
    print(result.summary())
    assert result.ok, f"seed {seed}: " + result.summary()
    assert result.steps_checked == result.lines == len(lines)


@tlc
@pytest.mark.parametrize("fifo", ["real-atomic", "real"])
def test_a_corrupted_real_fifo_trace_is_rejected_at_its_line(fifo: str) -> None:
    """A pop that drops the store's change: the first pop after which the store moved
    is rewritten to keep the store of the line before."""
    lines = [json.loads(x) for x in simulate("informer", 1, steps=300, fifo=fifo)]
    n = (
        index_of_first(
            list(itertools.pairwise(lines)),
            lambda p: p[1]["action"] == "pop" and p[1]["store"] != p[0]["store"],
            "where a pop changes the store",
        )
        + 1
    )
    bad = [*lines[: n - 1], {**lines[n - 1], "store": lines[n - 2]["store"]}, *lines[n:]]
    result = tr.validate(bad, "RealFIFO", atomic=fifo == "real-atomic")
    assert result.failed is not None and result.failed.index == n, result.summary()
    assert result.failed.action == "pop" and result.steps_checked == n - 1
