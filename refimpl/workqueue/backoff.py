"""The pure arithmetic of the rate limiters, with contracts CrossHair checks.

Ports the formulas inside ``util/workqueue/default_rate_limiters.go``
(``TypedItemExponentialFailureRateLimiter.When``, ``TypedItemFastSlowRateLimiter.When``)
and the token arithmetic of ``golang.org/x/time/rate`` (``advance``, ``reserveN``).
Functions only: no state, no clock, no locks. ``make test`` runs
``crosshair check --analysis_kind=PEP316`` on this file, so every ``post:`` line below is
searched for a counterexample within a time bound. Not modelled in TLA+ (the spec
abstracts delays as non-deterministic).
"""

from __future__ import annotations

__all__ = ["bucket_advance", "bucket_wait", "exponential_delay", "fast_slow_delay"]


def exponential_delay(base: float, cap: float, failures: int) -> float:
    """Delay before retry number ``failures + 1``: ``min(base * 2**failures, cap)``.

    ``failures`` is how many times ``when`` was called for the item before (client-go
    reads the counter, then increments it). Like client-go, a product too large to
    represent yields the cap.

    pre: 0 <= base <= cap
    pre: cap < 1e12
    pre: 0 <= failures
    post: base <= __return__ <= cap
    post: failures > 0 or __return__ == base
    """
    if base == 0:
        return 0.0  # nothing to double (Go's 0 * +Inf would be NaN, then undefined)
    try:
        delay = base * 2.0**failures
    except OverflowError:  # 2.0**1024 and up: client-go's product is +Inf -> the cap
        return cap
    return cap if delay > cap else delay


def fast_slow_delay(fast: float, slow: float, max_fast_attempts: int, attempts: int) -> float:
    """``fast`` for the first ``max_fast_attempts`` attempts, ``slow`` afterwards.

    ``attempts`` counts the current call (client-go increments before comparing).

    pre: 0 <= fast and 0 <= slow
    pre: 1 <= attempts
    post: __return__ == (fast if attempts <= max_fast_attempts else slow)
    """
    return fast if attempts <= max_fast_attempts else slow


def bucket_advance(tokens: float, last: float, now: float, limit: float, burst: int) -> float:
    """Tokens available at ``now``: refill at ``limit`` per second, capped at ``burst``.

    A ``now`` earlier than ``last`` refills nothing (x/time/rate treats it as ``last``).

    pre: 0 < limit < 1e9
    pre: 1 <= burst
    pre: tokens <= burst
    pre: abs(now) < 1e12 and abs(last) < 1e12
    post: __return__ <= burst
    post: __return__ >= tokens
    """
    elapsed = max(0.0, now - last)
    refilled = tokens + elapsed * limit
    return burst if refilled > burst else refilled


def bucket_wait(tokens_after: float, limit: float) -> float:
    """How long a reservation that left ``tokens_after`` tokens must wait.

    pre: 0 < limit < 1e9
    pre: abs(tokens_after) < 1e12
    post: __return__ >= 0
    post: (__return__ == 0) == (tokens_after >= 0)
    """
    if tokens_after >= 0:
        return 0.0
    return -tokens_after / limit
