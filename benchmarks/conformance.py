"""How fast ``refimpl conform`` catches each deliberately broken adapter, and how fast
the protocol runs against the reference adapter.

    python benchmarks/conformance.py [--seeds 5] [--budget 30] [--bug NAME ...]
                                     [--quick-shrink] [--per-seed] [--no-rates]
                                     [--inputs realistic|any]
    python benchmarks/conformance.py --shapes N [--seeds 3] [--inputs realistic|any]

For every bug in adapters/broken/bugs.py and every seed 1..N: the time until the first
counterexample was found (not counting shrinking) and the length of the shrunk sequence;
the table shows medians over the seeds (and the longest shrunk sequence), and how many
seeds caught the bug. ``--quick-shrink`` shrinks with the replay-based ``minimize()``
only, as tests/test_conformance_broken.py does; ``--per-seed`` prints every seed's
numbers; ``--no-rates`` skips the throughput measurements. Then the
round-trip rate of single requests and the step rate of a whole conformance run against
the reference adapter. Targets: every variant caught, median < 10 s, and every seed's
shrunk sequence at most ``MAX_SHRUNK`` operations (issue 11: "shrunk <= 8 steps").

``--shapes N`` instead generates N informer examples for each seed 1..``--seeds``
against the reference adapter and prints, per seed, the share of examples containing
each rare shape of search/history.py's ``SHAPES`` (target: each at least 1 in 50,
``SHAPE_TARGET``; issue 25).
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from refimpl.conformance.process import AdapterProcess
from refimpl.conformance.search.config import Config
from refimpl.conformance.search.history import INPUTS, SHAPES, Inputs, informer_shapes
from refimpl.conformance.search.run import run_component
from refimpl.conformance.search.session import RunContext

ROOT = Path(__file__).resolve().parent.parent
BROKEN = ROOT / "adapters" / "broken"
REFERENCE = [sys.executable, "-m", "refimpl.conformance.reference.adapter"]
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


def shape_shares(examples: int, seed: int, inputs: Inputs = "realistic") -> dict[str, float]:
    """The share of ``examples`` generated informer examples containing each shape."""
    sys.path.insert(0, str(ROOT / "tests"))
    from generated_requests import generated  # the recorder the --inputs tests use

    runs = generated("informer", seed, examples, inputs=inputs)
    return {s: sum(s in informer_shapes(r) for r in runs) / len(runs) for s in SHAPES}


def print_shapes(examples: int, seeds: int, inputs: Inputs) -> int:
    """The --shapes table; 0 if every share meets SHAPE_TARGET."""
    print(f"informer examples per seed: {examples}; inputs {inputs}")
    print(f"{'seed':>4s} " + " ".join(f"{s:>15s}" for s in SHAPES))
    ok = True
    for seed in range(1, seeds + 1):
        shares = shape_shares(examples, seed, inputs)
        ok = ok and min(shares.values()) >= SHAPE_TARGET
        print(f"{seed:4d} " + " ".join(f"{shares[s]:15.3f}" for s in SHAPES), flush=True)
    print(f"target: each at least {SHAPE_TARGET:.3f}: " + ("met" if ok else "missed"))
    return 0 if ok else 1


def protocol_rate(seconds: float = 2.0) -> float:
    with AdapterProcess(REFERENCE) as adapter:
        adapter.request({"op": "hello", "protocol": 1})
        adapter.request({"op": "create", "instance": "q", "component": "queue"})
        calls = [
            {"op": "call", "instance": "q", "method": m, "args": a}
            for m, a in (("add", {"item": "a"}), ("get_nowait", {}), ("done", {"item": "a"}))
        ]
        n = 0
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            adapter.request(calls[n % 3])
            n += 1
        return n / (time.perf_counter() - started)


def run_rate(budget: float = 4.0) -> float:
    config = Config(command=REFERENCE, budget=budget, seed=1, progress=False)
    ctx = RunContext(config, io.StringIO())
    steps = 0
    elapsed = 0.0
    try:
        ctx.start_adapter()
        for component in ("queue", "delaying_queue", "rate_limiting_queue"):
            result = run_component(ctx, component, budget / 3)
            assert result.failure is None, f"the reference adapter failed on {component}"
            steps += result.steps
            elapsed += result.elapsed
    finally:
        ctx.close()
    return steps / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budget", type=float, default=30.0)
    parser.add_argument("--shrink-budget", type=float, default=10.0)
    parser.add_argument("--bug", action="append", default=[])
    parser.add_argument("--quick-shrink", action="store_true", help="minimize() only")
    parser.add_argument("--per-seed", action="store_true", help="print every seed's numbers")
    parser.add_argument("--no-rates", action="store_true", help="skip the throughput lines")
    parser.add_argument("--inputs", choices=INPUTS, default="realistic")
    parser.add_argument("--shapes", type=int, metavar="N", help="count rare informer shapes")
    args = parser.parse_args()
    if args.shapes:
        return print_shapes(args.shapes, args.seeds, args.inputs)
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
                args.inputs,
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
    print(f"protocol round trips (reference adapter): {protocol_rate():,.0f} requests/s")
    print(f"conformance run (Hypothesis + both sides): {run_rate():,.0f} steps/s")
    print("targets met" if worst_ok else "some targets missed")
    return 0 if worst_ok else 1


if __name__ == "__main__":
    sys.exit(main())
