"""The deterministic simulator: a controller stack run as one chosen action per step.

:class:`Simulator` owns a :class:`World` (FakeClock, ApiServerCore, the history of every
object state) and the running :class:`Incarnation` (a :class:`SimInformer`, its handlers, a
VirtualRateLimitingQueue and its workers). Each step lists the enabled actions -- progress
first, then time, client writes and faults -- and lets a chooser pick one, so a run is a
pure function of (scenario, choices): no threads, no wall clock, no hash-ordered
iteration. Plays the role of TLC's ``Next`` over ``spec/Informer.tla`` and
``spec/Controller.tla``; traces (``abstract_state``) use their variable names.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

import attrs

from refimpl.apierrors import InternalError, NotFound
from refimpl.apiserver import ApiServerCore, ApiServerListerWatcher, CoreWatch
from refimpl.cache.deltas import Delta
from refimpl.cache.processor import (
    AddNotification,
    DeleteNotification,
    Notification,
    ProcessorListener,
)
from refimpl.cache.reflector import WaitUntil
from refimpl.cache.shared_informer import FifoMode, ListMode
from refimpl.clock import NS_PER_SECOND, FakeClock
from refimpl.meta import DeletedFinalStateUnknown, Object, object_key
from refimpl.sim.choosers import Chooser, SeededChooser
from refimpl.sim.controllers import ControllerLogic, Worker, Write
from refimpl.sim.informer import SimInformer, delta_state
from refimpl.sim.monitors import (
    HandlerRecord,
    History,
    InformerMonitor,
    MonitoredHandler,
    Violations,
)
from refimpl.sim.scenarios import (
    FAULT_KINDS,
    KINDS,
    NAMESPACE,
    SCENARIOS,
    Scenario,
    get_scenario,
    parse_faults,
)
from refimpl.sim.spec_trace import SPEC_LISTENER, SpecRecorder, spec_fields, spec_phase
from refimpl.sim.trace_schema import Answer, EventRecord, NoteRecord, SubStep, TraceRecord
from refimpl.worker import DEFAULT_MAX_RETRIES, process_next_work_item
from refimpl.workqueue.virtual import VirtualRateLimitingQueue

__all__ = ["Incarnation", "RunResult", "Simulator", "World"]

#: Chooser weights: every enabled progress action 100, the rest relative to that.
W_PROGRESS = 100
W_ADVANCE = 25
W_BOOKMARK = 2
W_REGISTER = 3

#: Actions that are plain progress (the compact timeline leaves them out).
PROGRESS_ACTIONS = frozenset(
    {"reflector", "deliver", "pop", "dispatch", "get", "reconcile", "write", "done", "advance"}
)


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


class World:
    """What outlives a controller crash: the clock, the server, the history of every
    object state it produced, and the name generator (the server's generateName)."""

    def __init__(self, scenario: Scenario) -> None:
        self.clock = FakeClock(0.0)
        self.server = ApiServerCore(
            compaction_window=scenario.compaction_window, deliver_immediately=False
        )
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

    def _wrote(self, kind: str, out: Object, rv_before: int) -> None:
        if self.server.rv != rv_before:  # an update that changes nothing is no write
            self.writes.append((kind, object_key(out), self.server.rv))

    def create(self, obj: Object) -> Object:
        rv = self.server.rv
        out = self.server.create(obj)
        self.history.wrote(out)
        self._wrote("ADDED", out, rv)
        return out

    def update(self, obj: Object) -> Object:
        rv = self.server.rv
        out = self.server.update(obj)
        self.history.wrote(out)
        self._wrote("MODIFIED", out, rv)
        return out

    def delete_key(self, key: str, uid: str = "") -> Object:
        namespace, _, name = key.rpartition("/")
        rv = self.server.rv
        out = self.server.delete(namespace, name, uid=uid)
        self.history.wrote(out, deleted=True)
        self._wrote("DELETED", out, rv)
        return out

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


class _HeldItem:
    """The worker's key seen through the queue API, so the retry policy of
    :func:`refimpl.worker.process_next_work_item` runs unchanged at the ``done`` step."""

    def __init__(self, queue: VirtualRateLimitingQueue[str], key: str, sim: Simulator) -> None:
        self._queue = queue
        self._key = key
        self._sim = sim

    def get(self) -> tuple[str | None, bool]:
        return self._key, False

    def done(self, item: str) -> None:
        self._queue.done(item)

    def forget(self, item: str) -> None:
        self._queue.forget(item)

    def add_rate_limited(self, item: str) -> None:
        self._sim.counters["retries"] += 1
        self._queue.add_rate_limited(item)

    def num_requeues(self, item: str) -> int:
        return self._queue.num_requeues(item)


class Incarnation:
    """One incarnation of the controller process: its informer (empty at birth), its
    handlers, its work queue and workers. A crash throws all of it away."""

    def __init__(self, sim: Simulator, generation: int) -> None:
        world = sim.world
        scenario = sim.scenario
        self.generation = generation
        self.informer = SimInformer(
            world.lw,
            clock=world.clock,
            fifo_mode=sim.fifo_mode,
            # List + watch, as spec/Informer.tla's reflector (the simulator's spec
            # traces follow it; watch-list, the v1.35+ default, is not modelled).
            list_mode=ListMode.LIST_WATCH,
            batch=scenario.batch,
            resync_period=scenario.resync_period,
            indexers=sim.kind.indexers(),
            seed=generation,
            name=f"g{generation}",
        )
        self.monitor = InformerMonitor(self.informer.indexer, world.violations, self.informer.name)
        self.informer.on_applied = self.monitor.applied
        self.informer.on_synced = self._synced
        self.queue: VirtualRateLimitingQueue[str] | None = None
        self.workers: list[Worker] = []
        self.waits_for_sync = scenario.wait_for_sync
        self.logic: ControllerLogic | None = sim.kind.make_logic(self, scenario)
        if self.logic is not None:
            self.queue = VirtualRateLimitingQueue(world.clock)
            self.workers = [Worker(i) for i in range(scenario.workers)]
        self.records: list[HandlerRecord] = []
        self.listeners: list[ProcessorListener] = []
        self._world = world
        self._all_records = sim.all_records
        self.late_registered = False
        self.just_synced = False
        inner = self.logic.handler if self.logic is not None else None
        #: With spec traces: h0's view as spec/Informer.tla's handler keeps it.
        self.recorder = SpecRecorder(inner) if sim.spec_trace else None
        self.add_handler(self.recorder if self.recorder is not None else inner, SPEC_LISTENER)
        if sim.spec_trace and sim._trace is not None:
            # Trace validation at the code's own granularity: the store write and each
            # handler call (and the pop / take / finish around them) are lines of their
            # own, recorded by the cores' tracing hooks as the code takes them.
            self.informer.step_hook = sim._sub_step
            self.informer.indexer.on_write = functools.partial(sim._sub_step, "store-write", ())
        self.informer.start()

    def add_handler(self, inner: Any, label: str) -> ProcessorListener:
        record = HandlerRecord(
            f"{self.informer.name}/{label}",
            self.monitor,
            self._world.history,
            self._world.violations,
        )
        listener = self.informer.add_event_handler(MonitoredHandler(record, inner), name=label)
        self.records.append(record)
        self.listeners.append(listener)
        self._all_records.append(record)
        return listener

    def _synced(self) -> None:
        self.just_synced = True
        initial = self.informer.initial_list
        if initial is not None:
            self.monitor.check_initial_list(initial[0])

    def workers_may_run(self) -> bool:
        return not self.waits_for_sync or self.informer.synced

    def stop(self) -> None:
        self.informer.stop()
        if self.queue is not None:
            self.queue.shut_down()


#: The three outcomes of a run (:attr:`RunResult.verdict`).
HOLDS, VIOLATED, INCONCLUSIVE = "holds", "violated", "inconclusive"


@attrs.define
class RunResult:
    """What a run did and found. ``replay`` is a command that repeats it exactly.

    ``verdict`` is one of three outcomes: ``holds`` (converged, no violation),
    ``violated`` (a property failed: ``violations`` says which), ``inconclusive`` (the
    drain limit came while work was still pending -- ``pending`` says how much -- so the
    end-of-run properties, convergence, handler-view and no-lost-delete, were not
    judged: a longer drain would have to decide them). Running out of drain time is
    never reported as a safety violation.
    """

    scenario: str
    fifo_mode: str
    seed: int | None
    steps: int
    drain_steps: int
    violations: list[str]
    converged: bool
    quiescent: bool
    convergence_time: float | None
    end_time: float
    counters: dict[str, int]
    faults_injected: dict[str, int]
    choices: list[int]
    replay: str
    unmet: list[str] = attrs.field(factory=list)
    #: Work left when an inconclusive run's drain limit came (see :meth:`Simulator.pending`).
    pending: dict[str, int] = attrs.field(factory=dict)

    @property
    def ok(self) -> bool:
        """No violation (an inconclusive run is ok: nothing was found wrong)."""
        return not self.violations

    @property
    def verdict(self) -> str:
        if self.violations:
            return VIOLATED
        return HOLDS if self.converged else INCONCLUSIVE

    def of(self, prop: str) -> list[str]:
        tag = f"[{prop}]"
        return [v for v in self.violations if tag in v]

    def summary(self) -> str:
        c = self.counters
        faults = ", ".join(f"{k} {v}" for k, v in self.faults_injected.items() if v) or "none"
        if self.convergence_time is not None:
            conv = f"{self.convergence_time:.3f} virtual s after faults stopped"
        elif self.pending:
            conv = "not judged: drain limit reached with work pending (" + ", ".join(
                f"{k} {v}" for k, v in self.pending.items()
            )
            conv += ")"
        else:
            conv = "NOT converged" + (f" ({'; '.join(self.unmet[:3])})" if self.unmet else "")
        lines = [
            f"scenario {self.scenario}, fifo {self.fifo_mode}, "
            + (f"seed {self.seed}" if self.seed is not None else "choices from a tape/Hypothesis"),
            f"steps: {self.steps} with faults + {self.drain_steps} draining "
            f"(virtual time {self.end_time:.3f} s)",
            f"reconciles: {c['reconciles']}, retries: {c['retries']}, dropped keys: "
            f"{c['dropped']}, restarts: {c['restarts']}",
            f"writes: {c['controller_writes']} by the controller, {c['client_writes']} by "
            f"clients; lists: {c['lists']}",
            f"faults injected: {faults}",
            f"convergence: {conv}",
            f"violations: {len(self.violations)}",
        ]
        if self.verdict == INCONCLUSIVE:
            lines[-1] += " so far; verdict: INCONCLUSIVE (rerun with a longer drain)"
        else:
            lines[-1] += f"; verdict: {self.verdict}"
        lines += [f"  {v}" for v in self.violations[:20]]
        if len(self.violations) > 20:
            lines.append(f"  ... {len(self.violations) - 20} more")
        lines.append(f"replay: {self.replay}")
        return "\n".join(lines)


Timeline = Callable[[int, float, str, str], None]


class Simulator:
    """Runs one scenario. The chooser decides every step (default: seeded random); the
    run has ``steps`` steps with client writes and faults enabled, then drains --
    progress and time only, chosen by ``drain_chooser`` (default: the same chooser) --
    until it is idle and converged, or ``max_drain_time`` virtual seconds /
    ``max_drain_steps`` steps pass.

    ``trace`` receives one JSON line of abstract state per step; ``timeline`` receives
    ``(step, time, action, description)`` per step. ``spec_trace`` (default: the
    scenario's) adds the fields spec/Informer.tla needs to each line; it changes
    nothing else, so a run with and without it takes the same steps.
    """

    def __init__(
        self,
        scenario: Scenario | str,
        *,
        seed: int | None = None,
        chooser: Chooser | None = None,
        drain_chooser: Chooser | None = None,
        fifo_mode: FifoMode | str = FifoMode.REAL_ATOMIC,
        faults: str | Mapping[str, int] | None = None,
        objects: int | None = None,
        batch: bool | None = None,
        trace: IO[str] | None = None,
        timeline: Timeline | None = None,
        max_drain_time: float = 900.0,
        max_drain_steps: int | None = None,
        spec_trace: bool | None = None,
    ) -> None:
        if isinstance(scenario, str):
            scenario = get_scenario(scenario)
        if objects is not None:
            scenario = scenario.with_objects(objects)
        if batch is not None:
            scenario = attrs.evolve(scenario, batch=batch)
        if chooser is not None and seed is not None:
            raise ValueError("pass a seed or a chooser, not both")
        if not max_drain_time >= 0:
            raise ValueError(f"max_drain_time must be >= 0, got {max_drain_time!r}")
        if max_drain_steps is not None and max_drain_steps < 0:
            raise ValueError(f"max_drain_steps must be >= 0, got {max_drain_steps!r}")
        self.scenario = scenario
        self.kind = KINDS[scenario.kind]
        self.seed = seed if chooser is None else None
        self._chooser: Chooser = chooser if chooser is not None else SeededChooser(seed or 0)
        self._drain_chooser = drain_chooser
        self.fifo_mode = FifoMode(fifo_mode)
        self.faults = parse_faults(faults, scenario)
        #: (fault, weight, what it needs to be enabled) for the faults that are on.
        self._fault_list = [(k, w, _FAULT_NEEDS.get(k, "")) for k, w in self.faults.items() if w]
        self.max_drain_time = max_drain_time
        self.max_drain_steps = (
            max_drain_steps if max_drain_steps is not None else 20_000 + 60 * scenario.objects
        )
        self._trace = trace
        self._timeline = timeline
        #: Trace lines carry the ``spec`` fields (default: the scenario's choice).
        self.spec_trace = scenario.spec_trace if spec_trace is None else spec_trace
        #: Watch id -> whether the server opened it with a 410 (its rv was compacted).
        self._refused: dict[int, bool] = {}
        #: The action being taken (sub-step trace lines name it too).
        self._kind = ""
        #: What the reflector got from the server in the step being taken (spec traces):
        #: "listed", "opened" (a watch, not refused), "gone" (a refused watch's 410 read),
        #: "ended" (an open watch's end read).
        self._answers: list[Answer] = []
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
        self.world = World(scenario)
        self.kind.setup(self.world, scenario)
        self.generation = 0
        self.incarnation = Incarnation(self, 0)
        self._actions: dict[str, Callable[[int], str]] = {
            "reflector": self._reflector,
            "deliver": self._deliver,
            "pop": self._pop,
            "dispatch": self._dispatch,
            "get": self._get,
            "reconcile": self._reconcile,
            "write": self._write,
            "done": self._done,
            "advance": self._advance,
            "client": self._client,
            "bookmark": self._bookmark,
            "register": self._register,
            # Faults (FAULT_KINDS names them; the check below keeps the two in step).
            "close_watch": self._f_close_watch,
            "watch_410": self._f_watch_410,
            "compact": self._f_compact,
            "list_error": self._f_list_error,
            "watch_error": self._f_watch_error,
            "write_error": self._f_write_error,
            "crash": self._f_crash,
            "drop_notification": self._f_drop_notification,
        }
        missing = set(FAULT_KINDS) - set(self._actions)
        assert not missing, f"fault kinds without an action: {sorted(missing)}"

    # -- choosing -------------------------------------------------------------------------

    def choose(self, n: int, weights: list[int] | None = None) -> int:
        """Ask the chooser (and record the answer) -- only when there is a choice."""
        if n <= 1:
            if n < 1:
                raise ValueError("choose: no options")
            return 0
        i = self._chooser.choose(n, weights)
        if not 0 <= i < n:
            raise RuntimeError(f"chooser answered {i} for {n} options")
        self.choices.append(i)
        return i

    def _next_timer(self) -> float | None:
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

    def enabled(self, chaos: bool) -> tuple[list[tuple[str, int]], list[int], int]:
        """``(actions, weights, n_progress)``: progress actions first (index 0 is the
        canonical next step), then time, then -- while ``chaos`` -- writes and faults."""
        proc = self.incarnation
        inf = proc.informer
        acts: list[tuple[str, int]] = []
        if inf.reflector_ready():
            acts.append(("reflector", 0))
        watch = inf.current_watch()
        if watch is not None and watch.pending:
            acts.append(("deliver", 0))
        if len(inf.fifo):
            acts.append(("pop", 0))
        any_pending = False
        for i, listener in enumerate(proc.listeners):
            if listener.pending:
                acts.append(("dispatch", i))
                any_pending = True
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
        progress = len(acts)
        weights = [W_PROGRESS] * progress
        # While draining, time passes only when nothing else can happen (otherwise a
        # periodic resync could outpace a random scheduler forever).
        if (chaos or not progress) and self._next_timer() is not None:
            acts.append(("advance", 0))
            weights.append(W_ADVANCE)
        if chaos:
            acts.append(("client", 0))
            weights.append(self.scenario.write_weight)
            if self.scenario.late_handler and not proc.late_registered:
                acts.append(("register", 0))
                weights.append(W_REGISTER)
            active = watch is not None and not (watch.ended or watch.stopped)
            if active:
                acts.append(("bookmark", 0))
                weights.append(W_BOOKMARK)
            for kind, weight, needs in self._fault_list:
                if needs == "watch":
                    if not active:
                        continue
                elif needs == "log":
                    if not self.world.server.log:
                        continue
                elif needs == "logic":
                    if proc.logic is None:
                        continue
                elif needs == "pending" and not any_pending:
                    continue
                acts.append((kind, 0))
                weights.append(weight)
        return acts, weights, progress

    # -- running --------------------------------------------------------------------------

    def step(self, chaos: bool = True) -> bool:
        """Take one step; False if no action is enabled."""
        acts, weights, _ = self.enabled(chaos)
        if not acts:
            return False
        self._take(acts, weights)
        return True

    def _take(self, acts: list[tuple[str, int]], weights: list[int]) -> None:
        i = self.choose(len(acts), weights)
        kind, arg = acts[i]
        self.n += 1
        self.world.violations.step = self.n
        self._kind = kind
        desc = self._actions[kind](arg)
        if self.incarnation.just_synced:
            self.incarnation.just_synced = False
            desc += f" [g{self.incarnation.generation} has_synced]"
        if self._timeline is not None:
            self._timeline(self.n, self.world.clock.now(), kind, desc)
        if self._trace is not None:
            self._trace.write(json.dumps(self.abstract_state(kind, desc), sort_keys=True) + "\n")
        self._answers = []

    def _sub_step(self, event: str, deltas: Sequence[Delta]) -> None:
        """A code step inside the current simulator step (the cores' tracing hooks call
        it; only with spec traces): a trace line of its own, ``sub`` naming the step
        ("popped", "taken", "store-write", "distributed", "finished"), ``taken`` the
        entries a take removed."""
        assert self._trace is not None
        state = self.abstract_state(self._kind, "")
        state["sub"] = _SUB_STEPS[event]
        if event == "taken":
            state["taken"] = [delta_state(d) for d in deltas]
        self._trace.write(json.dumps(state, sort_keys=True) + "\n")

    def run(self, steps: int | None = None) -> RunResult:
        """``steps`` steps with writes and faults (default: the scenario's), then drain.
        Checks convergence and the end-of-run properties; returns the result."""
        steps = self.scenario.steps if steps is None else steps
        if steps < 0:
            raise ValueError(f"steps must be >= 0, got {steps}")
        while self.n < steps:
            if not self.step(chaos=True):
                break
        chaos_steps = self.n
        clock = self.world.clock
        chaos_end = clock.now()
        if self._drain_chooser is not None:
            self._chooser = self._drain_chooser
        converged = quiet = False
        convergence_time: float | None = None
        unmet: list[str] = []
        pending: dict[str, int] = {}
        drained = 0
        while True:
            acts, weights, progress = self.enabled(chaos=False)
            if progress == 0:
                quiet = True
                unmet = self.unmet()
                if not unmet:
                    converged = True
                    convergence_time = clock.now() - chaos_end
                    break
                if not acts:
                    break
                if clock.now() - chaos_end > self.max_drain_time:
                    pending = self.pending()
                    break
            else:
                quiet = False
            if drained >= self.max_drain_steps:
                unmet = unmet or [f"still busy after {drained} draining steps"]
                pending = self.pending()
                break
            self._take(acts, weights)
            drained += 1
        v = self.world.violations
        v.step = self.n
        # The limit came while work was still queued (injected failures not yet fired,
        # a reflector backing off, retries waiting in the queue, notifications or deltas
        # not yet handled): the run stopped early, nothing is known to be wrong, so the
        # end-of-run properties stay unjudged -- inconclusive, not violated. Only a run
        # that is idle and still wrong (or has only periodic resyncs left) fails them.
        if pending:
            quiet = False
        elif quiet:
            server = self.server_state()
            for record in self.incarnation.records:
                record.check_lost_deletes()
                if record.view_state() != server:
                    v.add("handler-view", f"{record.name}: {_diff(record.view_state(), server)}")
        if not converged and not pending:
            v.add(
                "converge",
                f"not converged {clock.now() - chaos_end:.1f} virtual s after faults "
                f"stopped: {'; '.join(unmet[:4])}",
            )
        self.counters["lists"] += self.incarnation.informer.lists
        self.counters["pops"] += self.incarnation.informer.pops
        records = self.all_records
        self.counters["notifications"] = sum(r.seen for r in records)
        self.counters["deletes_seen"] = sum(r.deletes for r in records)
        self.counters["tombstones_seen"] = sum(r.tombstones for r in records)
        self.counters["uid_replacements"] = sum(r.replaced_uids for r in records)
        return RunResult(
            scenario=self.scenario.name,
            fifo_mode=str(self.fifo_mode),
            seed=self.seed,
            steps=chaos_steps,
            drain_steps=drained,
            violations=list(v.items),
            converged=converged,
            quiescent=quiet,
            convergence_time=convergence_time,
            end_time=clock.now(),
            counters=dict(self.counters),
            faults_injected=dict(self.faults_injected),
            choices=list(self.choices),
            replay=self.replay_command(chaos_steps),
            unmet=unmet,
            pending=pending,
        )

    def replay_command(self, steps: int) -> str:
        parts = ["refimpl sim replay", self.scenario.name]
        # A seed replays only the default policy; any other run replays from its tape.
        if self.seed is not None and self._drain_chooser is None:
            parts.append(f"--seed {self.seed}")
        else:
            tape = list(self.choices)
            while tape and tape[-1] == 0:  # a used-up tape answers 0: trailing 0s are implied
                tape.pop()
            parts.append(f"--choices {','.join(map(str, tape)) or '0'}")
        parts.append(f"--steps {steps}")
        parts.append(f"--fifo {self.fifo_mode}")
        spec = self.faults_spec()
        if spec != "default":
            parts.append(f"--faults {spec}")
        default = SCENARIOS.get(self.scenario.name)
        if default is None or default.objects != self.scenario.objects:
            parts.append(f"--objects {self.scenario.objects}")
        if not self.scenario.batch and (default is None or default.batch):
            parts.append("--no-batch")
        return " ".join(parts)

    def faults_spec(self) -> str:
        default = SCENARIOS.get(self.scenario.name)
        if default is not None and parse_faults(None, default) == self.faults:
            return "default"
        if not any(self.faults.values()):
            return "none"
        return "only:" + ",".join(f"{k}={v}" for k, v in self.faults.items() if v)

    # -- what converged means -------------------------------------------------------------

    def pending(self) -> dict[str, int]:
        """Work still queued, by kind (only the nonzero counts): what a longer drain
        would still do. A periodic resync is not work: it recurs forever, so a run whose
        only timer is the next resync is idle."""
        proc = self.incarnation
        inf = proc.informer
        lists, watches = self.world.server.queued_faults()
        reflector = inf.reflector
        backing_off = reflector is not None and isinstance(reflector.waiting, WaitUntil)
        out = {
            "injected list failures": lists,
            "injected watch failures": watches,
            "injected write failures": self.world.failing_writes,
            "reflector retry waiting": int(backing_off),
            "deltas in the FIFO": len(inf.fifo),
            "notifications": sum(len(listener.pending) for listener in proc.listeners),
        }
        queue = proc.queue
        if queue is not None:
            out["queued keys"] = len(queue.core.queue)
            out["keys being processed"] = len(queue.core.processing)
            out["retries waiting"] = len(queue.waiting.waiting)
        return {k: v for k, v in out.items() if v}

    def server_state(self) -> dict[str, tuple[str, int]]:
        return {k: (o.uid, int(o.resource_version)) for k, o in self.world.server.objects.items()}

    def unmet(self) -> list[str]:
        """Why the system is not (yet) converged: the store differs from the server, or
        the controller's desired state is not the actual one."""
        out: list[str] = []
        store = self.incarnation.informer.store_state()
        server = self.server_state()
        if store != server:
            out.append(f"store != server: {_diff(store, server)}")
        out += self.kind.unmet(self.world)
        return out

    # -- progress actions -----------------------------------------------------------------

    def _reflector(self, _: int) -> str:
        inf = self.incarnation.informer
        before = inf.reflector_phase()
        lists = inf.lists
        old = inf.current_watch()
        inf.step_reflector()
        after = inf.reflector_phase()
        watch = inf.current_watch()
        if watch is not None and watch.id not in self._refused:
            # Nothing compacts within a reflector step: the 410 check of the open.
            self._refused[watch.id] = watch.start_rv < self.world.server.compacted_rv
        if inf.lists != lists:
            self._answers.append("listed")
        if old is not None and (watch is None or watch.id != old.id):
            self._answers.append("gone" if self._refused.get(old.id, False) else "ended")
        opened = watch is not None and (old is None or watch.id != old.id)
        if opened and watch is not None and not self._refused[watch.id]:
            self._answers.append("opened")
        if inf.lists != lists:
            return f"reflector listed at rv {inf.last_sync_resource_version()} -> {after}"
        return f"reflector {before} -> {after} (rv {inf.last_sync_resource_version()})"

    def _deliver(self, _: int) -> str:
        watch = self.incarnation.informer.current_watch()
        assert watch is not None
        event = watch.pending[0]
        self.world.server.release(watch.id, 1)
        return f"deliver {event.type} {_ev_key(event.object)}@{event.resource_version}"

    def _pop(self, _: int) -> str:
        deltas = self.incarnation.informer.pop()
        if self._timeline is None:
            return ""
        shown = " ".join(f"{d.type}:{_delta_key(d.object)}" for d in deltas[:3])
        more = f" +{len(deltas) - 3}" if len(deltas) > 3 else ""
        return f"pop {shown}{more}"

    def _dispatch(self, i: int) -> str:
        listener = self.incarnation.listeners[i]
        n = listener.pending[0]
        listener.dispatch_one()
        self.counters["dispatches"] += 1
        return f"dispatch {listener.name} {_note(n)}"

    def _get(self, i: int) -> str:
        proc = self.incarnation
        queue = proc.queue
        assert queue is not None
        key, _ = queue.get()
        assert key is not None
        for other in proc.workers:
            if other.index != i and other.key == key:
                self.world.violations.add(
                    "exclusive-workers", f"workers {other.index} and {i} both hold {key}"
                )
        w = proc.workers[i]
        w.key, w.phase, w.plan, w.error = key, "got", [], None
        return f"worker {i} got {key}"

    def _reconcile(self, i: int) -> str:
        proc = self.incarnation
        assert proc.logic is not None
        w = proc.workers[i]
        assert w.key is not None
        w.plan = proc.logic.plan(w.key)
        w.phase = "writing" if w.plan else "finished"
        self.counters["reconciles"] += 1
        plan = "; ".join(str(p) for p in w.plan[:3]) + (" ..." if len(w.plan) > 3 else "")
        return f"worker {i} reconciles {w.key}: {plan or 'nothing to do'}"

    def _write(self, i: int) -> str:
        w = self.incarnation.workers[i]
        write = w.plan.pop(0)
        self.counters["controller_writes"] += 1
        try:
            desc = self.world.controller_write(write)
        except Exception as err:
            self.counters["failed_writes"] += 1
            w.error = err
            w.plan = []
            desc = f"{write} failed: {err!r}"
        if not w.plan:
            w.phase = "finished"
        return f"worker {i} {desc}"

    def _done(self, i: int) -> str:
        proc = self.incarnation
        queue = proc.queue
        assert queue is not None
        w = proc.workers[i]
        key, error = w.key, w.error
        assert key is not None

        def replay_outcome(_: str) -> None:
            if error is not None:
                raise error

        def dropped(_: str, __: Exception) -> None:
            self.counters["dropped"] += 1

        process_next_work_item(
            _HeldItem(queue, key, self),
            replay_outcome,
            max_retries=DEFAULT_MAX_RETRIES,
            on_drop=dropped,
        )
        w.key, w.phase, w.plan, w.error = None, "idle", [], None
        return f"worker {i} done {key}" + (" (failed: retry)" if error is not None else "")

    def _advance(self, _: int) -> str:
        t = self._next_timer()
        assert t is not None
        self.world.clock.set_time(t)
        queue = self.incarnation.queue
        fired = queue.fire_due() if queue is not None else []
        return f"advance to {t:.3f}" + (f", requeued {', '.join(fired)}" if fired else "")

    # -- environment actions --------------------------------------------------------------

    def _client(self, _: int) -> str:
        self.counters["client_writes"] += 1
        return "client " + self.kind.client_write(self.world, self.scenario, self.choose)

    def _bookmark(self, _: int) -> str:
        watch = self.incarnation.informer.current_watch()
        assert watch is not None
        self.world.server.send_bookmarks(watch.id)
        return f"server bookmark at rv {self.world.server.rv}"

    def _register(self, _: int) -> str:
        proc = self.incarnation
        proc.late_registered = True
        listener = proc.add_handler(None, "late")
        cached = proc.informer.indexer.list()
        got = list(listener.pending)
        if len(got) != len(cached) or any(
            not isinstance(n, AddNotification) or not n.is_in_initial_list or n.new_obj is not o
            for n, o in zip(got, cached, strict=False)
        ):
            self.world.violations.add(
                "late-handler-snapshot",
                f"late handler got {len(got)} notifications for {len(cached)} cached objects",
            )
        return f"register late handler ({len(cached)} synthetic adds)"

    # -- faults ---------------------------------------------------------------------------

    def _fault(self, kind: str) -> None:
        self.faults_injected[kind] += 1

    def _current_watch(self) -> CoreWatch:
        watch = self.incarnation.informer.current_watch()
        assert watch is not None
        return watch

    def _f_close_watch(self, _: int) -> str:
        self._fault("close_watch")
        drop = self.choose(2) == 0
        watch = self._current_watch()
        lost = len(watch.pending) if drop else 0
        later = self.scenario.watch_drop_after
        if later > 0:
            clock = self.world.clock
            clock.set_time(clock.now() + later)
        self.world.server.close_watch(watch.id, drop_pending=drop)
        return (
            f"FAULT close watch {watch.id}"
            + (f" after {later:g} s" if later > 0 else "")
            + (f", {lost} undelivered events lost" if drop else "")
        )

    def _f_watch_410(self, _: int) -> str:
        self._fault("watch_410")
        watch = self._current_watch()
        self.world.server.fail_watch(watch.id)
        return f"FAULT watch {watch.id} ends with 410 Expired"

    def _f_compact(self, _: int) -> str:
        self._fault("compact")
        server = self.world.server
        server.compact(server.rv)
        return f"FAULT compact at rv {server.rv}"

    def _f_list_error(self, _: int) -> str:
        self._fault("list_error")
        self.world.server.fail_next_lists(1)
        return "FAULT next list fails"

    def _f_watch_error(self, _: int) -> str:
        self._fault("watch_error")
        self.world.server.fail_next_watches(1)
        return "FAULT next watch fails (429)"

    def _f_write_error(self, _: int) -> str:
        self._fault("write_error")
        self.world.failing_writes += 1
        return "FAULT next controller write fails"

    def _f_crash(self, _: int) -> str:
        self._fault("crash")
        self.counters["restarts"] += 1
        self.counters["lists"] += self.incarnation.informer.lists
        self.counters["pops"] += self.incarnation.informer.pops
        self.incarnation.stop()
        self.generation += 1
        self.world.generation = self.generation
        self.incarnation = Incarnation(self, self.generation)
        return f"FAULT controller crash; restart as generation {self.generation} (empty cache)"

    def _f_drop_notification(self, _: int) -> str:
        self._fault("drop_notification")
        proc = self.incarnation
        candidates = [i for i, listener in enumerate(proc.listeners) if listener.pending]
        i = candidates[self.choose(len(candidates))]
        listener = proc.listeners[i]
        n = listener.pending.popleft()
        # The monitors see it (the informer did deliver it); the controller never does.
        proc.records[i].observe(n)
        if isinstance(n, AddNotification) and n.is_in_initial_list:
            listener.sync_tracker.finished()
        return f"FAULT {listener.name} loses {_note(n)}"

    # -- traces ---------------------------------------------------------------------------

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
                spec_phase(inf, self._refused),
                proc.recorder,
                fifo_synced=inf.fifo.has_synced(),
                answers=self._answers,
            )
        return state


def _diff(a: dict[str, tuple[str, int]], b: dict[str, tuple[str, int]]) -> str:
    parts: list[str] = []
    for k in sorted(a.keys() | b.keys()):
        if a.get(k) != b.get(k):
            parts.append(f"{k}: {a.get(k)} vs {b.get(k)}")
    more = f" (+{len(parts) - 4} more)" if len(parts) > 4 else ""
    return ", ".join(parts[:4]) + more


def _ev_key(obj: Object) -> str:
    return object_key(obj) if obj.name else "-"


def _delta_key(obj: object) -> str:
    if isinstance(obj, (Object, DeletedFinalStateUnknown)):
        return object_key(obj)
    return type(obj).__name__


def _event_state(e: Any) -> EventRecord:
    return (str(e.type), _ev_key(e.object), int(e.resource_version or 0))


def _note(n: Notification) -> str:
    if isinstance(n, DeleteNotification):
        o = n.old_obj
        tomb = isinstance(o, DeletedFinalStateUnknown)
        inner = o.obj if isinstance(o, DeletedFinalStateUnknown) else o
        rv = inner.resource_version if isinstance(inner, Object) else "?"
        return f"delete{'(DFSU)' if tomb else ''} {object_key(o)}@{rv}"
    obj = n.new_obj
    kind = "add" if isinstance(n, AddNotification) else "update"
    return f"{kind} {object_key(obj)}@{obj.resource_version}"


def _note_state(n: Notification) -> NoteRecord:
    if isinstance(n, DeleteNotification):
        o = n.old_obj
        inner = o.obj if isinstance(o, DeletedFinalStateUnknown) else o
        rv = int(inner.resource_version) if isinstance(inner, Object) else 0
        kind = "deleteDFSU" if isinstance(o, DeletedFinalStateUnknown) else "delete"
        return (kind, object_key(o), rv)
    kind = "add" if isinstance(n, AddNotification) else "update"
    return (kind, object_key(n.new_obj), int(n.new_obj.resource_version))
