"""Invariants of the ``informer`` component, checked on the adapter's answers alone.

Owns what the harness's answers so far imply — the *given* state (the last
``list_reply``, then every ``watch_event`` after it), every resourceVersion given per key,
the newest resourceVersion given — and what the adapter's answers imply: each handler's
view (its calls replayed), ``has_synced`` so far, how long the informer has waited
without asking for anything.
It needs no reference, so it checks implementations that behave like no client-go
generation as strictly as those that do. Every violation names its docs/invariants.md
ID. Ports nothing; the properties are those of ``spec/Informer.tla`` (StoreBeforeHandler,
PerKeyRVOrder, Converges) stated on what a protocol client can see.

:func:`observation_problem` is separate: a malformed answer is the adapter's failure
(exit 2), not a property of the implementation.
"""

from __future__ import annotations

from typing import Any

__all__ = ["InformerChecker", "observation_problem", "state_diff"]

WAITING_OPS = frozenset({"idle", "list", "watch", "watching", "sleeping"})
CALL_KINDS = frozenset({"add", "update", "delete"})
#: Fake seconds an informer may sleep after an error before asking again (client-go
#: backs off at most 30 s, jittered up to twice that).
LIVENESS_SECONDS = 300.0


def _key(obj: dict[str, Any]) -> str:
    namespace = obj.get("namespace", "")
    return f"{namespace}/{obj['name']}" if namespace else str(obj["name"])


def _is_object(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("name"), str)
        and isinstance(value.get("namespace", ""), str)
        and isinstance(value.get("rv"), str)
    )


def _rv_int(rv: Any) -> int | None:
    if isinstance(rv, str) and rv.isdigit():
        return int(rv)
    return None


def observation_problem(result: Any) -> str | None:
    """Why ``result`` is not an informer observation (None if it is one)."""
    if not isinstance(result, dict):
        return f"an informer answer must be an observation object, got {result!r:.80}"
    waiting = result.get("waiting")
    if not isinstance(waiting, dict) or waiting.get("op") not in WAITING_OPS:
        return f"'waiting' must be an object with op in {sorted(WAITING_OPS)}: {waiting!r:.80}"
    if waiting["op"] in ("list", "watch", "watching") and not isinstance(waiting.get("rv"), str):
        return f"'waiting.rv' must be a string for op {waiting['op']!r}"
    if not isinstance(result.get("has_synced"), bool):
        return "'has_synced' must be a boolean"
    cache = result.get("cache")
    if not isinstance(cache, list) or not all(_is_object(o) for o in cache):
        return "'cache' must be a list of objects {namespace, name, rv, labels}"
    calls = result.get("calls")
    if not isinstance(calls, list):
        return "'calls' must be a list"
    for call in calls:
        if not isinstance(call, dict):
            return f"a call must be an object, got {call!r:.80}"
        if call.get("kind") not in CALL_KINDS:
            return f"call kind must be add, update or delete: {call!r:.120}"
        for name in ("handler", "key", "rv"):
            if not isinstance(call.get(name), str):
                return f"call field {name!r} must be a string: {call!r:.120}"
        if "cache" not in call or not (call["cache"] is None or isinstance(call["cache"], str)):
            return f"call field 'cache' must be a string or null: {call!r:.120}"
        if call["kind"] == "update" and not isinstance(call.get("old_rv"), str):
            return f"an update call needs a string 'old_rv': {call!r:.120}"
    return None


class InformerChecker:
    """Feeds on (request, adapter response) pairs of one informer example; returns the
    invariants violated (see the module docstring)."""

    def __init__(self) -> None:
        #: key -> resourceVersion of the state the answers so far imply.
        self.given: dict[str, int] = {}
        #: key -> every resourceVersion given for it (objects and deletions).
        self.given_rvs: dict[str, set[str]] = {}
        self.newest_given = 0
        self.lists_given = 0
        #: key -> resourceVersion of the first list reply (None before it).
        self.first_list: dict[str, int] | None = None
        self.handlers: set[str] = set()
        #: handler -> key -> resourceVersion, from its calls.
        self.views: dict[str, dict[str, int]] = {}
        self.paused = False
        self.synced = False
        #: A list reply reached the cache (given while not paused, or resumed since).
        self.list_cached = False
        self.asleep_for = 0.0
        #: A watch was answered 410 and no list was given since.
        self.expired = False
        #: The objects of a watch-list stream before its end bookmark (None: none open).
        self.initial_events: dict[str, int] | None = None
        self.started = False
        self.waiting: dict[str, Any] = {"op": "idle"}

    # -- what the harness gave -----------------------------------------------------------

    def _give(self, obj: dict[str, Any]) -> None:
        key = _key(obj)
        self.given_rvs.setdefault(key, set()).add(obj["rv"])
        if self.initial_events is None:  # a watch-list's rv counts from its end bookmark
            self.newest_given = max(self.newest_given, _rv_int(obj["rv"]) or 0)

    def _listed(self, objects: dict[str, int], rv: Any) -> None:
        """A list reply, or a watch-list's initial events up to the end bookmark."""
        self.given = objects
        if self.first_list is None:
            self.first_list = dict(objects)
        self.newest_given = max(self.newest_given, _rv_int(rv) or 0, *objects.values())
        self.lists_given += 1
        self.expired = False

    def record_request(self, request: dict[str, Any]) -> None:
        """Take in what a request gives the informer (handlers, start, the harness's
        list and watch answers, time) before its answer is checked."""
        op = request.get("op")
        if op == "advance":
            seconds = request.get("seconds")
            if self.waiting.get("op") == "sleeping" and isinstance(seconds, (int, float)):
                self.asleep_for += float(seconds)
            return
        if op != "call":
            return
        method = request.get("method")
        args = request.get("args") or {}
        if method == "add_handler" and isinstance(args.get("name"), str):
            self.handlers.add(args["name"])
            self.views.setdefault(args["name"], {})
        elif method == "start":
            self.started = True
        elif method == "pause":
            self.paused = True
        elif method == "resume":
            self.paused = False
        elif method in ("watch_error", "watch_end"):
            self.initial_events = None  # a watch-list cut short changes nothing
            if args.get("reason", args.get("how")) == "expired":
                self.expired = True
        elif method == "watch_open" and self.waiting.get("send_initial_events") is True:
            self.initial_events = {}
        elif method == "list_reply":
            objects = [o for o in args.get("objects") or [] if _is_object(o)]
            for obj in objects:
                self._give(obj)
            self._listed({_key(o): _rv_int(o["rv"]) or 0 for o in objects}, args.get("rv"))
        elif method == "watch_event" and _is_object(args.get("object")):
            obj = args["object"]
            kind = args.get("type")
            scratch = self.initial_events
            if kind == "BOOKMARK":
                if scratch is not None and args.get("initial_events_end") is True:
                    self.initial_events = None
                    self._listed(scratch, obj["rv"])
                elif scratch is None:
                    self.newest_given = max(self.newest_given, _rv_int(obj["rv"]) or 0)
                return
            self._give(obj)
            state = self.given if scratch is None else scratch
            if kind in ("ADDED", "MODIFIED"):
                state[_key(obj)] = _rv_int(obj["rv"]) or 0
            elif kind == "DELETED":
                state.pop(_key(obj), None)

    # -- checks ----------------------------------------------------------------------------

    def check(self, request: dict[str, Any], response: dict[str, Any]) -> list[str]:
        if "result" not in response:
            return []
        self.record_request(request)
        out: list[str] = []
        result = response["result"]
        if request.get("op") != "call" or not isinstance(result, dict):
            return out
        for call in result.get("calls", []):
            out.extend(self.check_call(call))
        out.extend(self._check_waiting(result["waiting"]))
        out.extend(self._check_state(result))
        return out

    def check_call(self, call: dict[str, Any]) -> list[str]:
        """The findings for one handler call, against what was given so far."""
        handler, kind, key, rv = call["handler"], call["kind"], call["key"], call["rv"]
        where = f"{handler}.on_{kind}({key}@{rv or '?'})"
        if handler not in self.handlers:
            return [f"INF-8 nothing invented: {where} for a handler that was never added"]
        if key not in self.given_rvs or (rv and rv not in self.given_rvs[key]):
            return [f"INF-8 nothing invented: {where}, but {key}@{rv} was never given"]
        view = self.views[handler]
        had = view.get(key)
        number = _rv_int(rv)
        cached = _rv_int(call["cache"])
        out: list[str] = []
        if kind != "delete" and (cached is None or (number is not None and cached < number)):
            # An add or update must find its object (or a newer one) already cached.
            out.append(
                f"INF-1 store before notify: {where} ran while the cache held "
                f"{key}@{call['cache'] or 'nothing'}"
            )
        if kind == "add":
            if had is not None:
                out.append(f"INF-2 per key in order: {where} but {handler} already has {key}@{had}")
            view[key] = number or 0
        elif kind == "update":
            old = _rv_int(call.get("old_rv"))
            if had is None:
                out.append(f"INF-2 per key in order: {where} but {handler} never had {key}")
            elif old != had:
                out.append(
                    f"INF-2 per key in order: {where} with old {key}@{call['old_rv']}, "
                    f"but {handler} had {key}@{had}"
                )
            if number is not None and old is not None and number < old:
                out.append(f"INF-2 per key in order: {where} goes back from rv {old}")
            view[key] = number or 0
        else:
            if had is None:
                out.append(f"INF-2 per key in order: {where} but {handler} never had {key}")
            elif number is not None and number < had:
                out.append(f"INF-2 per key in order: {where} is older than {key}@{had}")
            if cached is not None and (number is None or cached <= number):
                out.append(
                    f"INF-1 store before notify: {where} ran while the cache still held "
                    f"{key}@{call['cache']}"
                )
            view.pop(key, None)
        return out

    def _check_waiting(self, waiting: dict[str, Any]) -> list[str]:
        op = waiting["op"]
        out: list[str] = []
        if op != "sleeping":
            self.asleep_for = 0.0
        elif self.asleep_for >= LIVENESS_SECONDS:
            # Judged on an observation, not on the advance: only an answer says the
            # informer is still asleep.
            out.append(
                f"INF-9 it keeps trying: the watch loop ended: no list or watch request in "
                f"{self.asleep_for:g} s of fake time after the last one failed or ended "
                "(client-go backs off at most 30 s, jittered up to 60 s, and asks again)"
            )
        if op == "idle" and self.started:
            out.append("INF-9 it keeps trying: the informer is idle after start")
        if op in ("list", "watch") and waiting != self.waiting:
            rv = waiting["rv"]
            what = f"asked to {op} at rv {rv!r} after rv {self.newest_given} was given"
            relist = op == "list" or waiting.get("send_initial_events") is True
            if not relist and self.expired:
                out.append(
                    f"REF-3 a watch resumes where it stopped: {what}, but the last watch "
                    "was answered 410 (that history is gone): only a relist can resume"
                )
            if rv == "0" and self.lists_given:
                out.append(f'REF-1 the right resourceVersion: {what} ("0" may serve stale data)')
            elif rv not in ("", "0"):
                number = _rv_int(rv)
                if number is None:
                    out.append(f"REF-1 the right resourceVersion: {what}: not a resourceVersion")
                elif number < self.newest_given:
                    label = "REF-1" if relist else "REF-3 a watch resumes where it stopped"
                    out.append(f"{label}: {what}; what lies between would be seen again")
        self.waiting = dict(waiting)
        return out

    def _check_state(self, result: dict[str, Any]) -> list[str]:
        out: list[str] = []
        synced = result["has_synced"]
        if self.synced and not synced:
            out.append("FIFO-7 sync is monotone: has_synced went back from true to false")
        cache = {_key(o): _rv_int(o["rv"]) for o in result["cache"]}
        if not self.paused and self.lists_given:
            self.list_cached = True
        if synced and not self.synced:
            missing = [
                key
                for key, rv in (self.first_list or {}).items()
                if key in self.given and (cache.get(key) or -1) < rv
            ]
            if self.first_list is None or missing:
                out.append(
                    "FIFO-7 sync: has_synced is true before the first list reached the cache"
                    + (f" ({', '.join(missing)} not cached yet)" if missing else "")
                )
        elif self.list_cached and not synced and not self.paused:
            out.append("FIFO-7 sync: has_synced is false although the first list is cached")
        self.synced = self.synced or synced
        if self.paused:
            return out
        if cache != self.given:
            out.append("INF-3 the cache is what it was given: " + state_diff(cache, self.given))
        for handler in sorted(self.views):
            view = self.views[handler]
            if view != cache and cache == self.given:
                lost = state_diff(view, self.given)
                out.append(f"INF-3 no lost notification: {handler} saw {lost}")
        return out


def state_diff(have: dict[str, Any], want: dict[str, Any]) -> str:
    parts: list[str] = []
    for key in sorted(set(have) | set(want)):
        if key not in want:
            parts.append(f"{key}@{have[key]} is a ghost (gone from the server)")
        elif key not in have:
            parts.append(f"{key}@{want[key]} is missing")
        elif have[key] != want[key]:
            parts.append(f"{key} is at rv {have[key]}, the server's is {want[key]}")
    return "; ".join(parts)
