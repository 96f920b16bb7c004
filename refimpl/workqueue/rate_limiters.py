"""Rate limiters: how long an item waits before its next retry.

Ports ``util/workqueue/default_rate_limiters.go``: the per-item exponential and
fast/slow limiters, the token bucket (``golang.org/x/time/rate`` reservation
semantics), max-of, with-max-wait, and the two default constructors. The formulas live
in :mod:`refimpl.workqueue.backoff`; the classes keep per-item counters. Each limiter
has its own lock, as in client-go, so one limiter may serve several queues.
Not modelled in TLA+ (the spec treats delays as non-deterministic).

Time is integer nanoseconds inside, as client-go's ``time.Duration``: every limiter
here answers :meth:`~NsRateLimiter.when_ns`, and ``when`` is ``when_ns / 1e9``.
Constructors take float seconds and convert each once with :func:`refimpl.clock.to_ns`
(nearest nanosecond, so 0.005 is exactly 5 ms). A limiter written elsewhere may offer
``when`` only; the queues then convert its answer the same way.

One deliberate difference: client-go's bucket limiter always reads the wall clock;
here it reads the injected :class:`~refimpl.clock.Clock`, so tests can step time
instead of sleeping.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

from refimpl.clock import NS_PER_SECOND, Clock, RealClock, now_ns_reader, to_ns
from refimpl.workqueue.backoff import (
    INF_DURATION_NS,
    bucket_advance,
    bucket_wait_ns,
    exponential_delay,
    fast_slow_delay,
)

__all__ = [
    "BucketRateLimiter",
    "ControllerRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "NsRateLimiter",
    "RateLimiter",
    "WithMaxWaitRateLimiter",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
]

#: bucket_wait_ns's saturation bound, as a float (the inline copy compares the same).
_INF_FLOAT = float(INF_DURATION_NS)

T = TypeVar("T", bound=Hashable)
T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)


class RateLimiter(Protocol[T_contra]):
    """client-go ``TypedRateLimiter[T]``."""

    def when(self, item: T_contra) -> float:
        """Record one more failure of ``item`` and return how long to wait (seconds)."""
        ...

    def forget(self, item: T_contra) -> None:
        """Drop ``item``'s history: its next delay starts from the beginning again."""
        ...

    def num_requeues(self, item: T_contra) -> int:
        """How many failures are recorded for ``item``."""
        ...


class NsRateLimiter(RateLimiter[T_contra], Protocol[T_contra]):
    """A limiter that also answers in integer nanoseconds (every limiter here does)."""

    def when_ns(self, item: T_contra) -> int:
        """:meth:`RateLimiter.when` in integer nanoseconds (the exact answer)."""
        ...


def _check_delay(value: float, what: str) -> int:
    """A constructor's delay in float seconds, checked, as integer nanoseconds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, got {value!r}")
    if math.isnan(value) or value < 0 or math.isinf(value):
        raise ValueError(f"{what} must be a finite number of seconds >= 0, got {value!r}")
    ns = to_ns(value)
    if ns > INF_DURATION_NS:
        raise ValueError(f"{what} exceeds the largest Go Duration (about 292 years): {value!r}")
    return ns


class _PerItemFailures(Generic[T]):
    """The per-item failure counter both item limiters keep (client-go: a map under a
    mutex). ``record`` returns the count *before* this failure."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: dict[T, int] = {}

    def record(self, item: T) -> int:
        with self._lock:
            before = self._failures.get(item, 0)
            self._failures[item] = before + 1
            return before

    def num_requeues(self, item: T) -> int:
        with self._lock:
            return self._failures.get(item, 0)

    def forget(self, item: T) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def when_ns(self, item: T) -> int:
        raise NotImplementedError

    def when(self, item: T) -> float:
        """:meth:`when_ns` in float seconds."""
        return self.when_ns(item) / NS_PER_SECOND


class ItemExponentialFailureRateLimiter(_PerItemFailures[T]):
    """``base * 2**failures``, capped at ``max_delay``; ``forget`` starts over.

    With client-go's controller default (5 ms, 1000 s) the n-th consecutive ``when``
    returns 5 ms * 2**(n-1): 655.36 s at n = 18, and the cap of 1000 s (16 min 40 s)
    from n = 19 on. ``base_delay`` / ``max_delay`` are the seconds given;
    ``base_ns`` / ``max_ns`` what the arithmetic uses.
    """

    def __init__(self, base_delay: float, max_delay: float) -> None:
        self.base_ns = _check_delay(base_delay, "base_delay")
        self.max_ns = _check_delay(max_delay, "max_delay")
        self.base_delay = float(base_delay)
        self.max_delay = float(max_delay)
        super().__init__()

    def when_ns(self, item: T) -> int:
        exp = self.record(item)
        return exponential_delay(self.base_ns, self.max_ns, exp)


class ItemFastSlowRateLimiter(_PerItemFailures[T]):
    """``fast_delay`` for the first ``max_fast_attempts`` failures, then ``slow_delay``.

    A negative ``max_fast_attempts`` raises ``ValueError`` (client-go accepts it and is
    then always slow, like 0; a negative count is a mistake, not a setting).
    """

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        self.fast_ns = _check_delay(fast_delay, "fast_delay")
        self.slow_ns = _check_delay(slow_delay, "slow_delay")
        self.fast_delay = float(fast_delay)
        self.slow_delay = float(slow_delay)
        if max_fast_attempts < 0:
            raise ValueError(f"max_fast_attempts must be >= 0, got {max_fast_attempts!r}")
        self.max_fast_attempts = max_fast_attempts
        super().__init__()

    def when_ns(self, item: T) -> int:
        attempts = self.record(item) + 1
        return fast_slow_delay(self.fast_ns, self.slow_ns, self.max_fast_attempts, attempts)


class BucketRateLimiter(Generic[T]):
    """An overall token bucket: ``qps`` tokens a second, at most ``burst`` saved up.

    Every ``when`` reserves one token, whatever the item, and the reservation is never
    cancelled (x/time/rate ``Reserve().Delay()``): a burst of k calls at one instant gets
    zero delay for the first ``burst`` calls and ``(k - burst) / qps`` for the k-th.
    ``num_requeues`` is always 0 and ``forget`` does nothing.

    The arithmetic is x/time/rate's to the nanosecond: times are the clock's integer
    nanoseconds, elapsed time becomes tokens through Go's ``Duration.Seconds`` and the
    delay is truncated to whole nanoseconds (``durationFromTokens``), so 0.85 tokens of
    debt at 10 qps wait 84,999,999 ns, not 85 ms. ``when`` returns that count over 1e9.
    """

    def __init__(self, qps: float, burst: int, *, clock: Clock | None = None) -> None:
        if not qps > 0 or math.isinf(qps):
            raise ValueError(f"qps must be a finite rate > 0, got {qps!r}")
        if burst < 1:
            # x/time/rate would make every reservation wait forever; say so instead.
            raise ValueError(f"burst must be >= 1, got {burst!r}")
        self.qps = float(qps)
        self.burst = burst
        self._clock: Clock = clock if clock is not None else RealClock()
        self._now_ns = now_ns_reader(self._clock)
        self._lock = threading.Lock()
        self._tokens = float(burst)  # a new bucket starts full
        self._last: int | None = None  # ns of the last reservation

    def _reserve(self) -> int:
        """Take one token (the caller holds the lock); the wait in ns."""
        now = self._now_ns()
        # x/time/rate starts from the zero time, so the first call refills a full
        # bucket: nothing to add.
        elapsed = 0 if self._last is None else now - self._last
        tokens = bucket_advance(self._tokens, elapsed, self.qps, self.burst) - 1
        self._last = now
        self._tokens = tokens
        return bucket_wait_ns(tokens, self.qps)

    def when_ns(self, item: T) -> int:
        with self._lock:
            return self._reserve()

    def when(self, item: T) -> float:
        return self.when_ns(item) / NS_PER_SECOND

    def num_requeues(self, item: T) -> int:
        return 0

    def forget(self, item: T) -> None:
        return None

    def tokens(self) -> float:
        """Tokens left after the last reservation (negative while in debt)."""
        with self._lock:
            return self._tokens


def _when_ns_of(limiter: RateLimiter[T]) -> Callable[[T], int]:
    """``limiter.when_ns``, or its ``when`` converted once to ns for a foreign limiter."""
    when_ns: Callable[[T], int] | None = getattr(limiter, "when_ns", None)
    if when_ns is not None:
        return when_ns
    when = limiter.when

    def converted(item: T) -> int:
        return to_ns(when(item))

    return converted


class MaxOfRateLimiter(Generic[T]):
    """Asks every limiter (all side effects happen) and waits the longest answer."""

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        self.limiters = limiters

    def when_ns(self, item: T) -> int:
        longest = 0
        for limiter in self.limiters:
            delay = _when_ns_of(limiter)(item)
            if delay > longest:
                longest = delay
        return longest

    def when(self, item: T) -> float:
        return self.when_ns(item) / NS_PER_SECOND

    def num_requeues(self, item: T) -> int:
        return max((limiter.num_requeues(item) for limiter in self.limiters), default=0)

    def forget(self, item: T) -> None:
        for limiter in self.limiters:
            limiter.forget(item)


class WithMaxWaitRateLimiter(Generic[T]):
    """Caps another limiter's delay at ``max_delay`` (client-go since v1.23)."""

    def __init__(self, limiter: RateLimiter[T], max_delay: float) -> None:
        self.limiter = limiter
        self.max_ns = _check_delay(max_delay, "max_delay")
        self.max_delay = float(max_delay)

    def when_ns(self, item: T) -> int:
        return min(_when_ns_of(self.limiter)(item), self.max_ns)

    def when(self, item: T) -> float:
        return self.when_ns(item) / NS_PER_SECOND

    def num_requeues(self, item: T) -> int:
        return self.limiter.num_requeues(item)

    def forget(self, item: T) -> None:
        self.limiter.forget(item)


class ControllerRateLimiter(MaxOfRateLimiter[T]):
    """``MaxOf(exponential, bucket)`` -- client-go's controller default -- as one lean
    object.

    Same answers and side effects as :class:`MaxOfRateLimiter` over its two
    ``limiters`` (tests/test_rate_limiters.py compares them on random sequences), but
    one lock round trip and no per-limiter calls: the two limiters share one lock, and
    ``when_ns`` does both limiters' arithmetic under it -- the formulas of
    :func:`~refimpl.workqueue.backoff.exponential_delay`,
    :func:`~refimpl.workqueue.backoff.bucket_advance` and
    :func:`~refimpl.workqueue.backoff.bucket_wait_ns`, written inline. ``forget`` and
    ``num_requeues`` are the exponential limiter's (the bucket keeps no per-item state).
    The two limiters stay usable on their own; they see the same state.

    Kept for speed: benchmarks/workqueue.py's add_rate_limited + forget costs about 30%
    less than over a plain MaxOfRateLimiter.
    """

    def __init__(
        self,
        exponential: ItemExponentialFailureRateLimiter[T],
        bucket: BucketRateLimiter[T],
    ) -> None:
        super().__init__(exponential, bucket)
        bucket._lock = exponential._lock  # one lock for both; neither nests it
        self._lock = exponential._lock
        self._failures = exponential._failures
        self._exponential = exponential
        self._bucket = bucket
        self._now_ns = bucket._now_ns
        base = exponential.base_ns
        # exponential_delay's float64 rounding of a huge base, done once.
        self._base = base if base < 1 << 53 else int(float(base))
        self._cap = exponential.max_ns
        self._qps = bucket.qps
        self._burst = bucket.burst

    def when_ns(self, item: T) -> int:
        failures = self._failures
        bucket = self._bucket
        with self._lock:
            before = failures.get(item, 0)
            failures[item] = before + 1
            # bucket._reserve(), inline: advance to now, take one token.
            now = self._now_ns()
            last = bucket._last
            tokens = bucket._tokens
            if last is not None and now > last:
                elapsed = now - last
                seconds = elapsed // 1_000_000_000 + (elapsed % 1_000_000_000) / 1e9
                tokens += seconds * self._qps
                if tokens > self._burst:
                    tokens = self._burst
            tokens -= 1
            bucket._last = now
            bucket._tokens = tokens
        if tokens < 0:
            duration = (-tokens / self._qps) * 1e9
            wait = INF_DURATION_NS if duration > _INF_FLOAT else int(duration)
        else:
            wait = 0
        cap = self._cap
        if before < 63:
            per_item = self._base << before
            if per_item > cap:
                per_item = cap
        else:
            per_item = cap if self._base else 0
        return per_item if per_item > wait else wait

    def num_requeues(self, item: T) -> int:
        return self._exponential.num_requeues(item)  # the bucket counts nothing

    def forget(self, item: T) -> None:
        self._exponential.forget(item)  # the bucket's forget does nothing


def default_controller_rate_limiter(*, clock: Clock | None = None) -> ControllerRateLimiter[T]:
    """client-go's ``DefaultTypedControllerRateLimiter``: per item 5 ms doubling to a
    1000 s ceiling, and overall 10 qps with a burst of 100 (a
    :class:`ControllerRateLimiter`, which is a :class:`MaxOfRateLimiter`)."""
    return ControllerRateLimiter(
        ItemExponentialFailureRateLimiter[T](0.005, 1000.0),
        BucketRateLimiter[T](10.0, 100, clock=clock),
    )


def default_item_based_rate_limiter() -> ItemExponentialFailureRateLimiter[T]:
    """client-go's ``DefaultTypedItemBasedRateLimiter``: 1 ms doubling to 1000 s."""
    return ItemExponentialFailureRateLimiter[T](0.001, 1000.0)
