"""The kept TLC counterexample for the edge-triggered controller (spec/counterexamples/).

spec/EdgeVsLevel.tla's edge-triggered handler is *expected* to fail ``Converges``; the
lasso TLC found is committed and explained in docs/01-level-not-edge.md. Without TLC
these tests check that the kept trace still says what the docs say (one lost
notification, then a loop in which actual never reaches desired). With TLC
(``TLA2TOOLS_JAR``) the model is re-run and must produce the same trace.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from refimpl.tla.cli import check
from refimpl.tla.manifest import load_manifest
from refimpl.tla.output import Status, TlcResult, TraceStep, parse_output
from refimpl.tla.runner import tlc_unavailable_reason

SPEC = Path(__file__).resolve().parents[1] / "spec"
KEPT = SPEC / "counterexamples" / "MCEdgeVsLevelEdge.txt"


def kept() -> TlcResult:
    return parse_output(KEPT.read_text(), 13)


def loop(trace: tuple[TraceStep, ...]) -> list[TraceStep]:
    back_to = trace[-1].back_to
    assert back_to is not None, "a liveness counterexample ends in a loop"
    return [s for s in trace if s.number >= back_to and s.state]


def test_kept_counterexample_is_a_convergence_failure() -> None:
    result = kept()
    assert result.status is Status.PROPERTY_VIOLATED
    assert result.violated == "Converges"


def test_one_lost_notification_and_the_controller_is_wrong_forever() -> None:
    trace = kept().trace
    actions = [s.action for s in trace if s.action]
    assert actions.count("Lose") == 1, actions
    lasso = loop(trace)
    assert lasso, "the loop has states"
    # In the loop the user has stopped changing things, yet actual never equals desired:
    # resyncs carry old == new, so an edge-triggered handler computes a delta of zero.
    for step in lasso:
        assert step.state["actual"] != step.state["desired"], step
        assert step.state["desired"] == lasso[0].state["desired"]


_NO_TLC = tlc_unavailable_reason()


@pytest.mark.tlc
@pytest.mark.timeout(300)
@pytest.mark.skipif(
    tlc_unavailable_reason() is not None, reason=f"TLC not available: {tlc_unavailable_reason()}"
)
def test_tlc_still_finds_the_kept_counterexample() -> None:
    model = next(m for m in load_manifest(SPEC) if m.name == "EdgeVsLevelEdge")
    run, problems = check(SPEC, model, workers="1")
    assert not problems, problems
    fresh = [(s.action, dict(s.state), s.back_to) for s in run.result.trace]
    assert fresh == [(s.action, dict(s.state), s.back_to) for s in kept().trace], (
        "TLC now finds a different counterexample: regenerate "
        "spec/counterexamples/MCEdgeVsLevelEdge.txt and re-read docs/01"
    )
