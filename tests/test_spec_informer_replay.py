"""The informer code refines spec/Informer.tla and spec/InformerAtomic.tla.

spec/graphs/Informer.json.gz and InformerAtomic.json.gz are every reachable state and
transition of the models TLC checks (MCInformer, MCInformerAtomic: two keys, three
server writes, watch drops, compaction and 410 relists). For each state the whole
informer -- ApiServerCore, the reflector's control flow parked where the state says,
the FIFO core, the indexer, the listener's buffer -- is rebuilt through the mapping in
refimpl/tla/refine_informer.py; every move the code can make (server writes and
compaction, the reflector's next step, processing, the handler's next notification)
must land on the successor the graph names for that action, and every graph edge must
have such a code move. The replay executes the graph: each state's reflector core is the
one the code move into it left (hidden state the spec does not carry, such as the last
list's rv). Broken parts, each a plausible bug, must fail the replay.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from spec_graphs import assert_reads_back, assert_refines, spec_graph
from test_conformance_broken import BROKEN_BUGS

from refimpl.cache.informer_core import FifoMode, InformerCore
from refimpl.cache.real_fifo import RealFIFOCore
from refimpl.cache.reflector import ReflectorCore
from refimpl.meta import ListOptions, meta_namespace_key_func
from refimpl.tla.graph import StateGraph
from refimpl.tla.manifest import load_manifest
from refimpl.tla.refine_informer import InformerMapping
from refimpl.tla.replay import replay
from refimpl.tour.ch07_model_and_code import WatchFromListRV, handler_first

SPEC = Path(__file__).resolve().parents[1] / "spec"
KEYS = ("a", "b")  # MCKeys
MAX_RV = 3  # MCMaxRV
ACTIONS = {
    FifoMode.DELTA: {"Write", "Compact", "List", "Connect", "WatchEvent", "WatchDrop"}
    | {"Pop", "StoreWrite", "Distribute", "Handle"},
    FifoMode.REAL_ATOMIC: {"Write", "Compact", "List", "Connect", "WatchEvent", "WatchDrop"}
    | {"Take", "ApplyEntry", "Distribute", "Finish", "Handle"},
}
MODEL = {FifoMode.DELTA: "Informer", FifoMode.REAL_ATOMIC: "InformerAtomic"}
MODES = [FifoMode.DELTA, FifoMode.REAL_ATOMIC]


def _graph(mode: FifoMode) -> StateGraph:
    return spec_graph(MODEL[mode])


@pytest.fixture(scope="module", params=MODES, ids=lambda m: MODEL[m])
def model(request: pytest.FixtureRequest) -> tuple[FifoMode, StateGraph]:
    mode: FifoMode = request.param
    return mode, _graph(mode)


def _mapping(mode: FifoMode, **broken: object) -> InformerMapping:
    return InformerMapping(KEYS, MAX_RV, mode, **broken)  # type: ignore[arg-type]


def test_graph_is_the_model_tlc_checks(model: tuple[FifoMode, StateGraph]) -> None:
    mode, graph = model
    entry = {m.name: m for m in load_manifest(SPEC)}[MODEL[mode]]
    assert entry.graph == f"graphs/{MODEL[mode]}.json.gz"
    assert len(graph.states) == entry.distinct_states
    assert len(graph.init) == 1
    assert {e.action for e in graph.edges} == ACTIONS[mode]
    # The faults the informer must survive are in the graph: a 410 answer to a watch
    # request, and a relist that must tombstone a key deleted meanwhile.
    gone = [
        e
        for e in graph.edges
        if e.action == "Connect" and graph.states[e.target]["reflector"] == "list"
    ]
    assert gone, "no watch request answered 410 in the graph"


def test_mapping_reads_back_every_state(model: tuple[FifoMode, StateGraph]) -> None:
    mode, graph = model
    assert_reads_back(graph, _mapping(mode))


# Minutes on a quiet 2-core machine; a shared one doubles that (pytest's default is 300 s).
@pytest.mark.timeout(900)
def test_informer_refines_spec(model: tuple[FifoMode, StateGraph]) -> None:
    mode, graph = model
    assert_refines(MODEL[mode], graph, _mapping(mode))


# -- broken parts ----------------------------------------------------------------------


#: Treats 410 Gone on a watch like a clean close: watches again from the same compacted
#: rv instead of relisting (the broken adapter informer-rewatch-after-410).
RewatchOnGone = BROKEN_BUGS.RewatchAfterExpired


class WatchesFromZero(ReflectorCore):
    """Asks every watch for resourceVersion "0" (get state and start) instead of the
    last synced one: synthetic ADDED events instead of the missed writes."""

    def watch_options(self, timeout_seconds: int) -> ListOptions:
        return attrs.evolve(super().watch_options(timeout_seconds), resource_version="0")


#: Forgets to move the last synced rv along with watch events (the broken adapter
#: informer-rewatch-from-list-rv).
NeverRecordsWatchRV = BROKEN_BUGS.RewatchFromListRV


class NonAtomicFifoInformer(InformerCore):
    """A v1.33-v1.35 RealFIFO (per-object Replaced entries) where v1.36+ expects the
    atomic one."""

    def _new_fifo_core(self, transform: object) -> RealFIFOCore:
        return RealFIFOCore(key_func=meta_namespace_key_func, known_objects=self.indexer)


BROKEN = [
    pytest.param(FifoMode.DELTA, {"process": handler_first}, id="delta-handler-first"),
    pytest.param(FifoMode.DELTA, {"reflector_core_factory": RewatchOnGone}, id="delta-rewatch-410"),
    pytest.param(
        FifoMode.DELTA, {"reflector_core_factory": NeverRecordsWatchRV}, id="delta-stale-rv"
    ),
    pytest.param(
        FifoMode.DELTA, {"reflector_core_factory": WatchesFromZero}, id="delta-watch-from-0"
    ),
    pytest.param(FifoMode.REAL_ATOMIC, {"process": handler_first}, id="atomic-handler-first"),
    pytest.param(
        FifoMode.REAL_ATOMIC, {"reflector_core_factory": RewatchOnGone}, id="atomic-rewatch-410"
    ),
    pytest.param(
        FifoMode.REAL_ATOMIC, {"informer_factory": NonAtomicFifoInformer}, id="atomic-not-atomic"
    ),
    # Hidden state (the list's rv), caught because the replay executes the graph
    # (the DeltaFIFO graph: tests/test_code_mutants.py).
    pytest.param(
        FifoMode.REAL_ATOMIC,
        {"reflector_core_factory": WatchFromListRV},
        id="atomic-rewatch-from-list-rv",
    ),
]


@pytest.mark.parametrize(("mode", "broken"), BROKEN)
def test_broken_informer_fails_replay(mode: FifoMode, broken: dict[str, object]) -> None:
    report = replay(_graph(mode), _mapping(mode, **broken), max_mismatches=3)
    assert not report.ok, f"{broken} passed the replay"
    print(report.mismatches[0])
