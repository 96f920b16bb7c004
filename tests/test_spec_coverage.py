"""Every main model takes every action of its Next, and every checked property's
antecedent is reachable (issue #28 item 4; docs/07-the-model-and-the-code.md, "Coverage").

Runs without TLC: spec/models.json records TLC's -coverage counts per action and the
antecedent counts (``refimpl spec coverage --tlc --record``); here the record is checked
for gaps, against the committed graphs (their edge labels, and the antecedents evaluated
again over their states and edges) and against the tables docs/07 publishes.
tests/test_tlc_coverage.py measures it again with TLC.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from spec_graphs import spec_graph

from refimpl.tla import coverage as cov
from refimpl.tla.manifest import Model, load_manifest

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "spec"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tlc"
MAIN = cov.main_models(load_manifest(SPEC))
GRAPHED = [m for m in MAIN if m.graph]


def test_the_main_models_are_the_claims() -> None:
    names = {m.name for m in MAIN}
    assert {"WorkQueue", "DeltaFIFO", "RealFIFOAtomicBatch", "Informer", "Controller"} <= names
    assert not any(m.module.startswith("../") or m.expect != "pass" for m in MAIN)


@pytest.mark.parametrize("model", MAIN, ids=lambda m: m.name)
def test_every_action_taken_and_every_antecedent_reached(model: Model) -> None:
    """No action of Next is never taken unless the model's constants disable it (said
    why, in ``idle_actions``); no antecedent is never reached; every checked property
    has one."""
    assert cov.problems(model) == []
    assert model.antecedents is not None
    assert list(model.antecedents) == cov.checked_properties(SPEC, model)
    for reason in (model.idle_actions or {}).values():
        assert len(reason) > 20, reason


def test_a_gap_is_reported() -> None:
    """The check can fail: an action never taken, an idle one that is taken, an
    antecedent never reached."""
    model = next(m for m in MAIN if m.name == "WorkQueue")
    assert model.actions is not None and model.antecedents is not None
    gap = attrs.evolve(
        model,
        actions={**model.actions, "Get": [0, 0]},
        idle_actions={"Add": "disabled by the constants, said the test"},
        antecedents={**model.antecedents, "DrainTerminates": [0, 318]},
    )
    found = cov.problems(gap)
    assert any("action Get is never taken" in p for p in found), found
    assert any("Add is declared idle but taken" in p for p in found), found
    assert any("DrainTerminates is never reached" in p for p in found), found


@pytest.mark.parametrize("model", GRAPHED, ids=lambda m: m.name)
def test_the_graph_agrees_with_the_record(model: Model) -> None:
    """The committed graph's edges are labelled with exactly the actions TLC took, and
    the antecedents over its states and edges are the recorded counts."""
    graph = spec_graph(model.name)
    assert model.actions is not None
    taken = {name for name, (_, generated) in model.actions.items() if generated > 0}
    edges = cov.graph_actions(graph)
    assert set(edges) == taken
    counts = cov.antecedent_counts(SPEC, model, graph)
    assert {a.prop: [a.count, a.of] for a in counts} == model.antecedents
    print(model.name, dict(edges))


def test_parse_coverage_reads_tlc() -> None:
    """Captured output of ``-coverage`` on MCWorkQueue: the initial predicate dropped,
    every action with its (distinct, generated) counts, also one that finds no new state."""
    found = cov.parse_coverage((FIXTURES / "MCWorkQueueCoverage.out").read_text())
    assert list(found)[:3] == ["Add", "AddAfter", "Ready"]
    assert found["Ready"] == (0, 118)
    assert "Init" not in found and len(found) == 9
    with pytest.raises(ValueError, match="no coverage"):
        cov.parse_coverage("Model checking completed. No error has been found.\n")


def test_docs_publish_the_recorded_tables() -> None:
    """docs/07 holds the tables ``refimpl spec coverage --markdown`` prints."""
    text = (ROOT / "docs" / "07-the-model-and-the-code.md").read_text()
    assert cov.markdown(cov.SUMMARY_HEADERS, cov.summary_rows(MAIN)) in text
    assert cov.markdown(cov.ANTECEDENT_HEADERS, cov.antecedent_rows(MAIN)) in text
