"""A walk's verdict says how much of the graph it drove (issue #30): the summary names
the share of the graph's edges driven, and a pass on less than half of the graph says
so in its verdict line, with what the rest needs. ``SpecRun.verdict`` (what
``refimpl peers`` pins) stays the bare word.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from conform_helpers import fake

from refimpl.conformance.walks.report import Coverage, Deviation, SpecRun
from refimpl.conformance.walks.run import run_from_spec

PINS = json.loads((Path(__file__).parent / "pins" / "walks.json").read_text())["models"]


def _coverage(
    covered: int,
    edges: int,
    fragment: str = "drivable",
    fuller: tuple[tuple[str, ...], int] | None = None,
) -> Coverage:
    cov = Coverage("M", 10, edges, {}, drivable=covered, covered=covered, fragment=fragment)
    cov.fuller = fuller
    return cov


def test_half_the_graph_or_more_is_a_plain_pass() -> None:
    run = SpecRun(_coverage(50, 100))
    assert run.verdict == "pass" and run.verdict_line == "PASS"
    assert "(100 in the graph: 50% of them driven)" in run.coverage.summary()


def test_less_than_half_says_which_fragment_and_what_the_rest_needs() -> None:
    run = SpecRun(_coverage(6, 100, fragment="eager", fuller=(("pause", "resume"), 28)))
    assert run.verdict == "pass"
    assert run.verdict_line == (
        "PASS on the eager fragment: 6% of the graph's edges; the rest needs "
        "pause/resume (which would make 28% drivable) and steps the protocol cannot drive"
    )
    alone = SpecRun(_coverage(1, 1000))
    assert alone.verdict_line == (
        "PASS on the drivable fragment: under 1% of the graph's edges; the rest cannot be "
        "driven through the protocol (not driven, below)"
    )


def test_a_deviation_is_not_qualified() -> None:
    deviation = Deviation(("A",), {}, (None,), 1, ())
    run = SpecRun(_coverage(6, 100), deviation=deviation)
    assert run.verdict_line == "DEVIATION"


def _drivable(pins: dict[str, object], edges: int) -> int:
    undriven = pins["undriven"]
    assert isinstance(undriven, dict)
    unreachable = pins["unreachable"]
    assert isinstance(unreachable, int)
    return edges - sum(undriven.values()) - unreachable


def test_an_informer_walk_without_pause_says_it_covered_the_eager_fragment() -> None:
    """The Informer graph driven by an adapter without pause: a pass on the eager
    fragment, and pause/resume named with the share they would make drivable (both
    shares from the pinned walks of the reference, eager and paused)."""
    out, err = io.StringIO(), io.StringIO()
    status = run_from_spec(["Informer"], fake("no-pause:hello"), out=out, err=err)
    assert status == 0, out.getvalue() + err.getvalue()
    summary = out.getvalue().splitlines()
    edges = int(summary[1].split("(")[1].split()[0])
    eager = _drivable(PINS["Informer"]["walk"], edges)
    paused = _drivable(PINS["Informer"]["paused"], edges)
    assert 2 * paused < edges
    assert summary[0] == (
        f"Informer         PASS on the eager fragment: {eager / edges:.0%} of the graph's "
        f"edges; the rest needs pause/resume (which would make {paused / edges:.0%} "
        "drivable) and steps the protocol cannot drive"
    )
    assert f"covered {eager} of {eager} drivable edges" in summary[1]
