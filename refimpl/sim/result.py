"""What a simulator run reports: :class:`RunResult` and its three verdicts.

Built by :meth:`refimpl.sim.simulator.Simulator.run`; read by ``refimpl sim``
(refimpl/sim/cli.py) and the shrinker (refimpl/sim/shrink.py). No client-go or TLA+
counterpart: TLC's own verdicts are refimpl/tla/output.py's.
"""

from __future__ import annotations

import attrs

__all__ = ["HOLDS", "INCONCLUSIVE", "VIOLATED", "RunResult"]

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
