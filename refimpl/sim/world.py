"""The simulated world: what outlives a controller crash.

:class:`World` owns the FakeClock, the ApiServerCore (``refimpl/apiserver``: client-go's
API server as a watch cache, with held deliveries), the history of every object state it
produced and the generateName counter. Every write goes through it, so ``writes`` is the
server's full history, compacted or not: spec/Informer.tla's ``history``. It knows
nothing of scenarios or of the simulator (refimpl/sim/simulator.py); the scenario kinds
(refimpl/sim/scenarios.py) write through it.
"""

from __future__ import annotations

from collections.abc import Callable

from refimpl.apierrors import InternalError, NotFound
from refimpl.apiserver import ApiServerCore, ApiServerListerWatcher
from refimpl.clock import FakeClock
from refimpl.meta import Object, object_key
from refimpl.sim.controllers import NAMESPACE, Write
from refimpl.sim.monitors import History, Violations

__all__ = ["World"]


class World:
    """What outlives a controller crash: the clock, the server, the history of every
    object state it produced, and the name generator (the server's generateName)."""

    def __init__(self, compaction_window: int | None) -> None:
        self.clock = FakeClock(0.0)
        self.server = ApiServerCore(compaction_window=compaction_window, deliver_immediately=False)
        self.lw = ApiServerListerWatcher(self.server)
        self.history = History()
        self.violations = Violations()
        #: Injected failures waiting for the controller's next writes.
        self.failing_writes = 0
        #: The controller process generation (bumped by each crash).
        self.generation = 0
        #: Every write the server made, oldest first, as (event type, key, rv): the
        #: server's own log loses what it compacts (spec/Informer.tla's ``history``).
        self.writes: list[tuple[str, str, int]] = []
        self._seq = 0

    # -- every write goes through here, so the history is complete ---------------------

    def _write(self, kind: str, write: Callable[[], Object], *, deleted: bool = False) -> Object:
        rv_before = self.server.rv
        out = write()
        self.history.wrote(out, deleted=deleted)
        if self.server.rv != rv_before:  # an update that changes nothing is no write
            self.writes.append((kind, object_key(out), self.server.rv))
        return out

    def create(self, obj: Object) -> Object:
        return self._write("ADDED", lambda: self.server.create(obj))

    def update(self, obj: Object) -> Object:
        return self._write("MODIFIED", lambda: self.server.update(obj))

    def delete_key(self, key: str, uid: str = "") -> Object:
        namespace, _, name = key.rpartition("/")
        return self._write(
            "DELETED", lambda: self.server.delete(namespace, name, uid=uid), deleted=True
        )

    def _next_name(self, prefix: str) -> str:
        self._seq += 1
        return f"{prefix}-{self._seq}"

    def create_rs(self, replicas: int) -> Object:
        name = self._next_name("rs")
        return self.create(
            Object(name=name, namespace=NAMESPACE, labels={"app": "rs"}, data=replicas)
        )

    def create_pod(self, owner: str, owner_uid: str) -> Object:
        name = self._next_name(f"pod-{owner}")
        labels = {"owner": owner, "owner-uid": owner_uid}
        return self.create(Object(name=name, namespace=NAMESPACE, labels=labels))

    def controller_write(self, write: Write) -> str:
        """Perform one planned write; raises the server's error (or an injected one).
        A delete of a pod that is already gone counts as done."""
        if self.failing_writes:
            self.failing_writes -= 1
            raise InternalError("injected write failure")
        if write.verb == "create":
            pod = self.create_pod(write.owner, write.owner_uid)
            return f"created {pod.name}@{pod.resource_version}"
        if write.reason == "owner-missing":
            owner = self.server.objects.get(f"{NAMESPACE}/{write.owner}")
            if owner is not None and owner.uid == write.owner_uid:
                self.violations.add(
                    "empty-cache-delete",
                    f"g{self.generation} deletes {write.key}: its cache had no "
                    f"{write.owner}, which the server has (uid {owner.uid})",
                )
        try:
            gone = self.delete_key(write.key, uid=write.uid)
        except NotFound:
            return f"{write.key} already gone"
        return f"deleted {write.key}@{gone.resource_version} ({write.reason})"
