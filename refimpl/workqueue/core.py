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
    """Names for the pair :meth:`QueueCore.done` returns: whom its shell should wake.

    The core itself returns a bare tuple: building this named one in every ``done`` makes
    a cycle of benchmarks/workqueue.py half as long again.
    """

    #: The item went back on the queue: a getter should wake.
    requeued: bool
    #: Nothing is in flight any more: a draining shutdown should re-check.
    idle: bool


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

    Records no metrics; :class:`MeteredQueueCore` is the variant that does, and the
    caller picks one of the two (client-go plugs in a no-op metrics object instead).
    """

    __slots__ = ("dirty", "drain", "processing", "queue", "shutting_down")

    def __init__(self, container: QueueContainer[T] | None = None) -> None:
        #: Items awaiting ``get``, in hand-out order. Invariant: a subset of ``dirty``,
        #: disjoint from ``processing``, without duplicates.
        self.queue: QueueContainer[T] = container if container is not None else FifoContainer()
        #: Items that need processing (queued, or re-added while in flight).
        self.dirty: set[T] = set()
        #: Items handed out by ``get`` and not yet ``done``. May also be dirty.
        self.processing: set[T] = set()
        self.shutting_down = False
        #: True while a ``shut_down_with_drain`` is waiting for in-flight items.
        self.drain = False

    def add(self, item: T) -> bool:
        """Mark ``item`` as needing processing. Returns True if a waiter should wake.

        Ignored after shutdown. An item already dirty is not queued again; one that is
        in flight is only marked dirty and is queued by ``done``.
        """
        if self.shutting_down:
            check_item(item)
            return False
        # Hashability is checked only when a set operation fails: checking every add
        # and done up front costs a fifth of a cycle in benchmarks/workqueue.py.
        try:
            if item in self.dirty:
                if item not in self.processing:
                    self.queue.touch(item)  # e.g. a priority container reorders it
                return False
            self.dirty.add(item)
        except TypeError:
            check_item(item)
            raise
        if item in self.processing:
            return False
        self.queue.push(item)
        return True

    def can_get(self) -> bool:
        """True when ``get`` would not block: something is queued, or shutting down."""
        return len(self.queue) > 0 or self.shutting_down

    def get(self) -> tuple[T | None, bool]:
        """Hand out the head item: ``(item, False)``, or ``(None, True)`` once shut down
        and empty. Queued items are still handed out after shutdown.

        Raises :class:`WouldBlock` when the queue is empty and not shutting down.
        """
        if not self.queue:
            if self.shutting_down:
                return None, True
            raise WouldBlock("get() on an empty queue would block")
        item = self.queue.pop()
        self.processing.add(item)
        self.dirty.discard(item)
        return item, False

    def done(self, item: T) -> tuple[bool, bool]:
        """Finish processing ``item``; re-queue it if it was re-added meanwhile.

        Returns ``(requeued, idle)`` (:class:`DoneHint` names them): ``requeued`` when
        the item went back on the queue (a getter should wake), ``idle`` when nothing is
        in flight any more (a draining shutdown should re-check). Works after shutdown
        too, as in client-go: an item re-added while in flight is still delivered.

        No guard against misuse, like client-go: ``done`` of an item that was never
        handed out changes nothing, but ``done`` of an item that is queued and not in
        flight pushes a second copy of it.
        """
        # Python's set methods would take a set for the equal frozenset: refuse it.
        if isinstance(item, set):
            check_item(item)
        try:
            self.processing.discard(item)
        except TypeError:
            check_item(item)
            raise
        if item in self.dirty:
            self.queue.push(item)
            return True, not self.processing
        return False, not self.processing

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
        """Refresh the unfinished-work gauges: nothing to refresh without metrics."""


class MeteredQueueCore(QueueCore[T]):
    """:class:`QueueCore` that also feeds :class:`QueueMetrics` on add / get / done.

    The transitions are the base class's; each override only reports what happened, at
    the point where client-go's ``Typed[T]`` calls its metrics.
    """

    __slots__ = ("metrics",)

    def __init__(self, metrics: QueueMetrics[T], container: QueueContainer[T] | None = None):
        super().__init__(container)
        self.metrics = metrics

    def add(self, item: T) -> bool:
        dirty = len(self.dirty)
        wake = super().add(item)
        if len(self.dirty) > dirty:  # newly dirty: client-go's metrics.add
            self.metrics.add(item)
        return wake

    def get(self) -> tuple[T | None, bool]:
        item, shutdown = super().get()
        if not shutdown:
            self.metrics.get(item)  # type: ignore[arg-type]
        return item, shutdown

    def done(self, item: T) -> tuple[bool, bool]:
        answer = super().done(item)
        self.metrics.done(item)
        return answer

    def update_unfinished_work(self) -> None:
        """Refresh the unfinished-work gauges (client-go does this every 500 ms)."""
        if not self.shutting_down:
            self.metrics.update_unfinished_work()
