"""Driver-protocol adapter for aiok8s (an asyncio port of client-go's workqueue and cache).

    adapters/aiok8s/.venv/bin/python adapters/aiok8s/adapter.py    (``make build`` first)

Standalone: needs only the standard library and aiok8s, never refimpl. Speaks protocol 2
(docs/protocol.md) on stdin/stdout, and protocol 1 to an older harness. Glue, not
semantics:

* one asyncio event loop; after every request the loop is run until no callback is
  ready, so the delaying queue's waiting loop (and the informer's reflector, FIFO pop
  and listeners) have done everything the request caused (the quiescence rule);
* the loop's own clock is the fake clock (:class:`FakeTimeLoop`), so ``asyncio.sleep``
  in the reflector, controller and listeners moves only on ``advance``;
* the ``informer`` component is aiok8s' real ``_SharedIndexInformer`` (reflector,
  DeltaFIFO, indexer, shared processor) over a lister-watcher (:class:`SeamListerWatcher`)
  whose ``list``/``watch`` coroutines wait on futures the harness resolves;
* aiok8s' own ``FakeClock``; times are ``fractions.Fraction`` seconds so deadlines
  compare exactly, as Go's integer nanoseconds do (aiok8s is unit-agnostic: it adds and
  compares whatever the clock and the caller give it). Limiter delays (floats) are
  rounded to whole nanoseconds on the way into the queue;
* ``get_nowait`` / ``pop_nowait`` run the real blocking ``get``/``pop`` as a task, let the
  loop settle, and cancel it if it is still waiting ("empty");
* objects are Kubernetes-style dicts ``{"metadata": {...}}``, which aiok8s' accessors read.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from aiok8s.cache import delta_fifo as dfifo
from aiok8s.cache import fifo as afifo
from aiok8s.cache import index as aindex
from aiok8s.cache import shared_informer as ainformer
from aiok8s.cache import store as astore
from aiok8s.cache.controller import ResourceEventHandlerFuncs
from aiok8s.util import clock as aclock
from aiok8s.workqueue import default_rate_limiters as rl
from aiok8s.workqueue import delaying_queue, queue, rate_limiting_queue

VERSION = "0.0.2"
NS = 1_000_000_000

QUEUE = ["add", "get_nowait", "done", "len", "shut_down", "shutting_down"]
CAPS: dict[str, Any] = {
    "queue": {"methods": QUEUE},
    "delaying_queue": {"methods": [*QUEUE, "add_after"]},
    "rate_limiting_queue": {
        "methods": [*QUEUE, "add_after", "add_rate_limited", "forget", "num_requeues"],
        # No fast_slow / with_max_wait / default_item_based in aiok8s; its bucket reads
        # the wall clock, so it is only offered inside default_controller (whose bucket
        # of 100 tokens never runs dry within one example).
        "limiters": ["exponential", "max_of", "default_controller"],
    },
    "rate_limiter": {
        "methods": ["when", "forget", "num_requeues"],
        "limiters": ["exponential", "max_of", "default_controller"],
    },
    "store": {
        "methods": [
            "add",
            "update",
            "delete",
            "replace",
            "get_by_key",
            "list_keys",
            "list",
            "by_index",
            "index_keys",
            "list_index_func_values",
        ],
        "indexers": ["labels", "namespace"],
    },
    "delta_fifo": {
        "methods": [
            "add",
            "update",
            "delete",
            "replace",
            "resync",
            "pop_nowait",
            "has_synced",
            "close",
            "is_closed",
            "known_add",
            "known_delete",
        ],
        # aiok8s predates the Replaced delta type: Replace always emits Sync.
        "option_values": {"emit_delta_type_replaced": [False], "known_objects": [True, False]},
    },
}


class Refused(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


# ---------------------------------------------------------------------- objects


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
    if isinstance(value, dfifo.DeletedFinalStateUnknown):
        return {"tombstone": {"key": value.key, "obj": from_k8s(value.obj)}}
    meta = value["metadata"]
    return {
        "namespace": meta.get("namespace") or "",
        "name": meta["name"],
        "rv": meta.get("resourceVersion", ""),
        "labels": dict(sorted((meta.get("labels") or {}).items())),
    }


def key_of(obj: dict[str, Any]) -> str:
    return str(astore.meta_namespace_key_func(obj))


def labels_index(obj: Any) -> list[str]:
    labels = obj["metadata"].get("labels") or {}
    return sorted(f"{k}={v}" for k, v in labels.items())


INDEX_FUNCS = {"namespace": aindex.meta_namespace_index_func, "labels": labels_index}


# ---------------------------------------------------------------------- limiters


def limiter(spec: Any) -> Any:
    if not isinstance(spec, dict):
        raise Refused("bad_request", f"bad limiter spec {spec!r}")
    name = spec.get("name")
    if name == "exponential":
        return rl.ItemExponentialFailureRateLimiter(spec["base"], spec["max"])
    if name == "max_of":
        return rl._MaxOfRateLimiters(*(limiter(s) for s in spec["limiters"]))
    if name == "default_controller":
        return rl.default_controller_rate_limiter()
    raise Refused("unsupported", f"limiter {name!r} is not in aiok8s")


class ExactDelays:
    """Hands the queue limiter delays as exact Fractions of whole nanoseconds."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def when(self, item: Any) -> Fraction:
        return Fraction(round(self.inner.when(item) * NS), NS)

    def forget(self, item: Any) -> None:
        self.inner.forget(item)

    def num_requeues(self, item: Any) -> int:
        return int(self.inner.num_requeues(item))


# ---------------------------------------------------------------------- informer

INFORMER_METHODS = [
    "add_handler",
    "start",
    "list_reply",
    "list_error",
    "watch_open",
    "watch_error",
    "watch_event",
    "watch_end",
    "pause",
    "resume",
    "state",
]
INFORMER_CAPS: dict[str, Any] = {
    "methods": INFORMER_METHODS,
    "behaves_like": None,  # a 2019 port: no generation of client-go matches it whole
    "initial": False,  # no isInInitialList in 2019
    "resync": True,  # default and per-handler resync periods
}
# HTTP status and Status reason for each failure the harness names.
STATUS = {
    "expired": (410, "Expired"),
    "internal": (500, "InternalError"),
    "too_many_requests": (429, "TooManyRequests"),
}


class FakeTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose ``time()`` is the adapter's fake clock.

    ``asyncio.sleep``/``call_later`` deadlines are then fake-clock deadlines: they fall
    due only when ``advance`` moves the clock, never while the adapter waits.
    """

    def __init__(self, now: Callable[[], Fraction]) -> None:
        super().__init__()
        self._fake_now = now

    def time(self) -> float:
        return float(self._fake_now())

    def next_deadline(self) -> float | None:
        live = [h.when() for h in self._scheduled if not h.cancelled()]  # type: ignore[attr-defined]
        return min(live) if live else None


class ApiError(Exception):
    """What the lister-watcher raises for an HTTP error answer (aiok8s has no type)."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(f"{code} {reason}")
        self.code = code


class Seam:
    """The harness's end of the lister-watcher: at most one request or stream read waits."""

    def __init__(self) -> None:
        self.request: tuple[str, str, asyncio.Future[Any]] | None = None
        self.reading: tuple[str, asyncio.Future[Any]] | None = None

    async def wait(self, op: str, rv: str) -> Any:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.request = (op, rv, fut)
        try:
            return await fut
        finally:
            self.request = None

    async def read(self, rv: str) -> Any:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.reading = (rv, fut)
        try:
            return await fut
        finally:
            self.reading = None


class SeamStream:
    """An open watch: an async iterator (and context manager) of watch events."""

    def __init__(self, seam: Seam, rv: str) -> None:
        self.seam = seam
        self.rv = rv
        self.done = False

    def __aiter__(self) -> SeamStream:
        return self

    async def __anext__(self) -> dict[str, Any]:
        if self.done:
            raise StopAsyncIteration
        kind, payload = await self.seam.read(self.rv)
        if kind == "event":
            event: dict[str, Any] = payload
            return event
        self.done = True
        if payload == "clean":
            raise StopAsyncIteration
        if payload == "reset":
            raise ConnectionResetError(104, "Connection reset by peer")
        code, reason = STATUS[payload]
        return {"type": "ERROR", "object": _status(code, reason)}

    async def __aenter__(self) -> SeamStream:
        return self

    async def __aexit__(self, *_exc: Any) -> None:
        self.done = True


def _status(code: int, reason: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "reason": reason,
        "code": code,
    }


class SeamListerWatcher:
    """aiok8s' ListerWatcher protocol (``list``/``watch`` coroutines, like its ListWatch)."""

    def __init__(self, seam: Seam) -> None:
        self.seam = seam

    async def list(self, options: dict[str, Any]) -> dict[str, Any]:
        kind, *rest = await self.seam.wait("list", str(options.get("resource_version", "")))
        if kind == "error":
            raise ApiError(*STATUS[rest[0]])
        objects, rv = rest
        return {
            "apiVersion": "v1",
            "kind": "List",
            "metadata": {"resourceVersion": rv},
            "items": objects,
        }

    async def watch(self, options: dict[str, Any]) -> SeamStream:
        rv = str(options.get("resource_version", ""))
        kind, *rest = await self.seam.wait("watch", rv)
        if kind == "error":
            raise ApiError(*STATUS[rest[0]])
        return SeamStream(self.seam, rv)


def rv_of(value: Any) -> str:
    if value is None:
        return ""
    return str(value["metadata"].get("resourceVersion", ""))


class Gate:
    """Whether the informer's processing loop may pop (``pause``/``resume``)."""

    def __init__(self) -> None:
        self.paused = False
        self.fifo: GatedDeltaFIFO | None = None
        self.waking: asyncio.Future[None] | None = None

    async def set(self, paused: bool) -> None:
        self.paused = paused
        if not paused and self.fifo is not None:
            # Waking the gated pop needs the FIFO's lock, which aiok8s holds while it
            # processes a pop; that can wait on a handler's 60 s pause after it raised.
            # So the wake runs beside the call: answering ``resume`` (or ``pause``, which
            # wakes nothing) never waits on the library's lock, and the loop resumes once
            # the library lets it.
            self.waking = asyncio.ensure_future(self._wake(self.fifo))

    @staticmethod
    async def _wake(fifo: GatedDeltaFIFO) -> None:
        async with fifo._cond:
            fifo._cond.notify_all()


class GatedDeltaFIFO(dfifo.DeltaFIFO):
    """aiok8s' own DeltaFIFO with a gate in front of ``pop``, so ``pause`` can stop the
    processing loop while the reflector still queues (as the client-java adapter does).
    Every method is the library's; the gate only decides when ``pop`` is called: once
    something is queued and the loop is not paused (the library's pop would wait for the
    first anyway)."""

    def __init__(self, gate: Gate, *args: Any) -> None:
        super().__init__(*args)
        self.gate = gate
        gate.fifo = self

    async def pop(self, process: Any) -> Any:
        async with self._cond:
            while (self.gate.paused or not self._queue) and not self.is_closed():
                await self._cond.wait()
        return await super().pop(process)


class GatedModule:
    """What ``shared_informer.run`` sees as the ``delta_fifo`` module while one informer
    starts: the library's, but its ``DeltaFIFO`` is gated by that informer's gate."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    def DeltaFIFO(self, *args: Any) -> GatedDeltaFIFO:
        return GatedDeltaFIFO(self.gate, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(dfifo, name)


class Informer:
    """aiok8s' shared informer on the seam, its fake clock, and recording handlers."""

    def __init__(self, resync: Fraction, clock: Any) -> None:
        self.seam = Seam()
        self.informer = ainformer.new_shared_informer(SeamListerWatcher(self.seam), dict, resync)
        # aiok8s' own tests inject their FakeClock this way (test_shared_informer.py).
        self.informer._clock = clock
        self.informer._processor._clock = clock
        self.task: asyncio.Task[Any] | None = None
        self.calls: list[dict[str, Any]] = []
        self.gate = Gate()

    def cached_rv(self, key: str) -> str | None:
        found = self.informer.get_indexer().get_by_key(key)
        return None if found is None else rv_of(found)

    async def add_handler(self, name: str, raises: bool, resync: Any) -> None:
        def record(call: dict[str, Any]) -> None:
            call["cache"] = self.cached_rv(call["key"])
            self.calls.append({"handler": name, **call})
            if raises:
                raise RuntimeError(f"handler {name} raises, as asked")

        async def on_add(obj: Any) -> None:
            record({"kind": "add", "key": key_of(obj), "rv": rv_of(obj)})

        async def on_update(old: Any, new: Any) -> None:
            record({"kind": "update", "key": key_of(new), "rv": rv_of(new), "old_rv": rv_of(old)})

        async def on_delete(obj: Any) -> None:
            if isinstance(obj, dfifo.DeletedFinalStateUnknown):
                call = {"kind": "delete", "key": obj.key, "rv": rv_of(obj.obj), "tombstone": True}
            else:
                call = {"kind": "delete", "key": key_of(obj), "rv": rv_of(obj), "tombstone": False}
            record(call)

        handler = ResourceEventHandlerFuncs(on_add, on_update, on_delete)
        period = None if resync is None else seconds(resync)
        await self.informer.add_event_handler(handler, resync_period=period)

    def waiting(self) -> dict[str, Any]:
        if self.task is None or self.task.done():
            return {"op": "idle"}
        if self.seam.request is not None:
            return {"op": self.seam.request[0], "rv": self.seam.request[1]}
        if self.seam.reading is not None:
            return {"op": "watching", "rv": self.seam.reading[0]}
        return {"op": "sleeping"}

    def observe(self) -> dict[str, Any]:
        calls, self.calls = self.calls, []
        cache = sorted((from_k8s(o) for o in self.informer.get_indexer().list()), key=_obj_key)
        return {
            "waiting": self.waiting(),
            "has_synced": bool(self.informer.has_synced()),
            "cache": cache,
            "calls": calls,
        }

    def resolve(self, where: str, value: Any) -> None:
        if where == "watching":
            if self.seam.reading is None:
                raise Refused("bad_request", "no watch is open")
            self.seam.reading[1].set_result(value)
            return
        if self.seam.request is None or self.seam.request[0] != where:
            raise Refused("bad_request", f"the informer is not waiting for a {where}")
        self.seam.request[2].set_result(value)

    async def call(self, method: str, args: dict[str, Any]) -> None:
        if method == "add_handler":
            await self.add_handler(
                str(args.get("name")), bool(args.get("raises")), args.get("resync")
            )
        elif method == "start":
            if self.task is not None:
                raise Refused("bad_request", "already started")
            # run() builds its DeltaFIFO before its first await: the gated one.
            ainformer.delta_fifo = GatedModule(self.gate)
            try:
                self.task = asyncio.ensure_future(self.informer.run())
                await asyncio.sleep(0)
            finally:
                ainformer.delta_fifo = dfifo
        elif method in ("pause", "resume"):
            await self.gate.set(method == "pause")
        elif method == "list_reply":
            objects = [to_k8s(o) for o in args.get("objects") or []]
            self.resolve("list", ("reply", objects, str(args.get("rv"))))
        elif method in ("list_error", "watch_error"):
            reason = args.get("reason")
            if reason not in STATUS:
                raise Refused("bad_request", f"unknown reason {reason!r}")
            self.resolve("list" if method == "list_error" else "watch", ("error", reason))
        elif method == "watch_open":
            self.resolve("watch", ("open",))
        elif method == "watch_event":
            self.resolve("watching", ("event", watch_event(args)))
        elif method == "watch_end":
            how = args.get("how")
            if how not in ("clean", "reset", *STATUS):
                raise Refused("bad_request", f"unknown end {how!r}")
            self.resolve("watching", ("end", how))
        elif method != "state":
            raise Refused("unsupported", f"informer has no {method!r}")


def watch_event(args: dict[str, Any]) -> dict[str, Any]:
    kind = args.get("type")
    obj = args.get("object")
    if kind == "BOOKMARK":
        rv = obj.get("rv", "") if isinstance(obj, dict) else ""
        return {"type": kind, "object": {"metadata": {"resourceVersion": rv}}}
    if kind not in ("ADDED", "MODIFIED", "DELETED"):
        raise Refused("bad_request", f"unknown event type {kind!r}")
    return {"type": kind, "object": to_k8s(obj)}


# ---------------------------------------------------------------------- the adapter


def seconds(value: Any) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Refused("bad_request", f"not a duration: {value!r}")
    return Fraction(round(value * NS), NS)


class KnownObjects:
    """The FIFO's knownObjects, as an aiok8s store (get_by_key returns obj or None)."""

    def __init__(self) -> None:
        self.store = astore.new_store(astore.meta_namespace_key_func)


class Adapter:
    def __init__(self) -> None:
        self.clock = aclock.FakeClock(Fraction(0))
        self.loop = FakeTimeLoop(lambda: self.clock.now())
        asyncio.set_event_loop(self.loop)
        self.instances: dict[str, tuple[str, Any, Any]] = {}
        self.tasks: set[asyncio.Task[Any]] = set()

    # The loop has settled when no callback is ready to run.
    async def _settle(self) -> None:
        for _ in range(10_000):
            await asyncio.sleep(0)
            if not self.loop._ready:  # type: ignore[attr-defined]
                await asyncio.sleep(0)
                if not self.loop._ready:  # type: ignore[attr-defined]
                    return

    def run(self, coro: Any) -> Any:
        async def go() -> Any:
            try:
                return await coro
            finally:
                await self._settle()

        return self.loop.run_until_complete(go())

    def _track_new_tasks(self, before: set[asyncio.Task[Any]]) -> None:
        self.tasks |= asyncio.all_tasks(self.loop) - before

    def reset(self) -> None:
        for task in self.tasks:
            task.cancel()
        if self.tasks:
            self.loop.run_until_complete(asyncio.gather(*self.tasks, return_exceptions=True))
        self.tasks = set()
        if any(c == "informer" for c, _, _ in self.instances.values()):
            self._cancel_everything()
        self.instances = {}
        self.clock = aclock.FakeClock(Fraction(0))

    def _cancel_everything(self) -> None:
        """Cancel every task (informers spawn many), without waiting on fake time."""

        async def sweep() -> bool:
            me = asyncio.current_task()
            left = [t for t in asyncio.all_tasks() if t is not me]
            for task in left:
                task.cancel()
            await self._settle()
            return not [t for t in asyncio.all_tasks() if t is not me]

        for _ in range(20):
            if self.loop.run_until_complete(sweep()):
                return
        # Something refuses to end: start over on a fresh loop rather than hang.
        print("aiok8s adapter: tasks survive cancellation; new event loop", file=sys.stderr)
        self.loop = FakeTimeLoop(lambda: self.clock.now())
        asyncio.set_event_loop(self.loop)

    def create(self, name: str, component: str, options: dict[str, Any]) -> None:
        async def make() -> tuple[Any, Any]:
            before = asyncio.all_tasks(self.loop)
            extra: Any = None
            if component == "queue":
                obj: Any = queue.Type(self.clock)
            elif component == "delaying_queue":
                obj = delaying_queue._DelayingType(self.clock)
            elif component == "rate_limiting_queue":
                inner = limiter(options.get("limiter", {"name": "default_controller"}))
                obj = rate_limiting_queue._RateLimitingType(ExactDelays(inner), self.clock)
            elif component == "rate_limiter":
                obj = limiter(options.get("limiter", {"name": "default_controller"}))
            elif component == "store":
                names = options.get("indexers", [])
                obj = astore.new_indexer(
                    astore.meta_namespace_key_func,
                    aindex.Indexers({n: INDEX_FUNCS[n] for n in names}),
                )
            elif component == "informer":
                obj = Informer(seconds(options.get("resync", 0) or 0), self.clock)
            elif component == "delta_fifo":
                if options.get("emit_delta_type_replaced"):
                    raise Refused("unsupported", "aiok8s has no Replaced delta type")
                extra = KnownObjects()
                known = extra.store if options.get("known_objects", True) else None
                obj = dfifo.DeltaFIFO(astore.meta_namespace_key_func, known)
            else:
                raise Refused("unsupported", f"no component {component!r}")
            self._track_new_tasks(before)
            return obj, extra

        obj, extra = self.run(make())
        self.instances[name] = (component, obj, extra)

    async def _nowait(self, coro: Any) -> tuple[bool, Any]:
        task = asyncio.ensure_future(coro)
        await self._settle()
        if task.done():
            return True, task.result()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return False, None

    def call(self, name: str, method: str, args: dict[str, Any]) -> Any:
        if name not in self.instances:
            raise Refused("no_instance", f"no instance {name!r}")
        component, obj, extra = self.instances[name]
        if component == "informer":
            return self.run(self._informer_call(obj, method, args))
        if method not in CAPS[component]["methods"]:
            raise Refused("unsupported", f"{component} has no {method!r}")
        item = args.get("item")

        async def go() -> Any:
            if component == "rate_limiter":
                if method == "when":
                    return round(obj.when(item) * NS) / NS
                if method == "forget":
                    obj.forget(item)
                    return None
                return obj.num_requeues(item)
            if component in ("queue", "delaying_queue", "rate_limiting_queue"):
                return await self._queue_call(obj, method, args)
            if component == "store":
                return await self._store_call(obj, method, args)
            return await self._fifo_call(obj, extra, method, args)

        return self.run(go())

    async def _informer_call(self, inf: Informer, method: str, args: dict[str, Any]) -> Any:
        await inf.call(method, args)
        await self._settle()
        return inf.observe()

    async def _queue_call(self, q: Any, method: str, args: dict[str, Any]) -> Any:
        item = args.get("item")
        if method == "add":
            await q.add(item)
        elif method == "get_nowait":
            done, value = await self._nowait(q.get())
            if not done:
                return {"kind": "empty"}
            got, shutdown = value
            return {"kind": "shutdown"} if shutdown else {"kind": "item", "item": got}
        elif method == "done":
            await q.done(item)
        elif method == "len":
            return len(q)
        elif method == "shut_down":
            await q.shut_down()
        elif method == "shutting_down":
            return bool(q.shutting_down())
        elif method == "add_after":
            await q.add_after(item, seconds(args.get("delay")))
        elif method == "add_rate_limited":
            await q.add_rate_limited(item)
        elif method == "forget":
            q.forget(item)
        elif method == "num_requeues":
            return int(q.num_requeues(item))
        return None

    async def _store_call(self, s: Any, method: str, args: dict[str, Any]) -> Any:
        if method in ("add", "update", "delete"):
            await getattr(s, method)(to_k8s(args.get("obj")))
        elif method == "replace":
            await s.replace([to_k8s(o) for o in args.get("objs", [])], args.get("rv", ""))
        elif method == "get_by_key":
            found = s.get_by_key(args.get("key"))
            return {"exists": found is not None, "obj": from_k8s(found)}
        elif method == "list_keys":
            return sorted(s.list_keys())
        elif method == "list":
            return sorted((from_k8s(o) for o in s.list()), key=_obj_key)
        elif method == "by_index":
            found = await s.by_index(args.get("index"), args.get("value"))
            return sorted((from_k8s(o) for o in found), key=_obj_key)
        elif method == "index_keys":
            return sorted(await s.index_keys(args.get("index"), args.get("value")))
        elif method == "list_index_func_values":
            return sorted(await s.list_index_func_values(args.get("index")))
        return None

    async def _fifo_call(self, f: Any, known: Any, method: str, args: dict[str, Any]) -> Any:
        if method == "known_add":
            await known.store.update(to_k8s(args.get("obj")))
        elif method == "known_delete":
            await known.store.delete(to_k8s(args.get("obj")))
        elif method in ("add", "update", "delete"):
            await getattr(f, method)(to_k8s(args.get("obj")))
        elif method == "replace":
            await f.replace([to_k8s(o) for o in args.get("objs", [])], args.get("rv", ""))
        elif method == "resync":
            await f.resync()
        elif method == "pop_nowait":

            async def process(_deltas: Any) -> None:
                return None

            try:
                done, deltas = await self._nowait(f.pop(process))
            except afifo.FIFOClosedError:
                return {"kind": "closed"}
            if not done:
                return {"kind": "empty"}
            return {
                "kind": "item",
                "deltas": [{"type": d.type.value, "object": from_k8s(d.object)} for d in deltas],
            }
        elif method == "has_synced":
            return bool(f.has_synced())
        elif method == "close":
            await f.close()
        elif method == "is_closed":
            return bool(f.is_closed())
        return None

    def advance(self, value: Any) -> None:
        step = seconds(value)
        if step < 0:
            raise Refused("bad_request", "the clock cannot go backwards")
        if any(c == "informer" for c, _, _ in self.instances.values()):
            self.run(self._step_through(self.clock.now() + step))
        else:
            self.run(self.clock.step(step))

    async def _step_through(self, target: Fraction) -> None:
        """Move the clock to each due deadline in turn (loop timers, clock waiters)."""
        for _ in range(100_000):
            due = [Fraction(w._target_time) for w in self.clock._waiters]
            loop_due = self.loop.next_deadline()
            if loop_due is not None:
                due.append(Fraction(loop_due))
            due = [d for d in due if d <= target]
            if not due:
                break
            await self.clock.set_time(max(self.clock.now(), min(due)))
            await self._settle()
        await self.clock.set_time(target)

    def handle(self, request: dict[str, Any]) -> Any:
        op = request.get("op")
        if op == "hello":
            protocol = request.get("protocol")
            if protocol not in (1, 2):
                raise Refused("unsupported", "this adapter speaks protocols 1 and 2")
            components = dict(CAPS)
            if protocol == 2:
                components["informer"] = INFORMER_CAPS
            return {
                "protocol": protocol,
                "name": "aiok8s-adapter",
                "version": VERSION,
                "implementation": f"aiok8s {VERSION} (PyPI), Python {sys.version.split()[0]}",
                "components": components,
            }
        if op == "reset":
            self.reset()
            return None
        if op == "create":
            self.create(
                str(request.get("instance")),
                str(request.get("component")),
                request.get("options") or {},
            )
            return None
        if op == "call":
            return self.call(
                str(request.get("instance")), str(request.get("method")), request.get("args") or {}
            )
        if op == "advance":
            self.advance(request.get("seconds"))
            return None
        raise Refused("bad_request", f"unknown op {op!r}")


def _obj_key(obj: dict[str, Any]) -> str:
    return f"{obj['namespace']}/{obj['name']}" if obj["namespace"] else obj["name"]


def main() -> int:
    adapter = Adapter()
    for line in sys.stdin.buffer:
        request: Any = None
        try:
            request = json.loads(line)
            response = {"id": request.get("id"), "result": adapter.handle(request)}
        except Refused as exc:
            response = {"id": _rid(request), "error": {"kind": exc.kind, "message": str(exc)}}
        except Exception as exc:  # the implementation raised: an observable answer
            # aiok8s reports errors by raising (KeyError for an unknown index, as
            # client-go returns an error): those are "invalid_argument"; anything
            # else is an unexpected exception.
            refusal = isinstance(exc, (KeyError, ValueError, TypeError))
            kind = "invalid_argument" if refusal else "exception"
            response = {
                "id": _rid(request),
                "error": {"kind": kind, "message": f"{type(exc).__name__}: {exc}"},
            }
        sys.stdout.write(json.dumps(response, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    return 0


def _rid(request: Any) -> Any:
    return request.get("id") if isinstance(request, dict) else None


if __name__ == "__main__":
    sys.exit(main())
