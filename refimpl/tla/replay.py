"""Replaying a core over a spec's state graph: every state, every edge.

Owns no state. A *mapping* (one per core, e.g. :mod:`refimpl.tla.refine_workqueue`)
says, for one spec state, which moves the code can make from it: it builds the core in
that state, calls each code action that does not refuse, and maps the result back to a
spec state. :func:`replay` then checks, state by state, that the non-stuttering code
moves are exactly the spec's edges (same action, same arguments, same successor):
nothing the spec forbids is enabled in the code, and nothing the spec allows is missing.
It executes the graph: breadth-first from the initial states, each state is handed to
the mapping with the hidden code state (what no spec variable holds) that the code move
which first reached it left, so a mapping that carries hidden state checks its moves from
a state one real path led the code to (docs/07-the-model-and-the-code.md, "Hidden
state"); ``execute=False`` takes each state alone.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping

import attrs

from refimpl.tla.graph import State, StateGraph, freeze_state
from refimpl.tla.values import Value, format_value

__all__ = ["Move", "Reached", "ReplayReport", "replay"]


@attrs.frozen
class Move:
    """A code action taken from a spec state: its spec action name, args, successor.

    ``hidden`` is the part of the code's state after the move that the spec does not
    carry, as the mapping will take it back (:class:`Reached`); None: the mapping
    carries none."""

    action: str
    args: tuple[Value, ...]
    successor: Mapping[str, Value]
    hidden: object = attrs.field(default=None, eq=False)


class Reached(dict[str, Value]):
    """A spec state as the replay hands it to the mapping, with ``hidden``: the code's
    hidden state on the path the replay reached it by (the ``Move.hidden`` of the
    code move along that path's last edge), or None, where the mapping's own fixed
    assumptions stand in (an initial state, or one no code move reached)."""

    def __init__(self, state: Mapping[str, Value], hidden: object = None) -> None:
        super().__init__(state)
        self.hidden = hidden


@attrs.frozen
class ReplayReport:
    """``states`` and ``edges`` count what was replayed; ``complete`` is False when
    the replay stopped early, after ``max_mismatches`` mismatches."""

    states: int
    edges: int
    stutters: int
    mismatches: tuple[str, ...]
    complete: bool = True

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def summary(self) -> str:
        cut = "" if self.complete else " (stopped early)"
        return (
            f"replayed {self.states} states and {self.edges} edges "
            f"({self.stutters} code stutters), {len(self.mismatches)} mismatches{cut}"
        )


def _describe(state: Mapping[str, Value]) -> str:
    return ", ".join(f"{k}={format_value(v)}" for k, v in sorted(state.items()))


def _label(action: str, args: tuple[Value, ...]) -> str:
    return f"{action}({', '.join(format_value(a) for a in args)})" if args else action


class _Frontier:
    """The order the replay takes states in. Executing: breadth-first from the initial
    states along the spec edges the code's moves took, each state keeping the hidden
    state of the first such move into it; then any state left (reached by no code move:
    only after a mismatch), with none. Not executing: index order, with none."""

    def __init__(self, graph: StateGraph, *, execute: bool) -> None:
        size = len(graph.states)
        self.hidden: dict[int, object] = {}
        self._queue = deque(graph.init if execute else range(size))
        self._seen = set(self._queue)
        self._rest = iter(range(size))

    def reach(self, target: int, hidden: object) -> None:
        if target not in self._seen:
            self._seen.add(target)
            self.hidden[target] = hidden
            self._queue.append(target)

    def take(self) -> int | None:
        if self._queue:
            return self._queue.popleft()
        for i in self._rest:
            if i not in self._seen:
                self._seen.add(i)
                return i
        return None


def replay(
    graph: StateGraph,
    moves: Callable[[Mapping[str, Value]], Iterable[Move]],
    *,
    max_mismatches: int = 20,
    execute: bool = True,
) -> ReplayReport:
    """Check ``moves`` against every state and edge of ``graph``.

    Self-loops in the graph and code moves that leave the state unchanged are both
    stuttering steps, which TLA+ always allows, so neither is compared.

    With ``execute`` the replay runs the code along the graph: each state is handed to
    ``moves`` as a :class:`Reached` carrying the hidden state (``Move.hidden``) of the
    code move that first reached it, breadth-first from the initial states, so every
    move is checked from a code state one real path of the spec led the code to (as
    far as the mapping carries hidden state). Without it each state is taken alone,
    the hidden state being the mapping's fixed assumptions.
    """
    index = graph.index()
    successors = graph.successors()
    frontier = _Frontier(graph, execute=execute)
    mismatches: list[str] = []
    edges = stutters = visited = 0
    while (i := frontier.take()) is not None:
        visited += 1
        here = graph.key(i)
        state = graph.states[i]
        spec: set[tuple[str, tuple[Value, ...], State]] = {
            (e.action, e.args, graph.key(e.target)) for e in successors[i] if e.target != i
        }
        # Each distinct code move, with the hidden state it left (the first move's).
        code: dict[tuple[str, tuple[Value, ...], State], object] = {}
        for move in moves(Reached(state, frontier.hidden.pop(i, None)) if execute else state):
            after = freeze_state(move.successor)
            if after == here:
                stutters += 1
            else:
                code.setdefault((move.action, move.args, after), move.hidden)
        for taken, hidden in code.items():
            if taken in spec:
                frontier.reach(index[taken[2]], hidden)
        edges += len(spec)
        mismatches += _mismatches(i, state, index, spec, set(code))
        if len(mismatches) >= max_mismatches:
            break
    return ReplayReport(
        visited,
        edges,
        stutters,
        tuple(mismatches[:max_mismatches]),
        complete=visited == len(graph.states),
    )


def _mismatches(
    i: int,
    state: Mapping[str, Value],
    index: Mapping[State, int],
    spec: set[tuple[str, tuple[Value, ...], State]],
    code: set[tuple[str, tuple[Value, ...], State]],
) -> list[str]:
    out: list[str] = []
    for action, args, after in sorted(code - spec, key=repr):
        where = "a state outside the graph" if after not in index else f"state {index[after]}"
        out.append(
            f"state {i} [{_describe(state)}]: code {_label(action, args)} goes to {where}, "
            f"which the spec does not allow"
        )
    for action, args, after in sorted(spec - code, key=repr):
        out.append(
            f"state {i} [{_describe(state)}]: spec edge {_label(action, args)} -> "
            f"state {index[after]} has no matching code move"
        )
    return out
