"""The ``refimpl`` command: one entry point, one subcommand per area.

Each area keeps its own command code in a module with
``register(subparsers) -> None`` that adds its parser and sets ``func`` (a callable
taking the parsed namespace and returning an exit status). This file only lists those
modules, so areas never edit each other's code.

Every parser is a :class:`refimpl.usage.Parser`, and the rules every subcommand keeps
(exit statuses, usage errors, stderr) are :data:`refimpl.usage.RULES`, the epilog of
``refimpl --help``.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from collections.abc import Sequence

from refimpl import __version__
from refimpl.usage import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    RULES,
    Parser,
    UsageError,
    reader_left,
)

__all__ = ["COMMAND_MODULES", "EXIT_BROKEN_PIPE", "build_parser", "main"]

#: Modules that contribute subcommands, in the order ``--help`` lists them.
COMMAND_MODULES = [
    "refimpl.tour.cli",
    "refimpl.tla.cli",
    "refimpl.conformance.cli",
    "refimpl.conformance.peers.run",
    "refimpl.sim.cli",
    "refimpl.wire.cli",
]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="refimpl",
        description=(
            "A reference implementation of client-go's controller machinery (workqueue,\n"
            "informer stack), with runnable experiments and a TLA+ model."
        ),
        epilog=RULES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"refimpl {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.error("no command given; 'refimpl --help' lists them")
    try:
        status = func(args)
        # Flush here, not at interpreter exit: a reader that left (``| head``) must be
        # noticed while the handler below can still keep it quiet.
        sys.stdout.flush()
    except UsageError as err:
        usage: argparse.ArgumentParser = getattr(args, "usage_parser", parser)
        usage.print_usage(sys.stderr)
        print(f"{usage.prog}: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        # conform records SIGTERM and unwinds as for Ctrl-C (refimpl/conformance/interrupt.py)
        if getattr(exc, "signum", None) == signal.SIGTERM:
            print("terminated", file=sys.stderr)
            return EXIT_TERMINATED
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return reader_left()
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
