"""Driver-protocol adapter for the official Kubernetes Python client's informer cache.

    python adapters/kubernetes-python/adapter.py     (with kubernetes==37.0.2 importable)

What the client offers (checked in 37.0.2): ``kubernetes.watch.Watch`` (a watch-stream
iterator) and, since 2026, ``kubernetes.informer`` with ``SharedInformer`` (list + watch
in a thread, event handlers) and ``ObjectCache`` (a keyed store). There is no workqueue,
no DeltaFIFO/RealFIFO, no indexers and no rate limiter, so the only component this
adapter can offer is ``store``, without index methods: add/update go to
``ObjectCache._put``, delete to ``_remove``, replace to ``_replace_all`` -- the
"mutation helpers" SharedInformer itself calls for ADDED/MODIFIED, DELETED and the
initial list. Standalone: needs only the standard library and ``kubernetes``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from kubernetes.informer import ObjectCache

VERSION = "37.0.2"
CAPS = {
    "store": {
        "methods": ["add", "update", "delete", "replace", "get_by_key", "list_keys", "list"],
        "indexers": [],
    }
}


class Refused(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def to_k8s(obj: Any) -> dict[str, Any]:
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        raise Refused("bad_request", f"bad object {obj!r}")
    return {
        "metadata": {
            "name": obj["name"],
            "namespace": obj.get("namespace", ""),
            "resourceVersion": obj.get("rv", ""),
            "labels": dict(obj.get("labels", {})),
        }
    }


def from_k8s(value: Any) -> Any:
    if value is None:
        return None
    meta = value["metadata"]
    return {
        "namespace": meta.get("namespace") or "",
        "name": meta["name"],
        "rv": meta.get("resourceVersion", ""),
        "labels": dict(sorted((meta.get("labels") or {}).items())),
    }


def key(obj: dict[str, Any]) -> str:
    return f"{obj['namespace']}/{obj['name']}" if obj["namespace"] else obj["name"]


class Adapter:
    def __init__(self) -> None:
        self.instances: dict[str, ObjectCache] = {}

    def handle(self, request: dict[str, Any]) -> Any:
        op = request.get("op")
        if op == "hello":
            if request.get("protocol") != 1:
                raise Refused("unsupported", "this adapter speaks protocol 1")
            return {
                "protocol": 1,
                "name": "kubernetes-python-adapter",
                "version": VERSION,
                "implementation": f"kubernetes (Python client) {VERSION}: informer.ObjectCache",
                "components": CAPS,
            }
        if op == "reset":
            self.instances = {}
            return None
        if op == "create":
            if request.get("component") != "store":
                raise Refused("unsupported", "only 'store' exists in this client")
            if (request.get("options") or {}).get("indexers"):
                raise Refused("unsupported", "ObjectCache has no indexers")
            self.instances[str(request.get("instance"))] = ObjectCache()
            return None
        if op == "advance":
            return None  # nothing here depends on time
        if op != "call":
            raise Refused("bad_request", f"unknown op {op!r}")
        cache = self.instances.get(str(request.get("instance")))
        if cache is None:
            raise Refused("no_instance", "no such instance")
        method = request.get("method")
        args = request.get("args") or {}
        if method in ("add", "update"):
            cache._put(to_k8s(args.get("obj")))
        elif method == "delete":
            cache._remove(to_k8s(args.get("obj")))
        elif method == "replace":
            cache._replace_all([to_k8s(o) for o in args.get("objs", [])])
        elif method == "get_by_key":
            found = cache.get_by_key(args.get("key"))
            return {"exists": found is not None, "obj": from_k8s(found)}
        elif method == "list_keys":
            return sorted(cache.list_keys())
        elif method == "list":
            return sorted((from_k8s(o) for o in cache.list()), key=key)
        else:
            raise Refused("unsupported", f"ObjectCache has no {method!r}")
        return None


def main() -> int:
    adapter = Adapter()
    for line in sys.stdin.buffer:
        request: Any = None
        try:
            request = json.loads(line)
            response = {"id": request.get("id"), "result": adapter.handle(request)}
        except Refused as exc:
            rid = request.get("id") if isinstance(request, dict) else None
            response = {"id": rid, "error": {"kind": exc.kind, "message": str(exc)}}
        except Exception as exc:
            rid = request.get("id") if isinstance(request, dict) else None
            response = {
                "id": rid,
                "error": {"kind": "exception", "message": f"{type(exc).__name__}: {exc}"},
            }
        sys.stdout.write(json.dumps(response, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
