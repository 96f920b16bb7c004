"""spec/DeltaFIFO.tla's and spec/RealFIFO.tla's request mapping: FIFO components.

Owns :class:`FIFOMapping` and its four instances: :data:`DELTA_FIFO`,
:data:`DELTA_FIFO_NO_REPLACED` (``emit_delta_type_replaced`` off), :data:`REAL_FIFO`
and :data:`REAL_FIFO_ATOMIC` (RealFIFO's atomic mode). Objects and
deltas are put in protocol form through the code replay's object mapping
(:mod:`refimpl.tla.refine_fifo`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from refimpl.conformance.protocol import without_omitted
from refimpl.conformance.reference.cache import delta_json, to_json
from refimpl.conformance.walks.spec_mapping import (
    Check,
    DrivenEdge,
    MappingDefaults,
    call_request,
    merged_steps,
    plain_steps,
)
from refimpl.meta import Object
from refimpl.tla.graph import StateGraph
from refimpl.tla.refine_fifo import delta_from_spec, object_from_spec
from refimpl.tla.values import Fn, Value

__all__ = [
    "DELTA_FIFO",
    "DELTA_FIFO_NO_REPLACED",
    "FIFO_NO_BATCH",
    "FIFO_NO_TAKE_BATCH",
    "LIST_RV",
    "REAL_FIFO",
    "REAL_FIFO_ATOMIC",
    "FIFOMapping",
]

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
class FIFOMapping(MappingDefaults):
    """spec/DeltaFIFO.tla and spec/RealFIFO.tla (both modes) as FIFO components.

    The spec's ``store`` is the FIFO's known-objects store (the informer's indexer):
    after each ``Pop`` the harness writes the spec's change to it with ``known_add`` /
    ``known_delete``. ``Pop`` answers the popped key's deltas (DeltaFIFO) or one entry
    (RealFIFO), with ``initial`` = not yet synced (not compared where the adapter
    omits it: docs/protocol.md). In atomic mode ``Take`` and
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
        plain = plain_steps(graph)
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
        steps, lost = merged_steps(
            graph, plain, "Process", lambda i: _processing(graph, i), {"Take": "Pop"}
        )
        undriven["steps while Pop's process function runs: no pop_begin/pop_end"] = lost
        return steps, undriven

    def schedule(self, graph: StateGraph, walk: Sequence[DrivenEdge]) -> list[Any]:
        return [None] * len(walk)

    def probe(self, graph: StateGraph, edge: DrivenEdge, plan: Any) -> dict[str, Any]:
        match edge.action:
            case "Add" | "Update" | "Delete":
                return call_request(edge.action.lower(), obj=_obj_json(edge.args[0]))
            case "Replace":
                listed = edge.args[0]
                assert isinstance(listed, tuple)
                return call_request("replace", objs=[_obj_json(o) for o in listed], rv=LIST_RV)
            case "Resync":
                return call_request("resync")
            case "Pop":
                return call_request("pop_nowait")
            case "PopBatch":
                return call_request("pop_batch_nowait")
            case "Take":
                return call_request("pop_begin")
            case "Process":
                return call_request("pop_end")
            case "Close":
                return call_request("close")
            case "Wait" | "Exit":
                return call_request("pop_nowait")
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

    def accepts(self, graph: StateGraph, edge: DrivenEdge, answer: Any) -> bool:
        # An adapter without isInInitialList omits a pop's ``initial``: not compared.
        expected = self.expect(graph, edge)
        method = _POPS.get(edge.action)
        return bool((without_omitted(method, expected, answer) if method else expected) == answer)

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
                out.append(call_request("known_add", obj=_obj_json(_spec_obj(str(key), rv))))
            else:
                out.append(call_request("known_delete", obj=_obj_json(_spec_obj(str(key), old))))
        return out

    def checks(self, graph: StateGraph, edge: DrivenEdge) -> list[Check]:
        # Until the source state is synced has_synced can turn true on any step; after
        # that the spec keeps it true (SyncedIsMonotone), checked after each Pop.
        out = []
        if not graph.states[edge.source]["synced"] or edge.action in ("Pop", "PopBatch"):
            out.append(Check(call_request("has_synced"), lambda s: bool(s["synced"])))
        if edge.action == "Close":
            out.append(Check(call_request("is_closed"), lambda s: bool(s["closed"])))
        return out


#: The pop requests by spec action (their answers' ``initial`` is optional).
_POPS = {"Pop": "pop_nowait", "PopBatch": "pop_batch_nowait", "Take": "pop_begin"}


def _spec_obj(key: str, rv: Value) -> Fn:
    return Fn({"key": key, "rv": rv, "dfsu": False})


def _processing(graph: StateGraph, state: int) -> bool:
    return graph.states[state].get("processing", ()) != ()


DELTA_FIFO = FIFOMapping(
    "DeltaFIFO",
    "delta_fifo",
    {"known_objects": True, "emit_delta_type_replaced": True},
    known=True,
)
#: The same spec with EmitDeltaTypeReplaced off: the adapter's DeltaFIFO is created
#: with the option off, so a relist queues Sync deltas (client-go before 1.18).
DELTA_FIFO_NO_REPLACED = FIFOMapping(
    "DeltaFIFONoReplaced",
    "delta_fifo",
    {"known_objects": True, "emit_delta_type_replaced": False},
    known=True,
)
REAL_FIFO = FIFOMapping("RealFIFO", "real_fifo", {"atomic": False}, known=True)
REAL_FIFO_ATOMIC = FIFOMapping(
    "RealFIFOAtomic", "real_fifo", {"atomic": True}, known=False, atomic=True
)
