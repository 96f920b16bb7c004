"""Coverage of trace validation across seeds (issue #28 item 4; docs/07, "Coverage").

For a run of seeds of one simulator scenario: how many seeds reach each rare relist of
refimpl/sim/rare.py, with the scenario's generator steered toward them and without
(both measured in one run of the command), and, with ``tlc``, each steered seed's trace
checked against a spec (refimpl/tla/trace.py) and the spec actions its witness takes:
per action, in how many seeds and how many steps. ``refimpl spec trace-coverage`` is its
command line. Owns no state; runs TLC only with ``tlc``. Refines nothing.

Graph edges are not counted: a trace's keys are the simulator's object names and its
resourceVersions run past the models' bounds (6 objects, hundreds of writes; the graphs
have 2 keys and 3 writes), so no state of a trace is a state of a committed graph.
"""

from __future__ import annotations

import argparse
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from refimpl.sim.rare import RARE_PATHS, setups
from refimpl.textable import table
from refimpl.tla import trace as tr
from refimpl.tla.runner import TlcUnavailable, refused
from refimpl.usage import UsageError, check_at_least

__all__ = [
    "SeedRun",
    "add_arguments",
    "declared_actions",
    "rare_paths_reached",
    "run_command",
    "run_seed",
]


def rare_paths_reached(lines: Iterable[Mapping[str, Any]]) -> set[str]:
    """The rare paths a trace takes: at each relist (a reflector line that listed, not
    the first list of its informer's generation) what the line before held queued and
    stored, against the server the relist read (refimpl/sim/rare.py)."""
    out: set[str] = set()
    lists: dict[int, int] = {}
    before: Mapping[str, Any] | None = None
    for line in lines:
        generation = int(line.get("generation", 0))
        listed = line.get("action") == "reflector" and str(line.get("desc", "")).startswith(
            "reflector listed"
        )
        if listed:
            lists[generation] = lists.get(generation, 0) + 1
            if lists[generation] > 1 and before is not None:
                out |= setups(before["fifo"], before["store"], line["server"])
        before = line
    return out


def declared_actions(spec: str) -> set[str]:
    """The spec actions a trace of ``spec`` may take (its mapping's step rules)."""
    acts = {a for rule in tr.STEPS[spec].values() for a in rule[0]}
    if spec in tr.INFORMER_SPECS:
        acts |= set(tr.SUB_STEPS[spec].values()) | {"Write"}
    return acts


@attrs.frozen
class SeedRun:
    """One seed: the rare paths its plain and steered runs reach, and (with TLC) the
    steered trace's verdict and witness actions."""

    seed: int
    plain: frozenset[str]
    steered: frozenset[str]
    accepted: bool | None = None
    actions: Mapping[str, int] = attrs.field(factory=dict)


def _trace(scenario: str, seed: int, steps: int, fifo: str, steer: bool) -> list[str]:
    from refimpl.sim.simulator import Simulator

    out = io.StringIO()
    Simulator(scenario, seed=seed, fifo_mode=fifo, trace=out, steer_rare=steer).run(steps)
    return out.getvalue().splitlines()


def run_seed(scenario: str, seed: int, steps: int, fifo: str, spec: str | None = None) -> SeedRun:
    """Run ``seed`` plain and steered; with ``spec``, check the steered trace with TLC."""
    plain = _trace(scenario, seed, steps, fifo, False)
    steered = _trace(scenario, seed, steps, fifo, True)
    run = SeedRun(
        seed,
        frozenset(rare_paths_reached(json.loads(x) for x in plain)),
        frozenset(rare_paths_reached(json.loads(x) for x in steered)),
    )
    if spec is None:
        return run
    result = tr.validate(steered, spec)
    return attrs.evolve(run, accepted=result.ok, actions=dict(result.actions))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sim", default="informer", metavar="SCENARIO", help="default: informer")
    parser.add_argument("--seeds", type=int, default=40, help="seeds 1..N (default 40)")
    parser.add_argument("--steps", type=int, default=300, help="steps per run (default 300)")
    parser.add_argument(
        "--fifo", default="delta", choices=["real-atomic", "real", "delta"], help="default: delta"
    )
    parser.add_argument(
        "--spec",
        choices=tr.SPECS,
        default=None,
        help="check each steered trace against SPEC with TLC (default: none, no TLC)",
    )


def _report(runs: Sequence[SeedRun], spec: str | None) -> list[str]:
    n = len(runs)
    rows = [
        (
            path,
            f"{sum(path in r.plain for r in runs)}/{n}",
            f"{sum(path in r.steered for r in runs)}/{n}",
            about,
        )
        for path, about in RARE_PATHS.items()
    ]
    out = [table(("rare path", "plain", "steered", "what"), rows)]
    if spec is None:
        return out
    declared = declared_actions(spec)
    taken = sorted({a for r in runs for a in r.actions} | declared)
    counts = [
        (
            a,
            f"{sum(a in r.actions for r in runs)}/{n}",
            str(sum(r.actions.get(a, 0) for r in runs)),
        )
        for a in taken
    ]
    out += ["", table((f"{spec} action", "seeds", "steps"), counts)]
    accepted = sum(bool(r.accepted) for r in runs)
    never = sorted(a for a in declared if not any(a in r.actions for r in runs))
    out.append(f"\n{accepted}/{n} steered traces accepted by {spec}")
    out.append(f"{len(declared) - len(never)}/{len(declared)} actions taken")
    if never:
        out.append(f"never taken: {', '.join(never)}")
    return out


def run_command(args: argparse.Namespace) -> int:
    """Print the rare paths per seed count (and with ``--spec`` the witness actions);
    exit 1 when a steered trace is rejected, as trace validation does."""
    from refimpl.sim.scenarios import SCENARIOS

    if args.sim not in SCENARIOS:
        raise UsageError(f"--sim {args.sim}: no such scenario (known: {', '.join(SCENARIOS)})")
    check_at_least("--seeds", args.seeds, 1)
    check_at_least("--steps", args.steps, 0)
    runs: list[SeedRun] = []
    try:
        for seed in range(1, args.seeds + 1):
            runs.append(run_seed(args.sim, seed, args.steps, args.fifo, args.spec))
    except (ValueError, tr.TraceCheckError, TlcUnavailable) as exc:
        return refused(exc, "error: ", tlc_prefix="cannot run TLC: ")
    print(f"seeds 1-{args.seeds} of {args.sim}, --fifo {args.fifo}, {args.steps} steps")
    print("\n".join(_report(runs, args.spec)))
    return 1 if any(r.accepted is False for r in runs) else 0
