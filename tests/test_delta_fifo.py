"""DeltaFIFO (refimpl.cache.delta_fifo): the core against a per-key model, client-go's
rules one by one, and the threaded shell."""

from __future__ import annotations

import itertools
import threading

import pytest
from cache_helpers import A, D, DictKnown, R, S, U, dfsu, is_tagged_once, obj_key, tag
from fifo_helpers import FIFOModel, Recorder, assert_producer_waits_for_process, fail_handler
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from refimpl.cache import (
    Delta,
    DeltaFIFO,
    DeltaFIFOCore,
    Deltas,
    DeltaType,
    FIFOClosedError,
    newest,
    oldest,
)
from refimpl.meta import DeletedFinalStateUnknown, ExplicitKey, Object, ObjectKeyError
from refimpl.workqueue import WouldBlock


def types(deltas: Deltas) -> list[DeltaType]:
    return [d.type for d in deltas]


# -- the state machine -----------------------------------------------------------------

names = st.sampled_from(["a", "b", "c", "d", "e"])


class DeltaFIFOMachine(FIFOModel, RuleBasedStateMachine):
    """DeltaFIFOCore vs a model of per-key delta lists and a queue of keys.

    The "informer store" (``known``) is updated from popped deltas, as an informer would.
    """

    fifo: DeltaFIFOCore

    @initialize(
        use_known=st.booleans(),
        emit_replaced=st.booleans(),
        initial_list=st.none() | st.lists(names, max_size=4),
    )
    def setup(self, use_known: bool, emit_replaced: bool, initial_list: list[str] | None) -> None:
        self.known = DictKnown()
        self.use_known = use_known
        self.fifo = DeltaFIFOCore(
            known_objects=self.known if use_known else None,
            emit_delta_type_replaced=emit_replaced,
            transformer=tag,
        )
        self.replace_type = R if emit_replaced else S
        self.m_items: dict[str, list[Delta]] = {}
        self.m_queue: list[str] = []
        self.m_start()
        self.synced_history: list[bool] = []
        if initial_list is not None:  # start as an informer does: with a list
            self.replace(initial_list)

    # model ---------------------------------------------------------------------------

    def m_enqueue(self, t: DeltaType, o: object) -> None:
        k = obj_key(o)
        new = Delta(t, o)
        if k not in self.m_items:
            self.m_items[k] = [new]
            self.m_queue.append(k)
            return
        lst = self.m_items[k]
        if t is D and lst[-1].type is D:
            # the survivor of a Deleted pair: the older one unless it is a tombstone
            if isinstance(lst[-1].object, DeletedFinalStateUnknown):
                lst[-1] = new
            return
        lst.append(new)

    # rules ---------------------------------------------------------------------------

    @rule(name=names, kind=st.sampled_from([A, U]))
    def add_or_update(self, name: str, kind: DeltaType) -> None:
        o = self.obj(name)
        (self.fifo.add if kind is A else self.fifo.update)(o)
        self.m_populate()
        self.m_enqueue(kind, tag(o))

    @rule(name=names, as_tombstone=st.booleans())
    def delete(self, name: str, as_tombstone: bool) -> None:
        o = self.obj(name)
        k = obj_key(o)
        # a tombstone carries a store object, which the FIFO transformed on its way in
        arg: object = dfsu(k, tag(o)) if as_tombstone else o
        self.fifo.delete(arg)
        self.m_populate()
        queued = k in self.m_items
        if not queued and (not self.use_known or k not in self.known.items):
            return  # the skip rule
        self.m_enqueue(D, arg if as_tombstone else tag(o))

    @rule(listed=st.lists(names, max_size=4))
    def replace(self, listed: list[str]) -> None:
        objs = [self.obj(n) for n in listed]
        before_queued = set(self.fifo.items)
        known_keys = set(self.known.items) if self.use_known else set()
        self.fifo.replace(objs, "ignored")
        # model
        keys = {obj_key(o) for o in objs}
        for o in objs:
            self.m_enqueue(self.replace_type, tag(o))
        for k in [k for k in self.m_items if k not in keys]:
            last = self.m_items[k][-1].object
            inner = last.obj if isinstance(last, DeletedFinalStateUnknown) else last
            self.m_enqueue(D, dfsu(k, inner))
        if self.use_known:
            for k, stored in self.known.items.items():
                if k not in keys and k not in self.m_items:
                    self.m_enqueue(D, dfsu(k, stored))
        self.m_listed(len(self.m_queue))
        # the #115620 property, checked on the real FIFO
        for k in (before_queued | known_keys) - keys:
            assert self.fifo.items[k][-1].type is D, (k, self.fifo.items[k])

    @rule()
    def resync(self) -> None:
        before = {k: list(v) for k, v in self.fifo.items.items()}
        self.fifo.resync()
        for k, v in before.items():
            assert self.fifo.items[k] == v, "resync touched a key with queued deltas"
        if self.use_known:
            for k, o in self.known.items.items():
                if k not in self.m_items:
                    self.m_enqueue(S, o)  # store objects are not transformed again

    @rule()
    def pop(self) -> None:
        if not self.m_queue:
            self.expect_empty(self.fifo.pop_ready)
            return
        expected_initial = not self.m_synced
        key, deltas, is_initial = self.fifo.pop_ready()
        assert key == self.m_queue.pop(0)
        assert deltas == self.m_items.pop(key)
        assert is_initial == expected_initial
        self.m_processed(1)
        self.known.apply(deltas)

    @rule(name=names, bad=st.sampled_from(["not-an-object", "transform-fails"]))
    def rejected_add(self, name: str, bad: str) -> None:
        arg: object = {"name": name} if bad == "not-an-object" else Object(name, data="bad")
        before = {k: list(v) for k, v in self.fifo.items.items()}
        with pytest.raises(ObjectKeyError if bad == "not-an-object" else RuntimeError):
            self.fifo.add(arg)
        assert self.fifo.items == before
        self.m_populate()  # client-go sets populated before keying

    # invariants ----------------------------------------------------------------------

    @invariant()
    def matches_model(self) -> None:
        assert list(self.fifo.queue) == self.m_queue
        assert self.fifo.items == self.m_items
        assert self.fifo.has_synced() == self.m_synced

    @invariant()
    def structural(self) -> None:
        q = list(self.fifo.queue)
        assert len(q) == len(set(q)), "duplicate key in queue"
        assert set(q) == set(self.fifo.items)
        for k, deltas in self.fifo.items.items():
            assert deltas, f"empty Deltas for {k}"
            for older, newer in itertools.pairwise(deltas):
                assert not (older.type is D and newer.type is D), f"adjacent Deleted for {k}"
            for d in deltas:
                if isinstance(d.object, DeletedFinalStateUnknown):
                    assert not isinstance(d.object.obj, DeletedFinalStateUnknown)
                    assert d.object.key == k
                    inner = d.object.obj
                    assert inner is None or is_tagged_once(inner)
                else:
                    assert is_tagged_once(d.object), "transformed zero or two times"

    @invariant()
    def synced_is_monotone(self) -> None:
        self.synced_history.append(self.fifo.has_synced())
        if True in self.synced_history:
            assert all(self.synced_history[self.synced_history.index(True) :])


TestDeltaFIFOMachine = DeltaFIFOMachine.TestCase
TestDeltaFIFOMachine.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)


# -- dedup -----------------------------------------------------------------------------


def _two_deletes(first: object, second: object) -> Deltas:
    known = DictKnown({"a": Object("a")})
    f = DeltaFIFOCore(known_objects=known)
    f.delete(first)
    f.delete(second)
    return f.items["a"]


def test_dedup_real_then_tombstone_keeps_real() -> None:
    real = Object("a", data=1)
    assert _two_deletes(real, dfsu("a", Object("a", data=2))) == [Delta(D, real)]


def test_dedup_tombstone_then_real_keeps_real() -> None:
    real = Object("a", data=2)
    assert _two_deletes(dfsu("a", Object("a", data=1)), real) == [Delta(D, real)]


def test_dedup_real_then_real_keeps_older() -> None:
    older = Object("a", data=1)
    assert _two_deletes(older, Object("a", data=2)) == [Delta(D, older)]


def test_dedup_tombstone_then_tombstone_keeps_newer() -> None:
    newer = dfsu("a", Object("a", data=2))
    assert _two_deletes(dfsu("a", Object("a", data=1)), newer) == [Delta(D, newer)]


def test_nothing_but_deleted_pairs_is_merged() -> None:
    f = DeltaFIFOCore()
    o = Object("a")
    f.add(o)
    f.update(o)
    f.update(o)
    f.delete(o)
    f.add(o)
    assert types(f.items["a"]) == [A, U, U, D, A]


def test_existing_key_keeps_its_queue_position() -> None:
    f = DeltaFIFOCore()
    f.add(Object("a"))
    f.add(Object("b"))
    f.update(Object("a", data=2))
    assert list(f.queue) == ["a", "b"]
    key, deltas, _ = f.pop_ready()
    assert key == "a"
    assert types(deltas) == [A, U]
    assert oldest(deltas) == Delta(A, Object("a"))
    assert newest(deltas) == Delta(U, Object("a", data=2))
    assert oldest([]) is None and newest([]) is None


# -- delete skip rules -----------------------------------------------------------------


def test_delete_without_known_objects_needs_queued_deltas() -> None:
    f = DeltaFIFOCore()
    f.delete(Object("a"))
    assert f.items == {}
    assert f.populated  # still marks the FIFO populated
    f.add(Object("a"))
    f.delete(Object("a"))
    assert types(f.items["a"]) == [A, D]


def test_delete_with_known_objects() -> None:
    known = DictKnown({"k": Object("k")})
    f = DeltaFIFOCore(known_objects=known)
    f.delete(Object("unknown"))  # absent everywhere: skipped
    assert f.items == {}
    f.delete(Object("k"))  # known: queued
    assert types(f.items["k"]) == [D]


def test_delete_lookup_error_does_not_skip() -> None:
    known = DictKnown()
    known.fail_lookup.add("x")
    f = DeltaFIFOCore(known_objects=known)
    f.delete(Object("x"))
    assert types(f.items["x"]) == [D]


# -- replace -----------------------------------------------------------------------------


def test_replace_emits_sync_unless_replaced_requested_86015() -> None:
    """Upstream #86015: informers ask for Replaced; the default (Sync) made relist
    changes look like resyncs. Either way list items are transformed."""
    for emit, expected in ((False, S), (True, R)):
        f = DeltaFIFOCore(emit_delta_type_replaced=emit, transformer=tag)
        f.replace([Object("a", data=1)], "1")
        assert f.items["a"] == [Delta(expected, Object("a", data=("t", 1)))]


def test_replace_enqueues_even_after_queued_delete_83911() -> None:
    """Upstream #83911 (issue #83810): a key whose newest delta is Deleted still gets
    its relist entry, so a delete + re-create during a watch gap is not lost."""
    known = DictKnown({"a": Object("a", data=0)})
    f = DeltaFIFOCore(known_objects=known, emit_delta_type_replaced=True)
    f.delete(Object("a", data=0))
    f.replace([Object("a", data=1)], "2")
    assert f.items["a"] == [Delta(D, Object("a", data=0)), Delta(R, Object("a", data=1))]


def test_replace_deletes_queued_only_keys_with_newest_object_115620() -> None:
    """Upstream #115620 (issue #115658): a key whose Added is still queued and that the
    relist no longer contains gets a tombstone carrying the newest queued object."""
    known = DictKnown({"a": Object("a", data="stored")})
    f = DeltaFIFOCore(known_objects=known, emit_delta_type_replaced=True)
    f.add(Object("ghost", data=1))
    f.update(Object("a", data="queued"))
    f.replace([], "5")
    assert f.items["ghost"][-1] == Delta(D, dfsu("ghost", Object("ghost", data=1)))
    # the queued (newer) object, not the store's older copy
    assert f.items["a"][-1] == Delta(D, dfsu("a", Object("a", data="queued")))


def test_replace_unwraps_tombstones_and_dedups_115620() -> None:
    """Upstream #115620 also stopped DFSU-in-DFSU: a queued tombstone is unwrapped."""
    known = DictKnown({"a": Object("a")})
    f = DeltaFIFOCore(known_objects=known)
    first = dfsu("a", Object("a", data=1))
    f.delete(first)
    f.replace([], "1")
    # tombstone then tombstone: the newer survives, and it wraps the real object
    assert f.items["a"] == [Delta(D, dfsu("a", Object("a", data=1)))]

    f2 = DeltaFIFOCore(known_objects=DictKnown({"b": Object("b")}))
    real = Object("b", data=9)
    f2.delete(real)
    f2.replace([], "1")
    assert f2.items["b"] == [Delta(D, real)]  # the real final state beats the tombstone


def test_replace_tombstones_known_keys_without_queued_deltas() -> None:
    known = DictKnown({"a": Object("a", data=1), "b": Object("b"), "c": Object("c")})
    known.fail_lookup.add("b")
    known.hide.add("c")
    f = DeltaFIFOCore(known_objects=known)
    f.replace([], "3")
    assert f.items["a"] == [Delta(D, dfsu("a", Object("a", data=1)))]
    assert f.items["b"] == [Delta(D, dfsu("b", None))]  # lookup failed
    assert f.items["c"] == [Delta(D, dfsu("c", None))]  # listed but missing
    assert f.initial_population_count == 3


def test_replace_order_list_keys_then_queued_then_known() -> None:
    known = DictKnown({"k1": Object("k1"), "k2": Object("k2")})
    f = DeltaFIFOCore(known_objects=known, emit_delta_type_replaced=True)
    f.resync()  # queues Sync for k1, k2 (does not populate)
    f.add(Object("q"))
    assert list(f.queue) == ["k1", "k2", "q"]
    f.replace([Object("n"), Object("k2")], "1")
    assert list(f.queue) == ["k1", "k2", "q", "n"]
    assert types(f.items["k1"]) == [S, D]
    assert types(f.items["k2"]) == [S, R]
    assert types(f.items["q"]) == [A, D]


def test_initial_population_counts_distinct_keys_96797() -> None:
    """Upstream #96797: duplicate list entries used to be counted twice, so HasSynced
    never became true."""
    f = DeltaFIFOCore(emit_delta_type_replaced=True)
    f.replace([Object("a", data=1), Object("a", data=2), Object("b")], "1")
    assert f.initial_population_count == 2
    assert not f.has_synced()
    f.pop_ready()
    assert not f.has_synced()
    _, _, initial = f.pop_ready()
    assert initial
    assert f.has_synced()


def test_only_first_replace_sets_initial_population() -> None:
    f = DeltaFIFOCore()
    f.replace([Object("a")], "1")
    f.replace([Object("b"), Object("c")], "2")
    assert f.initial_population_count == 1


def test_synced_immediately_after_add_or_empty_replace() -> None:
    f = DeltaFIFOCore()
    f.add(Object("a"))
    assert f.has_synced()
    g = DeltaFIFOCore()
    g.replace([], "1")
    assert g.has_synced()
    h = DeltaFIFOCore()
    assert not h.has_synced()


def test_is_in_initial_list_flag_and_early_sync() -> None:
    """The synced flag flips when the last initial key is *popped*, before it is
    processed (DeltaFIFO; RealFIFO waits for processing)."""
    f = DeltaFIFOCore()
    f.replace([Object("a"), Object("b")], "1")
    f.add(Object("c"))
    flags = []
    for _ in range(3):
        _, _, initial = f.pop_ready()
        flags.append((initial, f.has_synced()))
    assert flags == [(True, False), (True, True), (False, True)]


def test_replace_aborts_midway_on_bad_item() -> None:
    """Like client-go: items before the bad one stay queued; not populated."""
    f = DeltaFIFOCore(transformer=tag)
    with pytest.raises(ObjectKeyError):
        f.replace([Object("a"), "bad", Object("b")], "1")
    assert list(f.queue) == ["a"]
    assert not f.populated
    with pytest.raises(RuntimeError, match="refuses"):
        f.replace([Object("c"), Object("d", data="bad")], "1")
    assert list(f.queue) == ["a", "c"]
    assert not f.populated


# -- resync ----------------------------------------------------------------------------


def test_resync_skips_queued_keys_and_does_not_transform_124344() -> None:
    """Upstream #124344: resync hands in store objects that were already transformed;
    transforming them again raced with readers. Keys with queued deltas are skipped."""
    known = DictKnown({"a": Object("a", data=("t", 1)), "b": Object("b", data=("t", 2))})
    f = DeltaFIFOCore(known_objects=known, transformer=tag)
    f.update(Object("a", data=5))
    f.resync()
    assert f.items["a"] == [Delta(U, Object("a", data=("t", 5)))]
    assert f.items["b"] == [Delta(S, Object("b", data=("t", 2)))]


def test_resync_skips_failed_and_missing_lookups() -> None:
    known = DictKnown({"a": Object("a"), "b": Object("b"), "c": Object("c")})
    known.fail_lookup.add("a")
    known.hide.add("b")
    f = DeltaFIFOCore(known_objects=known)
    f.resync()
    assert list(f.queue) == ["c"]
    assert not f.populated


def test_resync_without_known_objects_is_a_no_op() -> None:
    f = DeltaFIFOCore()
    f.resync()
    assert f.items == {}


def test_resync_raises_for_unkeyable_stored_object() -> None:
    f = DeltaFIFOCore(known_objects=DictKnown({"x": 42}))
    with pytest.raises(ObjectKeyError):
        f.resync()


# -- transformer and bad input ---------------------------------------------------------


def test_transformer_skips_tombstones() -> None:
    spy = Recorder()
    f = DeltaFIFOCore(transformer=spy)
    f.add(Object("a"))
    f.delete(dfsu("a", Object("a")))
    assert spy.seen == [Object("a")]


def test_bad_objects_enqueue_nothing() -> None:
    f = DeltaFIFOCore(transformer=tag)
    with pytest.raises(ObjectKeyError, match="object has no meta"):
        f.add(["not", "an", "object"])
    with pytest.raises(ObjectKeyError):
        f.update(3.5)
    with pytest.raises(RuntimeError, match="refuses"):
        f.add(Object("a", data="bad"))
    assert f.items == {} and not f.queue
    g = DeltaFIFOCore()
    with pytest.raises(ObjectKeyError):
        g.delete(object())
    assert not g.populated  # delete keys before marking populated


def test_key_of() -> None:
    f = DeltaFIFOCore()
    assert f.key_of(Object("n", "ns")) == "ns/n"
    assert f.key_of(ExplicitKey("raw/key")) == "raw/key"
    assert f.key_of(dfsu("t/k", None)) == "t/k"
    assert f.key_of([Delta(A, Object("x")), Delta(U, Object("y", "ns"))]) == "ns/y"
    with pytest.raises(ObjectKeyError, match="0 length"):
        f.key_of([])


def test_closed_core_drains_then_raises() -> None:
    f = DeltaFIFOCore()
    with pytest.raises(WouldBlock):
        f.pop_ready()
    f.add(Object("a"))
    f.close()
    f.add(Object("b"))  # producers are not blocked by close
    assert f.pop_ready()[0] == "a"
    assert f.pop_ready()[0] == "b"
    with pytest.raises(FIFOClosedError):
        f.pop_ready()


# -- the threaded shell (what both FIFOs share: tests/test_fifo_shell.py) --------------


@pytest.mark.timeout(20)
def test_shell_process_runs_under_the_fifo_lock() -> None:
    """client-go's DeltaFIFO processes under its lock: a producer waits for process."""
    fifo = DeltaFIFO()
    fifo.replace([Object("a")], "1")
    started, release = threading.Event(), threading.Event()
    order: list[str] = []

    def process(deltas: Deltas, initial: bool) -> None:
        assert initial
        assert fifo.has_synced()  # re-entrant lock; synced flipped before processing
        started.set()
        assert release.wait(5)
        order.append("process-done")

    consumer = threading.Thread(target=lambda: fifo.pop(process), daemon=True)
    consumer.start()
    assert started.wait(5)

    def produce() -> None:
        fifo.add(Object("b"))
        order.append("added")

    assert_producer_waits_for_process(produce, release, consumer)
    assert order == ["process-done", "added"]


@pytest.mark.timeout(20)
def test_shell_process_error_propagates_without_requeue() -> None:
    fifo = DeltaFIFO()
    fifo.add(Object("a"))

    with pytest.raises(ValueError, match="handler failed"):
        fifo.pop(fail_handler)
    assert fifo.snapshot() == ([], {})
    fifo.close()
    with pytest.raises(FIFOClosedError):
        fifo.pop(fail_handler)
