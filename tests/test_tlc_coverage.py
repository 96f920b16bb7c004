"""The recorded coverage of the main models, measured again with TLC (marked ``tlc``).

``refimpl spec coverage --tlc`` runs each main model with one worker, ``-coverage`` and
its state graph dumped; the per-action counts and the antecedent counts must be those
spec/models.json records (tests/test_spec_coverage.py checks the record in CI).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from refimpl.tla import coverage as cov
from refimpl.tla.manifest import Model, load_manifest
from refimpl.tla.runner import tlc_unavailable_reason

SPEC = Path(__file__).resolve().parents[1] / "spec"
_REASON = tlc_unavailable_reason()
pytestmark = [
    pytest.mark.tlc,
    pytest.mark.skipif(_REASON is not None, reason=f"TLC not available: {_REASON}"),
]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("model", cov.main_models(load_manifest(SPEC)), ids=lambda m: m.name)
def test_tlc_coverage_is_the_record(model: Model) -> None:
    run, measured = cov.measure(SPEC, model)
    print(f"{model.name}: {run.wall_seconds:.1f}s {measured.actions}")
    assert measured.actions == model.actions
    assert measured.antecedents == model.antecedents
    assert cov.problems(measured) == []
