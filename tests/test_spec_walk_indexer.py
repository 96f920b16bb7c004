"""The spec walk of spec/Indexer.tla over the protocol's ``store``
(refimpl/conformance/walks/indexer_mapping.py): the objects it derives from the graph
are the model's, and the lost-entry update of client-go 1.23 (kubernetes PR #109137) is
caught on the edge that PR is about, from {x} to {x, y}. tests/test_spec_driven.py holds
the full walk against the reference and each broken store (its CAUGHT/PASSES tables)."""

from __future__ import annotations

import sys
from pathlib import Path

import attrs
from spec_graphs import spec_graph
from test_conformance_broken import BROKEN

from refimpl.conformance.walks.indexer_mapping import INDEXER, IndexerMapping, index_values
from refimpl.conformance.walks.run import drive
from refimpl.conformance.walks.spec_mapping import DrivenEdge
from refimpl.tla.graph import StateGraph
from refimpl.tla.mappings import mc_constants
from refimpl.tla.values import Fn

REFERENCE = [sys.executable, "-m", "refimpl.conformance.reference.adapter"]
SPEC = Path(__file__).parent.parent / "spec"


def test_versions_are_filed_as_the_model_says() -> None:
    index_of = mc_constants(SPEC / "MCIndexer.tla")["IndexOf"]
    assert isinstance(index_of, tuple)
    assert index_values(spec_graph("Indexer")) == {n + 1: s for n, s in enumerate(index_of)}
    # Several values at once: the multi-valued index the lost entry needs.
    assert max(len(s) for s in index_values(spec_graph("Indexer")).values()) == 2


def _values(graph: StateGraph, step: DrivenEdge) -> tuple[frozenset[str], frozenset[str]]:
    """The value sets of the updated key's old and new versions."""
    items = graph.states[step.source]["items"]
    assert isinstance(items, Fn)
    old, new = items[step.args[0]], step.args[1]
    assert isinstance(old, int) and isinstance(new, int)
    of = index_values(graph)
    return of[old], of[new]


@attrs.frozen
class GrowOnly(IndexerMapping):
    """The walk without any update but those from {x} to {x, y} (and without deletes
    or replaces): the only update a lost entry can show on is the one PR #109137 fixed."""

    def driven(
        self, graph: StateGraph, methods: frozenset[str]
    ) -> tuple[list[DrivenEdge], dict[str, int]]:
        steps, _ = super().driven(graph, methods)
        grow = (frozenset({"x"}), frozenset({"x", "y"}))
        kept = [
            e
            for e in steps
            if e.action == "Add" or (e.action == "Update" and _values(graph, e) == grow)
        ]
        return kept, {}


def test_lost_entry_is_caught_growing_from_one_value_to_two() -> None:
    graph = spec_graph("Indexer")
    grow = GrowOnly()
    reference = drive(grow, graph, REFERENCE)
    assert reference.ok, reference.deviation and reference.deviation.describe()
    assert reference.coverage.covered == reference.coverage.drivable > 0
    lost = [sys.executable, str(BROKEN / "adapter.py"), "--bug", "update-drops-shared-index-value"]
    found = drive(grow, graph, lost).deviation
    assert found is not None, "the lost entry passed every {x} -> {x, y} update"
    assert found.steps and found.steps[-1].action == "Update", found.describe()
    assert _values(graph, found.steps[-1]) == (frozenset({"x"}), frozenset({"x", "y"}))
    # The failing answer is the index of x, missing the updated key.
    assert found.request["args"]["value"] == "x=1", found.describe()


def test_the_full_walk_drives_every_edge() -> None:
    run = drive(INDEXER, spec_graph("Indexer"), REFERENCE)
    assert run.ok, run.deviation and run.deviation.describe()
    assert run.coverage.covered == run.coverage.drivable == run.coverage.edges
