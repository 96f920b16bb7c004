"""A whole controller stack the tour can step by hand: server, informers, queue, worker.

:class:`SteppedInformer` wires the same parts as
:class:`~refimpl.cache.shared_informer.SharedIndexInformer` -- a reflector feeding a FIFO
(chosen as ``newQueueFIFO`` chooses it), the FIFO popped into an indexer through
``process_deltas``, then the handlers -- but drives them in the caller's thread: the
reflector is a :class:`~refimpl.cache.reflector.SteppedReflector` over an
:class:`~refimpl.apiserver.ApiServerCore`, time is a :class:`~refimpl.clock.FakeClock`,
and handlers run synchronously when their delta is processed. A run is therefore a pure
function of the calls made, which is what a documented number needs. Not a port of
anything; it composes ported parts (the experiments that need the threaded informer
itself use it directly).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from refimpl.apiserver import ApiServerCore, CoreWatch
from refimpl.cache.delta_fifo import DeltaFIFO
from refimpl.cache.deltas import Delta
from refimpl.cache.handlers import ResourceEventHandler
from refimpl.cache.informer_core import new_fifo_core
from refimpl.cache.listwatch import Watch
from refimpl.cache.process_deltas import process_deltas
from refimpl.cache.real_fifo import RealFIFO, RealFIFOCore
from refimpl.cache.reflector import SteppedReflector
from refimpl.cache.shared_informer import FifoMode, GenericLister, ListMode
from refimpl.cache.store import Indexer
from refimpl.clock import FakeClock
from refimpl.meta import ListOptions, ListResult, Object, meta_namespace_key_func
from refimpl.watch import BOOKMARK, ERROR, WatchEvent

__all__ = ["ServerListerWatcher", "SteppedInformer", "new_fifo", "run_until"]


def new_fifo(mode: FifoMode, indexer: Indexer[Any], name: str) -> RealFIFO | DeltaFIFO:
    """The FIFO an informer of ``mode`` uses (client-go ``newQueueFIFO``), as a shell."""
    core = new_fifo_core(mode, indexer)
    if isinstance(core, RealFIFOCore):
        return RealFIFO(core=core, name=f"RealFIFO {name}")
    return DeltaFIFO(core=core, name=f"DeltaFIFO {name}")


class _FilteredWatch:
    def __init__(self, inner: CoreWatch, keep: Callable[[Object], bool]) -> None:
        self.inner = inner
        self._keep = keep

    def next_event(self, timeout: float | None = None) -> WatchEvent | None:
        while True:
            event = self.inner.next_event(timeout)
            if event is None or event.type in (BOOKMARK, ERROR):
                return event  # not about an object: every watcher gets it
            obj = event.object
            if not isinstance(obj, Object) or self._keep(obj):
                return event
            # An event for an object this informer does not watch: skip it, as a
            # label-selected watch on a real server would never have sent it.

    def stop(self) -> None:
        self.inner.stop()


class ServerListerWatcher:
    """Lists and watches an :class:`ApiServerCore` the way kube-apiserver serves an
    informer: only objects whose labels include ``selector`` (one "resource type" per
    informer over refimpl's single keyspace), and every watch ended by the server once
    its requested ``timeout_seconds`` have passed on ``clock`` (the core records that
    timeout but leaves enforcing it to its driver -- here, :meth:`expire_watches`).
    """

    def __init__(
        self,
        server: ApiServerCore,
        clock: FakeClock,
        selector: Mapping[str, str] | None = None,
    ) -> None:
        self.server = server
        self.clock = clock
        self.selector = dict(selector or {})
        self._deadlines: list[tuple[float, CoreWatch]] = []

    def _keep(self, obj: Object) -> bool:
        return all(obj.labels.get(k) == v for k, v in self.selector.items())

    def list(self, options: ListOptions) -> ListResult:
        result = self.server.list(options.resource_version, options.limit, options.continue_token)
        items = tuple(o for o in result.items if self._keep(o))
        return ListResult(items, result.resource_version, result.continue_token)

    def watch(self, options: ListOptions) -> Watch:
        inner = self.server.watch(
            options.resource_version,
            allow_bookmarks=options.allow_watch_bookmarks,
            send_initial_events=options.send_initial_events,
            timeout_seconds=options.timeout_seconds,
        )
        if options.timeout_seconds:
            self._deadlines.append((self.clock.now() + options.timeout_seconds, inner))
        return _FilteredWatch(inner, self._keep)

    def next_watch_deadline(self) -> float | None:
        live = [d for d, w in self._deadlines if w.active]
        return min(live, default=None)

    def expire_watches(self) -> int:
        """End every watch whose timeout has passed (events already sent are still
        read first); returns how many."""
        now = self.clock.now()
        ended = 0
        keep: list[tuple[float, CoreWatch]] = []
        for deadline, w in self._deadlines:
            if not w.active:
                continue
            if deadline <= now:
                ended += self.server.close_watch(w.id, drop_pending=False)
            else:
                keep.append((deadline, w))
        self._deadlines = keep
        return ended


class SteppedInformer:
    """Reflector -> FIFO -> indexer -> handlers, advanced only by :meth:`pump`.

    ``lw.clock`` is the informer's clock. ``pump()`` runs the reflector until it has to
    wait (for an event not yet delivered, or for a time the clock has not reached) and
    processes everything the FIFO holds, repeatedly, until neither can move. Handlers see
    every notification, resyncs included (one listener, always due for resync).
    """

    def __init__(
        self,
        lw: ServerListerWatcher,
        *,
        fifo_mode: FifoMode = FifoMode.REAL_ATOMIC,
        list_mode: ListMode = ListMode.WATCH_LIST,
        resync_period: float = 0.0,
        name: str = "informer",
        seed: int = 0,
    ) -> None:
        self.name = name
        self.lw = lw
        self.clock = clock = lw.clock
        self.indexer: Indexer[Object] = Indexer()
        self.fifo = new_fifo(fifo_mode, self.indexer, name)
        self.reflector = SteppedReflector(
            lw,
            self.fifo,
            name=name,
            resync_period=resync_period,
            clock=clock,
            seed=seed,
            use_watch_list=list_mode is ListMode.WATCH_LIST,
        )
        self.handlers: list[ResourceEventHandler[Any]] = []
        #: What each handler call was, in order: ("add"|"update"|"delete", key).
        self.notifications: list[tuple[str, str]] = []

    def add_event_handler(self, handler: ResourceEventHandler[Any]) -> None:
        self.handlers.append(handler)

    def _queued(self) -> int:
        if isinstance(self.fifo, DeltaFIFO):
            return len(self.fifo.snapshot()[0])
        return len(self.fifo.snapshot())

    def process(self, deltas: Sequence[Delta], is_in_initial_list: bool) -> None:
        """What the informer does with one popped entry: ``process_deltas`` into the
        indexer, then the handlers (pass it to ``fifo.pop`` to step by hand)."""
        process_deltas(self, self.indexer, deltas, is_in_initial_list)

    def pump(self, max_rounds: int = 10_000) -> int:
        """Advance until nothing can move without the clock or the server; returns the
        number of reflector steps plus pops taken."""
        moves = 0
        for _ in range(max_rounds):
            moved = self.lw.expire_watches()
            moved += self.reflector.run_until_blocked()
            while self._queued():
                self.fifo.pop(self.process)
                moved += 1
            moves += moved
            if moved == 0:
                return moves
        raise RuntimeError(f"informer {self.name} still busy after {max_rounds} rounds")

    def next_deadline(self) -> float | None:
        """When this informer next has something to do without outside help: a resync,
        the end of a backoff, or the server ending a watch."""
        times = [t for t in (self.reflector.next_deadline(), self.lw.next_watch_deadline()) if t]
        return min(times, default=None)

    def has_synced(self) -> bool:
        return self.fifo.has_synced()

    def lister(self) -> GenericLister:
        return GenericLister(self.indexer)

    def stop(self) -> None:
        self.reflector.stop()
        self.reflector.run_until_blocked()

    # -- process_deltas calls these; fan out to the handlers -------------------------

    def on_add(self, obj: object, is_in_initial_list: bool) -> None:
        self.notifications.append(("add", meta_namespace_key_func(obj)))
        for handler in self.handlers:
            handler.on_add(obj, is_in_initial_list)

    def on_update(self, old: object, new: object) -> None:
        self.notifications.append(("update", meta_namespace_key_func(new)))
        for handler in self.handlers:
            handler.on_update(old, new)

    def on_delete(self, obj: object) -> None:
        key = getattr(obj, "key", None)
        self.notifications.append(
            ("delete", key if isinstance(key, str) else meta_namespace_key_func(obj))
        )
        for handler in self.handlers:
            handler.on_delete(obj)


def run_until(end: float, *informers: SteppedInformer) -> None:
    """Let time pass up to ``end``, stopping at every deadline of every informer (watch
    timeouts, resyncs, backoffs) and pumping them all at each stop."""
    if not informers:
        raise ValueError("run_until needs at least one informer")
    clock = informers[0].clock
    while True:
        for informer in informers:
            informer.pump()
        now = clock.now()
        due = [d for i in informers if (d := i.next_deadline()) is not None and d <= end]
        if not due:
            if end > now:
                clock.set_time(end)
                for informer in informers:
                    informer.pump()
            return
        nearest = min(due)
        if nearest <= now:
            raise RuntimeError(f"deadline {nearest} is not in the future (now {now})")
        clock.set_time(nearest)
