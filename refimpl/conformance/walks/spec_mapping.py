"""The shape every spec's request mapping has, and the parts they share.

A *request mapping* says how a graphed spec's actions become protocol requests and
what their answers must be. This module owns the :class:`SpecMapping` protocol the
walks need from one, the step type (:class:`DrivenEdge`), the checks
(:class:`Check`), and what the mappings share: which states and steps the adapter
cannot tell apart (:func:`state_classes`, :func:`shared_credit`), plain and merged
steps (:func:`plain_steps`, :func:`merged_steps`), and the request helpers. The
mappings themselves, one module per spec family, owning no state:

* :mod:`~refimpl.conformance.walks.workqueue_mapping` (spec/WorkQueue.tla);
* :mod:`~refimpl.conformance.walks.fifo_mapping` (spec/DeltaFIFO.tla, spec/RealFIFO.tla);
* :mod:`~refimpl.conformance.walks.informer_mapping` (spec/Informer.tla,
  spec/InformerAtomic.tla);
* :mod:`~refimpl.conformance.walks.informer_resync_mapping` (spec/InformerResync.tla);
* :mod:`~refimpl.conformance.walks.indexer_mapping` (spec/Indexer.tla);

and :data:`refimpl.conformance.walks.models.SPEC_MAPPINGS` names them by model. For every
model whose component the protocol has, a mapping says:

* which graph edges the protocol can drive, merged where one protocol call is several
  spec steps (RealFIFO's atomic ``Take`` then ``Process`` is one ``pop_nowait``), and
  why the others cannot be driven;
* the *probe*: the one request an edge sends (``add``, ``get_nowait``, ``pop_nowait``,
  ...) and the answer the edge's source and target states make observable;
* the requests that follow it (the FIFO's known-objects store is the model's ``store``,
  so after a ``Pop`` the harness writes the change the spec made, as an informer's
  process function would);
* the checks sent after every edge (``len`` of a queue, ``has_synced`` of a FIFO), with
  the answer the target state gives.

The informer models (:class:`~refimpl.conformance.walks.informer_mapping.InformerMapping`)
add steps the harness takes alone (its API server's writes: nothing is sent), requests
before a probe (``advance``), and answers with several allowed forms (``accepts``). The
expected answers come from the spec states alone, through the same object mappings the
code replay uses (:mod:`refimpl.tla.refine_fifo`, :mod:`refimpl.tla.refine_informer`),
never from running refimpl.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from refimpl.tla.graph import Edge, StateGraph
from refimpl.tla.values import Value

__all__ = [
    "HARNESS_ONLY",
    "Check",
    "DrivenEdge",
    "MappingDefaults",
    "SpecMapping",
    "State",
    "call_request",
    "merged_steps",
    "node_state",
    "plain_steps",
    "request_key",
    "shared_credit",
    "state_classes",
]

State = Mapping[str, Value]


@attrs.frozen
class DrivenEdge:
    """One step the harness can take: ``covers`` are the graph edges it traverses
    (two for a merged Take/Process), ``label`` the spec action as TLC prints it."""

    source: int
    target: int
    action: str
    args: tuple[Value, ...]
    covers: tuple[int, ...]
    #: the spec action passed through in the same request, if any (see merged_steps)
    then: str = ""

    @property
    def label(self) -> str:
        label = Edge(self.source, self.target, self.action, self.args).label
        return f"{label} + {self.then}" if self.then else label


@attrs.frozen
class Check:
    """An observation request and the result a spec state calls for: ``expected``
    (compared for equality), or where the spec allows several answers, ``accepts``
    (``expected`` is then one allowed answer, for the report)."""

    request: dict[str, Any]
    expected: Callable[[State], Any]
    accepts: Callable[[State, Any], bool] | None = None
    #: An answer that, once it changes, never comes back (``drain_returned``'s
    #: ``False``: a call that has returned stays returned). Where the walk's next step
    #: sends the same check expecting this answer again, the harness leaves this
    #: step's out: the later answer shows it (walker.Walker.implied).
    settled: Any = None

    def ok(self, state: State, answer: Any) -> bool:
        if self.accepts is not None:
            return self.accepts(state, answer)
        return bool(self.expected(state) == answer)


#: The ``op`` of a probe that is not sent: a step the harness takes on its own side
#: (the informer models' API server: a write or a compaction changes what the harness
#: will answer later, and nothing the adapter can see yet).
HARNESS_ONLY = "harness-only"


def request_key(request: Mapping[str, Any]) -> str:
    """A request as a comparable string (requests are JSON objects)."""
    return json.dumps(request, sort_keys=True)


def call_request(method: str, **args: Any) -> dict[str, Any]:
    """A ``call`` of ``method`` on the walk's one instance."""
    return {"op": "call", "instance": "x", "method": method, "args": args}


class SpecMapping(Protocol):
    """What :func:`refimpl.conformance.walks.run.drive` needs from one model."""

    @property
    def model(self) -> str:
        """The model's name in spec/models.json."""
        ...

    @property
    def component(self) -> str: ...

    @property
    def options(self) -> Mapping[str, Any]:
        """The create options that make the component the model's."""
        ...

    @property
    def methods(self) -> frozenset[str]:
        """Methods the adapter must declare for the component."""
        ...

    @property
    def timed(self) -> bool:
        """True when a step's requests depend on later steps (delays): the walk is
        planned whole before it is sent, so the model must be deterministic."""
        ...

    @property
    def planned(self) -> bool:
        """Walk a planned covering tour (planner.plan_walks), or only go to the
        nearest untaken edge again and again (the informer: see InformerMapping)."""
        ...

    def driven(
        self, graph: StateGraph, methods: frozenset[str]
    ) -> tuple[list[DrivenEdge], dict[str, int]]:
        """The steps an adapter declaring ``methods`` can be driven through, and for
        the other graph edges: reason -> how many."""
        ...

    def schedule(self, graph: StateGraph, walk: Sequence[DrivenEdge]) -> list[Any]:
        """Per step of a planned walk (from the initial state), what its requests need
        to know about the future (delays); ``None`` entries for untimed models."""
        ...

    def probe(self, graph: StateGraph, edge: DrivenEdge, plan: Any) -> dict[str, Any]:
        """The request that performs ``edge``."""
        ...

    def expect(self, graph: StateGraph, edge: DrivenEdge) -> Any:
        """The probe's ``result`` the edge's source and target states call for."""
        ...

    def follow(self, graph: StateGraph, edge: DrivenEdge) -> list[dict[str, Any]]:
        """Requests that complete the step (each must answer ``null``)."""
        ...

    def checks(self, graph: StateGraph, edge: DrivenEdge) -> list[Check]:
        """Requests sent after a step to observe its target state, each with the
        result a state calls for."""
        ...

    def accepts(self, graph: StateGraph, edge: DrivenEdge, answer: Any) -> bool:
        """Whether the probe's ``answer`` is one the edge allows (``expect`` is one)."""
        ...

    def prepare(self, graph: StateGraph, edge: DrivenEdge) -> list[dict[str, Any]]:
        """Requests sent before the probe (each must answer ``null``)."""
        ...

    def setup(self, graph: StateGraph) -> list[Check]:
        """Requests sent after ``create`` at the start of every walk, checked against
        the initial state."""
        ...

    def refuses(self, caps: Mapping[str, Any]) -> str | None:
        """Why an adapter with these ``hello`` capabilities for the component cannot
        be walked (beyond missing methods and narrowed options), or None."""
        ...

    @property
    def fragment(self) -> str:
        """What the drivable part of the graph is called in a verdict that covers less
        than half of it (``drivable``; the informer's: ``eager``)."""
        ...

    @property
    def hidden(self) -> tuple[str, ...]:
        """Spec variables only the harness holds (which worker holds an item, what the
        consumer does): edges that differ in nothing else are one test of the adapter,
        and taking one covers them all (see shared_credit)."""
        ...


class MappingDefaults:
    """The optional parts of :class:`SpecMapping` for a mapping that needs none."""

    def expect(self, graph: StateGraph, edge: DrivenEdge) -> Any:
        raise NotImplementedError

    def accepts(self, graph: StateGraph, edge: DrivenEdge, answer: Any) -> bool:
        return bool(self.expect(graph, edge) == answer)

    def prepare(self, graph: StateGraph, edge: DrivenEdge) -> list[dict[str, Any]]:
        return []

    def setup(self, graph: StateGraph) -> list[Check]:
        return []

    def refuses(self, caps: Mapping[str, Any]) -> str | None:
        return None

    hidden: tuple[str, ...] = ()
    fragment: str = "drivable"


def state_classes(graph: StateGraph, hidden: Sequence[str]) -> list[int]:
    """Per state, the number of the first state equal to it but for ``hidden``."""
    if not hidden:
        return list(range(len(graph.states)))
    first: dict[str, int] = {}
    out: list[int] = []
    for i, state in enumerate(graph.states):
        shown = {k: repr(v) for k, v in state.items() if k not in hidden}
        out.append(first.setdefault(json.dumps(shown, sort_keys=True), i))
    return out


def shared_credit(
    graph: StateGraph, mapping: SpecMapping, steps: list[DrivenEdge], classes: Sequence[int]
) -> list[DrivenEdge]:
    """``steps`` where each covers, besides its own edges, those of every step the
    adapter cannot tell from it: the same source and target states but for the
    mapping's ``hidden`` variables (and the same copy of the graph), the same action,
    request, expected answer, follow-up requests and checks. The harness sends
    exactly the same requests and expects exactly the same answers for them, from an
    adapter in the same state; the walks stay paths of the model. ``classes``: the
    graph's :func:`state_classes` for ``mapping.hidden``."""
    if not mapping.hidden:
        return steps
    n = len(graph.states)

    def node(i: int) -> str:
        return f"{i // n}:{classes[i % n]}"

    groups: dict[tuple[str, ...], list[DrivenEdge]] = {}
    for step in steps:
        target = graph.states[step.target % n]
        key = (
            node(step.source),
            node(step.target),
            step.action,
            step.then,
            request_key(mapping.probe(graph, step, 1)),
            json.dumps(mapping.expect(graph, step), sort_keys=True, default=str),
            json.dumps([request_key(r) for r in mapping.follow(graph, step)]),
            json.dumps(
                [[request_key(c.request), c.expected(target)] for c in mapping.checks(graph, step)],
                default=str,
            ),
        )
        groups.setdefault(key, []).append(step)
    out: list[DrivenEdge] = []
    for group in groups.values():
        covers = tuple(sorted({i for step in group for i in step.covers}))
        out += [attrs.evolve(step, covers=covers) for step in group]
    return out


def plain_steps(graph: StateGraph) -> list[DrivenEdge]:
    """One step per graph edge."""
    return [
        DrivenEdge(e.source, e.target, e.action, e.args, (i,)) for i, e in enumerate(graph.edges)
    ]


def merged_steps(
    graph: StateGraph,
    steps: list[DrivenEdge],
    finish: str,
    transient: Callable[[int], bool],
    rename: Mapping[str, str] | None = None,
) -> tuple[list[DrivenEdge], int]:
    """Steps where a state the protocol never rests in is passed through at once.

    A *transient* state (``transient`` says which) is left by its ``finish`` edge inside
    the same request that entered it (the adapter answers only once the step is over):
    every step into it is extended by that edge, and the other edges leaving it cannot
    be driven; ``rename`` gives a merged step the name of the request that does both
    (Take + Process is one Pop). Returns the steps and how many edges that leaves out.
    """
    finishes: dict[int, list[DrivenEdge]] = {}
    for step in steps:
        if step.action == finish and transient(step.source):
            finishes.setdefault(step.source, []).append(step)
    out: list[DrivenEdge] = []
    for step in steps:
        if transient(step.source):
            continue
        if step.target in finishes:
            action = (rename or {}).get(step.action, step.action)
            then = "" if action != step.action else finish
            for end in finishes[step.target]:
                covers = step.covers + end.covers
                out.append(DrivenEdge(step.source, end.target, action, step.args, covers, then))
        else:
            out.append(step)
    kept = {i for s in out for i in s.covers}
    return out, len({i for s in steps for i in s.covers} - kept)


def node_state(graph: StateGraph, node: int) -> State:
    """The spec state of a walk node (the paused copy's nodes follow the graph's)."""
    return graph.states[node % len(graph.states)]
