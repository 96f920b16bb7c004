"""The reflector's default (watch-list, client-go v1.35+) and every relist / retry
decision, against the in-memory API server.

Each test steps a :class:`SteppedReflector` over an :class:`ApiServerCore` on a
FakeClock and reads the server's request log, so what the reflector asked for (a
watch-list, a list, a plain watch, and from which resourceVersion) is exact. The rules
follow client-go's ``tools/cache/reflector.go`` (``ListAndWatchWithContext``,
``watchList``, ``watch``, ``list``, ``isWatchErrorRetriable``) as of v0.36.
"""

from __future__ import annotations

from typing import Literal

import pytest
from test_reflector import RecordingStore, fill

from refimpl.apierrors import BadRequest, Expired, InternalError, Invalid, TooManyRequests
from refimpl.apiserver import ApiServerCore, ApiServerListerWatcher, CoreWatch, WatchListSupport
from refimpl.cache.reflector import (
    DEFAULT_MIN_WATCH_TIMEOUT,
    SteppedReflector,
    WaitForEvent,
    WaitUntil,
)
from refimpl.clock import FakeClock
from refimpl.meta import Object


def reflector(
    server: ApiServerCore, clock: FakeClock | None = None, **kwargs: object
) -> tuple[SteppedReflector, RecordingStore, FakeClock]:
    """A reflector with client-go's defaults (watch-list) unless ``kwargs`` say else."""
    clock = clock if clock is not None else FakeClock(0.0)
    store = RecordingStore()
    r = SteppedReflector(ApiServerListerWatcher(server), store, clock=clock, seed=11, **kwargs)  # type: ignore[arg-type]
    return r, store, clock


def held_stream() -> tuple[ApiServerCore, SteppedReflector, RecordingStore, CoreWatch]:
    """Two objects on a server that holds back watch events, and a reflector that has
    opened its watch-list stream (the one watch, returned last): nothing delivered yet."""
    server = ApiServerCore(deliver_immediately=False)
    fill(server, 2)
    r, store, _ = reflector(server)
    r.run_until_blocked()
    (w,) = server.watches()
    return server, r, store, w


def requests(server: ApiServerCore, since: int = 0) -> list[tuple[str, str, str]]:
    """(kind, resourceVersion, outcome) per request: kind is "watch-list" for a watch
    with sendInitialEvents=true; outcome is the error class name or "ok"."""
    out: list[tuple[str, str, str]] = []
    for rec in server.request_log[since:]:
        kind = "watch-list" if rec.send_initial_events else rec.verb
        out.append((kind, rec.resource_version, rec.error or "ok"))
    return out


def synced(server: ApiServerCore, n: int = 3) -> tuple[SteppedReflector, RecordingStore, FakeClock]:
    """A watch-list reflector that has streamed ``n`` objects and is watching."""
    fill(server, n)
    r, store, clock = reflector(server)
    r.run_until_blocked()
    assert isinstance(r.waiting, WaitForEvent) and len(store.items) == n
    return r, store, clock


def waiting_until(r: SteppedReflector, reason: str) -> float:
    w = r.waiting
    assert isinstance(w, WaitUntil), w
    assert w.reason == reason, w
    return w.deadline


def pass_backoff(r: SteppedReflector, clock: FakeClock, reason: str = "backoff") -> float:
    """Run until the loop waits ``reason``, move the clock to that wait's end and run
    again; returns the delay."""
    r.run_until_blocked()
    deadline = waiting_until(r, reason)
    delay = deadline - clock.now()
    clock.set_time(deadline)
    r.run_until_blocked()
    return delay


# -- the default: one stream, no list ------------------------------------------------------


def test_the_default_is_one_watch_list_stream_that_goes_on_as_the_watch() -> None:
    server = ApiServerCore()
    r, store, _ = synced(server)
    assert requests(server) == [("watch-list", "", "ok")]
    rec = server.request_log[0]
    assert rec.allow_bookmarks and rec.send_initial_events is True
    # The store is replaced once, at the RV of the initial-events-end bookmark.
    assert store.calls == [("replace", "4")] and r.last_sync_resource_version() == "4"
    server.create(Object(name="later"))
    r.run_until_blocked()
    assert "later" in store.items and r.last_sync_resource_version() == "5"
    c = server.counters
    assert (c.lists, c.watches, c.watch_lists) == (0, 0, 1)


def test_objects_stream_into_a_scratch_store_until_the_end_bookmark() -> None:
    server, r, store, w = held_stream()
    server.release(w.id, 2)  # both ADDED events, not yet the bookmark
    r.run_until_blocked()
    assert store.calls == [] and r.last_sync_resource_version() == ""
    server.release(w.id, 1)
    r.run_until_blocked()
    assert store.calls == [("replace", "3")]


def test_a_timed_out_stream_is_followed_by_a_plain_watch_from_the_last_rv() -> None:
    server = ApiServerCore()
    r, _, _ = synced(server)
    server.create(Object(name="x"))  # rv 5: seen, so the stream lasted and delivered
    r.run_until_blocked()
    server.close_watch()  # the server's timeout ends the stream
    r.run_until_blocked()
    assert requests(server) == [("watch-list", "", "ok"), ("watch", "5", "ok")]


# -- the fallback to list + watch -----------------------------------------------------------


def test_a_server_without_watch_list_gets_a_list_at_0_then_a_watch() -> None:
    server = ApiServerCore(watch_list="unsupported")
    fill(server, 2)
    r, store, clock = reflector(server)
    r.run_until_blocked()
    assert requests(server) == [
        ("watch-list", "", "Invalid"),
        ("list", "0", "ok"),  # at once, in the same pass: no backoff
        ("watch", "3", "ok"),
    ]
    assert len(store.items) == 2 and clock.now() == 0.0
    # Every later relist tries the stream again first.
    server.fail_watch()  # 410 on the watch
    n = len(server.request_log)
    pass_backoff(r, clock)
    assert requests(server, n) == [
        ("watch-list", "3", "Invalid"),
        ("list", "3", "ok"),
        ("watch", "3", "ok"),
    ]


@pytest.mark.parametrize(
    "error",
    [InternalError("etcd leader changed"), BadRequest("nope"), Invalid("no")],
    ids=["500", "400", "422"],
)
def test_a_stream_error_event_other_than_410_falls_back_to_a_list(error: Exception) -> None:
    server, r, store, w = held_stream()
    server.release(w.id, 1)  # one ADDED, then the stream dies before its bookmark
    server.fail_watch(w.id, error)  # type: ignore[arg-type]
    server.release(w.id)
    r.run_until_blocked()
    assert requests(server) == [("watch-list", "", "ok"), ("list", "0", "ok"), ("watch", "3", "ok")]
    assert store.calls == [("replace", "3")]


def test_a_stream_closed_at_once_without_events_is_very_short_and_falls_back() -> None:
    server = ApiServerCore(deliver_immediately=False)
    r, _, _ = reflector(server)
    r.run_until_blocked()
    server.close_watch()  # no event, no time passed: VeryShortWatchError, not retriable
    r.run_until_blocked()
    assert requests(server) == [("watch-list", "", "ok"), ("list", "0", "ok"), ("watch", "1", "ok")]


def test_a_stream_that_ends_before_its_bookmark_after_events_is_opened_again() -> None:
    server, r, store, w = held_stream()
    server.release(w.id, 1)  # one ADDED, then the connection drops: no error, no bookmark
    r.run_until_blocked()
    server.close_watch(w.id)
    server.resume()
    r.run_until_blocked()
    assert requests(server) == [("watch-list", "", "ok"), ("watch-list", "", "ok")]
    assert store.calls == [("replace", "3")]  # only the complete stream reached the store


@pytest.mark.parametrize(
    "error", [TooManyRequests("slow down"), ConnectionRefusedError()], ids=["429", "refused"]
)
def test_a_429_or_refused_stream_is_retried_after_a_backoff_without_a_list(
    error: Exception,
) -> None:
    server = ApiServerCore()
    fill(server, 1)
    server.fail_next_watches(1, error)
    r, store, clock = reflector(server)
    r.run_until_blocked()
    delay = pass_backoff(r, clock, "watch-list-retry")
    assert 0.8 <= delay < 1.6
    assert [k for k, _, _ in requests(server)] == ["watch-list", "watch-list"]
    assert len(store.items) == 1


@pytest.mark.parametrize("too_old", ["error_event", "raise"])
def test_a_410_stream_on_a_relist_is_retried_at_once_from_empty(
    too_old: Literal["error_event", "raise"],
) -> None:
    # Without a watch cache the stream is served from storage at exactly the RV asked
    # for, so a compacted RV is 410 (an ERROR event on the opened stream, or a failed
    # request); the reflector asks again, at once, for the newest state.
    server = ApiServerCore(watch_list="storage", too_old_watch=too_old)
    r, _, clock = synced(server, 2)
    server.create(Object(name="x"))  # rv 4
    r.run_until_blocked()
    server.fail_watch()  # a watch 410: relist (after the pass's backoff) at the last RV
    server.create(Object(name="y"))  # rv 5
    server.compact(server.rv)
    n = len(server.request_log)
    pass_backoff(r, clock)
    first = "Expired" if too_old == "raise" else "ok"
    assert requests(server, n) == [("watch-list", "4", first), ("watch-list", "", "ok")]
    assert r.last_sync_resource_version() == "5"
    assert not r.is_last_sync_resource_version_unavailable()


def test_a_too_large_rv_stream_is_retried_at_once_from_empty() -> None:
    server = ApiServerCore()
    r, _, clock = synced(server, 1)
    r.core.last_sync_resource_version = "99"  # a server that lost its newest writes
    server.fail_watch()
    n = len(server.request_log)
    pass_backoff(r, clock)
    assert requests(server, n) == [
        ("watch-list", "99", "TooLargeResourceVersion"),
        ("watch-list", "", "ok"),
    ]


def test_a_watch_cache_serves_a_stream_from_any_rv_it_has_passed() -> None:
    server = ApiServerCore()  # watch_list="watch-cache": "not older than" the RV
    r, _, clock = synced(server, 2)
    server.create(Object(name="x"))
    r.run_until_blocked()
    server.fail_watch()
    server.compact(server.rv)
    n = len(server.request_log)
    pass_backoff(r, clock)
    assert requests(server, n) == [("watch-list", "4", "ok")]  # no 410 from a watch cache


# -- the watch phase: retry in place, or relist ----------------------------------------------


@pytest.mark.parametrize("watch_list", [True, False], ids=["watch-list", "list-watch"])
def test_a_429_error_event_backs_off_then_rewatches_in_place(watch_list: bool) -> None:
    server = ApiServerCore()
    fill(server, 2)
    r, _, clock = reflector(server, use_watch_list=watch_list)
    r.run_until_blocked()
    n = len(server.request_log)
    server.fail_watch(error=TooManyRequests("slow down"))
    r.run_until_blocked()
    assert 0.8 <= pass_backoff(r, clock, "watch-retry") < 1.6
    assert requests(server, n) == [("watch", "3", "ok")]


@pytest.mark.parametrize(
    "error", [TooManyRequests("slow down"), ConnectionRefusedError()], ids=["429", "refused"]
)
def test_a_rewatch_refused_or_429_backs_off_and_rewatches(error: Exception) -> None:
    server = ApiServerCore()
    r, _, clock = synced(server, 2)
    server.create(Object(name="x"))
    r.run_until_blocked()
    server.close_watch()  # a normal end (timeout): re-watch at once ...
    server.fail_next_watches(1, error)  # ... which is refused
    n = len(server.request_log)
    r.run_until_blocked()
    pass_backoff(r, clock, "watch-retry")
    assert requests(server, n) == [
        ("watch", "4", type(error).__name__),
        ("watch", "4", "ok"),
    ]


def test_a_500_relists_by_default() -> None:
    # MaxInternalErrorRetryDuration defaults to 0: an internal error is like any other.
    server = ApiServerCore()
    r, _, clock = synced(server, 2)
    n = len(server.request_log)
    server.fail_watch(error=InternalError("boom"))
    r.run_until_blocked()
    pass_backoff(r, clock)
    assert requests(server, n) == [("watch-list", "3", "ok")]


def test_a_500_rewatches_in_place_within_max_internal_error_retry_duration() -> None:
    server = ApiServerCore()
    fill(server, 2)
    r, _, clock = reflector(server, max_internal_error_retry_duration=30.0)
    r.run_until_blocked()
    n = len(server.request_log)
    server.fail_watch(error=InternalError("boom"))
    r.run_until_blocked()  # at once: no backoff
    assert requests(server, n) == [("watch", "3", "ok")]
    clock.set_time(20.0)
    server.fail_watch(error=InternalError("boom"))  # 20 s after the first: still retried
    r.run_until_blocked()
    assert requests(server, n)[-1] == ("watch", "3", "ok")
    clock.set_time(40.0)
    n = len(server.request_log)
    server.fail_watch(error=InternalError("boom"))  # 40 s after the first: relist
    r.run_until_blocked()
    pass_backoff(r, clock)
    assert requests(server, n) == [("watch-list", "3", "ok")]


@pytest.mark.parametrize(
    "error", [BadRequest("bad"), Invalid("no"), Expired("too old")], ids=["400", "422", "410"]
)
def test_any_other_error_event_relists_from_the_last_rv(error: Exception) -> None:
    server = ApiServerCore()
    r, _, clock = synced(server, 2)
    server.create(Object(name="x"))
    r.run_until_blocked()
    n = len(server.request_log)
    server.fail_watch(error=error)  # type: ignore[arg-type]
    r.run_until_blocked()
    assert len(server.request_log) == n  # first the pass's backoff
    pass_backoff(r, clock)
    # After a *watch* 410 the relist asks for the last RV, not for "" (REF-1).
    assert requests(server, n) == [("watch-list", "4", "ok")]


def test_a_failed_rewatch_request_ends_the_pass_and_relists() -> None:
    server = ApiServerCore()
    r, _, clock = synced(server, 2)
    server.create(Object(name="x"))
    r.run_until_blocked()
    server.close_watch()
    server.fail_next_watches(1, InternalError("boom"))
    n = len(server.request_log)
    r.run_until_blocked()
    pass_backoff(r, clock)
    assert requests(server, n) == [("watch", "4", "InternalError"), ("watch-list", "4", "ok")]


def test_a_very_short_watch_relists_after_a_backoff() -> None:
    server = ApiServerCore()
    r, _, clock = synced(server, 2)
    server.create(Object(name="x"))
    r.run_until_blocked()
    server.close_watch()  # the stream lasted and delivered: re-watch at once
    r.run_until_blocked()
    n = len(server.request_log)
    server.close_watch()  # the new watch ends at once with nothing: very short
    r.run_until_blocked()
    pass_backoff(r, clock)
    assert requests(server, n) == [("watch-list", "4", "ok")]


def test_a_watch_that_lasted_rewatches_even_without_events() -> None:
    server = ApiServerCore()
    r, _, clock = synced(server, 2)
    clock.step(DEFAULT_MIN_WATCH_TIMEOUT)
    n = len(server.request_log)
    server.close_watch()
    r.run_until_blocked()
    assert requests(server, n) == [("watch", "3", "ok")]


# -- backoff between passes -------------------------------------------------------------------


def test_passes_back_off_exponentially_and_each_pass_tries_the_stream_first() -> None:
    server = ApiServerCore(watch_list="unsupported")
    server.fail_next_lists(4)
    r, store, clock = reflector(server)
    r.run_until_blocked()
    delays = [pass_backoff(r, clock) for _ in range(4)]
    for n, d in enumerate(delays):  # 0.8 s doubling, each with up to 100 % jitter
        assert 0.8 * 2**n <= d < 1.6 * 2**n, delays
    assert [k for k, _, _ in requests(server)] == ["watch-list", "list"] * 5 + ["watch"]
    assert len(store.items) == 0 and isinstance(r.waiting, WaitForEvent)


def test_even_a_pass_that_ends_cleanly_is_followed_by_a_backoff() -> None:
    server = ApiServerCore()
    r, _, clock = synced(server, 1)
    server.fail_watch()  # 410: ListAndWatch returns without an error
    r.run_until_blocked()
    assert 0.8 <= waiting_until(r, "backoff") - clock.now() < 1.6


@pytest.mark.parametrize("support", ["watch-cache", "storage"])
def test_both_serving_modes_stream_the_same_initial_state(support: WatchListSupport) -> None:
    server = ApiServerCore(watch_list=support)
    r, store, _ = synced(server, 3)
    assert sorted(store.items) == ["ns/o0", "ns/o1", "ns/o2"]
    assert r.last_sync_resource_version() == server.resource_version
