"""Shrinking a violating simulation to a short choice list.

A run is a pure function of its options (scenario, FIFO, faults, objects, batching), its
number of fault steps and the chooser's answers, so a violation found from a seed can be
replayed from its recorded answers with a :class:`~refimpl.sim.choosers.TapeChooser`.
:func:`shrink_run` makes that list small: it replays edited copies and keeps every edit
after which the run still violates the same property. The edits, tried in this order
until none helps or the replay budget is spent:

* fewer fault steps (a bisection on ``steps``: later writes and faults are dropped);
* a shorter list (a bisection on its length: a used-up tape answers 0, plain progress);
* runs of answers set to 0, halving the run length down to single answers;
* runs of answers removed (the later answers move up to earlier decisions), the same
  way (both with :func:`refimpl.shrinking.drop_runs`);
* single answers lowered by one.

Index 0 is always the most ordinary choice (the simulator lists progress actions first),
so what remains nonzero are the decisions the violation needs. The result replays
exactly: ``refimpl sim replay SCENARIO --choices ... --steps N`` with the shrunk list.
Nothing random happens here, so the same violation always shrinks to the same list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from refimpl.shrinking import drop_runs
from refimpl.sim.choosers import Chooser, TapeChooser
from refimpl.sim.result import RunResult
from refimpl.sim.simulator import Simulator

__all__ = ["DEFAULT_SHRINK_RUNS", "Shrunk", "first_property", "shrink_run"]

#: Replays :func:`shrink_run` may spend by default (a replay of a default-sized scenario
#: takes about 0.1-0.3 s of CPU).
DEFAULT_SHRINK_RUNS = 500


@attrs.frozen
class Shrunk:
    """The smallest violating run found.

    ``choices`` has no trailing zeros (a used-up tape answers 0). ``exhausted`` is True
    when the budget ran out before no edit helped any more: a smaller list may exist.
    """

    prop: str
    choices: tuple[int, ...]
    steps: int
    original_choices: int
    original_steps: int
    runs: int
    exhausted: bool
    result: RunResult

    @property
    def nonzero(self) -> int:
        return sum(1 for v in self.choices if v)

    def describe(self) -> str:
        """Lines for the CLI summary (the replay command last)."""
        lines = [
            f"shrunk: {self.steps} fault steps and {len(self.choices)} choices, {self.nonzero} "
            f"not 0 (from {self.original_steps} steps and {self.original_choices} choices; "
            f"{self.runs} replays)",
            f"  first violation: {self.result.violations[0]}",
        ]
        if self.exhausted:
            lines.append("  the replay budget ran out first: a smaller run may exist")
        lines.append(f"replay: {self.result.replay}")
        return "\n".join(lines)


def first_property(result: RunResult) -> str:
    """The property of the run's first violation (``"step N: [prop] ..."``)."""
    if not result.violations:
        raise ValueError("the run violated nothing: there is nothing to shrink")
    return result.violations[0].split("[", 1)[1].split("]", 1)[0]


def _trimmed(tape: Sequence[int]) -> tuple[int, ...]:
    out = list(tape)
    while out and out[-1] == 0:
        out.pop()
    return tuple(out)


class _Budget(Exception):
    """The replay budget is spent."""


class _Shrinker:
    """The best run so far and the edits of :func:`shrink_run`, one method each."""

    def __init__(
        self, make: Callable[[Chooser], Simulator], result: RunResult, max_runs: int
    ) -> None:
        self.make = make
        self.prop = first_property(result)
        self.max_runs = max_runs
        self.runs = 0
        self.best_tape = _trimmed(result.choices)
        self.best_steps = result.steps
        self.best = result

    def violates(self, tape: Sequence[int], steps: int) -> RunResult | None:
        """The replay of ``tape`` for ``steps`` if it violates the property."""
        if self.runs >= self.max_runs:
            raise _Budget
        self.runs += 1
        replayed = self.make(TapeChooser(tape)).run(steps)
        return replayed if replayed.of(self.prop) else None

    def accept(self, tape: Sequence[int], steps: int) -> bool:
        """Keep ``tape`` (trimmed) and ``steps`` if they differ from the best and
        still violate."""
        tape = _trimmed(tape)
        if tape == self.best_tape and steps == self.best_steps:
            return False
        replayed = self.violates(tape, steps)
        if replayed is None:
            return False
        self.best_tape, self.best_steps, self.best = tape, steps, replayed
        return True

    def bisect_steps(self) -> bool:
        """Fewer fault steps: a bisection on ``steps``."""
        lo, hi, improved = 0, self.best_steps, False
        while lo < hi:
            mid = (lo + hi) // 2
            if self.accept(self.best_tape, mid):
                hi, improved = mid, True
            else:
                lo = mid + 1
        return improved

    def bisect_length(self) -> bool:
        """A shorter list: a bisection on its length."""
        lo, hi, improved = 0, len(self.best_tape), False
        while lo < hi:
            mid = (lo + hi) // 2
            if self.accept(self.best_tape[:mid], self.best_steps):
                hi, improved = len(self.best_tape), True
            else:
                lo = mid + 1
        return improved

    def runs_edited(self, edit: Callable[[tuple[int, ...], int, int], tuple[int, ...]]) -> bool:
        """``edit`` applied to runs of answers, from the front, halving the run length
        down to single answers (each size swept once)."""

        def attempt(start: int, stop: int) -> bool:
            tape = self.best_tape
            candidate = edit(tape, start, stop)
            return candidate != tape and self.accept(candidate, self.best_steps)

        return drop_runs(lambda: len(self.best_tape), attempt)

    def lowered(self) -> bool:
        """Single answers lowered by one."""
        improved = False
        for i in range(len(self.best_tape)):
            if i < len(self.best_tape) and self.best_tape[i] > 0:
                tape = self.best_tape
                improved |= self.accept((*tape[:i], tape[i] - 1, *tape[i + 1 :]), self.best_steps)
        return improved

    def round(self) -> bool:
        """Every edit once, in the module docstring's order; whether any helped."""
        progress = self.bisect_steps()
        progress |= self.bisect_length()
        progress |= self.runs_edited(_zeroed)
        progress |= self.runs_edited(_removed)
        progress |= self.lowered()
        return progress


def _zeroed(tape: tuple[int, ...], start: int, stop: int) -> tuple[int, ...]:
    return tape[:start] + (0,) * len(tape[start:stop]) + tape[stop:]


def _removed(tape: tuple[int, ...], start: int, stop: int) -> tuple[int, ...]:
    return tape[:start] + tape[stop:]


def shrink_run(
    make: Callable[[Chooser], Simulator],
    result: RunResult,
    *,
    max_runs: int = DEFAULT_SHRINK_RUNS,
) -> Shrunk:
    """Shrink ``result`` (a violating run) to a short choice list and fewer fault steps
    that still violate the property of its first violation.

    ``make(chooser)`` builds a simulator with the run's options and that chooser (its
    drain must use the same chooser: no ``drain_chooser``). At most ``max_runs`` replays.
    """
    if max_runs < 0:
        raise ValueError(f"max_runs must be >= 0, got {max_runs!r}")
    shrinker = _Shrinker(make, result, max_runs)
    exhausted = False
    try:
        while shrinker.round():
            pass
    except _Budget:
        exhausted = True
    best = shrinker.best
    return Shrunk(
        prop=shrinker.prop,
        # What the shrunk run consumed (answers taken modulo the options; as replayed).
        choices=_trimmed(best.choices),
        steps=shrinker.best_steps,
        original_choices=len(_trimmed(result.choices)),
        original_steps=result.steps,
        runs=shrinker.runs,
        exhausted=exhausted,
        result=best,
    )
