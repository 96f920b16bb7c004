"""Running a conformance check: budget, examples, comparison, report, replay.

Owns the adapter process for the length of a run, the counters for the progress line
and the shortest failing trace seen so far. Each Hypothesis example starts from a
``reset`` adapter (or a restarted one after a failure) and a fresh reference driver, so
examples are independent. Time is bounded twice: generating stops at the run's budget,
shrinking a failure stops at its own budget, and every request has a timeout; a hung
adapter ends the run at once (its trace is reported unshrunk).
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO

from refimpl.conformance.process import AdapterFailure, AdapterHung, AdapterProcess
from refimpl.conformance.protocol import COMPONENTS, PROTOCOL_VERSION, PROTOCOL_VERSIONS
from refimpl.conformance.reference.dispatch import ReferenceDriver, WorkqueueComponent
from refimpl.conformance.reference.informer import FIFO_MODES, InformerComponent
from refimpl.conformance.search.compare import agree
from refimpl.conformance.search.informer_invariants import InformerChecker, observation_problem
from refimpl.conformance.search.invariants import AnswerChecker, PoppedStore
from refimpl.conformance.search.report import (
    Step,
    compact,
    format_failure,
    format_table,
    load_trace,
)

__all__ = [
    "BUDGET_ENDED",
    "EXIT_ADAPTER",
    "EXIT_DISAGREE",
    "EXIT_PASS",
    "EXIT_USAGE",
    "ComponentResult",
    "Config",
    "Failure",
    "FailureKind",
    "ResultStatus",
    "RunContext",
    "Step",
    "run",
]

EXIT_PASS, EXIT_DISAGREE, EXIT_ADAPTER, EXIT_USAGE = 0, 1, 2, 3
#: The summary note of a component whose search the budget ended without a finding.
BUDGET_ENDED = "the budget ended the search before --max-examples"

#: Error kinds an adapter may only answer when the reference answers the same: anything
#: else means the adapter could not carry out a request it declared (its fault, not a
#: difference in behaviour).
ADAPTER_SIDE_ERRORS = frozenset({"bad_request", "unsupported", "no_instance", "internal"})


class BudgetExhausted(KeyboardInterrupt):
    """Stops Hypothesis between examples (it lets KeyboardInterrupt through unchanged)."""


class AbortRun(KeyboardInterrupt):
    """Stops Hypothesis at once: the adapter hung, or cannot even be restarted."""


class Mismatch(AssertionError):
    """The example failed; the details are in ``RunContext.best``."""


#: What a failure is: the adapter's answer differs from the reference's, the adapter
#: broke an invariant, or the adapter itself failed (crashed, hung, spoke garbage).
FailureKind = Literal["disagreement", "invariant", "adapter"]
#: How a component's run ended.
ResultStatus = Literal["pass", "fail", "adapter failure", "skipped"]


@dataclass
class Failure:
    kind: FailureKind
    component: str
    steps: list[Step]
    message: str
    example: int
    found_after: float
    adapter_error: AdapterFailure | None = None
    #: For a FIFO whose pops feed a store as an informer's do: what the difference
    #: leads to once the FIFO is drained (a ghost, ...), or "".
    consequence: str = ""

    @property
    def exit_status(self) -> int:
        return EXIT_ADAPTER if self.kind == "adapter" else EXIT_DISAGREE


@dataclass
class Config:
    command: list[str]
    components: list[str] = field(default_factory=list)
    budget: float = 60.0
    shrink_budget: float = 30.0
    seed: int | None = None
    max_examples: int = 100_000
    steps: int = 30
    timeout: float = 5.0
    startup_timeout: float = 20.0
    misuse: bool = False
    #: The adapter is client-go itself: compare the orders client-go fixes exactly
    #: (equal delay-heap deadlines), whether or not its hello declares heap_order.
    exact: bool = False
    shrink: bool = True
    #: Skip Hypothesis' own shrinking; only replay-based minimize() (fast, coarser).
    quick_shrink: bool = False
    keep_going: bool = False
    restart_each: bool = False
    progress: bool | None = None  # None: only when stderr is a terminal
    save: str | None = None
    replay: str | None = None
    #: Methods never generated (to look past a difference already known).
    skip: list[str] = field(default_factory=list)
    #: Write every protocol line sent and received to this file.
    log: str | None = None
    #: Create options fixed for every example (e.g. {"known_objects": False}).
    options: dict[str, Any] = field(default_factory=dict)
    cwd: str | None = None


@dataclass
class ComponentResult:
    component: str
    status: ResultStatus
    examples: int = 0
    steps: int = 0
    elapsed: float = 0.0
    failure: Failure | None = None
    note: str = ""
    #: What the run left out (narrowed or fixed options, undeclared methods, ...).
    untested: list[str] = field(default_factory=list)


def _refused(actual: dict[str, Any]) -> str | None:
    """Why ``actual`` is the adapter failing a request it declared (None if it is not):
    an error only the adapter side may give, unless the reference gives it too."""
    kind = actual.get("error", {}).get("kind") if "error" in actual else None
    if kind not in ADAPTER_SIDE_ERRORS:
        return None
    return (
        f"the adapter answered error {kind!r} to a request it declared "
        f"({actual['error'].get('message')!r})"
    )


class Example:
    """One generated sequence: a fresh reference, a reset adapter, the trace so far."""

    def __init__(self, ctx: RunContext, component: str) -> None:
        self.ctx = ctx
        self.component = component
        self.ref = ReferenceDriver(steered=True)
        self.ref.protocol = ctx.protocol
        self.ref.heap_order = ctx.heap_order()
        self.trace: list[Step] = []
        self.checker = AnswerChecker()
        self.informer_checker = InformerChecker()
        #: Informer answers are compared with the reference only if the adapter names
        #: the client-go generation it behaves like; its invariants are checked always.
        self.compared = component != "informer" or bool(ctx.behaves_like("informer"))
        #: The same model fed with the reference's answers (its pops, its store).
        self.ref_view = AnswerChecker()
        #: A failure was recorded for this example (no more requests belong to it).
        self.failed = False

    def _reference(self, request: dict[str, Any], actual: dict[str, Any] | None) -> Any:
        if not self.compared:
            return None
        rid = actual.get("id") if actual is not None else None
        return self.ref.handle({"id": rid, **request}, actual)

    def exchange(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send ``request`` to the adapter, then to the steered reference; compare."""
        ctx = self.ctx
        try:
            actual = ctx.adapter_request(request)
        except AdapterFailure as exc:
            self.trace.append(Step(request, self._reference(request, None), None))
            ctx.record(self, "adapter", exc.describe(), exc)
            if isinstance(exc, AdapterHung):
                raise AbortRun() from None
            raise Mismatch(exc.describe()) from None
        expected = self._reference(request, actual)
        self.trace.append(Step(request, expected, actual))
        ctx.steps += 1
        informer_call = self.component == "informer" and request.get("op") == "call"
        if informer_call and "result" in actual:
            problem = observation_problem(actual["result"])
            if problem is not None:
                ctx.record(self, "adapter", f"malformed informer answer: {problem}", None)
                raise Mismatch(problem)
        if self.component == "informer":
            violations = self.informer_checker.check(request, actual)
        else:
            self.ref_view.check(request, expected)
            violations = self.checker.check(request, actual)
        if violations:
            ctx.record(self, "invariant", "; ".join(violations), None)
            raise Mismatch(violations[0])
        refused = _refused(actual)
        if expected is None:  # not compared: only the adapter's own refusal counts
            if refused is not None:
                ctx.record(self, "adapter", refused, None)
                raise Mismatch(refused)
            return actual
        if not agree(request, expected, actual):
            if refused is not None:
                ctx.record(self, "adapter", refused, None)
            else:
                message = "the adapter's answer differs"
                ctx.record(self, "disagreement", message, None, self.consequence())
            raise Mismatch(f"step {len(self.trace)} differs")
        return actual

    def consequence(self) -> str:
        """For a FIFO whose pops feed a store as an informer's do (see
        :class:`~refimpl.conformance.search.invariants.PoppedStore`): keep popping both sides
        past the difference, each applying its own pops, and say what the adapter's
        store ends up holding if that is not the source ("" otherwise). The extra
        requests are not part of the trace; the adapter is reset before the next one."""
        mine, theirs = self.checker.popped, self.ref_view.popped
        if mine is None or theirs is None or not mine.fair:
            return ""
        mine.whose = "the adapter's pops"
        try:
            problem = drain_popped(mine, self.ctx.adapter_request)
        except AdapterFailure:
            return ""
        if problem is None:
            return ""
        ends = drain_popped(theirs, lambda r: self.ref.handle({"id": None, **r}))
        shown = ", ".join(compact(o) for o in theirs.stored().values()) or "empty"
        reference = (
            f"the reference's pops leave it equal to the source ({shown})"
            if ends is None
            else f"the reference's pops too: {ends}"
        )
        return f"{problem}; {reference}"

    def next_deadline(self) -> float | None:
        """Seconds until the reference's next delayed add fires (None: nothing waits)."""
        instance = self.ref.instances.get("x")
        if isinstance(self.ref.instances.get("i"), InformerComponent):
            return self._informer_deadline()
        if not isinstance(instance, WorkqueueComponent):
            return None
        ready = instance.q.waiting.next_ready_at()
        if ready is None:
            return None
        return (ready - instance.clock.now_ns()) / 1_000_000_000

    def _informer_deadline(self) -> float | None:
        """Seconds until the reference informer's next timer (backoff or resync)."""
        component = self.ref.instances["i"]
        assert isinstance(component, InformerComponent)
        reflector = component.informer.reflector
        deadline = None if reflector is None else reflector.next_deadline()
        now = component.clock.now()
        if deadline is None:
            return None
        return max(round(deadline - now, 9), 0.0)


class RunContext:
    """State shared by all examples of a run (see the module docstring)."""

    def __init__(self, config: Config, err: TextIO) -> None:
        self.config = config
        self.err = err
        self.log_file: TextIO | None = (
            open(config.log, "w", encoding="utf-8") if config.log else None  # noqa: SIM115
        )
        self.adapter = AdapterProcess(
            config.command, timeout=config.timeout, cwd=config.cwd, log=self.log_file
        )
        self.hello: dict[str, Any] = {}
        #: The protocol version the adapter agreed to (2, or 1 for an older adapter).
        self.protocol = PROTOCOL_VERSION
        self.need_restart = False
        self.examples = 0
        self.steps = 0
        self.restarts = 0
        self.best: Failure | None = None
        self.started = time.monotonic()
        self.deadline = self.started + config.budget
        self.shrink_deadline = float("inf")
        self.component = ""
        self._component_started = self.started
        self._last_progress = self.started
        self.show_progress = config.progress if config.progress is not None else err.isatty()

    # -- adapter
    def behaves_like(self, component: str) -> list[str]:
        """The client-go generations the adapter's ``component`` answers must match."""
        caps = self.hello.get("components", {}).get(component, {})
        modes = caps.get("behaves_like") if isinstance(caps, dict) else None
        return [m for m in modes if isinstance(m, str)] if isinstance(modes, list) else []

    def heap_order(self) -> frozenset[str]:
        """Work queue components whose delay-heap order is compared exactly: those the
        adapter says follow client-go's heap, or all of them with ``--exact``."""
        names = ("delaying_queue", "rate_limiting_queue")
        if self.config.exact:
            return frozenset(names)
        components = self.hello.get("components", {})
        return frozenset(
            name
            for name in names
            if isinstance(components.get(name), dict) and components[name].get("heap_order") is True
        )

    def start_adapter(self) -> dict[str, Any]:
        self.adapter.close()
        self.adapter.start()
        self.protocol = PROTOCOL_VERSION
        response = self.adapter.request(
            {"op": "hello", "protocol": PROTOCOL_VERSION}, timeout=self.config.startup_timeout
        )
        if response.get("error", {}).get("kind") == "unsupported":
            # An adapter written for protocol 1 refuses 2: speak 1 (no informer).
            self.protocol = 1
            response = self.adapter.request(
                {"op": "hello", "protocol": 1}, timeout=self.config.startup_timeout
            )
        if "error" in response:
            raise AdapterHandshakeError(
                f"handshake refused: {response['error'].get('kind')}: "
                f"{response['error'].get('message')}"
            )
        problem = check_hello(response.get("result"), self.protocol)
        if problem:
            raise AdapterHandshakeError(f"bad handshake answer: {problem}")
        self.hello = response["result"]
        self.need_restart = False
        return self.hello

    def adapter_request(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            return self.adapter.request(request)
        except AdapterFailure:
            self.need_restart = True
            raise

    def close(self) -> None:
        self.adapter.close()
        if self.log_file is not None:
            self.log_file.close()

    # -- examples
    def begin_example(self, component: str) -> Example:
        now = time.monotonic()
        limit = self.shrink_deadline if self.best is not None else self.deadline
        if now > limit:
            raise BudgetExhausted()
        self.fresh_adapter(component)
        self.examples += 1
        self.progress()
        return Example(self, component)

    def fresh_adapter(self, component: str) -> None:
        """Reset the adapter (or restart it after a failure); AbortRun if impossible."""
        try:
            if self.need_restart or self.config.restart_each:
                self.restarts += 1
                self.start_adapter()
            else:
                response = self.adapter_request({"op": "reset"})
                if "error" in response:
                    self.need_restart = True
                    raise AdapterHandshakeError(f"reset refused: {response['error']}")
        except (AdapterFailure, AdapterHandshakeError) as exc:
            trace = Example(self, component)
            trace.trace.append(Step({"op": "reset"}, None, None))
            described = exc.describe() if isinstance(exc, AdapterFailure) else str(exc)
            self.record(
                trace,
                "adapter",
                "could not reset/restart the adapter: " + described,
                exc if isinstance(exc, AdapterFailure) else None,
            )
            raise AbortRun() from None

    def record(
        self,
        example: Example,
        kind: FailureKind,
        message: str,
        error: AdapterFailure | None,
        consequence: str = "",
    ) -> None:
        example.failed = True
        failure = Failure(
            kind=kind,
            component=example.component,
            steps=list(example.trace),
            message=message,
            example=self.examples,
            found_after=time.monotonic() - self._component_started,
            adapter_error=error,
            consequence=consequence,
        )
        if self.best is None:
            # Half the shrink budget for Hypothesis, half for minimize() afterwards.
            self.shrink_deadline = time.monotonic() + self.config.shrink_budget / 2
            self.best = failure
        elif len(failure.steps) <= len(self.best.steps) and (
            failure.consequence or not self.best.consequence
        ):
            failure.found_after = self.best.found_after
            self.best = failure

    def start_component(self, component: str, budget: float) -> None:
        self.component = component
        self._component_started = time.monotonic()
        self.deadline = self._component_started + budget
        self.shrink_deadline = float("inf")
        self.best = None
        self.examples = 0
        self.steps = 0

    def progress(self, final: bool = False) -> None:
        if not self.show_progress:
            return
        now = time.monotonic()
        interval = 1.0 if self.err.isatty() else 10.0
        if not final and now - self._last_progress < interval:
            return
        self._last_progress = now
        elapsed = max(now - self._component_started, 1e-9)
        phase = "shrinking" if self.best is not None else "searching"
        line = (
            f"conform: {self.component}: {phase}, {self.examples} examples, "
            f"{self.steps} steps, {self.examples / elapsed:.0f} examples/s, "
            f"{self.steps / elapsed:.0f} steps/s, {elapsed:.0f} s"
        )
        if self.err.isatty():
            self.err.write("\r" + line.ljust(100) + ("\n" if final else ""))
        else:
            self.err.write(line + "\n")
        self.err.flush()


class HarnessError(Exception):
    """The harness itself (or Hypothesis) failed: a bug to report, not a verdict."""


class AdapterHandshakeError(Exception):
    """The adapter started but refused or garbled the handshake (exit status 2)."""

    def describe(self) -> str:
        return str(self)


def check_hello(result: Any, protocol: int = PROTOCOL_VERSION) -> str | None:
    """What is wrong with a ``hello`` result to a hello at ``protocol`` (None if nothing)."""
    if not isinstance(result, dict):
        return "result must be an object"
    if result.get("protocol") != protocol:
        return (
            f"adapter answered protocol {result.get('protocol')!r} to a hello for protocol "
            f"{protocol} "
            f"(the harness speaks {', '.join(map(str, PROTOCOL_VERSIONS))})"
        )
    for key in ("name", "version"):
        if not isinstance(result.get(key), str):
            return f"{key!r} must be a string"
    components = result.get("components")
    if not isinstance(components, dict):
        return "'components' must be an object"
    for name, caps in components.items():
        if not isinstance(caps, dict) or not isinstance(caps.get("methods"), list):
            return f"component {name!r} needs a list 'methods'"
    informer = components.get("informer")
    if informer is not None:
        if protocol < 2:
            return "the informer component needs protocol 2"
        modes = informer.get("behaves_like")
        if modes is not None and (
            not isinstance(modes, list) or not all(m in FIFO_MODES for m in modes)
        ):
            return f"informer 'behaves_like' must be null or a list of {list(FIFO_MODES)}"
    return None


# ---------------------------------------------------------------------------- running


def _settings(config: Config) -> Any:
    from hypothesis import HealthCheck, Phase, Verbosity, settings

    hypothesis_shrinks = config.shrink and not config.quick_shrink
    phases = (Phase.generate, Phase.shrink) if hypothesis_shrinks else (Phase.generate,)
    return settings(
        max_examples=config.max_examples,
        stateful_step_count=config.steps,
        deadline=None,
        database=None,
        derandomize=False,
        phases=phases,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
    )


def run_component(ctx: RunContext, component: str, budget: float) -> ComponentResult:
    from hypothesis import seed
    from hypothesis.reporting import with_reporter
    from hypothesis.stateful import run_state_machine_as_test

    from refimpl.conformance.search.informer_machine import make_informer_machine
    from refimpl.conformance.search.machines import make_machine, untested

    caps = ctx.hello["components"][component]
    methods = frozenset(
        m
        for m in caps.get("methods", [])
        if m in COMPONENTS[component] and m not in ctx.config.skip
    )
    ctx.start_component(component, budget)
    if component == "informer":
        machine = make_informer_machine(ctx, methods, caps)
    else:
        machine = make_machine(
            ctx, component, methods, caps, misuse=ctx.config.misuse, pinned=ctx.config.options
        )
    assert ctx.config.seed is not None
    machine = seed(ctx.config.seed)(machine)
    outcome = "done"
    error: Exception | None = None
    sink = io.StringIO()
    try:
        with with_reporter(lambda _msg: None), contextlib.redirect_stdout(sink):
            run_state_machine_as_test(machine, settings=_settings(ctx.config))
    except BudgetExhausted:
        outcome = "budget"
    except AbortRun:
        outcome = "aborted"
    except Exception as exc:
        # A failing example's details are in ctx.best (Hypothesis' own report is not
        # used); without one, this is a harness or Hypothesis error: surface it.
        outcome = "failed"
        error = exc
    ctx.progress(final=True)
    elapsed = time.monotonic() - ctx._component_started
    result = ComponentResult(component, "pass", ctx.examples, ctx.steps, elapsed)
    result.untested = untested(component, caps, skipped=ctx.config.skip, pinned=ctx.config.options)
    if ctx.best is None and error is not None:
        raise HarnessError(
            f"the search for {component} stopped with {type(error).__name__}: {error}"
        ) from error
    if ctx.best is None and outcome == "budget":
        # A search cut short by the clock is no statement about the examples it did not
        # reach: say so, so a pinned verdict (refimpl peers) can call it inconclusive.
        result.note = f"{BUDGET_ENDED} {ctx.config.max_examples}"
    if ctx.best is not None:
        if outcome != "aborted" and ctx.config.shrink:
            ctx.best = minimize(ctx, ctx.best)
        result.failure = ctx.best
        result.status = "adapter failure" if ctx.best.kind == "adapter" else "fail"
        if outcome == "budget":
            result.note = "shrinking stopped at the shrink budget"
        elif outcome == "aborted":
            result.note = "not shrunk (the run was aborted)"
    return result


def drain_popped(
    model: PoppedStore, send: Callable[[dict[str, Any]], dict[str, Any]], limit: int = 32
) -> str | None:
    """Pop until the FIFO is empty, applying each pop to ``model`` and keeping the known
    objects equal to its store (``send`` carries a request out on one side); what is
    then wrong with the store, or None (also when the comparison is not fair)."""
    step = 0
    for _ in range(limit):
        for method, obj in model.known_fixes():
            request = {"op": "call", "instance": "x", "method": method, "args": {"obj": obj}}
            model.feed(step, request, send(request).get("result"))
        request = {"op": "call", "instance": "x", "method": "pop_nowait", "args": {}}
        response = send(request)
        if "result" not in response:
            return None
        verdict = model.feed(step, request, response["result"])
        if not isinstance(response["result"], dict) or response["result"].get("kind") != "item":
            return verdict
    return None


def try_trace(
    ctx: RunContext, component: str, requests: Sequence[dict[str, Any]]
) -> Failure | None:
    """Replay ``requests`` on a reset adapter; the failure it produces, if any.

    Without ``--misuse`` a replay that breaks the usage contract (a ``done`` of an item
    the adapter did not hand out) counts as no failure: the generator never sends one,
    so neither may the shrinker, or a counterexample would show a misuse the user never
    asked to test.
    """
    saved = ctx.best, ctx.shrink_deadline
    ctx.best = None
    example: Example | None = None
    try:
        ctx.fresh_adapter(component)
        example = Example(ctx, component)
        for request in requests:
            example.exchange(request)
    except (Mismatch, AbortRun):
        pass
    found = ctx.best
    ctx.best, ctx.shrink_deadline = saved
    if found is not None and example is not None and example.checker.misused:
        return found if ctx.config.misuse else None
    return found


def _simpler(request: dict[str, Any]) -> list[dict[str, Any]]:
    """Simpler variants of one request: fewer list elements, first item/name."""
    args = request.get("args")
    if request.get("op") != "call" or not isinstance(args, dict):
        return []
    variants: list[dict[str, Any]] = []
    for key, value in args.items():
        if key == "item" and value != "a":
            variants.append({**request, "args": {**args, key: "a"}})
        if key == "objs" and isinstance(value, list):
            for i in range(len(value)):
                variants.append({**request, "args": {**args, key: value[:i] + value[i + 1 :]}})
        if key == "obj" and isinstance(value, dict):
            for field, plain in (("name", "a"), ("namespace", ""), ("labels", {}), ("rv", "1")):
                if value.get(field) != plain:
                    obj = {**value, field: plain}
                    variants.append({**request, "args": {**args, key: obj}})
    return variants


def _merged(first: dict[str, Any], second: dict[str, Any]) -> list[dict[str, Any]]:
    """Single requests that may do the work of ``first`` then ``second``."""
    if first.get("method") == "watch_open" and second.get("method") == "watch_end":
        return [
            {**first, "method": "watch_error", "args": {"reason": reason}}
            for reason in ("expired", "internal")
        ]
    if first.get("method") == "watch_end" and second.get("method") == "watch_error":
        # A watch that ends and the re-watch that fails: the watch may as well end with
        # that failure (an informer relists after either).
        reason = (second.get("args") or {}).get("reason")
        if reason in ("expired", "internal"):
            return [{**first, "args": {"how": reason}}]
    return []


def _merge_adjacent(failure: Failure, still_fails: Replay) -> Failure | None:
    """The first replay that still fails with two adjacent steps merged into one."""
    requests = [s.request for s in failure.steps]
    for n in range(1, len(requests) - 1):
        for single in _merged(requests[n], requests[n + 1]):
            found = still_fails([*requests[:n], single, *requests[n + 2 :]])
            if found is not None and len(found.steps) < len(requests):
                return found
    return None


def minimize(ctx: RunContext, failure: Failure) -> Failure:
    """Polish Hypothesis' result within the shrink budget, keeping every change whose
    replay still fails the same way (a disagreement or broken invariant stays one, an
    adapter failure stays one):

    1. drop contiguous chunks of steps (halves, quarters, ... single steps);
    2. drop pairs of steps ``i < j``: a step and a later one that consumes it (an
       ``add`` and its ``get_nowait``, an ``update`` and its ``pop_nowait``) are often
       needed only by each other, so neither can go alone;
    3. merge two adjacent steps into one where one request does their work (an
       informer's ``watch_open`` then ``watch_end`` become one ``watch_error``: the
       watch fails either way; a ``watch_end`` then a failed re-watch become one
       ``watch_end`` with that failure);
    4. an informer trace that streams its lists (``watch_list``) is tried with plain
       lists: each initial-events stream becomes the ``list_reply`` it stands for and a
       ``watch_open`` (see :func:`_as_plain_lists`);
    5. fold an informer's watch events into the list before them: ``list_reply``,
       ``watch_open``, events, and a ``watch_end`` with a 410 or 500 become the list of
       what those events left and a failed watch request (see
       :func:`_fold_watch_events`);
    6. forget one object: every step that carries it, its entries in lists and the
       pops that handed out only it go together (see :func:`_drop_object`);
    7. drop the ``state`` after an ``advance`` alone where it is a pure observation:
       the replay without it gives every other step the very same answers on both sides
       (see :func:`_drop_unneeded_state`);
    8. simplify arguments (fewer list elements, the first item/name).

    After the first pass of 1, an informer's clock steps are rounded up to whole
    amounts (see :func:`_round_advances`), so a step no longer depends on a detour
    before it. Then each round tries 4, 5, 6, 2, 3 and 7 in that order (the cheap rewrites
    first) and keeps the first that shortens the trace; step 1 runs again after it.
    The rewrites (rounding, 4, 5, 6) keep only a replay with the same finding (see
    :func:`_same_finding`).

    Steps 1 and 2 keep an ``advance`` and the ``state`` right after it together
    (:func:`_observed_advances`); only step 7 separates them, and only where the replay
    shows that the reference needed no steering from that state.

    A ``get_nowait`` that handed out an item always goes together with the ``done``
    that gave it back (see :func:`_consumers`). When time allows the result is
    1-minimal and pair-minimal in that sense: removing any one or any two operations
    makes the failure disappear. Step 0 (``create``) is always kept.
    """
    if isinstance(failure.adapter_error, AdapterHung):
        return failure
    deadline = time.monotonic() + max(ctx.config.shrink_budget / 2, 2.0)
    kind_class = failure.kind == "adapter"

    def still_fails(requests: list[dict[str, Any]]) -> Failure | None:
        if time.monotonic() > deadline:
            return None
        found = try_trace(ctx, failure.component, requests)
        if found is not None and failure.consequence and not found.consequence:
            return None  # the end-to-end consequence is part of how it fails
        if found is not None and (found.kind == "adapter") == kind_class:
            found.found_after = failure.found_after
            found.example = failure.example
            return found
        return None

    best = _drop_chunks(failure, still_fails)
    best = _round_advances(best, still_fails)
    while time.monotonic() < deadline:
        shorter = (
            _as_plain_lists(best, still_fails)
            or _fold_watch_events(best, still_fails)
            or _drop_object(best, still_fails)
            or _drop_pair(best, still_fails)
            or _merge_adjacent(best, still_fails)
            or _drop_unneeded_state(best, still_fails)
        )
        if shorter is None:
            break
        best = _drop_chunks(shorter, still_fails)
    n = 0
    while n < len(best.steps):
        for variant in _simpler(best.steps[n].request):
            requests = [s.request for s in best.steps]
            if n >= len(requests):
                break
            found = still_fails([*requests[:n], variant, *requests[n + 1 :]])
            if found is not None and len(found.steps) <= len(requests):
                best = found
        n += 1
    return best


Replay = Callable[[list[dict[str, Any]]], Failure | None]


def _consumers(steps: Sequence[Step]) -> dict[int, int]:
    """Step index of each ``get_nowait`` that handed out an item -> index of the ``done``
    that gave it back. The two are one unit of correct usage: the get cannot go without
    its done (a stray ``done`` is refused, see :func:`try_trace`)."""
    links: dict[int, int] = {}
    open_gets: dict[Any, list[int]] = {}
    for n, step in enumerate(steps):
        request = step.request
        if request.get("op") != "call":
            continue
        method = request.get("method")
        answer = (step.adapter or {}).get("result")
        if method == "get_nowait" and isinstance(answer, dict) and answer.get("kind") == "item":
            open_gets.setdefault(json.dumps(answer.get("item")), []).append(n)
        elif method == "done":
            pending = open_gets.get(json.dumps((request.get("args") or {}).get("item")))
            if pending:
                links[pending.pop(0)] = n
    return links


def _observed_advances(steps: Sequence[Step]) -> dict[int, int]:
    """An ``advance`` and the informer ``state`` right after it, both ways: the state
    answer is how a steered reference learns what the adapter did during the advance
    (which request it woke up to make), so one cannot go without the other."""
    links: dict[int, int] = {}
    for n in range(1, len(steps)):
        request = steps[n].request
        if (
            steps[n - 1].request.get("op") == "advance"
            and request.get("op") == "call"
            and request.get("method") == "state"
        ):
            links[n - 1], links[n] = n, n - 1
    return links


def _without(best: Failure, drop: set[int]) -> list[dict[str, Any]]:
    """The requests of ``best`` without the steps ``drop`` and the steps that cannot go
    without them (the dones of dropped gets, an advance and its state)."""
    links = _consumers(best.steps)
    pairs = _observed_advances(best.steps)
    gone = drop | {links[n] for n in drop if n in links} | {pairs[n] for n in drop if n in pairs}
    return [s.request for n, s in enumerate(best.steps) if n not in gone]


def _drop_chunks(best: Failure, still_fails: Replay) -> Failure:
    """Remove contiguous runs of steps, halving the run length down to single steps."""
    chunk = max(1, (len(best.steps) - 1) // 2)
    while chunk >= 1:
        i = len(best.steps) - 1  # keep step 0 (create); try the later steps first
        progressed = False
        while i >= 1:
            start = max(1, i - chunk + 1)
            found = still_fails(_without(best, set(range(start, i + 1))))
            if found is not None and len(found.steps) < len(best.steps):
                best = found
                progressed = True
                i = min(start - 1, len(best.steps) - 1)
            else:
                i = start - 1
        if not progressed:
            chunk //= 2
    return best


def _same_finding(found: Failure | None, best: Failure) -> bool:
    """``found`` fails as ``best`` does in what a pinned verdict reads (refimpl peers):
    the same kind and, for a broken invariant, the same invariant ID. The rewrites
    below tell the story another way, so they keep no replay that turns, say,
    an INF-3 into a REF-3."""
    if found is None or found.kind != best.kind:
        return False
    if best.kind != "invariant":
        return True
    return found.message.split(" ", 1)[0] == best.message.split(" ", 1)[0]


#: Round clock steps an informer trace's advances are tried with (the generator's fixed
#: amounts: past client-go's first backoff, past its 30 s cap, past a minute).
ROUND_SECONDS = (2.0, 31.0, 65.0)


def _round_advances(best: Failure, still_fails: Replay) -> Failure:
    """Each ``advance`` of an informer trace rounded up to the next of ``ROUND_SECONDS``
    where the replay still fails and is no longer. An advance to "the reference's next
    deadline" lands on a jittered backoff to the nanosecond, which the steps before it
    decided (each backoff draws its jitter); a round amount that covers any first
    backoff lets the shrinker drop those steps."""
    if best.component != "informer":
        return best
    for n, step in enumerate(best.steps):
        seconds = step.request.get("seconds")
        if step.request.get("op") != "advance" or not isinstance(seconds, (int, float)):
            continue
        rounded = next((r for r in ROUND_SECONDS if r >= seconds), None)
        if rounded is None or rounded == seconds:
            continue
        requests = [s.request for s in best.steps]
        requests[n] = {**step.request, "seconds": rounded}
        found = still_fails(requests)
        if found is not None and _same_finding(found, best) and len(found.steps) <= len(best.steps):
            best = found
    return best


def _waiting(step: Step) -> dict[str, Any] | None:
    """The ``waiting`` an informer answer reports (None for other answers)."""
    result = (step.adapter or {}).get("result")
    waiting = result.get("waiting") if isinstance(result, dict) else None
    return waiting if isinstance(waiting, dict) else None


def _informer_call(request: dict[str, Any], method: str) -> bool:
    return request.get("op") == "call" and request.get("method") == method


def _plain_lists(steps: Sequence[Step]) -> list[dict[str, Any]] | None:
    """The requests of an informer trace created with ``watch_list`` rewritten for plain
    lists, or None if the trace is not one or has a stream this cannot rewrite.

    A watch-list informer asks for a watch with ``send_initial_events`` where a plain one
    asks for a list; the answer ``watch_open``, ``ADDED`` per object, then the
    initial-events-end ``BOOKMARK`` at rv R is what ``list_reply(objects, R)`` says to a
    plain informer, which then asks to watch from R: ``watch_open``. Everything else is
    kept. A stream that ends, fails or is interleaved with other requests before its
    end bookmark is not rewritten (None): the two modes differ there (a failed watch-list
    falls back to a list)."""
    create = steps[0].request if steps else {}
    options = create.get("options")
    if (
        create.get("op") != "create"
        or create.get("component") != "informer"
        or not isinstance(options, dict)
        or options.get("watch_list") is not True
    ):
        return None
    out: list[dict[str, Any]] = [{**create, "options": {**options, "watch_list": False}}]
    waiting: dict[str, Any] | None = None
    n = 1
    while n < len(steps):
        request = steps[n].request
        if not (
            _informer_call(request, "watch_open")
            and waiting is not None
            and waiting.get("send_initial_events") is True
            and waiting.get("op") == "watch"
        ):
            out.append(request)
            waiting = _waiting(steps[n]) or waiting
            n += 1
            continue
        objects: list[Any] = []
        end = n + 1
        while True:
            if end >= len(steps) or not _informer_call(steps[end].request, "watch_event"):
                return None
            args = steps[end].request.get("args") or {}
            if args.get("type") == "ADDED":
                objects.append(args.get("object"))
            elif args.get("type") == "BOOKMARK" and args.get("initial_events_end") is True:
                break
            else:
                return None
            end += 1
        rv = (args.get("object") or {}).get("rv")
        call = {"op": "call", "instance": request.get("instance")}
        out.append({**call, "method": "list_reply", "args": {"objects": objects, "rv": rv}})
        out.append({**call, "method": "watch_open", "args": {}})
        waiting = _waiting(steps[end]) or waiting
        n = end + 1
    return out


def _as_plain_lists(best: Failure, still_fails: Replay) -> Failure | None:
    """``best`` rewritten from watch-list streams to plain lists (:func:`_plain_lists`),
    if that still fails and is no longer: the plain form then shrinks further (a watch
    ending cleanly, say, merges with its ``watch_open`` into one ``watch_error``)."""
    requests = _plain_lists(best.steps)
    if requests is None:
        return None
    found = still_fails(requests)
    if found is not None and _same_finding(found, best) and len(found.steps) <= len(best.steps):
        return found
    return None


def _object_key(obj: dict[str, Any]) -> str:
    namespace = obj.get("namespace") or ""
    return f"{namespace}/{obj.get('name')}" if namespace else str(obj.get("name"))


def _folded(requests: list[dict[str, Any]], n: int) -> list[dict[str, Any]] | None:
    """``requests`` with the watch after the ``list_reply`` at ``n`` folded into that list
    (see :func:`_fold_watch_events`), or None if there is no such watch."""
    reply = requests[n]
    args = reply.get("args") or {}
    if not _informer_call(reply, "list_reply") or not isinstance(args.get("objects"), list):
        return None
    if n + 2 >= len(requests) or not _informer_call(requests[n + 1], "watch_open"):
        return None
    objects = {_object_key(o): o for o in args["objects"] if isinstance(o, dict)}
    rv = args.get("rv")
    end = n + 2
    while end < len(requests) and _informer_call(requests[end], "watch_event"):
        event = requests[end].get("args") or {}
        obj = event.get("object")
        if event.get("initial_events_end") or not isinstance(obj, dict):
            return None
        if event.get("type") in ("ADDED", "MODIFIED"):
            objects[_object_key(obj)] = obj
        elif event.get("type") == "DELETED":
            objects.pop(_object_key(obj), None)
        elif event.get("type") != "BOOKMARK":
            return None
        rv = obj.get("rv")
        end += 1
    if end == n + 2:
        return None
    listed = {**reply, "args": {**args, "objects": [objects[k] for k in sorted(objects)], "rv": rv}}
    after = requests[end] if end < len(requests) else {}
    if _informer_call(after, "watch_end") and (after.get("args") or {}).get("how") in (
        "expired",
        "internal",
    ):
        how = after["args"]["how"]
        failed = {**requests[n + 1], "method": "watch_error", "args": {"reason": how}}
        return [*requests[:n], listed, failed, *requests[end + 1 :]]
    return [*requests[:n], listed, requests[n + 1], *requests[end:]]


def _fold_watch_events(best: Failure, still_fails: Replay) -> Failure | None:
    """The first shorter failure with a watch folded into the list before it: a
    ``list_reply``, the ``watch_open`` after it and the events on that watch tell the
    informer what a ``list_reply`` of the objects those events leave, at the last
    event's resourceVersion, tells it; a ``watch_end`` with a 410 or 500 right after the
    events becomes a failed watch request (``watch_error``), which sends the informer
    the same way. The object then reaches the informer by a list rather than an event,
    which is why the replay decides."""
    requests = [s.request for s in best.steps]
    for n in range(len(requests) - 1, 0, -1):
        folded = _folded(requests, n)
        if folded is None:
            continue
        found = still_fails(folded)
        if found is not None and _same_finding(found, best) and len(found.steps) < len(best.steps):
            return found
    return None


def _keys_in(value: Any) -> set[str]:
    """The keys of every object (a dict with a name and an rv) inside ``value``."""
    if isinstance(value, list):
        return set().union(*(_keys_in(v) for v in value)) if value else set()
    if not isinstance(value, dict):
        return set()
    if isinstance(value.get("name"), str) and "rv" in value:
        return {_object_key(value)}
    return set().union(*(_keys_in(v) for v in value.values())) if value else set()


#: Request arguments that carry one object, and those that carry a list of them.
OBJECT_ARGS, OBJECT_LIST_ARGS = ("obj", "object"), ("objs", "objects")


def _forgotten(steps: Sequence[Step], key: str) -> list[dict[str, Any]]:
    """The requests of ``steps`` as if the object ``key`` had never been there: the
    steps that carry it go, it leaves every list, and a pop that handed out only it
    goes too."""
    out: list[dict[str, Any]] = []
    for n, step in enumerate(steps):
        request = step.request
        args = request.get("args")
        if n == 0 or request.get("op") != "call" or not isinstance(args, dict):
            out.append(request)
            continue
        if any(isinstance(args.get(a), dict) and _keys_in(args[a]) == {key} for a in OBJECT_ARGS):
            continue
        if str(request.get("method", "")).startswith("pop"):
            popped = _keys_in((step.adapter or {}).get("result"))
            if popped == {key}:
                continue
        lists = {
            a: [o for o in args[a] if _keys_in(o) != {key}]
            for a in OBJECT_LIST_ARGS
            if isinstance(args.get(a), list)
        }
        out.append({**request, "args": {**args, **lists}} if lists else request)
    return out


def _drop_object(best: Failure, still_fails: Replay) -> Failure | None:
    """The first shorter failure with one object forgotten (:func:`_forgotten`), or
    None. An object that only pads a list costs the steps that consume it (its pop, the
    store write that records it), and no single or pair removal takes the list entry
    and those steps together."""
    keys = sorted(set().union(*(_keys_in(s.request.get("args")) for s in best.steps[1:])))
    for key in keys:
        requests = _forgotten(best.steps, key)
        if len(requests) == len(best.steps) and requests == [s.request for s in best.steps]:
            continue
        found = still_fails(requests)
        if found is not None and _same_finding(found, best) and len(found.steps) < len(best.steps):
            return found
    return None


def _answers(step: Step) -> tuple[Any, Any]:
    """Both sides' answers to a step, without the request ids."""

    def strip(response: dict[str, Any] | None) -> Any:
        return None if response is None else {k: v for k, v in response.items() if k != "id"}

    return strip(step.reference), strip(step.adapter)


def _drop_unneeded_state(best: Failure, still_fails: Replay) -> Failure | None:
    """The first failure with one ``state`` that follows an ``advance`` removed, alone,
    where that state was a pure observation: the replay fails with the same message and
    every other step gets the very same answers from both sides as with it. A state the
    steered reference needed (to learn what the adapter woke up to do) changes a later
    answer of the reference, so it stays (see :func:`_observed_advances`)."""
    pairs = _observed_advances(best.steps)
    states = sorted(n for n in pairs if pairs[n] < n)
    for n in reversed(states):
        requests = [s.request for k, s in enumerate(best.steps) if k != n]
        found = still_fails(requests)
        if (
            found is None
            or found.kind != best.kind
            or found.message != best.message
            or len(found.steps) != len(best.steps) - 1
        ):
            continue
        kept = [s for k, s in enumerate(best.steps) if k != n]
        if all(_answers(a) == _answers(b) for a, b in zip(kept, found.steps, strict=True)):
            return found
    return None


def _drop_pair(best: Failure, still_fails: Replay) -> Failure | None:
    """The first shorter failure with two steps ``i < j`` removed (later pairs first, as
    consumers tend to sit near the failing step), or None."""
    for j in range(len(best.steps) - 1, 1, -1):
        for i in range(j - 1, 0, -1):
            found = still_fails(_without(best, {i, j}))
            if found is not None and len(found.steps) < len(best.steps):
                return found
    return None


def run(config: Config, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run a whole check (or a replay) and print the report. Returns the exit status."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    if not config.command:
        err.write("refimpl conform: no adapter command (put it after --)\n")
        return EXIT_USAGE
    unknown = [c for c in config.components if c not in COMPONENTS]
    if unknown:
        err.write(
            f"refimpl conform: unknown component(s) {', '.join(unknown)}; known: "
            f"{', '.join(COMPONENTS)}\n"
        )
        return EXIT_USAGE
    if config.seed is None:
        config.seed = random.SystemRandom().randrange(1, 2**31)
    ctx = RunContext(config, err)
    try:
        try:
            hello = ctx.start_adapter()
        except (AdapterFailure, AdapterHandshakeError) as exc:
            out.write(f"refimpl conform: the adapter failed to start: {exc.describe()}\n")
            return EXIT_ADAPTER
        if config.replay:
            return replay_file(ctx, config.replay, out)
        offered = [c for c in COMPONENTS if c in hello["components"]]
        wanted = config.components or offered
        runnable = [c for c in wanted if c in offered]
        impl = hello.get("implementation")
        described = f" ({impl})" if impl else ""
        out.write(
            f"conform: adapter {hello['name']} {hello['version']}{described}, "
            f"protocol {ctx.protocol}, seed {config.seed}\n"
        )
        for c in wanted:
            if c not in offered:
                out.write(f"  {c:20s} skipped: the adapter does not offer it\n")
        if not runnable:
            out.write("refimpl conform: nothing to test\n")
            return EXIT_USAGE
        status = EXIT_PASS
        started = time.monotonic()
        for index, component in enumerate(runnable):
            remaining = config.budget - (time.monotonic() - started)
            budget = max(remaining / (len(runnable) - index), 0.5)
            result = run_component(ctx, component, budget)
            out.write(summary_line(result) + "\n")
            for left_out in result.untested:
                out.write(f"  {component}: not tested: {left_out}\n")
            if result.failure is not None:
                out.write(format_failure(result.failure, config) + "\n")
                if not isinstance(result.failure.adapter_error, AdapterHung):
                    out.write("  " + confirm_replay(ctx, result.failure) + "\n")
                status = max(status, result.failure.exit_status)
                if not config.keep_going:
                    break
        out.flush()
        return status
    finally:
        ctx.close()


def summary_line(result: ComponentResult) -> str:
    rate = result.steps / result.elapsed if result.elapsed > 0 else 0.0
    label = {"pass": "PASS", "fail": "FAIL", "adapter failure": "ADAPTER FAILURE"}.get(
        result.status, result.status
    )
    text = (
        f"  {result.component:20s} {label:8s} {result.examples} examples, {result.steps} steps "
        f"in {result.elapsed:.1f} s ({rate:.0f} steps/s)"
    )
    if result.failure is not None:
        text += f"; shrunk to {len(result.failure.steps)} operations"
    if result.note:
        text += f" [{result.note}]"
    return text


def confirm_replay(ctx: RunContext, failure: Failure) -> str:
    """Re-run the shrunk trace on a freshly started adapter and say if it reproduces."""
    try:
        ctx.start_adapter()
    except (AdapterFailure, AdapterHandshakeError) as exc:
        return f"replay on a fresh adapter: could not restart it ({exc})"
    example = Example(ctx, failure.component)
    try:
        for step in failure.steps:
            example.exchange(step.request)
    except (Mismatch, AbortRun):
        return "replay on a fresh adapter: reproduces"
    finally:
        ctx.best = failure
    return "replay on a fresh adapter: did NOT reproduce (the adapter is not deterministic?)"


def replay_file(ctx: RunContext, path: str, out: TextIO) -> int:
    try:
        component, requests = load_trace(path)
    except (OSError, ValueError) as exc:
        out.write(f"refimpl conform: cannot read {path}: {exc}\n")
        return EXIT_USAGE
    ctx.start_component(component, float("inf"))
    example = Example(ctx, component)
    status = EXIT_PASS
    try:
        for request in requests:
            example.exchange(request)
    except (Mismatch, AbortRun):
        assert ctx.best is not None
        status = ctx.best.exit_status
    if ctx.best is None:
        out.write(f"replay of {path}: all {len(requests)} answers agree with the reference\n")
        out.write("\n".join(format_table(example.trace)) + "\n")
        return EXIT_PASS
    out.write(format_failure(ctx.best, ctx.config) + "\n")
    return status
