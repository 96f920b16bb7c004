"""``--inputs``: realistic generators (search/history.py) and ``any`` as before #25.

- ``any`` keeps the generators the search had before ``--inputs`` existed: it generates
  exactly what tests/fixtures/inputs_any.json recorded (tests/generated_requests.py);
- every generated trace of the cache pieces and the informer is realistic
  (:func:`~refimpl.conformance.search.history.realistic`) for fixed seeds, and the
  check can fail: ``any`` generates unrealistic ones;
- the minimizer keeps a realistic finding realistic, and the report and the saved trace
  say the mode;
- :func:`~refimpl.conformance.search.history.informer_shapes` and
  :func:`~refimpl.conformance.search.history.cache_shapes` name each rare shape, and the
  generators reach the ones #30 added (several index values and a change in their
  number, handlers of their own resync period, a key listed twice with ``any``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conform_helpers import run_conform
from generated_requests import COMPONENTS, EXAMPLES, digest, generated

from refimpl.conformance.search.history import History, cache_shapes, informer_shapes, realistic
from refimpl.conformance.search.report import load_inputs

FIXTURE = Path(__file__).with_name("fixtures") / "inputs_any.json"
BROKEN = Path(__file__).resolve().parent.parent / "adapters" / "broken" / "adapter.py"


@pytest.mark.parametrize("run", sorted(json.loads(FIXTURE.read_text())["runs"]))
def test_inputs_any_generates_what_the_search_generated_before(run: str) -> None:
    component, seed = run.split("/")
    recorded = json.loads(FIXTURE.read_text())["runs"][run]
    now = generated(component, int(seed), EXAMPLES, inputs="any")
    assert now[0] == recorded["first"]
    assert [digest(r) for r in now] == recorded["digests"]


@pytest.mark.parametrize("component", COMPONENTS)
@pytest.mark.parametrize("seed", [3, 4])
def test_realistic_inputs_generate_only_realistic_traces(component: str, seed: int) -> None:
    examples = generated(component, seed, 25)
    problems = [realistic(component, r) for r in examples]
    assert [p for p in problems if p] == [], f"seed {seed}"


@pytest.mark.parametrize("component", ["store", "delta_fifo", "real_fifo"])
def test_any_inputs_are_not_all_realistic(component: str) -> None:
    examples = generated(component, 3, 25, inputs="any")
    assert any(realistic(component, r) for r in examples), "seed 3"


def call(method: str, **args: Any) -> dict[str, Any]:
    return {"op": "call", "instance": "x", "method": method, "args": args}


def test_realistic_checks_an_honest_history() -> None:
    h = History()
    a1 = h.write("a", {})
    a2 = h.write("a", {"team": "red"})
    b = h.write("b", {})
    honest = [
        {"op": "create", "instance": "x", "component": "store", "options": {}},
        call("add", obj=a1),
        call("update", obj=a2),
        call("known_add", obj=a2),
        call("add", obj=b),
        call("delete", obj=b),
        call("replace", objs=[a2], rv=str(h.rv)),
    ]
    assert realistic("store", honest) is None
    older = {**a1, "rv": "1"}
    assert "not newer" in str(realistic("store", [call("add", obj=a2), call("update", obj=older)]))
    assert "last rv" in str(realistic("store", [call("add", obj=a1), call("delete", obj=a2)]))
    assert "not live" in str(realistic("store", [call("update", obj=a1)]))
    stale = [call("add", obj=a2), call("replace", objs=[a1], rv=str(h.rv))]
    assert "never written" in str(realistic("store", stale))
    assert "older" in str(
        realistic("store", [call("add", obj=b), call("replace", objs=[], rv="2")])
    )


def test_realistic_checks_informer_rvs_never_go_back() -> None:
    a2, a3 = History.make("a", 2, {}), History.make("a", 3, {})
    listed = call("list_reply", objects=[a3], rv="3")
    assert realistic("informer", [listed, call("watch_event", type="MODIFIED", object=a2)])
    assert realistic("informer", [listed, call("list_reply", objects=[a2], rv="4")])
    assert realistic("informer", [call("list_reply", objects=[a3], rv="2")])
    fine = [listed, call("watch_event", type="ADDED", object=a3)]
    assert realistic("informer", fine) is None


def test_informer_shapes_names_each_rare_interleaving() -> None:
    a2, b3, a4 = History.make("a", 2, {}), History.make("b", 3, {}), History.make("a", 4, {})
    trace = [
        call("add_handler", name="h0"),
        call("start"),
        call("list_reply", objects=[a2, b3], rv="3"),
        call("watch_error", reason="expired"),
        call("list_reply", objects=[a2], rv="5"),
    ]
    assert informer_shapes(trace) == {"expired_watch", "unseen_delete", "relist_changes"}
    changed = [call("start"), call("list_reply", objects=[a2], rv="3")]
    changed += [call("list_reply", objects=[a4], rv="4"), call("add_handler", name="h1")]
    assert informer_shapes(changed) == {"relist_changes", "late_handler"}
    readded = [call("list_reply", objects=[a2], rv="3")]
    readded += [call("watch_event", type="DELETED", object=a4)]
    readded += [call("watch_error", reason="internal"), call("list_reply", objects=[a4], rv="5")]
    assert informer_shapes(readded) == {"relist_changes"}
    assert informer_shapes(trace[:3]) == set()


def test_informer_shapes_names_a_handler_of_its_own_period_and_a_relist_after_a_check() -> None:
    a2, a4 = History.make("a", 2, {}), History.make("a", 4, {"team": "red"})
    create = {"op": "create", "component": "informer", "options": {"resync": 10.0}}
    trace = [create, call("add_handler", name="h0", resync=None), call("start")]
    trace += [call("list_reply", objects=[a2], rv="2"), call("watch_open")]
    # Every handler at the informer's period is due at every check: not the shape.
    assert informer_shapes(trace) == set()
    trace += [call("add_handler", name="h1", resync=0)]
    assert informer_shapes(trace) == {"late_handler", "own_resync"}
    relist = [call("watch_end", how="expired"), call("list_reply", objects=[a4], rv="4")]
    # A relist with a change before any resync check fell due: not yet.
    assert "resync_relist" not in informer_shapes(trace + relist)
    checked = [*trace, {"op": "advance", "seconds": 10.0}, *relist]
    assert "resync_relist" in informer_shapes(checked)
    # An informer that never resyncs ignores the handlers' periods (client-go too).
    quiet = [{**create, "options": {"resync": 0}}, *checked[1:]]
    assert not {"own_resync", "resync_relist"} & informer_shapes(quiet)


def test_cache_shapes_names_several_values_a_change_in_their_number_and_a_duplicate() -> None:
    one, two = History.make("a", 2, {"team": "red"}), History.make("a", 3, {"team": "red"})
    two["labels"] = {"team": "red", "tier": "web"}
    assert cache_shapes([call("add", obj=one), call("update", obj=one)]) == set()
    assert cache_shapes([call("add", obj=two)]) == {"several_values"}
    changed = cache_shapes([call("add", obj=one), call("update", obj=two)])
    assert changed == {"several_values", "values_change"}
    relisted = cache_shapes([call("add", obj=two), call("replace", objs=[one], rv="3")])
    assert relisted == {"several_values", "values_change"}
    assert cache_shapes([call("replace", objs=[one, two], rv="3")]) >= {"duplicate_key"}


@pytest.mark.parametrize(
    ("component", "inputs", "seed", "shapes"),
    [
        ("store", "realistic", 3, {"several_values", "values_change"}),
        ("informer", "realistic", 1, {"own_resync", "resync_relist"}),
        ("store", "any", 3, {"duplicate_key"}),
    ],
)
def test_the_generators_reach_the_shapes_real_bugs_need(
    component: str, inputs: str, seed: int, shapes: set[str]
) -> None:
    # Before #30 the store's objects had at most one label and every handler the
    # informer's resync period: neither store shape nor own_resync could occur. The
    # rates per 100 examples are benchmarks/conformance.py's (--shapes); a relist after
    # a resync check comes 4-9 times in 100, so one seed of 50 examples is pinned here.
    examples = generated(component, seed, 50, inputs=inputs)
    find = informer_shapes if component == "informer" else cache_shapes
    reached = set().union(*(find(r) for r in examples))
    assert shapes <= reached, f"seed {seed}, 50 examples: {sorted(reached)}"


def test_a_realistic_finding_shrinks_to_a_realistic_trace(tmp_path: Path) -> None:
    saved = tmp_path / "trace.jsonl"
    command = [sys.executable, str(BROKEN), "--bug", "replace-merges"]
    status, report = run_conform(
        command,
        components=["store"],
        seed=1,
        budget=60.0,
        shrink_budget=10.0,
        save=str(saved),
        max_findings=1,  # one trace in the file, as this test reads it
    )
    assert status == 1, report
    assert "; inputs realistic" in report
    assert load_inputs(str(saved)) == "realistic"
    requests = [json.loads(line) for line in saved.read_text().splitlines()[1:]]
    assert realistic("store", requests) is None, report
    # A replay reports the mode the trace was found with, whatever its own default.
    lines = saved.read_text().splitlines()
    header = {**json.loads(lines[0]), "inputs": "any"}
    saved.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    status, replayed = run_conform(command, replay=str(saved))
    assert status == 1 and "; inputs any" in replayed, replayed
