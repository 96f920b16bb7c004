"""Chapter 01 -- level, not edge: react to the state, not to the news.

Two controllers keep "pods running" equal to "replicas wanted". The edge-triggered one
acts on each notification's change (``new - old`` more pods); the level-triggered one
reads the wanted number when nudged and closes the gap. Both receive the same
notification streams, with and without faults (docs/01-level-not-edge.md). The
second experiment measures when a work queue's merging actually saves work, with
:class:`~refimpl.workqueue.QueueCore` in virtual time. :func:`reconciles_by_duration`
also feeds the chapter's picture.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

import attrs

from refimpl.tour import Claim, equal, experiment
from refimpl.workqueue import QueueCore

CHAPTER = "01"
TITLE = "Level, not edge"


@attrs.frozen
class Change:
    """A notification: the wanted replicas went from ``old`` to ``new``."""

    old: int
    new: int


#: The wanted replicas over time: 3, then 4, 5, 6 -- three changes, three notifications.
HISTORY = (Change(3, 4), Change(4, 5), Change(5, 6))
FINAL = HISTORY[-1].new


@attrs.define
class Cluster:
    wanted: int = 3  # the source of truth: replicas wanted right now
    running: int = 3
    #: Remaining actions that will fail (an API outage), consumed one per action.
    failures: int = 0

    def start(self, pods: int) -> None:
        if pods <= 0:
            return
        if self.failures:
            self.failures -= 1
            raise ConnectionError("the API server is unavailable")
        self.running += pods

    def stop(self, pods: int) -> None:
        self.running -= max(0, pods)


def edge(cluster: Cluster, change: Change) -> None:
    """Act on the news: start as many pods as the change added."""
    cluster.start(change.new - change.old)


def level(cluster: Cluster, change: Change) -> None:
    """Act on the state: read what is wanted now and close the gap."""
    gap = cluster.wanted - cluster.running
    if gap > 0:
        cluster.start(gap)
    else:
        cluster.stop(-gap)


Controller = Callable[[Cluster, Change], None]

#: A delivery: the replicas wanted at the moment a notification is handled, and the
#: notification itself (which may be late, doubled, or about an older change).
Delivery = tuple[int, Change]


def deliver(controller: Controller, stream: Sequence[Delivery], failures: int = 0) -> int:
    """Feed ``stream`` to ``controller`` (errors are logged and dropped, as a handler
    that acts inside the notification does); return the pods running at the end."""
    cluster = Cluster(failures=failures)
    for wanted, change in stream:
        cluster.wanted = wanted
        with contextlib.suppress(ConnectionError):  # nobody will try again
            controller(cluster, change)
    return cluster.running


C1, C2, C3 = HISTORY
# The streams: the source goes 3 -> 4 -> 5 -> 6; each fault changes what arrives.
CLEAN = ((4, C1), (5, C2), (6, C3))
LOST = ((4, C1), (6, C3))  # the middle notification never arrives
DUPLICATED = ((4, C1), (5, C2), (5, C2), (6, C3))
REORDERED = ((4, C1), (6, C3), (6, C2))  # the middle one arrives last
LAST_LOST = ((4, C1), (5, C2))  # the source reaches 6, nobody is told
#: After a restart, the informer's first list announces the object once, as an add
#: from nothing: "0 -> 6".
RESTART = (*CLEAN, (FINAL, Change(0, FINAL)))
#: Any later nudge about the object -- a resync, a relist, another field changing.
NUDGE = (FINAL, Change(FINAL, FINAL))


@experiment(CHAPTER, "faults", "Lost, doubled, reordered, failed: edge and level")
def faults() -> list[Claim]:
    cases = [
        ("01.no-fault", "no fault", CLEAN, 0, "edge 6, level 6"),
        ("01.lost", "middle notification lost", LOST, 0, "edge 5, level 6"),
        ("01.duplicated", "middle notification delivered twice", DUPLICATED, 0, "edge 7, level 6"),
        ("01.reordered", "middle notification arrives last", REORDERED, 0, "edge 6, level 6"),
        ("01.failed", "first action fails once", CLEAN, 1, "edge 5, level 6"),
        (
            "01.restart",
            "controller restarted (object re-announced)",
            RESTART,
            0,
            "edge 12, level 6",
        ),
        ("01.last-lost", "last notification lost", LAST_LOST, 0, "edge 5, level 5"),
        (
            "01.last-lost-nudged",
            "last lost, then one resync",
            (*LAST_LOST, NUDGE),
            0,
            "edge 5, level 6",
        ),
    ]
    claims: list[Claim] = []
    for claim_id, text, stream, failures, expected in cases:
        measured = (
            f"edge {deliver(edge, stream, failures)}, level {deliver(level, stream, failures)}"
        )
        claims.append(equal(claim_id, f"{text}: pods running (6 wanted)", measured, expected))
    return claims


def reconciles_by_duration(reconcile_ms: int, changes: int = 100, every_ms: int = 100) -> int:
    """One object changes every ``every_ms`` ms, ``changes`` times; one worker takes
    ``reconcile_ms`` per reconcile. How many reconciles run, in all?"""
    queue: QueueCore[str] = QueueCore()
    busy_until: int | None = None
    reconciles = 0
    t = 0
    last_change = changes * every_ms
    while t <= last_change or len(queue) or busy_until is not None:
        if busy_until is not None and t >= busy_until:
            queue.done("default/web")
            busy_until = None
        if t % every_ms == 0 and 0 < t <= last_change:
            queue.add("default/web")
        if busy_until is None and len(queue):
            queue.get()
            reconciles += 1
            busy_until = t + reconcile_ms
        t += 1
    return reconciles


#: Reconcile durations the chapter (and its picture) looks at, in ms.
DURATIONS = (1, 50, 99, 100, 150, 250, 500, 1000, 2000)


@experiment(CHAPTER, "when-merging-saves", "When does merging save work? It depends on load")
def when_merging_saves() -> list[Claim]:
    counts = {d: reconciles_by_duration(d) for d in DURATIONS}
    return [
        equal(
            "01.merge-1ms", "100 changes, 10/s; reconcile takes 1 ms: reconciles", counts[1], 100
        ),
        equal("01.merge-99ms", "reconcile takes 99 ms", counts[99], 100),
        equal("01.merge-150ms", "reconcile takes 150 ms", counts[150], 67),
        equal("01.merge-250ms", "reconcile takes 250 ms", counts[250], 41),
        equal("01.merge-1s", "reconcile takes 1 s", counts[1000], 11),
        equal("01.merge-2s", "reconcile takes 2 s", counts[2000], 6),
    ]
