"""The work queue as a plain state machine: ``queue``, ``dirty`` and ``processing``.

Owns the three collections and the shutdown flags; never blocks, sleeps, reads a clock
or starts a thread (metrics, if any, read the injected clock). Ports
``util/workqueue/queue.go`` (``Typed[T]``: Add, Get, Done, Len, ShutDown,
ShutDownWithDrain, ShuttingDown). Refines ``spec/WorkQueue.tla``: variables ``queue``,
``dirty``, ``processing``, ``shuttingDown``; actions ``Add``, ``Get``, ``Done``,
``ShutDown``. Refinement mapping: the spec's ``queue`` sequence is ``list(core.queue)``
and its sets are ``core.dirty`` / ``core.processing``.

Invariants (hold whenever every ``done(x)`` follows a ``get()`` that returned ``x``):

* no item is in ``queue`` twice;
* every queued item is dirty;
* no queued item is being processed.

A stray ``done(x)`` of a queued, not-in-flight item breaks them exactly as in client-go:
``x`` is pushed a second time and two workers can then hold it at once (WQ-1, WQ-5;
client-go util/workqueue/queue.go Done; upstream PR #141079 proposes ignoring such calls).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterator
from typing import Generic, NamedTuple, Protocol, TypeVar

from refimpl.blocking import WouldBlock
from refimpl.workqueue.metrics import QueueMetrics

__all__ = [
    "DoneHint",
    "FifoContainer",
    "MeteredQueueCore",
    "QueueContainer",
    "QueueCore",
    "check_item",
]

T = TypeVar("T", bound=Hashable)


class DoneHint(NamedTuple):
    """What :meth:`QueueCore.done` tells its shell about whom to wake."""

    #: The item went back on the queue: a getter should wake.
    requeued: bool
    #: Nothing is in flight any more: a draining shutdown should re-check.
    idle: bool


# done()'s four answers, built once (done is on the hot path).
_REQUEUED_IN_FLIGHT = DoneHint(requeued=True, idle=False)
_REQUEUED_IDLE = DoneHint(requeued=True, idle=True)
_IDLE = DoneHint(requeued=False, idle=True)
_NOTHING = DoneHint(requeued=False, idle=False)


class QueueContainer(Protocol[T]):
    """The pluggable ordering of queued items (client-go ``Queue[T]``, since v1.31).

    Every call happens under the queue's lock. ``touch`` is called when ``add`` hits an
    item that is already waiting, so a priority container can reorder it.
    """

    def touch(self, item: T) -> None: ...
    def push(self, item: T) -> None: ...
    def pop(self) -> T: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[T]: ...


class FifoContainer(deque[T]):
    """The default container: first in, first out (client-go's slice queue)."""

    __slots__ = ()
    push = deque.append
    pop = deque.popleft

    def touch(self, item: T) -> None:
        """FIFO order ignores repeated adds: the item keeps its place."""


def check_item(item: object) -> None:
    """Refuse unhashable items with a message that says why (Go needs ``comparable``)."""
    try:
        hash(item)
    except TypeError:
        raise TypeError(
            f"work queue items must be hashable (client-go requires a comparable type); "
            f"got {type(item).__name__}: {item!r}"
        ) from None


class QueueCore(Generic[T]):
    """The dirty / processing / queue triple, with client-go's exact transitions.

    ``QueueCore(container, metrics)`` with metrics builds a :class:`MeteredQueueCore`:
    the metrics path is chosen once, at construction, so the unmetered methods below
    never test for it.
    """

    __slots__ = (
        "_metrics",
        "_pop",
        "_push",
        "_touch",
        "dirty",
        "drain",
        "processing",
        "queue",
        "shutting_down",
    )

    def __new__(
        cls,
        container: QueueContainer[T] | None = None,
        metrics: QueueMetrics[T] | None = None,
    ) -> QueueCore[T]:
        if metrics is not None and not issubclass(cls, MeteredQueueCore):
            if cls is not QueueCore:
                raise TypeError(f"{cls.__name__} does not record metrics; pass metrics=None")
            return object.__new__(MeteredQueueCore)
        return object.__new__(cls)

    def __init__(
        self,
        container: QueueContainer[T] | None = None,
        metrics: QueueMetrics[T] | None = None,
    ) -> None:
        #: Items awaiting ``get``, in hand-out order. Invariant: a subset of ``dirty``,
        #: disjoint from ``processing``, without duplicates. Fixed at construction (its
        #: push and pop are bound once, below).
        self.queue: QueueContainer[T] = container if container is not None else FifoContainer()
        self._push = self.queue.push
        # get() pops first and treats IndexError as "empty" (no emptiness test on the
        # hot path): deque.popleft raises exactly that; any other container is asked
        # for its length first, so its own pop never sees an empty call.
        self._pop = self.queue.popleft if type(self.queue) is FifoContainer else self._checked_pop
        #: Items that need processing (queued, or re-added while in flight).
        self.dirty: set[T] = set()
        #: Items handed out by ``get`` and not yet ``done``. May also be dirty.
        self.processing: set[T] = set()
        self.shutting_down = False
        #: True while a ``shut_down_with_drain`` is waiting for in-flight items.
        self.drain = False
        self._metrics = metrics
        # The default FIFO's touch does nothing: skip the call on the hot path.
        self._touch = None if isinstance(self.queue, FifoContainer) else self.queue.touch

    def add(self, item: T) -> bool:
        """Mark ``item`` as needing processing. Returns True if a waiter should wake.

        Ignored after shutdown. An item already dirty is not queued again; one that is
        in flight is only marked dirty and is queued by ``done``.
        """
        if self.shutting_down:
            check_item(item)
            return False
        dirty = self.dirty
        try:
            if item in dirty:
                if self._touch is not None and item not in self.processing:
                    self._touch(item)
                return False
            # A set passes the membership test above (Python retries it as a
            # frozenset) and fails only here, before anything changed.
            dirty.add(item)
        except TypeError:
            check_item(item)
            raise
        if item in self.processing:
            return False
        self._push(item)
        return True

    def can_get(self) -> bool:
        """True when ``get`` would not block: something is queued, or shutting down."""
        return len(self.queue) > 0 or self.shutting_down

    def get(self) -> tuple[T | None, bool]:
        """Hand out the head item: ``(item, False)``, or ``(None, True)`` once shut down
        and empty. Queued items are still handed out after shutdown.

        Raises :class:`WouldBlock` when the queue is empty and not shutting down.
        """
        try:
            item = self._pop()
        except IndexError:
            if len(self.queue):  # a container's own IndexError, not emptiness
                raise
            if self.shutting_down:
                return None, True
            raise WouldBlock("get() on an empty queue would block") from None
        self.processing.add(item)
        self.dirty.discard(item)
        return item, False

    def _checked_pop(self) -> T:
        queue = self.queue
        if not len(queue):
            raise IndexError("pop from an empty queue")
        return queue.pop()

    def done(self, item: T) -> DoneHint:
        """Finish processing ``item``; re-queue it if it was re-added meanwhile.

        Returns a :class:`DoneHint` ``(requeued, idle)``: ``requeued`` when the item
        went back on the queue (a getter should wake), ``idle`` when nothing is in flight
        any more (a draining shutdown should re-check). Works after shutdown too, as in
        client-go: an item re-added while in flight is still delivered.

        No guard against misuse, like client-go: ``done`` of an item that was never
        handed out changes nothing, but ``done`` of an item that is queued and not in
        flight pushes a second copy of it.

        A ``set`` is refused (Python's set methods would silently retry it as the equal
        frozenset). The hot path tests ``type(item) is set`` only; an instance of a
        *subclass* of set is refused when no equal frozenset is in flight, and would
        otherwise act for it -- the one case the cheaper test lets through.
        """
        if type(item) is set:  # type: ignore[comparison-overlap]  # subclasses: see above
            check_item(item)
        processing = self.processing
        try:
            processing.remove(item)
        except KeyError:
            # Not in flight: misuse (see above), or a set subclass that Python retried
            # as a frozenset. Only here, off the hot path, is the full check paid.
            if isinstance(item, set):
                check_item(item)
        except TypeError:
            check_item(item)
            raise
        if item in self.dirty:
            self._push(item)
            return _REQUEUED_IN_FLIGHT if processing else _REQUEUED_IDLE
        return _NOTHING if processing else _IDLE

    def shut_down(self) -> None:
        """Stop accepting new items; queued ones are still handed out. Idempotent."""
        self.drain = False
        self.shutting_down = True

    def begin_drain(self) -> None:
        """The state change of ``shut_down_with_drain``; the shell then waits until
        ``drain_complete()``."""
        self.drain = True
        self.shutting_down = True

    def drain_complete(self) -> bool:
        """A draining shutdown may return: nothing in flight, or ``shut_down`` cut it
        short. (client-go's code: queued-but-not-started items are not waited for.)"""
        return len(self.processing) == 0 or not self.drain

    def __len__(self) -> int:
        """Queued items only (excludes in-flight and dirty-while-in-flight items)."""
        return len(self.queue)

    def update_unfinished_work(self) -> None:
        """Refresh the unfinished-work gauges (client-go does this every 500 ms)."""
        if self._metrics is not None and not self.shutting_down:
            self._metrics.update_unfinished_work()


class MeteredQueueCore(QueueCore[T]):
    """:class:`QueueCore` that also feeds :class:`QueueMetrics` on add / get / done.

    ``QueueCore(metrics=...)`` builds one; the transitions are the base class's.
    """

    __slots__ = ()

    _metrics: QueueMetrics[T]

    def add(self, item: T) -> bool:
        dirty = len(self.dirty)
        wake = super().add(item)
        if len(self.dirty) > dirty:  # newly dirty: client-go's metrics.add
            self._metrics.add(item)
        return wake

    def get(self) -> tuple[T | None, bool]:
        item, shutdown = super().get()
        if not shutdown:
            self._metrics.get(item)  # type: ignore[arg-type]
        return item, shutdown

    def done(self, item: T) -> DoneHint:
        answer = super().done(item)
        self._metrics.done(item)
        return answer
