"""Replaying a core over a spec's state graph: every state, every edge.

Owns no state. A *mapping* (one per core, e.g. :mod:`refimpl.tla.refine_workqueue`)
says, for one spec state, which moves the code can make from it: it builds the core in
that state, calls each code action that does not refuse, and maps the result back to a
spec state. :func:`replay` then checks, state by state, that the non-stuttering code
moves are exactly the spec's edges (same action, same arguments, same successor):
nothing the spec forbids is enabled in the code, and nothing the spec allows is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import attrs

from refimpl.tla.graph import State, StateGraph, freeze_state
from refimpl.tla.values import Value, format_value

__all__ = ["Move", "ReplayReport", "replay"]


@attrs.frozen
class Move:
    """A code action taken from a spec state: its spec action name, args, successor."""

    action: str
    args: tuple[Value, ...]
    successor: Mapping[str, Value]


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


def replay(
    graph: StateGraph,
    moves: Callable[[Mapping[str, Value]], Iterable[Move]],
    *,
    max_mismatches: int = 20,
) -> ReplayReport:
    """Check ``moves`` against every state and edge of ``graph``.

    Self-loops in the graph and code moves that leave the state unchanged are both
    stuttering steps, which TLA+ always allows, so neither is compared.
    """
    index = graph.index()
    successors = graph.successors()
    mismatches: list[str] = []
    edges = stutters = visited = 0
    for i, state in enumerate(graph.states):
        visited += 1
        here = graph.key(i)
        spec: set[tuple[str, tuple[Value, ...], State]] = {
            (e.action, e.args, graph.key(e.target)) for e in successors[i] if e.target != i
        }
        code: set[tuple[str, tuple[Value, ...], State]] = set()
        for move in moves(state):
            after = freeze_state(move.successor)
            if after == here:
                stutters += 1
            else:
                code.add((move.action, move.args, after))
        edges += len(spec)
        for action, args, after in sorted(code - spec, key=repr):
            where = "a state outside the graph" if after not in index else f"state {index[after]}"
            mismatches.append(
                f"state {i} [{_describe(state)}]: code {_label(action, args)} goes to {where}, "
                f"which the spec does not allow"
            )
        for action, args, after in sorted(spec - code, key=repr):
            mismatches.append(
                f"state {i} [{_describe(state)}]: spec edge {_label(action, args)} -> "
                f"state {index[after]} has no matching code move"
            )
        if len(mismatches) >= max_mismatches:
            break
    return ReplayReport(
        visited,
        edges,
        stutters,
        tuple(mismatches[:max_mismatches]),
        complete=visited == len(graph.states),
    )
