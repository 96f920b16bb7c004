"""Which deliberately broken adapters spec-driven conformance catches, and at what cost.

    python benchmarks/spec_driven.py [--bug NAME ...] [--markdown]
    python benchmarks/spec_driven.py --planner [--markdown]

For every bug in adapters/broken/bugs.py whose component a graphed model drives
(queue and delaying_queue: WorkQueue; delta_fifo: DeltaFIFO; real_fifo: RealFIFO and
RealFIFOAtomic; informer: Informer and InformerAtomic, paused where the adapter can
pause), ``refimpl conform --from-spec`` runs that model against the broken
adapter: the table says whether a deviation was found, after how many steps and
requests (the walk's, before shortening), how long it took, the length of the reported
path (after shortening) and the spec action it fails at. Then the reference
adapter's full coverage of each model (edges, states, requests, seconds). Nothing is
random: the walks are computed from the graph, so every run gives the same numbers
except the seconds. docs/conformance.md's table is this script's ``--markdown`` output.

``--planner`` instead walks every model against the reference with the planner
(:mod:`refimpl.conformance.walks.planner`) and without it (the sweep alone, from the
initial state): steps, requests, requests per edge and seconds of each. The work
queue is timed (an ``add_after``'s delay is chosen from the planned walk), so it has
no walk without the planner. The planner module's docstring and docs/conformance.md
quote this table.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import attrs
from conformance import BROKEN, REFERENCE, load_bugs  # benchmarks/conformance.py

from refimpl.conformance.protocol import OBSERVE
from refimpl.conformance.walks.models import SPEC_MAPPINGS
from refimpl.conformance.walks.run import drive, load_model_graph
from refimpl.conformance.walks.spec_mapping import SpecMapping
from refimpl.tla.graph import StateGraph

#: component -> the models whose graphs drive it
MODELS = {
    "queue": ["WorkQueue"],
    "delaying_queue": ["WorkQueue"],
    "delta_fifo": ["DeltaFIFO"],
    "real_fifo": ["RealFIFO", "RealFIFOAtomic"],
    "informer": ["Informer", "InformerAtomic"],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bug", action="append", default=[], help="only these bugs")
    parser.add_argument("--markdown", action="store_true", help="print markdown tables")
    parser.add_argument(
        "--planner", action="store_true", help="only: each model with and without the planner"
    )
    args = parser.parse_args()
    graphs = {m: load_model_graph(m) for m in SPEC_MAPPINGS}
    if args.planner:
        _planner_table(graphs, args.markdown)
        return 0
    _bugs_table(graphs, args.bug, args.markdown)
    print()
    _coverage_table(graphs, args.markdown)
    return 0


def _bugs_table(graphs: dict[str, StateGraph], only: list[str], markdown: bool) -> None:
    """Each broken adapter against the models that drive its component."""
    bugs = load_bugs().BUGS
    rows: list[list[str]] = []
    for name, bug in bugs.items():
        if only and name not in only:
            continue
        models = MODELS.get(bug.component)
        if not models:
            rows.append([name, bug.component, "-", "no graphed model drives it", "", "", ""])
            continue
        for model in models:
            command = [sys.executable, str(BROKEN / "adapter.py"), "--bug", name]
            run = drive(SPEC_MAPPINGS[model], graphs[model], command)
            cov = run.coverage
            path = ""
            if run.deviation is not None:
                verdict = "caught"
                where = run.deviation.path[-1]
                path = str(len(run.deviation.path))
            elif run.refused is not None:
                verdict = "not run"
                where = run.refused
            else:
                verdict = "passes every edge"
                where = ""
            rows.append(
                [
                    name,
                    bug.component,
                    model,
                    verdict,
                    f"{cov.steps}",
                    f"{cov.requests}",
                    f"{cov.seconds:.1f}",
                    path,
                    where,
                ]
            )
            print(f"{name:<34} {model:<15} {verdict}", file=sys.stderr)
    header = [
        "bug",
        "component",
        "model",
        "verdict",
        "steps",
        "requests",
        "seconds",
        "path",
        "failed at",
    ]
    _table(header, rows, markdown)


def _coverage_table(graphs: dict[str, StateGraph], markdown: bool) -> None:
    """The reference's full coverage of each model."""
    cover_rows: list[list[str]] = []
    for model, mapping in SPEC_MAPPINGS.items():
        run = drive(mapping, graphs[model], REFERENCE)
        cov = run.coverage
        # The same walk with every check sent as a request of its own (no observations
        # carried by a call); the informer's answers carry their observation anyway.
        plain = "-"
        if mapping.component in OBSERVE:
            alone = drive(mapping, graphs[model], [*REFERENCE, "--no-observe"]).coverage
            plain = f"{alone.requests / max(alone.covered, 1):.2f}"
        cover_rows.append(
            [
                model,
                "pass" if run.ok else "FAIL",
                f"{cov.covered}/{cov.drivable}",
                f"{cov.edges}",
                f"{cov.states_visited}/{cov.states}",
                f"{cov.steps}",
                f"{cov.requests}",
                f"{cov.observed}",
                f"{cov.requests / max(cov.covered, 1):.2f}",
                plain,
                f"{cov.seconds:.1f}",
            ]
        )
    _table(
        [
            "model",
            "reference",
            "edges driven",
            "graph edges",
            "states",
            "steps",
            "requests",
            "checks carried",
            "requests/edge",
            "requests/edge, checks sent alone",
            "seconds",
        ],
        cover_rows,
        markdown,
    )


def _planner_table(graphs: dict[str, StateGraph], markdown: bool) -> None:
    """Each model against the reference, planned and not (the planner's measurement)."""
    rows: list[list[str]] = []
    for model, mapping in SPEC_MAPPINGS.items():
        for planned in (True, False):
            if mapping.timed and not planned:
                rows.append([model, "no", "-", "-", "-", "-", "-", "timed: needs the plan"])
                continue
            run = drive(_with_planner(mapping, planned), graphs[model], REFERENCE)
            cov = run.coverage
            rows.append(
                [
                    model,
                    "yes" if planned else "no",
                    f"{cov.covered}/{cov.drivable}",
                    f"{cov.steps}",
                    f"{cov.requests}",
                    f"{cov.requests / max(cov.covered, 1):.2f}",
                    f"{cov.seconds:.1f}",
                    run.verdict,
                ]
            )
            print(f"{model:<15} planned={planned} {cov.seconds:.1f} s", file=sys.stderr)
    header = ["model", "planner", "edges driven", "steps", "requests", "requests/edge"]
    _table([*header, "seconds", "verdict"], rows, markdown)


def _with_planner(mapping: SpecMapping, planned: bool) -> SpecMapping:
    # Every mapping is an attrs class with a ``planned`` field (the protocol only reads it).
    instance: Any = mapping
    evolved: SpecMapping = attrs.evolve(instance, planned=planned)
    return evolved


def _table(header: list[str], rows: list[list[str]], markdown: bool) -> None:
    rows = [r + [""] * (len(header) - len(r)) for r in rows]
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    raise SystemExit(main())
