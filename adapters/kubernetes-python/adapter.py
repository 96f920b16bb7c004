"""Driver-protocol adapter for the official Kubernetes Python client (``kubernetes``).

    adapters/kubernetes-python/.venv/bin/python adapters/kubernetes-python/adapter.py
    adapters/kubernetes-python/.venv/bin/python adapters/kubernetes-python/adapter.py --wire

Standalone: the standard library and ``kubernetes==37.0.2`` (``make build`` here makes the
virtualenv). Speaks protocol 2 (and 1 to an older harness). With ``--wire`` it offers only
the wire mode's informer (:class:`WireInformer`: the real client against the harness's
server, on real time; README.md, "Over the wire"). Without it, two components:

* ``store``: ``kubernetes.informer.ObjectCache`` through the helpers ``SharedInformer``
  itself calls (``_put``, ``_remove``, ``_replace_all``); no indexers exist.
* ``informer``: the real ``SharedInformer`` on a real ``CoreV1Api`` and ``ApiClient``; only
  the HTTP connection pool is fake (:class:`FakePoolManager`), so every list and watch
  request goes through the generated client, ``RESTClientObject`` and
  ``kubernetes.watch.Watch`` and blocks until the harness answers it.

Fake time (the scripted mode only, :func:`use_fake_time`): ``SharedInformer`` reads
``time.monotonic()`` (resync) and backs off with ``self._stop_event.wait(timeout=5)``. The
module's ``time`` name is pointed at :class:`FakeTime` and each informer's
``_stop_event`` is a :class:`FakeEvent`, whose timed wait parks until ``advance``
reaches its deadline. Quiescence: the informer runs in one thread; the adapter answers
only once that thread is parked in the seam again (a request, a stream read or a
fake-clock wait) -- see README.md.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import kubernetes.informer.informer as informer_module
import urllib3
from kubernetes import client, config
from kubernetes.informer import ADDED, DELETED, MODIFIED, ObjectCache, SharedInformer

VERSION = "37.0.2"
NS = 1_000_000_000
SETTLE_SECONDS = 4.0  # real time: only a guard against a hung informer thread
WIRE_STOP_SECONDS = 0.5  # real time: how long closing waits for SharedInformer.stop
# The wire mode's convergence bound: SharedInformer waits a fixed 5 s after each failed
# list (no setting shortens it), and a plan may queue several list faults in a row.
WIRE_QUIESCENCE_SECONDS = 30.0

INFORMER_METHODS = [
    "add_handler",
    "start",
    "list_reply",
    "list_error",
    "watch_open",
    "watch_error",
    "watch_event",
    "watch_end",
    "state",
]
CAPS_V1: dict[str, Any] = {
    "store": {
        "methods": ["add", "update", "delete", "replace", "get_by_key", "list_keys", "list"],
        "indexers": [],
    }
}
CAPS_V2: dict[str, Any] = {
    **CAPS_V1,
    "informer": {
        "methods": INFORMER_METHODS,
        "behaves_like": None,  # not client-go: list+watch straight into the cache
        "initial": False,  # handlers get one object, no is_in_initial_list
        "resync": False,  # resync is a relist; no per-handler periods
    },
}
# HTTP status and Status reason for each failure the harness names.
STATUS = {
    "expired": (410, "Expired", "too old resource version"),
    "internal": (500, "InternalError", "internal error"),
    "too_many_requests": (429, "TooManyRequests", "too many requests, please try again later"),
}


class Refused(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


# ---------------------------------------------------------------------- objects


def to_k8s(obj: Any) -> dict[str, Any]:
    """A protocol object as the API server would send a ConfigMap."""
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        raise Refused("bad_request", f"bad object {obj!r}")
    meta: dict[str, Any] = {
        "name": obj["name"],
        "resourceVersion": obj.get("rv", ""),
        "labels": dict(obj.get("labels", {})),
    }
    if obj.get("namespace"):
        meta["namespace"] = obj["namespace"]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def _meta(value: Any) -> tuple[str, str, str, dict[str, str]]:
    """(namespace, name, rv, labels) of a dict object or a generated model."""
    if isinstance(value, dict):
        m = value.get("metadata") or {}
        return (
            m.get("namespace") or "",
            m.get("name") or "",
            m.get("resourceVersion") or "",
            dict(m.get("labels") or {}),
        )
    m = value.metadata
    return m.namespace or "", m.name or "", m.resource_version or "", dict(m.labels or {})


def from_k8s(value: Any) -> Any:
    if value is None:
        return None
    namespace, name, rv, labels = _meta(value)
    return {"namespace": namespace, "name": name, "rv": rv, "labels": dict(sorted(labels.items()))}


def key(obj: dict[str, Any]) -> str:
    return f"{obj['namespace']}/{obj['name']}" if obj["namespace"] else obj["name"]


# ---------------------------------------------------------------------- fake time


def call_target(instances: dict[str, Any], request: dict[str, Any]) -> Any:
    """The instance a ``call`` names; any other op left by now is unknown."""
    op = request.get("op")
    if op != "call":
        raise Refused("bad_request", f"unknown op {op!r}")
    inst = instances.get(str(request.get("instance")))
    if inst is None:
        raise Refused("no_instance", "no such instance")
    return inst


class FakeClock:
    """Integer nanoseconds since the adapter's start (or ``reset``)."""

    def __init__(self) -> None:
        self.now_ns = 0

    def seconds(self) -> float:
        return self.now_ns / NS


CLOCK = FakeClock()


class FakeTime:
    """Stands in for the ``time`` module inside ``kubernetes.informer.informer`` only."""

    @staticmethod
    def monotonic() -> float:
        return CLOCK.seconds()

    @staticmethod
    def time() -> float:
        return CLOCK.seconds()


def use_fake_time() -> None:
    """Point ``time`` inside ``kubernetes.informer.informer`` at :class:`FakeTime`: the
    scripted mode only (the wire mode runs the informer on real time)."""
    setattr(informer_module, "time", FakeTime)  # noqa: B010 (the module's own name, replaced)


# ---------------------------------------------------------------------- the seam


class SeamClosed(urllib3.exceptions.ProtocolError):
    """Raised into the informer thread when its instance is discarded."""


class Seam:
    """Where the informer thread parks, and how the harness's answers reach it.

    ``state`` is what the thread waits for (``None`` while it runs): ``("list", rv)``,
    ``("watch", rv)``, ``("watching", rv)`` or ``("sleeping", deadline_ns)``. The thread
    parks with :meth:`park`; the adapter hands it one reply with :meth:`answer`, which
    returns once the thread has taken the reply and parked again.
    """

    def __init__(self) -> None:
        self.cv = threading.Condition()
        self.state: tuple[str, Any] | None = None
        self.reply: tuple[Any, ...] | None = None
        self.closed = False
        self.thread: threading.Thread | None = None
        self.watch_requested = False

    def park(self, state: tuple[str, Any]) -> tuple[Any, ...]:
        with self.cv:
            if self.closed:
                raise SeamClosed("informer discarded")
            if state[0] == "watch":
                self.watch_requested = True
            self.state = state
            self.cv.notify_all()
            while self.reply is None and not self.closed:
                self.cv.wait()
            reply, self.reply = self.reply, None
            self.state = None
            if reply is None:
                raise SeamClosed("informer discarded")
            return reply

    def answer(self, reply: tuple[Any, ...]) -> None:
        with self.cv:
            self.reply = reply
            self.cv.notify_all()
        self.settle()

    def settle(self) -> None:
        """Wait until the informer thread is parked (or gone)."""
        give_up = time.monotonic() + SETTLE_SECONDS
        with self.cv:
            while self.state is None or self.reply is not None:
                if self.closed or self.thread is None or not self.thread.is_alive():
                    return
                left = give_up - time.monotonic()
                if left <= 0:
                    raise Refused("internal", "the informer thread did not park")
                self.cv.wait(min(left, 0.05))

    def close(self) -> None:
        with self.cv:
            self.closed = True
            self.cv.notify_all()


class FakeEvent:
    """``SharedInformer._stop_event`` on the fake clock: a timed wait parks as sleeping."""

    def __init__(self, seam: Seam) -> None:
        self.seam = seam
        self.flag = False

    def is_set(self) -> bool:
        return self.flag

    def set(self) -> None:
        self.flag = True

    def clear(self) -> None:
        self.flag = False

    def wait(self, timeout: float | None = None) -> bool:
        if timeout is None:  # SharedInformer only ever waits with a timeout
            raise NotImplementedError("an untimed wait has no fake-clock meaning here")
        if self.flag:
            return True
        try:
            self.seam.park(("sleeping", CLOCK.now_ns + round(timeout * NS)))
        except SeamClosed:
            return True
        return self.flag


class FakeResponse:
    """A finished urllib3 response: a list body or an error Status."""

    def __init__(self, status: int, reason: str, body: dict[str, Any]) -> None:
        self.status = status
        self.reason = reason
        self.data = json.dumps(body).encode()
        self.headers = {"content-type": "application/json"}
        if status == 429:
            self.headers["retry-after"] = "1"
        self.connection = None

    def getheaders(self) -> dict[str, str]:
        return self.headers

    def getheader(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name.lower(), default)

    def close(self) -> None:
        pass

    def release_conn(self) -> None:
        pass


class FakeWatchResponse(FakeResponse):
    """An open watch: ``stream`` yields one JSON line per harness ``watch_event``."""

    def __init__(self, seam: Seam, rv: str) -> None:
        super().__init__(200, "OK", {})
        self.seam = seam
        self.rv = rv

    def stream(self, amt: Any = None, decode_content: Any = None) -> Iterator[bytes]:
        while True:
            reply = self.seam.park(("watching", self.rv))
            if reply[0] == "event":
                yield reply[1]
                continue
            how = reply[1]
            if how == "clean":
                return
            if how == "reset":
                # what urllib3 raises when the socket breaks mid-read
                raise urllib3.exceptions.ProtocolError(
                    "Connection broken: ConnectionResetError(104, 'Connection reset by peer')",
                    ConnectionResetError(104, "Connection reset by peer"),
                )
            code, reason, message = STATUS[how]
            yield _line({"type": "ERROR", "object": _status(code, reason, message)})
            return


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def _line(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode() + b"\n"


class FakePoolManager:
    """The urllib3 pool under ``RESTClientObject``: requests wait for the harness."""

    def __init__(self, seam: Seam) -> None:
        self.seam = seam

    def request(self, method: str, url: str, **_kwargs: Any) -> FakeResponse:
        query = parse_qs(urlsplit(url).query)
        rv = query.get("resourceVersion", [""])[0]
        watch = query.get("watch", ["false"])[0] == "true"
        reply = self.seam.park(("watch" if watch else "list", rv))
        if reply[0] == "error":
            code, reason, message = STATUS[reply[1]]
            return FakeResponse(code, reason, _status(code, reason, message))
        if watch:
            return FakeWatchResponse(self.seam, rv)
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMapList",
            "metadata": {"resourceVersion": reply[2]},
            "items": reply[1],
        }
        return FakeResponse(200, "OK", body)

    def clear(self) -> None:
        pass


# ---------------------------------------------------------------------- informer


class Informer:
    """One ``SharedInformer`` wired to a :class:`Seam`, with recording handlers."""

    def __init__(self, resync: float) -> None:
        self.seam = Seam()
        api_client = client.ApiClient(client.Configuration(host="http://harness.invalid"))
        api_client.rest_client.pool_manager = FakePoolManager(self.seam)  # type: ignore[assignment]
        api = client.CoreV1Api(api_client)
        self.informer = SharedInformer(api.list_config_map_for_all_namespaces, resync_period=resync)
        # No public seam for the backoff wait: the informer's own event, on fake time.
        self.informer._stop_event = FakeEvent(self.seam)  # type: ignore[assignment]
        self.calls: list[dict[str, Any]] = []
        self.started = False

    def cached_rv(self, k: str) -> str | None:
        found = self.informer.cache.get_by_key(k)
        return None if found is None else _meta(found)[2]

    def record(self, call: dict[str, Any]) -> None:
        self.calls.append(call)  # the list of the moment: observe() swaps it

    def add_handler(self, name: str, raises: bool) -> None:
        for event, handle in recording_handlers(name, raises, self.cached_rv, self.record):
            self.informer.add_event_handler(event, handle)

    def start(self) -> None:
        if self.started:
            raise Refused("bad_request", "already started")
        self.started = True
        self.informer.start()
        self.seam.thread = self.informer._thread
        self.seam.settle()

    def expect(self, *ops: str) -> tuple[str, Any]:
        state = self.seam.state
        if state is None or state[0] not in ops:
            raise Refused("bad_request", f"the informer is not waiting for {'/'.join(ops)}")
        return state

    def waiting(self) -> dict[str, Any]:
        state = self.seam.state
        alive = self.seam.thread is not None and self.seam.thread.is_alive()
        if not self.started or state is None or not alive:
            return {"op": "idle"}
        if state[0] == "sleeping":
            return {"op": "sleeping"}
        return {"op": state[0], "rv": state[1]}

    def observe(self) -> dict[str, Any]:
        calls, self.calls = self.calls, []
        cache = sorted((from_k8s(o) for o in self.informer.cache.list()), key=key)
        return {
            "waiting": self.waiting(),
            # SharedInformer has no HasSynced: true once it asked for its first watch,
            # which it does only after its first list filled the cache and notified.
            "has_synced": self.seam.watch_requested,
            "cache": cache,
            "calls": calls,
        }

    def call(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        if method == "add_handler":
            self.add_handler(str(args.get("name")), bool(args.get("raises")))
        elif method == "start":
            self.start()
        elif method == "list_reply":
            self.expect("list")
            objs = args.get("objects") or []
            self.seam.answer(("reply", [to_k8s(o) for o in objs], str(args.get("rv"))))
        elif method in ("list_error", "watch_error"):
            self.expect("list" if method == "list_error" else "watch")
            reason = args.get("reason")
            if reason not in STATUS:
                raise Refused("bad_request", f"unknown reason {reason!r}")
            self.seam.answer(("error", reason))
        elif method == "watch_open":
            self.expect("watch")
            self.seam.answer(("open",))
        elif method == "watch_event":
            self.expect("watching")
            self.seam.answer(("event", _line(watch_event(args))))
        elif method == "watch_end":
            self.expect("watching")
            how = args.get("how")
            if how not in ("clean", "reset", *STATUS):
                raise Refused("bad_request", f"unknown end {how!r}")
            self.seam.answer(("end", how))
        elif method != "state":
            raise Refused("unsupported", f"informer has no {method!r}")
        return self.observe()

    def wake_due(self, now_ns: int) -> bool:
        """Wake the thread if its fake-clock wait is over; True if it was woken."""
        state = self.seam.state
        if state is not None and state[0] == "sleeping" and state[1] <= now_ns:
            self.seam.answer(("wake",))
            return True
        return False

    def deadline(self) -> int | None:
        state = self.seam.state
        return state[1] if state is not None and state[0] == "sleeping" else None

    def close(self) -> None:
        self.informer._stop_event.set()
        self.seam.close()
        thread = self.informer._thread
        if thread is not None:
            thread.join(timeout=SETTLE_SECONDS)


def recording_handlers(
    name: str,
    raises: bool,
    cached_rv: Callable[[str], str | None],
    record: Callable[[dict[str, Any]], None],
) -> list[tuple[str, Callable[[Any], None]]]:
    """One handler's callbacks for ADDED, MODIFIED and DELETED: each records its call
    with what the cache held for the key (``cached_rv``) at that moment."""
    # MODIFIED handlers get the new object only: like any user of this API, the
    # recording handler remembers what it last saw per key and reports that as old_rv.
    seen: dict[str, str] = {}

    def recorder(kind: str) -> Callable[[Any], None]:
        def handle(obj: Any) -> None:
            o = from_k8s(obj)
            k = key(o)
            call: dict[str, Any] = {"handler": name, "kind": kind, "key": k, "rv": o["rv"]}
            if kind == "update":
                call["old_rv"] = seen.get(k, "")
            if kind == "delete":
                call["tombstone"] = False  # never a DeletedFinalStateUnknown
                seen.pop(k, None)
            else:
                seen[k] = o["rv"]
            call["cache"] = cached_rv(k)
            record(call)
            if raises:
                raise RuntimeError(f"handler {name} raises, as asked")

        return handle

    return [(ADDED, recorder("add")), (MODIFIED, recorder("update")), (DELETED, recorder("delete"))]


def watch_event(args: dict[str, Any]) -> dict[str, Any]:
    kind = args.get("type")
    obj = args.get("object")
    if kind == "BOOKMARK":
        rv = obj.get("rv", "") if isinstance(obj, dict) else ""
        meta = {"resourceVersion": rv}
        return {"type": kind, "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}}
    if kind not in ("ADDED", "MODIFIED", "DELETED"):
        raise Refused("bad_request", f"unknown event type {kind!r}")
    return {"type": kind, "object": to_k8s(obj)}


# ---------------------------------------------------------------------- the adapter


class Adapter:
    def __init__(self) -> None:
        self.instances: dict[str, ObjectCache | Informer] = {}

    def reset(self) -> None:
        for inst in self.instances.values():
            if isinstance(inst, Informer):
                inst.close()
        self.instances = {}
        CLOCK.now_ns = 0

    def advance(self, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise Refused("bad_request", f"bad duration {value!r}")
        target = CLOCK.now_ns + round(value * NS)
        informers = [i for i in self.instances.values() if isinstance(i, Informer)]
        # Step from deadline to deadline, so a wait that ends and starts another
        # inside this advance sees time pass as it would.
        for _ in range(10_000):
            due = [d for d in (i.deadline() for i in informers) if d is not None and d <= target]
            if not due:
                break
            CLOCK.now_ns = max(CLOCK.now_ns, min(due))
            for inf in informers:
                inf.wake_due(CLOCK.now_ns)
        CLOCK.now_ns = target

    def handle(self, request: dict[str, Any]) -> Any:
        op = request.get("op")
        if op == "hello":
            protocol = request.get("protocol")
            if protocol not in (1, 2):
                raise Refused("unsupported", "this adapter speaks protocols 1 and 2")
            return {
                "protocol": protocol,
                "name": "kubernetes-python-adapter",
                "version": VERSION,
                "implementation": (
                    f"kubernetes (Python client) {VERSION}: informer.ObjectCache"
                    + (", informer.SharedInformer" if protocol == 2 else "")
                ),
                "components": CAPS_V2 if protocol == 2 else CAPS_V1,
            }
        if op == "reset":
            self.reset()
            return None
        if op == "create":
            component = request.get("component")
            options = request.get("options") or {}
            name = str(request.get("instance"))
            if component == "store":
                if options.get("indexers"):
                    raise Refused("unsupported", "ObjectCache has no indexers")
                self.instances[name] = ObjectCache()
            elif component == "informer":
                resync = options.get("resync", 0) or 0
                old = self.instances.get(name)
                if isinstance(old, Informer):
                    old.close()
                self.instances[name] = Informer(float(resync))
            else:
                raise Refused("unsupported", f"no component {component!r} in this client")
            return None
        if op == "advance":
            self.advance(request.get("seconds"))
            return None
        inst = call_target(self.instances, request)
        method = str(request.get("method"))
        args = request.get("args") or {}
        if isinstance(inst, Informer):
            return inst.call(method, args)
        return store_call(inst, method, args)


def store_call(cache: ObjectCache, method: str, args: dict[str, Any]) -> Any:
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


# ---------------------------------------------------------------------- the wire mode


class WireInformer:
    """The wire mode's informer (``--wire``; docs/protocol.md "Wire mode"): on ``start``
    a real ``SharedInformer`` over ``CoreV1Api`` on the ``ApiClient`` that
    ``config.new_client_from_config`` builds from the harness's kubeconfig. Nothing is
    faked: its requests reach the harness's server, on real time. The handlers record
    from the informer's thread; ``state`` answers at once from the harness's."""

    def __init__(self) -> None:
        self.handlers: list[tuple[str, bool]] = []
        self.informer: SharedInformer | None = None
        self.lock = threading.Lock()
        self.calls: list[dict[str, Any]] = []
        self.watched = False

    def record(self, call: dict[str, Any]) -> None:
        with self.lock:
            self.calls.append(call)

    def start(self, path: str) -> None:
        if self.informer is not None:
            raise Refused("bad_request", "the informer has started")
        api = client.CoreV1Api(config.new_client_from_config(config_file=path))
        informer = SharedInformer(self.noting_watches(api.list_config_map_for_all_namespaces))
        for name, raises in self.handlers:
            for event, handle in recording_handlers(name, raises, self.cached_rv, self.record):
                informer.add_event_handler(event, handle)
        self.informer = informer
        informer.start()

    def noting_watches(self, list_func: Callable[..., Any]) -> Callable[..., Any]:
        """``list_func`` itself, noting its first watch call (``has_synced``).
        ``functools.wraps`` keeps the signature and docstring ``Watch.stream`` reads the
        return type from."""

        @functools.wraps(list_func)
        def call(*args: Any, **kwargs: Any) -> Any:
            if kwargs.get("watch"):
                self.watched = True
            return list_func(*args, **kwargs)

        return call

    def cached_rv(self, k: str) -> str | None:
        found = self.informer.cache.get_by_key(k) if self.informer is not None else None
        return None if found is None else _meta(found)[2]

    def observe(self) -> dict[str, Any]:
        with self.lock:
            calls, self.calls = self.calls, []
        objects = self.informer.cache.list() if self.informer is not None else []
        return {
            "waiting": {"op": "wire"},
            # As in the scripted mode: no HasSynced, so true from the first watch request
            # on, which comes only after the first list filled the cache and notified.
            "has_synced": self.watched,
            "cache": sorted((from_k8s(o) for o in objects), key=key),
            "calls": calls,
        }

    def call(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        if method == "add_handler":
            self.handlers.append((str(args.get("name")), bool(args.get("raises"))))
        elif method == "start":
            path = args.get("kubeconfig")
            if not isinstance(path, str):
                raise Refused("bad_request", "start needs a kubeconfig path")
            self.start(path)
        elif method != "state":
            raise Refused("unsupported", f"no {method!r} in the wire mode")
        return self.observe()

    def close(self) -> None:
        """``SharedInformer.stop``, waited for a moment only: it joins the informer's
        thread, which a request in flight holds until the server answers."""
        if self.informer is not None:
            stopping = threading.Thread(target=self.informer.stop, daemon=True)
            stopping.start()
            stopping.join(timeout=WIRE_STOP_SECONDS)


class WireAdapter:
    """Protocol 2, the informer component alone, with ``"wire": true``."""

    def __init__(self, quiescence: float) -> None:
        self.quiescence = quiescence
        self.instances: dict[str, WireInformer] = {}

    def reset(self) -> None:
        for inst in self.instances.values():
            inst.close()
        self.instances = {}

    def handle(self, request: dict[str, Any]) -> Any:
        op = request.get("op")
        if op == "hello":
            if request.get("protocol") != 2:
                raise Refused("unsupported", "the wire mode speaks protocol 2")
            caps: dict[str, Any] = {
                "methods": ["add_handler", "start", "state"],
                "behaves_like": None,
                "wire": True,
                "quiescence_seconds": self.quiescence,
            }
            return {
                "protocol": 2,
                "name": "kubernetes-python-adapter",
                "version": VERSION,
                "implementation": f"kubernetes (Python client) {VERSION}: SharedInformer",
                "components": {"informer": caps},
            }
        if op == "reset":
            self.reset()
            return None
        if op == "create":
            if request.get("component") != "informer":
                raise Refused("unsupported", "the wire mode offers the informer alone")
            if (request.get("options") or {}).get("resync"):
                raise Refused("unsupported", "the wire mode runs without resync")
            name = str(request.get("instance"))
            if name in self.instances:
                self.instances[name].close()
            self.instances[name] = WireInformer()
            return None
        inst = call_target(self.instances, request)
        return inst.call(str(request.get("method")), request.get("args") or {})


USAGE = "usage: adapter.py [--wire [--quiescence SECONDS]]"


def from_flags(args: list[str]) -> Adapter | WireAdapter | None:
    """The adapter the command line asks for; None for a usage error."""
    if not args:
        use_fake_time()
        return Adapter()
    if args[0] != "--wire" or len(args) not in (1, 3):
        return None
    if len(args) == 1:
        return WireAdapter(WIRE_QUIESCENCE_SECONDS)
    try:
        quiescence = float(args[2])
    except ValueError:
        return None
    if args[1] != "--quiescence" or not 0 < quiescence <= 60:
        return None
    return WireAdapter(quiescence)


def main(argv: list[str] | None = None) -> int:
    adapter = from_flags(sys.argv[1:] if argv is None else argv)
    if adapter is None:
        print(USAGE, file=sys.stderr)
        return 2
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")
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
    adapter.reset()
    return 0


if __name__ == "__main__":
    sys.exit(main())
