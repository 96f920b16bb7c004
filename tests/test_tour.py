"""Every experiment of the tour runs and every claim it makes holds.

The tour is the docs' evidence: if a claim stops holding, this test fails and names it.
"""

from __future__ import annotations

import pytest

from refimpl.tour import Experiment, chapters

EXPERIMENTS = [exp for chapter in chapters() for exp in chapter.experiments]


def test_there_are_chapters_and_experiments() -> None:
    numbers = [c.number for c in chapters()]
    assert numbers == sorted(numbers)
    assert {"04", "05", "06"} <= set(numbers)
    assert len(EXPERIMENTS) >= 8


def test_claim_ids_are_unique() -> None:
    ids = [claim.id for exp in EXPERIMENTS for claim in exp.run()]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("exp", EXPERIMENTS, ids=lambda e: f"{e.chapter}-{e.name}")
def test_experiment_claims_hold(exp: Experiment) -> None:
    claims = exp.run()
    assert claims, f"experiment {exp.name} made no claim"
    for claim in claims:
        assert claim.id.startswith(exp.chapter + "."), claim.id
        assert claim.ok, (
            f"[{claim.id}] {claim.text}: measured {claim.measured}, expected {claim.expected}"
        )
