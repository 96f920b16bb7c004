"""The walker's search for the nearest step that takes an untaken edge
(``DrivableGraph.path_to_untaken``) skips the states that lie on no shortest path to
one; it must find the very path a plain breadth-first search finds (the walks, and
so their pinned step and request counts, depend on it) however the edges are taken.
"""

from __future__ import annotations

import random

import pytest
from spec_graphs import spec_graph

from refimpl.conformance.walks.drivable import DrivableGraph, TakenEdges
from refimpl.conformance.walks.models import SPEC_MAPPINGS
from refimpl.conformance.walks.spec_mapping import DrivenEdge

SEED = 26


def plain(graph: DrivableGraph, start: int, taken: TakenEdges) -> list[DrivenEdge] | None:
    """The first open step's path as a breadth-first search over every state finds it."""
    path = graph.search(start, lambda state: taken.open_from[state] > 0)
    if path is None:
        return None
    here = path[-1].target if path else start
    return [*path, next(s for s in graph.out[here] if taken.is_open(s))]


@pytest.mark.parametrize("model", ["WorkQueue", "DeltaFIFO"])
def test_the_nearest_open_step_is_the_plain_searchs(model: str) -> None:
    mapping = SPEC_MAPPINGS[model]
    graph = DrivableGraph(spec_graph(model), mapping, mapping.methods)
    taken = TakenEdges(graph)
    rng = random.Random(SEED)
    starts = sorted(graph.reachable(graph.init))
    steps = list(graph.steps)
    rng.shuffle(steps)
    # Edges are taken in batches of random size between the searches, so the floors
    # go stale by one step or by many (the search then grows its limit, or computes
    # them again), until every edge is taken and no search finds anything.
    found = nothing = 0
    while True:
        for start in rng.sample(starts, 3):
            path = graph.path_to_untaken(start, taken)
            assert path == plain(graph, start, taken), (model, start)
            found += path is not None and len(path) > 2
            nothing += path is None
        if not steps:
            break
        batch = rng.randint(1, len(steps) // 20 + 1)
        for step in steps[:batch]:
            taken.update(step.covers)
        del steps[:batch]
    assert found and nothing
