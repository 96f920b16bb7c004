"""What an honest API server and reflector send, for the generators' realistic inputs
(``--inputs realistic``, the default), and the checks that a trace still looks so.

:class:`History` is one server's writes: resourceVersions issued by one counter that
only grows (an API server's are global, not per object), each key's latest object, and
which keys are alive. The cache pieces' generator
(:mod:`~refimpl.conformance.search.machines`) asks it for the object an ``add`` or
``update`` carries (a new rv), a ``delete`` (the last rv the client saw of that object,
as a reflector's deletes and DeletedFinalStateUnknown carry), and a ``replace`` list
(every live object at its latest rv, after writes the client missed); the informer's
server model (:mod:`~refimpl.conformance.search.informer_machine`) keeps its objects and
rv in one.

:func:`realistic` says whether a list of requests could have come from such a history
(the minimizer keeps a realistic trace realistic with it); :func:`informer_shapes` and
:func:`cache_shapes` name the rare shapes an informer or a cache piece's trace contains
(``benchmarks/conformance.py --shapes`` counts them). Ports nothing;
docs/conformance.md describes both modes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from refimpl.cache.processor import determine_resync_period, handler_resync_period

__all__ = [
    "CACHE_SHAPES",
    "INPUTS",
    "SHAPES",
    "History",
    "Inputs",
    "cache_shapes",
    "informer_shapes",
    "object_key",
    "realistic",
]

#: ``--inputs``: ``realistic`` (what an honest server and reflector send) or ``any``
#: (API-legal but unusual sequences: rvs in any order, deletes of unseen objects, lists
#: unrelated to what came before; what the search generated before #25).
Inputs = Literal["realistic", "any"]
INPUTS: tuple[Inputs, ...] = ("realistic", "any")


def object_key(obj: dict[str, Any]) -> str:
    """client-go's MetaNamespaceKeyFunc: ``namespace/name``, or ``name`` without one."""
    namespace, name = str(obj.get("namespace", "")), str(obj.get("name", ""))
    return f"{namespace}/{name}" if namespace else name


def _rv(obj: dict[str, Any]) -> int:
    text = str(obj.get("rv", ""))
    return int(text) if text.isdigit() else -1


class History:
    """One API server's writes, as far as the generators need them."""

    def __init__(self, rv: int = 1) -> None:
        #: The last resourceVersion issued.
        self.rv = rv
        #: Live objects by key, each at its latest rv.
        self.objects: dict[str, dict[str, Any]] = {}
        #: Every key ever written: its object as last written (deleted ones too).
        self.last: dict[str, dict[str, Any]] = {}

    @staticmethod
    def make(key: str, rv: int, labels: dict[str, str]) -> dict[str, Any]:
        namespace, _, name = key.rpartition("/")
        return {"namespace": namespace, "name": name, "rv": str(rv), "labels": labels}

    def write(self, key: str, labels: dict[str, str]) -> dict[str, Any]:
        """Create or update ``key`` at a new rv; the object written."""
        self.rv += 1
        obj = self.make(key, self.rv, labels)
        self.objects[key] = obj
        self.last[key] = obj
        return obj

    def delete(self, key: str) -> dict[str, Any] | None:
        """Delete ``key``: the object as the client last saw it, or None if not live."""
        return self.objects.pop(key, None)

    def delete_at_new_rv(self, key: str) -> dict[str, Any] | None:
        """Delete ``key`` as a watch's DELETED event shows it: at a new rv."""
        obj = self.objects.pop(key, None)
        if obj is None:
            return None
        self.rv += 1
        obj = {**obj, "rv": str(self.rv)}
        self.last[key] = obj
        return obj

    def listing(self) -> list[dict[str, Any]]:
        """A list's objects: every live one at its latest rv, by key."""
        return [self.objects[k] for k in sorted(self.objects)]


def _cache_problem(state: dict[str, Any], method: str, args: dict[str, Any]) -> str | None:
    """Apply one cache request to ``state``; why it is unrealistic, or None."""
    alive: dict[str, int] = state["alive"]
    seen: set[tuple[str, int]] = state["seen"]
    obj = args.get("obj")
    if method in ("add", "update") and isinstance(obj, dict):
        key, rv = object_key(obj), _rv(obj)
        if rv <= state["top"]:
            return f"{method} of {key} at rv {rv}: not newer than rv {state['top']}"
        if (key in alive) != (method == "update"):
            return f"{method} of {key}, which is {'' if key in alive else 'not '}live"
        alive[key], state["top"] = rv, rv
        seen.add((key, rv))
    elif method == "delete" and isinstance(obj, dict):
        key = object_key(obj)
        if alive.get(key) != _rv(obj):
            return f"delete of {key} at rv {_rv(obj)}: not the last rv the client saw"
        del alive[key]
    elif method in ("known_add", "known_delete") and isinstance(obj, dict):
        if (object_key(obj), _rv(obj)) not in seen:
            return f"{method} of {object_key(obj)} at an rv never written"
    elif method == "replace":
        return _replace_problem(state, args)
    return None


def _replace_problem(state: dict[str, Any], args: dict[str, Any]) -> str | None:
    objs = [o for o in args.get("objs") or [] if isinstance(o, dict)]
    top = _rv({"rv": args.get("rv")})
    keys = [object_key(o) for o in objs]
    if len(set(keys)) != len(keys):
        return "a replace list holding one key twice"
    if top < state["top"] or any(_rv(o) > top for o in objs):
        return f"a replace at rv {top}, older than what it lists or what came before"
    for obj, key in zip(objs, keys, strict=True):
        if (key, _rv(obj)) not in state["seen"] and _rv(obj) <= state["top"]:
            return f"a replace listing {key} at rv {_rv(obj)}, never written"
    state["alive"] = {k: _rv(o) for k, o in zip(keys, objs, strict=True)}
    state["seen"] |= {(k, _rv(o)) for k, o in zip(keys, objs, strict=True)}
    state["top"] = top
    return None


def _informer_problem(state: dict[str, Any], method: str, args: dict[str, Any]) -> str | None:
    """Apply one informer request to ``state``: an object's rv never goes back (a watch
    event's MODIFIED or DELETED moves it on), a list holds nothing newer than its rv,
    lists' rvs only grow."""
    latest: dict[str, int] = state["latest"]
    if method == "list_reply":
        top = _rv({"rv": args.get("rv")})
        objs = [o for o in args.get("objects") or [] if isinstance(o, dict)]
        if top < state["top"] or any(_rv(o) > top for o in objs):
            return f"a list at rv {top}, older than what it holds or an earlier list"
        for obj in objs:
            key = object_key(obj)
            if _rv(obj) < latest.get(key, -1):
                return f"a list holding {key} at rv {_rv(obj)}, older than seen before"
            latest[key] = _rv(obj)
        state["top"] = top
    elif method == "watch_event" and args.get("type") in ("ADDED", "MODIFIED", "DELETED"):
        event = args.get("object")
        if not isinstance(event, dict):
            return None
        key, rv = object_key(event), _rv(event)
        before = latest.get(key, -1)
        if rv < before or (rv == before and args.get("type") != "ADDED"):
            return f"a {args.get('type')} event of {key} at rv {rv}, not after rv {before}"
        latest[key] = rv
    return None


def realistic(component: str, requests: Sequence[dict[str, Any]]) -> str | None:
    """Why ``requests`` could not come from an honest server and reflector (the first
    reason), or None if they could. Components other than the cache pieces and the
    informer carry no objects: always None."""
    state: dict[str, Any] = {"alive": {}, "seen": set(), "top": 0, "latest": {}}
    for request in requests:
        if request.get("op") != "call":
            continue
        method, args = str(request.get("method")), request.get("args") or {}
        if component in ("store", "delta_fifo", "real_fifo"):
            problem = _cache_problem(state, method, args)
        elif component == "informer":
            problem = _informer_problem(state, method, args)
        else:
            return None
        if problem is not None:
            return problem
    return None


#: The rare informer interleavings the generator must reach often (#25, #30):
#: ``expired_watch``: a watch request answered 410 while the informer waits on it;
#: ``unseen_delete``: an object deleted at the server while the informer was not
#: watching (seen as a relist that no longer holds it); ``relist_changes``: a relist
#: that drops, changes or re-adds objects; ``late_handler``: a handler added after start;
#: ``own_resync``: a resyncing informer with a handler of its own period, so not due at
#: every resync check (it never resyncs, or less often); ``resync_relist``: that, then a
#: resync check falls due, then a relist that changes an object (kubernetes PR #86015:
#: the change reached only the handlers due for a resync at the last check).
SHAPES = (
    "expired_watch",
    "unseen_delete",
    "relist_changes",
    "late_handler",
    "own_resync",
    "resync_relist",
)


class _Resyncs:
    """The handlers' resync periods as an informer settles them (client-go's
    AddEventHandlerWithResyncPeriod rules, refimpl/cache/processor.py), and the time
    since start, so a trace shows when a resync check first falls due."""

    def __init__(self, default: float) -> None:
        self.check = default
        self.default = default
        self.requested: list[float] = []
        self.started_at: float | None = None
        self.now = 0.0

    def add(self, resync: object) -> None:
        requested = float(resync) if isinstance(resync, int | float) else None
        period, self.check = handler_resync_period(
            requested, self.default, self.check, self.started_at is not None
        )
        self.requested.append(period)

    def differ(self) -> bool:
        """The informer resyncs and some handler is not due at every check: it never
        resyncs or its period is longer than the check period."""
        periods = {determine_resync_period(p, self.check) for p in self.requested}
        return self.check > 0 and periods != {self.check}

    def checked(self) -> bool:
        """A resync check has fallen due since start (while handlers differ)."""
        started = self.started_at
        return started is not None and self.check > 0 and self.now - started >= self.check


def informer_shapes(requests: Sequence[dict[str, Any]]) -> set[str]:
    """Which of :data:`SHAPES` the informer trace ``requests`` contains."""
    found: set[str] = set()
    known: dict[str, int] = {}  # what the informer last learnt of each live key
    gone: set[str] = set()  # keys it learnt were deleted
    listed = False
    resyncs = _Resyncs(0.0)
    for request in requests:
        method, args = request.get("method"), request.get("args") or {}
        if request.get("op") == "create":
            resync = (request.get("options") or {}).get("resync", 0)
            resyncs = _Resyncs(float(resync) if isinstance(resync, int | float) else 0.0)
        elif request.get("op") == "advance" and isinstance(request.get("seconds"), int | float):
            resyncs.now += float(request["seconds"])
        elif method == "start":
            resyncs.started_at = resyncs.now
        elif method == "add_handler":
            if resyncs.started_at is not None:
                found.add("late_handler")
            resyncs.add(args.get("resync"))
            if resyncs.differ():
                found.add("own_resync")
        elif method == "watch_error" and args.get("reason") == "expired":
            found.add("expired_watch")
        elif method == "watch_event" and isinstance(args.get("object"), dict):
            key = object_key(args["object"])
            if args.get("type") == "DELETED":
                known.pop(key, None)
                gone.add(key)
            elif args.get("type") in ("ADDED", "MODIFIED"):
                known[key] = _rv(args["object"])
        elif method == "list_reply":
            now = {object_key(o): _rv(o) for o in args.get("objects") or []}
            dropped = set(known) - set(now)
            changed = {k for k in now if k in known and known[k] != now[k]}
            if listed and dropped:
                found.add("unseen_delete")
            if listed and (dropped or changed or (set(now) & gone)):
                found.add("relist_changes")
            if listed and changed and resyncs.differ() and resyncs.checked():
                found.add("resync_relist")
            gone = (gone | dropped) - set(now)
            known, listed = now, True
    return found


#: The rare shapes of the cache pieces' traces (#30): ``several_values``: an object
#: with two or more values of one index function (``labels``); ``values_change``: a
#: write that changes how many values an object has, with several on one side (an
#: update from one value to two used to drop the key from the shared one: kubernetes PR
#: #109137); ``duplicate_key``: one ``replace`` listing a key twice (only ``--inputs
#: any``: no API server sends it; kubernetes PR #96797 needed it).
CACHE_SHAPES = ("several_values", "values_change", "duplicate_key")


def _values(obj: object) -> int:
    labels = obj.get("labels") if isinstance(obj, dict) else None
    return len(labels) if isinstance(labels, dict) else 0


def cache_shapes(requests: Sequence[dict[str, Any]]) -> set[str]:
    """Which of :data:`CACHE_SHAPES` the store or FIFO trace ``requests`` contains."""
    found: set[str] = set()
    stored: dict[str, int] = {}  # how many label values each written key has

    def write(obj: dict[str, Any]) -> None:
        key, count = object_key(obj), _values(obj)
        if count >= 2:
            found.add("several_values")
        if key in stored and stored[key] != count and max(stored[key], count) >= 2:
            found.add("values_change")
        stored[key] = count

    for request in requests:
        method, args = request.get("method"), request.get("args") or {}
        obj = args.get("obj")
        if method in ("add", "update") and isinstance(obj, dict):
            write(obj)
        elif method == "delete" and isinstance(obj, dict):
            stored.pop(object_key(obj), None)
        elif method == "replace":
            objs = [o for o in args.get("objs") or [] if isinstance(o, dict)]
            if len({object_key(o) for o in objs}) < len(objs):
                found.add("duplicate_key")
            for o in objs:
                write(o)
            listed = {object_key(o) for o in objs}
            stored = {k: v for k, v in stored.items() if k in listed}
    return found
