"""Deterministic simulation of the controller stack.

``Simulator(scenario, seed=N).run(steps)`` runs a scenario as a pure function of its
seed (or of a chooser's answers) and returns a :class:`RunResult`; ``refimpl sim`` is
the command line. The modules:

- :mod:`~refimpl.sim.simulator`: the run loop (steps with faults, then the drain, the
  verdict); :mod:`~refimpl.sim.result`: :class:`RunResult` and its verdicts;
- :mod:`~refimpl.sim.state`: one run's state (world, incarnation, choices, counters)
  and its trace line (``abstract_state``); :mod:`~refimpl.sim.trace_schema` types that
  line, :mod:`~refimpl.sim.spec_trace` adds the fields spec/Informer.tla needs;
- :mod:`~refimpl.sim.actions`: which actions are enabled and what each does;
  :mod:`~refimpl.sim.faults`: the fault actions;
- :mod:`~refimpl.sim.world`: what outlives a crash (clock, API server, history);
  :mod:`~refimpl.sim.incarnation`: one controller process (informer, handlers, queue,
  workers); :mod:`~refimpl.sim.informer`: the stepped shared informer;
  :mod:`~refimpl.sim.controllers`: the ReplicaSet-like reconciler and its workers;
- :mod:`~refimpl.sim.scenarios`: the shipped scenarios and their kinds;
  :mod:`~refimpl.sim.monitors`: the properties checked as the run goes;
  :mod:`~refimpl.sim.choosers`: who answers the choices (seed, tape, Hypothesis);
- :mod:`~refimpl.sim.shrink`: shrinking a violating run; :mod:`~refimpl.sim.cli`:
  ``refimpl sim``.
"""

from refimpl.sim.choosers import (
    Chooser,
    DataChooser,
    FirstChooser,
    SeededChooser,
    TapeChooser,
    parse_tape,
)
from refimpl.sim.informer import SimInformer
from refimpl.sim.monitors import PROPERTIES
from refimpl.sim.result import RunResult
from refimpl.sim.scenarios import FAULT_KINDS, SCENARIOS, Scenario, get_scenario, parse_faults
from refimpl.sim.simulator import Simulator

__all__ = [
    "FAULT_KINDS",
    "PROPERTIES",
    "SCENARIOS",
    "Chooser",
    "DataChooser",
    "FirstChooser",
    "RunResult",
    "Scenario",
    "SeededChooser",
    "SimInformer",
    "Simulator",
    "TapeChooser",
    "get_scenario",
    "parse_faults",
    "parse_tape",
]
