"""The informer code refines spec/InformerFaults.tla: list failures, a 410 on an open
watch, very short watches, 429s on a watch request and bookmarks.

spec/graphs/InformerFaults.json.gz is every reachable state and transition of
MCInformerFaults (two keys, two server writes, one fault -- a failed list, an ERROR 410
on an open watch, a watch that ends within a second with no event or a watch request
answered 429 -- and one bookmark). The whole DeltaFIFO informer is rebuilt in each state through
refimpl/tla/refine_informer.py (``max_faults`` set), and every code move must be a
graph edge and every edge a code move. The broken reflectors below pass the replay of
spec/graphs/Informer.json.gz (which has none of these faults) and must fail this one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from spec_graphs import assert_reads_back, assert_refines, spec_graph

from refimpl.cache.informer_core import FifoMode
from refimpl.cache.reflector import NextStep, ReflectorCore, VeryShortWatchError
from refimpl.tla.graph import StateGraph
from refimpl.tla.manifest import load_manifest
from refimpl.tla.mappings import mapping_for
from refimpl.tla.refine_informer import InformerMapping
from refimpl.tla.replay import replay
from refimpl.tour.ch07_model_and_code import WatchFromListRV

SPEC = Path(__file__).resolve().parents[1] / "spec"
MODEL = "InformerFaults"
ACTIONS = {"Write", "Compact", "List", "Connect", "WatchEvent", "WatchDrop"} | {
    "Pop",
    "StoreWrite",
    "Distribute",
    "Handle",
    "ListFail",
    "WatchExpired",
    "WatchShort",
    "WatchRetry",
    "BookmarkSend",
    "WatchBookmark",
}


def _graph() -> StateGraph:
    return spec_graph(MODEL)


def _mapping(**broken: object) -> InformerMapping:
    mapping = mapping_for(MODEL, SPEC / "MCInformerFaults.tla")
    assert isinstance(mapping, InformerMapping)
    assert mapping.keys == ("a", "b") and mapping.max_rv == 2
    assert mapping.max_faults == 1 and mapping.max_bookmarks == 1
    return InformerMapping(
        mapping.keys,
        mapping.max_rv,
        FifoMode.DELTA,
        max_faults=mapping.max_faults,
        max_bookmarks=mapping.max_bookmarks,
        **broken,  # type: ignore[arg-type]
    )


def test_graph_is_the_model_tlc_checks() -> None:
    graph = _graph()
    entry = {m.name: m for m in load_manifest(SPEC)}[MODEL]
    assert entry.graph == f"graphs/{MODEL}.json.gz"
    assert len(graph.states) == entry.distinct_states
    assert len(graph.init) == 1
    assert {e.action for e in graph.edges} == ACTIONS
    # A short watch relists only when it delivered nothing; a bookmark counts.
    states = graph.states
    short = [e for e in graph.edges if e.action == "WatchShort"]
    assert short and all(not states[e.source]["eventSeen"] for e in short)
    assert any(states[e.source]["bookmark"] for e in graph.edges if e.action == "WatchEvent")
    # A 429 on a watch request is retried from the same rv: no relist.
    retry = [e for e in graph.edges if e.action == "WatchRetry"]
    assert retry and all(states[e.target]["reflector"] == "connect" for e in retry)
    assert all(states[e.source]["lastSyncRV"] == states[e.target]["lastSyncRV"] for e in retry)


def test_mapping_reads_back_every_state() -> None:
    assert_reads_back(_graph(), _mapping())


# Minutes on a quiet 2-core machine; a shared one doubles that (pytest's default is 300 s).
@pytest.mark.timeout(900)
def test_informer_refines_spec_with_faults() -> None:
    assert_refines(MODEL, _graph(), _mapping())


# -- broken parts ----------------------------------------------------------------------


class ShortWatchRewatches(ReflectorCore):
    """Takes a watch that ended at once with no event for a clean close and watches
    again, where client-go relists (a server that keeps closing watches would be
    hammered with watch requests)."""

    def after_watch(self, err: BaseException | None, now: float) -> NextStep:
        if isinstance(err, VeryShortWatchError):
            return NextStep.REWATCH
        return super().after_watch(err, now)


class RelistsAtOnce(ReflectorCore):
    """Retries every failed list at once, from "" (as client-go does for 410 only),
    instead of backing off."""

    def list_failed(self, err: BaseException) -> bool:
        super().list_failed(err)
        self.is_last_sync_resource_version_unavailable = True
        return True


class RewatchOnGone(ReflectorCore):
    """Re-watches from the last synced rv after an ERROR 410 instead of relisting."""

    def after_watch(self, err: BaseException | None, now: float) -> NextStep:
        step = super().after_watch(err, now)
        return NextStep.REWATCH if step is NextStep.RELIST else step


class RelistsAfter429(ReflectorCore):
    """Takes a watch request answered 429 for a failed pass and relists (after the
    loop's backoff), where client-go backs off and requests the watch again from the
    last synced rv: each 429 costs a full list, the load the 429 asked to shed."""

    @staticmethod
    def after_watch_start_error(err: BaseException) -> NextStep:
        return NextStep.FAIL


BROKEN = [
    pytest.param({"reflector_core_factory": ShortWatchRewatches}, id="short-watch-rewatches"),
    pytest.param({"reflector_core_factory": RelistsAtOnce}, id="list-error-no-backoff"),
    pytest.param({"reflector_core_factory": RewatchOnGone}, id="rewatch-after-410"),
    pytest.param({"reflector_core_factory": RelistsAfter429}, id="relist-after-429"),
    # Hidden state (the list's rv), caught because the replay executes the graph.
    pytest.param({"reflector_core_factory": WatchFromListRV}, id="rewatch-from-list-rv"),
]


@pytest.mark.parametrize("broken", BROKEN)
def test_broken_reflector_fails_replay(broken: dict[str, object]) -> None:
    report = replay(_graph(), _mapping(**broken), max_mismatches=3)
    assert not report.ok, f"{broken} passed the replay"
    print(report.mismatches[0])
