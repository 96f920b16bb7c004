"""The InformerResync walk (refimpl/conformance/walks/informer_resync_mapping.py): which
handlers a resync tick finds due is the clock's, and the walk drives every due set.

The reference's walk and the caught bug (``informer-relist-as-resync``) are in
tests/test_spec_driven.py with the other models; here: that every due set of the
eager fragment is driven, that the walk's answers pin the due set (a mapping that
forgets part of the clock's history deviates against the reference), and what an
adapter must declare.
"""

from __future__ import annotations

import sys

import attrs
from spec_graphs import spec_graph

from refimpl.conformance.walks.drivable import DrivableGraph
from refimpl.conformance.walks.informer_resync_mapping import (
    INFORMER_RESYNC,
    LATE_H2,
    InformerResyncMapping,
)
from refimpl.conformance.walks.run import drive
from refimpl.conformance.walks.spec_mapping import DrivenEdge
from refimpl.tla.graph import StateGraph
from refimpl.tla.values import Fn

REFERENCE = [sys.executable, "-m", "refimpl.conformance.reference.adapter"]


def _due_sets(graph: StateGraph, steps: list[DrivenEdge]) -> set[tuple[bool, frozenset[str]]]:
    """(h2 added, the handlers found due) of each ResyncCheck step."""
    n = len(graph.states)
    found = set()
    for step in steps:
        if step.action != "ResyncCheck":
            continue
        source, target = graph.states[step.source % n], graph.states[step.target % n]
        syncing = target["syncing"]
        assert isinstance(syncing, Fn)
        added = ("h1", "h2") if source["added2"] else ("h1",)
        found.add((bool(source["added2"]), frozenset(h for h in added if syncing[h])))
    return found


def test_every_due_set_of_the_eager_fragment_is_driven() -> None:
    """Both sets with h1 alone, all four with h2 added; and no tick of the eager
    fragment is left to a clock that cannot give it (h2 can be added before the last
    list on some path to every state a tick with h2 due leaves)."""
    graph = spec_graph("InformerResync")
    drivable = DrivableGraph(graph, INFORMER_RESYNC, INFORMER_RESYNC.methods)
    every = {frozenset(s) for s in ((), ("h1",), ("h2",), ("h1", "h2"))}
    want = {(False, d) for d in every if "h2" not in d} | {(True, d) for d in every}
    assert _due_sets(graph, drivable.steps) == want
    assert drivable.undriven[LATE_H2] == 0
    ticks = {i for i, e in enumerate(graph.edges) if e.action == "ResyncCheck"}
    driven = ticks & drivable.drivable
    # The others leave a state where processing is pending (the eager walk's rule).
    quiet_sources = {s.source % len(graph.states) for s in drivable.steps}
    assert driven == {i for i in ticks if graph.edges[i].source in quiet_sources}


@attrs.frozen
class _ForgetsTheDrops(InformerResyncMapping):
    """A mapping that does not count the 2 s before a drop as moving the clock: it
    believes h2, added with a period after a drop, due at the next tick."""

    def _copies_after(self, graph: StateGraph, step: DrivenEdge, copy: int) -> list[int]:
        if step.action == "WatchDrop":
            return [copy]
        return super()._copies_after(graph, step, copy)


def test_the_answers_pin_the_due_set() -> None:
    """The reference's calls after a tick tell which handlers were due: a mapping that
    forgets the drops' waits expects h2's resync update where the reference's h2 is
    not yet due, and deviates at that ResyncCheck."""
    run = drive(_ForgetsTheDrops(), spec_graph("InformerResync"), REFERENCE)
    assert run.deviation is not None, run.coverage.summary()
    text = run.deviation.describe()
    path = run.deviation.path
    assert path[-1].startswith("ResyncCheck"), text
    assert any(p.startswith("WatchDrop") for p in path), text
    assert any(p.startswith("AddHandler") for p in path), text
    assert '"handler": "h2", "kind": "update"' in text, text


def test_an_adapter_must_declare_resync_and_the_delta_fifo() -> None:
    both = {"behaves_like": ["real-atomic", "delta"], "resync": True}
    assert INFORMER_RESYNC.refuses(both) is None
    no_resync = INFORMER_RESYNC.refuses({**both, "resync": False})
    assert no_resync is not None and "'resync': true" in no_resync
    no_delta = INFORMER_RESYNC.refuses({**both, "behaves_like": ["real-atomic"]})
    assert no_delta is not None and "fifo='delta'" in no_delta
