"""A lister-watcher over HTTP: refimpl's informer against a real API server.

Ports, at the level the reflector needs, client-go's ``rest`` client (a request built
from a kubeconfig's server and bearer token; a non-2xx answer decoded from its
``metav1.Status`` into an API error, ``rest/request.go``'s ``transformResponse``) and
``tools/cache/listwatch.go`` (``NewListWatchFromClient``: list and watch of one resource
with the reflector's options as query parameters), with the watch stream decoded as
``rest/watch``'s decoder does: one JSON ``metav1.WatchEvent`` per line, an ERROR event's
Status as an error. Standard library only (``http.client``, and ``ssl`` for an
``https://`` server, verified against the kubeconfig's ``certificate-authority-data``
as client-go's ``transport`` verifies it). It refines no TLA+ module. Kubeconfigs are
read as JSON (``refimpl serve`` writes JSON, which is YAML).
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import queue
import socket
import ssl
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import attrs

from refimpl import apierrors
from refimpl.apierrors import ApiError
from refimpl.meta import ListOptions, ListResult, Object
from refimpl.watch import BOOKMARK, ERROR, EventType, WatchEvent, WatchTimeout
from refimpl.wire.convert import RESOURCE, ConfigMapCodec

__all__ = ["ClientConfig", "HttpListerWatcher", "HttpWatch", "load_kubeconfig"]

#: Seconds a list (or a watch's headers) may take before the request fails.
REQUEST_TIMEOUT = 30.0
#: The errors decoded to their own class, by (HTTP code, Status reason).
_ERRORS: dict[tuple[int, str], type[ApiError]] = {
    (cls.code, cls.reason): cls
    for cls in (
        apierrors.BadRequest,
        apierrors.NotFound,
        apierrors.AlreadyExists,
        apierrors.Conflict,
        apierrors.Gone,
        apierrors.Expired,
        apierrors.Invalid,
        apierrors.TooManyRequests,
        apierrors.InternalError,
        apierrors.ListError,
    )
}
_EVENT_TYPES: tuple[EventType, ...] = ("ADDED", "MODIFIED", "DELETED", BOOKMARK, ERROR)


@attrs.frozen
class ClientConfig:
    """What a request needs (client-go ``rest.Config``, the subset used here)."""

    server: str
    token: str
    namespace: str = ""
    #: The CA certificate(s) an https:// server is verified with (PEM); None for http://.
    ca: bytes | None = None


def load_kubeconfig(path: str | Path) -> ClientConfig:
    """The current context's server and token from a JSON kubeconfig. Raises
    ``ValueError`` for a kubeconfig without them."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    current = doc.get("current-context", "")
    contexts = {c["name"]: c["context"] for c in doc.get("contexts", [])}
    if current not in contexts:
        raise ValueError(f"{path}: no context named {current!r}")
    context = contexts[current]
    clusters = {c["name"]: c["cluster"] for c in doc.get("clusters", [])}
    users = {u["name"]: u["user"] for u in doc.get("users", [])}
    cluster = clusters.get(context.get("cluster"), {})
    server = cluster.get("server", "")
    token = users.get(context.get("user"), {}).get("token", "")
    if not server.startswith(("http://", "https://")) or not token:
        raise ValueError(f"{path}: needs an http:// or https:// server and a bearer token")
    ca = cluster.get("certificate-authority-data")
    if server.startswith("https://") and not ca:
        raise ValueError(f"{path}: an https:// server needs certificate-authority-data")
    return ClientConfig(server, token, ca=base64.b64decode(ca) if ca else None)


def decode_status(status: int, body: bytes) -> ApiError:
    """The API error an error answer carries (its Status's code and reason; a body that
    is no Status: an error of the HTTP status)."""
    try:
        doc = json.loads(body)
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or doc.get("kind") != "Status":
        return apierrors.InternalError(f"HTTP {status}: {body[:200]!r}")
    code = doc.get("code", status)
    reason, message = str(doc.get("reason", "")), str(doc.get("message", ""))
    causes = tuple(str(c.get("reason", "")) for c in (doc.get("details") or {}).get("causes") or [])
    if "ResourceVersionTooLarge" in causes:
        return apierrors.TooLargeResourceVersion(message)
    cls = _ERRORS.get((code, reason))
    if cls is not None:
        return cls(message)
    err = ApiError(message or f"HTTP {code} {reason}", causes=causes)
    return err


def _decode_object(doc: Mapping[str, Any], codec: ConfigMapCodec) -> Object:
    meta = doc.get("metadata") or {}
    return codec.decode(doc, str(meta.get("namespace", "")))


def decode_event(line: bytes, codec: ConfigMapCodec) -> WatchEvent:
    """One watch-stream line as a :class:`WatchEvent` (``ValueError`` if malformed)."""
    doc = json.loads(line)
    kind = doc.get("type") if isinstance(doc, dict) else None
    if kind not in _EVENT_TYPES or not isinstance(doc.get("object"), dict):
        raise ValueError(f"not a watch event: {line[:200]!r}")
    obj: dict[str, Any] = doc["object"]
    if kind == ERROR:
        code = obj.get("code", 500)
        err = decode_status(code if isinstance(code, int) else 500, json.dumps(obj).encode())
        return WatchEvent(ERROR, Object(name=""), error=err)
    if kind == BOOKMARK:
        meta = obj.get("metadata") or {}
        rv = str(meta.get("resourceVersion", ""))
        annotations = meta.get("annotations") or {}
        return WatchEvent(BOOKMARK, Object(name="", resource_version=rv), annotations)
    return WatchEvent(kind, _decode_object(obj, codec))


class HttpWatch:
    """An open watch stream (the :class:`~refimpl.cache.listwatch.Watch` protocol).

    A reader thread decodes the chunked body line by line into a queue; the stream's
    end (clean, cut or undecodable) ends the watch, as client-go's ``StreamWatcher``
    ends its result channel on a decode error. :meth:`stop` shuts the socket and joins
    the reader.
    """

    def __init__(self, conn: http.client.HTTPConnection, response: http.client.HTTPResponse):
        self._conn = conn
        self._response = response
        self._events: queue.Queue[WatchEvent | None] = queue.Queue()
        self._codec = ConfigMapCodec()
        self._stopped = threading.Event()
        self._reader = threading.Thread(target=self._read, name="refimpl-http-watch", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            while not self._stopped.is_set():
                line = self._response.readline()
                if not line.endswith(b"\n"):
                    break  # the end of the body, or a line cut mid-way
                if line.strip():
                    self._events.put(decode_event(line, self._codec))
        except (OSError, ValueError, http.client.HTTPException):
            pass  # a cut connection or a garbled line: the watch ends
        finally:
            self._events.put(None)

    def next_event(self, timeout: float | None = None) -> WatchEvent | None:
        if self._stopped.is_set():
            return None
        try:
            event = self._events.get(timeout=timeout) if timeout != 0 else self._events.get_nowait()
        except queue.Empty:
            raise WatchTimeout(f"no watch event within {timeout} s") from None
        if event is None:
            self._stopped.set()
            self._events.put(None)  # later calls see the end too
        return event

    def stop(self) -> None:
        self._stopped.set()
        self._events.put(None)
        sock = self._conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._reader.join(REQUEST_TIMEOUT)
        self._conn.close()


class HttpListerWatcher:
    """A :class:`~refimpl.cache.listwatch.ListerWatcher` of ConfigMaps over HTTP.

    ``namespace`` "" lists and watches every namespace. Every request opens its own
    connection (a watch keeps it): simple, and nothing shared between threads.
    """

    def __init__(self, config: ClientConfig, namespace: str = "") -> None:
        parts = urlsplit(config.server)
        if parts.scheme not in ("http", "https") or parts.hostname is None:
            raise ValueError(f"expected an http:// or https:// server, got {config.server!r}")
        self._tls: ssl.SSLContext | None = None
        if parts.scheme == "https":
            if config.ca is None:
                raise ValueError("an https:// server needs a CA certificate to verify it")
            self._tls = ssl.create_default_context(cadata=config.ca.decode("ascii"))
        self._host = parts.hostname
        self._port = parts.port or (443 if self._tls else 80)
        self._headers = {"Authorization": f"Bearer {config.token}", "Accept": "application/json"}
        prefix = f"/api/v1/namespaces/{namespace}" if namespace else "/api/v1"
        self._path = f"{prefix}/{RESOURCE}"
        self._codec = ConfigMapCodec()

    def _open(self, query: dict[str, str]) -> tuple[http.client.HTTPConnection, Any]:
        conn = (
            http.client.HTTPSConnection(
                self._host, self._port, timeout=REQUEST_TIMEOUT, context=self._tls
            )
            if self._tls is not None
            else http.client.HTTPConnection(self._host, self._port, timeout=REQUEST_TIMEOUT)
        )
        try:
            conn.request("GET", f"{self._path}?{urlencode(query)}", headers=self._headers)
            response = conn.getresponse()
        except (OSError, http.client.HTTPException) as err:
            conn.close()
            raise apierrors.InternalError(f"{type(err).__name__}: {err}") from err
        if response.status != 200:
            body = response.read()
            conn.close()
            raise decode_status(response.status, body)
        return conn, response

    def list(self, options: ListOptions) -> ListResult:
        query = {"resourceVersion": options.resource_version}
        if options.limit:
            query["limit"] = str(options.limit)
        if options.continue_token:
            query["continue"] = options.continue_token
        conn, response = self._open(query)
        try:
            doc = json.loads(response.read())
        finally:
            conn.close()
        meta = doc.get("metadata") or {}
        items = tuple(_decode_object(item, self._codec) for item in doc.get("items") or [])
        return ListResult(items, str(meta.get("resourceVersion", "")), meta.get("continue", ""))

    def watch(self, options: ListOptions) -> HttpWatch:
        query = {"watch": "true", "resourceVersion": options.resource_version}
        if options.allow_watch_bookmarks:
            query["allowWatchBookmarks"] = "true"
        if options.send_initial_events is not None:
            query["sendInitialEvents"] = str(options.send_initial_events).lower()
            query["resourceVersionMatch"] = "NotOlderThan"
        if options.timeout_seconds is not None:
            query["timeoutSeconds"] = str(options.timeout_seconds)
        conn, response = self._open(query)
        if conn.sock is not None:
            conn.sock.settimeout(None)  # a watch may be quiet for long; stop() ends it
        return HttpWatch(conn, response)
