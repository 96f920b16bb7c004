"""The reference side of the ``informer`` component: refimpl's informer on a scripted seam.

Owns one :class:`~refimpl.sim.informer.SimInformer` (indexer, FIFO core per client-go
generation, processor, stepped reflector) whose lister-watcher is a *seam*: a list or
watch request waits there until the harness answers it with ``list_reply``,
``list_error``, ``watch_open``, ``watch_error``, ``watch_event`` or ``watch_end``
(docs/protocol.md, "The informer component"). Never blocks, sleeps, reads the wall clock
or starts a thread: after each request it steps the reflector, pops the FIFO and runs
the handlers until nothing more can happen (the protocol's quiescence). Ports nothing
itself; the parts it wires port ``tools/cache`` and refine ``spec/Informer.tla`` and
``spec/InformerAtomic.tla``.

A list that has no answer yet raises :class:`~refimpl.cache.reflector.ListPending`:
the reflector loop parks on ``WaitForList`` and the answer resumes it
(``SteppedReflector.wake``), so it continues exactly where client-go's blocked list call
would return. Backoffs are jittered in client-go, so
when the harness steers this reference by another implementation's answers, a real
backoff ends exactly when that implementation asks again, never by the clock.

Handlers run as soon as a notification is distributed (a schedule client-go's listener
goroutines may also take), so a handler that runs before the store write sees the old
cache: that is what makes INF-1 observable through the protocol.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from refimpl.apierrors import ApiError, Expired, InternalError, TooManyRequests
from refimpl.cache.delta_fifo import DeltaFIFOCore
from refimpl.cache.deltas import TransformFunc
from refimpl.cache.error_report import ErrorReporter
from refimpl.cache.handlers import ResourceEventHandler
from refimpl.cache.informer_core import FifoMode, FifoWriter, ProcessFunc
from refimpl.cache.process_deltas import process_deltas, process_deltas_in_batch
from refimpl.cache.real_fifo import RealFIFOCore
from refimpl.cache.reflector import (
    ListPending,
    ReflectorCore,
    SteppedReflector,
    WaitForEvent,
    WaitForList,
    WaitUntil,
    is_very_short_watch,
)
from refimpl.cache.store import Indexer
from refimpl.clock import FakeClock, to_ns
from refimpl.conformance.protocol import COMPONENTS, ProtocolError
from refimpl.conformance.reference.cache import object_from_json, to_json
from refimpl.eras import LATEST, Era
from refimpl.meta import (
    DeletedFinalStateUnknown,
    ListOptions,
    ListResult,
    Object,
    deletion_handling_meta_namespace_key_func,
)
from refimpl.sim.informer import SimInformer
from refimpl.watch import (
    ADDED,
    BOOKMARK,
    DELETED,
    ERROR,
    INITIAL_EVENTS_END_ANNOTATION,
    MODIFIED,
    EventType,
    WatchEvent,
    WatchTimeout,
)

__all__ = [
    "FIFO_MODES",
    "INFORMER_METHODS",
    "InformerComponent",
    "InformerParts",
    "ScriptedListerWatcher",
    "ScriptedWatch",
]

#: The client-go generations the reference can be created as (create option ``fifo``).
FIFO_MODES: tuple[str, ...] = tuple(str(m) for m in FifoMode)

#: The informer's methods of ``call`` (docs/protocol.md).
INFORMER_METHODS: tuple[str, ...] = COMPONENTS["informer"]

#: ``list_error`` / ``watch_error`` reasons and the API errors they stand for.
ERROR_REASONS: dict[str, Callable[[], ApiError]] = {
    "expired": lambda: Expired("too old resource version"),
    "internal": lambda: InternalError("injected: internal error"),
    "too_many_requests": lambda: TooManyRequests("injected: too many requests"),
}
WATCH_END_KINDS = ("clean", "expired", "internal", "reset")
EVENT_TYPES: dict[str, EventType] = {
    "ADDED": ADDED,
    "MODIFIED": MODIFIED,
    "DELETED": DELETED,
    "BOOKMARK": BOOKMARK,
}


class ScriptedWatch:
    """A watch whose request, events and end come from the harness.

    ``state`` is ``requested`` (the watch call returned, the server has not answered),
    ``open`` or ``ended``. Items queued for the reader: events, an exception (an error
    the stream reports) or ``None`` (the stream ended).
    """

    def __init__(self, resource_version: str, send_initial_events: bool = False) -> None:
        self.resource_version = resource_version
        #: A watch-list stream: the current objects as ADDED, then the end bookmark.
        self.send_initial_events = send_initial_events
        self.state = "requested"
        self.queued: deque[WatchEvent | BaseException | None] = deque()
        self.stopped = False

    def next_event(self, timeout: float | None = None) -> WatchEvent | None:
        if self.queued:
            item = self.queued.popleft()
            if isinstance(item, BaseException):
                raise item
            return item
        if self.stopped:
            return None
        raise WatchTimeout("nothing from the harness yet")

    def stop(self) -> None:
        self.stopped = True


class ScriptedListerWatcher:
    """The informer's lister-watcher: every request waits for the harness's answer."""

    def __init__(self) -> None:
        #: The answer to the next list call (None: the list waits for one).
        self.answer: ListResult | ApiError | None = None
        self.last_watch: ScriptedWatch | None = None

    def list(self, options: ListOptions) -> ListResult:
        answer, self.answer = self.answer, None
        if answer is None:
            raise ListPending(f"list at {options.resource_version!r}")
        if isinstance(answer, ApiError):
            raise answer
        return answer

    def watch(self, options: ListOptions) -> ScriptedWatch:
        self.last_watch = ScriptedWatch(options.resource_version, bool(options.send_initial_events))
        return self.last_watch


class RecordingHandler:
    """An event handler that records each call as the protocol reports it."""

    def __init__(self, name: str, raises: bool, component: InformerComponent) -> None:
        self.name = name
        self.raises = raises
        self._component = component

    def _record(self, kind: str, obj: object, **extra: Any) -> None:
        key = deletion_handling_meta_namespace_key_func(obj)
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        rv = obj.resource_version if isinstance(obj, Object) else ""
        cached, exists = self._component.informer.indexer.get_by_key(key)
        call: dict[str, Any] = {"handler": self.name, "kind": kind, "key": key, "rv": rv}
        call.update(extra)
        call["cache"] = cached.resource_version if exists and isinstance(cached, Object) else None
        self._component.calls.append(call)
        if self.raises:
            raise RuntimeError(f"handler {self.name} raises, as asked")

    def on_add(self, obj: object, is_in_initial_list: bool) -> None:
        self._record("add", obj, initial=is_in_initial_list)

    def on_update(self, old: object, new: object) -> None:
        old_rv = old.resource_version if isinstance(old, Object) else ""
        self._record("update", new, old_rv=old_rv)

    def on_delete(self, obj: object) -> None:
        self._record("delete", obj, tombstone=isinstance(obj, DeletedFinalStateUnknown))


@dataclass
class InformerParts:
    """What the broken adapters swap: how deltas are processed, the FIFO core, the
    reflector's bookkeeping and the informer's sync rule."""

    process: ProcessFunc = process_deltas
    process_batch: ProcessFunc = process_deltas_in_batch
    fifo_core: Callable[[FifoMode, Indexer[Any]], RealFIFOCore | DeltaFIFOCore] | None = None
    reflector_core: Callable[[], ReflectorCore] | None = None
    #: Replaces InformerCore's sync check: (informer) -> has_synced now.
    synced: Callable[[SimInformer], bool] | None = None
    #: The generations offered (``behaves_like``); a variant narrows it to where its
    #: bug lives.
    modes: tuple[str, ...] = FIFO_MODES


class _Quiet(ErrorReporter):
    """Reports nothing: the harness asked these handlers to raise (``raises``), and the
    protocol's observation already shows every call; thousands of examples must not
    fill the terminal with the same deliberate error."""

    def report(self, where: str, err: BaseException) -> None:
        return None


class _Informer(SimInformer):
    """SimInformer with the seam's reflector, inline handlers and swappable parts."""

    def __init__(self, parts: InformerParts, *, watch_list: bool, **kwargs: Any) -> None:
        self.parts = parts
        self.watch_list = watch_list
        super().__init__(**kwargs)
        self.errors = _Quiet(self.name)
        if parts.synced is not None:
            rule = parts.synced
            self._fifo_has_synced = lambda: rule(self)

    def _new_fifo_core(self, transform: TransformFunc | None) -> RealFIFOCore | DeltaFIFOCore:
        if self.parts.fifo_core is not None:
            return self.parts.fifo_core(self.fifo_mode, self.indexer)
        return super()._new_fifo_core(transform)

    def start(self) -> None:
        if self.started:
            raise RuntimeError(f"informer {self.name} already started")
        reflector = SteppedReflector(
            self.lw,
            FifoWriter(self.fifo, self),
            name=self.name,
            resync_period=self.resync_check_period,
            clock=self.clock,
            seed=self._seed,
            should_resync=self.processor.should_resync,
            use_watch_list=self.watch_list,
            watch_error_handler=lambda _name, _err: None,
            era=self.era,
        )
        if self.parts.reflector_core is not None:
            reflector.core = self.parts.reflector_core()
        self.reflector = reflector
        self.started = True
        self.processor.run()

    def pop(self) -> list[Any]:
        self.pops += 1
        return self.process_next(self.parts.process, self.parts.process_batch)

    # Deliver at once: the handler runs where the notification is distributed.
    def on_add(self, obj: object, is_in_initial_list: bool) -> None:
        super().on_add(obj, is_in_initial_list)
        self.run_handlers()

    def on_update(self, old: object, new: object) -> None:
        super().on_update(old, new)
        self.run_handlers()

    def on_delete(self, obj: object) -> None:
        super().on_delete(obj)
        self.run_handlers()

    def run_handlers(self) -> bool:
        ran = False
        for listener in self.listeners():
            while listener.dispatch_one():
                ran = True
        return ran


def _str_arg(args: dict[str, Any], name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str):
        raise ProtocolError("bad_request", f"'args.{name}' must be a string, got {value!r}")
    return value


def _reason(args: dict[str, Any], allowed: Sequence[str]) -> str:
    name = "how" if allowed is WATCH_END_KINDS else "reason"
    value = args.get(name)
    if value not in allowed:
        raise ProtocolError("bad_request", f"'args.{name}' must be one of {list(allowed)}")
    assert isinstance(value, str)
    return value


#: Informer methods that change neither what the reflector waits for nor its watch, so
#: the adapter's answer steers nothing unless the reference is in a backoff.
UNSTEERED = frozenset({"add_handler", "start", "pause", "resume", "state"})


#: The observation's ``waiting`` in a backoff.
SLEEPING = {"op": "sleeping"}


def _adapter_waiting(actual: dict[str, Any] | None) -> Any:
    """The ``waiting`` of an adapter's observation (anything else: None)."""
    result = (actual or {}).get("result")
    return result.get("waiting") if isinstance(result, dict) else None


class InformerComponent:
    """The ``informer`` component on refimpl (see the module docstring).

    ``call(..., actual)`` with the adapter's response steers the reference's backoffs;
    with ``actual=None`` (the reference adapter process) they end by the clock.
    """

    methods = INFORMER_METHODS

    def __init__(
        self,
        options: dict[str, Any],
        ns_clock: FakeClock,
        parts: InformerParts,
        *,
        steered: bool = False,
        era: Era = LATEST,
    ) -> None:
        resync = options.get("resync", 0)
        if isinstance(resync, bool) or not isinstance(resync, (int, float)) or resync < 0:
            raise ProtocolError("bad_request", f"'resync' must be seconds >= 0, got {resync!r}")
        # The release's own FIFO when none is named (client-go's feature gates' defaults).
        modes = era.fifo_modes()
        mode = options.get("fifo", modes[0])
        if mode not in modes:
            raise ProtocolError(
                "bad_request", f"'fifo' must be one of {list(modes)} (client-go {era.name})"
            )
        watch_list = options.get("watch_list", False)
        if not isinstance(watch_list, bool):
            raise ProtocolError("bad_request", "'watch_list' must be a boolean")
        self._ns_clock = ns_clock
        self._seen_ns = ns_clock.now_ns()
        self.clock = FakeClock(0.0)
        self.lw = ScriptedListerWatcher()
        self.informer = _Informer(
            parts,
            lw=self.lw,
            clock=self.clock,
            fifo_mode=mode,
            resync_period=float(resync),
            name="conform",
            watch_list=watch_list,
            era=era,
        )
        #: Following an adapter (in-process): backoffs never end by the clock.
        self.steered = steered
        #: The adapter's answer to the request being handled (steered only).
        self._actual: dict[str, Any] | None = None
        #: The reference clock when an answer last showed the adapter asleep.
        self._asleep_at: float | None = None
        #: A watch requested when a steered backoff ended, and the earliest time the
        #: adapter may have made that request (it woke somewhere inside an advance).
        self._uncertain: tuple[ScriptedWatch, float] | None = None
        #: ``call`` without the adapter's answer stops short of the answer's part if the
        #: call left the reference in a backoff (``held``; :meth:`finish` completes it).
        self.hold = False
        self.held = False
        self.calls: list[dict[str, Any]] = []
        self.paused = False
        #: The names of the event handlers added (``add_handler``).
        self.event_handlers: set[str] = set()
        #: Each protocol method's handler (INFORMER_METHODS lists the same methods).
        self.handlers: dict[str, Callable[[dict[str, Any]], None]] = {
            "add_handler": self.m_add_handler,
            "start": self.m_start,
            "list_reply": self.m_list_reply,
            "list_error": self.m_list_error,
            "watch_open": self.m_watch_open,
            "watch_error": self.m_watch_error,
            "watch_event": self.m_watch_event,
            "watch_end": self.m_watch_end,
            "pause": self.m_pause,
            "resume": self.m_resume,
            "state": self.m_state,
        }

    # -- the protocol -------------------------------------------------------------------

    def call(self, method: str, args: dict[str, Any], actual: dict[str, Any] | None) -> Any:
        if method not in self.methods:
            raise ProtocolError("unsupported", f"the informer has no method {method!r}")
        if actual is not None and "result" in actual:
            self.follow(actual)  # the adapter took this request: it was not asleep
        self._actual = actual
        try:
            self.handlers[method](args)
            self.settle()
        finally:
            self._actual = None
        if self.hold and actual is None and self.waiting() == SLEEPING:
            self.held = True  # whether the backoff has ended is the answer's to say
            return None
        return self.finish(actual)

    def finish(self, actual: dict[str, Any] | None) -> dict[str, Any]:
        """The end of a call: steered by the adapter's answer (if any), the observation.
        Completes a call that was ``held``, once the adapter's answer is known."""
        self.held = False
        if actual is not None:
            self.follow(actual)
        return self.observation()

    def after_advance(self) -> None:
        """Let the advanced time pass: every resync that falls due inside the step fires
        at its own deadline, in order, as with a real clock (client-go's reflector
        re-arms its resync timer from the time it fired, ``Reflector.startResync``, so
        31 s at a 10 s period resync three times, not once at the end), also during a
        re-watch backoff. Backoffs end at the end of the step (see :meth:`_next_timer`)."""
        now = self._ns_clock.now_ns()
        target = self.clock.now_ns() + (now - self._seen_ns)
        self._seen_ns = now
        reflector = self.informer.reflector
        clock_wakes = reflector is not None and reflector.clock_wakes
        try:
            if reflector is not None:
                reflector.clock_wakes = False  # a backoff ends only at the end of the step
            for _ in range(100_000):
                deadline = self._next_timer()
                if deadline is None:
                    break
                at = to_ns(deadline)
                if at / 1_000_000_000 < deadline:
                    at += 1  # the first nanosecond that reaches it (FakeClock.set_time)
                if at >= target:
                    break  # due at the end (or later): the final step handles it
                self.clock.set_time_ns(max(at, self.clock.now_ns()))
                self.settle()
                if self._next_timer() == deadline:
                    break  # nothing moved at that deadline: leave the rest to the end
        finally:
            if reflector is not None:
                reflector.clock_wakes = clock_wakes
        self.clock.set_time_ns(target)
        self.settle()

    def _next_timer(self) -> float | None:
        """The clock time of the reference's next resync while it watches -- or waits out
        a re-watch backoff, where client-go's resync timer keeps running. The end of a
        backoff is left out on purpose: steered by an adapter, the reference ends it when
        the adapter asks again, which the harness sees only after the advance; unsteered
        (the reference adapter process) it must end at the same point, or the two would
        disagree about when the next request was made (and so about a watch that ends
        within 1 s of it, client-go's VeryShortWatchError). Either way a resync is the
        same store call whether it falls in the backoff or in the wait for the next
        watch, so the resyncs inside the step do not depend on where the backoff ended."""
        reflector = self.informer.reflector
        if reflector is None or self.informer.stopped:
            return None
        wait = reflector.waiting
        return wait.resync_at if isinstance(wait, WaitForEvent | WaitUntil) else None

    def describe(self) -> str:
        fifo = self.informer.fifo_state() if self.informer.started else []
        return f"waiting={self.waiting()} fifo={fifo} paused={self.paused}"

    def answers_alone(self, method: str) -> bool:
        """The steered reference's answer to ``method`` does not depend on the adapter's:
        it neither answers the informer's requests nor ends a watch (:data:`UNSTEERED`),
        and the reference is not in a backoff, the one state the adapter's answer can
        end (:meth:`follow`). An adapter whose answer differs fails at that step
        anyway."""
        return method in UNSTEERED and self.waiting() != SLEEPING

    def predicts(self, method: str) -> bool:
        """The steered reference can carry out ``method`` before the adapter's answer is
        read: it is not in a backoff (which the answer may end, :meth:`follow`) and no
        watch whose end the answer settles is open (:meth:`_very_short`). Unlike
        :meth:`answers_alone`, the call may leave it in a backoff: with ``hold`` set it
        is then ``held`` until :meth:`finish` gets the answer."""
        if self.waiting() == SLEEPING:
            return False
        uncertain = self._uncertain
        return method in UNSTEERED or uncertain is None or uncertain[0] is not self.lw.last_watch

    def follow(self, actual: dict[str, Any]) -> None:
        """Steer: if the adapter is not (or no longer) in a backoff, the reference's
        backoff ends now too."""
        waiting = _adapter_waiting(actual)
        if isinstance(waiting, dict) and waiting.get("op") in ("sleeping", "idle"):
            if waiting.get("op") == "sleeping":
                self._asleep_at = self.clock.now()
            return
        reflector = self.informer.reflector
        if reflector is not None and self.waiting() == SLEEPING:
            before = self.lw.last_watch
            reflector.wake()
            self.settle()
            asleep_at, watch = self._asleep_at, self.lw.last_watch
            if watch is not before and watch is not None and asleep_at is not None:
                self._uncertain = (watch, asleep_at)

    def _very_short(self, elapsed: float) -> bool:
        """client-go's very-short-watch rule, except where the steered reference cannot
        apply it: the watch was requested when a backoff ended somewhere inside an
        advance, so the adapter asked at an unknown time between ``earliest`` and the
        reference's request. If the rule gives different answers at the two ends, the
        protocol leaves the outcome open, and the reference takes the adapter's: a
        re-watch at once (not very short) or anything else (the pass ended)."""
        short = is_very_short_watch(elapsed)
        uncertain = self._uncertain
        if uncertain is None or uncertain[0] is not self.lw.last_watch:
            return short
        longest = self.clock.now() - uncertain[1]
        if short == is_very_short_watch(longest):
            return short
        waiting = _adapter_waiting(self._actual)
        if not isinstance(waiting, dict):
            return short
        return waiting.get("op") != "watch"

    # -- methods ------------------------------------------------------------------------

    def m_add_handler(self, args: dict[str, Any]) -> None:
        name = _str_arg(args, "name")
        if name in self.event_handlers:
            raise ProtocolError("bad_request", f"handler {name!r} already added")
        raises = args.get("raises", False)
        resync = args.get("resync")
        if not isinstance(raises, bool):
            raise ProtocolError("bad_request", "'args.raises' must be a boolean")
        if resync is not None and (
            isinstance(resync, bool) or not isinstance(resync, (int, float)) or resync < 0
        ):
            raise ProtocolError("bad_request", "'args.resync' must be seconds >= 0 or null")
        self.event_handlers.add(name)
        handler: ResourceEventHandler = RecordingHandler(name, raises, self)
        self.informer.add_event_handler(
            handler, None if resync is None else float(resync), name=name
        )

    def m_start(self, args: dict[str, Any]) -> None:
        if self.informer.started:
            raise ProtocolError("bad_request", "the informer was already started")
        self.informer.start()
        assert self.informer.reflector is not None
        self.informer.reflector.clock_wakes = not self.steered
        if self.steered:
            self.informer.reflector.very_short_watch = self._very_short

    def _expect(self, op: str) -> None:
        got = self.waiting().get("op")
        if got != op:
            raise ProtocolError("bad_request", f"the informer is not waiting for {op!r} ({got})")

    def _answer_list(self, answer: ListResult | ApiError) -> None:
        self._expect("list")
        self.lw.answer = answer
        assert self.informer.reflector is not None
        self.informer.reflector.wake()

    def m_list_reply(self, args: dict[str, Any]) -> None:
        objects = args.get("objects")
        if not isinstance(objects, list):
            raise ProtocolError("bad_request", "'args.objects' must be a list of objects")
        items = tuple(object_from_json(o) for o in objects)
        self._answer_list(ListResult(items, _str_arg(args, "rv")))

    def m_list_error(self, args: dict[str, Any]) -> None:
        self._answer_list(ERROR_REASONS[_reason(args, tuple(ERROR_REASONS))]())

    def _watch(self, state: str) -> ScriptedWatch:
        self._expect("watch" if state == "requested" else "watching")
        watch = self.lw.last_watch
        assert watch is not None
        return watch

    def m_watch_open(self, args: dict[str, Any]) -> None:
        self._watch("requested").state = "open"

    def m_watch_error(self, args: dict[str, Any]) -> None:
        error = ERROR_REASONS[_reason(args, tuple(ERROR_REASONS))]()
        watch = self._watch("requested")
        watch.state = "ended"
        watch.queued.append(error)

    def m_watch_event(self, args: dict[str, Any]) -> None:
        kind = args.get("type")
        if kind not in EVENT_TYPES:
            raise ProtocolError("bad_request", f"'args.type' must be one of {list(EVENT_TYPES)}")
        raw = args.get("object")
        if kind == "BOOKMARK" and isinstance(raw, dict) and not raw.get("name"):
            raw = {**raw, "name": "bookmark"}  # a bookmark's object carries only its rv
        end = args.get("initial_events_end", False)
        if not isinstance(end, bool) or (end and kind != "BOOKMARK"):
            raise ProtocolError("bad_request", "'initial_events_end' is a boolean, on a BOOKMARK")
        annotations = {INITIAL_EVENTS_END_ANNOTATION: "true"} if end else {}
        event = WatchEvent(EVENT_TYPES[kind], object_from_json(raw), annotations=annotations)
        self._watch("open").queued.append(event)

    def m_watch_end(self, args: dict[str, Any]) -> None:
        how = _reason(args, WATCH_END_KINDS)
        watch = self._watch("open")
        watch.state = "ended"
        if how in ("expired", "internal"):
            error = ERROR_REASONS[how]()
            watch.queued.append(WatchEvent(ERROR, Object(name=""), error=error))
        # "clean" and "reset" both end the stream: client-go's StreamWatcher treats a
        # connection reset while decoding as the end of the stream (net.IsProbableEOF).
        watch.queued.append(None)

    def m_pause(self, args: dict[str, Any]) -> None:
        self.paused = True

    def m_resume(self, args: dict[str, Any]) -> None:
        self.paused = False

    def m_state(self, args: dict[str, Any]) -> None:
        return None

    # -- quiescence and the observation ---------------------------------------------------

    def settle(self, limit: int = 10_000) -> None:
        """Step the reflector, pop and run handlers until nothing more happens."""
        informer = self.informer
        for _ in range(limit):
            progressed = False
            if informer.reflector is not None and not informer.stopped:
                progressed = informer.reflector.step()
            if not self.paused:
                while informer.started and informer.can_pop():
                    informer.pop()
                    progressed = True
            progressed = informer.run_handlers() or progressed
            if not progressed:
                return
        raise RuntimeError("the reference informer never became quiescent")

    def waiting(self) -> dict[str, Any]:
        reflector = self.informer.reflector
        if reflector is None:
            return {"op": "idle"}
        wait = reflector.waiting
        if isinstance(wait, WaitForList):
            return {"op": "list", "rv": wait.options.resource_version}
        if isinstance(wait, WaitForEvent) and isinstance(wait.watch, ScriptedWatch):
            op = "watch" if wait.watch.state == "requested" else "watching"
            found: dict[str, Any] = {"op": op, "rv": wait.watch.resource_version}
            if wait.watch.send_initial_events:
                found["send_initial_events"] = True
            return found
        assert wait is None or isinstance(wait, WaitUntil | WaitForEvent)
        return {"op": "sleeping"}

    def observation(self) -> dict[str, Any]:
        cache = sorted(
            (o for o in self.informer.indexer.list() if isinstance(o, Object)),
            key=deletion_handling_meta_namespace_key_func,
        )
        calls, self.calls = self.calls, []
        return {
            "waiting": self.waiting(),
            "has_synced": self.informer.has_synced(),
            "cache": [to_json(o) for o in cache],
            "calls": calls,
        }
