"""The simulated controllers: a ReplicaSet-like reconciler, level- or edge-triggered.

:class:`ReplicaSetLogic` owns only what a real controller owns -- for the edge variant
its notification-built pod counts; the level variant owns nothing and reads the
informer's lister/index. It never talks to the server itself: ``plan(key)`` returns the
writes, and the simulator performs them one step at a time (so a plan can go stale).
:class:`Worker` is one worker's position in client-go's processNextWorkItem (get,
reconcile, writes, done). Refines ``spec/Controller.tla`` (``Reconcile``, ``WorkerGet``,
``WorkerDone``); no threads, no clock.
"""

from __future__ import annotations

from typing import Literal, Protocol

import attrs

from refimpl.cache.handlers import ResourceEventHandler
from refimpl.meta import DeletedFinalStateUnknown, Object, object_key
from refimpl.sim.informer import SimInformer
from refimpl.workqueue.virtual import VirtualRateLimitingQueue

__all__ = [
    "OWNER_INDEX",
    "ControllerHost",
    "ControllerLogic",
    "ReplicaSetLogic",
    "Worker",
    "WorkerPhase",
    "Write",
    "is_pod",
    "is_rs",
    "owner_index",
]

OWNER_INDEX = "owner"
NAMESPACE = "default"


def is_rs(obj: object) -> bool:
    return isinstance(obj, Object) and obj.labels.get("app") == "rs"


def is_pod(obj: object) -> bool:
    return isinstance(obj, Object) and "owner" in obj.labels


def owner_index(obj: object) -> list[str]:
    """Pods by the name of the ReplicaSet that owns them."""
    if isinstance(obj, Object):
        owner = obj.labels.get("owner")
        if owner is not None:
            return [owner]
    return []


@attrs.frozen
class Write:
    """One write a reconcile decided on. ``reason`` says why (``owner-missing`` deletes
    are the ones a stale or empty cache can get wrong)."""

    verb: Literal["create", "delete"]
    owner: str
    owner_uid: str
    key: str = ""
    uid: str = ""
    reason: str = ""

    def __str__(self) -> str:
        if self.verb == "create":
            return f"create pod for {self.owner}"
        return f"delete {self.key} ({self.reason})"


class ControllerHost(Protocol):
    """What a controller reads of the process it runs in (the simulator's
    :class:`~refimpl.sim.incarnation.Incarnation`): its informer and its work queue."""

    @property
    def informer(self) -> SimInformer: ...

    @property
    def queue(self) -> VirtualRateLimitingQueue[str] | None: ...


class ControllerLogic(Protocol):
    handler: ResourceEventHandler

    def plan(self, key: str) -> list[Write]: ...


class _Enqueue:
    """The controller's event handler: level -- enqueue the owning ReplicaSet; edge --
    also keep count of the pods it was told about."""

    def __init__(self, logic: ReplicaSetLogic) -> None:
        self._logic = logic

    def on_add(self, obj: object, is_in_initial_list: bool) -> None:
        self._logic.notified(obj, "add")

    def on_update(self, old: object, new: object) -> None:
        self._logic.notified(new, "update")

    def on_delete(self, obj: object) -> None:
        self._logic.notified(obj, "delete")


class ReplicaSetLogic:
    """Keeps ``replicas`` pods per ReplicaSet and deletes pods whose ReplicaSet is gone.

    Level (``edge=False``): reconcile reads the ReplicaSet and its pods from the cache.
    Edge (``edge=True``): reconcile reads the ReplicaSet from the cache but counts pods
    from the add/delete notifications it saw -- so a lost notification is never repaired.
    """

    def __init__(self, incarnation: ControllerHost, *, edge: bool) -> None:
        self.incarnation = incarnation
        self.edge = edge
        #: edge only: ReplicaSet name -> {pod key: (pod uid, owner uid)}, kept from
        #: add/delete notifications alone.
        self.known: dict[str, dict[str, tuple[str, str]]] = {}
        self.handler: ResourceEventHandler = _Enqueue(self)

    def _enqueue(self, name: str) -> None:
        queue = self.incarnation.queue
        assert queue is not None
        queue.add(f"{NAMESPACE}/{name}")

    def notified(self, obj: object, kind: str) -> None:
        target = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if is_rs(target) and isinstance(target, Object):
            self._enqueue(target.name)
            return
        owner = target.labels["owner"] if is_pod(target) and isinstance(target, Object) else None
        key = object_key(obj)
        if owner is None and isinstance(obj, DeletedFinalStateUnknown):
            for name, pods in self.known.items():  # a tombstone without its object
                if key in pods:
                    owner = name
                    break
        if owner is None:
            return
        if self.edge:
            pods = self.known.setdefault(owner, {})
            if kind == "add" and isinstance(target, Object):
                pods[key] = (target.uid, target.labels.get("owner-uid", ""))
            elif kind == "delete":
                pods.pop(key, None)
        self._enqueue(owner)

    def plan(self, key: str) -> list[Write]:
        """The writes that make ``key``'s ReplicaSet right, judged from the cache (and,
        for the edge variant, from the notifications counted)."""
        indexer = self.incarnation.informer.indexer
        name = key.partition("/")[2]
        rs, exists = indexer.get_by_key(key)
        pods: list[tuple[str, str, str]]  # (pod key, pod uid, owner uid), sorted
        if self.edge:
            pods = sorted((k, uid, o) for k, (uid, o) in self.known.get(name, {}).items())
        else:
            pods = sorted(
                (object_key(p), p.uid, p.labels.get("owner-uid", ""))
                for p in indexer.by_index(OWNER_INDEX, name)
                if isinstance(p, Object)
            )
        if not exists or not isinstance(rs, Object):
            return [
                Write("delete", name, owner_uid, key=k, uid=uid, reason="owner-missing")
                for k, uid, owner_uid in pods
            ]
        mine = [(k, uid) for k, uid, owner_uid in pods if owner_uid == rs.uid]
        diff = int(rs.data) - len(mine)
        if diff > 0:
            return [Write("create", name, rs.uid) for _ in range(diff)]
        return [
            Write("delete", name, rs.uid, key=k, uid=uid, reason="scale-down")
            for k, uid in mine[len(mine) + diff :]
        ]


WorkerPhase = Literal["idle", "got", "writing", "finished"]


class Worker:
    """Where one worker is in processNextWorkItem: ``idle`` -> ``got`` (a key) ->
    ``writing`` (its plan) -> ``finished`` (``error`` set if a write failed) -> idle."""

    __slots__ = ("error", "index", "key", "phase", "plan")

    def __init__(self, index: int) -> None:
        self.index = index
        self.key: str | None = None
        self.plan: list[Write] = []
        self.error: Exception | None = None
        self.phase: WorkerPhase = "idle"
