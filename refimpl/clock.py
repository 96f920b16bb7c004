"""Clocks: the one place where refimpl learns what time it is.

Ports the role of ``k8s.io/utils/clock`` (``Clock`` and ``clock/testing.FakeClock``).
Cores never read the wall clock: they take ``now`` as an argument or a ``Clock``.
Shells wait through :meth:`Clock.wait_until`, so a :class:`FakeClock` can wake them
when a test steps time -- no test ever sleeps to let time pass.

Times are float seconds on a monotonic scale (client-go uses ``time.Duration``
nanoseconds; floats keep the arithmetic readable and are exact for the powers of two
the backoff formulas use).
"""

from __future__ import annotations

import math
import threading
import time
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "FakeClock", "RealClock", "check_duration"]


@runtime_checkable
class Clock(Protocol):
    """What every time-dependent component needs from a clock."""

    def now(self) -> float:
        """The current time in seconds (monotonic)."""
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
        return time.monotonic()

    def wait_until(self, cond: threading.Condition, deadline: float | None) -> None:
        if deadline is None:
            cond.wait()
            return
        remaining = deadline - time.monotonic()
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
        self._now = float(start)
        # Conditions with a thread currently parked in wait_until/sleep, and how many
        # threads park on each. Entries leave when their last waiter returns.
        self._waiters: dict[threading.Condition, int] = {}

    def now(self) -> float:
        with self._lock:
            return self._now

    def step(self, seconds: float) -> None:
        """Advance time by ``seconds`` (>= 0) and wake every waiter."""
        check_duration(seconds, "step")
        if seconds < 0:
            raise ValueError(f"FakeClock cannot go backwards (step {seconds!r})")
        with self._lock:
            self._now += seconds
        self._wake_all()

    def set_time(self, t: float) -> None:
        """Jump to absolute time ``t`` (never backwards) and wake every waiter."""
        with self._lock:
            if t < self._now:
                raise ValueError(f"FakeClock cannot go backwards ({t!r} < {self._now!r})")
            self._now = float(t)
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
            if deadline is not None and self._now >= deadline:
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
            deadline = self.now() + seconds
            while self.now() < deadline:
                self.wait_until(cond, deadline)

    def has_waiters(self) -> bool:
        """True when some thread is parked on this clock (tests use it to sync)."""
        with self._lock:
            return len(self._waiters) > 0


def check_duration(seconds: float, what: str) -> None:
    """Reject NaN durations with a clear error (Go durations are integers; NaN is ours)."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"{what}: duration must be a number of seconds, got {seconds!r}")
    if math.isnan(seconds):
        raise ValueError(f"{what}: duration must not be NaN")
