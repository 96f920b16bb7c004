"""The refinement mapping from the work queue code to spec/WorkQueue.tla.

Owns no state; builds cores from spec states and reads them back. The code side is
:class:`~refimpl.workqueue.core.QueueCore` (the queue), a
:class:`~refimpl.workqueue.delaying_core.DelayingCore` (the waiting room of
AddAfter / AddRateLimited) and the callers' own state, which no core holds: which key
each worker holds, which workers' ``get`` returned shutdown, and where the
``shut_down_with_drain`` caller is. The mapping (spec variable = code expression)::

    queue        = tuple(core.queue)            head first
    dirty        = core.dirty
    processing   = core.processing
    shuttingDown = core.shutting_down
    drain        = core.drain
    waiting      = set(delaying.waiting)
    holding[w]   = the key worker w got and has not marked done, else NoItem
    stopped      = workers whose core.get() returned (None, True)
    drainer      = "idle" | "waiting" (after begin_drain) | "returned"

and the actions::

    Add(x)             core.add(x)
    AddAfter(x)        delaying.insert(x, later), skipped if core.shutting_down
    Ready(x)           delaying.pop_due(now) == [x], then core.add(x)
    Get(w)             core.get() == (x, False); worker w now holds x
    WorkerExit(w)      core.get() == (None, True); worker w stops
    Done(w)            core.done(holding[w])
    ShutDown           core.shut_down(); delaying.clear()
    ShutDownWithDrain  core.begin_drain(); delaying.clear()
    DrainReturn        core.drain_complete() is True (no state change in the cores)

``core.get()`` raising :class:`~refimpl.blocking.WouldBlock` is a blocked
``Get``: no step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import attrs

from refimpl.blocking import WouldBlock
from refimpl.tla.replay import Move
from refimpl.tla.values import Fn, Value
from refimpl.workqueue.core import QueueCore
from refimpl.workqueue.delaying_core import DelayingCore

__all__ = ["WorkQueueMapping", "core_from_state", "queue_state"]

Key = str


def _keys(value: Value, what: str) -> set[Key]:
    if not isinstance(value, frozenset) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"spec variable {what} should be a set of strings, got {value!r}")
    return {str(v) for v in value}


def core_from_state(
    state: Mapping[str, Value], factory: Callable[[], QueueCore[Key]] = QueueCore
) -> QueueCore[Key]:
    """A core in the spec state's queue variables (the inverse of :func:`queue_state`)."""
    core = factory()
    queue = state["queue"]
    if not isinstance(queue, tuple):
        raise TypeError(f"spec variable queue should be a sequence, got {queue!r}")
    for item in queue:
        core.queue.push(str(item))
    core.dirty = _keys(state["dirty"], "dirty")
    core.processing = _keys(state["processing"], "processing")
    core.shutting_down = bool(state["shuttingDown"])
    core.drain = bool(state["drain"])
    return core


def queue_state(core: QueueCore[Key]) -> dict[str, Value]:
    """The spec's queue variables of a core."""
    return {
        "queue": tuple(core.queue),
        "dirty": frozenset(core.dirty),
        "processing": frozenset(core.processing),
        "shuttingDown": core.shutting_down,
        "drain": core.drain,
    }


@attrs.define
class _World:
    """One spec state as code: the cores plus the callers' state."""

    core: QueueCore[Key]
    delaying: DelayingCore[Key]
    holding: dict[Key, Key]
    stopped: set[Key]
    drainer: str

    def spec_state(self) -> dict[str, Value]:
        return {
            **queue_state(self.core),
            "waiting": frozenset(self.delaying.waiting),
            "holding": Fn(dict(self.holding)),
            "stopped": frozenset(self.stopped),
            "drainer": self.drainer,
        }


@attrs.frozen
class WorkQueueMapping:
    """Callable for :func:`refimpl.tla.replay.replay`: the code moves from a spec state.

    ``keys`` and ``no_item`` are the model's constants (MCWorkQueue.tla); ``factory``
    builds the core under test (tests pass deliberately broken cores to show that the
    replay catches them).
    """

    keys: tuple[Key, ...]
    no_item: Key
    factory: Callable[[], QueueCore[Key]] = QueueCore

    def world(self, state: Mapping[str, Value], due: Key | None = None) -> _World:
        delaying: DelayingCore[Key] = DelayingCore()
        for key in sorted(_keys(state["waiting"], "waiting")):
            # The key about to fire is due at time 0, every other one later.
            delaying.insert(key, 0 if key == due else 1)
        holding = state["holding"]
        if not isinstance(holding, Fn):
            raise TypeError(f"spec variable holding should be a function, got {holding!r}")
        return _World(
            core=core_from_state(state, self.factory),
            delaying=delaying,
            holding={str(w): str(k) for w, k in holding.items()},
            stopped=_keys(state["stopped"], "stopped"),
            drainer=str(state["drainer"]),
        )

    def __call__(self, state: Mapping[str, Value]) -> Iterable[Move]:
        moves: list[Move] = []

        def emit(action: str, args: tuple[Value, ...], world: _World) -> None:
            moves.append(Move(action, args, world.spec_state()))

        for key in self.keys:
            w = self.world(state)
            w.core.add(key)
            emit("Add", (key,), w)

            w = self.world(state)
            if not w.core.shutting_down:
                w.delaying.insert(key, 1)
                emit("AddAfter", (key,), w)

            if key in _keys(state["waiting"], "waiting"):
                w = self.world(state, due=key)
                fired = w.delaying.pop_due(0)
                if fired != [key]:
                    raise AssertionError(f"delaying core fired {fired}, expected [{key!r}]")
                w.core.add(key)
                emit("Ready", (key,), w)

        for worker in sorted(self.world(state).holding):
            w = self.world(state)
            held = w.holding[worker]
            if held != self.no_item:
                w.core.done(held)
                w.holding[worker] = self.no_item
                emit("Done", (worker,), w)
            elif worker not in w.stopped:
                try:
                    item, shutdown = w.core.get()
                except WouldBlock:
                    continue
                if shutdown:
                    w.stopped.add(worker)
                    emit("WorkerExit", (worker,), w)
                else:
                    assert item is not None
                    w.holding[worker] = item
                    emit("Get", (worker,), w)

        w = self.world(state)
        w.core.shut_down()
        w.delaying.clear()
        emit("ShutDown", (), w)

        w = self.world(state)
        if w.drainer == "idle":
            w.core.begin_drain()
            w.delaying.clear()
            w.drainer = "waiting"
            emit("ShutDownWithDrain", (), w)
        elif w.drainer == "waiting" and w.core.drain_complete():
            w.drainer = "returned"
            emit("DrainReturn", (), w)
        return moves
