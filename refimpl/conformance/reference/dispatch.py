"""The reference side of the protocol: requests carried out on refimpl's cores.

Owns one :class:`~refimpl.clock.FakeClock`, read and stepped through its nanosecond
API (``now_ns``, ``step_ns``) as Go's Duration counts, so sums of delays are exact,
and the instances created since the last ``reset``. Never blocks or reads the wall
clock: delayed adds fire inside ``advance``, which is what the protocol asks every
adapter to guarantee before it answers. Ports no
client-go file itself; it composes the cores that port ``util/workqueue`` (``QueueCore``,
``DelayingCore``, the rate limiters, as :class:`~refimpl.workqueue.virtual.VirtualRateLimitingQueue`
does) and refines ``spec/WorkQueue.tla`` through them.

The harness runs it in-process and *steers* it where an adapter may choose: items that
become ready at the same instant in one ``advance`` leave client-go's heap in an order
fixed by its sift-up/sift-down (refimpl's DelayingCore reproduces it), but other
implementations need not keep a Go-shaped heap, so unless the adapter declares
``"heap_order": true`` for the component a ``get_nowait`` may answer any of them and
the reference then follows the adapter's choice. The reference adapter process
(:mod:`refimpl.conformance.reference.adapter`) runs the same driver unsteered.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from refimpl import __version__
from refimpl.blocking import WouldBlock
from refimpl.clock import Clock, FakeClock
from refimpl.conformance.protocol import (
    COMPONENTS,
    LIMITERS,
    OBSERVE,
    PROTOCOL_VERSION,
    PROTOCOL_VERSIONS,
    SPEC_METHODS,
    Handler,
    ProtocolError,
    error_response,
    ok_response,
    seconds_to_ns,
)
from refimpl.conformance.reference.cache import (
    INDEX_FUNCS,
    CacheParts,
    DeltaFIFOComponent,
    RealFIFOComponent,
    StoreComponent,
)
from refimpl.conformance.reference.informer import InformerComponent, InformerParts
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
    "NAMES",
    "Component",
    "Parts",
    "RateLimiterComponent",
    "ReferenceDriver",
    "WorkqueueComponent",
    "build_limiter",
    "get_result",
]

T = TypeVar("T", bound=Hashable)
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


class Component(Protocol):
    """One created instance. ``call`` carries out a method; ``actual`` is the adapter's
    response when the harness steers (None when serving as an adapter)."""

    methods: tuple[str, ...] = ()

    def call(self, method: str, args: dict[str, Any], actual: dict[str, Any] | None) -> Any:
        raise NotImplementedError

    def after_advance(self) -> None:
        """Time moved: do what client-go's background loops would have done by now."""
        return None

    def describe(self) -> str:
        """The reference's internal state, for reports (not part of the protocol)."""
        return ""


@dataclass
class Parts:
    """The pieces the driver is built from; the broken adapters swap some of them."""

    queue_core: Callable[[], QueueCore[Item]] = QueueCore
    delaying_core: Callable[[], DelayingCore[Item]] = DelayingCore
    limiter: Callable[[Any, Clock], NsRateLimiter[Item]] = build_limiter
    workqueue_component: Callable[..., WorkqueueComponent] = field(
        default_factory=lambda: WorkqueueComponent
    )
    cache: CacheParts = field(default_factory=CacheParts)
    informer: InformerParts = field(default_factory=InformerParts)


class WorkqueueComponent(Component):
    """``queue``, ``delaying_queue`` and ``rate_limiting_queue`` on one composition."""

    def __init__(
        self,
        component: str,
        clock: FakeClock,
        limiter: NsRateLimiter[Item] | None,
        parts: Parts,
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


class RateLimiterComponent(Component):
    """A bare rate limiter: ``when``, ``forget``, ``num_requeues``."""

    methods = COMPONENTS["rate_limiter"]

    def __init__(self, limiter: NsRateLimiter[Item]) -> None:
        self.limiter = limiter

    def describe(self) -> str:
        counts = {x: self.limiter.num_requeues(x) for x in NAMES}
        return "requeues=" + ",".join(f"{k}:{v}" for k, v in counts.items())

    def call(self, method: str, args: dict[str, Any], actual: dict[str, Any] | None) -> Any:
        item = _item(args)
        if method == "when":
            # Nanosecond resolution, as the protocol compares durations.
            return _duration_ns(self.limiter.when_ns(item)) / NS
        if method == "forget":
            self.limiter.forget(item)
            return None
        if method == "num_requeues":
            return self.limiter.num_requeues(item)
        raise ProtocolError("unsupported", f"a rate limiter has no method {method!r}")


class ReferenceDriver:
    """Answers protocol requests with refimpl; see the module docstring."""

    name = "refimpl-reference"

    def __init__(
        self,
        parts: Parts | None = None,
        *,
        name: str | None = None,
        steered: bool = False,
        observe: bool = True,
    ) -> None:
        self.parts = parts if parts is not None else Parts()
        if name is not None:
            self.name = name
        #: In-process, following an adapter's answers (see InformerComponent).
        self.steered = steered
        #: Declare the observations a call may carry (docs/protocol.md).
        self.observe = observe
        self.clock = FakeClock(0.0)
        self.instances: dict[str, Component] = {}
        #: each instance's component name (what its calls may observe)
        self.kinds: dict[str, str] = {}
        self.protocol = PROTOCOL_VERSION
        #: Work queue components whose adapter declared ``heap_order``: the harness
        #: compares their equal-deadline order exactly (see WorkqueueComponent).
        self.heap_order: frozenset[str] = frozenset()

    def capabilities(self, protocol: int = PROTOCOL_VERSION) -> dict[str, Any]:
        limiters = sorted(LIMITERS)
        components: dict[str, Any] = {
            name: {"methods": list(COMPONENTS[name] + SPEC_METHODS.get(name, ()))}
            for name in ("queue", "delaying_queue", "rate_limiting_queue", "rate_limiter")
        }
        components["rate_limiting_queue"]["limiters"] = limiters
        # DelayingCore is client-go's container/heap: equal deadlines in its exact order.
        components["delaying_queue"]["heap_order"] = True
        components["rate_limiting_queue"]["heap_order"] = True
        components["rate_limiter"]["limiters"] = limiters
        components["store"] = {
            "methods": list(COMPONENTS["store"]),
            "indexers": sorted(INDEX_FUNCS),
        }
        components["delta_fifo"] = {
            "methods": list(COMPONENTS["delta_fifo"]),
            "options": ["known_objects", "emit_delta_type_replaced"],
        }
        components["real_fifo"] = {
            "methods": list(COMPONENTS["real_fifo"] + SPEC_METHODS["real_fifo"]),
            "options": ["atomic"],
        }
        for name, reads in OBSERVE.items():
            if self.observe:
                components[name]["observe"] = list(reads)
        if protocol >= 2:
            components["informer"] = {
                "methods": list(COMPONENTS["informer"]),
                "behaves_like": list(self.parts.informer.modes),
                "initial": True,
                "resync": True,
                "watch_list": True,
            }
        return {
            "protocol": protocol,
            "name": self.name,
            "version": __version__,
            "implementation": f"refimpl {__version__} (workqueue and cache cores, fake clock)",
            "components": components,
        }

    def handle(self, request: Any, actual: dict[str, Any] | None = None) -> dict[str, Any]:
        """The response to ``request``; ``actual`` (the adapter's response) steers choices."""
        rid = request.get("id") if isinstance(request, dict) else None
        try:
            if not isinstance(request, dict):
                raise ProtocolError("bad_request", "a request must be a JSON object")
            observe = self._observe_names(request)
            response = ok_response(rid, self._dispatch(request, actual))
            if observe is not None:
                response["observed"] = self._observed(request, observe)
            return response
        except ProtocolError as exc:
            return error_response(rid, exc.kind, exc.message)
        except (ValueError, TypeError, OverflowError) as exc:
            return error_response(rid, "invalid_argument", f"{type(exc).__name__}: {exc}")
        except Exception as exc:
            return error_response(rid, "exception", f"{type(exc).__name__}: {exc}")

    def _dispatch(self, request: dict[str, Any], actual: dict[str, Any] | None) -> Any:
        op = request.get("op")
        if op == "hello":
            protocol = request.get("protocol")
            if protocol not in PROTOCOL_VERSIONS or isinstance(protocol, bool):
                raise ProtocolError(
                    "unsupported",
                    f"protocol {protocol!r} not spoken; this adapter speaks "
                    f"{', '.join(map(str, PROTOCOL_VERSIONS))}",
                )
            self.protocol = protocol
            return self.capabilities(protocol)
        if op == "reset":
            self.clock = FakeClock(0.0)
            self.instances = {}
            self.kinds = {}
            return None
        if op == "create":
            return self._create(request)
        if op == "call":
            instance = self._instance(request)
            method = request.get("method")
            args = request.get("args", {})
            if not isinstance(method, str) or not isinstance(args, dict):
                raise ProtocolError("bad_request", "'call' needs a string 'method', object 'args'")
            return instance.call(method, args, actual)
        if op == "advance":
            step = seconds_to_ns(request.get("seconds"), "seconds")
            if step < 0:
                raise ProtocolError("bad_request", "the clock cannot go backwards")
            self.clock.step_ns(step)
            for component in self.instances.values():
                component.after_advance()
            return None
        raise ProtocolError("bad_request", f"unknown op {op!r}")

    def _observe_names(self, request: dict[str, Any]) -> list[str] | None:
        """A call's ``observe`` list (None: none asked for), checked before the call runs."""
        names = request.get("observe")
        if names is None:
            return None
        if not self.observe:
            raise ProtocolError("bad_request", "this adapter declares no observations")
        if request.get("op") != "call" or not isinstance(names, list):
            raise ProtocolError("bad_request", "'observe' is a list of names, on a 'call' only")
        self._instance(request)  # no_instance before bad names
        instance = request.get("instance")
        allowed = OBSERVE.get(self.kinds.get(instance, "") if isinstance(instance, str) else "")
        unknown = [n for n in names if not isinstance(n, str) or n not in (allowed or ())]
        if unknown:
            raise ProtocolError("bad_request", f"cannot observe {unknown!r} on {instance!r}")
        return names

    def _observed(self, request: dict[str, Any], names: list[str]) -> dict[str, Any]:
        """What each named read answers after the call, as a request of its own would."""
        instance = self._instance(request)
        out: dict[str, Any] = {}
        for name in names:
            try:
                out[name] = instance.call(name, {}, None)
            except ProtocolError as exc:
                out[name] = {"error": {"kind": exc.kind, "message": exc.message}}
        return out

    def _instance(self, request: dict[str, Any]) -> Component:
        name = request.get("instance")
        if not isinstance(name, str) or name not in self.instances:
            raise ProtocolError("no_instance", f"no instance {name!r}")
        return self.instances[name]

    def _create(self, request: dict[str, Any]) -> None:
        name = request.get("instance")
        component = request.get("component")
        options = request.get("options", {})
        if not isinstance(name, str) or not name:
            raise ProtocolError("bad_request", "'create' needs a non-empty string 'instance'")
        if name in self.instances:
            raise ProtocolError("bad_request", f"instance {name!r} already exists")
        if not isinstance(options, dict):
            raise ProtocolError("bad_request", "'options' must be an object")
        self.instances[name] = self.build(component, options)
        self.kinds[name] = str(component)

    def build(self, component: Any, options: dict[str, Any]) -> Component:
        if component in ("queue", "delaying_queue", "rate_limiting_queue"):
            limiter = None
            if component == "rate_limiting_queue":
                spec = options.get("limiter", {"name": "default_controller"})
                limiter = self.parts.limiter(spec, self.clock)
            queue = self.parts.workqueue_component(component, self.clock, limiter, self.parts)
            queue.exact_ties = component in self.heap_order
            return queue
        if component == "rate_limiter":
            spec = options.get("limiter", {"name": "default_controller"})
            return RateLimiterComponent(self.parts.limiter(spec, self.clock))
        if component == "store":
            return StoreComponent(options, self.parts.cache)
        if component == "delta_fifo":
            return DeltaFIFOComponent(options, self.parts.cache)
        if component == "real_fifo":
            return RealFIFOComponent(options, self.parts.cache)
        if component == "informer" and self.protocol >= 2:
            return InformerComponent(options, self.clock, self.parts.informer, steered=self.steered)
        raise ProtocolError("unsupported", f"unknown component {component!r}")
