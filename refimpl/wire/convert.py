"""refimpl's objects as the JSON of core/v1 ConfigMaps, and the API's other documents.

Maps :class:`refimpl.meta.Object` to a ConfigMap (``metadata.name``, ``namespace``,
``uid``, ``resourceVersion``, ``labels``, ``creationTimestamp``; ``data``) and back, and
writes the List, watch-event (``metav1.WatchEvent``), Status (``metav1.Status``, the
shape apimachinery's ``StatusError`` decodes) and discovery documents. Nothing here does
I/O; ``refimpl/wire/handlers.py`` sends what it builds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from refimpl.apierrors import ApiError, BadRequest, TooLargeResourceVersion, TooManyRequests
from refimpl.meta import ListResult, Object
from refimpl.watch import BOOKMARK, ERROR, WatchEvent

__all__ = [
    "API_RESOURCES",
    "API_VERSIONS",
    "GROUP_LIST",
    "KIND",
    "RESOURCE",
    "VERSION_INFO",
    "ConfigMapCodec",
    "failure_json",
    "status_json",
    "unauthorized_json",
]

KIND: Final = "ConfigMap"
RESOURCE: Final = "configmaps"
#: The key under which data that is not a map of strings travels (see ``_data_json``).
VALUE_KEY: Final = "value"

#: ``GET /api``: the legacy group's versions.
API_VERSIONS: Final[dict[str, Any]] = {
    "kind": "APIVersions",
    "versions": ["v1"],
    "serverAddressByClientCIDRs": [],
}
#: ``GET /api/v1``: the one resource served, with its verbs.
API_RESOURCES: Final[dict[str, Any]] = {
    "kind": "APIResourceList",
    "groupVersion": "v1",
    "resources": [
        {
            "name": RESOURCE,
            "singularName": "configmap",
            "namespaced": True,
            "kind": KIND,
            "verbs": ["create", "delete", "get", "list", "update", "watch"],
            "shortNames": ["cm"],
        }
    ],
}
#: ``GET /apis``: no named groups.
GROUP_LIST: Final[dict[str, Any]] = {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}
#: ``GET /version`` (``version.Info``); the minor version is the one whose API is served.
VERSION_INFO: Final[dict[str, str]] = {
    "major": "1",
    "minor": "33",
    "gitVersion": "v1.33.0-refimpl",
    "gitCommit": "",
    "gitTreeState": "clean",
    "buildDate": "1970-01-01T00:00:00Z",
    "goVersion": "none",
    "compiler": "none",
    "platform": "refimpl",
}


def _timestamp(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def status_json(err: ApiError, *, name: str = "", retry_after: int | None = None) -> dict[str, Any]:
    """``metav1.Status`` for an error answer: code, reason, message, causes, and the
    seconds to wait (``retry_after``; by default :func:`_retry_after`'s rule; 0: none)."""
    details: dict[str, Any] = {"kind": RESOURCE}
    if name:
        details["name"] = name
    if err.causes:
        details["causes"] = [{"reason": c, "message": err.message} for c in err.causes]
    after = _retry_after(err) if retry_after is None else retry_after
    if after:
        details["retryAfterSeconds"] = after
    return failure_json(err.code, err.reason, err.message, details)


def failure_json(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A ``metav1.Status`` with status Failure."""
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details is not None:
        status["details"] = details
    status["code"] = code
    return status


def _retry_after(err: ApiError) -> int:
    """Seconds a client should wait before retrying (0: no Retry-After header); the
    kube-apiserver sends one with 429s and with a too-large-resourceVersion 504."""
    return 1 if isinstance(err, (TooManyRequests, TooLargeResourceVersion)) else 0


def unauthorized_json() -> dict[str, Any]:
    return failure_json(401, "Unauthorized", "Unauthorized")


def _data_json(data: object) -> dict[str, str] | None:
    """A ConfigMap's ``data`` is a map of strings; refimpl's ``Object.data`` is free-form.
    A map of strings passes as is; anything else travels as ``{"value": str(data)}``."""
    if data is None:
        return None
    if isinstance(data, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        return dict(data)
    return {VALUE_KEY: str(data)}


def _string_map(value: object, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise BadRequest(f"{where} must be a map of strings")
    return dict(value)


def _string(meta: Mapping[str, Any], field: str) -> str:
    value = meta.get(field, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadRequest(f"metadata.{field} must be a string")
    return value


class ConfigMapCodec:
    """Encodes objects as ConfigMaps and decodes request bodies into objects.

    ``Object`` has no creation time, so the codec remembers one per uid: the time it
    first encoded an object with that uid (``clock``, seconds since the epoch).
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._created: dict[str, str] = {}
        self._lock = threading.Lock()

    def _created_at(self, uid: str) -> str:
        with self._lock:
            if uid not in self._created:
                self._created[uid] = _timestamp(self._clock())
            return self._created[uid]

    def encode(self, obj: Object, *, typed: bool = True) -> dict[str, Any]:
        """The ConfigMap JSON of ``obj``; ``typed=False`` leaves out kind and apiVersion
        (a List's items carry neither)."""
        meta: dict[str, Any] = {"name": obj.name}
        if obj.namespace:
            meta["namespace"] = obj.namespace
        if obj.uid:
            meta["uid"] = obj.uid
            meta["creationTimestamp"] = self._created_at(obj.uid)
        if obj.resource_version:
            meta["resourceVersion"] = obj.resource_version
        if obj.labels:
            meta["labels"] = dict(obj.labels)
        doc: dict[str, Any] = {"kind": KIND, "apiVersion": "v1"} if typed else {}
        doc["metadata"] = meta
        data = _data_json(obj.data)
        if data is not None:
            doc["data"] = data
        return doc

    def decode(self, body: object, namespace: str) -> Object:
        """The object a create or update body describes, in ``namespace`` (the path's).

        Raises :class:`BadRequest` for a body that is not a ConfigMap of this namespace.
        Unknown fields (annotations, binaryData, ...) are dropped.
        """
        if not isinstance(body, dict):
            raise BadRequest("the request body must be a JSON object")
        if body.get("kind", KIND) != KIND or body.get("apiVersion", "v1") != "v1":
            raise BadRequest(f"expected kind {KIND} in apiVersion v1")
        meta = body.get("metadata") or {}
        if not isinstance(meta, dict):
            raise BadRequest("metadata must be an object")
        if _string(meta, "namespace") not in ("", namespace):
            raise BadRequest(
                "the namespace of the provided object does not match the namespace sent "
                "on the request"
            )
        data = body.get("data")
        return Object(
            name=_string(meta, "name"),
            namespace=namespace,
            uid=_string(meta, "uid"),
            resource_version=_string(meta, "resourceVersion"),
            labels=_string_map(meta.get("labels"), "metadata.labels"),
            data=None if data is None else _string_map(data, "data"),
        )

    def list_json(self, result: ListResult, items: tuple[Object, ...]) -> dict[str, Any]:
        """A ConfigMapList of ``items`` with ``result``'s resourceVersion and continue."""
        meta: dict[str, str] = {"resourceVersion": result.resource_version}
        if result.continue_token:
            meta["continue"] = result.continue_token
        return {
            "kind": f"{KIND}List",
            "apiVersion": "v1",
            "metadata": meta,
            "items": [self.encode(o, typed=False) for o in items],
        }

    def event_json(self, event: WatchEvent) -> dict[str, Any]:
        """``metav1.WatchEvent``: a BOOKMARK's object carries only its resourceVersion
        (and annotations), an ERROR's object is a Status."""
        if event.type == ERROR:
            err = event.error if event.error is not None else ApiError("watch failed")
            return {"type": ERROR, "object": status_json(err)}
        if event.type == BOOKMARK:
            meta: dict[str, Any] = {"resourceVersion": event.resource_version}
            if event.annotations:
                meta["annotations"] = dict(event.annotations)
            return {
                "type": BOOKMARK,
                "object": {"kind": KIND, "apiVersion": "v1", "metadata": meta},
            }
        return {"type": event.type, "object": self.encode(event.object)}
