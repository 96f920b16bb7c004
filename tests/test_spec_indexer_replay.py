"""The indexed store's core refines its spec: ThreadSafeMap replayed over every state and
edge of spec/graphs/Indexer.json.gz (refimpl/tla/refine_indexer.py).

Each state is rebuilt as a map with one index; every Add, Update and Delete of each key
and every Replace with each store content must land on the successor the graph names,
with the index read back whole (IDX-1 at every state the code reaches). Broken maps,
each leaving index entries stale or missing after an update or a replace, must fail
the replay.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from spec_graphs import assert_reads_back, assert_refines, spec_graph

from refimpl.cache.store import ThreadSafeMap, _IndexPlan
from refimpl.tla.graph import StateGraph
from refimpl.tla.mappings import mapping_for
from refimpl.tla.refine_indexer import INDEX, IndexerMapping
from refimpl.tla.replay import replay

SPEC = Path(__file__).resolve().parents[1] / "spec"


@pytest.fixture(scope="module")
def graph() -> StateGraph:
    return spec_graph("Indexer")


@pytest.fixture(scope="module")
def mapping() -> IndexerMapping:
    built = mapping_for("Indexer", SPEC / "MCIndexer.tla")
    assert isinstance(built, IndexerMapping)
    return built


def test_the_mapping_takes_the_model_constants(mapping: IndexerMapping) -> None:
    assert mapping.keys == ("a", "b")
    assert mapping.values == ("x", "y")
    # Versions filed under no value, one, two, and the other one.
    assert [len(s) for s in mapping.index_of] == [0, 1, 2, 1]


def test_every_state_reads_back(graph: StateGraph, mapping: IndexerMapping) -> None:
    assert_reads_back(graph, mapping)


def test_a_fresh_map_starts_at_init(graph: StateGraph, mapping: IndexerMapping) -> None:
    (init,) = graph.init
    fresh = ThreadSafeMap({INDEX: mapping.index_func})
    assert mapping.spec_state(fresh) == dict(graph.states[init])


def test_thread_safe_map_refines_spec(graph: StateGraph, mapping: IndexerMapping) -> None:
    assert_refines("Indexer", graph, mapping)


class UpdateKeepsLostValues(ThreadSafeMap):
    """Takes the key out only of the old values the new object still has: a value the
    object lost keeps it (a stale entry). Delete is right."""

    def update(self, key: str, obj: object) -> None:
        plan = self._plan(key, self.items.get(key), obj)
        self.items[key] = obj
        self._apply(key, [(n, tuple(set(old) & set(new)), new) for n, old, new in plan])


class UpdateSkipsOneToOne(ThreadSafeMap):
    """The one-value fast path without comparing the values: an object moving from one
    value to another stays filed under the old one."""

    def _apply(self, key: str, plan: _IndexPlan) -> None:
        kept = [p for p in plan if not (len(p[1]) == 1 and len(p[2]) == 1)]
        super()._apply(key, kept)


class UpdateSkipsShared(ThreadSafeMap):
    """client-go 1.23's updateIndices (the regression kubernetes PR #109137 fixed): the
    removal skips an old value that is the new object's only value, the addition skips
    a new value that was the old object's only value; each shortcut is right alone, but
    from {x} to {x, y} the key leaves x and is never put back."""

    def _apply(self, key: str, plan: _IndexPlan) -> None:
        for name, old_values, new_values in plan:
            index = self.indices.setdefault(name, {})
            for value in old_values:
                if new_values == (value,):
                    continue
                keys = index.get(value, set())
                keys.discard(key)
                if not keys:
                    index.pop(value, None)
            for value in new_values:
                if old_values == (value,):
                    continue
                index.setdefault(value, set()).add(key)


class ReplaceKeepsStale(ThreadSafeMap):
    """Replace merges the rebuilt index into the old one: keys a relist dropped or
    moved stay filed under their old values."""

    def replace(self, items: dict[str, object], resource_version: str) -> None:
        old = {
            name: {v: set(keys) for v, keys in index.items()}
            for name, index in self.indices.items()
        }
        super().replace(items, resource_version)
        for name, index in old.items():
            for value, keys in index.items():
                self.indices.setdefault(name, {}).setdefault(value, set()).update(keys)


@pytest.mark.parametrize(
    ("broken", "action"),
    [
        (UpdateKeepsLostValues, "Update"),
        (UpdateSkipsOneToOne, "Update"),
        (UpdateSkipsShared, "Update"),
        (ReplaceKeepsStale, "Replace"),
    ],
)
def test_replay_catches_wrong_index_entries(
    graph: StateGraph, mapping: IndexerMapping, broken: type[ThreadSafeMap], action: str
) -> None:
    broken_mapping = IndexerMapping(mapping.keys, mapping.values, mapping.index_of, broken)
    report = replay(graph, broken_mapping, max_mismatches=len(graph.edges))
    assert not report.ok, f"{broken.__name__} passed: {report.summary()}"
    # Only the broken action goes astray: each wrong code move is one of its steps.
    wrong = [m for m in report.mismatches if ": code " in m]
    assert wrong
    assert all(f": code {action}(" in m for m in wrong), wrong[0]


class DeleteKeepsEmptySets(ThreadSafeMap):
    """Leaves a value whose last key was deleted with an empty set (the leak fixed by
    client-go #84970): the mapping refuses to read such a state."""

    def delete(self, key: str) -> None:
        before = {name: set(index) for name, index in self.indices.items()}
        super().delete(key)
        for name, values in before.items():
            for value in values:
                self.indices[name].setdefault(value, set())


def test_replay_refuses_emptied_value_sets(graph: StateGraph, mapping: IndexerMapping) -> None:
    broken = IndexerMapping(mapping.keys, mapping.values, mapping.index_of, DeleteKeepsEmptySets)
    with pytest.raises(ValueError, match="empty key sets"):
        replay(graph, broken)
