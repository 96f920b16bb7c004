"""The FIFO cores refine their specs: replayed over every state and edge of
spec/graphs/DeltaFIFO.json.gz, RealFIFO.json.gz and RealFIFOAtomic.json.gz.

Each state is rebuilt as a core plus an Indexer store through the mapping in
refimpl/tla/refine_fifo.py; every producer call the model allows (Add, Update, Delete of
every object, Replace of every relist, Resync, with the store listing its keys in every
order Go's map could produce), Close, and the consumer's step (pop-and-process, a batch
of two or more, waiting on an empty FIFO, or the exit on a closed empty one), must land
on the successor the graph names, and every graph edge must have such a code move.
Broken cores, each re-introducing a known bug or a DeltaFIFO/RealFIFO confusion, must
fail the replay.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from spec_graphs import spec_graph
from test_conformance_broken import BROKEN_BUGS

from refimpl.cache.delta_fifo import DeltaFIFOCore
from refimpl.cache.deltas import Delta, Deltas, DeltaType, FIFOClosedError
from refimpl.cache.real_fifo import RealFIFOCore
from refimpl.tla.graph import StateGraph
from refimpl.tla.refine_fifo import DeltaFIFOMapping, RealFIFOMapping
from refimpl.tla.replay import replay

KEYS = ("a", "b")  # MCKeys
RVS = (1, 2)  # MCRVs


def _graph(name: str) -> StateGraph:
    return spec_graph(name)


@pytest.fixture(scope="module")
def delta_graph() -> StateGraph:
    return _graph("DeltaFIFO")


@pytest.fixture(scope="module")
def real_graph() -> StateGraph:
    return _graph("RealFIFO")


@pytest.fixture(scope="module")
def atomic_graph() -> StateGraph:
    return _graph("RealFIFOAtomic")


def test_delta_fifo_core_refines_spec(delta_graph: StateGraph) -> None:
    report = replay(delta_graph, DeltaFIFOMapping(KEYS, RVS, max_queued=2))
    print("DeltaFIFO:", report.summary())
    assert report.ok, "\n".join(report.mismatches)
    assert report.states == len(delta_graph.states) == 10116
    assert report.edges + report.stutters >= len(delta_graph.edges)


def test_real_fifo_core_refines_spec(real_graph: StateGraph) -> None:
    report = replay(real_graph, RealFIFOMapping(KEYS, RVS, max_queued=2, atomic=False))
    print("RealFIFO:", report.summary())
    assert report.ok, "\n".join(report.mismatches)
    assert report.states == len(real_graph.states) == 12984


def test_atomic_real_fifo_core_refines_spec(atomic_graph: StateGraph) -> None:
    report = replay(atomic_graph, RealFIFOMapping(KEYS, RVS, max_queued=1, atomic=True))
    print("RealFIFO atomic:", report.summary())
    assert report.ok, "\n".join(report.mismatches)
    assert report.states == len(atomic_graph.states) == 14176
    assert report.edges == len(atomic_graph.edges)


# -- broken DeltaFIFO cores ----------------------------------------------------------


#: Queues every delete, like RealFIFO (DeltaFIFO drops deletes of unknown keys); the
#: broken adapter delta-fifo-queues-unknown-delete.
DeleteNeverSkipped = BROKEN_BUGS.DeltaFIFODeleteUnknownQueued

#: Resyncs keys that have queued deltas (a stale store copy after a newer event); the
#: broken adapter resync-over-queued.
ResyncOverQueued = BROKEN_BUGS.ResyncOverQueued

#: Relist tombstones only from the store: a queued Added whose object vanished is never
#: deleted (the ghost fixed by upstream PR #115620); the broken adapter
#: replace-no-queued-tombstones.
ReplaceBefore115620 = BROKEN_BUGS.ReplaceWithoutQueuedTombstones

#: Collapses a Deleted pair keeping the newer delta, even a tombstone over a real final
#: state; the broken adapter dedup-deletes-keeps-newer.
DedupKeepsNewer = BROKEN_BUGS.DedupKeepsNewer


class ClosedPopDropsQueued(DeltaFIFOCore):
    """Pop checks ``closed`` before the queue: what was queued before Close is lost."""

    def pop_ready(self) -> tuple[str, Deltas, bool]:
        if self.closed:
            raise FIFOClosedError()
        return super().pop_ready()


@pytest.mark.parametrize(
    "broken",
    [
        DeleteNeverSkipped,
        ResyncOverQueued,
        ReplaceBefore115620,
        DedupKeepsNewer,
        ClosedPopDropsQueued,
    ],
)
def test_replay_catches_a_broken_delta_fifo(
    delta_graph: StateGraph, broken: type[DeltaFIFOCore]
) -> None:
    report = replay(delta_graph, DeltaFIFOMapping(KEYS, RVS, 2, factory=broken))
    assert not report.ok, f"{broken.__name__} passed: {report.summary()}"


# -- broken RealFIFO cores -----------------------------------------------------------


#: Counts an entry as done when it is taken (DeltaFIFO's timing): HasSynced can turn
#: true while the last initial entry is still being processed (PR #136264). The same
#: core is the broken adapter real-fifo-synced-at-take.
SyncedAtTake = BROKEN_BUGS.RealFIFOSyncedAtTake


class ReplacedBeforeTombstones(RealFIFOCore):
    """Non-atomic relist in DeltaFIFO's order: Replaced entries first, then deletions."""

    def replace(self, objects: Sequence[object], resource_version: str = "") -> None:
        before = len(self.items)
        super().replace(objects, resource_version)
        new = list(self.items)[before:]
        tombs = [d for d in new if d.type is DeltaType.DELETED]
        rest = [d for d in new if d.type is not DeltaType.DELETED]
        for _ in new:
            self.items.pop()
        self.items.extend(rest + tombs)


class DeleteFiltered(RealFIFOCore):
    """Drops deletes of keys the store does not hold (DeltaFIFO's rule)."""

    def delete(self, obj: object) -> None:
        assert self.known_objects is not None
        key = self.key_of(obj)
        if key not in self.known_objects.list_keys():
            self.populated = True
            self._check_synced()
            return
        super().delete(obj)


class BatchPastInitialList(RealFIFOCore):
    """PopBatch ignores the initial list's end: a batch mixes its last entries with
    later ones, all handed out as initial."""

    def take_batch(self) -> tuple[list[Delta], bool]:
        count = self.initial_population_count
        self.initial_population_count = 0
        try:
            return super().take_batch()
        finally:
            self.initial_population_count = count


class BatchRepeatsKeys(RealFIFOCore):
    """PopBatch takes the whole run of object entries, two of one key included."""

    def take_batch(self) -> tuple[list[Delta], bool]:
        self._check_can_take()
        initial = not self.synced
        count = self.initial_population_count
        n = 0
        while n < len(self.items) and (count == 0 or n < count):
            if self.items[n].type in (DeltaType.REPLACED_ALL, DeltaType.SYNC_ALL):
                n = max(n, 1)
                break
            n += 1
        return [self.items.popleft() for _ in range(n)], initial


class ClosedTakeDropsQueued(RealFIFOCore):
    """Pop checks ``closed`` before the log: what was queued before Close is lost."""

    def take_one(self) -> tuple[Delta, bool]:
        if self.closed:
            raise FIFOClosedError()
        return super().take_one()


def test_replay_catches_synced_before_processing(atomic_graph: StateGraph) -> None:
    report = replay(atomic_graph, RealFIFOMapping(KEYS, RVS, 1, True, factory=SyncedAtTake))
    assert not report.ok, report.summary()


@pytest.mark.parametrize(
    "broken",
    [
        ReplacedBeforeTombstones,
        DeleteFiltered,
        BatchPastInitialList,
        BatchRepeatsKeys,
        ClosedTakeDropsQueued,
    ],
)
def test_replay_catches_a_broken_real_fifo(
    real_graph: StateGraph, broken: type[RealFIFOCore]
) -> None:
    report = replay(real_graph, RealFIFOMapping(KEYS, RVS, 2, False, factory=broken))
    assert not report.ok, f"{broken.__name__} passed: {report.summary()}"


@pytest.mark.parametrize("broken", [ClosedTakeDropsQueued])
def test_replay_catches_a_broken_atomic_real_fifo(
    atomic_graph: StateGraph, broken: type[RealFIFOCore]
) -> None:
    report = replay(atomic_graph, RealFIFOMapping(KEYS, RVS, 1, True, factory=broken))
    assert not report.ok, f"{broken.__name__} passed: {report.summary()}"


# -- DeltaFIFO with emit_delta_type_replaced off (client-go before 1.18) ----------------


@pytest.fixture(scope="module")
def no_replaced_graph() -> StateGraph:
    return _graph("DeltaFIFONoReplaced")


def test_delta_fifo_core_without_replaced_refines_its_spec(no_replaced_graph: StateGraph) -> None:
    mapping = DeltaFIFOMapping(KEYS, RVS, 2, emit_delta_type_replaced=False)
    report = replay(no_replaced_graph, mapping)
    print("DeltaFIFONoReplaced:", report.summary())
    assert report.ok, "\n".join(report.mismatches)
    assert report.states == len(no_replaced_graph.states) == 9388
    assert report.edges + report.stutters >= len(no_replaced_graph.edges)


@pytest.mark.parametrize("emit", [True, False])
def test_each_graph_tells_the_option_apart(
    delta_graph: StateGraph, no_replaced_graph: StateGraph, emit: bool
) -> None:
    """A core in the other setting fails the graph: a relist's delta type is seen."""
    graph = no_replaced_graph if emit else delta_graph
    report = replay(graph, DeltaFIFOMapping(KEYS, RVS, 2, emit_delta_type_replaced=emit))
    assert not report.ok
    assert "Replace" in report.mismatches[0], report.mismatches[0]


def test_replay_without_replaced_catches_the_ghost(no_replaced_graph: StateGraph) -> None:
    mapping = DeltaFIFOMapping(
        KEYS, RVS, 2, factory=ReplaceBefore115620, emit_delta_type_replaced=False
    )
    report = replay(no_replaced_graph, mapping)
    assert not report.ok, report.summary()
