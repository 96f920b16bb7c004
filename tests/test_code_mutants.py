"""Code mutants: one part of the code broken in a way a port could break it, and the
checks that catch each (the table "Which checks catch which code bug" in
docs/07-the-model-and-the-code.md; this file is its test, one test per row and check).

The broken parts are those of adapters/broken/bugs.py (the catalogue ``refimpl
conform`` is tested against) and of refimpl/tour/ch07_model_and_code.py; nothing is
defined twice. The checks:

* conform -- ``refimpl conform`` on ``adapter.py --bug NAME``, Hypothesis-generated
  sequences against the reference (tests/test_conformance_broken.py runs it; here only
  that the row's bug is in that catalogue);
* unit / sim -- a unit check of the broken part, or the simulator's own monitors (the
  run's ``violations``);
* replay -- the graph replay over a committed state graph (refimpl/tla/replay.py), as
  tests/test_spec_*_replay.py run it;
* trace -- trace validation: a simulator run with the broken part, checked by TLC
  against the spec (refimpl/tla/trace.py; marked ``tlc``). Each row pins a seed whose
  run reaches the bug; the same seed's run of the correct code is accepted, so the
  rejection is the bug's;
* model -- a TLC model that mutates the spec's corresponding action and is expected
  to violate a property (spec/models.json; tests/test_tlc_models.py runs TLC on it).

Every row is caught by trace validation and by at least one other check.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from spec_graphs import spec_graph
from test_conformance_broken import BROKEN_BUGS, BUGS
from trace_helpers import tlc

from refimpl.cache import informer_core
from refimpl.cache import reflector as reflector_module
from refimpl.cache.delta_fifo import DeltaFIFOCore
from refimpl.cache.deltas import DeltaType
from refimpl.cache.informer_core import FifoMode
from refimpl.cache.store import Indexer
from refimpl.meta import DeletedFinalStateUnknown, Object
from refimpl.sim import informer as sim_informer
from refimpl.sim.simulator import Simulator
from refimpl.tla import trace as tr
from refimpl.tla.graph import StateGraph, freeze_state
from refimpl.tla.manifest import load_manifest
from refimpl.tla.refine_fifo import DeltaFIFOMapping
from refimpl.tla.refine_informer import InformerMapping
from refimpl.tla.refine_workqueue import WorkQueueMapping
from refimpl.tla.replay import ReplayReport, replay
from refimpl.tour.ch07_model_and_code import WatchFromListRV, handler_first
from refimpl.workqueue import virtual

SPEC = Path(__file__).resolve().parents[1] / "spec"


def _graph(name: str) -> StateGraph:
    return spec_graph(name)


@dataclass(frozen=True)
class TraceRun:
    """The simulator run trace validation rejects: spec, scenario, FIFO mode, seed."""

    spec: str
    scenario: str
    fifo: str
    seed: int
    steps: int = 300
    #: The simulator's --faults (None: the scenario's).
    faults: str | None = None


@dataclass(frozen=True)
class Mutant:
    name: str
    summary: str
    #: What swaps the broken part into the simulator: (object, attribute, replacement).
    patches: Callable[[], list[tuple[Any, str, Any]]]
    trace: tuple[TraceRun, ...]
    #: The adapters/broken/bugs.py catalogue entry ``refimpl conform`` catches.
    conform: str | None = None
    #: A unit check of the broken part, or the simulator monitors' violation: what it
    #: finds wrong, None if nothing (as for the correct code: tested below).
    unit: Callable[[], str | None] | None = None
    #: The graph replay of the broken part (must report mismatches).
    replay: Callable[[], ReplayReport] | None = None
    #: spec/models.json models mutating the spec the same way (expected violations).
    models: tuple[str, ...] = field(default=())

    def checks(self) -> list[str]:
        out = ["trace"]
        out += ["conform"] if self.conform else []
        out += ["unit/sim"] if self.unit else []
        out += ["replay"] if self.replay else []
        out += ["model"] if self.models else []
        return out


@contextlib.contextmanager
def installed(mutant: Mutant | None) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for target, name, value in mutant.patches() if mutant is not None else []:
            stack.enter_context(mock.patch.object(target, name, value))
        yield


def sim_trace(run: TraceRun, mutant: Mutant | None) -> tuple[list[str], list[str]]:
    """``(trace lines, violations)`` of ``run`` with ``mutant``'s part (None: the code)."""
    out = io.StringIO()
    with installed(mutant):
        result = Simulator(
            run.scenario,
            seed=run.seed,
            fifo_mode=run.fifo,
            trace=out,
            faults=run.faults,
            # A broken reflector may never converge: the drain is bounded.
            max_drain_steps=400,
        ).run(run.steps)
    return out.getvalue().splitlines(), result.violations


# -- the rows' checks ----------------------------------------------------------------------


def _handler_first_patches() -> list[tuple[Any, str, Any]]:
    return [
        (sim_informer, "process_deltas", handler_first),
        (sim_informer, "process_deltas_in_batch", BROKEN_BUGS._handler_first_batch),
    ]


def _sim_violation(run: TraceRun, mutant: Mutant | None, kind: str) -> str | None:
    """The first violation of the simulator's monitor ``kind`` in ``run``, or None."""
    violations = sim_trace(run, mutant)[1]
    return next((v for v in violations if f"[{kind}]" in v), None)


#: The simulator run whose monitors are the unit/sim check of two rows.
SIM_RUN = TraceRun("Informer", "informer-spec", "delta", 1)


def _informer_replay(mode: FifoMode, **broken: object) -> ReplayReport:
    name = "Informer" if mode is FifoMode.DELTA else "InformerAtomic"
    mapping = InformerMapping(("a", "b"), 3, mode, **broken)  # type: ignore[arg-type]
    return replay(_graph(name), mapping, max_mismatches=1)


def _fifo_replay(factory: type[DeltaFIFOCore]) -> ReplayReport:
    return replay(_graph("DeltaFIFO"), DeltaFIFOMapping(("a", "b"), (1, 2), 2, factory=factory))


def _obj(name: str, rv: int) -> Object:
    return Object(name, "default", resource_version=str(rv))


def _queued_only_unit(cls: type[DeltaFIFOCore]) -> str | None:
    """A key queued but not yet stored, gone from the relist: client-go (since PR
    #115620) queues its tombstone. What ``cls`` does wrong, or None."""
    fifo = cls(known_objects=Indexer(), emit_delta_type_replaced=True)
    fifo.add(_obj("a", 2))
    fifo.replace([], "3")
    deltas = fifo.items["default/a"]
    if deltas[-1].type is not DeltaType.DELETED:
        return f"add(a), replace([]): {[str(d.type) for d in deltas]}, no tombstone"
    return None


def _dedup_unit(cls: type[DeltaFIFOCore]) -> str | None:
    """A watch delete queued, then a relist without the key: of the two deletes the one
    with the real final state stays (delta_fifo.go isDeletionDup). What ``cls`` does
    wrong, or None."""
    store = Indexer()
    store.add(_obj("a", 2))
    fifo = cls(known_objects=store, emit_delta_type_replaced=True)
    fifo.delete(_obj("a", 3))
    fifo.replace([], "4")
    deltas = fifo.items["default/a"]
    if len(deltas) != 1 or isinstance(deltas[0].object, DeletedFinalStateUnknown):
        return f"delete(a@3), replace([]): {deltas}, not [Deleted(a@3)]"
    return None


#: The broken DeltaFIFO cores of two rows.
FIFO_CLASS: dict[str, type[DeltaFIFOCore]] = {
    "tombstones": BROKEN_BUGS.ReplaceWithoutQueuedTombstones,
    "dedup": BROKEN_BUGS.DedupKeepsNewer,
}

#: The unit checks of those rows: (what the check is called, the check).
FIFO_UNIT: dict[str, Callable[[type[DeltaFIFOCore]], str | None]] = {
    "tombstones": _queued_only_unit,
    "dedup": _dedup_unit,
}

HANDLER_FIRST = Mutant(
    "handler-before-store",
    "process_deltas notifies the handlers, then writes the store (INF-1)",
    _handler_first_patches,
    trace=(
        TraceRun("Informer", "informer-spec", "delta", 1),
        TraceRun("InformerAtomic", "informer-spec", "real-atomic", 1),
    ),
    conform="informer-handler-before-store",
    unit=lambda: _sim_violation(SIM_RUN, MUTANTS["handler-before-store"], "store-before-notify"),
    replay=lambda: _informer_replay(FifoMode.DELTA, process=handler_first),
    models=("InformerHandlerFirst", "InformerAtomicNotifyFirst"),
)

REWATCH_LIST_RV = Mutant(
    "rewatch-rv-regression",
    "watch events never move the last synced rv: every re-watch goes back to the last "
    "list's rv and replays events (REF-3)",
    lambda: [(reflector_module, "ReflectorCore", BROKEN_BUGS.RewatchFromListRV)],
    trace=(
        TraceRun("Informer", "informer-spec", "delta", 1),
        TraceRun("InformerAtomic", "informer-spec", "real-atomic", 1),
    ),
    conform="informer-rewatch-from-list-rv",
    unit=lambda: _sim_violation(SIM_RUN, MUTANTS["rewatch-rv-regression"], "rv-order"),
    # At the first WatchEvent: lastSyncRV, a spec variable, does not move (no hidden
    # state involved; the re-watch from the list's rv, hidden state, is rewatch-from-list-rv).
    replay=lambda: _informer_replay(
        FifoMode.DELTA, reflector_core_factory=BROKEN_BUGS.RewatchFromListRV
    ),
    # WatchDrop re-watches from an older rv than the last synced one (the compaction
    # point): events arrive again, PerKeyRVOrder (INF-2) breaks.
    models=("InformerRewatchRewinds", "InformerAtomicRewatchRewinds"),
)

WATCH_FROM_LIST_RV = Mutant(
    "rewatch-from-list-rv",
    "watch events move the last synced rv, but a re-watch asks for the last list's rv "
    "(hidden state: no spec variable holds it) and the events since come again (REF-3)",
    lambda: [(reflector_module, "ReflectorCore", WatchFromListRV)],
    trace=(
        TraceRun("Informer", "informer-spec", "delta", 1),
        TraceRun("InformerAtomic", "informer-spec", "real-atomic", 1),
    ),
    unit=lambda: _sim_violation(SIM_RUN, MUTANTS["rewatch-from-list-rv"], "rv-order"),
    # The replay executes the path to each state (refimpl/tla/replay.py), so the core
    # keeps the list's rv it was left with: WatchDrop after an event re-watches from it.
    replay=lambda: _informer_replay(FifoMode.DELTA, reflector_core_factory=WatchFromListRV),
    models=("InformerRewatchRewinds", "InformerAtomicRewatchRewinds"),
)

MUTANTS: dict[str, Mutant] = {
    m.name: m
    for m in (
        HANDLER_FIRST,
        Mutant(
            "queued-only-tombstones-skipped",
            "DeltaFIFO.replace tombstones only stored keys, not keys still queued "
            "(kubernetes PR #115620)",
            lambda: [(informer_core, "DeltaFIFOCore", FIFO_CLASS["tombstones"])],
            # The informer scenario steers toward this relist (refimpl/sim/rare.py): seed
            # 1 is one of 25 of seeds 1-40 whose run departs from the correct one.
            trace=(TraceRun("DeltaFIFO", "informer", "delta", 1),),
            conform="replace-no-queued-tombstones",
            unit=lambda: _queued_only_unit(FIFO_CLASS["tombstones"]),
            replay=lambda: _fifo_replay(FIFO_CLASS["tombstones"]),
            # List's Replace tombstones stored keys only: a queued Added of a key
            # deleted during the 410 is stored after the relist, Converges (INF-3).
            models=("InformerQueuedTombstonesSkipped", "RealFIFOTombstonesStoredOnly"),
        ),
        Mutant(
            "rewatch-after-410",
            "after a 410 the reflector watches again from its last rv (the list's, if no "
            "event came since) instead of relisting (REF-3)",
            lambda: [(reflector_module, "ReflectorCore", BROKEN_BUGS.RewatchAfterExpired)],
            trace=(
                TraceRun("Informer", "informer-spec", "delta", 1),
                TraceRun("InformerAtomic", "informer-spec", "real-atomic", 3),
            ),
            conform="informer-rewatch-after-410",
            replay=lambda: _informer_replay(
                FifoMode.DELTA, reflector_core_factory=BROKEN_BUGS.RewatchAfterExpired
            ),
            # Connect answered 410 asks for the same watch again: Converges (INF-3).
            models=("InformerRewatchAfter410",),
        ),
        REWATCH_LIST_RV,
        WATCH_FROM_LIST_RV,
        Mutant(
            "done-forgets-dirty",
            "Done drops a key re-added while in flight instead of re-queueing it",
            lambda: [(virtual, "QueueCore", BROKEN_BUGS.DoneForgetsDirty)],
            trace=(TraceRun("WorkQueue", "replicaset", "real-atomic", 1),),
            conform="done-forgets-requeue",
            replay=lambda: replay(
                _graph("WorkQueue"),
                WorkQueueMapping(("a", "b"), "-", factory=BROKEN_BUGS.DoneForgetsDirty),
                max_mismatches=1,
            ),
            models=("WorkQueueDoneForgets",),
        ),
        Mutant(
            "dedup-keeps-newer-delete",
            "of two consecutive deletes DeltaFIFO keeps the newer: a relist's tombstone "
            "over the watch's real final state",
            lambda: [(informer_core, "DeltaFIFOCore", FIFO_CLASS["dedup"])],
            # Two deletes of one key in a row need a relist while a watch delete is
            # still queued, of a stored key: seed 4 is one of 8 of seeds 1-40 whose run
            # departs from the correct one (the informer scenario steers toward relists
            # over a queued delete, refimpl/sim/rare.py).
            trace=(TraceRun("DeltaFIFO", "informer", "delta", 4),),
            conform="dedup-deletes-keeps-newer",
            unit=lambda: _dedup_unit(FIFO_CLASS["dedup"]),
            replay=lambda: _fifo_replay(FIFO_CLASS["dedup"]),
        ),
    )
}

ROWS = sorted(MUTANTS)


def test_every_mutant_is_caught_twice_trace_validation_among_them() -> None:
    for m in MUTANTS.values():
        assert m.trace, m.name
        assert len(m.checks()) >= 2, m.name


@pytest.mark.parametrize("name", [n for n in ROWS if MUTANTS[n].conform])
def test_conform_catalogue_has_the_bug(name: str) -> None:
    """tests/test_conformance_broken.py::test_bug_is_caught[BUG] runs ``refimpl conform``
    on it (in CI, like every catalogue entry)."""
    bug = MUTANTS[name].conform
    assert bug in BUGS and BUGS[bug].found_by == "search", bug


@pytest.mark.parametrize("name", [n for n in ROWS if MUTANTS[n].unit])
def test_unit_or_simulator_check_catches_the_mutant(name: str) -> None:
    unit = MUTANTS[name].unit
    assert unit is not None
    found = unit()
    assert found is not None, f"{name} passed its unit/sim check"
    print(name, found)


@pytest.mark.parametrize("kind", sorted(FIFO_UNIT))
def test_unit_checks_pass_on_the_correct_fifo(kind: str) -> None:
    assert FIFO_UNIT[kind](DeltaFIFOCore) is None


def test_simulator_monitors_are_quiet_on_the_correct_code() -> None:
    for kind in ("store-before-notify", "rv-order"):
        assert _sim_violation(SIM_RUN, None, kind) is None, kind


@pytest.mark.parametrize("name", [n for n in ROWS if MUTANTS[n].replay])
def test_graph_replay_catches_the_mutant(name: str) -> None:
    replay_fn = MUTANTS[name].replay
    assert replay_fn is not None
    report = replay_fn()
    assert not report.ok, f"{name} passed the replay: {report.summary()}"
    print(name, report.mismatches[0])


@pytest.mark.parametrize("name", [n for n in ROWS if MUTANTS[n].models])
def test_spec_mutation_models_expect_a_violation(name: str) -> None:
    manifest = {m.name: m for m in load_manifest(SPEC)}
    for model in MUTANTS[name].models:
        assert manifest[model].expect == "violation", model


def _runs() -> list[Any]:
    return [
        pytest.param(name, run, id=f"{name}-{run.spec}-seed{run.seed}")
        for name in ROWS
        for run in MUTANTS[name].trace
    ]


@tlc
@pytest.mark.parametrize(("name", "run"), _runs())
def test_trace_validation_rejects_the_mutant(name: str, run: TraceRun) -> None:
    """The mutant's run is rejected; the correct code's run of the same seed (the
    same choices until the bug shows) is accepted."""
    good, _ = sim_trace(run, None)
    accepted = tr.validate(good, run.spec)
    assert accepted.ok, accepted.summary()
    bad, _ = sim_trace(run, MUTANTS[name])
    first = next((i for i, (a, b) in enumerate(zip(bad, good, strict=False)) if a != b), None)
    assert first is not None, f"seed {run.seed}: the run never reaches the bug"
    rejected = tr.validate(bad, run.spec)
    print(f"{name}: {rejected.summary()} (correct run: {accepted.wall_seconds:.1f}s)")
    assert rejected.failed is not None, rejected.summary()
    # Rejected no earlier than where the two runs part.
    checked = tr.checked_lines(bad, run.spec)
    differs = json.loads(bad[first])
    assert checked[rejected.failed.index - 1]["step"] >= differs["step"], rejected.summary()


def test_the_rebuild_alone_misses_the_hidden_state_mutant() -> None:
    """Where the replay catches rewatch-from-list-rv, the state rebuilt without the
    path to it (``execute=False``: the list was at lastSyncRV) moves as the spec says:
    what catches the mutant is the core carried along the executed path."""
    replay_fn = MUTANTS["rewatch-from-list-rv"].replay
    assert replay_fn is not None
    report = replay_fn()
    assert report.mismatches, report.summary()
    at = int(report.mismatches[0].split()[1])
    graph = _graph("Informer")
    mapping = InformerMapping(("a", "b"), 3, FifoMode.DELTA, reflector_core_factory=WatchFromListRV)
    here = graph.key(at)
    spec = {(e.action, e.args, graph.key(e.target)) for e in graph.successors()[at]}
    code = {(m.action, m.args, freeze_state(m.successor)) for m in mapping(graph.states[at])}
    assert {c for c in code if c[2] != here} == {s for s in spec if s[2] != here}
