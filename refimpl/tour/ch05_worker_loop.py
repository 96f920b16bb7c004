"""Chapter 05 -- the worker loop: retries, the backoff ceiling, forget versus done.

Experiments on :mod:`refimpl.worker`, the rate limiters and the delaying queue, in
virtual time (docs/05-the-worker-loop.md): a :class:`~refimpl.clock.FakeClock` moves only
when the experiment says so, so an hour of retries takes milliseconds and every delay
is exact.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from refimpl.clock import FakeClock
from refimpl.tour import Claim, equal, experiment
from refimpl.worker import process_next_work_item
from refimpl.workqueue import (
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
)
from refimpl.workqueue.virtual import VirtualRateLimitingQueue

CHAPTER = "05"
TITLE = "The worker loop: retries, backoff, forget and done"

#: The controller default: 5 ms doubling per failure, capped at 1000 s.
BASE, CEILING = 0.005, 1000.0


def _fmt(seconds: float) -> str:
    return f"{seconds * 1000:g} ms" if seconds < 1 else f"{seconds:g} s"


def retry_delays(failures: int) -> list[float]:
    """The delays the controller default hands out for ``failures`` consecutive
    failures of one key (no forget in between). Also drawn in docs/img."""
    limiter = ItemExponentialFailureRateLimiter[str](BASE, CEILING)
    return [limiter.when("k") for _ in range(failures)]


@experiment(CHAPTER, "backoff-ceiling", "The n-th retry waits 5 ms x 2^(n-1), up to 1000 s")
def backoff_ceiling() -> list[Claim]:
    delays = retry_delays(20)
    first_at_cap = next(n for n, d in enumerate(delays, start=1) if d >= CEILING)
    limiter = ItemExponentialFailureRateLimiter[str](BASE, CEILING)
    for _ in range(20):
        limiter.when("k")
    requeues = limiter.num_requeues("k")
    limiter.forget("k")
    after_forget = limiter.when("k")
    waited = sum(delays[: first_at_cap - 1])  # before the first full-ceiling retry
    item_based: ItemExponentialFailureRateLimiter[str] = default_item_based_rate_limiter()
    item_delays = [item_based.when("k") for _ in range(25)]
    item_cap_from = next(n for n, d in enumerate(item_delays, start=1) if d >= CEILING)
    return [
        equal("05.retry-1", "delay of retry 1", _fmt(delays[0]), "5 ms"),
        equal("05.retry-2", "delay of retry 2", _fmt(delays[1]), "10 ms"),
        equal("05.retry-18", "delay of retry 18", _fmt(delays[17]), "655.36 s"),
        equal("05.ceiling-from", "first retry that waits the full ceiling", first_at_cap, 19),
        equal("05.ceiling", "the ceiling (16 min 40 s)", _fmt(delays[19]), "1000 s"),
        equal(
            "05.time-to-ceiling",
            "total wait of retries 1-18, before the ceiling is reached",
            f"{round(waited, 3)} s",
            "1310.715 s",
        ),
        equal("05.num-requeues", "num_requeues after 20 failures", requeues, 20),
        equal("05.forget-resets", "delay after forget()", _fmt(after_forget), "5 ms"),
        equal(
            "05.item-based-ceiling-from",
            "item-based default (1 ms doubling): first retry at the ceiling",
            item_cap_from,
            21,
        ),
    ]


@experiment(CHAPTER, "bucket", "The default limiter also caps all retries at 10/s, burst 100")
def bucket() -> list[Claim]:
    clock = FakeClock()
    limiter: MaxOfRateLimiter[str] = default_controller_rate_limiter(clock=clock)
    delays = [limiter.when(f"key-{i}") for i in range(110)]  # 110 different keys, one instant
    zero = sum(1 for d in delays if d == BASE)
    clock.step(1.0)  # one quiet second pays back 10 tokens of the debt of 10
    after_a_second = limiter.when("key-late")
    return [
        equal("05.bucket-burst", "rapid first failures of distinct keys at base delay", zero, 100),
        equal("05.bucket-101", "delay of the 101st", _fmt(delays[100]), "100 ms"),
        equal("05.bucket-110", "delay of the 110th", _fmt(round(delays[109], 9)), "1 s"),
        equal(
            "05.bucket-refill",
            "a new key's first retry 1 s later",
            _fmt(round(after_a_second, 9)),
            "100 ms",
        ),
    ]


@experiment(CHAPTER, "waiting-room", "add_after: the earliest deadline wins, and fires once")
def waiting_room() -> list[Claim]:
    def fire_times(delays: list[float]) -> list[str]:
        clock = FakeClock()
        queue: VirtualRateLimitingQueue[str] = VirtualRateLimitingQueue(clock)
        for delay in delays:
            queue.add_after("x", delay)
        fired: list[str] = []
        while queue.advance_to_next():
            while len(queue):
                key, _ = queue.get()
                assert key is not None
                fired.append(_fmt(clock.now()))
                queue.done(key)
        return fired

    clock = FakeClock()
    queue: VirtualRateLimitingQueue[str] = VirtualRateLimitingQueue(clock)
    queue.add_after("now", 0)
    zero_delay_len = len(queue)
    queue.add_rate_limited("retry")
    rate_limited_len = len(queue)
    queue.add("retry")  # a plain add does not wait for the timer
    both_len = len(queue)
    return [
        equal(
            "05.after-keeps-earlier",
            "add_after 50 ms, then 70 ms: fired at",
            ",".join(fire_times([0.05, 0.07])),
            "50 ms",
        ),
        equal(
            "05.after-earlier-wins",
            "add_after 50 ms, then 30 ms: fired at",
            ",".join(fire_times([0.05, 0.03])),
            "30 ms",
        ),
        equal("05.after-zero", "len() right after add_after(x, 0)", zero_delay_len, 1),
        equal(
            "05.rate-limited-not-now",
            "len() grows by this much right after add_rate_limited",
            rate_limited_len - zero_delay_len,
            0,
        ),
        equal(
            "05.add-skips-wait",
            "len() grows by this much after a plain add of the waiting key",
            both_len - rate_limited_len,
            1,
        ),
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
    gaps = [_fmt(round(b - a, 9)) for a, b in itertools.pairwise(attempts)]
    return [
        equal("05.attempts", "attempts with max_retries=5", len(attempts), 6),
        equal(
            "05.gaps",
            "waits between attempts",
            ", ".join(gaps),
            "5 ms, 10 ms, 20 ms, 40 ms, 80 ms",
        ),
        equal("05.dropped", "dropped after the last retry", ",".join(dropped), "default/broken"),
        equal(
            "05.forgotten", "num_requeues after the drop", queue.num_requeues("default/broken"), 0
        ),
    ]


def _attempts_in(
    seconds: float, on_failure: Callable[[VirtualRateLimitingQueue[str], str], None]
) -> int:
    """Attempts at reconciling one key that always fails, over ``seconds`` of virtual
    time, with the default limiter; ``on_failure`` is what the worker does on error."""
    clock = FakeClock()
    queue: VirtualRateLimitingQueue[str] = VirtualRateLimitingQueue(clock)
    queue.add("default/broken")
    attempts = 0
    while True:
        if len(queue):
            key, _ = queue.get()
            assert key is not None
            attempts += 1
            on_failure(queue, key)
            queue.done(key)
        else:
            ready = queue.next_ready_at()
            if ready is None or ready > seconds:
                return attempts
            queue.advance_to_next()


def _retry(queue: VirtualRateLimitingQueue[str], key: str) -> None:
    queue.add_rate_limited(key)


def _forget_then_retry(queue: VirtualRateLimitingQueue[str], key: str) -> None:
    queue.forget(key)  # the mistake: history wiped on every failure
    queue.add_rate_limited(key)


@experiment(CHAPTER, "forget-misuse", "forget() in the wrong place: a hot loop, or a long wait")
def forget_misuse() -> list[Claim]:
    hour = 3600.0
    right = _attempts_in(hour, _retry)
    wrong = _attempts_in(hour, _forget_then_retry)

    # A key that failed 10 times, then succeeded: was forget() called on success?
    def next_failure_delay(forget_on_success: bool) -> float:
        limiter: MaxOfRateLimiter[str] = default_controller_rate_limiter(clock=FakeClock())
        for _ in range(10):
            limiter.when("k")
        if forget_on_success:
            limiter.forget("k")
        return limiter.when("k")  # the next failure, days later

    return [
        equal("05.hour-right", "always-failing key, attempts in its first hour", right, 21),
        equal(
            "05.hour-forget-each-failure",
            "same, forget() before every add_rate_limited",
            wrong,
            1 + 100 + 10 * 3600,  # the first try, the burst, then 10 a second
        ),
        equal(
            "05.success-with-forget",
            "10 failures, success with forget(), next failure waits",
            _fmt(next_failure_delay(True)),
            "5 ms",
        ),
        equal(
            "05.success-without-forget",
            "10 failures, success without forget(), next failure waits",
            _fmt(next_failure_delay(False)),
            "5.12 s",
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
    queue.core.begin_drain()  # shut_down_with_drain: waits for in-flight keys
    drain_finishes = queue.core.drain_complete()

    fixed: VirtualRateLimitingQueue[str] = VirtualRateLimitingQueue(clock)
    fixed.add("default/app")
    process_next_work_item(fixed, lambda k: None)
    for _ in range(3):
        fixed.add("default/app")
    return [
        equal("05.missing-done", "keys available after 3 more adds, no done()", handed_out, 0),
        equal("05.stuck", "the key stays in flight and dirty", stuck, True),
        equal(
            "05.missing-done-drain",
            "shut_down_with_drain can finish, no done()",
            drain_finishes,
            False,
        ),
        equal("05.with-done", "keys available after 3 more adds, with done()", len(fixed), 1),
    ]
