"""The committed state graphs (spec/graphs/), each read once per test process.

The replays, the walks, the mutants and the hash checks read the same graphs, and
reading InformerAtomic or InformerFaults takes seconds: they share one read per process
(under pytest-xdist each worker is a process and reads what its tests need). A
:class:`~refimpl.tla.graph.StateGraph` is frozen; no test changes a state it holds.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from refimpl.tla.graph import StateGraph, load_graph
from refimpl.tla.replay import replay

SPEC = Path(__file__).resolve().parents[1] / "spec"


def spec_graph(model: str) -> StateGraph:
    """The committed graph of ``model`` (spec/graphs/), read once."""
    return graph_file(SPEC / "graphs" / f"{model}.json.gz")


@functools.cache
def graph_file(path: Path) -> StateGraph:
    """The graph at ``path`` (under spec/), read once."""
    return load_graph(path)


def assert_reads_back(graph: StateGraph, mapping: Any) -> None:
    """``mapping`` builds the code in every state of ``graph`` and reads the state back."""
    for state in graph.states:
        assert mapping.spec_state(mapping.build(state)) == dict(state)


def assert_refines(name: str, graph: StateGraph, mapping: Any) -> None:
    """The whole replay of ``graph`` over ``mapping``: no mismatch, every state and
    every edge that moves taken (its summary printed under ``name``)."""
    report = replay(graph, mapping)
    print(name, report.summary())
    assert report.ok, "\n".join(report.mismatches)
    assert report.states == len(graph.states)
    assert report.edges == sum(1 for e in graph.edges if e.source != e.target)
