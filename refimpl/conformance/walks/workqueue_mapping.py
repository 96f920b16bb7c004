"""spec/WorkQueue.tla's request mapping: the model's actions as ``delaying_queue`` requests.

Owns :class:`WorkQueueMapping` and its one instance, :data:`WORK_QUEUE`. The work
queue is the one *timed* model: an ``add_after``'s delay is chosen from the steps after
it, so its walks are planned whole before they are sent (:meth:`WorkQueueMapping.schedule`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from refimpl.conformance.walks.spec_mapping import (
    Check,
    DrivenEdge,
    MappingDefaults,
    State,
    call_request,
    merged_steps,
    node_state,
    plain_steps,
)
from refimpl.tla.graph import StateGraph
from refimpl.tla.values import Fn

__all__ = ["NEVER", "TICK", "WORK_QUEUE", "WorkQueueMapping"]

#: Every delay the harness sends is a whole number of these (1 ms).
TICK = 0.001
#: Deadline of a delayed add that never fires in its walk: far beyond every Ready.
NEVER = 1_000_000


@attrs.frozen
class WorkQueueMapping(MappingDefaults):
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
            steps = [e for e in plain_steps(graph) if e.action not in drain]
            return steps, {"ShutDownWithDrain/DrainReturn: no drain_start/drain_returned": skipped}
        # The model's ShutDown is the plain queue's, which always ends a drain (WQ-12).
        # client-go's delaying queue wraps only ShutDown in a sync.Once (DQ-6,
        # delaying_queue.go delayingType.ShutDown); its ShutDownWithDrain is the plain
        # queue's (queue.go Typed.ShutDownWithDrain, not overridden). So the first
        # shut_down of a walk is the plain queue's ShutDown, drain or not, and a later
        # one does nothing, which the model's state does not record. The walk tracks
        # it: node i is state i before any shut_down since the reset, node i + n the
        # same state after one (see drivable.DrivableGraph); ShutDown leads from the first
        # copy to the second, and the second has no ShutDown (the model enables it
        # there only during a drain, where the delaying queue's would do nothing).
        n = len(graph.states)
        copied: list[DrivenEdge] = []
        for e in plain_steps(graph):
            if e.action == "ShutDown":
                copied.append(attrs.evolve(e, target=e.target + n))
            else:
                copied += [e, attrs.evolve(e, source=e.source + n, target=e.target + n)]
        # ShutDownWithDrain returns as soon as nothing is in flight (or a ShutDown cut
        # it short): the adapter answers the request that made that so only after the
        # drainer returned, so such a state is passed through at once.
        returns = {e.source for e in graph.edges if e.action == "DrainReturn"}
        steps, lost = merged_steps(
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
        state = node_state(graph, edge.source)
        match edge.action:
            case "Add":
                return call_request("add", item=str(edge.args[0]))
            case "AddAfter":
                if plan is None:
                    raise ValueError("AddAfter needs a planned delay")
                return call_request("add_after", item=str(edge.args[0]), delay=plan * TICK)
            case "Ready":
                if plan is None:
                    raise ValueError("Ready needs a planned clock step")
                return {"op": "advance", "seconds": plan * TICK}
            case "Get" | "WorkerExit":
                return call_request("get_nowait")
            case "Done":
                holding = state["holding"]
                assert isinstance(holding, Fn)
                return call_request("done", item=str(holding[edge.args[0]]))
            case "ShutDown":
                return call_request("shut_down")
            case "ShutDownWithDrain":
                return call_request("drain_start")
        raise ValueError(f"WorkQueue action {edge.action} is not driven")

    def expect(self, graph: StateGraph, edge: DrivenEdge) -> Any:
        if edge.action == "Get":
            holding = node_state(graph, edge.target)["holding"]
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
        out = [Check(call_request("len"), _queue_len)]
        if edge.action in ("ShutDown", "ShutDownWithDrain"):
            out.append(Check(call_request("shutting_down"), lambda s: bool(s["shuttingDown"])))
        if (
            node_state(graph, edge.source)["drainer"] == "waiting"
            or edge.action == "ShutDownWithDrain"
        ):
            out.append(
                Check(
                    call_request("drain_returned"),
                    lambda s: s["drainer"] == "returned",
                    settled=False,
                )
            )
        return out


def _queue_len(state: State) -> int:
    queue = state["queue"]
    assert isinstance(queue, tuple)
    return len(queue)


WORK_QUEUE = WorkQueueMapping()
