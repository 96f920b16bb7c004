"""An honest in-memory API server: the environment the reflector is tested against.

:class:`ApiServerCore` owns the objects, the global resourceVersion counter, the event log
with its compaction point, every open watch's buffers and the injected faults; it never
blocks, sleeps, reads a clock or starts a thread, so a simulator can step it.
:class:`ApiServer` is its thread-safe shell (one lock, one condition; watches block in
``next_event``). Models the list/watch contract of kube-apiserver (``k8s.io/apiserver``
storage and watch cache) as far as ``tools/cache`` observes it; it is the environment of
``spec/Informer.tla`` (variables ``server``, ``log``, ``compacted``), not a refined module.

Rules it never breaks: a watch delivers the server's history filtered by ``rv > start``,
in order, as a prefix (faults only cut the tail); it never invents an event; every write
gets a fresh, larger resourceVersion (decimal strings; the empty server is at "1", the
first write gets "2", so "0" keeps its special "any" meaning).

The errors it answers with are those of ``refimpl/apierrors.py``, its watch events
those of ``refimpl/watch.py``, its list answers ``refimpl.meta.ListResult``: neutral
modules the informer stack reads too, so ``refimpl/cache/`` never imports this file.
:class:`ApiServerListerWatcher` is the lister-watcher a reflector uses to reach it.
"""

from __future__ import annotations

import builtins
import copy
import re
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, TypedDict, TypeVar, cast

import attrs

from refimpl import _typing
from refimpl.apierrors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Expired,
    Invalid,
    ListError,
    NotFound,
    TooLargeResourceVersion,
    TooManyRequests,
)
from refimpl.clock import Clock, RealClock
from refimpl.meta import (
    ListOptions,
    ListResult,
    Object,
    meta_namespace_key_func,
    split_meta_namespace_key,
)
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

_T = TypeVar("_T")
#: The objects an :class:`ApiServer` serves: ``ApiServer[Pod]`` creates, updates, gets and
#: deletes ``Pod`` (``Object[PodSpec]``); plain ``ApiServer`` is ``ApiServer[Object]``.
ObjT = _typing.TypeVar("ObjT", bound=Object, default=Object)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "WATCH_LIST_SUPPORT",
    "ApiServer",
    "ApiServerCore",
    "ApiServerListerWatcher",
    "CoreWatch",
    "EndOptions",
    "HistoryEntry",
    "RequestCounters",
    "RequestRecord",
    "ServerOptions",
    "ServerWatch",
    "WatchListSupport",
    "WatchOptions",
]

#: How a server answers ``sendInitialEvents=true`` (see :class:`ApiServerCore`).
WatchListSupport = Literal["watch-cache", "storage", "unsupported"]
WATCH_LIST_SUPPORT: Final = ("watch-cache", "storage", "unsupported")


@attrs.frozen
class HistoryEntry:
    """One write in the event log. ``prev`` is the state before it (``None`` for a
    create); it lets the server rebuild the state at any retained resourceVersion."""

    rv: int
    type: EventType
    object: Object
    prev: Object | None


@attrs.define
class RequestCounters:
    """How many requests of each verb the server answered (failed ones included).

    ``watch_lists`` counts watch requests with ``sendInitialEvents=true`` (client-go's
    watch-list: the initial state streamed, then the watch); ``watches`` counts every
    other watch request. Neither counts the other.
    """

    lists: int = 0
    watches: int = 0
    watch_lists: int = 0
    gets: int = 0
    creates: int = 0
    updates: int = 0
    deletes: int = 0

    def copy(self) -> RequestCounters:
        return attrs.evolve(self)


@attrs.frozen
class RequestRecord:
    """A list or watch request as the server saw it, and how it was answered."""

    verb: Literal["list", "watch"]
    resource_version: str
    limit: int = 0
    continue_token: str = ""
    send_initial_events: bool | None = None
    allow_bookmarks: bool = False
    error: str | None = None  # the ApiError class name, when it failed


# -- watches --------------------------------------------------------------------------


class CoreWatch:
    """A watch as the core sees it: two FIFO buffers and two flags.

    ``pending`` holds events the server produced but has not handed over (only while the
    watch is ``held``: slow delivery); ``wire`` holds events handed over but not yet
    read. Invariant: ``not held`` implies ``pending`` is empty. Once ``ended`` the server
    appends nothing more; the reader sees the end after draining what was delivered.

    Reading (``next_event``) never waits: with nothing to read *now* it raises
    :class:`WatchTimeout` whatever ``timeout`` says. The thread-safe
    :class:`ServerWatch` is the blocking view.
    """

    __slots__ = (
        "allow_bookmarks",
        "ended",
        "held",
        "id",
        "pending",
        "resource_version",
        "send_initial_events",
        "start_rv",
        "stopped",
        "wire",
    )

    def __init__(
        self,
        watch_id: int,
        resource_version: str,
        start_rv: int,
        *,
        allow_bookmarks: bool,
        send_initial_events: bool | None,
        held: bool,
    ) -> None:
        self.id = watch_id
        self.resource_version = resource_version  # as requested
        self.start_rv = start_rv  # log events with rv > start_rv are sent
        self.allow_bookmarks = allow_bookmarks
        self.send_initial_events = send_initial_events
        self.held = held
        self.pending: deque[WatchEvent] = deque()
        self.wire: deque[WatchEvent] = deque()
        self.ended = False
        self.stopped = False

    @property
    def active(self) -> bool:
        """The server may still append events (not ended, not stopped)."""
        return not (self.ended or self.stopped)

    def _push(self, event: WatchEvent) -> None:
        if not self.active:
            return
        (self.pending if self.held else self.wire).append(event)

    def _release(self, n: int | None) -> int:
        moved = 0
        while self.pending and (n is None or moved < n):
            self.wire.append(self.pending.popleft())
            moved += 1
        return moved

    def has_event(self) -> bool:
        """``next_event`` would return (an event or the end) without waiting."""
        return self.stopped or bool(self.wire) or (self.ended and not self.pending)

    def next_event(self, timeout: float | None = 0) -> WatchEvent | None:
        """The next delivered event; ``None`` once the stream has ended or was stopped."""
        if self.stopped:
            return None
        if self.wire:
            return self.wire.popleft()
        if self.ended and not self.pending:
            return None
        raise WatchTimeout(f"watch {self.id}: nothing delivered yet (a core watch never waits)")

    def stop(self) -> None:
        """Client side: stop watching; buffered events are discarded. Idempotent."""
        self.stopped = True
        self.pending.clear()
        self.wire.clear()

    def __iter__(self) -> Iterator[WatchEvent]:
        """The events readable now (never waits)."""
        while self.has_event():
            event = self.next_event()
            if event is None:
                return
            yield event

    def __repr__(self) -> str:
        state = "stopped" if self.stopped else "ended" if self.ended else "open"
        return (
            f"CoreWatch(id={self.id}, from={self.resource_version!r}, {state}, "
            f"pending={len(self.pending)}, wire={len(self.wire)})"
        )


# -- the core -------------------------------------------------------------------------

_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_NAMESPACE_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _validate_identity(obj: Object) -> None:
    if not obj.name:
        raise Invalid("metadata.name: Required value: name is required")
    if len(obj.name) > 253 or not _NAME_RE.match(obj.name):
        raise Invalid(
            f"metadata.name: Invalid value: {obj.name!r}: must be a lowercase DNS subdomain "
            "(a-z, 0-9, '-', '.'; start and end alphanumeric; at most 253 characters)"
        )
    if obj.namespace and (len(obj.namespace) > 63 or not _NAMESPACE_RE.match(obj.namespace)):
        raise Invalid(
            f"metadata.namespace: Invalid value: {obj.namespace!r}: must be a DNS label "
            "(a-z, 0-9, '-'; at most 63 characters)"
        )


def _parse_rv(resource_version: str, what: str) -> int:
    if not isinstance(resource_version, str):
        raise TypeError(f"{what}: resource_version must be a str, got {resource_version!r}")
    if not resource_version.isdigit() or not resource_version.isascii():
        raise BadRequest(f"{what}: invalid resource version {resource_version!r}")
    return int(resource_version)


class ApiServerCore:
    """The server's state machine. Every method returns at once.

    State: ``objects`` (key -> current object), ``rv`` (the newest resourceVersion),
    ``log`` (writes with ``compacted_rv < rv``; invariant: every write newer than the
    compaction point is in the log, in rv order), the open watches and the fault queues.
    A request from a resourceVersion ``N < compacted_rv`` needs a dropped write and is
    answered 410 Expired.

    ``deliver_immediately=False`` holds every new watch's events until :meth:`release`
    (slow delivery as a schedulable step). ``too_old_watch`` chooses how a watch from a
    compacted resourceVersion fails: ``"error_event"`` (what kube-apiserver does: the
    watch opens and its only event is an ERROR 410) or ``"raise"`` (the request fails).

    ``watch_list`` is how the server answers a watch with ``sendInitialEvents=true``:

    * ``"watch-cache"`` (kube-apiserver with its watch cache, the default): the newest
      state satisfies "not older than" any rv up to the newest, so no such stream is
      ever too old; an rv beyond the newest is :class:`TooLargeResourceVersion`.
    * ``"storage"`` (the watch cache disabled for the resource; served from etcd): the
      initial events are the state *at* the requested rv (the newest for ``""``), so an
      rv below the compaction point is 410 Expired (per ``too_old_watch``).
    * ``"unsupported"`` (a server without the WatchList feature): the request is
      refused as :class:`Invalid` (422), which makes client-go fall back to a list.
    """

    def __init__(
        self,
        *,
        compaction_window: int | None = None,
        deliver_immediately: bool = True,
        too_old_watch: Literal["error_event", "raise"] = "error_event",
        watch_list: WatchListSupport = "watch-cache",
        uid_prefix: str = "uid-",
    ) -> None:
        if compaction_window is not None and compaction_window < 0:
            raise ValueError(f"compaction_window must be >= 0 or None, got {compaction_window}")
        if too_old_watch not in ("error_event", "raise"):
            raise ValueError(
                f"too_old_watch must be 'error_event' or 'raise', not {too_old_watch!r}"
            )
        self.objects: dict[str, Object] = {}
        self.rv = 1
        self.log: deque[HistoryEntry] = deque()
        self.compacted_rv = 1  # writes with rv <= compacted_rv are gone from the log
        self.compaction_window = compaction_window
        self.too_old_watch = too_old_watch
        if watch_list not in WATCH_LIST_SUPPORT:
            raise ValueError(
                f"watch_list must be one of {list(WATCH_LIST_SUPPORT)}, not {watch_list!r}"
            )
        self.watch_list: WatchListSupport = watch_list
        self.hold_new_watches = not deliver_immediately
        self.counters = RequestCounters()
        self.request_log: list[RequestRecord] = []
        self._watches: list[CoreWatch] = []
        self._next_watch_id = 1
        self._uid_prefix = uid_prefix
        self._next_uid = 1
        self._list_faults: deque[BaseException] = deque()
        self._watch_faults: deque[BaseException] = deque()

    # -- introspection ----------------------------------------------------------------

    @property
    def resource_version(self) -> str:
        return str(self.rv)

    def watches(self) -> list[CoreWatch]:
        """The watches the server still feeds (neither ended nor stopped)."""
        return [w for w in self._watches if w.active]

    def state_at(self, rv: int) -> dict[str, Object]:
        """The objects as they were at ``rv`` (``compacted_rv <= rv <= self.rv``)."""
        if rv < self.compacted_rv:
            raise Expired(f"too old resource version: {rv} ({self.compacted_rv})")
        if rv > self.rv:
            raise TooLargeResourceVersion(f"Too large resource version: {rv}, current: {self.rv}")
        state = dict(self.objects)
        for entry in reversed(self.log):  # undo the writes newer than rv
            if entry.rv <= rv:
                break
            key = meta_namespace_key_func(entry.object)
            if entry.prev is None:
                del state[key]
            else:
                state[key] = entry.prev
        return state

    # -- writes -----------------------------------------------------------------------

    def _write(self, type_: EventType, obj: Object, prev: Object | None) -> Object:
        self.rv += 1
        stamped = obj.evolve(resource_version=str(self.rv))
        key = meta_namespace_key_func(stamped)
        if type_ == DELETED:
            del self.objects[key]
        else:
            self.objects[key] = stamped
        self.log.append(HistoryEntry(self.rv, type_, stamped, prev))
        event = WatchEvent(type_, stamped)
        # Forget watches that can deliver nothing more (an ended watch may still hold
        # events for release).
        self._watches = [w for w in self._watches if w.active or (w.pending and not w.stopped)]
        for w in self._watches:
            if w.active and self.rv > w.start_rv:
                w._push(event)
        window = self.compaction_window
        if window is not None:
            while len(self.log) > window:
                self.compacted_rv = self.log.popleft().rv
        return stamped

    def create(self, obj: Object) -> Object:
        """Store a new object; the server assigns ``uid`` and ``resource_version``.

        Raises :class:`Invalid` for a bad name/namespace or a set resource_version and
        :class:`AlreadyExists` if the key is taken.
        """
        self.counters.creates += 1
        if not isinstance(obj, Object):
            raise TypeError(f"create: expected an Object, got {type(obj).__name__}")
        _validate_identity(obj)
        if obj.resource_version:
            raise Invalid("metadata.resourceVersion: must be empty on create")
        key = meta_namespace_key_func(obj)
        if key in self.objects:
            raise AlreadyExists(f"object {key!r} already exists")
        uid = f"{self._uid_prefix}{self._next_uid}"
        self._next_uid += 1
        return self._write(ADDED, obj.evolve(uid=uid), None)

    def update(self, obj: Object) -> Object:
        """Replace an object's labels and data.

        Preconditions: a non-empty ``obj.resource_version`` / ``obj.uid`` must equal the
        stored one (else :class:`Conflict`). An update that changes nothing is a no-op:
        no new resourceVersion and no event (as kube-apiserver skips no-op writes).
        """
        self.counters.updates += 1
        if not isinstance(obj, Object):
            raise TypeError(f"update: expected an Object, got {type(obj).__name__}")
        key = meta_namespace_key_func(obj)
        current = self.objects.get(key)
        if current is None:
            raise NotFound(f"object {key!r} not found")
        if obj.resource_version and obj.resource_version != current.resource_version:
            raise Conflict(
                f"the object {key!r} has been modified: resource_version "
                f"{obj.resource_version} != {current.resource_version}"
            )
        if obj.uid and obj.uid != current.uid:
            raise Conflict(f"uid precondition failed for {key!r}: {obj.uid} != {current.uid}")
        if obj.labels == current.labels and obj.data == current.data:
            return current
        return self._write(MODIFIED, current.evolve(labels=obj.labels, data=obj.data), current)

    def delete(
        self, namespace: str, name: str, *, resource_version: str = "", uid: str = ""
    ) -> Object:
        """Delete an object; returns its last state stamped with the deletion's rv (the
        object the DELETED event carries). Optional preconditions as for update."""
        self.counters.deletes += 1
        key = f"{namespace}/{name}" if namespace else name
        current = self.objects.get(key)
        if current is None:
            raise NotFound(f"object {key!r} not found")
        if resource_version and resource_version != current.resource_version:
            raise Conflict(f"resource_version precondition failed for {key!r}")
        if uid and uid != current.uid:
            raise Conflict(f"uid precondition failed for {key!r}")
        return self._write(DELETED, current, current)

    def delete_key(self, key: str) -> Object:
        """:meth:`delete` by ``"namespace/name"`` key."""
        namespace, name = split_meta_namespace_key(key)
        return self.delete(namespace, name)

    def get(self, namespace: str, name: str) -> Object:
        self.counters.gets += 1
        key = f"{namespace}/{name}" if namespace else name
        obj = self.objects.get(key)
        if obj is None:
            raise NotFound(f"object {key!r} not found")
        return obj

    # -- list -------------------------------------------------------------------------

    def list(
        self, resource_version: str = "", limit: int = 0, continue_token: str | None = None
    ) -> ListResult:
        """List objects in key order.

        ``resource_version``: ``""`` the newest state; ``"0"`` any state (this server
        always has the newest); ``"N"`` without ``limit``: not older than N (the newest
        state; N in the future is :class:`TooLargeResourceVersion`); ``"N"`` with
        ``limit``: exactly N (410 :class:`Expired` if N was compacted away). With
        ``limit > 0`` at most ``limit`` items come back with a continue token; the next
        pages (``continue_token``, no resource_version) are served from the same
        snapshot, or 410 once that snapshot was compacted away.
        """
        token = continue_token or ""
        record = RequestRecord("list", resource_version, limit, token)
        self.counters.lists += 1
        return self._logged(record, lambda: self._list(resource_version, limit, token))

    def _logged(self, record: RequestRecord, serve: Callable[[], _T]) -> _T:
        """Serve a request and log it, with the error's class name if it failed."""
        try:
            answer = serve()
        except BaseException as err:
            self.request_log.append(attrs.evolve(record, error=type(err).__name__))
            raise
        self.request_log.append(record)
        return answer

    def _list(self, resource_version: str, limit: int, token: str) -> ListResult:
        if self._list_faults:
            raise copy.copy(self._list_faults.popleft())
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise BadRequest(f"limit must be a non-negative integer, got {limit!r}")
        after: str | None = None
        if token:
            if resource_version:
                raise BadRequest("specifying resource version is not allowed when using continue")
            snapshot, after = self._decode_continue(token)
            if snapshot < self.compacted_rv:
                raise Expired(
                    "The provided continue parameter is too old to display a consistent "
                    "list result. You can start a new list without the continue parameter."
                )
            state = self.state_at(snapshot)
        elif resource_version in ("", "0"):
            snapshot, state = self.rv, self.objects
        else:
            wanted = _parse_rv(resource_version, "list")
            if wanted > self.rv:
                raise TooLargeResourceVersion(
                    f"Too large resource version: {wanted}, current: {self.rv}"
                )
            if limit > 0:  # resourceVersionMatch unset + limit: Exact
                snapshot, state = wanted, self.state_at(wanted)
            else:  # NotOlderThan: the newest state qualifies
                snapshot, state = self.rv, self.objects
        keys = sorted(k for k in state if after is None or k > after)
        more = limit > 0 and len(keys) > limit
        if more:
            keys = keys[:limit]
        items = tuple(state[k] for k in keys)
        next_token = f"{snapshot}:{keys[-1]}" if more else ""
        return ListResult(items, str(snapshot), next_token)

    @staticmethod
    def _decode_continue(token: str) -> tuple[int, str]:
        rv, sep, key = token.partition(":")
        if not sep or not rv.isdigit() or not key:
            raise BadRequest(f"invalid continue token {token!r}")
        return int(rv), key

    # -- watch ------------------------------------------------------------------------

    def watch(
        self,
        resource_version: str = "",
        *,
        allow_bookmarks: bool = True,
        send_initial_events: bool | None = None,
        timeout_seconds: int | None = None,
    ) -> CoreWatch:
        """Open a watch.

        * ``"N"``: the writes with rv > N, in order. N below the compaction point: 410
          (see ``too_old_watch``).
        * ``""`` / ``"0"`` with ``send_initial_events`` unset (``None``): one synthetic
          ADDED per current object (key order, each at its own resourceVersion -- *not*
          rv-ordered), then the writes that follow (legacy "get state and start").
          ``send_initial_events=False``: no synthetic events, start at the newest rv.
        * ``send_initial_events=True`` (needs ``allow_bookmarks``; resourceVersionMatch
          NotOlderThan is implied): synthetic ADDED events of a state not older than the
          rv (key order), then a BOOKMARK at that state's rv annotated
          ``k8s.io/initial-events-end: "true"``, then the writes after it. Which state,
          and when it is 410 or refused: see ``watch_list`` in the class docstring.
          Counted in ``counters.watch_lists``, not ``counters.watches``.

        ``timeout_seconds`` is recorded but not enforced: the server closes a watch
        only when told to (:meth:`close_watch`).
        """
        record = RequestRecord(
            "watch",
            resource_version,
            send_initial_events=send_initial_events,
            allow_bookmarks=allow_bookmarks,
        )
        if send_initial_events:
            self.counters.watch_lists += 1
        else:
            self.counters.watches += 1
        return self._logged(
            record, lambda: self._watch(resource_version, allow_bookmarks, send_initial_events)
        )

    def _watch(
        self, resource_version: str, allow_bookmarks: bool, send_initial_events: bool | None
    ) -> CoreWatch:
        if self._watch_faults:
            raise copy.copy(self._watch_faults.popleft())
        if send_initial_events and not allow_bookmarks:
            raise Invalid("sendInitialEvents requires allowWatchBookmarks=true")
        if send_initial_events:
            return self._watch_list(resource_version, allow_bookmarks)
        initial = send_initial_events is None and resource_version in ("", "0")
        start = self.rv if resource_version in ("", "0") else _parse_rv(resource_version, "watch")
        w = self._new_watch(resource_version, start, allow_bookmarks, send_initial_events)
        if not initial and start < self.compacted_rv:
            return self._too_old(w, start)
        if not initial:
            for entry in self.log:  # the retained writes newer than the start
                if entry.rv > start:
                    w._push(WatchEvent(entry.type, entry.object))
        else:
            for key in sorted(self.objects):
                w._push(WatchEvent(ADDED, self.objects[key]))
        self._watches.append(w)
        return w

    def _watch_list(self, resource_version: str, allow_bookmarks: bool) -> CoreWatch:
        """A watch with ``sendInitialEvents=true``: a state, its end bookmark, the rest."""
        if self.watch_list == "unsupported":
            raise Invalid(
                "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch "
                "unless the WatchList feature gate is enabled"
            )
        wanted = 0 if resource_version in ("", "0") else _parse_rv(resource_version, "watch")
        if wanted > self.rv:
            raise TooLargeResourceVersion(
                f"Too large resource version: {wanted}, current: {self.rv}"
            )
        if self.watch_list == "storage" and resource_version not in ("", "0"):
            start = wanted  # a read at exactly that rv
        else:
            start = self.rv  # the newest state is not older than any rv <= newest
        w = self._new_watch(resource_version, start, allow_bookmarks, True)
        if start < self.compacted_rv:
            return self._too_old(w, start)
        state = self.objects if start == self.rv else self.state_at(start)
        for key in sorted(state):
            w._push(WatchEvent(ADDED, state[key]))
        w._push(
            WatchEvent(
                BOOKMARK,
                Object(name="", resource_version=str(start)),
                {INITIAL_EVENTS_END_ANNOTATION: "true"},
            )
        )
        for entry in self.log:  # the retained writes after that state
            if entry.rv > start:
                w._push(WatchEvent(entry.type, entry.object))
        self._watches.append(w)
        return w

    def _new_watch(
        self,
        resource_version: str,
        start: int,
        allow_bookmarks: bool,
        send_initial_events: bool | None,
    ) -> CoreWatch:
        w = CoreWatch(
            self._next_watch_id,
            resource_version,
            start,
            allow_bookmarks=allow_bookmarks,
            send_initial_events=send_initial_events,
            held=self.hold_new_watches,
        )
        self._next_watch_id += 1
        return w

    def _too_old(self, w: CoreWatch, start: int) -> CoreWatch:
        """Answer a watch from a compacted rv with 410, as ``too_old_watch`` says."""
        err = Expired(f"too old resource version: {start} ({self.compacted_rv})")
        if self.too_old_watch == "raise":
            raise err
        w._push(WatchEvent(ERROR, Object(name=""), error=err))
        w.ended = True
        self._watches.append(w)  # a held ERROR still needs releasing
        return w

    # -- compaction -------------------------------------------------------------------

    def compact(self, rv: int | str) -> None:
        """Drop the writes with rv <= ``rv``; requests from an older rv then get 410."""
        target = _parse_rv(rv, "compact") if isinstance(rv, str) else rv
        if target > self.rv:
            raise ValueError(f"cannot compact at {target}: newest resource version is {self.rv}")
        while self.log and self.log[0].rv <= target:
            self.log.popleft()
        self.compacted_rv = max(self.compacted_rv, target)

    # -- faults and delivery ----------------------------------------------------------

    def _targets(self, watch_id: int | None) -> builtins.list[CoreWatch]:
        if watch_id is None:
            return self.watches()
        for w in self._watches:
            if w.id == watch_id:
                return [w] if w.active else []
        return []

    def close_watch(self, watch_id: int | None = None, *, drop_pending: bool = True) -> int:
        """End one watch (or all): the reader sees a clean end of stream.

        ``drop_pending`` loses the events not yet handed over (a dropped connection);
        otherwise they are still delivered first. Returns how many watches it ended.
        """
        targets = self._targets(watch_id)
        for w in targets:
            if drop_pending:
                w.pending.clear()
            w.ended = True
        return len(targets)

    def fail_watch(
        self,
        watch_id: int | None = None,
        error: ApiError | None = None,
        *,
        drop_pending: bool = True,
    ) -> int:
        """End one watch (or all) with an ERROR event (default: 410 Expired)."""
        targets = self._targets(watch_id)
        for w in targets:
            if drop_pending:
                w.pending.clear()
            err = error if error is not None else Expired("too old resource version")
            w._push(WatchEvent(ERROR, Object(name=""), error=copy.copy(err)))
            w.ended = True
        return len(targets)

    def fail_next_lists(self, count: int = 1, error: BaseException | None = None) -> None:
        """Make the next ``count`` list requests fail with ``error`` (default ListError)."""
        err = error if error is not None else ListError("injected list failure")
        self._list_faults.extend([err] * count)

    def fail_next_watches(self, count: int = 1, error: BaseException | None = None) -> None:
        """Make the next ``count`` watch requests fail to start (default 429)."""
        err = error if error is not None else TooManyRequests("injected: too many requests")
        self._watch_faults.extend([err] * count)

    def queued_faults(self) -> tuple[int, int]:
        """How many injected (list, watch) failures have not fired yet."""
        return len(self._list_faults), len(self._watch_faults)

    def clear_faults(self) -> None:
        """Forget injected list/watch failures that have not fired yet."""
        self._list_faults.clear()
        self._watch_faults.clear()

    def hold(self, watch_id: int | None = None) -> None:
        """Slow delivery: keep new events of a watch (``None``: all open watches and all
        future ones) server-side until :meth:`release`."""
        if watch_id is None:
            self.hold_new_watches = True
        for w in self._targets(watch_id):
            w.held = True

    def release(self, watch_id: int | None = None, n: int | None = None) -> int:
        """Hand over up to ``n`` (default: all) held events of a watch (``None``: of
        each watch, ended ones included). Returns the number of events moved."""
        if watch_id is None:
            targets = [w for w in self._watches if not w.stopped]
        else:
            targets = [w for w in self._watches if w.id == watch_id and not w.stopped]
        return sum(w._release(n) for w in targets)

    def resume(self, watch_id: int | None = None) -> None:
        """Undo :meth:`hold`: release everything held and deliver immediately again."""
        if watch_id is None:
            self.hold_new_watches = False
            targets = [w for w in self._watches if not w.stopped]
        else:
            targets = [w for w in self._watches if w.id == watch_id and not w.stopped]
        for w in targets:
            w._release(None)
            w.held = False

    def send_bookmarks(self, watch_id: int | None = None) -> int:
        """Send a BOOKMARK at the newest rv to watches that allow bookmarks (and whose
        start is not in the future). Returns how many were sent."""
        sent = 0
        for w in self._targets(watch_id):
            if w.allow_bookmarks and self.rv >= w.start_rv:
                w._push(WatchEvent(BOOKMARK, Object(name="", resource_version=str(self.rv))))
                sent += 1
        return sent


# -- the thread-safe shell ------------------------------------------------------------


class ServerWatch:
    """A watch on :class:`ApiServer`: ``next_event`` blocks until an event, the end of
    the stream (``None``) or the timeout (:class:`WatchTimeout`)."""

    def __init__(self, server: ApiServer[Any], core: CoreWatch) -> None:
        self._server = server
        self._core = core

    @property
    def id(self) -> int:
        return self._core.id

    def next_event(self, timeout: float | None = None) -> WatchEvent | None:
        """Wait up to ``timeout`` seconds of the server's clock (``None``: forever;
        ``0``: do not wait). Returns the event, or ``None`` once the watch ended or was
        stopped."""
        server = self._server
        with server._changed:
            deadline = None if timeout is None else server._clock.now() + timeout
            while not self._core.has_event():
                if deadline is not None and server._clock.now() >= deadline:
                    raise WatchTimeout(f"watch {self.id}: no event within {timeout} s")
                server._clock.wait_until(server._changed, deadline)
            event = self._core.next_event()
            server._changed.notify_all()  # reading drains the wire: wake wait_for callers
            return event

    def stop(self) -> None:
        """Stop watching; a blocked ``next_event`` returns ``None``. Idempotent."""
        with self._server._changed:
            self._core.stop()
            self._server._changed.notify_all()

    def __iter__(self) -> Iterator[WatchEvent]:
        """Every event until the stream ends (blocks)."""
        while True:
            event = self.next_event()
            if event is None:
                return
            yield event

    def __repr__(self) -> str:
        return f"ServerWatch({self._core!r})"


class ServerOptions(TypedDict, total=False):
    """The keyword options of :class:`ApiServerCore` (defaults there) that
    :class:`ApiServer` passes on as given."""

    compaction_window: int | None
    deliver_immediately: bool
    too_old_watch: Literal["error_event", "raise"]
    watch_list: WatchListSupport


class WatchOptions(TypedDict, total=False):
    """The keyword options of :meth:`ApiServerCore.watch` (defaults there), which
    :meth:`ApiServer.watch` passes on as given."""

    allow_bookmarks: bool
    send_initial_events: bool | None
    timeout_seconds: int | None


class EndOptions(TypedDict, total=False):
    """The keyword option of :meth:`ApiServerCore.close_watch` and
    :meth:`ApiServerCore.fail_watch` (default there), which :class:`ApiServer` passes on
    as given."""

    drop_pending: bool


class ApiServer(Generic[ObjT]):
    """Thread-safe :class:`ApiServerCore`: one lock around it, and one condition that
    every change notifies so blocked watch readers re-check.

    Same methods as the core; ``watch`` returns a blocking :class:`ServerWatch`.
    ``clock`` only times ``next_event(timeout)`` waits. Like a real API server's
    endpoint for one resource, it serves one type of object, its parameter
    (``ApiServer[Pod]``; a controller over two kinds has a server for each): what it
    answers is what was created, typed so (the core keeps plain ``Object``).
    """

    def __init__(self, *, clock: Clock | None = None, **options: Unpack[ServerOptions]) -> None:
        self._core = ApiServerCore(**options)
        self._clock: Clock = clock if clock is not None else RealClock()
        self._changed = threading.Condition(threading.Lock())

    @contextmanager
    def locked(self) -> Iterator[ApiServerCore]:
        """Inspect (or step) the core under the server's lock; waiters are notified
        on exit."""
        with self._changed:
            try:
                yield self._core
            finally:
                self._changed.notify_all()

    def _call(self, fn: Callable[[ApiServerCore], _T]) -> _T:
        with self._changed:
            try:
                return fn(self._core)
            finally:
                self._changed.notify_all()

    # -- requests ---------------------------------------------------------------------

    def create(self, obj: ObjT) -> ObjT:
        return cast(ObjT, self._call(lambda c: c.create(obj)))

    def update(self, obj: ObjT) -> ObjT:
        return cast(ObjT, self._call(lambda c: c.update(obj)))

    def delete(
        self, namespace: str, name: str, *, resource_version: str = "", uid: str = ""
    ) -> ObjT:
        return cast(
            ObjT,
            self._call(
                lambda c: c.delete(namespace, name, resource_version=resource_version, uid=uid)
            ),
        )

    def delete_key(self, key: str) -> ObjT:
        return cast(ObjT, self._call(lambda c: c.delete_key(key)))

    def get(self, namespace: str, name: str) -> ObjT:
        return cast(ObjT, self._call(lambda c: c.get(namespace, name)))

    def list(
        self, resource_version: str = "", limit: int = 0, continue_token: str | None = None
    ) -> ListResult:
        return self._call(lambda c: c.list(resource_version, limit, continue_token))

    def watch(self, resource_version: str = "", **options: Unpack[WatchOptions]) -> ServerWatch:
        """:meth:`ApiServerCore.watch`, with the same keyword options and defaults."""
        return ServerWatch(self, self._call(lambda c: c.watch(resource_version, **options)))

    # -- faults, delivery, compaction -------------------------------------------------

    def compact(self, rv: int | str) -> None:
        self._call(lambda c: c.compact(rv))

    def close_watch(self, watch_id: int | None = None, **end: Unpack[EndOptions]) -> int:
        return self._call(lambda c: c.close_watch(watch_id, **end))

    def fail_watch(
        self, watch_id: int | None = None, error: ApiError | None = None, **end: Unpack[EndOptions]
    ) -> int:
        return self._call(lambda c: c.fail_watch(watch_id, error, **end))

    def fail_next_lists(self, count: int = 1, error: BaseException | None = None) -> None:
        self._call(lambda c: c.fail_next_lists(count, error))

    def fail_next_watches(self, count: int = 1, error: BaseException | None = None) -> None:
        self._call(lambda c: c.fail_next_watches(count, error))

    def clear_faults(self) -> None:
        self._call(lambda c: c.clear_faults())

    def hold(self, watch_id: int | None = None) -> None:
        self._call(lambda c: c.hold(watch_id))

    def release(self, watch_id: int | None = None, n: int | None = None) -> int:
        return self._call(lambda c: c.release(watch_id, n))

    def resume(self, watch_id: int | None = None) -> None:
        self._call(lambda c: c.resume(watch_id))

    def send_bookmarks(self, watch_id: int | None = None) -> int:
        return self._call(lambda c: c.send_bookmarks(watch_id))

    # -- introspection ----------------------------------------------------------------

    @property
    def resource_version(self) -> str:
        return self._call(lambda c: c.resource_version)

    @property
    def counters(self) -> RequestCounters:
        """A snapshot of the request counters."""
        return self._call(lambda c: c.counters.copy())

    def request_log(self) -> builtins.list[RequestRecord]:
        return self._call(lambda c: builtins.list(c.request_log))

    def objects(self) -> dict[str, ObjT]:
        """Every object the server holds now, by key (``namespace/name``)."""
        return cast(dict[str, ObjT], self._call(lambda c: dict(c.objects)))

    def open_watch_ids(self) -> builtins.list[int]:
        return self._call(lambda c: [w.id for w in c.watches()])

    def wait_for(self, predicate: Callable[[ApiServerCore], bool], timeout: float) -> bool:
        """Wait (real time, at most ``timeout`` s) until ``predicate(core)`` holds under
        the lock; returns whether it did. For tests that wait on another thread."""
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self._core), timeout)


class ApiServerListerWatcher:
    """A ListerWatcher over refimpl's API server.

    Over :class:`ApiServer` (threads) watches block; over :class:`ApiServerCore` (a
    simulator or a stepped test) they are :class:`CoreWatch` objects that never wait.
    """

    def __init__(self, server: ApiServer[Any] | ApiServerCore) -> None:
        if not isinstance(server, (ApiServer, ApiServerCore)):
            raise TypeError(f"expected an ApiServer or ApiServerCore, got {type(server).__name__}")
        self.server = server

    def list(self, options: ListOptions) -> ListResult:
        return self.server.list(options.resource_version, options.limit, options.continue_token)

    def watch(self, options: ListOptions) -> ServerWatch | CoreWatch:
        return self.server.watch(
            options.resource_version,
            allow_bookmarks=options.allow_watch_bookmarks,
            send_initial_events=options.send_initial_events,
            timeout_seconds=options.timeout_seconds,
        )
