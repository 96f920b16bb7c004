"""Chapter 04 -- the queue: dirty and processing, merging, one worker per key.

Experiments on :mod:`refimpl.workqueue` (docs/04-the-queue.md). Every experiment but
``one-worker-per-key`` drives the single-threaded :class:`QueueCore` step by step, so
its numbers are exact; that one uses real threads on purpose.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

from refimpl.clock import FakeClock
from refimpl.tour import Claim, equal, experiment, holds
from refimpl.workqueue import InMemoryMetricsProvider, MeteredQueueCore, Queue, QueueCore
from refimpl.workqueue.metrics import QueueMetrics

CHAPTER = "04"
TITLE = "The queue: dirty and processing"


def _seconds(observations: list[float]) -> str:
    return ", ".join(f"{value:g} s" for value in observations) or "none"


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
        equal("04.dedup-order", "hand-out order is first-add order", ",".join(order), "a,b,c"),
    ]


@experiment(CHAPTER, "readd-goes-to-tail", "A key re-added while in flight queues up at done()")
def readd_goes_to_tail() -> list[Claim]:
    core: QueueCore[str] = QueueCore()
    core.add("a")
    core.add("b")
    a, _ = core.get()  # a is in flight, b waits
    assert a is not None
    core.add("a")  # a changes again while in flight: marked dirty, not queued
    core.add("c")  # c arrives after a's re-add...
    waiting_before_done = ",".join(core.queue)
    core.done(a)  # ...but a takes its place only now, behind c
    order: list[str] = []
    _drain(core, order)
    return [
        equal(
            "04.readd-not-queued",
            "queue while a is in flight and re-added",
            waiting_before_done,
            "b,c",
        ),
        equal("04.readd-tail", "hand-out order after done(a)", ",".join(order), "b,c,a"),
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


@experiment(CHAPTER, "stray-done", "A done() without a get() breaks the promise (misuse)")
def stray_done() -> list[Claim]:
    core: QueueCore[str] = QueueCore()
    core.add("a")
    core.done("a")  # misuse: "a" was never handed out, it is only waiting
    length = len(core)
    first, _ = core.get()
    second, _ = core.get()
    return [
        equal("04.stray-done-len", "queue length after add(a), done(a)", length, 2),
        equal(
            "04.stray-done-twice",
            "the next two get() calls hand out",
            f"{first},{second}",
            "a,a",
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
    repeat = core.get()  # an empty, shut-down queue answers at once, every time

    drained: QueueCore[str] = QueueCore()
    drained.add("x")
    drained.add("y")
    flight, _ = drained.get()
    assert flight is not None
    drained.begin_drain()  # shut_down_with_drain with x in flight and y queued
    finished_in_flight = drained.drain_complete()
    drained.done(flight)
    finished_after_done = drained.drain_complete()
    left_queued = len(drained)
    return [
        equal("04.len-queued-only", "len() with 1 queued, 1 in flight and re-added", length, 1),
        equal(
            "04.shutdown-hands-out",
            "after shut_down (and a late done): handed out",
            ",".join(after),
            "b,a",
        ),
        equal("04.shutdown-get", "get() on an empty, shut-down queue", repeat, (None, True)),
        equal(
            "04.drain-waits",
            "shut_down_with_drain finished while x is in flight",
            finished_in_flight,
            False,
        ),
        equal(
            "04.drain-returns",
            "shut_down_with_drain finished after done(x)",
            finished_after_done,
            True,
        ),
        equal(
            "04.drain-leaves-queued",
            "keys still queued when it returns (client-go's code, not its comment)",
            left_queued,
            1,
        ),
    ]


@experiment(CHAPTER, "metrics", "The metrics count deliveries owed, not calls to add()")
def metrics() -> list[Claim]:
    provider = InMemoryMetricsProvider()
    clock = FakeClock()
    core: QueueCore[str] = MeteredQueueCore(QueueMetrics[str](provider, "tour", clock))
    seen = provider["tour"]
    for _ in range(10):
        core.add("a")  # one key, ten adds while it waits
    adds_waiting = seen.adds.value
    clock.step(2.0)
    item, _ = core.get()
    assert item is not None
    for _ in range(3):
        core.add("a")  # three more while it is in flight
    adds_total = seen.adds.value
    depth_in_flight = int(seen.depth.value)
    len_in_flight = len(core)
    clock.step(0.5)
    core.done(item)
    return [
        equal(
            "04.metric-adds-waiting", "adds metric after 10 add(a) while a waits", adds_waiting, 1
        ),
        equal(
            "04.metric-adds-in-flight",
            "adds metric after 3 more add(a) while a is in flight",
            adds_total,
            2,
        ),
        equal(
            "04.metric-depth",
            "depth metric while a is in flight and re-added",
            depth_in_flight,
            1,
        ),
        equal("04.metric-len", "len() at the same moment", len_in_flight, 0),
        equal(
            "04.metric-latency",
            "queue latency observed (first add to get)",
            _seconds(seen.latency.observations),
            "2 s",
        ),
        equal(
            "04.metric-duration",
            "work duration observed (get to done)",
            _seconds(seen.work_duration.observations),
            "0.5 s",
        ),
    ]
