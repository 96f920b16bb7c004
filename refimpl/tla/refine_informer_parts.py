"""The informer replay's own pieces (refimpl/tla/refine_informer.py is the mapping).

Owns the conversions between the spec's values and the code's -- rvs (``code = spec +
1``; 0, "no object", stays 0), notifications, handler calls -- and the stand-ins around
the code under replay: the recording handler at the end of the listener
(:class:`ViewHandler`: spec/Informer.tla's ``view`` and ``lastRV``), the recorder that
holds process_deltas' handler calls between the store write and ``Distribute``
(:class:`CallRecorder`), a watch request the server has not answered yet
(:class:`PendingWatch`), a lister-watcher that lists in a chosen order or from a script
(:class:`ScriptedListerWatcher`), :class:`BuiltInformer`, every part of one rebuilt
informer, and :class:`HiddenState`, what the replay carries from one rebuilt informer
to the next along the path it executes. The code is client-go's ``tools/cache``
reflector, DeltaFIFO/RealFIFO and shared informer as refimpl ports them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import cast

import attrs

from refimpl.apiserver import ApiServerCore, CoreWatch
from refimpl.cache.deltas import Delta
from refimpl.cache.informer_core import InformerCore
from refimpl.cache.listwatch import Watch
from refimpl.cache.processor import (
    AddNotification,
    DeleteNotification,
    Notification,
    ProcessorListener,
    UpdateNotification,
)
from refimpl.cache.reflector import (
    Answer,
    ReflectorCore,
    ReflectorStore,
    Steps,
    WaitForEvent,
    WaitUntil,
)
from refimpl.clock import FakeClock
from refimpl.eras import Era
from refimpl.meta import DeletedFinalStateUnknown, ListOptions, ListResult, Object
from refimpl.tla.refine_fifo import delta_from_spec, delta_to_spec
from refimpl.tla.values import Fn, Value
from refimpl.watch import WatchEvent

__all__ = [
    "BuiltInformer",
    "CallRecorder",
    "HandlerCall",
    "HiddenState",
    "NeverStop",
    "Park",
    "PendingWatch",
    "ScriptedListerWatcher",
    "SpecValues",
    "SwitchStore",
    "ViewHandler",
    "call_of",
    "shift_rvs",
    "spec_key",
    "spec_note",
    "spec_note_of",
    "spec_object_rv",
    "spec_rv",
    "spec_rv_map",
    "to_notification",
]

#: The loop's park points as the driver sees them (None: not started yet).
Park = WaitForEvent | WaitUntil | None


@attrs.frozen
class HandlerCall:
    """A handler call process_deltas made, held until the replay distributes it."""

    kind: str  # "add" | "update" | "delete"
    obj: object
    old: object | None = None
    initial: bool = False

    def note(self) -> Fn:
        return spec_note(self.kind, self.obj)


class CallRecorder:
    """The handler process_deltas calls during a replayed StoreWrite / ApplyEntry:
    records each call (checking the indexer at that moment) instead of distributing."""

    def __init__(self, calls: list[HandlerCall], check: Callable[[str, object], None]) -> None:
        self.calls = calls
        self.check = check

    def on_add(self, obj: object, is_in_initial_list: bool) -> None:
        self.check("add", obj)
        self.calls.append(HandlerCall("add", obj, None, is_in_initial_list))

    def on_update(self, old: object, new: object) -> None:
        self.check("update", new)
        self.calls.append(HandlerCall("update", new, old))

    def on_delete(self, obj: object) -> None:
        self.check("delete", obj)
        self.calls.append(HandlerCall("delete", obj))


def call_of(note: Value) -> HandlerCall:
    """A spec note (rvs in code numbering) as a recorded handler call. An update's old
    object is not in the spec: a placeholder without a resourceVersion stands in (so
    the call is not mistaken for a resync)."""
    n = to_notification(note)
    if isinstance(n, AddNotification):
        return HandlerCall("add", n.new_obj, None, n.is_in_initial_list)
    if isinstance(n, UpdateNotification):
        return HandlerCall("update", n.new_obj, Object(name=spec_key(n.new_obj)))
    return HandlerCall("delete", n.old_obj)


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


def spec_rv_map(value: Value, by: int) -> dict[str, int]:
    """A spec ``[Keys -> rv]`` as key -> code rv (0 stays 0)."""
    if not isinstance(value, Fn):
        raise TypeError(f"expected a function from keys to rvs, got {value!r}")
    return {str(k): (int(cast(int, v)) + by if v else 0) for k, v in value.items()}


def spec_rv(resource_version: str) -> int:
    return int(resource_version) - 1 if resource_version else 0


def spec_object_rv(obj: object) -> int:
    """The spec rv of an object or tombstone (0: a tombstone without an object)."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return spec_rv(obj.obj.resource_version) if obj.obj is not None else 0
    if isinstance(obj, Object):
        return spec_rv(obj.resource_version)
    raise TypeError(f"no spec rv for {obj!r}")


def spec_key(obj: object) -> str:
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    if isinstance(obj, Object):
        return obj.name
    raise TypeError(f"no spec key for {obj!r}")


def spec_note(kind: str, obj: object) -> Fn:
    return Fn({"type": kind, "key": spec_key(obj), "rv": spec_object_rv(obj)})


def spec_note_of(n: Notification) -> Fn:
    if isinstance(n, AddNotification):
        return spec_note("add", n.new_obj)
    if isinstance(n, UpdateNotification):
        return spec_note("update", n.new_obj)
    return spec_note("delete", n.old_obj)


def to_notification(note: Value) -> Notification:
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


class SpecValues:
    """The code's form of the spec values a rebuild loads (rvs in code numbering), each
    made once: a graph's tens of thousands of states hold a few hundred distinct
    deltas, notifications and objects, and each state is rebuilt several times. What
    is made is immutable (Delta, Object, the notifications and HandlerCall are frozen),
    so the rebuilds share it; the maps they change are handed out as copies."""

    def __init__(self) -> None:
        self._made: dict[tuple[str, Value], object] = {}
        self._spec: dict[Delta, Value] = {}

    def _once(self, kind: str, value: Value, make: Callable[[Value], object]) -> object:
        found = self._made.get((kind, value))
        if found is None:
            found = self._made[(kind, value)] = make(value)
        return found

    def delta(self, value: Value) -> Delta:
        """A spec delta (spec rvs) as the code's."""
        return cast(Delta, self._once("delta", value, lambda v: delta_from_spec(shift_rvs(v, 1))))

    def spec_delta(self, delta: Delta) -> Value:
        """The inverse of :meth:`delta`: a code delta as the spec's (spec rvs)."""
        found = self._spec.get(delta)
        if found is None:
            found = self._spec[delta] = shift_rvs(delta_to_spec(delta), -1)
        return found

    def notification(self, value: Value) -> Notification:
        """A spec notification (spec rvs) as a listener entry."""
        made = self._once("note", value, lambda v: to_notification(shift_rvs(v, 1)))
        return cast(Notification, made)

    def call(self, value: Value) -> HandlerCall:
        """A spec note (spec rvs) as a recorded handler call (:func:`call_of`)."""
        return cast(HandlerCall, self._once("call", value, lambda v: call_of(shift_rvs(v, 1))))

    def stored(self, key: str, rv: int) -> Object:
        """The indexer's object for ``key`` at code rv ``rv``."""
        made = self._once("object", (key, rv), lambda _: Object(name=key, resource_version=str(rv)))
        return cast(Object, made)

    def rv_map(self, value: Value) -> dict[str, int]:
        """A fresh copy of :func:`spec_rv_map` ``(value, 0)`` (a handler changes it)."""
        return dict(cast(dict[str, int], self._once("rvs", value, lambda v: spec_rv_map(v, 0))))


class ViewHandler:
    """The handler at the end of the listener: its level view and last rv per key
    (spec numbering)."""

    def __init__(self, view: dict[str, int], last_rv: dict[str, int]) -> None:
        self.view = view
        self.last_rv = last_rv

    def on_add(self, obj: object, is_in_initial_list: bool) -> None:
        self.view[spec_key(obj)] = self.last_rv[spec_key(obj)] = spec_object_rv(obj)

    def on_update(self, old: object, new: object) -> None:
        self.on_add(new, False)

    def on_delete(self, obj: object) -> None:
        self.view[spec_key(obj)] = 0
        self.last_rv[spec_key(obj)] = spec_object_rv(obj)


class PendingWatch:
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
class ScriptedListerWatcher:
    """Lists the server with its items in ``order`` (by key; the spec lists in any
    order) and answers watches with a :class:`PendingWatch`. While ``script`` is set
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
        return PendingWatch(self.server, options)


class SwitchStore:
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


class NeverStop:
    def is_set(self) -> bool:
        return False


@attrs.define
class BuiltInformer:
    """One rebuilt informer: every part the mapping reads back."""

    server: ApiServerCore
    spec_history: tuple[Value, ...]
    lw: ScriptedListerWatcher
    core: ReflectorCore
    loop: Steps[None]
    park: Park
    clock: FakeClock
    informer: InformerCore
    listener: ProcessorListener
    handler: ViewHandler
    applied: set[Value]
    taken: list[tuple[Delta, bool]]
    check: Callable[[str, object], None]
    popped: list[Delta] = attrs.Factory(list)
    popped_initial: bool = False
    outbox: list[HandlerCall] = attrs.Factory(list)
    written: bool = False
    #: InformerFaults.tla's counters and the open watch's "an event was delivered"
    #: (the loop's own count is local to its watch; the walk sets it, see _walk_loop).
    event_seen: bool = False
    faults: int = 0
    bookmarks: int = 0
    #: InformerResync.tla: the second listener (None until added) and the resync
    #: checks so far (the model's bound).
    listener2: ProcessorListener | None = None
    resyncs: int = 0

    def record(self) -> CallRecorder:
        return CallRecorder(self.outbox, self.check)

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


#: A carried core's values of these types are shared, not copied: they are immutable.
_IMMUTABLE = frozenset({str, int, float, bool, type(None), Era})
#: A core class -> the names of its slots, its bases' included.
_SLOTS: dict[type, tuple[str, ...]] = {}
_UNSET = object()


def _field_names(cls: type) -> tuple[str, ...]:
    names = _SLOTS.get(cls)
    if names is None:
        names = _SLOTS[cls] = tuple(s for c in cls.__mro__ for s in c.__dict__.get("__slots__", ()))
    return names


@attrs.frozen
class HiddenState:
    """The code state the informer replay carries along the path it executes
    (``Move.hidden``, :class:`~refimpl.tla.replay.Reached`): every field of the
    reflector core (its ``__slots__`` and, in a subclass without slots, its
    ``__dict__``). The last list's rv, the internal-error retry window, anything a
    (broken) core keeps besides ``lastSyncRV``: what the spec does not carry, and a
    rebuild would otherwise make up (refimpl/tla/refine_informer_state.py puts it back
    after walking the loop). It keeps the move's own core, which nothing touches after
    the move (each move is made on an informer built for it alone), and copies its
    fields into each rebuild, mutable values one level down."""

    core: ReflectorCore

    @classmethod
    def of(cls, built: BuiltInformer) -> HiddenState:
        return cls(built.core)

    def restore(self, core: ReflectorCore) -> None:
        source = self.core
        fields = [(n, getattr(source, n, _UNSET)) for n in _field_names(type(source))]
        fields += getattr(source, "__dict__", {}).items()
        for name, value in fields:
            if value is _UNSET:
                continue
            # Each rebuilt core gets its own copy of a mutable field (the retry window).
            setattr(core, name, value if type(value) in _IMMUTABLE else copy.copy(value))
