"""Chunk-dropping shared by the two shrinkers (refimpl/shrinking.py): which runs are
tried, in which order, for the conformance minimizer's way (from the end, step 0 kept,
a size swept again while it helps) and the simulator's (from the front, each size once).
"""

from __future__ import annotations

from refimpl.shrinking import drop_runs


def attempts(
    items: list[int],
    keep_if: set[int],
    *,
    keep: int = 0,
    backward: bool = False,
    repeat: bool = False,
) -> tuple[list[tuple[int, int]], list[int]]:
    """The runs tried on ``items`` removing runs, keeping a removal when every removed
    value is in ``keep_if``; and what is left."""
    tried: list[tuple[int, int]] = []

    def attempt(start: int, stop: int) -> bool:
        tried.append((start, stop))
        if not items[start:stop] or not set(items[start:stop]) <= keep_if:
            return False
        del items[start:stop]
        return True

    drop_runs(lambda: len(items), attempt, keep=keep, backward=backward, repeat=repeat)
    return tried, items


def test_backward_from_the_end_keeping_the_first() -> None:
    tried, left = attempts([0, 1, 2, 3, 4], set(), keep=1, backward=True, repeat=True)
    assert tried == [(3, 5), (1, 3), (4, 5), (3, 4), (2, 3), (1, 2)]
    assert left == [0, 1, 2, 3, 4]


def test_backward_repeats_a_size_that_helped() -> None:
    tried, left = attempts([0, 1, 2, 3, 4], {3, 4}, keep=1, backward=True, repeat=True)
    # 3 and 4 go at size 2; the sweep at size 2 runs again (and keeps nothing) before
    # size 1.
    assert tried == [(3, 5), (1, 3), (1, 3), (2, 3), (1, 2)]
    assert left == [0, 1, 2]


def test_forward_retries_the_same_position_and_sweeps_each_size_once() -> None:
    tried, left = attempts([1, 2, 3, 4], {1, 2})
    # 1 and 2 go; [3, 4] moved up into position 0 is tried there again.
    assert tried == [(0, 2), (0, 2), (0, 1), (1, 2)]
    assert left == [3, 4]
