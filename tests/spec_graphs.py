"""The committed state graphs (spec/graphs/), each read once per test process.

The replays, the walks, the mutants and the hash checks read the same graphs, and
reading InformerAtomic or InformerFaults takes seconds: they share one read per process
(under pytest-xdist each worker is a process and reads what its tests need). A
:class:`~refimpl.tla.graph.StateGraph` is frozen; no test changes a state it holds.
"""

from __future__ import annotations

import functools
from pathlib import Path

from refimpl.tla.graph import StateGraph, load_graph

SPEC = Path(__file__).resolve().parents[1] / "spec"


def spec_graph(model: str) -> StateGraph:
    """The committed graph of ``model`` (spec/graphs/), read once."""
    return graph_file(SPEC / "graphs" / f"{model}.json.gz")


@functools.cache
def graph_file(path: Path) -> StateGraph:
    """The graph at ``path`` (under spec/), read once."""
    return load_graph(path)
