"""Every distinct finding of a run, each shrunk on its own (issue 25, item 1).

A run keeps searching after a finding: each search sets aside the examples that fail with
a signature already found, so a broken adapter with two bugs in different parts gives
findings from both; ``--max-findings 1`` stops at the first; ``--known`` marks a finding
without stopping the search; ``--save`` writes every finding to one file and ``--replay``
replays each.
"""

from __future__ import annotations

import io
import itertools
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from conform_helpers import run_conform

from refimpl.cli import main
from refimpl.conformance.search.config import (
    EXIT_DISAGREE,
    EXIT_USAGE,
    ComponentResult,
    Config,
    Mismatch,
)
from refimpl.conformance.search.report import finding_header
from refimpl.conformance.search.run import run_component, summary_line
from refimpl.conformance.search.session import SET_ASIDE, Example, RunContext

BROKEN = str(Path(__file__).resolve().parent.parent / "adapters" / "broken" / "adapter.py")
#: Two informer bugs in different parts: the handlers run before the cache is written
#: (INF-1), and the reflector re-watches after a 410 instead of relisting (REF-3).
TWO_BUGS = ["informer-handler-before-store", "informer-rewatch-after-410"]
#: The settings of the two-bug run (seed 1: a finding of each bug within five).
SETTINGS: dict[str, Any] = {
    "components": ["informer"],
    "budget": 10.0,
    "shrink_budget": 2.0,
    "seed": 1,
    "timeout": 2.0,
}
HEADER = re.compile(r"^finding (\d+) of (\d+): (\S+)", re.MULTILINE)
#: SETTINGS for run_component (which takes the component itself).
_TWO = {k: v for k, v in SETTINGS.items() if k != "components"}


def broken(*bugs: str) -> list[str]:
    return [sys.executable, BROKEN, *(arg for bug in bugs for arg in ("--bug", bug))]


@pytest.fixture(scope="module")
def two_bug_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Path]:
    """One run against the adapter with both bugs, its findings saved."""
    saved = tmp_path_factory.mktemp("findings") / "findings.jsonl"
    status, text = run_conform(broken(*TWO_BUGS), save=str(saved), **SETTINGS)
    return status, text, saved


def saved_headers(path: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [line for line in lines if "conform_trace" in line]


@pytest.mark.timeout(120)
def test_two_bugs_give_distinct_findings_each_shrunk(two_bug_run: tuple[int, str, Path]) -> None:
    status, text, saved = two_bug_run
    assert status == EXIT_DISAGREE, text
    found = HEADER.findall(text)
    signatures = [signature for _, _, signature in found]
    assert len(signatures) >= 2, text
    assert len(set(signatures)) == len(signatures), signatures  # none reported twice
    assert f"{len(found)} findings, shrunk to" in text, text
    headers = saved_headers(saved)
    assert [h["signature"] for h in headers] == signatures
    lines = saved.read_text().splitlines()
    starts = [n for n, line in enumerate(lines) if "conform_trace" in line] + [len(lines)]
    lengths = [b - a - 1 for a, b in itertools.pairwise(starts)]
    assert all(2 <= n <= 12 for n in lengths), lengths
    assert text.count("replay on a fresh adapter: reproduces") == len(found), text


@pytest.mark.timeout(120)
def test_the_findings_come_from_both_bugs(two_bug_run: tuple[int, str, Path]) -> None:
    # Each bug alone fails some saved trace, and no trace fails without any bug.
    _, _, saved = two_bug_run
    for bug in TWO_BUGS:
        status, replayed = run_conform(broken(bug), replay=str(saved), timeout=2.0)
        assert status == EXIT_DISAGREE, (bug, replayed)
    reference = [sys.executable, "-m", "refimpl.conformance.reference.adapter"]
    status, replayed = run_conform(reference, replay=str(saved))
    assert status == 0, replayed


@pytest.mark.timeout(120)
def test_replay_replays_every_saved_finding(two_bug_run: tuple[int, str, Path]) -> None:
    _, _, saved = two_bug_run
    count = len(saved_headers(saved))
    status, text = run_conform(broken(*TWO_BUGS), replay=str(saved), timeout=2.0)
    assert status == EXIT_DISAGREE, text
    assert text.count("FAIL informer:") == count, text
    assert f"trace {count} of {count} (informer):" in text, text
    assert "saved as" not in text, text  # each fails as the finding it was saved as


def test_an_old_single_trace_file_still_replays(tmp_path: Path) -> None:
    old = tmp_path / "old.jsonl"
    header = {"conform_trace": 1, "component": "queue", "seed": 1, "kind": "disagreement"}
    requests = [
        {"op": "create", "instance": "x", "component": "queue", "options": {}},
        {"op": "call", "instance": "x", "method": "add", "args": {"item": "a"}},
        {"op": "call", "instance": "x", "method": "get_nowait", "args": {}},
        {"op": "call", "instance": "x", "method": "len", "args": {}},
    ]
    old.write_text("\n".join(json.dumps(line) for line in [header, *requests]) + "\n")
    status, text = run_conform(broken("len-counts-processing"), replay=str(old))
    assert status == EXIT_DISAGREE and "trace 1 of" not in text, text
    assert "<== differs" in text, text


def search(command: list[str], component: str, **settings: Any) -> ComponentResult:
    """``run_component`` on ``component`` of ``command`` with ``settings``."""
    config = Config(command=command, progress=False, **settings)
    ctx = RunContext(config, io.StringIO())
    try:
        ctx.start_adapter()
        return run_component(ctx, component, config.budget)
    finally:
        ctx.close()


@pytest.mark.timeout(120)
def test_max_findings_1_stops_at_the_first() -> None:
    result = search(broken(*TWO_BUGS), "informer", max_findings=1, **_TWO)
    assert len(result.findings) == 1 and result.failure is result.findings[0]
    assert result.status == "fail"


def _queue_context(*bugs: str) -> RunContext:
    config = Config(command=broken(*bugs), progress=False, seed=1)
    ctx = RunContext(config, io.StringIO())
    ctx.start_adapter()
    ctx.start_component("queue", 10.0)
    return ctx


LEN_AFTER_GET = [
    {"op": "create", "instance": "x", "component": "queue", "options": {}},
    {"op": "call", "instance": "x", "method": "add", "args": {"item": "a"}},
    {"op": "call", "instance": "x", "method": "get_nowait", "args": {}},
    {"op": "call", "instance": "x", "method": "len", "args": {}},
]


def test_an_example_failing_with_a_found_signature_is_set_aside() -> None:
    ctx = _queue_context("len-counts-processing")
    try:
        ctx.found = {"queue/differs/len"}
        example = ctx.begin_example("queue")
        answers = [example.exchange(r) for r in LEN_AFTER_GET]
        assert answers[-1] == SET_ASIDE and ctx.best is None and not ctx.pending
        steps = ctx.steps
        assert example.exchange(LEN_AFTER_GET[-1]) == SET_ASIDE
        assert ctx.steps == steps  # nothing more reached the adapter
        # A replay (the minimizer's, --replay) is never set aside.
        ctx.fresh_adapter("queue")
        plain = Example(ctx, "queue")
        with pytest.raises(Mismatch):
            for request in LEN_AFTER_GET:
                plain.exchange(request)
        assert ctx.best is not None and ctx.best.signature == "queue/differs/len"
    finally:
        ctx.close()


def test_while_shrinking_one_finding_another_waits_in_pending() -> None:
    ctx = _queue_context("len-counts-processing")
    try:
        ctx.found = set()
        sought = ctx.begin_example("queue")
        for request in LEN_AFTER_GET[:3]:
            sought.exchange(request)
        assert ctx.best is None
        ctx.record(sought, "invariant", "QUEUE-1 made up for the test", None)
        assert ctx.best is not None and ctx.best.signature == "queue/QUEUE-1/get_nowait"
        other = ctx.begin_example("queue")
        assert [other.exchange(r) for r in LEN_AFTER_GET][-1] == SET_ASIDE
        assert ctx.best.signature == "queue/QUEUE-1/get_nowait"
        assert list(ctx.pending) == ["queue/differs/len"]
    finally:
        ctx.close()


def _search_queue(**settings: Any) -> ComponentResult:
    command = broken("len-counts-processing")
    return search(command, "queue", budget=3.0, seed=1, quick_shrink=True, **settings)


@pytest.mark.timeout(120)
def test_known_marks_a_finding_and_the_search_goes_on() -> None:
    signature = _search_queue(max_findings=1).findings[0].signature
    result = _search_queue(known={signature: "acknowledged upstream"})
    first = result.findings[0]
    assert first.signature == signature and first.known == "acknowledged upstream"
    assert "(1 known)" in summary_line(result)
    assert f"{signature} (known: acknowledged upstream)" in finding_header(first, 1, 1)
    # The search went on after it (a known finding ends nothing).
    assert result.examples > first.example + 10, (result.examples, first.example)


@pytest.mark.timeout(120)
def test_known_findings_do_not_count_toward_max_findings() -> None:
    """Two informer bugs, the first finding acknowledged, one finding allowed: the run
    reports the known one and goes on to a new one."""
    first = search(broken(*TWO_BUGS), "informer", max_findings=1, **_TWO).findings
    assert len(first) == 1
    known = {first[0].signature: "acknowledged"}
    findings = search(broken(*TWO_BUGS), "informer", max_findings=1, known=known, **_TWO).findings
    assert [f.known for f in findings] == ["acknowledged", None], findings
    assert findings[1].signature != first[0].signature


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--max-findings", "0"], "--max-findings"),
        (["--max-findings", "x"], "--max-findings"),
        (["--known", "no-signature"], "--known"),
        (["--known", "queue/differs/len="], "--known"),
    ],
)
def test_bad_findings_options_are_usage_errors(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        status = main(["conform", *argv, "--", "true"])
    except SystemExit as exc:
        status = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert status == EXIT_USAGE, err
    assert err.startswith("usage: refimpl conform "), err
    assert says in err.strip().splitlines()[-1], err
    assert out == ""
