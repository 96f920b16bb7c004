"""``refimpl conform --wire``: the informer over HTTP against the harness's own server.

The reference's wire adapter (refimpl's informer over refimpl/wire/client.py) must pass;
each broken wire adapter (``--break``) must be reported with the ID of what it breaks;
a hung one makes the run inconclusive. Each run checks that the server and the watch
readers left no thread behind. Seeds are fixed; a plan is a function of its seed.
"""

from __future__ import annotations

import sys

import pytest

from refimpl.conformance.cli import main
from refimpl.conformance.wire.run import FAULTS, WireRun, plan, run_wire
from refimpl.usage import EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_USAGE

ADAPTER = [sys.executable, "-m", "refimpl.conformance.wire.adapter"]


def _run(seed: int, *flags: str, steps: int = 15, timeout: float = 5.0) -> tuple[int, str]:
    lines: list[str] = []
    rc = run_wire(WireRun([*ADAPTER, *flags], seed, steps, timeout), lines.append)
    assert all(len(line) <= 100 for line in lines), lines
    return rc, "\n".join(lines)


def _fault_free_seed_with_a_ghost(steps: int) -> int:
    """A seed whose plan has no fault (nothing makes the informer relist) and leaves a
    deleted object deleted: an informer that drops DELETED events keeps it forever."""
    for seed in range(1, 1000):
        steps_ = plan(seed, steps)
        if any("fault" in s for s in steps_):
            continue
        last = {s["name"]: s["write"] for s in steps_}
        if "delete" in last.values():
            return seed
    raise AssertionError("no such seed")


def test_a_plan_is_a_function_of_its_seed_and_writes_only_what_exists() -> None:
    assert plan(7, 40) == plan(7, 40)
    assert plan(7, 40) != plan(8, 40)
    present: set[str] = set()
    for step in plan(7, 200):
        if "fault" in step:
            assert step["fault"] in FAULTS
            continue
        assert (step["name"] in present) == (step["write"] != "create")
        (present.discard if step["write"] == "delete" else present.add)(step["name"])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_reference_wire_adapter_passes(seed: int, no_thread_left: None) -> None:
    rc, out = _run(seed)
    assert rc == EXIT_OK, out
    assert f"seed {seed}" in out and "PASS" in out


def test_a_handler_run_before_its_store_write_is_inf_1(no_thread_left: None) -> None:
    rc, out = _run(1, "--break", "notify-first")
    assert rc == EXIT_FAILED, out
    assert "INF-1 store before notify" in out


def test_an_informer_that_drops_deleted_events_never_converges_inf_3(no_thread_left: None) -> None:
    seed = _fault_free_seed_with_a_ghost(8)
    rc, out = _run(seed, "--break", "ignore-deleted", "--quiescence", "1", steps=8)
    assert rc == EXIT_FAILED, out
    assert "INF-3 convergence (liveness): after 1.0 s" in out
    assert "is a ghost" in out


def test_a_hung_adapter_is_inconclusive(no_thread_left: None) -> None:
    rc, out = _run(1, "--break", "hang", steps=3, timeout=1.0)
    assert rc == EXIT_INCONCLUSIVE, out
    assert "INCONCLUSIVE" in out and "PASS" not in out and "INF-" not in out


def test_an_adapter_without_wire_is_refused(no_thread_left: None) -> None:
    lines: list[str] = []
    command = [sys.executable, "-m", "refimpl.conformance.reference.adapter"]
    rc = run_wire(WireRun(command, 1, 3), lines.append)
    assert rc == 2 and '"wire": true' in lines[-1]


def test_the_command_line_runs_the_wire_mode(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["--wire", "--component", "informer", "--seed", "2", "--steps", "5", "--", *ADAPTER])
    assert rc == EXIT_OK, capsys.readouterr()
    assert capsys.readouterr().out.startswith("wire: seed 2: ")


@pytest.mark.parametrize(
    "flags", [["--component", "queue"], ["--from-spec", "Informer"], ["--replay", __file__]]
)
def test_wire_with_what_does_not_apply_is_a_usage_error(flags: list[str]) -> None:
    assert main(["--wire", *flags, "--", *ADAPTER]) == EXIT_USAGE
