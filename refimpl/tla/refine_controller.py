"""The refinement mapping from the controller code to spec/Controller.tla.

Owns no state; builds the code's world from spec states and reads it back. The code
under test: :func:`refimpl.worker.process_next_work_item` (the worker's get, its
success/failure handling and its done), a
:class:`~refimpl.workqueue.virtual.VirtualRateLimitingQueue` (QueueCore + DelayingCore
+ client-go's default controller rate limiter), and the informer's last stage,
:func:`refimpl.cache.process_deltas.process_deltas` over an
:class:`~refimpl.cache.store.Indexer`, notifying the controller's enqueue handler. The
work-queue variables are mapped by :mod:`refimpl.tla.refine_workqueue` (``queue``,
``dirty``, ``processing``, ``shuttingDown``, ``drain``, ``waiting``, ``holding``,
``stopped``, ``drainer``: see there); the rest (spec variable = code expression)::

    desired[k]   = the user's last write of k (the environment, not code): 0 = absent
    cache[k]     = o.data if (o, True) == indexer.get_by_key(k), else 0
    actual[k]    = the world the reconcile writes (a dict)
    phase[w]     = "idle"       worker w is between process_next_work_item calls
                   "reconcile"  its call got holding[w] from queue.get() and is paused
                                right after it
                   "done"       its call is paused at its (last) call queue.done(holding[w])
    writes       = the user's writes so far

and the actions (``queue`` is the VirtualRateLimitingQueue, whose ``core`` and ``waiting``
are refine_workqueue's cores; ``handler`` is the controller's :func:`enqueue_handler`)::

    UserWrite(k, v)   desired[k] = v, if writes < MaxWrites and desired[k] != v
    SyncNotify(k)     process_deltas(handler, indexer, [<desired[k] as a delta>], False)
    SyncDrop(k)       the same with a handler that loses the notification
    Notify(k)         process_deltas(handler, indexer, [Sync(o)], False) for a cached o,
                      else [Deleted(DeletedFinalStateUnknown(k, None))]: a resync or a
                      duplicate delete notification
    RetryDue(k)       queue.fire_due() == [k] (k due now, every other waiting key later)
    WorkerGet(w)      process_next_work_item(q, ...): q.get() calls queue.get(), which
                      returns (k, False); the call is paused there (by an exception)
    ReconcileOK(w)    process_next_work_item(q, reconcile) re-run with q.get() answering
                      (holding[w], False) again; reconcile reads the indexer and writes
                      actual; forget(k) goes to the queue; done(k) is held back
    ReconcileFail(w)  the same with a reconcile that raises: num_requeues(k) and
                      add_rate_limited(k) go to the queue; done(k) is held back
    WorkerDone(w)     queue.done(holding[w]): the call held back
    WorkerExit(w)     process_next_work_item(q, ...) returns False: q.get() said shutdown
    ShutDown          queue.shut_down(), if not shutting down yet
    ShutDownWithDrain the queue core's begin_drain() and the delaying queue's shutdown
                      (what shut_down_with_drain() does before it blocks), if not
                      shutting down yet; the caller is then "waiting"
    DrainReturn       the core's drain_complete() is True: the blocked caller returns

So every step of the worker runs :func:`~refimpl.worker.process_next_work_item` itself,
stopped at its first call (``get``) and at its last (``done``); that ``get`` comes first
and ``done`` last, exactly once, is checked by the tests with a recording queue, and a
call made after ``done`` raises here. The rate limiter's failure counts are no spec
variable: every state starts with none, so the drop after ``max_retries`` failures (code
only; the spec's errors are transient) is never taken. ``queue.get()`` raising
:class:`~refimpl.blocking.WouldBlock` is a blocked ``WorkerGet``: no step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import NoReturn, Protocol

import attrs

from refimpl.blocking import WouldBlock
from refimpl.cache.deltas import Delta, DeltaType
from refimpl.cache.handlers import ResourceEventHandler, ResourceEventHandlerFuncs
from refimpl.cache.process_deltas import process_deltas
from refimpl.cache.store import Indexer
from refimpl.clock import FakeClock
from refimpl.meta import DeletedFinalStateUnknown, Object, object_key
from refimpl.tla.refine_workqueue import WorkQueueMapping
from refimpl.tla.replay import Move
from refimpl.tla.values import Fn, Value
from refimpl.worker import RetryingQueue, process_next_work_item
from refimpl.workqueue.core import QueueCore
from refimpl.workqueue.delaying_core import DelayingCore
from refimpl.workqueue.virtual import VirtualRateLimitingQueue

__all__ = [
    "ControllerMapping",
    "ControllerWorld",
    "TransientError",
    "enqueue_handler",
    "failing_reconcile",
    "level_reconcile",
]

Key = str
#: The worker step under test: process_next_work_item's signature (extra keywords unused).
WorkerStep = Callable[..., bool]
Reconciler = Callable[["ControllerWorld"], Callable[[Key], None]]


class TransientError(Exception):
    """The failure of :func:`failing_reconcile` (the spec's errors are transient)."""


class _Paused(BaseException):
    """Stops process_next_work_item right after its get (a BaseException, so that no
    ``except Exception`` in a worker can swallow it)."""

    def __init__(self, item: Key) -> None:
        super().__init__(item)
        self.item = item


def _mapping(value: Value, what: str) -> dict[Key, Value]:
    if not isinstance(value, Fn):
        raise TypeError(f"spec variable {what} should be a function, got {value!r}")
    return {str(k): v for k, v in value.items()}


def _ints(value: Value, what: str) -> dict[Key, int]:
    out: dict[Key, int] = {}
    for k, v in _mapping(value, what).items():
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError(f"spec variable {what}[{k}] should be an integer, got {v!r}")
        out[k] = v
    return out


class _QueueWorld(Protocol):
    """What this mapping uses of refine_workqueue's world (its ``WorkQueueMapping.world``)."""

    core: QueueCore[Key]
    delaying: DelayingCore[Key]
    holding: dict[Key, Key]
    stopped: set[Key]
    drainer: str

    def spec_state(self) -> dict[str, Value]: ...


@attrs.define
class ControllerWorld:
    """One spec state as code: the work-queue world of refine_workqueue (its cores are
    the ones inside ``queue``), the informer's indexer and the controller's world."""

    wq: _QueueWorld
    queue: VirtualRateLimitingQueue[Key]
    indexer: Indexer
    desired: dict[Key, int]
    actual: dict[Key, int]
    phase: dict[Key, str]
    writes: int

    def cached(self, key: Key) -> int:
        obj, exists = self.indexer.get_by_key(key)
        if not exists:
            return 0
        if not isinstance(obj, Object) or not isinstance(obj.data, int):
            raise TypeError(f"the indexer holds {obj!r} for {key!r}: not an object of the model")
        return obj.data

    def spec_state(self) -> dict[str, Value]:
        return {
            **self.wq.spec_state(),
            "desired": Fn(dict(self.desired)),
            "cache": Fn({k: self.cached(k) for k in self.desired}),
            "actual": Fn(dict(self.actual)),
            "phase": Fn(dict(self.phase)),
            "writes": self.writes,
        }


def enqueue_handler(queue: VirtualRateLimitingQueue[Key]) -> ResourceEventHandler:
    """The controller's handler: every notification adds the object's key (level-
    triggered: the notification says *which* key, never *what* to do)."""

    def enqueue(obj: object) -> None:
        queue.add(object_key(obj))

    return ResourceEventHandlerFuncs(
        add_func=enqueue, update_func=lambda _old, new: enqueue(new), delete_func=enqueue
    )


#: What a lost notification leaves: the store updated, no handler call.
_LOST: ResourceEventHandler = ResourceEventHandlerFuncs()


def level_reconcile(world: ControllerWorld) -> Callable[[Key], None]:
    """The controller's reconcile: read the key's object from the cache, make the world
    match it (absent: 0)."""

    def reconcile(key: Key) -> None:
        world.actual[key] = world.cached(key)

    return reconcile


def failing_reconcile(world: ControllerWorld) -> Callable[[Key], None]:
    """A reconcile that fails before changing anything."""

    def reconcile(key: Key) -> NoReturn:
        raise TransientError(f"reconcile {key!r}: transient error")

    return reconcile


@attrs.define
class _PausedQueue:
    """The queue as one worker's process_next_work_item call sees it.

    ``held is None``: the call's ``get`` goes to the queue and the call stops there.
    Otherwise the call is re-run: ``get`` answers ``held`` again (the call already made),
    ``num_requeues`` / ``forget`` / ``add_rate_limited`` go to the queue, ``done`` is held
    back in ``deferred`` (the worker is paused at it), and nothing may follow ``done``.
    """

    queue: VirtualRateLimitingQueue[Key]
    held: Key | None
    gets: int = 0
    deferred: list[Key] = attrs.Factory(list)

    def _not_after_done(self, call: str) -> None:
        if self.deferred:
            raise AssertionError(
                f"the worker called {call} after done: the mapping pauses it at done, "
                "its last call, so this order cannot be replayed"
            )

    def get(self) -> tuple[Key | None, bool]:
        self._not_after_done("get")
        self.gets += 1
        if self.gets > 1:
            raise AssertionError("the worker called get twice in one process_next_work_item")
        if self.held is not None:
            return self.held, False
        item, shutdown = self.queue.get()
        if shutdown:
            return item, shutdown  # the worker loop ends: no pause
        assert item is not None
        raise _Paused(item)

    def done(self, item: Key) -> None:
        self.deferred.append(item)

    def forget(self, item: Key) -> None:
        self._not_after_done("forget")
        self.queue.forget(item)

    def add_rate_limited(self, item: Key) -> None:
        self._not_after_done("add_rate_limited")
        self.queue.add_rate_limited(item)

    def num_requeues(self, item: Key) -> int:
        self._not_after_done("num_requeues")
        return self.queue.num_requeues(item)


@attrs.frozen
class ControllerMapping:
    """Callable for :func:`refimpl.tla.replay.replay`: the code moves from a spec state.

    ``keys``, ``workers``, ``no_item``, ``values`` and ``max_writes`` are the model's
    constants (MCControllerReplay.tla). The rest is the code under test, replaceable so
    that tests can show the replay catching broken versions: ``factory`` builds the queue
    core, ``worker`` is the worker step, ``reconciler`` the controller's reconcile (which
    the spec fails at will: :func:`failing_reconcile` is its failure), ``handler`` the
    controller's event handler.
    """

    keys: tuple[Key, ...]
    workers: tuple[Key, ...]
    no_item: Key
    values: tuple[int, ...]
    max_writes: int
    factory: Callable[[], QueueCore[Key]] = QueueCore
    worker: WorkerStep = process_next_work_item
    reconciler: Reconciler = level_reconcile
    handler: Callable[[VirtualRateLimitingQueue[Key]], ResourceEventHandler] = enqueue_handler

    def world(self, state: Mapping[str, Value], due: Key | None = None) -> ControllerWorld:
        """The code in ``state``; ``due`` is the waiting key whose time has come."""
        wq = WorkQueueMapping(self.keys, self.no_item, self.factory).world(state, due)
        queue: VirtualRateLimitingQueue[Key] = VirtualRateLimitingQueue(FakeClock(0.0))
        queue.core, queue.waiting = wq.core, wq.delaying
        indexer = Indexer()
        for key, value in sorted(_ints(state["cache"], "cache").items()):
            if value != 0:
                indexer.add(Object(name=key, data=value))
        writes = state["writes"]
        if not isinstance(writes, int) or isinstance(writes, bool):
            raise TypeError(f"spec variable writes should be an integer, got {writes!r}")
        return ControllerWorld(
            wq=wq,
            queue=queue,
            indexer=indexer,
            desired=_ints(state["desired"], "desired"),
            actual=_ints(state["actual"], "actual"),
            phase={w: str(p) for w, p in _mapping(state["phase"], "phase").items()},
            writes=writes,
        )

    def _delta(self, world: ControllerWorld, key: Key) -> Delta:
        """The change the informer delivers when it catches up with ``desired[key]``."""
        want, obj = world.desired[key], world.indexer.get_by_key(key)[0]
        if want == 0:
            return Delta(DeltaType.DELETED, obj)
        kind = DeltaType.UPDATED if obj is not None else DeltaType.ADDED
        return Delta(kind, Object(name=key, data=want))

    def __call__(self, state: Mapping[str, Value]) -> Iterable[Move]:
        moves: list[Move] = []

        def emit(action: str, args: tuple[Value, ...], world: ControllerWorld) -> None:
            moves.append(Move(action, args, world.spec_state()))

        base = self.world(state)  # read only: every move starts from a fresh world
        for key in self.keys:
            for value in sorted({0, *self.values}):
                if base.writes < self.max_writes and base.desired[key] != value:
                    w = self.world(state)
                    w.desired[key] = value
                    w.writes += 1
                    emit("UserWrite", (key, value), w)

            if base.cached(key) != base.desired[key]:
                w = self.world(state)
                process_deltas(self.handler(w.queue), w.indexer, [self._delta(w, key)], False)
                emit("SyncNotify", (key,), w)
                w = self.world(state)
                process_deltas(_LOST, w.indexer, [self._delta(w, key)], False)
                emit("SyncDrop", (key,), w)

            w = self.world(state)
            obj, exists = w.indexer.get_by_key(key)
            again = (
                Delta(DeltaType.SYNC, obj)
                if exists
                else Delta(DeltaType.DELETED, DeletedFinalStateUnknown(key, None))
            )
            process_deltas(self.handler(w.queue), w.indexer, [again], False)
            emit("Notify", (key,), w)

            if key in base.queue.waiting.waiting:
                w = self.world(state, due=key)
                fired = w.queue.fire_due()
                if fired != [key]:
                    raise AssertionError(f"the queue fired {fired}, expected [{key!r}]")
                emit("RetryDue", (key,), w)

        for worker in self.workers:
            for action, args, w in self._worker_moves(state, worker):
                emit(action, args, w)

        # The owner's one shutdown call (the spec's environment makes one, of either
        # kind; a second would depend on the delaying queue's once-only shut_down).
        w = self.world(state)
        if not w.queue.shutting_down():
            w.queue.shut_down()
            emit("ShutDown", (), w)
        w = self.world(state)
        if w.wq.drainer == "idle" and not w.queue.shutting_down():
            w.queue.core.begin_drain()
            w.queue.waiting.clear()
            w.wq.drainer = "waiting"
            emit("ShutDownWithDrain", (), w)
        elif w.wq.drainer == "waiting" and w.queue.core.drain_complete():
            w.wq.drainer = "returned"
            emit("DrainReturn", (), w)
        return moves

    def _worker_moves(
        self, state: Mapping[str, Value], worker: Key
    ) -> Iterable[tuple[str, tuple[Value, ...], ControllerWorld]]:
        w = self.world(state)
        phase, held = w.phase[worker], w.wq.holding[worker]
        if phase == "idle" and worker not in w.wq.stopped:
            paused: RetryingQueue[Key] = _PausedQueue(w.queue, None)
            try:
                more = self.worker(paused, self.reconciler(w))
            except WouldBlock:
                return  # a blocked get: no step
            except _Paused as stop:
                w.wq.holding[worker] = stop.item
                w.phase[worker] = "reconcile"
                yield "WorkerGet", (worker,), w
                return
            if more:
                raise AssertionError("the worker returned True without getting a key")
            w.wq.stopped.add(worker)
            yield "WorkerExit", (worker,), w
        elif phase == "reconcile":
            for action, reconciler in (
                ("ReconcileOK", self.reconciler),
                ("ReconcileFail", failing_reconcile),
            ):
                w = self.world(state)
                resumed = _PausedQueue(w.queue, held)
                self.worker(resumed, reconciler(w))
                if resumed.deferred == [held]:
                    w.phase[worker] = "done"
                elif not resumed.deferred:
                    w.phase[worker] = "idle"  # returned without done: held for ever
                else:
                    w.phase[worker] = f"done{resumed.deferred}"  # no spec phase
                yield action, (worker,), w
        elif phase == "done":
            w.queue.done(held)
            w.wq.holding[worker] = self.no_item
            w.phase[worker] = "idle"
            yield "WorkerDone", (worker,), w
