"""The informer code refines spec/InformerResync.tla: per-listener resync and a second
handler registered after start.

spec/graphs/InformerResync.json.gz is every reachable state and transition of
MCInformerResync (one key, two server writes, one resync check that may find any set
of the handlers due). The DeltaFIFO informer is rebuilt in each state with two
listeners through refimpl/tla/refine_informer_resync.py, and every code move must be a
graph edge and every edge a code move. A processDeltas from before kubernetes PR
#86015 (a relist's update handed on as a resync) passes the replay of
spec/graphs/Informer.json.gz, which never resyncs and has one handler, and must fail
this one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest
from spec_graphs import assert_reads_back, assert_refines, spec_graph

from refimpl.cache.deltas import Delta, DeltaType
from refimpl.cache.handlers import ResourceEventHandler
from refimpl.cache.informer_core import InformerCore
from refimpl.cache.process_deltas import process_deltas
from refimpl.cache.processor import Notification, ProcessorListener, SharedProcessor
from refimpl.cache.store import Indexer
from refimpl.tla.graph import StateGraph
from refimpl.tla.manifest import load_manifest
from refimpl.tla.mappings import mapping_for
from refimpl.tla.refine_informer_resync import InformerResyncMapping
from refimpl.tla.replay import replay
from refimpl.tla.values import Fn

SPEC = Path(__file__).resolve().parents[1] / "spec"
MODEL = "InformerResync"
ACTIONS = {"Write", "Compact", "List", "Connect", "WatchEvent", "WatchDrop"} | {
    "Pop",
    "StoreWrite",
    "Distribute",
    "Handle",
    "Handle2",
    "AddHandler",
    "ResyncCheck",
}


def _graph() -> StateGraph:
    return spec_graph(MODEL)


def _mapping(**broken: object) -> InformerResyncMapping:
    mapping = mapping_for(MODEL, SPEC / "MCInformerResync.tla")
    assert isinstance(mapping, InformerResyncMapping)
    assert mapping.keys == ("a",) and mapping.max_rv == 2 and mapping.max_resyncs == 1
    return InformerResyncMapping(
        mapping.keys,
        mapping.max_rv,
        mapping.mode,
        max_resyncs=mapping.max_resyncs,
        **broken,  # type: ignore[arg-type]
    )


def test_graph_is_the_model_tlc_checks() -> None:
    graph = _graph()
    entry = {m.name: m for m in load_manifest(SPEC)}[MODEL]
    assert entry.graph == f"graphs/{MODEL}.json.gz"
    assert len(graph.states) == entry.distinct_states
    assert len(graph.init) == 1
    assert {e.action for e in graph.edges} == ACTIONS
    # The graph holds the #86015 situation: a check that finds h2 not due while h1 is.
    states = graph.states
    checks = [states[e.target]["syncing"] for e in graph.edges if e.action == "ResyncCheck"]
    flags = [cast(Fn, s) for s in checks]
    assert any(f["h1"] is True and f["h2"] is False for f in flags)


def test_mapping_reads_back_every_state() -> None:
    assert_reads_back(_graph(), _mapping())


@pytest.mark.timeout(900)
def test_informer_refines_spec_with_resync() -> None:
    assert_refines(MODEL, _graph(), _mapping())


# -- broken parts ----------------------------------------------------------------------


def relist_as_resync(
    handler: ResourceEventHandler[Any], store: Indexer[Any], deltas: Sequence[Delta], initial: bool
) -> None:
    """processDeltas before kubernetes PR #86015, through today's handler interface:
    an update from a Sync or Replaced delta is handed on as a resync (the old object
    passed is the new one, so the informer's resourceVersion rule takes it for one),
    and a relist's changed object reaches only the handlers due at the last check.
    (adapters/broken/bugs.py's ``informer-relist-as-resync`` breaks the reference's
    informer the same way, through its processor.)"""
    for delta in deltas:
        if delta.type in (DeltaType.SYNC, DeltaType.REPLACED):
            _, exists = store.get(delta.object)
            if exists:
                store.update(delta.object)
                handler.on_update(delta.object, delta.object)
                continue
        process_deltas(handler, store, [delta], initial)


class ResyncToEveryListener(SharedProcessor):
    """Hands a resync update to every listener, due or not (the syncing flags are
    kept but not read): handlers not due are woken by resyncs they did not ask for."""

    def distribute(self, notification: Notification, sync: bool) -> None:
        super().distribute(notification, False)


class ResyncToEveryListenerInformer(InformerCore[Any]):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.processor = ResyncToEveryListener(self.clock, threaded=False)


class LateHandlerWithoutCache(InformerCore[Any]):
    """Registers a handler after start without handing it the cache as initial adds:
    it hears only of changes made after it joined (INF-7)."""

    def _add_listener(self, listener: ProcessorListener) -> None:
        self.processor.add_listener(listener)


BROKEN = [
    pytest.param({"process": relist_as_resync}, id="relist-as-resync"),
    pytest.param({"informer_factory": ResyncToEveryListenerInformer}, id="resync-to-all"),
    pytest.param({"informer_factory": LateHandlerWithoutCache}, id="late-handler-no-cache"),
]


@pytest.mark.parametrize("broken", BROKEN)
def test_broken_part_fails_replay(broken: dict[str, object]) -> None:
    report = replay(_graph(), _mapping(**broken), max_mismatches=3)
    assert not report.ok, f"{broken} passed the replay"
    print(report.mismatches[0])
