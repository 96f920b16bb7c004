"""Which deliberately broken adapters spec-driven conformance catches, and at what cost.

    python benchmarks/spec_driven.py [--bug NAME ...] [--markdown]
    python benchmarks/spec_driven.py --planner [--markdown]
    python benchmarks/spec_driven.py --rates [--model NAME ...] [--markdown]
    python benchmarks/spec_driven.py [--write-pins] [--write-docs]

For every bug in adapters/broken/bugs.py whose component a graphed model drives
(queue and delaying_queue: WorkQueue; delta_fifo: DeltaFIFO; real_fifo: RealFIFO and
RealFIFOAtomic; informer: Informer and InformerAtomic, paused where the adapter can
pause; store: Indexer), ``refimpl conform --from-spec`` runs that model against the broken
adapter: the table says whether a deviation was found, after how many steps and
requests (the walk's, before shortening), how long it took, the length of the reported
path (after shortening) and the spec action it fails at. Then the reference
adapter's full coverage of each model (edges, states, requests, seconds). Nothing is
random: the walks are computed from the graph, so every run gives the same numbers
except the seconds. docs/conformance.md's tables are this script's ``--markdown`` output
(``--write-docs`` puts them there).

``--planner`` instead walks every model against the reference with the planner
(:mod:`refimpl.conformance.walks.planner`) and without it (the sweep alone, from the
initial state): steps, requests, requests per edge and seconds of each. The work
queue is timed (an ``add_after``'s delay is chosen from the planned walk), so it has
no walk without the planner. The planner module's docstring and docs/conformance.md
quote this table.

``--rates`` instead walks every model (or each ``--model``) against the reference and
prints its requests per second beside the pipe floor (round trips per second with
benchmarks/echo_adapter.py, measured in the same run; benchmarks/conformance.py prints
the search's beside it).

``--write-pins`` writes tests/pins/walks.json, the numbers tests/test_spec_driven.py
pins, from the walks that test runs: per graphed model, the reference's walk (the
informer eagerly, as the test's ``eager``) and, for the informer models, the paused
walk: the undriven edges by reason and the unreachable ones; per walkable bug, its
verdict against each model that drives its component (the action a caught bug fails
at). ``--write-docs`` rewrites the bugs and coverage tables (the ``--markdown``
output) and a table of the informer walks' undriven edges (eager and paused) in
docs/conformance.md, each between its ``<!-- spec_driven.py: NAME -->`` and
``<!-- end -->`` markers. Both together run each walk once; ``make pins`` runs them.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

import attrs
from conformance import BROKEN, REFERENCE, ROOT, load_bugs, pipe_floor  # benchmarks/conformance.py

from refimpl.conformance.protocol import OBSERVE
from refimpl.conformance.walks.informer_mapping import InformerMapping
from refimpl.conformance.walks.models import SPEC_MAPPINGS
from refimpl.conformance.walks.report import SpecRun
from refimpl.conformance.walks.run import drive, load_model_graph
from refimpl.conformance.walks.spec_mapping import SpecMapping
from refimpl.tla.graph import StateGraph

#: component -> the models whose graphs drive it
MODELS = {
    "queue": ["WorkQueue"],
    "delaying_queue": ["WorkQueue"],
    "delta_fifo": ["DeltaFIFO", "DeltaFIFONoReplaced"],
    "real_fifo": ["RealFIFO", "RealFIFOAtomic"],
    "informer": ["Informer", "InformerAtomic", "InformerResync"],
    "store": ["Indexer"],
}
#: What tests/test_spec_driven.py reads (``--write-pins``).
PINS = ROOT / "tests" / "pins" / "walks.json"
#: Where the ``--markdown`` tables go (``--write-docs``).
DOCS = ROOT / "docs" / "conformance.md"
#: The reference without observations carried by a call: every check its own request.
UNOBSERVED = [*REFERENCE, "--no-observe"]
#: The walks run so far: (model, paused, command) -> run; ``--write-pins`` and
#: ``--write-docs`` share them.
_RUNS: dict[tuple[str, bool, tuple[str, ...]], SpecRun] = {}


def eager(model: str) -> SpecMapping:
    """The model's mapping; for the informer without ``pause`` (tests/test_spec_driven.py's
    ``eager``: the walk its reference test runs)."""
    mapping = SPEC_MAPPINGS[model]
    return attrs.evolve(mapping, pause=False) if isinstance(mapping, InformerMapping) else mapping


def pauses(mapping: SpecMapping) -> bool:
    """Whether the mapping has a paused walk besides its eager one (InformerResync's
    has none: see its mapping)."""
    return isinstance(mapping, InformerMapping) and mapping.pause


def walk(graphs: dict[str, StateGraph], model: str, command: list[str], paused: bool) -> SpecRun:
    """The walk of ``model`` against ``command``: with the model's mapping as it is
    (``paused``: the informer pauses where the adapter declares it), or ``eager``."""
    paused = paused or not pauses(SPEC_MAPPINGS[model])
    key = (model, paused, tuple(command))
    if key not in _RUNS:
        mapping = SPEC_MAPPINGS[model] if paused else eager(model)
        _RUNS[key] = drive(mapping, graphs[model], command)
    return _RUNS[key]


def broken(name: str) -> list[str]:
    return [sys.executable, str(BROKEN / "adapter.py"), "--bug", name]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bug", action="append", default=[], help="only these bugs")
    parser.add_argument("--markdown", action="store_true", help="print markdown tables")
    parser.add_argument(
        "--planner", action="store_true", help="only: each model with and without the planner"
    )
    parser.add_argument(
        "--rates", action="store_true", help="only: each walk's requests/s beside the pipe floor"
    )
    parser.add_argument(
        "--model", action="append", default=[], help="--rates: only these models (repeatable)"
    )
    parser.add_argument("--write-pins", action="store_true", help=f"write {PINS.relative_to(ROOT)}")
    parser.add_argument(
        "--write-docs", action="store_true", help=f"rewrite the tables in {DOCS.relative_to(ROOT)}"
    )
    args = parser.parse_args()
    writes = args.write_pins or args.write_docs
    if writes and (args.bug or args.planner):
        parser.error("--write-pins and --write-docs run every bug: no --bug, no --planner")
    graphs = {m: load_model_graph(m) for m in SPEC_MAPPINGS}
    if args.planner:
        _planner_table(graphs, args.markdown)
        return 0
    if args.rates:
        _rates_table(graphs, args.model or list(SPEC_MAPPINGS), args.markdown)
        return 0
    if writes:
        if args.write_pins:
            write_pins(build_pins(graphs, list(SPEC_MAPPINGS)))
            print(f"wrote {PINS.relative_to(ROOT)}", file=sys.stderr)
        if args.write_docs:
            write_docs(graphs)
            print(f"wrote {DOCS.relative_to(ROOT)}", file=sys.stderr)
        return 0
    print(_table(*_bugs_table(graphs, args.bug), args.markdown))
    print()
    print(_table(*_coverage_table(graphs), args.markdown))
    return 0


def build_pins(graphs: dict[str, StateGraph], models: list[str]) -> dict[str, Any]:
    """tests/pins/walks.json's content for ``models``: each model's reference walks
    (``walk``; the informer's ``paused`` too) and the bugs' verdicts on those models."""
    pinned: dict[str, Any] = {}
    for model in models:
        pinned[model] = {"walk": _coverage_pins(model, walk(graphs, model, REFERENCE, False))}
        if pauses(SPEC_MAPPINGS[model]):
            pinned[model]["paused"] = _coverage_pins(
                model, walk(graphs, model, REFERENCE, paused=True)
            )
    verdicts: dict[str, dict[str, dict[str, str]]] = {}
    for name, bug in load_bugs().BUGS.items():
        for model in MODELS.get(bug.component, []):
            if model in models:
                verdicts.setdefault(name, {})[model] = _verdict_pin(
                    walk(graphs, model, broken(name), paused=True)
                )
    return {"bugs": verdicts, "models": pinned}


def _coverage_pins(model: str, run: SpecRun) -> dict[str, Any]:
    """What the reference's walk left out: the undriven edges by reason, the
    unreachable ones. A walk that fails pins nothing."""
    cov = run.coverage
    if not run.ok or cov.covered != cov.drivable:
        describe = run.deviation.describe() if run.deviation else run.refused
        raise SystemExit(f"{model}: the reference's walk is {run.verdict}: {describe}")
    undriven = {reason: n for reason, n in sorted(cov.undriven.items()) if n}
    return {"undriven": undriven, "unreachable": cov.unreachable}


def _verdict_pin(run: SpecRun) -> dict[str, str]:
    if run.deviation is not None:
        return {"verdict": "caught", "failed_at": run.deviation.path[-1]}
    if run.refused is not None:
        return {"verdict": "not run"}
    return {"verdict": "passes every edge"}


def write_pins(pins: dict[str, Any]) -> None:
    PINS.parent.mkdir(parents=True, exist_ok=True)
    PINS.write_text(json.dumps(pins, indent=2, sort_keys=True) + "\n")


def write_docs(graphs: dict[str, StateGraph]) -> None:
    """docs/conformance.md with the bugs and coverage tables (``--markdown``) and the
    informer's undriven edges put between their markers; the text around them is left
    as it is."""
    text = DOCS.read_text()
    for name, table in (
        ("bugs table", _table(*_bugs_table(graphs, []), markdown=True)),
        ("coverage table", _table(*_coverage_table(graphs), markdown=True)),
        ("informer undriven table", _table(*_undriven_table(graphs), markdown=True)),
    ):
        text = replace_between_markers(text, name, table)
    DOCS.write_text(text)


def replace_between_markers(text: str, name: str, content: str) -> str:
    """``text`` with what stands between ``<!-- spec_driven.py: NAME -->`` and the next
    ``<!-- end -->`` replaced by ``content``; exactly one such pair must be there."""
    pattern = re.compile(
        rf"(<!-- spec_driven\.py: {re.escape(name)} -->\n).*?(<!-- end -->)", re.DOTALL
    )
    found = len(pattern.findall(text))
    if found != 1:
        raise SystemExit(f"{DOCS.relative_to(ROOT)}: {found} '{name}' markers, not 1")
    table = "\n" + content.strip("\n") + "\n\n"
    return pattern.sub(lambda m: m.group(1) + table + m.group(2), text)


def _bugs_table(
    graphs: dict[str, StateGraph], only: list[str]
) -> tuple[list[str], list[list[str]]]:
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
            run = walk(graphs, model, broken(name), paused=True)
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
    return header, rows


def _coverage_table(graphs: dict[str, StateGraph]) -> tuple[list[str], list[list[str]]]:
    """The reference's full coverage of each model."""
    cover_rows: list[list[str]] = []
    for model, mapping in SPEC_MAPPINGS.items():
        run = walk(graphs, model, REFERENCE, paused=True)
        cov = run.coverage
        # The same walk with every check sent as a request of its own (no observations
        # carried by a call); the informer's answers carry their observation anyway.
        plain = "-"
        if mapping.component in OBSERVE:
            alone = walk(graphs, model, UNOBSERVED, paused=True).coverage
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
    return (
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
    )


#: The informer walks' undriven reasons (informer_mapping.py), by their first word: the
#: columns of the undriven table.
_UNDRIVEN_COLUMNS = {
    "external": "external steps while work is pending",
    "internal": "internal steps in another interleaving",
    "another": "another list/deletion order",
    "ResyncCheck": "ticks no clock gives",
}


def _undriven_table(graphs: dict[str, StateGraph]) -> tuple[list[str], list[list[str]]]:
    """What the informer's walks against the reference leave out, eager and paused: the
    numbers tests/pins/walks.json pins, with the graph's and the driven edges."""
    rows: list[list[str]] = []
    for model, mapping in SPEC_MAPPINGS.items():
        if not isinstance(mapping, InformerMapping):
            continue
        for paused in (False, True) if mapping.pause else (False,):
            cov = walk(graphs, model, REFERENCE, paused).coverage
            cells = dict.fromkeys(_UNDRIVEN_COLUMNS, "0")
            for reason, n in cov.undriven.items():
                first = reason.split(" ", 1)[0]
                if first not in cells:
                    raise SystemExit(f"{model}: no column for undriven reason {reason!r}")
                cells[first] = f"{n:,}"
            rows.append(
                [
                    f"{model}, {'with pause' if paused else 'eager'}",
                    f"{cov.drivable:,} of {cov.edges:,}",
                    *cells.values(),
                    f"{cov.unreachable:,}",
                ]
            )
    header = ["model", "driven (of the graph's edges)", *_UNDRIVEN_COLUMNS.values()]
    return [*header, "reachable only through those"], rows


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
    print(_table([*header, "seconds", "verdict"], rows, markdown))


def _rates_table(graphs: dict[str, StateGraph], models: list[str], markdown: bool) -> None:
    """Each model's walk against the reference in requests/s, beside the pipe floor
    (round trips/s with benchmarks/echo_adapter.py) measured before and after them."""
    before = pipe_floor()
    runs = {model: walk(graphs, model, REFERENCE, paused=True) for model in models}
    floor = (before + pipe_floor()) / 2
    rows = []
    for model, run in runs.items():
        cov = run.coverage
        rate = cov.requests / max(cov.seconds, 1e-9)
        rows.append(
            [
                model,
                f"{cov.requests}",
                f"{cov.seconds:.2f}",
                f"{rate:.0f}",
                f"{floor:.0f}",
                f"{rate / floor:.1%}",
            ]
        )
    header = ["model", "requests", "seconds", "requests/s", "floor/s", "of floor"]
    print(_table(header, rows, markdown))


def _with_planner(mapping: SpecMapping, planned: bool) -> SpecMapping:
    # Every mapping is an attrs class with a ``planned`` field (the protocol only reads it).
    instance: Any = mapping
    evolved: SpecMapping = attrs.evolve(instance, planned=planned)
    return evolved


def _table(header: list[str], rows: list[list[str]], markdown: bool) -> str:
    rows = [r + [""] * (len(header) - len(r)) for r in rows]
    if markdown:  # a cell's pipes (TLA+ functions, [a |-> 0]) escaped
        rows = [[c.replace("|", "\\|") for c in r] for r in rows]
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
