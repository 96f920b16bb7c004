"""spec/Informer.tla's and spec/InformerAtomic.tla's request mapping: the ``informer``.

Owns :class:`InformerMapping`, its two instances (:data:`INFORMER`,
:data:`INFORMER_ATOMIC`: each model's table of internal actions), and how an informer's
answers are compared with a spec state (``waiting``, ``cache``, ``calls``: see
:func:`informer_calls_ok`). The harness is the spec's API server; the adapter
processes to quiescence after every request, so the spec's internal actions are taken
eagerly.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from refimpl.conformance.walks.spec_mapping import (
    HARNESS_ONLY,
    Check,
    DrivenEdge,
    MappingDefaults,
    State,
    call_request,
    node_state,
    request_key,
)
from refimpl.tla.graph import StateGraph
from refimpl.tla.values import Fn, Value, value_to_json

__all__ = [
    "AFTER_EXPIRED",
    "BEFORE_DROP",
    "HANDLER",
    "INFORMER",
    "INFORMER_ATOMIC",
    "INFORMER_EXTERNAL",
    "InformerMapping",
    "handler_call",
    "informer_calls_ok",
]

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


def handler_call(handler: str, note: Value) -> dict[str, Any]:
    """The call a spec notification is to ``handler`` (kind, key, rv)."""
    assert isinstance(note, Fn)
    return {
        "handler": handler,
        "kind": str(note["type"]),
        "key": str(note["key"]),
        "rv": _code_rv(note["rv"]),
    }


def _deletes(cs: Sequence[Mapping[str, Any]]) -> list[bool]:
    return [c.get("kind") == "delete" for c in cs]


def informer_calls_ok(
    expected: list[dict[str, Any]], calls: Any, *, deletions_first: bool = False
) -> bool:
    """Per handler and key the calls are the expected ones, in order (kind, key, rv);
    across keys and handlers any order (the specs' list and tombstone orders are Go map
    order, the protocol's list is a set, and each handler has its own goroutine); every
    call within INF-1.

    ``deletions_first`` (the atomic RealFIFO): across keys, too, the calls are deletes
    exactly where the spec's are. A ReplacedAll hands out every deletion before any add
    or update (InformerAtomic's ReplacedAllDeletionsFirst; controller.go,
    processReplacedAllInfo), and separate entries are handled in log order; neither a
    list order nor a deletion order moves a delete past a non-delete."""
    if not isinstance(calls, list) or len(calls) != len(expected):
        return False
    if not all(isinstance(c, dict) and _inf1(c) for c in calls):
        return False
    if deletions_first and _deletes(calls) != _deletes(expected):
        return False

    def per_key(cs: Sequence[Mapping[str, Any]]) -> dict[tuple[Any, Any], list[tuple[Any, Any]]]:
        out: dict[Any, list[tuple[Any, Any]]] = {}
        for c in cs:
            out.setdefault((c.get("handler"), c.get("key")), []).append(
                (c.get("kind"), c.get("rv"))
            )
        return out

    return per_key(calls) == per_key(expected)


class _EagerSteps:
    """The informer's steps, processing eagerly: each external action from a quiet
    state (no internal action enabled) followed by every eager run of internal
    actions to a quiet state; with ``pause``, the paused copy of the graph too."""

    def __init__(
        self, graph: StateGraph, internal: Sequence[str], pops: Sequence[str], pause: bool
    ) -> None:
        self.graph = graph
        self.internal = internal
        self.out: list[list[int]] = [[] for _ in graph.states]
        for i, e in enumerate(graph.edges):
            self.out[e.source].append(i)
        enabled = [{graph.edges[i].action for i in es} & set(internal) for es in self.out]
        self.quiet = [not acts for acts in enabled]
        # Paused (pause/resume): nothing is popped, so the states where only a pop is
        # enabled are where the adapter can rest too.
        self.held = [pause and acts <= set(pops) for acts in enabled]

    def completions(self, start: int) -> list[tuple[int, tuple[int, ...]]]:
        """Eager runs of internal actions from ``start`` to a quiet state."""
        edges = self.graph.edges
        done: list[tuple[int, tuple[int, ...]]] = []
        todo: list[tuple[int, tuple[int, ...]]] = [(start, ())]
        while todo:
            here, path = todo.pop()
            if self.quiet[here]:
                done.append((here, path))
                continue
            for action in self.internal:
                nexts = [i for i in self.out[here] if edges[i].action == action]
                if nexts:
                    todo.extend((edges[i].target, (*path, i)) for i in nexts)
                    break
        return sorted(done)

    def eager(
        self, source: int, action: str, args: tuple[Value, ...], first: tuple[int, ...], at: int
    ) -> list[DrivenEdge]:
        """``action`` from ``source`` (covering ``first``), then each eager run from ``at``."""
        return [
            DrivenEdge(
                source,
                target,
                action,
                args,
                (*first, *path),
                ", ".join(self.graph.edges[j].action for j in path),
            )
            for target, path in self.completions(at)
        ]

    def steps(self) -> list[DrivenEdge]:
        n = len(self.graph.states)
        quiet, held = self.quiet, self.held
        every: list[DrivenEdge] = []
        for i, e in enumerate(self.graph.edges):
            if e.action in self.internal:
                continue
            if quiet[e.source]:
                every += self.eager(e.source, e.action, e.args, (i,), e.target)
            if held[e.source]:
                # The paused copy of the graph: nodes n.. (see drivable.DrivableGraph).
                every.append(DrivenEdge(e.source + n, e.target + n, e.action, e.args, (i,)))
        for state in range(n):
            if quiet[state] and held[state]:
                every.append(DrivenEdge(state, state + n, "pause", (), ()))
            if held[state]:
                every += self.eager(state + n, "resume", (), (), state)
        return every


@attrs.frozen
class InformerMapping(MappingDefaults):
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
    order, across keys in any order but for the atomic RealFIFO's deletes first
    (``deletions_first``), each within INF-1. Not checked, because the specs
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
    #: compare where the deletes fall across keys (:func:`informer_calls_ok`)
    deletions_first: bool = False
    component: str = "informer"
    #: the part of the graph a walk drives: internal steps taken at once
    fragment: str = "eager"
    timed: bool = False
    #: The informer's walks are short anyway (the server's history only grows, so
    #: most walks end in a reset), and planning its large graphs took longer than the
    #: walks it saved (docs/conformance.md, "How the walks are built"; the planner
    #: module's measurement).
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

    def first_handler(self) -> tuple[str, float | None]:
        """The handler registered before ``start``: its name and resync period."""
        return HANDLER, None

    def setup(self, graph: StateGraph) -> list[Check]:
        idle = {"waiting": {"op": "idle"}, "has_synced": False, "cache": [], "calls": []}
        name, period = self.first_handler()
        return [
            Check(
                call_request("add_handler", name=name, raises=False, resync=period),
                lambda s: idle,
            ),
            Check(
                call_request("start"),
                lambda s: self._observation(s, []),
                lambda s, answer: self._observed(s, [], answer),
            ),
        ]

    # -- which edges a step covers ------------------------------------------------------

    def driven(
        self, graph: StateGraph, methods: frozenset[str]
    ) -> tuple[list[DrivenEdge], dict[str, int]]:
        unknown = {e.action for e in graph.edges} - set(self.internal) - INFORMER_EXTERNAL
        if unknown:
            raise ValueError(
                f"{self.model}: actions {sorted(unknown)} are neither the harness's nor "
                "internal; add them to the mapping's table"
            )
        pause = self.pause and {"pause", "resume"} <= methods
        every = _EagerSteps(graph, self.internal, self.pops, pause).steps()
        # One step per request: the spec's list orders (and the orders of a relist's
        # deletions) are one request. Run eagerly they lead to the same state; paused,
        # to states whose queues differ only in the order across keys, which no answer
        # shows (calls are checked per key): the first edge stands for them all.
        steps: dict[tuple[int, str], DrivenEdge] = {}
        for step in every:
            steps.setdefault((step.source, request_key(self.probe(graph, step, None))), step)
        return list(steps.values()), self._undriven(graph, steps.values(), every, pause)

    def _undriven(
        self,
        graph: StateGraph,
        kept_steps: Iterable[DrivenEdge],
        every: Sequence[DrivenEdge],
        pause: bool,
    ) -> dict[str, int]:
        """The graph edges no kept step covers, by reason."""
        kept = {i for s in kept_steps for i in s.covers}
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
            elif e.action in self.internal:
                reasons[names[1]] += 1
            else:
                reasons[names[0]] += 1
        return reasons

    def schedule(self, graph: StateGraph, walk: Sequence[DrivenEdge]) -> list[Any]:
        return [None] * len(walk)

    # -- the requests -------------------------------------------------------------------

    @staticmethod
    def _expired(state: State) -> bool:
        last, compacted = state["lastSyncRV"], state["compacted"]
        assert isinstance(last, int) and isinstance(compacted, int)
        return last < compacted

    def probe(self, graph: StateGraph, edge: DrivenEdge, plan: Any) -> dict[str, Any]:
        source, target = node_state(graph, edge.source), node_state(graph, edge.target)
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
                return call_request("list_reply", objects=objects, rv=str(len(history) + 1))
            case "Connect":
                if self._expired(source):
                    return call_request("watch_error", reason="expired")
                return call_request("watch_open")
            case "WatchEvent":
                last = source["lastSyncRV"]
                assert isinstance(last, int)
                event = history[last]
                assert isinstance(event, Fn)
                obj = _informer_obj(event["key"], event["rv"])
                return call_request("watch_event", type=str(event["type"]), object=obj)
            case "WatchDrop":
                return call_request("watch_end", how="clean")
            case "pause" | "resume":
                return call_request(edge.action)
        raise ValueError(f"{self.model} action {edge.action} is not driven")

    def prepare(self, graph: StateGraph, edge: DrivenEdge) -> list[dict[str, Any]]:
        if edge.action == "WatchDrop":
            return [{"op": "advance", "seconds": BEFORE_DROP}]
        return []

    def follow(self, graph: StateGraph, edge: DrivenEdge) -> list[dict[str, Any]]:
        if edge.action == "Connect" and self._expired(node_state(graph, edge.source)):
            return [{"op": "advance", "seconds": AFTER_EXPIRED}]
        return []

    def checks(self, graph: StateGraph, edge: DrivenEdge) -> list[Check]:
        if edge.action == "Connect" and self._expired(node_state(graph, edge.source)):
            # The relist request, once the backoff is over.
            return [
                Check(
                    call_request("state"),
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
            calls.append(handler_call(HANDLER, notes[0]))
        return calls

    def _observation(self, state: State, calls: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "waiting": _waiting_shown(state),
            "has_synced": bool(state["synced"]),
            "cache": _cache_of(state),
            "calls": calls,
        }

    def _observed(
        self, state: State, calls: list[dict[str, Any]], answer: Any, *, expired: bool = False
    ) -> bool:
        return (
            isinstance(answer, dict)
            and _waiting_ok(state, answer.get("waiting"), expired=expired)
            and answer.get("has_synced") is bool(state["synced"])
            and _cache_ok(state, answer.get("cache"))
            and informer_calls_ok(calls, answer.get("calls"), deletions_first=self.deletions_first)
        )

    def expect(self, graph: StateGraph, edge: DrivenEdge) -> Any:
        if edge.action in ("Write", "Compact"):
            return None
        target = node_state(graph, edge.target)
        seen = self._observation(target, self._calls(graph, edge))
        if edge.action == "Connect" and self._expired(node_state(graph, edge.source)):
            seen["waiting"] = {"op": "sleeping"}
        return seen

    def accepts(self, graph: StateGraph, edge: DrivenEdge, answer: Any) -> bool:
        if edge.action in ("Write", "Compact"):
            return answer is None
        expired = edge.action == "Connect" and self._expired(node_state(graph, edge.source))
        target = node_state(graph, edge.target)
        return self._observed(target, self._calls(graph, edge), answer, expired=expired)


#: The informer models' internal actions: the eager walk takes them after every external
#: step, the handler's first (a model that splits a step in two lists both halves), and
#: the ones ``pause`` holds back (the pop: a split Process keeps its first half here).
INFORMER = InformerMapping(
    "Informer", "delta", ("Handle", "Distribute", "StoreWrite", "Pop"), ("Pop",)
)
INFORMER_ATOMIC = InformerMapping(
    "InformerAtomic",
    "real-atomic",
    ("Handle", "Distribute", "ApplyEntry", "Finish", "Take"),
    ("Take",),
    deletions_first=True,
)
