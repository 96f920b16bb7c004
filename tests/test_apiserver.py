"""The in-memory API server (refimpl.apiserver) and the list pager (cache.listwatch).

A Hypothesis state machine drives :class:`ApiServerCore` against an independent model
(the full write history); example tests pin the API-error behaviour, the faults and the
blocking facade.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from machine_settings import LONG_MACHINE

from refimpl.apierrors import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Expired,
    Gone,
    InternalError,
    Invalid,
    ListError,
    NotFound,
    TooLargeResourceVersion,
    TooManyRequests,
    is_expired,
    is_too_large_resource_version,
)
from refimpl.apiserver import ApiServer, ApiServerCore, ApiServerListerWatcher, CoreWatch
from refimpl.cache.listwatch import ListPager, ListWatch, Watch
from refimpl.clock import FakeClock
from refimpl.meta import ListOptions, ListResult, Object
from refimpl.watch import (
    ADDED,
    BOOKMARK,
    DELETED,
    ERROR,
    INITIAL_EVENTS_END_ANNOTATION,
    MODIFIED,
    WatchEvent,
    WatchTimeout,
)

# -- examples: writes and errors ------------------------------------------------------


def test_resource_versions_start_at_one_and_every_write_gets_a_larger_one() -> None:
    s = ApiServerCore()
    assert s.resource_version == "1"
    assert s.list().resource_version == "1"
    a = s.create(Object(name="a", namespace="ns"))
    assert (a.resource_version, a.uid) == ("2", "uid-1")
    a2 = s.update(a.evolve(data={"x": 1}))
    assert a2.resource_version == "3" and a2.uid == a.uid
    gone = s.delete("ns", "a")
    assert gone.resource_version == "4" and gone.data == {"x": 1}
    assert [(h.rv, h.type) for h in s.log] == [(2, ADDED), (3, MODIFIED), (4, DELETED)]
    assert s.counters.creates == 1 and s.counters.updates == 1 and s.counters.deletes == 1


@pytest.mark.parametrize(
    ("obj", "error"),
    [
        (Object(name=""), Invalid),
        (Object(name="Upper"), Invalid),
        (Object(name="a/b"), Invalid),
        (Object(name="a", namespace="bad_ns"), Invalid),
        (Object(name="a", resource_version="5"), Invalid),
    ],
)
def test_create_rejects_bad_objects(obj: Object, error: type[Exception]) -> None:
    s = ApiServerCore()
    with pytest.raises(error):
        s.create(obj)
    assert s.resource_version == "1" and s.log == type(s.log)()


def test_create_update_delete_get_errors() -> None:
    s = ApiServerCore()
    a = s.create(Object(name="a"))
    with pytest.raises(AlreadyExists):
        s.create(Object(name="a"))
    with pytest.raises(NotFound):
        s.update(Object(name="b"))
    with pytest.raises(NotFound):
        s.delete("", "b")
    with pytest.raises(NotFound):
        s.get("", "b")
    s.update(a.evolve(data=1))
    with pytest.raises(Conflict):  # a's resource_version is stale now
        s.update(a.evolve(data=2))
    with pytest.raises(Conflict):
        s.update(Object(name="a", uid="other", data=3))
    with pytest.raises(Conflict):
        s.delete("", "a", resource_version=a.resource_version)
    assert s.get("", "a").data == 1
    with pytest.raises(TypeError):
        s.create("a")  # type: ignore[arg-type]


def test_an_update_that_changes_nothing_writes_nothing() -> None:
    s = ApiServerCore()
    a = s.create(Object(name="a", labels={"k": "v"}, data=1))
    w = s.watch(a.resource_version)
    assert s.update(Object(name="a", labels={"k": "v"}, data=1)) == a
    assert s.resource_version == a.resource_version
    assert list(w) == []


def test_error_classes_carry_codes_and_predicates() -> None:
    assert Expired().code == 410 and Expired().reason == "Expired"
    assert is_expired(Expired()) and is_expired(Gone()) and not is_expired(ListError())
    assert is_too_large_resource_version(TooLargeResourceVersion())
    assert not is_too_large_resource_version(InternalError())
    assert TooManyRequests().code == 429 and ListError().code == 503


# -- examples: list ----------------------------------------------------------------------


def _fill(s: ApiServerCore | ApiServer, n: int, namespace: str = "ns") -> None:
    for i in range(n):
        s.create(Object(name=f"o{i:04d}", namespace=namespace))


def test_list_pages_are_a_consistent_snapshot() -> None:
    s = ApiServerCore()
    _fill(s, 5)
    first = s.list(limit=2)
    assert [o.name for o in first.items] == ["o0000", "o0001"] and first.continue_token
    s.delete("ns", "o0003")  # a write between pages is not seen by the later pages
    s.create(Object(name="o0009", namespace="ns"))
    second = s.list(limit=2, continue_token=first.continue_token)
    third = s.list(limit=2, continue_token=second.continue_token)
    assert third.continue_token == ""
    names = [o.name for page in (first, second, third) for o in page.items]
    assert names == ["o0000", "o0001", "o0002", "o0003", "o0004"]
    assert first.resource_version == second.resource_version == third.resource_version == "6"


def test_continue_token_expires_with_compaction_and_forbids_a_resource_version() -> None:
    s = ApiServerCore()
    _fill(s, 3)
    first = s.list(limit=1)
    with pytest.raises(BadRequest):
        s.list("4", limit=1, continue_token=first.continue_token)
    s.create(Object(name="x"))
    s.compact(s.resource_version)
    with pytest.raises(Expired):
        s.list(limit=1, continue_token=first.continue_token)
    with pytest.raises(BadRequest):
        s.list(continue_token="garbage")


def test_list_resource_version_semantics() -> None:
    s = ApiServerCore()
    _fill(s, 3)  # rvs 2, 3, 4
    s.delete("ns", "o0000")  # rv 5
    assert [o.name for o in s.list("3").items] == ["o0001", "o0002"]  # not older than 3
    assert s.list("3").resource_version == "5"
    exact = s.list("3", limit=10)  # with a limit: exactly at 3
    assert [o.name for o in exact.items] == ["o0000", "o0001"]
    assert exact.resource_version == "3"
    assert s.list("0").resource_version == "5"
    with pytest.raises(TooLargeResourceVersion):
        s.list("6")
    with pytest.raises(BadRequest):
        s.list("abc")
    s.compact(4)
    with pytest.raises(Expired):
        s.list("3", limit=10)
    assert s.list("4", limit=10).resource_version == "4"
    assert s.list("3").resource_version == "5"  # "not older than" is still served


# -- examples: watch ---------------------------------------------------------------------


def _types(w: CoreWatch) -> list[tuple[str, str, str]]:
    return [(e.type, e.object.name, e.resource_version) for e in w]


def test_watch_from_a_resource_version_sends_later_writes_in_order() -> None:
    s = ApiServerCore()
    _fill(s, 2)  # 2, 3
    w = s.watch("2")
    s.update(Object(name="o0000", namespace="ns", data=1))  # 4
    s.delete("ns", "o0001")  # 5
    assert _types(w) == [
        (ADDED, "o0001", "3"),
        (MODIFIED, "o0000", "4"),
        (DELETED, "o0001", "5"),
    ]
    with pytest.raises(WatchTimeout):
        w.next_event(0)


@pytest.mark.parametrize("rv", ["", "0"])
def test_legacy_watch_from_empty_or_zero_starts_with_synthetic_adds(rv: str) -> None:
    s = ApiServerCore()
    s.create(Object(name="b"))  # 2
    s.create(Object(name="a"))  # 3
    w = s.watch(rv)
    s.create(Object(name="c"))  # 4
    # key order, each at its own rv: not rv-ordered
    assert _types(w) == [(ADDED, "a", "3"), (ADDED, "b", "2"), (ADDED, "c", "4")]


def test_send_initial_events_ends_with_an_annotated_bookmark() -> None:
    s = ApiServerCore()
    _fill(s, 2)
    s.compact(s.resource_version)
    w = s.watch("1", send_initial_events=True)  # not older than 1: never 410
    s.create(Object(name="z"))
    events = list(w)
    assert [e.type for e in events] == [ADDED, ADDED, BOOKMARK, ADDED]
    end = events[2]
    assert end.is_initial_events_end and end.resource_version == "3"
    assert end.annotations == {INITIAL_EVENTS_END_ANNOTATION: "true"}
    assert not events[0].is_initial_events_end
    with pytest.raises(Invalid):
        s.watch("", send_initial_events=True, allow_bookmarks=False)
    no_initial = s.watch("", send_initial_events=False)
    assert list(no_initial) == []


def test_watch_lists_are_counted_apart_from_lists_and_plain_watches() -> None:
    s = ApiServerCore()
    _fill(s, 2)
    s.watch("", send_initial_events=True)
    s.watch("")
    s.watch("", send_initial_events=False)
    s.list("0")
    c = s.counters
    assert (c.lists, c.watches, c.watch_lists) == (1, 2, 1)
    assert [r.send_initial_events for r in s.request_log] == [True, None, False, None]


def test_watch_list_serving_modes() -> None:
    # watch-cache (default): the newest state is "not older than" any rv it has passed.
    cache = ApiServerCore()
    _fill(cache, 3)  # rv 4
    cache.compact(cache.resource_version)
    events = list(cache.watch("2", send_initial_events=True))
    assert [e.type for e in events] == [ADDED, ADDED, ADDED, BOOKMARK]
    assert events[-1].resource_version == "4"
    with pytest.raises(TooLargeResourceVersion):
        cache.watch("9", send_initial_events=True)
    # storage: the state *at* the rv asked for, then the writes after it; 410 if compacted.
    storage = ApiServerCore(watch_list="storage")
    _fill(storage, 3)  # writes at 2, 3, 4
    events = list(storage.watch("3", send_initial_events=True))
    assert [(e.type, e.resource_version) for e in events] == [
        (ADDED, "2"),
        (ADDED, "3"),
        (BOOKMARK, "3"),
        (ADDED, "4"),
    ]
    assert events[2].is_initial_events_end
    storage.compact(4)
    (gone,) = list(storage.watch("3", send_initial_events=True))
    assert gone.type == ERROR and isinstance(gone.error, Expired)
    newest = list(storage.watch("", send_initial_events=True))
    assert [e.type for e in newest] == [ADDED, ADDED, ADDED, BOOKMARK]
    # unsupported: refused (422), as a server without the WatchList feature does.
    old = ApiServerCore(watch_list="unsupported")
    with pytest.raises(Invalid):
        old.watch("", send_initial_events=True)
    assert old.counters.watch_lists == 1 and old.request_log[0].error == "Invalid"
    with pytest.raises(ValueError):
        ApiServerCore(watch_list="sometimes")  # type: ignore[arg-type]


def test_watch_from_a_compacted_resource_version_gets_410() -> None:
    s = ApiServerCore()
    _fill(s, 3)
    s.compact(3)
    ok = s.watch("3")
    assert [e.resource_version for e in ok] == ["4"] and ok.active
    old = s.watch("2")
    events = list(old)
    assert [e.type for e in events] == [ERROR] and isinstance(events[0].error, Expired)
    assert old.next_event(0) is None and not old.active
    raising = ApiServerCore(too_old_watch="raise")
    _fill(raising, 2)
    raising.compact(3)
    with pytest.raises(Expired):
        raising.watch("2")
    assert raising.counters.watches == 1


def test_compaction_window_keeps_the_last_n_writes() -> None:
    s = ApiServerCore(compaction_window=2)
    _fill(s, 5)  # rvs 2..6
    assert [h.rv for h in s.log] == [5, 6] and s.compacted_rv == 4
    assert list(s.watch("4")) != []
    assert [e.type for e in s.watch("3")] == [ERROR]
    with pytest.raises(ValueError):
        s.compact(99)


# -- examples: faults ---------------------------------------------------------------------


def test_close_watch_drops_undelivered_events_or_delivers_them_first() -> None:
    s = ApiServerCore(deliver_immediately=False)
    w1, w2 = s.watch("1"), s.watch("1")
    _fill(s, 3)
    assert s.release(w1.id, 1) == 1
    s.close_watch(w1.id)
    assert [e.object.name for e in w1] == ["o0000"] and w1.next_event(0) is None
    s.close_watch(w2.id, drop_pending=False)
    with pytest.raises(WatchTimeout):  # the end comes after the held events
        w2.next_event(0)
    s.release(w2.id)
    assert [e.object.name for e in w2] == ["o0000", "o0001", "o0002"]
    assert w2.next_event(0) is None


def test_fail_watch_appends_an_error_event_and_ends_the_stream() -> None:
    s = ApiServerCore()
    w = s.watch("1")
    s.create(Object(name="a"))
    assert s.fail_watch(w.id, TooManyRequests()) == 1
    events = list(w)
    assert [e.type for e in events] == [ADDED, ERROR]
    assert isinstance(events[1].error, TooManyRequests)
    s.create(Object(name="b"))  # nothing more is appended
    assert w.next_event(0) is None
    assert s.fail_watch(w.id) == 0  # already ended


def test_injected_list_and_watch_failures_fire_once_each_and_are_counted() -> None:
    s = ApiServerCore()
    s.fail_next_lists(2)
    s.fail_next_watches(1, ConnectionRefusedError("refused"))
    with pytest.raises(ListError):
        s.list()
    with pytest.raises(ListError):
        s.list()
    assert s.list().resource_version == "1"
    with pytest.raises(ConnectionRefusedError):
        s.watch("1")
    s.watch("1")
    s.fail_next_watches(1)
    with pytest.raises(TooManyRequests):
        s.watch("1")
    assert (s.counters.lists, s.counters.watches) == (3, 3)
    assert [r.error for r in s.request_log] == [
        "ListError",
        "ListError",
        None,
        "ConnectionRefusedError",
        None,
        "TooManyRequests",
    ]


def test_bookmarks_and_hold_release_keep_order() -> None:
    s = ApiServerCore()
    w = s.watch("1")
    quiet = s.watch("1", allow_bookmarks=False)
    s.hold(w.id)
    s.create(Object(name="a"))  # 2
    assert s.send_bookmarks() == 1
    s.create(Object(name="b"))  # 3
    assert list(w) == []  # held
    assert s.release(w.id, 2) == 2
    s.resume(w.id)
    assert _types(w) == [(ADDED, "a", "2"), (BOOKMARK, "", "2"), (ADDED, "b", "3")]
    assert [e.type for e in quiet] == [ADDED, ADDED]


def test_stop_discards_buffered_events() -> None:
    s = ApiServerCore()
    w = s.watch("1")
    s.create(Object(name="a"))
    w.stop()
    assert w.next_event(0) is None and s.watches() == []
    s.create(Object(name="b"))
    assert w.next_event(0) is None


# -- the thread-safe facade ----------------------------------------------------------------


@pytest.mark.timeout(10)
def test_facade_watch_blocks_until_an_event_and_stop_unblocks() -> None:
    server = ApiServer()
    w = server.watch("1")
    got: list[WatchEvent | None] = []
    reader = threading.Thread(target=lambda: got.extend(list(w)), daemon=True)
    reader.start()
    server.create(Object(name="a"))
    assert server.wait_for(lambda c: not c.watches()[0].wire, timeout=5)
    w.stop()
    reader.join(5)
    assert not reader.is_alive()
    assert [e.object.name for e in got if e is not None] == ["a"]
    assert server.counters.watches == 1 and server.counters.creates == 1


@pytest.mark.timeout(10)
def test_facade_next_event_timeout_runs_on_the_injected_clock() -> None:
    clock = FakeClock(0.0)
    server = ApiServer(clock=clock)
    w = server.watch("1")
    with pytest.raises(WatchTimeout):
        w.next_event(0)
    outcome: list[object] = []

    def read() -> None:
        try:
            outcome.append(w.next_event(30))
        except WatchTimeout as err:
            outcome.append(err)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    clock.step(29)
    reader.join(0.05)
    assert reader.is_alive(), "timed out before 30 s of fake time"
    clock.step(1)
    reader.join(5)
    assert len(outcome) == 1 and isinstance(outcome[0], WatchTimeout)


def test_facade_slow_delivery_and_fault_passthrough() -> None:
    server = ApiServer(deliver_immediately=False, compaction_window=10)
    w = server.watch("1")
    server.create(Object(name="a"))
    with pytest.raises(WatchTimeout):
        w.next_event(0)
    assert server.release() == 1
    event = w.next_event(0)
    assert event is not None and event.object.name == "a"
    server.close_watch()
    assert w.next_event(0) is None
    server.fail_next_lists(1)
    with pytest.raises(ListError):
        server.list()
    assert server.open_watch_ids() == []
    with server.locked() as core:
        assert core.rv == 2


# -- the pager ------------------------------------------------------------------------------


def _lister(server: ApiServerCore, hook: Callable[[ListOptions], None] | None = None) -> ListWatch:
    def list_func(options: ListOptions) -> ListResult:
        if hook is not None:
            hook(options)
        return server.list(options.resource_version, options.limit, options.continue_token)

    def watch_func(options: ListOptions) -> Watch:
        raise AssertionError("not used")

    return ListWatch(list_func, watch_func)


def test_pager_joins_pages_of_500_by_default() -> None:
    s = ApiServerCore()
    _fill(s, 1100)
    result, paginated = ListPager(ApiServerListerWatcher(s)).list(ListOptions(resource_version="0"))
    assert paginated and len(result.items) == 1100 and result.resource_version == "1101"
    assert [r.limit for r in s.request_log] == [500, 500, 500]
    assert [r.resource_version for r in s.request_log] == ["0", "", ""]
    small, paginated = ListPager(ApiServerListerWatcher(s), page_size=0).list(ListOptions())
    assert not paginated and len(small.items) == 1100 and s.request_log[-1].limit == 0


def test_pager_falls_back_to_a_full_list_when_a_continue_token_expires() -> None:
    s = ApiServerCore()
    _fill(s, 5)

    late = iter(range(100))

    def compact_after_first_page(options: ListOptions) -> None:
        if options.continue_token:
            s.create(Object(name=f"late{next(late)}"))
            s.compact(s.resource_version)

    pager = ListPager(_lister(s, compact_after_first_page), page_size=2)
    result, paginated = pager.list(ListOptions(resource_version=""))
    assert paginated
    assert len(result.items) == 6 and result.resource_version == "7"  # one fresh full list
    assert [(r.limit, r.error) for r in s.request_log] == [(2, None), (2, "Expired"), (0, None)]
    strict = ListPager(
        _lister(s, compact_after_first_page), page_size=2, full_list_if_expired=False
    )
    with pytest.raises(Expired):
        strict.list(ListOptions())


def test_pager_does_not_retry_a_plain_gone_or_a_first_page_failure() -> None:
    calls: list[ListOptions] = []

    def gone(options: ListOptions) -> ListResult:
        calls.append(options)
        if options.continue_token:
            raise Gone("gone")
        return ListResult((Object(name="a"),), "5", "5:a")

    with pytest.raises(Gone):
        ListPager(_lister_from(gone), page_size=1).list(ListOptions())
    assert len(calls) == 2
    s = ApiServerCore()
    s.fail_next_lists(1, Expired("first page"))
    with pytest.raises(Expired):
        ListPager(ApiServerListerWatcher(s)).list(ListOptions())
    with pytest.raises(ValueError):
        ListPager(ApiServerListerWatcher(s), page_size=-1)


def _lister_from(fn: Callable[[ListOptions], ListResult]) -> ListWatch:
    def watch_func(options: ListOptions) -> Watch:
        raise AssertionError("not used")

    return ListWatch(fn, watch_func)


def test_list_options_and_adapter_validate_input() -> None:
    with pytest.raises(ValueError):
        ListOptions(limit=-1)
    with pytest.raises(TypeError):
        ListOptions(resource_version=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ApiServerListerWatcher(object())  # type: ignore[arg-type]
    w = ApiServerListerWatcher(ApiServerCore()).watch(ListOptions(resource_version="1"))
    assert isinstance(w, CoreWatch)


# -- the state machine ------------------------------------------------------------------------

NAMES = ["a", "b", "c", "d"]
NAMESPACES = ["", "ns"]
KEYS = [f"{ns}/{n}" if ns else n for ns in NAMESPACES for n in NAMES]


def _key(obj: Object) -> str:
    return f"{obj.namespace}/{obj.name}" if obj.namespace else obj.name


def _split(key: str) -> tuple[str, str]:
    ns, _, name = key.rpartition("/")
    return ns, name


class _Tracked:
    """A watch under test and what it must deliver."""

    def __init__(
        self,
        watch: CoreWatch,
        expected_initial: list[tuple[str, int]],
        start: int,
        end_bookmark_rv: int | None,
        too_old: bool,
    ) -> None:
        self.watch = watch
        self.initial = expected_initial  # (key, rv) of synthetic ADDED events
        self.start = start
        self.end_bookmark_rv = end_bookmark_rv
        self.too_old = too_old
        self.received: list[WatchEvent] = []
        #: closed without dropping: exactly this many data events must still arrive
        self.closed_with: int | None = None


class ApiServerMachine(RuleBasedStateMachine):
    """Model: the full history of writes ``(rv, type, key, uid, data)``, the
    compaction point, and per watch the events it must deliver."""

    def __init__(self) -> None:
        super().__init__()
        self.server = ApiServerCore()
        self.history: list[tuple[int, str, str, Object]] = []
        self.compaction = 1
        self.window: int | None = None
        self.watches: list[_Tracked] = []

    @initialize(window=st.sampled_from([None, 0, 2, 5]), held=st.booleans())
    def setup(self, window: int | None, held: bool) -> None:
        self.server = ApiServerCore(compaction_window=window, deliver_immediately=not held)
        self.window = window

    # -- model helpers --
    def rv(self) -> int:
        return self.history[-1][0] if self.history else 1

    def state_at(self, rv: int) -> dict[str, Object]:
        state: dict[str, Object] = {}
        for h_rv, type_, key, obj in self.history:
            if h_rv > rv:
                break
            if type_ == DELETED:
                del state[key]
            else:
                state[key] = obj
        return state

    def record(self, type_: str, obj: Object) -> None:
        key = _key(obj)
        assert int(obj.resource_version) == self.rv() + 1, "rv must grow by one per write"
        self.history.append((int(obj.resource_version), type_, key, obj))
        if self.window is not None:
            retained = [h for h in self.history if h[0] > self.compaction]
            while len(retained) > self.window:
                self.compaction = retained.pop(0)[0]

    # -- writes --
    @rule(key=st.sampled_from(KEYS), data=st.integers(0, 2))
    def create(self, key: str, data: int) -> None:
        ns, name = _split(key)
        exists = key in self.state_at(self.rv())
        try:
            obj = self.server.create(Object(name=name, namespace=ns, data=data))
        except AlreadyExists:
            assert exists
            return
        assert not exists and obj.uid
        self.record(ADDED, obj)

    @rule(key=st.sampled_from(KEYS), data=st.integers(0, 2))
    def update(self, key: str, data: int) -> None:
        ns, name = _split(key)
        current = self.state_at(self.rv()).get(key)
        try:
            obj = self.server.update(Object(name=name, namespace=ns, data=data))
        except NotFound:
            assert current is None
            return
        assert current is not None
        if current.data == data:
            assert obj == current  # no-op: no write
        else:
            assert obj.uid == current.uid
            self.record(MODIFIED, obj)

    @rule(key=st.sampled_from(KEYS))
    def delete(self, key: str) -> None:
        ns, name = _split(key)
        current = self.state_at(self.rv()).get(key)
        try:
            obj = self.server.delete(ns, name)
        except NotFound:
            assert current is None
            return
        assert current is not None and obj.uid == current.uid and obj.data == current.data
        self.record(DELETED, obj)

    @rule(back=st.integers(0, 6))
    def compact(self, back: int) -> None:
        target = max(1, self.rv() - back)
        self.server.compact(target)
        self.compaction = max(self.compaction, target)

    # -- watches --
    @rule(back=st.integers(0, 8), mode=st.sampled_from(["rv", "", "0", "initial", "none"]))
    def open_watch(self, back: int, mode: str) -> None:
        rv = self.rv()
        start_rv = max(1, rv - back)
        if mode == "rv":
            w = self.server.watch(str(start_rv))
            too_old = start_rv < self.compaction
            self.watches.append(_Tracked(w, [], start_rv, None, too_old))
            return
        snapshot = sorted((k, int(o.resource_version)) for k, o in self.state_at(rv).items())
        if mode == "initial":
            w = self.server.watch(str(start_rv), send_initial_events=True)
            self.watches.append(_Tracked(w, snapshot, rv, rv, False))
        elif mode == "none":
            w = self.server.watch("", send_initial_events=False)
            self.watches.append(_Tracked(w, [], rv, None, False))
        else:
            w = self.server.watch(mode)
            self.watches.append(_Tracked(w, snapshot, rv, None, False))

    @precondition(lambda self: bool(self.watches))
    @rule(i=st.integers(0, 20), n=st.sampled_from([1, 2, None]))
    def release(self, i: int, n: int | None) -> None:
        t = self.watches[i % len(self.watches)]
        self.server.release(t.watch.id, n)

    @precondition(lambda self: bool(self.watches))
    @rule(i=st.integers(0, 20))
    def hold(self, i: int) -> None:
        self.server.hold(self.watches[i % len(self.watches)].watch.id)

    @precondition(lambda self: bool(self.watches))
    @rule(i=st.integers(0, 20))
    def read(self, i: int) -> None:
        t = self.watches[i % len(self.watches)]
        t.received.extend(t.watch)

    @rule()
    def read_all(self) -> None:
        for t in self.watches:
            t.received.extend(t.watch)

    @precondition(lambda self: bool(self.watches))
    @rule(
        i=st.integers(0, 20),
        fault=st.sampled_from(["stop", "close", "close-keep", "fail"]),
    )
    def end_watch(self, i: int, fault: str) -> None:
        t = self.watches[i % len(self.watches)]
        if fault == "stop":
            t.watch.stop()
            t.closed_with = None  # stopping discards whatever was still buffered
        elif fault == "close":
            self.server.close_watch(t.watch.id)
        elif fault == "close-keep":
            if t.watch.active and not t.too_old:
                t.closed_with = len(self._expected(t))
            self.server.close_watch(t.watch.id, drop_pending=False)
        else:
            self.server.fail_watch(t.watch.id, InternalError("boom"))

    @rule()
    def bookmarks(self) -> None:
        self.server.send_bookmarks()

    @rule()
    def release_everything_and_read(self) -> None:
        self.server.release()
        for t in self.watches:
            assert not t.watch.pending, f"watch {t.watch.id} kept held events"
            t.received.extend(t.watch)
            if t.closed_with is not None:
                data = [e for e in t.received if e.type not in (BOOKMARK, ERROR)]
                assert len(data) == t.closed_with, f"watch {t.watch.id} lost held events"
                assert t.watch.next_event(0) is None

    # -- lists --
    @rule(limit=st.sampled_from([0, 1, 2, 3]))
    def list_newest(self, limit: int) -> None:
        want = self.state_at(self.rv())
        assert self._pages("", limit) == [want[k] for k in sorted(want)]

    @rule(back=st.integers(0, 8), limit=st.sampled_from([1, 2, 5]))
    def list_exact(self, back: int, limit: int) -> None:
        rv = max(1, self.rv() - back)
        if rv < self.compaction:
            with pytest.raises(Expired):
                self.server.list(str(rv), limit)
            return
        want = self.state_at(rv)
        assert self._pages(str(rv), limit) == [want[k] for k in sorted(want)]

    def _pages(self, rv: str, limit: int) -> list[Object]:
        result = self.server.list(rv, limit)
        items = list(result.items)
        snapshot = result.resource_version
        while result.continue_token:
            assert limit > 0 and len(result.items) == limit
            result = self.server.list("", limit, result.continue_token)
            assert result.resource_version == snapshot
            items.extend(result.items)
        return items

    # -- invariants --
    @invariant()
    def server_state_matches_model(self) -> None:
        assert self.server.rv == self.rv()
        assert self.server.objects == self.state_at(self.rv())
        assert self.server.compacted_rv == self.compaction
        assert [h.rv for h in self.server.log] == [
            h[0] for h in self.history if h[0] > self.compaction
        ]

    @invariant()
    def watches_deliver_a_prefix_of_the_history(self) -> None:
        for t in self.watches:
            got = t.received
            if t.too_old:
                assert [e.type for e in got] in ([], [ERROR])
                assert all(isinstance(e.error, Expired) for e in got)
                continue
            expected = self._expected(t)
            data = [e for e in got if e.type not in (BOOKMARK, ERROR)]
            keyed = [(e.type, _key(e.object), int(e.resource_version)) for e in data]
            assert keyed == expected[: len(keyed)], f"watch {t.watch.id} reordered or invented"
            written = {rv: obj for rv, _, _, obj in self.history}
            for e in data:  # the delivered object is exactly the one written at that rv
                assert e.object == written[int(e.resource_version)]
            errors = [i for i, e in enumerate(got) if e.type == ERROR]
            assert errors in ([], [len(got) - 1])
            self._check_bookmarks(t)
            if t.watch.active and not t.watch.pending and not t.watch.wire:
                assert len(keyed) == len(expected), f"watch {t.watch.id} lost events"

    def _expected(self, t: _Tracked) -> list[tuple[str, str, int]]:
        expected = [(ADDED, k, rv) for k, rv in t.initial]
        return expected + [(ty, k, rv) for rv, ty, k, _ in self.history if rv > t.start]

    def _check_bookmarks(self, t: _Tracked) -> None:
        n_initial = len(t.initial)
        last = 0
        for i, e in enumerate(t.received):
            if e.type == BOOKMARK:
                if t.end_bookmark_rv is not None and i == n_initial:
                    assert e.is_initial_events_end and int(e.resource_version) == t.end_bookmark_rv
                else:
                    assert not e.is_initial_events_end
                assert int(e.resource_version) >= last
                last = int(e.resource_version)
            elif e.type != ERROR and i >= n_initial:
                assert int(e.resource_version) > last
                last = int(e.resource_version)


ApiServerMachine.TestCase.settings = LONG_MACHINE
TestApiServerMachine = ApiServerMachine.TestCase
