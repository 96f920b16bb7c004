"""A violating simulation is reported with its shrunk choices (issue 13, item 6).

``refimpl sim run`` used to give a violation only as the seed's replay: hundreds of
steps. Now it replays edited runs (refimpl.sim.shrink) and also prints the smallest
choice list and step count found that still violate the same property. Seeds are fixed
(found by hand: replicaset-nowait --fifo delta violates empty-cache-delete for about 96%
of seeds, ``sim list`` says so; seed 1 is one of them).
"""

from __future__ import annotations

import json
import subprocess

import pytest
from cli_helpers import refimpl

from refimpl.sim import Simulator, TapeChooser
from refimpl.sim.choosers import Chooser
from refimpl.sim.result import HOLDS, VIOLATED
from refimpl.sim.shrink import first_property, shrink_run


def nowait(chooser: Chooser | None = None, seed: int | None = None) -> Simulator:
    return Simulator("replicaset-nowait", fifo_mode="delta", chooser=chooser, seed=seed)


def test_shrinks_to_a_short_run_that_still_violates() -> None:
    original = nowait(seed=1).run()
    assert original.verdict == VIOLATED and original.of("empty-cache-delete")
    shrunk = shrink_run(nowait, original, max_runs=1000)
    assert shrunk.prop == "empty-cache-delete" and not shrunk.exhausted
    assert shrunk.steps < original.steps and len(shrunk.choices) < len(original.choices) // 10
    # The shrunk list replays to the same kind of violation, from scratch.
    again = nowait(TapeChooser(shrunk.choices)).run(shrunk.steps)
    assert again.of("empty-cache-delete"), again.summary()
    assert again.violations == shrunk.result.violations
    # Deterministic: the same violation always shrinks to the same run.
    assert shrink_run(nowait, original, max_runs=1000) == shrunk


def test_a_spent_budget_is_reported_and_keeps_the_best_run_found() -> None:
    original = nowait(seed=1).run()
    shrunk = shrink_run(nowait, original, max_runs=5)
    assert shrunk.exhausted and shrunk.runs == 5
    assert "budget ran out" in shrunk.describe()
    again = nowait(TapeChooser(shrunk.choices)).run(shrunk.steps)
    assert again.of("empty-cache-delete")


def test_nothing_to_shrink_without_a_violation() -> None:
    holds = Simulator("informer", seed=1).run()
    assert holds.verdict == HOLDS
    with pytest.raises(ValueError, match="nothing to shrink"):
        first_property(holds)


def _sim(*args: str) -> subprocess.CompletedProcess[str]:
    return refimpl("sim", *args)


def test_cli_reports_the_shrunk_choices_and_their_replay_reproduces() -> None:
    done = _sim("run", "replicaset-nowait", "--fifo", "delta", "--seed", "1", "--json")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    shrunk = data["shrunk"]
    assert data["verdict"] == VIOLATED and shrunk["property"] == "empty-cache-delete"
    assert shrunk["steps"] < data["steps"]
    choices = ",".join(map(str, shrunk["choices"])) or "0"
    assert f"--choices {choices} --steps {shrunk['steps']} " in shrunk["replay"]
    assert "[empty-cache-delete]" in shrunk["violations"][0]
    replay = shrunk["replay"].split()
    assert replay[:3] == ["refimpl", "sim", "replay"]
    again = _sim(*replay[2:])
    assert again.returncode == 1 and "[empty-cache-delete]" in again.stdout, again.stdout

    text = _sim("run", "replicaset-nowait", "--fifo", "delta", "--seed", "1").stdout
    assert "shrunk: " in text and shrunk["replay"] in text

    unshrunk = _sim(
        "run", "replicaset-nowait", "--fifo", "delta", "--seed", "1", "--json", "--shrink-runs", "0"
    )
    assert unshrunk.returncode == 1 and json.loads(unshrunk.stdout)["shrunk"] is None
    holds = _sim("run", "informer", "--seed", "1", "--json")
    assert holds.returncode == 0 and json.loads(holds.stdout)["shrunk"] is None
