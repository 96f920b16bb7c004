"""How fast ``refimpl conform`` catches each deliberately broken adapter, and how fast
its search runs.

    python benchmarks/conformance.py [--seeds 5] [--budget 30] [--bug NAME ...]
                                     [--quick-shrink] [--per-seed] [--no-rates]
                                     [--rates-only] [--rate-seeds 3] [--rate-examples 200]
                                     [--baseline DIR] [--inputs realistic|any]
    python benchmarks/conformance.py --shapes N [--seeds 3] [--inputs realistic|any]

For every bug in adapters/broken/bugs.py and every seed 1..N: the time until the first
counterexample was found (not counting shrinking) and the length of the shrunk sequence;
the table shows medians over the seeds (and the longest shrunk sequence), and how many
seeds caught the bug. ``--quick-shrink`` shrinks with the replay-based ``minimize()``
only, as tests/test_conformance_broken.py does; ``--per-seed`` prints every seed's
numbers. Targets: every variant caught, median < 10 s, and every seed's shrunk sequence
at most ``MAX_SHRUNK`` operations (issue 11: "shrunk <= 8 steps").

Then (unless ``--no-rates``; only this with ``--rates-only``) the throughput table: the
search of queue, delta_fifo and informer against the reference adapter, seeds
1..``--rate-seeds`` with ``--rate-examples`` examples each, in steps/s and examples/s,
beside the pipe floor (round trips/s with benchmarks/echo_adapter.py, measured in the
same run) and the share of it the search reaches; the same against the client-go
adapter when adapters/client-go/bin/adapter is built (``make -C adapters/client-go``).
``--baseline DIR`` runs DIR's search too (a checkout with its own ``.venv``, e.g. of
revision 0edaa45), seed by seed in alternation with this one, and prints the speed-up
and whether both sides generated the same steps. Each search runs in a child process
(benchmarks/search_rate.py) with the Python of the checkout it measures.

``--shapes N`` instead generates N examples for each seed 1..``--seeds`` against the
reference adapter and prints, per seed, how many of every 100 contain each rare shape:
the informer's (search/history.py's ``SHAPES``: issues 25 and 30) and the store's
(``CACHE_SHAPES``: several index values, a change in their number, and, with
``--inputs any`` whatever ``--inputs`` says, a key listed twice in one replace, for the
store and the DeltaFIFO); target: each at least 1 in 50 (``SHAPE_TARGET``).
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from refimpl.conformance.process import AdapterProcess
from refimpl.conformance.search.config import Config
from refimpl.conformance.search.history import (
    CACHE_SHAPES,
    INPUTS,
    SHAPES,
    Inputs,
    cache_shapes,
    informer_shapes,
)
from refimpl.conformance.search.run import run_component
from refimpl.conformance.search.session import RunContext

ROOT = Path(__file__).resolve().parent.parent
BROKEN = ROOT / "adapters" / "broken"
REFERENCE = [sys.executable, "-m", "refimpl.conformance.reference.adapter"]
ECHO = [sys.executable, str(ROOT / "benchmarks" / "echo_adapter.py")]
CLIENT_GO = ROOT / "adapters" / "client-go" / "bin" / "adapter"
#: The components of the throughput table.
RATE_COMPONENTS = ("queue", "delta_fifo", "informer")
#: The longest shrunk counterexample (operations, ``create`` included) a target allows.
MAX_SHRUNK = 8
#: The least share of informer examples that must contain each rare shape.
SHAPE_TARGET = 1 / 50


def load_bugs() -> Any:
    spec = importlib.util.spec_from_file_location("broken_bugs", BROKEN / "bugs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def catch(
    bug: str,
    component: str,
    seed: int,
    budget: float,
    shrink_budget: float,
    quick_shrink: bool = False,
    inputs: Inputs = "realistic",
) -> tuple[float | None, int]:
    """(seconds to the first counterexample or None, shrunk length)."""
    command = [sys.executable, str(BROKEN / "adapter.py"), "--bug", bug]
    config = Config(
        command=command,
        budget=budget,
        seed=seed,
        shrink_budget=shrink_budget,
        quick_shrink=quick_shrink,
        progress=False,
        inputs=inputs,
        # The first finding only: what these numbers have always measured.
        max_findings=1,
    )
    ctx = RunContext(config, io.StringIO())
    try:
        ctx.start_adapter()
        result = run_component(ctx, component, budget)
    finally:
        ctx.close()
    if result.failure is None:
        return None, 0
    return result.failure.found_after, len(result.failure.steps)


#: What ``--shapes`` counts: the component whose examples it generates, the shapes, and
#: the inputs that reach them (None: ``--inputs``). A key listed twice is unusual input.
SHAPE_RUNS: tuple[tuple[str, tuple[str, ...], Inputs | None], ...] = (
    ("informer", SHAPES, None),
    ("store", ("several_values", "values_change"), None),
    ("store", ("duplicate_key",), "any"),
    ("delta_fifo", ("duplicate_key",), "any"),
)


def shape_counts(component: str, examples: int, seed: int, inputs: Inputs) -> dict[str, float]:
    """Per 100 generated examples of ``component``: how many contain each shape."""
    sys.path.insert(0, str(ROOT / "tests"))
    from generated_requests import generated  # the recorder the --inputs tests use

    runs = generated(component, seed, examples, inputs=inputs)
    found = [informer_shapes(r) if component == "informer" else cache_shapes(r) for r in runs]
    names = SHAPES if component == "informer" else CACHE_SHAPES
    return {s: 100 * sum(s in f for f in found) / len(runs) for s in names}


def print_shapes(examples: int, seeds: int, inputs: Inputs) -> int:
    """The --shapes table, one row per shape, one column per seed; 0 if every count
    meets SHAPE_TARGET."""
    print(f"shapes per 100 examples ({examples} examples per seed and component)")
    columns = " ".join(f"{'seed ' + str(s):>7s}" for s in range(1, seeds + 1))
    print(f"{'shape':15s} {'component':10s} {'inputs':9s} {columns}")
    ok = True
    for component, shapes, fixed in SHAPE_RUNS:
        mode = fixed or inputs
        counts = [shape_counts(component, examples, s, mode) for s in range(1, seeds + 1)]
        for shape in shapes:
            row = [c[shape] for c in counts]
            ok = ok and min(row) >= 100 * SHAPE_TARGET
            shown = " ".join(f"{v:7.1f}" for v in row)
            print(f"{shape:15s} {component:10s} {mode:9s} {shown}", flush=True)
    print(f"target: each at least {100 * SHAPE_TARGET:.1f} per 100: " + ("met" if ok else "missed"))
    return 0 if ok else 1


def pipe_floor(seconds: float = 2.0) -> float:
    """Round trips per second with the echo adapter: the pipe's own cost, no work."""
    with AdapterProcess(ECHO) as adapter:
        adapter.request({"op": "hello", "protocol": 2})
        call = {"op": "call", "instance": "x", "method": "len", "args": {}}
        n = 0
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            adapter.request(call)
            n += 1
        return n / (time.perf_counter() - started)


def search_rate(
    python: str, cwd: Path, component: str, seed: int, examples: int, adapter: list[str]
) -> dict[str, Any]:
    """One search, run by ``python`` in ``cwd`` (a checkout: its refimpl, its reference
    adapter unless ``adapter`` is given), as measured by benchmarks/search_rate.py."""
    argv = [python, str(ROOT / "benchmarks" / "search_rate.py"), component, str(seed)]
    done = subprocess.run(
        [*argv, str(examples), *adapter], cwd=cwd, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"search_rate.py failed in {cwd}:\n{done.stderr[-2000:]}")
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def throughput(seeds: int, examples: int, baseline: Path | None) -> bool:
    """The throughput table: each component's search against the reference adapter (and
    client-go's, when built), steps/s and examples/s beside the pipe floor measured in
    the same run; with ``baseline``, that checkout's search too, seed by seed in
    alternation, and the speed-up. False if the two sides' examples differ."""
    sides: list[tuple[str, str, Path, list[str]]] = [("this", sys.executable, ROOT, [])]
    if baseline is not None:
        sides.append(("baseline", str(baseline / ".venv" / "bin" / "python"), baseline, []))
    if CLIENT_GO.exists():
        sides.append(("client-go", sys.executable, ROOT, [str(CLIENT_GO)]))
    print(f"search throughput: seeds 1-{seeds}, {examples} examples each")
    header = (
        f"{'side':10s} {'component':11s} {'examples':>8s} {'steps':>7s} {'seconds':>8s}"
        f" {'steps/s':>8s} {'ex/s':>6s} {'floor/s':>8s} {'of floor':>8s}"
    )
    print(header)
    print("-" * len(header))
    same = True
    for component in RATE_COMPONENTS:
        floor = pipe_floor()
        totals = {name: [0, 0, 0.0] for name, *_ in sides}
        steps_by_side: dict[str, list[int]] = {name: [] for name, *_ in sides}
        for seed in range(1, seeds + 1):
            # Alternate the order so a change in the machine's load hits both sides.
            order = sides if seed % 2 else list(reversed(sides))
            for name, python, cwd, adapter in order:
                line = search_rate(python, cwd, component, seed, examples, adapter)
                totals[name][0] += line["examples"]
                totals[name][1] += line["steps"]
                totals[name][2] += line["seconds"]
                steps_by_side[name].append(line["steps"])
        for name, *_ in sides:
            ex, steps, seconds = totals[name]
            rate = steps / seconds
            print(
                f"{name:10s} {component:11s} {ex:8d} {steps:7d} {seconds:8.2f} {rate:8.0f}"
                f" {ex / seconds:6.1f} {floor:8.0f} {rate / floor:8.1%}"
            )
        if baseline is not None:
            speedup = (totals["this"][1] / totals["this"][2]) / (
                totals["baseline"][1] / totals["baseline"][2]
            )
            agree = steps_by_side["this"] == steps_by_side["baseline"]
            same = same and agree
            shown = "same steps seed by seed" if agree else "DIFFERENT steps: other examples"
            print(f"{'':10s} {component:11s} {speedup:.2f}x the baseline's steps/s ({shown})")
    print(f"floor: round trips/s with benchmarks/echo_adapter.py ({' '.join(ECHO[1:])})")
    return same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budget", type=float, default=30.0)
    parser.add_argument("--shrink-budget", type=float, default=10.0)
    parser.add_argument("--bug", action="append", default=[])
    parser.add_argument("--quick-shrink", action="store_true", help="minimize() only")
    parser.add_argument("--per-seed", action="store_true", help="print every seed's numbers")
    parser.add_argument("--no-rates", action="store_true", help="skip the throughput table")
    parser.add_argument("--rates-only", action="store_true", help="only the throughput table")
    parser.add_argument("--rate-seeds", type=int, default=3, help="seeds per component")
    parser.add_argument("--rate-examples", type=int, default=200, help="examples per seed")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="a checkout (with its .venv) whose search runs beside this one's",
    )
    parser.add_argument("--inputs", choices=INPUTS, default="realistic")
    parser.add_argument("--shapes", type=int, metavar="N", help="count rare generated shapes")
    args = parser.parse_args()
    if args.shapes:
        return print_shapes(args.shapes, args.seeds, args.inputs)
    if args.rates_only:
        same = throughput(args.rate_seeds, args.rate_examples, args.baseline)
        return 0 if same else 1
    bugs = load_bugs().BUGS
    # Spec-only bugs need requests random search never sends (benchmarks/spec_driven.py).
    names = args.bug or [n for n, b in bugs.items() if b.found_by == "search"]
    header = (
        f"{'bug':32s} {'component':15s} {'caught':>7s} {'median s':>9s} {'max s':>7s} {'ops':>4s}"
        f" {'max ops':>7s}"
    )
    print(header)
    print("-" * len(header))
    worst_ok = True
    for name in names:
        bug = bugs[name]
        times: list[float] = []
        lengths: list[int] = []
        for seed in range(1, args.seeds + 1):
            found, length = catch(
                name,
                bug.component,
                seed,
                args.budget,
                args.shrink_budget,
                args.quick_shrink,
                # A bug only a key listed twice shows needs unusual inputs.
                "any" if bug.inputs == "any" else args.inputs,
            )
            if args.per_seed:
                shown = "not caught" if found is None else f"{found:.2f} s, {length} ops"
                print(f"  {name} seed {seed}: {shown}", flush=True)
            if found is not None:
                times.append(found)
                lengths.append(length)
        caught = f"{len(times)}/{args.seeds}"
        med = statistics.median(times) if times else float("nan")
        top = max(times) if times else float("nan")
        ops = int(statistics.median(lengths)) if lengths else 0
        longest = max(lengths) if lengths else 0
        ok = len(times) == args.seeds and med < 10 and longest <= MAX_SHRUNK
        worst_ok = worst_ok and ok
        print(
            f"{name:32s} {bug.component:15s} {caught:>7s} {med:9.2f} {top:7.2f} {ops:4d}"
            f" {longest:7d}" + ("" if ok else "   <- misses a target"),
            flush=True,
        )
    print()
    if args.no_rates:
        print("targets met" if worst_ok else "some targets missed")
        return 0 if worst_ok else 1
    worst_ok = throughput(args.rate_seeds, args.rate_examples, args.baseline) and worst_ok
    print("targets met" if worst_ok else "some targets missed")
    return 0 if worst_ok else 1


if __name__ == "__main__":
    sys.exit(main())
