"""One incarnation of the simulated controller process: what a crash throws away.

:class:`Incarnation` owns a :class:`~refimpl.sim.informer.SimInformer` (empty at birth),
its monitored handlers, and -- when the scenario runs a controller -- a
VirtualRateLimitingQueue and its :class:`~refimpl.sim.controllers.Worker` positions.
The wiring is client-go ``tools/cache/shared_informer.go``'s plus a controller's
``processNextWorkItem`` workers; spec/Informer.tla and spec/Controller.tla model it.
The :class:`~refimpl.sim.world.World` it reads from outlives it.
"""

from __future__ import annotations

import functools
from typing import Any

from refimpl.cache.informer_core import StepHook
from refimpl.cache.processor import ProcessorListener
from refimpl.cache.shared_informer import FifoMode, ListMode
from refimpl.sim.controllers import ControllerLogic, Worker
from refimpl.sim.informer import SimInformer
from refimpl.sim.monitors import HandlerRecord, InformerMonitor, MonitoredHandler
from refimpl.sim.scenarios import Kind, Scenario
from refimpl.sim.spec_trace import SPEC_LISTENER, SpecRecorder
from refimpl.sim.world import World
from refimpl.workqueue.virtual import VirtualRateLimitingQueue

__all__ = ["Incarnation"]


class Incarnation:
    """One incarnation of the controller process: its informer (empty at birth), its
    handlers, its work queue and workers. A crash throws all of it away.

    ``all_records`` collects the handler records of every incarnation; ``spec_trace``
    adds h0's spec view (a :class:`~refimpl.sim.spec_trace.SpecRecorder`); ``sub_step``
    (with spec traces written) receives the code steps inside a simulator step."""

    def __init__(
        self,
        world: World,
        scenario: Scenario,
        kind: Kind,
        generation: int,
        *,
        fifo_mode: FifoMode,
        all_records: list[HandlerRecord],
        spec_trace: bool,
        sub_step: StepHook | None,
    ) -> None:
        self.generation = generation
        self.informer = SimInformer(
            world.lw,
            clock=world.clock,
            fifo_mode=fifo_mode,
            # List + watch, as spec/Informer.tla's reflector (the simulator's spec
            # traces follow it; watch-list, the v1.35+ default, is not modelled).
            list_mode=ListMode.LIST_WATCH,
            batch=scenario.batch,
            resync_period=scenario.resync_period,
            indexers=kind.indexers(),
            seed=generation,
            name=f"g{generation}",
        )
        self.monitor = InformerMonitor(self.informer.indexer, world.violations, self.informer.name)
        self.informer.on_applied = self.monitor.applied
        self.informer.on_synced = self._synced
        self.queue: VirtualRateLimitingQueue[str] | None = None
        self.workers: list[Worker] = []
        self.waits_for_sync = scenario.wait_for_sync
        self.logic: ControllerLogic | None = kind.make_logic(self, scenario)
        if self.logic is not None:
            self.queue = VirtualRateLimitingQueue(world.clock)
            self.workers = [Worker(i) for i in range(scenario.workers)]
        self.records: list[HandlerRecord] = []
        self.listeners: list[ProcessorListener] = []
        self._world = world
        self._all_records = all_records
        self.late_registered = False
        self.just_synced = False
        inner = self.logic.handler if self.logic is not None else None
        #: With spec traces: h0's view as spec/Informer.tla's handler keeps it.
        self.recorder = SpecRecorder(inner) if spec_trace else None
        self.add_handler(self.recorder if self.recorder is not None else inner, SPEC_LISTENER)
        if sub_step is not None:
            # Trace validation at the code's own granularity: the store write and each
            # handler call (and the pop / take / finish around them) are lines of their
            # own, recorded by the cores' tracing hooks as the code takes them.
            self.informer.step_hook = sub_step
            self.informer.indexer.on_write = functools.partial(sub_step, "store-write", ())
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
