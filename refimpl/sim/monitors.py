"""Runtime monitors: the informer-level properties, checked while a simulation runs.

Each monitor watches one thing (the server's history, one informer's store, one handler's
notifications) and appends violations -- strings naming the property, the step and the
object -- to a shared :class:`Violations`; nothing here raises into the code under test
(a handler that raised would be logged and skipped by the listener), blocks or reads a
clock. The properties are the informer promises of docs/invariants.md -- INF-1 (store
before notify), INF-2 (per-key order), INF-3 (no lost delete, no ghosts), INF-8 (nothing
invented), FIFO-7 (synced means the first list is in) -- plus the controller-level ones
the simulator adds (WQ-5, CTRL-2, INF-4); they are the invariants ``spec/Informer.tla``
states over ``store``, ``pending`` and the server's ``log``.
"""

from __future__ import annotations

from typing import Any

from refimpl.cache.handlers import ResourceEventHandler
from refimpl.cache.processor import (
    AddNotification,
    DeleteNotification,
    Notification,
    UpdateNotification,
)
from refimpl.cache.store import Indexer
from refimpl.meta import DeletedFinalStateUnknown, Object, object_key

__all__ = [
    "PROPERTIES",
    "HandlerRecord",
    "History",
    "InformerMonitor",
    "MonitoredHandler",
    "Violations",
    "version_of",
]

#: Every property tag a violation can carry, and what it means.
PROPERTIES: dict[str, str] = {
    "exclusive-workers": "never two workers on one key",
    "store-before-notify": "when a notification is distributed the store holds exactly it",
    "cache-before-handler": "when a handler runs the store already reflects its event",
    "rv-order": "per handler and key, resourceVersions only increase",
    "no-phantom": "nothing is delivered for an object state the server never had",
    "no-lost-delete": "a seen object the server deleted reaches the handler as a delete",
    "handler-view": "at quiescence each handler's picture equals the server",
    "synced-initial-list": "has_synced implies the whole first list is in the store",
    "late-handler-snapshot": "a late handler first gets adds for exactly the store",
    "empty-cache-delete": "the controller never deletes an object whose owner is alive",
    "converge": "once faults and writes stop, stores equal the server and actual = desired",
}


def version_of(obj: object) -> float:
    """An event's place in its key's history: the rv of an object (a DELETED event's
    object carries the deletion's rv); for a tombstone "just after" its last known state."""
    if isinstance(obj, DeletedFinalStateUnknown):
        inner = obj.obj
        return (int(inner.resource_version) if inner is not None else 0) + 0.5
    if isinstance(obj, Object):
        return int(obj.resource_version)
    return 0.0


def _rv(obj: object) -> int:
    return int(obj.resource_version) if isinstance(obj, Object) else 0


class Violations:
    """The violations of one run, each ``"step N: [property] what"``."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.step = 0

    def add(self, prop: str, message: str) -> None:
        if prop not in PROPERTIES:
            raise ValueError(f"unknown property {prop!r}")
        self.items.append(f"step {self.step}: [{prop}] {message}")

    def of(self, prop: str) -> list[str]:
        tag = f"[{prop}]"
        return [v for v in self.items if tag in v]

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return len(self.items)


class History:
    """Every object state the server ever produced, kept by the simulator because the
    server compacts its own log: ``(key, uid, rv)`` of every create/update result and
    every deletion-stamped object, and when each ``(key, uid)`` was deleted."""

    __slots__ = ("deleted", "states")

    def __init__(self) -> None:
        self.states: set[tuple[str, str, int]] = set()
        self.deleted: dict[tuple[str, str], int] = {}

    def wrote(self, obj: Object, deleted: bool = False) -> None:
        key = object_key(obj)
        rv = int(obj.resource_version)
        self.states.add((key, obj.uid, rv))
        if deleted:
            self.deleted[(key, obj.uid)] = rv

    def had(self, obj: Object) -> bool:
        return (object_key(obj), obj.uid, _rv(obj)) in self.states


class InformerMonitor:
    """Watches one informer's store writes (``SimInformer.on_applied``) and its sync.

    Store-before-notify (INF-1): when ``process_deltas`` hands a change to the
    informer -- the moment it is distributed -- the store must hold exactly that object
    (or lack a deleted key). ``version[key]`` remembers the newest change applied per
    key, so handler-time checks can tell "the store is ahead" from "behind".
    """

    def __init__(self, indexer: Indexer[Any], violations: Violations, name: str) -> None:
        self.indexer = indexer
        self.violations = violations
        self.name = name
        self.version: dict[str, float] = {}

    def applied(self, kind: str, obj: object, old: object | None) -> None:
        key = object_key(obj)
        stored, exists = self.indexer.get_by_key(key)
        if kind == "delete":
            if exists:
                self.violations.add(
                    "store-before-notify",
                    f"{self.name}: delete of {key} distributed while the store still holds "
                    f"rv {_rv(stored)}",
                )
        elif not exists or not isinstance(stored, Object) or not isinstance(obj, Object):
            self.violations.add(
                "store-before-notify", f"{self.name}: {kind} of {key} distributed, store lacks it"
            )
        elif stored.uid != obj.uid or stored.resource_version != obj.resource_version:
            self.violations.add(
                "store-before-notify",
                f"{self.name}: {kind} of {key}@{obj.resource_version} distributed, store "
                f"holds @{stored.resource_version}",
            )
        self.version[key] = version_of(obj)

    def check_initial_list(self, objects: tuple[object, ...]) -> None:
        """At the moment ``has_synced`` turns true: every object of the first list is
        cached at its listed version or newer, or its later deletion was applied."""
        for obj in objects:
            key = object_key(obj)
            stored, exists = self.indexer.get_by_key(key)
            listed = _rv(obj)
            if exists and _rv(stored) >= listed:
                continue
            if not exists and self.version.get(key, 0) > listed:
                continue
            self.violations.add(
                "synced-initial-list",
                f"{self.name}: has_synced while {key}@{listed} of the first list is "
                + (f"cached at @{_rv(stored)}" if exists else "not cached"),
            )


class HandlerRecord:
    """What one handler was told, checked as it is told (INF-1 at the
    handler, INF-2 per-key order, INF-8 no phantoms), and the handler's resulting picture of the
    world (``view``) for the end-of-run checks (no lost delete, view = server)."""

    def __init__(
        self,
        name: str,
        informer: InformerMonitor,
        history: History,
        violations: Violations,
    ) -> None:
        self.name = name
        self.informer = informer
        self.history = history
        self.violations = violations
        self.view: dict[str, Object] = {}
        self.last: dict[str, float] = {}
        self.seen = 0
        self.deletes = 0
        self.tombstones = 0
        #: Deletions the handler learnt only as an update whose uid changed (a relist
        #: after a delete and re-create under the same name; client-go does the same).
        self.replaced_uids = 0
        #: Rvs of the non-sync notifications, in delivery order (tests compare modes).
        self.order: list[tuple[str, int]] = []

    def observe(self, n: Notification) -> None:
        self.seen += 1
        v = self.violations
        if isinstance(n, DeleteNotification):
            obj = n.old_obj
            key = object_key(obj)
            ver = version_of(obj)
            inner = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
            if isinstance(obj, DeletedFinalStateUnknown):
                self.tombstones += 1
            else:
                self.deletes += 1
            if isinstance(inner, Object) and not self.history.had(inner):
                v.add("no-phantom", f"{self.name}: delete of {key}@{_rv(inner)} never existed")
            self._check_order(key, ver, strict=not isinstance(obj, DeletedFinalStateUnknown))
            self._check_cache(key, ver, present=False)
            self.view.pop(key, None)
            self.order.append((key, int(ver)))
            return
        new = n.new_obj
        key = object_key(new)
        if not isinstance(new, Object):
            v.add("no-phantom", f"{self.name}: notification without an object: {n!r}")
            return
        sync = False
        if isinstance(n, UpdateNotification):
            old = n.old_obj
            if isinstance(old, Object):
                sync = old.resource_version == new.resource_version
                if not self.history.had(old):
                    v.add("no-phantom", f"{self.name}: update from {key}@{_rv(old)} never existed")
                if old.uid != new.uid:
                    self.replaced_uids += 1
        if not self.history.had(new):
            v.add("no-phantom", f"{self.name}: {key}@{_rv(new)} uid {new.uid} never existed")
        ver = version_of(new)
        self._check_order(key, ver, strict=not sync)
        self._check_cache(key, ver, present=True)
        self.view[key] = new
        if not sync:
            self.order.append((key, int(ver)))

    def _check_order(self, key: str, ver: float, *, strict: bool) -> None:
        last = self.last.get(key)
        if last is not None and (ver < last or (strict and ver == last)):
            self.violations.add("rv-order", f"{self.name}: {key} went from version {last} to {ver}")
        if last is None or ver > last:
            self.last[key] = ver

    def _check_cache(self, key: str, ver: float, *, present: bool) -> None:
        stored, exists = self.informer.indexer.get_by_key(key)
        if exists:
            ok = _rv(stored) >= ver if present else _rv(stored) > ver
            now = f"@{_rv(stored)}"
        else:
            ok = self.informer.version.get(key, -1.0) >= ver and (
                not present or self.informer.version.get(key, -1.0) > ver
            )
            now = "absent"
        if not ok:
            what = "object" if present else "delete"
            self.violations.add(
                "cache-before-handler",
                f"{self.name}: handler got {what} {key}@{ver} while the store has {now}",
            )

    def view_state(self) -> dict[str, tuple[str, int]]:
        return {k: (o.uid, _rv(o)) for k, o in self.view.items()}

    def check_lost_deletes(self) -> None:
        for key, obj in self.view.items():
            rv = self.history.deleted.get((key, obj.uid))
            if rv is not None:
                self.violations.add(
                    "no-lost-delete",
                    f"{self.name}: saw {key} uid {obj.uid}, which the server deleted at rv "
                    f"{rv}, but was never told",
                )


class MonitoredHandler:
    """A handler that first lets its :class:`HandlerRecord` check each notification,
    then forwards it to ``inner`` (which may be None: a pure observer)."""

    def __init__(self, record: HandlerRecord, inner: ResourceEventHandler[Any] | None) -> None:
        self.record = record
        self.inner = inner

    def on_add(self, obj: object, is_in_initial_list: bool) -> None:
        self.record.observe(AddNotification(obj, is_in_initial_list))
        if self.inner is not None:
            self.inner.on_add(obj, is_in_initial_list)

    def on_update(self, old: object, new: object) -> None:
        self.record.observe(UpdateNotification(old, new))
        if self.inner is not None:
            self.inner.on_update(old, new)

    def on_delete(self, obj: object) -> None:
        self.record.observe(DeleteNotification(obj))
        if self.inner is not None:
            self.inner.on_delete(obj)
