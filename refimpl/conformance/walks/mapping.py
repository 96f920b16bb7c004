"""How each graphed spec action becomes protocol requests, and what its answers must be.

Owns no state. Used by :mod:`refimpl.conformance.walks.walker`, which walks a committed
state graph (spec/graphs/) edge by edge. For every model whose component the protocol
has, a :class:`SpecDriver` says:

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

The informer models (:class:`InformerDriver`) add steps the harness takes alone (its
API server's writes: nothing is sent), requests before a probe (``advance``), and
answers with several allowed forms (``accepts``). The expected answers come from the
spec states alone, through the same object mappings the code replay uses
(:mod:`refimpl.tla.refine_fifo`, :mod:`refimpl.tla.refine_informer`), never from
running refimpl.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from refimpl.conformance.reference.cache import delta_json, to_json
from refimpl.meta import Object
from refimpl.tla.graph import Edge, StateGraph
from refimpl.tla.refine_fifo import delta_from_spec, object_from_spec
from refimpl.tla.values import Fn, Value, value_to_json

__all__ = [
    "DELTA_FIFO",
    "DRIVERS",
    "FIFO_NO_BATCH",
    "FIFO_NO_TAKE_BATCH",
    "HARNESS_ONLY",
    "INFORMER",
    "INFORMER_ATOMIC",
    "REAL_FIFO",
    "REAL_FIFO_ATOMIC",
    "WORK_QUEUE",
    "Check",
    "DrivenEdge",
    "InformerDriver",
    "SpecDriver",
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
    #: the spec action passed through in the same request, if any (see _merged)
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
    #: step's out: the later answer shows it (spec_driven._Walker.implied).
    settled: Any = None

    def ok(self, state: State, answer: Any) -> bool:
        if self.accepts is not None:
            return self.accepts(state, answer)
        return bool(self.expected(state) == answer)


#: The ``op`` of a probe that is not sent: a step the harness takes on its own side
#: (the informer models' API server: a write or a compaction changes what the harness
#: will answer later, and nothing the adapter can see yet).
HARNESS_ONLY = "harness-only"


def _queue_len(state: State) -> int:
    queue = state["queue"]
    assert isinstance(queue, tuple)
    return len(queue)


def request_key(request: Mapping[str, Any]) -> str:
    """A request as a comparable string (requests are JSON objects)."""
    return json.dumps(request, sort_keys=True)


def _call(method: str, **args: Any) -> dict[str, Any]:
    return {"op": "call", "instance": "x", "method": method, "args": args}


class SpecDriver(Protocol):
    """What :func:`refimpl.conformance.walks.walker.drive` needs from one model."""

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
        """Walk a planned covering tour (spec_driven.plan_walks), or only go to the
        nearest untaken edge again and again (the informer: see InformerDriver)."""
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
    def hidden(self) -> tuple[str, ...]:
        """Spec variables only the harness holds (which worker holds an item, what the
        consumer does): edges that differ in nothing else are one test of the adapter,
        and taking one covers them all (see shared_credit)."""
        ...


class _Defaults:
    """The optional parts of :class:`SpecDriver` for a driver that needs none."""

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
    graph: StateGraph, driver: SpecDriver, steps: list[DrivenEdge], classes: Sequence[int]
) -> list[DrivenEdge]:
    """``steps`` where each covers, besides its own edges, those of every step the
    adapter cannot tell from it: the same source and target states but for the
    driver's ``hidden`` variables (and the same copy of the graph), the same action,
    request, expected answer, follow-up requests and checks. The harness sends
    exactly the same requests and expects exactly the same answers for them, from an
    adapter in the same state; the walks stay paths of the model. ``classes``: the
    graph's :func:`state_classes` for ``driver.hidden``."""
    if not driver.hidden:
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
            request_key(driver.probe(graph, step, 1)),
            json.dumps(driver.expect(graph, step), sort_keys=True, default=str),
            json.dumps([request_key(r) for r in driver.follow(graph, step)]),
            json.dumps(
                [[request_key(c.request), c.expected(target)] for c in driver.checks(graph, step)],
                default=str,
            ),
        )
        groups.setdefault(key, []).append(step)
    out: list[DrivenEdge] = []
    for group in groups.values():
        covers = tuple(sorted({i for step in group for i in step.covers}))
        out += [attrs.evolve(step, covers=covers) for step in group]
    return out


def _plain(graph: StateGraph) -> list[DrivenEdge]:
    return [
        DrivenEdge(e.source, e.target, e.action, e.args, (i,)) for i, e in enumerate(graph.edges)
    ]


def _merged(
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


# -- the work queue: spec/WorkQueue.tla through the delaying_queue component -------------

#: Every delay the harness sends is a whole number of these (1 ms).
TICK = 0.001
#: Deadline of a delayed add that never fires in its walk: far beyond every Ready.
NEVER = 1_000_000


@attrs.frozen
class WorkQueueDriver(_Defaults):
    """spec/WorkQueue.tla as a ``delaying_queue``.

    The spec's workers are the harness: ``Get(w)`` is ``get_nowait`` and worker ``w``
    then holds the item, ``Done(w)`` is ``done`` of what it holds. ``AddAfter(x)`` is
    ``add_after`` with a delay chosen so that ``x`` falls due exactly when the walk's
    next ``Ready(x)`` advances the clock, and no other waiting key with it: the i-th
    ``Ready`` of a walk happens at i ms (the model has no ``AddAfter`` of a key already
    waiting, so a walk never needs two deadlines for one key). ``ShutDownWithDrain``
    is ``drain_start``; ``DrainReturn`` happens inside the request that lets the drain
    finish (the last ``done``, or ``shut_down``), and ``drain_returned`` observes it.
    An adapter without those two methods is walked without the drain.
    """

    model: str = "WorkQueue"
    component: str = "delaying_queue"
    options: Mapping[str, Any] = attrs.field(factory=dict)
    methods: frozenset[str] = frozenset(
        {"add", "get_nowait", "done", "len", "shut_down", "shutting_down", "add_after"}
    )
    timed: bool = True
    planned: bool = True
    #: The harness is the workers: which of them holds an item, and which have seen
    #: the shutdown, is its own bookkeeping; the queue holds the processing set.
    hidden = ("holding", "stopped")

    def driven(
        self, graph: StateGraph, methods: frozenset[str]
    ) -> tuple[list[DrivenEdge], dict[str, int]]:
        drain = {"ShutDownWithDrain", "DrainReturn"}
        if not {"drain_start", "drain_returned"} <= methods:
            skipped = sum(1 for e in graph.edges if e.action in drain)
            steps = [e for e in _plain(graph) if e.action not in drain]
            return steps, {"ShutDownWithDrain/DrainReturn: no drain_start/drain_returned": skipped}
        # The model's ShutDown is the plain queue's, which always ends a drain (WQ-12).
        # client-go's delaying queue wraps only ShutDown in a sync.Once (DQ-6,
        # delaying_queue.go delayingType.ShutDown); its ShutDownWithDrain is the plain
        # queue's (queue.go Typed.ShutDownWithDrain, not overridden). So the first
        # shut_down of a walk is the plain queue's ShutDown, drain or not, and a later
        # one does nothing, which the model's state does not record. The walk tracks
        # it: node i is state i before any shut_down since the reset, node i + n the
        # same state after one (see spec_driven._Graph); ShutDown leads from the first
        # copy to the second, and the second has no ShutDown (the model enables it
        # there only during a drain, where the delaying queue's would do nothing).
        n = len(graph.states)
        copied: list[DrivenEdge] = []
        for e in _plain(graph):
            if e.action == "ShutDown":
                copied.append(attrs.evolve(e, target=e.target + n))
            else:
                copied += [e, attrs.evolve(e, source=e.source + n, target=e.target + n)]
        # ShutDownWithDrain returns as soon as nothing is in flight (or a ShutDown cut
        # it short): the adapter answers the request that made that so only after the
        # drainer returned, so such a state is passed through at once.
        returns = {e.source for e in graph.edges if e.action == "DrainReturn"}
        steps, lost = _merged(
            graph,
            copied,
            "DrainReturn",
            lambda i: i % n in returns and graph.states[i % n]["drainer"] == "waiting",
        )
        return steps, {
            "steps between a drain completing and ShutDownWithDrain returning": lost,
        }

    def schedule(self, graph: StateGraph, walk: Sequence[DrivenEdge]) -> list[Any]:
        ready_at: list[int | None] = []
        ticks = 0
        for step in walk:
            if step.action == "Ready":
                ticks += 1
                ready_at.append(ticks)
            else:
                ready_at.append(None)
        plans: list[Any] = []
        now = 0
        for i, step in enumerate(walk):
            if step.action == "AddAfter":
                (key,) = step.args
                due = NEVER
                for j in range(i + 1, len(walk)):
                    later = walk[j]
                    if later.action in ("ShutDown", "ShutDownWithDrain"):
                        break
                    if later.action == "Ready" and later.args == (key,):
                        found = ready_at[j]
                        assert found is not None
                        due = found
                        break
                plans.append(due - now)
            elif step.action == "Ready":
                found = ready_at[i]
                assert found is not None
                plans.append(found - now)
                now = found
            else:
                plans.append(None)
        return plans

    def probe(self, graph: StateGraph, edge: DrivenEdge, plan: Any) -> dict[str, Any]:
        state = _node(graph, edge.source)
        match edge.action:
            case "Add":
                return _call("add", item=str(edge.args[0]))
            case "AddAfter":
                if plan is None:
                    raise ValueError("AddAfter needs a planned delay")
                return _call("add_after", item=str(edge.args[0]), delay=plan * TICK)
            case "Ready":
                if plan is None:
                    raise ValueError("Ready needs a planned clock step")
                return {"op": "advance", "seconds": plan * TICK}
            case "Get" | "WorkerExit":
                return _call("get_nowait")
            case "Done":
                holding = state["holding"]
                assert isinstance(holding, Fn)
                return _call("done", item=str(holding[edge.args[0]]))
            case "ShutDown":
                return _call("shut_down")
            case "ShutDownWithDrain":
                return _call("drain_start")
        raise ValueError(f"WorkQueue action {edge.action} is not driven")

    def expect(self, graph: StateGraph, edge: DrivenEdge) -> Any:
        if edge.action == "Get":
            holding = _node(graph, edge.target)["holding"]
            assert isinstance(holding, Fn)
            return {"kind": "item", "item": str(holding[edge.args[0]])}
        if edge.action == "WorkerExit":
            return {"kind": "shutdown"}
        return None

    def follow(self, graph: StateGraph, edge: DrivenEdge) -> list[dict[str, Any]]:
        return []

    def checks(self, graph: StateGraph, edge: DrivenEdge) -> list[Check]:
        # The length after every step; shutting_down where it can change (a queue
        # that starts shutting down elsewhere shows in the next get's answer).
        out = [Check(_call("len"), _queue_len)]
        if edge.action in ("ShutDown", "ShutDownWithDrain"):
            out.append(Check(_call("shutting_down"), lambda s: bool(s["shuttingDown"])))
        if _node(graph, edge.source)["drainer"] == "waiting" or edge.action == "ShutDownWithDrain":
            out.append(
                Check(_call("drain_returned"), lambda s: s["drainer"] == "returned", settled=False)
            )
        return out


# -- the FIFOs: spec/DeltaFIFO.tla and spec/RealFIFO.tla -----------------------------------

#: The resourceVersion every driven ``replace`` carries (the specs do not model it).
LIST_RV = "1"


def _obj_json(value: Value) -> Any:
    """A spec object (never a tombstone: the producers' arguments) in protocol form."""
    obj = object_from_spec(value)
    assert isinstance(obj, Object)
    return to_json(obj)


def _delta_json(value: Value) -> dict[str, Any]:
    out = delta_json(delta_from_spec(value))
    replaced = out["object"].get("replaced_all") if isinstance(out["object"], dict) else None
    if isinstance(replaced, dict):
        replaced["rv"] = LIST_RV
    return out


#: Why a FIFO walk leaves out RealFIFO's batch pop (replayed against refimpl's cores
#: over the same graphs: refimpl/tla/refine_fifo.py).
FIFO_NO_BATCH = "PopBatch: no pop_batch_nowait"
FIFO_NO_TAKE_BATCH = "TakeBatch: the protocol has no batch pop_begin"


@attrs.frozen
class FIFODriver(_Defaults):
    """spec/DeltaFIFO.tla and spec/RealFIFO.tla (both modes) as FIFO components.

    The spec's ``store`` is the FIFO's known-objects store (the informer's indexer):
    after each ``Pop`` the harness writes the spec's change to it with ``known_add`` /
    ``known_delete``. ``Pop`` answers the popped key's deltas (DeltaFIFO) or one entry
    (RealFIFO), with ``initial`` = not yet synced. In atomic mode ``Take`` and
    ``Process`` are one ``pop_nowait``: what the spec lets producers do between them
    (while the process function runs) cannot be driven through the protocol.
    The consumer's ``Wait`` is a ``pop_nowait`` answering ``empty``, ``Close`` is
    ``close`` and ``Exit`` a ``pop_nowait`` answering ``closed``. RealFIFO's
    ``PopBatch`` is the optional ``pop_batch_nowait``; ``TakeBatch`` (atomic) would
    need a batch ``pop_begin`` (the atomic model, with one entry queued, has none).
    """

    model: str
    component: str
    options: Mapping[str, Any]
    known: bool
    #: RealFIFO's atomic mode: Pop's process function runs with the lock released
    atomic: bool = False
    timed: bool = False
    planned: bool = True
    #: The harness is the consumer: whether it runs, waits or has exited is its own
    #: bookkeeping (``pop_nowait`` never blocks); the FIFO holds the log and ``closed``.
    hidden = ("consumer",)

    @property
    def methods(self) -> frozenset[str]:
        base = {"add", "update", "delete", "replace", "resync", "pop_nowait", "has_synced"}
        return frozenset(base | ({"known_add", "known_delete"} if self.known else set()))

    def driven(
        self, graph: StateGraph, methods: frozenset[str]
    ) -> tuple[list[DrivenEdge], dict[str, int]]:
        plain = _plain(graph)
        undriven: dict[str, int] = {}
        left_out = {"TakeBatch": FIFO_NO_TAKE_BATCH}
        if "pop_batch_nowait" not in methods:
            left_out["PopBatch"] = FIFO_NO_BATCH
        for reason in set(left_out.values()):
            n = sum(1 for e in plain if left_out.get(e.action) == reason)
            if n:
                undriven[reason] = n
        plain = [e for e in plain if e.action not in left_out]
        if not self.atomic or {"pop_begin", "pop_end"} <= methods:
            return plain, undriven
        # Without pop_begin/pop_end, pop_nowait is Take and Process in one request.
        steps, lost = _merged(
            graph, plain, "Process", lambda i: _processing(graph, i), {"Take": "Pop"}
        )
        undriven["steps while Pop's process function runs: no pop_begin/pop_end"] = lost
        return steps, undriven

    def schedule(self, graph: StateGraph, walk: Sequence[DrivenEdge]) -> list[Any]:
        return [None] * len(walk)

    def probe(self, graph: StateGraph, edge: DrivenEdge, plan: Any) -> dict[str, Any]:
        match edge.action:
            case "Add" | "Update" | "Delete":
                return _call(edge.action.lower(), obj=_obj_json(edge.args[0]))
            case "Replace":
                listed = edge.args[0]
                assert isinstance(listed, tuple)
                return _call("replace", objs=[_obj_json(o) for o in listed], rv=LIST_RV)
            case "Resync":
                return _call("resync")
            case "Pop":
                return _call("pop_nowait")
            case "PopBatch":
                return _call("pop_batch_nowait")
            case "Take":
                return _call("pop_begin")
            case "Process":
                return _call("pop_end")
            case "Close":
                return _call("close")
            case "Wait" | "Exit":
                return _call("pop_nowait")
        raise ValueError(f"FIFO action {edge.action} is not driven")

    def expect(self, graph: StateGraph, edge: DrivenEdge) -> Any:
        if edge.action == "Wait":
            return {"kind": "empty"}
        if edge.action == "Exit":
            return {"kind": "closed"}
        if edge.action not in ("Pop", "Take", "PopBatch"):
            return None
        source = graph.states[edge.source]
        if edge.action == "PopBatch":
            before, after = source["log"], graph.states[edge.target]["log"]
            assert isinstance(before, tuple) and isinstance(after, tuple)
            return {
                "kind": "batch",
                "deltas": [_delta_json(d) for d in before[: len(before) - len(after)]],
                "initial": not source["synced"],
            }
        if "items" in source:
            queue, items = source["queue"], source["items"]
            assert isinstance(queue, tuple) and isinstance(items, Fn)
            deltas = items[queue[0]]
        else:
            log = source["log"]
            assert isinstance(log, tuple)
            deltas = (log[0],)
        assert isinstance(deltas, tuple)
        return {
            "kind": "item",
            "deltas": [_delta_json(d) for d in deltas],
            "initial": not source["synced"],
        }

    def follow(self, graph: StateGraph, edge: DrivenEdge) -> list[dict[str, Any]]:
        if edge.action not in ("Pop", "PopBatch") or not self.known:
            return []
        before, after = graph.states[edge.source]["store"], graph.states[edge.target]["store"]
        assert isinstance(before, Fn) and isinstance(after, Fn)
        # The store is written in the order the entries were popped (a batch's order;
        # a key's deltas are one key), other keys (a ReplacedAll's) by name.
        popped: list[str] = []
        source = graph.states[edge.source]
        if "log" in source:
            log, rest = source["log"], graph.states[edge.target]["log"]
            assert isinstance(log, tuple) and isinstance(rest, tuple)
            for entry in log[: len(log) - len(rest)]:
                assert isinstance(entry, Fn)
                obj = entry["obj"]
                if isinstance(obj, Fn) and "key" in obj:
                    popped.append(str(obj["key"]))
        rank = {key: i for i, key in enumerate(popped)}
        out: list[dict[str, Any]] = []
        for key, rv in sorted(
            after.items(), key=lambda kv: (rank.get(str(kv[0]), len(rank)), str(kv[0]))
        ):
            old = before[key]
            if rv == old:
                continue
            if rv:
                out.append(_call("known_add", obj=_obj_json(_spec_obj(str(key), rv))))
            else:
                out.append(_call("known_delete", obj=_obj_json(_spec_obj(str(key), old))))
        return out

    def checks(self, graph: StateGraph, edge: DrivenEdge) -> list[Check]:
        # Until the source state is synced has_synced can turn true on any step; after
        # that the spec keeps it true (SyncedIsMonotone), checked after each Pop.
        out = []
        if not graph.states[edge.source]["synced"] or edge.action in ("Pop", "PopBatch"):
            out.append(Check(_call("has_synced"), lambda s: bool(s["synced"])))
        if edge.action == "Close":
            out.append(Check(_call("is_closed"), lambda s: bool(s["closed"])))
        return out


def _spec_obj(key: str, rv: Value) -> Fn:
    return Fn({"key": key, "rv": rv, "dfsu": False})


def _processing(graph: StateGraph, state: int) -> bool:
    return graph.states[state].get("processing", ()) != ()


# -- the informer: spec/Informer.tla and spec/InformerAtomic.tla ---------------------------

#: The informer models' actions the harness takes: its API server's (``Write``,
#: ``Compact``: nothing is sent) and the answers to the informer's list and watch.
INFORMER_EXTERNAL = frozenset({"Write", "Compact", "List", "Connect", "WatchEvent", "WatchDrop"})
#: Seconds the harness lets pass before it ends a watch: client-go relists after a
#: watch that ends within 1 s with no event (VeryShortWatchError), which the specs do
#: not model.
BEFORE_DROP = 2.0
#: Seconds the harness lets pass after a 410 on a watch request: client-go backs off
#: before it relists; the protocol's INF-9 bounds that wait by 300 s.
AFTER_EXPIRED = 300.0
#: The one handler the walk registers.
HANDLER = "h0"


def _code_rv(rv: Value) -> str:
    """A spec rv as the protocol's resourceVersion (refine_informer: code = spec + 1)."""
    assert isinstance(rv, int)
    return str(rv + 1) if rv else ""


def _node(graph: StateGraph, node: int) -> State:
    """The spec state of a walk node (the paused copy's nodes follow the graph's)."""
    return graph.states[node % len(graph.states)]


def _informer_obj(key: Value, rv: Value) -> dict[str, Any]:
    return {"namespace": "", "name": str(key), "rv": _code_rv(rv), "labels": {}}


def _rv_int(rv: Any) -> int | None:
    return int(rv) if isinstance(rv, str) and rv.isdigit() else None


def _cache_of(state: State) -> list[dict[str, Any]]:
    store = state["store"]
    assert isinstance(store, Fn)
    return [
        _informer_obj(k, rv) for k, rv in sorted(store.items(), key=lambda kv: str(kv[0])) if rv
    ]


def _waiting_ok(state: State, waiting: Any, *, expired: bool = False) -> bool:
    """``waiting`` is what the spec state's ``reflector`` allows. The rv of an open
    watch is the one it was opened from, which the state does not record: any rv up
    to the last synced one is accepted. A relist may ask for ``""`` or the last
    synced rv (client-go asks for the latter after a watch's 410), the first list
    for ``"0"`` or ``""``. Right after a 410 (``expired``) the informer may be
    backing off before that relist."""
    if not isinstance(waiting, dict):
        return False
    op, rv = waiting.get("op"), waiting.get("rv")
    if waiting.get("send_initial_events"):
        return False
    last = state["lastSyncRV"]
    assert isinstance(last, int)
    match state["reflector"]:
        case "list":
            if expired and op == "sleeping":
                return True
            first = not state["populated"]
            return op == "list" and rv in (("0", "") if first else ("", str(last + 1)))
        case "connect":
            return op == "watch" and rv == str(last + 1)
        case "watch":
            asked = _rv_int(rv)
            return op == "watching" and asked is not None and 1 <= asked <= last + 1
    return False


def _waiting_shown(state: State) -> dict[str, Any]:
    """One ``waiting`` the state allows (for reports)."""
    last = state["lastSyncRV"]
    assert isinstance(last, int)
    match state["reflector"]:
        case "list":
            return {"op": "list", "rv": str(last + 1) if state["populated"] else "0"}
        case "connect":
            return {"op": "watch", "rv": str(last + 1)}
    return {"op": "watching", "rv": f"1..{last + 1}"}


def _cache_ok(state: State, cache: Any) -> bool:
    if not isinstance(cache, list):
        return False
    seen = [(o.get("namespace"), o.get("name"), o.get("rv")) for o in cache if isinstance(o, dict)]
    want = [("", o["name"], o["rv"]) for o in _cache_of(state)]
    return len(seen) == len(cache) and seen == want


def _inf1(call: Mapping[str, Any]) -> bool:
    """INF-1: the cache the handler saw holds the notified write (docs/protocol.md,
    "What is checked")."""
    rv, cached = _rv_int(call.get("rv")), call.get("cache")
    if call.get("kind") == "delete":
        if cached is None:
            return True
        newer = _rv_int(cached)
        return rv is not None and newer is not None and newer > rv
    held = _rv_int(cached)
    return rv is not None and held is not None and held >= rv


def informer_calls_ok(expected: list[dict[str, Any]], calls: Any) -> bool:
    """Per key the calls are the expected ones, in order (kind, key, rv); across keys
    any order (the specs' list and tombstone orders are Go map order, and the protocol's
    list is a set); every call from the walk's handler and within INF-1."""
    if not isinstance(calls, list) or len(calls) != len(expected):
        return False
    if not all(isinstance(c, dict) and c.get("handler") == HANDLER and _inf1(c) for c in calls):
        return False

    def per_key(cs: Sequence[Mapping[str, Any]]) -> dict[Any, list[tuple[Any, Any]]]:
        out: dict[Any, list[tuple[Any, Any]]] = {}
        for c in cs:
            out.setdefault(c.get("key"), []).append((c.get("kind"), c.get("rv")))
        return out

    return per_key(calls) == per_key(expected)


@attrs.frozen
class InformerDriver(_Defaults):
    """spec/Informer.tla (``fifo: delta``) and spec/InformerAtomic.tla
    (``fifo: real-atomic``) as the ``informer`` component, processing eagerly.

    The harness is the spec's API server: ``Write`` and ``Compact`` change only what
    it will answer (nothing is sent). ``List`` is ``list_reply`` with the server's
    objects (sorted by key: the protocol's list is a set, so the spec's list orders are
    one request) at rv ``Len(history)``; ``Connect`` is ``watch_open``, or
    ``watch_error`` ``expired`` when the last synced rv was compacted away, after which
    the harness lets :data:`AFTER_EXPIRED` seconds pass and observes the relist request
    (``state``); ``WatchEvent`` is ``watch_event`` of the next write; ``WatchDrop`` is
    ``watch_end`` ``clean`` after :data:`BEFORE_DROP` seconds. Resource versions are
    the spec's plus one, as in the code replay (refimpl/tla/refine_informer.py).

    The protocol runs the adapter's processing and handlers to quiescence after every
    request, so the spec's internal actions (``internal``, per model) are taken
    eagerly: a step is one external action from a state where no internal action is
    enabled, then internal actions until none is, preferring them in ``internal``'s
    order (the handlers first, as the reference's listener does; which interleaving
    the adapter takes is not observable beyond INF-1, so one is credited). Every
    answer (an observation) is checked against the step's target state: ``cache`` =
    ``store``, ``has_synced`` = ``synced``, ``waiting`` = ``reflector`` and
    ``lastSyncRV``, and ``calls`` = the notifications handled on the way, per key in
    order, across keys in any order, each within INF-1. Not checked, because the specs
    do not record them: an update's ``old_rv``, a delete's ``tombstone``, ``initial``.

    An adapter that declares ``pause`` and ``resume`` is also walked through a paused
    copy of the graph (node ``i + len(states)`` is state ``i`` with processing paused):
    ``pause`` enters it from a quiescent state; from a state where only a ``pops``
    action is enabled, an external action takes place with nothing popped (``calls``
    must stay empty); ``resume`` leaves it by the eager run to quiescence.
    """

    model: str
    fifo: str
    #: the spec's internal actions, the eager walk's preference first
    internal: tuple[str, ...]
    #: the internal actions ``pause`` holds back (the queue's pop)
    pops: tuple[str, ...]
    #: walk the paused copy too when the adapter declares ``pause``/``resume``
    pause: bool = True
    component: str = "informer"
    timed: bool = False
    #: The informer's walks are short anyway (the server's history only grows, so
    #: most walks end in a reset), and planning its large graphs took longer than the
    #: walks it saved (docs/conformance.md, "How the walks are built").
    planned: bool = False
    methods: frozenset[str] = frozenset(
        {"add_handler", "start", "list_reply", "watch_open", "watch_error", "watch_event"}
        | {"watch_end", "state"}
    )

    @property
    def options(self) -> Mapping[str, Any]:
        # No resync (the specs have none); list + watch (an absent watch_list).
        return {"resync": 0, "fifo": self.fifo}

    def refuses(self, caps: Mapping[str, Any]) -> str | None:
        like = caps.get("behaves_like")
        if not isinstance(like, list) or self.fifo not in like:
            return (
                f"the {self.model} model needs an informer created as fifo={self.fifo!r}; "
                f"the adapter's behaves_like is {json.dumps(like)}"
            )
        return None

    def setup(self, graph: StateGraph) -> list[Check]:
        idle = {"waiting": {"op": "idle"}, "has_synced": False, "cache": [], "calls": []}
        return [
            Check(_call("add_handler", name=HANDLER, raises=False, resync=None), lambda s: idle),
            Check(
                _call("start"),
                lambda s: self._observation(s, []),
                lambda s, answer: self._observed(s, [], answer),
            ),
        ]

    # -- which edges a step covers ------------------------------------------------------

    def driven(
        self, graph: StateGraph, methods: frozenset[str]
    ) -> tuple[list[DrivenEdge], dict[str, int]]:
        internal = set(self.internal)
        unknown = {e.action for e in graph.edges} - internal - INFORMER_EXTERNAL
        if unknown:
            raise ValueError(
                f"{self.model}: actions {sorted(unknown)} are neither the harness's nor "
                "internal; add them to the driver's table"
            )
        n = len(graph.states)
        out: list[list[int]] = [[] for _ in graph.states]
        for i, e in enumerate(graph.edges):
            out[e.source].append(i)
        enabled = [{graph.edges[i].action for i in es} & internal for es in out]
        quiet = [not acts for acts in enabled]
        # Paused (pause/resume): nothing is popped, so the states where only a pop is
        # enabled are where the adapter can rest too.
        pause = self.pause and {"pause", "resume"} <= methods
        held = [pause and acts <= set(self.pops) for acts in enabled]

        def completions(start: int) -> list[tuple[int, tuple[int, ...]]]:
            """Eager runs of internal actions from ``start`` to a quiet state."""
            done: list[tuple[int, tuple[int, ...]]] = []
            todo: list[tuple[int, tuple[int, ...]]] = [(start, ())]
            while todo:
                here, path = todo.pop()
                if quiet[here]:
                    done.append((here, path))
                    continue
                for action in self.internal:
                    nexts = [i for i in out[here] if graph.edges[i].action == action]
                    if nexts:
                        todo.extend((graph.edges[i].target, (*path, i)) for i in nexts)
                        break
            return sorted(done)

        def eager(
            source: int, action: str, args: tuple[Value, ...], first: tuple[int, ...], at: int
        ) -> list[DrivenEdge]:
            return [
                DrivenEdge(
                    source,
                    target,
                    action,
                    args,
                    (*first, *path),
                    ", ".join(graph.edges[j].action for j in path),
                )
                for target, path in completions(at)
            ]

        every: list[DrivenEdge] = []
        for i, e in enumerate(graph.edges):
            if e.action in internal:
                continue
            if quiet[e.source]:
                every += eager(e.source, e.action, e.args, (i,), e.target)
            if held[e.source]:
                # The paused copy of the graph: nodes n.. (see spec_driven._Graph).
                every.append(DrivenEdge(e.source + n, e.target + n, e.action, e.args, (i,)))
        for state in range(n):
            if quiet[state] and held[state]:
                every.append(DrivenEdge(state, state + n, "pause", (), ()))
            if held[state]:
                every += eager(state + n, "resume", (), (), state)
        # One step per request: the spec's list orders (and the orders of a relist's
        # deletions) are one request. Run eagerly they lead to the same state; paused,
        # to states whose queues differ only in the order across keys, which no answer
        # shows (calls are checked per key): the first edge stands for them all.
        steps: dict[tuple[int, str], DrivenEdge] = {}
        for step in every:
            steps.setdefault((step.source, request_key(self.probe(graph, step, None))), step)
        kept = {i for s in steps.values() for i in s.covers}
        listed = {i for s in every for i in s.covers}
        pending = (
            "external steps while notifications are pending or an entry is being processed "
            "(eager processing; pause holds back only the queue)"
            if pause
            else "external steps while processing or handlers are pending (eager processing)"
        )
        reasons = {
            pending: 0,
            "internal steps in another interleaving than the eager one (eager processing)": 0,
            "another list or deletion order: the same request, the same answers": 0,
        }
        names = list(reasons)
        for i, e in enumerate(graph.edges):
            if i in kept:
                continue
            if i in listed:
                reasons[names[2]] += 1
            elif e.action in internal:
                reasons[names[1]] += 1
            else:
                reasons[names[0]] += 1
        return list(steps.values()), reasons

    def schedule(self, graph: StateGraph, walk: Sequence[DrivenEdge]) -> list[Any]:
        return [None] * len(walk)

    # -- the requests -------------------------------------------------------------------

    @staticmethod
    def _expired(state: State) -> bool:
        last, compacted = state["lastSyncRV"], state["compacted"]
        assert isinstance(last, int) and isinstance(compacted, int)
        return last < compacted

    def probe(self, graph: StateGraph, edge: DrivenEdge, plan: Any) -> dict[str, Any]:
        source, target = _node(graph, edge.source), _node(graph, edge.target)
        history = source["history"]
        assert isinstance(history, tuple)
        match edge.action:
            case "Write":
                after = target["history"]
                assert isinstance(after, tuple)
                return {"op": HARNESS_ONLY, "write": value_to_json(after[-1])}
            case "Compact":
                return {"op": HARNESS_ONLY, "compact": value_to_json(target["compacted"])}
            case "List":
                server = source["server"]
                assert isinstance(server, Fn)
                objects = [
                    _informer_obj(k, rv)
                    for k, rv in sorted(server.items(), key=lambda kv: str(kv[0]))
                    if rv
                ]
                return _call("list_reply", objects=objects, rv=str(len(history) + 1))
            case "Connect":
                if self._expired(source):
                    return _call("watch_error", reason="expired")
                return _call("watch_open")
            case "WatchEvent":
                last = source["lastSyncRV"]
                assert isinstance(last, int)
                event = history[last]
                assert isinstance(event, Fn)
                obj = _informer_obj(event["key"], event["rv"])
                return _call("watch_event", type=str(event["type"]), object=obj)
            case "WatchDrop":
                return _call("watch_end", how="clean")
            case "pause" | "resume":
                return _call(edge.action)
        raise ValueError(f"{self.model} action {edge.action} is not driven")

    def prepare(self, graph: StateGraph, edge: DrivenEdge) -> list[dict[str, Any]]:
        if edge.action == "WatchDrop":
            return [{"op": "advance", "seconds": BEFORE_DROP}]
        return []

    def follow(self, graph: StateGraph, edge: DrivenEdge) -> list[dict[str, Any]]:
        if edge.action == "Connect" and self._expired(_node(graph, edge.source)):
            return [{"op": "advance", "seconds": AFTER_EXPIRED}]
        return []

    def checks(self, graph: StateGraph, edge: DrivenEdge) -> list[Check]:
        if edge.action == "Connect" and self._expired(_node(graph, edge.source)):
            # The relist request, once the backoff is over.
            return [
                Check(
                    _call("state"),
                    lambda s: self._observation(s, []),
                    lambda s, answer: self._observed(s, [], answer),
                )
            ]
        return []

    # -- the answers --------------------------------------------------------------------

    def _calls(self, graph: StateGraph, edge: DrivenEdge) -> list[dict[str, Any]]:
        """The handler calls of the step's ``Handle`` edges, in the spec's order."""
        calls: list[dict[str, Any]] = []
        for i in edge.covers:
            e = graph.edges[i]
            if e.action != "Handle":
                continue
            notes = graph.states[e.source]["notifications"]
            assert isinstance(notes, tuple) and notes
            note = notes[0]
            assert isinstance(note, Fn)
            calls.append(
                {
                    "handler": HANDLER,
                    "kind": str(note["type"]),
                    "key": str(note["key"]),
                    "rv": _code_rv(note["rv"]),
                }
            )
        return calls

    def _observation(self, state: State, calls: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "waiting": _waiting_shown(state),
            "has_synced": bool(state["synced"]),
            "cache": _cache_of(state),
            "calls": calls,
        }

    @staticmethod
    def _observed(
        state: State, calls: list[dict[str, Any]], answer: Any, *, expired: bool = False
    ) -> bool:
        return (
            isinstance(answer, dict)
            and _waiting_ok(state, answer.get("waiting"), expired=expired)
            and answer.get("has_synced") is bool(state["synced"])
            and _cache_ok(state, answer.get("cache"))
            and informer_calls_ok(calls, answer.get("calls"))
        )

    def expect(self, graph: StateGraph, edge: DrivenEdge) -> Any:
        if edge.action in ("Write", "Compact"):
            return None
        target = _node(graph, edge.target)
        seen = self._observation(target, self._calls(graph, edge))
        if edge.action == "Connect" and self._expired(_node(graph, edge.source)):
            seen["waiting"] = {"op": "sleeping"}
        return seen

    def accepts(self, graph: StateGraph, edge: DrivenEdge, answer: Any) -> bool:
        if edge.action in ("Write", "Compact"):
            return answer is None
        expired = edge.action == "Connect" and self._expired(_node(graph, edge.source))
        target = _node(graph, edge.target)
        return self._observed(target, self._calls(graph, edge), answer, expired=expired)


WORK_QUEUE = WorkQueueDriver()
DELTA_FIFO = FIFODriver(
    "DeltaFIFO",
    "delta_fifo",
    {"known_objects": True, "emit_delta_type_replaced": True},
    known=True,
)
REAL_FIFO = FIFODriver("RealFIFO", "real_fifo", {"atomic": False}, known=True)
REAL_FIFO_ATOMIC = FIFODriver(
    "RealFIFOAtomic", "real_fifo", {"atomic": True}, known=False, atomic=True
)

#: The informer models' internal actions: the eager walk takes them after every external
#: step, the handler's first (a model that splits a step in two lists both halves), and
#: the ones ``pause`` holds back (the pop: a split Process keeps its first half here).
INFORMER = InformerDriver(
    "Informer", "delta", ("Handle", "Distribute", "StoreWrite", "Pop"), ("Pop",)
)
INFORMER_ATOMIC = InformerDriver(
    "InformerAtomic",
    "real-atomic",
    ("Handle", "Distribute", "ApplyEntry", "Finish", "Take"),
    ("Take",),
)

#: model name (spec/models.json) -> its driver
DRIVERS: dict[str, SpecDriver] = {
    WORK_QUEUE.model: WORK_QUEUE,
    DELTA_FIFO.model: DELTA_FIFO,
    REAL_FIFO.model: REAL_FIFO,
    REAL_FIFO_ATOMIC.model: REAL_FIFO_ATOMIC,
    INFORMER.model: INFORMER,
    INFORMER_ATOMIC.model: INFORMER_ATOMIC,
}
