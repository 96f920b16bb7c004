"""RealFIFO (refimpl.cache.real_fifo): the core against an event-log model, client-go's
rules one by one, and the threaded shell."""

from __future__ import annotations

import threading
from functools import partial

import pytest
from cache_helpers import BM, RA, SA, A, D, DictKnown, R, S, U, dfsu, obj_key, tag
from fifo_helpers import FIFOModel, Recorder, assert_producer_waits_for_process, fail_handler
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from refimpl.cache import (
    BATCHABLE_TYPES,
    DEFAULT_BATCH_SIZE,
    BookmarkInfo,
    Delta,
    Deltas,
    DeltaType,
    FIFOClosedError,
    RealFIFO,
    RealFIFOCore,
    ReplacedAllInfo,
    SyncAllInfo,
)
from refimpl.meta import DeletedFinalStateUnknown, Object, ObjectKeyError, meta_namespace_key_func
from refimpl.workqueue import WouldBlock


def atomic_fifo(**kw: object) -> RealFIFOCore:
    return RealFIFOCore(atomic_events=True, **kw)  # type: ignore[arg-type]


# -- the state machine -----------------------------------------------------------------

names = st.sampled_from(["a", "b", "c", "d"])


class RealFIFOMachine(FIFOModel, RuleBasedStateMachine):
    """RealFIFOCore vs a plain list of expected entries.

    Popped entries are "processed" into a dict store, as an informer would.
    """

    fifo: RealFIFOCore

    @initialize(
        atomic=st.booleans(),
        unlock=st.booleans(),
        bookmarks=st.booleans(),
        batch_size=st.sampled_from([1, 2, 3, DEFAULT_BATCH_SIZE]),
        initial_list=st.none() | st.lists(names, max_size=4),
    )
    def setup(
        self,
        atomic: bool,
        unlock: bool,
        bookmarks: bool,
        batch_size: int,
        initial_list: list[str] | None,
    ) -> None:
        self.atomic = atomic
        self.unlock = unlock and atomic
        self.bookmarks = bookmarks and atomic
        self.batch_size = batch_size
        self.known = DictKnown()
        self.fifo = RealFIFOCore(
            known_objects=None if atomic else self.known,
            transformer=tag,
            atomic_events=atomic,
            unlock_while_processing=self.unlock,
            emit_delta_type_bookmark=self.bookmarks,
            batch_size=batch_size,
        )
        self.m_log: list[Delta] = []
        self.m_start()
        self.delivered: list[Delta] = []
        self.enqueued: list[Delta] = []
        if initial_list is not None:  # start as an informer does: with a list
            self.replace(initial_list)

    def m_append(self, d: Delta) -> None:
        self.m_log.append(d)
        self.enqueued.append(d)

    def process(self, deltas: list[Delta]) -> None:
        for d in deltas:
            if d.type is RA:
                assert isinstance(d.object, ReplacedAllInfo)
                self.known.items = {obj_key(o): o for o in d.object.objects}
            elif d.type in (SA, BM):
                pass
            else:
                self.known.apply([d])

    # rules ---------------------------------------------------------------------------

    @rule(name=names, kind=st.sampled_from([A, U, D]), as_tombstone=st.booleans())
    def event(self, name: str, kind: DeltaType, as_tombstone: bool) -> None:
        o = self.obj(name)
        if kind is D and as_tombstone:
            t = dfsu(obj_key(o), tag(o))
            self.fifo.delete(t)
            self.m_append(Delta(D, t))
        else:
            {A: self.fifo.add, U: self.fifo.update, D: self.fifo.delete}[kind](o)
            self.m_append(Delta(kind, tag(o)))
        self.m_populate()

    @rule(rv=st.integers(1, 99).map(str))
    def bookmark(self, rv: str) -> None:
        self.fifo.bookmark(rv)
        if self.bookmarks:
            self.m_append(Delta(BM, BookmarkInfo(rv)))

    @rule(listed=st.lists(names, max_size=4))
    def replace(self, listed: list[str]) -> None:
        objs = [self.obj(n) for n in listed]
        rv = str(self.rv)
        self.fifo.replace(objs, rv)
        if self.atomic:
            self.m_append(Delta(RA, ReplacedAllInfo(rv, tuple(tag(o) for o in objs))))
        else:
            keys = {obj_key(o) for o in objs}
            last: dict[str, Delta] = {}
            for d in self.m_log:
                last[obj_key(d.object)] = d
            for k, d in last.items():
                if k not in keys and d.type is not D:
                    self.m_append(Delta(D, dfsu(k, d.object)))
            for k, o in list(self.known.items.items()):
                if k not in keys and k not in last:
                    self.m_append(Delta(D, dfsu(k, o)))
            for o in objs:
                self.m_append(Delta(R, tag(o)))
        self.m_listed(len(self.m_log))

    @rule(listed=st.lists(names, max_size=3))
    def rejected_replace(self, listed: list[str]) -> None:
        # atomic: a failing transform; non-atomic: an unkeyable item (checked first)
        objs: list[object] = [self.obj(n) for n in listed]
        objs.append(Object("x", data="bad") if self.atomic else 12345)
        before = list(self.fifo.items)
        with pytest.raises(RuntimeError if self.atomic else ObjectKeyError):
            self.fifo.replace(objs, "1")
        assert list(self.fifo.items) == before

    @rule(bad=st.sampled_from(["not-an-object", "transform-fails"]))
    def rejected_add(self, bad: str) -> None:
        arg: object = {"a": 1} if bad == "not-an-object" else Object("a", data="bad")
        before = list(self.fifo.items)
        with pytest.raises(ObjectKeyError if bad == "not-an-object" else RuntimeError):
            self.fifo.add(arg)
        assert list(self.fifo.items) == before
        self.m_populate()

    @rule()
    def resync(self) -> None:
        self.fifo.resync()
        if self.atomic:
            self.m_append(Delta(SA, SyncAllInfo()))
            return
        in_log = {obj_key(d.object) for d in self.m_log}
        for k, o in list(self.known.items.items()):
            if k not in in_log:
                self.m_append(Delta(S, o))  # the store's object, not transformed again

    def _check_taken(self, taken: list[Delta], is_initial: bool, synced_before: bool) -> None:
        assert taken == self.m_log[: len(taken)], "delivered out of order"
        assert is_initial == (not synced_before)
        del self.m_log[: len(taken)]
        self.delivered.extend(taken)
        assert self.fifo.unlock_during_processing() == (
            self.unlock and len(self.m_log) < 2 * self.batch_size
        )
        self.process(taken)
        # has_synced cannot change while the taken entries are being processed
        assert self.fifo.has_synced() == synced_before

    def _finish(self, n: int) -> None:
        self.fifo.finish(n)
        self.m_processed(n)

    @rule()
    def pop(self) -> None:
        if not self.m_log:
            self.expect_empty(self.fifo.take_one)
            return
        synced_before = self.fifo.has_synced()
        delta, is_initial = self.fifo.take_one()
        self._check_taken([delta], is_initial, synced_before)
        self._finish(1)

    @rule()
    def pop_batch(self) -> None:
        if not self.m_log:
            self.expect_empty(self.fifo.take_batch)
            return
        log = list(self.m_log)
        remaining = self.m_remaining
        synced_before = self.fifo.has_synced()
        batch, is_initial = self.fifo.take_batch()
        n = len(batch)
        assert 1 <= n <= self.batch_size
        if remaining > 0:
            assert n <= remaining, "batch straddles the initial-list boundary"
        if n > 1:
            assert all(d.type in BATCHABLE_TYPES for d in batch)
            keys = [obj_key(d.object) for d in batch]
            assert len(set(keys)) == n, "repeated key in a batch"
        # maximal: the next entry could not have joined
        if batch[0].type not in BATCHABLE_TYPES:
            assert n == 1
        elif n < min(self.batch_size, len(log)) and not (remaining > 0 and n >= remaining):
            nxt = log[n]
            assert nxt.type not in BATCHABLE_TYPES or obj_key(nxt.object) in {
                obj_key(d.object) for d in batch
            }
        self._check_taken(batch, is_initial, synced_before)
        self._finish(n)

    # invariants ----------------------------------------------------------------------

    @invariant()
    def log_matches_model(self) -> None:
        assert list(self.fifo.items) == self.m_log
        assert self.delivered + self.m_log == self.enqueued  # no loss, merge or reorder

    @invariant()
    def synced_matches_model(self) -> None:
        assert self.fifo.has_synced() == self.m_synced


TestRealFIFOMachine = RealFIFOMachine.TestCase
TestRealFIFOMachine.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)


# -- construction ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"atomic_events": True, "known_objects": DictKnown()}, "must not be given"),
        ({"unlock_while_processing": True, "known_objects": DictKnown()}, "requires atomic"),
        ({}, "known_objects are required"),
        ({"emit_delta_type_bookmark": True, "known_objects": DictKnown()}, "requires atomic"),
        ({"atomic_events": True, "batch_size": 0}, "batch_size"),
    ],
)
def test_construction_checks(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RealFIFOCore(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        RealFIFO(**kwargs)  # type: ignore[arg-type]


# -- producer side ---------------------------------------------------------------------


def test_every_event_is_its_own_entry_129568() -> None:
    """Upstream #129568: RealFIFO keeps every event, in arrival order, across keys."""
    f = RealFIFOCore(known_objects=DictKnown())
    f.add(Object("a"))
    f.add(Object("b"))
    f.update(Object("a", data=2))
    f.delete(Object("a"))
    f.delete(Object("a"))  # no dedup
    assert [(d.type, obj_key(d.object)) for d in f.items] == [
        (A, "a"),
        (A, "b"),
        (U, "a"),
        (D, "a"),
        (D, "a"),
    ]


def test_delete_is_never_filtered() -> None:
    f = RealFIFOCore(known_objects=DictKnown())
    f.delete(Object("nobody-knows-me"))
    assert list(f.items) == [Delta(D, Object("nobody-knows-me"))]


def test_bookmark_only_when_emitted_134827() -> None:
    """Upstream #134827 (v1.36): bookmarks flow through the FIFO in atomic mode."""
    off = atomic_fifo()
    off.bookmark("5")
    assert not off.items
    on = atomic_fifo(emit_delta_type_bookmark=True)
    on.bookmark("5")
    assert list(on.items) == [Delta(BM, BookmarkInfo("5"))]
    assert not on.populated


def test_atomic_replace_is_one_transformed_entry_135462() -> None:
    """Upstream #135462 (v1.36): the whole relist is one ReplacedAll entry."""
    f = atomic_fifo(transformer=tag)
    f.add(Object("old"))
    f.replace([Object("a", data=1), Object("b", data=2)], "10")
    assert f.items[-1] == Delta(
        RA, ReplacedAllInfo("10", (Object("a", data=("t", 1)), Object("b", data=("t", 2))))
    )
    assert len(f.items) == 2  # no per-key tombstones: deletions are found at processing


def test_atomic_replace_transform_error_appends_nothing() -> None:
    f = atomic_fifo(transformer=tag)
    with pytest.raises(RuntimeError, match="refuses"):
        f.replace([Object("a"), Object("b", data="bad")], "1")
    assert not f.items
    assert not f.populated


def test_atomic_first_replace_population_is_one_entry() -> None:
    f = atomic_fifo()
    f.replace([Object("a"), Object("b"), Object("c")], "1")
    assert f.initial_population_count == 1
    _, initial = f.take_one()
    assert initial and not f.has_synced()
    f.finish(1)
    assert f.has_synced()


def test_non_atomic_replace_deletions_first_then_replaced() -> None:
    known = DictKnown({"s": Object("s", data="stored"), "gone": Object("gone"), "f": Object("f")})
    known.fail_lookup.add("f")
    f = RealFIFOCore(known_objects=known, transformer=tag)
    f.add(Object("q", data=1))
    f.update(Object("s", data=2))  # queued: the queued object wins over the store's
    f.add(Object("del", data=3))
    f.delete(Object("del", data=3))  # last queued is Deleted: no second tombstone
    f.replace([Object("n", data=4)], "7")
    assert list(f.items)[4:] == [
        Delta(D, dfsu("q", Object("q", data=("t", 1)))),
        Delta(D, dfsu("s", Object("s", data=("t", 2)))),
        Delta(D, dfsu("gone", Object("gone"))),
        Delta(D, dfsu("f", None)),  # lookup failed
        Delta(R, Object("n", data=("t", 4))),
    ]


def test_non_atomic_replace_key_error_appends_nothing() -> None:
    f = RealFIFOCore(known_objects=DictKnown({"k": Object("k")}))
    with pytest.raises(ObjectKeyError):
        f.replace([Object("a"), "bad"], "1")
    assert not f.items and not f.populated


def test_non_atomic_replace_transform_error_stops_midway() -> None:
    """As in client-go, tombstones appended before the failing item stay."""
    f = RealFIFOCore(known_objects=DictKnown({"k": Object("k")}), transformer=tag)
    with pytest.raises(RuntimeError):
        f.replace([Object("a"), Object("b", data="bad")], "1")
    assert [d.type for d in f.items] == [D, R]
    assert not f.populated


def test_non_atomic_first_replace_counts_every_entry() -> None:
    known = DictKnown({"k1": Object("k1"), "k2": Object("k2")})
    f = RealFIFOCore(known_objects=known)
    f.replace([Object("a")], "1")
    assert len(f.items) == 3
    assert f.initial_population_count == 3


def test_atomic_resync_appends_sync_all_136008() -> None:
    """Upstream #136008: atomic resync is one SyncAll; the FIFO never reads the store."""
    f = atomic_fifo()
    f.add(Object("a"))
    f.resync()
    f.resync()
    assert list(f.items)[1:] == [Delta(SA, SyncAllInfo()), Delta(SA, SyncAllInfo())]


def test_non_atomic_resync_skips_logged_keys_and_does_not_transform() -> None:
    known = DictKnown(
        {"a": Object("a"), "b": Object("b", data=("t", 1)), "c": Object("c"), "h": Object("h")}
    )
    known.fail_lookup.add("c")
    known.hide.add("h")
    f = RealFIFOCore(known_objects=known, transformer=tag)
    f.update(Object("a", data=0))
    f.resync()
    assert list(f.items) == [
        Delta(U, Object("a", data=("t", 0))),
        Delta(S, Object("b", data=("t", 1))),
    ]


def test_bad_input_appends_nothing() -> None:
    f = atomic_fifo(transformer=tag)
    for op in (f.add, f.update, f.delete):
        with pytest.raises(ObjectKeyError, match="object has no meta"):
            op({"not": "an object"})
    with pytest.raises(RuntimeError):
        f.add(Object("a", data="bad"))
    assert not f.items
    assert f.populated  # like client-go: set before the object is looked at


def test_transformer_skips_tombstones() -> None:
    spy = Recorder()
    f = atomic_fifo(transformer=spy)
    f.delete(dfsu("a", None))
    f.delete(Object("b"))
    assert spy.seen == [Object("b")]


def test_key_of_accepts_delta_and_deltas() -> None:
    f = atomic_fifo()
    assert f.key_of(Delta(A, Object("x", "ns"))) == "ns/x"
    assert f.key_of([Delta(A, Object("y"))]) == "y"
    assert f.key_of(Delta(D, dfsu("t/k", None))) == "t/k"
    with pytest.raises(ObjectKeyError):
        f.key_of([])


# -- popping ---------------------------------------------------------------------------


def test_has_synced_only_after_processing_136264() -> None:
    """Upstream #136264 (v1.36): the initial count drops after processing, so HasSynced
    is false while the last initial entry is being handled."""
    f = RealFIFOCore(known_objects=DictKnown())
    f.replace([Object("a")], "1")
    _, initial = f.take_one()
    assert initial
    assert not f.has_synced()
    f.finish(1)
    assert f.has_synced()


def test_batch_is_capped_at_batch_size_132240() -> None:
    """Upstream #132240 (v1.35): batches of at most 1000 distinct keys."""
    f = atomic_fifo()
    for i in range(1500):
        f.add(Object(f"o{i}"))
    batch, _ = f.take_batch()
    assert len(batch) == DEFAULT_BATCH_SIZE
    assert len(f.items) == 500


def test_batch_ends_at_repeated_key() -> None:
    f = atomic_fifo()
    for n in ["a", "b", "a", "c"]:
        f.add(Object(n))
    batch, _ = f.take_batch()
    assert [obj_key(d.object) for d in batch] == ["a", "b"]


def test_batch_non_batchable_alone_or_ends_batch() -> None:
    f = atomic_fifo(emit_delta_type_bookmark=True)
    f.add(Object("a"))
    f.bookmark("2")
    f.add(Object("b"))
    f.resync()
    f.resync()
    taken = [[d.type for d in f.take_batch()[0]] for _ in range(4)]
    assert taken == [[A], [BM], [A], [SA]]
    assert [d.type for d in f.items] == [SA]


def test_batch_never_crosses_initial_list_boundary() -> None:
    f = RealFIFOCore(known_objects=DictKnown({"k": Object("k")}))
    f.replace([Object("a"), Object("b")], "1")  # 3 initial entries
    f.add(Object("c"))
    batch, initial = f.take_batch()
    assert initial and len(batch) == 3
    f.finish(3)
    assert f.has_synced()
    batch, initial = f.take_batch()
    assert not initial and [obj_key(d.object) for d in batch] == ["c"]


def test_batch_unkeyable_entry_is_taken_and_ends_batch() -> None:
    broken: set[str] = set()

    def key_func(obj: object) -> str:
        k = meta_namespace_key_func(obj)
        if k in broken:
            raise ObjectKeyError(obj, "broken on purpose")
        return k

    f = atomic_fifo(key_func=key_func)
    for n in ["a", "b", "c"]:
        f.add(Object(n))
    broken.add("b")
    batch, _ = f.take_batch()
    assert [d.object.name for d in batch] == ["a", "b"]  # type: ignore[attr-defined]


def test_unlock_threshold_is_two_batches_136264() -> None:
    f = atomic_fifo(unlock_while_processing=True)
    for i in range(2001):
        f.add(Object(f"o{i}"))
    f.take_one()
    assert not f.unlock_during_processing()  # 2000 left: hold the lock, throttle
    f.take_one()
    assert f.unlock_during_processing()  # 1999 left
    g = atomic_fifo()
    g.add(Object("a"))
    g.take_one()
    assert not g.unlock_during_processing()  # option off


def test_closed_core_drains_then_raises() -> None:
    f = atomic_fifo()
    with pytest.raises(WouldBlock):
        f.take_batch()
    f.add(Object("a"))
    f.close()
    assert f.take_one()[0] == Delta(A, Object("a"))
    with pytest.raises(FIFOClosedError):
        f.take_one()
    with pytest.raises(FIFOClosedError):
        f.take_batch()


# -- the threaded shell (what both FIFOs share: tests/test_fifo_shell.py) --------------


def _noop(deltas: Deltas, initial: bool) -> None:
    pass


def _run_blocked_process(fifo: RealFIFO) -> tuple[threading.Event, threading.Thread]:
    started, release = threading.Event(), threading.Event()

    def process(deltas: Deltas, initial: bool) -> None:
        started.set()
        assert release.wait(5)

    consumer = threading.Thread(target=lambda: fifo.pop(process), daemon=True)
    consumer.start()
    assert started.wait(5)
    return release, consumer


@pytest.mark.timeout(20)
def test_shell_unlock_while_processing_lets_producers_in_136264() -> None:
    """Upstream #136264: with UnlockWhileProcessing a slow handler no longer blocks the
    producer (the reflector) on the FIFO lock."""
    fifo = RealFIFO(atomic_events=True, unlock_while_processing=True)
    fifo.add(Object("a"))
    release, consumer = _run_blocked_process(fifo)
    producer = threading.Thread(target=lambda: fifo.add(Object("b")), daemon=True)
    producer.start()
    producer.join(timeout=5)
    assert not producer.is_alive(), "producer blocked while process ran unlocked"
    assert fifo.snapshot() == [Delta(A, Object("b"))]
    release.set()
    consumer.join(timeout=5)
    assert not consumer.is_alive()


@pytest.mark.timeout(20)
def test_shell_holds_lock_when_option_off_or_queue_long() -> None:
    for fifo in (
        RealFIFO(atomic_events=True),  # option off
        RealFIFO(atomic_events=True, unlock_while_processing=True, batch_size=2),  # >= 4 left
    ):
        for i in range(6):
            fifo.add(Object(f"o{i}"))
        release, consumer = _run_blocked_process(fifo)
        assert_producer_waits_for_process(partial(fifo.add, Object("late")), release, consumer)


@pytest.mark.timeout(20)
def test_shell_has_synced_false_while_last_initial_entry_processes() -> None:
    fifo = RealFIFO(atomic_events=True, unlock_while_processing=True)
    fifo.replace([Object("a")], "1")
    seen: list[tuple[bool, bool]] = []

    def process(deltas: Deltas, initial: bool) -> None:
        seen.append((initial, fifo.has_synced()))

    fifo.pop(process)
    assert seen == [(True, False)]
    assert fifo.has_synced()


@pytest.mark.timeout(20)
def test_shell_pop_batch_dispatches_single_or_batch() -> None:
    fifo = RealFIFO(atomic_events=True)
    for n in ["a", "b", "a"]:
        fifo.add(Object(n))
    calls: list[tuple[str, int]] = []
    fifo.pop_batch(lambda ds, i: calls.append(("batch", len(ds))), _noop)
    fifo.pop_batch(
        lambda ds, i: calls.append(("batch", len(ds))),
        lambda ds, i: calls.append(("single", len(ds))),
    )
    assert calls == [("batch", 2), ("single", 1)]


@pytest.mark.timeout(20)
def test_shell_process_error_still_counts_as_processed() -> None:
    fifo = RealFIFO(known_objects=DictKnown())
    fifo.replace([Object("a")], "1")

    with pytest.raises(ValueError, match="handler failed"):
        fifo.pop(fail_handler)
    assert fifo.has_synced()
    assert fifo.snapshot() == []


def test_dfsu_payload_never_nests() -> None:
    """A tombstone built from a queued tombstone is unwrapped (defensive; client-go
    would nest here, but only if someone add()ed a tombstone)."""
    f = RealFIFOCore(known_objects=DictKnown())
    f.add(dfsu("a", Object("a")))
    f.replace([], "1")
    last = f.items[-1].object
    assert isinstance(last, DeletedFinalStateUnknown)
    assert last.obj == Object("a")
