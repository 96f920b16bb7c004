"""spec/Indexer.tla's request mapping: the model's actions as ``store`` requests.

Owns :class:`IndexerMapping` and its one instance, :data:`INDEXER`. The store is
synchronous (every write is done when its call answers), so every edge is driven.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from refimpl.conformance.walks.spec_mapping import (
    Check,
    DrivenEdge,
    MappingDefaults,
    State,
    call_request,
    plain_steps,
)
from refimpl.tla.graph import StateGraph
from refimpl.tla.values import Fn, Value

__all__ = ["INDEX", "INDEXER", "LABEL_VALUE", "LIST_RV", "IndexerMapping", "index_values"]

#: The protocol's index function the walk installs: one value ``key=value`` per label.
INDEX = "labels"
#: Spec value v is the label ``v: LABEL_VALUE``, so the index files it under ``v=1``.
LABEL_VALUE = "1"
#: The resourceVersion every driven ``replace`` carries (the spec does not model it).
LIST_RV = "1"
#: The spec's Absent: the version of a key that is not stored.
ABSENT = 0


def index_values(graph: StateGraph) -> dict[int, frozenset[str]]:
    """Version -> the spec values it is filed under (the model's ``IndexOf``), read off
    the graph: in a state where key k holds version n, n's values are those whose
    ``indices`` hold k (IDX-1, which TLC checks in every state). Reading them here
    keeps the walk and the graph it walks from drifting apart; a graph where two states
    disagree raises ValueError."""
    out: dict[int, frozenset[str]] = {}
    for state in graph.states:
        items, indices = _items(state), _indices(state)
        for key, n in items.items():
            if n == ABSENT:
                continue
            filed = frozenset(v for v, keys in indices.items() if key in keys)
            if out.setdefault(n, filed) != filed:
                raise ValueError(
                    f"version {n} is filed under {sorted(filed)} and elsewhere "
                    f"under {sorted(out[n])}"
                )
    return out


def _items(state: State) -> dict[str, int]:
    items = state["items"]
    assert isinstance(items, Fn)
    out: dict[str, int] = {}
    for k, n in items.items():
        assert isinstance(n, int)
        out[str(k)] = n
    return out


def _indices(state: State) -> dict[str, frozenset[str]]:
    indices = state["indices"]
    assert isinstance(indices, Fn)
    out: dict[str, frozenset[str]] = {}
    for v, keys in indices.items():
        assert isinstance(keys, frozenset)
        out[str(v)] = frozenset(str(k) for k in keys)
    return out


@attrs.frozen
class IndexerMapping(MappingDefaults):
    """spec/Indexer.tla as a ``store`` with the ``labels`` index.

    The object of key k at version n is named k (no namespace, so its key is k), has
    resourceVersion n and one label ``v: "1"`` per value v of ``IndexOf[n]``: the
    ``labels`` index files it under ``v=1`` for each, several values at once (the model's
    versions file an object under none, one or two values). ``Add``, ``Update`` and
    ``Delete`` are the store's ``add``, ``update`` and ``delete`` (of the object stored),
    ``Replace(s)`` is ``replace`` with the objects of the keys ``s`` stores. After every
    step the walk reads the index back: ``index_keys`` and ``by_index`` of every value of
    the model, and ``list``, each against the target state. ``list_index_func_values``
    is not read (client-java's store has none), so an empty value set the store keeps is
    seen by the code replay only (refimpl/tla/refine_indexer.py).
    """

    model: str = "Indexer"
    component: str = "store"
    options: Mapping[str, Any] = attrs.field(factory=lambda: {"indexers": [INDEX]})
    methods: frozenset[str] = frozenset(
        {"add", "update", "delete", "replace", "list", "by_index", "index_keys"}
    )
    timed: bool = False
    planned: bool = True

    def refuses(self, caps: Mapping[str, Any]) -> str | None:
        indexers = caps.get("indexers")
        if not isinstance(indexers, list) or INDEX not in indexers:
            return f"the {self.model} model needs the store's {INDEX!r} index function"
        return None

    def driven(
        self, graph: StateGraph, methods: frozenset[str]
    ) -> tuple[list[DrivenEdge], dict[str, int]]:
        return plain_steps(graph), {}

    def schedule(self, graph: StateGraph, walk: Sequence[DrivenEdge]) -> list[Any]:
        return [None] * len(walk)

    def probe(self, graph: StateGraph, edge: DrivenEdge, plan: Any) -> dict[str, Any]:
        of = index_values(graph)
        match edge.action:
            case "Add" | "Update":
                key, n = edge.args
                return call_request(edge.action.lower(), obj=_obj_json(str(key), n, of))
            case "Delete":
                (key,) = edge.args
                stored = _items(graph.states[edge.source])[str(key)]
                return call_request("delete", obj=_obj_json(str(key), stored, of))
            case "Replace":
                (store,) = edge.args
                assert isinstance(store, Fn)
                objs = [_obj_json(str(k), n, of) for k, n in sorted(store.items()) if n != ABSENT]
                return call_request("replace", objs=objs, rv=LIST_RV)
        raise ValueError(f"Indexer action {edge.action} is not driven")

    def expect(self, graph: StateGraph, edge: DrivenEdge) -> Any:
        return None

    def follow(self, graph: StateGraph, edge: DrivenEdge) -> list[dict[str, Any]]:
        return []

    def checks(self, graph: StateGraph, edge: DrivenEdge) -> list[Check]:
        of = index_values(graph)
        out: list[Check] = []
        for value in sorted(_indices(graph.states[edge.target])):
            label = f"{value}={LABEL_VALUE}"
            keys, objs = _filed_keys(value), _filed_objects(value, of)
            out.append(Check(call_request("index_keys", index=INDEX, value=label), keys))
            out.append(Check(call_request("by_index", index=INDEX, value=label), objs))
        out.append(Check(call_request("list"), lambda s: _stored(s, of)))
        return out


def _filed_keys(value: str) -> Callable[[State], list[str]]:
    """``index_keys`` of ``value`` in a state: the keys filed under it, sorted."""
    return lambda state: sorted(_indices(state)[value])


def _filed_objects(
    value: str, of: Mapping[int, frozenset[str]]
) -> Callable[[State], list[dict[str, Any]]]:
    """``by_index`` of ``value`` in a state: the objects filed under it, by key."""

    def expected(state: State) -> list[dict[str, Any]]:
        items = _items(state)
        return [_obj_json(k, items[k], of) for k in sorted(_indices(state)[value])]

    return expected


def _stored(state: State, of: Mapping[int, frozenset[str]]) -> list[dict[str, Any]]:
    return [_obj_json(k, n, of) for k, n in sorted(_items(state).items()) if n != ABSENT]


def _obj_json(key: str, version: Value, of: Mapping[int, frozenset[str]]) -> dict[str, Any]:
    """The protocol object of ``key`` at ``version`` (labels sorted, as the store's)."""
    assert isinstance(version, int)
    labels = {v: LABEL_VALUE for v in sorted(of[version])}
    return {"namespace": "", "name": key, "rv": str(version), "labels": labels}


INDEXER = IndexerMapping()
