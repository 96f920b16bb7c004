"""Informer- and controller-level properties, checked by the simulator over many seeds.

Every run has faults on (watch drops, 410s, compaction, list/watch errors, failed
controller writes, crashes with an empty cache) and is checked step by step by the
simulator's monitors (refimpl.sim.monitors); every property runs in all three FIFO
modes. A failure prints the run's summary, which ends with a one-line replay command.

Kept counterexamples (fixed, so they stay found): a controller that does not wait for
has_synced deletes pods whose ReplicaSet exists (DeltaFIFO, or RealFIFO without batches),
and an edge-triggered controller never converges after one lost notification. Tests at
the end show that each monitor can fail, by running it against a deliberately broken part.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from hypothesis import HealthCheck, find, settings
from hypothesis import strategies as st

from refimpl.apiserver import ApiServerCore, ApiServerListerWatcher
from refimpl.cache.delta_fifo import DeltaFIFOCore
from refimpl.cache.deltas import DeltaType
from refimpl.cache.process_deltas import process_deltas
from refimpl.cache.processor import ProcessorListener
from refimpl.cache.shared_informer import FifoMode
from refimpl.clock import FakeClock
from refimpl.meta import Object
from refimpl.sim import RunResult, SimInformer, Simulator, TapeChooser
from refimpl.sim import incarnation as sim_incarnation
from refimpl.sim import informer as sim_informer
from refimpl.workqueue.virtual import VirtualRateLimitingQueue

MODES = [str(m) for m in FifoMode]
#: Seeds per (scenario, mode) in CI; benchmarks/sim.py and `refimpl sim run` go further.
SEEDS = range(60)
HEAVY_SEEDS = range(20)


@functools.cache
def runs(
    scenario: str, mode: str, faults: str = "default", seeds: int = len(SEEDS)
) -> list[RunResult]:
    return [Simulator(scenario, seed=s, fifo_mode=mode, faults=faults).run() for s in range(seeds)]


def failures(results: list[RunResult], prop: str) -> str:
    bad = [r for r in results if r.of(prop)]
    if not bad:
        return ""
    r = bad[0]
    return f"{len(bad)} of {len(results)} runs violate {prop}; first:\n{r.summary()}"


#: The nowait controller breaks only its own property (empty-cache-delete, below); the
#: informer-level ones hold for it too.
SCENARIO_MODES = [
    (s, m)
    for s in ("informer", "replicaset", "replicaset-nowait", "replicaset-edge")
    for m in MODES
]


def all_runs(scenario: str, mode: str) -> list[RunResult]:
    return runs(scenario, mode) + runs(scenario, mode, "heavy", len(HEAVY_SEEDS))


# -- the properties, one test each, over the same runs ------------------------------------


@pytest.mark.parametrize(("scenario", "mode"), SCENARIO_MODES)
@pytest.mark.parametrize(
    "prop",
    [
        "store-before-notify",
        "cache-before-handler",
        "rv-order",
        "no-phantom",
        "no-lost-delete",
        "handler-view",
        "synced-initial-list",
        "late-handler-snapshot",
    ],
)
def test_informer_property(scenario: str, mode: str, prop: str) -> None:
    assert not failures(all_runs(scenario, mode), prop), failures(all_runs(scenario, mode), prop)


@pytest.mark.parametrize(("scenario", "mode"), SCENARIO_MODES)
def test_never_two_workers_on_one_key(scenario: str, mode: str) -> None:
    results = all_runs(scenario, mode)
    assert not failures(results, "exclusive-workers"), failures(results, "exclusive-workers")


@pytest.mark.parametrize(("scenario", "mode"), SCENARIO_MODES)
def test_quiesces_with_store_equal_to_server_and_actual_equal_to_desired(
    scenario: str, mode: str
) -> None:
    results = all_runs(scenario, mode)
    assert not failures(results, "converge"), failures(results, "converge")
    assert all(r.converged and r.quiescent for r in results)


@pytest.mark.parametrize("mode", MODES)
def test_runs_exercise_what_the_properties_are_about(mode: str) -> None:
    """Not vacuous: the runs do relist, deliver tombstones, crash, retry, compact."""
    total: dict[str, int] = {}
    for r in runs("informer", mode) + runs("replicaset", mode):
        for k, v in {**r.counters, **r.faults_injected}.items():
            total[k] = total.get(k, 0) + v
    for what in ("tombstones_seen", "deletes_seen", "restarts", "retries", "compact", "watch_410"):
        assert total[what] > 0, f"{mode}: no {what} in {len(SEEDS)} seeds: {total}"
    assert total["lists"] > total["restarts"] + 2 * len(SEEDS), "relists happen, not only starts"


# -- has_synced and the controller that does not wait ---------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_waiting_controller_never_deletes_because_of_an_empty_cache(mode: str) -> None:
    crashy = runs("replicaset", mode, "crash=6,close_watch=6", len(SEEDS))
    for results in (all_runs("replicaset", mode), crashy):
        assert not failures(results, "empty-cache-delete"), failures(results, "empty-cache-delete")
    assert sum(r.counters["restarts"] for r in crashy) > len(SEEDS)


#: A seed at which the controller that does not wait for has_synced deletes pods whose
#: ReplicaSet exists -- at its first start into a populated cluster and again after its
#: restart (DeltaFIFO pops the initial list one key at a time, pods before ReplicaSets).
NOWAIT_SEED = 0
#: The same bug shrunk by Hypothesis: list, pop one pod, hand its add to the handler, a
#: worker takes the ReplicaSet and plans a delete from the half-filled cache.
NOWAIT_TAPE = [0, 0, 1, 1, 1]


def test_kept_counterexample_nowait_controller_deletes_after_restart(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines: list[str] = []
    sim = Simulator(
        "replicaset-nowait",
        seed=NOWAIT_SEED,
        fifo_mode="delta",
        timeline=lambda n, t, k, d: lines.append(f"{n:5d} {t:8.3f}s {k:10s} {d}"),
    )
    result = sim.run()
    bad = result.of("empty-cache-delete")
    with capsys.disabled():
        print(f"\nkept counterexample (seed {NOWAIT_SEED}, {result.steps} steps):")
        print("\n".join(bad[:4]))
        print(result.replay)
    assert bad, result.summary()
    assert any(" g0 " not in v for v in bad), "the bad delete also happens after a restart"
    waiting = Simulator("replicaset", seed=NOWAIT_SEED, fifo_mode="delta").run()
    assert not waiting.of("empty-cache-delete"), waiting.summary()


def test_kept_shrunk_counterexample_nowait() -> None:
    sim = Simulator(
        "replicaset-nowait", chooser=TapeChooser(NOWAIT_TAPE), fifo_mode="delta", faults="none"
    )
    result = sim.run(len(NOWAIT_TAPE))
    assert result.of("empty-cache-delete"), result.summary()
    assert result.replay.startswith(
        "refimpl sim replay replicaset-nowait --choices 0,0,1,1,1 --steps 5 --fifo delta"
    )
    waiting = Simulator(
        "replicaset", chooser=TapeChooser(NOWAIT_TAPE), fifo_mode="delta", faults="none"
    ).run(len(NOWAIT_TAPE))
    assert waiting.ok, waiting.summary()


@pytest.mark.parametrize(
    ("mode", "batch", "exposed"),
    [
        ("real-atomic", True, False),  # the whole relist reaches the store before any handler
        ("real", True, False),  # the initial list is one batch (< 1000 objects)
        ("real", False, True),
        ("delta", True, True),  # DeltaFIFO pops key by key: pods sort before ReplicaSets
    ],
)
def test_fifo_modes_differ_on_the_half_filled_cache(mode: str, batch: bool, exposed: bool) -> None:
    hit = [
        s
        for s in range(12)
        if Simulator("replicaset-nowait", seed=s, fifo_mode=mode, batch=batch)
        .run()
        .of("empty-cache-delete")
    ]
    assert bool(hit) == exposed, f"{mode} batch={batch}: seeds with bad deletes {hit}"


def test_synced_means_the_whole_first_list_is_cached_and_a_v136_delta_window_breaks_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """FIFO-7 (client-go tools/cache shared_informer.go HasSynced): since v1.36 informer
    sync follows DeltaFIFO's synced channel, which closes before the last initial key is
    processed. Checking sync there (between the pop and the processing) is caught by the
    monitor; the shipped order is not."""

    class EarlySync(SimInformer):
        def pop(self) -> Any:
            fifo = self.fifo
            assert isinstance(fifo, DeltaFIFOCore)
            _, deltas, initial = fifo.pop_ready()
            self._check_synced()  # the v1.36 channel: before processing
            process_deltas(self, self.indexer, deltas, initial)
            self.pops += 1
            return deltas

    assert not failures(runs("informer", "delta"), "synced-initial-list")
    monkeypatch.setattr(sim_incarnation, "SimInformer", EarlySync)
    results = [Simulator("informer", seed=s, fifo_mode="delta").run() for s in range(3)]
    assert all(r.of("synced-initial-list") for r in results)


# -- level versus edge triggering --------------------------------------------------------------


#: Shrunk by Hypothesis: list, process the list, lose the first pod add. The edge-
#: triggered controller never learns of that pod (resyncs send updates, not adds), so it
#: creates one pod too many and never notices. Per FIFO mode (the enabled actions differ).
EDGE_TAPES = {
    "real-atomic": [0, 0, 4],
    "real": [0, 0, 4],
    "delta": [0, 0, 4, 6],
}


@pytest.mark.parametrize("mode", MODES)
def test_kept_counterexample_edge_triggered_never_converges(
    mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    tape = EDGE_TAPES[mode]
    lines: list[str] = []
    edge = Simulator(
        "replicaset-edge",
        chooser=TapeChooser(tape),
        fifo_mode=mode,
        faults="only:drop_notification=1",
        max_drain_time=300.0,
        timeline=lambda n, t, k, d: lines.append(f"{n:5d} {t:8.3f}s {k:18s} {d}"),
    ).run(len(tape))
    with capsys.disabled():
        print(f"\nkept counterexample ({mode}, {len(tape)} steps):")
        print("\n".join(lines[: len(tape)]))
        print(edge.of("converge")[0] if edge.of("converge") else "(converged?)")
        print(edge.replay)
    assert edge.of("converge") and "drop_notification" in edge.replay, edge.summary()
    assert edge.faults_injected["drop_notification"] == 1
    assert not [v for v in edge.violations if "[converge]" not in v], edge.summary()
    # The level-triggered controller, same choices (the same lost notification): the
    # next resync makes it look at the cache again, and it converges.
    level = Simulator(
        "replicaset", chooser=TapeChooser(tape), fifo_mode=mode, faults="only:drop_notification=1"
    ).run(len(tape))
    assert level.faults_injected["drop_notification"] == 1
    assert level.ok and level.converged, level.summary()


def test_hypothesis_shrinks_the_edge_counterexample_to_a_handful_of_steps() -> None:
    def never_converges(tape: list[int]) -> bool:
        r = Simulator(
            "replicaset-edge",
            chooser=TapeChooser(tape),
            faults="only:drop_notification=1",
            max_drain_time=120.0,
        ).run(len(tape))
        return bool(r.of("converge"))

    tape = find(
        st.lists(st.integers(0, 20), max_size=40),
        never_converges,
        settings=settings(
            max_examples=1500,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        ),
    )
    assert len(tape) <= 4, tape
    assert (
        Simulator("replicaset-edge", chooser=TapeChooser(tape), faults="only:drop_notification=1")
        .run(len(tape))
        .faults_injected["drop_notification"]
        == 1
    )


@pytest.mark.parametrize("mode", MODES)
def test_level_triggered_converges_despite_lost_notifications(mode: str) -> None:
    results = runs("replicaset", mode, "only:drop_notification=3,close_watch=2,crash=1", 15)
    assert sum(r.faults_injected["drop_notification"] for r in results) > 15
    assert not [r for r in results if not r.ok], next(r.summary() for r in results if not r.ok)


@pytest.mark.parametrize("mode", MODES)
def test_edge_triggered_converges_when_no_notification_is_lost(mode: str) -> None:
    results = all_runs("replicaset-edge", mode)
    assert all(r.faults_injected["drop_notification"] == 0 for r in results)
    assert not failures(results, "converge"), failures(results, "converge")


# -- where the FIFO modes must differ -------------------------------------------------------------


def _post_list_order(r: RunResult, sim: Simulator) -> list[int]:
    initial = sim.incarnation.informer.initial_list
    assert initial is not None
    list_rv = int(initial[1])
    return [rv for _, rv in sim.all_records[0].order if rv > list_rv]


@pytest.mark.parametrize("mode", MODES)
def test_realfifo_hands_events_over_in_server_order_deltafifo_groups_by_key(mode: str) -> None:
    out_of_order = 0
    for seed in range(10):
        sim = Simulator("informer", seed=seed, fifo_mode=mode, faults="none")
        result = sim.run(200)
        order = _post_list_order(result, sim)
        assert len(order) > 10
        if order != sorted(order) or len(set(order)) != len(order):
            out_of_order += 1
    if mode == "delta":
        assert out_of_order > 0, "DeltaFIFO should deliver a key's queued events together"
    else:
        assert out_of_order == 0, "RealFIFO delivers every event in arrival (= rv) order"


@pytest.mark.parametrize("mode", MODES)
def test_one_pop_merges_a_keys_events_only_in_deltafifo(mode: str) -> None:
    server = ApiServerCore()
    inf = SimInformer(ApiServerListerWatcher(server), clock=FakeClock(), fifo_mode=mode)
    inf.start()
    inf.step_reflector()
    while inf.can_pop():
        inf.pop()
    a = server.create(Object(name="a", namespace="ns", data=0))
    server.create(Object(name="b", namespace="ns"))
    server.update(a.evolve(data=1))
    while inf.reflector_ready():
        inf.step_reflector()
    pops = []
    while inf.can_pop():
        pops.append([(str(d.type), d.object.name) for d in inf.pop()])  # type: ignore[attr-defined]
    if mode == "delta":
        assert pops == [[("Added", "a"), ("Updated", "a")], [("Added", "b")]]
    else:  # a batch never holds one key twice: arrival order, each event once
        assert [e for p in pops for e in p] == [("Added", "a"), ("Added", "b"), ("Updated", "a")]
        assert all(len({k for _, k in p}) == len(p) for p in pops)


# -- each monitor can fail: the same runs against deliberately broken parts ---------------------


def _find(prop: str, scenario: str = "informer", mode: str = "delta", seeds: int = 15) -> list[str]:
    for seed in range(seeds):
        r = Simulator(scenario, seed=seed, fifo_mode=mode).run()
        if r.of(prop):
            return r.of(prop)
    return []


def test_notify_before_store_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = process_deltas

    def notify_first(handler: Any, store: Any, deltas: Any, initial: bool, *a: Any) -> None:
        for d in deltas:  # the handler hears of each delta before the store has it
            if d.type is DeltaType.DELETED:
                handler.on_delete(d.object)
            else:
                handler.on_add(d.object, initial)
            real(_Silent(), store, [d], initial)

    monkeypatch.setattr(sim_informer, "process_deltas", notify_first)
    found = _find("store-before-notify", mode="delta")
    assert found and "distributed" in found[0]


class _Silent:
    def on_add(self, obj: object, initial: bool) -> None: ...
    def on_update(self, old: object, new: object) -> None: ...
    def on_delete(self, obj: object) -> None: ...


def test_a_relist_without_tombstones_loses_deletes(monkeypatch: pytest.MonkeyPatch) -> None:
    def replace_without_deletions(self: DeltaFIFOCore, objects: Any, rv: str = "") -> None:
        for obj in objects:  # the listed objects, but no tombstones for what vanished
            self._queue_action(DeltaType.REPLACED, obj)
        if not self.populated:
            self.populated = True
            self.initial_population_count = len(self.queue)
            self._check_synced()

    monkeypatch.setattr(DeltaFIFOCore, "replace", replace_without_deletions)
    assert _find("no-lost-delete", seeds=30)
    assert _find("handler-view", seeds=30)


def test_out_of_order_delivery_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def newest_first(self: ProcessorListener) -> bool:
        if not self.pending:
            return False
        self._deliver(self.pending.pop())
        return True

    monkeypatch.setattr(ProcessorListener, "dispatch_one", newest_first)
    assert _find("rv-order")


def test_invented_objects_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real_add = sim_informer._FifoWriter.add

    def add_bumped(self: Any, obj: Any) -> None:
        real_add(self, obj.evolve(resource_version=str(int(obj.resource_version) + 10_000)))

    monkeypatch.setattr(sim_informer._FifoWriter, "add", add_bumped)
    assert _find("no-phantom")


def test_a_queue_that_hands_out_a_busy_key_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def add_always(self: VirtualRateLimitingQueue[str], item: str) -> None:
        self.core.dirty.add(item)
        self.core.queue.push(item)  # ignores "in flight": the workqueue's one job

    monkeypatch.setattr(VirtualRateLimitingQueue, "add", add_always)
    assert _find("exclusive-workers", scenario="replicaset", mode="real-atomic")


def test_a_late_handler_without_the_snapshot_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = SimInformer.add_event_handler

    def without_snapshot(self: SimInformer, handler: Any, *a: Any, **k: Any) -> ProcessorListener:
        listener = real(self, handler, *a, **k)
        listener.pending.clear()
        return listener

    monkeypatch.setattr(SimInformer, "add_event_handler", without_snapshot)
    assert _find("late-handler-snapshot")
