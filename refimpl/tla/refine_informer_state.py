"""The informer's refinement mapping, state half: the code in a spec state and back.

:class:`InformerStates` builds the whole informer -- server, reflector, FIFO, indexer,
listener -- in a state of spec/Informer.tla or spec/InformerAtomic.tla
(:meth:`~InformerStates.build`) and reads the code's state back as the spec's
(:meth:`~InformerStates.spec_state`); refimpl/tla/refine_informer.py makes the moves
between them, refimpl/tla/refine_informer_parts.py holds the replay's own pieces.

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

What no spec variable holds is made up by a rebuild (the loop has just listed at
``lastSyncRV``, its watch is older than a very short one), except the reflector core:
handed a :class:`~refimpl.tla.replay.Reached` state by the executing replay, the build
puts back the core the move into that state left (:class:`HiddenState`), so a core that
keeps its own resourceVersion (the last list's, say) is checked as the path left it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import ClassVar, cast

import attrs

from refimpl.apierrors import Expired
from refimpl.apiserver import ApiServerCore
from refimpl.cache.delta_fifo import DeltaFIFOCore
from refimpl.cache.informer_core import (
    AppliedKind,
    FifoMode,
    FifoWriter,
    InformerCore,
    ProcessFunc,
)
from refimpl.cache.process_deltas import process_deltas
from refimpl.cache.processor import (
    ProcessorListener,
)
from refimpl.cache.reflector import (
    VERY_SHORT_WATCH,
    ReflectorCore,
    ReflectorLoop,
    Steps,
    WaitForEvent,
    WaitUntil,
)
from refimpl.clock import FakeClock
from refimpl.meta import ListResult, Object
from refimpl.tla.refine_fifo import (
    delta_fifo_vars,
    load_delta_fifo,
    load_real_fifo,
    real_fifo_vars,
)
from refimpl.tla.refine_informer_parts import (
    BuiltInformer,
    HiddenState,
    NeverStop,
    PendingWatch,
    ScriptedListerWatcher,
    SpecValues,
    SwitchStore,
    ViewHandler,
    spec_key,
    spec_note,
    spec_note_of,
    spec_object_rv,
    spec_rv,
    spec_rv_map,
)
from refimpl.tla.replay import Reached
from refimpl.tla.values import Fn, Value
from refimpl.watch import BOOKMARK, ERROR, WatchEvent

__all__ = ["InformerStates"]

#: The spec's history entries' types.
_WRITE_TYPES = {"ADDED", "MODIFIED", "DELETED"}


@attrs.frozen
class InformerStates:
    """The informer code in a spec state and back: :meth:`build` and
    :meth:`spec_state` (the moves between them are
    :class:`~refimpl.tla.refine_informer.InformerMapping`'s).

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
    #: The spec values the builds load, in the code's form (made once per value).
    values: SpecValues = attrs.field(factory=SpecValues, init=False, eq=False, repr=False)
    #: The informer's resync period (its handlers' and the reflector's check period):
    #: 0, never, but for InformerResync.tla's mapping.
    resync_period: ClassVar[float] = 0.0

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
    ) -> BuiltInformer:
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
        lw = ScriptedListerWatcher(server, list_order)
        applied: set[Value] = set()

        def check(kind: str, obj: object) -> None:
            # A notification counts as applied only if the store shows it when the
            # handler is called: what the spec's StoreBeforeHandler asks of the code.
            stored, exists = informer.indexer.get_by_key(spec_key(obj))
            shown = not exists if kind == "delete" else exists and stored == obj
            if shown:
                applied.add(spec_note(kind, obj))

        def on_applied(kind: AppliedKind, obj: object, old: object | None) -> None:
            check(kind, obj)

        informer = self.informer_factory(
            lw,
            clock=clock,
            fifo_mode=self.mode,
            batch=False,
            on_applied=on_applied,
            resync_period=self.resync_period,
        )
        store = SwitchStore()
        core = self.reflector_core_factory()
        # With no resync period (Informer.tla, InformerAtomic.tla) the loop never resyncs.
        loop = _reflector_loop(
            lw,
            store,
            core,
            clock,
            resync_period=self.resync_period,
            should_resync=informer.processor.should_resync,
        )
        built = BuiltInformer(
            server=server,
            spec_history=history,
            lw=lw,
            core=core,
            loop=loop,
            park=None,
            clock=clock,
            informer=informer,
            listener=self._listener(state),
            handler=cast(ViewHandler, None),
            applied=applied,
            taken=[],
            check=check,
        )
        built.handler = cast(ViewHandler, built.listener.handler)
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
        if isinstance(state, Reached) and state.hidden is not None:
            # The replay executes a path: the core is put back as the path left it.
            cast(HiddenState, state.hidden).restore(core)
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

    def _load_processing(self, built: BuiltInformer, state: Mapping[str, Value]) -> None:
        """What processing holds between its steps: the popped deltas (DELTA), the
        recorded handler calls, and whether the taken entry is written (atomic)."""
        popped = state.get("popped", ())
        outbox = state.get("outbox", ())
        assert isinstance(popped, tuple) and isinstance(outbox, tuple)
        built.popped = [self.values.delta(d) for d in popped]
        built.outbox = [self.values.call(n) for n in outbox]
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
        built: BuiltInformer,
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
        pending = cast(PendingWatch, built.park.watch)
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
    def _load_bookmark(built: BuiltInformer, bookmark: Value) -> None:
        """Put the spec's pending bookmark into the open watch's stream, after the
        events up to its rv (where the server put it when it sent it)."""
        assert isinstance(bookmark, tuple) and len(bookmark) == 1, bookmark
        assert isinstance(built.park, WaitForEvent), built.park
        watch = cast(PendingWatch, built.park.watch).watch
        assert watch is not None
        code_rv = cast(int, bookmark[0]) + 1
        events = list(watch.wire)
        at = sum(1 for e in events if int(e.object.resource_version) <= code_rv)
        events.insert(at, WatchEvent(BOOKMARK, Object(name="", resource_version=str(code_rv))))
        watch.wire.clear()
        watch.wire.extend(events)

    def _listener(self, state: Mapping[str, Value]) -> ProcessorListener:
        values = self.values
        handler = ViewHandler(values.rv_map(state["view"]), values.rv_map(state["lastRV"]))
        period = self.resync_period
        listener = ProcessorListener(handler, period, period, 0.0, name="replay")
        notes = state["notifications"]
        assert isinstance(notes, tuple)
        for note in notes:
            listener.pending.append(values.notification(note))
        return listener

    def _load_fifo_and_store(
        self, built: BuiltInformer, state: Mapping[str, Value], order: tuple[str, ...] | None
    ) -> None:
        stored = {k: rv for k, rv in spec_rv_map(state["store"], 1).items() if rv}
        for key in order if order is not None else sorted(stored):
            built.informer.indexer.add(self.values.stored(key, stored[key]))
        fifo = built.informer.fifo_core
        if isinstance(fifo, DeltaFIFOCore):
            load_delta_fifo(fifo, state, self.values.delta)
        else:
            built.taken = load_real_fifo(fifo, state, self.values.delta)

    # -- reading back ---------------------------------------------------------------

    def spec_state(self, built: BuiltInformer) -> dict[str, Value]:
        server = built.server
        # Writes up to the compaction point are gone from the server's log; they are
        # the spec's (and nothing can have changed them).
        history = built.spec_history[: server.compacted_rv - 1] + tuple(
            Fn({"type": str(e.type), "key": e.object.name, "rv": e.rv - 1}) for e in server.log
        )
        state: dict[str, Value] = {
            "server": Fn(
                {
                    k: spec_rv(server.objects[k].resource_version) if k in server.objects else 0
                    for k in self.keys
                }
            ),
            "history": history,
            "compacted": server.compacted_rv - 1,
            "reflector": self._phase(built, history),
            "lastSyncRV": spec_rv(built.core.last_sync_resource_version),
            "store": Fn({k: self._stored(built, k) for k in self.keys}),
            "notifications": tuple(spec_note_of(n) for n in built.listener.pending),
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
            state["popped"] = tuple(self.values.spec_delta(d) for d in built.popped)
        else:
            state["written"] = built.written
        fifo = built.informer.fifo_core
        fifo_state = (
            delta_fifo_vars(fifo, self.keys, self.values.spec_delta)
            if isinstance(fifo, DeltaFIFOCore)
            else real_fifo_vars(fifo, built.taken, self.values.spec_delta)
        )
        state.update(fifo_state)
        return state

    @staticmethod
    def _stored(built: BuiltInformer, key: str) -> int:
        obj, exists = built.informer.indexer.get_by_key(key)
        return spec_object_rv(obj) if exists else 0

    @staticmethod
    def _bookmark(built: BuiltInformer) -> tuple[Value, ...]:
        """The bookmarks in the open watch's stream, by spec rv (the spec allows one,
        after the events up to its rv: :meth:`_phase` checks where it is)."""
        park = built.park
        assert isinstance(park, WaitForEvent)
        watch = cast(PendingWatch, park.watch).watch
        assert watch is not None
        return tuple(spec_rv(e.object.resource_version) for e in watch.wire if e.type == BOOKMARK)

    @staticmethod
    def _phase(built: BuiltInformer, history: tuple[Value, ...]) -> str:
        """The spec's ``reflector``; a watch that asks for, or delivers, anything but
        the writes after ``lastSyncRV`` maps to no spec phase (and so mismatches)."""
        park = built.park
        if park is None or (isinstance(park, WaitUntil) and park.reason == "backoff"):
            return "list"
        if not isinstance(park, WaitForEvent) or not isinstance(park.watch, PendingWatch):
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
        after = spec_rv(last_sync)
        due = [cast(Fn, e)["rv"] for e in history if cast(int, cast(Fn, e)["rv"]) > after]
        sent = [spec_rv(e.object.resource_version) for e in open_watch.wire if e.type != BOOKMARK]
        if sent != due:
            return f"watch delivering rvs {sent}, not the writes after {after}: {due}"
        for i, e in enumerate(open_watch.wire):
            if e.type == BOOKMARK:
                mark = spec_rv(e.object.resource_version)
                before = [spec_rv(x.object.resource_version) for x in list(open_watch.wire)[:i]]
                if before != [rv for rv in sent if rv <= mark]:
                    return f"bookmark at {mark} behind writes {before} in the watch stream"
        return "watch"


def _reflector_loop(
    lw: ScriptedListerWatcher,
    store: SwitchStore,
    core: ReflectorCore,
    clock: FakeClock,
    *,
    resync_period: float = 0.0,
    should_resync: Callable[[], bool] | None = None,
) -> Steps[None]:
    """client-go's reflector loop over the replay's lister-watcher and store, not yet
    started (the replay drives it one park point at a time)."""
    return ReflectorLoop(
        lw,
        store,
        core,
        name="replay",
        clock=clock,
        rng=random.Random(0),
        delay=lambda: 1.0,
        stop=NeverStop(),
        resync_period=resync_period,
        should_resync=should_resync,
        # The specs' reflector lists, then watches: they do not model watch-list
        # (client-go's default since v1.35), so the replay pins list + watch.
        use_watch_list=False,
    ).run()
