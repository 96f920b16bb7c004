"""Spec-driven conformance: every drivable edge of every graphed model, against the
reference (no deviation, nothing missed) and against the broken adapters (pinned
verdicts: which bugs the walks catch, which pass every edge and why).

A committed graph that grows an edge the walks cannot drive or miss fails here: the
edges driven, the edges left out (with their reasons) and the unreachable ones must
add up to the graph's edges, with the left-out ones exactly the kinds listed.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import pytest
from test_conformance_broken import BROKEN, BUGS

from refimpl.conformance.spec_driven import (
    DRIVERS,
    SpecRun,
    drive,
    load_model_graph,
    run_from_spec,
)
from refimpl.tla.graph import StateGraph

REFERENCE = [sys.executable, "-m", "refimpl.conformance.reference_adapter"]
GRAPHS: dict[str, StateGraph] = {}


def graph(model: str) -> StateGraph:
    if model not in GRAPHS:
        GRAPHS[model] = load_model_graph(model)
    return GRAPHS[model]


def broken(name: str) -> list[str]:
    return [sys.executable, str(BROKEN / "adapter.py"), "--bug", name]


#: What the protocol cannot drive, per model (reason -> edges); nothing else may be.
UNDRIVEN = {
    "WorkQueue": {
        "steps between a drain completing and ShutDownWithDrain returning": 132,
        "ShutDown during a drain: a delaying queue's runs once (DQ-6)": 70,
    },
    "DeltaFIFO": {},
    "RealFIFO": {},
    "RealFIFOAtomic": {},
}
#: Edges reachable only through the ones above.
UNREACHABLE = {"WorkQueue": 72, "DeltaFIFO": 0, "RealFIFO": 0, "RealFIFOAtomic": 0}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("model", list(DRIVERS))
def test_reference_follows_every_drivable_edge(model: str) -> None:
    run = drive(DRIVERS[model], graph(model), REFERENCE)
    cov = run.coverage
    assert run.ok, (run.refused, run.deviation and run.deviation.describe())
    assert cov.covered == cov.drivable
    undriven = {reason: n for reason, n in cov.undriven.items() if n}
    assert undriven == UNDRIVEN[model]
    assert cov.drivable + sum(undriven.values()) + cov.unreachable == cov.edges
    assert cov.unreachable == UNREACHABLE[model]
    # Every edge once, plus the paths between them: well under 3 steps per edge.
    assert cov.steps <= 3 * cov.drivable


#: bug -> (model, the spec action the shortest failing path ends in, its length)
CAUGHT = {
    "add-while-processing-pushes": ("WorkQueue", 'Add("a")'),
    "done-forgets-requeue": ("WorkQueue", 'Done("w2")'),
    "get-keeps-dirty": ("WorkQueue", 'Done("w2")'),
    "dirty-cleared-at-done": ("WorkQueue", 'Done("w2")'),
    "shutdown-discards-queue": ("WorkQueue", "ShutDown"),
    "len-counts-processing": ("WorkQueue", 'Get("w2")'),
    "done-after-shutdown-drops": ("WorkQueue", 'Done("w2")'),
    "fires-late": ("WorkQueue", 'Ready("a")'),
    "replace-no-queued-tombstones": ("DeltaFIFO", "Pop"),
    "dedup-merges-everything": ("DeltaFIFO", "Pop"),
    "delta-fifo-queues-unknown-delete": ("DeltaFIFO", "Pop"),
    "resync-over-queued": ("DeltaFIFO", "Pop"),
    "real-fifo-drops-unknown-delete": ("RealFIFO", "Pop"),
    "real-fifo-synced-at-take": ("RealFIFOAtomic", "Take"),
}

#: bug -> (model, why every edge passes): what the model does not contain
PASSES = {
    "ring-grows-out-of-order": ("WorkQueue", "needs 3 queued keys; the model has 2"),
    "later-add-after-wins": ("WorkQueue", "the model has no AddAfter of a waiting key"),
    "add-after-no-dedup": ("WorkQueue", "the model has no AddAfter of a waiting key"),
    "non-positive-delay-waits": ("WorkQueue", "the model's AddAfter has no delay <= 0"),
    "sync-counts-entries": ("DeltaFIFO", "the model's lists hold each key once"),
}


def test_every_walkable_bug_has_a_pinned_verdict() -> None:
    walkable = {"queue", "delaying_queue", "delta_fifo", "real_fifo"}
    expected = {name for name, bug in BUGS.items() if bug.component in walkable}
    assert set(CAUGHT) | set(PASSES) == expected
    assert not set(CAUGHT) & set(PASSES)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_bug_is_caught_on_a_short_path(name: str) -> None:
    model, action = CAUGHT[name]
    run = drive(DRIVERS[model], graph(model), broken(name))
    assert run.refused is None, run.refused
    found = run.deviation
    assert found is not None, f"{name} passed every edge of {model}"
    text = found.describe()
    # The shortest path to the failing step fails again on a reset adapter, and is short.
    assert found.shortened is not False, text
    assert found.path[-1] == action, text
    assert len(found.path) <= 8, text


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(PASSES))
def test_bug_outside_the_model_passes_every_edge(name: str) -> None:
    model, _why = PASSES[name]
    run = drive(DRIVERS[model], graph(model), broken(name))
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
    run: SpecRun = drive(DRIVERS["DeltaFIFO"], graph("DeltaFIFO"), adapter.command)
    assert run.refused is not None and "does not offer delta_fifo" in run.refused
    status, out, _ = _run(["DeltaFIFO"], adapter.command)
    assert status == 2 and "NOT RUN" in out


def test_an_adapter_missing_methods_is_told_which(tmp_path: Path) -> None:
    adapter = _Adapter(tmp_path, {"delaying_queue": {"methods": ["add", "get_nowait"]}})
    run = drive(DRIVERS["WorkQueue"], graph("WorkQueue"), adapter.command)
    assert run.refused is not None
    assert "add_after" in run.refused and "done" in run.refused


def test_narrowed_options_are_refused(tmp_path: Path) -> None:
    caps = {
        "delta_fifo": {
            "methods": sorted(DRIVERS["DeltaFIFO"].methods),
            "option_values": {"emit_delta_type_replaced": [False]},
        }
    }
    adapter = _Adapter(tmp_path, caps)
    run = drive(DRIVERS["DeltaFIFO"], graph("DeltaFIFO"), adapter.command)
    assert run.refused is not None and "emit_delta_type_replaced=True" in run.refused


def test_without_the_split_methods_fewer_edges_are_driven(tmp_path: Path) -> None:
    """An adapter without drain_start/drain_returned is walked without the drain."""
    methods = ["add", "get_nowait", "done", "len", "shut_down", "shutting_down", "add_after"]
    adapter = _Adapter(tmp_path, {"delaying_queue": {"methods": methods}})
    run = drive(DRIVERS["WorkQueue"], graph("WorkQueue"), adapter.command)
    # The tiny adapter answers null to everything, so the walk stops at its first
    # check; what matters here is which edges it planned to drive.
    assert run.coverage.undriven == {
        "ShutDownWithDrain/DrainReturn: no drain_start/drain_returned": 216
    }
    assert run.coverage.drivable + 216 + run.coverage.unreachable == run.coverage.edges
    assert run.deviation is not None
