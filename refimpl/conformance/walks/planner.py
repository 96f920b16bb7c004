"""The planner: covering walks of a model's graph, a directed Chinese postman with reset.

Owns :func:`plan_walks` (the walks that take every drivable edge at the least cost in
requests), the Euler circuit that cuts them (:func:`_euler_walks`) and the
minimum-cost flow under it (:func:`min_cost_flow`). The walker
(:mod:`refimpl.conformance.walks.walker`) sends a timed model's walks as planned,
follows an untimed model's plan where the mapping's ``planned`` says so, and sweeps up
what is left.

Where it is used, and what it is measured to save (``python benchmarks/spec_driven.py
--planner --markdown``: every model against the reference, planned and not; steps and
requests are exact, nothing in a walk is random; the seconds are one run on a 2-core
machine shared with five other jobs, and vary with its load more than with the plan)::

    model           planner  edges driven  steps  requests  requests/edge  seconds
    WorkQueue       yes      1154/1154      1143      1483           1.29      2.7
    WorkQueue       no       (timed: its delays come from the planned walk)
    DeltaFIFO       yes      24116/24116   38614     57245           2.37     90.4
    DeltaFIFO       no       24116/24116   44252     64442           2.67    219.6
    RealFIFO        yes      31744/31744   59657     93155           2.93     62.2
    RealFIFO        no       26649/31744   53638     77101           2.89     56.4  inconclusive
    RealFIFOAtomic  yes      34808/34808   85306     99932           2.87     16.9
    RealFIFOAtomic  no       34808/34808   89900    104526           3.00    226.1
    Informer        yes      26745/26745   56472     64031           2.39     50.0
    Informer        no       26745/26745   59857     68461           2.56    170.8
    InformerAtomic  yes      46787/46787   72058     81772           1.75    102.1
    InformerAtomic  no       46787/46787   93816    108044           2.31     76.2

The planner is kept where it helps and where the walks' pinned counts
(tests/test_spec_driven.py, docs/conformance.md) are its walks: the work queue cannot
be walked without it; DeltaFIFO and RealFIFOAtomic send 11% and 4% fewer requests with
it; without it the RealFIFO sweep runs out of tries with 5,095 edges untaken. The
informer models are walked without it (``InformerMapping.planned``), although it
would save 6% and 24% of their requests: their pinned walks are unplanned, planning
their graphs costs every run seconds before its first request, and the planned order
meets ``informer-synced-before-processing`` only after tens of thousands of steps
instead of hundreds (docs/conformance.md, "How the walks are built").
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Mapping, Sequence, Set

from refimpl.conformance.walks.drivable import DrivableGraph
from refimpl.conformance.walks.spec_mapping import DrivenEdge

__all__ = ["Move", "min_cost_flow", "plan_walks"]

#: A planned move: a step, or ``None`` for a reset (back to the initial state).
Move = DrivenEdge | None


def plan_walks(
    graph: DrivableGraph,
    cost: Callable[[DrivenEdge], int],
    reset_cost: int,
    done: Set[int] = frozenset(),
    start: int | None = None,
) -> list[list[DrivenEdge]]:
    """Walks that together take every drivable edge not in ``done``: the first from
    ``start`` (default: the initial state), each other one after a reset. Assumes
    every open order goes the way of the step planned.

    The walks are a directed Chinese postman tour with ``reset`` as an arc from every
    state back to the initial one. The *required* steps (one per edge still to take,
    the graph's first copy first) leave some states with more steps in than out and
    others with more out than in; a minimum-cost flow (:func:`min_cost_flow`) from
    the former to the latter over the graph's steps and the reset arcs, priced in
    requests (``cost`` per step, ``reset_cost`` per reset, and a little per step so
    that of two ways with as many requests the shorter wins), gives the cheapest
    repeated steps and resets that balance every state. A part the result does not
    connect to the initial state is joined by a shortest path there and a reset
    back. An Euler circuit of the whole (Hierholzer), cut at its resets, is the walks.
    """
    init = graph.init
    here = init if start is None else start
    required = _required_steps(graph, done)
    if not required:
        return []
    nodes = len(graph.out)
    arcs = _arcs(graph, cost, reset_cost)
    balance = [0] * nodes
    for step in required:
        balance[step.source] -= 1
        balance[step.target] += 1
    if here != init:  # the walk so far: a way from the initial state to here
        balance[init] -= 1
        balance[here] += 1
    flow = min_cost_flow(nodes, {k: w for k, (w, _) in arcs.items()}, balance)
    moves: list[tuple[int, int, Move]] = [(s.source, s.target, s) for s in required]
    for (u, v), count in flow.items():
        moves += [(u, v, arcs[(u, v)][1])] * count
    _join_unreached(graph, here, moves)
    return _euler_walks(nodes, init, here, moves)


def _required_steps(graph: DrivableGraph, done: Set[int]) -> list[DrivenEdge]:
    """One step per edge not in ``done``, the graph's first copy first."""
    n = len(graph.graph.states)
    required: list[DrivenEdge] = []
    covered = set(done)
    for step in sorted(graph.steps, key=lambda s: s.source // n):
        if not covered.issuperset(step.covers):
            covered.update(step.covers)
            required.append(step)
    return required


def _arcs(
    graph: DrivableGraph, cost: Callable[[DrivenEdge], int], reset_cost: int
) -> dict[tuple[int, int], tuple[int, Move]]:
    """Each arc of the flow: its weight and the move (the cheapest step between two
    states, or reset). Weights are 4 per request, plus 1 per step: of two ways with
    as many requests the shorter wins."""
    init = graph.init
    arcs: dict[tuple[int, int], tuple[int, Move]] = {}
    for step in graph.steps:
        weight = 4 * cost(step) + 1
        key = (step.source, step.target)
        if key not in arcs or weight < arcs[key][0]:
            arcs[key] = (weight, step)
    for u in range(len(graph.out)):
        key = (u, init)
        if u != init and (key not in arcs or 4 * reset_cost < arcs[key][0]):
            arcs[key] = (4 * reset_cost, None)
    return arcs


def _join_unreached(graph: DrivableGraph, here: int, moves: list[tuple[int, int, Move]]) -> None:
    """Add to ``moves`` what joins each part the initial state does not reach: a
    shortest path there and a reset back."""
    init = graph.init
    adjacent: list[list[int]] = [[] for _ in range(len(graph.out))]
    for u, v, _ in moves:
        adjacent[u].append(v)
    adjacent[init].append(here)
    seen: set[int] = set()

    def reach(start: int) -> None:
        todo = [start] if start not in seen else []
        seen.update(todo)
        while todo:
            for v in adjacent[todo.pop()]:
                if v not in seen:
                    seen.add(v)
                    todo.append(v)

    reach(init)
    for u in sorted({u for u, _, _ in moves}):
        if u in seen:
            continue
        path = graph.shortest_path(init, u)
        assert path  # every step's source is reachable (see DrivableGraph)
        moves += [(s.source, s.target, s) for s in path]
        moves.append((u, init, None))
        for s in path:
            adjacent[s.source].append(s.target)
        adjacent[u].append(init)
        for s in path:
            reach(s.target)


def _euler_walks(
    nodes: int, init: int, here: int, moves: list[tuple[int, int, Move]]
) -> list[list[DrivenEdge]]:
    """An Euler circuit of the balanced, connected ``moves`` (Hierholzer) that begins
    with the way from ``init`` to ``here``, cut at its resets, empty walks dropped."""
    out: list[list[tuple[int, Move | str]]] = [[] for _ in range(nodes)]
    for u, v, move in moves:
        out[u].append((v, move))
    for arcs in out:
        arcs.reverse()  # taken from the end: the planned order first
    out[init].append((here, "here"))  # taken first: the circuit begins with it
    stack: list[tuple[int, Move | str]] = [(init, "start")]
    circuit: list[Move | str] = []
    while stack:
        node = stack[-1][0]
        if out[node]:
            stack.append(out[node].pop())
        else:
            circuit.append(stack.pop()[1])
    circuit.reverse()
    walks: list[list[DrivenEdge]] = [[]]
    for arc in circuit[2:]:  # after "start" and "here"
        if arc is None:
            walks.append([])
        elif isinstance(arc, DrivenEdge):
            walks[-1].append(arc)
    # Any order of the walks after the first takes the same steps; the short ones
    # first, so that a deviation near the initial state is met on a short walk.
    first, *rest = [w for w in walks if w] or [[]]
    return [w for w in [first, *sorted(rest, key=len)] if w]


def min_cost_flow(
    nodes: int, arcs: Mapping[tuple[int, int], int], balance: Sequence[int]
) -> dict[tuple[int, int], int]:
    """A minimum-cost flow over uncapacitated ``arcs`` (weight >= 0) that sends
    ``balance[v]`` units out of every ``v`` with a positive balance and into every
    ``v`` with a negative one (the balances sum to 0, and every ``v`` with a negative
    balance must be reachable from every ``v`` with a positive one). Primal-dual:
    Dijkstra on reduced weights, then a blocking flow (Dinic) along the arcs of
    reduced weight 0, until everything is sent. Returns the flow per arc (> 0 only).
    """
    source, sink = nodes, nodes + 1
    total = sum(b for b in balance if b > 0)
    net = _Residual(nodes + 2)
    index = {key: net.add(key[0], key[1], total, w) for key, w in arcs.items()}
    for v, b in enumerate(balance):
        if b > 0:
            net.add(source, v, b, 0)
        elif b < 0:
            net.add(v, sink, -b, 0)
    sent = 0
    while sent < total:
        net.reprice(source, sink)
        sent += net.blocking_flows(source, sink)
    return {key: total - net.cap[a] for key, a in index.items() if net.cap[a] < total}


class _Residual:
    """A residual network with node potentials: arcs in pairs (an arc, then its
    reverse: ``a ^ 1``), each with its head, capacity and weight."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.head: list[int] = []
        self.cap: list[int] = []
        self.weight: list[int] = []
        self.out: list[list[int]] = [[] for _ in range(size)]
        self.potential = [0] * size

    def add(self, u: int, v: int, c: int, w: int) -> int:
        """An arc ``u -> v`` (capacity ``c``, weight ``w``) and its reverse; the arc's index."""
        self.out[u].append(len(self.head))
        self.head.append(v)
        self.cap.append(c)
        self.weight.append(w)
        self.out[v].append(len(self.head))
        self.head.append(u)
        self.cap.append(0)
        self.weight.append(-w)
        return len(self.head) - 2

    def tight(self, a: int, u: int) -> bool:
        """Whether arc ``a`` out of ``u`` has reduced weight 0."""
        return self.weight[a] + self.potential[u] == self.potential[self.head[a]]

    def reprice(self, source: int, sink: int) -> None:
        """Add to each potential the node's distance from ``source`` over the arcs with
        capacity left, in reduced weights (Dijkstra): the shortest ways become tight."""
        unreached = float("inf")
        dist: list[float] = [unreached] * self.size
        dist[source] = 0
        heap: list[tuple[float, int]] = [(0, source)]
        while heap:
            d, u = heapq.heappop(heap)
            if d > dist[u]:
                continue
            pu = self.potential[u]
            for a in self.out[u]:
                if self.cap[a]:
                    v = self.head[a]
                    nd = d + self.weight[a] + pu - self.potential[v]
                    if nd < dist[v]:
                        dist[v] = nd
                        heapq.heappush(heap, (nd, v))
        if dist[sink] == unreached:
            raise ValueError("the flow cannot reach every state that needs a way in")
        for v in range(self.size):
            if dist[v] != unreached:
                self.potential[v] += int(dist[v])

    def blocking_flows(self, source: int, sink: int) -> int:
        """Blocking flows (Dinic) along the tight arcs until none reaches ``sink``; the
        units sent."""
        sent = 0
        while True:
            level = self.levels(source)
            if level[sink] < 0:
                return sent
            pointer = [0] * self.size
            while (path := self.augmenting_path(source, sink, level, pointer)) is not None:
                got = min(self.cap[a] for a in path)
                for a in path:
                    self.cap[a] -= got
                    self.cap[a ^ 1] += got
                sent += got

    def levels(self, source: int) -> list[int]:
        """Each node's distance in tight arcs with capacity left from ``source`` (breadth
        first), -1 where none reaches."""
        level = [-1] * self.size
        level[source] = 0
        queue = deque([source])
        while queue:
            u = queue.popleft()
            for a in self.out[u]:
                v = self.head[a]
                if self.cap[a] and level[v] < 0 and self.tight(a, u):
                    level[v] = level[u] + 1
                    queue.append(v)
        return level

    def augmenting_path(
        self, source: int, sink: int, level: Sequence[int], pointer: list[int]
    ) -> list[int] | None:
        """The arcs of a path from ``source`` to ``sink`` one level up at each arc, or
        None. ``pointer[u]``: the first of ``u``'s arcs not yet found a dead end."""
        path: list[int] = []
        u = source
        while u != sink:
            a = self.next_arc(u, level, pointer)
            if a is None:  # a dead end: back one arc, and never through it again
                if not path:
                    return None
                u = self.head[path.pop() ^ 1]
                pointer[u] += 1
                continue
            path.append(a)
            u = self.head[a]
        return path

    def next_arc(self, u: int, level: Sequence[int], pointer: list[int]) -> int | None:
        """From ``pointer[u]`` on, the first arc out of ``u`` with capacity left that is
        tight and goes one level up (``pointer[u]`` then points at it), or None."""
        arcs_u = self.out[u]
        while pointer[u] < len(arcs_u):
            a = arcs_u[pointer[u]]
            if self.cap[a] and level[self.head[a]] == level[u] + 1 and self.tight(a, u):
                return a
            pointer[u] += 1
        return None
