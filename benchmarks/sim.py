"""Throughput of the deterministic simulator, and how a step's cost grows with objects.

Prints two tables:
* per scenario and FIFO mode: runs (seeds), simulated steps, steps per second, and how
  many runs broke a property (expected 0, except replicaset-nowait, whose bad deletes are
  the kept counterexample, on the FIFOs that expose a half-filled cache);
* per scenario and population (10, 100, 1000 objects): microseconds per step and the
  ratio to the 10-object cost.

Run: ``.venv/bin/python benchmarks/sim.py [--seeds N] [--steps M] [--objects 10,100,1000]``.
Each run is a pure function of its seed, so the table's counts are reproducible; the
timings are wall-clock and vary with the machine.
"""

from __future__ import annotations

import argparse
import time

from refimpl.cache.shared_informer import FifoMode
from refimpl.sim import SCENARIOS, Simulator


def measure(
    scenario: str, mode: str, seeds: range, steps: int, objects: int | None
) -> tuple[int, float, int, int]:
    """(simulated steps, seconds, runs with a violation, runs that converged)."""
    total = 0
    bad = 0
    converged = 0
    started = time.perf_counter()
    for seed in seeds:
        r = Simulator(scenario, seed=seed, fifo_mode=mode, objects=objects).run(steps)
        total += r.steps + r.drain_steps
        bad += 0 if r.ok else 1
        converged += 1 if r.converged else 0
    return total, time.perf_counter() - started, bad, converged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=100, help="runs per scenario and mode")
    parser.add_argument("--steps", type=int, default=500, help="steps with faults per run")
    parser.add_argument("--objects", default="10,100,1000", help="populations for table 2")
    parser.add_argument("--scaling-seeds", type=int, default=3, help="runs per population")
    args = parser.parse_args()

    runs = f"{args.seeds} seeds x {args.steps} steps + drain, default faults"
    print(f"Simulated steps per second ({runs})")
    columns = ("runs", "steps", "steps/s", "violating", "converged")
    widths = (5, 9, 9, 9, 9)
    header = f"{'scenario':20s} {'fifo':12s} " + " ".join(
        f"{c:>{w}s}" for c, w in zip(columns, widths, strict=True)
    )
    print(header)
    print("-" * len(header))
    for name in SCENARIOS:
        for mode in FifoMode:
            steps, secs, bad, conv = measure(name, str(mode), range(args.seeds), args.steps, None)
            print(
                f"{name:20s} {mode!s:12s} {args.seeds:5d} {steps:9d} {steps / secs:9.0f} "
                f"{bad:9d} {conv:9d}"
            )

    populations = [int(x) for x in args.objects.split(",")]
    print()
    runs = f"{args.scaling_seeds} seeds x {args.steps} steps + drain"
    print(f"Cost per step against the number of objects ({runs})")
    header = f"{'scenario':20s} {'fifo':12s} " + " ".join(f"{f'{n} obj':>16s}" for n in populations)
    print(header)
    print("-" * len(header))
    for name in ("informer", "replicaset"):
        for mode in (FifoMode.REAL_ATOMIC, FifoMode.DELTA):
            cells = []
            base = None
            for n in populations:
                steps, secs, _, _ = measure(
                    name, str(mode), range(args.scaling_seeds), args.steps, n
                )
                us = secs / steps * 1e6
                base = base or us
                cells.append(f"{us:6.1f} us ({us / base:4.1f}x)")
            print(f"{name:20s} {mode!s:12s} " + " ".join(f"{c:>16s}" for c in cells))


if __name__ == "__main__":
    main()
