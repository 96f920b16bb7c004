"""Wire faults (``refimpl/wire/faults.py``, ``stream.py``): each one injected through
:meth:`WireServer.inject` and observed by a real HTTP client — the standard library's
``http.client`` for what a client library sees, a raw socket for the exact chunked
framing (a cut leaves no last chunk; a mid-line cut leaves a chunk short). Each test
checks that the server left no thread behind (``threading.enumerate`` before and after).
"""

from __future__ import annotations

import http.client
import io
import json
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest

from refimpl.clock import FakeClock
from refimpl.meta import Object
from refimpl.wire import WireServer
from refimpl.wire.faults import Fault, FaultError, parse_fault
from refimpl.wire.handlers import PumpSettings

CMS = "/api/v1/configmaps"
NS = "/api/v1/namespaces"
WATCH_LIST = (
    f"{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
    "&allowWatchBookmarks=true"
)


@pytest.fixture
def no_leak() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 5
    while set(threading.enumerate()) - before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert set(threading.enumerate()) - before == set()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def wire(no_leak: None, clock: FakeClock) -> Iterator[WireServer]:
    server = WireServer(pump_settings=PumpSettings(poll=0.02), timer=clock).start()
    yield server
    server.stop()
    assert server.connection_threads() == []


def _headers(wire: WireServer) -> dict[str, str]:
    return {"Authorization": f"Bearer {wire.token}"}


def call(wire: WireServer, path: str, token: str | None = None) -> tuple[int, Any, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", wire.port, timeout=10)
    headers = _headers(wire) if token is None else {"Authorization": f"Bearer {token}"}
    try:
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read()), resp.headers
    finally:
        conn.close()


class Stream:
    """A watch read with http.client, line by line, as a client library reads it."""

    def __init__(self, wire: WireServer, path: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", wire.port, timeout=10)
        self.conn.request("GET", path, headers=_headers(wire))
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200

    def next(self) -> dict[str, Any] | None:
        line = self.resp.readline()
        return json.loads(line) if line else None

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.close()


@attrs.frozen
class Body:
    """A chunked body as it came off the socket: the whole chunks, whether the last
    chunk came, and the bytes left over (a chunk cut short)."""

    chunks: list[bytes]
    ended: bool
    rest: bytes

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(c) for c in self.chunks]


def raw_watch(wire: WireServer, path: str) -> Body:
    """Send a watch request on a plain socket and read until the server closes."""
    with socket.create_connection(("127.0.0.1", wire.port), timeout=10) as sock:
        request = f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {wire.token}\r\n\r\n"
        sock.sendall(request.encode())
        data = b""
        while block := sock.recv(65536):
            data += block
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"chunked" in head, head
    chunks: list[bytes] = []
    while body:
        size_line, sep, after = body.partition(b"\r\n")
        size = int(size_line, 16) if sep else -1
        if size == 0:
            return Body(chunks, True, after[2:])
        if size < 0 or len(after) < size + 2:
            return Body(chunks, False, body)
        chunks.append(after[:size])
        body = after[size + 2 :]
    return Body(chunks, False, b"")


def _create(wire: WireServer, *names: str) -> str:
    for name in names:
        wire.api.create(Object(name, "ns", data={"k": name}))
    return wire.api.resource_version


def _from(rv: str) -> str:
    return f"{CMS}?watch=true&resourceVersion={rv}"


# -- the requests ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "says"),
    [
        ({"op": "watch_snap"}, "op must be one of"),
        ({"op": "watch_cut", "seconds": 1}, "watch_cut takes no seconds"),
        ({"op": "watch_delay"}, "watch_delay needs seconds"),
        ({"op": "watch_delay", "seconds": -1}, "seconds must be a finite number"),
        ({"op": "list_error", "code": 404}, "code must be one of [410, 429, 500, 503]"),
        ({"op": "list_error", "code": "429"}, "code must be an integer"),
        ({"op": "watch_end", "count": 0}, "count must be at least 1"),
        ({"op": "watch_end", "after_events": True}, "after_events must be an integer"),
        ({"op": "watch_end", "target": "all"}, "target must be one of"),
        ({"op": "watch_end", "target": "open", "count": 2}, "count applies to target 'next'"),
        ({"op": "watch_error", "code": 410, "after_events": 1}, "applies to the next request"),
        ({"op": "watch_end", "path": "api/v1"}, "path must start with '/'"),
        ({"op": "compact", "rv": "x"}, "rv must be a decimal resourceVersion"),
        (["watch_end"], "a fault is a JSON object"),
    ],
)
def test_a_malformed_fault_request_says_what_is_wrong(doc: object, says: str) -> None:
    with pytest.raises(FaultError) as caught:
        parse_fault(doc)
    assert says in str(caught.value)


def test_a_fault_request_reads_back_as_it_was_given() -> None:
    for doc in (
        {"op": "watch_cut", "after_events": 2, "mid_line": True, "path": CMS},
        {"op": "watch_error", "code": 410, "as": "event", "target": "open"},
        {"op": "list_error", "code": 429, "retry_after": 5, "count": 3},
        {"op": "watch_delay", "seconds": 2.5, "resource_version": "7"},
        {"op": "compact", "rv": "4"},
        {"op": "watch_list_cut"},
    ):
        assert parse_fault(doc).to_json() == doc
    legacy = parse_fault({"op": "watch_end", "path": "/api/v1/watch/namespaces/a/configmaps"})
    assert legacy.path == f"{NS}/a/configmaps"


# -- stream faults --------------------------------------------------------------------


def test_watch_end_ends_the_stream_cleanly_after_its_events(wire: WireServer) -> None:
    rv = _create(wire)
    wire.inject({"op": "watch_end", "after_events": 2})
    _create(wire, "a", "b", "c")
    body = raw_watch(wire, _from(rv))
    assert [e["object"]["metadata"]["name"] for e in body.events()] == ["a", "b"]
    assert body.ended and body.rest == b""


def test_watch_cut_between_events_leaves_the_body_without_its_last_chunk(
    wire: WireServer,
) -> None:
    rv = _create(wire)
    _create(wire, "a", "b")
    wire.inject({"op": "watch_cut", "after_events": 1})
    body = raw_watch(wire, _from(rv))
    assert len(body.events()) == 1 and not body.ended and body.rest == b""
    wire.inject({"op": "watch_cut", "after_events": 1})
    with Stream(wire, _from(rv)) as stream:  # what a client library sees
        assert stream.next() is not None
        with pytest.raises(http.client.IncompleteRead):
            stream.resp.read()  # the chunked body ended without its last chunk


def test_watch_cut_mid_line_leaves_a_chunk_short(wire: WireServer) -> None:
    rv = _create(wire)
    _create(wire, "a", "b")
    wire.inject({"op": "watch_cut", "after_events": 1, "mid_line": True})
    body = raw_watch(wire, _from(rv))
    assert len(body.events()) == 1 and not body.ended
    size, _, part = body.rest.partition(b"\r\n")
    assert 0 < len(part) < int(size, 16)
    assert part.startswith(b'{"type":"ADDED"')


def test_watch_partial_line_sends_half_a_document_then_ends_the_body(wire: WireServer) -> None:
    rv = _create(wire)
    _create(wire, "a", "b")
    wire.inject({"op": "watch_partial_line", "after_events": 1})
    body = raw_watch(wire, _from(rv))
    assert body.ended and len(body.chunks) == 2
    assert json.loads(body.chunks[0])["object"]["metadata"]["name"] == "a"
    with pytest.raises(json.JSONDecodeError):
        json.loads(body.chunks[1])
    assert body.chunks[1].startswith(b'{"type":"ADDED"') and not body.chunks[1].endswith(b"\n")


def test_watch_delay_holds_an_event_until_the_clock_moves(
    wire: WireServer, clock: FakeClock
) -> None:
    rv = _create(wire)
    wire.inject({"op": "watch_delay", "after_events": 1, "seconds": 30})
    _create(wire, "a", "b", "c")
    with Stream(wire, _from(rv)) as stream:
        assert stream.next() is not None
        assert not _readable(stream, 0.3)  # the second event is held
        clock.step(29.9)
        assert not _readable(stream, 0.3)  # not yet: the clock is short of 30 s
        clock.step(0.1)
        rest = [stream.next(), stream.next()]
    assert [e["object"]["metadata"]["name"] for e in rest if e] == ["b", "c"]


def _readable(stream: Stream, seconds: float) -> bool:
    """Bytes came on the stream's socket within ``seconds`` (nothing is consumed)."""
    return bool(select.select([stream.conn.sock], [], [], seconds)[0])


def _eventually(holds: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + 5
    while not holds() and time.monotonic() < deadline:
        time.sleep(0.01)
    return holds()


def test_watch_list_cut_stops_before_the_end_bookmark(wire: WireServer) -> None:
    _create(wire, "a", "b")
    wire.inject({"op": "watch_list_cut"})
    plain = raw_watch(wire, _from(wire.api.resource_version) + "&timeoutSeconds=1")
    assert plain.ended  # not a watch-list: the fault still waits
    body = raw_watch(wire, WATCH_LIST)
    assert [e["type"] for e in body.events()] == ["ADDED", "ADDED"]
    assert not body.ended
    assert wire.faults.waiting() == []
    complete = raw_watch(wire, WATCH_LIST + "&timeoutSeconds=1")
    end = complete.events()[2]
    assert end["type"] == "BOOKMARK" and end["object"]["metadata"]["annotations"]


def test_watch_error_as_an_event_or_as_the_answer(wire: WireServer) -> None:
    rv = _create(wire)
    _create(wire, "a", "b")
    wire.inject({"op": "watch_error", "code": 410, "as": "event", "after_events": 1})
    body = raw_watch(wire, _from(rv))
    assert [e["type"] for e in body.events()] == ["ADDED", "ERROR"] and body.ended
    status = body.events()[1]["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
    for code, reason, after in [(410, "Expired", None), (429, "TooManyRequests", "1")]:
        wire.inject({"op": "watch_error", "code": code})
        got, answer, headers = call(wire, _from(rv))
        assert (got, answer["code"], answer["reason"]) == (code, code, reason)
        assert headers["Retry-After"] == after
    wire.inject({"op": "watch_error", "code": 500, "retry_after": 7})
    got, answer, headers = call(wire, _from(rv))
    assert (got, headers["Retry-After"], answer["details"]["retryAfterSeconds"]) == (500, "7", 7)


def test_a_fault_aimed_at_the_open_streams_fires_on_an_idle_watch(wire: WireServer) -> None:
    rv = _create(wire)
    with Stream(wire, _from(rv)) as stream, Stream(wire, f"{NS}/other/configmaps?watch=1") as other:
        assert wire.api.wait_for(lambda core: len(core.watches()) == 2, 5)
        assert wire.inject({"op": "watch_end", "target": "open", "path": CMS}) == 1
        assert stream.next() is None  # ended, with nothing sent
        _create(wire, "late")  # the other watch is still open (and filters ns "ns")
        assert _eventually(lambda: wire.faults.open_streams() == 1)
        assert wire.inject({"op": "watch_end", "target": "open"}) == 1
        assert other.next() is None
    assert _eventually(lambda: wire.faults.open_streams() == 0)
    assert wire.inject({"op": "watch_end", "target": "open"}) == 0


# -- list faults, selectors, compaction ------------------------------------------------


def test_list_error_answers_the_next_lists_that_match(wire: WireServer) -> None:
    _create(wire, "a")
    wire.inject({"op": "list_error", "code": 429, "count": 2, "path": f"{NS}/ns/configmaps"})
    assert call(wire, CMS)[0] == 200  # another path
    for _ in range(2):
        status, answer, headers = call(wire, f"{NS}/ns/configmaps?limit=5")
        assert (status, answer["reason"], headers["Retry-After"]) == (429, "TooManyRequests", "1")
    assert call(wire, f"{NS}/ns/configmaps")[0] == 200  # used up
    wire.inject({"op": "list_error", "code": 500, "resource_version": "0"})
    assert call(wire, f"{CMS}?resourceVersion=")[0] == 200
    status, answer, headers = call(wire, f"{CMS}?resourceVersion=0")
    assert (status, answer["reason"], headers["Retry-After"]) == (500, "InternalError", None)
    wire.inject({"op": "list_error", "code": 410})
    assert call(wire, f"{CMS}?watch=true&timeoutSeconds=1")[0] == 200  # a watch is no list
    assert call(wire, CMS)[1]["reason"] == "Expired"


def test_compact_makes_a_rewatch_from_before_it_get_410(wire: WireServer) -> None:
    old = _create(wire, "a")
    _create(wire, "b")
    with pytest.raises(FaultError, match="newer than the newest"):
        wire.inject({"op": "compact", "rv": "99"})
    wire.inject({"op": "compact"})
    body = raw_watch(wire, _from(old))
    assert [e["type"] for e in body.events()] == ["ERROR"] and body.ended
    assert body.events()[0]["object"]["code"] == 410
    status, answer, _ = call(wire, f"{CMS}?resourceVersion={old}&resourceVersionMatch=Exact")
    assert (status, answer["reason"]) == (410, "Expired")


def test_the_token_check_comes_before_any_fault(wire: WireServer) -> None:
    wire.inject({"op": "list_error", "code": 500})
    wire.inject({"op": "watch_error", "code": 429})
    for path in (CMS, _from("1"), "/api", "/version", "/healthz", f"{NS}/ns/configmaps/a"):
        assert call(wire, path, token="wrong")[0] == 401, path
    assert len(wire.faults.waiting()) == 2  # no unauthorized request used one up
    assert (wire.faults.lists, wire.faults.watches) == (0, 0)


def test_the_request_log_names_the_faults_a_request_met(no_leak: None) -> None:
    log = io.StringIO()
    with WireServer(log=log, pump_settings=PumpSettings(poll=0.02)) as wire:
        wire.inject({"op": "list_error", "code": 429})
        wire.inject({"op": "watch_end"})
        call(wire, CMS)
        raw_watch(wire, _from("1"))
    entries = [json.loads(line) for line in log.getvalue().splitlines()]
    assert [(e["status"], e.get("faults")) for e in entries] == [
        (429, ["list_error"]),
        (200, ["watch_end"]),
    ]


# -- clients that leave ---------------------------------------------------------------


@pytest.mark.parametrize("seconds", [3600.0])
def test_a_client_leaving_during_a_delay_ends_its_stream(wire: WireServer, seconds: float) -> None:
    rv = _create(wire)
    wire.inject({"op": "watch_delay", "seconds": seconds})
    _create(wire, "a")
    with Stream(wire, _from(rv)):
        assert wire.api.wait_for(lambda core: len(core.watches()) == 1, 5)
    assert wire.api.wait_for(lambda core: core.watches() == [], 5)
    assert _eventually(lambda: not wire.connection_threads())
    assert wire.faults.open_streams() == 0


def test_a_client_leaving_before_a_cut_leaves_the_server_serving(wire: WireServer) -> None:
    rv = _create(wire)
    wire.inject({"op": "watch_cut", "mid_line": True, "count": 3})
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", wire.port), timeout=10) as sock:
            request = f"GET {_from(rv)} HTTP/1.1\r\nAuthorization: Bearer {wire.token}\r\n\r\n"
            sock.sendall(request.encode())
            sock.recv(10)  # the status line's start; then leave
        _create(wire, f"x{_}")  # the fault fires on this event, or finds the client gone
    assert call(wire, CMS)[0] == 200
    assert wire.api.wait_for(lambda core: core.watches() == [], 5)


def test_stopping_the_server_mid_delay_joins_every_thread(no_leak: None) -> None:
    clock = FakeClock()
    wire = WireServer(pump_settings=PumpSettings(poll=0.02), timer=clock).start()
    wire.inject(Fault("watch_delay", seconds=60.0))
    wire.api.create(Object("a", "ns"))
    with Stream(wire, _from("1")):
        assert wire.api.wait_for(lambda core: len(core.watches()) == 1, 5)
        wire.stop()
    assert wire.connection_threads() == []
