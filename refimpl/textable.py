"""Plain-text tables that fit a terminal: the one layout every refimpl command prints.

Not a port of anything in client-go; the CLIs (``refimpl spec``, ``refimpl tour``) share it
so every table fits ``WIDTH`` columns. A value too long for its column wraps onto more
lines of the same row and is never cut: a reader compares printed values with the docs
character for character.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

#: The widest line a table prints: it fits a 100-column terminal.
WIDTH = 100
GAP = "  "


def _widths(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int,
    caps: Mapping[int, int],
) -> list[int]:
    natural = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    widths = [min(w, caps.get(i, w)) for i, w in enumerate(natural)]
    # Free text wraps between words, and no column is squeezed below its longest word: a
    # property or model name split across lines cannot be searched for or copied. Where
    # those floors do not fit, the table is wider than asked (still nothing is cut).
    floor = [
        min(w, max(len(word) for r in rows for word in [h, *r[i].split()]))
        for i, (w, h) in enumerate(zip(widths, headers, strict=True))
    ]
    budget = width - len(GAP) * (len(headers) - 1)
    # Take a column off the widest one at a time, so short columns keep their natural
    # width and the long free-text ones share what is left.
    while sum(widths) > budget:
        shrinkable = [i for i, w in enumerate(widths) if w > floor[i]]
        if not shrinkable:
            break  # even the floors do not fit: wider than asked, still never cut
        widest = max(shrinkable, key=lambda i: widths[i])
        widths[widest] -= 1
    return widths


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    width: int = WIDTH,
    caps: Mapping[int, int] | None = None,
) -> str:
    """``rows`` under ``headers``, a dashed rule between, at most ``width`` columns wide
    where the columns' floors allow it. ``caps`` limits chosen columns (by index) further."""
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"a row has {len(row)} cells for {len(headers)} headers: {row!r}")
    widths = _widths(headers, rows, width, caps or {})

    def lines(values: Sequence[str]) -> list[str]:
        wrapped = [
            textwrap.wrap(v, w, break_long_words=True, break_on_hyphens=False) or [""]
            for v, w in zip(values, widths, strict=True)
        ]
        height = max(len(c) for c in wrapped)
        return [
            GAP.join(
                (c[i] if i < len(c) else "").ljust(w) for c, w in zip(wrapped, widths, strict=True)
            ).rstrip()
            for i in range(height)
        ]

    rule = GAP.join("-" * w for w in widths)
    return "\n".join([*lines(headers), rule, *(x for row in rows for x in lines(row))])
