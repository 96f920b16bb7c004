"""The simulator's action table: which actions are enabled in a state, and what each does.

:func:`enabled` lists the enabled actions -- progress first (the reflector, a watch
delivery, a FIFO pop, a listener's dispatch, the workers' ``get``/``reconcile``/
``write``/``done`` of client-go's processNextWorkItem), then time, then (while faults
are on) client writes, a late handler, a bookmark and the faults of
refimpl/sim/faults.py. :data:`ACTIONS` maps each action's name to the function that
takes it on a :class:`~refimpl.sim.state.SimState`. Plays the role of the disjuncts of
TLC's ``Next`` over spec/Informer.tla and spec/Controller.tla.
"""

from __future__ import annotations

from collections.abc import Callable

from refimpl.cache.processor import AddNotification
from refimpl.meta import DeletedFinalStateUnknown, Object, object_key
from refimpl.sim.faults import FAULT_ACTIONS
from refimpl.sim.incarnation import Incarnation
from refimpl.sim.rare import last_queued, setups
from refimpl.sim.scenarios import FAULT_KINDS
from refimpl.sim.state import SimState, describe_note, event_key
from refimpl.worker import DEFAULT_MAX_RETRIES, process_next_work_item
from refimpl.workqueue.virtual import VirtualRateLimitingQueue

__all__ = ["ACTIONS", "PROGRESS_ACTIONS", "Action", "enabled"]

#: Chooser weights: every enabled progress action 100, the rest relative to that.
W_PROGRESS = 100
W_ADVANCE = 25
W_BOOKMARK = 2
W_REGISTER = 3
#: With ``Scenario.steer_rare``: how much more the faults that end in a relist weigh
#: while a relist would take a rare path (refimpl/sim/rare.py).
STEER_BOOST = 100
#: The faults after which the reflector relists (an open watch's 410; a compaction,
#: which makes the next watch request 410).
_RELIST_FAULTS = ("watch_410", "compact")

#: Actions that are plain progress (the compact timeline leaves them out).
PROGRESS_ACTIONS = frozenset(
    {"reflector", "deliver", "pop", "dispatch", "get", "reconcile", "write", "done", "advance"}
)

#: An action: takes one step (its argument: a listener or worker index, else 0) and
#: returns the timeline's description.
Action = Callable[[SimState, int], str]


class _HeldItem:
    """The worker's key seen through the queue API, so the retry policy of
    :func:`refimpl.worker.process_next_work_item` runs unchanged at the ``done`` step."""

    def __init__(
        self, queue: VirtualRateLimitingQueue[str], key: str, counters: dict[str, int]
    ) -> None:
        self._queue = queue
        self._key = key
        self._counters = counters

    def get(self) -> tuple[str | None, bool]:
        return self._key, False

    def done(self, item: str) -> None:
        self._queue.done(item)

    def forget(self, item: str) -> None:
        self._queue.forget(item)

    def add_rate_limited(self, item: str) -> None:
        self._counters["retries"] += 1
        self._queue.add_rate_limited(item)

    def num_requeues(self, item: str) -> int:
        return self._queue.num_requeues(item)


# -- which actions are enabled ----------------------------------------------------------


def enabled(run: SimState, chaos: bool) -> tuple[list[tuple[str, int]], list[int], int]:
    """``(actions, weights, n_progress)``: progress actions first (index 0 is the
    canonical next step), then time, then -- while ``chaos`` -- writes and faults."""
    acts = _progress_actions(run.incarnation)
    progress = len(acts)
    weights = [W_PROGRESS] * progress
    # While draining, time passes only when nothing else can happen (otherwise a
    # periodic resync could outpace a random scheduler forever).
    if (chaos or not progress) and run.next_timer() is not None:
        acts.append(("advance", 0))
        weights.append(W_ADVANCE)
    if chaos:
        _add_environment_actions(run, acts, weights)
    return acts, weights, progress


def _progress_actions(proc: Incarnation) -> list[tuple[str, int]]:
    inf = proc.informer
    acts: list[tuple[str, int]] = []
    if inf.reflector_ready():
        acts.append(("reflector", 0))
    watch = inf.current_watch()
    if watch is not None and watch.pending:
        acts.append(("deliver", 0))
    if len(inf.fifo):
        acts.append(("pop", 0))
    for i, listener in enumerate(proc.listeners):
        if listener.pending:
            acts.append(("dispatch", i))
    queue = proc.queue
    if queue is not None:
        offered_get = False
        for w in proc.workers:
            phase = w.phase
            if phase == "idle":
                if not offered_get and len(queue.core.queue) and proc.workers_may_run():
                    acts.append(("get", w.index))
                    offered_get = True
            elif phase == "got":
                acts.append(("reconcile", w.index))
            elif phase == "writing":
                acts.append(("write", w.index))
            else:
                acts.append(("done", w.index))
    return acts


def _add_environment_actions(
    run: SimState, acts: list[tuple[str, int]], weights: list[int]
) -> None:
    """Client writes, the late handler, a bookmark and the possible faults."""
    proc = run.incarnation
    acts.append(("client", 0))
    weights.append(run.scenario.write_weight)
    if run.scenario.late_handler and not proc.late_registered:
        acts.append(("register", 0))
        weights.append(W_REGISTER)
    watch = proc.informer.current_watch()
    active = watch is not None and not (watch.ended or watch.stopped)
    if active:
        acts.append(("bookmark", 0))
        weights.append(W_BOOKMARK)
    possible = {
        "watch": active,
        "log": bool(run.world.server.log),
        "logic": proc.logic is not None,
        "pending": any(listener.pending for listener in proc.listeners),
        "": True,
    }
    boost = STEER_BOOST if run.scenario.steer_rare and _rare_setup(run) else 1
    for kind, weight, needs in run.fault_list:
        if possible[needs]:
            acts.append((kind, 0))
            weights.append(weight * boost if kind in _RELIST_FAULTS else weight)


def _rare_setup(run: SimState) -> bool:
    """Whether a relist now would take a rare path (refimpl/sim/rare.py)."""
    inf = run.incarnation.informer
    return bool(setups(inf.fifo_state(), inf.store_state(), run.world.server.objects))


# -- progress actions -------------------------------------------------------------------


def reflector(run: SimState, _: int) -> str:
    inf = run.incarnation.informer
    before = inf.reflector_phase()
    lists = inf.lists
    old = inf.current_watch()
    inf.step_reflector()
    after = inf.reflector_phase()
    watch = inf.current_watch()
    if watch is not None and watch.id not in run.refused:
        # Nothing compacts within a reflector step: the 410 check of the open.
        run.refused[watch.id] = watch.start_rv < run.world.server.compacted_rv
    if inf.lists != lists:
        run.answers.append("listed")
    if old is not None and (watch is None or watch.id != old.id):
        run.answers.append("gone" if run.refused.get(old.id, False) else "ended")
    opened = watch is not None and (old is None or watch.id != old.id)
    if opened and watch is not None and not run.refused[watch.id]:
        run.answers.append("opened")
    if inf.lists != lists:
        return f"reflector listed at rv {inf.last_sync_resource_version()} -> {after}"
    return f"reflector {before} -> {after} (rv {inf.last_sync_resource_version()})"


def deliver(run: SimState, _: int) -> str:
    watch = run.incarnation.informer.current_watch()
    assert watch is not None
    event = watch.pending[0]
    run.world.server.release(watch.id, 1)
    return f"deliver {event.type} {event_key(event.object)}@{event.resource_version}"


def pop(run: SimState, _: int) -> str:
    deltas = run.incarnation.informer.pop()
    if run.timeline is None:
        return ""
    shown = " ".join(f"{d.type}:{_delta_key(d.object)}" for d in deltas[:3])
    more = f" +{len(deltas) - 3}" if len(deltas) > 3 else ""
    return f"pop {shown}{more}"


def dispatch(run: SimState, i: int) -> str:
    listener = run.incarnation.listeners[i]
    n = listener.pending[0]
    listener.dispatch_one()
    run.counters["dispatches"] += 1
    return f"dispatch {listener.name} {describe_note(n)}"


def get(run: SimState, i: int) -> str:
    proc = run.incarnation
    queue = proc.queue
    assert queue is not None
    key, _ = queue.get()
    assert key is not None
    for other in proc.workers:
        if other.index != i and other.key == key:
            run.world.violations.add(
                "exclusive-workers", f"workers {other.index} and {i} both hold {key}"
            )
    w = proc.workers[i]
    w.key, w.phase, w.plan, w.error = key, "got", [], None
    return f"worker {i} got {key}"


def reconcile(run: SimState, i: int) -> str:
    proc = run.incarnation
    assert proc.logic is not None
    w = proc.workers[i]
    assert w.key is not None
    w.plan = proc.logic.plan(w.key)
    w.phase = "writing" if w.plan else "finished"
    run.counters["reconciles"] += 1
    plan = "; ".join(str(p) for p in w.plan[:3]) + (" ..." if len(w.plan) > 3 else "")
    return f"worker {i} reconciles {w.key}: {plan or 'nothing to do'}"


def write(run: SimState, i: int) -> str:
    w = run.incarnation.workers[i]
    planned = w.plan.pop(0)
    run.counters["controller_writes"] += 1
    try:
        desc = run.world.controller_write(planned)
    except Exception as err:
        run.counters["failed_writes"] += 1
        w.error = err
        w.plan = []
        desc = f"{planned} failed: {err!r}"
    if not w.plan:
        w.phase = "finished"
    return f"worker {i} {desc}"


def done(run: SimState, i: int) -> str:
    proc = run.incarnation
    queue = proc.queue
    assert queue is not None
    w = proc.workers[i]
    key, error = w.key, w.error
    assert key is not None

    def replay_outcome(_: str) -> None:
        if error is not None:
            raise error

    def dropped(_: str, __: Exception) -> None:
        run.counters["dropped"] += 1

    process_next_work_item(
        _HeldItem(queue, key, run.counters),
        replay_outcome,
        max_retries=DEFAULT_MAX_RETRIES,
        on_drop=dropped,
    )
    w.key, w.phase, w.plan, w.error = None, "idle", [], None
    return f"worker {i} done {key}" + (" (failed: retry)" if error is not None else "")


def advance(run: SimState, _: int) -> str:
    t = run.next_timer()
    assert t is not None
    run.world.clock.set_time(t)
    queue = run.incarnation.queue
    fired = queue.fire_due() if queue is not None else []
    return f"advance to {t:.3f}" + (f", requeued {', '.join(fired)}" if fired else "")


# -- environment actions ----------------------------------------------------------------


def client(run: SimState, _: int) -> str:
    run.counters["client_writes"] += 1
    if run.scenario.steer_rare:
        # Half the writes, while one is queued, delete a key the informer has queued an
        # add or update of: a relist before its pop takes #115620's path if the store
        # does not hold the key, and once the delete is queued a relist follows a delete.
        server = run.world.server.objects
        last = last_queued(run.incarnation.informer.fifo_state())
        queued = sorted(k for k, kind in last.items() if k in server and "Deleted" not in kind)
        stored = run.incarnation.informer.store_state()
        queued = [k for k in queued if k not in stored] or queued
        if queued and run.choose(2) == 0:
            key = queued[run.choose(len(queued))]
            o = run.world.delete_key(key)
            return f"client delete {key}@{o.resource_version} (steered)"
    return "client " + run.kind.client_write(run.world, run.scenario, run.choose)


def bookmark(run: SimState, _: int) -> str:
    watch = run.incarnation.informer.current_watch()
    assert watch is not None
    run.world.server.send_bookmarks(watch.id)
    return f"server bookmark at rv {run.world.server.rv}"


def register(run: SimState, _: int) -> str:
    proc = run.incarnation
    proc.late_registered = True
    listener = proc.add_handler(None, "late")
    cached = proc.informer.indexer.list()
    got = list(listener.pending)
    if len(got) != len(cached) or any(
        not isinstance(n, AddNotification) or not n.is_in_initial_list or n.new_obj is not o
        for n, o in zip(got, cached, strict=False)
    ):
        run.world.violations.add(
            "late-handler-snapshot",
            f"late handler got {len(got)} notifications for {len(cached)} cached objects",
        )
    return f"register late handler ({len(cached)} synthetic adds)"


def _delta_key(obj: object) -> str:
    if isinstance(obj, (Object, DeletedFinalStateUnknown)):
        return object_key(obj)
    return type(obj).__name__


#: Action name -> the function that takes it (faults: FAULT_KINDS names them).
ACTIONS: dict[str, Action] = {
    "reflector": reflector,
    "deliver": deliver,
    "pop": pop,
    "dispatch": dispatch,
    "get": get,
    "reconcile": reconcile,
    "write": write,
    "done": done,
    "advance": advance,
    "client": client,
    "bookmark": bookmark,
    "register": register,
    **FAULT_ACTIONS,
}
_missing = set(FAULT_KINDS) - set(ACTIONS)
assert not _missing, f"fault kinds without an action: {sorted(_missing)}"
