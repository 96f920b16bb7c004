"""Trace validation reports the spec actions of its witness (marked ``tlc``): an
accepted trace comes with a behaviour of the spec through every line, and its actions
are counted (refimpl/tla/trace_core.py, ``NotDone``; refimpl/tla/trace_coverage.py)."""

from __future__ import annotations

import pytest

from refimpl.tla.runner import tlc_unavailable_reason
from refimpl.tla.trace_coverage import declared_actions, run_seed

_REASON = tlc_unavailable_reason()
pytestmark = [
    pytest.mark.tlc,
    pytest.mark.skipif(_REASON is not None, reason=f"TLC not available: {_REASON}"),
]


@pytest.mark.timeout(300)
def test_a_steered_relist_is_accepted_and_its_actions_counted() -> None:
    run = run_seed("informer", 1, 300, "delta", "DeltaFIFO")
    print(run)
    assert run.accepted is True
    assert set(run.actions) <= declared_actions("DeltaFIFO")
    # seed 1 relists over a ghost: the witness takes Replace and pops what it queued
    assert run.steered and run.actions["Replace"] >= 2 and run.actions["Pop"] > 0


@pytest.mark.timeout(300)
def test_a_steered_informer_spec_run_with_a_large_relist_is_accepted() -> None:
    """Steered seed 9 of informer-spec relists 4 objects after a relist that tombstoned
    4 keys: TLC stopped with an error comparing a key order hint with an object set
    until InformerTrace.tla matched hints by their printed form first."""
    run = run_seed("informer-spec", 9, 300, "delta", "Informer")
    assert run.accepted is True
    assert run.actions["List"] >= 2


@pytest.mark.timeout(600)
def test_steered_informer_seeds_take_every_delta_fifo_action() -> None:
    """docs/07's trace coverage, in small: seeds 1-5 of the steered informer scenario
    are all accepted by DeltaFIFO.tla and their witnesses take every action its
    mapping names."""
    runs = [run_seed("informer", seed, 300, "delta", "DeltaFIFO") for seed in range(1, 6)]
    assert all(r.accepted for r in runs)
    assert {a for r in runs for a in r.actions} == declared_actions("DeltaFIFO")
