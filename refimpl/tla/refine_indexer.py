"""The refinement mapping from the indexed store's core to spec/Indexer.tla.

Owns no state; builds a :class:`~refimpl.cache.store.ThreadSafeMap` from each spec state
and reads it back. The map has one index function, :data:`INDEX`, that files an object
under the values the model's ``IndexOf`` gives its version; the stored object *is* its
version (an ``int``), so the index function derives the values from the object alone.
The mapping (spec variable = code expression)::

    items[k]   = tsm.items[k]                   0 (Absent) when k is not stored
    indices[v] = tsm.indices[INDEX].get(v, {})  a value whose set emptied is dropped

A code state the spec cannot express (an empty set kept under a value, a value outside
``Values``, a stored object that is no version) raises :class:`ValueError`. The actions::

    Add(k, n)     tsm.update(k, n)   k not stored
    Update(k, n)  tsm.update(k, n)   k stored
    Delete(k)     tsm.delete(k)      (of an absent key: a no-op, a code stutter)
    Replace(s)    tsm.replace({k: s[k] for each k with s[k] # 0}, "")

The map is built by filling ``items`` and ``indices`` directly, never through the
methods under test, so a broken ``replace`` cannot hide behind the construction.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence

import attrs

from refimpl.cache.store import IndexFunc, ThreadSafeMap
from refimpl.tla.replay import Move
from refimpl.tla.values import Fn, Value

__all__ = ["INDEX", "IndexerMapping"]

#: The name of the one index the model has.
INDEX = "by-version"
#: The spec's Absent: the version of a key that is not stored.
ABSENT = 0


def _version(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{what} should be a version (an integer), got {value!r}")
    return value


@attrs.frozen
class IndexerMapping:
    """Callable for :func:`refimpl.tla.replay.replay`: the code moves from a spec state.

    ``keys``, ``values`` and ``index_of`` are the model's constants (MCIndexer.tla;
    ``index_of[n - 1]`` is version n's value set); ``factory`` builds the map under test
    from its indexers (tests pass deliberately broken maps to show the replay catches
    them).
    """

    keys: tuple[str, ...]
    values: tuple[str, ...]
    index_of: tuple[frozenset[str], ...]
    factory: Callable[[Mapping[str, IndexFunc]], ThreadSafeMap] = ThreadSafeMap

    def index_func(self, obj: object) -> Sequence[str]:
        """The index function: the values of the object's version, sorted."""
        n = _version(obj, "a stored object")
        if not 1 <= n <= len(self.index_of):
            raise ValueError(f"version {n} is not one of the model's")
        return sorted(self.index_of[n - 1])

    def build(self, state: Mapping[str, Value]) -> ThreadSafeMap:
        """A map in ``state`` (the inverse of :meth:`spec_state`)."""
        items, indices = state["items"], state["indices"]
        if not isinstance(items, Fn) or not isinstance(indices, Fn):
            raise TypeError(f"items and indices should be functions: {items!r}, {indices!r}")
        tsm = self.factory({INDEX: self.index_func})
        for key in self.keys:
            n = _version(items[key], f"items[{key}]")
            if n != ABSENT:
                tsm.items[key] = n
        index: dict[str, set[str]] = {}
        for value in self.values:
            filed = indices[value]
            if not isinstance(filed, frozenset):
                raise TypeError(f"indices[{value}] should be a set, got {filed!r}")
            if filed:
                index[value] = {str(k) for k in filed}
        tsm.indices = {INDEX: index}
        return tsm

    def spec_state(self, tsm: ThreadSafeMap) -> dict[str, Value]:
        """The spec state of a map; ValueError when the spec cannot express it."""
        index = tsm.indices.get(INDEX, {})
        empty = sorted(v for v, keys in index.items() if not keys)
        if empty:
            raise ValueError(f"the index keeps empty key sets under {empty}")
        unknown = sorted(set(index) - set(self.values))
        if unknown:
            raise ValueError(f"the index holds values {unknown} outside the model's")
        items = {k: _version(tsm.items.get(k, ABSENT), f"item {k}") for k in self.keys}
        return {
            "items": Fn(items),
            "indices": Fn({v: frozenset(index.get(v, ())) for v in self.values}),
        }

    def stores(self) -> Iterable[dict[str, int]]:
        """Every store content of the model: each key absent or at each version."""
        choices = range(len(self.index_of) + 1)
        for versions in itertools.product(choices, repeat=len(self.keys)):
            yield dict(zip(self.keys, versions, strict=True))

    def __call__(self, state: Mapping[str, Value]) -> Iterable[Move]:
        moves: list[Move] = []
        stored = self.spec_state(self.build(state))["items"]
        assert isinstance(stored, Fn)
        for key in self.keys:
            present = stored[key] != ABSENT
            for n in range(1, len(self.index_of) + 1):
                tsm = self.build(state)
                tsm.update(key, n)
                action = "Update" if present else "Add"
                moves.append(Move(action, (key, n), self.spec_state(tsm)))
            tsm = self.build(state)
            tsm.delete(key)
            moves.append(Move("Delete", (key,), self.spec_state(tsm)))
        for store in self.stores():
            tsm = self.build(state)
            tsm.replace({k: n for k, n in store.items() if n != ABSENT}, "")
            moves.append(Move("Replace", (Fn(dict(store)),), self.spec_state(tsm)))
        return moves
