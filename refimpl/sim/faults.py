"""The simulator's fault actions: what goes wrong, one action per FAULT_KINDS entry.

Each function takes one step on a :class:`~refimpl.sim.state.SimState` and returns the
timeline's description. Server-side faults drive refimpl/apiserver's ApiServerCore (a
watch closed or ended with 410, compaction, a failing list or watch request); the others
fail a controller write, crash the controller process (a new
:class:`~refimpl.sim.incarnation.Incarnation` with an empty cache) or lose a pending
notification. spec/Informer.tla's ``CloseWatch``, ``Compact``, ``ListFails``,
``WatchFails`` and ``Crash`` model the ones it has.
"""

from __future__ import annotations

from collections.abc import Callable

from refimpl.apiserver import CoreWatch
from refimpl.cache.processor import AddNotification
from refimpl.sim.state import SimState, describe_note

__all__ = ["FAULT_ACTIONS"]


def _fault(run: SimState, kind: str) -> None:
    run.faults_injected[kind] += 1


def _current_watch(run: SimState) -> CoreWatch:
    watch = run.incarnation.informer.current_watch()
    assert watch is not None
    return watch


def close_watch(run: SimState, _: int) -> str:
    _fault(run, "close_watch")
    drop = run.choose(2) == 0
    watch = _current_watch(run)
    lost = len(watch.pending) if drop else 0
    later = run.scenario.watch_drop_after
    if later > 0:
        clock = run.world.clock
        clock.set_time(clock.now() + later)
    run.world.server.close_watch(watch.id, drop_pending=drop)
    return (
        f"FAULT close watch {watch.id}"
        + (f" after {later:g} s" if later > 0 else "")
        + (f", {lost} undelivered events lost" if drop else "")
    )


def watch_410(run: SimState, _: int) -> str:
    _fault(run, "watch_410")
    watch = _current_watch(run)
    run.world.server.fail_watch(watch.id)
    return f"FAULT watch {watch.id} ends with 410 Expired"


def compact(run: SimState, _: int) -> str:
    _fault(run, "compact")
    server = run.world.server
    server.compact(server.rv)
    return f"FAULT compact at rv {server.rv}"


def list_error(run: SimState, _: int) -> str:
    _fault(run, "list_error")
    run.world.server.fail_next_lists(1)
    return "FAULT next list fails"


def watch_error(run: SimState, _: int) -> str:
    _fault(run, "watch_error")
    run.world.server.fail_next_watches(1)
    return "FAULT next watch fails (429)"


def write_error(run: SimState, _: int) -> str:
    _fault(run, "write_error")
    run.world.failing_writes += 1
    return "FAULT next controller write fails"


def crash(run: SimState, _: int) -> str:
    _fault(run, "crash")
    run.counters["restarts"] += 1
    run.counters["lists"] += run.incarnation.informer.lists
    run.counters["pops"] += run.incarnation.informer.pops
    run.incarnation.stop()
    run.generation += 1
    run.world.generation = run.generation
    run.incarnation = run.new_incarnation()
    return f"FAULT controller crash; restart as generation {run.generation} (empty cache)"


def drop_notification(run: SimState, _: int) -> str:
    _fault(run, "drop_notification")
    proc = run.incarnation
    candidates = [i for i, listener in enumerate(proc.listeners) if listener.pending]
    i = candidates[run.choose(len(candidates))]
    listener = proc.listeners[i]
    n = listener.pending.popleft()
    # The monitors see it (the informer did deliver it); the controller never does.
    proc.records[i].observe(n)
    if isinstance(n, AddNotification) and n.is_in_initial_list:
        listener.sync_tracker.finished()
    return f"FAULT {listener.name} loses {describe_note(n)}"


#: Fault name (FAULT_KINDS) -> its action.
FAULT_ACTIONS: dict[str, Callable[[SimState, int], str]] = {
    "close_watch": close_watch,
    "watch_410": watch_410,
    "compact": compact,
    "list_error": list_error,
    "watch_error": watch_error,
    "write_error": write_error,
    "crash": crash,
    "drop_notification": drop_notification,
}
