"""A watch stream on the wire, and the stream faults carried out on it.

:class:`Pump` sends a server-side watch's events as the body of a chunked HTTP answer,
one JSON ``metav1.WatchEvent`` per line (what client-go's ``rest/watch`` decoder and
``watch/streamwatcher.go`` read), and carries out the faults
``refimpl/wire/faults.py`` arms on the stream: a clean end, a cut between events or in
the middle of one, a partial JSON line, a delayed event, an ERROR event, a watch-list
cut before its end bookmark. It writes through the callable it is given, so it knows
nothing of sockets; ``refimpl/wire/server.py`` closes the connection after a cut.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, Final, Literal

import attrs

from refimpl.apiserver import ApiServer
from refimpl.clock import Clock, RealClock
from refimpl.watch import (
    ADDED,
    BOOKMARK,
    DELETED,
    ERROR,
    INITIAL_EVENTS_END_ANNOTATION,
    MODIFIED,
    WatchEvent,
    WatchTimeout,
)
from refimpl.wire.convert import ConfigMapCodec, status_json
from refimpl.wire.faults import Fault, FaultBook, OpenStream
from refimpl.wire.handlers import DEFAULT_PUMP, PumpSettings, WatchStream

__all__ = ["LAST_CHUNK", "Pump", "PumpEnd", "chunk"]

#: Why :meth:`Pump.run` stopped streaming. ``"cut"``: a fault wants the connection
#: closed without ending the body (no last chunk).
PumpEnd = Literal["ended", "timeout", "client-gone", "shutdown", "cut"]
#: The chunk that ends a chunked body.
LAST_CHUNK: Final = b"0\r\n\r\n"


def chunk(data: bytes) -> bytes:
    """``data`` as one chunk of a chunked body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def _line(doc: dict[str, Any]) -> bytes:
    return (json.dumps(doc, separators=(",", ":")) + "\n").encode()


def _is_end_bookmark(event: WatchEvent) -> bool:
    return event.type == BOOKMARK and INITIAL_EVENTS_END_ANNOTATION in event.annotations


@attrs.define
class Pump:
    """Streams one watch: ``write`` puts raw bytes on the connection; ``stopping`` and
    ``client_gone`` are polled every ``settings.poll`` seconds; ``opened`` is the
    stream's entry in ``book`` (its armed faults); ``clock`` times delays."""

    stream: WatchStream
    api: ApiServer[Any]
    codec: ConfigMapCodec
    write: Callable[[bytes], None]
    stopping: Callable[[], bool]
    client_gone: Callable[[], bool]
    book: FaultBook
    opened: OpenStream
    settings: PumpSettings = DEFAULT_PUMP
    clock: Clock = attrs.field(factory=RealClock)
    #: Told an ERROR event's code just before the event is written (the harness's
    #: REF checks order it before anything the client does about it).
    on_error: Callable[[int], None] | None = None

    def run(self) -> PumpEnd:
        """Send events until the server ends the watch, ``timeoutSeconds`` passes, the
        client goes, the server stops or a fault ends the stream; then end the body
        (unless cut or gone). Stops the server-side watch whatever ends it."""
        try:
            end = self._loop()
            if end in ("ended", "timeout", "shutdown"):
                self.write(LAST_CHUNK)
            return end
        except OSError:  # the client closed the connection while we wrote
            return "client-gone"
        finally:
            self.stream.watch.stop()
            self.book.close_stream(self.opened)

    def _loop(self) -> PumpEnd:
        now = time.monotonic
        stream = self.stream
        deadline = None if not stream.timeout_seconds else now() + stream.timeout_seconds
        interval = self.settings.bookmark_interval if stream.allow_bookmarks else 0.0
        next_bookmark = now() + interval
        while not self.stopping():
            fault = self.book.due(self.opened, before="poll")
            if fault is not None:
                return self._between_events(fault)
            try:
                event = stream.watch.next_event(timeout=self.settings.poll)
            except WatchTimeout:
                self.book.idle(self.opened)
                if deadline is not None and now() >= deadline:
                    return "timeout"
                if self.client_gone():
                    return "client-gone"
                if interval and now() >= next_bookmark:
                    self.api.send_bookmarks(stream.watch.id)
                    next_bookmark = now() + interval
                continue
            if event is None:
                return "ended"
            self.book.passed(self.opened, event.object.resource_version)
            if (
                stream.namespace
                and event.type in (ADDED, MODIFIED, DELETED)
                and event.object.namespace != stream.namespace
            ):
                continue
            end = self._send(event)
            if end is not None:
                return end
        return "shutdown"

    def _between_events(self, fault: Fault) -> PumpEnd:
        if fault.op == "watch_end":
            return "ended"
        if fault.op == "watch_error":
            self._error(fault.error().code)
            status = status_json(fault.error(), retry_after=fault.retry_after)
            self.write(chunk(_line({"type": ERROR, "object": status})))
            return "ended"
        return "cut"  # watch_cut between events

    def _send(self, event: WatchEvent) -> PumpEnd | None:
        """Send ``event``, or what the faults due on it make of it; an end if one ends
        the stream."""
        line = _line(self.codec.event_json(event))
        half = max(1, len(line) // 2)
        before: Literal["event", "end-bookmark"] = (
            "end-bookmark" if _is_end_bookmark(event) else "event"
        )
        while (fault := self.book.due(self.opened, before=before)) is not None:
            if fault.op == "watch_delay":
                end = self._wait(fault.seconds)
                if end is not None:
                    return end
            elif fault.op == "watch_cut":  # mid-line: the chunk announces more than comes
                self.write(b"%x\r\n%s" % (len(line), line[:half]))
                return "cut"
            elif fault.op == "watch_partial_line":  # a whole chunk, half a JSON document
                self.write(chunk(line[:half]))
                return "ended"
            else:  # watch_list_cut, before the end bookmark
                return "cut"
        if event.type == ERROR:
            self._error(event.error.code if event.error is not None else 500)
        self.write(chunk(line))
        self.book.sent(self.opened)
        return None

    def _error(self, code: int) -> None:
        if self.on_error is not None:
            self.on_error(code)

    def _wait(self, seconds: float) -> PumpEnd | None:
        """Hold the stream ``seconds`` of ``clock`` time, looking up every poll."""
        deadline = self.clock.now() + seconds
        while (left := deadline - self.clock.now()) > 0:
            if self.stopping():
                return "shutdown"
            if self.client_gone():
                return "client-gone"
            time.sleep(min(left, self.settings.poll))
        return None
