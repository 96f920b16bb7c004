"""The threaded SharedIndexInformer over the threaded API server.

Real threads (reflector, process loop, one per listener, workers), real time with
small bounds. Deterministic properties (exact interleavings) are checked by the
simulator's tests; here we check what must hold under *any* interleaving: convergence,
no lost delete, store-before-notify, per-key order, registration sync, and that bad
input is reported without stopping the informer.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from refimpl.apierrors import AlreadyExists, NotFound
from refimpl.apiserver import ApiServer, ApiServerListerWatcher
from refimpl.cache.handlers import ResourceEventHandlerFuncs
from refimpl.cache.processor import DeleteNotification
from refimpl.cache.shared_informer import (
    FifoMode,
    InformerStoppedError,
    ListMode,
    SharedIndexInformer,
    wait_for_cache_sync,
)
from refimpl.meta import DeletedFinalStateUnknown, Object, object_key, rv_int
from refimpl.worker import start_workers
from refimpl.workqueue import RateLimitingQueue

if TYPE_CHECKING:
    from conftest import Eventually

MODES = list(FifoMode)
#: Real-time bound on waiting for the informer's threads.
WAIT = 10.0


def name_of(obj: object) -> str:
    assert isinstance(obj, Object)
    return obj.name


def check_store_before_notify(informer: SharedIndexInformer) -> list[str]:
    """Wrap the informer's distribution step: when a notification is handed to the
    listeners, the store must already hold exactly that version (or lack a deleted key).
    Handlers run later, when the store may be further ahead, so that is the moment to
    look. Returns the list violations are appended to."""
    violations: list[str] = []
    distribute = informer.processor.distribute

    def checked(notification: Any, sync: bool) -> None:
        if isinstance(notification, DeleteNotification):
            key = object_key(notification.old_obj)
            if informer.indexer.get_by_key(key)[1]:
                violations.append(f"delete {key} distributed while still stored")
        else:
            obj = notification.new_obj
            stored, exists = informer.indexer.get_by_key(object_key(obj))
            if not exists or (stored is not obj and stored != obj):
                violations.append(f"{object_key(obj)}@{obj.resource_version} before store")
        distribute(notification, sync)

    informer.processor.distribute = checked  # type: ignore[method-assign]
    return violations


class Recorder:
    """A handler that checks per-key resourceVersion order and tracks what it believes
    exists."""

    def __init__(self, informer: SharedIndexInformer) -> None:
        self.informer = informer
        self.lock = threading.Lock()
        self.events: list[tuple[str, str, str]] = []
        self.violations: list[str] = []
        self.last_rv: dict[str, int] = {}
        self.alive: set[str] = set()

    def _check_order(self, key: str, rv: str) -> None:
        n = rv_int(rv)
        if n < self.last_rv.get(key, 0):
            self.violations.append(f"{key}: rv {n} after {self.last_rv[key]}")
        self.last_rv[key] = max(n, self.last_rv.get(key, 0))

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._seen("add", obj)

    def on_update(self, old: Any, new: Any) -> None:
        self._seen("update", new)

    def _seen(self, kind: str, obj: Object) -> None:
        key = object_key(obj)
        with self.lock:
            self._check_order(key, obj.resource_version)
            self.events.append((kind, key, obj.resource_version))
            self.alive.add(key)

    def on_delete(self, obj: Any) -> None:
        key = object_key(obj)
        with self.lock:
            self.events.append(("delete", key, ""))
            self.alive.discard(key)
            if isinstance(obj, DeletedFinalStateUnknown) and isinstance(
                obj.obj, DeletedFinalStateUnknown
            ):
                self.violations.append(f"nested tombstone for {key}")


@pytest.fixture
def server() -> ApiServer:
    return ApiServer()


@pytest.fixture
def stop() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def server_state(server: ApiServer) -> dict[str, tuple[str, str]]:
    return {object_key(o): (o.uid, o.resource_version) for o in server.list("").items}


def store_state(informer: SharedIndexInformer) -> dict[str, tuple[str, str]]:
    return {
        object_key(o): (o.uid, o.resource_version)
        for o in informer.indexer.list()
        if isinstance(o, Object)
    }


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("list_mode", "expected"),
    [(None, (0, 1, 0)), (ListMode.WATCH_LIST, (0, 1, 0)), (ListMode.LIST_WATCH, (1, 0, 1))],
    ids=["default", "watch-list", "list-watch"],
)
def test_quiet_cluster_costs_one_stream_or_one_list_and_one_watch(
    mode: FifoMode,
    list_mode: ListMode | None,
    expected: tuple[int, int, int],
    server: ApiServer,
    stop: threading.Event,
) -> None:
    for i in range(5):
        server.create(Object(f"o{i}", "ns"))
    before = server.counters.copy()
    lw = ApiServerListerWatcher(server)
    informer = (
        SharedIndexInformer(lw, fifo_mode=mode, seed=1)
        if list_mode is None
        else SharedIndexInformer(lw, fifo_mode=mode, seed=1, list_mode=list_mode)
    )
    informer.start(stop)
    assert wait_for_cache_sync(stop, informer.has_synced)
    assert server.wait_for(lambda core: len(core.watches()) == 1, timeout=10.0)
    lister = informer.lister()
    for _ in range(200):
        assert lister.get("ns", "o3") is not None
    assert len(lister.list()) == 5
    after = server.counters
    assert (
        after.lists - before.lists,
        after.watch_lists - before.watch_lists,
        after.watches - before.watches,
    ) == expected
    assert after.gets == before.gets


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed", [11, 12])
def test_threaded_informer_converges_and_loses_no_delete(
    mode: FifoMode, seed: int, server: ApiServer, stop: threading.Event, eventually: Eventually
) -> None:
    rng = random.Random(seed)
    names = [f"o{i}" for i in range(12)]
    for name in names[:6]:
        server.create(Object(name, "ns"))
    informer = SharedIndexInformer(
        ApiServerListerWatcher(server), fifo_mode=mode, seed=seed, resync_period=0.05
    )
    store_violations = check_store_before_notify(informer)
    early = Recorder(informer)
    informer.add_event_handler(early)
    informer.start(stop)
    late: Recorder | None = None
    for step in range(400):
        name = rng.choice(names)
        try:
            roll = rng.random()
            if roll < 0.4:
                server.create(Object(name, "ns"))
            elif roll < 0.7:
                current = server.get("ns", name)
                server.update(current.evolve(data=step))
            elif roll < 0.9:
                server.delete("ns", name)
            elif roll < 0.95:
                server.close_watch()  # the watch drops: re-watch from the last RV
            else:
                server.compact(server.resource_version)  # old RVs now answer 410
                server.close_watch()
        except (NotFound, AlreadyExists):
            pass  # the random write did not apply to the current state: fine
        if step == 150:
            late = Recorder(informer)
            informer.add_event_handler(late)
        if step % 50 == 0:
            time.sleep(0.01)  # let the informer threads run now and then
    want = server_state(server)
    eventually(
        lambda: store_state(informer) == want,
        lambda: f"seed {seed}: store {store_state(informer)} != server {want}",
        WAIT,
    )
    recorders = [early, *([late] if late else [])]
    for rec in recorders:
        eventually(
            lambda r=rec: r.alive == set(want),  # type: ignore[misc]
            lambda r=rec: (  # type: ignore[misc]
                f"seed {seed}: handler believes {sorted(r.alive)}, server has {sorted(want)}"
            ),
            WAIT,
        )
        assert rec.violations == [], f"seed {seed}: {rec.violations[:5]}"
    assert store_violations == [], f"seed {seed}: {store_violations[:5]}"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", MODES)
def test_registration_has_synced_waits_for_the_handler(
    mode: FifoMode, server: ApiServer, stop: threading.Event
) -> None:
    for i in range(20):
        server.create(Object(f"o{i}", "ns"))
    gate = threading.Event()
    calls: list[str] = []

    def slow_add(obj: Any) -> None:
        gate.wait(10)
        calls.append(obj.name)

    informer = SharedIndexInformer(ApiServerListerWatcher(server), fifo_mode=mode)
    registration = informer.add_event_handler(ResourceEventHandlerFuncs(add_func=slow_add))
    informer.start(stop)
    assert wait_for_cache_sync(stop, informer.has_synced)
    assert len(informer.indexer.list_keys()) == 20  # informer synced: the store is full
    assert not registration.has_synced()  # ...but the handler has not run yet
    gate.set()
    assert wait_for_cache_sync(stop, registration.has_synced)
    assert sorted(calls) == sorted(f"o{i}" for i in range(20))


@pytest.mark.timeout(60)
def test_late_handler_gets_the_cache_as_initial_adds(
    server: ApiServer, stop: threading.Event, eventually: Eventually
) -> None:
    for i in range(3):
        server.create(Object(f"o{i}", "ns"))
    informer = SharedIndexInformer(ApiServerListerWatcher(server))
    informer.start(stop)
    assert wait_for_cache_sync(stop, informer.has_synced)
    adds: list[tuple[str, bool]] = []
    registration = informer.add_event_handler(
        ResourceEventHandlerFuncs(add_func=lambda o: adds.append((name_of(o), True)))
    )
    eventually(registration.has_synced, "the late handler to sync", WAIT)
    assert sorted(adds) == [("o0", True), ("o1", True), ("o2", True)]


@pytest.mark.timeout(60)
def test_a_raising_handler_is_logged_and_loses_nothing(
    server: ApiServer,
    stop: threading.Event,
    caplog: pytest.LogCaptureFixture,
    eventually: Eventually,
) -> None:
    informer = SharedIndexInformer(ApiServerListerWatcher(server))
    good: list[str] = []
    flaky_calls: list[str] = []

    def flaky(obj: Any) -> None:
        flaky_calls.append(obj.name)
        if obj.name == "boom":
            raise RuntimeError("handler bug")

    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=flaky))
    informer.add_event_handler(
        ResourceEventHandlerFuncs(add_func=lambda o: good.append(name_of(o)))
    )
    informer.start(stop)
    assert wait_for_cache_sync(stop, informer.has_synced)
    for name in ["a", "boom", "c"]:
        server.create(Object(name, "ns"))
    eventually(
        lambda: good == ["a", "boom", "c"] and flaky_calls == ["a", "boom", "c"],
        lambda: f"both handlers to see a, boom, c: {good}, {flaky_calls}",
        WAIT,
    )
    assert "handler bug" in caplog.text or "raised" in caplog.text


@pytest.mark.timeout(60)
def test_a_raising_transform_is_reported_and_the_informer_keeps_running(
    server: ApiServer, stop: threading.Event, eventually: Eventually
) -> None:
    def transform(obj: object) -> object:
        if isinstance(obj, Object) and obj.name == "poison":
            raise ValueError("cannot transform poison")
        return obj

    server.create(Object("fine", "ns"))
    informer = SharedIndexInformer(
        ApiServerListerWatcher(server), transform=transform, fifo_mode=FifoMode.REAL
    )
    informer.start(stop)
    assert wait_for_cache_sync(stop, informer.has_synced)
    server.create(Object("poison", "ns"))
    server.create(Object("after", "ns"))
    eventually(
        lambda: set(informer.indexer.list_keys()) == {"ns/fine", "ns/after"},
        lambda: f"the indexer to hold ns/fine and ns/after: {informer.indexer.list_keys()}",
        WAIT,
    )


def test_handlers_and_transform_after_stop_are_refused(
    server: ApiServer, eventually: Eventually
) -> None:
    informer = SharedIndexInformer(ApiServerListerWatcher(server))
    stop = threading.Event()
    thread = informer.start(stop)
    eventually(informer.has_started, "the informer to start", WAIT)
    with pytest.raises(RuntimeError, match="already started"):
        informer.set_transform(lambda o: o)
    stop.set()
    thread.join(10)
    assert informer.is_stopped()
    with pytest.raises(InformerStoppedError):
        informer.add_event_handler(ResourceEventHandlerFuncs())


def test_bad_arguments_are_clear_errors(server: ApiServer) -> None:
    with pytest.raises(ValueError, match="resync_period"):
        SharedIndexInformer(ApiServerListerWatcher(server), resync_period=-1)
    with pytest.raises(ValueError):
        SharedIndexInformer(ApiServerListerWatcher(server), fifo_mode="fifo-of-my-dreams")
    informer = SharedIndexInformer(ApiServerListerWatcher(server))
    with pytest.raises(TypeError, match="registration"):
        informer.remove_event_handler("not a registration")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unexpected key format"):
        informer.lister().get_by_key("a/b/c")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", MODES)
def test_informer_and_workers_converge_on_a_controller(
    mode: FifoMode, server: ApiServer, stop: threading.Event, eventually: Eventually
) -> None:
    """The whole pipeline: informer -> handler queues keys -> 4 workers reconcile.

    The reconcile copies each object's ``data`` into a status map; at the end the
    status equals the server's data for every live object, and deleted ones are gone.
    """
    informer = SharedIndexInformer(ApiServerListerWatcher(server), fifo_mode=mode, seed=3)
    queue: RateLimitingQueue[str] = RateLimitingQueue()
    status: dict[str, Any] = {}
    holders: dict[str, int] = {}
    overlap: list[str] = []
    guard = threading.Lock()

    def enqueue(obj: Any) -> None:
        queue.add(object_key(obj))

    informer.add_event_handler(
        ResourceEventHandlerFuncs(
            add_func=enqueue, update_func=lambda old, new: enqueue(new), delete_func=enqueue
        )
    )

    def reconcile(key: str) -> None:
        with guard:
            holders[key] = holders.get(key, 0) + 1
            if holders[key] > 1:
                overlap.append(key)
        try:
            obj = informer.lister().get_by_key(key)
            with guard:
                if obj is None:
                    status.pop(key, None)
                else:
                    status[key] = obj.data
        finally:
            with guard:
                holders[key] -= 1

    informer.start(stop)
    workers = start_workers(queue, reconcile, 4)
    assert wait_for_cache_sync(stop, informer.has_synced)
    rng = random.Random(7)
    for step in range(300):
        name = f"o{rng.randrange(10)}"
        try:
            if rng.random() < 0.5:
                server.create(Object(name, "ns", data=step))
            elif rng.random() < 0.7:
                server.update(server.get("ns", name).evolve(data=step))
            else:
                server.delete("ns", name)
        except (NotFound, AlreadyExists):
            pass  # the random write did not apply to the current state: fine
    want = {object_key(o): o.data for o in server.list("").items}
    eventually(lambda: status == want, lambda: f"status {status} != server {want}", WAIT)
    queue.shut_down()
    for worker in workers:
        worker.join(10)
    assert overlap == []
