"""``refimpl conform [options] -- COMMAND...``: check an implementation against refimpl.

Exit status: 0 every tested component agrees, 1 a disagreement (or broken invariant),
2 the adapter failed (crash, hang, garbage, protocol violation), 3 usage error.
Hypothesis is needed at run time (it is a dev dependency of refimpl).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from refimpl.conformance.interrupt import interruptible
from refimpl.conformance.protocol import COMPONENTS
from refimpl.conformance.search.config import EXIT_USAGE, Config
from refimpl.conformance.search.run import run
from refimpl.eras import ReleaseError, era_of
from refimpl.usage import EXIT_NOT_RUN, UsageError, reader_left

__all__ = ["main", "register"]

EPILOG = """\
exit status: 0 pass, 1 disagreement, 2 adapter failure, 3 usage error;
--from-spec also 4: inconclusive (drivable edges left untaken, nothing disagreed);
130 / 143 interrupted (Ctrl-C) / terminated (SIGTERM): the adapter is ended first and
the report's last line says INTERRUPTED / TERMINATED, no verdict.
examples:
  refimpl conform -- python -m refimpl.conformance.reference.adapter
  refimpl conform --component queue --budget 10 --seed 1 -- ./my-adapter
  refimpl conform --replay trace.jsonl -- ./my-adapter
  refimpl conform --from-spec all -- ./my-adapter
The protocol an adapter speaks: refimpl conform --protocol prints it
(docs/protocol.md in a clone of refimpl, beside docs/adapters.md on writing one).
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Every option of ``refimpl conform``, in the order ``--help`` lists them."""
    _components(parser)
    _search_limits(parser)
    _adapter_waits(parser)
    _what_to_compare(parser)
    _shrinking(parser)
    _run_control(parser)
    _narrowing(parser)
    _files(parser)
    _findings(parser)
    _modes(parser)
    _adapter(parser)


def _components(parser: argparse.ArgumentParser) -> None:
    """Which components to test."""
    parser.add_argument(
        "--component",
        action="append",
        default=[],
        choices=list(COMPONENTS),
        metavar="NAME",
        help=f"component to test (repeatable; default: all the adapter offers): "
        f"{', '.join(COMPONENTS)}",
    )


def _search_limits(parser: argparse.ArgumentParser) -> None:
    """How long the random search and its shrinking may run, and how big an example is."""
    parser.add_argument(
        "--budget",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="time to search for a disagreement, split over the components (default 60)",
    )
    parser.add_argument(
        "--shrink-budget",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="time to shrink each finding (default 30; the search budget does not pay for it)",
    )
    parser.add_argument("--seed", type=int, default=None, help="Hypothesis seed (default random)")
    parser.add_argument(
        "--max-examples",
        type=int,
        default=100_000,
        metavar="N",
        help="stop a component after N examples even within budget (default 100000)",
    )
    parser.add_argument(
        "--steps", type=int, default=30, metavar="N", help="operations per example (default 30)"
    )


def _adapter_waits(parser: argparse.ArgumentParser) -> None:
    """How long to wait for the adapter before it counts as hung."""
    parser.add_argument(
        "--timeout",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="longest wait for one response before the adapter counts as hung (default 5)",
    )
    parser.add_argument(
        "--startup-timeout",
        type=float,
        default=20.0,
        metavar="SECONDS",
        help="longest wait for the handshake answer (default 20)",
    )


def _what_to_compare(parser: argparse.ArgumentParser) -> None:
    """What is generated and how strictly answers are compared."""
    parser.add_argument(
        "--misuse",
        action="store_true",
        help="also generate contract violations with defined client-go outcomes "
        "(done() of items not handed out)",
    )
    parser.add_argument(
        "--inputs",
        choices=["realistic", "any"],
        default="realistic",
        help="realistic: what an honest API server and reflector send (resourceVersions "
        "that only grow, deletes at the last rv seen, lists consistent with the history); "
        "any: also API-legal but unusual sequences (default realistic)",
    )
    parser.add_argument(
        "--exact",
        action="store_true",
        help="the adapter is client-go itself: compare the orders client-go fixes exactly "
        "(items falling due at one instant leave the delay heap in its order), whether "
        "or not the adapter declares heap_order",
    )
    parser.add_argument(
        "--release",
        metavar="1.NN",
        help="the client-go release line the adapter's informer follows (1.NN, v1.NN or "
        "v0.NN; 1.17 or newer): the reference then does what that release did where "
        "docs/invariants.md dates a change (default: the adapter's declared release, "
        "else the newest)",
    )


def _shrinking(parser: argparse.ArgumentParser) -> None:
    """How a failure is shrunk."""
    parser.add_argument("--no-shrink", action="store_true", help="report failures unshrunk")
    parser.add_argument(
        "--quick-shrink",
        action="store_true",
        help="skip Hypothesis' shrinking, only drop steps by replaying (faster, coarser)",
    )


def _at_least_one(text: str) -> int:
    """``--max-findings``'s type: an integer >= 1 (else a usage error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, not {value}")
    return value


def _known_finding(text: str) -> tuple[str, str]:
    """``--known``'s type: ``SIGNATURE=NOTE`` (else a usage error)."""
    signature, sep, note = text.partition("=")
    if not sep or signature.count("/") != 2 or not note.strip():
        raise argparse.ArgumentTypeError(
            f"expected SIGNATURE=NOTE with SIGNATURE as component/what/method, not {text!r}"
        )
    return signature, note.strip()


def _run_control(parser: argparse.ArgumentParser) -> None:
    """Findings, failures, restarts and progress."""
    parser.add_argument(
        "--max-findings",
        type=_at_least_one,
        default=Config.max_findings,
        metavar="N",
        help="stop a component's search after N distinct new findings, each shrunk on its "
        f"own; --known ones do not count (default {Config.max_findings})",
    )
    parser.add_argument(
        "--known",
        type=_known_finding,
        action="append",
        default=[],
        metavar="SIGNATURE=NOTE",
        help="a finding already acknowledged (its signature, as a report's 'finding' line "
        "shows it): still reported, marked known, and the search looks on for others "
        "(repeatable; default: none)",
    )
    parser.add_argument(
        "--keep-going", action="store_true", help="test every component even after a failure"
    )
    parser.add_argument(
        "--restart-each",
        action="store_true",
        help="restart the adapter for every example instead of sending 'reset'",
    )
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument(
        "--progress",
        dest="progress",
        action="store_true",
        default=None,
        help="print a progress line on stderr (default: only when stderr is a terminal)",
    )
    progress.add_argument(
        "--no-progress", dest="progress", action="store_false", help="never print progress"
    )


def _narrowing(parser: argparse.ArgumentParser) -> None:
    """Create options fixed and methods never generated."""
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help=(
            "fix a create option for every example, e.g. known_objects=false (repeatable; "
            "default: every option generated)"
        ),
    )
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="METHOD",
        help=(
            "never generate METHOD, to look past a difference already known (repeatable; "
            "default: none skipped); for the informer, 'raises' also means: no handler "
            "that throws"
        ),
    )


def _files(parser: argparse.ArgumentParser) -> None:
    """Files written: the failing trace and the protocol log."""
    parser.add_argument(
        "--save",
        metavar="FILE",
        help="write the trace of every finding to FILE (default: not saved)",
    )
    parser.add_argument(
        "--log",
        metavar="FILE",
        help="write every protocol line sent (>) and received (<) (default: no log)",
    )
    parser.add_argument(
        "--json",
        metavar="FILE",
        help="write the components, their statuses and findings as JSON (default: not written)",
    )


def _findings(parser: argparse.ArgumentParser) -> None:
    """What is said about each finding: what client-go does with it."""
    parser.add_argument(
        "--client-go",
        metavar="PATH",
        default=None,
        help="replay each finding against client-go's adapter at PATH and label it; 'none' "
        "to skip (default: adapters/client-go/bin/adapter when built)",
    )


def _modes(parser: argparse.ArgumentParser) -> None:
    """Replaying a trace or walking a model instead of random search."""
    parser.add_argument(
        "--replay",
        metavar="FILE",
        help="replay the traces saved in FILE instead of generating examples (default: generate)",
    )
    parser.add_argument(
        "--from-spec",
        action="append",
        default=[],
        metavar="MODEL",
        help=(
            "instead of random search, drive the adapter along every edge of MODEL's "
            "committed state graph (WorkQueue, DeltaFIFO, DeltaFIFONoReplaced, RealFIFO, "
            "RealFIFOAtomic, Informer, InformerAtomic, or all; repeatable; default: "
            "random search)"
        ),
    )
    parser.add_argument(
        "--wire",
        action="store_true",
        help="the informer over HTTP: serve a wire API server, hand the adapter its "
        "kubeconfig on start, write and inject faults from --seed, wait for convergence "
        "(docs/wire.md; default: the scripted seam)",
    )


def _adapter(parser: argparse.ArgumentParser) -> None:
    """The adapter command, after ``--``; and the protocol it must speak."""
    parser.add_argument(
        "--protocol",
        action=_PrintProtocol,
        help="print the driver protocol an adapter speaks (docs/protocol.md in a clone) and exit",
    )
    parser.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND...",
        help="the adapter to start (after --)",
    )


def protocol_text() -> str | None:
    """docs/protocol.md: the copy a wheel carries as ``refimpl/_docs`` (pyproject.toml),
    else the one beside the package in a checkout; None if neither is there."""
    packaged = resources.files("refimpl") / "_docs" / "protocol.md"
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    checkout = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
    return checkout.read_text(encoding="utf-8") if checkout.is_file() else None


class _PrintProtocol(argparse.Action):
    """``--protocol``: print the protocol and exit, whatever else was given (as --help)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        text = protocol_text()
        if text is None:  # an install without its data files
            parser.exit(EXIT_NOT_RUN, f"{parser.prog}: error: docs/protocol.md is missing\n")
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:  # | head: as refimpl.cli.main does for every command
            parser.exit(reader_left())
        parser.exit(0)


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "conform",
        help="check another implementation against refimpl through an adapter process",
        description=(
            "Start an adapter (a program speaking the JSON-lines driver protocol that\n"
            "--protocol prints), send it and the in-process reference the same generated\n"
            "operations, and report each distinct disagreement (up to --max-findings) as a\n"
            "shrunk, replayable sequence."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    _usage_errors_exit_3(parser)
    parser.set_defaults(func=execute)


def _usage_errors_exit_3(parser: argparse.ArgumentParser) -> None:
    """argparse exits 2 on a usage error; 2 means "adapter failure" here."""

    def error(message: str) -> Any:
        parser.print_usage(sys.stderr)
        parser.exit(EXIT_USAGE, f"{parser.prog}: error: {message}\n")

    parser.error = error  # type: ignore[method-assign]


def config_from_args(args: argparse.Namespace) -> Config | str:
    """A :class:`Config`, or the usage error to print."""
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        return "no adapter command: put it after --, e.g. -- python my_adapter.py"
    for name, value in (
        ("--budget", args.budget),
        ("--shrink-budget", args.shrink_budget),
        ("--timeout", args.timeout),
        ("--startup-timeout", args.startup_timeout),
    ):
        if not value > 0:
            return f"{name} must be > 0, got {value}"
    if args.max_examples < 1 or args.steps < 1:
        return "--max-examples and --steps must be >= 1"
    release = args.release
    if release is not None:
        try:
            release = era_of(release).name
        except ReleaseError as exc:
            return f"--release: {exc}"
    options: dict[str, Any] = {}
    for text in args.option:
        name, sep, value = text.partition("=")
        try:
            options[name] = json.loads(value)
        except ValueError:
            return f"--option {text!r}: the value must be JSON (e.g. known_objects=false)"
        if not sep or not name:
            return f"--option {text!r}: expected NAME=JSON"
    return Config(
        command=command,
        components=list(dict.fromkeys(args.component)),
        budget=args.budget,
        shrink_budget=args.shrink_budget,
        seed=args.seed,
        max_examples=args.max_examples,
        steps=args.steps,
        timeout=args.timeout,
        startup_timeout=args.startup_timeout,
        misuse=args.misuse,
        inputs=args.inputs,
        release=release,
        exact=args.exact,
        shrink=not args.no_shrink,
        quick_shrink=args.quick_shrink,
        keep_going=args.keep_going,
        restart_each=args.restart_each,
        progress=args.progress,
        save=args.save,
        replay=args.replay,
        options=options,
        log=args.log,
        skip=list(args.skip),
        max_findings=args.max_findings,
        known=dict(args.known),
        client_go=_client_go(args.client_go),
        json=args.json,
    )


def _client_go(path: str | None) -> list[str]:
    """client-go's adapter command for triage (empty: none)."""
    from refimpl.conformance.search.triage import default_client_go

    if path == "none":
        return []
    if path is None:
        found = default_client_go()
        return [found] if found is not None else []
    return [os.path.abspath(path)]


def execute(args: argparse.Namespace) -> int:
    """Run the check (signals recorded, not acted on mid-request: interrupt.py)."""
    try:
        with interruptible():
            return _execute(args)
    except KeyboardInterrupt as exc:
        _say_interrupted(getattr(exc, "signum", signal.SIGINT))
        raise


def _say_interrupted(signum: int) -> None:
    """End the report with a line saying the run is incomplete: the component lines
    printed before the signal are true of those components, but a report that stops
    after a PASS must not read as a verdict when it is redirected to a file."""
    word = "TERMINATED" if signum == signal.SIGTERM else "INTERRUPTED"
    # OSError, ValueError: stdout's reader has gone, or stdout is closed.
    with contextlib.suppress(OSError, ValueError):
        print(
            f"{word} ({signal.Signals(signum).name}): the run did not finish; no verdict, "
            "whatever the lines above say",
            flush=True,
        )


def _execute(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    if isinstance(config, str):
        raise UsageError(config)
    _check_files(config)
    _check_used(args)
    if args.from_spec:
        return _from_spec(args, config)
    if args.wire:
        return _wire(config)
    try:
        import hypothesis  # noqa: F401
    except ImportError:
        print(
            "refimpl conform: needs Hypothesis, which refimpl's 'conform' extra brings: "
            "pip install hypothesis (or, in a clone of refimpl, pip install '.[conform]')",
            file=sys.stderr,
        )
        return EXIT_USAGE
    _check_options(config)
    return run(config)


def _check_files(config: Config) -> None:
    """Files named on the command line, checked before anything runs: a trace to replay
    must be readable, a trace to save and a log to write must be writable (a search must
    not end in a traceback, its counterexample unprinted, for want of a folder)."""
    if config.replay and not os.access(config.replay, os.R_OK):
        raise UsageError(f"--replay {config.replay}: cannot read it")
    for flag, path in (("--save", config.save), ("--log", config.log), ("--json", config.json)):
        if not path:
            continue
        folder = os.path.dirname(os.path.abspath(path))
        if os.path.isdir(path) or not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise UsageError(f"{flag} {path}: cannot write it (no such folder, or a folder)")


def _check_used(args: argparse.Namespace) -> None:
    """No value accepted that nothing uses: methods --skip names must exist, and the
    walks choose their components from the models (--component would be ignored)."""
    # 'raises' is no method: it skips handlers that throw (search/informer_machine.py).
    methods = {m for names in COMPONENTS.values() for m in names} | {"raises"}
    unknown = [m for m in args.skip if m not in methods]
    if unknown:
        raise UsageError(
            f"--skip {', '.join(unknown)}: no such protocol method "
            "('refimpl conform --protocol' lists them)"
        )
    if args.from_spec and args.component:
        raise UsageError(
            "--component does not apply to --from-spec: each model names the components "
            "it walks (narrow with the MODEL names instead)"
        )
    if args.wire and args.from_spec:
        raise UsageError("--wire does not combine with --from-spec")
    if args.from_spec and args.release:
        raise UsageError(
            "--release does not apply to --from-spec: the walks check the TLA+ models, "
            "which describe the newest client-go"
        )


def _wire(config: Config) -> int:
    """``--wire``: the informer over HTTP (refimpl/conformance/wire/run.py)."""
    from refimpl.conformance.wire.run import WireRun, run_wire

    if config.components not in ([], ["informer"]):
        raise UsageError("--wire tests the informer only: --component informer")
    seed = config.seed if config.seed is not None else random.randrange(2**32)
    log = open(config.log, "w", encoding="utf-8") if config.log else None  # noqa: SIM115
    try:
        settings = WireRun(
            config.command,
            seed,
            config.steps,
            config.timeout,
            config.startup_timeout,
            log,
            json=config.json,
            known=dict(config.known),
            client_go=list(config.client_go),
            shrink_budget=config.shrink_budget if config.shrink else 0.0,
            save=config.save,
            plan=_wire_plan(config.replay),
        )
        return run_wire(settings, lambda line: print(line, flush=True))
    finally:
        if log is not None:
            log.close()


def _wire_plan(path: str | None) -> tuple[dict[str, Any], ...] | None:
    """``--wire --replay FILE``: the plan file's steps (refimpl/conformance/wire/shrink.py)."""
    from refimpl.conformance.wire.shrink import read_plan

    if path is None:
        return None
    try:
        return tuple(read_plan(path))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--replay {exc}") from None


def _check_options(config: Config) -> None:
    """--option names must be create options some component's generator draws."""
    from refimpl.conformance.search.machines import FIFO_OPTIONS

    known = {name for options in FIFO_OPTIONS.values() for name in options}
    # Drawn too (machines._create_options): the rate limiters' limiter, the store's indexers.
    known |= {"limiter", "indexers"}
    unknown = [name for name in config.options if name not in known]
    if unknown:
        raise UsageError(
            f"--option {', '.join(unknown)}: not a create option the search draws "
            f"(known: {', '.join(sorted(known))})"
        )


def _from_spec(args: argparse.Namespace, config: Config) -> int:
    from refimpl.conformance.walks.run import run_from_spec

    log = open(config.log, "w", encoding="utf-8") if config.log else None  # noqa: SIM115
    try:
        return run_from_spec(
            list(dict.fromkeys(args.from_spec)),
            config.command,
            out=sys.stdout,
            err=sys.stderr,
            timeout=config.timeout,
            startup_timeout=config.startup_timeout,
            show_progress=sys.stderr.isatty() if config.progress is None else config.progress,
            log=log,
        )
    finally:
        if log is not None:
            log.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``conform`` on its own (``python -m refimpl.conformance.cli ...``)."""
    parser = argparse.ArgumentParser(
        prog="refimpl conform", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_arguments(parser)
    _usage_errors_exit_3(parser)
    try:
        args = parser.parse_args(argv)
        return execute(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
