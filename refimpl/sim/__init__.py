"""Deterministic simulation of the controller stack (see ``refimpl.sim.simulator``).

``Simulator(scenario, seed=N).run(steps)`` runs a scenario as a pure function of its
seed (or of a chooser's answers) and returns a :class:`RunResult`; ``refimpl sim`` is
the command line (``refimpl.sim.cli``).
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
from refimpl.sim.scenarios import FAULT_KINDS, SCENARIOS, Scenario, get_scenario, parse_faults
from refimpl.sim.simulator import RunResult, Simulator

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
