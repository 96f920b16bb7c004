"""``refimpl sim``: run, replay and list the deterministic simulations.

Only argument parsing and printing; every decision is the simulator's. ``register``
adds the ``sim`` subcommand to the top-level parser (``refimpl.cli``).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import textwrap
from contextlib import ExitStack
from typing import IO, Any

from refimpl.cache.shared_informer import FifoMode
from refimpl.sim.actions import PROGRESS_ACTIONS
from refimpl.sim.choosers import ChoiceOutOfRange, Chooser, TapeChooser, parse_tape
from refimpl.sim.monitors import PROPERTIES
from refimpl.sim.result import HOLDS, INCONCLUSIVE, VIOLATED
from refimpl.sim.scenarios import FAULT_KINDS, SCENARIOS, get_scenario, parse_faults
from refimpl.sim.shrink import DEFAULT_SHRINK_RUNS, Shrunk, shrink_run
from refimpl.sim.simulator import Simulator
from refimpl.usage import (
    EXIT_FAILED,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    UsageError,
    check_at_least,
)

#: The longest run ``--steps`` asks for: larger numbers ran for hours with no output.
MAX_STEPS = 1_000_000

__all__ = ["EXIT_STATUS", "register"]

#: Exit status per verdict (refimpl.usage: the same numbers in every command).
EXIT_STATUS = {HOLDS: EXIT_OK, VIOLATED: EXIT_FAILED, INCONCLUSIVE: EXIT_INCONCLUSIVE}


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "sim",
        help="run a deterministic simulation of an informer + controller",
        description=(
            "Deterministic simulation: one enabled action per step (server writes, watch "
            "delivery, FIFO pops, handler dispatch, workers, time, faults), chosen from a "
            "seed. The same seed gives the same run, step for step."
        ),
    )
    sub = parser.add_subparsers(dest="sim_command", metavar="ACTION")
    run = sub.add_parser(
        "run",
        help="run SCENARIO from a seed; print a timeline and a summary",
        description=(
            "Run SCENARIO from a seed and give a verdict: holds (exit 0), violated (exit "
            "1; the violations, and the run shrunk to a short choice list with its replay "
            "command), or inconclusive (exit 4: the drain limit came while work was still "
            "pending, e.g. injected failures not yet fired; the summary says how much). "
            "A usage error exits 3."
        ),
    )
    _common(run)
    run.add_argument("--seed", type=int, default=0, help="the run's seed (default: 0)")
    run.add_argument("--verbose", action="store_true", help="print every step, not only events")
    run.add_argument(
        "--json",
        action="store_true",
        help="print only the summary, as one JSON object (no timeline; not with --verbose)",
    )
    run.add_argument(
        "--shrink-runs",
        type=int,
        default=DEFAULT_SHRINK_RUNS,
        metavar="N",
        help=(
            "on a violation, replay up to N edited runs to shrink it to fewer steps and a "
            f"short choice list; 0: do not shrink (default: {DEFAULT_SHRINK_RUNS})"
        ),
    )
    run.set_defaults(func=_run)
    replay = sub.add_parser(
        "replay",
        help="repeat a run (from its seed or its recorded choices), every step shown",
        description=(
            "Repeat a run step by step, every step shown: from its seed, or from the "
            "choice list a run or its shrink printed (each choice must be one the step "
            "offers). The run's options (--steps, --faults, --fifo, --objects, "
            "--no-batch) must be those of the run replayed, as its replay line gives them."
        ),
    )
    _common(replay)
    source = replay.add_mutually_exclusive_group(required=True)
    source.add_argument("--seed", type=int, help="replay the seeded run")
    source.add_argument("--choices", help="replay a recorded choice list, e.g. 0,3,1")
    source.add_argument("--choices-file", help="a file holding a recorded choice list")
    replay.add_argument(
        "--state-at",
        type=int,
        metavar="STEP",
        help="also print the abstract state after STEP (default: none)",
    )
    replay.set_defaults(func=_replay)
    listing = sub.add_parser(
        "list",
        help="list scenarios, faults and checked properties",
        description=(
            "List the scenarios (and what a run needs to show each one's point), the "
            "faults --faults can weigh, and the properties every run is checked against."
        ),
    )
    listing.set_defaults(func=_list)
    parser.set_defaults(func=_no_action)


def _no_action(args: argparse.Namespace) -> int:
    raise UsageError("give an action: run, replay or list")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", metavar="SCENARIO", help=f"one of: {', '.join(SCENARIOS)}")
    p.add_argument(
        "--steps",
        type=int,
        help="steps with writes and faults, then it drains (default: the scenario's, 300)",
    )
    p.add_argument(
        "--faults",
        default="default",
        help=(
            "fault weights: 'default' the scenario's (see 'refimpl sim list'); 'none'; "
            "'heavy' 5 times the scenario's weights (a fault is then chosen about 5 times "
            "as often against the progress actions, which weigh 100); 'NAME=W,...' the "
            "scenario's with those overridden; 'only:NAME=W,...' just those "
            "(default: default)"
        ),
    )
    p.add_argument(
        "--fifo",
        default=str(FifoMode.REAL_ATOMIC),
        choices=[str(m) for m in FifoMode],
        help="which FIFO the informer uses (default: real-atomic, client-go 1.36)",
    )
    p.add_argument(
        "--objects", type=int, help="initial population, at least 1 (default: the scenario's)"
    )
    p.add_argument(
        "--no-batch",
        action="store_true",
        help="RealFIFO pops one entry at a time instead of in batches (not with --fifo delta)",
    )
    p.add_argument(
        "--trace",
        metavar="FILE",
        help="write the abstract state after each step as JSON lines (default: none)",
    )


def _simulator(
    args: argparse.Namespace,
    trace: IO[str] | None,
    timeline: Any,
    chooser: Chooser | None = None,
) -> Simulator:
    """The run ``args`` describe; ``chooser`` (the shrinker's) replaces its seed/choices."""
    try:
        get_scenario(args.scenario)
        kwargs: dict[str, Any] = {}
        if chooser is not None:
            kwargs["chooser"] = chooser
        elif getattr(args, "tape", None) is not None:
            kwargs["chooser"] = TapeChooser(args.tape, strict=True)
        else:
            kwargs["seed"] = args.seed
        return Simulator(
            args.scenario,
            fifo_mode=args.fifo,
            faults=args.faults,
            objects=args.objects,
            batch=False if args.no_batch else None,
            trace=trace,
            timeline=timeline,
            **kwargs,
        )
    except ValueError as err:
        raise UsageError(str(err)) from None


def _check(args: argparse.Namespace) -> None:
    """Every usage error ``args`` hold, raised before anything runs: the scenario, the
    numbers' ranges, the fault weights, the choice list, options nothing would use."""
    try:
        scenario = get_scenario(args.scenario)
        parse_faults(args.faults, scenario)
    except ValueError as err:
        raise UsageError(str(err)) from None
    check_at_least("--steps", args.steps, 0)
    if args.steps is not None and args.steps > MAX_STEPS:
        raise UsageError(
            f"--steps must be at most {MAX_STEPS} (about a minute's run; more seeds "
            f"cover more than one longer run), not {args.steps}"
        )
    check_at_least("--objects", args.objects, 1)
    check_at_least("--shrink-runs", getattr(args, "shrink_runs", None), 0)
    check_at_least("--state-at", getattr(args, "state_at", None), 1)
    if args.no_batch and args.fifo == "delta":
        raise UsageError("--no-batch: DeltaFIFO never pops in batches (give --fifo real*)")
    if getattr(args, "json", False) and getattr(args, "verbose", False):
        raise UsageError("--json prints no timeline, so --verbose has nothing to add")
    args.tape = None
    text = getattr(args, "choices", None)
    if getattr(args, "choices_file", None) is not None:
        try:
            with open(args.choices_file, encoding="utf-8") as f:
                text = f.read()
        except OSError as err:
            raise UsageError(f"--choices-file: {err.strerror}: {args.choices_file}") from None
        except UnicodeDecodeError:
            raise UsageError(f"--choices-file: not a text file: {args.choices_file}") from None
    if text is not None:
        try:
            args.tape = parse_tape(text)
        except ValueError as err:
            raise UsageError(str(err)) from None


def _line(step: int, t: float, kind: str, desc: str) -> str:
    return f"{step:6d} {t:10.3f}s  {kind:17s} {desc}"


def _notable(kind: str, desc: str) -> bool:
    if kind not in PROGRESS_ACTIONS or "has_synced" in desc:
        return True
    if kind == "write":
        return True
    if kind == "reconcile":
        return "nothing to do" not in desc
    return kind == "reflector" and "listed" in desc


def _execute(args: argparse.Namespace, verbose: bool, state_at: int | None = None) -> int:
    _check(args)
    shrink_runs: int = getattr(args, "shrink_runs", 0)
    out = sys.stdout
    as_json = bool(getattr(args, "json", False))
    holder: list[Simulator] = []

    def timeline(step: int, t: float, kind: str, desc: str) -> None:
        if verbose or _notable(kind, desc):
            print(_line(step, t, kind, desc), file=out)
        if state_at is not None and step == state_at:
            state = holder[0].abstract_state(kind, desc)
            print(f"state after step {step}: {json.dumps(state, sort_keys=True)}", file=out)

    with ExitStack() as stack:
        # The faults make the reflector log every dropped watch; the timeline says it.
        quiet = logging.getLogger("refimpl")
        stack.callback(quiet.setLevel, quiet.level)
        quiet.setLevel(logging.CRITICAL)
        trace = None
        if args.trace:
            try:
                trace = stack.enter_context(open(args.trace, "w", encoding="utf-8"))
            except OSError as err:
                raise UsageError(f"--trace: cannot write {args.trace}: {err.strerror}") from None
        # With --json stdout carries the JSON object alone (json.loads reads it whole);
        # the timeline is what --verbose/replay are for.
        sim = _simulator(args, trace, None if as_json else timeline)
        holder.append(sim)
        if not as_json:
            print(f"{'step':>6} {'time':>11}  {'action':17s} what happened", file=out)
        try:
            result = sim.run(args.steps)
        except ChoiceOutOfRange as err:
            raise UsageError(f"--choices: {err}") from None
        if state_at is not None and state_at > result.steps + result.drain_steps:
            raise UsageError(
                f"--state-at {state_at}: the run has {result.steps + result.drain_steps} steps"
            )
        shrunk: Shrunk | None = None
        if result.violations and shrink_runs:
            shrunk = shrink_run(
                lambda chooser: _simulator(args, None, None, chooser), result, max_runs=shrink_runs
            )
    if as_json:
        data = {
            "scenario": result.scenario,
            "fifo": result.fifo_mode,
            "seed": result.seed,
            "steps": result.steps,
            "drain_steps": result.drain_steps,
            "converged": result.converged,
            "convergence_time": result.convergence_time,
            "counters": result.counters,
            "faults_injected": result.faults_injected,
            "violations": result.violations,
            "verdict": result.verdict,
            "pending": result.pending,
            "replay": result.replay,
            "shrunk": None
            if shrunk is None
            else {
                "property": shrunk.prop,
                "choices": list(shrunk.choices),
                "steps": shrunk.steps,
                "violations": shrunk.result.violations,
                "replays": shrunk.runs,
                "budget_exhausted": shrunk.exhausted,
                "replay": shrunk.result.replay,
            },
        }
        print(json.dumps(data, sort_keys=True), file=out)
    else:
        print(file=out)
        print(result.summary(), file=out)
        if shrunk is not None:
            print(shrunk.describe(), file=out)
    return EXIT_STATUS[result.verdict]


def _wrapped(head: str, text: str, width: int = 100) -> str:
    """``head`` then ``text`` wrapped to ``width`` columns, continued under ``head``'s end."""
    return textwrap.fill(
        text, width, initial_indent=head, subsequent_indent=" " * min(len(head), 23)
    )


def _run(args: argparse.Namespace) -> int:
    return _execute(args, args.verbose)


def _replay(args: argparse.Namespace) -> int:
    return _execute(args, True, args.state_at)


def _list(args: argparse.Namespace) -> int:
    print("scenarios (and what a run needs to show the scenario's point):")
    for s in SCENARIOS.values():
        print(_wrapped(f"  {s.name:20s} ", s.description))
        if s.shows:
            print(_wrapped(" " * 23 + "shows: ", s.shows))
    print("faults (--faults NAME=WEIGHT,...; progress actions weigh 100):")
    for name, what in FAULT_KINDS.items():
        print(f"  {name:20s} {what}")
    print("properties checked:")
    for name, what in PROPERTIES.items():
        print(f"  {name:22s} {what}")
    return 0
