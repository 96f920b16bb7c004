"""The simulator's machinery: determinism, replay, traces, choosers, wiring and the CLI.

The properties the simulator checks are in test_sim_properties.py (seeded, many runs)
and test_informer_properties.py (Hypothesis chooses the interleaving).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refimpl.apiserver import ApiServerCore, ApiServerListerWatcher
from refimpl.cache.delta_fifo import DeltaFIFOCore
from refimpl.cache.processor import AddNotification
from refimpl.cache.real_fifo import RealFIFOCore
from refimpl.cache.shared_informer import FifoMode
from refimpl.cli import main
from refimpl.clock import FakeClock
from refimpl.meta import Object
from refimpl.sim import (
    SCENARIOS,
    DataChooser,
    FirstChooser,
    SeededChooser,
    SimInformer,
    Simulator,
    TapeChooser,
    get_scenario,
    parse_faults,
    parse_tape,
)
from refimpl.sim.monitors import PROPERTIES, Violations

MODES = [str(m) for m in FifoMode]
ROOT = Path(__file__).resolve().parent.parent


def traced(scenario: str, **kwargs: object) -> tuple[list[str], list[int]]:
    buf = io.StringIO()
    sim = Simulator(scenario, trace=buf, **kwargs)  # type: ignore[arg-type]
    result = sim.run(150)
    return buf.getvalue().splitlines(), result.choices


# -- determinism and replay ------------------------------------------------------------------


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_same_seed_same_trace_step_for_step(scenario: str) -> None:
    a, choices_a = traced(scenario, seed=11, fifo_mode="delta")
    b, choices_b = traced(scenario, seed=11, fifo_mode="delta")
    assert a == b, f"seed 11 of {scenario} is not deterministic"
    assert choices_a == choices_b
    c, _ = traced(scenario, seed=12, fifo_mode="delta")
    assert a != c, "different seeds should give different runs"


@pytest.mark.parametrize("mode", MODES)
def test_recorded_choices_replay_the_run_exactly(mode: str) -> None:
    a, choices = traced("replicaset", seed=5, fifo_mode=mode)
    b, again = traced("replicaset", chooser=TapeChooser(choices), fifo_mode=mode)
    assert a == b
    assert again == choices


_DIGEST = """
import hashlib, io, sys
from refimpl.sim import Simulator
buf = io.StringIO()
Simulator("replicaset", seed=3, fifo_mode="delta", trace=buf).run(200)
print(hashlib.sha256(buf.getvalue().encode()).hexdigest())
"""


def test_runs_do_not_depend_on_hash_randomisation() -> None:
    digests = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", _DIGEST],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=120,
            check=True,
        )
        digests.add(out.stdout.strip())
    buf = io.StringIO()
    Simulator("replicaset", seed=3, fifo_mode="delta", trace=buf).run(200)
    digests.add(hashlib.sha256(buf.getvalue().encode()).hexdigest())
    assert len(digests) == 1, "string hashing changed the run (set iteration order leaked)"


def test_replay_command_names_everything_that_shapes_the_run() -> None:
    r = Simulator("informer", seed=9, fifo_mode="real", faults="none", objects=6).run(20)
    assert r.replay == (
        "refimpl sim replay informer --seed 9 --steps 20 --fifo real --faults none --objects 6"
    )
    tape = Simulator("informer", chooser=TapeChooser([1, 0, 2]), faults="none").run(3)
    assert "--choices 1,0,2" in tape.replay and "--seed" not in tape.replay
    assert "--faults" not in Simulator("replicaset", seed=1).run(1).replay
    unbatched = Simulator("replicaset", seed=1, fifo_mode="real", batch=False).run(1)
    assert unbatched.replay.endswith("--fifo real --no-batch")
    drained = Simulator("informer", seed=2, drain_chooser=FirstChooser()).run(10)
    assert "--choices" in drained.replay, "a custom drain policy replays from the tape"


# -- traces ------------------------------------------------------------------------------------


def test_trace_lines_are_the_abstract_state_after_each_step() -> None:
    lines, _ = traced("replicaset", seed=2, fifo_mode="real-atomic")
    states = [json.loads(line) for line in lines]
    assert [s["step"] for s in states] == list(range(1, len(states) + 1))
    wanted = {
        "server",
        "serverRV",
        "compactedRV",
        "watch",
        "reflector",
        "fifo",
        "store",
        "synced",
        "pending",
        "queue",
        "dirty",
        "processing",
        "waiting",
        "workers",
        "t",
        "action",
        "generation",
    }
    for s in states:
        assert wanted <= s.keys()
        assert set(s["queue"]) <= set(s["dirty"])  # the workqueue's own invariant
        assert not set(s["queue"]) & set(s["processing"])
        assert all(rv <= s["serverRV"] for rv in s["store"].values())
    times = [s["t"] for s in states]
    assert times == sorted(times), "virtual time never goes back"
    # Once a watch event is on the wire, it is read by a reflector step, never skipped.
    assert any(s["action"] == "deliver" for s in states)
    assert any(s["reflector"]["phase"] == "watch" for s in states)


def test_store_in_the_trace_catches_up_with_the_server() -> None:
    buf = io.StringIO()
    result = Simulator("informer", seed=4, trace=buf, faults="none").run(100)
    last = json.loads(buf.getvalue().splitlines()[-1])
    assert result.converged
    assert last["store"] == last["server"]


# -- choosers -------------------------------------------------------------------------------


def test_seeded_chooser_is_a_pure_function_of_its_seed() -> None:
    a = [SeededChooser(7).choose(10, [1] * 10) for _ in range(3)]
    one = SeededChooser(7)
    b = [one.choose(5) for _ in range(50)]
    other = SeededChooser(7)
    assert b == [other.choose(5) for _ in range(50)]
    assert len(set(a)) == 1  # fresh chooser, same first answer


def test_seeded_chooser_follows_the_weights() -> None:
    c = SeededChooser(1)
    picks = [c.choose(3, [1, 0, 99]) for _ in range(2000)]
    assert picks.count(1) == 0, "a zero weight is never chosen"
    assert picks.count(2) > 1800


def test_tape_chooser_wraps_then_answers_zero() -> None:
    t = TapeChooser([5, 1])
    assert [t.choose(3), t.choose(3), t.choose(3), t.choose(4)] == [2, 1, 0, 0]
    assert FirstChooser().choose(9) == 0
    with pytest.raises(ValueError, match="non-negative"):
        TapeChooser([-1])
    with pytest.raises(ValueError, match="at least one option"):
        TapeChooser([]).choose(0)
    with pytest.raises(TypeError, match="seed must be an int"):
        SeededChooser("1")  # type: ignore[arg-type]


def test_parse_tape() -> None:
    assert parse_tape("0, 3,1 2") == [0, 3, 1, 2]
    assert parse_tape("") == []
    with pytest.raises(ValueError, match="comma-separated integers"):
        parse_tape("1,x")
    with pytest.raises(ValueError, match=">= 0"):
        parse_tape("1,-2")


@settings(max_examples=30, deadline=None)
@given(st.data(), st.lists(st.integers(1, 50), min_size=1, max_size=6))
def test_data_chooser_answers_in_range_and_respects_zero_weights(
    data: st.DataObject, weights: list[int]
) -> None:
    c = DataChooser(data)
    n = len(weights)
    assert 0 <= c.choose(n) < n
    masked = [0, *weights]
    assert 1 <= c.choose(n + 1, masked) <= n


# -- scenarios, faults, misuse ------------------------------------------------------------------


def test_parse_faults() -> None:
    s = get_scenario("replicaset")
    assert parse_faults("none", s) == dict.fromkeys(parse_faults(None, s), 0)
    heavy = parse_faults("heavy", s)
    assert heavy["crash"] == 5 * s.faults["crash"]
    custom = parse_faults("crash=7", s)
    assert custom["crash"] == 7 and custom["close_watch"] == s.faults["close_watch"]
    only = parse_faults("only:compact=2", s)
    assert only["compact"] == 2 and sum(only.values()) == 2
    for bad, message in [
        ("nosuch=1", "unknown fault"),
        ("crash", "NAME=WEIGHT"),
        ("crash=x", "integer"),
        ("crash=-1", "non-negative"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_faults(bad, s)


def test_misuse_is_reported_clearly() -> None:
    with pytest.raises(ValueError, match="unknown scenario 'nope'"):
        Simulator("nope")
    with pytest.raises(ValueError, match="seed or a chooser"):
        Simulator("informer", seed=1, chooser=FirstChooser())
    with pytest.raises(ValueError, match="objects must be >= 1"):
        Simulator("informer", objects=0)
    with pytest.raises(ValueError, match="steps must be >= 0"):
        Simulator("informer").run(-1)
    with pytest.raises(ValueError, match="max_drain_time"):
        Simulator("informer", max_drain_time=-1.0)
    with pytest.raises(ValueError, match="not a valid FifoMode"):
        Simulator("informer", fifo_mode="fast")
    with pytest.raises(ValueError, match="unknown property"):
        Violations().add("nope", "x")


def test_without_faults_nothing_is_injected_and_everything_converges() -> None:
    for name in SCENARIOS:
        r = Simulator(name, seed=1, faults="none").run(120)
        assert not any(r.faults_injected.values())
        assert r.ok and r.converged and r.quiescent, r.summary()


def test_every_property_has_a_description() -> None:
    assert all(PROPERTIES.values())
    assert {"exclusive-workers", "no-lost-delete", "converge"} <= PROPERTIES.keys()


# -- SimInformer wiring ---------------------------------------------------------------------------


def _informer(mode: str, **kwargs: object) -> tuple[SimInformer, ApiServerCore]:
    server = ApiServerCore()
    for name in ("a", "b"):
        server.create(Object(name=name, namespace="ns"))
    inf = SimInformer(ApiServerListerWatcher(server), clock=FakeClock(), fifo_mode=mode, **kwargs)  # type: ignore[arg-type]
    return inf, server


def test_fifo_per_mode_matches_the_threaded_informer() -> None:
    atomic, _ = _informer("real-atomic")
    real, _ = _informer("real")
    delta, _ = _informer("delta")
    assert isinstance(atomic.fifo, RealFIFOCore) and atomic.fifo.atomic_events
    assert isinstance(real.fifo, RealFIFOCore) and real.fifo.known_objects is real.indexer
    assert isinstance(delta.fifo, DeltaFIFOCore) and delta.fifo.emit_delta_type_replaced


@pytest.mark.parametrize("mode", MODES)
def test_sim_informer_lists_syncs_and_notifies_after_the_store(mode: str) -> None:
    inf, server = _informer(mode)
    seen: list[tuple[str, bool]] = []

    class Handler:
        def on_add(self, obj: object, initial: bool) -> None:
            assert isinstance(obj, Object)
            _, exists = inf.indexer.get_by_key(f"ns/{obj.name}")
            seen.append((obj.name, exists))

        def on_update(self, old: object, new: object) -> None:
            pass

        def on_delete(self, obj: object) -> None:
            pass

    listener = inf.add_event_handler(Handler())
    inf.start()
    assert inf.reflector_phase() == "start" and inf.reflector_ready()
    inf.step_reflector()  # lists and opens the watch
    assert inf.reflector_phase() == "watch" and not inf.has_synced()
    while inf.can_pop():
        inf.pop()
    assert inf.has_synced()
    assert inf.store_state().keys() == {"ns/a", "ns/b"}
    while listener.dispatch_one():
        pass
    assert seen == [("a", True), ("b", True)]
    server.create(Object(name="c", namespace="ns"))
    watch = inf.current_watch()
    assert watch is not None and inf.reflector_ready()
    inf.step_reflector()
    inf.pop()
    late = inf.add_event_handler(Handler())
    assert [n.new_obj.name for n in late.pending if isinstance(n, AddNotification)] == [
        "a",
        "b",
        "c",
    ]
    inf.stop()
    assert watch.stopped and not inf.reflector_ready()


def test_sim_informer_resync_reaches_handlers() -> None:
    inf, _ = _informer("real-atomic", resync_period=10.0)
    updates: list[str] = []

    class Handler:
        def on_add(self, obj: object, initial: bool) -> None:
            pass

        def on_update(self, old: object, new: object) -> None:
            assert isinstance(new, Object)
            updates.append(new.name)

        def on_delete(self, obj: object) -> None:
            pass

    listener = inf.add_event_handler(Handler())
    inf.start()
    inf.step_reflector()
    inf.pop()
    assert inf.next_deadline() == 10.0
    inf.clock.set_time(10.0)
    assert inf.reflector_ready()
    inf.step_reflector()
    inf.pop()
    while listener.dispatch_one():
        pass
    assert updates == ["a", "b"]


# -- the command line ------------------------------------------------------------------------------


def _cli(argv: list[str]) -> int:
    return main(argv)


def test_cli_run_prints_timeline_and_summary(capsys: pytest.CaptureFixture[str]) -> None:
    rc = _cli(["sim", "run", "replicaset", "--seed", "3", "--steps", "80", "--fifo", "delta"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "reflector listed at rv" in out and "has_synced" in out
    assert "reconciles:" in out and "faults injected:" in out and "convergence:" in out
    assert "replay: refimpl sim replay replicaset --seed 3 --steps 80 --fifo delta" in out


def test_cli_run_exits_1_on_a_violation_and_replay_repeats_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["replicaset-nowait", "--fifo", "delta", "--faults", "none", "--steps", "5"]
    rc = _cli(["sim", "replay", *argv, "--choices", "0,0,1,1,1"])
    out = capsys.readouterr().out
    assert rc == 1 and "[empty-cache-delete]" in out
    tape = tmp_path / "tape.txt"
    tape.write_text("0 0 1 1 1\n")
    trace = tmp_path / "trace.jsonl"
    rc2 = _cli(
        [
            "sim",
            "replay",
            *argv,
            "--choices-file",
            str(tape),
            "--trace",
            str(trace),
            "--state-at",
            "3",
        ]
    )
    out2 = capsys.readouterr().out
    assert rc2 == 1
    timeline = [line for line in out.splitlines() if line[:6].strip().isdigit()]
    assert timeline == [line for line in out2.splitlines() if line[:6].strip().isdigit()]
    assert 'state after step 3: {"action": ' in out2
    assert len(trace.read_text().splitlines()) >= 5


def test_cli_json_list_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(["sim", "run", "informer", "--seed", "1", "--steps", "30", "--json"]) == 0
    data = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert data["steps"] == 30 and data["violations"] == [] and data["converged"]
    assert _cli(["sim", "run", "replicaset-nowait", "--fifo", "real", "--no-batch"]) == 1
    assert "--no-batch" in capsys.readouterr().out
    assert _cli(["sim", "list"]) == 0
    listing = capsys.readouterr().out
    assert all(name in listing for name in SCENARIOS) and "no-lost-delete" in listing
    # Usage errors: exit 3, the message on stderr (tests/test_cli_manners.py: all of them).
    for argv, message in [
        (["sim", "run", "nope"], "unknown scenario"),
        (["sim", "run", "informer", "--faults", "bogus=1"], "unknown fault"),
        (["sim", "run", "informer", "--steps", "-1"], "--steps must be"),
        (["sim"], "give an action"),
    ]:
        assert _cli(argv) == 3
        assert message in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        _cli(["sim", "replay", "informer"])  # needs --seed or --choices
    assert exc.value.code == 3
