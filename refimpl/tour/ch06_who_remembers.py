"""Chapter 06 -- who remembers the work: discovery versus execution.

Virtual-time experiments on :class:`~refimpl.workqueue.QueueCore` against a plain list of
events (docs/06-who-remembers-the-work.md).
"""

from __future__ import annotations

import random
from collections import deque

from refimpl.tour import Claim, equal, experiment, holds
from refimpl.workqueue import QueueCore

CHAPTER = "06"
TITLE = "Who remembers the work: discovery versus execution"


@experiment(CHAPTER, "backlog", "1000 changes/s against 10 reconciles/s, for 10 s")
def backlog(seed: int = 6, keys: int = 100, seconds: int = 10) -> list[Claim]:
    """Each millisecond one change to a random key; every 100 ms one reconcile."""
    rng = random.Random(seed)
    events: deque[int] = deque()  # direct reaction: every notification is work owed
    queue: QueueCore[int] = QueueCore()  # the queue: one entry per key that needs work
    events_per_second: list[int] = []
    worst_queue = 0
    for ms in range(1, seconds * 1000 + 1):
        key = rng.randrange(keys)
        events.append(key)
        queue.add(key)
        worst_queue = max(worst_queue, len(queue))
        if ms % 100 == 0:
            events.popleft()
            if len(queue):
                item, _ = queue.get()
                assert item is not None
                queue.done(item)
        if ms % 1000 == 0:
            events_per_second.append(len(events))
    growth = [b - a for a, b in zip([0, *events_per_second], events_per_second, strict=False)]
    return [
        equal("06.direct-growth", "direct reaction: backlog growth per second", set(growth), {990}),
        equal(
            "06.direct-backlog",
            f"direct reaction: backlog after {seconds} s",
            events_per_second[-1],
            9900,
        ),
        holds(
            "06.queue-bounded",
            f"queue: largest backlog ({keys} distinct keys)",
            str(worst_queue),
            f"<= {keys}",
            worst_queue <= keys,
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
