"""Chunk-dropping, shared by the two shrinkers: the conformance minimizer
(:func:`refimpl.conformance.search.minimize.drop_chunks`, over a trace's steps) and the
simulator's (:func:`refimpl.sim.shrink.shrink_run`, over a choice list). Imports nothing
of refimpl, so neither shrinker depends on the other. Ports nothing.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["drop_runs"]


def drop_runs(
    length: Callable[[], int],
    attempt: Callable[[int, int], bool],
    *,
    keep: int = 0,
    backward: bool = False,
    repeat: bool = False,
) -> bool:
    """Try an edit of every contiguous run ``[start, stop)`` of a sequence, halving the
    run length from half the sequence down to 1; whether any edit was kept.

    ``length()`` is the sequence's current length and ``attempt(start, stop)`` edits
    that run (removes it, zeroes it, ...), True if the edit is kept; either may change
    the sequence. Positions below ``keep`` are never in a run. ``backward`` sweeps from
    the end (a run ends at the last position, the next one before it); otherwise from
    ``keep`` on, retrying the same position after a kept edit (later entries moved up
    into it, or it is now unchanged by the edit). ``repeat`` sweeps again at the same
    size while a sweep keeps something; otherwise every size is swept once.
    """
    sweep = _sweep_backward if backward else _sweep_forward
    improved = False
    size = max(1, (length() - keep) // 2)
    while True:
        progressed = sweep(length, attempt, keep, size)
        improved |= progressed
        if repeat and progressed:
            continue
        if size == 1:
            return improved
        size //= 2


def _sweep_backward(
    length: Callable[[], int], attempt: Callable[[int, int], bool], keep: int, size: int
) -> bool:
    """One sweep from the end; whether it kept an edit."""
    progressed = False
    i = length() - 1
    while i >= keep:
        start = max(keep, i - size + 1)
        if attempt(start, i + 1):
            progressed = True
            i = min(start - 1, length() - 1)
        else:
            i = start - 1
    return progressed


def _sweep_forward(
    length: Callable[[], int], attempt: Callable[[int, int], bool], keep: int, size: int
) -> bool:
    """One sweep from ``keep`` on; whether it kept an edit."""
    progressed = False
    i = keep
    while i < length():
        if attempt(i, i + size):
            progressed = True
        else:
            i += size
    return progressed
