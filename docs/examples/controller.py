"""A small controller over two kinds, built from refimpl's parts (docs/controller.md).

An ``App`` asks for a number of replicas; the controller keeps that many ``Pod``s named
``<app>-0``, ``<app>-1``, ... on the server, as a ReplicaSet controller does. Two
in-memory API servers (one per kind, as a real API server has an endpoint per
resource), two informers, one rate-limited work queue of App keys, two workers.
Run it: ``python3 docs/examples/controller.py``. It prints what the server holds after
each change and exits 0 once the controller has caught up with all three.
"""

from __future__ import annotations

import contextlib
import threading

import attrs

from refimpl.apierrors import AlreadyExists, NotFound
from refimpl.apiserver import ApiServer, ApiServerCore, ApiServerListerWatcher
from refimpl.cache import (
    DeletedFinalStateUnknown,
    ResourceEventHandlerFuncs,
    SharedIndexInformer,
    wait_for_cache_sync,
)
from refimpl.meta import Object, meta_namespace_key_func
from refimpl.worker import start_workers
from refimpl.workqueue import RateLimitingQueue


@attrs.frozen
class AppSpec:
    replicas: int


@attrs.frozen
class PodSpec:
    app: str  # the key ("namespace/name") of the App that owns the pod


App = Object[AppSpec]
Pod = Object[PodSpec]


class AppController:
    """Keeps each App's pods at its replica count. Reads only its informers' caches;
    writes only to the servers; retries a failed key with the queue's backoff."""

    def __init__(self, apps: ApiServer[App], pods: ApiServer[Pod]) -> None:
        self.apps, self.pods = apps, pods
        self.app_informer = SharedIndexInformer[App](ApiServerListerWatcher(apps))
        self.pod_informer = SharedIndexInformer[Pod](
            ApiServerListerWatcher(pods), indexers={"app": lambda pod: [pod.data.app]}
        )
        # 5 ms doubling to 1000 s per key, 10 per second overall (client-go's default).
        self.queue: RateLimitingQueue[str] = RateLimitingQueue()
        self.app_informer.add_event_handler(
            ResourceEventHandlerFuncs[App](
                add_func=self.enqueue_app,
                update_func=lambda old, new: self.enqueue_app(new),
                delete_func=self.enqueue_app,
            )
        )
        self.pod_informer.add_event_handler(
            ResourceEventHandlerFuncs[Pod](
                add_func=self.enqueue_owner,
                update_func=lambda old, new: self.enqueue_owner(new),
                delete_func=self.enqueue_owner,
            )
        )

    def enqueue_app(self, app: App | DeletedFinalStateUnknown[App]) -> None:
        # A tombstone carries the key of an App deleted while the informer was away.
        key = app.key if isinstance(app, DeletedFinalStateUnknown) else meta_namespace_key_func(app)
        self.queue.add(key)

    def enqueue_owner(self, pod: Pod | DeletedFinalStateUnknown[Pod]) -> None:
        last = pod.obj if isinstance(pod, DeletedFinalStateUnknown) else pod
        if last is not None:  # a tombstone's last state may be unknown
            self.queue.add(last.data.app)

    def reconcile(self, key: str) -> None:
        """Level-triggered: compare what the caches say with what the App wants."""
        namespace, name = key.split("/")
        app = self.app_informer.lister().get(namespace, name)
        want = 0 if app is None else app.data.replicas
        have = {pod.name: pod for pod in self.pod_informer.get_indexer().by_index("app", key)}
        for i in range(want):
            pod_name = f"{name}-{i}"
            if pod_name not in have:
                # A fixed name: when the cache is behind, a second create fails.
                with contextlib.suppress(AlreadyExists):
                    self.pods.create(Pod(pod_name, namespace, data=PodSpec(app=key)))
        for pod_name in have:
            if int(pod_name.rsplit("-", 1)[1]) >= want:
                with contextlib.suppress(NotFound):  # already gone: nothing to do
                    self.pods.delete(namespace, pod_name)

    def run(self, stop: threading.Event, workers: int = 2) -> list[threading.Thread]:
        """Start both informers, wait for their caches, then start the workers."""
        self.app_informer.start(stop)
        self.pod_informer.start(stop)
        if not wait_for_cache_sync(
            stop, self.app_informer.has_synced, self.pod_informer.has_synced
        ):
            raise RuntimeError("stopped before the caches synced")
        return start_workers(self.queue, self.reconcile, workers=workers)


def pod_names(core: ApiServerCore) -> list[str]:
    return sorted(obj.name for obj in core.objects.values())


def main() -> int:
    apps: ApiServer[App] = ApiServer()
    pods: ApiServer[Pod] = ApiServer()
    controller = AppController(apps, pods)
    stop = threading.Event()
    workers = controller.run(stop)

    apps.create(App("web", "default", data=AppSpec(replicas=3)))
    caught_up = pods.wait_for(lambda core: pod_names(core) == ["web-0", "web-1", "web-2"], 10)
    print("web wants 3:", sorted(pods.objects()), caught_up)

    web = apps.get("default", "web")
    apps.update(web.evolve(data=AppSpec(replicas=1)))
    caught_up &= pods.wait_for(lambda core: pod_names(core) == ["web-0"], 10)
    print("web wants 1:", sorted(pods.objects()), caught_up)

    apps.delete("default", "web")
    caught_up &= pods.wait_for(lambda core: pod_names(core) == [], 10)
    print("web deleted:", sorted(pods.objects()), caught_up)

    controller.queue.shut_down_with_drain()  # keys in flight finish; then workers stop
    for worker in workers:
        worker.join()
    stop.set()  # and the informers
    return 0 if caught_up else 1


if __name__ == "__main__":
    raise SystemExit(main())
