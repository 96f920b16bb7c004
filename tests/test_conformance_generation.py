"""What the generator reaches: the end-of-example drain (refimpl/conformance/search/machines.py).

A difference an implementation hides in state (a second firing of one waiting item, an
in-flight re-add) shows only if the example observes it before it ends; the drain at
the end of every example does. Measured with the broken variant add-after-no-dedup from
adapters/broken, fixed seeds 1-5 and at most 60 examples each: with the drain every
seed finds it (after 9, 34, 10, 8 and 25 examples when this was written); without it,
two of the five do (seeds 2 and 3, after 42 and 53).
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from refimpl.conformance.search import machines as machines
from refimpl.conformance.search.config import Config
from refimpl.conformance.search.run import run_component
from refimpl.conformance.search.session import RunContext

BROKEN = Path(__file__).resolve().parent.parent / "adapters" / "broken" / "adapter.py"
SEEDS = (1, 2, 3, 4, 5)


def examples_to_catch(bug: str, component: str, seed: int, max_examples: int) -> int | None:
    """Examples generated until the first failure (None: not within ``max_examples``)."""
    config = Config(
        command=[sys.executable, str(BROKEN), "--bug", bug],
        budget=30.0,
        seed=seed,
        max_examples=max_examples,
        shrink=False,
        progress=False,
        max_findings=1,
    )
    ctx = RunContext(config, io.StringIO())
    try:
        ctx.start_adapter()
        result = run_component(ctx, component, config.budget)
    finally:
        ctx.close()
    return None if result.failure is None else result.failure.example


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", SEEDS)
def test_the_drain_shows_a_second_firing_within_a_few_examples(seed: int) -> None:
    found = examples_to_catch("add-after-no-dedup", "delaying_queue", seed, 60)
    assert found is not None, f"seed {seed}: add-after-no-dedup not caught in 60 examples"


@pytest.mark.timeout(120)
def test_without_the_drain_the_same_examples_miss_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(machines, "DRAIN_LIMIT", 0)
    found = {s: examples_to_catch("add-after-no-dedup", "delaying_queue", s, 60) for s in SEEDS}
    caught = [s for s, n in found.items() if n is not None]
    assert len(caught) <= len(SEEDS) // 2, f"without a drain, examples to catch by seed: {found}"
