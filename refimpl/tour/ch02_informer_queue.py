"""Chapter 02 -- inside the informer's queue: DeltaFIFO and RealFIFO, and what changed.

Experiments that feed the same events to each FIFO an informer can use and pop them
into an indexer through ``process_deltas``, exactly as the informer does
(docs/02-inside-the-informers-queue.md). No threads, no time: the FIFOs' shells never
block when something is queued.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from refimpl.cache.delta_fifo import DeltaFIFO
from refimpl.cache.deltas import Delta
from refimpl.cache.process_deltas import process_deltas
from refimpl.cache.shared_informer import FifoMode, SharedIndexInformer
from refimpl.cache.store import Indexer
from refimpl.meta import DeletedFinalStateUnknown, Object
from refimpl.tour import Claim, equal, experiment
from refimpl.tour.stack import new_fifo

CHAPTER = "02"
TITLE = "Inside the informer's queue: DeltaFIFO and RealFIFO"

#: An event fed to a FIFO: ("add" | "update" | "delete", name, version) or
#: ("replace", names..., version) for a relist of exactly those objects.
Op = tuple[str, ...]


def _obj(name: str, version: str) -> Object:
    return Object(name, namespace="default", resource_version=version, data=version)


@attrs.define
class _Recorder:
    """The handler: records each call as ``kind:name@version``."""

    calls: list[str] = attrs.field(factory=list)

    @staticmethod
    def _label(obj: object) -> str:
        if isinstance(obj, DeletedFinalStateUnknown):
            return f"{obj.key.split('/')[-1]}(tombstone)"
        assert isinstance(obj, Object)
        return f"{obj.name}@{obj.resource_version}"

    def on_add(self, obj: object, is_in_initial_list: bool) -> None:
        self.calls.append(f"add:{self._label(obj)}")

    def on_update(self, old: object, new: object) -> None:
        self.calls.append(f"update:{self._label(new)}")

    def on_delete(self, obj: object) -> None:
        self.calls.append(f"delete:{self._label(obj)}")


@attrs.frozen
class Run:
    pops: int
    calls: list[str]
    cached: list[str]


def feed(mode: FifoMode, ops: Sequence[Op], *, initial: Sequence[Op] = ()) -> Run:
    """Apply ``initial`` and pop it all (the informer is synced), then apply ``ops``
    without popping, then pop everything; report pops, handler calls and the cache."""
    indexer = Indexer()
    fifo = new_fifo(mode, indexer, "tour")
    recorder = _Recorder()
    pops = 0

    def process(deltas: Sequence[Delta], is_in_initial_list: bool) -> None:
        process_deltas(recorder, indexer, deltas, is_in_initial_list)

    def queued() -> int:
        if isinstance(fifo, DeltaFIFO):
            return len(fifo.snapshot()[0])
        return len(fifo.snapshot())

    def apply(op: Op) -> None:
        kind, *args = op
        if kind == "replace":
            *names, version = args
            fifo.replace([_obj(n, version) for n in names], version)
            return
        name, version = args
        if kind == "add":
            fifo.add(_obj(name, version))
        elif kind == "update":
            fifo.update(_obj(name, version))
        elif kind == "delete":
            fifo.delete(_obj(name, version))
        else:
            raise ValueError(f"unknown op {kind!r}")

    for phase in (initial, ops):
        for op in phase:
            apply(op)
        if phase is initial:
            recorder.calls.clear()
        while queued():
            fifo.pop(process)
            if phase is ops:
                pops += 1
        if phase is initial:
            recorder.calls.clear()
    cached = sorted(
        f"{o.name}@{o.resource_version}" for o in indexer.list() if isinstance(o, Object)
    )
    return Run(pops, recorder.calls, cached)


MODES = {"DeltaFIFO": FifoMode.DELTA, "RealFIFO": FifoMode.REAL}


@experiment(CHAPTER, "merging", "Five events for one key: one entry, or five")
def merging() -> list[Claim]:
    ops: list[Op] = [("add", "web", "2"), *(("update", "web", str(v)) for v in range(3, 7))]
    delta = feed(FifoMode.DELTA, ops)
    real = feed(FifoMode.REAL, ops)
    return [
        equal("02.delta-pops", "DeltaFIFO: pops for 5 events to one key", delta.pops, 1),
        equal("02.real-pops", "RealFIFO: pops for the same 5 events", real.pops, 5),
        equal(
            "02.delta-calls",
            "DeltaFIFO: handler calls (one per event, from that one pop)",
            len(delta.calls),
            5,
        ),
        equal("02.real-calls", "RealFIFO: handler calls", len(real.calls), 5),
    ]


@experiment(CHAPTER, "cross-key-order", "Events for two keys: arrival order or not")
def cross_key_order() -> list[Claim]:
    ops: list[Op] = [("update", "a", "4"), ("update", "b", "5"), ("update", "a", "6")]
    initial: list[Op] = [("replace", "a", "b", "3")]
    delta = feed(FifoMode.DELTA, ops, initial=initial)
    real = feed(FifoMode.REAL, ops, initial=initial)
    return [
        equal(
            "02.delta-order",
            "DeltaFIFO: handler sees a@4, b@5, a@6 as",
            ", ".join(delta.calls),
            "update:a@4, update:a@6, update:b@5",
        ),
        equal(
            "02.real-order",
            "RealFIFO: handler sees them as",
            ", ".join(real.calls),
            "update:a@4, update:b@5, update:a@6",
        ),
    ]


@experiment(CHAPTER, "unknown-delete", "A delete for a key the informer never had")
def unknown_delete() -> list[Claim]:
    ops: list[Op] = [("delete", "ghost", "7")]
    delta = feed(FifoMode.DELTA, ops)
    real = feed(FifoMode.REAL, ops)
    atomic = feed(FifoMode.REAL_ATOMIC, ops)
    return [
        equal("02.delta-unknown-delete", "DeltaFIFO: handler calls", len(delta.calls), 0),
        equal(
            "02.real-unknown-delete",
            "RealFIFO: handler calls",
            ", ".join(real.calls),
            "delete:ghost@7",
        ),
        equal(
            "02.atomic-unknown-delete",
            "RealFIFO, atomic (v1.36 default): handler calls",
            ", ".join(atomic.calls),
            "delete:ghost@7",
        ),
    ]


@experiment(CHAPTER, "relist", "A relist that no longer lists an object still queued")
def relist() -> list[Claim]:
    # "web" is created (its add still queued) and then missing from a relist: the
    # informer must end without it, and tell the handler (upstream #115620).
    ops: list[Op] = [("add", "web", "4"), ("replace", "db", "5")]
    initial: list[Op] = [("replace", "db", "3")]
    results = {name: feed(mode, ops, initial=initial) for name, mode in MODES.items()}
    atomic = feed(FifoMode.REAL_ATOMIC, ops, initial=initial)
    many = feed(
        FifoMode.REAL_ATOMIC,
        [("replace", *(f"obj-{i}" for i in range(100)), "9")],
        initial=[("replace", "3")],
    )
    many_real = feed(
        FifoMode.REAL,
        [("replace", *(f"obj-{i}" for i in range(100)), "9")],
        initial=[("replace", "3")],
    )
    return [
        equal(
            "02.relist-delta",
            "DeltaFIFO: cache after the relist",
            ", ".join(results["DeltaFIFO"].cached),
            "db@5",
        ),
        equal(
            "02.relist-delta-calls",
            "DeltaFIFO: handler calls for web",
            ", ".join(c for c in results["DeltaFIFO"].calls if "web" in c),
            "add:web@4, delete:web(tombstone)",
        ),
        equal(
            "02.relist-real",
            "RealFIFO: cache after the relist",
            ", ".join(results["RealFIFO"].cached),
            "db@5",
        ),
        equal(
            "02.relist-real-calls",
            "RealFIFO: handler calls for web",
            ", ".join(c for c in results["RealFIFO"].calls if "web" in c),
            "add:web@4, delete:web(tombstone)",
        ),
        equal(
            "02.relist-atomic",
            "RealFIFO, atomic: cache after the relist",
            ", ".join(atomic.cached),
            "db@5",
        ),
        equal(
            "02.relist-atomic-calls",
            "RealFIFO, atomic: handler calls for web",
            ", ".join(c for c in atomic.calls if "web" in c),
            "add:web@4, delete:web(tombstone)",
        ),
        equal("02.relist-entries-atomic", "atomic: pops for a relist of 100", many.pops, 1),
        equal("02.relist-entries-real", "non-atomic: pops for the same", many_real.pops, 100),
    ]


@experiment(CHAPTER, "default", "Which queue an informer uses by default")
def default() -> list[Claim]:
    informer = SharedIndexInformer.__init__.__kwdefaults__ or {}
    return [
        equal(
            "02.default-fifo",
            "SharedIndexInformer's default queue",
            str(informer.get("fifo_mode")),
            str(FifoMode.REAL_ATOMIC),
        ),
    ]
