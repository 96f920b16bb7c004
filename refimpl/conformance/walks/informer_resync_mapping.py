"""spec/InformerResync.tla's request mapping: two handlers (one added late) and resync.

Owns :class:`InformerResyncMapping` and its instance :data:`INFORMER_RESYNC`: the
``informer`` component as spec/Informer.tla's eager walk
(:class:`~refimpl.conformance.walks.informer_mapping.InformerMapping`), plus
``AddHandler`` (``add_handler`` of h2 after ``start``) and ``ResyncCheck`` (a resync
tick: ``advance``). Over the protocol the clock decides which handlers a tick finds
due, and the clock's history is not in a spec state, so the walk keeps what of it
matters in copies of the graph (see the class).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from refimpl.conformance.walks.informer_mapping import (
    INFORMER_EXTERNAL,
    InformerMapping,
    _EagerSteps,
    handler_call,
)
from refimpl.conformance.walks.spec_mapping import (
    Check,
    DrivenEdge,
    call_request,
    node_state,
    request_key,
)
from refimpl.tla.graph import StateGraph
from refimpl.tla.values import Fn

__all__ = ["CHECK_PERIOD", "H1_PERIOD", "INFORMER_RESYNC", "LONG_WAIT", "InformerResyncMapping"]

#: The informer's resync period (its ``resync`` option): the reflector's check period,
#: and h2's period when it is to be due. A tick comes this long after a list, so every
#: other wait of a list's watch phase (2 s before each drop) must add up to less.
CHECK_PERIOD = 100_000
#: The wait (``advance``) that lets h1 be due: taken while the informer waits for a
#: list, so no tick falls inside it. Every other wait of a walk adds up to far less.
LONG_WAIT = 10_000_000
#: h1's period: due at a tick only once the clock has passed LONG_WAIT before the last
#: list (a tick comes CHECK_PERIOD after it); registered at 0, before start.
H1_PERIOD = CHECK_PERIOD + LONG_WAIT

#: Bits of a node's copy of the graph (node = state + copy * len(states)).
_MOVED = 1  # h2 not added: the clock moved since the last list; added: it had then
_WAITED = 2  # the long wait was taken: h1 is due at a tick
_PERIODIC = 4  # h2 was added with a period (CHECK_PERIOD), else 0 (never due)
_COPIES = 8

#: The reason a ResyncCheck that no clock gives is not driven (with the processing
#: the step takes after it).
LATE_H2 = (
    "ResyncCheck with h2 due where every walk adds h2 after the clock moved since the "
    "last list (the 2 s before a drop): h2's first due time is after the tick"
)


#: The harness's steps: InformerResync's own two, its wait, and Informer.tla's.
_EXTERNAL = INFORMER_EXTERNAL | {"AddHandler", "ResyncCheck"}
#: The steps that are an ``advance`` (answered ``null``).
_ADVANCES = ("wait", "ResyncCheck")


def _due(graph: StateGraph, step: DrivenEdge) -> frozenset[str]:
    """The handlers the step's ResyncCheck finds due (those it leaves syncing)."""
    source, target = node_state(graph, step.source), node_state(graph, step.target)
    syncing = target["syncing"]
    assert isinstance(syncing, Fn)
    added = ("h1", "h2") if source["added2"] else ("h1",)
    return frozenset(h for h in added if syncing[h])


@attrs.frozen
class InformerResyncMapping(InformerMapping):
    """spec/InformerResync.tla as the ``informer`` (DeltaFIFO), processing eagerly.

    As :class:`~refimpl.conformance.walks.informer_mapping.InformerMapping` (the
    harness's ``Write``, ``Compact``, ``List``, ``Connect``, ``WatchEvent`` and
    ``WatchDrop``; the internal ``Pop``, ``StoreWrite``, ``Distribute``, ``Handle``, and
    here ``Handle2``, taken eagerly), with h1 (``Handle``) added before ``start`` with
    period :data:`H1_PERIOD` and the informer created with ``resync``
    :data:`CHECK_PERIOD`, and:

    * ``AddHandler`` is ``add_handler`` of h2 on the started informer, with period
      :data:`CHECK_PERIOD` or 0 (never due): two steps, the walk picks; its answer
      holds h2's initial adds (``Handle2``);
    * ``ResyncCheck`` is ``advance`` by :data:`CHECK_PERIOD`, then ``state``: the tick
      (the first one after the last list: every other wait of a watch phase is
      shorter) resyncs the FIFO if a handler is due, and ``calls`` holds what the
      handlers due got;
    * ``wait`` (no spec action) is ``advance`` by :data:`LONG_WAIT` while the informer
      waits for a list.

    Which handlers a tick finds due follows from the clock's history, which no spec
    state holds. The walk's node is ``state + copy * len(states)``, the copy's bits
    what matters of that history: *waited* (the long wait was taken, so every later
    list and tick comes after h1's due time: h1 is due), *periodic* (h2 was added with
    a period: due at the tick if added no later than the last list) and *moved* (the
    clock moved since the last list: the 2 s before a drop, the 300 s after a 410). A
    list clears *moved*; ``AddHandler`` keeps it, then meaning that h2 was added after
    the last list, so its first due time falls after the tick. A ``ResyncCheck`` is
    driven from a copy only if its due set is the one the copy's clock gives; from a
    copy with h2 periodic and added after the last list none is (the protocol leaves
    open whether a handler is asked at the tick's instant or at the end of the
    ``advance``, and only there do the two differ). A tick with h2 due that only such
    histories reach is not driven (:data:`LATE_H2`). The model has one tick per
    behaviour: after it the copy is 0 (nothing of the clock matters any more).
    """

    model: str = "InformerResync"
    fifo: str = "delta"
    internal: tuple[str, ...] = ("Handle", "Handle2", "Distribute", "StoreWrite", "Pop")
    pops: tuple[str, ...] = ("Pop",)
    #: no paused walk: pause's copy of the graph and the clock's copies are not combined
    pause: bool = False

    @property
    def options(self) -> Mapping[str, Any]:
        return {"resync": CHECK_PERIOD, "fifo": self.fifo}

    def refuses(self, caps: Mapping[str, Any]) -> str | None:
        if caps.get("resync") is not True:
            return (
                f"the {self.model} model needs resync periods: the informer must declare "
                "'resync': true (it honours the resync option and per-handler periods)"
            )
        return super().refuses(caps)

    def first_handler(self) -> tuple[str, float | None]:
        return "h1", H1_PERIOD

    # -- which edges a step covers ------------------------------------------------------

    def driven(
        self, graph: StateGraph, methods: frozenset[str]
    ) -> tuple[list[DrivenEdge], dict[str, int]]:
        unknown = {e.action for e in graph.edges} - set(self.internal) - _EXTERNAL
        if unknown:
            raise ValueError(f"{self.model}: actions {sorted(unknown)} are not mapped")
        every = _EagerSteps(graph, self.internal, self.pops, False).steps()
        n = len(graph.states)
        steps: dict[tuple[int, str], DrivenEdge] = {}
        for copy in range(_COPIES):
            for step in every:
                for to in self._copies_after(graph, step, copy):
                    moved = attrs.evolve(
                        step, source=step.source + copy * n, target=step.target + to * n
                    )
                    steps.setdefault(
                        (moved.source, request_key(self.probe(graph, moved, None))), moved
                    )
        for state in sorted({s.source for s in every}):
            if graph.states[state]["reflector"] == "list" and not graph.states[state]["resyncs"]:
                for copy in range(_COPIES):
                    if not copy & _WAITED:
                        wait = DrivenEdge(
                            state + copy * n, state + (copy | _WAITED) * n, "wait", (), ()
                        )
                        steps[(wait.source, "wait")] = wait
        return self._clocked(graph, list(steps.values()), every)

    def _copies_after(self, graph: StateGraph, step: DrivenEdge, copy: int) -> list[int]:
        """The copies ``step`` leads to from ``copy`` of its source (none: no clock
        drives it from there)."""
        state = graph.states[step.source]
        if state["resyncs"]:
            return [0]  # after the tick nothing of the clock matters
        added = bool(state["added2"])
        match step.action:
            case "List":
                return [copy & ~_MOVED]
            case "WatchDrop":
                return [copy if added else copy | _MOVED]
            case "Connect" if self._expired(state) and not added:
                return [copy | _MOVED]
            case "AddHandler":
                return [copy, copy | _PERIODIC]
            case "ResyncCheck":
                due = _due(graph, step)
                periodic = added and bool(copy & _PERIODIC)
                if periodic and copy & _MOVED:
                    return []
                if ("h1" in due) != bool(copy & _WAITED) or ("h2" in due) != periodic:
                    return []
                return [0]
        return [copy]

    def _clocked(
        self, graph: StateGraph, steps: list[DrivenEdge], every: Sequence[DrivenEdge]
    ) -> tuple[list[DrivenEdge], dict[str, int]]:
        """``steps`` without those from a copy of a reachable state that no walk reaches
        (there a tick's due set is one no clock history gives), and the graph edges no
        step covers by reason: the eager walk's, and those ticks (with the processing
        after them). The steps from states no walk reaches are kept: the walks report
        their edges as reachable only through edges not driven."""
        n = len(graph.states)
        reached = _reachable(steps, graph.init[0])
        states = {node % n for node in reached}
        kept = [s for s in steps if s.source in reached or s.source % n not in states]
        covered = {i for s in kept for i in s.covers}
        late = {i for s in steps if s.source not in reached for i in s.covers} - covered
        reasons = self._undriven(graph, steps, every, False)
        reasons[LATE_H2] = len(late)
        return kept, reasons

    # -- the requests -------------------------------------------------------------------

    def probe(self, graph: StateGraph, edge: DrivenEdge, plan: Any) -> dict[str, Any]:
        match edge.action:
            case "wait":
                return {"op": "advance", "seconds": LONG_WAIT}
            case "ResyncCheck":
                return {"op": "advance", "seconds": CHECK_PERIOD}
            case "AddHandler":
                periodic = edge.target // len(graph.states) & _PERIODIC
                period = CHECK_PERIOD if periodic else 0
                return call_request("add_handler", name="h2", raises=False, resync=period)
        return super().probe(graph, edge, plan)

    def checks(self, graph: StateGraph, edge: DrivenEdge) -> list[Check]:
        if edge.action == "ResyncCheck":
            calls = self._calls(graph, edge)
            return [
                Check(
                    call_request("state"),
                    lambda s: self._observation(s, calls),
                    lambda s, answer: self._observed(s, calls, answer),
                )
            ]
        return super().checks(graph, edge)

    def expect(self, graph: StateGraph, edge: DrivenEdge) -> Any:
        if edge.action in _ADVANCES:
            return None
        return super().expect(graph, edge)

    def accepts(self, graph: StateGraph, edge: DrivenEdge, answer: Any) -> bool:
        if edge.action in _ADVANCES:
            return answer is None
        return super().accepts(graph, edge, answer)

    def _calls(self, graph: StateGraph, edge: DrivenEdge) -> list[dict[str, Any]]:
        """Both handlers' calls on the step's ``Handle`` (h1) and ``Handle2`` (h2) edges."""
        calls: list[dict[str, Any]] = []
        for i in edge.covers:
            e = graph.edges[i]
            buffer = {"Handle": "notifications", "Handle2": "notes2"}.get(e.action)
            if buffer is None:
                continue
            notes = graph.states[e.source][buffer]
            assert isinstance(notes, tuple) and notes
            calls.append(handler_call("h1" if e.action == "Handle" else "h2", notes[0]))
        return calls


def _reachable(steps: Iterable[DrivenEdge], init: int) -> set[int]:
    """The nodes ``init`` reaches through ``steps``."""
    out: dict[int, list[DrivenEdge]] = {}
    for step in steps:
        out.setdefault(step.source, []).append(step)
    seen = {init}
    todo = deque([init])
    while todo:
        for step in out.get(todo.popleft(), ()):
            if step.target not in seen:
                seen.add(step.target)
                todo.append(step.target)
    return seen


INFORMER_RESYNC = InformerResyncMapping()
