"""Trace validation against spec/Informer.tla and spec/InformerAtomic.tla
(refimpl/tla/trace_informer.py, the ``spec`` fields of refimpl/sim/spec_trace.py).

Without a jar: the ``spec`` fields are consistent (the history replays to the server)
and change no run; the mapping of informer-spec runs, the traces it cannot map, and
which scenarios it simulates. With a jar (``tlc``): informer-spec runs are behaviours
of both specs, and a delete that never reaches the handler's view, a skipped watch
event and a watch from the last list's rv are rejected at the first bad line.
"""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from trace_helpers import fifo_delta, fifo_obj, index_of_first, parse_generated, simulate, tlc

from refimpl.cache import reflector as reflector_module
from refimpl.cli import main as refimpl_main
from refimpl.sim import get_scenario
from refimpl.sim import informer as sim_informer
from refimpl.sim.simulator import Simulator
from refimpl.tla import trace as tr
from refimpl.tla.values import Fn, Value
from refimpl.tour.ch07_model_and_code import WatchFromListRV

#: (spec, FIFO mode) of the two informer specs.
INFORMER_MODES = [("Informer", "delta"), ("InformerAtomic", "real-atomic")]


def spec_run(
    seed: int, fifo: str, steps: int = 300, scenario: str = "informer-spec", **kwargs: Any
) -> list[dict[str, Any]]:
    out = io.StringIO()
    Simulator(scenario, seed=seed, fifo_mode=fifo, trace=out, **kwargs).run(steps)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _replay(history: list[list[Any]], where: str) -> dict[str, int]:
    """The live objects (key -> rv) after the writes; each write must fit the state
    before it (ADDED only for an absent key)."""
    objects: dict[str, int] = {}
    for kind, key, rv in history:
        assert (kind == "ADDED") == (key not in objects), f"{where}: {kind} {key}@{rv}"
        if kind == "DELETED":
            del objects[key]
        else:
            objects[key] = rv
    return objects


@pytest.mark.parametrize("fifo", ["delta", "real-atomic"])
@pytest.mark.parametrize("seed", [1, 2])
def test_spec_fields_are_consistent_with_the_rest_of_the_line(fifo: str, seed: int) -> None:
    """The ``spec`` fields against the fields that were there before: the history
    replays to the server's objects, one write per resourceVersion, append-only; the
    phase agrees with the reflector's park point and the watch; each h0 dispatch moves
    the recorded view and last rv exactly as the dispatched notification says."""
    lines = spec_run(seed, fifo)
    previous: dict[str, Any] | None = None
    for line in lines:
        where = f"seed {seed} {fifo} step {line['step']}"
        spec = line["spec"]
        history = spec["history"]
        assert [w[2] for w in history] == list(range(2, line["serverRV"] + 1)), where
        assert _replay(history, where) == line["server"], where
        assert 1 <= line["compactedRV"] <= line["serverRV"], where
        assert spec["listener"] == "h0" and spec["phase"] in ("list", "connect", "watch"), where
        watch = line["watch"]
        if spec["phase"] == "watch":
            assert line["reflector"]["phase"] == "watch" and watch is not None, where
        elif line["reflector"]["phase"] == "watch":  # "connect": a 410 answer not yet read
            events = [e[0] for e in watch["pending"] + watch["wire"]]
            assert events == ["ERROR"] and watch["from"] < line["compactedRV"], where
        else:
            assert spec["phase"] == {"backoff": "list", "start": "list"}.get(
                line["reflector"]["phase"], "connect"
            ), where
        assert set(spec["view"]) <= set(spec["lastRV"]), where
        if previous is not None and line["generation"] == previous["generation"]:
            assert history[: len(previous["spec"]["history"])] == previous["spec"]["history"]
            before, after = previous["pending"]["h0"], line["pending"]["h0"]
            if line["action"] == "dispatch" and after == before[1:]:
                kind, key, rv = before[0]
                assert spec["lastRV"][key] == rv, where
                assert spec["view"].get(key) == (None if kind.startswith("delete") else rv)
            else:
                assert (spec["view"], spec["lastRV"]) == (
                    previous["spec"]["view"],
                    previous["spec"]["lastRV"],
                ), where
        previous = line
    last = lines[-1]
    assert last["spec"]["view"] == last["store"] == last["server"], "converged, view too"


@pytest.mark.parametrize(
    ("scenario", "fifo"),
    [("informer-spec", "delta"), ("informer", "real-atomic"), ("replicaset", "real")],
)
def test_spec_fields_change_no_run(scenario: str, fifo: str) -> None:
    """The recorder forwards to h0's own handler (a controller's too) and nothing else
    changes: the same steps with and without the fields; without, no ``spec`` field,
    so traces of the other scenarios (and their kept counterexamples) are as before."""
    plain = spec_run(3, fifo, 150, scenario, spec_trace=False)
    fields = spec_run(3, fifo, 150, scenario, spec_trace=True)
    assert all("spec" in line for line in fields)
    # The code steps inside a simulator step are lines of their own ("sub") only here.
    assert not any("sub" in line for line in plain)
    steps = [line for line in fields if "sub" not in line]
    assert [{k: v for k, v in line.items() if k != "spec"} for line in steps] == plain
    if scenario != "informer-spec":
        assert not any("spec" in line for line in spec_run(3, fifo, 30, scenario))


#: The runs validated with TLC: (spec, FIFO mode, seed) of informer-spec, 300 steps.
INFORMER_RUNS = [
    ("Informer", "delta", 1),
    ("Informer", "delta", 4),
    ("InformerAtomic", "real-atomic", 1),
    ("InformerAtomic", "real-atomic", 17),
]


@pytest.mark.parametrize(("spec", "fifo"), INFORMER_MODES)
def test_validated_informer_runs_exercise_what_the_spec_models(spec: str, fifo: str) -> None:
    """Not vacuous: between them, the runs validated with TLC relist after a 410, back
    off after a failed watch request, compact, drop watches and crash."""
    moves: set[tuple[Value, Value, str]] = set()
    actions: set[str] = set()
    for _, _, seed in (r for r in INFORMER_RUNS if r[0] == spec):
        m = tr.map_trace(spec_run(seed, fifo), spec)
        moves |= {
            (a.state["reflector"], b.state["reflector"], "reset" if b.reset else b.action)
            for a, b in itertools.pairwise(m.lines)
        }
        actions |= {line.action for line in m.lines}
    assert ("connect", "list", "reflector") in moves, f"{spec}: no relist after a 410"
    assert ("list", "connect", "reflector") in moves, f"{spec}: no failed watch request"
    assert any(move[2] == "reset" for move in moves), f"{spec}: no crash"
    assert {"compact", "close_watch"} <= actions, spec


def test_informer_mapping_of_a_simulator_trace() -> None:
    m = tr.map_trace(spec_run(1, "delta"), "Informer")
    first = m.lines[0]
    # Three initial objects (rvs 1-3 in the spec), then the first list and its watch.
    assert first.state["history"] == tuple(
        Fn({"type": "ADDED", "key": f"default/obj-000{k}", "rv": n})
        for n, k in enumerate((0, 2, 4), 1)
    )
    assert first.acts == {"Write", "List", "Connect", "WatchEvent", "WatchDrop"}
    assert first.budget == 2 + 3
    assert (first.state["reflector"], first.state["lastSyncRV"]) == ("watch", 3)
    assert first.state["items"] == Fn(
        {
            f"default/obj-000{k}": (fifo_delta("Replaced", f"default/obj-000{k}", n),)
            for n, k in enumerate((0, 2, 4), 1)
        }
    )
    crash = next(line for line in m.lines if line.reset)
    assert (crash.acts, crash.budget) == (frozenset(), 0)
    assert {k: crash.state[k] for k in ("reflector", "lastSyncRV", "store", "view")} == {
        "reflector": "list",
        "lastSyncRV": 0,
        "store": Fn(),
        "view": Fn(),
    }
    history = m.lines[-1].state["history"]
    assert m.definitions["TraceHistoryData"] == history
    assert m.definitions["TraceKeys"] == {f"default/obj-000{k}" for k in range(6)}
    max_rv = m.definitions["TraceMaxRV"]
    assert isinstance(history, tuple) and isinstance(max_rv, int) and max_rv >= len(history)
    module, cfg = tr.trace_module(m)
    assert "EXTENDS InformerTrace" in module
    assert "    Orders <- [DeltaFIFO] TraceOrders" in cfg.splitlines()
    _, records = parse_generated(module)
    # The module holds the history as its length, a prefix of TraceHistoryData.
    assert [_field(r, "state", "history") for r in records] == [
        len(_as_tuple(line.state["history"])) for line in m.lines
    ]
    atomic = tr.map_trace(spec_run(1, "real-atomic"), "InformerAtomic")
    assert "    Orders <- [RealFIFO] TraceOrders" in tr.trace_module(atomic)[1].splitlines()
    assert atomic.lines[0].state["log"] == (
        Fn(
            {
                "type": "ReplacedAll",
                "obj": tuple(
                    fifo_obj(f"default/obj-000{k}", n) for n, k in ((1, 0), (2, 2), (3, 4))
                ),
            }
        ),
    )


def _field(value: Value, *path: str) -> Value:
    for name in path:
        assert isinstance(value, Fn), value
        value = value[name]
    return value


def _as_tuple(value: Value) -> tuple[Value, ...]:
    assert isinstance(value, tuple)
    return value


def _edit(
    lines: list[dict[str, Any]], n: int, edit: Callable[[dict[str, Any]], None]
) -> list[dict[str, Any]]:
    """A copy of the trace with line ``n`` (1-based) edited in place by ``edit``."""
    out: list[dict[str, Any]] = json.loads(json.dumps(lines))
    edit(out[n - 1])
    return out


def test_informer_traces_that_cannot_be_mapped() -> None:
    with pytest.raises(ValueError, match=r"trace line 1 \(step 1\): no spec fields.*spec_trace"):
        tr.map_trace(simulate("informer", 1, 20, "delta"), "Informer")
    delta = spec_run(1, "delta", 30)
    with pytest.raises(ValueError, match=r"code step 'popped' is not one InformerAtomic.*--fifo"):
        tr.map_trace(delta, "InformerAtomic")
    with pytest.raises(ValueError, match=r"not a RealFIFO log entry.*InformerAtomic\.tla --fifo"):
        tr.map_trace([line for line in delta if "sub" not in line], "InformerAtomic")
    atomic = spec_run(1, "real-atomic", 30)
    with pytest.raises(ValueError, match=r"code step 'taken' is not one Informer\.tla.*delta"):
        tr.map_trace(atomic, "Informer")
    with pytest.raises(ValueError, match=r"RealFIFO log.*Informer\.tla needs --fifo delta"):
        tr.map_trace([line for line in atomic if "sub" not in line], "Informer")
    with pytest.raises(ValueError, match=r"per-object relist entries.*--fifo real-atomic"):
        tr.map_trace(spec_run(1, "real", 30), "InformerAtomic")

    def stop(line: dict[str, Any]) -> None:
        line["spec"]["phase"] = "stopped"

    with pytest.raises(ValueError, match=r"line 3 \(step 3\): the reflector is at 'stopped'"):
        tr.map_trace(_edit(delta, 3, stop), "Informer")

    def rewrite(line: dict[str, Any]) -> None:
        line["spec"]["history"][0][0] = "MODIFIED"

    with pytest.raises(ValueError, match=r"line 5 \(step 4\): spec.history does not extend"):
        tr.map_trace(_edit(delta, 5, rewrite), "Informer")

    def rv_one(line: dict[str, Any]) -> None:
        line["server"]["default/obj-0000"] = 1

    with pytest.raises(ValueError, match=r"server\[default/obj-0000\]: resourceVersion 1"):
        tr.map_trace(_edit(delta, 2, rv_one), "Informer")


def test_only_informer_spec_like_scenarios_are_simulated_for_the_informer_specs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert tr.informer_scenario_problems("informer-spec") == []
    problems = "; ".join(tr.informer_scenario_problems("informer"))
    for what in ("watch_410", "resync every 30 s", "last 40 writes", "within a second"):
        assert what in problems, problems
    # A scenario the spec does not model is a usage error (refimpl/usage.py): exit 3.
    with pytest.raises(SystemExit) as exit_info:
        tr.main(["--spec", "Informer", "--sim", "informer", "--steps", "10"])
    assert exit_info.value.code == 3
    assert "Use --sim informer-spec" in capsys.readouterr().err
    # The same through `refimpl spec trace`.
    argv = ["spec", "trace", "--spec", "Informer", "--sim", "informer", "--steps", "10"]
    assert refimpl_main(argv) == 3
    assert "Use --sim informer-spec" in capsys.readouterr().err


def test_refimpl_spec_trace_wants_a_file_or_a_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert refimpl_main(["spec", "trace", "--spec", "Informer"]) == 3
    assert "give a trace file or --sim SCENARIO" in capsys.readouterr().err


@tlc
@pytest.mark.parametrize(
    ("spec", "fifo", "seed"), INFORMER_RUNS, ids=[f"{r[0]}-seed{r[2]}" for r in INFORMER_RUNS]
)
def test_informer_simulator_traces_are_behaviours(spec: str, fifo: str, seed: int) -> None:
    lines = simulate("informer-spec", seed, steps=300, fifo=fifo)
    result = tr.validate(lines, spec)
    print(result.summary())
    assert result.ok, f"seed {seed}: " + result.summary()
    checked = tr.checked_lines(lines, spec)
    assert result.steps_checked == result.lines == len(checked)
    # Every code step of processing was a line of its own, but those of RealFIFO
    # batches (several entries in one store transaction): checked whole.
    subs = [line for line in checked if "sub" in line]
    assert {line["sub"] for line in subs} == set(tr.SUB_STEPS[spec]), seed


@tlc
@pytest.mark.parametrize(("spec", "fifo"), INFORMER_MODES)
def test_a_delete_that_never_reaches_the_handlers_view_is_rejected(spec: str, fifo: str) -> None:
    """h0 handles a delete of a key it holds, but its view keeps the key."""
    lines: list[dict[str, Any]] = json.loads(json.dumps(tr.checked_lines(spec_run(1, fifo), spec)))

    def handles_a_delete(p: tuple[dict[str, Any], dict[str, Any]]) -> bool:
        before, after = p[0]["pending"]["h0"], p[1]["pending"]["h0"]
        return (
            p[1]["action"] == "dispatch"
            and after == before[1:]
            and before[0][0].startswith("delete")
            and before[0][1] in p[0]["spec"]["view"]
        )

    n = 1 + index_of_first(
        list(itertools.pairwise(lines)), handles_a_delete, "where h0 handles a delete"
    )
    key = lines[n - 2]["pending"]["h0"][0][1]

    def keep_view(line: dict[str, Any]) -> None:
        line["spec"]["view"] = lines[n - 2]["spec"]["view"]

    result = tr.validate(_edit(lines, n, keep_view), spec)
    assert result.failed is not None and result.failed.index == n, result.summary()
    assert result.failed.action == "dispatch" and result.steps_checked == n - 1
    view = result.failed.after["view"]
    assert isinstance(view, Fn) and key in view


@tlc
@pytest.mark.parametrize(("spec", "fifo"), INFORMER_MODES)
def test_a_skipped_watch_event_is_caught(
    spec: str, fifo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real code bug, not an edited trace: the reflector's store drops the first
    MODIFIED event it is handed. The reflector step that reads it -- its last synced
    rv moves on, the FIFO does not -- is the first line no spec behaviour reaches."""
    skipped: list[int] = []
    update = sim_informer._FifoWriter.update

    def drop_first(self: Any, obj: Any) -> None:
        if not skipped:
            skipped.append(int(obj.resource_version))
            return
        update(self, obj)

    monkeypatch.setattr(sim_informer._FifoWriter, "update", drop_first)
    lines: list[dict[str, Any]] = json.loads(json.dumps(tr.checked_lines(spec_run(1, fifo), spec)))
    monkeypatch.undo()
    n = index_of_first(
        lines, lambda d: d["reflector"]["lastSyncRV"] == str(skipped[0]), "reading the event"
    )
    result = tr.validate(lines, spec)
    assert result.failed is not None and result.failed.index == n, result.summary()
    assert result.failed.action == "reflector" and result.steps_checked == n - 1
    assert set(result.failed.changed()) == {"lastSyncRV"}


@tlc
def test_a_watch_from_the_last_list_rv_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reflector_module, "ReflectorCore", WatchFromListRV)
    lines = spec_run(1, "delta")
    monkeypatch.undo()
    result = tr.validate(lines, "Informer")
    assert result.failed is not None, result.summary()
    assert result.failed.action == "reflector", result.summary()


@tlc
def test_informer_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--spec", "InformerAtomic", "--sim", "informer-spec", "--seed", "2", "--steps", "100"]
    assert refimpl_main(["spec", "trace", *argv]) == 0
    out = capsys.readouterr().out
    assert out.startswith("InformerAtomic: trace of") and "is a behaviour of the spec" in out


@tlc
def test_a_very_short_watch_relists_which_informer_tla_does_not_model() -> None:
    """Why informer-spec lets 2 s pass before a watch drops: client-go takes a watch that
    ends within 1 s having delivered nothing for an error and relists; Informer.tla only
    re-watches (WatchDrop, Connect). With drops at once, the first such relist is the
    first line no spec behaviour reaches."""
    scenario = attrs.evolve(get_scenario("informer-spec"), watch_drop_after=0.0)
    out = io.StringIO()
    Simulator(scenario, seed=1, fifo_mode="delta", trace=out).run(300)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    n = 1 + index_of_first(
        list(itertools.pairwise(lines)),
        lambda p: (
            (p[0]["spec"]["phase"], p[1]["spec"]["phase"], p[1]["action"])
            == ("watch", "list", "reflector")
        ),
        "where an open watch ends in a relist backoff",
    )
    result = tr.validate(lines, "Informer")
    assert result.failed is not None and result.failed.index == n, result.summary()
    assert result.failed.changed() == {"reflector": ("watch", "list")}
