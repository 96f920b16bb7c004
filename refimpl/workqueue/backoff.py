"""The pure arithmetic of the rate limiters, in integer nanoseconds, with contracts
CrossHair checks.

Ports the formulas inside ``util/workqueue/default_rate_limiters.go``
(``TypedItemExponentialFailureRateLimiter.When``, ``TypedItemFastSlowRateLimiter.When``)
and the token arithmetic of ``golang.org/x/time/rate`` (``advance``, ``reserveN``).
Durations are integer nanoseconds, as Go's ``time.Duration`` holds them; token counts
are floats, as x/time/rate keeps them. Functions only: no state, no clock, no locks.
``make test`` runs ``crosshair check --analysis_kind=PEP316`` on this file, so every
``post:`` line below is searched for a counterexample within a time bound. Not modelled
in TLA+ (the spec abstracts delays as non-deterministic).
"""

from __future__ import annotations

__all__ = [
    "INF_DURATION_NS",
    "bucket_advance",
    "bucket_wait_ns",
    "duration_seconds",
    "exponential_delay",
    "fast_slow_delay",
]


_EXACT_FLOAT = 1 << 53


def exponential_delay(base: int, cap: int, failures: int) -> int:
    """Delay in ns before retry number ``failures + 1``: ``min(base * 2**failures, cap)``.

    ``failures`` is how many times ``when`` was called for the item before (client-go
    reads the counter, then increments it). client-go computes the product in float64
    (so a ``base`` of 2**53 ns or more is first rounded to a float) and answers ``cap``
    once it exceeds the largest Duration; so do we, with integers.

    pre: 0 <= base <= cap <= 9223372036854775807
    pre: 0 <= failures
    post: __return__ <= cap
    post: base <= __return__ or base >= 2**53
    post: failures > 0 or __return__ == base or base >= 2**53
    """
    if base == 0:
        return 0  # nothing to double (Go's 0 * +Inf would be NaN, then undefined)
    if failures >= 63:  # base * 2**63 > MaxInt64 for every base >= 1
        return cap
    if base >= _EXACT_FLOAT:
        base = int(float(base))
    delay = base << failures
    return cap if delay > cap else delay


def fast_slow_delay(fast: int, slow: int, max_fast_attempts: int, attempts: int) -> int:
    """``fast`` (ns) for the first ``max_fast_attempts`` attempts, ``slow`` afterwards.

    ``attempts`` counts the current call (client-go increments before comparing).

    pre: 0 <= fast and 0 <= slow
    pre: 1 <= attempts
    post: __return__ == (fast if attempts <= max_fast_attempts else slow)
    """
    return fast if attempts <= max_fast_attempts else slow


def duration_seconds(ns: int) -> float:
    """Go's ``time.Duration.Seconds``: the whole seconds plus the remainder over 1e9.

    This is how x/time/rate turns elapsed time into tokens (``tokensFromDuration``); it
    can differ from ``ns / 1e9`` in the last bit, which moves a bucket's delay by a
    nanosecond (found by the client-go conformance run: docs/conformance.md).

    pre: abs(ns) < 2**63
    post: (__return__ > 0) == (ns > 0)
    post: (__return__ < 0) == (ns < 0)
    """
    whole, rest = divmod(abs(ns), 1_000_000_000)
    seconds = float(whole) + float(rest) / 1e9
    return -seconds if ns < 0 else seconds


def bucket_advance(tokens: float, elapsed_ns: int, limit: float, burst: int) -> float:
    """Tokens available ``elapsed_ns`` nanoseconds after the last reservation: refill at
    ``limit`` per second, capped at ``burst`` (x/time/rate ``advance``).

    A negative ``elapsed_ns`` (the clock read earlier than the last reservation) refills
    nothing, as x/time/rate treats such a time as the last one.

    pre: 0 < limit < 1e9
    pre: 1 <= burst
    pre: tokens <= burst
    pre: abs(elapsed_ns) < 2**62
    post: __return__ <= burst
    post: __return__ >= tokens
    """
    refilled = tokens + duration_seconds(max(0, elapsed_ns)) * limit
    return burst if refilled > burst else refilled


#: x/time/rate's ``InfDuration`` (the largest Duration): a wait too long to represent.
INF_DURATION_NS = (1 << 63) - 1


def bucket_wait_ns(tokens_after: float, limit: float) -> int:
    """Nanoseconds a reservation that left ``tokens_after`` tokens must wait
    (x/time/rate ``durationFromTokens`` of the debt: ``(debt / limit) * 1e9``, truncated
    toward zero as Go's conversion to Duration does, not rounded). The last bound
    allows 1 ns because CrossHair reasons about floats as reals, where the float product
    may round up to an integer.

    pre: 0 < limit < 1e9
    pre: abs(tokens_after) < 1e12
    post: __return__ >= 0
    post: tokens_after < 0 or __return__ == 0
    post: __return__ <= max(0.0, (-tokens_after / limit) * 1e9) + 1
    """
    if tokens_after >= 0:
        return 0
    wait = (-tokens_after / limit) * 1e9
    if wait > float(INF_DURATION_NS):
        return INF_DURATION_NS
    return int(wait)
