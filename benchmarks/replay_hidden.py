"""What executing the informer graphs costs the replay: CPU seconds, both ways, one run.

    python benchmarks/replay_hidden.py [--rounds N] [MODEL ...]

For each informer graph (default: Informer, InformerFaults, InformerAtomic,
InformerResync) the replay of refimpl/tla/replay.py runs twice on the correct code:
executed (the default: breadth-first, each state rebuilt with the reflector core the
move into it left, docs/07-the-model-and-the-code.md "Hidden state") and rebuild-only
(``execute=False``: every state alone, its hidden state made up). Both must find no
mismatch; the script prints the CPU seconds of each (``time.process_time``, so other
load on the machine weighs less than in wall time; with ``--rounds N`` the least of N
runs each, the two taken in turns, first one then the other first) and their ratio.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from refimpl.tla.graph import load_graph
from refimpl.tla.mappings import mapping_for
from refimpl.tla.replay import replay

SPEC = Path(__file__).resolve().parents[1] / "spec"
MODELS = ("Informer", "InformerFaults", "InformerAtomic", "InformerResync")


def main(models: list[str], rounds: int) -> None:
    total = {True: 0.0, False: 0.0}
    for name in models or MODELS:
        graph = load_graph(SPEC / "graphs" / f"{name}.json.gz")
        cpu = {True: float("inf"), False: float("inf")}
        for turn in range(rounds):
            for execute in (True, False) if turn % 2 == 0 else (False, True):
                mapping = mapping_for(name, SPEC / f"MC{name}.tla")
                start = time.process_time()
                report = replay(graph, mapping, execute=execute)
                cpu[execute] = min(cpu[execute], time.process_time() - start)
                if not report.ok:
                    raise SystemExit(f"{name}: {report.summary()}\n{report.mismatches[0]}")
        total[True] += cpu[True]
        total[False] += cpu[False]
        print(
            f"{name}: {report.states} states, {report.edges} edges; CPU executed "
            f"{cpu[True]:.1f} s, rebuild-only {cpu[False]:.1f} s, ratio "
            f"{cpu[True] / cpu[False]:.2f}",
            flush=True,
        )
    print(
        f"total: executed {total[True]:.1f} s, rebuild-only {total[False]:.1f} s, "
        f"ratio {total[True] / total[False]:.2f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="runs of each (the least counts)")
    parser.add_argument("models", nargs="*", help=f"graphs (default: {', '.join(MODELS)})")
    args = parser.parse_args()
    main(args.models, args.rounds)
