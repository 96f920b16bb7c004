"""The store and indexer (refimpl.cache.store) against a dict model and client-go's rules."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from refimpl.cache import (
    NAMESPACE_INDEX,
    Indexer,
    IndexerConflictError,
    IndexFunc,
    IndexFuncError,
    KeyListerGetter,
    Store,
    ThreadSafeMap,
    Transaction,
    TransactionError,
    TransactionStore,
    TransactionType,
    UnknownIndexError,
    list_all,
    list_all_by_namespace,
    meta_namespace_index_func,
)
from refimpl.meta import (
    DeletedFinalStateUnknown,
    Object,
    ObjectKeyError,
    deletion_handling_meta_namespace_key_func,
)

# -- index functions used throughout ---------------------------------------------------


def labels_index(obj: object) -> list[str]:
    """Zero, one or several values per object."""
    assert isinstance(obj, Object)
    return [f"{k}={v}" for k, v in sorted(obj.labels.items())]


def data_index(obj: object) -> list[str]:
    """May repeat a value; raises for objects tagged "boom"."""
    assert isinstance(obj, Object)
    values = list(obj.data or ())
    if "boom" in values:
        raise ValueError("cannot index a boom")
    return values


def key(obj: object) -> str:
    return deletion_handling_meta_namespace_key_func(obj)


names = st.sampled_from(["a", "b", "c", "d"])
namespaces = st.sampled_from(["", "ns1", "ns2"])
label_maps = st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["x", "y"]))
datas = st.lists(st.sampled_from(["p", "q", "r"]), max_size=3).map(tuple)
rvs = st.integers(1, 999).map(str)
objects = st.builds(
    Object, name=names, namespace=namespaces, labels=label_maps, data=datas, resource_version=rvs
)


# -- the state machine -----------------------------------------------------------------


class IndexerMachine(RuleBasedStateMachine):
    """Indexer vs a dict model; every index checked against its definition each step."""

    def __init__(self) -> None:
        super().__init__()
        self.funcs: dict[str, IndexFunc] = {
            NAMESPACE_INDEX: meta_namespace_index_func,
            "labels": labels_index,
        }
        self.store = Indexer(indexers=dict(self.funcs))
        self.model: dict[str, Object] = {}
        self.rv = ""

    @rule(obj=objects, via_add=st.booleans())
    def upsert(self, obj: Object, via_add: bool) -> None:
        (self.store.add if via_add else self.store.update)(obj)
        self.model[key(obj)] = obj
        self.rv = obj.resource_version

    @rule(obj=objects, as_tombstone=st.booleans())
    def delete(self, obj: Object, as_tombstone: bool) -> None:
        if as_tombstone:
            self.store.delete(DeletedFinalStateUnknown(key(obj), obj))  # no meta: rv stays
        else:
            self.store.delete(obj)
            self.rv = obj.resource_version
        self.model.pop(key(obj), None)

    @rule(objs=st.lists(objects, max_size=6), rv=rvs)
    def replace(self, objs: list[Object], rv: str) -> None:
        self.store.replace(objs, rv)
        self.model = {key(o): o for o in objs}
        self.rv = rv

    @precondition(lambda self: "data" not in self.funcs)
    @rule()
    def add_data_indexer(self) -> None:
        if any("boom" in (o.data or ()) for o in self.model.values()):
            with pytest.raises(IndexFuncError):
                self.store.add_indexers({"data": data_index})
            return
        self.store.add_indexers({"data": data_index})
        self.funcs["data"] = data_index

    @rule(name=st.sampled_from([NAMESPACE_INDEX, "labels", "data"]))
    def conflicting_indexer(self, name: str) -> None:
        if name not in self.funcs:
            return
        with pytest.raises(IndexerConflictError, match="indexer conflict"):
            self.store.add_indexers({name: labels_index, "fresh": labels_index})
        assert "fresh" not in self.store.get_indexers()

    @precondition(lambda self: "data" in self.funcs)
    @rule(obj=objects)
    def failing_index_func(self, obj: Object) -> None:
        bad = obj.evolve(data=(*obj.data, "boom"))
        with pytest.raises(IndexFuncError, match="boom"):
            self.store.update(bad)
        # and the store is unchanged: the invariants below compare it with the model

    @rule(
        ops=st.lists(
            st.tuples(st.sampled_from(list(TransactionType)), objects), min_size=1, max_size=5
        )
    )
    def transaction(self, ops: list[tuple[TransactionType, Object]]) -> None:
        self.store.transaction(*(Transaction(t, o) for t, o in ops))
        for t, o in ops:
            if t is TransactionType.DELETE:
                self.model.pop(key(o), None)
            else:
                self.model[key(o)] = o
        self.rv = ops[-1][1].resource_version

    @invariant()
    def items_match_model(self) -> None:
        assert sorted(self.store.list_keys()) == sorted(self.model)
        assert len(self.store.list()) == len(self.model)
        for k, o in self.model.items():
            assert self.store.get_by_key(k) == (o, True)
        assert self.store.last_store_sync_resource_version() == self.rv

    @invariant()
    def indices_are_exact(self) -> None:
        snapshot = self.store.snapshot_indices()
        assert set(self.store.get_indexers()) == set(self.funcs)
        for name, func in self.funcs.items():
            expected: dict[str, set[str]] = {}
            for k, o in self.model.items():
                for v in func(o):
                    expected.setdefault(v, set()).add(k)
            actual = snapshot.get(name, {})
            # k in indices[n][v]  <=>  k in items and v in f_n(items[k]); no empty sets
            assert {v: set(ks) for v, ks in actual.items()} == expected, name
            assert all(actual.values())
            assert sorted(self.store.list_index_func_values(name)) == sorted(expected)
            for v, ks in expected.items():
                got = self.store.index_keys(name, v)
                assert got == sorted(ks)
                assert [key(o) for o in self.store.by_index(name, v)] == got


TestIndexerMachine = IndexerMachine.TestCase
TestIndexerMachine.settings = settings(max_examples=150, stateful_step_count=30, deadline=None)


# -- ThreadSafeMap (the core) directly -------------------------------------------------


def test_thread_safe_map_core_multi_value_index() -> None:
    m = ThreadSafeMap({"labels": labels_index})
    m.update("k1", Object("k1", labels={"app": "x", "tier": "y"}))
    m.update("k2", Object("k2", labels={"app": "x"}))
    assert m.index_keys("labels", "app=x") == ["k1", "k2"]
    assert m.index_keys("labels", "tier=y") == ["k1"]
    m.update("k1", Object("k1", labels={}))  # object now has no index values at all
    assert "tier=y" not in m.indices["labels"]
    assert m.index_keys("labels", "app=x") == ["k2"]


# -- focused examples ------------------------------------------------------------------


def test_emptied_index_sets_are_deleted_84970() -> None:
    """Upstream #84970 / issue #84959: an index value whose last key leaves is removed."""
    s = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    for i in range(5):
        s.add(Object(f"p{i}", f"ns{i}"))
        s.delete(Object(f"p{i}", f"ns{i}"))
    assert s.snapshot_indices()[NAMESPACE_INDEX] == {}
    assert s.list_index_func_values(NAMESPACE_INDEX) == []


def test_update_moves_key_between_values() -> None:
    s = Indexer(indexers={"labels": labels_index})
    s.add(Object("a", labels={"app": "x"}))
    s.update(Object("a", labels={"app": "y"}))
    assert s.index_keys("labels", "app=x") == []
    assert s.index_keys("labels", "app=y") == ["a"]
    assert s.list_index_func_values("labels") == ["app=y"]


def test_index_keys_are_sorted() -> None:
    s = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    for n in ["z", "m", "a", "q"]:
        s.add(Object(n, "ns"))
    assert s.index_keys(NAMESPACE_INDEX, "ns") == ["ns/a", "ns/m", "ns/q", "ns/z"]


def test_index_query_by_object_unions_values() -> None:
    s = Indexer(indexers={"labels": labels_index})
    s.add(Object("a", labels={"app": "x"}))
    s.add(Object("b", labels={"tier": "y"}))
    s.add(Object("c", labels={"app": "y"}))
    got = s.index("labels", Object("probe", labels={"app": "x", "tier": "y"}))
    assert sorted(key(o) for o in got) == ["a", "b"]


def test_index_query_returns_index_func_error_unchanged() -> None:
    """client-go's Index returns the index function's error (it does not panic)."""
    s = Indexer(indexers={"data": data_index})
    s.add(Object("a", data=("p",)))
    with pytest.raises(ValueError, match="cannot index a boom"):
        s.index("data", Object("probe", data=("boom",)))


def test_index_func_error_during_mutation_changes_nothing() -> None:
    """client-go panics; refimpl raises IndexFuncError and leaves the store as it was."""
    s = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func, "data": data_index})
    s.add(Object("a", "ns", data=("p",), resource_version="1"))
    before = s.snapshot_indices()
    with pytest.raises(IndexFuncError, match="'ns/a' on index 'data'"):
        s.update(Object("a", "ns", data=("boom",), resource_version="2"))
    with pytest.raises(IndexFuncError):
        s.replace([Object("b", "ns"), Object("c", data=("boom",))], "9")
    assert s.list_keys() == ["ns/a"]
    assert s.snapshot_indices() == before
    assert s.last_store_sync_resource_version() == "1"


def test_index_func_returning_a_string_is_refused() -> None:
    def bad(obj: object) -> Sequence[str]:
        return "ns"  # should have been ["ns"]

    s = Indexer(indexers={"bad": bad})
    with pytest.raises(TypeError, match="sequence of strings"):
        s.add(Object("a"))
    assert s.list_keys() == []


def test_unknown_index_errors() -> None:
    s = Indexer()
    with pytest.raises(UnknownIndexError, match="does not exist"):
        s.by_index("nope", "v")
    with pytest.raises(UnknownIndexError):
        s.index_keys("nope", "v")
    with pytest.raises(UnknownIndexError):
        s.index("nope", Object("a"))
    assert s.list_index_func_values("nope") == []


def test_add_indexers_after_items_indexes_them_and_conflict_adds_nothing() -> None:
    s = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    s.add(Object("a", "ns", labels={"app": "x"}))
    s.add_indexers({"labels": labels_index})
    assert s.index_keys("labels", "app=x") == ["ns/a"]
    with pytest.raises(IndexerConflictError, match=r"indexer conflict: \['labels'\]"):
        s.add_indexers({"labels": labels_index, "other": labels_index})
    assert set(s.get_indexers()) == {NAMESPACE_INDEX, "labels"}


def test_get_indexers_is_a_copy() -> None:
    s = Indexer(indexers={"labels": labels_index})
    s.get_indexers()["x"] = labels_index
    assert set(s.get_indexers()) == {"labels"}


def test_add_and_update_are_both_upserts() -> None:
    s = Indexer()
    s.update(Object("a", data=1))
    s.add(Object("a", data=2))
    assert s.get_by_key("a") == (Object("a", data=2), True)
    assert s.get(Object("a")) == (Object("a", data=2), True)
    s.delete(Object("missing"))  # silent no-op
    assert s.list_keys() == ["a"]
    assert s.get_by_key("missing") == (None, False)


def test_replace_swaps_everything_last_duplicate_wins() -> None:
    s = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    s.add(Object("old", "ns"))
    s.replace([Object("a", "ns", data=1), Object("b", "x"), Object("a", "ns", data=2)], "7")
    assert sorted(s.list_keys()) == ["ns/a", "x/b"]
    assert s.get_by_key("ns/a")[0] == Object("a", "ns", data=2)
    assert s.index_keys(NAMESPACE_INDEX, "ns") == ["ns/a"]
    assert s.last_store_sync_resource_version() == "7"


def test_unkeyable_object_raises_and_changes_nothing() -> None:
    s = Indexer()
    s.add(Object("a"))
    for op in (s.add, s.update, s.delete, s.get):
        with pytest.raises(ObjectKeyError, match="object has no meta"):
            op({"name": "dict-not-object"})
    with pytest.raises(ObjectKeyError):
        s.replace([Object("b"), 42], "5")
    assert s.list_keys() == ["a"]


def test_transformer_applies_and_its_error_stores_nothing() -> None:
    def transform(obj: object) -> object:
        assert isinstance(obj, Object)
        if obj.data == "bad":
            raise RuntimeError("cannot transform")
        return obj.evolve(data=("t", obj.data))

    s = Indexer(transformer=transform)
    s.add(Object("a", data=1))
    assert s.get_by_key("a")[0] == Object("a", data=("t", 1))
    with pytest.raises(RuntimeError, match="cannot transform"):
        s.update(Object("b", data="bad"))
    with pytest.raises(RuntimeError):
        s.replace([Object("c"), Object("d", data="bad")], "3")
    assert s.list_keys() == ["a"]


def test_resource_version_tracking_134827() -> None:
    """Upstream #134827 (v1.36): writes, replace and bookmark move the store's RV; a
    delete through a tombstone (no meta) does not."""
    s = Indexer()
    assert s.last_store_sync_resource_version() == ""
    s.add(Object("a", resource_version="5"))
    assert s.last_store_sync_resource_version() == "5"
    s.delete(DeletedFinalStateUnknown("a", Object("a", resource_version="6")))
    assert s.last_store_sync_resource_version() == "5"
    s.delete(Object("gone", resource_version="8"))  # absent key: RV still moves
    assert s.last_store_sync_resource_version() == "8"
    s.replace([], "10")
    assert s.last_store_sync_resource_version() == "10"
    s.bookmark("12")
    assert s.last_store_sync_resource_version() == "12"
    s.resync()
    assert s.last_store_sync_resource_version() == "12"


def test_transaction_applies_keyed_writes_and_reports_failures() -> None:
    s = Indexer()
    s.add(Object("a", resource_version="1"))
    with pytest.raises(TransactionError) as info:
        s.transaction(
            Transaction(TransactionType.ADD, Object("b", resource_version="2")),
            Transaction(TransactionType.UPDATE, "not an object"),
            Transaction(TransactionType.DELETE, Object("a", resource_version="3")),
        )
    assert info.value.successful_indices == [0, 2]
    assert info.value.total_transactions == 3
    assert len(info.value.errors) == 1
    assert s.list_keys() == ["b"]
    assert s.last_store_sync_resource_version() == "3"  # the last applied write's RV


def test_transaction_rejects_non_transactions() -> None:
    s = Indexer()
    with pytest.raises(TypeError, match="not a Transaction"):
        s.transaction(Object("a"))  # type: ignore[arg-type]
    assert s.list_keys() == []


def test_indexer_satisfies_the_protocols() -> None:
    s = Indexer()
    assert isinstance(s, Store)
    assert isinstance(s, KeyListerGetter)
    assert isinstance(s, TransactionStore)


def test_list_all_selectors() -> None:
    s = Indexer()
    s.add(Object("a", labels={"app": "x"}))
    s.add(Object("b", labels={"app": "y"}))
    s.add(Object("c"))
    assert len(list_all(s)) == 3
    assert len(list_all(s, {})) == 3
    assert [key(o) for o in list_all(s, {"app": "x"})] == ["a"]
    assert list_all(s, lambda labels: False) == []
    assert len(list_all(s, lambda labels: "app" in labels)) == 2


def test_list_all_rejects_non_objects_only_when_filtering() -> None:
    s = Indexer(key_func=lambda o: str(o))
    s.add("plain string")
    assert list_all(s) == ["plain string"]
    with pytest.raises(TypeError, match="object has no meta"):
        list_all(s, {"app": "x"})


def test_list_all_by_namespace_with_and_without_index() -> None:
    objs = [
        Object("a", "ns1", labels={"app": "x"}),
        Object("b", "ns1"),
        Object("c", "ns2", labels={"app": "x"}),
    ]
    indexed = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    plain = Indexer()
    for s in (indexed, plain):
        for o in objs:
            s.add(o)
        assert sorted(key(o) for o in list_all_by_namespace(s, "ns1")) == ["ns1/a", "ns1/b"]
        assert [key(o) for o in list_all_by_namespace(s, "ns1", {"app": "x"})] == ["ns1/a"]
        assert len(list_all_by_namespace(s, "")) == 3
        assert list_all_by_namespace(s, "ns3") == []


def test_meta_namespace_index_func_rejects_non_objects() -> None:
    assert meta_namespace_index_func(Object("a", "ns")) == ["ns"]
    assert meta_namespace_index_func(Object("a")) == [""]
    with pytest.raises(TypeError, match="object has no meta"):
        meta_namespace_index_func("x")


@pytest.mark.timeout(30)
def test_concurrent_writers_keep_indices_consistent() -> None:
    """Several threads writing at once: the lock keeps every index exact."""
    s = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func, "labels": labels_index})

    def writer(t: int) -> None:
        for i in range(300):
            o = Object(f"o{i % 17}", f"ns{(i + t) % 3}", labels={"app": str((i * t) % 4)})
            if i % 5 == 4:
                s.delete(o)
            else:
                s.update(o)

    threads = [threading.Thread(target=writer, args=(t,), daemon=True) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=20)
        assert not th.is_alive()
    items = {k: s.get_by_key(k)[0] for k in s.list_keys()}
    snap = s.snapshot_indices()
    for name, func in ((NAMESPACE_INDEX, meta_namespace_index_func), ("labels", labels_index)):
        expected: dict[str, set[str]] = {}
        for k, o in items.items():
            for v in func(o):
                expected.setdefault(v, set()).add(k)
        assert {v: set(ks) for v, ks in snap.get(name, {}).items()} == expected
