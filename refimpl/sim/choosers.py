"""Who decides what happens next: the simulator's scheduler choices.

A chooser answers ``choose(n, weights)`` with an index in ``range(n)``; it holds no
simulator state, never reads a clock and never starts a thread. Index 0 is always the
most ordinary choice (the simulator lists progress before faults), so a Hypothesis
chooser shrinks towards "just make progress". Plays the role of TLC's choice of the next
``Next`` disjunct (``spec/Informer.tla``: the behaviour, not a variable).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

__all__ = [
    "ChoiceOutOfRange",
    "Chooser",
    "DataChooser",
    "FirstChooser",
    "SeededChooser",
    "TapeChooser",
    "parse_tape",
]


class Chooser(Protocol):
    """Picks one of ``n`` options. ``weights`` (positive ints, one per option) say how
    likely each is to a random chooser; replaying choosers ignore them."""

    def choose(self, n: int, weights: Sequence[int] | None = None) -> int: ...


def _check_n(n: int) -> None:
    if n < 1:
        raise ValueError(f"choose: need at least one option, got n={n}")


def _weighted(r: int, weights: Sequence[int]) -> int:
    """The option whose cumulative weight band holds ``r`` (0 <= r < sum)."""
    for i, w in enumerate(weights):
        if r < w:
            return i
        r -= w
    return len(weights) - 1


class SeededChooser:
    """Random choices from ``random.Random(seed)`` only: the same seed, the same run."""

    def __init__(self, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, got {seed!r}")
        self.seed = seed
        self._rng = random.Random(seed)

    def choose(self, n: int, weights: Sequence[int] | None = None) -> int:
        _check_n(n)
        if n == 1:
            return 0
        if weights is None:
            return self._rng.randrange(n)
        return _weighted(self._rng.randrange(sum(weights)), weights)


class FirstChooser:
    """Always option 0: the simulator's canonical "drain in order" policy."""

    def choose(self, n: int, weights: Sequence[int] | None = None) -> int:
        _check_n(n)
        return 0


class ChoiceOutOfRange(ValueError):
    """A strict tape's choice names no enabled action (``refimpl sim replay --choices``)."""


class TapeChooser:
    """Replays a list of recorded indices (a value >= n wraps: ``v % n``, which the
    shrinker's edited tapes rely on; ``strict``: raises :class:`ChoiceOutOfRange`
    instead, for a tape a user typed); once the tape is used up every answer is 0. A
    recorded run's choices replay it exactly."""

    def __init__(self, tape: Iterable[int], *, strict: bool = False) -> None:
        self.tape = list(tape)
        for v in self.tape:
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"a choice tape holds non-negative ints, got {v!r}")
        self._pos = 0
        self.strict = strict

    def choose(self, n: int, weights: Sequence[int] | None = None) -> int:
        _check_n(n)
        if self._pos >= len(self.tape):
            return 0
        v = self.tape[self._pos]
        self._pos += 1
        if self.strict and v >= n:
            raise ChoiceOutOfRange(
                f"choice {self._pos} of the list is {v}, but only {n} choices "
                f"(0-{n - 1}) are open there"
            )
        return v % n


class DataChooser:
    """Lets Hypothesis choose (``data.draw``), honouring the weights, so a failing
    interleaving shrinks towards index 0 -- plain progress -- everywhere except the few
    choices that matter. ``data`` is the object ``hypothesis.strategies.data()`` gives."""

    def __init__(self, data: Any) -> None:
        from hypothesis import strategies as st  # a test-time dependency only

        self._data = data
        self._st = st
        self._ints: dict[int, Any] = {}

    def choose(self, n: int, weights: Sequence[int] | None = None) -> int:
        _check_n(n)
        if n == 1:
            return 0
        total = n if weights is None else sum(weights)
        strategy = self._ints.get(total)
        if strategy is None:
            strategy = self._ints[total] = self._st.integers(0, total - 1)
        r: int = self._data.draw(strategy)
        return r if weights is None else _weighted(r, weights)


def parse_tape(text: str) -> list[int]:
    """``"0,3,1"`` (commas and/or spaces) -> ``[0, 3, 1]``; a clear ValueError otherwise."""
    parts = [p for p in text.replace(",", " ").split() if p]
    try:
        values = [int(p) for p in parts]
    except ValueError:
        raise ValueError(f"a choice list is comma-separated integers, got {text!r}") from None
    if any(v < 0 for v in values):
        raise ValueError(f"choices must be >= 0, got {text!r}")
    return values
