"""The reflector: keeps a store in step with the server by listing, then watching.

Three layers. :class:`ReflectorCore` owns the resourceVersion bookkeeping
(``last_sync_resource_version``, ``is_last_sync_resource_version_unavailable``,
``paginated_result``) and decides what follows a failed list or a finished watch; it
never blocks, reads a clock (``now`` is passed in) or does I/O. :class:`ReflectorLoop`
is client-go's control flow (Run / ListAndWatch / list / watch / handleWatch /
watchList) as a generator that *yields* wherever Go would block -- waiting for a watch
event or for a backoff delay -- so the same code runs under threads (:class:`Reflector`)
and one step at a time (:class:`SteppedReflector`, for simulators and Hypothesis).
Ports ``tools/cache/reflector.go`` and ``retry_with_deadline.go``. Refines the
reflector of ``spec/Informer.tla`` and ``spec/InformerAtomic.tla``: variables
``reflector`` (where the loop is parked: "list" before a list or in the backoff before a
relist, "connect" while a watch request is unanswered, "watch") and ``lastSyncRV``;
actions ``List``, ``Connect``, ``WatchEvent``, ``WatchDrop`` (the mapping, replayed over
the models' whole state graphs in CI, is ``refimpl/tla/refine_informer.py``, which
runs the loop in ``ListMode.LIST_WATCH``). ``spec/InformerFaults.tla`` adds, over the
DeltaFIFO informer, list errors (``ListFail``), an ERROR 410 on an open watch
(``WatchExpired``), the relist after a watch that ends within ``VERY_SHORT_WATCH`` with
no event (``WatchShort``), a 429 on a watch request, retried after a backoff from the
same rv (``WatchRetry``), and bookmarks (``BookmarkSend``, ``WatchBookmark``), replayed
the same way. Not in the specs: a 429 ending an open watch, internal-error retries,
watch-list, resync.

How the reflector gets its state (:class:`ListMode`): ``WATCH_LIST`` is client-go's
default since v1.35 (the ``WatchListClient`` feature gate on by default): every pass of
ListAndWatch opens one watch with ``sendInitialEvents=true`` and resourceVersionMatch
NotOlderThan, at the last synced RV ("" on the first pass or after a 410), collects the
initial events until the initial-events-end bookmark, replaces the store and keeps
reading the same stream as its watch. A stream that fails with 429 or connection
refused is retried after a backoff; a 410 / too-large RV is retried at once from "";
any other failure falls back, in the same pass, to a list at ``relist_resource_version``
("0" on the first pass) and a new watch. ``LIST_WATCH`` (v1.34 and before, or a client
that opts out) always lists first.

Deliberate differences from client-go (each keeps every observable order Go allows):

* Resync runs in the watching thread between two events, not in a separate goroutine
  (the one interleaving that a Go scheduler may also pick); a resync error still ends
  the watch, which leads to a relist.
* The outer loop's backoff waits on the injected clock (Go's ``DelayFunc.Until`` uses a
  real-time timer while the reset rule reads the injected clock).
* The watch-list retry sleep can be interrupted by stop (Go's cannot), and its
  temporary store hands items to ``replace`` in arrival order (Go: random map order).
* A list is synchronous: a stop that arrives during a list is seen when it returns.
  A lister-watcher whose answer comes later (a driver playing the server one request at
  a time) raises :class:`ListPending`; the loop then yields :class:`WaitForList` and
  makes the same call again when resumed, where Go would still be blocked in the call.
* Any ``bookmark(rv)`` method on the store receives bookmarks (Go passes them only to
  stores whose ``Bookmark`` returns an error, i.e. RealFIFO, not the plain cache).
"""

from __future__ import annotations

import enum
import logging
import random
import threading
from collections import deque
from collections.abc import Callable, Generator, Sequence
from typing import Literal, Protocol, TypeVar, cast, runtime_checkable

import attrs

from refimpl.apierrors import (
    InternalError,
    is_expired,
    is_internal_error,
    is_too_large_resource_version,
    is_too_many_requests,
)
from refimpl.clock import Clock, RealClock, check_duration
from refimpl.eras import LATEST, Era
from refimpl.meta import ListOptions, ListResult, Object, deletion_handling_meta_namespace_key_func
from refimpl.watch import ADDED, BOOKMARK, DELETED, ERROR, MODIFIED, WatchEvent, WatchTimeout

from .listwatch import DEFAULT_PAGE_SIZE, ListerWatcher, ListPager, Watch
from .reflector_backoff import BACKOFF_RESET, DEFAULT_BACKOFF, Backoff, DelayWithReset

__all__ = [
    "DEFAULT_MIN_WATCH_TIMEOUT",
    "UNTIL_PERIOD",
    "VERY_SHORT_WATCH",
    "Answer",
    "EventAnswer",
    "ListAnswer",
    "ListMode",
    "ListPending",
    "NextStep",
    "ParkKind",
    "Parked",
    "Reflector",
    "ReflectorBookmarkStore",
    "ReflectorCore",
    "ReflectorLoop",
    "ReflectorStore",
    "ResourceVersionUpdater",
    "RetryWithDeadline",
    "SteppedReflector",
    "Steps",
    "StopRequested",
    "UntilAnswer",
    "VeryShortWatchError",
    "WaitForEvent",
    "WaitForList",
    "WaitReason",
    "WaitUntil",
    "Wake",
    "is_very_short_watch",
    "is_watch_error_retriable",
]

_log = logging.getLogger("refimpl.cache.reflector")

T = TypeVar("T")

#: Watch requests ask for a server timeout uniform in [min, 2 min) seconds.
DEFAULT_MIN_WATCH_TIMEOUT = 300.0
#: A watch that ends cleanly within this many seconds with no event is an error.
VERY_SHORT_WATCH = 1.0
#: Up to v1.17 the reflector's ``Run`` was ``wait.Until`` with a 1 s period: the same
#: wait after every pass, no growth, no jitter (refimpl/eras.py).
UNTIL_PERIOD = Backoff(duration=1.0)


def is_very_short_watch(elapsed: float) -> bool:
    """client-go's rule (``handleAnyWatch``): a watch that ended without any event
    ``elapsed`` seconds after it was requested was very short (the pass ends, a relist)."""
    return elapsed < VERY_SHORT_WATCH


#: The internal-error retry window restarts after this quiet time (NewRetryWithDeadline).
INTERNAL_ERROR_RETRY_RESET = 60.0


class ListMode(enum.StrEnum):
    """How the reflector gets the state it starts (and restarts) from.

    ``WATCH_LIST`` is client-go's default since v1.35 (WatchListClient on by default):
    one streaming watch with ``sendInitialEvents=true`` per pass, falling back to a list
    when that stream fails. ``LIST_WATCH`` is every release before v1.35 (and clients
    that opt out, such as client-go's fake clientsets): a list, then a watch.
    """

    WATCH_LIST = "watch-list"
    LIST_WATCH = "list-watch"


# -- what the reflector writes to -----------------------------------------------------


class ReflectorStore(Protocol):
    """The store a reflector keeps in step (client-go ``ReflectorStore``).

    Errors from ``add``/``update``/``delete``/``bookmark`` are logged and the event is
    dropped; an error from ``replace`` fails the list (and is retried after a backoff);
    an error from ``resync`` ends the watch (and leads to a relist).
    """

    def add(self, obj: object) -> None: ...
    def update(self, obj: object) -> None: ...
    def delete(self, obj: object) -> None: ...
    def replace(self, objects: Sequence[object], resource_version: str) -> None: ...
    def resync(self) -> None: ...


@runtime_checkable
class ReflectorBookmarkStore(Protocol):
    """Optional: a store that wants the resourceVersion of each bookmark."""

    def bookmark(self, resource_version: str) -> None: ...


@runtime_checkable
class ResourceVersionUpdater(Protocol):
    """Optional: a store told every resourceVersion the reflector records from a watch."""

    def update_resource_version(self, resource_version: str) -> None: ...


class VeryShortWatchError(Exception):
    """A watch ended cleanly within a second without delivering any event."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"very short watch: {name}: unexpected watch close - "
            "watch lasted less than a second and no items received"
        )


class ListPending(Exception):
    """Raised by a lister whose answer is not there yet: the loop waits for it
    (:class:`WaitForList`) and then makes the same list call again."""


class StopRequested(Exception):
    """Internal outcome of a watch that ended because stop was requested."""


def is_watch_error_retriable(err: BaseException) -> bool:
    """Starting a watch failed in a way that a re-watch after a backoff may fix:
    connection refused or 429 (no relist needed)."""
    return isinstance(err, ConnectionRefusedError) or is_too_many_requests(err)


# -- the core: bookkeeping and decisions ----------------------------------------------


class NextStep(enum.Enum):
    """What the watch loop does after a watch request failed or a watch ended."""

    REWATCH = "rewatch"  # at once, from the last RV, no relist
    BACKOFF_THEN_REWATCH = "backoff-then-rewatch"  # one backoff delay, then re-watch
    RELIST = "relist"  # leave ListAndWatch; the outer loop backs off, then lists
    FAIL = "fail"  # leave ListAndWatch with the error (then as RELIST)
    STOP = "stop"


class RetryWithDeadline:
    """Retry a kind of error for at most ``max_retry_duration`` after its first
    occurrence; the window restarts after ``min_reset_period`` without such errors
    (client-go ``retryWithDeadlineImpl``; times are passed in). ``max <= 0`` never
    retries."""

    __slots__ = ("first", "is_retryable", "last", "max_retry_duration", "min_reset_period")

    def __init__(
        self,
        max_retry_duration: float,
        min_reset_period: float,
        is_retryable: Callable[[BaseException], bool],
    ) -> None:
        self.max_retry_duration = max_retry_duration
        self.min_reset_period = min_reset_period
        self.is_retryable = is_retryable
        self.first: float | None = None  # None plays Go's zero time: "long ago"
        self.last: float | None = None

    def after(self, err: BaseException | None, now: float) -> None:
        if err is None or not self.is_retryable(err):
            return
        if self.last is None or now - self.last >= self.min_reset_period:
            self.first = self.last = None
        if self.first is None:
            self.first = now
        self.last = now

    def should_retry(self, now: float) -> bool:
        if self.max_retry_duration <= 0:
            return False
        if self.first is not None and now - self.first <= self.max_retry_duration:
            return True
        self.first = self.last = None
        return False


class ReflectorCore:
    """The reflector's resourceVersion bookkeeping and its decisions.

    Invariants (REF-1, REF-2): the first list asks for RV "0"; a relist asks
    for the last synced RV, or "" once that was answered 410 / too large (the flag is
    cleared by the next successful list); the last synced RV is never taken from the
    synthetic ADDED events of a watch started at ""/"0" before a non-ADDED event.
    ``era`` is the client-go release line it decides like (refimpl/eras.py).
    """

    __slots__ = (
        "_internal_retry",
        "era",
        "is_last_sync_resource_version_unavailable",
        "last_sync_resource_version",
        "max_internal_error_retry_duration",
        "paginated_result",
        "watch_list_page_size",
    )

    def __init__(
        self,
        *,
        watch_list_page_size: int = 0,
        max_internal_error_retry_duration: float = 0.0,
        era: Era = LATEST,
    ) -> None:
        if isinstance(watch_list_page_size, bool) or not isinstance(watch_list_page_size, int):
            raise TypeError(f"watch_list_page_size must be an int, got {watch_list_page_size!r}")
        if watch_list_page_size < 0:
            raise ValueError(f"watch_list_page_size must be >= 0, got {watch_list_page_size}")
        check_duration(max_internal_error_retry_duration, "max_internal_error_retry_duration")
        #: RV of the last successful list / watch-list, or last propagated watch event.
        self.last_sync_resource_version = ""
        #: Set when a list at the last RV said 410 / too large; cleared by a good list.
        self.is_last_sync_resource_version_unavailable = False
        #: Sticky: a list at RV "0" came back in pages (so the server has no watch cache).
        self.paginated_result = False
        self.watch_list_page_size = watch_list_page_size
        self.max_internal_error_retry_duration = max_internal_error_retry_duration
        self._internal_retry = self._new_internal_retry()
        self.era = era

    def _new_internal_retry(self) -> RetryWithDeadline:
        return RetryWithDeadline(
            self.max_internal_error_retry_duration, INTERNAL_ERROR_RETRY_RESET, is_internal_error
        )

    # -- list ---------------------------------------------------------------------------

    def relist_resource_version(self) -> str:
        if self.is_last_sync_resource_version_unavailable:
            return ""  # a consistent read of the newest state
        if self.last_sync_resource_version == "":
            return "0"  # first list: any state will do (the watch cache can serve it)
        return self.last_sync_resource_version  # not older than what we have seen

    def rewatch_resource_version(self) -> str:
        """Where a watch-list stream starts ("" = a consistent snapshot)."""
        if self.is_last_sync_resource_version_unavailable:
            return ""
        return self.last_sync_resource_version

    def list_options(self) -> ListOptions:
        return ListOptions(resource_version=self.relist_resource_version())

    def list_page_size(self, resource_version: str) -> int:
        """Page size for a list at ``resource_version`` (0 = unpaginated)."""
        if self.watch_list_page_size:
            return self.watch_list_page_size
        if self.paginated_result:
            return DEFAULT_PAGE_SIZE
        if resource_version not in ("", "0"):
            return 0  # unpaginated, so a watch cache can serve "not older than RV"
        return DEFAULT_PAGE_SIZE

    def list_failed(self, err: BaseException) -> bool:
        """A list failed; True means: retry once, now, at :meth:`relist_resource_version`
        (which is then "")."""
        if is_expired(err) or is_too_large_resource_version(err):
            self.is_last_sync_resource_version_unavailable = True
            return True
        return False

    def list_succeeded(self, requested_resource_version: str, paginated: bool) -> None:
        """Call before handing the items to the store."""
        if requested_resource_version == "0" and paginated:
            self.paginated_result = True
        self.is_last_sync_resource_version_unavailable = False

    def set_last_sync_resource_version(self, resource_version: str) -> None:
        self.last_sync_resource_version = resource_version

    def watch_list_succeeded(self) -> None:
        self.is_last_sync_resource_version_unavailable = False

    def mark_unavailable(self) -> None:
        self.is_last_sync_resource_version_unavailable = True

    # -- watch --------------------------------------------------------------------------

    def watch_options(self, timeout_seconds: int) -> ListOptions:
        return ListOptions(
            resource_version=self.last_sync_resource_version,
            timeout_seconds=timeout_seconds,
            allow_watch_bookmarks=True,
        )

    @staticmethod
    def propagates_from_start(resource_version: str) -> bool:
        """A watch from ""/"0" begins with synthetic ADDED events in no RV order."""
        return resource_version not in ("", "0")

    def observe_watch_rv(
        self, resource_version: str, saw_non_added: bool, propagate_from_start: bool
    ) -> bool:
        """After each watch event: record its RV unless it may be a synthetic initial
        ADDED (PR #136583). Returns whether it was recorded."""
        if propagate_from_start or saw_non_added:
            self.last_sync_resource_version = resource_version
            return True
        return False

    def begin_watch_phase(self) -> None:
        """A new ListAndWatch reached its watch loop: fresh internal-error window."""
        self._internal_retry = self._new_internal_retry()

    def after_watch_start_error(self, err: BaseException) -> NextStep:
        """What follows a watch request that failed with ``err``."""
        if is_expired(err) and not self.era.relist_from_last_synced_rv_after_watch_410:
            self.mark_unavailable()  # up to v1.17: the relist asks for ""
        if is_too_many_requests(err) and not self.era.rewatch_after_429:
            return NextStep.FAIL  # up to v1.21 only connection refused was retried
        return NextStep.BACKOFF_THEN_REWATCH if is_watch_error_retriable(err) else NextStep.FAIL

    def after_watch(self, err: BaseException | None, now: float) -> NextStep:
        """What follows a watch that ended with ``err`` (None: clean close)."""
        self._internal_retry.after(err, now)
        if err is None:
            return NextStep.REWATCH
        if isinstance(err, StopRequested):
            return NextStep.STOP
        if is_expired(err):
            if not self.era.relist_from_last_synced_rv_after_watch_410:
                self.mark_unavailable()  # up to v1.17: the relist asks for ""
            return NextStep.RELIST  # at the last RV; the flag is not set here
        if is_too_many_requests(err) and self.era.rewatch_after_429:
            return NextStep.BACKOFF_THEN_REWATCH
        if is_internal_error(err) and self._internal_retry.should_retry(now):
            return NextStep.REWATCH
        return NextStep.RELIST


# -- the loop ---------------------------------------------------------------------------


#: Why the loop waits on the clock: the backoff before a relist, before a re-watch, or
#: before a retried watch-list stream.
WaitReason = Literal["backoff", "watch-retry", "watch-list-retry"]
#: Where a threaded reflector can be parked: waiting for an event, or one of the above.
ParkKind = Literal["watch"] | WaitReason


@attrs.frozen
class WaitForEvent:
    """The loop waits for the next event of ``watch`` (or the end of the stream), the
    resync time ``resync_at``, or stop. Answered with an :data:`EventAnswer`."""

    watch: Watch
    resync_at: float | None


@attrs.frozen
class WaitUntil:
    """The loop waits until ``deadline`` or stop -- and, when ``resync_at`` is set, until
    that resync time, answered ``Wake.RESYNC`` (the loop resyncs and waits on for the same
    deadline). Answered with an :data:`UntilAnswer`."""

    deadline: float
    reason: WaitReason
    #: Set for the backoff before a re-watch: client-go's resync goroutine
    #: (``Reflector.startResync``) runs for the whole ``watchWithResync``, so it keeps
    #: firing while ``Reflector.watch`` waits out a 429.
    resync_at: float | None = None


@attrs.frozen
class WaitForList:
    """The loop waits for the answer to the list it asked for (its lister raised
    :class:`ListPending`). Answered with a :data:`ListAnswer`: ``Wake.LISTED`` when the
    answer is there (the loop then lists again), or ``Wake.STOP``."""

    options: ListOptions


class Wake(enum.Enum):
    """The answers to a wait that carry no data."""

    STOP = "stop"  # any wait: stop was requested
    RESYNC = "resync"  # WaitForEvent: the resync time came
    DEADLINE = "deadline"  # WaitUntil: the deadline passed
    LISTED = "listed"  # WaitForList: the lister has its answer


Wait = WaitForEvent | WaitUntil | WaitForList
#: The answer to a :class:`WaitForEvent`: the event, ``None`` (the stream ended), the
#: exception reading it raised, ``Wake.RESYNC`` or ``Wake.STOP``.
EventAnswer = WatchEvent | BaseException | Literal[Wake.RESYNC, Wake.STOP] | None
#: The answer to a :class:`WaitUntil` (``Wake.RESYNC`` only when it has a ``resync_at``).
UntilAnswer = Literal[Wake.DEADLINE, Wake.STOP, Wake.RESYNC]
#: What :meth:`ReflectorLoop._sleep` returns: how the wait ended.
SleepEnd = Literal[Wake.DEADLINE, Wake.STOP]
#: The answer to a :class:`WaitForList`.
ListAnswer = Literal[Wake.LISTED, Wake.STOP]
#: Whatever a driver may send into the loop; ``None`` also starts it (the first send).
Answer = EventAnswer | UntilAnswer | ListAnswer
#: A generator that yields waits and is resumed with their answers.
Steps = Generator[Wait, Answer, T]


class _Retry(enum.Enum):
    """What follows a failed watch-list stream (:meth:`ReflectorLoop._watch_list_retry`)."""

    AGAIN = "again"  # open the stream again
    GIVE_UP = "give-up"  # raise: list_and_watch falls back to a list
    STOPPED = "stopped"  # stop was requested during the backoff


class StopFlag(Protocol):
    def is_set(self) -> bool: ...


class _TemporaryStore:
    """The watch-list's scratch store: a dict in arrival order."""

    def __init__(self) -> None:
        self.items: dict[str, object] = {}

    def add(self, obj: object) -> None:
        self.items[deletion_handling_meta_namespace_key_func(obj)] = obj

    update = add

    def delete(self, obj: object) -> None:
        self.items.pop(deletion_handling_meta_namespace_key_func(obj), None)

    def replace(self, objects: Sequence[object], resource_version: str) -> None:
        raise AssertionError("the watch-list scratch store is never replaced")

    def resync(self) -> None:
        pass


def _default_watch_error_handler(name: str, err: BaseException) -> None:
    if is_expired(err):
        _log.debug("reflector %s: watch closed: %s", name, err)
    else:
        _log.warning("reflector %s: failed to list or watch: %r", name, err)


class ReflectorLoop:
    """client-go's reflector control flow; every blocking point is a ``yield``.

    Calls the ListerWatcher and the store directly (those calls return promptly);
    only waiting is delegated to the driver. ``run()`` never raises for list/watch/store
    errors (they go to ``watch_error_handler``); ``list_and_watch()`` raises them.
    """

    def __init__(
        self,
        lw: ListerWatcher,
        store: ReflectorStore,
        core: ReflectorCore,
        *,
        name: str,
        clock: Clock,
        rng: random.Random,
        delay: Callable[[], float],
        stop: StopFlag,
        resync_period: float = 0.0,
        should_resync: Callable[[], bool] | None = None,
        use_watch_list: bool = True,
        min_watch_timeout: float = DEFAULT_MIN_WATCH_TIMEOUT,
        watch_error_handler: Callable[[str, BaseException], None] | None = None,
        very_short: Callable[[float], bool] = is_very_short_watch,
    ) -> None:
        self._lw = lw
        self._store = store
        self._core = core
        self.name = name
        self._clock = clock
        self._rng = rng
        self._delay = delay
        self._stop = stop
        self._resync_period = resync_period
        self._should_resync = should_resync
        self._use_watch_list = use_watch_list
        self._min_watch_timeout = max(min_watch_timeout, DEFAULT_MIN_WATCH_TIMEOUT)
        self._on_error = watch_error_handler or _default_watch_error_handler
        self._very_short = very_short
        self._resync_at: float | None = None  # set only during the watch phase
        #: A resync that failed during a re-watch backoff: the next watch ends with it
        #: (client-go's resync goroutine sends it on resyncerrc and stops).
        self._resync_error: BaseException | None = None

    # -- Run / ListAndWatch -------------------------------------------------------------

    def run(self) -> Steps[None]:
        """List and watch until stopped; one backoff delay after *every* return of
        list_and_watch (Go's sliding ``Until``), error or not."""
        _log.debug("reflector %s: starting", self.name)
        while not self._stop.is_set():
            try:
                yield from self.list_and_watch()
            except Exception as err:  # Go: the error ListAndWatch returns
                self._on_error(self.name, err)
            if (yield from self._sleep(self._delay(), "backoff")) is Wake.STOP:
                break
        _log.debug("reflector %s: stopped", self.name)

    def list_and_watch(self) -> Steps[None]:
        """List (or watch-list), then watch until the watch needs a relist or stop."""
        w: Watch | None = None
        fallback = not self._use_watch_list
        if self._use_watch_list:
            try:
                w = yield from self._watch_list()
            except Exception as err:
                _log.debug(
                    "reflector %s: watch-list failed, falling back to list: %r", self.name, err
                )
                fallback = True
            else:
                if w is None:
                    return  # stop requested
        if fallback and (yield from self._list()):
            return  # stop requested while a list was pending
        yield from self._watch_with_resync(w)

    # -- list -----------------------------------------------------------------------------

    def _list(self) -> Steps[bool]:
        """List and replace the store; True if stop was requested meanwhile."""
        core = self._core
        options = core.list_options()
        pager = ListPager(self._lw, core.list_page_size(options.resource_version))
        try:
            listed = yield from self._list_call(pager, options)
        except Exception as err:
            if not core.list_failed(err):
                raise
            # The RV we asked for is gone or not there yet: read the newest state now.
            retry = ListOptions(resource_version=core.relist_resource_version())
            listed = yield from self._list_call(pager, retry)
        if listed is None:
            return True
        result, paginated = listed
        core.list_succeeded(options.resource_version, paginated)
        self._store.replace(list(result.items), result.resource_version)
        core.set_last_sync_resource_version(result.resource_version)
        return False

    def _list_call(
        self, pager: ListPager, options: ListOptions
    ) -> Steps[tuple[ListResult, bool] | None]:
        """``pager.list(options)``, waiting while the lister says its answer is pending
        (None: stop was requested meanwhile)."""
        while True:
            try:
                return pager.list(options)
            except ListPending:
                if (yield WaitForList(options)) is Wake.STOP:
                    return None

    # -- watch ----------------------------------------------------------------------------

    def _watch_timeout(self) -> int:
        low = self._min_watch_timeout
        return int(low + self._rng.random() * low)  # uniform in [min, 2 min)

    def _watch_with_resync(self, w: Watch | None) -> Steps[None]:
        if self._resync_period > 0:
            self._resync_at = self._clock.now() + self._resync_period
        try:
            yield from self._watch(w)
        finally:
            self._resync_at = None
            self._resync_error = None

    def _watch(self, w: Watch | None) -> Steps[None]:
        core = self._core
        core.begin_watch_phase()
        while True:
            if self._stop.is_set():
                if w is not None:
                    w.stop()
                return
            start = self._clock.now()
            propagate_from_start = True  # a watch handed over is past its initial events
            if w is None:
                options = core.watch_options(self._watch_timeout())
                propagate_from_start = core.propagates_from_start(options.resource_version)
                try:
                    w = self._lw.watch(options)
                except Exception as err:
                    if core.after_watch_start_error(err) is NextStep.BACKOFF_THEN_REWATCH:
                        _log.debug("reflector %s: watch failed, backing off: %r", self.name, err)
                        if (yield from self._rewatch_backoff()) is Wake.STOP:
                            return
                        continue
                    raise

            def record(
                rv: str, saw_non_added: bool, propagate: bool = propagate_from_start
            ) -> None:
                if core.observe_watch_rv(rv, saw_non_added, propagate) and isinstance(
                    self._store, ResourceVersionUpdater
                ):
                    self._store.update_resource_version(rv)

            _, ended_with = yield from self._handle_watch(start, w, self._store, record, False)
            w = None  # _handle_watch stopped it
            step = core.after_watch(ended_with, self._clock.now())
            if step is NextStep.REWATCH:
                continue
            if step is NextStep.STOP:
                return
            if step is NextStep.BACKOFF_THEN_REWATCH:
                _log.debug("reflector %s: watch returned 429, backing off", self.name)
                if (yield from self._rewatch_backoff()) is Wake.STOP:
                    return
                continue
            if is_expired(cast(BaseException, ended_with)):
                _log.debug("reflector %s: watch closed: %s", self.name, ended_with)
            else:
                _log.warning("reflector %s: watch ended with error: %r", self.name, ended_with)
            return

    def _handle_watch(
        self,
        start: float,
        w: Watch,
        store: ReflectorStore,
        record: Callable[[str, bool], None],
        exit_on_initial_events_end: bool,
    ) -> Steps[tuple[bool, BaseException | None]]:
        """Apply events to ``store`` until the stream ends, an error, a resync error or
        stop. Returns ``(initial-events-end bookmark seen, error or None)``. Stops the
        watch, except when leaving on the end bookmark of a watch-list."""
        end_seen = False
        saw_non_added = False
        count = 0
        if self._resync_error is not None and not exit_on_initial_events_end:
            failed, self._resync_error = self._resync_error, None
            w.stop()
            return end_seen, failed
        while True:
            resync_at = None if exit_on_initial_events_end else self._resync_at
            got = yield WaitForEvent(w, resync_at)
            if got is Wake.STOP:
                w.stop()
                return end_seen, StopRequested()
            if got is Wake.RESYNC:
                resync_err = self._resync()
                if resync_err is not None:
                    w.stop()
                    return end_seen, resync_err
                continue
            if got is None:
                break
            if isinstance(got, BaseException):
                w.stop()
                return end_seen, got
            if not isinstance(got, WatchEvent):
                raise TypeError(f"a driver answered WaitForEvent with {got!r}")
            event = got
            if event.type == ERROR:
                w.stop()
                return end_seen, event.error or InternalError("watch ERROR event without status")
            obj = event.object
            if not isinstance(obj, Object):
                _log.error("reflector %s: skipping watch event of type %r", self.name, type(obj))
                continue
            try:
                if event.type == ADDED:
                    store.add(obj)
                elif event.type == MODIFIED:
                    saw_non_added = True
                    store.update(obj)
                elif event.type == DELETED:
                    saw_non_added = True
                    store.delete(obj)
                elif event.type == BOOKMARK:
                    saw_non_added = True
                    if event.is_initial_events_end:
                        end_seen = True
                    if isinstance(store, ReflectorBookmarkStore):
                        store.bookmark(obj.resource_version)
                else:
                    _log.error("reflector %s: unknown watch event %r", self.name, event.type)
            except Exception as store_err:  # Go logs and drops the event
                _log.error("reflector %s: store rejected %s: %r", self.name, event.type, store_err)
            record(obj.resource_version, saw_non_added)
            count += 1
            if exit_on_initial_events_end and end_seen:
                return True, None  # the watch stays open for the caller
        w.stop()
        if count == 0 and self._very_short(self._clock.now() - start):
            return end_seen, VeryShortWatchError(self.name)
        return end_seen, None

    def _resync(self) -> BaseException | None:
        self._resync_at = self._clock.now() + self._resync_period  # re-armed either way
        if self._should_resync is None or self._should_resync():
            try:
                self._store.resync()
            except Exception as err:
                return err
        return None

    # -- watch-list (streaming initial list) ----------------------------------------------

    def _watch_list(self) -> Steps[Watch | None]:
        """Open a watch with initial events; collect them until the end bookmark, then
        replace the store and return the open watch. ``None``: stop requested."""
        core = self._core
        while True:
            if self._stop.is_set():
                return None
            scratch = _TemporaryStore()
            list_rv = ""
            options = ListOptions(
                resource_version=core.rewatch_resource_version(),
                timeout_seconds=self._watch_timeout(),
                allow_watch_bookmarks=True,
                send_initial_events=True,
            )
            start = self._clock.now()
            try:
                w = self._lw.watch(options)
            except Exception as err:
                retry = yield from self._watch_list_retry(err)
                if retry is _Retry.STOPPED:
                    return None
                if retry is _Retry.AGAIN:
                    continue
                raise

            def record(rv: str, saw_non_added: bool) -> None:
                nonlocal list_rv
                if saw_non_added:
                    list_rv = rv

            end_seen, failure = yield from self._handle_watch(start, w, scratch, record, True)
            if failure is not None:
                w.stop()
                if isinstance(failure, StopRequested):
                    return None
                retry = yield from self._watch_list_retry(failure)
                if retry is _Retry.STOPPED:
                    return None
                if retry is _Retry.AGAIN:
                    continue
                raise failure
            if end_seen:
                break
        core.watch_list_succeeded()
        self._store.replace(list(scratch.items.values()), list_rv)
        core.set_last_sync_resource_version(list_rv)
        return w

    def _watch_list_retry(self, err: BaseException) -> Steps[_Retry]:
        """Whether a watch-list stream that failed with ``err`` is opened again (at once
        or after a backoff), given up, or was stopped during the backoff."""
        if is_watch_error_retriable(err):
            if (yield from self._sleep(self._delay(), "watch-list-retry")) is Wake.STOP:
                return _Retry.STOPPED
            return _Retry.AGAIN
        if is_expired(err) or is_too_large_resource_version(err):
            self._core.mark_unavailable()
            return _Retry.AGAIN
        return _Retry.GIVE_UP

    # -- waiting ------------------------------------------------------------------------

    def _rewatch_backoff(self) -> Steps[SleepEnd]:
        """The backoff before ``Reflector.watch`` tries again (a 429), resyncs included."""
        return (yield from self._sleep(self._delay(), "watch-retry", resync=True))

    def _sleep(self, seconds: float, reason: WaitReason, resync: bool = False) -> Steps[SleepEnd]:
        """Wait ``seconds`` on the clock: ``Wake.DEADLINE``, or ``Wake.STOP`` if stop was
        requested meanwhile. ``resync``: the resync timer keeps firing meanwhile."""
        if self._stop.is_set():
            return Wake.STOP
        deadline = self._clock.now() + seconds
        while True:
            resync_at = self._resync_at if resync and self._resync_error is None else None
            got = yield WaitUntil(deadline, reason, resync_at)
            if got is Wake.STOP or got is Wake.DEADLINE:
                return got
            if got is Wake.RESYNC and resync_at is not None:
                failed = self._resync()
                if failed is not None:
                    self._resync_error = failed  # no more resyncs; the next watch ends with it
                continue
            raise TypeError(f"a driver answered WaitUntil with {got!r}")


# -- drivers ------------------------------------------------------------------------------


class _ReflectorBase:
    """Configuration and bookkeeping shared by both drivers."""

    def __init__(
        self,
        lw: ListerWatcher,
        store: ReflectorStore,
        *,
        name: str = "",
        resync_period: float = 0.0,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        seed: int | None = None,
        should_resync: Callable[[], bool] | None = None,
        watch_list_page_size: int = 0,
        use_watch_list: bool = True,
        min_watch_timeout: float = DEFAULT_MIN_WATCH_TIMEOUT,
        max_internal_error_retry_duration: float = 0.0,
        backoff: Backoff | None = None,
        watch_error_handler: Callable[[str, BaseException], None] | None = None,
        era: Era = LATEST,
    ) -> None:
        check_duration(resync_period, "resync_period")
        if resync_period < 0:
            raise ValueError(f"resync_period must be >= 0, got {resync_period}")
        check_duration(min_watch_timeout, "min_watch_timeout")
        for method in ("add", "update", "delete", "replace", "resync"):
            if not callable(getattr(store, method, None)):
                raise TypeError(f"store {type(store).__name__} has no {method}() method")
        for method in ("list", "watch"):
            if not callable(getattr(lw, method, None)):
                raise TypeError(f"lister-watcher {type(lw).__name__} has no {method}() method")
        if rng is not None and seed is not None:
            raise ValueError("pass rng or seed, not both")
        self.name = name or "reflector"
        self.resync_period = resync_period
        self.store = store
        self.lw = lw
        self._clock: Clock = clock if clock is not None else RealClock()
        self._rng = rng if rng is not None else random.Random(seed)
        self.core = ReflectorCore(
            watch_list_page_size=watch_list_page_size,
            max_internal_error_retry_duration=max_internal_error_retry_duration,
            era=era,
        )
        if backoff is None:
            # Up to v1.17 ``wait.Until`` waited its fixed period (1 s) between passes.
            backoff = DEFAULT_BACKOFF if era.backoff_between_passes else UNTIL_PERIOD
        #: The backoff before each retry of ListAndWatch (a driver may wrap it).
        self.delay: Callable[[], float] = DelayWithReset(
            backoff,
            clock=self._clock,
            reset_interval=BACKOFF_RESET,
            rng=self._rng,
            since_last_backoff=not era.backoff_reset_since_last_reset,
        )
        self._should_resync = should_resync
        self._use_watch_list = use_watch_list
        self._min_watch_timeout = min_watch_timeout
        self._watch_error_handler = watch_error_handler
        #: Whether a watch that ended without events after ``elapsed`` seconds was very
        #: short: client-go's rule. A driver that steered a backoff's length (and so does
        #: not know exactly when the next watch was requested) may decide it instead.
        self.very_short_watch: Callable[[float], bool] = is_very_short_watch
        self._init_driver()

    def _init_driver(self) -> None:
        """Per-driver state (subclasses)."""

    def _loop(self, stop: StopFlag) -> ReflectorLoop:
        return ReflectorLoop(
            self.lw,
            self.store,
            self.core,
            name=self.name,
            clock=self._clock,
            rng=self._rng,
            delay=self.delay,
            stop=stop,
            resync_period=self.resync_period,
            should_resync=self._should_resync,
            use_watch_list=self._use_watch_list,
            min_watch_timeout=self._min_watch_timeout,
            watch_error_handler=self._watch_error_handler,
            very_short=lambda elapsed: self.very_short_watch(elapsed),
        )

    def last_sync_resource_version(self) -> str:
        """The RV of the last list or recorded watch event (not synchronised with the
        store, as in client-go)."""
        return self.core.last_sync_resource_version

    def is_last_sync_resource_version_unavailable(self) -> bool:
        return self.core.is_last_sync_resource_version_unavailable


@attrs.frozen
class Parked:
    """Where a threaded reflector is waiting: ``"watch"`` (for an event; ``deadline`` is
    the resync time) or a backoff kind (``deadline`` is its end). ``seq`` counts parks."""

    seq: int
    kind: ParkKind
    deadline: float | None


class _Pump:
    """Reads one watch in a daemon thread into an inbox, so the reflector can wait for
    an event, its resync time and stop at once (Go's ``select``)."""

    def __init__(self, watch: Watch, cond: threading.Condition, name: str) -> None:
        self.watch = watch
        self.inbox: deque[WatchEvent | BaseException | None] = deque()
        self._cond = cond
        threading.Thread(target=self._run, name=f"{name}-watch-pump", daemon=True).start()

    def _run(self) -> None:
        while True:
            item: WatchEvent | BaseException | None
            try:
                item = self.watch.next_event(None)
            except WatchTimeout:
                item = TypeError(
                    "watch.next_event(None) returned without waiting: a threaded Reflector "
                    "needs a blocking watch (use SteppedReflector for an ApiServerCore)"
                )
            except Exception as err:
                item = err
            with self._cond:
                self.inbox.append(item)
                self._cond.notify_all()
            if not isinstance(item, WatchEvent):
                return


class Reflector(_ReflectorBase):
    """The threaded reflector (client-go ``Reflector``): ``run(stop_event)`` lists and
    watches in the calling thread until ``stop_event`` is set.

    Waits (backoff, resync timer) use the injected clock, so with a FakeClock a test
    moves time by stepping it. A stop is noticed at once while waiting for an event or a
    backoff; a list in progress finishes first. Helper daemon threads: one reading the
    current watch, one relaying each distinct stop event.
    """

    def _init_driver(self) -> None:
        self._cond = threading.Condition()
        self._running = False
        self._pump: _Pump | None = None
        self._parked: Parked | None = None
        self._park_seq = 0
        self._relays: dict[int, threading.Thread] = {}

    def run(self, stop_event: threading.Event) -> None:
        """client-go ``Run``: list and watch until ``stop_event`` is set."""
        self._drive(self._loop(stop_event).run(), stop_event)

    def list_and_watch(self, stop_event: threading.Event) -> None:
        """One ListAndWatch: returns when the watch needs a relist or on stop; raises
        the list / watch-start / store error that ended it."""
        self._drive(self._loop(stop_event).list_and_watch(), stop_event)

    # -- test support ---------------------------------------------------------------------

    def parked(self) -> Parked | None:
        with self._cond:
            return self._parked

    def wait_parked(
        self, kind: ParkKind | None = None, *, after: int = 0, timeout: float = 5.0
    ) -> Parked:
        """Block (real time, at most ``timeout``) until the loop waits in ``kind`` (any
        if None) with a park number > ``after``; tests then step the FakeClock."""
        with self._cond:

            def ready() -> bool:
                p = self._parked
                return p is not None and p.seq > after and (kind is None or p.kind == kind)

            if not self._cond.wait_for(ready, timeout):
                raise TimeoutError(f"reflector not parked in {kind!r} after {timeout} s")
            assert self._parked is not None
            return self._parked

    # -- the driver -----------------------------------------------------------------------

    def _drive(self, steps: Steps[None], stop: threading.Event) -> None:
        with self._cond:
            if self._running:
                raise RuntimeError(f"reflector {self.name} is already running")
            self._running = True
        self._relay(stop)
        try:
            answer: Answer = None
            while True:
                try:
                    wait = steps.send(answer)
                except StopIteration:
                    return
                answer = self._wait(wait, stop)
        finally:
            steps.close()
            pump, self._pump = self._pump, None
            if pump is not None:
                pump.watch.stop()
            with self._cond:
                self._running = False

    def _relay(self, stop: threading.Event) -> None:
        thread = self._relays.get(id(stop))
        if thread is not None and thread.is_alive():
            return

        def relay() -> None:
            stop.wait()
            with self._cond:
                self._cond.notify_all()

        thread = threading.Thread(target=relay, name=f"{self.name}-stop-relay", daemon=True)
        self._relays[id(stop)] = thread
        thread.start()

    def _park(self, kind: ParkKind, deadline: float | None) -> None:
        self._park_seq += 1
        self._parked = Parked(self._park_seq, kind, deadline)
        self._cond.notify_all()

    def _wait(self, wait: Wait, stop: threading.Event) -> Answer:
        if isinstance(wait, WaitForList):
            raise TypeError(
                f"reflector {self.name}: a threaded reflector's lister blocks until it has "
                "an answer; ListPending is for stepped drivers"
            )
        if isinstance(wait, WaitUntil):
            return self._wait_until(wait, stop)
        return self._wait_for_event(wait, stop)

    def _wait_until(self, wait: WaitUntil, stop: threading.Event) -> UntilAnswer:
        clock = self._clock
        wake_at = _first_wake(wait)
        with self._cond:
            self._park(wait.reason, wake_at)
            try:
                while True:
                    if stop.is_set():
                        return Wake.STOP
                    if clock.now() >= wake_at:
                        return _due(wait)
                    clock.wait_until(self._cond, wake_at)
            finally:
                self._parked = None

    def _wait_for_event(self, wait: WaitForEvent, stop: threading.Event) -> EventAnswer:
        clock = self._clock
        pump = self._pump
        if pump is None or pump.watch is not wait.watch:
            pump = self._pump = _Pump(wait.watch, self._cond, self.name)
        with self._cond:
            self._park("watch", wait.resync_at)
            try:
                while True:
                    if stop.is_set():
                        return Wake.STOP
                    if wait.resync_at is not None and clock.now() >= wait.resync_at:
                        return Wake.RESYNC
                    if pump.inbox:
                        return pump.inbox.popleft()
                    clock.wait_until(self._cond, wait.resync_at)
            finally:
                self._parked = None


def _first_wake(wait: WaitUntil) -> float:
    """When a :class:`WaitUntil` first needs an answer: its deadline or its resync."""
    if wait.resync_at is None:
        return wait.deadline
    return min(wait.deadline, wait.resync_at)


def _due(wait: WaitUntil) -> Literal[Wake.DEADLINE, Wake.RESYNC]:
    """The answer to a :class:`WaitUntil` whose first wake time has come: the resync when
    it is due no later than the deadline (the two timers are independent in client-go;
    the earlier fires first), else the deadline."""
    if wait.resync_at is not None and wait.resync_at <= wait.deadline:
        return Wake.RESYNC
    return Wake.DEADLINE


class _Blocked(enum.Enum):
    """A stepped driver's "no answer yet": the wait goes on."""

    BLOCKED = "blocked"


_BLOCKED = _Blocked.BLOCKED


class SteppedReflector(_ReflectorBase):
    """The reflector loop driven one step at a time, in the caller's thread.

    ``step()`` resumes the loop if what it waits for is there -- an event readable
    without waiting (``watch.next_event(0)``), the clock past a deadline, or stop -- and
    runs it to its next wait; it returns False (and changes nothing) otherwise. The
    loop is ``run()`` (list and watch forever). For simulators and Hypothesis: with an
    :class:`~refimpl.apiserver.ApiServerCore` and a FakeClock every run is a pure
    function of the steps taken.
    """

    def _init_driver(self) -> None:
        self._stop = threading.Event()
        self._steps: Steps[None] | None = None
        self.waiting: Wait | None = None  # what the loop is parked on
        self.done = False
        #: False: a ``WaitUntil`` ends only through :meth:`wake`, never by the clock (a
        #: driver that steers the length of backoffs, e.g. to follow another
        #: implementation whose jitter differs).
        self.clock_wakes = True
        self._wake = False

    def wake(self) -> None:
        """End the current (or next) ``WaitUntil`` at the next ``step()``, whatever the
        clock says (the driver chose this backoff's length), or resume a
        ``WaitForList`` (the driver has the answer)."""
        self._wake = True

    def stop(self) -> None:
        """Request stop; the next ``step()`` ends the loop."""
        self._stop.set()

    def step(self) -> bool:
        """Make one step of progress if possible; True if something happened."""
        if self.done:
            return False
        answer: Answer = None
        if self._steps is None:
            self._steps = self._loop(self._stop).run()
        else:
            assert self.waiting is not None
            resolved = self._resolve(self.waiting)
            if resolved is _BLOCKED:
                return False
            answer = resolved
        try:
            self.waiting = self._steps.send(answer)
        except StopIteration:
            self.done = True
            self.waiting = None
        return True

    def run_until_blocked(self, max_steps: int = 10_000) -> int:
        """Step until no step is possible; returns the number of steps. Raises
        RuntimeError after ``max_steps`` (a livelock, e.g. a watch that never ends
        delivering)."""
        for n in range(max_steps):
            if not self.step():
                return n
        raise RuntimeError(f"reflector {self.name} still busy after {max_steps} steps")

    def next_deadline(self) -> float | None:
        """The clock time at which the loop would wake without an event, if any."""
        w = self.waiting
        if isinstance(w, WaitUntil):
            return _first_wake(w)
        if isinstance(w, WaitForEvent):
            return w.resync_at
        return None

    def _resolve(self, wait: Wait) -> Answer | _Blocked:
        if self._stop.is_set():
            return Wake.STOP
        if isinstance(wait, WaitForList):
            return self._resolve_list()
        if isinstance(wait, WaitUntil):
            return self._resolve_until(wait)
        return self._resolve_event(wait)

    def _resolve_list(self) -> ListAnswer | _Blocked:
        # The lister's answer is there only when the driver says so (wake).
        if self._wake:
            self._wake = False
            return Wake.LISTED
        return _BLOCKED

    def _resolve_until(self, wait: WaitUntil) -> UntilAnswer | _Blocked:
        now = self._clock.now()
        resync_due = wait.resync_at is not None and now >= wait.resync_at
        if resync_due and (not self.clock_wakes or _due(wait) is Wake.RESYNC):
            return Wake.RESYNC  # it fired before the driver's wake (which ends the wait next)
        if self._wake:
            self._wake = False
            return Wake.DEADLINE
        if self.clock_wakes and now >= wait.deadline:
            return Wake.DEADLINE
        if resync_due:
            return Wake.RESYNC
        return _BLOCKED

    def _resolve_event(self, wait: WaitForEvent) -> EventAnswer | _Blocked:
        if wait.resync_at is not None and self._clock.now() >= wait.resync_at:
            return Wake.RESYNC
        try:
            return wait.watch.next_event(0)
        except WatchTimeout:
            return _BLOCKED
        except Exception as err:
            return err
