"""refimpl/wire/client.py: the HTTP lister-watcher the reference's wire adapter uses.

Against a :class:`WireServer` in the test process: a paged list, a watch stream's events,
Status answers decoded into refimpl's API errors (a 410 is Expired, as the reflector
needs), a cut stream ending the watch, a kubeconfig read back, and no thread left.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from refimpl.apierrors import ApiError, Expired, Gone, InternalError, TooManyRequests
from refimpl.meta import ListOptions, Object
from refimpl.watch import ERROR, WatchTimeout
from refimpl.wire import WireServer
from refimpl.wire.cli import write_kubeconfig
from refimpl.wire.client import (
    ClientConfig,
    HttpListerWatcher,
    decode_status,
    load_kubeconfig,
)
from refimpl.wire.convert import failure_json


@pytest.fixture
def wire() -> Iterator[WireServer]:
    before = set(threading.enumerate())
    with WireServer() as server:
        yield server
    assert set(threading.enumerate()) - before == set()


def _lw(server: WireServer, token: str | None = None) -> HttpListerWatcher:
    return HttpListerWatcher(ClientConfig(server.url, token or server.token))


def test_a_paged_list_follows_its_continue_token(wire: WireServer) -> None:
    for name in "abc":
        wire.api.create(Object(name=name, namespace="default"))
    first = _lw(wire).list(ListOptions(limit=2))
    assert [o.name for o in first.items] == ["a", "b"] and first.continue_token
    rest = _lw(wire).list(ListOptions(limit=2, continue_token=first.continue_token))
    assert [o.name for o in rest.items] == ["c"] and rest.continue_token == ""
    assert first.resource_version == wire.api.resource_version


def test_a_watch_decodes_events_and_a_410_error_event_as_expired(wire: WireServer) -> None:
    created = wire.api.create(Object(name="a", namespace="default", labels={"x": "1"}))
    watch = _lw(wire).watch(ListOptions(resource_version="1"))
    event = watch.next_event(5)
    assert event is not None and event.type == "ADDED" and event.object == created
    with pytest.raises(WatchTimeout):
        watch.next_event(0.05)
    wire.inject({"op": "watch_error", "target": "open", "as": "event", "code": 410})
    error = watch.next_event(5)
    assert error is not None and error.type == ERROR and isinstance(error.error, Expired)
    assert watch.next_event(5) is None  # the stream ended after its ERROR event
    watch.stop()


def test_a_cut_stream_ends_the_watch(wire: WireServer) -> None:
    watch = _lw(wire).watch(ListOptions(resource_version="1"))
    wire.inject({"op": "watch_cut", "target": "open"})
    assert watch.next_event(5) is None
    watch.stop()


def test_error_answers_become_api_errors(wire: WireServer) -> None:
    wire.api.create(Object(name="a", namespace="default"))
    wire.api.compact(wire.api.resource_version)
    with pytest.raises(Expired):
        _lw(wire).list(ListOptions(resource_version="1", limit=1))
    wire.inject({"op": "list_error", "code": 429})
    with pytest.raises(TooManyRequests):
        _lw(wire).list(ListOptions())
    with pytest.raises(ApiError, match="Unauthorized") as caught:
        _lw(wire, token="wrong").list(ListOptions())
    assert not isinstance(caught.value, Gone)


@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [(410, "Expired", Expired), (410, "Gone", Gone), (500, "InternalError", InternalError)],
)
def test_a_status_decodes_by_code_and_reason(
    code: int, reason: str, expected: type[ApiError]
) -> None:
    err = decode_status(code, json.dumps(failure_json(code, reason, "m")).encode())
    assert type(err) is expected and err.message == "m"


def test_a_body_that_is_no_status_is_an_internal_error() -> None:
    assert isinstance(decode_status(502, b"<html>bad gateway</html>"), InternalError)


def test_the_kubeconfig_refimpl_serve_writes_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    write_kubeconfig(path, "http://127.0.0.1:1234", "tok")
    assert load_kubeconfig(path) == ClientConfig("http://127.0.0.1:1234", "tok")
    write_kubeconfig(path, "https://127.0.0.1:1234", "tok", b"CA")
    assert load_kubeconfig(path) == ClientConfig("https://127.0.0.1:1234", "tok", ca=b"CA")
    write_kubeconfig(path, "https://127.0.0.1:1234", "tok")  # no CA to verify it with
    with pytest.raises(ValueError, match="certificate-authority-data"):
        load_kubeconfig(path)
    write_kubeconfig(path, "ftp://127.0.0.1:1234", "tok")
    with pytest.raises(ValueError, match="http://"):
        load_kubeconfig(path)
