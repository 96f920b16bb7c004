"""Faults on the wire: what a harness (or a scenario file) makes ``refimpl serve`` do
wrong, one named request type each (docs/protocol.md, "Wire faults").

A fault is a JSON object with an ``op`` and its parameters; :func:`parse_fault` checks
one and gives a :class:`Fault`, :class:`FaultBook` keeps the faults waiting for their
request and the watch streams open now, and hands each request the faults that apply
to it. Nothing here does I/O: ``refimpl/wire/stream.py`` carries out the stream
faults, ``refimpl/wire/server.py`` answers the error faults. What the faults stand
for is what client-go's reflector (``tools/cache/reflector.go``, ``watchHandler``) and
its stream decoder (``rest/watch``, ``watch/streamwatcher.go``) must survive.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Final, Literal, cast, get_args

import attrs

from refimpl.apierrors import ApiError, Expired, InternalError, ListError, TooManyRequests

__all__ = [
    "ERROR_CODES",
    "FAULT_OPS",
    "Armed",
    "Fault",
    "FaultBook",
    "FaultError",
    "OpenStream",
    "parse_fault",
]

FaultOp = Literal[
    "watch_end",
    "watch_cut",
    "watch_partial_line",
    "watch_delay",
    "watch_list_cut",
    "watch_error",
    "list_error",
    "compact",
]
FAULT_OPS: Final[tuple[FaultOp, ...]] = get_args(FaultOp)
#: The status codes an error fault can answer with, and the error each one is.
ERROR_CODES: Final[dict[int, type[ApiError]]] = {
    410: Expired,
    429: TooManyRequests,
    500: InternalError,
    503: ListError,
}
_MESSAGES: Final = {
    410: "too old resource version (injected)",
    429: "too many requests (injected)",
    500: "internal error (injected)",
    503: "service unavailable (injected)",
}

_SELECT = ("path", "resource_version", "count", "target")
_STREAM = (*_SELECT, "after_events")
#: The parameters each op takes besides ``op``.
_PARAMETERS: Final[dict[str, tuple[str, ...]]] = {
    "watch_end": _STREAM,
    "watch_cut": (*_STREAM, "mid_line"),
    "watch_partial_line": _STREAM,
    "watch_delay": (*_STREAM, "seconds"),
    "watch_list_cut": ("path", "resource_version", "count"),
    "watch_error": (*_STREAM, "code", "as", "retry_after"),
    "list_error": ("path", "resource_version", "count", "code", "retry_after"),
    "compact": ("rv",),
}
_REQUIRED: Final[dict[str, tuple[str, ...]]] = {
    "watch_delay": ("seconds",),
    "watch_error": ("code",),
    "list_error": ("code",),
}


class FaultError(ValueError):
    """A fault request that is not well formed (the message names the field)."""


@attrs.frozen
class Fault:
    """One wire fault, checked (:func:`parse_fault` builds it from its JSON).

    ``path`` and ``resource_version`` select the requests it applies to (``None``: any;
    a path is compared with the ``/watch/`` segment removed). ``target`` ``"next"``: the
    next ``count`` matching requests; ``"open"``: the watch streams open when it is
    injected. ``after_events``: how many events the stream sends (from its start, or
    from the injection for ``"open"``) before the fault fires.
    """

    op: FaultOp
    path: str | None = None
    resource_version: str | None = None
    count: int = 1
    target: Literal["next", "open"] = "next"
    after_events: int = 0
    mid_line: bool = False
    seconds: float = 0.0
    code: int = 0
    answer: Literal["status", "event"] = "status"  # the JSON's "as"
    retry_after: int | None = None
    rv: str | None = None

    @property
    def on_stream(self) -> bool:
        """It acts on a watch stream (not on the request's answer, not at once)."""
        if self.op == "watch_error":
            return self.answer == "event"
        return self.op.startswith("watch_")

    def matches(self, path: str, resource_version: str) -> bool:
        return (self.path is None or self.path == path) and (
            self.resource_version is None or self.resource_version == resource_version
        )

    def error(self) -> ApiError:
        """The API error an error fault answers with."""
        return ERROR_CODES[self.code](_MESSAGES[self.code])

    def to_json(self) -> dict[str, Any]:
        """The fault's request: ``op`` and every parameter that is not its default."""
        doc: dict[str, Any] = {"op": self.op}
        for name in _PARAMETERS[self.op]:
            field = "answer" if name == "as" else name
            value = getattr(self, field)
            if value != getattr(_DEFAULT, field):
                doc[name] = value
        return doc


_DEFAULT: Final = Fault("compact")


def _expect(doc: Mapping[str, Any], name: str, kind: type | tuple[type, ...], what: str) -> Any:
    value = doc[name]
    if isinstance(value, bool) and kind is not bool:
        raise FaultError(f"{name} must be {what}, not {value!r}")
    if not isinstance(value, kind):
        raise FaultError(f"{name} must be {what}, not {value!r}")
    return value


def _field(doc: Mapping[str, Any], name: str) -> Any:
    """The parameter ``name`` of ``doc``, checked; the value a :class:`Fault` holds."""
    if name in ("path", "resource_version", "rv"):
        value = _expect(doc, name, str, "a string")
        if name == "path" and not value.startswith("/"):
            raise FaultError(f"path must start with '/', not {value!r}")
        if name == "rv" and not (value.isascii() and value.isdigit()):
            raise FaultError(f"rv must be a decimal resourceVersion, not {value!r}")
        if name == "path":
            return value.rstrip("/").replace("/api/v1/watch/", "/api/v1/", 1)
        return value
    if name in ("count", "after_events", "retry_after"):
        value = _expect(doc, name, int, "an integer")
        least = 1 if name == "count" else 0
        if value < least:
            raise FaultError(f"{name} must be at least {least}, not {value}")
        return value
    if name == "mid_line":
        return _expect(doc, name, bool, "true or false")
    if name == "seconds":
        value = _expect(doc, name, (int, float), "a number of seconds")
        if not 0 <= value < float("inf"):
            raise FaultError(f"seconds must be a finite number >= 0, not {value!r}")
        return float(value)
    if name == "code":
        value = _expect(doc, name, int, "an integer")
        if value not in ERROR_CODES:
            raise FaultError(f"code must be one of {sorted(ERROR_CODES)}, not {value}")
        return value
    if name in ("target", "as"):
        choices = ("next", "open") if name == "target" else ("status", "event")
        value = doc[name]
        if value not in choices:
            raise FaultError(f"{name} must be one of {list(choices)}, not {value!r}")
        return value
    raise AssertionError(name)  # every name in _PARAMETERS is handled above


def parse_fault(doc: object) -> Fault:
    """The :class:`Fault` a JSON request describes; :class:`FaultError` names what is
    wrong with one that is not well formed."""
    if not isinstance(doc, Mapping):
        raise FaultError(f"a fault is a JSON object, not {doc!r}")
    op = doc.get("op")
    if op not in _PARAMETERS:
        raise FaultError(f"op must be one of {list(FAULT_OPS)}, not {op!r}")
    allowed = _PARAMETERS[op]
    unknown = sorted(set(doc) - {"op", *allowed})
    if unknown:
        raise FaultError(f"{op} takes no {', '.join(unknown)} (it takes: {', '.join(allowed)})")
    missing = [name for name in _REQUIRED.get(op, ()) if name not in doc]
    if missing:
        raise FaultError(f"{op} needs {', '.join(missing)}")
    values = {("answer" if n == "as" else n): _field(doc, n) for n in allowed if n in doc}
    fault = Fault(op=cast(FaultOp, op), **values)
    if fault.target == "open" and "count" in doc:
        raise FaultError("count applies to target 'next' only")
    as_status = fault.op == "watch_error" and fault.answer == "status"
    if as_status and (fault.target == "open" or fault.after_events):
        raise FaultError("a watch_error answered as a status applies to the next request")
    return fault


@attrs.define(eq=False)
class Armed:
    """A stream fault armed on one stream: it fires once ``remaining`` more events are
    sent. Armed on a stream already open, it first waits for the stream to catch up
    with the server: ``behind`` is the newest resourceVersion when it was armed, and
    the events up to it (written before the fault came) are sent first and do not
    count; ``None`` once caught up (an event newer than it passed, or the stream found
    nothing left to send)."""

    fault: Fault
    remaining: int
    behind: int | None = None


@attrs.define(eq=False)
class OpenStream:
    """A watch stream being sent, as the book sees it: its request and the stream
    faults armed on it."""

    path: str
    resource_version: str
    watch_list: bool
    armed: list[Armed] = attrs.field(factory=list)


class FaultBook:
    """The faults waiting for a request, and the open watch streams (thread-safe).

    A request takes, in injection order, every waiting fault that matches it; each fault
    applies to ``count`` requests, then is gone. Counts the list and watch requests it
    was asked about, and ``activity`` (requests and lines sent), so that a scenario can
    wait for them.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: list[list[Any]] = []  # [fault, requests left]
        self._streams: list[OpenStream] = []
        self.lists = 0
        self.watches = 0
        self.activity = 0

    def touch(self) -> None:
        """Note activity on the wire (a request, a line sent)."""
        with self._lock:
            self.activity += 1

    def add(self, fault: Fault, newest: int = 0) -> int:
        """Queue ``fault`` for its next requests, or (``target`` ``"open"``) arm it on the
        matching open streams, behind the server's ``newest`` resourceVersion; returns
        how many streams it was armed on (0 when queued). A ``compact`` is the server's
        business, not the book's."""
        if fault.op == "compact":
            raise ValueError("compact acts at once; WireServer.inject carries it out")
        with self._lock:
            if fault.target == "next":
                self._waiting.append([fault, fault.count])
                return 0
            streams = [s for s in self._streams if fault.matches(s.path, s.resource_version)]
            for stream in streams:
                stream.armed.append(Armed(fault, fault.after_events, newest))
            return len(streams)

    def _take(self, path: str, rv: str, wanted: Any) -> list[Fault]:
        taken: list[Fault] = []
        for entry in self._waiting:
            fault: Fault = entry[0]
            if wanted(fault) and fault.matches(path, rv):
                taken.append(fault)
                entry[1] -= 1
        self._waiting = [e for e in self._waiting if e[1] > 0]
        return taken

    def take_error(self, verb: Literal["list", "watch"], path: str, rv: str) -> Fault | None:
        """The error fault that answers this list or watch request instead of the API
        server, if one waits for it (the first that matches; only it is used up)."""
        op = "list_error" if verb == "list" else "watch_error"
        with self._lock:
            if verb == "list":
                self.lists += 1
            else:
                self.watches += 1
            for entry in self._waiting:
                fault: Fault = entry[0]
                if fault.op == op and not fault.on_stream and fault.matches(path, rv):
                    entry[1] -= 1
                    self._waiting = [e for e in self._waiting if e[1] > 0]
                    return fault
        return None

    def open_stream(self, path: str, rv: str, *, watch_list: bool) -> OpenStream:
        """Register a watch stream that starts now, armed with the waiting stream faults
        that match it (``watch_list_cut`` only on a watch-list)."""
        stream = OpenStream(path, rv, watch_list)

        def wanted(fault: Fault) -> bool:
            return fault.on_stream and (fault.op != "watch_list_cut" or watch_list)

        with self._lock:
            stream.armed = [Armed(f, f.after_events) for f in self._take(path, rv, wanted)]
            self._streams.append(stream)
        return stream

    def close_stream(self, stream: OpenStream) -> None:
        with self._lock:
            self._streams = [s for s in self._streams if s is not stream]

    def due(
        self, stream: OpenStream, *, before: Literal["poll", "event", "end-bookmark"]
    ) -> Fault | None:
        """The first fault armed on ``stream`` that fires now, disarmed. ``before``: what
        the stream is about to do: look for its next event (``"poll"``: an end, a cut or
        an error event fires, once its ``after_events`` are sent) or send one (a cut
        mid-line, a partial line or a delay fires; a watch-list cut only on the
        initial-events-end bookmark)."""
        with self._lock:
            for i, armed in enumerate(stream.armed):
                fault = armed.fault
                if fault.op == "watch_list_cut":
                    fires = before == "end-bookmark"
                else:
                    on_event = fault.op in ("watch_partial_line", "watch_delay") or (
                        fault.op == "watch_cut" and fault.mid_line
                    )
                    ready = armed.behind is None and armed.remaining == 0
                    fires = ready and on_event == (before != "poll")
                if fires:
                    del stream.armed[i]
                    return fault
        return None

    def passed(self, stream: OpenStream, resource_version: str) -> None:
        """The stream took an event of this resourceVersion from the server (before
        sending it, or skipping it)."""
        if not resource_version.isdigit():
            return
        rv = int(resource_version)
        with self._lock:
            for armed in stream.armed:
                if armed.behind is not None and rv > armed.behind:
                    armed.behind = None

    def idle(self, stream: OpenStream) -> None:
        """The stream found nothing to send: it has caught up with the server."""
        with self._lock:
            for armed in stream.armed:
                armed.behind = None

    def sent(self, stream: OpenStream) -> None:
        """The stream sent an event."""
        with self._lock:
            for armed in stream.armed:
                if armed.behind is None and armed.remaining > 0:
                    armed.remaining -= 1

    def open_streams(self, path: str | None = None, rv: str | None = None) -> int:
        """How many watch streams matching ``path`` and ``rv`` (``None``: any) are open."""
        probe = Fault("watch_end", path=path, resource_version=rv)
        with self._lock:
            return sum(probe.matches(s.path, s.resource_version) for s in self._streams)

    def waiting(self) -> list[Fault]:
        """The faults still waiting for a request, in injection order."""
        with self._lock:
            return [e[0] for e in self._waiting]
