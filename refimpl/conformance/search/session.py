"""The session with the adapter: :class:`RunContext` (the adapter process for the length
of a run, its handshake, the counters for the progress line, the shortest failure seen
so far) and :class:`Example` (one generated sequence: a reset adapter, a fresh steered
reference, each request sent to both, compared, checked against the invariants and
recorded).

Each Hypothesis example starts from a ``reset`` adapter (or a restarted one after a
failure) and a fresh reference driver, so examples are independent. The search sends
ahead the requests whose answers the reference gives alone (docs/protocol.md, "Requests
sent ahead"): they go out together with the next request that waits, and their answers
are judged in order when read (:meth:`Example.settle`), so a step costs no wake-up of the
adapter of its own. An informer call the reference can carry out before the adapter's
answer is written first and predicted while the adapter works (:meth:`Example.predict`);
once an example draws no more choices its answers are judged when it ends (docs/protocol.md,
"Informer calls written before the answer they wait for"). Every request has a
timeout; a hung adapter aborts the run (:class:`~refimpl.conformance.search.config.AbortRun`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn, TextIO

from refimpl.conformance.process import AdapterFailure, AdapterHung, AdapterProcess
from refimpl.conformance.protocol import PROTOCOL_VERSION, PROTOCOL_VERSIONS
from refimpl.conformance.reference.dispatch import ReferenceDriver
from refimpl.conformance.reference.informer import FIFO_MODES, InformerComponent
from refimpl.conformance.reference.workqueue import WorkqueueComponent
from refimpl.conformance.search.compare import agree
from refimpl.conformance.search.config import (
    AbortRun,
    AdapterHandshakeError,
    BudgetExhausted,
    Config,
    Failure,
    FailureKind,
    Mismatch,
    SetAside,
    Step,
)
from refimpl.conformance.search.informer_invariants import InformerChecker, observation_problem
from refimpl.conformance.search.invariants import AnswerChecker, PoppedStore
from refimpl.conformance.search.report import compact
from refimpl.eras import LATEST, Era, ReleaseError, era_of, parse_release

__all__ = [
    "ADAPTER_SIDE_ERRORS",
    "AHEAD_LIMIT",
    "SET_ASIDE",
    "Example",
    "RunContext",
    "SearchExample",
    "check_hello",
    "drain_popped",
]

#: Error kinds an adapter may only answer when the reference answers the same: anything
#: else means the adapter could not carry out a request it declared (its fault, not a
#: difference in behaviour).
ADAPTER_SIDE_ERRORS = frozenset({"bad_request", "unsupported", "no_instance", "internal"})
#: Requests sent ahead at most before their answers are read (bounds how far past a
#: difference an example runs, and what the pipes hold: the requests written and not
#: answered must fit in the adapter's stdin pipe, or a write would block without a
#: timeout; 64 informer requests are a few kilobytes, a pipe holds 64 KiB).
AHEAD_LIMIT = 64
#: The request that begins every example on a running adapter.
RESET: dict[str, Any] = {"op": "reset"}


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


@dataclass
class Owed:
    """A request sent whose answer is not judged yet, and the reference's answer."""

    request: dict[str, Any]
    expected: Any
    #: A request the reference could not answer alone, predicted (:meth:`Example.predict`):
    #: awaited while the example draws choices, and judged as if awaited.
    awaited: bool = False
    #: Every answer owed up to this request's is judged before any request after it
    #: is sent (while the example draws choices); when a difference is found before
    #: it, the requests sent after it are surplus (:meth:`Example.drop_owed`).
    judge_point: bool = False

    def unanswered(self) -> Any:
        """What the reference answers in the trace if the adapter gives no answer: an
        awaited request's is not matched to the adapter's id."""
        if self.awaited and isinstance(self.expected, dict):
            return {**self.expected, "id": None}
        return self.expected


class Example:
    """One generated sequence: a fresh reference, a reset adapter, the trace so far."""

    def __init__(self, ctx: RunContext, component: str, *, ahead: bool = False) -> None:
        self.ctx = ctx
        self.component = component
        self.ref = ReferenceDriver(steered=True)
        self.ref.protocol = ctx.protocol
        self.ref.heap_order = ctx.heap_order()
        self.ref.era = ctx.era
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
        #: Send ahead what the reference predicts (the search; replay waits for each).
        self.ahead = ahead and self.compared
        #: Requests sent ahead whose answers are not judged yet, with the reference's.
        self.pending: deque[Owed] = deque()
        #: Answers owed since the last judge point (its ``reset`` included): at
        #: AHEAD_LIMIT, the last is one.
        self.since_awaited = 0
        #: The example draws no more choices (:meth:`close_steps`).
        self.closing = False

    def _reference(self, request: dict[str, Any], actual: dict[str, Any] | None) -> Any:
        if not self.compared:
            return None
        rid = actual.get("id") if actual is not None else None
        return self.ref.handle({"id": rid, **request}, actual)

    @property
    def held(self) -> list[str]:
        """The items handed out and not yet done, as the generator chooses among them:
        the reference's (it is ahead of the adapter's answers still to be read, and
        equal to the adapter's while they agree: a difference fails the example)."""
        return self.ref_view.held if self.compared else self.checker.held

    def exchange(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send ``request`` to the adapter, then to the steered reference; compare.

        With ``ahead``, a request whose answer the reference gives alone is sent
        without waiting and its prediction returned; the adapter's answer is read and
        judged later, in order (:meth:`settle`). A FIFO whose pops feed a store is
        not sent ahead: its failure report drains both sides from the failing step."""
        feeds_store = self.ref_view.popped is not None
        if self.ahead and not feeds_store:
            if self.ref.answers_alone(request):
                return self._send_ahead(request)
            if self.ref.predicts(request):
                return self.predict(request)
        ctx = self.ctx
        self.since_awaited = 0
        try:
            if feeds_store:
                self.read_ahead()  # nothing may reach the adapter past a difference
            # Queued behind the requests sent ahead: one write carries them all.
            ctx.adapter.send(request)
            self.read_ahead()
            actual = ctx.adapter_receive()
        except AdapterFailure as exc:
            self._adapter_failed(request, self._reference(request, None), exc)
        expected = self._reference(request, actual)
        if self.component != "informer":
            self.ref_view.check(request, expected)
        return self._judge(request, expected, actual)

    def _send_ahead(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            rid = self.ctx.adapter.send(request)
        except AdapterFailure as exc:
            self.settle()
            self._adapter_failed(request, self._reference(request, None), exc)
        expected: dict[str, Any] = self.ref.handle({"id": rid, **request}, None)
        if self.component != "informer":
            self.ref_view.check(request, expected)
        self.since_awaited += 1
        limit = self.since_awaited >= AHEAD_LIMIT
        self.pending.append(Owed(request, expected, judge_point=limit))
        if limit:
            self.since_awaited = 0
        if limit or len(self.pending) >= AHEAD_LIMIT:
            self.settle()
        return expected

    def predict(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send ``request``, which the reference carries out before the adapter's answer
        is read (``ReferenceDriver.predicts``) although it could not answer it alone:
        the adapter works on it meanwhile. While the example draws choices its answer
        is awaited here; once it draws none (``closing``), the prediction is
        returned and the answer judged with the others owed, unless the call left the
        informer in a backoff the answer may end (then it is awaited)."""
        ctx = self.ctx
        self.since_awaited = 0
        try:
            rid = ctx.adapter.send(request)
            if not self.closing:
                ctx.adapter.flush()
        except AdapterFailure as exc:
            self._adapter_failed(request, self._reference(request, None), exc)
        expected = self.ref.handle_ahead({"id": rid, **request})
        if expected is not None and self.closing:
            self.pending.append(Owed(request, expected, awaited=True, judge_point=True))
            if len(self.pending) >= AHEAD_LIMIT:
                self.settle()
            return expected
        try:
            self.read_ahead()
            actual = ctx.adapter_receive()
        except AdapterFailure as exc:
            if expected is None:
                expected = self.ref.finish({"id": None, **request}, None)
            unanswered = Owed(request, expected, awaited=True).unanswered()
            self._adapter_failed(request, unanswered, exc)
        if expected is None:
            expected = self.ref.finish({"id": actual.get("id"), **request}, actual)
        elif type(actual.get("id")) is not int:  # an id of 7.0 is id 7: keep the adapter's
            expected = {**expected, "id": actual.get("id")}
        return self._judge(request, expected, actual)

    def close_steps(self) -> None:
        """The example draws no more choices (its teardown): from now on a predicted
        request's answer is judged with the others owed, at the latest when the
        example ends. The answers owed now would have been judged here."""
        self.closing = True
        self.since_awaited = 0
        if self.pending:
            self.pending[-1].judge_point = True

    def settle(self) -> None:
        """Read and judge the answers to the requests sent ahead, oldest first."""
        self.read_ahead()

    def read_ahead(self) -> None:
        """As :meth:`settle`, which a :class:`SearchExample` overrides to end a set-aside
        example quietly; a request about to be awaited calls this one, so it is not
        awaited past a failure. After a failure, every answer still owed (also one to a
        request just written) belongs to no example: it is dropped when read."""
        judged = False
        owed = None
        try:
            while self.pending:
                owed = self.pending.popleft()
                if owed.request is RESET:  # the example's own reset, sent ahead
                    self._reset_done()
                    continue
                try:
                    actual = self.ctx.adapter_receive()
                except AdapterFailure as exc:
                    self._adapter_failed(owed.request, owed.unanswered(), exc)
                expected = owed.expected
                if owed.awaited and type(actual.get("id")) is not int:
                    expected = {**expected, "id": actual.get("id")}
                self._judge(owed.request, expected, actual)
            judged = True
        finally:
            if not judged:
                self.drop_owed(owed is not None and owed.judge_point)

    def drop_owed(self, at_judge_point: bool) -> None:
        """After a failure (at a judge point, :attr:`Owed.judge_point`, or not): no
        answer still owed belongs to the example. Those owed up to the first judge
        point are dropped when next read, as any answer nobody waits for; a request
        sent past it was sent only because the closing example ran on without its
        answers (:meth:`predict`): those answers are read now and dropped, a failure
        to read one only restarts the adapter before the next example."""
        owed, ctx = list(self.pending), self.ctx
        self.pending.clear()
        loud = next((n + 1 for n, o in enumerate(owed) if o.judge_point), None)
        if at_judge_point:
            loud = 0
        if ctx.need_restart or loud is None or loud >= ctx.adapter.outstanding:
            ctx.adapter.abandon()
        elif not ctx.adapter.drop_answers(loud):
            ctx.need_restart = True

    def _reset_done(self) -> None:
        ctx = self.ctx
        try:
            ctx.check_reset(ctx.adapter_receive())
        except (AdapterFailure, AdapterHandshakeError) as exc:
            self.failed = True
            ctx.reset_failed(self.component, exc)

    def _adapter_failed(
        self, request: dict[str, Any], expected: Any, exc: AdapterFailure
    ) -> NoReturn:
        self.trace.append(Step(request, expected, None))
        self.ctx.record(self, "adapter", exc.describe(), exc)
        if isinstance(exc, AdapterHung):
            raise AbortRun() from None
        raise Mismatch(exc.describe()) from None

    def _judge(
        self, request: dict[str, Any], expected: Any, actual: dict[str, Any]
    ) -> dict[str, Any]:
        """Record the step, check the adapter's answer against the invariants and the
        reference's (``ref_view`` has been fed already); Mismatch if it fails."""
        ctx = self.ctx
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
                ctx.record(self, "disagreement", message, None, *self.consequence())
            raise Mismatch(f"step {len(self.trace)} differs")
        return actual

    def consequence(self) -> tuple[str, tuple[str, ...]]:
        """For a FIFO whose pops feed a store as an informer's do (see
        :class:`~refimpl.conformance.search.invariants.PoppedStore`): keep popping both sides
        past the difference, each applying its own pops, and say what the adapter's
        store ends up holding if that is not the source ("" otherwise). The extra
        requests are not part of the trace; the adapter is reset before the next one.
        Also the kinds of what is wrong in that store (``PoppedStore.fault_kinds``)."""
        mine, theirs = self.checker.popped, self.ref_view.popped
        if mine is None or theirs is None or not mine.fair:
            return "", ()
        mine.whose = "the adapter's pops"
        try:
            problem = drain_popped(mine, self.ctx.adapter_request)
        except AdapterFailure:
            return "", ()
        if problem is None:
            return "", ()
        ends = drain_popped(theirs, lambda r: self.ref.handle({"id": None, **r}))
        shown = ", ".join(compact(o) for o in theirs.stored().values()) or "empty"
        reference = (
            f"the reference's pops leave it equal to the source ({shown})"
            if ends is None
            else f"the reference's pops too: {ends}"
        )
        return f"{problem}; {reference}", mine.fault_kinds()

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


#: What a set-aside example's requests get instead of an answer (nothing is sent).
SET_ASIDE: dict[str, Any] = {"error": {"kind": "set_aside", "message": "example set aside"}}


class SearchExample(Example):
    """An example Hypothesis generates. One that fails with a finding already made, or
    with another than the one being shrunk, is set aside (see :meth:`RunContext.record`):
    its remaining requests get :data:`SET_ASIDE` without reaching the adapter, so it
    ends as if it passed, and the search looks on for other findings."""

    set_aside = False

    def exchange(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.set_aside:
            return SET_ASIDE
        try:
            return super().exchange(request)
        except SetAside:
            self.set_aside = True
            return SET_ASIDE

    def settle(self) -> None:
        # An answer sent ahead may be judged here, in a teardown: set aside as above.
        if self.set_aside:
            return
        try:
            super().settle()
        except SetAside:
            self.set_aside = True


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
        #: The client-go release line the reference informer follows: ``--release``, or
        #: the adapter's declared ``release``, or the newest (refimpl/eras.py).
        self.era: Era = LATEST
        #: The protocol version the adapter agreed to (2, or 1 for an older adapter).
        self.protocol = PROTOCOL_VERSION
        self.need_restart = False
        self.examples = 0
        self.steps = 0
        self.restarts = 0
        self.best: Failure | None = None
        #: The signatures of the component's findings so far: a search sets aside an
        #: example that fails with one of them.
        self.found: set[str] = set()
        #: Failures with a new signature seen while another finding was being shrunk,
        #: by signature (the shortest of each): findings a later search may not reach.
        self.pending: dict[str, Failure] = {}
        #: Examples generated (not shrinking) for the component, over all its searches.
        self.generated = 0
        #: Seconds of the component spent shrinking, not searching (``found_after`` and
        #: the search budget leave them out); ``best_at``: when ``best`` was first set.
        self.shrinking_spent = 0.0
        self.best_at = 0.0
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
        self.era = follow_release(self.hello, self.config.release)
        self.need_restart = False
        return self.hello

    def adapter_request(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            return self.adapter.request(request)
        except AdapterFailure:
            self.need_restart = True
            raise

    def adapter_receive(self) -> dict[str, Any]:
        """The answer to the oldest request sent (``adapter.send``) and not yet read."""
        try:
            return self.adapter.receive()
        except AdapterFailure:
            self.need_restart = True
            raise

    def close(self) -> None:
        self.adapter.close()
        if self.log_file is not None:
            self.log_file.close()

    # -- examples
    def begin_example(self, component: str, *, ahead: bool = False) -> SearchExample:
        now = time.monotonic()
        limit = self.shrink_deadline if self.best is not None else self.deadline
        if now > limit:
            raise BudgetExhausted()
        restart = self.need_restart or self.config.restart_each
        if ahead and not restart:
            # Sent ahead: its answer is read with the example's first ones (settle).
            self.adapter.send({"op": "reset"})
        else:
            self.fresh_adapter(component)
        self.examples += 1
        if self.best is None:
            self.generated += 1
        self.progress()
        example = SearchExample(self, component, ahead=ahead)
        if ahead and not restart:
            example.pending.append(Owed(RESET, RESET))
            example.since_awaited = 1
        return example

    def fresh_adapter(self, component: str) -> None:
        """Reset the adapter (or restart it after a failure); AbortRun if impossible."""
        try:
            if self.need_restart or self.config.restart_each:
                self.restarts += 1
                self.start_adapter()
            else:
                self.check_reset(self.adapter_request(RESET))
        except (AdapterFailure, AdapterHandshakeError) as exc:
            self.reset_failed(component, exc)

    def check_reset(self, response: dict[str, Any]) -> None:
        if "error" in response:
            self.need_restart = True
            raise AdapterHandshakeError(f"reset refused: {response['error']}")

    def reset_failed(self, component: str, exc: AdapterFailure | AdapterHandshakeError) -> NoReturn:
        trace = Example(self, component)
        trace.trace.append(Step(RESET, None, None))
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
        consequence_kinds: tuple[str, ...] = (),
    ) -> None:
        example.failed = True
        now = time.monotonic()
        failure = Failure(
            kind=kind,
            component=example.component,
            steps=list(example.trace),
            message=message,
            example=self.examples,
            found_after=now - self._component_started - self.shrinking_spent,
            adapter_error=error,
            consequence=consequence,
            consequence_kinds=consequence_kinds,
        )
        if isinstance(example, SearchExample):
            self._set_aside_unless_sought(failure)
        if self.best is None:
            # Half the shrink budget for Hypothesis, half for minimize() afterwards.
            self.shrink_deadline = now + self.config.shrink_budget / 2
            self.best_at = now
            self.best = failure
        elif len(failure.steps) <= len(self.best.steps) and (
            failure.consequence or not self.best.consequence
        ):
            failure.found_after = self.best.found_after
            self.best = failure

    def _set_aside_unless_sought(self, failure: Failure) -> None:
        """Raise :class:`SetAside` if a generated example's ``failure`` is not the finding
        the search is after: one already made (its signature), or, while a finding is
        being shrunk, one of another family (kept in :attr:`pending`), so each finding
        is shrunk on its own."""
        signature = failure.signature
        if self.already_found(failure):
            raise SetAside(signature)
        if self.best is not None and failure.family != self.best.family:
            kept = self.pending.get(signature)
            if kept is None or len(failure.steps) < len(kept.steps):
                self.pending[signature] = failure
            raise SetAside(signature)

    def already_found(self, failure: Failure) -> bool:
        """``failure`` is a finding the run has made: its signature, or a FIFO
        difference without a consequence at a method where one with a consequence
        (``differs:KIND``) is a finding -- most likely the same wrong pop, with a later
        step repairing what it broke."""
        if failure.signature in self.found:
            return True
        if not failure.unclassified:
            return False
        component, _, method = failure.signature.split("/")
        return any(
            f.startswith(f"{component}/differs:") and f.endswith(f"/{method}") for f in self.found
        )

    def start_component(self, component: str, budget: float) -> None:
        self.component = component
        self._component_started = time.monotonic()
        self.deadline = self._component_started + budget
        self.shrink_deadline = float("inf")
        self.best = None
        self.examples = 0
        self.steps = 0
        self.found = set()
        self.pending = {}
        self.generated = 0
        self.shrinking_spent = 0.0

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
        release = informer.get("release")
        try:
            if release is not None:
                parse_release(release)
        except ReleaseError as exc:
            return f"informer 'release': {exc}"
    return None


def follow_release(hello: dict[str, Any], release: str | None) -> Era:
    """The era the reference follows for this adapter (``release``: ``--release``, which
    wins over the adapter's own), narrowing its informer's ``behaves_like`` to the FIFO
    generations that release has. Raises AdapterHandshakeError when none is left."""
    caps = hello.get("components", {}).get("informer")
    if not isinstance(caps, dict):
        return LATEST
    named = release if release is not None else caps.get("release")
    if named is None:
        return LATEST
    era = era_of(named)
    modes = caps.get("behaves_like")
    if isinstance(modes, list):
        kept = [m for m in modes if m in era.fifo_modes()]
        if not kept:
            raise AdapterHandshakeError(
                f"the informer behaves like {modes}, none of which client-go {era.name} has "
                f"(it has {list(era.fifo_modes())})"
            )
        caps["behaves_like"] = kept
    return era


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
