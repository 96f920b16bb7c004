"""The work queue and rate limiter components of the reference, on refimpl's cores.

``queue``, ``delaying_queue`` and ``rate_limiting_queue`` are one composition,
:class:`WorkqueueComponent`; ``rate_limiter`` is a bare limiter,
:class:`RateLimiterComponent`; :func:`build_limiter` makes a limiter from a protocol
limiter spec. Time is the driver's :class:`~refimpl.clock.FakeClock`, read and stepped
through its nanosecond API (``now_ns``, ``step_ns``) as Go's Duration counts, so sums of
delays are exact; delayed adds fire in ``after_advance``. Ports no client-go file
itself; it composes the cores that port ``util/workqueue`` (``QueueCore``,
``DelayingCore``, the rate limiters, as
:class:`~refimpl.workqueue.virtual.VirtualRateLimitingQueue` does) and refines
``spec/WorkQueue.tla`` through them.

Steering: items that become ready at the same instant in one ``advance`` leave
client-go's heap in an order fixed by its sift-up/sift-down (refimpl's DelayingCore
reproduces it), but other implementations need not keep a Go-shaped heap, so unless the
adapter declares ``"heap_order": true`` for the component a ``get_nowait`` may answer
any of them and the reference then follows the adapter's choice (the ``actual``
response the harness passes in).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from refimpl.blocking import WouldBlock
from refimpl.clock import Clock, FakeClock
from refimpl.conformance.protocol import (
    COMPONENTS,
    LIMITERS,
    SPEC_METHODS,
    Handler,
    ProtocolError,
    seconds_to_ns,
)
from refimpl.workqueue.core import FifoContainer, QueueCore
from refimpl.workqueue.delaying_core import DelayingCore
from refimpl.workqueue.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    NsRateLimiter,
    WithMaxWaitRateLimiter,
)
from refimpl.workqueue.virtual import VirtualRateLimitingQueue

__all__ = [
    "LIMITER_CLASSES",
    "NAMES",
    "LimiterFactory",
    "QueueParts",
    "RateLimiterComponent",
    "WorkqueueComponent",
    "build_limiter",
    "get_result",
]

#: The work queue items the harness generates (refimpl.conformance.search.machines), and the
#: ones reports show the limiter's counts for.
NAMES = ("a", "b", "c", "d")
Item = str
NS = 1_000_000_000


def _number(spec: dict[str, Any], key: str, limiter: str) -> float:
    value = spec.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProtocolError("bad_request", f"limiter {limiter!r} needs a number {key!r}")
    return float(value)


def _integer(spec: dict[str, Any], key: str, limiter: str) -> int:
    value = spec.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError("bad_request", f"limiter {limiter!r} needs an integer {key!r}")
    return value


def _seconds(spec: dict[str, Any], key: str, limiter: str) -> float:
    # Round to whole nanoseconds first, as a Go adapter must.
    return seconds_to_ns(_number(spec, key, limiter), f"{limiter}.{key}") / NS


#: The classes :func:`build_limiter` instantiates (the broken adapters swap some).
LimiterFactory = Callable[..., NsRateLimiter[Item]]
LIMITER_CLASSES: dict[str, LimiterFactory] = {
    "exponential": ItemExponentialFailureRateLimiter,
    "fast_slow": ItemFastSlowRateLimiter,
    "bucket": BucketRateLimiter,
    "max_of": MaxOfRateLimiter,
    "with_max_wait": WithMaxWaitRateLimiter,
}


def build_limiter(
    spec: Any, clock: Clock, classes: dict[str, LimiterFactory] | None = None
) -> NsRateLimiter[Item]:
    """A rate limiter from a protocol limiter spec (see docs/protocol.md).

    Structural mistakes raise ``ProtocolError("bad_request")``; values the limiter
    itself refuses raise ValueError (answered as ``invalid_argument``).
    """
    k = LIMITER_CLASSES if classes is None else {**LIMITER_CLASSES, **classes}
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        raise ProtocolError("bad_request", f"a limiter spec is an object with a 'name': {spec!r}")
    name = spec["name"]
    if name not in LIMITERS:
        raise ProtocolError("unsupported", f"unknown limiter {name!r}")
    if name == "exponential":
        return k["exponential"](_seconds(spec, "base", name), _seconds(spec, "max", name))
    if name == "fast_slow":
        return k["fast_slow"](
            _seconds(spec, "fast", name),
            _seconds(spec, "slow", name),
            _integer(spec, "max_fast", name),
        )
    if name == "bucket":
        return k["bucket"](_number(spec, "qps", name), _integer(spec, "burst", name), clock=clock)
    if name == "max_of":
        children = spec.get("limiters")
        if not isinstance(children, list):
            raise ProtocolError("bad_request", "limiter 'max_of' needs a list 'limiters'")
        return k["max_of"](*(build_limiter(c, clock, classes) for c in children))
    if name == "with_max_wait":
        return k["with_max_wait"](
            build_limiter(spec.get("limiter"), clock, classes), _seconds(spec, "max", name)
        )
    if name == "default_controller":
        return k["max_of"](k["exponential"](0.005, 1000.0), k["bucket"](10.0, 100, clock=clock))
    return k["exponential"](0.001, 1000.0)  # default_item_based


def _item(args: dict[str, Any]) -> Item:
    item = args.get("item")
    if not isinstance(item, str):
        raise ProtocolError("bad_request", f"'args.item' must be a string, got {item!r}")
    return item


def get_result(item: Item | None, shutdown: bool) -> dict[str, Any]:
    """The ``get_nowait`` answer for a client-go ``Get()`` return value."""
    if shutdown:
        return {"kind": "shutdown"}
    return {"kind": "item", "item": item}


class QueueParts(Protocol):
    """The cores a work queue component is built on (the driver's ``Parts`` has them;
    the broken adapters swap them)."""

    @property
    def queue_core(self) -> Callable[[], QueueCore[Item]]: ...

    @property
    def delaying_core(self) -> Callable[[], DelayingCore[Item]]: ...


class WorkqueueComponent:
    """``queue``, ``delaying_queue`` and ``rate_limiting_queue`` on one composition."""

    def __init__(
        self,
        component: str,
        clock: FakeClock,
        limiter: NsRateLimiter[Item] | None,
        parts: QueueParts,
    ) -> None:
        self.component = component
        self.methods = COMPONENTS[component] + SPEC_METHODS[component]
        self.clock = clock
        self.q = VirtualRateLimitingQueue[Item](clock, rate_limiter=limiter)
        self.q.core = parts.queue_core()
        self.q.waiting = parts.delaying_core()
        self.limiter = limiter
        #: The adapter declared ``heap_order``: equal deadlines leave in client-go's heap
        #: order, compared exactly (ReferenceDriver.build sets it).
        self.exact_ties = False
        #: Queued item -> tie group: items that became ready at the same instant in one
        #: advance and were queued together. Unless ``exact_ties``, an adapter may hand
        #: them out in any order, so get_nowait may answer any member at the head.
        self.tie_group: dict[Item, int] = {}
        self._next_group = 0
        #: drain_start was called (its ShutDownWithDrain returns once drain_complete).
        self.draining = False
        #: Each protocol method's handler (``methods`` says which this component offers).
        self.handlers: dict[str, Handler] = {
            "add": self.m_add,
            "get_nowait": self.m_get_nowait,
            "done": self.m_done,
            "len": self.m_len,
            "shut_down": self.m_shut_down,
            "shutting_down": self.m_shutting_down,
            "drain_start": self.m_drain_start,
            "drain_returned": self.m_drain_returned,
            "add_after": self.m_add_after,
            "add_rate_limited": self.m_add_rate_limited,
            "forget": self.m_forget,
            "num_requeues": self.m_num_requeues,
        }

    def call(self, method: str, args: dict[str, Any], actual: dict[str, Any] | None) -> Any:
        if method not in self.methods:
            raise ProtocolError("unsupported", f"this component has no method {method!r}")
        return self.handlers[method](args, actual)

    def describe(self) -> str:
        core = self.q.core
        now = self.clock.now_ns()
        parts = [
            f"queue=[{', '.join(core.queue)}]",
            f"dirty={{{', '.join(sorted(core.dirty))}}}",
            f"processing={{{', '.join(sorted(core.processing))}}}",
        ]
        if self.component != "queue":
            waiting = sorted(self.q.waiting.ready_times().items(), key=lambda kv: kv[1])
            shown = ", ".join(f"{item} in {(at - now) / NS:g}s" for item, at in waiting)
            parts.append(f"waiting={{{shown}}}")
        if core.shutting_down:
            parts.append("shutting down")
        if self.limiter is not None:
            counts = {x: self.limiter.num_requeues(x) for x in NAMES}
            parts.append("requeues=" + ",".join(f"{k}:{v}" for k, v in counts.items() if v))
        return " ".join(p for p in parts if not p.endswith("="))

    # -- queue
    def m_add(self, args: dict[str, Any], actual: dict[str, Any] | None) -> None:
        self.q.core.add(_item(args))

    def head_choices(self) -> list[Item]:
        """Items a correct implementation may hand out next (the head's tie group)."""
        queue = self.q.core.queue
        if len(queue) == 0:
            return []
        head = next(iter(queue))
        group = self.tie_group.get(head)
        if group is None or self.exact_ties:
            return [head]
        return [x for x in queue if self.tie_group.get(x) == group]

    def m_get_nowait(self, args: dict[str, Any], actual: dict[str, Any] | None) -> Any:
        wanted = _chosen_item(actual)
        choices = self.head_choices()
        if wanted is not None and wanted in choices and wanted != choices[0]:
            queue = self.q.core.queue
            assert isinstance(queue, FifoContainer)
            queue.remove(wanted)
            queue.appendleft(wanted)
        try:
            item, shutdown = self.q.core.get()
        except WouldBlock:
            return {"kind": "empty"}
        if item is not None:
            self.tie_group.pop(item, None)
        return get_result(item, shutdown)

    def m_done(self, args: dict[str, Any], actual: dict[str, Any] | None) -> None:
        self.q.core.done(_item(args))

    def m_len(self, args: dict[str, Any], actual: dict[str, Any] | None) -> int:
        return len(self.q.core)

    def m_shut_down(self, args: dict[str, Any], actual: dict[str, Any] | None) -> None:
        if self.component == "queue":
            # The plain queue's ShutDown runs every time (it also ends a drain, WQ-12);
            # the delaying and rate-limiting queues' runs once (DQ-6).
            self.q.core.shut_down()
        else:
            self.q.shut_down()

    def m_shutting_down(self, args: dict[str, Any], actual: dict[str, Any] | None) -> bool:
        return self.q.core.shutting_down

    # -- spec walks: ShutDownWithDrain split into its start and its return
    def m_drain_start(self, args: dict[str, Any], actual: dict[str, Any] | None) -> None:
        """``ShutDownWithDrain`` called: the queue drains; the caller waits (see
        m_drain_returned) until nothing is in flight or a ShutDown cuts it short."""
        self.q.core.begin_drain()
        self.q.waiting.clear()
        self.draining = True

    def m_drain_returned(self, args: dict[str, Any], actual: dict[str, Any] | None) -> bool:
        return self.draining and self.q.core.drain_complete()

    # -- delaying
    def m_add_after(self, args: dict[str, Any], actual: dict[str, Any] | None) -> None:
        item = _item(args)
        self.add_after_ns(item, seconds_to_ns(args.get("delay"), "args.delay"))

    def now_ns(self) -> int:
        return self.clock.now_ns()

    def add_after_ns(self, item: Item, delay_ns: int) -> None:
        # VirtualRateLimitingQueue.add_after with the delay already in nanoseconds;
        # the waiting room holds the driver's nanoseconds directly.
        q = self.q
        if q.core.shutting_down:
            return
        if delay_ns <= 0:
            q.core.add(item)
        else:
            q.waiting.insert(item, self.now_ns() + delay_ns)

    def after_advance(self) -> None:
        core = self.q.core
        if core.shutting_down:
            return
        ready_at = self.q.waiting.ready_times()
        due = self.q.waiting.pop_due(self.now_ns())
        run: list[Item] = []
        run_time: int | None = None
        for item in due:
            if not core.add(item):
                continue
            when = ready_at[item]
            if when != run_time:
                self._close_run(run)
                run, run_time = [], when
            run.append(item)
        self._close_run(run)

    def _close_run(self, run: list[Item]) -> None:
        if len(run) > 1:
            self._next_group += 1
            for item in run:
                self.tie_group[item] = self._next_group

    # -- rate limiting
    def _limiter(self) -> NsRateLimiter[Item]:
        if self.limiter is None:
            raise ProtocolError("unsupported", "this instance has no rate limiter")
        return self.limiter

    def m_add_rate_limited(self, args: dict[str, Any], actual: dict[str, Any] | None) -> None:
        item = _item(args)
        self.add_after_ns(item, _duration_ns(self._limiter().when_ns(item)))

    def m_forget(self, args: dict[str, Any], actual: dict[str, Any] | None) -> None:
        self._limiter().forget(_item(args))

    def m_num_requeues(self, args: dict[str, Any], actual: dict[str, Any] | None) -> int:
        return self._limiter().num_requeues(_item(args))


def _duration_ns(ns: int) -> int:
    """A limiter's answer in ns, refused past what a Go Duration holds (as
    ``seconds_to_ns`` refuses such a protocol duration)."""
    if abs(ns) > 9.2e18:
        raise ProtocolError("invalid_argument", f"when() out of range: {ns / NS!r} s")
    return ns


def _chosen_item(actual: dict[str, Any] | None) -> Item | None:
    if actual is None:
        return None
    result = actual.get("result")
    if isinstance(result, dict) and result.get("kind") == "item":
        item = result.get("item")
        return item if isinstance(item, str) else None
    return None


class RateLimiterComponent:
    """A bare rate limiter: ``when``, ``forget``, ``num_requeues``."""

    methods = COMPONENTS["rate_limiter"]

    def __init__(self, limiter: NsRateLimiter[Item]) -> None:
        self.limiter = limiter
        #: Each protocol method's handler, given the request's item.
        self.handlers: dict[str, Callable[[Item], Any]] = {
            "when": self.m_when,
            "forget": self.m_forget,
            "num_requeues": self.m_num_requeues,
        }

    def describe(self) -> str:
        counts = {x: self.limiter.num_requeues(x) for x in NAMES}
        return "requeues=" + ",".join(f"{k}:{v}" for k, v in counts.items())

    def after_advance(self) -> None:
        pass

    def call(self, method: str, args: dict[str, Any], actual: dict[str, Any] | None) -> Any:
        item = _item(args)  # a bad item is refused before an unknown method
        handler = self.handlers.get(method)
        if handler is None:
            raise ProtocolError("unsupported", f"a rate limiter has no method {method!r}")
        return handler(item)

    def m_when(self, item: Item) -> float:
        # Nanosecond resolution, as the protocol compares durations.
        return _duration_ns(self.limiter.when_ns(item)) / NS

    def m_forget(self, item: Item) -> None:
        self.limiter.forget(item)

    def m_num_requeues(self, item: Item) -> int:
        return self.limiter.num_requeues(item)
