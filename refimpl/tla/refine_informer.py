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

Resource versions: the code's server starts at rv 1, the spec's history at 0, so every
rv maps as ``code = spec + 1`` (0, "no object", stays 0). The mapping::

    server[k]          objects[k].resource_version        (absent: 0)
    history            the spec's writes up to ``compacted`` + server.log (the rest)
    compacted          server.compacted_rv
    reflector          where ReflectorLoop is parked: not started or in the backoff
                       sleep before a relist = "list"; waiting on a watch whose request
                       the server has not answered yet = "connect"; waiting on an open
                       watch = "watch"
    lastSyncRV         core.last_sync_resource_version ("" before the first list = 0)
    queue/items/...    the DeltaFIFO core (refine_fifo.load_delta_fifo)
    log/processing/... the atomic RealFIFO core (refine_fifo.load_real_fifo)
    store              the informer's indexer
    popped             the popped key's deltas process_deltas has not written yet
                       (DELTA; the replay holds them, as Go's Pop callback does)
    outbox             handler calls process_deltas made that the replay has not yet
                       passed on to the informer (written, not yet distributed)
    written            the taken entry's store write is done (atomic)
    notifications      listener.pending (add / update / delete, key, rv of the object)
    view, lastRV       the recording handler
    applied            the spec's set + the notes whose handler call found the
                       indexer already showing them

and the actions::

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
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol, cast

import attrs

from refimpl.apierrors import Expired
from refimpl.apiserver import ApiServerCore, CoreWatch
from refimpl.cache.delta_fifo import DeltaFIFOCore
from refimpl.cache.deltas import Delta
from refimpl.cache.informer_core import (
    AppliedKind,
    FifoMode,
    FifoWriter,
    InformerCore,
    ProcessFunc,
)
from refimpl.cache.listwatch import Watch
from refimpl.cache.process_deltas import process_deltas
from refimpl.cache.processor import (
    AddNotification,
    DeleteNotification,
    Notification,
    ProcessorListener,
    UpdateNotification,
)
from refimpl.cache.real_fifo import RealFIFOCore
from refimpl.cache.reflector import (
    VERY_SHORT_WATCH,
    Answer,
    ReflectorCore,
    ReflectorLoop,
    ReflectorStore,
    Steps,
    WaitForEvent,
    WaitUntil,
    Wake,
)
from refimpl.clock import FakeClock
from refimpl.meta import DeletedFinalStateUnknown, ListOptions, ListResult, Object
from refimpl.tla.refine_fifo import (
    delta_fifo_vars,
    delta_from_spec,
    delta_to_spec,
    load_delta_fifo,
    load_real_fifo,
    real_fifo_vars,
)
from refimpl.tla.replay import Move
from refimpl.tla.values import Fn, Value
from refimpl.watch import BOOKMARK, ERROR, WatchEvent

__all__ = ["InformerMapping", "shift_rvs"]

#: The loop's park points as the driver sees them (None: not started yet).
Park = WaitForEvent | WaitUntil | None


@attrs.frozen
class _Call:
    """A handler call process_deltas made, held until the replay distributes it."""

    kind: str  # "add" | "update" | "delete"
    obj: object
    old: object | None = None
    initial: bool = False

    def note(self) -> Fn:
        return _note(self.kind, self.obj)


class _Recorder:
    """The handler process_deltas calls during a replayed StoreWrite / ApplyEntry:
    records each call (checking the indexer at that moment) instead of distributing."""

    def __init__(self, calls: list[_Call], check: Callable[[str, object], None]) -> None:
        self.calls = calls
        self.check = check

    def on_add(self, obj: object, is_in_initial_list: bool) -> None:
        self.check("add", obj)
        self.calls.append(_Call("add", obj, None, is_in_initial_list))

    def on_update(self, old: object, new: object) -> None:
        self.check("update", new)
        self.calls.append(_Call("update", new, old))

    def on_delete(self, obj: object) -> None:
        self.check("delete", obj)
        self.calls.append(_Call("delete", obj))


def _call_of(note: Value) -> _Call:
    """A spec note (rvs in code numbering) as a recorded handler call. An update's old
    object is not in the spec: a placeholder without a resourceVersion stands in (so
    the call is not mistaken for a resync)."""
    n = _notification(note)
    if isinstance(n, AddNotification):
        return _Call("add", n.new_obj, None, n.is_in_initial_list)
    if isinstance(n, UpdateNotification):
        return _Call("update", n.new_obj, Object(name=_object_key(n.new_obj)))
    return _Call("delete", n.old_obj)


class _MoveSink(Protocol):
    def __call__(self, action: str, built: _Informer, args: tuple[Value, ...] = ()) -> None: ...


_WRITE_TYPES = {"ADDED", "MODIFIED", "DELETED"}


def shift_rvs(value: Value, by: int) -> Value:
    """``value`` with every non-zero ``rv`` field of a record moved by ``by``."""
    if isinstance(value, Fn):
        out: dict[Value, Value] = {}
        for k, v in value.items():
            if k == "rv" and isinstance(v, int) and not isinstance(v, bool):
                out[k] = v + by if v else 0
            else:
                out[k] = shift_rvs(v, by)
        return Fn(out)
    if isinstance(value, tuple):
        return tuple(shift_rvs(v, by) for v in value)
    if isinstance(value, frozenset):
        return frozenset(shift_rvs(v, by) for v in value)
    return value


def _rv_map(value: Value, by: int) -> dict[str, int]:
    """A spec ``[Keys -> rv]`` as key -> code rv (0 stays 0)."""
    if not isinstance(value, Fn):
        raise TypeError(f"expected a function from keys to rvs, got {value!r}")
    return {str(k): (int(cast(int, v)) + by if v else 0) for k, v in value.items()}


def _spec_rv(resource_version: str) -> int:
    return int(resource_version) - 1 if resource_version else 0


def _object_rv(obj: object) -> int:
    """The spec rv of an object or tombstone (0: a tombstone without an object)."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return _spec_rv(obj.obj.resource_version) if obj.obj is not None else 0
    if isinstance(obj, Object):
        return _spec_rv(obj.resource_version)
    raise TypeError(f"no spec rv for {obj!r}")


def _object_key(obj: object) -> str:
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    if isinstance(obj, Object):
        return obj.name
    raise TypeError(f"no spec key for {obj!r}")


def _note(kind: str, obj: object) -> Fn:
    return Fn({"type": kind, "key": _object_key(obj), "rv": _object_rv(obj)})


def _note_of(n: Notification) -> Fn:
    if isinstance(n, AddNotification):
        return _note("add", n.new_obj)
    if isinstance(n, UpdateNotification):
        return _note("update", n.new_obj)
    return _note("delete", n.old_obj)


def _notification(note: Value) -> Notification:
    """A spec notification (rvs already in code numbering) as a listener entry."""
    if not isinstance(note, Fn):
        raise TypeError(f"not a spec notification: {note!r}")
    key, rv, kind = str(note["key"]), note["rv"], note["type"]
    assert isinstance(rv, int)
    obj = Object(name=key, resource_version=str(rv)) if rv else None
    if kind == "delete":
        return DeleteNotification(obj if obj is not None else DeletedFinalStateUnknown(key, None))
    assert obj is not None, note
    if kind == "update":
        return UpdateNotification(obj, obj)
    return AddNotification(obj, False)


class _Handler:
    """The handler at the end of the listener: its level view and last rv per key
    (spec numbering)."""

    def __init__(self, view: dict[str, int], last_rv: dict[str, int]) -> None:
        self.view = view
        self.last_rv = last_rv

    def on_add(self, obj: object, is_in_initial_list: bool) -> None:
        self.view[_object_key(obj)] = self.last_rv[_object_key(obj)] = _object_rv(obj)

    def on_update(self, old: object, new: object) -> None:
        self.on_add(new, False)

    def on_delete(self, obj: object) -> None:
        self.view[_object_key(obj)] = 0
        self.last_rv[_object_key(obj)] = _object_rv(obj)


class _PendingWatch:
    """A watch request on the wire: the server answers it only at :meth:`connect`,
    so "request sent, not answered" is a state the replay can stop in."""

    def __init__(self, server: ApiServerCore, options: ListOptions) -> None:
        self._server = server
        self.options = options
        self.watch: CoreWatch | None = None
        self._stopped = False

    def connect(self) -> CoreWatch:
        self.watch = self._server.watch(
            self.options.resource_version, allow_bookmarks=self.options.allow_watch_bookmarks
        )
        if self._stopped:
            self.watch.stop()
        return self.watch

    def next_event(self, timeout: float | None = None) -> WatchEvent | None:
        if self.watch is None:
            raise RuntimeError("the replay hands events over itself; nothing reads a watch")
        return self.watch.next_event(0)

    def stop(self) -> None:
        self._stopped = True
        if self.watch is not None:
            self.watch.stop()


@attrs.define
class _ListerWatcher:
    """Lists the server with its items in ``order`` (by key; the spec lists in any
    order) and answers watches with a :class:`_PendingWatch`. While ``script`` is set
    it is not the server that answers but the script: used only to walk the loop to
    a park point before the state is loaded."""

    server: ApiServerCore
    order: tuple[str, ...] = ()
    script: ListResult | None = None

    def list(self, options: ListOptions) -> ListResult:
        if self.script is not None:
            return self.script
        result = self.server.list(options.resource_version)
        rank = {k: i for i, k in enumerate(self.order)}
        items = sorted(result.items, key=lambda o: rank.get(o.name, len(rank)))
        return ListResult(tuple(items), result.resource_version, result.continue_token)

    def watch(self, options: ListOptions) -> Watch:
        if self.server.queued_faults()[1]:
            # The server is set to refuse this request (a 429): the call raises, as
            # client-go's Watch returns the error; no request is left on the wire.
            self.server.watch(options.resource_version)
        return _PendingWatch(self.server, options)


class _SwitchStore:
    """The reflector's store: nowhere while the loop is walked to its park point,
    then the informer's FIFO writer."""

    def __init__(self) -> None:
        self.target: ReflectorStore | None = None

    def _to(self) -> ReflectorStore:
        if self.target is None:  # the walk's scripted list and watches carry no objects
            raise RuntimeError("the reflector wrote an object while the replay walked it")
        return self.target

    def add(self, obj: object) -> None:
        self._to().add(obj)

    def update(self, obj: object) -> None:
        self._to().update(obj)

    def delete(self, obj: object) -> None:
        self._to().delete(obj)

    def replace(self, objects: Sequence[object], resource_version: str) -> None:
        if self.target is not None:
            self.target.replace(objects, resource_version)

    def resync(self) -> None:
        self._to().resync()


class _NeverStop:
    def is_set(self) -> bool:
        return False


@attrs.define
class _Informer:
    """One rebuilt informer: every part the mapping reads back."""

    server: ApiServerCore
    spec_history: tuple[Value, ...]
    lw: _ListerWatcher
    core: ReflectorCore
    loop: Steps[None]
    park: Park
    clock: FakeClock
    informer: InformerCore
    listener: ProcessorListener
    handler: _Handler
    applied: set[Value]
    taken: list[tuple[Delta, bool]]
    check: Callable[[str, object], None]
    popped: list[Delta] = attrs.Factory(list)
    popped_initial: bool = False
    outbox: list[_Call] = attrs.Factory(list)
    written: bool = False
    #: InformerFaults.tla's counters and the open watch's "an event was delivered"
    #: (the loop's own count is local to its watch; the walk sets it, see _walk_loop).
    event_seen: bool = False
    faults: int = 0
    bookmarks: int = 0

    def record(self) -> _Recorder:
        return _Recorder(self.outbox, self.check)

    def distribute(self) -> None:
        """Make the oldest recorded handler call on the informer."""
        call = self.outbox.pop(0)
        if call.kind == "add":
            self.informer.on_add(call.obj, call.initial)
        elif call.kind == "update":
            self.informer.on_update(call.old, call.obj)
        else:
            self.informer.on_delete(call.obj)

    def resume(self, answer: Answer) -> None:
        """Hand ``answer`` to the loop and run it to its next park point."""
        self.park = cast(Park, self.loop.send(answer))


@attrs.frozen
class InformerMapping:
    """Callable for :func:`refimpl.tla.replay.replay` over an informer graph.

    ``keys`` and ``max_rv`` are the model's constants; ``mode`` is
    ``FifoMode.DELTA`` (Informer.tla) or ``FifoMode.REAL_ATOMIC`` (InformerAtomic.tla).
    The factories build the parts under test (broken ones in tests).
    """

    keys: tuple[str, ...]
    max_rv: int
    mode: FifoMode
    #: InformerFaults.tla (DELTA only): the bounds of its faults and bookmarks; None
    #: for Informer.tla and InformerAtomic.tla, whose states have no such variables.
    max_faults: int | None = None
    max_bookmarks: int = 0
    informer_factory: type[InformerCore] = InformerCore
    process: ProcessFunc = process_deltas
    server_factory: type[ApiServerCore] = ApiServerCore
    reflector_core_factory: type[ReflectorCore] = ReflectorCore

    def __attrs_post_init__(self) -> None:
        if self.mode not in (FifoMode.DELTA, FifoMode.REAL_ATOMIC):
            raise ValueError(f"no spec models an informer in mode {self.mode}")
        if self.max_faults is not None and self.mode is not FifoMode.DELTA:
            raise ValueError("InformerFaults.tla is over the DeltaFIFO informer only")

    @property
    def faults(self) -> bool:
        """Replaying InformerFaults.tla (list failures, a 410 on an open watch, very
        short watches, 429s on a watch request, bookmarks)."""
        return self.max_faults is not None

    # -- building -------------------------------------------------------------------

    def _server(self, history: tuple[Value, ...]) -> ApiServerCore:
        server = self.server_factory()
        for entry in history:
            assert isinstance(entry, Fn) and entry["type"] in _WRITE_TYPES, entry
            key = str(entry["key"])
            if entry["type"] == "ADDED":
                server.create(Object(name=key))
            elif entry["type"] == "MODIFIED":
                self._modify(server, key)
            else:
                server.delete_key(key)
        return server

    @staticmethod
    def _modify(server: ApiServerCore, key: str) -> None:
        current = server.objects[key]
        server.update(current.evolve(labels={"write": str(server.rv + 1)}))

    def build(
        self,
        state: Mapping[str, Value],
        store_order: tuple[str, ...] | None = None,
        list_order: tuple[str, ...] = (),
        *,
        load: bool = True,
        short: bool = False,
        refuse_watch: bool = False,
    ) -> _Informer:
        """The code in ``state``; ``load=False`` leaves the FIFO, indexer and ``applied``
        as the code constructs them; ``short`` leaves an open watch younger than
        client-go's "very short watch" (else it has lasted longer); ``refuse_watch``
        (phase "connect") has the server answer the pending watch request 429, so
        the loop is in its re-watch backoff."""
        history = state["history"]
        compacted = state["compacted"]
        last_sync = state["lastSyncRV"]
        phase = state["reflector"]
        assert isinstance(history, tuple) and isinstance(compacted, int)
        assert isinstance(last_sync, int) and phase in ("list", "connect", "watch")
        server = self._server(history)
        clock = FakeClock(0.0)
        lw = _ListerWatcher(server, list_order)
        applied: set[Value] = set()

        def check(kind: str, obj: object) -> None:
            # A notification counts as applied only if the store shows it when the
            # handler is called: what the spec's StoreBeforeHandler asks of the code.
            stored, exists = informer.indexer.get_by_key(_object_key(obj))
            shown = not exists if kind == "delete" else exists and stored == obj
            if shown:
                applied.add(_note(kind, obj))

        def on_applied(kind: AppliedKind, obj: object, old: object | None) -> None:
            check(kind, obj)

        informer = self.informer_factory(
            lw, clock=clock, fifo_mode=self.mode, batch=False, on_applied=on_applied
        )
        store = _SwitchStore()
        core = self.reflector_core_factory()
        loop = ReflectorLoop(
            lw,
            store,
            core,
            name="replay",
            clock=clock,
            rng=random.Random(0),
            delay=lambda: 1.0,
            stop=_NeverStop(),
            # The specs' reflector lists, then watches: they do not model watch-list
            # (client-go's default since v1.35), so the replay pins list + watch.
            use_watch_list=False,
        ).run()
        built = _Informer(
            server=server,
            spec_history=history,
            lw=lw,
            core=core,
            loop=loop,
            park=None,
            clock=clock,
            informer=informer,
            listener=self._listener(state),
            handler=cast(_Handler, None),
            applied=applied,
            taken=[],
            check=check,
        )
        built.handler = cast(_Handler, built.listener.handler)
        if self.faults:
            built.event_seen = bool(state["eventSeen"])
            built.faults = cast(int, state["faults"])
            built.bookmarks = cast(int, state["bookmarks"])
        if refuse_watch:
            assert phase == "connect", phase
            server.fail_next_watches(1)
        self._walk_loop(
            built, phase, last_sync, bool(state["populated"]), short=short, refused=refuse_watch
        )
        if self.faults and state["bookmark"]:
            self._load_bookmark(built, state["bookmark"])
        if compacted:
            server.compact(compacted + 1)
        store.target = FifoWriter(informer.fifo_core, informer)
        informer.processor.add_listener(built.listener)
        informer.processor.run()  # not threaded: marks the listeners started
        if load:
            self._load_fifo_and_store(built, state, store_order)
            spec_applied = state["applied"]
            assert isinstance(spec_applied, frozenset)
            applied.update(spec_applied)
            self._load_processing(built, state)
        return built

    def _load_processing(self, built: _Informer, state: Mapping[str, Value]) -> None:
        """What processing holds between its steps: the popped deltas (DELTA), the
        recorded handler calls, and whether the taken entry is written (atomic)."""
        popped = shift_rvs(state.get("popped", ()), 1)
        outbox = shift_rvs(state.get("outbox", ()), 1)
        assert isinstance(popped, tuple) and isinstance(outbox, tuple)
        built.popped = [delta_from_spec(d) for d in popped]
        built.outbox = [_call_of(n) for n in outbox]
        built.written = bool(state.get("written", False))

    def initial_state(self) -> dict[str, Value]:
        """The spec state of a freshly built informer: nothing loaded into its FIFO,
        indexer, listener or handler (to compare with the spec's Init)."""
        empty: dict[str, Value] = {
            "history": (),
            "compacted": 0,
            "lastSyncRV": 0,
            "reflector": "list",
            "populated": False,
            "notifications": (),
            "view": Fn({}),
            "lastRV": Fn({}),
        }
        return self.spec_state(self.build(empty, load=False))

    def _walk_loop(
        self,
        built: _Informer,
        phase: Value,
        last_sync: int,
        listed: bool,
        *,
        short: bool,
        refused: bool = False,
    ) -> None:
        """Run the loop on a scripted list-watcher to the park point ``phase`` names,
        with ``lastSyncRV`` as its last synced rv. An open watch that has delivered an
        event (``eventSeen``) is handed a scripted bookmark at that rv, so that the
        loop's own count of the watch's events is not zero."""
        rv = str(last_sync + 1)
        if phase == "list" and not listed:
            return  # not started: its first step is the first list
        built.lw.script = ListResult((), rv, "")
        built.resume(None)  # list (nowhere) and ask for a watch at rv
        built.lw.script = None
        if refused:
            # The request was answered 429 (WatchRetry): wherever that left the loop
            # (client-go: its re-watch backoff) is the move's to read.
            built.core.last_sync_resource_version = rv
            return
        assert isinstance(built.park, WaitForEvent), built.park
        pending = cast(_PendingWatch, built.park.watch)
        built.lw.script = None
        if phase == "list":
            # The watch was refused (410): back to the loop's backoff sleep.
            built.resume(Expired("scripted: walk the loop to its relist backoff"))
            assert isinstance(built.park, WaitUntil), built.park
        elif phase == "watch":
            pending.connect()
            if built.event_seen:
                built.resume(WatchEvent(BOOKMARK, Object(name="", resource_version=rv)))
                assert isinstance(built.park, WaitForEvent), built.park
        if not short:
            built.clock.step(VERY_SHORT_WATCH + 1.0)  # the watch is not "very short"
        built.core.last_sync_resource_version = rv

    @staticmethod
    def _load_bookmark(built: _Informer, bookmark: Value) -> None:
        """Put the spec's pending bookmark into the open watch's stream, after the
        events up to its rv (where the server put it when it sent it)."""
        assert isinstance(bookmark, tuple) and len(bookmark) == 1, bookmark
        assert isinstance(built.park, WaitForEvent), built.park
        watch = cast(_PendingWatch, built.park.watch).watch
        assert watch is not None
        code_rv = cast(int, bookmark[0]) + 1
        events = list(watch.wire)
        at = sum(1 for e in events if int(e.object.resource_version) <= code_rv)
        events.insert(at, WatchEvent(BOOKMARK, Object(name="", resource_version=str(code_rv))))
        watch.wire.clear()
        watch.wire.extend(events)

    def _listener(self, state: Mapping[str, Value]) -> ProcessorListener:
        handler = _Handler(_rv_map(state["view"], 0), _rv_map(state["lastRV"], 0))
        listener = ProcessorListener(handler, 0.0, 0.0, 0.0, name="replay")
        notes = shift_rvs(state["notifications"], 1)
        assert isinstance(notes, tuple)
        for note in notes:
            listener.pending.append(_notification(note))
        return listener

    def _load_fifo_and_store(
        self, built: _Informer, state: Mapping[str, Value], order: tuple[str, ...] | None
    ) -> None:
        stored = {k: rv for k, rv in _rv_map(state["store"], 1).items() if rv}
        for key in order if order is not None else sorted(stored):
            built.informer.indexer.add(Object(name=key, resource_version=str(stored[key])))
        shifted = {k: shift_rvs(v, 1) for k, v in state.items()}
        fifo = built.informer.fifo_core
        if isinstance(fifo, DeltaFIFOCore):
            load_delta_fifo(fifo, shifted)
        else:
            built.taken = load_real_fifo(fifo, shifted)

    # -- reading back ---------------------------------------------------------------

    def spec_state(self, built: _Informer) -> dict[str, Value]:
        server = built.server
        # Writes up to the compaction point are gone from the server's log; they are
        # the spec's (and nothing can have changed them).
        history = built.spec_history[: server.compacted_rv - 1] + tuple(
            Fn({"type": str(e.type), "key": e.object.name, "rv": e.rv - 1}) for e in server.log
        )
        state: dict[str, Value] = {
            "server": Fn(
                {
                    k: _spec_rv(server.objects[k].resource_version) if k in server.objects else 0
                    for k in self.keys
                }
            ),
            "history": history,
            "compacted": server.compacted_rv - 1,
            "reflector": self._phase(built, history),
            "lastSyncRV": _spec_rv(built.core.last_sync_resource_version),
            "store": Fn({k: self._stored(built, k) for k in self.keys}),
            "notifications": tuple(_note_of(n) for n in built.listener.pending),
            "view": Fn({k: built.handler.view.get(k, 0) for k in self.keys}),
            "lastRV": Fn({k: built.handler.last_rv.get(k, 0) for k in self.keys}),
            "applied": frozenset(built.applied),
            "outbox": tuple(c.note() for c in built.outbox),
        }
        if self.faults:
            watching = state["reflector"] == "watch"
            state["bookmark"] = self._bookmark(built) if watching else ()
            state["eventSeen"] = built.event_seen and watching
            state["faults"] = built.faults
            state["bookmarks"] = built.bookmarks
        if self.mode is FifoMode.DELTA:
            state["popped"] = tuple(shift_rvs(delta_to_spec(d), -1) for d in built.popped)
        else:
            state["written"] = built.written
        fifo = built.informer.fifo_core
        fifo_state = (
            delta_fifo_vars(fifo, self.keys)
            if isinstance(fifo, DeltaFIFOCore)
            else real_fifo_vars(fifo, built.taken)
        )
        state.update({k: shift_rvs(v, -1) for k, v in fifo_state.items()})
        return state

    @staticmethod
    def _stored(built: _Informer, key: str) -> int:
        obj, exists = built.informer.indexer.get_by_key(key)
        return _object_rv(obj) if exists else 0

    @staticmethod
    def _bookmark(built: _Informer) -> tuple[Value, ...]:
        """The bookmarks in the open watch's stream, by spec rv (the spec allows one,
        after the events up to its rv: :meth:`_phase` checks where it is)."""
        park = built.park
        assert isinstance(park, WaitForEvent)
        watch = cast(_PendingWatch, park.watch).watch
        assert watch is not None
        return tuple(_spec_rv(e.object.resource_version) for e in watch.wire if e.type == BOOKMARK)

    @staticmethod
    def _phase(built: _Informer, history: tuple[Value, ...]) -> str:
        """The spec's ``reflector``; a watch that asks for, or delivers, anything but
        the writes after ``lastSyncRV`` maps to no spec phase (and so mismatches)."""
        park = built.park
        if park is None or (isinstance(park, WaitUntil) and park.reason == "backoff"):
            return "list"
        if not isinstance(park, WaitForEvent) or not isinstance(park.watch, _PendingWatch):
            return f"unexpected park point {park!r}"
        last_sync = built.core.last_sync_resource_version
        open_watch = park.watch.watch
        if open_watch is None:
            asked = park.watch.options.resource_version
            if asked != last_sync:
                return f"connect from rv {asked!r}, not the last synced {last_sync!r}"
            return "connect"
        if open_watch.wire and open_watch.wire[0].type == ERROR:
            return "watch answered 410 but not handed to the loop"
        after = _spec_rv(last_sync)
        due = [cast(Fn, e)["rv"] for e in history if cast(int, cast(Fn, e)["rv"]) > after]
        sent = [_spec_rv(e.object.resource_version) for e in open_watch.wire if e.type != BOOKMARK]
        if sent != due:
            return f"watch delivering rvs {sent}, not the writes after {after}: {due}"
        for i, e in enumerate(open_watch.wire):
            if e.type == BOOKMARK:
                mark = _spec_rv(e.object.resource_version)
                before = [_spec_rv(x.object.resource_version) for x in list(open_watch.wire)[:i]]
                if before != [rv for rv in sent if rv <= mark]:
                    return f"bookmark at {mark} behind writes {before} in the watch stream"
        return "watch"

    # -- the moves ------------------------------------------------------------------

    def _orders(self, state: Mapping[str, Value], var: str) -> list[tuple[str, ...]]:
        """Every order of the keys present in the spec map ``var``."""
        present = sorted(k for k, rv in _rv_map(state[var], 0).items() if rv)
        return list(itertools.permutations(present))

    def __call__(self, state: Mapping[str, Value]) -> Iterable[Move]:
        moves: list[Move] = []

        def move(action: str, built: _Informer, args: tuple[Value, ...] = ()) -> None:
            moves.append(Move(action, args, self.spec_state(built)))

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

        phase = state["reflector"]
        # The DeltaFIFO shell's pop runs process_deltas under the FIFO lock
        # (DeltaFIFO.pop in refimpl/cache/delta_fifo.py): while a popped key is being
        # processed, a reflector step that writes to the FIFO (a list, a watch event)
        # waits for it. The cores replayed here have no lock, so the replay holds
        # those moves back, as the lock would.
        fifo_locked = self.mode is FifoMode.DELTA and bool(state["popped"] or state["outbox"])
        budget = self.faults and cast(int, state["faults"]) < cast(int, self.max_faults)
        if phase == "list" and not fifo_locked:
            for list_order in self._orders(state, "server"):
                for store_order in self._orders(state, "store"):
                    built = self.build(state, store_order, list_order)
                    self._resume_list(built)
                    move("List", built)
        if phase == "list" and budget:
            # The list request fails (not a 410: any other error); nothing reaches the
            # FIFO, so the FIFO lock does not hold it back.
            built = self.build(state)
            built.server.fail_next_lists(1)
            self._resume_list(built)
            built.faults += 1
            move("ListFail", built)
        elif phase == "connect":
            built = self.build(state)
            assert isinstance(built.park, WaitForEvent)
            watch = cast(_PendingWatch, built.park.watch).connect()
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
        elif phase == "watch":
            built = self.build(state)
            assert isinstance(built.park, WaitForEvent)
            open_watch = cast(_PendingWatch, built.park.watch).watch
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

    @staticmethod
    def _resume_list(built: _Informer) -> None:
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
            watch = cast(_PendingWatch, cast(WaitForEvent, built.park).watch).watch
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

    def _process(self, built: _Informer, delta: Delta, initial: bool) -> None:
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
    def _check_no_errors(built: _Informer) -> None:
        if built.informer.process_errors:
            raise AssertionError(f"processing raised: {built.informer.process_errors!r}")
