"""The reflector (refimpl.cache.reflector) and its backoff (cache.reflector_backoff).

Stepped tests run :class:`SteppedReflector` against :class:`ApiServerCore` on a
FakeClock (deterministic); threaded tests run :class:`Reflector` against
:class:`ApiServer`, also on a FakeClock, and wait for the reflector to park before
moving time. A Hypothesis state machine injects faults and checks that the store always
equals the server's state at the reflector's last resourceVersion.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from machine_settings import LONG_MACHINE

from refimpl.apierrors import (
    Expired,
    InternalError,
    Invalid,
    TooLargeResourceVersion,
    TooManyRequests,
)
from refimpl.apiserver import ApiServer, ApiServerCore, ApiServerListerWatcher
from refimpl.cache.listwatch import ListWatch, Watch
from refimpl.cache.reflector import (
    NextStep,
    Parked,
    Reflector,
    ReflectorCore,
    RetryWithDeadline,
    SteppedReflector,
    StopRequested,
    VeryShortWatchError,
    WaitForEvent,
    WaitUntil,
    is_watch_error_retriable,
)
from refimpl.cache.reflector_backoff import (
    DEFAULT_BACKOFF,
    Backoff,
    DelayWithReset,
    delay,
    jitter,
)
from refimpl.clock import FakeClock
from refimpl.meta import ListOptions, ListResult, Object, rv_int


class RecordingStore:
    """A dict store that records every call the reflector makes."""

    def __init__(self) -> None:
        self.items: dict[str, Object] = {}
        self.calls: list[tuple[str, str]] = []
        self.resyncs = 0
        self.bookmarks: list[str] = []
        self.fail_resync = False

    @staticmethod
    def key(obj: object) -> str:
        assert isinstance(obj, Object)
        return f"{obj.namespace}/{obj.name}" if obj.namespace else obj.name

    def add(self, obj: object) -> None:
        self.calls.append(("add", self.key(obj)))
        self.items[self.key(obj)] = obj  # type: ignore[assignment]

    def update(self, obj: object) -> None:
        self.calls.append(("update", self.key(obj)))
        self.items[self.key(obj)] = obj  # type: ignore[assignment]

    def delete(self, obj: object) -> None:
        self.calls.append(("delete", self.key(obj)))
        self.items.pop(self.key(obj), None)

    def replace(self, objects: Sequence[object], resource_version: str) -> None:
        self.calls.append(("replace", resource_version))
        self.items = {self.key(o): o for o in objects}  # type: ignore[misc]

    def resync(self) -> None:
        self.resyncs += 1
        if self.fail_resync:
            raise RuntimeError("resync failed")

    def bookmark(self, resource_version: str) -> None:
        self.bookmarks.append(resource_version)

    def summary(self) -> dict[str, tuple[str, str]]:
        return {k: (o.uid, o.resource_version) for k, o in self.items.items()}


def summary(objects: dict[str, Object]) -> dict[str, tuple[str, str]]:
    return {k: (o.uid, o.resource_version) for k, o in objects.items()}


def stepped(
    server: ApiServerCore, clock: FakeClock, **kwargs: object
) -> tuple[SteppedReflector, RecordingStore]:
    """A stepped reflector over ``server``: list + watch (ListMode.LIST_WATCH) unless the
    test passes ``use_watch_list=True`` (the default of the class, as of client-go's
    reflector since v1.35, is covered by tests/test_reflector_watch_list.py)."""
    store = RecordingStore()
    kwargs.setdefault("use_watch_list", False)
    r = SteppedReflector(ApiServerListerWatcher(server), store, clock=clock, seed=7, **kwargs)  # type: ignore[arg-type]
    return r, store


class SteppedRun(NamedTuple):
    """What :func:`start_stepped` builds: a server, the clock, a stepped reflector over
    the server and the store it fills."""

    server: ApiServerCore
    clock: FakeClock
    reflector: SteppedReflector
    store: RecordingStore


StartStepped = Callable[..., SteppedRun]


@pytest.fixture
def start_stepped() -> StartStepped:
    """``start_stepped(objects=0, **options)``: a server holding ``objects`` objects
    (resourceVersions 2 to objects + 1), a FakeClock at 0 and a stepped reflector over
    them (:func:`stepped` with ``options``), not yet run."""

    def start(objects: int = 0, **options: object) -> SteppedRun:
        server = ApiServerCore()
        fill(server, objects)
        clock = FakeClock(0.0)
        reflector, store = stepped(server, clock, **options)
        return SteppedRun(server, clock, reflector, store)

    return start


@pytest.fixture
def start_in_watch_backoff(start_stepped: StartStepped) -> StartStepped:
    """Like ``start_stepped``, then run until blocked with the first watch failing with a
    429: the reflector has listed and waits out the watch-retry backoff."""

    def start(objects: int = 0, **options: object) -> SteppedRun:
        run = start_stepped(objects, **options)
        run.server.fail_next_watches(1, TooManyRequests())
        run.reflector.run_until_blocked()
        return run

    return start


def fill(server: ApiServerCore | ApiServer, n: int) -> None:
    for i in range(n):
        server.create(Object(name=f"o{i}", namespace="ns"))


def lists_and_watches(server: ApiServerCore) -> list[tuple[str, str, int]]:
    return [(r.verb, r.resource_version, r.limit) for r in server.request_log]


# -- backoff ------------------------------------------------------------------------------


@given(seed=st.integers(0, 2**32 - 1), calls=st.integers(1, 20))
@settings(max_examples=60, deadline=None)
def test_default_backoff_delays_lie_in_d_2d_then_30_60(seed: int, calls: int) -> None:
    clock = FakeClock(0.0)
    d = DelayWithReset(clock=clock, rng=random.Random(seed))
    base = 0.8
    for i in range(calls):
        got = d()
        low = min(base * 2**i, 30.0) if i < 6 else 30.0
        assert low <= got < 2 * low, f"seed={seed} call {i}: {got} not in [{low}, {2 * low})"


def test_backoff_is_deterministic_under_a_seed() -> None:
    clock = FakeClock(0.0)
    a = DelayWithReset(clock=clock, rng=random.Random(3))
    b = DelayWithReset(clock=clock, rng=random.Random(3))
    assert [a() for _ in range(10)] == [b() for _ in range(10)]


def test_backoff_resets_two_minutes_after_the_last_reset_not_the_last_call() -> None:
    clock = FakeClock(0.0)
    d = DelayWithReset(clock=clock, rng=random.Random(1))
    for _ in range(8):
        d()
    clock.set_time(100.0)
    assert 30.0 <= d() < 60.0  # 100 s since construction: no reset
    clock.set_time(120.0)
    assert 30.0 <= d() < 60.0  # exactly 2 min: still no reset (strictly more is needed)
    clock.set_time(120.5)  # only 20.5 s after the previous call, 120.5 s after the start
    assert 0.8 <= d() < 1.6
    assert 1.6 <= d() < 3.2
    assert d.last_reset == 120.5


def test_backoff_edge_parameters() -> None:
    rng = random.Random(0)
    assert delay(0, 2.0, 0.0, 2.0, 0.0, rng) == (2.0, 2.0, 0)  # no steps: constant
    this, nxt, steps = delay(3, 2.0, 3.0, 2.0, 0.0, rng)
    assert (this, nxt, steps) == (2.0, 3.0, 0)  # capped: steps drop to 0
    assert 5.0 <= jitter(5.0, 0.0, rng) < 10.0  # max_factor <= 0 counts as 1
    constant = DelayWithReset(Backoff(1.0, factor=2.0), clock=FakeClock(), reset_interval=0)
    assert [constant() for _ in range(3)] == [1.0, 1.0, 1.0]
    plain = DelayWithReset(Backoff(1.0, factor=0.0, steps=5), clock=FakeClock())
    assert [plain() for _ in range(3)] == [1.0, 1.0, 1.0]
    assert DEFAULT_BACKOFF.steps == 38
    with pytest.raises(ValueError):
        Backoff(float("nan"))
    with pytest.raises(ValueError):
        Backoff(-1.0)
    with pytest.raises(TypeError):
        Backoff(1.0, steps=1.5)  # type: ignore[arg-type]


# -- the core -------------------------------------------------------------------------------


def test_core_relist_resource_version_rules() -> None:
    core = ReflectorCore()
    assert core.relist_resource_version() == "0"
    assert core.list_page_size("0") == 500
    core.set_last_sync_resource_version("17")
    assert core.relist_resource_version() == "17"
    assert core.list_page_size("17") == 0  # unpaginated: the watch cache may serve it
    assert core.list_failed(Expired()) and core.relist_resource_version() == ""
    assert core.list_page_size("") == 500
    core.list_succeeded("", paginated=True)
    assert not core.is_last_sync_resource_version_unavailable and not core.paginated_result
    assert core.list_failed(TooLargeResourceVersion())
    assert not ReflectorCore().list_failed(InternalError())
    core.list_succeeded("0", paginated=True)
    assert core.paginated_result and core.list_page_size("17") == 500  # sticky
    assert ReflectorCore(watch_list_page_size=7).list_page_size("17") == 7
    with pytest.raises(ValueError):
        ReflectorCore(watch_list_page_size=-1)


def test_core_decisions_after_a_watch() -> None:
    core = ReflectorCore()
    assert core.after_watch(None, 0.0) is NextStep.REWATCH
    assert core.after_watch(StopRequested(), 0.0) is NextStep.STOP
    assert core.after_watch(Expired(), 0.0) is NextStep.RELIST
    assert not core.is_last_sync_resource_version_unavailable  # not set by a watch 410
    assert core.after_watch(TooManyRequests(), 0.0) is NextStep.BACKOFF_THEN_REWATCH
    assert core.after_watch(InternalError(), 0.0) is NextStep.RELIST  # retry disabled
    assert core.after_watch(VeryShortWatchError("r"), 0.0) is NextStep.RELIST
    assert core.after_watch_start_error(TooManyRequests()) is NextStep.BACKOFF_THEN_REWATCH
    assert core.after_watch_start_error(ConnectionRefusedError()) is NextStep.BACKOFF_THEN_REWATCH
    assert core.after_watch_start_error(Expired()) is NextStep.FAIL
    assert is_watch_error_retriable(TooManyRequests()) and not is_watch_error_retriable(Invalid())
    retrying = ReflectorCore(max_internal_error_retry_duration=10.0)
    assert retrying.after_watch(InternalError(), 0.0) is NextStep.REWATCH
    assert retrying.after_watch(InternalError(), 10.0) is NextStep.REWATCH
    assert retrying.after_watch(InternalError(), 10.5) is NextStep.RELIST  # window over


def test_retry_with_deadline_window_restarts_after_a_quiet_minute() -> None:
    r = RetryWithDeadline(5.0, 60.0, lambda e: isinstance(e, InternalError))
    r.after(InternalError(), 0.0)
    assert r.should_retry(4.0)
    r.after(InternalError(), 6.0)
    assert not r.should_retry(6.0)  # 6 s after the first: give up (and reset)
    r.after(InternalError(), 100.0)
    assert r.should_retry(100.0)
    r.after(Invalid(), 200.0)  # other errors do not count
    assert r.first == 100.0


def test_core_propagation_rule_for_synthetic_adds() -> None:
    core = ReflectorCore()
    assert not core.propagates_from_start("") and not core.propagates_from_start("0")
    assert not core.observe_watch_rv("5", saw_non_added=False, propagate_from_start=False)
    assert core.last_sync_resource_version == ""
    assert core.observe_watch_rv("9", saw_non_added=True, propagate_from_start=False)
    assert core.observe_watch_rv("3", saw_non_added=False, propagate_from_start=True)
    assert core.last_sync_resource_version == "3"


# -- stepped examples -----------------------------------------------------------------------


def test_initial_list_uses_rv_0_then_watches_from_the_list_rv(start_stepped: StartStepped) -> None:
    server, _, r, store = start_stepped(3)
    r.run_until_blocked()
    assert lists_and_watches(server) == [("list", "0", 500), ("watch", "4", 0)]
    assert server.request_log[1].allow_bookmarks
    assert store.calls == [("replace", "4")] and len(store.items) == 3
    assert r.last_sync_resource_version() == "4"
    assert isinstance(r.waiting, WaitForEvent)


def test_watch_events_reach_the_store_and_advance_the_rv(start_stepped: StartStepped) -> None:
    server, _, r, store = start_stepped()
    r.run_until_blocked()
    a = server.create(Object(name="a"))
    server.update(a.evolve(data=1, resource_version=""))
    server.create(Object(name="b"))
    server.delete("", "a")
    server.send_bookmarks()
    r.run_until_blocked()
    assert store.calls[1:] == [("add", "a"), ("update", "a"), ("add", "b"), ("delete", "a")]
    assert store.bookmarks == ["5"] and r.last_sync_resource_version() == "5"
    assert summary(server.objects) == store.summary()


def test_clean_close_rewatches_from_the_last_rv_without_listing(
    start_stepped: StartStepped,
) -> None:
    server, _, r, _ = start_stepped(2)
    r.run_until_blocked()
    server.create(Object(name="x"))  # the watch sees one event, so the close is not "very short"
    r.run_until_blocked()
    server.close_watch()
    r.run_until_blocked()
    assert (server.counters.lists, server.counters.watches) == (1, 2)
    assert server.request_log[-1].resource_version == "4"
    assert isinstance(r.waiting, WaitForEvent)  # no backoff in between


def test_very_short_watch_leads_to_backoff_and_relist_at_the_last_rv(
    start_stepped: StartStepped,
) -> None:
    server, clock, r, _ = start_stepped(2)
    r.run_until_blocked()
    server.close_watch()  # within 1 s, no events
    r.run_until_blocked()
    assert isinstance(r.waiting, WaitUntil) and r.waiting.reason == "backoff"
    deadline = r.waiting.deadline
    assert 0.8 <= deadline < 1.6
    clock.set_time(deadline)
    r.run_until_blocked()
    assert lists_and_watches(server)[-2:] == [("list", "3", 0), ("watch", "3", 0)]


def test_watch_410_relists_at_the_last_rv(start_stepped: StartStepped) -> None:
    server, clock, r, _ = start_stepped(2)
    r.run_until_blocked()
    server.fail_watch()  # ERROR 410 Expired
    r.run_until_blocked()
    assert isinstance(r.waiting, WaitUntil)
    assert not r.is_last_sync_resource_version_unavailable()
    clock.set_time(r.waiting.deadline)
    r.run_until_blocked()
    assert lists_and_watches(server)[-2:] == [("list", "3", 0), ("watch", "3", 0)]


def test_after_a_410_list_the_reflector_lists_again_at_once_with_empty_rv(
    start_stepped: StartStepped,
) -> None:
    server, clock, r, store = start_stepped(2)
    r.run_until_blocked()
    server.fail_watch(error=InternalError("boom"))
    server.fail_next_lists(1, Expired("too old resource version"))
    r.run_until_blocked()
    assert isinstance(r.waiting, WaitUntil)
    server.create(Object(name="late"))  # rv 4
    clock.set_time(r.waiting.deadline)
    r.run_until_blocked()
    assert lists_and_watches(server)[-3:] == [
        ("list", "3", 0),  # at the last RV: answered 410
        ("list", "", 0),  # immediately, a consistent read (same pager: unpaginated)
        ("watch", "4", 0),
    ]
    assert not r.is_last_sync_resource_version_unavailable()
    assert store.calls[-1] == ("replace", "4") and "late" in store.items


def test_paginated_rv0_list_makes_relists_paginated_exact_and_410_falls_back(
    start_stepped: StartStepped,
) -> None:
    server, clock, r, store = start_stepped(3, watch_list_page_size=2)  # rvs 2..4
    r.run_until_blocked()
    assert lists_and_watches(server) == [("list", "0", 2), ("list", "", 2), ("watch", "4", 0)]
    assert r.core.paginated_result
    server.hold()  # the watch will not see the next writes ...
    for i in range(3):
        server.create(Object(name=f"n{i}"))  # rvs 5..7
    server.compact(server.resource_version)
    server.fail_watch(error=InternalError("boom"))  # ... it ends, dropping them
    server.resume()
    r.run_until_blocked()
    assert r.last_sync_resource_version() == "4"
    clock.set_time(r.next_deadline() or 0.0)
    r.run_until_blocked()
    tail = [(x.verb, x.resource_version, x.limit, x.error) for x in server.request_log[3:]]
    assert tail == [
        ("list", "4", 2, "Expired"),  # paginated, so exactly at 4: compacted away
        ("list", "", 2, None),  # at once, a consistent read, in pages
        ("list", "", 2, None),
        ("list", "", 2, None),
        ("watch", "7", 0, None),
    ]
    assert len(store.items) == 6 and r.last_sync_resource_version() == "7"


def test_429_on_watch_start_backs_off_then_rewatches_without_relisting(
    start_in_watch_backoff: StartStepped,
) -> None:
    server, clock, r, _ = start_in_watch_backoff(1)
    assert isinstance(r.waiting, WaitUntil) and r.waiting.reason == "watch-retry"
    assert 0.8 <= r.waiting.deadline < 1.6
    clock.set_time(r.waiting.deadline)
    r.run_until_blocked()
    assert lists_and_watches(server) == [("list", "0", 500), ("watch", "2", 0), ("watch", "2", 0)]
    assert isinstance(r.waiting, WaitForEvent)


def test_429_error_event_on_an_open_watch_backs_off_then_rewatches(
    start_stepped: StartStepped,
) -> None:
    server, clock, r, _ = start_stepped()
    r.run_until_blocked()
    server.fail_watch(error=TooManyRequests())
    r.run_until_blocked()
    assert isinstance(r.waiting, WaitUntil) and r.waiting.reason == "watch-retry"
    clock.set_time(r.waiting.deadline)
    r.run_until_blocked()
    assert (server.counters.lists, server.counters.watches) == (1, 2)


def test_resync_keeps_firing_while_a_429_on_a_rewatch_is_waited_out(
    start_stepped: StartStepped,
) -> None:
    # client-go: watchWithResync runs startResync on its own goroutine for the whole watch
    # phase, and Reflector.watch waits out a 429 inside that phase (INF-7: resyncs when due).
    server, clock, r, store = start_stepped(1, resync_period=0.25)
    r.run_until_blocked()  # list at 0, watch at 2, resync due at 0.25
    server.fail_watch(error=TooManyRequests())
    clock.set_time(0.1)
    r.run_until_blocked()
    wait = r.waiting
    assert isinstance(wait, WaitUntil) and wait.reason == "watch-retry"
    assert wait.resync_at == 0.25 and 0.9 <= wait.deadline < 1.7
    assert r.next_deadline() == 0.25
    deadline = wait.deadline
    fired = []
    for t in (0.25, 0.5, 0.75):
        clock.set_time(t)
        r.run_until_blocked()
        fired.append(store.resyncs)
        assert isinstance(r.waiting, WaitUntil) and r.waiting.deadline == deadline  # same backoff
    assert fired == [1, 2, 3]
    clock.set_time(deadline)
    r.run_until_blocked()
    assert store.resyncs == 3 + (deadline >= 1.0)  # the one due at 1.0, if it came first
    assert isinstance(r.waiting, WaitForEvent) and r.waiting.resync_at is not None  # armed
    assert (server.counters.lists, server.counters.watches) == (1, 2)


def test_a_clock_jump_past_the_backoff_and_a_resync_fires_them_in_time_order(
    start_in_watch_backoff: StartStepped,
) -> None:
    _, clock, r, store = start_in_watch_backoff(1, resync_period=5.0)
    assert isinstance(r.waiting, WaitUntil) and r.waiting.resync_at == 5.0
    clock.set_time(20.0)  # past the backoff (< 1.6 s) first, then the resync
    assert r.step() and isinstance(r.waiting, WaitForEvent) and store.resyncs == 0
    r.run_until_blocked()
    assert store.resyncs == 1  # then the watch phase's timer, once: it re-arms from now


def test_a_resync_that_fails_during_the_backoff_ends_the_next_watch(
    start_in_watch_backoff: StartStepped,
) -> None:
    server, clock, r, store = start_in_watch_backoff(1, resync_period=0.25)
    store.fail_resync = True
    clock.set_time(0.25)
    r.run_until_blocked()
    assert isinstance(r.waiting, WaitUntil) and r.waiting.resync_at is None  # timer stopped
    store.fail_resync = False
    clock.set_time(r.waiting.deadline)
    r.run_until_blocked()
    # client-go: the error waits on resyncerrc and ends the next handleWatch at once
    assert isinstance(r.waiting, WaitUntil) and r.waiting.reason == "backoff"
    assert (server.counters.lists, server.counters.watches) == (1, 2)


def test_other_watch_start_errors_end_list_and_watch_and_relist(
    start_stepped: StartStepped,
) -> None:
    errors: list[BaseException] = []
    server, clock, r, _ = start_stepped(watch_error_handler=lambda _n, e: errors.append(e))
    server.fail_next_watches(1, Invalid("bad"))
    r.run_until_blocked()
    assert isinstance(r.waiting, WaitUntil) and r.waiting.reason == "backoff"
    assert [type(e) for e in errors] == [Invalid]
    clock.set_time(r.waiting.deadline)
    r.run_until_blocked()
    assert lists_and_watches(server) == [
        ("list", "0", 500),
        ("watch", "1", 0),
        ("list", "1", 0),
        ("watch", "1", 0),
    ]


def test_list_errors_back_off_exponentially_until_a_list_succeeds(
    start_stepped: StartStepped,
) -> None:
    server, clock, r, store = start_stepped()
    server.fail_next_lists(3)
    lows = []
    for _ in range(3):
        r.run_until_blocked()
        assert isinstance(r.waiting, WaitUntil)
        lows.append(r.waiting.deadline - clock.now())
        clock.set_time(r.waiting.deadline)
    r.run_until_blocked()
    assert [0.8 <= lows[0] < 1.6, 1.6 <= lows[1] < 3.2, 3.2 <= lows[2] < 6.4] == [True] * 3
    assert server.counters.lists == 4 and store.calls == [("replace", "1")]


def test_internal_error_retry_rewatches_without_relisting_when_enabled(
    start_stepped: StartStepped,
) -> None:
    server, _, r, _ = start_stepped(max_internal_error_retry_duration=30.0)
    r.run_until_blocked()
    server.fail_watch(error=InternalError())
    r.run_until_blocked()
    assert (server.counters.lists, server.counters.watches) == (1, 2)


def test_rv_is_not_advanced_by_synthetic_initial_adds() -> None:
    server = ApiServerCore()
    server.create(Object(name="b"))  # rv 2
    server.create(Object(name="a"))  # rv 3
    inner = ApiServerListerWatcher(server)

    def list_without_rv(options: ListOptions) -> ListResult:
        return ListResult(inner.list(options).items, "")  # a server that reports no RV

    lw = ListWatch(list_without_rv, inner.watch)
    store = RecordingStore()
    r = SteppedReflector(lw, store, clock=FakeClock(0.0), seed=1, use_watch_list=False)
    r.run_until_blocked()
    assert server.request_log[-1].resource_version == ""  # watch from "": synthetic ADDs
    assert store.calls == [("replace", ""), ("add", "a"), ("add", "b")]
    assert r.last_sync_resource_version() == ""  # "3" then "2" were not recorded
    server.create(Object(name="c"))  # rv 4: an ADDED, still possibly synthetic
    r.run_until_blocked()
    assert r.last_sync_resource_version() == ""
    server.update(Object(name="a", data=1))  # rv 5: the first non-ADDED event
    r.run_until_blocked()
    assert r.last_sync_resource_version() == "5"
    server.create(Object(name="d"))  # from now on every event counts
    r.run_until_blocked()
    assert r.last_sync_resource_version() == "6"


def test_resync_every_period_on_the_fake_clock_and_should_resync_is_consulted(
    start_stepped: StartStepped,
) -> None:
    allowed = [True, False, True]
    server, clock, r, store = start_stepped(
        resync_period=10.0, should_resync=lambda: allowed.pop(0)
    )
    r.run_until_blocked()
    assert r.next_deadline() == 10.0
    clock.set_time(9.9)
    r.run_until_blocked()
    assert store.resyncs == 0
    for t, want in [(10.0, 1), (20.0, 1), (30.0, 2)]:
        clock.set_time(t)
        r.run_until_blocked()
        assert store.resyncs == want, f"at {t}"
        assert r.next_deadline() == t + 10.0  # re-armed whether or not it resynced
    assert (server.counters.lists, server.counters.watches) == (1, 1)


def test_a_resync_error_ends_the_watch_and_leads_to_a_relist(start_stepped: StartStepped) -> None:
    server, clock, r, store = start_stepped(resync_period=5.0)
    r.run_until_blocked()
    store.fail_resync = True
    clock.set_time(5.0)
    r.run_until_blocked()
    assert isinstance(r.waiting, WaitUntil) and r.waiting.reason == "backoff"
    store.fail_resync = False
    clock.set_time(r.waiting.deadline)
    r.run_until_blocked()
    assert server.counters.lists == 2


def test_stop_ends_the_loop_from_any_wait(start_stepped: StartStepped) -> None:
    server, clock, r, _ = start_stepped()
    r.run_until_blocked()
    watch = server.watches()[0]
    r.stop()
    r.run_until_blocked()
    assert r.done and watch.stopped
    r2, _ = stepped(server, clock)
    server.fail_next_lists(1)
    r2.run_until_blocked()
    assert isinstance(r2.waiting, WaitUntil)
    r2.stop()
    assert r2.step() and r2.done and not r2.step()


def test_watch_list_streams_the_initial_state_without_a_list(start_stepped: StartStepped) -> None:
    server, _, r, store = start_stepped(3, use_watch_list=True)
    r.run_until_blocked()
    assert (server.counters.lists, server.counters.watches, server.counters.watch_lists) == (
        0,
        0,
        1,
    )
    rec = server.request_log[0]
    assert (rec.resource_version, rec.send_initial_events) == ("", True)
    assert store.calls == [("replace", "4")] and len(store.items) == 3
    assert r.last_sync_resource_version() == "4"
    server.create(Object(name="later"))  # the same watch goes on
    r.run_until_blocked()
    assert "later" in store.items and server.counters.watch_lists == 1
    assert server.counters.watches == 0


def test_watch_list_falls_back_to_a_list_on_a_non_retriable_error(
    start_stepped: StartStepped,
) -> None:
    server, _, r, store = start_stepped(2, use_watch_list=True)
    server.fail_next_watches(1, Invalid("watch-list not supported"))
    r.run_until_blocked()
    assert lists_and_watches(server) == [("watch", "", 0), ("list", "0", 500), ("watch", "3", 0)]
    assert len(store.items) == 2


def test_store_errors_on_events_are_logged_and_the_event_dropped() -> None:
    class Flaky(RecordingStore):
        def add(self, obj: object) -> None:
            if self.key(obj) == "bad":
                raise ValueError("rejected")
            super().add(obj)

    server = ApiServerCore()
    store = Flaky()
    r = SteppedReflector(ApiServerListerWatcher(server), store, clock=FakeClock(0.0))
    r.run_until_blocked()
    server.create(Object(name="bad"))
    server.create(Object(name="good"))
    r.run_until_blocked()
    assert list(store.items) == ["good"] and r.last_sync_resource_version() == "3"


def test_reflector_rejects_bad_arguments() -> None:
    lw = ApiServerListerWatcher(ApiServerCore())
    with pytest.raises(TypeError):
        SteppedReflector(lw, object())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        SteppedReflector(object(), RecordingStore())  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        SteppedReflector(lw, RecordingStore(), resync_period=-1.0)
    with pytest.raises(ValueError):
        SteppedReflector(lw, RecordingStore(), seed=1, rng=random.Random(1))


# -- threaded examples ----------------------------------------------------------------------


@pytest.fixture
def running() -> Iterator[list[tuple[threading.Event, threading.Thread]]]:
    started: list[tuple[threading.Event, threading.Thread]] = []
    yield started
    for stop, thread in started:
        stop.set()
        thread.join(5)
        assert not thread.is_alive(), "reflector did not stop"


class ThreadedRun(NamedTuple):
    """What :func:`threaded` builds: a server on a FakeClock at 0, the store, a threaded
    reflector over them (not yet started) and the clock."""

    server: ApiServer
    store: RecordingStore
    reflector: Reflector
    clock: FakeClock


def threaded(objects: int = 0, **options: Any) -> ThreadedRun:
    """A server holding ``objects`` objects and a reflector over it that lists (not
    watch-list), with ``options``."""
    clock = FakeClock(0.0)
    server = ApiServer(clock=clock)
    fill(server, objects)
    store = RecordingStore()
    r = Reflector(
        ApiServerListerWatcher(server), store, clock=clock, use_watch_list=False, **options
    )
    return ThreadedRun(server, store, r, clock)


def start(
    r: Reflector, running: list[tuple[threading.Event, threading.Thread]]
) -> tuple[threading.Event, threading.Thread]:
    stop = threading.Event()
    thread = threading.Thread(target=r.run, args=(stop,), name="reflector", daemon=True)
    thread.start()
    running.append((stop, thread))
    return stop, thread


@pytest.mark.timeout(20)
def test_threaded_quiet_cluster_costs_exactly_one_list_and_one_watch(
    running: list[tuple[threading.Event, threading.Thread]],
) -> None:
    server, store, r, clock = threaded(5, seed=1, name="quiet")
    start(r, running)
    p = r.wait_parked("watch")
    clock.step(3600.0)  # an hour of quiet (the server never times watches out itself)
    with pytest.raises(TimeoutError):
        r.wait_parked(after=p.seq, timeout=0.05)
    counters = server.counters
    assert (counters.lists, counters.watches, counters.gets) == (1, 1, 0)
    assert len(store.items) == 5


@pytest.mark.timeout(20)
def test_threaded_events_clean_close_and_410(
    running: list[tuple[threading.Event, threading.Thread]],
) -> None:
    server, store, r, clock = threaded(seed=2)
    start(r, running)
    p = r.wait_parked("watch")
    server.create(Object(name="a"))
    assert server.wait_for(lambda c: c.watches()[0].wire == type(c.watches()[0].wire)(), 5)
    p = r.wait_parked("watch", after=p.seq)
    assert "a" in store.items
    server.close_watch()  # the watch saw an event: re-watch at once, no list
    assert server.wait_for(lambda c: c.counters.watches == 2, 5)
    p = r.wait_parked("watch", after=p.seq)
    assert server.counters.lists == 1
    server.fail_watch()  # 410: backoff, then relist at the last RV
    p = r.wait_parked("backoff", after=p.seq)
    assert p.deadline is not None and 0.8 <= p.deadline - clock.now() < 1.6
    clock.set_time(p.deadline)
    r.wait_parked("watch", after=p.seq)
    log = server.request_log()
    assert [(x.verb, x.resource_version) for x in log[-2:]] == [("list", "2"), ("watch", "2")]


def parked_after_a_429(
    running: list[tuple[threading.Event, threading.Thread]], resync_period: float
) -> tuple[ThreadedRun, Parked]:
    """A started threaded reflector whose first watch request is refused (429), and its
    first park in the watch-retry wait."""
    run = threaded(seed=3, resync_period=resync_period)
    run.server.fail_next_watches(1)
    start(run.reflector, running)
    return run, run.reflector.wait_parked("watch-retry")


@pytest.mark.timeout(20)
def test_threaded_429_backs_off_and_resync_runs_on_the_fake_clock(
    running: list[tuple[threading.Event, threading.Thread]],
) -> None:
    (server, store, r, clock), p = parked_after_a_429(running, resync_period=30.0)
    assert p.deadline is not None and 0.8 <= p.deadline < 1.6
    clock.set_time(p.deadline)
    p = r.wait_parked("watch", after=p.seq)
    assert (server.counters.lists, server.counters.watches) == (1, 2)
    assert store.resyncs == 0
    for n in (1, 2):
        assert p.deadline is not None
        clock.set_time(p.deadline)
        p = r.wait_parked("watch", after=p.seq)
        assert store.resyncs == n


@pytest.mark.timeout(20)
def test_threaded_resync_fires_during_a_429_backoff_of_the_watch_phase(
    running: list[tuple[threading.Event, threading.Thread]],
) -> None:
    (server, store, r, clock), p = parked_after_a_429(running, resync_period=0.25)
    assert p.deadline == 0.25  # it wakes first for the resync, inside the backoff
    clock.set_time(0.25)
    p = r.wait_parked("watch-retry", after=p.seq)
    assert store.resyncs == 1 and p.deadline == 0.5
    assert server.counters.watches == 1  # still waiting out the 429


@pytest.mark.timeout(20)
def test_threaded_stop_is_prompt_during_a_backoff_wait(
    running: list[tuple[threading.Event, threading.Thread]],
) -> None:
    server, _, r, _ = threaded()
    server.fail_next_lists(1)
    stop, thread = start(r, running)
    r.wait_parked("backoff")
    stop.set()  # no clock step: the wait must end on the stop alone
    thread.join(5)
    assert not thread.is_alive()


@pytest.mark.timeout(20)
def test_threaded_stop_while_watching_stops_the_watch(
    running: list[tuple[threading.Event, threading.Thread]],
) -> None:
    server = ApiServer()  # real clock: nothing here waits on time
    r = Reflector(ApiServerListerWatcher(server), RecordingStore())
    stop, thread = start(r, running)
    r.wait_parked("watch")
    stop.set()
    thread.join(5)
    assert not thread.is_alive() and server.open_watch_ids() == []


@pytest.mark.timeout(20)
def test_threaded_list_and_watch_raises_its_error_and_refuses_reentry() -> None:
    server = ApiServer()
    server.fail_next_lists(1)
    r = Reflector(ApiServerListerWatcher(server), RecordingStore(), use_watch_list=False)
    stop = threading.Event()
    with pytest.raises(Exception, match="injected list failure"):
        r.list_and_watch(stop)
    server.fail_next_watches(1, Invalid("nope"))
    with pytest.raises(Invalid):
        r.list_and_watch(stop)
    stop.set()
    r.list_and_watch(stop)  # lists, then sees the stop
    assert server.counters.lists == 3


@pytest.mark.timeout(20)
def test_threaded_reflector_refuses_a_non_blocking_watch(
    running: list[tuple[threading.Event, threading.Thread]],
) -> None:
    core = ApiServerCore()
    errors: list[BaseException] = []
    clock = FakeClock(0.0)
    r = Reflector(
        ApiServerListerWatcher(core),
        RecordingStore(),
        clock=clock,
        watch_error_handler=lambda _n, e: errors.append(e),
        use_watch_list=False,
    )
    start(r, running)
    r.wait_parked("backoff")  # the watch pump reported a TypeError, which ended the watch
    assert core.counters.watches == 1


# -- the state machine ------------------------------------------------------------------------


class ReflectorMachine(RuleBasedStateMachine):
    """A stepped reflector against the server core, with faults as rules.

    Invariants: the store always equals the server's state at the reflector's last
    synced RV (replayed from the full history the test records), that RV never goes
    back, and after faults stop and the reflector catches up the store equals the
    server (keys, uids, rvs) at the newest RV.
    """

    def __init__(self) -> None:
        super().__init__()
        self.history: list[tuple[int, str, Object | None]] = []
        self.last_rv = 0

    @initialize(
        seed=st.integers(0, 2**16),
        window=st.sampled_from([None, 1, 4]),
        page=st.sampled_from([0, 2]),
        held=st.booleans(),
        watch_list=st.booleans(),
        resync=st.sampled_from([0.0, 7.0]),
    )
    def setup(
        self, seed: int, window: int | None, page: int, held: bool, watch_list: bool, resync: float
    ) -> None:
        self.seed = seed
        self.server = ApiServerCore(compaction_window=window, deliver_immediately=not held)
        self.clock = FakeClock(0.0)
        self.store = RecordingStore()
        self.reflector = SteppedReflector(
            ApiServerListerWatcher(self.server),
            self.store,
            clock=self.clock,
            seed=seed,
            watch_list_page_size=page,
            use_watch_list=watch_list,
            resync_period=resync,
        )

    # -- server writes --
    def _record(self, obj: Object, deleted: bool = False) -> None:
        key = RecordingStore.key(obj)
        self.history.append((rv_int(obj.resource_version), key, None if deleted else obj))

    @rule(name=st.sampled_from(["a", "b", "c", "d"]))
    def create(self, name: str) -> None:
        if f"ns/{name}" not in self.server.objects:
            self._record(self.server.create(Object(name=name, namespace="ns")))

    @rule(name=st.sampled_from(["a", "b", "c", "d"]), data=st.integers(0, 3))
    def update(self, name: str, data: int) -> None:
        current = self.server.objects.get(f"ns/{name}")
        if current is not None and current.data != data:
            self._record(self.server.update(current.evolve(data=data)))

    @rule(name=st.sampled_from(["a", "b", "c", "d"]))
    def delete(self, name: str) -> None:
        if f"ns/{name}" in self.server.objects:
            self._record(self.server.delete("ns", name), deleted=True)

    # -- the reflector and time --
    @rule()
    def step(self) -> None:
        self.reflector.step()

    @rule()
    def run_until_blocked(self) -> None:
        self.reflector.run_until_blocked()

    @rule(dt=st.sampled_from([0.5, 1.0, 7.0, 30.0, 61.0]))
    def advance_clock(self, dt: float) -> None:
        self.clock.step(dt)

    @rule(n=st.sampled_from([1, None]))
    def release(self, n: int | None) -> None:
        self.server.release(None, n)

    # -- faults --
    @rule(drop=st.booleans())
    def close_watch(self, drop: bool) -> None:
        self.server.close_watch(drop_pending=drop)

    @rule(error=st.sampled_from(["410", "429", "500", "invalid"]))
    def fail_watch(self, error: str) -> None:
        err = {
            "410": Expired("too old"),
            "429": TooManyRequests(),
            "500": InternalError(),
            "invalid": Invalid("x"),
        }[error]
        self.server.fail_watch(error=err)

    @rule()
    def compact_everything(self) -> None:
        self.server.compact(self.server.rv)

    @rule(error=st.sampled_from(["list", "410"]))
    def fail_next_list(self, error: str) -> None:
        self.server.fail_next_lists(1, Expired("too old") if error == "410" else None)

    @rule(error=st.sampled_from(["429", "refused", "invalid", "410"]))
    def fail_next_watch(self, error: str) -> None:
        err = {
            "429": TooManyRequests(),
            "refused": ConnectionRefusedError("refused"),
            "invalid": Invalid("x"),
            "410": Expired("too old"),
        }[error]
        self.server.fail_next_watches(1, err)

    @rule()
    def bookmarks(self) -> None:
        self.server.send_bookmarks()

    # -- checks --
    def state_at(self, rv: int) -> dict[str, tuple[str, str]]:
        state: dict[str, tuple[str, str]] = {}
        for h_rv, key, obj in self.history:
            if h_rv > rv:
                break
            if obj is None:
                del state[key]
            else:
                state[key] = (obj.uid, obj.resource_version)
        return state

    @invariant()
    def store_is_the_server_state_at_the_last_synced_rv(self) -> None:
        if not hasattr(self, "reflector"):
            return
        last = self.reflector.last_sync_resource_version()
        if last == "":
            assert self.store.items == {}
            return
        rv = rv_int(last)
        assert rv >= self.last_rv, (
            f"seed={self.seed}: last synced RV went back {self.last_rv}->{rv}"
        )
        self.last_rv = rv
        assert self.store.summary() == self.state_at(rv), f"seed={self.seed} rv={rv}"

    @rule()
    def faults_stop_and_the_reflector_catches_up(self) -> None:
        self.server.clear_faults()
        self.server.resume()
        r = self.reflector
        for _ in range(200):
            r.run_until_blocked()
            deadline = r.next_deadline()
            if isinstance(r.waiting, WaitForEvent):
                break
            assert deadline is not None
            self.clock.set_time(max(deadline, self.clock.now()))
        assert isinstance(r.waiting, WaitForEvent), f"seed={self.seed}: never settled"
        assert self.store.summary() == summary(self.server.objects), f"seed={self.seed}"
        assert r.last_sync_resource_version() == self.server.resource_version


ReflectorMachine.TestCase.settings = LONG_MACHINE
TestReflectorMachine = ReflectorMachine.TestCase


def test_both_watch_kinds_satisfy_the_watch_protocol() -> None:
    server = ApiServer()
    assert isinstance(server.watch("1"), Watch)
    assert isinstance(ApiServerCore().watch("1"), Watch)
