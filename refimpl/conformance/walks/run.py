"""``refimpl conform --from-spec``: walk each model's graph in an adapter, and report.

``refimpl conform --from-spec MODEL -- ADAPTER`` loads the committed state graph of
MODEL (spec/graphs/, the graphs the code replay checks refimpl against,
:func:`load_model_graph`), and drives the adapter from the initial state along edges
until every edge the protocol can drive has been taken once (:func:`drive`: the
handshake, then a :class:`~refimpl.conformance.walks.walker.Walker`). Each step sends
the edge's request (the model's request mapping,
:data:`~refimpl.conformance.walks.models.SPEC_MAPPINGS`, translates spec actions), compares
the answer with what the edge's states make observable, then checks a few
observations (``len``, ``has_synced``) against the target state: carried by the step's
last call where the adapter declares them (docs/protocol.md, "Observations carried by
a call"), else each a request of its own. Edges that differ only in variables the
harness alone holds (the mapping's ``hidden``: which worker holds an item, what the
consumer does) are one test: taking one covers all
(:func:`~refimpl.conformance.walks.spec_mapping.shared_credit`). A wrong answer is reported
with the path that led to it from the initial state (:mod:`refimpl.conformance.walks.report`).
:func:`run_from_spec` prints each model's verdict and coverage and gives the exit status.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from refimpl.conformance.process import AdapterFailure, AdapterProcess
from refimpl.conformance.protocol import OPTIONAL_METHODS
from refimpl.conformance.walks import walker
from refimpl.conformance.walks.drivable import DrivableGraph
from refimpl.conformance.walks.models import SPEC_MAPPINGS
from refimpl.conformance.walks.report import Coverage, SpecRun, wrapped
from refimpl.conformance.walks.spec_mapping import SpecMapping
from refimpl.tla.graph import StateGraph, load_graph
from refimpl.tla.manifest import default_spec_dir, load_manifest

__all__ = ["EXIT_INCONCLUSIVE", "drive", "load_model_graph", "run_from_spec"]


def load_model_graph(model: str, spec_dir: Path | None = None) -> StateGraph:
    """The committed graph of ``model`` (a name from spec/models.json)."""
    directory = spec_dir if spec_dir is not None else default_spec_dir()
    for entry in load_manifest(directory):
        if entry.name == model:
            if not entry.graph:
                raise ValueError(f"model {model} has no committed state graph")
            return load_graph(directory / entry.graph)
    raise ValueError(f"no model named {model!r} in {directory / 'models.json'}")


def drive(
    mapping: SpecMapping,
    graph_: StateGraph,
    command: Sequence[str],
    *,
    timeout: float = 5.0,
    startup_timeout: float = 20.0,
    progress: Callable[[Coverage], None] | None = None,
    log: TextIO | None = None,
) -> SpecRun:
    """Drive the adapter ``command`` along every drivable edge of the graph."""
    started = time.monotonic()
    run = SpecRun(
        Coverage(
            model=mapping.model, states=len(graph_.states), edges=len(graph_.edges), undriven={}
        )
    )
    adapter = AdapterProcess(list(command), timeout=timeout, log=log)
    try:
        adapter.start()
        offer = _handshake(adapter, mapping, startup_timeout)
        if isinstance(offer, str):
            run.refused = offer
            return run
        methods, observe = offer
        graph = DrivableGraph(graph_, mapping, methods)
        run.coverage.undriven = dict(graph.undriven)
        run.coverage.unreachable = graph.unreachable
        run.coverage.drivable = len(graph.drivable)
        run.coverage.fragment = mapping.fragment
        run.coverage.fuller = _fuller(mapping, graph_, methods, len(graph.drivable))
        walker.Walker(mapping, graph, adapter, run, progress, observe).run()
    except AdapterFailure as exc:
        run.refused = f"adapter failed: {exc.describe()}"
    finally:
        run.coverage.requests = adapter.requests_sent
        run.coverage.seconds = time.monotonic() - started
        adapter.close()
    return run


def _fuller(
    mapping: SpecMapping, graph: StateGraph, methods: frozenset[str], drivable: int
) -> tuple[tuple[str, ...], int] | None:
    """Where less than half of the graph is drivable: the optional methods the adapter
    lacks and how many edges they would make drivable, if more (for the verdict)."""
    missing = frozenset(OPTIONAL_METHODS.get(mapping.component, ())) - methods
    if not missing or 2 * drivable >= len(graph.edges):
        return None
    more = len(DrivableGraph(graph, mapping, methods | missing).drivable)
    return (tuple(sorted(missing)), more) if more > drivable else None


def _handshake(
    adapter: AdapterProcess, mapping: SpecMapping, timeout: float
) -> tuple[frozenset[str], frozenset[str]] | str:
    """The methods the adapter declares for the mapping's component and those a call
    may observe (docs/protocol.md, "Observations carried by a call"), or why it
    cannot be driven."""
    answer = adapter.request({"op": "hello", "protocol": 2}, timeout=timeout)
    if "error" in answer:
        answer = adapter.request({"op": "hello", "protocol": 1}, timeout=timeout)
    if "error" in answer:
        return f"the adapter refused hello: {answer['error']}"
    components = answer["result"].get("components", {})
    caps = components.get(mapping.component)
    if not isinstance(caps, dict):
        return (
            f"the adapter does not offer {mapping.component} "
            f"(the {mapping.model} model's component)"
        )
    missing = sorted(mapping.methods - set(caps.get("methods", [])))
    if missing:
        return (
            f"{mapping.component} lacks methods the {mapping.model} model needs: "
            f"{', '.join(missing)}"
        )
    refused = mapping.refuses(caps)
    if refused is not None:
        return refused
    allowed = caps.get("option_values") or {}
    for name, value in mapping.options.items():
        if name in allowed and value not in allowed[name]:
            return (
                f"{mapping.component} cannot be created with {name}={value!r}, which the "
                f"{mapping.model} model needs (the adapter allows {allowed[name]!r})"
            )
    observe = caps.get("observe", [])
    if not isinstance(observe, list):
        return f"{mapping.component}'s 'observe' must be a list of method names"
    return frozenset(caps.get("methods", [])), frozenset(str(m) for m in observe)


#: ``refimpl conform --from-spec``'s exit status when nothing disagreed but edges were
#: left untaken (see SpecRun.verdict).
EXIT_INCONCLUSIVE = 4


def run_from_spec(
    models: Sequence[str],
    command: Sequence[str],
    *,
    out: TextIO,
    err: TextIO,
    timeout: float = 5.0,
    startup_timeout: float = 20.0,
    show_progress: bool = False,
    log: TextIO | None = None,
) -> int:
    """``refimpl conform --from-spec``: drive each model's graph; the exit status as for
    ``refimpl conform`` (0 every edge agreed, 1 a deviation, 2 the adapter failed or
    cannot drive a model, 3 an unknown model, 4 inconclusive: nothing disagreed but
    edges were left untaken; any other outcome of another model wins over 4)."""
    names = list(models) if models and models != ["all"] else list(SPEC_MAPPINGS)
    unknown = [m for m in names if m not in SPEC_MAPPINGS]
    if unknown:
        print(
            f"refimpl conform: --from-spec {', '.join(unknown)}: no such driven model "
            f"(choose from {', '.join(SPEC_MAPPINGS)}, or all)",
            file=err,
        )
        return 3
    status = 0
    inconclusive = False

    def progress(cov: Coverage) -> None:
        print(
            f"\r{cov.model}: {cov.covered}/{cov.drivable} edges, {cov.steps} steps, "
            f"{cov.requests} requests",
            end="",
            file=err,
            flush=True,
        )

    for model in names:
        try:
            graph = load_model_graph(model)
        except (OSError, ValueError) as exc:
            print(f"refimpl conform: {exc}", file=err)
            return 3
        run = drive(
            SPEC_MAPPINGS[model],
            graph,
            command,
            timeout=timeout,
            startup_timeout=startup_timeout,
            progress=progress if show_progress else None,
            log=log,
        )
        if show_progress:
            print(file=err)
        verdict = run.verdict
        print(run.verdict_text(model), file=out)
        print(run.coverage.summary(), file=out)
        if verdict == "inconclusive":
            left = run.coverage.drivable - run.coverage.covered
            text = (
                f"  inconclusive: {left} drivable edges untaken after {walker.SWEEP_TRIES} "
                "changes of the walk's history (the adapter's orders kept it from them); "
                "nothing disagreed"
            )
            print(wrapped(text, "    "), file=out)
            inconclusive = True
        if run.refused is not None:
            print(wrapped(f"  {run.refused}", "    "), file=out)
            status = max(status, 2)
        if run.deviation is not None:
            print(run.deviation.describe(), file=out)
            status = max(status, 1)
    return status or (EXIT_INCONCLUSIVE if inconclusive else 0)
