"""``refimpl tour``: run the docs' experiments and print what they measured."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from refimpl.tour import Chapter, Claim, chapters


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "tour",
        help="run the experiments behind every claim in docs/ and print a table",
        description=(
            "Run the experiments behind the claims in docs/. Each row is one claim: "
            "what was measured, what the docs expect, and whether they agree."
        ),
    )
    parser.add_argument(
        "chapters",
        nargs="*",
        metavar="CHAPTER",
        help="chapter numbers to run (e.g. 04 05); default: all",
    )
    parser.add_argument("--list", action="store_true", help="list chapters and experiments")
    parser.add_argument("--json", action="store_true", help="print the claims as JSON lines")
    parser.add_argument(
        "--pictures",
        metavar="DIR",
        help=(
            "write the docs' pictures (SVG, generated from the experiments) to DIR and "
            "exit (default: run the experiments instead)"
        ),
    )
    parser.set_defaults(func=run)


def _select(wanted: list[str]) -> list[Chapter]:
    found = chapters()
    if not wanted:
        return found
    by_number = {c.number: c for c in found}
    normalized = [w.zfill(2) for w in wanted]
    unknown = [w for w in normalized if w not in by_number]
    if unknown:
        known = ", ".join(by_number)
        raise SystemExit(f"refimpl tour: no chapter {', '.join(unknown)} (chapters: {known})")
    return [by_number[w] for w in normalized]


#: The widest line the tour prints: a table fits a 100-column terminal.
WIDTH = 100
#: The widest a measured/expected column grows before its values wrap.
VALUE_WIDTH = 24


def _table(rows: list[Claim], width: int = WIDTH) -> str:
    """The claims as a table at most ``width`` columns wide. A value too long for its
    column wraps onto more lines of the same row -- it is never cut: a reader compares
    the measured value with the docs character for character."""
    headers = ("claim", "measured", "expected", "ok")
    cells = [(r.text, r.measured, r.expected, "OK" if r.ok else "FAIL") for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    widths[1] = min(widths[1], VALUE_WIDTH)
    widths[2] = min(widths[2], VALUE_WIDTH)
    gaps = 2 * (len(headers) - 1)
    widths[0] = max(20, min(widths[0], width - gaps - sum(widths[1:])))

    def line(values: tuple[str, ...]) -> list[str]:
        wrapped = [
            textwrap.wrap(v, w, break_long_words=True, break_on_hyphens=False) or [""]
            for v, w in zip(values, widths, strict=True)
        ]
        height = max(len(c) for c in wrapped)
        return [
            "  ".join(
                (c[i] if i < len(c) else "").ljust(w) for c, w in zip(wrapped, widths, strict=True)
            ).rstrip()
            for i in range(height)
        ]

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([*line(headers), sep, *(x for c in cells for x in line(c))])


def run(args: argparse.Namespace) -> int:
    if args.pictures:
        from refimpl.tour.pictures import write_pictures

        for path in write_pictures(Path(args.pictures)):
            print(path)
        return 0
    selected = _select(list(args.chapters))
    if args.list:
        for chapter in selected:
            print(f"{chapter.number}  {chapter.title}")
            for exp in chapter.experiments:
                print(f"      {exp.name:28s} {exp.title}")
        return 0
    failed = 0
    total = 0
    for chapter in selected:
        if not args.json:
            print(f"\n== Chapter {chapter.number}: {chapter.title}")
        for exp in chapter.experiments:
            started = time.perf_counter()
            claims = exp.run()
            elapsed = time.perf_counter() - started
            total += len(claims)
            failed += sum(1 for c in claims if not c.ok)
            if args.json:
                for c in claims:
                    print(
                        json.dumps(
                            {
                                "chapter": chapter.number,
                                "experiment": exp.name,
                                "id": c.id,
                                "text": c.text,
                                "measured": c.measured,
                                "expected": c.expected,
                                "ok": c.ok,
                            }
                        )
                    )
            else:
                heading = f"-- {exp.title}  [{exp.name}, {elapsed:.2f} s]"
                print("\n" + "\n   ".join(textwrap.wrap(heading, WIDTH - 3)))
                print(_table(claims))
    if not args.json:
        print(
            f"\n{total - failed} of {total} claims agree with the docs"
            + ("" if failed == 0 else f"; {failed} DO NOT")
        )
    sys.stdout.flush()
    return 0 if failed == 0 else 1
