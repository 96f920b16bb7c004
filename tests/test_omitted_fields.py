"""Optional fields an adapter omits are not compared, by random search and by the
spec walks alike (docs/protocol.md: a pop's ``initial``, an informer add call's
``initial``, the optional ``hello`` keys): an adapter for a client-go release without
isInInitialList must not "deviate" for leaving it out.

The adapter is the reference with every optional field taken out of its answers
(tests/conformance_fake_adapter.py, mode ``omit-optional``). The walks run on the part
of each graph near its initial state (every pop kind is there), to keep this quick.
"""

from __future__ import annotations

from collections import deque

import attrs
import pytest
from conform_helpers import fake, run_conform

from refimpl.conformance.protocol import without_omitted
from refimpl.conformance.walks.informer_mapping import InformerMapping
from refimpl.conformance.walks.models import SPEC_MAPPINGS
from refimpl.conformance.walks.run import drive, load_model_graph
from refimpl.tla.graph import Edge, StateGraph

OMITTING = fake("omit-optional:*")


def test_only_an_omitted_optional_field_is_left_out() -> None:
    item = {"kind": "item", "deltas": [], "initial": True}
    bare = {"kind": "item", "deltas": []}
    assert without_omitted("pop_nowait", item, bare) == bare
    assert without_omitted("pop_batch_nowait", item, bare) == bare
    # Present, it is compared; a field no method makes optional is always compared.
    assert without_omitted("pop_nowait", item, {**bare, "initial": False}) == item
    assert without_omitted("get_by_key", item, bare) == item
    assert without_omitted("pop_nowait", {"kind": "empty"}, bare) == {"kind": "empty"}


@pytest.mark.parametrize("component", ["delta_fifo", "real_fifo", "informer"])
def test_search_passes_an_adapter_that_omits_optional_fields(component: str) -> None:
    status, report = run_conform(OMITTING, components=[component], budget=4.0, seed=3)
    assert status == 0, report


def _near_init(graph: StateGraph, depth: int, free: tuple[str, ...] = ()) -> StateGraph:
    """The states within ``depth`` steps of the initial ones, and the edges among them;
    ``free`` actions (the informer's internal ones, taken eagerly) cost no step, so an
    eager run is never cut short."""
    dist = dict.fromkeys(graph.init, 0)
    out = graph.successors()
    todo = deque(graph.init)
    while todo:
        here = todo.popleft()
        for e in out[here]:
            cost = dist[here] + (e.action not in free)
            if cost <= depth and cost < dist.get(e.target, depth + 1):
                dist[e.target] = cost
                todo.append(e.target)
    kept = sorted(dist)
    index = {old: new for new, old in enumerate(kept)}
    edges = tuple(
        Edge(index[e.source], index[e.target], e.action, e.args)
        for e in graph.edges
        if e.source in index and e.target in index
    )
    return attrs.evolve(
        graph,
        states=tuple(graph.states[i] for i in kept),
        init=tuple(index[i] for i in graph.init),
        edges=edges,
    )


@pytest.mark.parametrize("model", ["DeltaFIFO", "RealFIFO", "RealFIFOAtomic", "Informer"])
def test_walks_pass_an_adapter_that_omits_optional_fields(model: str) -> None:
    mapping = SPEC_MAPPINGS[model]
    free: tuple[str, ...] = ()
    if isinstance(mapping, InformerMapping):
        mapping, free = attrs.evolve(mapping, pause=False), mapping.internal
    graph = _near_init(load_model_graph(model), 3, free)
    actions = {e.action for e in graph.edges}
    assert {"Pop"} & actions or {"Take"} & actions  # the pops are in this part
    run = drive(mapping, graph, OMITTING)
    assert run.ok, (run.refused, run.deviation and run.deviation.describe())
    assert run.coverage.covered == run.coverage.drivable > 0
