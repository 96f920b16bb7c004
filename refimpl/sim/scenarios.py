"""The shipped scenarios: what lives on the server, what clients write, what runs.

A :class:`Scenario` is plain configuration (frozen); the two *kinds* hold the logic: the
initial population, the client writes (every argument picked through the simulator's
chooser, so runs replay), the controller (if any) and what "desired state" means. No
clock, no threads, no randomness of their own. Nothing here refines a TLA+ module:
scenarios are the environment of ``spec/Controller.tla`` / ``spec/Informer.tla``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal, Protocol

import attrs

from refimpl.cache.store import IndexFunc
from refimpl.meta import Object
from refimpl.sim.controllers import (
    OWNER_INDEX,
    ControllerHost,
    ControllerLogic,
    ReplicaSetLogic,
    is_pod,
    is_rs,
    owner_index,
)
from refimpl.sim.world import World

__all__ = [
    "FAULT_KINDS",
    "SCENARIOS",
    "Choose",
    "Scenario",
    "get_scenario",
    "parse_faults",
]

#: A chooser bound to the running simulator: ``choose(n, weights)`` -> index.
Choose = Callable[..., int]

NAMESPACE = "default"

#: Fault actions and what each does.
FAULT_KINDS: dict[str, str] = {
    "close_watch": "the server ends the reflector's watch (maybe dropping undelivered events)",
    "watch_410": "the watch ends with ERROR 410 Expired (the reflector relists)",
    "compact": "the server compacts its whole history (old RVs answer 410)",
    "list_error": "the next list request fails (503)",
    "watch_error": "the next watch request fails to start (429)",
    "write_error": "the controller's next write to the server fails (500)",
    "crash": "the controller crashes and restarts with an empty cache",
    "drop_notification": "a listener loses its oldest pending notification (a lossy handler path)",
}

_DEFAULT_FAULTS: dict[str, int] = {
    "close_watch": 3,
    "watch_410": 2,
    "compact": 1,
    "list_error": 1,
    "watch_error": 1,
    "write_error": 3,
    "crash": 1,
    "drop_notification": 0,
}


@attrs.frozen
class Scenario:
    """One simulated world. Weights are relative to 100 per enabled progress action."""

    name: str
    description: str
    kind: Literal["informer", "replicaset"]
    #: replicaset: "level" reads the lister; "edge" counts add/delete notifications.
    trigger: Literal["level", "edge"] = "level"
    wait_for_sync: bool = True
    workers: int = 2
    objects: int = 12
    resync_period: float = 30.0
    compaction_window: int | None = 40
    batch: bool = True
    write_weight: int = 25
    faults: Mapping[str, int] = attrs.field(factory=lambda: dict(_DEFAULT_FAULTS))
    late_handler: bool = False
    max_replicas: int = 4
    steps: int = 300
    #: The close_watch fault first lets this many virtual seconds pass: a connection
    #: that drops after a while (0: at once, so a quiet watch may be "very short").
    watch_drop_after: float = 0.0
    #: Trace lines carry the fields spec/Informer.tla needs (refimpl/sim/spec_trace.py).
    spec_trace: bool = False
    #: Steer the writes and faults toward the rare relists of refimpl/sim/rare.py.
    steer_rare: bool = False
    #: What a run needs to show the scenario's point (``refimpl sim list`` prints it):
    #: a bug that appears only with one FIFO or one fault is invisible otherwise.
    shows: str = ""

    def with_objects(self, objects: int) -> Scenario:
        if objects < 1:
            raise ValueError(f"objects must be >= 1, got {objects}")
        return attrs.evolve(self, objects=objects)


def parse_faults(spec: str | Mapping[str, int] | None, scenario: Scenario) -> dict[str, int]:
    """``None``/``"default"``: the scenario's rates; ``"none"``: no faults; ``"heavy"``:
    five times the scenario's; ``"close_watch=3,crash=1"``: the scenario's rates with
    those overridden (``only:close_watch=3`` keeps no other fault)."""
    base = {k: int(scenario.faults.get(k, 0)) for k in FAULT_KINDS}
    if spec is None or spec == "default":
        return base
    if isinstance(spec, Mapping):
        out = {k: 0 for k in FAULT_KINDS}
        for k, v in spec.items():
            _check_fault(k, v)
            out[k] = int(v)
        return out
    if spec == "none":
        return {k: 0 for k in FAULT_KINDS}
    if spec == "heavy":
        return {k: 5 * v for k, v in base.items()}
    out = base
    text = spec
    if text.startswith("only:"):
        out = {k: 0 for k in FAULT_KINDS}
        text = text[len("only:") :]
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"fault spec {part!r}: expected NAME=WEIGHT")
        try:
            weight = int(value)
        except ValueError:
            raise ValueError(f"fault spec {part!r}: weight must be an integer") from None
        _check_fault(name, weight)
        out[name] = weight
    return out


def _check_fault(name: str, weight: int) -> None:
    if name not in FAULT_KINDS:
        raise ValueError(f"unknown fault {name!r}; known: {', '.join(FAULT_KINDS)}")
    if isinstance(weight, bool) or not isinstance(weight, int) or weight < 0:
        raise ValueError(f"fault {name}: weight must be a non-negative int, got {weight!r}")


# -- kinds ------------------------------------------------------------------------------


class Kind(Protocol):
    def indexers(self) -> dict[str, IndexFunc]: ...
    def setup(self, world: World, scenario: Scenario) -> None: ...
    def client_write(self, world: World, scenario: Scenario, choose: Choose) -> str: ...
    def make_logic(
        self, incarnation: ControllerHost, scenario: Scenario
    ) -> ControllerLogic | None: ...
    def unmet(self, world: World) -> list[str]: ...


class InformerKind:
    """Plain objects ``obj-NNNN`` created, updated and deleted at random; no controller,
    only observing handlers (the informer-level properties)."""

    def indexers(self) -> dict[str, IndexFunc]:
        return {}

    @staticmethod
    def _name(i: int) -> str:
        return f"obj-{i:04d}"

    def setup(self, world: World, scenario: Scenario) -> None:
        for i in range(0, scenario.objects, 2):
            world.create(Object(name=self._name(i), namespace=NAMESPACE, data=0))

    def client_write(self, world: World, scenario: Scenario, choose: Choose) -> str:
        name = self._name(choose(scenario.objects))
        key = f"{NAMESPACE}/{name}"
        current = world.server.objects.get(key)
        if current is None:
            o = world.create(Object(name=name, namespace=NAMESPACE, data=0))
            return f"create {key}@{o.resource_version}"
        if choose(3) < 2:
            o = world.update(current.evolve(data=int(current.data or 0) + 1))
            return f"update {key}@{o.resource_version}"
        o = world.delete_key(key)
        return f"delete {key}@{o.resource_version}"

    def make_logic(self, incarnation: ControllerHost, scenario: Scenario) -> ControllerLogic | None:
        return None

    def unmet(self, world: World) -> list[str]:
        return []


class ReplicaSetKind:
    """ReplicaSets ``rs-N`` (``data`` = desired replicas) and the pods they own (labels
    ``owner``/``owner-uid``). Clients scale, kill pods, create and delete ReplicaSets."""

    def indexers(self) -> dict[str, IndexFunc]:
        return {OWNER_INDEX: owner_index}

    def setup(self, world: World, scenario: Scenario) -> None:
        for _ in range(max(1, scenario.objects // 4)):
            rs = world.create_rs(3)
            for _ in range(3):
                world.create_pod(rs.name, rs.uid)

    def client_write(self, world: World, scenario: Scenario, choose: Choose) -> str:
        op = choose(4, [4, 4, 1, 1])
        objects = world.server.objects
        if op == 1:
            pods = [o for o in objects.values() if is_pod(o)]
            if pods:
                pod = pods[choose(len(pods))]
                o = world.delete_key(f"{NAMESPACE}/{pod.name}")
                return f"kill {pod.name}@{o.resource_version}"
            op = 2
        sets = [o for o in objects.values() if is_rs(o)]
        if op == 2 or not sets:
            rs = world.create_rs(choose(scenario.max_replicas + 1))
            return f"create {rs.name} replicas={rs.data}@{rs.resource_version}"
        rs = sets[choose(len(sets))]
        if op == 3:
            o = world.delete_key(f"{NAMESPACE}/{rs.name}")
            return f"delete {rs.name}@{o.resource_version}"
        replicas = choose(scenario.max_replicas + 1)
        o = world.update(rs.evolve(data=replicas))
        return f"scale {rs.name} {rs.data}->{replicas}@{o.resource_version}"

    def make_logic(self, incarnation: ControllerHost, scenario: Scenario) -> ControllerLogic | None:
        return ReplicaSetLogic(incarnation, edge=scenario.trigger == "edge")

    def unmet(self, world: World) -> list[str]:
        """Desired = actual on the server: each ReplicaSet owns exactly ``replicas`` pods
        and no pod's owner is gone."""
        objects = world.server.objects
        alive = {o.uid: o for o in objects.values() if is_rs(o)}
        owned: dict[str, int] = {}
        out: list[str] = []
        for o in objects.values():
            if is_pod(o):
                uid = o.labels.get("owner-uid", "")
                if uid in alive:
                    owned[uid] = owned.get(uid, 0) + 1
                else:
                    out.append(f"orphan pod {o.name}")
        for uid, rs in alive.items():
            have = owned.get(uid, 0)
            if have != rs.data:
                out.append(f"{rs.name} wants {rs.data} pods, has {have}")
        return out


KINDS: dict[str, Kind] = {"informer": InformerKind(), "replicaset": ReplicaSetKind()}


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "informer",
            "one informer and two observing handlers (one registered late); random "
            "creates/updates/deletes, steered toward rare relists; no controller",
            "informer",
            workers=0,
            late_handler=True,
            write_weight=40,
            steer_rare=True,
            shows="holds with any FIFO and the default or heavy faults: a violation is a bug",
        ),
        Scenario(
            "informer-spec",
            "the informer as spec/Informer.tla models it, for trace validation: few "
            "objects, no resync, compaction only as a fault, watches drop after 2 s (not "
            "'very short'), no 410 on an open watch, no lost notifications",
            "informer",
            workers=0,
            objects=6,
            resync_period=0.0,
            compaction_window=None,
            write_weight=40,
            faults={
                **{k: 0 for k in _DEFAULT_FAULTS},
                "close_watch": 4,
                "compact": 2,
                "list_error": 1,
                "watch_error": 1,
                "crash": 1,
            },
            watch_drop_after=2.0,
            spec_trace=True,
            shows=(
                "its point is the trace: refimpl spec trace --spec Informer --sim "
                "informer-spec checks a run against spec/Informer.tla (needs TLA2TOOLS_JAR)"
            ),
        ),
        Scenario(
            "replicaset",
            "level-triggered ReplicaSet-like controller, 2 workers, waits for has_synced",
            "replicaset",
            faults={**_DEFAULT_FAULTS, "drop_notification": 1},
            shows="holds with any FIFO, even when notifications are lost (it reads the lister)",
        ),
        Scenario(
            "replicaset-nowait",
            "the same controller, but its workers start before the cache has synced",
            "replicaset",
            wait_for_sync=False,
            # Measured: seeds 0-999, default faults -- 958 runs with empty-cache-delete
            # with --fifo delta, 0 with real-atomic or real (tests/test_sim_verdicts.py).
            shows=(
                "its bug (empty-cache-delete) shows only with --fifo delta: about 96% of "
                "seeds; none with the default real-atomic FIFO or real"
            ),
        ),
        Scenario(
            "replicaset-edge",
            "edge-triggered variant: counts pod add/delete notifications instead of "
            "reading the lister",
            "replicaset",
            trigger="edge",
            shows=(
                "its bug (converge) needs lost notifications: --faults "
                "drop_notification=5 (the default faults lose none, so it holds)"
            ),
        ),
    )
}


def get_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}") from None
