"""The state of one simulator run, and its abstract view (the trace line).

:class:`SimState` owns what the actions (refimpl/sim/actions.py, refimpl/sim/faults.py)
read and change: the :class:`~refimpl.sim.world.World`, the running
:class:`~refimpl.sim.incarnation.Incarnation`, the chooser and the answers it gave, the
counters. :meth:`SimState.abstract_state` is the line a TLA+ trace checker reads
(refimpl/sim/trace_schema.py types it; refimpl/tla/trace.py maps it to
spec/WorkQueue.tla, spec/DeltaFIFO.tla, spec/RealFIFO.tla and spec/Informer.tla).
The run loop is :class:`~refimpl.sim.simulator.Simulator`'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import IO, Any

from refimpl.cache.deltas import Delta
from refimpl.cache.processor import AddNotification, DeleteNotification, Notification
from refimpl.cache.shared_informer import FifoMode
from refimpl.clock import NS_PER_SECOND
from refimpl.meta import DeletedFinalStateUnknown, Object, object_key
from refimpl.sim.choosers import Chooser
from refimpl.sim.incarnation import Incarnation
from refimpl.sim.informer import delta_state
from refimpl.sim.monitors import HandlerRecord
from refimpl.sim.scenarios import FAULT_KINDS, KINDS, Scenario
from refimpl.sim.spec_trace import spec_fields, spec_phase
from refimpl.sim.trace_schema import Answer, EventRecord, NoteRecord, SubStep, TraceRecord
from refimpl.sim.world import World

__all__ = ["SimState", "Timeline", "describe_note", "event_key"]

#: Receives ``(step, time, action, description)`` per step.
Timeline = Callable[[int, float, str, str], None]

#: The cores' tracing hooks' step names as the trace schema types them.
_SUB_STEPS: dict[str, SubStep] = {
    "popped": "popped",
    "taken": "taken",
    "store-write": "store-write",
    "distributed": "distributed",
    "finished": "finished",
}

#: What a fault needs to be possible: an open watch, history to compact, a
#: controller to write, a pending notification.
_FAULT_NEEDS = {
    "close_watch": "watch",
    "watch_410": "watch",
    "compact": "log",
    "write_error": "logic",
    "drop_notification": "pending",
}


class SimState:
    """One run's state: the world, the incarnation, the choices made, the counters.

    ``chooser`` answers every choice; ``faults`` are the fault weights (all of
    FAULT_KINDS); ``trace`` receives a JSON line per step (and, with ``spec_trace``,
    per code step); ``timeline`` a line per step."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        chooser: Chooser,
        fifo_mode: FifoMode,
        faults: dict[str, int],
        trace: IO[str] | None,
        timeline: Timeline | None,
        spec_trace: bool,
    ) -> None:
        self.scenario = scenario
        self.kind = KINDS[scenario.kind]
        self.chooser = chooser
        self.fifo_mode = fifo_mode
        self.faults = faults
        #: (fault, weight, what it needs to be enabled) for the faults that are on.
        self.fault_list = [(k, w, _FAULT_NEEDS.get(k, "")) for k, w in faults.items() if w]
        self.trace = trace
        self.timeline = timeline
        #: Trace lines carry the ``spec`` fields.
        self.spec_trace = spec_trace
        #: Watch id -> whether the server opened it with a 410 (its rv was compacted).
        self.refused: dict[int, bool] = {}
        #: The action being taken (sub-step trace lines name it too).
        self.action = ""
        #: What the reflector got from the server in the step being taken (spec traces):
        #: "listed", "opened" (a watch, not refused), "gone" (a refused watch's 410 read),
        #: "ended" (an open watch's end read).
        self.answers: list[Answer] = []
        self.choices: list[int] = []
        self.n = 0
        self.counters: dict[str, int] = dict.fromkeys(
            (
                "reconciles",
                "retries",
                "dropped",
                "controller_writes",
                "failed_writes",
                "client_writes",
                "lists",
                "restarts",
                "pops",
                "dispatches",
            ),
            0,
        )
        self.faults_injected: dict[str, int] = dict.fromkeys(FAULT_KINDS, 0)
        #: Every handler record of every generation (coverage counters).
        self.all_records: list[HandlerRecord] = []
        self.world = World(scenario.compaction_window)
        self.kind.setup(self.world, scenario)
        self.generation = 0
        self.incarnation = self.new_incarnation()

    def new_incarnation(self) -> Incarnation:
        """A controller process of the current generation, with an empty cache."""
        return Incarnation(
            self.world,
            self.scenario,
            self.kind,
            self.generation,
            fifo_mode=self.fifo_mode,
            all_records=self.all_records,
            spec_trace=self.spec_trace,
            sub_step=self.sub_step if self.spec_trace and self.trace is not None else None,
        )

    # -- choosing -------------------------------------------------------------------------

    def choose(self, n: int, weights: list[int] | None = None) -> int:
        """Ask the chooser (and record the answer) -- only when there is a choice."""
        if n <= 1:
            if n < 1:
                raise ValueError("choose: no options")
            return 0
        i = self.chooser.choose(n, weights)
        if not 0 <= i < n:
            raise RuntimeError(f"chooser answered {i} for {n} options")
        self.choices.append(i)
        return i

    def next_timer(self) -> float | None:
        """The earliest future deadline: the reflector's (a backoff or the next resync)
        or the work queue's next ready retry; None if there is none."""
        now = self.world.clock.now()
        best = self.incarnation.informer.next_deadline()
        if best is not None and best <= now:
            best = None
        queue = self.incarnation.queue
        if queue is not None:
            ready = queue.next_ready_at()
            if ready is not None and ready > now and (best is None or ready < best):
                best = ready
        return best

    # -- traces ---------------------------------------------------------------------------

    def sub_step(self, event: str, deltas: Sequence[Delta]) -> None:
        """A code step inside the current simulator step (the cores' tracing hooks call
        it; only with spec traces): a trace line of its own, ``sub`` naming the step
        ("popped", "taken", "store-write", "distributed", "finished"), ``taken`` the
        entries a take removed."""
        assert self.trace is not None
        state = self.abstract_state(self.action, "")
        state["sub"] = _SUB_STEPS[event]
        if event == "taken":
            state["taken"] = [delta_state(d) for d in deltas]
        self.trace.write(json.dumps(state, sort_keys=True) + "\n")

    def abstract_state(self, action: str = "", desc: str = "") -> TraceRecord:
        """The state a TLA+ trace checker would read: server objects and RV, the
        reflector's watch, phase and last synced RV, the FIFO, the store, each listener's
        pending notifications, the work queue, the workers, virtual time; with
        ``spec_trace`` also ``spec`` (refimpl.sim.spec_trace.spec_fields): every server
        write, compacted or not, the phase as spec/Informer.tla names it, and h0's
        handler view and last rv per key."""
        proc = self.incarnation
        inf = proc.informer
        server = self.world.server
        watch = inf.current_watch()
        queue = proc.queue
        state: TraceRecord = {
            "step": self.n,
            "action": action,
            "desc": desc,
            "t": round(self.world.clock.now(), 6),
            "generation": proc.generation,
            "server": {k: int(o.resource_version) for k, o in server.objects.items()},
            "serverRV": server.rv,
            "compactedRV": server.compacted_rv,
            "watch": None
            if watch is None
            else {
                "id": watch.id,
                "from": watch.start_rv,
                "pending": [_event_state(e) for e in watch.pending],
                "wire": [_event_state(e) for e in watch.wire],
                "ended": watch.ended,
            },
            "reflector": {
                "phase": inf.reflector_phase(),
                "lastSyncRV": inf.last_sync_resource_version(),
            },
            "fifo": inf.fifo_state(),
            "store": {k: rv for k, (_, rv) in inf.store_state().items()},
            "synced": inf.synced,
            "pending": {
                listener.name: [_note_state(n) for n in listener.pending]
                for listener in proc.listeners
            },
            "workers": [(w.key, w.phase) for w in proc.workers],
        }
        if queue is not None:
            core = queue.core
            state["queue"] = list(core.queue)
            state["dirty"] = sorted(core.dirty)
            state["processing"] = sorted(core.processing)
            state["waiting"] = {
                k: round(t / NS_PER_SECOND, 6) for k, t in queue.waiting.ready_times().items()
            }
        if proc.recorder is not None:
            state["spec"] = spec_fields(
                self.world.writes,
                spec_phase(inf, self.refused),
                proc.recorder,
                fifo_synced=inf.fifo.has_synced(),
                answers=self.answers,
            )
        return state


def event_key(obj: Object) -> str:
    """A watch event's object key ("-" for an event without an object, e.g. a bookmark)."""
    return object_key(obj) if obj.name else "-"


def _event_state(e: Any) -> EventRecord:
    return (str(e.type), event_key(e.object), int(e.resource_version or 0))


def _note_state(n: Notification) -> NoteRecord:
    if isinstance(n, DeleteNotification):
        o = n.old_obj
        inner = o.obj if isinstance(o, DeletedFinalStateUnknown) else o
        rv = int(inner.resource_version) if isinstance(inner, Object) else 0
        kind = "deleteDFSU" if isinstance(o, DeletedFinalStateUnknown) else "delete"
        return (kind, object_key(o), rv)
    kind = "add" if isinstance(n, AddNotification) else "update"
    return (kind, object_key(n.new_obj), int(n.new_obj.resource_version))


def describe_note(n: Notification) -> str:
    """A notification as the timeline shows it: ``add ns/name@rv``, ``delete(DFSU) ...``."""
    if isinstance(n, DeleteNotification):
        o = n.old_obj
        tomb = isinstance(o, DeletedFinalStateUnknown)
        inner = o.obj if isinstance(o, DeletedFinalStateUnknown) else o
        rv = inner.resource_version if isinstance(inner, Object) else "?"
        return f"delete{'(DFSU)' if tomb else ''} {object_key(o)}@{rv}"
    obj = n.new_obj
    kind = "add" if isinstance(n, AddNotification) else "update"
    return f"{kind} {object_key(obj)}@{obj.resource_version}"
