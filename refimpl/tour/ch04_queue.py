"""Chapter 04 -- the queue: dirty and processing, merging, one worker per key.

Experiments on :mod:`refimpl.workqueue` (docs/04-the-queue.md).
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

from refimpl.tour import Claim, equal, experiment, holds
from refimpl.workqueue import Queue, QueueCore

CHAPTER = "04"
TITLE = "The queue: dirty and processing"


def _drain(core: QueueCore[str], handled: list[str]) -> None:
    while len(core):
        item, _ = core.get()
        assert item is not None
        handled.append(item)
        core.done(item)


@experiment(CHAPTER, "merge-while-busy", "Changes that arrive while a worker is busy merge")
def merge_while_busy() -> list[Claim]:
    core: QueueCore[str] = QueueCore()
    handled: list[str] = []
    core.add("default/my-app")
    item, _ = core.get()  # a worker takes the key and is busy with it
    assert item is not None
    handled.append(item)
    for _ in range(5):  # five changes arrive while it works
        core.add("default/my-app")
    queued_while_busy = len(core)
    core.done(item)
    _drain(core, handled)
    busy_rounds = len(handled)

    idle: QueueCore[str] = QueueCore()
    idle_handled: list[str] = []
    for _ in range(5):  # the worker keeps up: each change is handled before the next
        idle.add("default/my-app")
        _drain(idle, idle_handled)
    return [
        equal(
            "04.busy-not-queued", "5 adds while in flight: queued meanwhile", queued_while_busy, 0
        ),
        equal("04.busy-merge", "5 adds while in flight: extra reconciles", busy_rounds - 1, 1),
        equal("04.idle-no-merge", "5 adds, worker keeps up: reconciles", len(idle_handled), 5),
    ]


@experiment(CHAPTER, "dedup-while-queued", "Adds of a waiting key collapse to one")
def dedup_while_queued() -> list[Claim]:
    core: QueueCore[str] = QueueCore()
    for key in ["a", "b", "a", "c", "a", "b"]:
        core.add(key)
    length = len(core)
    order: list[str] = []
    _drain(core, order)
    return [
        equal("04.dedup-len", "6 adds of 3 keys: queue length", length, 3),
        equal("04.dedup-order", "hand-out order is first-add order", "".join(order), "abc"),
    ]


@experiment(CHAPTER, "one-worker-per-key", "Never two workers on one key (threads)")
def one_worker_per_key(seed: int = 4, workers: int = 4, adds: int = 20_000) -> list[Claim]:
    rng = random.Random(seed)
    queue: Queue[int] = Queue("tour")
    holders: Counter[int] = Counter()
    worst = 0
    last_add: dict[int, int] = {}
    last_start: dict[int, int] = {}
    seq = 0
    guard = threading.Lock()

    def work() -> None:
        nonlocal worst, seq
        while True:
            key, shutdown = queue.get()
            if shutdown or key is None:
                return
            with guard:
                holders[key] += 1
                worst = max(worst, holders[key])
                seq += 1
                last_start[key] = seq
            time.sleep(0)  # yield, so other workers run while this key is held
            with guard:
                holders[key] -= 1
            queue.done(key)

    threads = [threading.Thread(target=work, daemon=True) for _ in range(workers)]
    for t in threads:
        t.start()
    for _ in range(adds):
        key = rng.randrange(50)
        with guard:
            seq += 1
            last_add[key] = seq
        queue.add(key)
    queue.shut_down_with_drain()
    queue.shut_down()
    for t in threads:
        t.join()
    stale = sum(1 for k, added in last_add.items() if last_start.get(k, 0) < added)
    return [
        equal(
            "04.exclusive",
            f"{workers} workers, {adds} adds over 50 keys: most holders of a key",
            worst,
            1,
        ),
        holds(
            "04.no-lost-add",
            "keys whose last add was never followed by processing",
            str(stale),
            "0",
            stale == 0,
        ),
    ]


@experiment(CHAPTER, "len-and-shutdown", "len() counts waiting keys; shutdown still hands out")
def len_and_shutdown() -> list[Claim]:
    core: QueueCore[str] = QueueCore()
    core.add("a")
    core.add("b")
    first, _ = core.get()  # "a" is in flight
    assert first is not None
    core.add("a")  # re-marked while in flight
    length = len(core)
    core.shut_down()
    core.add("c")  # ignored: shutting down
    after: list[str] = []
    core.done(first)  # done() after shutdown still re-queues the dirty key
    while True:
        item, shutdown = core.get()
        if shutdown:
            break
        assert item is not None
        after.append(item)
        core.done(item)
    drained, flight = QueueCore[str](), None
    drained.add("x")
    drained.add("y")
    flight, _ = drained.get()
    drained.begin_drain()
    waits_before_done = not drained.drain_complete()
    assert flight is not None
    drained.done(flight)
    returns_with_queued = drained.drain_complete() and len(drained) == 1
    return [
        equal("04.len-queued-only", "len() with 1 queued, 1 in flight and re-added", length, 1),
        equal(
            "04.shutdown-hands-out",
            "after shut_down (and a late done): handed out",
            ",".join(after),
            "b,a",
        ),
        holds(
            "04.drain-in-flight-only",
            "shut_down_with_drain waits for in-flight items only (client-go's code)",
            f"waits={waits_before_done}, returns with 1 queued={returns_with_queued}",
            "waits=True, returns with 1 queued=True",
            waits_before_done and returns_with_queued,
        ),
    ]
