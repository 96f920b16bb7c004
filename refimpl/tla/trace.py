"""Trace validation: simulator traces (JSON lines) checked by TLC against
spec/WorkQueue.tla, spec/DeltaFIFO.tla, spec/RealFIFO.tla, spec/Informer.tla and
spec/InformerAtomic.tla, through spec/trace/<Spec>Trace.tla.

Owns no state and never runs TLC on import: only :func:`validate` does, and it raises
:class:`~refimpl.tla.runner.TlcUnavailable` without a jar or java. Refines nothing.
``refimpl spec trace`` is its command line (``python -m refimpl.tla.trace`` too).

This module picks the spec's mapping and runs it; the parts live beside it, as the
refinement mappings do (refine_*.py): :mod:`~refimpl.tla.trace_core` (a mapped line
and trace, the generated module, TLC's verdict), :mod:`~refimpl.tla.trace_workqueue`,
:mod:`~refimpl.tla.trace_fifo` (DeltaFIFO and RealFIFO) and
:mod:`~refimpl.tla.trace_informer` (Informer and InformerAtomic).

The lines of ``Simulator.abstract_state`` (refimpl/sim/state.py) are mapped to the
spec's variables (:func:`map_trace`), written as a module that EXTENDS
spec/trace/<Spec>Trace.tla with the trace as a constant (:func:`trace_module`), and TLC
decides whether some behaviour of the spec passes through every line (the technique is
described in spec/trace/WorkQueueTrace.tla).

The mappings (spec variable = trace field)::

    WorkQueue  queue = queue (head first); dirty, processing = those lists as sets;
               waiting = keys of waiting; holding["w<j>"] = workers[j][0], or NoItem;
               shuttingDown, drain, stopped, drainer = the fields of those names if
               present, else FALSE, FALSE, {}, "idle" -- the simulator's trace has no
               such fields: it never shuts a live queue down (a crash discards it).
    DeltaFIFO  queue = the keys of fifo in order; items[k] = k's deltas ([type, key,
               rv] -> [type, obj |-> [key, rv, dfsu]], "Deleted(DFSU)" = a tombstone);
               store[k] = store[k], absent = 0; synced = synced.  Needs ``--fifo delta``.
    RealFIFO   log = fifo without Bookmark entries (not modelled; processing one changes
               nothing mapped), a ReplacedAll [type, rv, [[key, rv], ...]] -> [type,
               obj |-> the listed objects]; processing = <<>> (a simulator pop takes
               and processes at once); store, synced as for DeltaFIFO.  Atomic = TRUE
               for ``--fifo real-atomic``, FALSE for ``--fifo real`` (``atomic``; by
               default FALSE iff the trace shows Replaced, Sync or tombstone entries).
    Informer   (needs the ``spec`` fields: ``Simulator(spec_trace=True)``, as the
    and        informer-spec scenario does; ``--fifo delta`` for Informer,
    Informer-  ``--fifo real-atomic`` for InformerAtomic.) Every rv is the code's - 1
    Atomic     (the code's server starts at 1, as refine_informer_state.py maps it); keys
               are the simulator's "namespace/name" strings, the same in every field.
               server[k] = server[k], absent = 0; history = spec.history, every write
               (type, key, rv) the simulator saw the server make, compacted or not
               (written into the module as its length, a prefix of TraceHistoryData);
               compacted = compactedRV - 1; reflector = spec.phase (the park point of
               the reflector loop: not started or the relist backoff = "list"; the
               backoff after a failed watch request, or an unread 410 answer = "connect";
               reading an open watch = "watch"; anything else cannot be mapped);
               lastSyncRV = reflector.lastSyncRV ("" = 0); the FIFO variables, store
               and synced as for DeltaFIFO / atomic RealFIFO; notifications =
               pending[spec.listener] (h0), "deleteDFSU" = delete; view, lastRV =
               spec.view, spec.lastRV (a recording handler behind h0; absent = 0).
               synced = spec.fifoSynced (the FIFO's own HasSynced). Left to the
               spec: populated, initialPopulationCount, applied. Processing is
               recorded at the code's own steps: the cores' tracing hooks
               (Indexer.on_write, InformerCore.step_hook) make each pop / take, store
               write, handler call and finish a line of its own (``sub``), which
               takes exactly its one spec action (:data:`SUB_STEPS`); between them
               the processing variables (popped, outbox; processing, outbox,
               written) are left to the spec, at every other line they are empty.
               A reflector line takes at least one spec step per ``spec.answers``
               entry. A crash restarts everything but the server from Init.

Each code step (the line's ``action``) may take the spec steps of :data:`STEPS`; any
other code step must leave the mapped variables unchanged. A change of ``generation``
(a controller crash) restarts from the spec's Init. Model constants are the values the
trace uses: Keys = every key it mentions, Workers = ``w0 .. w<n-1>``, RVs = every
resourceVersion. For DeltaFIFO the arguments of producer steps come from the trace too
(the objects it shows, each line's relist result, the key orders it shows; see
spec/trace/DeltaFIFOTrace.tla): that narrows Next, so a trace can only be wrongly
rejected, never wrongly accepted. For the Informer specs, Keys = every key, MaxRV = the
number of writes (or more, so the FIFO bound MaxRV * 4 + 4 is never reached), a line
may also take one Write per write it shows, and each Write must append the trace's next
write; list and deletion orders of more than 3 elements come from the trace.

What the Informer specs do not model, and so the trace cannot show: resync, an ERROR 410
on an open watch, a watch that ends within a second having delivered nothing (client-go
then relists), compaction of part of the history, lost notifications, the watch-list
stream. ``refimpl spec trace --spec Informer --sim informer-spec`` runs a
scenario without them (:func:`informer_scenario_problems` says what another lacks).
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from refimpl.sim.trace_schema import TraceRecord
from refimpl.tla.runner import TlcUnavailable, refused
from refimpl.tla.trace_core import (
    FailedStep,
    StepRule,
    TraceCheckError,
    TraceLine,
    TraceMapping,
    TraceResult,
    read_trace,
    run_mapping,
    trace_module,
)
from refimpl.tla.trace_fifo import DELTA_STEPS, REAL_STEPS, map_delta_fifo, map_real_fifo
from refimpl.tla.trace_informer import (
    INFORMER_FAULTS,
    INFORMER_SPECS,
    SUB_STEPS,
    checked_informer_lines,
    informer_scenario_problems,
    map_informer,
)
from refimpl.tla.trace_informer import STEPS as INFORMER_STEPS
from refimpl.tla.trace_workqueue import STEPS as WORKQUEUE_STEPS
from refimpl.tla.trace_workqueue import map_workqueue
from refimpl.usage import Parser, UsageError, check_at_least

__all__ = [
    "INFORMER_FAULTS",
    "INFORMER_SPECS",
    "SPECS",
    "STEPS",
    "SUB_STEPS",
    "FailedStep",
    "StepRule",
    "TraceCheckError",
    "TraceLine",
    "TraceMapping",
    "TraceResult",
    "add_arguments",
    "checked_lines",
    "informer_scenario_problems",
    "main",
    "map_trace",
    "read_trace",
    "run_command",
    "trace_module",
    "validate",
]

#: The specs a trace can be checked against.
SPECS = ("WorkQueue", "DeltaFIFO", "RealFIFO", "Informer", "InformerAtomic")

#: (spec actions, how many spec steps) a code step may take, per spec and code step.
STEPS: dict[str, dict[str, StepRule]] = {
    "WorkQueue": WORKQUEUE_STEPS,
    "DeltaFIFO": DELTA_STEPS,
    "RealFIFO": REAL_STEPS,
    **INFORMER_STEPS,
}


def checked_lines(lines: Iterable[str | Mapping[str, Any]], spec: str) -> list[TraceRecord]:
    """The lines of a trace that are checked against ``spec``: the FIFO and work-queue
    specs check whole simulator steps, so they drop the code-step lines (``sub``); the
    Informer specs drop only those of a RealFIFO batch (see ``_fine_steps`` in
    refimpl/tla/trace_informer.py). A line's index in the verdict counts these lines."""
    return _checked(read_trace(lines), spec)


def _checked(raws: Sequence[TraceRecord], spec: str) -> list[TraceRecord]:
    if spec not in INFORMER_SPECS:
        return [r for r in raws if "sub" not in r]
    return checked_informer_lines(raws, spec)


def map_trace(
    lines: Iterable[str | Mapping[str, Any]],
    spec: str = "WorkQueue",
    *,
    atomic: bool | None = None,
) -> TraceMapping:
    """Map a simulator trace (JSON lines or decoded dicts) to ``spec``'s variables.
    ``atomic`` is RealFIFO's ``Atomic`` (None: from the trace, see ``_is_atomic``).

    Raises ValueError for an empty trace, an unknown spec, or a line that lacks what
    the spec needs or holds what it cannot express (each error names the line).
    """
    if spec not in SPECS:
        raise ValueError(f"unknown spec {spec!r}; trace validation knows {', '.join(SPECS)}")
    raws = read_trace(lines)
    if not raws:
        raise ValueError("the trace is empty")
    raws = _checked(raws, spec)
    if spec in INFORMER_SPECS:
        return map_informer(raws, spec)
    if spec == "WorkQueue":
        return map_workqueue(raws)
    if spec == "RealFIFO":
        return map_real_fifo(raws, atomic)
    return map_delta_fifo(raws)


def validate(
    trace_lines: Iterable[str | Mapping[str, Any]],
    spec: str = "WorkQueue",
    *,
    spec_dir: Path | None = None,
    timeout: float = 300.0,
    keep: Path | None = None,
    jar: Path | None = None,
    java: Path | None = None,
    atomic: bool | None = None,
) -> TraceResult:
    """Check with TLC that the trace is a behaviour of ``spec`` (see the module doc).

    ``keep`` names a folder to write the generated module and cfg into (kept for
    inspection); otherwise they live in a temporary folder. Raises ValueError for a
    trace that does not map (:func:`map_trace`), :class:`TlcUnavailable` without a jar
    or java, and :class:`TraceCheckError` when TLC ends without a verdict.
    """
    mapping = map_trace(trace_lines, spec, atomic=atomic)
    return run_mapping(mapping, spec_dir=spec_dir, timeout=timeout, keep=keep, jar=jar, java=java)


# -- command line -------------------------------------------------------------------------


def _simulate(scenario: str, seed: int, steps: int, fifo: str, spec: str) -> list[str]:
    from refimpl.sim.simulator import Simulator

    spec_trace = spec in INFORMER_SPECS
    if spec_trace:
        problems = informer_scenario_problems(scenario)
        if problems:
            raise ValueError(
                f"scenario {scenario} has what the Informer specs do not model: "
                f"{'; '.join(problems)}. Use --sim informer-spec"
            )
    out = io.StringIO()
    Simulator(scenario, seed=seed, fifo_mode=fifo, trace=out, spec_trace=spec_trace).run(steps)
    return out.getvalue().splitlines()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``refimpl spec trace`` (and ``python -m refimpl.tla.trace``)."""
    parser.add_argument(
        "trace",
        nargs="?",
        type=Path,
        help="JSON-lines trace file (refimpl sim --trace FILE); default: none, give --sim",
    )
    parser.add_argument(
        "--spec", choices=SPECS, default="WorkQueue", help="the spec (default: WorkQueue)"
    )
    parser.add_argument(
        "--sim",
        metavar="SCENARIO",
        help="run the simulator's SCENARIO instead of reading a file (default: none)",
    )
    parser.add_argument("--seed", type=int, default=None, help="--sim: the run's seed (default: 0)")
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="--sim: steps of the run, then its drain (default: 300)",
    )
    parser.add_argument(
        "--fifo",
        default=None,
        choices=["real-atomic", "real", "delta"],
        help="--sim: the FIFO (default: delta for DeltaFIFO and Informer, else real-atomic)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        help="folder to keep the generated module and cfg in (default: a temporary one)",
    )


def _trace_lines(args: argparse.Namespace) -> list[str]:
    """The trace the command line names (a file, or a fresh ``--sim`` run); raises
    UsageError for a command line that cannot give one, before anything runs."""
    from refimpl.sim.scenarios import SCENARIOS

    if (args.trace is None) == (args.sim is None):
        raise UsageError("give a trace file or --sim SCENARIO")
    if args.keep is not None and args.keep.exists() and not args.keep.is_dir():
        raise UsageError(f"--keep {args.keep} is a file, not a folder")
    if args.sim is None:
        given = [f"--{n}" for n in ("seed", "steps", "fifo") if getattr(args, n) is not None]
        if given:
            raise UsageError(f"{', '.join(given)}: only for --sim, not a trace file")
        try:
            text: str = args.trace.read_text(encoding="utf-8")
        except OSError as err:
            raise UsageError(f"cannot read {args.trace}: {err.strerror}") from None
        except UnicodeDecodeError:
            raise UsageError(f"{args.trace} is not a text file") from None
        return text.splitlines()
    if args.sim not in SCENARIOS:
        raise UsageError(f"--sim {args.sim}: no such scenario (known: {', '.join(SCENARIOS)})")
    check_at_least("--steps", args.steps, 0)
    delta = args.spec in ("DeltaFIFO", "Informer")
    fifo = args.fifo or ("delta" if delta else "real-atomic")
    steps = 300 if args.steps is None else args.steps
    try:
        return _simulate(args.sim, args.seed or 0, steps, fifo, args.spec)
    except ValueError as err:  # a scenario the spec does not model
        raise UsageError(str(err)) from None


def run_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Validate a trace file, or a fresh simulator run; prints the verdict. Exit 0
    accepted, 1 rejected, 2 a trace that does not map, 3 a usage error, 5 / 6 no jar /
    no java (refimpl.usage)."""
    lines = _trace_lines(args)
    try:
        result = validate(lines, args.spec, keep=args.keep)
    except (ValueError, TraceCheckError, TlcUnavailable) as exc:
        return refused(exc, "error: ", tlc_prefix="cannot run TLC: ")
    except OSError as err:
        if args.keep is None:
            raise
        raise UsageError(f"--keep: cannot write in {args.keep}: {err.strerror}") from None
    print(result.summary())
    return 0 if result.ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m refimpl.tla.trace``: the same as ``refimpl spec trace``."""
    parser = Parser(
        prog="python -m refimpl.tla.trace",
        description="Check a simulator trace against a TLA+ spec with TLC (needs TLA2TOOLS_JAR).",
    )
    add_arguments(parser)
    try:
        return run_command(parser.parse_args(argv), parser)
    except UsageError as err:
        parser.error(str(err))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
