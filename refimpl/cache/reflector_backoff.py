"""The reflector's retry delays: apimachinery ``wait.Backoff`` and ``DelayWithReset``.

Owns a backoff's current duration and remaining steps, and when it was last reset;
never sleeps or starts a thread -- it only *computes* delays, reading the injected clock
(for the reset rule) and the injected ``random.Random`` (for jitter, so a seed replays).
Ports ``k8s.io/apimachinery/pkg/util/wait`` (``Backoff.Step``, ``delay``, ``Jitter``,
``Backoff.DelayWithReset``, ``backoffManager.Step``) with the reflector's defaults from
``tools/cache/reflector.go``. Refines nothing: the reflector actions of
``spec/Informer.tla`` abstract every delay as a non-deterministic wait.

Times are float seconds (Go truncates durations to nanoseconds; we do not).
"""

from __future__ import annotations

import math
import random

import attrs

from refimpl.clock import Clock

__all__ = [
    "BACKOFF_RESET",
    "DEFAULT_BACKOFF",
    "Backoff",
    "DelayWithReset",
    "delay",
    "jitter",
]


def _check(value: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number, got {value!r}")
    if math.isnan(value) or value < 0:
        raise ValueError(f"{what} must be >= 0 and not NaN, got {value!r}")
    return float(value)


def jitter(duration: float, max_factor: float, rng: random.Random) -> float:
    """A delay uniform in ``[duration, duration * (1 + max_factor))``; a
    ``max_factor <= 0`` counts as 1 (Go ``wait.Jitter``)."""
    if max_factor <= 0.0:
        max_factor = 1.0
    return duration + rng.random() * max_factor * duration


def delay(
    steps: int,
    duration: float,
    cap: float,
    factor: float,
    jitter_factor: float,
    rng: random.Random,
) -> tuple[float, float, int]:
    """One step: ``(this delay, next duration, next steps)`` (Go ``wait.delay``).

    With no steps left the duration no longer grows (jittered if ``jitter_factor``).
    Otherwise this delay is ``duration`` (jittered) and the next duration is
    ``duration * factor``; if that passes a positive ``cap`` it becomes ``cap`` and the
    steps drop to 0, so every later delay is jitter around the cap.
    """
    if steps < 1:
        this = jitter(duration, jitter_factor, rng) if jitter_factor > 0 else duration
        return this, duration, 0
    steps -= 1
    if factor != 0:
        nxt = duration * factor
        if cap > 0 and nxt > cap:
            nxt = cap
            steps = 0
    else:
        nxt = duration
    this = jitter(duration, jitter_factor, rng) if jitter_factor > 0 else duration
    return this, nxt, steps


@attrs.frozen
class Backoff:
    """Backoff parameters (Go ``wait.Backoff``); immutable, :meth:`step` returns the
    successor instead of mutating."""

    duration: float
    factor: float = 0.0
    jitter: float = 0.0
    steps: int = 0
    cap: float = 0.0

    def __attrs_post_init__(self) -> None:
        _check(self.duration, "Backoff.duration")
        _check(self.factor, "Backoff.factor")
        _check(self.jitter, "Backoff.jitter")
        _check(self.cap, "Backoff.cap")
        if isinstance(self.steps, bool) or not isinstance(self.steps, int):
            raise TypeError(f"Backoff.steps must be an int, got {self.steps!r}")

    def step(self, rng: random.Random) -> tuple[float, Backoff]:
        """``(delay, the backoff for the next step)``."""
        this, nxt, steps = delay(self.steps, self.duration, self.cap, self.factor, self.jitter, rng)
        return this, attrs.evolve(self, duration=nxt, steps=steps)


#: The reflector's default: 0.8 s doubling to a 30 s cap, +0-100 % jitter, and
#: ``ceil(30 / 0.8) = 38`` steps (the cap is reached long before they run out).
DEFAULT_BACKOFF = Backoff(duration=0.8, factor=2.0, jitter=1.0, steps=38, cap=30.0)

#: ``DelayWithReset`` interval used by the reflector (``defaultBackoffReset``).
BACKOFF_RESET = 120.0


class DelayWithReset:
    """A delay function that restarts its backoff after a quiet interval.

    Each call returns the next delay. If more than ``reset_interval`` has passed since
    the last *reset* (initially: construction), the backoff restarts from its initial
    parameters first (v1.36+ rule). With ``since_last_backoff`` the quiet time is
    measured from the previous call instead, as v1.18-v1.35's
    ``exponentialBackoffManagerImpl.getNextBackoff`` did (refimpl/eras.py,
    ``backoff_reset_since_last_reset``): calls that keep coming never reset it. As in
    Go: ``factor <= 0`` gives a plain backoff that never resets; ``reset_interval <= 0``
    gives a constant (jittered) delay.
    """

    def __init__(
        self,
        backoff: Backoff = DEFAULT_BACKOFF,
        *,
        clock: Clock,
        reset_interval: float = BACKOFF_RESET,
        rng: random.Random | None = None,
        since_last_backoff: bool = False,
    ) -> None:
        _check(max(reset_interval, 0.0), "reset_interval")  # negative is allowed, NaN not
        self._rng = rng if rng is not None else random.Random()
        self._clock = clock
        self._resets = backoff.factor > 0 and reset_interval > 0
        if backoff.factor > 0 and reset_interval <= 0:
            backoff = attrs.evolve(backoff, steps=0, factor=0.0)
        self.initial = backoff
        self.current = backoff
        self.reset_interval = reset_interval
        self.last_reset = clock.now()
        self.since_last_backoff = since_last_backoff

    def __call__(self) -> float:
        return self.next_delay(self._clock.now())

    def next_delay(self, now: float) -> float:
        """The delay for a retry decided at ``now`` (the clock-free form of ``()``)."""
        if self._resets and now - self.last_reset > self.reset_interval:
            self.current = self.initial
            self.last_reset = now
        if self.since_last_backoff:
            self.last_reset = now
        this, self.current = self.current.step(self._rng)
        return this
