"""A walk's verdict says how much of the graph it drove (issue #30): the summary names
the share of the graph's edges driven, and a pass on less than half of the graph says
so in its verdict line, with what the rest needs. ``SpecRun.verdict`` (what
``refimpl peers`` pins) stays the bare word. What the walks print fits 100 columns,
wrapped between words (issue 27).
"""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest
from conform_helpers import fake

from refimpl.conformance.walks.report import WIDTH, Coverage, Deviation, SpecRun
from refimpl.conformance.walks.run import run_from_spec

REFERENCE = [sys.executable, "-m", "refimpl.conformance.reference.adapter"]
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
    assert all(len(line) <= WIDTH for line in out.getvalue().splitlines()), out.getvalue()
    text = " ".join(out.getvalue().split())  # the report with its line breaks undone
    found = re.search(r"\((\d+) in the graph", text)
    assert found is not None, text
    edges = int(found[1])
    eager = _drivable(PINS["Informer"]["walk"], edges)
    paused = _drivable(PINS["Informer"]["paused"], edges)
    assert 2 * paused < edges
    assert text.startswith(
        f"Informer PASS on the eager fragment: {eager / edges:.0%} of the graph's "
        f"edges; the rest needs pause/resume (which would make {paused / edges:.0%} "
        "drivable) and steps the protocol cannot drive Informer: covered"
    )
    assert f"covered {eager} of {eager} drivable edges" in text


def _fits(text: str, unwrapped: str) -> None:
    """Every line of ``text`` fits :data:`WIDTH` columns, and it says all of ``unwrapped``."""
    assert all(len(line) <= WIDTH for line in text.splitlines()), text
    assert text.split() == unwrapped.split(), text


@pytest.mark.parametrize("model", sorted(PINS))
def test_every_verdict_and_summary_line_fits_100_columns(model: str) -> None:
    """The longest verdict and coverage lines a model's walk can print — its longest
    name, the largest counts of the biggest graph, every undriven reason the pinned walks
    give — stay within 100 columns, and say everything (issue 27: the informer's verdict
    line was 137 columns, its summary 170)."""
    big = 10**6 - 1
    for walk in PINS[model].values():
        assert isinstance(walk, dict)
        cov = Coverage(
            "RealFIFOAtomic",
            big,
            big,
            dict(walk["undriven"]),
            unreachable=big,
            drivable=big,
            covered=big // 3,
            states_visited=big,
            steps=big,
            requests=big,
            resets=big,
            open_order_steps=big,
            observed=big,
            seconds=99999.9,
            fragment="eager",
            fuller=(("pause", "resume"), big // 2),
        )
        run = SpecRun(cov)
        unwrapped = f"{model:<16} {run.verdict_line}"
        assert len(unwrapped) > WIDTH  # the case that used to overflow
        _fits(run.verdict_text(model), unwrapped)
        _fits(cov.summary(), "\n".join(cov._summary_lines()))
        cov.fuller = None
        _fits(run.verdict_text(model), f"{model:<16} {run.verdict_line}")


def test_the_reference_walks_print_lines_of_100_columns_at_most() -> None:
    """A real run: the work queue's walk of the reference adapter (its summary was 152
    columns)."""
    out, err = io.StringIO(), io.StringIO()
    status = run_from_spec(["WorkQueue"], REFERENCE, out=out, err=err)
    assert status == 0, out.getvalue() + err.getvalue()
    assert "WorkQueue        PASS" in out.getvalue()
    assert all(len(line) <= WIDTH for line in out.getvalue().splitlines()), out.getvalue()
