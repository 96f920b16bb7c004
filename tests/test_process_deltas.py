"""process_deltas and friends (refimpl.cache.process_deltas): store first, then handlers."""

from __future__ import annotations

import builtins
from collections.abc import Sequence

import pytest
from cache_helpers import BM, RA, SA, A, D, R, S, U, dfsu, obj_key
from hypothesis import given, settings
from hypothesis import strategies as st

from refimpl.cache import (
    BatchProcessingError,
    BookmarkInfo,
    Delta,
    DeltaFIFO,
    DeltaType,
    FilteringResourceEventHandler,
    Indexer,
    RealFIFO,
    ReplacedAllInfo,
    ResourceEventHandler,
    ResourceEventHandlerDetailedFuncs,
    ResourceEventHandlerFuncs,
    Store,
    SyncAllInfo,
    process_deltas,
    process_deltas_in_batch,
)
from refimpl.meta import DeletedFinalStateUnknown, Object, ObjectKeyError


class Recorder:
    """Records calls, and what the store held for the key at each call."""

    def __init__(self, store: Store | None = None) -> None:
        self.calls: list[tuple[object, ...]] = []
        self.store = store
        self.store_keys_at_call: list[list[str]] = []

    def _seen(self) -> None:
        if self.store is not None:
            self.store_keys_at_call.append(sorted(self.store.list_keys()))

    def on_add(self, obj: object, is_in_initial_list: bool) -> None:
        self._seen()
        self.calls.append(("add", obj, is_in_initial_list))

    def on_update(self, old: object, new: object) -> None:
        self._seen()
        self.calls.append(("update", old, new))

    def on_delete(self, obj: object) -> None:
        self._seen()
        self.calls.append(("delete", obj))


class NoTxnStore:
    """An Indexer seen only through the plain Store interface (no transactions)."""

    def __init__(self) -> None:
        self.inner = Indexer()

    def add(self, obj: object) -> None:
        self.inner.add(obj)

    def update(self, obj: object) -> None:
        self.inner.update(obj)

    def delete(self, obj: object) -> None:
        self.inner.delete(obj)

    def list(self) -> builtins.list[object]:
        return self.inner.list()

    def list_keys(self) -> builtins.list[str]:
        return self.inner.list_keys()

    def get(self, obj: object) -> tuple[object | None, bool]:
        return self.inner.get(obj)

    def get_by_key(self, key: str) -> tuple[object | None, bool]:
        return self.inner.get_by_key(key)

    def replace(self, objects: Sequence[object], resource_version: str) -> None:
        self.inner.replace(objects, resource_version)

    def resync(self) -> None:
        pass

    def last_store_sync_resource_version(self) -> str:
        return self.inner.last_store_sync_resource_version()

    def bookmark(self, resource_version: str) -> None:
        self.inner.bookmark(resource_version)


def test_handler_follows_store_presence_not_delta_type() -> None:
    store = Indexer()
    store.add(Object("a", data=0))
    h = Recorder()
    process_deltas(
        h,
        store,
        [Delta(A, Object("a", data=1)), Delta(U, Object("b", data=1)), Delta(S, Object("b"))],
        True,
    )
    assert h.calls == [
        ("update", Object("a", data=0), Object("a", data=1)),
        ("add", Object("b", data=1), True),
        ("update", Object("b", data=1), Object("b")),
    ]
    assert store.get_by_key("b") == (Object("b"), True)


def test_deleted_always_notifies_even_if_absent() -> None:
    store = Indexer()
    store.add(Object("a"))
    h = Recorder(store)
    tomb = dfsu("a", Object("a"))
    process_deltas(h, store, [Delta(D, tomb), Delta(D, Object("never-stored"))], False)
    assert h.calls == [("delete", tomb), ("delete", Object("never-stored"))]
    assert h.store_keys_at_call == [[], []]  # store updated before each notification


def test_bookmark_moves_store_rv_without_notifying_134827() -> None:
    store = Indexer()
    h = Recorder()
    process_deltas(h, store, [Delta(BM, BookmarkInfo("42"))], False)
    assert store.last_store_sync_resource_version() == "42"
    assert h.calls == []


def test_sync_all_updates_every_stored_object_and_stops() -> None:
    store = Indexer()
    store.add(Object("a"))
    store.add(Object("b"))
    h = Recorder()
    process_deltas(h, store, [Delta(SA, SyncAllInfo()), Delta(A, Object("late"))], False)
    assert sorted(c[1].name for c in h.calls) == ["a", "b"]  # type: ignore[attr-defined]
    assert all(c[0] == "update" and c[1] is c[2] for c in h.calls)
    assert store.get_by_key("late") == (None, False)  # the rest of the slice is ignored


def test_replaced_all_replaces_store_before_any_callback_135462() -> None:
    """Upstream #135462 (v1.36): handlers observe the complete post-relist state."""
    store = Indexer()
    for n in ["keep", "gone1", "gone2"]:
        store.add(Object(n, data="old"))
    h = Recorder(store)
    info = ReplacedAllInfo("9", (Object("new2"), Object("keep", data="new"), Object("new1")))
    process_deltas(h, store, [Delta(RA, info)], True)
    assert sorted(store.list_keys()) == ["keep", "new1", "new2"]
    assert store.last_store_sync_resource_version() == "9"
    assert all(keys == ["keep", "new1", "new2"] for keys in h.store_keys_at_call)
    deletes, rest = h.calls[:2], h.calls[2:]
    assert sorted(deletes, key=str) == [
        ("delete", dfsu("gone1", Object("gone1", data="old"))),
        ("delete", dfsu("gone2", Object("gone2", data="old"))),
    ]
    assert rest == [
        ("add", Object("new2"), True),
        ("update", Object("keep", data="old"), Object("keep", data="new")),
        ("add", Object("new1"), True),
    ]


def test_replaced_all_with_unkeyable_object_touches_nothing() -> None:
    store = Indexer()
    store.add(Object("a"))
    h = Recorder()
    with pytest.raises(ObjectKeyError):
        process_deltas(h, store, [Delta(RA, ReplacedAllInfo("2", (Object("b"), "junk")))], False)
    assert store.list_keys() == ["a"]
    assert h.calls == []


@pytest.mark.parametrize("kind", [RA, SA, BM])
def test_wrong_payload_is_a_type_error(kind: DeltaType) -> None:
    with pytest.raises(TypeError, match="must carry"):
        process_deltas(Recorder(), Indexer(), [Delta(kind, Object("x"))], False)


def test_store_error_aborts_remaining_deltas() -> None:
    store = Indexer()
    h = Recorder()
    with pytest.raises(ObjectKeyError):
        process_deltas(h, store, [Delta(A, "unkeyable"), Delta(A, Object("b"))], False)
    assert store.list_keys() == []
    assert h.calls == []


# -- batches ---------------------------------------------------------------------------


def test_batch_transaction_then_callbacks_in_order() -> None:
    store = Indexer()
    store.add(Object("u", data=0))
    store.add(Object("d"))
    h = Recorder(store)
    batch = [
        Delta(A, Object("n")),
        Delta(U, Object("u", data=1)),
        Delta(D, Object("d")),
        Delta(R, Object("r")),
    ]
    process_deltas_in_batch(h, store, batch, True)
    assert h.calls == [
        ("add", Object("n"), True),
        ("update", Object("u", data=0), Object("u", data=1)),
        ("delete", Object("d")),
        ("add", Object("r"), True),
    ]
    assert all(keys == ["n", "r", "u"] for keys in h.store_keys_at_call)  # one transaction


def test_batch_rejects_non_batchable_before_touching_store() -> None:
    store = Indexer()
    h = Recorder()
    with pytest.raises(ValueError, match="not supported in batch"):
        process_deltas_in_batch(h, store, [Delta(A, Object("a")), Delta(SA, SyncAllInfo())], False)
    assert store.list_keys() == []
    assert h.calls == []


def test_batch_partial_transaction_notifies_only_applied() -> None:
    store = Indexer()
    h = Recorder()
    with pytest.raises(BatchProcessingError, match="not all items"):
        process_deltas_in_batch(
            h, store, [Delta(A, Object("a")), Delta(A, 7), Delta(D, Object("c"))], False
        )
    assert store.list_keys() == ["a"]
    assert h.calls == [("add", Object("a"), False), ("delete", Object("c"))]


def test_batch_without_transactions_processes_each_and_collects_errors() -> None:
    store = NoTxnStore()
    h = Recorder()
    with pytest.raises(BatchProcessingError) as info:
        process_deltas_in_batch(
            h, store, [Delta(A, Object("a")), Delta(A, 7), Delta(A, Object("b"))], True
        )
    assert len(info.value.errors) == 1
    assert sorted(store.list_keys()) == ["a", "b"]
    assert [c[0] for c in h.calls] == ["add", "add"]


# -- handler adapters ------------------------------------------------------------------


def test_handler_funcs_adapters() -> None:
    got: list[object] = []
    plain = ResourceEventHandlerFuncs(add_func=got.append)
    plain.on_add(Object("a"), True)
    plain.on_update(1, 2)  # no update_func: ignored
    plain.on_delete(3)
    detailed = ResourceEventHandlerDetailedFuncs(
        add_func=lambda o, i: got.append((o, i)),
        update_func=lambda o, n: got.append((o, n)),
        delete_func=got.append,
    )
    detailed.on_add("x", True)
    detailed.on_update("o", "n")
    detailed.on_delete("d")
    assert got == [Object("a"), ("x", True), ("o", "n"), "d"]
    assert isinstance(plain, ResourceEventHandler)


def test_filtering_handler() -> None:
    inner = Recorder()

    def passes(o: object) -> bool:
        if isinstance(o, DeletedFinalStateUnknown):
            o = o.obj
        return isinstance(o, Object) and o.labels.get("keep") == "yes"

    f = FilteringResourceEventHandler(passes, inner)
    yes, no = Object("a", labels={"keep": "yes"}), Object("a", labels={"keep": "no"})
    f.on_add(yes, True)
    f.on_add(no, True)
    f.on_update(yes, yes)  # both pass -> update
    f.on_update(no, yes)  # starts passing -> add(new, False)
    f.on_update(yes, no)  # stops passing -> delete(old)
    f.on_update(no, no)  # neither -> nothing
    f.on_delete(dfsu("a", yes))
    f.on_delete(no)
    assert inner.calls == [
        ("add", yes, True),
        ("update", yes, yes),
        ("add", yes, False),
        ("delete", yes),
        ("delete", dfsu("a", yes)),
    ]


# -- end to end: FIFO + process_deltas converge, no ghosts -----------------------------

ops = st.lists(
    st.tuples(
        st.sampled_from(["write", "delete", "pop", "relist"]),
        st.sampled_from(["a", "b", "c", "d"]),
        st.booleans(),  # delivered on the watch (False = lost in a gap)
    ),
    max_size=40,
)


class View:
    """A handler that keeps the last state per key and checks store-before-notify."""

    def __init__(self, store: Indexer) -> None:
        self.store = store
        self.state: dict[str, object] = {}

    def on_add(self, obj: object, is_in_initial_list: bool) -> None:
        self.on_update(None, obj)

    def on_update(self, old: object, new: object) -> None:
        assert self.store.get_by_key(obj_key(new)) == (new, True)
        self.state[obj_key(new)] = new

    def on_delete(self, obj: object) -> None:
        assert self.store.get_by_key(obj_key(obj)) == (None, False)
        self.state.pop(obj_key(obj), None)


@pytest.mark.parametrize("mode", ["delta_fifo", "real_fifo", "real_fifo_atomic"])
@settings(max_examples=150, deadline=None)
@given(script=ops, use_batches=st.booleans())
def test_fifo_and_process_deltas_converge_without_ghosts_115620(
    mode: str, script: list[tuple[str, str, bool]], use_batches: bool
) -> None:
    """After a final relist and drain, store and handler view equal the source: no
    ghost survives a watch gap (upstream #115620), in every FIFO mode."""
    store = Indexer()
    view = View(store)
    fifo: DeltaFIFO | RealFIFO
    if mode == "delta_fifo":
        fifo = DeltaFIFO(known_objects=store, emit_delta_type_replaced=True)
    elif mode == "real_fifo":
        fifo = RealFIFO(known_objects=store)
    else:
        fifo = RealFIFO(atomic_events=True, unlock_while_processing=True)

    def process(deltas: list[Delta], initial: bool) -> None:
        process_deltas(view, store, deltas, initial)

    def pop_one() -> None:
        if isinstance(fifo, RealFIFO) and use_batches:
            fifo.pop_batch(lambda ds, i: process_deltas_in_batch(view, store, ds, i), process)
        else:
            fifo.pop(process)

    def pending() -> int:
        return len(fifo.snapshot()[0]) if isinstance(fifo, DeltaFIFO) else len(fifo.snapshot())

    server: dict[str, Object] = {}
    rv = 0
    for op, name, delivered in script:
        rv += 1
        if op == "write":
            obj = Object(name, resource_version=str(rv), data=rv)
            existed = name in server
            server[name] = obj
            if delivered:
                (fifo.update if existed else fifo.add)(obj)
        elif op == "delete" and name in server:
            gone = server.pop(name)
            if delivered:
                fifo.delete(gone)
        elif op == "pop":
            if pending():
                pop_one()
        elif op == "relist":
            fifo.replace(list(server.values()), str(rv))
    fifo.replace(list(server.values()), str(rv + 1))
    while pending():
        pop_one()
    assert {k: store.get_by_key(k)[0] for k in store.list_keys()} == server
    assert view.state == server
