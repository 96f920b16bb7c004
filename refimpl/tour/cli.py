"""``refimpl tour``: run the docs' experiments and print what they measured."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from refimpl.textable import WIDTH, table
from refimpl.tour import Chapter, Claim, chapters
from refimpl.usage import UsageError


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
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the claims (with --list: the experiments) as JSON lines",
    )
    parser.add_argument(
        "--pictures",
        metavar="DIR",
        help=(
            "write the docs' pictures (SVG, generated from the experiments) to DIR and "
            "exit; takes no CHAPTER, --list or --json (default: run the experiments)"
        ),
    )
    parser.set_defaults(func=run)


def _select(wanted: list[str]) -> list[Chapter]:
    found = chapters()
    if not wanted:
        return found
    by_number = {c.number: c for c in found}
    # a chapter named twice runs once, where it was first named
    normalized = list(dict.fromkeys(w.zfill(2) for w in wanted))
    unknown = [w for w in normalized if w not in by_number]
    if unknown:
        known = ", ".join(by_number)
        raise UsageError(f"no chapter {', '.join(unknown)} (chapters: {known})")
    return [by_number[w] for w in normalized]


#: The widest a measured/expected column grows before its values wrap.
VALUE_WIDTH = 24


def _table(rows: list[Claim], width: int = WIDTH) -> str:
    """The claims as a table at most ``width`` columns wide; long values wrap, never cut."""
    cells = [(r.text, r.measured, r.expected, "OK" if r.ok else "FAIL") for r in rows]
    return table(
        ("claim", "measured", "expected", "ok"),
        cells,
        width=width,
        caps={1: VALUE_WIDTH, 2: VALUE_WIDTH},
    )


def run(args: argparse.Namespace) -> int:
    if args.pictures:
        unused = [
            name
            for name, given in (
                ("CHAPTER", args.chapters),
                ("--list", args.list),
                ("--json", args.json),
            )
            if given
        ]
        if unused:
            raise UsageError(f"--pictures writes every picture; it takes no {', '.join(unused)}")
        from refimpl.tour.pictures import write_pictures

        try:
            for path in write_pictures(Path(args.pictures)):
                print(path)
        except OSError as err:
            raise UsageError(
                f"--pictures: cannot write in {args.pictures}: {err.strerror}"
            ) from None
        return 0
    selected = _select(list(args.chapters))
    if args.list:
        for chapter in selected:
            if not args.json:
                print(f"{chapter.number}  {chapter.title}")
            for exp in chapter.experiments:
                if args.json:
                    print(
                        json.dumps(
                            {"chapter": chapter.number, "experiment": exp.name, "title": exp.title}
                        )
                    )
                else:
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
