"""One request of the Kubernetes API, answered from an :class:`~refimpl.apiserver.ApiServer`.

The server side of what client-go's REST client sends for ConfigMaps: discovery,
list (``resourceVersion``, ``resourceVersionMatch``, ``limit``, ``continue``), watch
(``allowWatchBookmarks``, ``sendInitialEvents``, ``timeoutSeconds``), get, create,
update and delete. The semantics are the in-memory server's (``refimpl/apiserver.py``:
``ApiServerCore.list`` and ``ApiServerCore.watch`` say which state answers which rv);
this module only parses, routes, filters by namespace and encodes. :func:`answer`
does no I/O; ``refimpl/wire/stream.py`` sends the watch streams it opens.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any, Final, Literal

import attrs

from refimpl.apierrors import ApiError, BadRequest, Invalid, NotFound, TooLargeResourceVersion
from refimpl.apiserver import ApiServer, ServerWatch
from refimpl.meta import ListResult, Object
from refimpl.wire.convert import (
    API_RESOURCES,
    API_VERSIONS,
    GROUP_LIST,
    RESOURCE,
    VERSION_INFO,
    ConfigMapCodec,
    status_json,
)

__all__ = [
    "DEFAULT_PUMP",
    "MethodNotAllowed",
    "PumpSettings",
    "Reply",
    "Request",
    "WatchStream",
    "answer",
    "classify",
    "error_reply",
]

_TRUE: Final = frozenset({"1", "t", "T", "true", "TRUE", "True"})
_FALSE: Final = frozenset({"0", "f", "F", "false", "FALSE", "False"})
_DOCUMENTS: Final[dict[str, dict[str, Any]]] = {
    "/api": API_VERSIONS,
    "/api/v1": API_RESOURCES,
    "/apis": GROUP_LIST,
    "/version": VERSION_INFO,
}
_HEALTH: Final = frozenset({"/healthz", "/livez", "/readyz"})


class MethodNotAllowed(ApiError):
    code = 405
    reason = "MethodNotAllowed"


@attrs.frozen
class Request:
    """An HTTP request: method, path (no query), the query's last value per name, body."""

    method: str
    path: str
    query: Mapping[str, str] = attrs.field(factory=dict)
    body: bytes = b""


@attrs.frozen
class Reply:
    """A whole answer: status, JSON document (or plain text), extra headers."""

    status: int
    body: dict[str, Any] | str
    headers: Mapping[str, str] = attrs.field(factory=dict)

    def encoded(self) -> tuple[bytes, str]:
        """The body's bytes and its Content-Type."""
        if isinstance(self.body, str):
            return self.body.encode(), "text/plain; charset=utf-8"
        return json.dumps(self.body, separators=(",", ":")).encode(), "application/json"


@attrs.frozen
class WatchStream:
    """An open watch to stream: the server's watch and what filters and ends it."""

    watch: ServerWatch
    namespace: str
    timeout_seconds: int | None
    allow_bookmarks: bool
    watch_list: bool = False  # sendInitialEvents=true


@attrs.frozen
class _Route:
    kind: Literal["collection", "item"]
    namespace: str  # "" for all namespaces
    name: str
    watch: bool  # the legacy /api/v1/watch/... form


def error_reply(err: ApiError, *, name: str = "", retry_after: int | None = None) -> Reply:
    """The Status answer of ``err``; ``retry_after`` (seconds) overrides the usual
    Retry-After (1 s for a 429 and a 504, none otherwise)."""
    status = status_json(err, name=name, retry_after=retry_after)
    after = status.get("details", {}).get("retryAfterSeconds")
    headers = {"Retry-After": str(after)} if after else {}
    return Reply(err.code, status, headers)


def classify(request: Request) -> tuple[Literal["list", "watch"], str] | None:
    """Whether ``request`` is a list or a watch, and its path without the legacy
    ``/watch/`` segment; ``None`` for any other request. A malformed ``watch``
    parameter counts as a list (:func:`answer` refuses it)."""
    route = _route(request.path)
    if route is None or route.kind != "collection" or request.method != "GET":
        return None
    path = request.path.rstrip("/")
    if route.watch:
        path = path.replace("/api/v1/watch/", "/api/v1/", 1)
    watch = route.watch or request.query.get("watch") in _TRUE
    return ("watch" if watch else "list"), path


def _route(path: str) -> _Route | None:
    parts = path.strip("/").split("/")
    if parts[:2] != ["api", "v1"]:
        return None
    rest = parts[2:]
    watch = bool(rest) and rest[0] == "watch"
    if watch:
        rest = rest[1:]
    if rest == [RESOURCE]:
        return _Route("collection", "", "", watch)
    if len(rest) in (3, 4) and rest[0] == "namespaces" and rest[2] == RESOURCE and rest[1]:
        if len(rest) == 3:
            return _Route("collection", rest[1], "", watch)
        if rest[3]:
            return _Route("item", rest[1], rest[3], watch)
    return None


def answer(api: ApiServer[Any], codec: ConfigMapCodec, request: Request) -> Reply | WatchStream:
    """The answer to ``request``: a :class:`Reply`, or a :class:`WatchStream` to pump.
    An API error becomes its Status; the API server's own failures stay exceptions."""
    if request.path in _HEALTH:
        return Reply(200, "ok")
    document = _DOCUMENTS.get(request.path.rstrip("/") or "/")
    route = _route(request.path)
    try:
        if document is not None:
            if request.method != "GET":
                raise MethodNotAllowed(f"{request.method} is not allowed on {request.path}")
            return Reply(200, document)
        if route is None:
            raise NotFound("the server could not find the requested resource")
        return _answer_resource(api, codec, request, route)
    except ApiError as err:
        return error_reply(err, name=route.name if route else "")


def _answer_resource(
    api: ApiServer[Any], codec: ConfigMapCodec, request: Request, route: _Route
) -> Reply | WatchStream:
    method, q = request.method, request.query
    if route.kind == "collection" and method == "GET":
        if route.watch or _bool(q, "watch"):
            return _watch(api, route.namespace, q)
        return Reply(200, _list(api, codec, route.namespace, q))
    if route.kind == "collection" and method == "POST" and route.namespace and not route.watch:
        created = api.create(codec.decode(_json(request.body), route.namespace))
        return Reply(201, codec.encode(created))
    if route.kind == "item" and not route.watch:
        if method == "GET":
            return Reply(200, codec.encode(api.get(route.namespace, route.name)))
        if method == "PUT":
            obj = codec.decode(_json(request.body), route.namespace)
            if obj.name != route.name:
                raise BadRequest("the name of the object does not match the name on the URL")
            return Reply(200, codec.encode(api.update(obj)))
        if method == "DELETE":
            rv, uid = _preconditions(request.body)
            gone = api.delete(route.namespace, route.name, resource_version=rv, uid=uid)
            return Reply(200, codec.encode(gone))
    raise MethodNotAllowed(f"{method} is not allowed on {request.path}")


def _json(body: bytes) -> object:
    try:
        return json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError) as err:
        raise BadRequest(f"the request body is not JSON: {err}") from None


def _preconditions(body: bytes) -> tuple[str, str]:
    """``DeleteOptions.preconditions`` (resourceVersion, uid), if a body was sent."""
    options = _json(body) if body.strip() else None
    if options is None:
        return "", ""
    pre = options.get("preconditions") if isinstance(options, dict) else None
    if pre is None:
        return "", ""
    if not isinstance(pre, dict):
        raise BadRequest("preconditions must be an object")
    rv, uid = pre.get("resourceVersion") or "", pre.get("uid") or ""
    if not isinstance(rv, str) or not isinstance(uid, str):
        raise BadRequest("preconditions must be strings")
    return rv, uid


def _bool(q: Mapping[str, str], name: str) -> bool | None:
    """A boolean parameter as Go's ``strconv.ParseBool`` reads it; ``None`` if absent."""
    value = q.get(name)
    if value is None:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise BadRequest(f"{name}: invalid boolean {value!r}")


def _int(q: Mapping[str, str], name: str) -> int | None:
    value = q.get(name)
    if value is None or value == "":
        return None
    if not value.isascii() or not value.isdigit():
        raise BadRequest(f"{name}: must be a non-negative integer, not {value!r}")
    return int(value)


def _list(
    api: ApiServer[Any], codec: ConfigMapCodec, namespace: str, q: Mapping[str, str]
) -> dict[str, Any]:
    """A list page. A namespaced page is the all-namespaces page of the same request
    filtered to the namespace, so it may hold fewer than ``limit`` items (the API
    allows short pages; clients follow ``continue``)."""
    rv, match = q.get("resourceVersion", ""), q.get("resourceVersionMatch", "")
    token = q.get("continue", "")
    limit = _int(q, "limit") or 0
    if match and token:
        raise Invalid("resourceVersionMatch: Forbidden: not allowed when continue is set")
    if match and not rv:
        raise Invalid("resourceVersionMatch: Forbidden: only allowed with a resourceVersion")
    if match not in ("", "Exact", "NotOlderThan"):
        raise Invalid(f"resourceVersionMatch: Unsupported value: {match!r}")
    if match == "Exact" and rv == "0":
        raise Invalid('resourceVersionMatch: Forbidden: "Exact" is not allowed for "0"')
    with api.locked() as core:
        if match == "Exact":  # the core reads "N" with a limit as exactly N
            result = core.list(rv, limit or sys.maxsize, None)
        elif match == "NotOlderThan" and rv != "0":
            if not rv.isascii() or not rv.isdigit():
                raise BadRequest(f"list: invalid resource version {rv!r}")
            if int(rv) > core.rv:
                raise TooLargeResourceVersion(
                    f"Too large resource version: {rv}, current: {core.rv}"
                )
            result = core.list("", limit, None)  # the newest state is not older
        else:
            result = core.list(rv, limit, token or None)
    return codec.list_json(result, _in_namespace(result, namespace))


def _in_namespace(result: ListResult, namespace: str) -> tuple[Object, ...]:
    if not namespace:
        return result.items
    return tuple(o for o in result.items if o.namespace == namespace)


def _watch(api: ApiServer[Any], namespace: str, q: Mapping[str, str]) -> WatchStream:
    send_initial = _bool(q, "sendInitialEvents")
    match = q.get("resourceVersionMatch", "")
    if send_initial is not None and match != "NotOlderThan":
        raise Invalid(
            "resourceVersionMatch: Forbidden: sendInitialEvents requires "
            "resourceVersionMatch=NotOlderThan"
        )
    if send_initial is None and match:
        raise Invalid("resourceVersionMatch: Forbidden: not allowed for watch")
    bookmarks = bool(_bool(q, "allowWatchBookmarks"))
    timeout = _int(q, "timeoutSeconds")
    watch = api.watch(
        q.get("resourceVersion", ""),
        allow_bookmarks=bookmarks,
        send_initial_events=send_initial,
        timeout_seconds=timeout,
    )
    return WatchStream(watch, namespace, timeout, bookmarks, bool(send_initial))


@attrs.frozen
class PumpSettings:
    """How a stream is pumped: how often it looks up from waiting (``poll`` seconds, for
    shutdown, deadline and a gone client) and how often it asks the server for a
    BOOKMARK when the client allows them (``bookmark_interval`` seconds; 0: never)."""

    poll: float = 0.1
    bookmark_interval: float = 0.0


DEFAULT_PUMP: Final = PumpSettings()
