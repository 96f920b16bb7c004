"""Trace validation, what every spec shares (refimpl/tla/trace.py, refimpl/tla/trace_core.py).

Without a jar: the generated module text reads back to the mapped states, every code
step that changes a mapped variable is one the step table allows spec steps for, and
traces that cannot be mapped are clear errors. With a jar (marked ``tlc``, skipped with
the reason otherwise): hand-made and simulator traces are behaviours of
spec/WorkQueue.tla and spec/DeltaFIFO.tla, and hand-edited corruptions are rejected at
their line. The per-spec tests are tests/test_tlc_trace_workqueue.py,
tests/test_tlc_trace_fifo.py and tests/test_tlc_trace_informer.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trace_helpers import (
    FIFO_TRACE,
    RESYNC_TRACE,
    WQ_TRACE,
    as_tla,
    changed_lines,
    parse_generated,
    simulate,
    tlc,
)

from refimpl.tla import trace as tr
from refimpl.tla.runner import (
    EXIT_NO_JAR,
    JAR_ENV,
    TlcUnavailable,
)


def test_generated_module_reads_back_to_the_mapped_trace() -> None:
    for trace, spec in ((WQ_TRACE, "WorkQueue"), (FIFO_TRACE, "DeltaFIFO")):
        m = tr.map_trace(trace, spec)
        module, _ = tr.trace_module(m)
        defs, records = parse_generated(module)
        assert records == [as_tla(line.record()) for line in m.lines]
        for name, value in m.definitions.items():
            assert defs[name] == as_tla(value), name


@pytest.mark.parametrize(
    ("trace", "spec", "message"),
    [
        ([], "WorkQueue", "the trace is empty"),
        (["", "   "], "WorkQueue", "the trace is empty"),
        (WQ_TRACE, "Controller", "unknown spec 'Controller'"),
        (
            [{"fifo": [["ReplacedAll", 3, 2]], "store": {}, "synced": False}],
            "RealFIFO",
            "ReplacedAll entry without its listed objects",
        ),
        (
            [{"fifo": [["a", [["Added", "a", 1]]]], "store": {}, "synced": False}],
            "RealFIFO",
            "not a RealFIFO log entry.*--spec DeltaFIFO",
        ),
        (
            [{"fifo": [["ReplacedAll", 3, [["a", 1], ["a", 2]]]], "store": {}, "synced": False}],
            "RealFIFO",
            "lists a key twice",
        ),
        (['{"queue": []'], "WorkQueue", "trace line 1: not JSON"),
        (["[1, 2]"], "WorkQueue", "trace line 1: expected a JSON object"),
        (
            [{k: v for k, v in WQ_TRACE[0].items() if k != "dirty"}],
            "WorkQueue",
            r"trace line 1 \(step 1\): no work queue state \(missing dirty\)",
        ),
        (
            [WQ_TRACE[0], {**WQ_TRACE[1], "workers": [["a", "got"]]}],
            "WorkQueue",
            "the number of workers changes",
        ),
        # The trace schema (refimpl/sim/trace_schema.py) checks each field's shape.
        ([{**WQ_TRACE[0], "queue": [1]}], "WorkQueue", r"queue\[0\]: expected a string, got 1"),
        ([{**WQ_TRACE[0], "drainer": "gone"}], "WorkQueue", "drainer"),
        ([{**WQ_TRACE[0], "workers": [["a"]]}], "WorkQueue", r"workers\[0\]: expected a list of 2"),
        ([{"spec": {"history": []}}], "Informer", "spec: missing lastRV, listener, phase, view"),
        (
            [{"step": 3, "fifo": [["Added", "a", 1]], "store": {}, "synced": False}],
            "DeltaFIFO",
            r"trace line 1 \(step 3\).*RealFIFO log.*--fifo delta",
        ),
        (
            [{"fifo": [["a", [["Replaced", "b", 1]]]], "store": {}, "synced": False}],
            "DeltaFIFO",
            "a delta for 'b' is queued under 'a'",
        ),
        (
            [{"fifo": [["a", [["Updated(DFSU)", "a", 1]]]], "store": {}, "synced": False}],
            "DeltaFIFO",
            "not one DeltaFIFO.tla models",
        ),
        ([{"fifo": [], "store": {"a": 0}, "synced": False}], "DeltaFIFO", "without a resource"),
        ([{"fifo": [], "store": {}}], "DeltaFIFO", "missing synced"),
        ([{"fifo": [], "store": {}, "synced": 1}], "DeltaFIFO", "expected true or false"),
    ],
)
def test_traces_that_cannot_be_mapped_are_clear_errors(
    trace: list[Any], spec: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        tr.map_trace(trace, spec)


def test_trace_module_rejects_a_bad_name() -> None:
    with pytest.raises(ValueError, match="not a TLA\\+ module name"):
        tr.trace_module(tr.map_trace(WQ_TRACE), name="Work Queue")


def test_without_a_jar_validate_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JAR_ENV, raising=False)
    with pytest.raises(TlcUnavailable, match=f"{JAR_ENV} is not set"):
        tr.validate(WQ_TRACE)
    assert tr.main(["--sim", "replicaset", "--steps", "5"]) == EXIT_NO_JAR


@pytest.mark.parametrize(
    ("scenario", "spec", "fifo"),
    [
        ("replicaset", "WorkQueue", "real-atomic"),
        ("replicaset-nowait", "WorkQueue", "real"),
        ("replicaset", "DeltaFIFO", "delta"),
        ("informer", "DeltaFIFO", "delta"),
        ("informer-spec", "Informer", "delta"),
        ("informer-spec", "InformerAtomic", "real-atomic"),
    ],
)
@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_only_listed_code_steps_change_the_mapped_state(
    scenario: str, spec: str, fifo: str, seed: int
) -> None:
    """The step table's premise, checked on real runs without TLC: a code step not in
    STEPS leaves the mapped variables unchanged (a new simulator action that does change
    them shows up here, in CI, before TLC would reject every trace)."""
    m = tr.map_trace(simulate(scenario, seed, steps=150, fifo=fifo), spec)
    for line in changed_lines(m):
        assert line.reset or line.budget > 0, (
            f"seed {seed}: line {line.index} ({line.action}: {line.desc}) changes the "
            f"{spec} state but STEPS gives it no spec step"
        )
    module, _ = tr.trace_module(m)
    _, records = parse_generated(module)
    assert records == [as_tla(line.record(m.module_state(line.state))) for line in m.lines], (
        f"seed {seed}"
    )


@tlc
@pytest.mark.parametrize(
    ("trace", "spec"),
    [(WQ_TRACE, "WorkQueue"), (FIFO_TRACE, "DeltaFIFO"), (RESYNC_TRACE, "DeltaFIFO")],
    ids=["workqueue", "fifo", "fifo-resync"],
)
def test_hand_made_traces_are_behaviours(trace: list[Any], spec: str) -> None:
    result = tr.validate(trace, spec)
    assert result.ok, result.summary()
    assert result.steps_checked == result.lines == len(trace)
    assert result.failed is None


@tlc
def test_hand_made_corruptions_are_rejected_at_their_line() -> None:
    # The advance fires a, which is dirty already: the code must not queue it again.
    twice = [*WQ_TRACE[:5], {**WQ_TRACE[5], "queue": ["a", "a"]}, *WQ_TRACE[6:]]
    result = tr.validate(twice, "WorkQueue")
    assert not result.ok and result.failed is not None
    assert (result.failed.index, result.steps_checked) == (6, 5), result.summary()
    assert result.failed.changed() == {
        "queue": (("a",), ("a", "a")),
        "waiting": (frozenset({"a"}), frozenset()),
    }
    # A pop whose deltas never reach the store.
    stale = [*FIFO_TRACE[:4], {**FIFO_TRACE[4], "store": {"a": 1, "b": 2}}, *FIFO_TRACE[5:]]
    result = tr.validate(stale, "DeltaFIFO")
    assert result.failed is not None and result.failed.index == 5, result.summary()
    assert set(result.failed.changed()) == {"queue", "items"}
    assert "line 5 (simulator step 5, pop) is not reached by up to 1 of Pop" in result.summary()


SIM_RUNS = [
    # (spec, scenario, seed, fifo, has a crash)
    ("WorkQueue", "replicaset", 1, "real-atomic", True),
    ("WorkQueue", "replicaset", 2, "real-atomic", False),
    ("WorkQueue", "replicaset-edge", 1, "real", True),
    ("DeltaFIFO", "replicaset", 1, "delta", True),
    ("DeltaFIFO", "informer", 2, "delta", True),
]


@tlc
@pytest.mark.parametrize(
    ("spec", "scenario", "seed", "fifo", "crash"),
    SIM_RUNS,
    ids=[f"{r[0]}-{r[1]}-seed{r[2]}" for r in SIM_RUNS],
)
def test_simulator_traces_are_behaviours(
    spec: str, scenario: str, seed: int, fifo: str, crash: bool
) -> None:
    lines = simulate(scenario, seed, steps=300, fifo=fifo)
    assert any(line.reset for line in tr.map_trace(lines, spec).lines) == crash
    result = tr.validate(lines, spec)
    print(result.summary())
    assert result.ok, f"seed {seed}: " + result.summary()
    assert result.steps_checked == result.lines == len(lines)
