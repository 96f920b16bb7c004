"""Rate limiters: how long an item waits before its next retry.

Ports ``util/workqueue/default_rate_limiters.go``: the per-item exponential and
fast/slow limiters, the token bucket (``golang.org/x/time/rate`` reservation
semantics), max-of, with-max-wait, and the two default constructors. The formulas live
in :mod:`refimpl.workqueue.backoff`; the classes keep per-item counters. Each limiter
has its own lock, as in client-go, so one limiter may serve several queues.
Not modelled in TLA+ (the spec treats delays as non-deterministic).

Durations are float seconds. One deliberate difference: client-go's bucket limiter
always reads the wall clock; here it reads the injected :class:`~refimpl.clock.Clock`,
so tests can step time instead of sleeping.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

from refimpl.clock import NS_PER_SECOND, Clock, RealClock
from refimpl.workqueue.backoff import (
    bucket_advance,
    bucket_wait_ns,
    exponential_delay,
    fast_slow_delay,
)

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "WithMaxWaitRateLimiter",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
]

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


def _check_delay(value: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, got {value!r}")
    if math.isnan(value) or value < 0 or math.isinf(value):
        raise ValueError(f"{what} must be a finite number of seconds >= 0, got {value!r}")
    return float(value)


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


class ItemExponentialFailureRateLimiter(_PerItemFailures[T]):
    """``base * 2**failures``, capped at ``max_delay``; ``forget`` starts over.

    With client-go's controller default (5 ms, 1000 s) the n-th consecutive ``when``
    returns 5 ms * 2**(n-1): 655.36 s at n = 18, and the cap of 1000 s (16 min 40 s)
    from n = 19 on.
    """

    def __init__(self, base_delay: float, max_delay: float) -> None:
        self.base_delay = _check_delay(base_delay, "base_delay")
        self.max_delay = _check_delay(max_delay, "max_delay")
        super().__init__()

    def when(self, item: T) -> float:
        exp = self.record(item)
        if self.base_delay > self.max_delay:
            return self.max_delay
        return exponential_delay(self.base_delay, self.max_delay, exp)


class ItemFastSlowRateLimiter(_PerItemFailures[T]):
    """``fast_delay`` for the first ``max_fast_attempts`` failures, then ``slow_delay``.

    A negative ``max_fast_attempts`` raises ``ValueError`` (client-go accepts it and is
    then always slow, like 0; a negative count is a mistake, not a setting).
    """

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        self.fast_delay = _check_delay(fast_delay, "fast_delay")
        self.slow_delay = _check_delay(slow_delay, "slow_delay")
        if max_fast_attempts < 0:
            raise ValueError(f"max_fast_attempts must be >= 0, got {max_fast_attempts!r}")
        self.max_fast_attempts = max_fast_attempts
        super().__init__()

    def when(self, item: T) -> float:
        attempts = self.record(item) + 1
        return fast_slow_delay(self.fast_delay, self.slow_delay, self.max_fast_attempts, attempts)


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
        self._lock = threading.Lock()
        self._tokens = float(burst)  # a new bucket starts full
        self._last_ns: int | None = None

    def when(self, item: T) -> float:
        with self._lock:
            now = self._clock.now_ns()
            # x/time/rate starts from the zero time, so the first call refills a full
            # bucket: nothing to add.
            elapsed = 0 if self._last_ns is None else now - self._last_ns
            tokens = bucket_advance(self._tokens, elapsed, self.qps, self.burst) - 1
            self._last_ns = now
            self._tokens = tokens
            return bucket_wait_ns(tokens, self.qps) / NS_PER_SECOND

    def num_requeues(self, item: T) -> int:
        return 0

    def forget(self, item: T) -> None:
        return None

    def tokens(self) -> float:
        """Tokens left after the last reservation (negative while in debt)."""
        with self._lock:
            return self._tokens


class MaxOfRateLimiter(Generic[T]):
    """Asks every limiter (all side effects happen) and waits the longest answer."""

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        self.limiters = limiters

    def when(self, item: T) -> float:
        longest = 0.0
        for limiter in self.limiters:
            longest = max(longest, limiter.when(item))
        return longest

    def num_requeues(self, item: T) -> int:
        return max((limiter.num_requeues(item) for limiter in self.limiters), default=0)

    def forget(self, item: T) -> None:
        for limiter in self.limiters:
            limiter.forget(item)


class WithMaxWaitRateLimiter(Generic[T]):
    """Caps another limiter's delay at ``max_delay`` (client-go since v1.23)."""

    def __init__(self, limiter: RateLimiter[T], max_delay: float) -> None:
        self.limiter = limiter
        self.max_delay = _check_delay(max_delay, "max_delay")

    def when(self, item: T) -> float:
        return min(self.limiter.when(item), self.max_delay)

    def num_requeues(self, item: T) -> int:
        return self.limiter.num_requeues(item)

    def forget(self, item: T) -> None:
        self.limiter.forget(item)


def default_controller_rate_limiter(*, clock: Clock | None = None) -> MaxOfRateLimiter[T]:
    """client-go's ``DefaultTypedControllerRateLimiter``: per item 5 ms doubling to a
    1000 s ceiling, and overall 10 qps with a burst of 100."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter[T](0.005, 1000.0),
        BucketRateLimiter[T](10.0, 100, clock=clock),
    )


def default_item_based_rate_limiter() -> ItemExponentialFailureRateLimiter[T]:
    """client-go's ``DefaultTypedItemBasedRateLimiter``: 1 ms doubling to 1000 s."""
    return ItemExponentialFailureRateLimiter[T](0.001, 1000.0)
