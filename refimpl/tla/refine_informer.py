"""The refinement mapping from the informer code to spec/Informer.tla and InformerAtomic.tla.

Owns no state; builds the whole informer -- server, reflector, FIFO, indexer, listener --
in a spec state, makes each move, and reads the result back. The code under replay is
:class:`~refimpl.apiserver.ApiServerCore` (the server), client-go's reflector control
flow (:class:`~refimpl.cache.reflector.ReflectorLoop`, driven one park point at a time,
as :class:`~refimpl.cache.reflector.SteppedReflector` does), the FIFO core and indexer
of an :class:`~refimpl.cache.informer_core.InformerCore` (``FifoMode.DELTA`` for
Informer.tla, ``FifoMode.REAL_ATOMIC`` unbatched for InformerAtomic.tla), its
``process_deltas``, its on_add/on_update/on_delete and the listener's buffer. The
replay's own pieces are the handler at the end of the line, which records ``view`` and
``lastRV``, and a recorder that holds process_deltas' handler calls between the store
write and their distribution (below). While a DeltaFIFO pop is being processed, the
reflector's FIFO writes (List, WatchEvent) are held back, as the shell's FIFO lock
holds them.

The variables map as refimpl/tla/refine_informer_state.py says (rvs as ``code = spec +
1``), and the actions::

    Write(k)       server.create / update / delete_key
    Compact        server.compact(newest rv)
    List           resume the loop: list (the server's items, handed over in every
                   order), FIFO replace, ask for a watch -> parks on that watch
    Connect        the server answers the watch request: the watch opens; if it opens
                   with a 410 ERROR event (its rv was compacted away) that event is
                   handed to the loop, which returns to its backoff sleep
    WatchEvent     hand the loop the watch's next event (FIFO add / update / delete)
    WatchDrop      the watch ends cleanly after > 1 s (a shorter, empty watch is an
                   error in client-go: WatchShort): the loop asks for a new watch
    Pop            fifo.pop_ready(): the key's deltas, handed to processing (DELTA)
    StoreWrite     process_deltas on the oldest popped delta, its handler call
                   recorded (DELTA)
    Take           fifo.take_one()                                        (atomic)
    ApplyEntry     process_deltas on the taken entry, its handler calls recorded
    Distribute     the oldest recorded handler call made on the InformerCore
                   (on_add / on_update / on_delete: the processor distributes it)
    Finish         InformerCore.finish_taken(1): finish, then the sync check (atomic)
    Handle         listener.dispatch_one()

InformerFaults.tla (``max_faults`` set; DELTA only) adds the variables ``bookmark``
(the BOOKMARK events in the open watch's stream), ``eventSeen`` (the open watch has
delivered an event: the mapping's own flag, since the loop's count is local to its
watch; a rebuilt watch with ``eventSeen`` is handed a bookmark while it is walked, so
the loop's count is not zero), ``faults`` and ``bookmarks`` (counters of the model's
bounds), and the actions::

    ListFail       server.fail_next_lists(1), then resume the loop as for List: the
                   list raises, the loop backs off ("list")
    WatchExpired   hand the loop an ERROR 410 event on its open watch
    WatchShort     the open watch ends before VERY_SHORT_WATCH: if the loop then backs
                   off to relist (it saw no event); a loop that re-watches makes the
                   WatchDrop move instead
    BookmarkSend   server.send_bookmarks on the open watch (after the events in it)
    WatchBookmark  hand the loop the BOOKMARK at the head of its watch's stream (not
                   held back by the FIFO lock: it reaches no FIFO)
    WatchRetry     the watch request on the wire is answered 429: the state is
                   rebuilt with ApiServerCore.fail_next_watches(1) armed, so the
                   loop's watch call raises TooManyRequests (the request was
                   pending inside that call); the loop backs off ("watch-retry"),
                   the replay lets the deadline pass and the loop asks for a new
                   watch ("connect", checked to be from the last synced rv)

process_next (DELTA) is Pop, then per delta StoreWrite + Distribute; process_taken
(atomic) is ApplyEntry, Distribute per handler call, Finish. The code makes a handler
call inside process_deltas, right after (or, broken, before) the store write; the
replay records the call there, noting whether the indexer shows it at that moment
(that is ``applied``), and makes it on the informer at Distribute: so a
process_deltas that calls the handler before writing the store moves to a state with
the note missing from ``applied``, which no spec step reaches.

Go's map order (the order of relist tombstones from the store, and of the deletions a
ReplacedAll computes) is any order in the specs: the indexer is filled in every order
of its keys, and its iteration order is its insertion order, so each order Go may
produce is one code move. The spec does not record an update's old object; a rebuilt
update notification carries the new object twice (the handler reads only the new).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Protocol, cast

import attrs

from refimpl.apierrors import Expired
from refimpl.cache.delta_fifo import DeltaFIFOCore
from refimpl.cache.deltas import Delta
from refimpl.cache.informer_core import (
    FifoMode,
)
from refimpl.cache.real_fifo import RealFIFOCore
from refimpl.cache.reflector import (
    WaitForEvent,
    WaitUntil,
    Wake,
)
from refimpl.meta import Object
from refimpl.tla.refine_informer_parts import (
    BuiltInformer,
    HiddenState,
    PendingWatch,
    spec_rv_map,
)
from refimpl.tla.refine_informer_state import InformerStates
from refimpl.tla.replay import Move
from refimpl.tla.values import Value
from refimpl.watch import BOOKMARK, ERROR, WatchEvent

__all__ = ["InformerMapping"]


class _MoveSink(Protocol):
    def __call__(self, action: str, built: BuiltInformer, args: tuple[Value, ...] = ()) -> None: ...


@attrs.frozen
class InformerMapping(InformerStates):
    """Callable for :func:`refimpl.tla.replay.replay` over an informer graph: every
    move the code can make from a spec state (the states themselves:
    :class:`~refimpl.tla.refine_informer_state.InformerStates`)."""

    # -- the moves ------------------------------------------------------------------

    def _orders(self, state: Mapping[str, Value], var: str) -> list[tuple[str, ...]]:
        """Every order of the keys present in the spec map ``var``."""
        present = sorted(k for k, rv in spec_rv_map(state[var], 0).items() if rv)
        return list(itertools.permutations(present))

    def __call__(self, state: Mapping[str, Value]) -> Iterable[Move]:
        moves: list[Move] = []

        def move(action: str, built: BuiltInformer, args: tuple[Value, ...] = ()) -> None:
            moves.append(Move(action, args, self.spec_state(built), HiddenState.of(built)))

        self._server_moves(state, move)
        phase = state["reflector"]
        # The DeltaFIFO shell's pop runs process_deltas under the FIFO lock
        # (DeltaFIFO.pop in refimpl/cache/delta_fifo.py): while a popped key is being
        # processed, a reflector step that writes to the FIFO (a list, a watch event)
        # waits for it. The cores replayed here have no lock, so the replay holds
        # those moves back, as the lock would.
        fifo_locked = self.mode is FifoMode.DELTA and bool(state["popped"] or state["outbox"])
        budget = self.faults and cast(int, state["faults"]) < cast(int, self.max_faults)
        if phase == "list":
            self._list_moves(state, move, fifo_locked=fifo_locked, budget=budget)
        elif phase == "connect":
            self._connect_moves(state, move, budget=budget)
        elif phase == "watch":
            self._watch_moves(state, move, fifo_locked=fifo_locked, budget=budget)

        if self.mode is FifoMode.DELTA:
            self._delta_moves(state, move)
        else:
            self._atomic_moves(state, move)
        if state["outbox"]:
            built = self.build(state)
            built.distribute()
            move("Distribute", built)

        built = self.build(state)
        if built.listener.dispatch_one():
            move("Handle", built)
        return moves

    def _server_moves(self, state: Mapping[str, Value], move: _MoveSink) -> None:
        """Write(k) for every key (while the history has room), then Compact."""
        history = state["history"]
        assert isinstance(history, tuple)
        if len(history) < self.max_rv:
            for key in self.keys:
                built = self.build(state)
                if key not in built.server.objects:
                    built.server.create(Object(name=key))
                    move("Write", built, (key,))
                    continue
                self._modify(built.server, key)
                move("Write", built, (key,))
                built = self.build(state)
                built.server.delete_key(key)
                move("Write", built, (key,))
        built = self.build(state)
        built.server.compact(built.server.rv)
        move("Compact", built)

    def _list_moves(
        self, state: Mapping[str, Value], move: _MoveSink, *, fifo_locked: bool, budget: bool
    ) -> None:
        """List (in every list order and store order), and ListFail within the budget."""
        if not fifo_locked:
            for list_order in self._orders(state, "server"):
                for store_order in self._orders(state, "store"):
                    built = self.build(state, store_order, list_order)
                    self._resume_list(built)
                    move("List", built)
        if budget:
            # The list request fails (not a 410: any other error); nothing reaches the
            # FIFO, so the FIFO lock does not hold it back.
            built = self.build(state)
            built.server.fail_next_lists(1)
            self._resume_list(built)
            built.faults += 1
            move("ListFail", built)

    def _connect_moves(self, state: Mapping[str, Value], move: _MoveSink, *, budget: bool) -> None:
        """Connect, and WatchRetry within the budget."""
        built = self.build(state)
        assert isinstance(built.park, WaitForEvent)
        watch = cast(PendingWatch, built.park.watch).connect()
        if watch.wire and watch.wire[0].type == ERROR:
            built.resume(watch.next_event(0))  # the request's answer is a 410
        move("Connect", built)
        if budget:
            # The request's answer is a 429: the loop backs off, then asks again.
            built = self.build(state, refuse_watch=True)
            if isinstance(built.park, WaitUntil) and built.park.reason == "watch-retry":
                built.clock.set_time(max(built.clock.now(), built.park.deadline))
                built.resume(Wake.DEADLINE)
            built.faults += 1
            move("WatchRetry", built)

    def _watch_moves(
        self, state: Mapping[str, Value], move: _MoveSink, *, fifo_locked: bool, budget: bool
    ) -> None:
        """WatchBookmark or WatchEvent (the head of the stream), WatchDrop, and with
        InformerFaults.tla its watch faults."""
        built = self.build(state)
        assert isinstance(built.park, WaitForEvent)
        open_watch = cast(PendingWatch, built.park.watch).watch
        assert open_watch is not None
        if open_watch.wire and open_watch.wire[0].type == BOOKMARK:
            # A bookmark reaches no FIFO: the FIFO lock does not hold it back.
            built.resume(open_watch.next_event(0))
            built.event_seen = True
            move("WatchBookmark", built)
        elif open_watch.wire and not fifo_locked:
            built.resume(open_watch.next_event(0))
            built.event_seen = True
            move("WatchEvent", built)
        built = self.build(state)
        built.resume(None)
        move("WatchDrop", built)
        if self.faults:
            self._watch_faults(state, move, budget=budget)

    @staticmethod
    def _resume_list(built: BuiltInformer) -> None:
        """Let the loop list: from its backoff sleep (its deadline passed) or, not
        started yet, from the start."""
        if isinstance(built.park, WaitUntil):
            built.clock.set_time(max(built.clock.now(), built.park.deadline))
            built.resume(Wake.DEADLINE)
        else:
            built.resume(None)

    def _watch_faults(self, state: Mapping[str, Value], move: _MoveSink, *, budget: bool) -> None:
        """InformerFaults.tla's moves from an open watch: the server sends a bookmark;
        the watch fails with 410; the watch ends within a second of its start."""
        if not state["bookmark"] and cast(int, state["bookmarks"]) < self.max_bookmarks:
            built = self.build(state)
            watch = cast(PendingWatch, cast(WaitForEvent, built.park).watch).watch
            assert watch is not None
            if built.server.send_bookmarks(watch.id):
                built.bookmarks += 1
                move("BookmarkSend", built)
        if not budget:
            return
        # The server ends the stream with an ERROR 410 at once (the events it had not
        # sent yet are lost with the stream): the replay hands the loop that event.
        built = self.build(state)
        gone = Expired("replay: the watch fell too far behind")
        built.resume(WatchEvent(ERROR, Object(name=""), error=gone))
        built.faults += 1
        built.event_seen = False
        move("WatchExpired", built)
        built = self.build(state, short=True)
        built.resume(None)  # the stream ends at once
        if isinstance(built.park, WaitUntil):
            # client-go relists; a watch that delivered an event is re-watched instead,
            # which is the WatchDrop move above.
            built.faults += 1
            built.event_seen = False
            move("WatchShort", built)

    def _delta_moves(self, state: Mapping[str, Value], move: _MoveSink) -> None:
        built = self.build(state)
        fifo = cast(DeltaFIFOCore, built.informer.fifo_core)
        # DeltaFIFO.Pop runs processDeltas under the FIFO lock: the next pop waits.
        if fifo.queue and not built.popped and not built.outbox:
            _, deltas, built.popped_initial = fifo.pop_ready()
            built.popped = list(deltas)
            move("Pop", built)
        built = self.build(state)
        if built.popped and not built.outbox:
            delta = built.popped.pop(0)
            self._process(built, delta, built.popped_initial)
            move("StoreWrite", built)

    def _process(self, built: BuiltInformer, delta: Delta, initial: bool) -> None:
        """process_deltas (or the broken variant under test) on one delta, its handler
        calls recorded; an error it raises is a replay failure, as in process_next."""
        try:
            self.process(built.record(), built.informer.indexer, [delta], initial)
        except Exception as err:
            raise AssertionError(f"processing raised: {err!r}") from err

    def _atomic_moves(self, state: Mapping[str, Value], move: _MoveSink) -> None:
        built = self.build(state)
        fifo = cast(RealFIFOCore, built.informer.fifo_core)
        if fifo.items and not built.taken:
            built.taken.append(fifo.take_one())
            move("Take", built)
        if state["processing"] and not state["written"]:
            for store_order in self._orders(state, "store"):
                built = self.build(state, store_order)
                delta, initial = built.taken[0]
                self._process(built, delta, initial)
                built.written = True
                move("ApplyEntry", built)
        if state["processing"] and state["written"] and not state["outbox"]:
            built = self.build(state)
            built.taken.pop()
            built.written = False
            built.informer.finish_taken(1)
            self._check_no_errors(built)
            move("Finish", built)

    @staticmethod
    def _check_no_errors(built: BuiltInformer) -> None:
        if built.informer.process_errors:
            raise AssertionError(f"processing raised: {built.informer.process_errors!r}")
