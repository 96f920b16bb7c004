"""The drivable steps of a model's graph, indexed for search, and which edges are taken.

Owns :class:`DrivableGraph` (a mapping's steps from a graph: what is reachable from
the initial state, each node's steps, breadth-first searches over them) and
:class:`TakenEdges` (the graph edges a walk has taken, with a count per node of the
steps that would still take a new one). Shared by the planner
(:mod:`refimpl.conformance.walks.planner`) and the walker
(:mod:`refimpl.conformance.walks.walker`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping

from refimpl.conformance.walks.spec_mapping import (
    DrivenEdge,
    SpecMapping,
    shared_credit,
    state_classes,
)
from refimpl.tla.graph import StateGraph

__all__ = ["DrivableGraph", "TakenEdges"]


class DrivableGraph:
    """The drivable steps of a graph, indexed for search."""

    def __init__(self, graph: StateGraph, mapping: SpecMapping, methods: frozenset[str]) -> None:
        self.graph = graph
        steps, self.undriven = mapping.driven(graph, methods)
        #: per state, the first state the adapter cannot tell from it (see shared_credit)
        self.classes = state_classes(graph, mapping.hidden)
        steps = shared_credit(graph, mapping, steps, self.classes)
        # A mapping may walk several copies of the graph (the informer's paused copy:
        # node ``i + k * len(states)`` is state ``i``).
        nodes = max([len(graph.states) - 1, *(max(s.source, s.target) for s in steps)]) + 1
        self.out: list[list[DrivenEdge]] = [[] for _ in range(nodes)]
        for step in steps:
            self.out[step.source].append(step)
        self.init = graph.init[0]
        reach = self.reachable(self.init)
        self.steps = [s for s in steps if s.source in reach]
        self.drivable = {i for s in self.steps for i in s.covers}
        listed = {i for s in steps for i in s.covers}
        self.unreachable = len(listed - self.drivable)
        #: each node's predecessors (built when first needed)
        self.into: list[list[int]] | None = None

    def reachable(self, start: int) -> set[int]:
        seen = {start}
        todo = [start]
        while todo:
            for step in self.out[todo.pop()]:
                if step.target not in seen:
                    seen.add(step.target)
                    todo.append(step.target)
        return seen

    def search(self, start: int, found: Callable[[int], bool]) -> list[DrivenEdge] | None:
        """Shortest path from ``start`` to the nearest state ``found`` accepts (breadth
        first), or None if none is reachable."""
        back: dict[int, DrivenEdge | None] = {start: None}
        todo = deque([start])
        while todo:
            here = todo.popleft()
            if found(here):
                path: list[DrivenEdge] = []
                while (prev := back[here]) is not None:
                    path.append(prev)
                    here = prev.source
                return path[::-1]
            for step in self.out[here]:
                if step.target not in back:
                    back[step.target] = step
                    todo.append(step.target)
        return None

    def tree(self, start: int) -> dict[int, DrivenEdge | None]:
        """A breadth-first tree from ``start``: each reachable node's last step."""
        back: dict[int, DrivenEdge | None] = {start: None}
        todo = deque([start])
        while todo:
            for step in self.out[todo.popleft()]:
                if step.target not in back:
                    back[step.target] = step
                    todo.append(step.target)
        return back

    @staticmethod
    def path_in(back: Mapping[int, DrivenEdge | None], node: int) -> list[DrivenEdge]:
        """The path to ``node`` in a tree from :meth:`tree`."""
        path: list[DrivenEdge] = []
        while (prev := back[node]) is not None:
            path.append(prev)
            node = prev.source
        return path[::-1]

    def path_to_untaken(self, start: int, taken: TakenEdges) -> list[DrivenEdge] | None:
        """Shortest path from ``start`` ending in a step that covers an untaken edge."""
        path = self._nearest_open(start, taken)
        if path is None:
            return None
        here = path[-1].target if path else start
        return [*path, next(s for s in self.out[here] if taken.is_open(s))]

    def _nearest_open(self, start: int, taken: TakenEdges) -> list[DrivenEdge] | None:
        """:meth:`search` for a state with an open step, the same path, visiting fewer
        states: late in a walk the open states are few and far, and a plain search
        visited hundreds per call (most of a paused informer walk's time). Each node
        has a floor, a lower bound on its distance to an open state (its distance when
        last computed: distances only grow as steps close). A search for a path of at
        most ``limit`` steps skips a node reached in ``depth`` steps whose ``depth +
        floor`` exceeds it: such a node lies on no shortest path to an open state, and
        every node that does, and the step that first reaches it, is kept in the same
        order, so the first open state reached is the one :meth:`search` returns. The
        limit starts at the start's floor and grows while nothing is found; the floors
        are computed again once the failed searches have cost as much as that."""
        if taken.open_from[start]:
            return []
        floor = taken.floor or self._floors(taken)
        limit = floor[start]
        while limit < len(floor):  # a floor of len(floor): no open state is reachable
            path, work = self._search_within(start, taken.open_from, floor, limit)
            if path is not None:
                return path
            taken.stale += work
            if taken.stale > len(floor):
                floor = self._floors(taken)
                limit = max(limit + 1, floor[start])
            else:
                limit += 1
        return None

    def _search_within(
        self, start: int, open_from: list[int], floor: list[int], limit: int
    ) -> tuple[list[DrivenEdge] | None, int]:
        """Breadth first from ``start`` over the nodes ``depth + floor <= limit``: the
        path to the first open state reached, and how many steps were looked at."""
        back: dict[int, DrivenEdge | None] = {start: None}
        level = [start]
        depth = work = 0
        while level and depth < limit:
            depth += 1
            reached: list[int] = []
            for here in level:
                for step in self.out[here]:
                    target = step.target
                    work += 1
                    if target in back or depth + floor[target] > limit:
                        continue
                    back[target] = step
                    if open_from[target]:
                        return self.path_in(back, target), work
                    reached.append(target)
            level = reached
        return None, work

    def _floors(self, taken: TakenEdges) -> list[int]:
        """Each node's distance to the nearest state with an open step (breadth first,
        backwards from all of them); ``len(self.out)`` where there is none."""
        self._predecessors()
        assert self.into is not None
        none = len(self.out)
        floor = [none] * none
        todo = deque(i for i, n in enumerate(taken.open_from) if n)
        for i in todo:
            floor[i] = 0
        while todo:
            here = todo.popleft()
            for before in self.into[here]:
                if floor[before] == none:
                    floor[before] = floor[here] + 1
                    todo.append(before)
        taken.floor, taken.stale = floor, 0
        return floor

    def _predecessors(self) -> None:
        if self.into is None:
            self.into = [[] for _ in self.out]
            for step in self.steps:
                self.into[step.target].append(step.source)

    def distances_to(self, goal: int) -> dict[int, int]:
        """Steps from each node that reaches ``goal`` to it (breadth first, backwards)."""
        self._predecessors()
        assert self.into is not None
        dist = {goal: 0}
        todo = deque([goal])
        while todo:
            here = todo.popleft()
            for before in self.into[here]:
                if before not in dist:
                    dist[before] = dist[here] + 1
                    todo.append(before)
        return dist

    def shortest_path(self, start: int, goal: int) -> list[DrivenEdge]:
        return self.search(start, lambda state: state == goal) or []


class TakenEdges:
    """The graph edges taken so far, with a count per state of its steps that would
    still take a new edge (so the search for the nearest one is a plain BFS)."""

    def __init__(self, graph: DrivableGraph) -> None:
        self.edges: set[int] = set()
        self.total = len(graph.drivable)
        self.left: dict[DrivenEdge, int] = {}
        self.steps_of: dict[int, list[DrivenEdge]] = {}
        self.open_from = [0] * len(graph.out)
        #: DrivableGraph's floors (distances to an open state, when last computed: they
        #: only grow) and the work searches have spent since (see _nearest_open)
        self.floor: list[int] | None = None
        self.stale = 0
        for step in graph.steps:
            self.left[step] = len(set(step.covers))
            if self.left[step]:  # a step covering no edge (the informer's pause) is never open
                self.open_from[step.source] += 1
            for i in set(step.covers):
                self.steps_of.setdefault(i, []).append(step)

    def is_open(self, step: DrivenEdge) -> bool:
        return self.left.get(step, 0) > 0

    @property
    def done(self) -> bool:
        """Every drivable edge taken (a walk only takes steps reachable from the initial
        state, so every edge taken is drivable: counting suffices)."""
        return len(self.edges) >= self.total

    def update(self, covers: tuple[int, ...]) -> None:
        for i in covers:
            if i in self.edges:
                continue
            self.edges.add(i)
            for step in self.steps_of.get(i, ()):
                self.left[step] -= 1
                if self.left[step] == 0:
                    self.open_from[step.source] -= 1
