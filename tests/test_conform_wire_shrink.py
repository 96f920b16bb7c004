"""Shrinking a wire finding's plan and plan files (refimpl/conformance/wire/shrink.py):
the delta debugging on a predicate with a known answer, a plan made valid after a cut,
plan files written and read back (and refused when malformed), and end to end: a broken
wire adapter's finding shrunk to a short plan that, saved and replayed, fails again."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from refimpl.conformance.cli import main
from refimpl.conformance.wire.run import WireRun, plan, run_wire
from refimpl.conformance.wire.shrink import read_plan, shrink_plan, valid, write_plan
from refimpl.usage import EXIT_FAILED, EXIT_OK, EXIT_USAGE

ADAPTER = [sys.executable, "-m", "refimpl.conformance.wire.adapter"]


def w(write: str, name: str) -> dict[str, Any]:
    return {"write": write, "name": name, "pause": 0.0}


CUT = {"fault": {"op": "watch_cut", "target": "open"}, "pause": 0.0}


def test_valid_drops_writes_the_shorter_plan_cannot_make() -> None:
    steps = [w("update", "a"), w("create", "a"), w("create", "a"), CUT, w("delete", "a")]
    assert valid(steps) == [w("create", "a"), CUT, w("delete", "a")]
    assert valid(plan(5, 40)) == plan(5, 40)


def test_shrinking_finds_the_two_steps_that_matter() -> None:
    """The predicate holds when the plan still creates b and has a cut: the shrinker
    must end with exactly those, within the budget, and say it ended by itself."""
    steps = plan(3, 30)
    steps.insert(7, CUT)
    assert any(s.get("name") == "b" and s.get("write") == "create" for s in steps)

    def holds(candidate: list[dict[str, Any]]) -> bool:
        return w("create", "b")["write"] in {
            s.get("write") for s in candidate if s.get("name") == "b"
        } and any("fault" in s and s["fault"]["op"] == "watch_cut" for s in candidate)

    shrunk = shrink_plan(steps, holds, budget=60)
    assert shrunk.finished and holds(shrunk.steps)
    assert len(shrunk.steps) == 2, shrunk.steps
    assert 0 < shrunk.tries < 200


def test_shrinking_stops_at_its_budget() -> None:
    ticks = iter(range(1000))
    shrunk = shrink_plan(plan(3, 30), lambda _c: False, budget=3, clock=lambda: next(ticks))
    assert not shrunk.finished and shrunk.tries <= 3 and len(shrunk.steps) == 30


def test_plan_files_round_trip_and_bad_ones_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    write_plan(str(path), 7, plan(7, 10))
    assert read_plan(str(path)) == plan(7, 10)
    bad = {
        "no header": [json.dumps(w("create", "a"))],
        "not a step": ['{"wire_plan": 1}', '{"pause": 0}'],
        "unknown name": ['{"wire_plan": 1}', json.dumps(w("create", "zz"))],
        "bad fault": ['{"wire_plan": 1}', json.dumps({"fault": {"op": "nope"}, "pause": 0})],
        "missing create": ['{"wire_plan": 1}', json.dumps(w("update", "a"))],
        "not json": ['{"wire_plan": 1}', "{"],
    }
    for why, lines in bad.items():
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        with pytest.raises(ValueError):
            read_plan(str(path))
        assert main(["--wire", "--replay", str(path), "--", *ADAPTER]) == EXIT_USAGE, why


def test_a_finding_is_shrunk_saved_and_replayed(tmp_path: Path, no_thread_left: None) -> None:
    """notify-first breaks INF-1 on the first add: its 30-step plan shrinks to at most
    two steps; the saved plan fails the broken adapter again and passes the reference's."""
    saved = tmp_path / "plan.jsonl"
    lines: list[str] = []
    settings = WireRun([*ADAPTER, "--break", "notify-first"], 1, shrink_budget=60, save=str(saved))
    assert run_wire(settings, lines.append) == EXIT_FAILED
    text = " ".join(" ".join(lines).split())
    assert "shrinking informer/INF-1/wire (30 steps" in text
    assert "ended by itself" in text
    steps = read_plan(str(saved))
    assert 1 <= len(steps) <= 2 and any(s.get("write") == "create" for s in steps)
    replayed = WireRun([*ADAPTER, "--break", "notify-first"], 1, plan=tuple(steps))
    assert run_wire(replayed, lines.append) == EXIT_FAILED
    assert run_wire(WireRun(ADAPTER, 1, plan=tuple(steps)), lines.append) == EXIT_OK


def test_no_shrink_reports_the_whole_plan(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--wire", "--seed", "1", "--no-shrink", "--client-go", "none"]
    rc = main([*argv, "--", *ADAPTER, "--break", "notify-first"])
    out = capsys.readouterr().out
    assert rc == EXIT_FAILED, out
    assert "shrinking" not in out and "the plan (30 steps):" in " ".join(out.split())
