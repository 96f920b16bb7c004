"""Chapter 07 -- the model and the code: how the TLA+ specs are tied to the Python code.

Experiments on the committed state graphs (spec/graphs/*.json.gz, exported by TLC) and
the refinement mappings of refimpl/tla/ (docs/07-the-model-and-the-code.md). Nothing
here needs TLC: the graphs are data, and the replay runs the real code over them.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import attrs

from refimpl.cache.deltas import Delta, DeltaType
from refimpl.cache.handlers import ResourceEventHandler
from refimpl.cache.process_deltas import process_deltas
from refimpl.cache.reflector import ReflectorCore
from refimpl.cache.store import Indexer
from refimpl.meta import ListOptions, meta_namespace_key_func
from refimpl.tla.graph import StateGraph, load_graph, spec_files, spec_hash
from refimpl.tla.manifest import default_spec_dir, load_manifest
from refimpl.tla.mappings import mapping_for, mc_constants
from refimpl.tla.refine_informer import InformerMapping
from refimpl.tla.refine_workqueue import WorkQueueMapping
from refimpl.tla.replay import replay
from refimpl.tla.values import Fn, Value
from refimpl.tour import Claim, equal, experiment, holds
from refimpl.workqueue import QueueCore
from refimpl.workqueue.core import DoneHint

CHAPTER = "07"
TITLE = "The model and the code"

T = TypeVar("T", bound=Hashable)


def _spec() -> Path:
    return default_spec_dir()


def _graph(name: str) -> StateGraph:
    return load_graph(_spec() / "graphs" / f"{name}.json.gz")


class DoneForgetsCore(QueueCore[T]):
    """A work queue whose done() forgets a key that was re-added while in flight."""

    def done(self, item: T) -> DoneHint:
        self.processing.discard(item)
        return DoneHint(requeued=False, idle=not self.processing)


def _readd_in_flight(state: Mapping[str, Value]) -> bool:
    """Worker w1 holds "a", "a" was added again meanwhile, nothing is queued."""
    holding = state["holding"]
    return (
        isinstance(holding, Fn)
        and holding["w1"] == "a"
        and state["dirty"] == frozenset({"a"})
        and state["queue"] == ()
        and not state["shuttingDown"]
    )


@experiment(CHAPTER, "workqueue", "The work queue code takes exactly the spec's steps")
def workqueue() -> list[Claim]:
    graph = _graph("WorkQueue")
    report = replay(graph, mapping_for("WorkQueue", _spec() / "MCWorkQueue.tla"))
    # One state, looked at closely: the spec's Done from a re-add in flight.
    index = next(i for i, s in enumerate(graph.states) if _readd_in_flight(s))
    done = [e for e in graph.edges if e.source == index and e.action == "Done"]
    after = graph.states[done[0].target]
    c = mc_constants(_spec() / "MCWorkQueue.tla")
    keys = tuple(sorted(str(k) for k in c["Keys"])) if isinstance(c["Keys"], frozenset) else ()
    broken = replay(
        graph, WorkQueueMapping(keys, str(c["NoItem"]), DoneForgetsCore), max_mismatches=10**6
    )
    return [
        equal("07.wq-states", "states of the WorkQueue model", report.states, 318),
        equal("07.wq-edges", "its edges (steps between distinct states)", report.edges, 1266),
        equal(
            "07.wq-mismatches",
            "code moves that are no spec edge, and back",
            len(report.mismatches),
            0,
        ),
        equal(
            "07.wq-done-requeues",
            "queue after the spec's Done of a key re-added in flight",
            str(after["queue"]),
            "('a',)",
        ),
        equal(
            "07.wq-done-forgets",
            "states where a done() that forgets such a key disagrees",
            _states_with_mismatch(broken.mismatches),
            128,
        ),
        _first_complaint("07.wq-done-forgets-first", broken.mismatches, "Done"),
    ]


def _states_with_mismatch(mismatches: Sequence[str]) -> int:
    return len({m.split(" ", 2)[1] for m in mismatches})


def _first_complaint(id: str, mismatches: Sequence[str], action: str) -> Claim:
    """The replay's first complaint, cut to "code <action>(...) goes to ..."."""
    text = mismatches[0].split("]: ", 1)[-1].split(", which")[0] if mismatches else "none"
    return holds(
        id,
        "the replay's first complaint",
        text,
        f"code {action}... goes to a state outside the graph",
        text.startswith(f"code {action}") and text.endswith("outside the graph"),
    )


def handler_first(
    handler: ResourceEventHandler[Any], store: Indexer, deltas: Sequence[Delta], initial: bool
) -> None:
    """processDeltas with the two halves swapped: notify, then write the store (a
    ReplacedAll, SyncAll or Bookmark entry of the atomic RealFIFO is left to the real
    processDeltas)."""
    for delta in deltas:
        obj = delta.object
        if delta.type in (DeltaType.REPLACED_ALL, DeltaType.SYNC_ALL, DeltaType.BOOKMARK):
            process_deltas(handler, store, [delta], initial)
            continue
        if delta.type is DeltaType.DELETED:
            handler.on_delete(obj)
            store.delete(obj)
            continue
        old, exists = store.get_by_key(meta_namespace_key_func(obj))
        if exists:
            handler.on_update(old, obj)
            store.update(obj)
        else:
            handler.on_add(obj, initial)
            store.add(obj)


class WatchFromListRV(ReflectorCore):
    """A reflector core that re-watches from the last *list's* resourceVersion instead
    of the last event's: watch events still move the last synced rv (so every spec
    variable reads right), but after a watch drop the events since the list come again.
    The list's rv is hidden state: only a replay that executes the path to a state
    sees it (docs/07-the-model-and-the-code.md, "Hidden state")."""

    list_rv = ""

    def set_last_sync_resource_version(self, resource_version: str) -> None:
        self.list_rv = resource_version
        super().set_last_sync_resource_version(resource_version)

    def watch_options(self, timeout_seconds: int) -> ListOptions:
        options = super().watch_options(timeout_seconds)
        return attrs.evolve(options, resource_version=self.list_rv or options.resource_version)


@experiment(CHAPTER, "informer", "The informer's graph: faults included, bugs found")
def informer() -> list[Claim]:
    graph = _graph("Informer")
    manifest = {m.name: m for m in load_manifest(_spec())}["Informer"]
    gone = sum(
        1
        for e in graph.edges
        if e.action == "Connect" and graph.states[e.target]["reflector"] == "list"
    )
    tombstones = sum(1 for s in graph.states if _tombstone_queued(s))
    broken = replay(
        graph,
        attrs.evolve(
            cast(InformerMapping, mapping_for("Informer", _spec() / "MCInformer.tla")),
            process=handler_first,
        ),
        max_mismatches=1,
    )
    return [
        equal("07.inf-states", "states of the Informer model", len(graph.states), 31803),
        equal("07.inf-edges", "its edges", len(graph.edges), 96725),
        equal(
            "07.inf-manifest",
            "states TLC reported when it checked the model",
            manifest.distinct_states,
            31803,
        ),
        equal("07.inf-410", "watch requests answered 410 Gone in the graph", gone, 1402),
        equal("07.inf-tombstones", "states with a tombstone queued", tombstones, 1532),
        _first_complaint("07.inf-handler-first", broken.mismatches, "StoreWrite"),
    ]


def _tombstone_queued(state: Mapping[str, Value]) -> bool:
    items = state["items"]
    assert isinstance(items, Fn)
    for deltas in items.values():
        assert isinstance(deltas, tuple)
        for delta in deltas:
            assert isinstance(delta, Fn) and isinstance(delta["obj"], Fn)
            if delta["obj"]["dfsu"]:
                return True
    return False


@experiment(CHAPTER, "stale", "A graph knows which spec it came from")
def stale() -> list[Claim]:
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "spec"
        shutil.copytree(_spec(), spec, ignore=shutil.ignore_patterns("graphs", "states"))
        files = spec_files(spec / "MCWorkQueue.tla", spec / "MCWorkQueue.cfg", library=[spec])
        before = spec_hash(files)
        module = spec / "WorkQueue.tla"
        module.write_text(module.read_text().replace("====", "Unused == TRUE\n====", 1))
        after = spec_hash(files)
    recorded = _graph("WorkQueue").spec_hash
    return [
        holds(
            "07.hash-current",
            "the committed graph's hash equals the spec's",
            "equal" if recorded == before else "different",
            "equal",
            recorded == before,
        ),
        holds(
            "07.hash-changes",
            "one added definition changes the hash",
            "different" if after != before else "equal",
            "different",
            after != before,
        ),
    ]
