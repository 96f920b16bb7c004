"""Clocks: the one place where refimpl learns what time it is.

Ports the role of ``k8s.io/utils/clock`` (``Clock`` and ``clock/testing.FakeClock``).
Cores never read the wall clock: they take ``now`` as an argument or a ``Clock``.
Shells wait through :meth:`Clock.wait_until`, so a :class:`FakeClock` can wake them
when a test steps time -- no test ever sleeps to let time pass.

Time is kept as integer nanoseconds, as Go's ``time.Duration`` and ``time.Time`` keep
it, so that stepping 9 ms then 1 ms reaches a 10 ms deadline exactly (float seconds
would give 0.009 + 0.001 < 0.01). The public methods still speak float seconds for
readability; :func:`to_ns` converts a seconds value once, rounding to the nearest
nanosecond (integers and integer-valued floats exactly), and ``*_ns`` variants take and
give nanoseconds directly. ``now()`` is ``now_ns() / 1e9``: it is monotone in
``now_ns()``, so comparisons made in seconds agree with those made in nanoseconds.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Protocol, runtime_checkable

__all__ = [
    "NS_PER_SECOND",
    "Clock",
    "FakeClock",
    "RealClock",
    "check_duration",
    "now_ns_reader",
    "to_ns",
]

#: Nanoseconds in a second.
NS_PER_SECOND = 1_000_000_000
# Below this many seconds a float times 1e9 rounds to the same integer as the exact
# product would (the product stays far under 2**53); above it we multiply exactly.
_FAST_LIMIT = 1 << 20


def to_ns(seconds: float) -> int:
    """``seconds`` as integer nanoseconds, rounded to the nearest (ties to even).

    Integers and integer-valued floats convert exactly; this is the one place where a
    float duration meets integer time. Infinite or NaN values raise.
    """
    if isinstance(seconds, int):
        return seconds * NS_PER_SECOND
    if seconds.is_integer():
        return int(seconds) * NS_PER_SECOND
    if -_FAST_LIMIT < seconds < _FAST_LIMIT:
        return round(seconds * NS_PER_SECOND)
    return round(Fraction(seconds) * NS_PER_SECOND)


@runtime_checkable
class Clock(Protocol):
    """What every time-dependent component needs from a clock."""

    def now(self) -> float:
        """The current time in seconds (monotonic)."""
        ...

    def now_ns(self) -> int:
        """The current time in integer nanoseconds (the same scale as :meth:`now`)."""
        ...

    def wait_until(self, cond: threading.Condition, deadline: float | None) -> None:
        """Wait on ``cond`` (which the caller holds) until notified or ``deadline``.

        ``deadline=None`` waits for a notification only. Spurious returns are allowed,
        exactly as with :meth:`threading.Condition.wait`; callers re-check their
        predicate in a loop.
        """
        ...

    def sleep(self, seconds: float) -> None:
        """Block the calling thread for ``seconds`` of this clock's time."""
        ...


class RealClock:
    """The machine's monotonic clock."""

    def now(self) -> float:
        return time.monotonic_ns() / NS_PER_SECOND

    def now_ns(self) -> int:
        return time.monotonic_ns()

    def wait_until(self, cond: threading.Condition, deadline: float | None) -> None:
        if deadline is None:
            cond.wait()
            return
        remaining = deadline - time.monotonic_ns() / NS_PER_SECOND
        if remaining > 0:
            cond.wait(remaining)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class FakeClock:
    """A clock that moves only when told to (``step`` / ``set_time``).

    Threads waiting through :meth:`wait_until` are woken whenever time moves, so a
    shell's timer loop re-checks its deadlines against the new time. Like client-go's
    ``FakeClock``, stepping never blocks on the waiters' work.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._lock = threading.Lock()
        check_duration(start, "FakeClock start")
        self._now = to_ns(start)  # integer nanoseconds
        # Conditions with a thread currently parked in wait_until/sleep, and how many
        # threads park on each. Entries leave when their last waiter returns.
        self._waiters: dict[threading.Condition, int] = {}

    def now(self) -> float:
        # Reading an int attribute is atomic under the GIL; no lock needed.
        return self._now / NS_PER_SECOND

    def now_ns(self) -> int:
        return self._now

    def step(self, seconds: float) -> None:
        """Advance time by ``seconds`` (>= 0, converted once by :func:`to_ns`) and wake
        every waiter."""
        check_duration(seconds, "step")
        if seconds < 0:
            raise ValueError(f"FakeClock cannot go backwards (step {seconds!r})")
        self.step_ns(to_ns(seconds))

    def step_ns(self, ns: int) -> None:
        """Advance time by ``ns`` nanoseconds (>= 0) and wake every waiter."""
        if ns < 0:
            raise ValueError(f"FakeClock cannot go backwards (step {ns!r} ns)")
        with self._lock:
            self._now += ns
        self._wake_all()

    def set_time(self, t: float) -> None:
        """Jump to absolute time ``t`` seconds (never backwards) and wake every waiter.

        Lands on the first nanosecond whose ``now()`` is ``>= t``, so a float deadline
        set this way counts as reached (``t = n / 1e9`` still lands exactly on ``n``).
        """
        check_duration(t, "set_time")
        ns = to_ns(t)
        if ns / NS_PER_SECOND < t:
            ns += 1
        self.set_time_ns(ns)

    def set_time_ns(self, t: int) -> None:
        """Jump to absolute time ``t`` nanoseconds (never backwards); wake every waiter."""
        with self._lock:
            if t < self._now:
                raise ValueError(f"FakeClock cannot go backwards ({t!r} < {self._now!r} ns)")
            self._now = t
        self._wake_all()

    def _wake_all(self) -> None:
        with self._lock:
            waiters = list(self._waiters)
        for cond in waiters:
            with cond:
                cond.notify_all()

    def wait_until(self, cond: threading.Condition, deadline: float | None) -> None:
        # The caller holds ``cond``: a step() that lands between our deadline check and
        # cond.wait() must take ``cond`` to notify, so it cannot slip through unseen.
        with self._lock:
            if deadline is not None and self._now / NS_PER_SECOND >= deadline:
                return
            self._waiters[cond] = self._waiters.get(cond, 0) + 1
        try:
            cond.wait()
        finally:
            with self._lock:
                left = self._waiters[cond] - 1
                if left:
                    self._waiters[cond] = left
                else:
                    del self._waiters[cond]

    def sleep(self, seconds: float) -> None:
        cond = threading.Condition()
        with cond:
            deadline_ns = self._now + to_ns(seconds)
            deadline = deadline_ns / NS_PER_SECOND
            while self._now < deadline_ns:
                self.wait_until(cond, deadline)

    def has_waiters(self) -> bool:
        """True when some thread is parked on this clock (tests use it to sync)."""
        with self._lock:
            return len(self._waiters) > 0


def now_ns_reader(clock: Clock) -> Callable[[], int]:
    """``clock.now_ns`` as one cheap callable: for a :class:`RealClock`,
    ``time.monotonic_ns`` itself (hot paths read the time once per call)."""
    return time.monotonic_ns if type(clock) is RealClock else clock.now_ns


def check_duration(seconds: float, what: str) -> None:
    """Reject NaN durations with a clear error (Go durations are integers; NaN is ours)."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"{what}: duration must be a number of seconds, got {seconds!r}")
    if math.isnan(seconds):
        raise ValueError(f"{what}: duration must not be NaN")
