"""Chapter 03 -- the cache you read from: listers, resync, stale reads, the empty cache.

Experiments on the informer stack against refimpl's in-memory API server
(docs/03-the-cache-you-read-from.md). ``informer-cost`` runs the threaded
:class:`~refimpl.cache.shared_informer.SharedIndexInformer` itself; the others step the
same parts by hand (:mod:`refimpl.tour.stack`) on a fake clock, so every interleaving
and every number is exact and repeatable.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

import attrs

from refimpl.apierrors import NotFound
from refimpl.apiserver import (
    ApiServer,
    ApiServerCore,
    ApiServerListerWatcher,
    CoreWatch,
    RequestCounters,
    WatchListSupport,
)
from refimpl.cache.handlers import ResourceEventHandlerFuncs
from refimpl.cache.reflector_backoff import DEFAULT_BACKOFF, DelayWithReset
from refimpl.cache.shared_informer import ListMode, SharedIndexInformer, wait_for_cache_sync
from refimpl.clock import FakeClock
from refimpl.eras import era_of
from refimpl.meta import (
    DeletedFinalStateUnknown,
    ListOptions,
    ListResult,
    Object,
    meta_namespace_key_func,
)
from refimpl.sim.informer import SimInformer
from refimpl.tour import Claim, equal, experiment, holds
from refimpl.tour.stack import ServerListerWatcher, SteppedInformer, run_until
from refimpl.worker import process_next_work_item
from refimpl.workqueue.virtual import VirtualRateLimitingQueue

CHAPTER = "03"
TITLE = "The cache you read from: listers, resync, stale reads"

APP = {"kind": "app"}


def _pod_labels(app: str) -> dict[str, str]:
    return {"kind": "pod", "app": app}


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}es" if word.endswith("h") else f"{n} {word}s"


def requests_text(counters: RequestCounters) -> str:
    """Lists, watch-lists (watches with sendInitialEvents) and plain watches."""
    return ", ".join(
        (
            _count(counters.lists, "list"),
            _count(counters.watch_lists, "watch-list"),
            _count(counters.watches, "watch"),
        )
    )


def _diff(after: RequestCounters, before: RequestCounters) -> RequestCounters:
    return RequestCounters(
        lists=after.lists - before.lists,
        watches=after.watches - before.watches,
        watch_lists=after.watch_lists - before.watch_lists,
    )


def _sync_threaded(
    objects: int, reads: int, list_mode: ListMode
) -> tuple[bool, RequestCounters, int, int, int]:
    """(synced, requests at sync, lister requests, lister hits, direct requests)."""
    clock = FakeClock()  # nothing here waits for time; a fake clock keeps it so
    server = ApiServer(clock=clock)
    for i in range(objects):
        server.create(Object(f"pod-{i}", namespace="default"))
    informer = SharedIndexInformer(
        ApiServerListerWatcher(server), clock=clock, seed=3, list_mode=list_mode
    )
    stop = threading.Event()
    thread = informer.start(stop)
    try:
        synced = wait_for_cache_sync(stop, informer.has_synced, poll=0.001)
        synced = synced and server.wait_for(lambda core: len(core.watches()) == 1, timeout=10.0)
        at_sync = server.counters.copy()
        lister = informer.lister()
        found = sum(
            1 for i in range(reads) if lister.get("default", f"pod-{i % objects}") is not None
        )
        after_lister = server.counters.copy()
        for i in range(reads):
            server.get("default", f"pod-{i % objects}")
        after_direct = server.counters.copy()
    finally:
        stop.set()
        thread.join(timeout=10.0)
    return (
        synced,
        at_sync,
        after_lister.gets - at_sync.gets + after_lister.lists - at_sync.lists,
        found,
        after_direct.gets - after_lister.gets,
    )


@experiment(CHAPTER, "informer-cost", "What an informer costs the API server (threads)")
def informer_cost(objects: int = 20, reads: int = 2000) -> list[Claim]:
    synced, at_sync, lister_requests, found, direct = _sync_threaded(
        objects, reads, ListMode.WATCH_LIST
    )
    old_synced, old_at_sync, _, _, _ = _sync_threaded(objects, 0, ListMode.LIST_WATCH)
    return [
        holds(
            "03.sync-requests",
            f"requests to start an informer over {objects} objects and sync (watch-list)",
            requests_text(at_sync),
            "0 lists, 1 watch-list, 0 watches",
            synced and requests_text(at_sync) == "0 lists, 1 watch-list, 0 watches",
        ),
        holds(
            "03.sync-requests-list-watch",
            "the same with ListMode.LIST_WATCH (client-go before v1.35)",
            requests_text(old_at_sync),
            "1 list, 0 watch-lists, 1 watch",
            old_synced and requests_text(old_at_sync) == "1 list, 0 watch-lists, 1 watch",
        ),
        equal(
            "03.lister-requests",
            f"requests made by {reads} reads through the lister",
            lister_requests,
            0,
        ),
        equal("03.lister-found", f"of {reads} lister reads, answered", found, reads),
        equal("03.direct-requests", f"requests made by {reads} direct reads", direct, reads),
    ]


def _quiet_hour(seed: int, list_mode: ListMode) -> RequestCounters:
    clock = FakeClock()
    server = ApiServerCore()
    for i in range(20):
        server.create(Object(f"pod-{i}", namespace="default"))
    informer = SteppedInformer(ServerListerWatcher(server, clock), seed=seed, list_mode=list_mode)
    run_until(3600.0, informer)
    return server.counters.copy()


@experiment(CHAPTER, "quiet-hour", "A quiet hour: what keeps an informer up to date")
def quiet_hour(seed: int = 3) -> list[Claim]:
    now = _quiet_hour(seed, ListMode.WATCH_LIST)
    old = _quiet_hour(seed, ListMode.LIST_WATCH)
    streams = now.watch_lists + now.watches
    return [
        equal("03.hour-lists", "lists in an hour with no changes (watch-list)", now.lists, 0),
        equal("03.hour-watch-lists", "watch-lists in that hour", now.watch_lists, 1),
        holds(
            "03.hour-watches",
            "plain watch requests in that hour (each watch ends after 5-10 min)",
            str(now.watches),
            "6 to 12",
            6 <= now.watches <= 12,
        ),
        holds(
            "03.hour-streams",
            "watch requests of either kind in that hour",
            str(streams),
            "7 to 13",
            7 <= streams <= 13,
        ),
        equal(
            "03.hour-list-watch",
            "the same hour with ListMode.LIST_WATCH (same seed)",
            requests_text(old),
            f"1 list, 0 watch-lists, {_count(streams, 'watch')}",
        ),
    ]


def _relist(list_mode: ListMode, support: WatchListSupport, objects: int = 20) -> tuple[str, int]:
    """Requests one relist (after a watch 410) costs, and objects in the cache after it."""
    clock = FakeClock()
    server = ApiServerCore(watch_list=support)
    for i in range(objects):
        server.create(Object(f"pod-{i}", namespace="default"))
    informer = SteppedInformer(ServerListerWatcher(server, clock), list_mode=list_mode)
    informer.pump()
    server.create(Object("late", namespace="default"))
    informer.pump()
    before = server.counters.copy()
    server.fail_watch()  # 410: the watch cannot resume; the next pass relists
    run_until(clock.now() + 60.0, informer)  # past the pass's backoff
    return requests_text(_diff(server.counters, before)), len(informer.lister().list())


@experiment(CHAPTER, "relist-cost", "What one relist costs in each mode")
def relist_cost() -> list[Claim]:
    now, cached_now = _relist(ListMode.WATCH_LIST, "watch-cache")
    old, cached_old = _relist(ListMode.LIST_WATCH, "watch-cache")
    fallback, cached_fallback = _relist(ListMode.WATCH_LIST, "unsupported")
    return [
        equal(
            "03.relist-watch-list",
            "requests a relist makes (watch-list; the stream goes on as the watch)",
            now,
            "0 lists, 1 watch-list, 0 watches",
        ),
        equal(
            "03.relist-list-watch",
            "requests a relist makes (ListMode.LIST_WATCH)",
            old,
            "1 list, 0 watch-lists, 1 watch",
        ),
        equal(
            "03.relist-fallback",
            "requests a relist makes (watch-list, server without it)",
            fallback,
            "1 list, 1 watch-list, 1 watch",
        ),
        equal(
            "03.relist-cached",
            "objects cached after the relist, in the three cases",
            f"{cached_now}, {cached_old}, {cached_fallback}",
            "21, 21, 21",
        ),
    ]


@experiment(CHAPTER, "watch-list-fallback", "A server without watch-list: the fallback")
def watch_list_fallback() -> list[Claim]:
    clock = FakeClock()
    server = ApiServerCore(watch_list="unsupported")
    for i in range(3):
        server.create(Object(f"pod-{i}", namespace="default"))
    informer = SteppedInformer(ServerListerWatcher(server, clock))
    informer.pump()
    asked = [
        ("watch-list" if r.send_initial_events else r.verb)
        + f" at {r.resource_version or chr(34) * 2}"
        + (f" ({r.error})" if r.error else "")
        for r in server.request_log
    ]
    return [
        equal(
            "03.fallback-requests",
            "what an informer asks a server without watch-list, in order",
            "; ".join(asked),
            'watch-list at "" (Invalid); list at 0; watch at 4',
        ),
        equal("03.fallback-synced", "it syncs all the same", informer.has_synced(), True),
        equal(
            "03.fallback-time",
            "virtual time the fallback waited before listing",
            clock.now(),
            0.0,
            "s",
        ),
    ]


@experiment(CHAPTER, "backoff-reset", "The relist backoff restarts every two minutes")
def backoff_reset(passes: int = 10) -> list[Claim]:
    """The reflector's delays between passes that all fail at once (jitter left out).

    client-go v1.36's ``Backoff.DelayWithReset`` (``backoffManager.Step``) restarts
    from the initial delay when more than the reset interval has passed since the last
    *reset*; up to v1.35 ``NewExponentialBackoffManager`` measured from the last
    backoff, so a reflector that kept failing stayed at the 30 s cap.
    """
    clock = FakeClock()
    delay = DelayWithReset(attrs.evolve(DEFAULT_BACKOFF, jitter=0.0), clock=clock)
    waited: list[float] = []
    for _ in range(passes):
        waited.append(delay())
        clock.step(waited[-1])  # the pass after the wait fails at once
    restart = next(i for i, d in enumerate(waited) if i and d < waited[i - 1])
    return [
        equal(
            "03.backoff-delays",
            "delays between passes that all fail at once (no jitter)",
            ", ".join(f"{d:g}" for d in waited),
            "0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30, 30, 30, 0.8",
            "s",
        ),
        equal(
            "03.backoff-restart",
            "when the backoff restarted: seconds since the reflector started",
            f"{sum(waited[:restart]):g}",
            "140.4",
            "s",
        ),
    ]


#: How the tour writes a request for resourceVersion "" (the newest state, a quorum read).
EMPTY_RV = '""'


class _RecordingLW:
    """A lister-watcher that writes down each request it passes on."""

    def __init__(self, server: ApiServerCore) -> None:
        self.inner = ApiServerListerWatcher(server)
        self.requests: list[str] = []

    def list(self, options: ListOptions) -> ListResult:
        self.requests.append(f"list at {options.resource_version or EMPTY_RV}")
        return self.inner.list(options)

    def watch(self, options: ListOptions) -> CoreWatch:
        self.requests.append(f"watch at {options.resource_version or EMPTY_RV}")
        watch = self.inner.watch(options)
        assert isinstance(watch, CoreWatch)
        return watch


def _third_request(release: str, fault: Callable[[ApiServerCore], object], early: bool) -> str:
    """The request a synced informer of client-go ``release`` makes after its list and
    its first watch request, with ``fault`` injected before it starts (``early``) or
    once it watches; list + watch mode, 2 s steps (longer than a first backoff)."""
    server = ApiServerCore()
    server.create(Object("a", "default"))
    lw = _RecordingLW(server)
    clock = FakeClock()
    informer = SimInformer(lw, clock=clock, fifo_mode="delta", era=era_of(release))
    if early:
        fault(server)
    informer.start()
    for step in range(3):
        while informer.step_reflector():
            pass
        if step == 0 and not early:
            fault(server)
        clock.step(2.0)
    return f"{release}: {lw.requests[2]}"


@experiment(CHAPTER, "releases", "What did 1.17 do here? One watch failure, three releases")
def releases() -> list[Claim]:
    """The same failure under several client-go release lines (refimpl/eras.py): the
    reference follows the newest unless told otherwise (``refimpl conform --release``)."""
    gone = [_third_request(r, ApiServerCore.fail_watch, False) for r in ("1.17", "1.18", "1.37")]
    busy = [_third_request(r, ApiServerCore.fail_next_watches, True) for r in ("1.21", "1.22")]
    return [
        equal(
            "03.release-410",
            "after a 410 on its watch, the informer's next request, by release",
            "; ".join(gone),
            '1.17: list at ""; 1.18: list at 2; 1.37: list at 2',
        ),
        equal(
            "03.release-429",
            "after a 429 answered its watch request, the next request, by release",
            "; ".join(busy),
            "1.21: list at 2; 1.22: watch at 2",
        ),
    ]


@experiment(CHAPTER, "resync", "Resync re-announces the cache; only the server repairs it")
def resync() -> list[Claim]:
    clock = FakeClock()
    server = ApiServerCore()
    server.create(Object("web", namespace="default", data=3))
    lw = ServerListerWatcher(server, clock)
    informer = SteppedInformer(lw, resync_period=30.0)
    announced: list[object] = []
    informer.add_event_handler(
        ResourceEventHandlerFuncs(update_func=lambda old, new: announced.append(new))
    )
    informer.pump()
    (watch,) = server.watches()
    server.hold(watch.id)  # the connection stalls: new events wait on the server side
    server.update(server.get("default", "web").evolve(data=5))
    before = server.counters.copy()
    clock.set_time(30.0)  # the resync period passes
    informer.pump()
    resync_requests = (
        (server.counters.lists - before.lists)
        + (server.counters.watches - before.watches)
        + (server.counters.watch_lists - before.watch_lists)
    )
    by_resync = [o.data for o in announced if isinstance(o, Object)]
    # The connection drops (the held event is lost with it) and the server has since
    # compacted its history: the reflector cannot resume the watch and lists again.
    server.close_watch(drop_pending=True)
    server.compact(server.rv)
    first = [
        equal(
            "03.resync-announces",
            "value a resync announces while the server holds 5",
            ",".join(str(v) for v in by_resync),
            "3",
        ),
        equal("03.resync-requests", "requests the resync made", resync_requests, 0),
    ]
    try:
        run_until(clock.now() + 60.0, informer)  # it may back off before it relists
    except RuntimeError as err:  # a reflector that never settles: report, do not crash
        stuck = f"stuck ({server.counters.watches} watches): {err}"
        expected = "0 lists, 2 watch-lists"
        return [
            *first,
            holds("03.relist-lists", "requests that got the state", stuck, expected, False),
            holds("03.relist-repairs", "value in the cache after the relist", stuck, "5", False),
        ]
    cached = informer.lister().get("default", "web")
    got_state = ", ".join(
        (_count(server.counters.lists, "list"), _count(server.counters.watch_lists, "watch-list"))
    )
    return [
        *first,
        equal(
            "03.relist-lists",
            "requests that got the whole state, first sync and relist",
            got_state,
            "0 lists, 2 watch-lists",
        ),
        equal(
            "03.relist-repairs",
            "value in the cache after the relist",
            None if cached is None else cached.data,
            5,
        ),
    ]


class _Replicas:
    """A tiny ReplicaSet: keep ``app.data`` pods labelled ``app=<name>``."""

    def __init__(self, server: ApiServerCore, apps: SteppedInformer, pods: SteppedInformer) -> None:
        self.server = server
        self.apps = apps
        self.pods = pods
        self.queue: VirtualRateLimitingQueue[str] = VirtualRateLimitingQueue(apps.clock)
        self.names = itertools.count(1)
        self.created = 0
        self.deleted = 0
        apps.add_event_handler(
            ResourceEventHandlerFuncs(
                add_func=self._enqueue,
                update_func=lambda old, new: self._enqueue(new),
                delete_func=self._enqueue,
            )
        )
        owner: Callable[[object], None] = self._enqueue_owner
        pods.add_event_handler(
            ResourceEventHandlerFuncs(
                add_func=owner, update_func=lambda old, new: owner(new), delete_func=owner
            )
        )

    def _enqueue(self, obj: object) -> None:
        self.queue.add(
            obj.key if isinstance(obj, DeletedFinalStateUnknown) else meta_namespace_key_func(obj)
        )

    def _enqueue_owner(self, obj: object) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        if isinstance(obj, Object) and "app" in obj.labels:
            self.queue.add(f"{obj.namespace}/{obj.labels['app']}")

    def reconcile(self, key: str) -> None:
        namespace, name = key.split("/", 1)
        app = self.apps.lister().get(namespace, name)
        want = app.data if app is not None else 0
        pods = [
            p
            for p in self.pods.lister().list({"app": name})
            if p.namespace == namespace  # the cache is the only thing read
        ]
        for _ in range(want - len(pods)):
            self.server.create(
                Object(f"{name}-{next(self.names)}", namespace=namespace, labels=_pod_labels(name))
            )
            self.created += 1
        for pod in sorted(pods, key=lambda p: p.name)[: max(0, len(pods) - want)]:
            try:
                self.server.delete(pod.namespace, pod.name)
                self.deleted += 1
            except NotFound:
                pass  # someone else was faster: the state we wanted anyway

    def work(self) -> int:
        """Process every queued key once (one worker); returns how many."""
        n = 0
        while len(self.queue):
            process_next_work_item(self.queue, self.reconcile)
            n += 1
        return n


@experiment(CHAPTER, "read-after-write", "Reading your own write through the cache")
def read_after_write() -> list[Claim]:
    clock = FakeClock()
    server = ApiServerCore()
    server.create(Object("web", namespace="default", labels=APP, data=3))
    apps = SteppedInformer(ServerListerWatcher(server, clock, APP), name="apps")
    informer_reads = apps.lister()
    apps.pump()
    server.update(server.get("default", "web").evolve(data=5))
    right_after = informer_reads.get("default", "web")
    apps.pump()
    later = informer_reads.get("default", "web")

    # The consequence: a controller that reconciles twice before its cache has seen
    # its own creates creates twice -- and the level-triggered loop then undoes it.
    server2 = ApiServerCore()
    server2.create(Object("web", namespace="default", labels=APP, data=3))
    apps2 = SteppedInformer(ServerListerWatcher(server2, clock, APP), name="apps")
    pods2 = SteppedInformer(ServerListerWatcher(server2, clock, {"kind": "pod"}), name="pods")
    controller = _Replicas(server2, apps2, pods2)
    apps2.pump()
    pods2.pump()
    controller.work()  # creates 3 pods; the pods cache has not seen them yet
    controller.queue.add("default/web")  # another change to the app arrives meanwhile
    controller.work()  # reads 0 pods from the cache: creates 3 more
    on_server_then = sum(1 for k in server2.objects if k.startswith("default/web-"))
    for _ in range(10):  # let the caches catch up and the controller settle
        apps2.pump()
        pods2.pump()
        if not controller.work():
            break
    on_server_finally = sum(1 for k in server2.objects if k.startswith("default/web-"))
    return [
        equal(
            "03.read-own-write",
            "cache read right after writing 3 -> 5",
            None if right_after is None else right_after.data,
            3,
        ),
        equal(
            "03.read-later",
            "cache read once the watch event arrived",
            None if later is None else later.data,
            5,
        ),
        equal(
            "03.stale-creates", "pods on the server after two quick reconciles", on_server_then, 6
        ),
        equal("03.stale-converges", "pods once the caches caught up", on_server_finally, 3),
        equal(
            "03.stale-wasted",
            "pods created and deleted again",
            f"{controller.created - 3} created, {controller.deleted} deleted",
            "3 created, 3 deleted",
        ),
    ]


@experiment(CHAPTER, "empty-cache", "After a restart the cache is empty, not stale")
def empty_cache(pods: int = 10) -> list[Claim]:
    def restart(wait_for_sync: bool) -> tuple[int, int, int]:
        clock = FakeClock()
        server = ApiServerCore()
        server.create(Object("web", namespace="default", labels=APP, data=pods))
        for i in range(pods):
            server.create(Object(f"web-{i}", namespace="default", labels=_pod_labels("web")))
        # The controller process has just restarted: both caches start empty.
        apps = SteppedInformer(ServerListerWatcher(server, clock, APP), name="apps")
        pod_informer = SteppedInformer(
            ServerListerWatcher(server, clock, {"kind": "pod"}), name="pods"
        )
        queue: VirtualRateLimitingQueue[str] = VirtualRateLimitingQueue(clock)
        pod_informer.add_event_handler(
            ResourceEventHandlerFuncs(add_func=lambda o: queue.add(meta_namespace_key_func(o)))
        )
        apps_cached_at_start = len(apps.lister().list())

        def collect_orphan(key: str) -> None:
            # A garbage collector: a pod whose app does not exist is deleted.
            pod = pod_informer.lister().get_by_key(key)
            if pod is None:
                return
            if apps.lister().get(pod.namespace, pod.labels["app"]) is None:
                server.delete(pod.namespace, pod.name)

        pod_informer.pump()  # the pods list arrives first; the apps list is slower
        if wait_for_sync:
            while not (apps.has_synced() and pod_informer.has_synced()):
                apps.pump()
        while len(queue):
            process_next_work_item(queue, collect_orphan)
        apps.pump()
        pod_informer.pump()
        survivors = sum(1 for k in server.objects if k.startswith("default/web-"))
        return apps_cached_at_start, pods - survivors, survivors

    empty_at_start, deleted_no_wait, _ = restart(wait_for_sync=False)
    _, deleted_waiting, survivors_waiting = restart(wait_for_sync=True)
    return [
        equal("03.restart-empty", "apps in the cache right after a restart", empty_at_start, 0),
        equal(
            "03.no-wait-deletes",
            f"healthy pods deleted (of {pods}) when workers do not wait for sync",
            deleted_no_wait,
            pods,
        ),
        equal(
            "03.wait-deletes",
            "healthy pods deleted when workers wait for has_synced",
            deleted_waiting,
            0,
        ),
        equal("03.wait-survivors", "pods left when workers wait", survivors_waiting, pods),
    ]
