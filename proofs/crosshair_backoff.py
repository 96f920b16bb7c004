"""CrossHair targets about the backoff formulas that need two calls to state.

``make test`` checks this file with ``crosshair check --analysis_kind=PEP316`` beside
``refimpl/workqueue/backoff.py`` (whose own contracts bound each single delay).
What it establishes: the exponential delay never shrinks from one failure to the next,
at most doubles, and the token bucket never refills faster than its rate.
"""

from __future__ import annotations

from refimpl.workqueue.backoff import bucket_advance, exponential_delay


def consecutive_delays(base: int, cap: int, failures: int) -> tuple[int, int]:
    """Delays (ns) for failure counts ``failures`` and ``failures + 1``.

    pre: 0 <= base <= cap
    pre: cap < 2**53
    pre: 0 <= failures
    post: __return__[0] <= __return__[1]
    post: __return__[1] <= 2 * __return__[0] or base == 0
    """
    return exponential_delay(base, cap, failures), exponential_delay(base, cap, failures + 1)


def refill_bound(tokens: float, elapsed_ns: int, limit: float, burst: int) -> float:
    """Tokens gained in ``elapsed_ns`` nanoseconds.

    pre: 0 < limit < 1e9
    pre: 1 <= burst
    pre: -1e12 < tokens <= burst
    pre: abs(elapsed_ns) < 2**62
    post: __return__ <= max(0, elapsed_ns) / 1e9 * limit * (1 + 1e-9) + 1e-6 * (1 + abs(tokens))
    """
    return bucket_advance(tokens, elapsed_ns, limit, burst) - tokens
