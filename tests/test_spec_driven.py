"""Spec-driven conformance: every drivable edge of every graphed model, against the
reference (no deviation, nothing missed) and against the broken adapters (pinned
verdicts: which bugs the walks catch, which pass every edge and why).

A committed graph that grows an edge the walks cannot drive or miss fails here: the
edges driven, the edges left out (with their reasons) and the unreachable ones must
add up to the graph's edges, with the left-out ones exactly the kinds listed.
"""

from __future__ import annotations

import importlib.util
import io
import itertools
import json
import sys
from pathlib import Path
from typing import Any, cast

import attrs
import pytest
import worker_share
from spec_graphs import spec_graph
from test_conformance_broken import BROKEN, BUGS

from refimpl.conformance.walks import run as walks_run
from refimpl.conformance.walks import walker
from refimpl.conformance.walks.drivable import DrivableGraph
from refimpl.conformance.walks.fifo_mapping import DELTA_FIFO_NO_REPLACED, FIFO_NO_BATCH
from refimpl.conformance.walks.informer_mapping import INFORMER, INFORMER_ATOMIC, InformerMapping
from refimpl.conformance.walks.informer_mapping import informer_calls_ok as calls_ok
from refimpl.conformance.walks.models import SPEC_MAPPINGS
from refimpl.conformance.walks.planner import min_cost_flow, plan_walks
from refimpl.conformance.walks.report import SpecRun
from refimpl.conformance.walks.run import drive, run_from_spec
from refimpl.conformance.walks.spec_mapping import SpecMapping, state_classes
from refimpl.tla.graph import StateGraph

REFERENCE = [sys.executable, "-m", "refimpl.conformance.reference.adapter"]
#: The reference without observations carried by a call: every check its own request.
UNOBSERVED = [*REFERENCE, "--no-observe"]


def graph(model: str) -> StateGraph:
    return spec_graph(model)


def broken(name: str) -> list[str]:
    return [sys.executable, str(BROKEN / "adapter.py"), "--bug", name]


#: The numbers the walks measured, per graphed model (``models``: the reference's
#: ``walk``, the informer's eager one, and the informer's ``paused`` walk) and per
#: walkable bug (``bugs``: its verdict on each model that drives its component).
#: Written by ``python benchmarks/spec_driven.py --write-pins`` (``make pins``), never
#: by hand: a number that moved is a finding to explain in the commit.
#:
#: A walk's ``undriven`` is what the protocol cannot drive (reason -> edges); nothing
#: else may be. The work queue: the quiescence rule (the request that lets a drain
#: finish is answered once the drainer has returned: the steps between a drain
#: completing and ShutDownWithDrain returning, and 12 DrainReturns only they lead to).
#: The FIFOs: nothing, Close and the batch pop too (the reference has pop_batch_nowait).
#: The informer: the protocol processes to quiescence after every request
#: (informer_mapping.py, InformerMapping), so the spec's internal actions are taken
#: eagerly: external steps while processing or handlers are pending (paused: while
#: notifications are pending or an entry is being processed; pause holds back only the
#: queue), internal steps in another interleaving than the eager one, and another list
#: or deletion order (the same request, the same answers). ``unreachable``: edges
#: reachable only through the undriven ones.
PINS_FILE = Path(__file__).parent / "pins" / "walks.json"
PINS: dict[str, Any] = json.loads(PINS_FILE.read_text())
WALKS: dict[str, Any] = PINS["models"]
#: The informer models, walked with pause/resume too (what the reference declares).
PAUSED = [model for model in WALKS if "paused" in WALKS[model]]


def eager(model: str) -> SpecMapping:
    """The model's mapping; for the informer without ``pause`` (seconds, not minutes)."""
    mapping = SPEC_MAPPINGS[model]
    return attrs.evolve(mapping, pause=False) if isinstance(mapping, InformerMapping) else mapping


#: The walks driven so far in this test process, by model and adapter command. A walk
#: is computed from the graph, so a mapping against an adapter is one run: the pins
#: test and the tests of the reference and of the bugs drive the same walks
#: (``build_pins``), and whichever comes first drives it.
_DRIVEN: dict[tuple[str, tuple[str, ...]], list[tuple[SpecMapping, SpecRun]]] = {}


def walk_once(mapping: SpecMapping, command: list[str]) -> SpecRun:
    """``drive`` of ``mapping`` over its model's graph against ``command``, once."""
    runs = _DRIVEN.setdefault((mapping.model, tuple(command)), [])
    for seen, run in runs:
        if seen == mapping:
            return run
    run = worker_share.once(
        _walk_key(mapping, command), lambda: drive(mapping, graph(mapping.model), command)
    )
    runs.append((mapping, run))
    return run


def _walk_key(mapping: SpecMapping, command: list[str]) -> str:
    """What names a walk in every worker: the mapping's fields (sets sorted, as the
    workers' string hashes differ) and the command; the graph is the committed one."""
    fields = attrs.asdict(
        cast(attrs.AttrsInstance, mapping),  # every mapping is an attrs class
        value_serializer=lambda _, __, v: sorted(v) if isinstance(v, (set, frozenset)) else v,
    )
    return json.dumps([type(mapping).__name__, fields, command], sort_keys=True, default=repr)


def reference_walk(model: str) -> SpecRun:
    """The reference's eager walk of ``model``: the test below and the one without
    observations (which compares against it) share it."""
    return walk_once(eager(model), REFERENCE)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("model", list(SPEC_MAPPINGS))
def test_reference_follows_every_drivable_edge(model: str) -> None:
    run = reference_walk(model)
    cov = run.coverage
    assert run.ok, (run.refused, run.deviation and run.deviation.describe())
    assert cov.covered == cov.drivable
    undriven = {reason: n for reason, n in cov.undriven.items() if n}
    assert undriven == WALKS[model]["walk"]["undriven"]
    assert cov.drivable + sum(undriven.values()) + cov.unreachable == cov.edges
    assert cov.unreachable == WALKS[model]["walk"]["unreachable"]
    # Every edge once, plus the paths between them: under 3 steps and 3 requests per
    # edge (issue #15's target), the checks carried by the calls (docs/protocol.md).
    assert cov.steps <= 3 * cov.drivable
    assert cov.requests <= REQUESTS_PER_EDGE.get(model, 3) * cov.drivable
    if not model.startswith("Informer") and model not in REQUESTS_PER_EDGE:
        assert cov.observed > 0


#: Models whose checks no call can carry: the store's index reads take arguments
#: (``observe`` names methods without any), so each is a request of its own: per edge
#: the write, ``index_keys`` and ``by_index`` of each of the model's 2 values, ``list``
#: (6), and each walk's reset and create.
REQUESTS_PER_EDGE = {"Indexer": 6.1}


def test_every_graphed_model_has_pins() -> None:
    """A new graphed model is walked only once ``make pins`` has pinned its walks; the
    informer models (the ones that pause) have a paused walk too."""
    assert set(WALKS) == set(SPEC_MAPPINGS)
    assert set(PAUSED) == {
        m for m, v in SPEC_MAPPINGS.items() if isinstance(v, InformerMapping) and v.pause
    }
    assert PINS_FILE.read_text() == json.dumps(PINS, indent=2, sort_keys=True) + "\n"


#: The models whose pins the test below rebuilds: seconds each (the others take minutes).
CHEAP = ["WorkQueue", "DeltaFIFO"]


@pytest.mark.timeout(600)
def test_write_pins_writes_what_the_tests_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """``benchmarks/spec_driven.py --write-pins`` runs the walks these tests run: for
    the cheap models, what it would write is what the committed file holds."""
    benchmarks = Path(__file__).parent.parent / "benchmarks"
    monkeypatch.syspath_prepend(str(benchmarks))  # the script imports conformance.py
    spec = importlib.util.spec_from_file_location("spec_driven", benchmarks / "spec_driven.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.PINS == PINS_FILE
    assert all(script.eager(m) == eager(m) for m in SPEC_MAPPINGS)
    graphs = {m: graph(m) for m in CHEAP}

    def drive_once(mapping: SpecMapping, graph_: StateGraph, command: list[str]) -> SpecRun:
        assert graph_ is graphs[mapping.model]
        return walk_once(mapping, command)

    monkeypatch.setattr(script, "drive", drive_once)
    built = script.build_pins(graphs, CHEAP)
    assert built["models"] == {m: WALKS[m] for m in CHEAP}
    pinned = {
        name: {m: v for m, v in verdicts.items() if m in CHEAP}
        for name, verdicts in PINS["bugs"].items()
    }
    assert built["bugs"] == {name: v for name, v in pinned.items() if v}


#: Requests per driven edge with every check sent as a request of its own: the same
#: walks, the same edges, more requests (docs/conformance.md, "How the walks are built").
UNOBSERVED_REQUESTS_PER_EDGE = {
    "WorkQueue": 2.5,
    "DeltaFIFO": 3.4,
    "RealFIFO": 4.1,
    "RealFIFOAtomic": 3.6,
}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("model", sorted(UNOBSERVED_REQUESTS_PER_EDGE))
def test_without_observations_the_same_edges_are_covered(model: str) -> None:
    assert eager(model) is SPEC_MAPPINGS[model]  # no informer here: the walk as mapped
    observed = reference_walk(model).coverage
    plain = drive(SPEC_MAPPINGS[model], graph(model), UNOBSERVED)
    cov = plain.coverage
    assert plain.ok, (plain.refused, plain.deviation and plain.deviation.describe())
    assert cov.covered == cov.drivable == observed.drivable
    assert cov.observed == 0
    assert observed.requests < cov.requests <= UNOBSERVED_REQUESTS_PER_EDGE[model] * cov.drivable


#: The spec variables only the harness holds, per model: the harness is the work
#: queue's workers (which one holds an item; which saw the shutdown: the queue holds
#: only the processing set) and the FIFO's consumer (pop_nowait never blocks, so its
#: running / waiting / exited is the harness's). Hiding any other variable could merge
#: edges an adapter can tell apart: a new entry here needs that argument.
HIDDEN = {
    "WorkQueue": ("holding", "stopped"),
    "DeltaFIFO": ("consumer",),
    "DeltaFIFONoReplaced": ("consumer",),
    "RealFIFO": ("consumer",),
    "RealFIFOAtomic": ("consumer",),
    "Informer": (),
    "InformerAtomic": (),
    "InformerResync": (),
    "Indexer": (),
}


def test_only_harness_variables_are_hidden() -> None:
    assert {model: SPEC_MAPPINGS[model].hidden for model in SPEC_MAPPINGS} == HIDDEN


@pytest.mark.parametrize("model", ["WorkQueue", "DeltaFIFO", "RealFIFO", "RealFIFOAtomic"])
def test_a_step_shares_its_credit_only_across_hidden_variables(model: str) -> None:
    """The steps whose edges one step covers differ from it only in what the harness
    alone holds (which worker holds an item, what the consumer does), never in what
    the adapter holds, the action or the requests."""
    mapping = SPEC_MAPPINGS[model]
    g = graph(model)
    methods = mapping.methods | {"drain_start", "drain_returned", "pop_batch_nowait"}
    own, _ = mapping.driven(g, methods)
    n = len(g.states)
    classes = state_classes(g, mapping.hidden)
    by_edge: dict[int, list[Any]] = {}
    for step in own:
        for i in step.covers:
            by_edge.setdefault(i, []).append(step)
    shared = 0
    for step in DrivableGraph(g, mapping, methods).steps:
        # the graph's steps this one covers (a work queue edge is in both its copies)
        alike = {
            s
            for i in step.covers
            for s in by_edge[i]
            if s.source // n == step.source // n and set(s.covers) <= set(step.covers)
        }
        assert len({(s.source // n, classes[s.source % n]) for s in alike}) == 1, step
        assert len({(s.target // n, classes[s.target % n]) for s in alike}) == 1, step
        assert len({(s.action, s.then) for s in alike}) == 1, step
        assert len({json.dumps(mapping.probe(g, s, 1), sort_keys=True) for s in alike}) == 1
        shared += len(alike) > 1
    # Something is shared (else the variables hide nothing), and not everything.
    assert 0 < shared < len(own)
    assert set(mapping.hidden) <= set(g.states[0])


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("model", PAUSED)
def test_reference_follows_every_paused_informer_edge(model: str) -> None:
    """The full informer walk, pausing between requests where the spec's queue holds
    work: about 27,000 and 47,000 edges, 20 and 35 s on a 2-core machine."""
    run = drive(SPEC_MAPPINGS[model], graph(model), REFERENCE)
    cov = run.coverage
    assert run.ok, (run.refused, run.deviation and run.deviation.describe())
    assert cov.covered == cov.drivable
    undriven = {reason: n for reason, n in cov.undriven.items() if n}
    assert undriven == WALKS[model]["paused"]["undriven"]
    assert cov.unreachable == WALKS[model]["paused"]["unreachable"]
    assert cov.drivable + sum(cov.undriven.values()) + cov.unreachable == cov.edges
    # Many short walks (the server's history only grows): over 2 steps per edge, some of
    # them the harness's alone (no request).
    assert cov.steps <= 3 * cov.drivable
    assert cov.requests <= 3 * cov.drivable


#: bug -> the model whose walk catches it; the spec action its shortest failing path
#: ends in is the pins' (``bugs``: BUG: MODEL: ``failed_at``).
CAUGHT = {
    "add-while-processing-pushes": "WorkQueue",
    "done-forgets-requeue": "WorkQueue",
    "get-keeps-dirty": "WorkQueue",
    "dirty-cleared-at-done": "WorkQueue",
    "shutdown-discards-queue": "WorkQueue",
    "len-counts-processing": "WorkQueue",
    "done-after-shutdown-drops": "WorkQueue",
    "fires-late": "WorkQueue",
    "replace-no-queued-tombstones": "DeltaFIFO",
    "dedup-merges-everything": "DeltaFIFO",
    "dedup-deletes-keeps-newer": "DeltaFIFO",
    "delta-fifo-queues-unknown-delete": "DeltaFIFO",
    "resync-over-queued": "DeltaFIFO",
    "real-fifo-drops-unknown-delete": "RealFIFO",
    "real-fifo-synced-at-take": "RealFIFOAtomic",
    # INF-1: the call's cache lacks the object it announces.
    "informer-handler-before-store": "Informer",
    # INF-3: a relist leaves a ghost in the cache and calls no delete.
    "informer-relist-keeps-vanished": "Informer",
    # INF-3, kubernetes#115620: paused, a key still queued at a relist gets no
    # tombstone; on resume it stays in the cache.
    "informer-tombstones-only-known": "Informer",
    # REF-3: after a 410 on the watch request it asks for a watch, not a list.
    "informer-rewatch-after-410": "InformerAtomic",
    # REF-3: the re-watch after a drop asks for the last list's rv.
    "informer-rewatch-from-list-rv": "InformerAtomic",
    # FIFO-7: paused, has_synced is true while the listed object is still queued.
    "informer-synced-before-processing": "InformerAtomic",
    # INF-3, INF-7, kubernetes PR #86015: a tick finds no handler due, then a relist
    # changes the object, and the handlers hear nothing of it.
    "informer-relist-as-resync": "InformerResync",
    # IDX-1: an update leaves the key under a value its object lost.
    "update-keeps-old-index-entries": "Indexer",
    # IDX-1, kubernetes PR #109137: an update drops the key from a value the old and new
    # objects share (test_spec_walk_indexer.py: on the {x} to {x, y} edge too).
    "update-drops-shared-index-value": "Indexer",
    # IDX-1: a replace keeps entries of objects the new list lacks.
    "replace-merges": "Indexer",
}

#: Informer bugs only a paused walk reaches: walked eagerly they pass every edge.
NEEDS_PAUSE = {
    "informer-tombstones-only-known": "Informer",
    "informer-synced-before-processing": "InformerAtomic",
}

#: Bugs whose failing state is reached by shorter spec paths that do not fail: the
#: failure depends on the adapter's history, not only on the spec state. Re-watching
#: from the last list's rv fails only when the last synced rv came from a watch event;
#: a shorter path to the same state syncs it by a list.
WALK_IS_SHORTEST = {"informer-rewatch-from-list-rv"}

#: bug -> (model, why every edge passes): what the model does not contain
PASSES = {
    "ring-grows-out-of-order": ("WorkQueue", "needs 3 queued keys; the model has 2"),
    "later-add-after-wins": ("WorkQueue", "the model has no AddAfter of a waiting key"),
    "add-after-no-dedup": ("WorkQueue", "the model has no AddAfter of a waiting key"),
    "non-positive-delay-waits": ("WorkQueue", "the model's AddAfter has no delay <= 0"),
    "sync-counts-entries": ("DeltaFIFO", "the model's lists hold each key once"),
    "replace-first-duplicate-wins": ("Indexer", "the model's lists hold each key once"),
    "index-keeps-empty-values": (
        "Indexer",
        "the walk reads no list_index_func_values (client-java's store has none)",
    ),
}


def test_every_walkable_bug_has_a_pinned_verdict() -> None:
    walkable = {"queue", "delaying_queue", "delta_fifo", "real_fifo", "informer", "store"}
    expected = {name for name, bug in BUGS.items() if bug.component in walkable}
    assert set(CAUGHT) | set(PASSES) == expected
    assert not set(CAUGHT) & set(PASSES)
    # The pins hold a verdict for each, the one these tables claim.
    assert set(PINS["bugs"]) == expected
    for name, model in CAUGHT.items():
        assert PINS["bugs"][name][model]["verdict"] == "caught", name
    for name, (model, _why) in PASSES.items():
        assert PINS["bugs"][name][model] == {"verdict": "passes every edge"}, name


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_bug_is_caught_on_a_short_path(name: str) -> None:
    model = CAUGHT[name]
    action = PINS["bugs"][name][model]["failed_at"]
    run = walk_once(SPEC_MAPPINGS[model], broken(name))
    assert run.refused is None, run.refused
    found = run.deviation
    assert found is not None, f"{name} passed every edge of {model}"
    text = found.describe()
    # The shortest path to the failing step fails again on a reset adapter, and is short
    # (unless the bug hangs on how the adapter got to the state, see WALK_IS_SHORTEST).
    if name not in WALK_IS_SHORTEST:
        assert found.shortened is not False, text
    assert found.path[-1] == action, text
    # An informer path also holds the harness's own Write/Compact steps (no request).
    assert len(found.path) <= (10 if model.startswith("Informer") else 8), text


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(NEEDS_PAUSE))
def test_informer_bug_needs_the_paused_walk(name: str) -> None:
    model = NEEDS_PAUSE[name]
    run = drive(eager(model), graph(model), broken(name))
    assert run.ok, run.deviation and run.deviation.describe()
    assert run.coverage.covered == run.coverage.drivable


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(PASSES))
def test_bug_outside_the_model_passes_every_edge(name: str) -> None:
    model, _why = PASSES[name]
    run = walk_once(SPEC_MAPPINGS[model], broken(name))
    assert run.ok, run.deviation and run.deviation.describe()
    assert run.coverage.covered == run.coverage.drivable


def _run(models: list[str], command: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = run_from_spec(models, command, out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def test_cli_unknown_model_is_a_usage_error() -> None:
    status, _, err = _run(["Nope"], REFERENCE)
    assert status == 3
    assert "no such driven model" in err and "WorkQueue" in err


def test_cli_reports_a_deviation_with_exit_1() -> None:
    status, out, _ = _run(["WorkQueue"], broken("get-keeps-dirty"))
    assert status == 1
    assert "WorkQueue        DEVIATION" in out
    assert "the adapter answered" in out


class _Adapter:
    """A tiny adapter script offering only what ``caps`` declares."""

    def __init__(self, tmp_path: Path, caps: dict[str, Any]) -> None:
        self.path = tmp_path / "adapter.py"
        self.path.write_text(
            "import json, sys\n"
            f"CAPS = {caps!r}\n"
            "for line in sys.stdin:\n"
            "    r = json.loads(line)\n"
            "    res = {'protocol': r.get('protocol'), 'name': 'tiny', 'version': '0',\n"
            "           'components': CAPS} if r['op'] == 'hello' else None\n"
            "    print(json.dumps({'id': r['id'], 'result': res}), flush=True)\n"
        )

    @property
    def command(self) -> list[str]:
        return [sys.executable, str(self.path)]


def test_an_adapter_without_the_component_is_not_run(tmp_path: Path) -> None:
    adapter = _Adapter(tmp_path, {"queue": {"methods": ["add"]}})
    run: SpecRun = drive(SPEC_MAPPINGS["DeltaFIFO"], graph("DeltaFIFO"), adapter.command)
    assert run.refused is not None and "does not offer delta_fifo" in run.refused
    status, out, _ = _run(["DeltaFIFO"], adapter.command)
    assert status == 2 and "NOT RUN" in out


def test_an_adapter_missing_methods_is_told_which(tmp_path: Path) -> None:
    adapter = _Adapter(tmp_path, {"delaying_queue": {"methods": ["add", "get_nowait"]}})
    run = drive(SPEC_MAPPINGS["WorkQueue"], graph("WorkQueue"), adapter.command)
    assert run.refused is not None
    assert "add_after" in run.refused and "done" in run.refused


def test_narrowed_options_are_refused(tmp_path: Path) -> None:
    caps = {
        "delta_fifo": {
            "methods": sorted(SPEC_MAPPINGS["DeltaFIFO"].methods),
            "option_values": {"emit_delta_type_replaced": [False]},
        }
    }
    adapter = _Adapter(tmp_path, caps)
    run = drive(SPEC_MAPPINGS["DeltaFIFO"], graph("DeltaFIFO"), adapter.command)
    assert run.refused is not None and "emit_delta_type_replaced=True" in run.refused


def test_the_no_replaced_walk_creates_its_fifo_with_the_option_off() -> None:
    """DeltaFIFONoReplaced's walk creates the adapter's DeltaFIFO with
    emit_delta_type_replaced off; the same walk with the option on deviates at the
    pop of a relisted key (Replaced where the spec queued Sync)."""
    mapping = DELTA_FIFO_NO_REPLACED
    assert SPEC_MAPPINGS["DeltaFIFONoReplaced"] is mapping
    assert mapping.options["emit_delta_type_replaced"] is False
    on = attrs.evolve(mapping, options={**mapping.options, "emit_delta_type_replaced": True})
    run = drive(on, graph("DeltaFIFONoReplaced"), REFERENCE)
    assert run.deviation is not None, "the option made no difference"
    assert run.deviation.path[-1] == "Pop", run.deviation.describe()
    assert "Replaced" in run.deviation.describe()


def test_without_the_split_methods_fewer_edges_are_driven(tmp_path: Path) -> None:
    """An adapter without drain_start/drain_returned is walked without the drain."""
    methods = ["add", "get_nowait", "done", "len", "shut_down", "shutting_down", "add_after"]
    adapter = _Adapter(tmp_path, {"delaying_queue": {"methods": methods}})
    run = drive(SPEC_MAPPINGS["WorkQueue"], graph("WorkQueue"), adapter.command)
    # The tiny adapter answers null to everything, so the walk stops at its first
    # check; what matters here is which edges it planned to drive.
    assert run.coverage.undriven == {
        "ShutDownWithDrain/DrainReturn: no drain_start/drain_returned": 216
    }
    assert run.coverage.drivable + 216 + run.coverage.unreachable == run.coverage.edges
    assert run.deviation is not None


# -- the informer models --------------------------------------------------------------


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["informer-handler-before-store", "informer-rewatch-after-410"])
def test_informer_bug_is_caught_on_both_informer_models(name: str) -> None:
    for model in ("Informer", "InformerAtomic"):
        run = walk_once(SPEC_MAPPINGS[model], broken(name))
        assert run.refused is None, run.refused
        assert run.deviation is not None, f"{name} passed every edge of {model}"


def test_an_informer_that_is_no_client_go_generation_is_not_walked(tmp_path: Path) -> None:
    """The informer models are client-go's: an adapter without ``behaves_like`` (only
    the invariants are checked, docs/protocol.md) is not walked through them."""
    methods = sorted(SPEC_MAPPINGS["Informer"].methods)
    adapter = _Adapter(tmp_path, {"informer": {"methods": methods, "behaves_like": None}})
    run = drive(SPEC_MAPPINGS["Informer"], graph("Informer"), adapter.command)
    assert run.refused is not None and "fifo='delta'" in run.refused
    adapter = _Adapter(tmp_path, {"informer": {"methods": methods, "behaves_like": ["delta"]}})
    run = drive(SPEC_MAPPINGS["InformerAtomic"], graph("InformerAtomic"), adapter.command)
    assert run.refused is not None and "fifo='real-atomic'" in run.refused


def test_the_internal_actions_are_a_table_per_model() -> None:
    """A spec that renames or splits an internal step needs the mapping's table to
    name it: an action the mapping does not know is an error, not an undriven edge."""
    g = graph("Informer")
    split = attrs.evolve(
        g,
        edges=tuple(
            attrs.evolve(e, action="WriteStore") if e.action == "StoreWrite" else e for e in g.edges
        ),
    )
    with pytest.raises(ValueError, match="WriteStore"):
        SPEC_MAPPINGS["Informer"].driven(split, frozenset())
    mapping = attrs.evolve(INFORMER, internal=("Handle", "Distribute", "WriteStore", "Pop"))
    steps, undriven = mapping.driven(split, frozenset())
    plain_steps, plain_undriven = INFORMER.driven(g, frozenset())
    assert len(steps) == len(plain_steps) and undriven == plain_undriven


def _call(kind: str, key: str, rv: str, cache: str | None) -> dict[str, Any]:
    return {"handler": "h0", "kind": kind, "key": key, "rv": rv, "cache": cache}


def test_informer_calls_per_key_in_order_any_order_across_keys() -> None:
    expected = [
        {"handler": "h0", "kind": "add", "key": "a", "rv": "2"},
        {"handler": "h0", "kind": "update", "key": "a", "rv": "3"},
        {"handler": "h0", "kind": "delete", "key": "b", "rv": "1"},
    ]
    ok = [
        _call("add", "a", "2", "3"),
        _call("update", "a", "3", "3"),
        _call("delete", "b", "1", None),
    ]
    assert calls_ok(expected, ok)
    assert calls_ok(expected, [ok[2], ok[0], ok[1]])  # across keys: any order
    assert not calls_ok(expected, [ok[1], ok[0], ok[2]])  # per key: the spec's
    # INF-1: the handler ran before the cache held what it announces.
    assert not calls_ok(expected, [_call("add", "a", "2", None), ok[1], ok[2]])
    assert not calls_ok(expected, [ok[0], ok[1], _call("delete", "b", "1", "1")])
    assert not calls_ok(expected, ok[:2])


def test_atomic_informer_calls_delete_first_across_keys() -> None:
    """A ReplacedAll hands out its deletions before its adds and updates
    (InformerAtomic's ReplacedAllDeletionsFirst): the atomic mapping compares where the
    deletes fall; per key and across keys otherwise, any order still passes."""
    expected = [
        {"handler": "h0", "kind": "delete", "key": "b", "rv": "1"},
        {"handler": "h0", "kind": "delete", "key": "c", "rv": "1"},
        {"handler": "h0", "kind": "add", "key": "a", "rv": "4"},
    ]
    got = [
        _call("delete", "b", "1", None),
        _call("delete", "c", "1", None),
        _call("add", "a", "4", "4"),
    ]
    assert calls_ok(expected, got, deletions_first=True)
    assert calls_ok(expected, [got[1], got[0], got[2]], deletions_first=True)
    upserts_first = [got[2], got[0], got[1]]
    assert calls_ok(expected, upserts_first)
    assert not calls_ok(expected, upserts_first, deletions_first=True)
    assert INFORMER_ATOMIC.deletions_first and not INFORMER.deletions_first


#: The reference with process_replaced_all's handler calls reordered: the adds and
#: updates of a ReplacedAll first, its deletions after them.
_UPSERTS_FIRST = """
import importlib
import sys
from refimpl.conformance.reference.adapter import main

# The module, not refimpl.cache's process_deltas function of the same name.
process_deltas = importlib.import_module("refimpl.cache.process_deltas")
original = process_deltas.process_replaced_all


class DeletesLast:
    def __init__(self, handler):
        self.handler, self.deletes = handler, []

    def on_delete(self, obj):
        self.deletes.append(obj)

    def __getattr__(self, name):
        return getattr(self.handler, name)


def upserts_first(handler, store, info, *args):
    held = DeletesLast(handler)
    original(held, store, info, *args)
    for obj in held.deletes:
        handler.on_delete(obj)


process_deltas.process_replaced_all = upserts_first
sys.exit(main())
"""


@pytest.mark.timeout(600)
def test_atomic_walk_catches_a_relist_that_notifies_deletions_last(tmp_path: Path) -> None:
    """The walk of InformerAtomic fails a reference whose ReplacedAll hands out its
    adds and updates before its deletions; compared across keys in any order (the walk
    before ``deletions_first``) the same adapter passes every edge."""
    script = tmp_path / "upserts_first.py"
    script.write_text(_UPSERTS_FIRST)
    command = [sys.executable, str(script)]
    g = graph("InformerAtomic")
    run = drive(eager("InformerAtomic"), g, command)
    assert run.refused is None, run.refused
    assert run.deviation is not None, "deletions handed out last passed every edge"
    assert run.deviation.path[-1].startswith("List"), run.deviation.describe()
    strict = eager("InformerAtomic")
    assert isinstance(strict, InformerMapping)
    lax = drive(attrs.evolve(strict, deletions_first=False), g, command)
    assert lax.ok, lax.deviation and lax.deviation.describe()


# -- the covering walks -----------------------------------------------------------------


def test_min_cost_flow_takes_the_cheapest_ways() -> None:
    # 0 -> 1 -> 3 costs 2, 0 -> 2 -> 3 costs 10; 3 has two units too many, 0 two too few.
    arcs = {(0, 1): 1, (1, 3): 1, (0, 2): 5, (2, 3): 5, (3, 0): 7, (3, 2): 1, (2, 0): 1}
    flow = min_cost_flow(4, arcs, [-2, 0, 0, 2])
    assert flow == {(3, 2): 2, (2, 0): 2}
    # Nothing to balance: no flow.
    assert min_cost_flow(4, arcs, [0, 0, 0, 0]) == {}


@pytest.mark.parametrize("model", ["WorkQueue", "DeltaFIFO", "RealFIFO", "RealFIFOAtomic"])
def test_planned_walks_take_every_drivable_edge_from_the_initial_state(model: str) -> None:
    mapping = SPEC_MAPPINGS[model]
    methods = mapping.methods | {"drain_start", "drain_returned", "pop_begin", "pop_end"}
    g = DrivableGraph(graph(model), mapping, methods)
    walks = plan_walks(g, lambda step: 1, 2)
    assert walks and all(w[0].source == g.init for w in walks)
    for walk in walks:
        assert all(a.target == b.source for a, b in itertools.pairwise(walk))
    assert {i for w in walks for s in w for i in s.covers} == g.drivable


def test_an_adapter_that_drops_declared_observations_is_refused(tmp_path: Path) -> None:
    """Declaring ``observe`` and answering without ``observed`` is a protocol error,
    not a pass: the walk stops and says which request it was."""
    methods = sorted(SPEC_MAPPINGS["WorkQueue"].methods)
    adapter = _Adapter(tmp_path, {"delaying_queue": {"methods": methods, "observe": ["len"]}})
    run = drive(SPEC_MAPPINGS["WorkQueue"], graph("WorkQueue"), adapter.command)
    assert run.refused is not None and "'observed' must hold every method" in run.refused
    assert run.deviation is None


def test_without_pop_batch_nowait_the_batch_pops_are_left_out(tmp_path: Path) -> None:
    methods = sorted(SPEC_MAPPINGS["RealFIFO"].methods)
    adapter = _Adapter(tmp_path, {"real_fifo": {"methods": methods}})
    run = drive(SPEC_MAPPINGS["RealFIFO"], graph("RealFIFO"), adapter.command)
    assert run.coverage.undriven == {FIFO_NO_BATCH: 4240}
    assert run.coverage.drivable + 4240 + run.coverage.unreachable == run.coverage.edges


def test_edges_left_untaken_are_inconclusive_not_a_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the sweep runs out of tries with drivable edges untaken (the adapter's
    orders kept the walk from them), nothing is known about those: the verdict is
    inconclusive, exit status 4, never PASS."""
    monkeypatch.setattr(walker, "SWEEP_TRIES", 0)
    run = drive(SPEC_MAPPINGS["RealFIFO"], graph("RealFIFO"), REFERENCE)
    assert run.ok and run.coverage.covered < run.coverage.drivable
    assert run.verdict == "inconclusive"

    # What --from-spec prints and returns for it: its RealFIFO walk is the one just
    # checked (the same call; the broken adapter's bug is in its queue, its FIFO is the
    # reference's), not driven twice more (a minute of CPU; past pytest's 300 s under load).
    def walked(mapping: SpecMapping, graph_: StateGraph, *args: Any, **kwargs: Any) -> SpecRun:
        return run if mapping.model == "RealFIFO" else drive(mapping, graph_, *args, **kwargs)

    monkeypatch.setattr(walks_run, "drive", walked)
    status, out, _ = _run(["RealFIFO"], REFERENCE)
    assert status == walks_run.EXIT_INCONCLUSIVE == 4
    assert "RealFIFO         INCONCLUSIVE" in out and "nothing disagreed" in out
    assert "PASS" not in out
    # Another model's deviation still decides the exit status.
    status, _, _ = _run(["RealFIFO", "WorkQueue"], broken("get-keeps-dirty"))
    assert status == 1
