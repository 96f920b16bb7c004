"""The reference driver: one protocol request in, one answer out, carried out on refimpl.

:class:`ReferenceDriver` owns one :class:`~refimpl.clock.FakeClock` and the instances
created since the last ``reset``; it dispatches a request by its ``op`` (``hello``,
``reset``, ``create``, ``call``, ``advance``: :attr:`ReferenceDriver.ops`), a ``create``
by its component (:attr:`ReferenceDriver.builders`) and a ``call`` to the instance, whose
``handlers`` table maps each method to the code that carries it out;
:func:`reference_methods` reads those tables back. The components live in
:mod:`~refimpl.conformance.reference.workqueue` (work queues, rate limiter),
:mod:`~refimpl.conformance.reference.cache` (store, FIFOs) and
:mod:`~refimpl.conformance.reference.informer`. :class:`Parts` is what they are built
from; the broken adapters (adapters/broken/) swap some.

Never blocks or reads the wall clock: delayed adds fire inside ``advance``, which is what
the protocol asks every adapter to guarantee before it answers. The harness runs the
driver in-process and *steered* (``actual``, the adapter's response, settles choices a
correct implementation may make either way: see the components); the reference adapter
process (:mod:`refimpl.conformance.reference.adapter`) runs the same driver unsteered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from refimpl import __version__
from refimpl.clock import Clock, FakeClock
from refimpl.conformance.protocol import (
    COMPONENTS,
    LIMITERS,
    OBSERVE,
    PROTOCOL_VERSION,
    PROTOCOL_VERSIONS,
    SPEC_METHODS,
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
from refimpl.conformance.reference.workqueue import (
    Item,
    RateLimiterComponent,
    WorkqueueComponent,
    build_limiter,
)
from refimpl.eras import LATEST, Era
from refimpl.workqueue.core import QueueCore
from refimpl.workqueue.delaying_core import DelayingCore
from refimpl.workqueue.rate_limiters import NsRateLimiter

__all__ = [
    "STEERED",
    "Component",
    "Parts",
    "ReferenceDriver",
    "reference_methods",
]


#: Per component, the methods whose reference answer follows the adapter's (``actual``
#: picks among the answers client-go allows: a tie's order, the candidates of
#: ``head_choices``); a component not listed (the informer: its backoffs follow the
#: adapter) is steered on every call.
STEERED: dict[str, frozenset[str]] = {
    "queue": frozenset({"get_nowait"}),
    "delaying_queue": frozenset({"get_nowait"}),
    "rate_limiting_queue": frozenset({"get_nowait"}),
    "rate_limiter": frozenset(),
    "store": frozenset(),
    "delta_fifo": frozenset({"pop_nowait", "pop_begin", "pop_batch_nowait"}),
    "real_fifo": frozenset({"pop_nowait", "pop_begin", "pop_batch_nowait"}),
}


class Component(Protocol):
    """One created instance. ``call`` carries out a method; ``actual`` is the adapter's
    response when the harness steers (None when serving as an adapter)."""

    #: The methods of ``call`` this instance offers (``hello`` lists them).
    methods: tuple[str, ...]

    @property
    def handlers(self) -> Mapping[str, Callable[..., Any]]:
        """Method -> the code that carries it out (each component's own signature)."""
        ...

    def call(self, method: str, args: dict[str, Any], actual: dict[str, Any] | None) -> Any: ...

    def after_advance(self) -> None:
        """Time moved: do what client-go's background loops would have done by now."""
        ...

    def describe(self) -> str:
        """The reference's internal state, for reports (not part of the protocol)."""
        ...


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


def reference_methods(component: str) -> frozenset[str]:
    """The methods of ``call`` the reference carries out for ``component``: those a fresh
    instance offers and has a handler for (tests compare them with the protocol's)."""
    instance = ReferenceDriver().build(component, {})
    return frozenset(m for m in instance.methods if m in instance.handlers)


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
        #: The client-go release line the informer follows (refimpl/eras.py); the
        #: harness sets the adapter's, the reference adapter process takes --release.
        self.era: Era = LATEST
        #: Each request ``op`` and the code that carries it out.
        self.ops: dict[str, Callable[[dict[str, Any], dict[str, Any] | None], Any]] = {
            "hello": self._hello,
            "reset": self._reset,
            "create": self._create,
            "call": self._call,
            "advance": self._advance,
        }
        #: Each component ``create`` can make and the code that builds an instance of it.
        self.builders: dict[str, Callable[[str, dict[str, Any]], Component]] = {
            "queue": self._workqueue,
            "delaying_queue": self._workqueue,
            "rate_limiting_queue": self._workqueue,
            "rate_limiter": self._rate_limiter,
            "store": self._store,
            "delta_fifo": self._delta_fifo,
            "real_fifo": self._real_fifo,
            "informer": self._informer,
        }

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
            modes = self.era.fifo_modes()
            components["informer"] = {
                "methods": list(COMPONENTS["informer"]),
                "behaves_like": [m for m in self.parts.informer.modes if m in modes],
                "initial": True,
                "resync": True,
                "watch_list": True,
            }
            if self.era != LATEST:
                components["informer"]["release"] = self.era.name
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

    def answers_alone(self, request: dict[str, Any]) -> bool:
        """The reference's answer to ``request`` does not depend on the adapter's (it
        settles no choice: :data:`STEERED` and most informer calls do), so a harness
        may take it as the prediction and compare the adapter's answer later
        (docs/protocol.md, "Requests sent ahead")."""
        op = request.get("op")
        if op in ("advance", "create"):
            return True
        if op != "call":
            return False  # reset, hello: the harness waits for them
        instance = request.get("instance")
        component = self._informer_called(request)
        if component is not None:
            return component.answers_alone(str(request.get("method")))
        kind = self.kinds.get(instance, "") if isinstance(instance, str) else ""
        steered = STEERED.get(kind)
        if steered is None:
            return False
        if request.get("method") not in steered:
            return True
        # A steered method settles no choice while one candidate is at the head.
        choices = getattr(self.instances.get(instance or ""), "head_choices", None)
        return choices is not None and len(choices()) <= 1

    def _informer_called(self, request: dict[str, Any]) -> InformerComponent | None:
        """The informer a ``call`` request goes to (None: another request)."""
        instance = request.get("instance") if request.get("op") == "call" else None
        component = self.instances.get(instance) if isinstance(instance, str) else None
        return component if isinstance(component, InformerComponent) else None

    def predicts(self, request: dict[str, Any]) -> bool:
        """The steered reference can carry out ``request``, an informer call, before the
        adapter's answer is read (``InformerComponent.predicts``): :meth:`handle_ahead`."""
        component = self._informer_called(request)
        return component is not None and component.predicts(str(request.get("method")))

    def handle_ahead(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """The response to a request :meth:`predicts` admits, without the adapter's
        answer; None if the call left the informer in a backoff that answer may end:
        :meth:`finish` then completes it with the answer."""
        component = self._informer_called(request)
        assert component is not None
        component.hold, component.held = True, False
        try:
            response = self.handle(request)
        finally:
            component.hold = False
        return None if component.held else response

    def finish(self, request: dict[str, Any], actual: dict[str, Any] | None) -> dict[str, Any]:
        """The response to the informer call :meth:`handle_ahead` left unfinished,
        steered by ``actual`` as :meth:`handle` would have been."""
        component = self._informer_called(request)
        assert component is not None and component.held
        return ok_response(request.get("id"), component.finish(actual))

    def _dispatch(self, request: dict[str, Any], actual: dict[str, Any] | None) -> Any:
        op = request.get("op")
        carry_out = self.ops.get(op) if isinstance(op, str) else None
        if carry_out is None:
            raise ProtocolError("bad_request", f"unknown op {op!r}")
        return carry_out(request, actual)

    def _hello(self, request: dict[str, Any], actual: dict[str, Any] | None) -> Any:
        protocol = request.get("protocol")
        if protocol not in PROTOCOL_VERSIONS or isinstance(protocol, bool):
            raise ProtocolError(
                "unsupported",
                f"protocol {protocol!r} not spoken; this adapter speaks "
                f"{', '.join(map(str, PROTOCOL_VERSIONS))}",
            )
        self.protocol = protocol
        return self.capabilities(protocol)

    def _reset(self, request: dict[str, Any], actual: dict[str, Any] | None) -> None:
        self.clock = FakeClock(0.0)
        self.instances = {}
        self.kinds = {}

    def _call(self, request: dict[str, Any], actual: dict[str, Any] | None) -> Any:
        instance = self._instance(request)
        method = request.get("method")
        args = request.get("args", {})
        if not isinstance(method, str) or not isinstance(args, dict):
            raise ProtocolError("bad_request", "'call' needs a string 'method', object 'args'")
        return instance.call(method, args, actual)

    def _advance(self, request: dict[str, Any], actual: dict[str, Any] | None) -> None:
        step = seconds_to_ns(request.get("seconds"), "seconds")
        if step < 0:
            raise ProtocolError("bad_request", "the clock cannot go backwards")
        self.clock.step_ns(step)
        for component in self.instances.values():
            component.after_advance()

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

    def _create(self, request: dict[str, Any], actual: dict[str, Any] | None) -> None:
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
        """A new instance of ``component`` (the informer from protocol 2 on)."""
        builder = self.builders.get(component) if isinstance(component, str) else None
        if builder is None or (component == "informer" and self.protocol < 2):
            raise ProtocolError("unsupported", f"unknown component {component!r}")
        return builder(component, options)

    def _workqueue(self, component: str, options: dict[str, Any]) -> Component:
        limiter = None
        if component == "rate_limiting_queue":
            spec = options.get("limiter", {"name": "default_controller"})
            limiter = self.parts.limiter(spec, self.clock)
        queue = self.parts.workqueue_component(component, self.clock, limiter, self.parts)
        queue.exact_ties = component in self.heap_order
        return queue

    def _rate_limiter(self, component: str, options: dict[str, Any]) -> Component:
        spec = options.get("limiter", {"name": "default_controller"})
        return RateLimiterComponent(self.parts.limiter(spec, self.clock))

    def _store(self, component: str, options: dict[str, Any]) -> Component:
        return StoreComponent(options, self.parts.cache)

    def _delta_fifo(self, component: str, options: dict[str, Any]) -> Component:
        return DeltaFIFOComponent(options, self.parts.cache)

    def _real_fifo(self, component: str, options: dict[str, Any]) -> Component:
        return RealFIFOComponent(options, self.parts.cache)

    def _informer(self, component: str, options: dict[str, Any]) -> Component:
        return InformerComponent(
            options, self.clock, self.parts.informer, steered=self.steered, era=self.era
        )
