"""The code refines the spec: the worker, the queue and the informer's handler step
replayed over Controller's whole state graph.

spec/graphs/ControllerReplay.json.gz is every reachable state and transition of
spec/MCControllerReplay.tla (2 keys, 2 workers, values {1}, 2 user writes), exported by
``refimpl spec export``. For each state the test builds the code in that state through
the refinement mapping (refimpl/tla/refine_controller.py): process_next_work_item paused
after its get and at its done, a VirtualRateLimitingQueue, process_deltas over an
Indexer. It makes every code move and checks that each lands where the spec says and
that every spec edge has its move. Broken workers, reconciles, handlers and queue cores
must fail the same replay, which shows the replay can tell. (The graph's spec hash is
checked for every graph of the manifest by tests/test_spec_hashes.py.)
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Mapping
from typing import TypeVar

import attrs
import pytest
from spec_graphs import spec_graph

from refimpl.cache.handlers import ResourceEventHandler, ResourceEventHandlerFuncs
from refimpl.clock import FakeClock
from refimpl.meta import object_key
from refimpl.tla.graph import StateGraph, freeze_state
from refimpl.tla.refine_controller import (
    ControllerMapping,
    ControllerWorld,
    TransientError,
    failing_reconcile,
    level_reconcile,
)
from refimpl.tla.replay import replay
from refimpl.tla.values import Fn, Value
from refimpl.worker import RetryingQueue, process_next_work_item
from refimpl.workqueue.core import QueueCore
from refimpl.workqueue.virtual import VirtualRateLimitingQueue

# MCControllerReplay.tla's constants.
KEYS = ("a", "b")
WORKERS = ("w1", "w2")
NO_ITEM = "-"
VALUES = (1,)
MAX_WRITES = 2
STATES = 11592  # spec/models.json: ControllerReplay distinct_states
EDGES = 72236

T = TypeVar("T", bound=str)


MAPPING = ControllerMapping(KEYS, WORKERS, NO_ITEM, VALUES, MAX_WRITES)


def phase(state: Mapping[str, Value], worker: str) -> Value:
    phases = state["phase"]
    assert isinstance(phases, Fn)
    return phases[worker]


def cached(state: Mapping[str, Value], key: Value) -> Value:
    cache = state["cache"]
    assert isinstance(cache, Fn)
    return cache[key]


def keys_in(state: Mapping[str, Value], name: str) -> frozenset[Value]:
    value = state[name]
    assert isinstance(value, frozenset)
    return value


@pytest.fixture(scope="module")
def graph() -> StateGraph:
    return spec_graph("ControllerReplay")


def test_graph_is_the_model_it_claims(graph: StateGraph) -> None:
    assert len(graph.states) == STATES
    assert len(graph.init) == 1
    assert {e.action for e in graph.edges} == {
        "UserWrite",
        "SyncNotify",
        "SyncDrop",
        "Notify",
        "RetryDue",
        "WorkerGet",
        "ReconcileOK",
        "ReconcileFail",
        "WorkerDone",
        "WorkerExit",
        "ShutDown",
        "ShutDownWithDrain",
        "DrainReturn",
    }
    # The model reaches the paths the mapping claims to cover: a delete synced from a
    # non-empty cache, both workers busy at once, a retry waiting while in flight.
    assert any(
        e.action == "SyncNotify"
        and cached(graph.states[e.source], e.args[0]) == 1
        and cached(graph.states[e.target], e.args[0]) == 0
        for e in graph.edges
    )
    assert any(all(phase(s, w) != "idle" for w in WORKERS) for s in graph.states)
    assert any(keys_in(s, "waiting") & keys_in(s, "processing") for s in graph.states)


def test_mapping_reads_back_every_state(graph: StateGraph) -> None:
    for i, state in enumerate(graph.states):
        assert MAPPING.world(state).spec_state() == state, f"state {i}"


def test_controller_code_refines_controller_spec(graph: StateGraph) -> None:
    report = replay(graph, MAPPING)
    print(report.summary())
    assert report.ok, "\n".join(report.mismatches)
    assert report.states == STATES
    assert report.edges == len(graph.edges) == EDGES


# -- the split of process_next_work_item ------------------------------------------------


@attrs.define
class RecordingQueue:
    """A real queue that records the worker's calls."""

    queue: VirtualRateLimitingQueue[str]
    calls: list[str] = attrs.Factory(list)

    def get(self) -> tuple[str | None, bool]:
        self.calls.append("get")
        return self.queue.get()

    def done(self, item: str) -> None:
        self.calls.append(f"done({item})")
        self.queue.done(item)

    def forget(self, item: str) -> None:
        self.calls.append(f"forget({item})")
        self.queue.forget(item)

    def add_rate_limited(self, item: str) -> None:
        self.calls.append(f"add_rate_limited({item})")
        self.queue.add_rate_limited(item)

    def num_requeues(self, item: str) -> int:
        self.calls.append(f"num_requeues({item})")
        return self.queue.num_requeues(item)


def _run(reconcile: Callable[[str], None], max_retries: int = 5) -> list[str]:
    real: VirtualRateLimitingQueue[str] = VirtualRateLimitingQueue(FakeClock())
    real.add("a")
    recorder = RecordingQueue(real)
    queue: RetryingQueue[str] = recorder
    assert process_next_work_item(queue, reconcile, max_retries=max_retries)
    assert not real.core.processing  # done really happened
    return recorder.calls


def _fail(key: str) -> None:
    raise TransientError(key)


def test_worker_gets_first_and_is_done_last() -> None:
    # The mapping pauses process_next_work_item after its first call and at its last;
    # this is the call sequence that makes those the phase boundaries of the spec.
    assert _run(lambda key: None) == ["get", "forget(a)", "done(a)"]
    assert _run(_fail) == ["get", "num_requeues(a)", "add_rate_limited(a)", "done(a)"]
    assert _run(_fail, max_retries=0) == ["get", "num_requeues(a)", "forget(a)", "done(a)"]
    real: VirtualRateLimitingQueue[str] = VirtualRateLimitingQueue(FakeClock())
    real.shut_down()
    recorder = RecordingQueue(real)
    assert not process_next_work_item(recorder, lambda key: None)
    assert recorder.calls == ["get"]


def test_paused_steps_compose_to_the_whole_call(graph: StateGraph) -> None:
    # Where a worker is idle and a key is queued, process_next_work_item run in one go
    # on the real queue ends where WorkerGet ; Reconcile ; WorkerDone end in the graph.
    index = graph.index()
    succ = graph.successors()

    def after(i: int, label: str) -> set[int]:
        return {e.target for e in succ[i] if e.label == label}

    checked = 0
    for i, state in enumerate(graph.states):
        w0 = MAPPING.world(state)
        if not len(w0.queue.core.queue):
            continue
        for worker in WORKERS:
            if w0.phase[worker] != "idle" or worker in w0.wq.stopped:
                continue  # a worker whose loop ended calls nothing more
            for reconcile, action in (
                (level_reconcile, "ReconcileOK"),
                (failing_reconcile, "ReconcileFail"),
            ):
                w = MAPPING.world(state)
                assert process_next_work_item(w.queue, reconcile(w))
                here = index[freeze_state(w.spec_state())]
                label = f'("{worker}")'
                ends = {
                    k
                    for j in after(i, f"WorkerGet{label}")
                    for h in after(j, f"{action}{label}")
                    for k in after(h, f"WorkerDone{label}")
                }
                assert ends == {here}, f"state {i}, {worker}, {action}: code {here}, spec {ends}"
                checked += 1
    print(f"{checked} whole calls checked")
    assert checked > 1000


def test_a_call_after_done_cannot_be_replayed(graph: StateGraph) -> None:
    def done_then_forget(queue: RetryingQueue[str], reconcile: Callable[[str], None]) -> bool:
        key, _ = queue.get()
        assert key is not None
        reconcile(key)
        queue.done(key)
        queue.forget(key)
        return True

    state = next(s for s in graph.states if phase(s, "w1") == "reconcile")
    with pytest.raises(AssertionError, match="called forget after done"):
        list(attrs.evolve(MAPPING, worker=done_then_forget)(state))


# -- broken code must fail the replay ----------------------------------------------------


def forgets_done_on_failure(queue: RetryingQueue[str], reconcile: Callable[[str], None]) -> bool:
    """The classic mistake: an early return on failure skips done."""
    key, shutdown = queue.get()
    if shutdown or key is None:
        return False
    try:
        reconcile(key)
    except Exception:
        queue.add_rate_limited(key)
        return True
    queue.forget(key)
    queue.done(key)
    return True


def drops_on_failure(queue: RetryingQueue[str], reconcile: Callable[[str], None]) -> bool:
    """Forgets a failed key instead of retrying it."""
    key, shutdown = queue.get()
    if shutdown or key is None:
        return False
    with contextlib.suppress(Exception):
        reconcile(key)
    queue.forget(key)
    queue.done(key)
    return True


def reads_the_server(world: ControllerWorld) -> Callable[[str], None]:
    """A reconcile that acts on the latest write (what a notification would carry)
    instead of reading the cache."""

    def reconcile(key: str) -> None:
        world.actual[key] = world.desired[key]

    return reconcile


def ignores_deletes(queue: VirtualRateLimitingQueue[str]) -> ResourceEventHandler:
    """An enqueue handler without a delete callback."""

    def enqueue(obj: object) -> None:
        queue.add(object_key(obj))

    return ResourceEventHandlerFuncs(add_func=enqueue, update_func=lambda _o, new: enqueue(new))


class AddNoDedupCore(QueueCore[T]):
    """Add that queues a key again although it is already dirty (and queued)."""

    def add(self, item: T) -> bool:
        if self.shutting_down:
            return False
        self.dirty.add(item)
        if item in self.processing:
            return False
        self.queue.push(item)
        return True


BROKEN: Mapping[str, tuple[ControllerMapping, str]] = {
    # name: (the mapping over the broken code, a mismatch it must produce)
    "worker forgets done on failure": (
        attrs.evolve(MAPPING, worker=forgets_done_on_failure),
        r'code ReconcileFail\("w\d"\) goes to a state outside the graph',
    ),
    "worker drops a failed key": (
        attrs.evolve(MAPPING, worker=drops_on_failure),
        r'code ReconcileFail\("w\d"\) goes to state \d+, which the spec does not allow',
    ),
    "reconcile reads the server, not the cache": (
        attrs.evolve(MAPPING, reconciler=reads_the_server),
        r'code ReconcileOK\("w\d"\) goes to a state outside the graph',
    ),
    "handler ignores deletes": (
        attrs.evolve(MAPPING, handler=ignores_deletes),
        r'spec edge Notify\("[ab]"\) -> state \d+ has no matching code move',
    ),
    "add does not dedup a dirty key": (
        attrs.evolve(MAPPING, factory=AddNoDedupCore),
        r'code Notify\("[ab]"\) goes to a state outside the graph',
    ),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_replay_catches_broken_code(graph: StateGraph, name: str) -> None:
    broken, expected = BROKEN[name]
    report = replay(graph, broken)
    assert not report.ok, f"{name} passed the replay: {report.summary()}"
    print(f"{name}: {report.mismatches[0]}")
    assert any(re.search(expected, m) for m in report.mismatches), "\n".join(report.mismatches)
