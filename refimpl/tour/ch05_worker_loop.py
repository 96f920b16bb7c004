"""Chapter 05 -- the worker loop: retries, the backoff ceiling, forget versus done.

Experiments on :mod:`refimpl.worker` and the rate limiters, in virtual time
(docs/05-the-worker-loop.md).
"""

from __future__ import annotations

import itertools

from refimpl.clock import FakeClock
from refimpl.tour import Claim, equal, experiment, holds
from refimpl.worker import process_next_work_item
from refimpl.workqueue import (
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    default_controller_rate_limiter,
)
from refimpl.workqueue.virtual import VirtualRateLimitingQueue

CHAPTER = "05"
TITLE = "The worker loop: retries, backoff, forget and done"


def _fmt(seconds: float) -> str:
    return f"{seconds * 1000:g} ms" if seconds < 1 else f"{seconds:g} s"


@experiment(CHAPTER, "backoff-ceiling", "The n-th retry waits 5 ms x 2^(n-1), up to 1000 s")
def backoff_ceiling() -> list[Claim]:
    limiter = ItemExponentialFailureRateLimiter[str](0.005, 1000.0)
    delays = [limiter.when("k") for _ in range(20)]
    first_at_cap = next(n for n, d in enumerate(delays, start=1) if d >= 1000.0)
    requeues = limiter.num_requeues("k")
    limiter.forget("k")
    after_forget = limiter.when("k")
    return [
        equal("05.retry-1", "delay of retry 1", _fmt(delays[0]), "5 ms"),
        equal("05.retry-2", "delay of retry 2", _fmt(delays[1]), "10 ms"),
        equal("05.retry-18", "delay of retry 18", _fmt(delays[17]), "655.36 s"),
        equal("05.ceiling-from", "first retry that waits the full ceiling", first_at_cap, 19),
        equal("05.ceiling", "the ceiling (16 min 40 s)", _fmt(delays[19]), "1000 s"),
        equal("05.num-requeues", "num_requeues after 20 failures", requeues, 20),
        equal("05.forget-resets", "delay after forget()", _fmt(after_forget), "5 ms"),
    ]


@experiment(CHAPTER, "bucket", "The default limiter also caps all retries at 10/s, burst 100")
def bucket() -> list[Claim]:
    clock = FakeClock()
    limiter: MaxOfRateLimiter[str] = default_controller_rate_limiter(clock=clock)
    delays = [limiter.when(f"key-{i}") for i in range(110)]  # 110 different keys, one instant
    zero = sum(1 for d in delays if d == 0.005)
    return [
        equal("05.bucket-burst", "rapid first failures of distinct keys at base delay", zero, 100),
        equal("05.bucket-101", "delay of the 101st", _fmt(delays[100]), "100 ms"),
        equal("05.bucket-110", "delay of the 110th", _fmt(round(delays[109], 9)), "1 s"),
    ]


@experiment(CHAPTER, "retry-then-drop", "A key that always fails: retried with backoff, dropped")
def retry_then_drop() -> list[Claim]:
    clock = FakeClock()
    queue: VirtualRateLimitingQueue[str] = VirtualRateLimitingQueue(clock)
    attempts: list[float] = []
    dropped: list[str] = []

    def reconcile(key: str) -> None:
        attempts.append(clock.now())
        raise RuntimeError("the API rejected the change")

    queue.add("default/broken")
    while True:
        if len(queue):
            process_next_work_item(
                queue, reconcile, max_retries=5, on_drop=lambda k, e: dropped.append(k)
            )
        elif not queue.advance_to_next():
            break
    gaps = [round((b - a) * 1000, 6) for a, b in itertools.pairwise(attempts)]
    return [
        equal("05.attempts", "attempts with max_retries=5", len(attempts), 6),
        equal("05.gaps", "waits between attempts (ms)", gaps, [5.0, 10.0, 20.0, 40.0, 80.0]),
        equal("05.dropped", "dropped after the last retry", dropped, ["default/broken"]),
        equal(
            "05.forgotten", "num_requeues after the drop", queue.num_requeues("default/broken"), 0
        ),
    ]


@experiment(CHAPTER, "missing-done", "A missing done() stops a key forever; forget() is not done()")
def missing_done() -> list[Claim]:
    clock = FakeClock()
    queue: VirtualRateLimitingQueue[str] = VirtualRateLimitingQueue(clock)
    queue.add("default/app")
    key, _ = queue.get()
    assert key is not None
    queue.forget(key)  # the mistake: forget() believed to finish the item; no done()
    for _ in range(3):
        queue.add(key)  # later changes to the object
    handed_out = len(queue)
    stuck = key in queue.core.processing and key in queue.core.dirty

    fixed: VirtualRateLimitingQueue[str] = VirtualRateLimitingQueue(clock)
    fixed.add("default/app")
    process_next_work_item(fixed, lambda k: None)
    for _ in range(3):
        fixed.add("default/app")
    return [
        equal("05.missing-done", "keys available after 3 more adds, no done()", handed_out, 0),
        holds("05.stuck", "the key stays in flight and dirty", str(stuck), "True", stuck),
        equal("05.with-done", "keys available after 3 more adds, with done()", len(fixed), 1),
    ]
