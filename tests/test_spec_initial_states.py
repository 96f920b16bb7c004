"""The code starts where the specs start: freshly constructed cores, read back through
the refinement mappings, are the initial state of each committed graph.

The replays rebuild the code in every state, overwriting every mapped field, so they
cannot see a wrong initial value in a constructor (a FIFO born ``populated``, a queue
born shutting down). These tests can.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path

from spec_graphs import spec_graph

from refimpl.cache.delta_fifo import DeltaFIFOCore
from refimpl.cache.informer_core import FifoMode, new_fifo_core
from refimpl.cache.real_fifo import RealFIFOCore
from refimpl.cache.store import Indexer
from refimpl.tla.graph import StateGraph
from refimpl.tla.mappings import mc_constants
from refimpl.tla.refine_fifo import delta_fifo_vars, real_fifo_vars, store_to_spec
from refimpl.tla.refine_informer import InformerMapping
from refimpl.tla.refine_workqueue import queue_state
from refimpl.tla.values import Value
from refimpl.workqueue.core import QueueCore

SPEC = Path(__file__).resolve().parents[1] / "spec"


@functools.cache
def _init(model: str) -> dict[str, Value]:
    graph: StateGraph = spec_graph(model)
    assert len(graph.init) == 1
    return dict(graph.states[graph.init[0]])


def _keys(model: str) -> tuple[str, ...]:
    keys = mc_constants(SPEC / f"MC{model}.tla")["Keys"]
    assert isinstance(keys, frozenset)
    return tuple(sorted(str(k) for k in keys))


def _subset(state: Mapping[str, Value], init: Mapping[str, Value]) -> dict[str, Value]:
    return {k: init[k] for k in state}


def test_queue_core_starts_at_work_queue_init() -> None:
    code = queue_state(QueueCore())
    assert code == _subset(code, _init("WorkQueue"))
    assert code == _subset(code, _init("ControllerReplay"))


def test_delta_fifo_core_starts_at_init() -> None:
    for model, emit in (("DeltaFIFO", True), ("DeltaFIFONoReplaced", False)):
        store = Indexer()
        core = DeltaFIFOCore(known_objects=store, emit_delta_type_replaced=emit)
        code = {**delta_fifo_vars(core, _keys(model)), "store": store_to_spec(store, ("a", "b"))}
        assert code == _subset(code, _init(model)), model


def test_real_fifo_cores_start_at_init() -> None:
    for model, core in (
        ("RealFIFO", RealFIFOCore(known_objects=Indexer())),
        ("RealFIFOAtomic", RealFIFOCore(atomic_events=True, unlock_while_processing=True)),
    ):
        code = real_fifo_vars(core, [])
        assert code == _subset(code, _init(model)), model


def test_informer_fifo_cores_start_at_init() -> None:
    # The FIFOs exactly as the informer builds them, for both informer models.
    for model, mode in (("Informer", FifoMode.DELTA), ("InformerAtomic", FifoMode.REAL_ATOMIC)):
        fifo = new_fifo_core(mode, Indexer())
        code = (
            delta_fifo_vars(fifo, _keys(model))
            if isinstance(fifo, DeltaFIFOCore)
            else real_fifo_vars(fifo, [])
        )
        assert code == _subset(code, _init(model)), model


def test_fresh_informer_is_the_informer_init() -> None:
    for model, mode in (("Informer", FifoMode.DELTA), ("InformerAtomic", FifoMode.REAL_ATOMIC)):
        mapping = InformerMapping(_keys(model), 3, mode)
        assert mapping.initial_state() == _init(model), model
