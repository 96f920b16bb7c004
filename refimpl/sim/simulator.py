"""The deterministic simulator's run loop: a controller stack run as one chosen action
per step.

:class:`Simulator` is a :class:`~refimpl.sim.state.SimState` (a
:class:`~refimpl.sim.world.World` -- FakeClock, ApiServerCore, the history of every
object state -- and the running :class:`~refimpl.sim.incarnation.Incarnation`: a
SimInformer, its handlers, a VirtualRateLimitingQueue and its workers) that it steps.
Each step lists the enabled actions (refimpl/sim/actions.py) -- progress first, then
time, client writes and faults -- and lets a chooser pick one, so a run is a pure
function of (scenario, choices): no threads, no wall clock, no hash-ordered iteration.
After the steps with faults it drains and judges the run (:class:`RunResult`). Plays the
role of TLC's ``Next`` over ``spec/Informer.tla`` and ``spec/Controller.tla``; traces
(``abstract_state``) use their variable names.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO

import attrs

from refimpl.cache.reflector import WaitUntil
from refimpl.cache.shared_informer import FifoMode
from refimpl.sim.actions import ACTIONS, enabled
from refimpl.sim.choosers import Chooser, SeededChooser
from refimpl.sim.result import RunResult
from refimpl.sim.scenarios import SCENARIOS, Scenario, get_scenario, parse_faults
from refimpl.sim.state import SimState, Timeline

__all__ = ["Simulator"]


class Simulator(SimState):
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
        steer_rare: bool | None = None,
    ) -> None:
        if isinstance(scenario, str):
            scenario = get_scenario(scenario)
        if steer_rare is not None:
            # Only `refimpl spec trace-coverage` overrides it, to measure both ways.
            scenario = attrs.evolve(scenario, steer_rare=steer_rare)
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
        self.seed = seed if chooser is None else None
        self._drain_chooser = drain_chooser
        self.max_drain_time = max_drain_time
        self.max_drain_steps = (
            max_drain_steps if max_drain_steps is not None else 20_000 + 60 * scenario.objects
        )
        mode = FifoMode(fifo_mode)
        super().__init__(
            scenario,
            chooser=chooser if chooser is not None else SeededChooser(seed or 0),
            fifo_mode=mode,
            faults=parse_faults(faults, scenario),
            trace=trace,
            timeline=timeline,
            # Trace lines carry the ``spec`` fields (default: the scenario's choice).
            spec_trace=scenario.spec_trace if spec_trace is None else spec_trace,
        )

    def enabled(self, chaos: bool) -> tuple[list[tuple[str, int]], list[int], int]:
        """``(actions, weights, n_progress)``: progress actions first (index 0 is the
        canonical next step), then time, then -- while ``chaos`` -- writes and faults."""
        return enabled(self, chaos)

    # -- running --------------------------------------------------------------------------

    def step(self, chaos: bool = True) -> bool:
        """Take one step; False if no action is enabled."""
        acts, weights, _ = enabled(self, chaos)
        if not acts:
            return False
        self._take(acts, weights)
        return True

    def _take(self, acts: list[tuple[str, int]], weights: list[int]) -> None:
        i = self.choose(len(acts), weights)
        kind, arg = acts[i]
        self.n += 1
        self.world.violations.step = self.n
        self.action = kind
        desc = ACTIONS[kind](self, arg)
        if self.incarnation.just_synced:
            self.incarnation.just_synced = False
            desc += f" [g{self.incarnation.generation} has_synced]"
        if self.timeline is not None:
            self.timeline(self.n, self.world.clock.now(), kind, desc)
        if self.trace is not None:
            self.trace.write(json.dumps(self.abstract_state(kind, desc), sort_keys=True) + "\n")
        self.answers = []

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
            self.chooser = self._drain_chooser
        converged = quiet = False
        convergence_time: float | None = None
        unmet: list[str] = []
        pending: dict[str, int] = {}
        drained = 0
        while True:
            acts, weights, progress = enabled(self, chaos=False)
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


def _diff(a: dict[str, tuple[str, int]], b: dict[str, tuple[str, int]]) -> str:
    parts: list[str] = []
    for k in sorted(a.keys() | b.keys()):
        if a.get(k) != b.get(k):
            parts.append(f"{k}: {a.get(k)} vs {b.get(k)}")
    more = f" (+{len(parts) - 4} more)" if len(parts) > 4 else ""
    return ", ".join(parts[:4]) + more
