"""Spec-driven conformance: follow every edge of a TLA+ model's state graph in an adapter.

``refimpl conform --from-spec MODEL -- ADAPTER`` loads the committed state graph of
MODEL (spec/graphs/, the graphs the code replay checks refimpl against), and drives the
adapter from the initial state along edges until every edge the protocol can drive has
been taken once. Each step sends the edge's request (:mod:`refimpl.conformance.walks.mapping`
translates spec actions), compares the answer with what the edge's states make
observable, then checks a few observations (``len``, ``has_synced``) against the target
state: carried by the step's last call where the adapter declares them
(docs/protocol.md, "Observations carried by a call"), else each a request of its own.
Edges that differ only in variables the harness alone holds (the driver's ``hidden``:
which worker holds an item, what the consumer does) are one test: taking one covers
all (:func:`~refimpl.conformance.walks.mapping.shared_credit`). A wrong answer is
reported with the path that led to it from the initial state: a shortest path to the
edge's source, then the edge.

How the walks are built (:func:`plan_walks`): a directed Chinese postman tour. Every
drivable edge must be taken once; ``reset`` is an arc from every state back to the
initial one. A minimum-cost flow, priced in the requests each step sends, says which
steps to repeat and where to reset so that every state is left as often as it is
entered; an Euler circuit of the result, cut at its resets, is the walks. A *timed*
model (the work queue's delayed adds) is sent as planned, because an ``add_after``'s
delay must make it fall due at the walk's later ``Ready``. Other models follow the
plan until an open order (below) goes another way; the walk then rejoins the plan at
the nearest state of the rest of its planned walk, and at the end a sweep takes what
that left out: a breadth-first search for the nearest untaken edge, again and again,
resetting when none is reachable, and seeded random near-shortest paths to untaken
steps when the adapter's history keeps it from them.

Where the spec leaves an order open (the order of a relist's tombstones or a resync's
Sync deltas follows Go's map order), one request has several successor states: the
harness keeps every successor the answers allow and lets later answers decide. Edges
taken while the state was not yet known are credited once it is; until then they count
as taken "with the order open" in the report.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import random
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence, Set
from pathlib import Path
from typing import Any, TextIO

import attrs

from refimpl.conformance.process import AdapterFailure, AdapterProcess
from refimpl.conformance.walks.mapping import (
    DRIVERS,
    HARNESS_ONLY,
    Check,
    DrivenEdge,
    SpecDriver,
    request_key,
    shared_credit,
    state_classes,
)
from refimpl.tla.graph import StateGraph, load_graph
from refimpl.tla.manifest import default_spec_dir, load_manifest
from refimpl.tla.values import Value

__all__ = [
    "DRIVERS",
    "Coverage",
    "Deviation",
    "SpecRun",
    "drive",
    "load_model_graph",
    "plan_walks",
]

#: A request sent and the answer it got.
Logged = tuple[dict[str, Any], Any]


@attrs.frozen
class Deviation:
    """The first answer the spec does not allow, and the steps that led to it."""

    #: the spec actions from the initial state; the last one got the wrong answer
    path: tuple[str, ...]
    request: dict[str, Any]
    expected: tuple[Any, ...]
    actual: Any
    #: every request since the last reset, with its answer
    log: tuple[Logged, ...]
    #: the steps as the walker took them (for replaying a shorter path)
    steps: tuple[DrivenEdge, ...] = ()
    #: True: ``path`` is a shorter spec path (see _Walker.shorten), replayed on a reset
    #: adapter, failing again; False: every shorter path tried passed
    shortened: bool | None = None

    def describe(self, show: int = 40) -> str:
        if self.shortened:
            head = "a shorter path in the spec, replayed after a reset"
        elif self.shortened is False:
            head = "the walk from the initial state (no shorter path tried failed)"
        else:
            head = "the path from the initial state"
        lines = [f"{head} (spec actions; the last one got a wrong answer):"]
        first = max(0, len(self.path) - show)
        if first:
            lines.append(f"  ... {first} earlier steps (all requests: --log FILE)")
        lines += [f"  {i + 1:>4}. {self.path[i]}" for i in range(first, len(self.path))]
        lines.append(f"request: {_shown(self.request)}")
        lines.append(f"the spec allows: {' or '.join(_shown(e) for e in self.expected)}")
        lines.append(f"the adapter answered: {_shown(self.actual)}")
        log = self.log[-2 * show :]
        lines.append(
            "requests since the last reset (> sent, < answered)"
            + (f", the last {len(log)}:" if len(log) < len(self.log) else ":")
        )
        for request, answer in log:
            lines.append(f"  > {_shown(request)}")
            lines.append(f"  < {_shown(answer)}")
        return "\n".join(lines)


def _error_kind(value: Any) -> Any:
    """An observed answer as a request of its own would be compared: an error by its kind."""
    if isinstance(value, dict) and set(value) == {"error"} and isinstance(value["error"], dict):
        return {"error": {"kind": value["error"].get("kind")}}
    return value


def _shown(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "))


@attrs.define
class Coverage:
    """What a run covered; ``edges`` counts graph edges (a merged step covers two)."""

    model: str
    states: int
    edges: int
    undriven: dict[str, int]
    unreachable: int = 0
    drivable: int = 0
    covered: int = 0
    states_visited: int = 0
    steps: int = 0
    requests: int = 0
    resets: int = 0
    open_order_steps: int = 0
    #: checks answered inside another request (docs/protocol.md, observations)
    observed: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        lines = [
            f"{self.model}: covered {self.covered} of {self.drivable} drivable edges "
            f"({self.edges} in the graph), {self.states_visited} of {self.states} states; "
            f"{self.steps} steps in {self.resets + 1} walks, {self.requests} requests, "
            f"{self.seconds:.1f} s",
        ]
        if self.observed:
            lines.append(
                f"  {self.observed} checks were answered inside those requests (observations "
                "carried by a call), not as requests of their own"
            )
        for reason, count in sorted(self.undriven.items()):
            if count:
                lines.append(f"  not driven: {count} edges ({reason})")
        if self.unreachable:
            lines.append(
                f"  not driven: {self.unreachable} edges reachable only through edges "
                "that are not driven"
            )
        if self.open_order_steps:
            lines.append(
                f"  {self.open_order_steps} steps had several allowed answers (an order the "
                "spec leaves open): any answer the spec allows was accepted"
            )
        return "\n".join(lines)


@attrs.define
class SpecRun:
    coverage: Coverage
    deviation: Deviation | None = None
    refused: str | None = None

    @property
    def ok(self) -> bool:
        return self.deviation is None and self.refused is None

    @property
    def verdict(self) -> str:
        """``pass`` (every drivable edge agreed), ``deviation``, ``not run``, or
        ``inconclusive``: nothing disagreed, but the sweep's tries ran out with drivable
        edges untaken (the adapter's history kept the walk from them), so the run says
        nothing about those."""
        if self.deviation is not None:
            return "deviation"
        if self.refused is not None:
            return "not run"
        return "pass" if self.coverage.covered >= self.coverage.drivable else "inconclusive"


def load_model_graph(model: str, spec_dir: Path | None = None) -> StateGraph:
    """The committed graph of ``model`` (a name from spec/models.json)."""
    directory = spec_dir if spec_dir is not None else default_spec_dir()
    for entry in load_manifest(directory):
        if entry.name == model:
            if not entry.graph:
                raise ValueError(f"model {model} has no committed state graph")
            return load_graph(directory / entry.graph)
    raise ValueError(f"no model named {model!r} in {directory / 'models.json'}")


class _Graph:
    """The drivable steps of a graph, indexed for search."""

    def __init__(self, graph: StateGraph, driver: SpecDriver, methods: frozenset[str]) -> None:
        self.graph = graph
        steps, self.undriven = driver.driven(graph, methods)
        #: per state, the first state the adapter cannot tell from it (see shared_credit)
        self.classes = state_classes(graph, driver.hidden)
        steps = shared_credit(graph, driver, steps, self.classes)
        # A driver may walk several copies of the graph (the informer's paused copy:
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

    def path_to_untaken(self, start: int, taken: _Taken) -> list[DrivenEdge] | None:
        """Shortest path from ``start`` ending in a step that covers an untaken edge."""
        path = self.search(start, lambda state: taken.open_from[state] > 0)
        if path is None:
            return None
        here = path[-1].target if path else start
        return [*path, next(s for s in self.out[here] if taken.is_open(s))]

    def distances_to(self, goal: int) -> dict[int, int]:
        """Steps from each node that reaches ``goal`` to it (breadth first, backwards)."""
        if self.into is None:
            self.into = [[] for _ in self.out]
            for step in self.steps:
                self.into[step.target].append(step.source)
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


class _Taken:
    """The graph edges taken so far, with a count per state of its steps that would
    still take a new edge (so the search for the nearest one is a plain BFS)."""

    def __init__(self, graph: _Graph) -> None:
        self.edges: set[int] = set()
        self.total = len(graph.drivable)
        self.left: dict[DrivenEdge, int] = {}
        self.steps_of: dict[int, list[DrivenEdge]] = {}
        self.open_from = [0] * len(graph.out)
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


# -- covering walks: a directed Chinese postman with reset ---------------------------------

#: A planned move: a step, or ``None`` for a reset (back to the initial state).
Move = DrivenEdge | None


def plan_walks(
    graph: _Graph,
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
    others with more out than in; a minimum-cost flow (:func:`_min_cost_flow`) from
    the former to the latter over the graph's steps and the reset arcs, priced in
    requests (``cost`` per step, ``reset_cost`` per reset, and a little per step so
    that of two ways with as many requests the shorter wins), gives the cheapest
    repeated steps and resets that balance every state. A part the result does not
    connect to the initial state is joined by a shortest path there and a reset
    back. An Euler circuit of the whole (Hierholzer), cut at its resets, is the walks.
    """
    init = graph.init
    here = init if start is None else start
    n = len(graph.graph.states)
    required: list[DrivenEdge] = []
    covered = set(done)
    for step in sorted(graph.steps, key=lambda s: s.source // n):
        if not covered.issuperset(step.covers):
            covered.update(step.covers)
            required.append(step)
    if not required:
        return []
    nodes = len(graph.out)
    # Each arc: its weight and the move (the cheapest step between two states, or reset).
    arcs: dict[tuple[int, int], tuple[int, Move]] = {}
    for step in graph.steps:
        weight = 4 * cost(step) + 1
        key = (step.source, step.target)
        if key not in arcs or weight < arcs[key][0]:
            arcs[key] = (weight, step)
    for u in range(nodes):
        key = (u, init)
        if u != init and (key not in arcs or 4 * reset_cost < arcs[key][0]):
            arcs[key] = (4 * reset_cost, None)
    balance = [0] * nodes
    for step in required:
        balance[step.source] -= 1
        balance[step.target] += 1
    if here != init:  # the walk so far: a way from the initial state to here
        balance[init] -= 1
        balance[here] += 1
    flow = _min_cost_flow(nodes, {k: w for k, (w, _) in arcs.items()}, balance)
    moves: list[tuple[int, int, Move]] = [(s.source, s.target, s) for s in required]
    for (u, v), count in flow.items():
        moves += [(u, v, arcs[(u, v)][1])] * count
    # Join what the initial state does not reach: a shortest path there, a reset back.
    adjacent: list[list[int]] = [[] for _ in range(nodes)]
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
        assert path  # every step's source is reachable (see _Graph)
        moves += [(s.source, s.target, s) for s in path]
        moves.append((u, init, None))
        for s in path:
            adjacent[s.source].append(s.target)
        adjacent[u].append(init)
        for s in path:
            reach(s.target)
    return _euler_walks(nodes, init, here, moves)


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


def _min_cost_flow(
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
    size = nodes + 2
    total = sum(b for b in balance if b > 0)
    # Residual arcs: head, capacity, weight, index of the reverse arc.
    head: list[int] = []
    cap: list[int] = []
    weight: list[int] = []
    out: list[list[int]] = [[] for _ in range(size)]

    def add(u: int, v: int, c: int, w: int) -> int:
        out[u].append(len(head))
        head.append(v)
        cap.append(c)
        weight.append(w)
        out[v].append(len(head))
        head.append(u)
        cap.append(0)
        weight.append(-w)
        return len(head) - 2

    index = {key: add(key[0], key[1], total, w) for key, w in arcs.items()}
    for v, b in enumerate(balance):
        if b > 0:
            add(source, v, b, 0)
        elif b < 0:
            add(v, sink, -b, 0)
    potential = [0] * size
    unreached = float("inf")
    sent = 0
    while sent < total:
        dist: list[float] = [unreached] * size
        dist[source] = 0
        heap: list[tuple[float, int]] = [(0, source)]
        while heap:
            d, u = heapq.heappop(heap)
            if d > dist[u]:
                continue
            pu = potential[u]
            for a in out[u]:
                if cap[a]:
                    v = head[a]
                    nd = d + weight[a] + pu - potential[v]
                    if nd < dist[v]:
                        dist[v] = nd
                        heapq.heappush(heap, (nd, v))
        if dist[sink] == unreached:
            raise ValueError("the flow cannot reach every state that needs a way in")
        for v in range(size):
            if dist[v] != unreached:
                potential[v] += int(dist[v])
        # Blocking flows along the arcs of reduced weight 0.
        while True:
            level = [-1] * size
            level[source] = 0
            queue = deque([source])
            while queue:
                u = queue.popleft()
                for a in out[u]:
                    v = head[a]
                    if cap[a] and level[v] < 0 and weight[a] + potential[u] == potential[v]:
                        level[v] = level[u] + 1
                        queue.append(v)
            if level[sink] < 0:
                break
            pointer = [0] * size
            while True:
                path: list[int] = []  # arcs from the source
                u = source
                while u != sink:
                    arcs_u = out[u]
                    while pointer[u] < len(arcs_u):
                        a = arcs_u[pointer[u]]
                        v = head[a]
                        if (
                            cap[a]
                            and level[v] == level[u] + 1
                            and weight[a] + potential[u] == potential[v]
                        ):
                            break
                        pointer[u] += 1
                    else:  # a dead end: back one arc, and never through it again
                        if not path:
                            break
                        u = head[path.pop() ^ 1]
                        pointer[u] += 1
                        continue
                    path.append(a)
                    u = v
                if u != sink:
                    break
                got = min(cap[a] for a in path)
                for a in path:
                    cap[a] -= got
                    cap[a ^ 1] += got
                sent += got
    return {key: total - cap[a] for key, a in index.items() if cap[a] < total}


class _Abort(Exception):
    pass


def drive(
    driver: SpecDriver,
    graph_: StateGraph,
    command: Sequence[str],
    *,
    timeout: float = 5.0,
    startup_timeout: float = 20.0,
    progress: Callable[[Coverage], None] | None = None,
    log: TextIO | None = None,
) -> SpecRun:
    """Drive the adapter ``command`` along every drivable edge of the graph."""
    started = time.monotonic()
    run = SpecRun(
        Coverage(
            model=driver.model, states=len(graph_.states), edges=len(graph_.edges), undriven={}
        )
    )
    adapter = AdapterProcess(list(command), timeout=timeout, log=log)
    try:
        adapter.start()
        offer = _handshake(adapter, driver, startup_timeout)
        if isinstance(offer, str):
            run.refused = offer
            return run
        methods, observe = offer
        graph = _Graph(graph_, driver, methods)
        run.coverage.undriven = dict(graph.undriven)
        run.coverage.unreachable = graph.unreachable
        run.coverage.drivable = len(graph.drivable)
        _Walker(driver, graph, adapter, run, progress, observe).run()
    except AdapterFailure as exc:
        run.refused = f"adapter failed: {exc.describe()}"
    finally:
        run.coverage.requests = adapter.requests_sent
        run.coverage.seconds = time.monotonic() - started
        adapter.close()
    return run


def _handshake(
    adapter: AdapterProcess, driver: SpecDriver, timeout: float
) -> tuple[frozenset[str], frozenset[str]] | str:
    """The methods the adapter declares for the driver's component and those a call
    may observe (docs/protocol.md, "Observations carried by a call"), or why it
    cannot be driven."""
    answer = adapter.request({"op": "hello", "protocol": 2}, timeout=timeout)
    if "error" in answer:
        answer = adapter.request({"op": "hello", "protocol": 1}, timeout=timeout)
    if "error" in answer:
        return f"the adapter refused hello: {answer['error']}"
    components = answer["result"].get("components", {})
    caps = components.get(driver.component)
    if not isinstance(caps, dict):
        return (
            f"the adapter does not offer {driver.component} (the {driver.model} model's component)"
        )
    missing = sorted(driver.methods - set(caps.get("methods", [])))
    if missing:
        return (
            f"{driver.component} lacks methods the {driver.model} model needs: {', '.join(missing)}"
        )
    refused = driver.refuses(caps)
    if refused is not None:
        return refused
    allowed = caps.get("option_values") or {}
    for name, value in driver.options.items():
        if name in allowed and value not in allowed[name]:
            return (
                f"{driver.component} cannot be created with {name}={value!r}, which the "
                f"{driver.model} model needs (the adapter allows {allowed[name]!r})"
            )
    observe = caps.get("observe", [])
    if not isinstance(observe, list):
        return f"{driver.component}'s 'observe' must be a list of method names"
    return frozenset(caps.get("methods", [])), frozenset(str(m) for m in observe)


#: Attempts in a row at the nearest untaken edge that take none before the sweep
#: changes the walk's history (:meth:`_Walker.sweep`).
STALL = 5
#: Changes of history the sweep tries before it reports what is left as not covered.
SWEEP_TRIES = 1000
#: Steps the sweep takes, not counted as attempts, while the state is not yet known.
UNSURE_STEPS = 10


class _Walker:
    """One run: the belief (possible current states, with the steps not yet credited),
    the edges taken, and the request log since the last reset."""

    def __init__(
        self,
        driver: SpecDriver,
        graph: _Graph,
        adapter: AdapterProcess,
        run: SpecRun,
        progress: Callable[[Coverage], None] | None,
        observe: frozenset[str] = frozenset(),
    ) -> None:
        self.driver = driver
        #: the checks a call may carry instead of sending them (see carried)
        self.observe = observe
        self.graph = graph
        self.adapter = adapter
        self.run_ = run
        self.cov = run.coverage
        self.progress = progress
        self.taken = _Taken(graph)
        self.visited: set[int] = set()
        #: probe request of each step (untimed drivers: it depends on the step only)
        self.probes: dict[DrivenEdge, str] = {}
        #: requests each step sends (see cost), its follow-up requests and its checks
        self.costs: dict[DrivenEdge, int] = {}
        self.follows: dict[DrivenEdge, list[dict[str, Any]]] = {}
        self.checks_after: dict[DrivenEdge, list[Check]] = {}
        self.belief: dict[int, tuple[DrivenEdge, ...]] = {}
        self.path: list[str] = []
        self.walked: list[DrivenEdge] = []
        self.log: list[Logged] = []
        self.last_progress = 0.0
        #: the sweep's open steps (see aim), and distances to the states they leave
        self.aims: list[DrivenEdge] | None = None
        self.distances: dict[int, dict[int, int]] = {}

    def run(self) -> None:
        try:
            if self.driver.timed:
                for walk in self.plan():
                    self.restart()
                    plans = self.driver.schedule(self.graph.graph, walk)
                    for i, (step, plan) in enumerate(zip(walk, plans, strict=True)):
                        self.step([step], plan, walk[i + 1] if i + 1 < len(walk) else None)
            else:
                self.restart()
                if self.driver.planned:
                    self.follow_plan(self.plan())
                self.sweep()
        except _Abort:
            pass
        # Coverage is the walk's; replaying a shorter path afterwards adds nothing.
        self.cov.covered = len(self.taken.edges)
        self.cov.states_visited = self.states_visited()
        steps, resets = self.cov.steps, self.cov.resets
        with contextlib.suppress(_Abort):
            self.shorten()
        self.cov.steps, self.cov.resets = steps, resets

    def cost(self, step: DrivenEdge) -> int:
        """The requests a step sends (its probe unless the harness takes it alone,
        what comes before and after it, its checks)."""
        sent = self.costs.get(step)
        if sent is None:
            g = self.graph.graph
            probe = self.driver.probe(g, step, 1)
            sent = 0 if probe.get("op") == HARNESS_ONLY else 1
            follows = self.follow(step)
            sent += len(self.driver.prepare(g, step)) + len(follows)
            carrier = follows[-1] if follows else probe
            sent += sum(1 for c in self.checks(step) if not self.carried(carrier, c.request))
            self.costs[step] = sent
        return sent

    def plan(self) -> list[list[DrivenEdge]]:
        """Walks from the initial state that take every drivable edge (plan_walks)."""
        reset = 2 + len(self.driver.setup(self.graph.graph))
        return plan_walks(self.graph, self.cost, reset)

    def follow_plan(self, walks: list[list[DrivenEdge]]) -> None:
        """Take the planned walks (after the first, each after a reset). Where an open
        order goes another way than planned, the walk goes on from the nearest state
        on the rest of the planned walk; the edges that skips are left to the caller."""
        for i, walk in enumerate(walks):
            if i:
                self.restart()
            k = 0
            rejoined = 0
            while k < len(walk):
                step, here = walk[k], self.current()
                if here == step.source:
                    self.step([step], None)
                    k += 1
                    continue
                if here is None:
                    # Not yet sure which state: the planned request, if every
                    # believed state allows it, else the nearest untaken edge.
                    group = self.group(step)
                    if group is not None:
                        self.step(group, None)
                        k += 1
                    elif not self.advance():
                        break
                    continue
                rest = {s.source for s in walk[k:]}
                path = self.graph.search(here, rest.__contains__)
                rejoined += 1
                if path is None or rejoined > len(walk):
                    break
                for back in path:
                    if self.current() != back.source:
                        break
                    self.step([back], None)
                k = next((j for j in range(k, len(walk)) if walk[j].source == self.current()), k)

    def sweep(self, stall: int = STALL, tries: int | None = None) -> None:
        """What open orders kept from the plan: the nearest untaken edge, again and
        again, each time from where the walk is (so from another history, which is
        what an adapter's order may follow). After ``stall`` attempts in a row that
        take no new edge (the adapter keeps taking the same order there), a reset and
        a seeded random path (seed: the try's number), up to 3 steps longer than a
        shortest one, to the state an untaken edge leaves change the history; after
        ``tries`` such paths the edges left are reported as not covered."""
        tries = SWEEP_TRIES if tries is None else tries
        last, futile, tried, unsure = len(self.taken.edges), 0, 0, 0
        while not self.taken.done:
            if not self.advance():
                if len(self.belief) == 1 and self.current() == self.graph.init:
                    break
                self.restart()
            if len(self.taken.edges) > last:
                last, futile = len(self.taken.edges), 0
                continue
            # Steps waiting for the state to be known are credited once it is: let the
            # walk go on (a few steps) until an answer tells.
            unsure = unsure + 1 if any(self.belief.values()) else 0
            if 0 < unsure <= UNSURE_STEPS:
                continue
            futile += 1
            if futile > stall:
                tried += 1
                if tried > tries:
                    break
                self.restart()
                self.aim(random.Random(tried), tried % 4)
                futile = stall  # one attempt from there, then the next aim

    def aim(self, rng: random.Random, slack: int) -> None:
        """From the initial state, a random path at most ``slack`` steps longer than a
        shortest one to the source of a random untaken step: the orders an adapter
        takes may follow the order in which keys came, which such paths vary."""
        if self.aims is None:
            self.aims = sorted(
                (s for s in self.graph.steps if self.taken.is_open(s)),
                key=lambda s: (s.source, s.target, s.covers),
            )
        self.aims = [s for s in self.aims if self.taken.is_open(s)]
        here = self.current()
        if not self.aims or here is None:
            return
        goal = rng.choice(self.aims).source
        dist = self.distances.get(goal)
        if dist is None:
            dist = self.distances[goal] = self.graph.distances_to(goal)
        left = dist.get(here, 0) + slack
        while (here := self.current()) is not None and here != goal and left > 0:
            ways = [s for s in self.graph.out[here] if dist.get(s.target, left) < left]
            if not ways:
                return
            self.step([rng.choice(ways)], None)
            left -= 1

    def states_visited(self) -> int:
        """States visited, or equal to one visited but for the driver's hidden
        variables (the adapter cannot tell them apart: see shared_credit)."""
        classes = self.graph.classes
        seen = {classes[node % len(classes)] for node in self.visited}
        return sum(1 for c in classes if c in seen)

    def current(self) -> int | None:
        return next(iter(self.belief)) if len(self.belief) == 1 else None

    def restart(self) -> None:
        if self.belief:
            self.cov.resets += 1
            self.expect_null(None, {"op": "reset"})
        self.log.clear()
        self.path.clear()
        self.walked.clear()
        create = {
            "op": "create",
            "instance": "x",
            "component": self.driver.component,
            "options": dict(self.driver.options),
        }
        self.expect_null(None, create)
        for check in self.driver.setup(self.graph.graph):
            self.expect_at_init(check)
        self.belief = {self.graph.init: ()}
        self.visited.add(self.graph.init)

    def expect_at_init(self, check: Check) -> None:
        """A setup request (after ``create``), checked against the initial state."""
        state = self.graph.graph.states[self.graph.init]
        answer = self.send(check.request)
        if not check.ok(state, answer):
            self.run_.deviation = Deviation(
                ("(setup, before the first spec action)",),
                check.request,
                (check.expected(state),),
                answer,
                tuple(self.log),
            )
            raise _Abort

    def advance(self) -> bool:
        """Take the next planned step; False when nothing untaken is reachable."""
        here = self.current()
        if here is not None:
            path = self.graph.path_to_untaken(here, self.taken)
            if path is None:
                return False
            for step in path:
                if self.current() != step.source:
                    return True  # an open order went another way: plan again
                self.step([step], None)
            return True
        # Several states are possible: take a step every one of them allows with the
        # same request. While steps taken are waiting for the state to be known (their
        # edges are credited only then), one whose answer tells the states apart comes
        # first (a pop after a relist's open order); else the first toward untaken edges.
        first = min(self.belief)
        path = self.graph.path_to_untaken(first, self.taken)
        options = ([path[0]] if path else []) + self.graph.out[first]
        groups = [g for g in map(self.group, options) if g is not None]
        if any(self.belief.values()):
            groups.sort(key=lambda g: not self.tells_apart(g))
        if groups:
            self.step(groups[0], None)
            return True
        return False

    def tells_apart(self, group: list[DrivenEdge]) -> bool:
        """Whether the answers the steps of ``group`` call for differ between them."""
        g = self.graph.graph
        answers = {json.dumps(self.driver.expect(g, c), sort_keys=True, default=str) for c in group}
        return len(answers) > 1

    def group(self, chosen: DrivenEdge) -> list[DrivenEdge] | None:
        """The steps with ``chosen``'s request from every believed state, if all have one."""
        probe = self.probe_key(chosen)
        group: list[DrivenEdge] = []
        for state in self.belief:
            same = [s for s in self.graph.out[state] if self.probe_key(s) == probe]
            if not same:
                return None
            group.extend(same)
        return group

    def step(self, candidates: list[DrivenEdge], plan: Any, then: DrivenEdge | None = None) -> None:
        """Send one step's requests; keep the candidates every answer agrees with.
        ``then``: the step the walk takes next, if planned (see implied)."""
        g = self.graph.graph
        request = self.driver.probe(g, candidates[0], plan)
        # The candidates the adapter could follow: every successor of every believed
        # state with the same request (an open order has several).
        if not self.driver.timed and len(candidates) == 1:
            key = self.probe_key(candidates[0])
            candidates = [
                s
                for state in self.belief
                for s in self.graph.out[state]
                if self.probe_key(s) == key
            ]
        for before in self.driver.prepare(g, candidates[0]):
            self.expect_null(candidates[0], before)
        # The checks ride on the step's last call where the adapter allows it: the
        # probe when no candidate has a follow-up request.
        observed: dict[str, Any] = {}
        carrier = request
        if not any(self.follow(c) for c in candidates):
            carrier = self.observing(request, [ch for c in candidates for ch in self.checks(c)])
        # A step only the harness's side takes (its simulated server) sends nothing.
        answer = None
        if request.get("op") != HARNESS_ONLY:
            answer, observed = self.send_observing(carrier)
        kept = [c for c in candidates if self.driver.accepts(g, c, answer)]
        if not kept:
            self.deviate(
                candidates[0], request, [self.driver.expect(g, c) for c in candidates], answer
            )
        follows = {tuple(request_key(r) for r in self.follow(c)) for c in kept}
        if len(follows) > 1:
            self.run_.refused = (
                "inconclusive: the answers allow several states that need different "
                f"requests next (after {candidates[0].label})"
            )
            raise _Abort
        after = self.follow(kept[0])
        checks = self.checks(kept[0])
        for i, follow in enumerate(after):
            if i == len(after) - 1:
                carrier = self.observing(follow, checks)
                follow_answer, observed = self.send_observing(carrier)
                if follow_answer is not None:
                    self.deviate(kept[0], follow, [None], follow_answer)
            else:
                self.expect_null(kept[0], follow)
        for check in checks:
            name = check.request["method"] if self.carried(carrier, check.request) else None
            if name is not None and name in observed:
                answer, shown = observed[name], carrier
            elif then is not None and len(kept) == 1 and self.implied(check, kept[0], then):
                continue
            else:
                answer, shown = self.send(check.request), check.request
            allowed = [c for c in kept if check.ok(self.state(c.target), answer)]
            if not allowed:
                expected = [check.expected(self.state(c.target)) for c in kept]
                if shown is carrier:
                    assert name is not None
                    expected = [{name: e} for e in expected]
                    answer = {name: answer}
                self.deviate(kept[0], shown, expected, answer)
            kept = allowed
        self.path.append(
            kept[0].label if len({c.label for c in kept}) == 1 else f"{kept[0].action} (open order)"
        )
        self.walked.append(kept[0])
        belief: dict[int, tuple[DrivenEdge, ...]] = {}
        for c in kept:
            for state, pending in self.belief.items():
                if c.source == state:
                    belief.setdefault(c.target, (*pending, c))
        if len(belief) > 1 or len(kept) > 1:
            self.cov.open_order_steps += 1
        self.belief = belief
        if len(belief) == 1:
            ((state, pending),) = belief.items()
            for taken in pending:
                self.taken.update(taken.covers)
                self.visited.add(taken.target)
            self.belief = {state: ()}
        self.cov.steps += 1
        self.report_progress()

    def implied(self, check: Check, step: DrivenEdge, then: DrivenEdge) -> bool:
        """Whether the next step's checks will show this check's answer: the check
        observes a fact that only ever changes away from ``check.settled`` (a drain
        that has returned stays returned), this step's target calls for that value,
        and the next step sends the same check and calls for it again. An adapter
        answering it then answered it now (else it changed back)."""
        if check.settled is None:
            return False
        key = request_key(check.request)
        if check.expected(self.state(step.target)) != check.settled:
            return False
        return any(
            request_key(c.request) == key and c.expected(self.state(then.target)) == check.settled
            for c in self.checks(then)
        )

    def state(self, node: int) -> Mapping[str, Value]:
        """The spec state of a walk's node (see _Graph)."""
        states = self.graph.graph.states
        return states[node % len(states)]

    def probe_key(self, step: DrivenEdge) -> str:
        key = self.probes.get(step)
        if key is None:
            key = self.probes[step] = request_key(self.driver.probe(self.graph.graph, step, None))
        return key

    def follow(self, step: DrivenEdge) -> list[dict[str, Any]]:
        """The driver's follow-up requests of ``step`` (computed once per step)."""
        found = self.follows.get(step)
        if found is None:
            found = self.follows[step] = self.driver.follow(self.graph.graph, step)
        return found

    def checks(self, step: DrivenEdge) -> list[Check]:
        """The driver's checks after ``step`` (computed once per step)."""
        found = self.checks_after.get(step)
        if found is None:
            found = self.checks_after[step] = self.driver.checks(self.graph.graph, step)
        return found

    def carried(self, carrier: Mapping[str, Any], check: Mapping[str, Any]) -> bool:
        """Whether ``check`` (a request) can ride on ``carrier`` as an observation: a
        call with no arguments the adapter lets calls observe, on the same instance."""
        return (
            carrier.get("op") == "call"
            and check.get("op") == "call"
            and not check.get("args")
            and check.get("method") in self.observe
            and check.get("instance") == carrier.get("instance")
        )

    def observing(self, request: dict[str, Any], checks: Sequence[Check]) -> dict[str, Any]:
        """``request`` carrying every check it can (each method once, in order)."""
        names: list[str] = []
        for check in checks:
            method = str(check.request.get("method"))
            if self.carried(request, check.request) and method not in names:
                names.append(method)
        return {**request, "observe": names} if names else request

    def send_observing(self, request: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """Send one request; its result (or ``{"error": {"kind": K}}``) and what it
        observed."""
        response = self.adapter.request(request)
        if "error" in response:
            answer: Any = {"error": {"kind": response["error"].get("kind")}}
            observed: dict[str, Any] = {}
        else:
            answer = response["result"]
            names = request.get("observe", [])
            raw = response.get("observed", {}) if names else {}
            if not isinstance(raw, dict) or set(raw) != set(names):
                self.run_.refused = (
                    f"the adapter answered {_shown(response)} to {_shown(request)}: "
                    "'observed' must hold every method the request names"
                )
                raise _Abort
            observed = {k: _error_kind(v) for k, v in raw.items()}
            self.cov.observed += len(observed)
        self.log.append((request, {"result": answer, "observed": observed} if observed else answer))
        return answer, observed

    def send(self, request: dict[str, Any]) -> Any:
        """Send one request; its result, or ``{"error": {"kind": K}}``."""
        response = self.adapter.request(request)
        if "error" in response:
            answer: Any = {"error": {"kind": response["error"].get("kind")}}
        else:
            answer = response["result"]
        self.log.append((request, answer))
        return answer

    def expect_null(self, step: DrivenEdge | None, request: dict[str, Any]) -> None:
        answer = self.send(request)
        if answer is not None:
            if step is None:
                self.run_.refused = f"the adapter answered {_shown(answer)} to {_shown(request)}"
                raise _Abort
            self.deviate(step, request, [None], answer)

    def deviate(
        self, step: DrivenEdge, request: dict[str, Any], expected: list[Any], actual: Any
    ) -> None:
        unique: list[Any] = []
        for e in expected:
            if e not in unique:
                unique.append(e)
        self.run_.deviation = Deviation(
            (*self.path, step.label),
            request,
            tuple(unique),
            actual,
            tuple(self.log),
            (*self.walked, step),
        )
        raise _Abort

    def shorten(self, tries: int = 20, others: int = 30) -> None:
        """Replace a deviation found after a long walk by a shorter spec path that
        fails too on a reset adapter. Shortest first, of: the ``tries`` shortest of a
        shortest path to a state on the walk followed by the rest of the walk (the
        last of them is a shortest path to the failing step itself), and the
        ``others`` shortest of a shortest path to another step of the failing step's
        action and arguments, then that step (the order of the walks decides which
        such step a walk meets first). If none fails: a binary search for the latest
        state on the walk from which a shortest path there and the rest of the walk
        fail (a failure that needs something the walk did long before)."""
        found = self.run_.deviation
        if found is None:
            return
        walk = list(found.steps)
        init = self.graph.init

        def rest_from(i: int) -> list[DrivenEdge]:
            return [*self.graph.shortest_path(init, walk[i].source), *walk[i:]]

        def shorter(paths: list[list[DrivenEdge]], most: int) -> list[list[DrivenEdge]]:
            return sorted((p for p in paths if len(p) < len(walk)), key=len)[:most]

        last = walk[-1]
        back = self.graph.tree(init)
        same = [
            [*self.graph.path_in(back, step.source), step]
            for step in self.graph.steps
            if (step.action, step.args, step.then) == (last.action, last.args, last.then)
            and step.source in back
        ]
        candidates = sorted(
            shorter([rest_from(i) for i in range(1, len(walk))], tries) + shorter(same, others),
            key=len,
        )
        for path in candidates:
            again = self.replay(path)
            if again is not None:
                self.run_.deviation = attrs.evolve(again, shortened=True)
                return
        # The walk itself (i = 0) fails; find the largest i whose path fails too.
        low, high, best = 0, len(walk) - 1, None
        while low < high:
            middle = (low + high + 1) // 2
            path = rest_from(middle)
            again = self.replay(path) if len(path) < len(walk) else None
            if again is not None:
                low, best = middle, again
            else:
                high = middle - 1
        if best is not None:
            self.run_.deviation = attrs.evolve(best, shortened=True)
            return
        # A walk that is a shortest path to the failing step is as short as one there gets.
        minimal = len(walk) == len(self.graph.shortest_path(init, last.source)) + 1
        self.run_.deviation = attrs.evolve(
            found, shortened=False if candidates and not minimal else None
        )

    def replay(self, path: list[DrivenEdge]) -> Deviation | None:
        """Follow ``path`` on a reset adapter; the deviation it meets, if any."""
        self.run_.deviation = None
        self.restart()
        timed = self.driver.timed
        plans = self.driver.schedule(self.graph.graph, path) if timed else [None] * len(path)
        try:
            for step, plan in zip(path, plans, strict=True):
                self.step([step], plan)
        except _Abort:
            return self.run_.deviation
        return None

    def report_progress(self) -> None:
        if self.progress is None:
            return
        now = time.monotonic()
        if now - self.last_progress >= 1.0:
            self.last_progress = now
            self.cov.covered = len(self.taken.edges)
            self.cov.states_visited = self.states_visited()
            self.cov.requests = self.adapter.requests_sent
            self.progress(self.cov)


#: ``refimpl conform --from-spec``'s exit status when nothing disagreed but edges were
#: left untaken (see SpecRun.verdict).
EXIT_INCONCLUSIVE = 4


def run_from_spec(
    models: Sequence[str],
    command: Sequence[str],
    *,
    out: TextIO,
    err: TextIO,
    timeout: float = 5.0,
    startup_timeout: float = 20.0,
    show_progress: bool = False,
    log: TextIO | None = None,
) -> int:
    """``refimpl conform --from-spec``: drive each model's graph; the exit status as for
    ``refimpl conform`` (0 every edge agreed, 1 a deviation, 2 the adapter failed or
    cannot drive a model, 3 an unknown model, 4 inconclusive: nothing disagreed but
    edges were left untaken; any other outcome of another model wins over 4)."""
    names = list(models) if models and models != ["all"] else list(DRIVERS)
    unknown = [m for m in names if m not in DRIVERS]
    if unknown:
        print(
            f"refimpl conform: --from-spec {', '.join(unknown)}: no such driven model "
            f"(choose from {', '.join(DRIVERS)}, or all)",
            file=err,
        )
        return 3
    status = 0
    inconclusive = False

    def progress(cov: Coverage) -> None:
        print(
            f"\r{cov.model}: {cov.covered}/{cov.drivable} edges, {cov.steps} steps, "
            f"{cov.requests} requests",
            end="",
            file=err,
            flush=True,
        )

    for model in names:
        try:
            graph = load_model_graph(model)
        except (OSError, ValueError) as exc:
            print(f"refimpl conform: {exc}", file=err)
            return 3
        run = drive(
            DRIVERS[model],
            graph,
            command,
            timeout=timeout,
            startup_timeout=startup_timeout,
            progress=progress if show_progress else None,
            log=log,
        )
        if show_progress:
            print(file=err)
        verdict = run.verdict
        print(f"{model:<16} {verdict.upper()}", file=out)
        print(run.coverage.summary(), file=out)
        if verdict == "inconclusive":
            left = run.coverage.drivable - run.coverage.covered
            print(
                f"  inconclusive: {left} drivable edges untaken after {SWEEP_TRIES} changes of "
                "the walk's history (the adapter's orders kept it from them); nothing disagreed",
                file=out,
            )
            inconclusive = True
        if run.refused is not None:
            print(f"  {run.refused}", file=out)
            status = max(status, 2)
        if run.deviation is not None:
            print(run.deviation.describe(), file=out)
            status = max(status, 1)
    return status or (EXIT_INCONCLUSIVE if inconclusive else 0)
