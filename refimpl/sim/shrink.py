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
* runs of answers removed (the later answers move up to earlier decisions);
* single answers lowered by one.

Index 0 is always the most ordinary choice (the simulator lists progress actions first),
so what remains nonzero are the decisions the violation needs. The result replays
exactly: ``refimpl sim replay SCENARIO --choices ... --steps N`` with the shrunk list.
Nothing random happens here, so the same violation always shrinks to the same list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from refimpl.sim.choosers import Chooser, TapeChooser
from refimpl.sim.simulator import RunResult, Simulator

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
    prop = first_property(result)
    runs = 0

    def violates(tape: Sequence[int], steps: int) -> RunResult | None:
        nonlocal runs
        if runs >= max_runs:
            raise _Budget
        runs += 1
        replayed = make(TapeChooser(tape)).run(steps)
        return replayed if replayed.of(prop) else None

    best_tape = _trimmed(result.choices)
    best_steps = result.steps
    best = result

    def accept(tape: Sequence[int], steps: int) -> bool:
        nonlocal best_tape, best_steps, best
        tape = _trimmed(tape)
        if tape == best_tape and steps == best_steps:
            return False
        replayed = violates(tape, steps)
        if replayed is None:
            return False
        best_tape, best_steps, best = tape, steps, replayed
        return True

    def bisect_steps() -> bool:
        lo, hi, improved = 0, best_steps, False
        while lo < hi:
            mid = (lo + hi) // 2
            if accept(best_tape, mid):
                hi, improved = mid, True
            else:
                lo = mid + 1
        return improved

    def bisect_length() -> bool:
        lo, hi, improved = 0, len(best_tape), False
        while lo < hi:
            mid = (lo + hi) // 2
            if accept(best_tape[:mid], best_steps):
                hi, improved = len(best_tape), True
            else:
                lo = mid + 1
        return improved

    def chunks(edit: Callable[[tuple[int, ...], int, int], tuple[int, ...]]) -> bool:
        improved = False
        size = max(1, len(best_tape) // 2)
        while True:
            i = 0
            while i < len(best_tape):
                tape = best_tape
                candidate = edit(tape, i, size)
                if candidate != tape and accept(candidate, best_steps):
                    improved = True  # the edit stays; retry the same position
                else:
                    i += size
            if size == 1:
                return improved
            size //= 2

    def zeroed(tape: tuple[int, ...], i: int, size: int) -> tuple[int, ...]:
        return tape[:i] + (0,) * len(tape[i : i + size]) + tape[i + size :]

    def removed(tape: tuple[int, ...], i: int, size: int) -> tuple[int, ...]:
        return tape[:i] + tape[i + size :]

    def lowered() -> bool:
        improved = False
        for i in range(len(best_tape)):
            if i < len(best_tape) and best_tape[i] > 0:
                tape = best_tape
                improved |= accept((*tape[:i], tape[i] - 1, *tape[i + 1 :]), best_steps)
        return improved

    exhausted = False
    try:
        while True:
            progress = bisect_steps()
            progress |= bisect_length()
            progress |= chunks(zeroed)
            progress |= chunks(removed)
            progress |= lowered()
            if not progress:
                break
    except _Budget:
        exhausted = True
    return Shrunk(
        prop=prop,
        # What the shrunk run consumed (answers taken modulo the options; as replayed).
        choices=_trimmed(best.choices),
        steps=best_steps,
        original_choices=len(_trimmed(result.choices)),
        original_steps=result.steps,
        runs=runs,
        exhausted=exhausted,
        result=best,
    )
