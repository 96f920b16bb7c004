"""The ``refimpl`` command's manners, the same for every subcommand: exit statuses and
usage errors.

The rules (``refimpl --help`` prints them, from :data:`RULES`):

- a usage error — an unknown option, command or name, a value out of range, a value
  given where nothing uses it, a file named on the command line that cannot be read or
  written — exits 3 with that subcommand's usage and one ``error:`` line on stderr;
- every error message goes to stderr; stdout carries only results;
- no user input ends in a traceback;
- the statuses below mean the same thing in every subcommand.

A subcommand's parser is a :class:`Parser` (``refimpl.cli`` builds the top-level one and
argparse makes every subparser of the same class); its ``func`` raises
:class:`UsageError` for what argparse cannot check, and ``refimpl.cli.main`` prints it
with the usage of the subcommand that was run.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, NoReturn

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_FAILED",
    "EXIT_INCONCLUSIVE",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_RUN",
    "EXIT_NO_JAR",
    "EXIT_NO_JAVA",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "RULES",
    "Parser",
    "UsageError",
    "check_at_least",
    "reader_left",
]

EXIT_OK = 0
#: What was checked does not hold: a tour claim, a model, a graph replay, a trace, a
#: simulated run; ``conform``: a disagreement or a broken invariant.
EXIT_FAILED = 1
#: The check could not be made with what it was given: ``conform``'s adapter failed;
#: ``spec``: a spec file is missing, or a trace does not map to the spec.
EXIT_NOT_RUN = 2
EXIT_USAGE = 3
#: Neither holds nor fails: ``sim run``'s drain limit came with work pending;
#: ``conform --from-spec`` left drivable edges untaken.
EXIT_INCONCLUSIVE = 4
#: ``spec check|export|trace``: no ``TLA2TOOLS_JAR``, no java.
EXIT_NO_JAR = 5
EXIT_NO_JAVA = 6
#: Ctrl-C (128 + SIGINT).
EXIT_INTERRUPTED = 130
#: SIGTERM (128 + 15), what a CI timeout sends; ``conform`` ends its adapter first.
EXIT_TERMINATED = 143
#: The reader of stdout left (``| head``): 128 + SIGPIPE, as for a tool the signal killed.
EXIT_BROKEN_PIPE = 141

RULES = f"""\
exit status, the same in every command:
  {EXIT_OK}    holds / passes
  {EXIT_FAILED}    does not hold (a claim, model, replay, trace or run; conform: a disagreement)
  {EXIT_NOT_RUN}    could not check: conform's adapter failed; spec: a spec file is missing
       or a trace does not map
  {EXIT_USAGE}    usage error: an unknown option or name, a value out of range or one nothing
       would use, a file named on the command line that cannot be read or written;
       the command's usage and one error line go to stderr
  {EXIT_INCONCLUSIVE}    inconclusive (sim run: drain limit with work pending; conform --from-spec)
  {EXIT_NO_JAR} / {EXIT_NO_JAVA} spec check|export|trace: no TLA2TOOLS_JAR / no java
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C); conform ends its adapter, and its report ends
       in INTERRUPTED: no verdict
  {EXIT_TERMINATED}  terminated (SIGTERM; conform: after ending its adapter's process group)
  {EXIT_BROKEN_PIPE}  the reader of stdout left (| head)
Results go to stdout, every error message to stderr; no input ends in a traceback.
Run 'refimpl COMMAND --help' for a command's options and their defaults."""


class UsageError(Exception):
    """The command line asks for something that cannot be done: exit 3 with usage."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors exit :data:`EXIT_USAGE` (argparse's own
    status, 2, means "could not check" here), with this parser's usage on stderr."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")

    def parse_args(  # type: ignore[override]
        self, args: Any = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """As argparse's, but an unknown argument is reported with the usage of the
        subcommand it was given to, not the top-level one."""
        parsed, rest = self.parse_known_args(args, namespace)
        if rest:
            where: argparse.ArgumentParser = getattr(parsed, "usage_parser", self)
            where.error(f"unrecognized arguments: {' '.join(rest)}")
        return parsed

    def parse_known_args(  # type: ignore[override]
        self, args: Any = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Also note, in ``usage_parser``, the innermost parser that ran: the one whose
        usage a :class:`UsageError` raised by the command prints."""
        parsed, rest = super().parse_known_args(args, namespace)
        if getattr(parsed, "usage_parser", None) is None:
            parsed.usage_parser = self
        return parsed, rest


def check_at_least(name: str, value: int | float | None, least: int | float) -> None:
    """Raise :class:`UsageError` unless ``value`` is None or at least ``least`` (a NaN is
    not: it compares false with every number, so it would pass a plain ``<``)."""
    if value is not None and not value >= least:
        raise UsageError(f"{name} must be >= {least}, not {value}")


def reader_left() -> int:
    """Stop quietly when stdout's reader has gone (``refimpl spec list | head``).

    Python ignores SIGPIPE, so the write raises BrokenPipeError instead of ending the
    process; the output still buffered would raise again when the interpreter flushes
    stdout at exit, so stdout is pointed at /dev/null first (the recipe of the Python
    docs, "Note on SIGPIPE").
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a real file (captured): nothing to flush
        pass
    return EXIT_BROKEN_PIPE
