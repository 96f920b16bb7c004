"""``refimpl serve`` / :class:`refimpl.wire.WireServer`: the in-memory API server over HTTP.

Each test talks to a server on a free loopback port with the standard library's HTTP
client, as a real client would: discovery, list with pages and resourceVersionMatch,
watch streams (events after writes, bookmarks, the watch-list end bookmark,
timeoutSeconds), 410 on a list and as a watch ERROR event after compaction, 401
without the token. Every test ends by checking that the server left no connection
thread behind.
"""

from __future__ import annotations

import http.client
import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from refimpl.apiserver import ApiServer
from refimpl.meta import Object
from refimpl.wire import WireServer
from refimpl.wire.handlers import PumpSettings

NS = "/api/v1/namespaces"
WATCH_LIST = "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"


@pytest.fixture
def wire() -> Iterator[WireServer]:
    server = WireServer(ApiServer(), pump_settings=PumpSettings(poll=0.02)).start()
    yield server
    server.stop()
    assert server.connection_threads() == []
    assert not [t for t in threading.enumerate() if t.name.startswith("refimpl-wire")]


def _connection(server: WireServer) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)


def call(
    server: WireServer,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    *,
    token: str | None = None,
) -> tuple[int, Any, http.client.HTTPMessage]:
    """One request; the status, the decoded JSON answer and the headers."""
    conn = _connection(server)
    headers = {"Authorization": f"Bearer {server.token if token is None else token}"}
    data = None if body is None else json.dumps(body).encode()
    try:
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        answer = json.loads(raw) if resp.headers.get_content_type() == "application/json" else raw
        return resp.status, answer, resp.headers
    finally:
        conn.close()


def ok(server: WireServer, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    status, answer, _ = call(server, method, path, body)
    assert status in (200, 201), (status, answer)
    return answer


class Stream:
    """An open watch request: read its events line by line."""

    def __init__(self, server: WireServer, path: str) -> None:
        self.conn = _connection(server)
        self.conn.request("GET", path, headers={"Authorization": f"Bearer {server.token}"})
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200, self.resp.read()
        assert self.resp.headers["Transfer-Encoding"] == "chunked"

    def next(self) -> dict[str, Any] | None:
        """The next event; ``None`` at the end of the stream."""
        line = self.resp.readline()
        return json.loads(line) if line else None

    def take(self, n: int) -> list[dict[str, Any]]:
        events = [self.next() for _ in range(n)]
        assert None not in events, events
        return [e for e in events if e is not None]

    def rest(self) -> list[dict[str, Any]]:
        events = []
        while (event := self.next()) is not None:
            events.append(event)
        return events

    def close(self) -> None:
        self.conn.close()


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def names(items: list[dict[str, Any]]) -> list[str]:
    return [f"{i['metadata'].get('namespace', '')}/{i['metadata']['name']}" for i in items]


def summary(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


# -- access and discovery -------------------------------------------------------------


@pytest.mark.parametrize("token", ["", "wrong"])
def test_a_request_without_the_runs_token_gets_401(wire: WireServer, token: str) -> None:
    for path in ("/api/v1/configmaps", "/api", "/version"):
        status, answer, _ = call(wire, "GET", path, token=token)
        assert (status, answer["kind"], answer["code"]) == (401, "Status", 401)
    conn = _connection(wire)  # no Authorization header at all
    conn.request("GET", "/api/v1/configmaps")
    assert conn.getresponse().status == 401
    conn.close()
    assert wire.api.counters.lists == 0


def test_two_servers_have_different_tokens_and_ports() -> None:
    with WireServer() as a, WireServer() as b:
        assert a.token != b.token and a.port != b.port
        assert call(a, "GET", "/api", token=b.token)[0] == 401
        assert a.url == f"http://127.0.0.1:{a.port}"


def test_discovery_names_configmaps_with_their_verbs(wire: WireServer) -> None:
    assert "v1" in ok(wire, "GET", "/api")["versions"]
    resources = ok(wire, "GET", "/api/v1")
    assert resources["kind"] == "APIResourceList" and resources["groupVersion"] == "v1"
    (configmaps,) = [r for r in resources["resources"] if r["name"] == "configmaps"]
    assert configmaps["namespaced"] and configmaps["kind"] == "ConfigMap"
    assert {"list", "watch", "get", "create", "update", "delete"} <= set(configmaps["verbs"])
    assert ok(wire, "GET", "/apis") == {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}
    assert ok(wire, "GET", "/version")["major"] == "1"
    assert call(wire, "GET", "/healthz")[:2] == (200, b"ok")


# -- objects --------------------------------------------------------------------------


def test_create_get_update_delete_map_objects_to_configmaps(wire: WireServer) -> None:
    created = ok(wire, "POST", f"{NS}/ns1/configmaps", cm("a", k="v"))
    meta = created["metadata"]
    assert (created["kind"], meta["name"], meta["namespace"]) == ("ConfigMap", "a", "ns1")
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    stored = wire.api.get("ns1", "a")
    assert (stored.resource_version, stored.data) == (meta["resourceVersion"], {"k": "v"})
    assert ok(wire, "GET", f"{NS}/ns1/configmaps/a") == created
    changed = cm("a", k="w")
    changed["metadata"].update(resourceVersion=meta["resourceVersion"], labels={"x": "y"})
    updated = ok(wire, "PUT", f"{NS}/ns1/configmaps/a", changed)
    assert updated["data"] == {"k": "w"} and updated["metadata"]["labels"] == {"x": "y"}
    assert int(updated["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])
    stale = call(wire, "PUT", f"{NS}/ns1/configmaps/a", changed)  # rv precondition fails
    assert (stale[0], stale[1]["reason"]) == (409, "Conflict")
    deleted = ok(wire, "DELETE", f"{NS}/ns1/configmaps/a")
    assert deleted["metadata"]["name"] == "a" and wire.api.objects() == {}
    missing = call(wire, "GET", f"{NS}/ns1/configmaps/a")
    assert (missing[0], missing[1]["reason"], missing[1]["details"]["name"]) == (
        404,
        "NotFound",
        "a",
    )


def test_an_object_written_inside_refimpl_is_served_as_a_configmap(wire: WireServer) -> None:
    wire.api.create(Object("plain", "ns", labels={"a": "b"}, data=7))
    (item,) = ok(wire, "GET", "/api/v1/configmaps")["items"]
    assert item["metadata"]["labels"] == {"a": "b"} and item["data"] == {"value": "7"}


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "reason"),
    [
        ("POST", f"{NS}/ns/configmaps", b"{not json", 400, "BadRequest"),
        ("POST", f"{NS}/ns/configmaps", b'{"kind": "Pod"}', 400, "BadRequest"),
        ("POST", f"{NS}/ns/configmaps", b'{"metadata": {"name": "Bad_Name"}}', 422, "Invalid"),
        (
            "POST",
            f"{NS}/ns/configmaps",
            b'{"metadata": {"name": "a", "namespace": "x"}}',
            400,
            "BadRequest",
        ),
        (
            "POST",
            f"{NS}/ns/configmaps",
            b'{"metadata": {"name": "a"}, "data": {"k": 1}}',
            400,
            "BadRequest",
        ),
        ("POST", "/api/v1/configmaps", b"{}", 405, "MethodNotAllowed"),
        ("PATCH", f"{NS}/ns/configmaps/a", b"{}", 405, "MethodNotAllowed"),
        ("GET", "/api/v1/pods", b"", 404, "NotFound"),
        ("GET", "/api/v1/configmaps?limit=-1", b"", 400, "BadRequest"),
        ("GET", "/api/v1/configmaps?watch=maybe", b"", 400, "BadRequest"),
        ("GET", "/api/v1/configmaps?resourceVersion=abc", b"", 400, "BadRequest"),
        (
            "GET",
            "/api/v1/configmaps?resourceVersion=x&resourceVersionMatch=NotOlderThan",
            b"",
            400,
            "BadRequest",
        ),
        ("GET", "/api/v1/configmaps?continue=garbage", b"", 400, "BadRequest"),
    ],
)
def test_a_malformed_request_gets_the_apis_status(
    wire: WireServer, method: str, path: str, body: bytes, status: int, reason: str
) -> None:
    conn = _connection(wire)
    conn.request(method, path, body=body, headers={"Authorization": f"Bearer {wire.token}"})
    resp = conn.getresponse()
    answer = json.loads(resp.read())
    conn.close()
    assert (resp.status, answer["kind"], answer["reason"], answer["code"]) == (
        status,
        "Status",
        reason,
        status,
    )
    assert call(wire, "GET", "/api")[0] == 200  # still serving


# -- lists ----------------------------------------------------------------------------


def _populate(wire: WireServer) -> list[str]:
    keys = ["a/x", "a/y", "b/x", "b/y", "b/z"]
    for key in keys:
        ns, name = key.split("/")
        ok(wire, "POST", f"{NS}/{ns}/configmaps", cm(name))
    return keys


def test_a_paged_list_follows_continue_through_one_snapshot(wire: WireServer) -> None:
    keys = _populate(wire)
    first = ok(wire, "GET", "/api/v1/configmaps?limit=2")
    snapshot = first["metadata"]["resourceVersion"]
    assert first["kind"] == "ConfigMapList" and names(first["items"]) == keys[:2]
    ok(wire, "POST", f"{NS}/c/configmaps", cm("late"))  # after the snapshot: not listed
    ok(wire, "DELETE", f"{NS}/b/configmaps/z")  # deleted after it: still listed
    seen, page = list(first["items"]), first
    while page["metadata"].get("continue"):
        token = page["metadata"]["continue"]
        page = ok(wire, "GET", f"/api/v1/configmaps?limit=2&continue={token}")
        assert page["metadata"]["resourceVersion"] == snapshot
        seen += page["items"]
    assert names(seen) == keys
    assert wire.api.counters.lists == 3


def test_a_namespaced_list_holds_that_namespace_only(wire: WireServer) -> None:
    _populate(wire)
    assert names(ok(wire, "GET", f"{NS}/b/configmaps")["items"]) == ["b/x", "b/y", "b/z"]
    seen, query = [], "limit=2"
    while True:  # pages of the namespace may be short; continue gets the rest
        page = ok(wire, "GET", f"{NS}/a/configmaps?{query}")
        seen += page["items"]
        if not page["metadata"].get("continue"):
            break
        query = f"limit=2&continue={page['metadata']['continue']}"
    assert names(seen) == ["a/x", "a/y"]


def test_resource_version_match_picks_the_state(wire: WireServer) -> None:
    first = ok(wire, "POST", f"{NS}/ns/configmaps", cm("a", v="1"))
    rv = first["metadata"]["resourceVersion"]
    changed = cm("a", v="2")
    ok(wire, "PUT", f"{NS}/ns/configmaps/a", changed)
    exact = ok(wire, "GET", f"/api/v1/configmaps?resourceVersion={rv}&resourceVersionMatch=Exact")
    assert exact["metadata"]["resourceVersion"] == rv and exact["items"][0]["data"] == {"v": "1"}
    newer = ok(
        wire,
        "GET",
        f"/api/v1/configmaps?resourceVersion={rv}&resourceVersionMatch=NotOlderThan&limit=1",
    )
    assert newer["items"][0]["data"] == {"v": "2"}
    status, answer, headers = call(
        wire, "GET", "/api/v1/configmaps?resourceVersion=99&resourceVersionMatch=NotOlderThan"
    )
    assert (status, headers["Retry-After"]) == (504, "1")
    assert answer["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
    bad = call(wire, "GET", "/api/v1/configmaps?resourceVersionMatch=Exact")
    assert (bad[0], bad[1]["reason"]) == (422, "Invalid")


def test_a_list_from_a_compacted_resource_version_is_410_gone() -> None:
    with WireServer(ApiServer(compaction_window=2)) as wire:
        rv = ok(wire, "POST", f"{NS}/ns/configmaps", cm("a"))["metadata"]["resourceVersion"]
        ok(wire, "POST", f"{NS}/ns/configmaps", cm("b"))
        page = ok(wire, "GET", "/api/v1/configmaps?limit=1")
        for name in ("c", "d", "e"):
            ok(wire, "POST", f"{NS}/ns/configmaps", cm(name))
        for query in (
            f"resourceVersion={rv}&resourceVersionMatch=Exact",
            f"resourceVersion={rv}&limit=1",
            f"limit=1&continue={page['metadata']['continue']}",
        ):
            status, answer, _ = call(wire, "GET", f"/api/v1/configmaps?{query}")
            assert (status, answer["kind"], answer["reason"], answer["code"]) == (
                410,
                "Status",
                "Expired",
                410,
            ), query


# -- watches --------------------------------------------------------------------------


def test_a_watch_streams_create_update_and_delete(wire: WireServer) -> None:
    rv = ok(wire, "GET", "/api/v1/configmaps")["metadata"]["resourceVersion"]
    stream = Stream(wire, f"/api/v1/configmaps?watch=true&resourceVersion={rv}")
    created = ok(wire, "POST", f"{NS}/ns/configmaps", cm("a", k="1"))
    ok(wire, "PUT", f"{NS}/ns/configmaps/a", cm("a", k="2"))
    ok(wire, "DELETE", f"{NS}/ns/configmaps/a")
    events = stream.take(3)
    stream.close()
    assert summary(events) == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    assert events[0]["object"] == created
    assert events[1]["object"]["data"] == {"k": "2"}
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and versions[0] > int(rv)


def test_a_watch_from_an_old_resource_version_replays_the_writes_after_it(
    wire: WireServer,
) -> None:
    rv = ok(wire, "POST", f"{NS}/ns/configmaps", cm("a"))["metadata"]["resourceVersion"]
    ok(wire, "POST", f"{NS}/other/configmaps", cm("b"))
    ok(wire, "POST", f"{NS}/ns/configmaps", cm("c"))
    stream = Stream(wire, f"/api/v1/watch/namespaces/ns/configmaps?resourceVersion={rv}")
    ok(wire, "DELETE", f"{NS}/ns/configmaps/a")
    assert summary(stream.take(2)) == [("ADDED", "c"), ("DELETED", "a")]  # not other/b
    stream.close()


def test_bookmarks_come_only_when_allowed_and_timeout_seconds_ends_the_stream() -> None:
    settings = PumpSettings(poll=0.02, bookmark_interval=0.1)
    with WireServer(pump_settings=settings) as wire:
        rv = ok(wire, "POST", f"{NS}/ns/configmaps", cm("a"))["metadata"]["resourceVersion"]
        allowed = Stream(
            wire,
            f"/api/v1/configmaps?watch=1&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=1",
        )
        plain = Stream(wire, f"/api/v1/configmaps?watch=1&resourceVersion={rv}&timeoutSeconds=1")
        started = time.monotonic()
        events, quiet = allowed.rest(), plain.rest()  # both end after timeoutSeconds
        assert time.monotonic() - started >= 0.9
        assert events and {e["type"] for e in events} == {"BOOKMARK"}
        assert events[0]["object"]["metadata"] == {"resourceVersion": rv}
        assert quiet == []
        allowed.close()
        plain.close()


def test_send_initial_events_ends_with_the_annotated_bookmark(wire: WireServer) -> None:
    _populate(wire)
    rv = wire.api.resource_version
    stream = Stream(wire, f"/api/v1/configmaps?{WATCH_LIST}&allowWatchBookmarks=true")
    initial = stream.take(6)
    ok(wire, "PUT", f"{NS}/a/configmaps/x", cm("x", k="new"))
    after = stream.take(1)
    stream.close()
    assert summary(initial[:5]) == [("ADDED", n) for n in ("x", "y", "x", "y", "z")]
    end = initial[5]
    assert end["type"] == "BOOKMARK"
    assert end["object"]["metadata"] == {
        "resourceVersion": rv,
        "annotations": {"k8s.io/initial-events-end": "true"},
    }
    assert summary(after) == [("MODIFIED", "x")]
    assert wire.api.counters.watch_lists == 1


def test_send_initial_events_needs_not_older_than_and_bookmarks(wire: WireServer) -> None:
    bare = call(wire, "GET", "/api/v1/configmaps?watch=true&sendInitialEvents=true")
    no_bookmarks = call(wire, "GET", f"/api/v1/configmaps?{WATCH_LIST}")
    assert [bare[0], no_bookmarks[0]] == [422, 422]


def test_a_watch_from_a_compacted_resource_version_gets_an_error_event_410() -> None:
    with WireServer(ApiServer(compaction_window=1)) as wire:
        rv = ok(wire, "POST", f"{NS}/ns/configmaps", cm("a"))["metadata"]["resourceVersion"]
        ok(wire, "POST", f"{NS}/ns/configmaps", cm("b"))
        ok(wire, "POST", f"{NS}/ns/configmaps", cm("c"))
        stream = Stream(wire, f"/api/v1/configmaps?watch=true&resourceVersion={rv}")
        events = stream.rest()
        stream.close()
    assert [e["type"] for e in events] == ["ERROR"]
    status = events[0]["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")


def test_an_injected_watch_failure_is_a_429_with_retry_after(wire: WireServer) -> None:
    wire.api.fail_next_watches(1)
    status, answer, headers = call(wire, "GET", "/api/v1/configmaps?watch=true")
    assert (status, answer["reason"], headers["Retry-After"]) == (429, "TooManyRequests", "1")
    wire.api.fail_next_lists(1)
    assert call(wire, "GET", "/api/v1/configmaps")[0] == 503


def test_a_client_that_goes_away_ends_its_watch(wire: WireServer) -> None:
    stream = Stream(wire, "/api/v1/configmaps?watch=true")
    assert wire.api.wait_for(lambda core: len(core.watches()) == 1, 5)
    stream.resp.close()
    stream.close()
    assert wire.api.wait_for(lambda core: core.watches() == [], 5)
    deadline = time.monotonic() + 5
    while wire.connection_threads() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert wire.connection_threads() == []


def test_stopping_the_server_ends_open_streams_and_idle_connections() -> None:
    wire = WireServer().start()  # streams poll as often as the accept loop: 0.1 s
    stream = Stream(wire, "/api/v1/configmaps?watch=true")
    raw = socket.create_connection(("127.0.0.1", wire.port), timeout=10)
    auth = f"Authorization: Bearer {wire.token}"
    raw.sendall(f"GET /api/v1/configmaps?watch=1 HTTP/1.1\r\n{auth}\r\n\r\n".encode())
    assert wire.api.wait_for(lambda core: len(core.watches()) == 2, 5)
    idle = _connection(wire)  # a kept-alive connection waiting for its next request
    idle.request("GET", "/api", headers={"Authorization": f"Bearer {wire.token}"})
    idle.getresponse().read()
    wire.stop()
    assert stream.rest() == []
    received = b""
    while block := raw.recv(4096):
        received += block
    raw.close()
    assert received.endswith(b"\r\n\r\n0\r\n\r\n")  # the last chunk came: not a cut
    assert wire.connection_threads() == [] and wire.api.open_watch_ids() == []
    stream.close()
    idle.close()


def test_the_request_log_has_one_json_line_per_request() -> None:
    log = io.StringIO()
    with WireServer(log=log) as wire:
        call(wire, "GET", "/api/v1/configmaps?limit=1")
        call(wire, "GET", "/api", token="")
    lines = [json.loads(line) for line in log.getvalue().splitlines()]
    assert lines == [
        {"method": "GET", "path": "/api/v1/configmaps", "query": "limit=1", "status": 200},
        {"method": "GET", "path": "/api", "query": "", "status": 401},
    ]


# -- the command ----------------------------------------------------------------------


def _start(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], str, str]:
    cmd = [sys.executable, "-m", "refimpl.cli", "serve", "--log", str(tmp_path / "log"), *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip(), proc.stdout.readline().strip()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_refimpl_serve_prints_its_url_writes_a_kubeconfig_and_stops_on_a_signal(
    tmp_path: Path, signum: int
) -> None:
    proc, url, path = _start(tmp_path, "--kubeconfig", str(tmp_path / "kc"))
    try:
        assert url.startswith("http://127.0.0.1:") and path == str(tmp_path / "kc")
        config = json.loads(Path(path).read_text())
        assert os.stat(path).st_mode & 0o077 == 0  # only the owner reads the token
        (cluster,) = config["clusters"]
        (user,) = config["users"]
        assert cluster["cluster"]["server"] == url
        port, token = int(url.rsplit(":", 1)[1]), user["user"]["token"]
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/api/v1/configmaps", headers={"Authorization": f"Bearer {token}"})
        assert json.loads(conn.getresponse().read())["kind"] == "ConfigMapList"
        conn.close()
    finally:
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert signal.Signals(signum).name in err
    logged = json.loads((tmp_path / "log").read_text().splitlines()[0])
    assert (logged["path"], logged["status"]) == ("/api/v1/configmaps", 200)


def test_the_default_kubeconfig_lives_in_a_temporary_folder_removed_at_exit(
    tmp_path: Path,
) -> None:
    proc, _, path = _start(tmp_path)
    try:
        assert Path(path).is_file()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    assert proc.returncode == 0 and not Path(path).parent.exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--port", "70000"], "--port"),
        (["--bookmark-interval", "-1"], "--bookmark-interval"),
        (["--compaction-window", "-2"], "--compaction-window"),
        (["--log", "/dev/null/x"], "--log"),
    ],
)
def test_serve_usage_errors_exit_3(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from refimpl.cli import main

    assert main(["serve", *args]) == 3
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("usage: refimpl serve") and says in err


@pytest.mark.parametrize(
    "raw",
    [
        b"GARBAGE\r\n\r\n",
        b"GET / HTTP/9.9\r\n\r\n",
        b"GET /api HTTP/1.1\r\nX: " + b"a" * 70000 + b"\r\n\r\n",
        b"BREW /api HTTP/1.1\r\n\r\n",
    ],
    ids=["no-version", "bad-version", "long-header", "unknown-method"],
)
def test_a_malformed_http_request_gets_a_status_too(wire: WireServer, raw: bytes) -> None:
    with socket.create_connection(("127.0.0.1", wire.port), timeout=10) as sock:
        sock.sendall(raw)
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status = json.loads(body)
    assert head.split()[1] == b"%d" % status["code"] and status["kind"] == "Status"
    assert 400 <= status["code"] < 600
    assert call(wire, "GET", "/api")[0] == 200


def test_a_client_leaving_mid_answer_is_not_reported_as_a_server_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with WireServer() as wire:
        for err in (ConnectionResetError("gone"), ValueError("a real bug")):
            try:
                raise err
            except Exception:
                wire._httpd.handle_error(None, ("127.0.0.1", 1))
    reported = capsys.readouterr().err
    assert "a real bug" in reported and "gone" not in reported
