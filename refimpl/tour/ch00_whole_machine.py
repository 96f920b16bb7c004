"""Chapter 00 -- the whole machine: one change, followed through every part.

A stepped informer (:mod:`refimpl.tour.stack`) feeds a work queue and one worker; the
experiment moves one change through them step by step and records where it is at each
step (docs/00-the-whole-machine.md). :func:`follow_one_change` also feeds the chapter's
picture (docs/img/00-one-change.svg).
"""

from __future__ import annotations

import attrs

from refimpl.apiserver import ApiServerCore
from refimpl.cache.handlers import ResourceEventHandlerFuncs
from refimpl.clock import FakeClock
from refimpl.meta import Object, meta_namespace_key_func
from refimpl.tour import Claim, equal, experiment
from refimpl.tour.stack import ServerListerWatcher, SteppedInformer
from refimpl.workqueue import QueueCore

CHAPTER = "00"
TITLE = "The whole machine"

#: The parts a change passes through, in the order of the picture's lanes.
LANES = ("API server", "reflector", "informer FIFO", "cache", "handler", "work queue", "worker")


@attrs.frozen
class Step:
    lane: str
    text: str


@attrs.frozen
class Journey:
    steps: list[Step]
    cache_had_it_at_handler: bool
    queued: list[str]
    reconcile_requests: int
    own_write_came_back: bool
    final_status: object


def follow_one_change() -> Journey:
    """Scale ``default/web`` from 3 to 5 replicas and follow the change to the
    reconcile that acts on it, and the reconcile's own write back to the cache."""
    clock = FakeClock()
    server = ApiServerCore()
    server.create(Object("web", namespace="default", data={"replicas": 3, "ready": 3}))
    informer = SteppedInformer(ServerListerWatcher(server, clock), name="web")
    queue: QueueCore[str] = QueueCore()
    steps: list[Step] = []
    seen_in_cache: list[bool] = []

    def on_change(obj: object) -> None:
        key = meta_namespace_key_func(obj)
        cached = informer.lister().get_by_key(key)
        seen_in_cache.append(cached is obj)
        steps.append(Step("handler", f"told: {key} changed (cache already updated)"))
        queue.add(key)  # the object is dropped here: only its key travels on
        steps.append(Step("work queue", f"holds the key {key!r}, not the object"))

    informer.add_event_handler(
        ResourceEventHandlerFuncs(add_func=on_change, update_func=lambda old, new: on_change(new))
    )
    informer.pump()  # list, watch: synced
    queue_key, _ = queue.get()  # the initial add; handle it so the queue starts empty
    assert queue_key is not None
    queue.done(queue_key)
    steps.clear()

    def one_event(what: str) -> None:
        """Let the reflector read one watch event and the informer process it."""
        informer.reflector.run_until_blocked()
        steps.append(Step("reflector", f"reads the watch event ({what})"))
        steps.append(Step("informer FIFO", "queues the event"))
        before = len(steps)
        informer.fifo.pop(informer.process)
        steps.insert(before, Step("cache", "stores the new version"))

    current = server.get("default", "web")
    server.update(current.evolve(data={"replicas": 5, "ready": 3}))
    steps.append(Step("API server", f"write: replicas 3 -> 5 (resourceVersion {server.rv})"))
    one_event("replicas 5")

    requests_before = server.counters.copy()
    key, _ = queue.get()
    assert key is not None
    steps.append(Step("worker", f"takes {key!r}"))
    obj = informer.lister().get_by_key(key)
    assert obj is not None
    steps.append(Step("cache", f"read by the worker: replicas {obj.data['replicas']}"))
    reads = (server.counters.gets - requests_before.gets) + (
        server.counters.lists - requests_before.lists
    )
    server.update(obj.evolve(data={"replicas": 5, "ready": 5}))  # acts: status catches up
    steps.append(Step("API server", f"write: ready 3 -> 5 (resourceVersion {server.rv})"))
    queue.done(key)
    steps.append(Step("worker", "done"))
    one_event("ready 5: the worker's own write")  # comes back like any other change
    came_back = len(queue) == 1
    final = informer.lister().get_by_key(key)
    return Journey(
        steps=steps,
        cache_had_it_at_handler=bool(seen_in_cache) and all(seen_in_cache),
        queued=list(queue.queue),
        reconcile_requests=reads,
        own_write_came_back=came_back,
        final_status=None if final is None else final.data,
    )


def quick_changes(changes: int = 5) -> tuple[int, int]:
    """``changes`` quick edits while the worker is busy: (notifications, reconciles)."""
    clock = FakeClock()
    server = ApiServerCore()
    server.create(Object("web", namespace="default", data=0))
    informer = SteppedInformer(ServerListerWatcher(server, clock), name="web")
    queue: QueueCore[str] = QueueCore()
    told = 0

    def on_update(old: object, new: object) -> None:
        nonlocal told
        told += 1
        queue.add(meta_namespace_key_func(new))

    informer.add_event_handler(ResourceEventHandlerFuncs(update_func=on_update))
    informer.pump()
    for n in range(1, changes + 1):
        server.update(server.get("default", "web").evolve(data=n))
    informer.pump()
    reconciles = 0
    while len(queue):
        key, _ = queue.get()
        assert key is not None
        reconciles += 1
        queue.done(key)
    return told, reconciles


@experiment(CHAPTER, "one-change", "One change, followed through the whole machine")
def one_change() -> list[Claim]:
    journey = follow_one_change()
    told, reconciles = quick_changes()
    return [
        equal(
            "00.cache-first",
            "the cache holds the new version when the handler is told",
            journey.cache_had_it_at_handler,
            True,
        ),
        equal(
            "00.queue-holds",
            "what the work queue holds after the worker's write comes back",
            ", ".join(journey.queued),
            "default/web",
        ),
        equal(
            "00.reconcile-reads",
            "requests the worker made to read the object",
            journey.reconcile_requests,
            0,
        ),
        equal(
            "00.own-write",
            "the worker's own write comes back as a new notification",
            journey.own_write_came_back,
            True,
        ),
        equal(
            "00.path",
            "the parts a change passes, in order",
            " > ".join(dict.fromkeys(step.lane for step in journey.steps)),
            " > ".join(LANES),
        ),
        equal(
            "00.quick-changes",
            "5 quick changes: notifications, reconciles",
            f"{told}, {reconciles}",
            "5, 1",
        ),
    ]
