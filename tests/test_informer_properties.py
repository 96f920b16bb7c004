"""Informer-level properties with Hypothesis choosing the interleaving.

Two complementary drivers:

* the simulator with a :class:`~refimpl.sim.DataChooser`: Hypothesis picks every step --
  server writes, watch delivery, faults (drops, 410s, compaction, list/watch errors,
  crashes), FIFO pops, which handler runs -- and the simulator's monitors check the
  informer promises (INF-1, INF-2, INF-3, INF-8, FIFO-7) at each step; a failure shrinks
  to a few choices and is reported with a ``refimpl sim replay ... --choices ...`` command;
* a RuleBasedStateMachine that drives a SimInformer over an ApiServerCore directly and
  checks it against a small model of its own (the server's states as the test wrote
  them, each handler's picture built only from what it was told).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from machine_settings import LONG_MACHINE

from refimpl.apierrors import Expired
from refimpl.apiserver import ApiServerCore, ApiServerListerWatcher
from refimpl.cache.processor import AddNotification
from refimpl.cache.shared_informer import FifoMode
from refimpl.clock import FakeClock
from refimpl.meta import DeletedFinalStateUnknown, Object, object_key
from refimpl.sim import DataChooser, FirstChooser, SimInformer, Simulator

MODES = [str(m) for m in FifoMode]
PROFILE = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _run(data: st.DataObject, scenario: str, mode: str, max_steps: int) -> None:
    steps = data.draw(st.integers(0, max_steps), label="steps")
    faults = data.draw(st.sampled_from(["default", "heavy"]), label="faults")
    objects = data.draw(st.integers(2, 8), label="objects")
    sim = Simulator(
        scenario,
        chooser=DataChooser(data),
        drain_chooser=FirstChooser(),
        fifo_mode=mode,
        faults=faults,
        objects=objects,
    )
    result = sim.run(steps)
    note(result.replay)
    assert result.ok, result.summary()
    assert result.converged and result.quiescent


@pytest.mark.parametrize("mode", MODES)
@PROFILE
@given(data=st.data())
def test_informer_properties_hold_under_any_schedule(mode: str, data: st.DataObject) -> None:
    _run(data, "informer", mode, 150)


@pytest.mark.parametrize("mode", MODES)
@settings(PROFILE, max_examples=80)
@given(data=st.data())
def test_level_controller_properties_hold_under_any_schedule(
    mode: str, data: st.DataObject
) -> None:
    _run(data, "replicaset", mode, 150)


# -- a stateful test with its own model ----------------------------------------------------


class Recorder:
    """A handler that keeps only what it was told, in the test's own terms."""

    def __init__(self, machine: InformerMachine, name: str) -> None:
        self.m = machine
        self.name = name
        self.view: dict[str, tuple[str, int]] = {}
        self.last: dict[str, float] = {}

    def _see(self, key: str, version: float, strict: bool) -> None:
        last = self.last.get(key)
        assert last is None or version > last or (not strict and version >= last), (
            f"{self.name}: {key} went back from {last} to {version}"
        )
        self.last[key] = max(version, last or version)

    def on_add(self, obj: object, initial: bool) -> None:
        assert isinstance(obj, Object)
        key = object_key(obj)
        assert (key, obj.uid, int(obj.resource_version)) in self.m.states, f"phantom {obj}"
        self._see(key, int(obj.resource_version), strict=True)
        self.view[key] = (obj.uid, int(obj.resource_version))

    def on_update(self, old: object, new: object) -> None:
        assert isinstance(old, Object) and isinstance(new, Object)
        key = object_key(new)
        assert (key, new.uid, int(new.resource_version)) in self.m.states, f"phantom {new}"
        self._see(
            key, int(new.resource_version), strict=old.resource_version != new.resource_version
        )
        self.view[key] = (new.uid, int(new.resource_version))

    def on_delete(self, obj: object) -> None:
        key = object_key(obj)
        if isinstance(obj, DeletedFinalStateUnknown):
            inner = obj.obj
            version = (int(inner.resource_version) if inner is not None else 0) + 0.5
            self._see(key, version, strict=False)
        else:
            assert isinstance(obj, Object)
            assert self.m.deleted.get((key, obj.uid)) == int(obj.resource_version)
            self._see(key, int(obj.resource_version), strict=True)
        self.view.pop(key, None)


NAMES = ["a", "b", "c", "d"]


class InformerMachine(RuleBasedStateMachine):
    """A SimInformer over an ApiServerCore; Hypothesis writes, delivers, breaks and
    schedules. Model: ``objects`` (what the server holds, as the test wrote it),
    ``states``/``deleted`` (every state it ever produced). Invariants: the store only
    holds states the server had, at least as new as the last list; notifications are
    distributed after the store write; after ``settle`` store = model = every
    handler's picture."""

    @initialize(
        mode=st.sampled_from(MODES),
        window=st.sampled_from([None, 2, 6]),
        resync=st.sampled_from([0.0, 10.0]),
        batch=st.booleans(),
    )
    def setup(self, mode: str, window: int | None, resync: float, batch: bool) -> None:
        self.server = ApiServerCore(compaction_window=window, deliver_immediately=False)
        self.objects: dict[str, tuple[str, int]] = {}
        self.states: set[tuple[str, str, int]] = set()
        self.deleted: dict[tuple[str, str], int] = {}
        self.clock = FakeClock(0.0)
        self.informer = SimInformer(
            ApiServerListerWatcher(self.server),
            clock=self.clock,
            fifo_mode=mode,
            batch=batch,
            resync_period=resync,
            on_applied=self._applied,
        )
        self.recorders = [Recorder(self, "h0")]
        self.listeners = [self.informer.add_event_handler(self.recorders[0])]
        self.informer.start()

    def _applied(self, kind: str, obj: object, old: object | None) -> None:
        stored, exists = self.informer.indexer.get_by_key(object_key(obj))
        if kind == "delete":
            assert not exists, f"delete of {object_key(obj)} distributed before the store"
        else:
            assert exists and stored is obj, f"{kind} of {obj} distributed before the store"

    def _wrote(self, obj: Object, deleted: bool = False) -> None:
        key = object_key(obj)
        rv = int(obj.resource_version)
        self.states.add((key, obj.uid, rv))
        if deleted:
            self.deleted[(key, obj.uid)] = rv
            del self.objects[key]
        else:
            self.objects[key] = (obj.uid, rv)

    # -- the server -------------------------------------------------------------------
    @rule(name=st.sampled_from(NAMES), data=st.integers(0, 3))
    def write(self, name: str, data: int) -> None:
        key = f"ns/{name}"
        current = self.server.objects.get(key)
        if current is None:
            self._wrote(self.server.create(Object(name=name, namespace="ns", data=data)))
        elif current.data != data:
            self._wrote(self.server.update(current.evolve(data=data)))

    @rule(name=st.sampled_from(NAMES))
    def delete(self, name: str) -> None:
        if f"ns/{name}" in self.server.objects:
            self._wrote(self.server.delete("ns", name), deleted=True)

    @rule()
    def deliver(self) -> None:
        watch = self.informer.current_watch()
        if watch is not None:
            self.server.release(watch.id, 1)

    @rule()
    def bookmark(self) -> None:
        self.server.send_bookmarks()

    # -- faults -------------------------------------------------------------------------
    @rule(drop=st.booleans())
    def close_watch(self, drop: bool) -> None:
        self.server.close_watch(drop_pending=drop)

    @rule()
    def watch_410(self) -> None:
        self.server.fail_watch(error=Expired("too old"))

    @rule()
    def compact(self) -> None:
        self.server.compact(self.server.rv)

    @rule()
    def list_error(self) -> None:
        self.server.fail_next_lists(1)

    # -- the informer -------------------------------------------------------------------
    @rule()
    def reflector(self) -> None:
        if self.informer.reflector_ready():
            self.informer.step_reflector()

    @rule()
    def pop(self) -> None:
        if self.informer.can_pop():
            self.informer.pop()

    @rule(i=st.integers(0, 1))
    def dispatch(self, i: int) -> None:
        if i < len(self.listeners):
            self.listeners[i].dispatch_one()

    @rule()
    def advance(self) -> None:
        deadline = self.informer.next_deadline()
        if deadline is not None and deadline > self.clock.now():
            self.clock.set_time(deadline)

    @precondition(lambda self: len(self.recorders) == 1)
    @rule()
    def late_handler(self) -> None:
        recorder = Recorder(self, "late")
        self.recorders.append(recorder)
        cached = {object_key(o) for o in self.informer.indexer.list()}
        listener = self.informer.add_event_handler(recorder)
        assert all(
            isinstance(n, AddNotification) and n.is_in_initial_list for n in listener.pending
        )
        assert {object_key(getattr(n, "new_obj", None)) for n in listener.pending} == cached
        self.listeners.append(listener)

    @rule()
    def settle(self) -> None:
        """Faults stop; everything runs until idle (time passes only when idle). Then
        the store, the model and every handler's picture agree."""
        self.server.clear_faults()
        self.server.resume()
        for _ in range(10_000):
            inf = self.informer
            if inf.reflector_ready():
                inf.step_reflector()
            elif inf.can_pop():
                inf.pop()
            elif any(listener.dispatch_one() for listener in self.listeners):
                pass
            elif inf.reflector_phase() != "watch":
                deadline = inf.next_deadline()
                assert deadline is not None, f"stuck in {inf.reflector_phase()}"
                self.clock.set_time(max(deadline, self.clock.now()))
            else:
                break
        self.server.hold()
        assert self.informer.store_state() == self.objects
        for r in self.recorders:
            assert r.view == self.objects, f"{r.name} sees {r.view}, server has {self.objects}"
        assert self.informer.has_synced()

    # -- invariants -------------------------------------------------------------------------
    @invariant()
    def store_holds_only_real_states(self) -> None:
        if not hasattr(self, "informer"):
            return
        for key, (uid, rv) in self.informer.store_state().items():
            assert (key, uid, rv) in self.states, f"the store invented {key}@{rv}"

    @invariant()
    def synced_implies_the_first_list_is_cached(self) -> None:
        if not hasattr(self, "informer") or not self.informer.has_synced():
            return
        initial = self.informer.initial_list
        assert initial is not None
        # Each listed object is cached at its version or newer, or was since deleted.
        store = self.informer.store_state()
        for obj in initial[0]:
            assert isinstance(obj, Object)
            key = object_key(obj)
            cached = store.get(key)
            assert (cached is not None and cached[1] >= int(obj.resource_version)) or (
                cached is None and any(k == key for k, _ in self.deleted)
            ), f"synced, but {key}@{obj.resource_version} of the first list is not cached"


InformerMachine.TestCase.settings = LONG_MACHINE
TestInformerMachine = InformerMachine.TestCase
