"""Chapter 06 -- who remembers the work: discovery versus execution.

Virtual-time experiments on :class:`~refimpl.workqueue.QueueCore` and the worker loop,
against a "direct reaction" design that reconciles inside the notification
(docs/06-who-remembers-the-work.md). :func:`backlog_series` also feeds the chapter's
picture (docs/img/06-backlog.svg), so the picture and the claims are the same run.
"""

from __future__ import annotations

import contextlib
import math
import random
from collections import deque

import attrs

from refimpl.clock import FakeClock
from refimpl.tour import Claim, equal, experiment, holds
from refimpl.worker import process_next_work_item
from refimpl.workqueue import QueueCore
from refimpl.workqueue.virtual import VirtualRateLimitingQueue

CHAPTER = "06"
TITLE = "Who remembers the work: discovery versus execution"


@attrs.frozen
class Backlog:
    """One run of the backlog experiment, sampled every ``sample_ms`` milliseconds."""

    keys: int
    burst_seconds: int
    reconcile_ms: int
    sample_ms: int
    #: Notifications not yet reconciled by the direct-reaction design, per sample.
    direct: list[int]
    #: Keys waiting in the work queue, per sample.
    queue: list[int]
    #: The most keys ever waiting in the queue at once (checked every millisecond).
    queue_peak: int
    #: Milliseconds after the burst until each design has nothing left to do.
    direct_catch_up_ms: int
    queue_catch_up_ms: int


def backlog_series(
    seed: int = 6,
    keys: int = 100,
    burst_seconds: int = 10,
    reconcile_ms: int = 100,
    sample_ms: int = 100,
) -> Backlog:
    """Each millisecond of the burst, one change to a random key out of ``keys``; every
    ``reconcile_ms`` one reconcile finishes. After the burst no more changes arrive and
    the run continues until both designs are idle."""
    rng = random.Random(seed)
    events: deque[int] = deque()  # direct reaction: every notification is work owed
    queue: QueueCore[int] = QueueCore()  # the queue: one entry per key that needs work
    direct: list[int] = [0]
    queued: list[int] = [0]
    burst_ms = burst_seconds * 1000
    direct_idle_at = queue_idle_at = None
    peak = 0
    ms = 0
    # After the burst nothing happens between reconciles and samples: skip ahead.
    quiet_step = math.gcd(reconcile_ms, sample_ms)
    while direct_idle_at is None or queue_idle_at is None:
        ms += 1 if ms < burst_ms else quiet_step
        if ms <= burst_ms:
            key = rng.randrange(keys)
            events.append(key)
            queue.add(key)
            peak = max(peak, len(queue))
        if ms % reconcile_ms == 0:
            if events:
                events.popleft()
            if len(queue):
                item, _ = queue.get()
                assert item is not None
                queue.done(item)
        if ms >= burst_ms:
            if direct_idle_at is None and not events:
                direct_idle_at = ms
            if queue_idle_at is None and not len(queue):
                queue_idle_at = ms
        if ms % sample_ms == 0:
            direct.append(len(events))
            queued.append(len(queue))
    return Backlog(
        keys,
        burst_seconds,
        reconcile_ms,
        sample_ms,
        direct,
        queued,
        peak,
        direct_idle_at - burst_ms,
        queue_idle_at - burst_ms,
    )


@experiment(CHAPTER, "backlog", "1000 changes/s against 10 reconciles/s, for 10 s")
def backlog(seed: int = 6, keys: int = 100, seconds: int = 10) -> list[Claim]:
    run = backlog_series(seed, keys, seconds)
    per_second = 1000 // run.sample_ms
    at_seconds = run.direct[per_second : seconds * per_second + 1 : per_second]
    growth = sorted({b - a for a, b in zip([0, *at_seconds], at_seconds, strict=False)})
    worst_queue = run.queue_peak
    return [
        equal(
            "06.direct-growth",
            "direct reaction: backlog growth per second",
            growth[0] if len(growth) == 1 else growth,
            990,
        ),
        equal(
            "06.direct-backlog",
            f"direct reaction: backlog after {seconds} s",
            at_seconds[-1],
            9900,
        ),
        holds(
            "06.queue-bounded",
            f"queue: largest backlog ({keys} distinct keys)",
            str(worst_queue),
            f"<= {keys}",
            worst_queue <= keys,
        ),
        equal(
            "06.direct-catch-up",
            "direct reaction: time to work off the backlog after the burst",
            f"{run.direct_catch_up_ms / 1000:g} s",
            "990 s",
        ),
        holds(
            "06.queue-catch-up",
            "queue: time to work off the backlog after the burst",
            f"{run.queue_catch_up_ms / 1000:g} s",
            f"<= {keys * 100 / 1000:g} s",
            run.queue_catch_up_ms <= keys * 100,
        ),
    ]


@experiment(CHAPTER, "three-notifications", "Three rapid notifications: direct 3, queue 1")
def three_notifications() -> list[Claim]:
    direct = 0
    for _ in range(3):
        direct += 1  # a handler that reconciles inside the notification
    queue: QueueCore[str] = QueueCore()
    for _ in range(3):
        queue.add("default/my-app")
    reconciles = 0
    while len(queue):
        item, _ = queue.get()
        assert item is not None
        reconciles += 1
        queue.done(item)
    return [
        equal("06.direct-3", "reconciles when the handler does the work", direct, 3),
        equal("06.queue-1", "reconciles when the handler only queues the key", reconciles, 1),
    ]


class _Cluster:
    """Three pods wanted; the API server refuses the second create, once."""

    def __init__(self) -> None:
        self.pods = 0
        self.outage = True

    def reconcile(self, key: str) -> None:
        while self.pods < 3:
            if self.pods == 1 and self.outage:
                self.outage = False
                raise ConnectionError("the API server is unavailable")
            self.pods += 1


@experiment(CHAPTER, "failure", "A reconcile that fails once: who retries it?")
def failure() -> list[Claim]:
    direct = _Cluster()
    with contextlib.suppress(ConnectionError):  # the handler logs it and returns
        direct.reconcile("default/my-app")  # inside the notification: nobody retries

    clock = FakeClock()
    queue: VirtualRateLimitingQueue[str] = VirtualRateLimitingQueue(clock)
    owned = _Cluster()
    queue.add("default/my-app")
    while True:
        if len(queue):
            process_next_work_item(queue, owned.reconcile)
        elif not queue.advance_to_next():
            break
    return [
        equal("06.fail-direct", "direct reaction: pods running in the end", direct.pods, 3 - 2),
        equal("06.fail-queue", "queue and worker: pods running in the end", owned.pods, 3),
        equal(
            "06.fail-queue-when",
            "queue and worker: converged after",
            f"{clock.now() * 1000:g} ms",
            "5 ms",
        ),
    ]
