"""Every deliberately broken adapter in adapters/broken/ is caught by ``refimpl conform``.

One test per bug: fixed seeds (the next one if a seed finds nothing within 400
examples; counted in examples, not seconds, so a busy machine gives the same verdict),
Hypothesis generation only, then the replay-based minimiser. The failure must be a
disagreement or a broken invariant (not an adapter failure), short, and it must
reproduce on a freshly started adapter. A catalogue entry
that stops being caught fails here; so does a harness change that loses its bite.
"""

from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path
from typing import Any

import pytest

from refimpl.conformance.search.config import Config
from refimpl.conformance.search.replay import confirm_replay
from refimpl.conformance.search.report import format_failure
from refimpl.conformance.search.run import run_component
from refimpl.conformance.search.session import RunContext

BROKEN = Path(__file__).resolve().parent.parent / "adapters" / "broken"


def _load_bugs() -> Any:
    spec = importlib.util.spec_from_file_location("broken_bugs", BROKEN / "bugs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


#: adapters/broken/bugs.py, loaded by path (it is not a package)
BROKEN_BUGS = _load_bugs()
BUGS = BROKEN_BUGS.BUGS


def test_catalogue_covers_every_component_and_the_named_history() -> None:
    components = {bug.component for bug in BUGS.values()}
    assert components >= {"queue", "delaying_queue", "rate_limiter", "delta_fifo", "store"}
    for required in (
        "add-while-processing-pushes",
        "done-forgets-requeue",
        "later-add-after-wins",
        "forget-does-not-reset",
        "limiter-without-cap",
        "get-keeps-dirty",
        "dirty-cleared-at-done",
        "shutdown-discards-queue",
        "replace-no-queued-tombstones",
        "dedup-merges-everything",
        "delta-fifo-queues-unknown-delete",
        "ring-grows-out-of-order",  # needs three items queued at once
        "update-drops-shared-index-value",  # needs an object with two index values
        "informer-relist-as-resync",  # needs handlers with their own resync periods
        "replace-first-duplicate-wins",  # needs a key listed twice
    ):
        assert required in BUGS, required


#: Bugs only the spec-driven walks reach (tests/test_spec_driven.py checks those).
SEARCHABLE = sorted(name for name, bug in BUGS.items() if bug.found_by == "search")
#: Bugs only unusual inputs show (``--inputs any``): each needs a list naming one key
#: twice, which no API server sends (docs/conformance.md, "Realistic inputs").
UNUSUAL_INPUTS = sorted(name for name, bug in BUGS.items() if bug.inputs == "any")


def test_the_duplicate_key_bugs_need_unusual_inputs() -> None:
    assert UNUSUAL_INPUTS == ["replace-first-duplicate-wins", "sync-counts-entries"]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", SEARCHABLE)
def test_bug_is_caught(name: str) -> None:
    bug = BUGS[name]
    command = [sys.executable, str(BROKEN / "adapter.py"), "--bug", name]
    failure = None
    cut_short: list[int] = []
    for seed in range(1, 9):
        config = Config(
            command=command,
            # The example count decides; the time budget is only a backstop.
            max_examples=400,
            budget=120.0,
            shrink_budget=10.0,
            seed=seed,
            quick_shrink=True,
            progress=False,
            inputs=bug.inputs,
            max_findings=1,  # the first finding, as before runs collected several
        )
        ctx = RunContext(config, io.StringIO())
        try:
            ctx.start_adapter()
            result = run_component(ctx, bug.component, config.budget)
            failure = result.failure
            if failure is None and result.examples < config.max_examples:
                cut_short.append(seed)
            if failure is not None:
                report = format_failure(failure, config)
                assert failure.kind in ("disagreement", "invariant"), report
                assert len(failure.steps) <= 12, report
                assert confirm_replay(ctx, failure).endswith("reproduces"), report
                break
        finally:
            ctx.close()
    if failure is None and cut_short:
        pytest.fail(
            f"inconclusive: seeds {cut_short} ran out of time before 400 examples "
            f"and no seed caught {name}"
        )
    assert failure is not None, f"{name} was not caught with seeds 1-8 (400 examples each)"
