"""``refimpl serve --scenario FILE``: writes and wire faults over time, one JSON line each.

A scenario is a JSON-lines file (blank lines and lines starting with ``#`` are skipped):
each line is a step, run in file order, one after another. A step is a write
(``create``, ``update``, ``delete`` of a ConfigMap) or a wire fault (the requests of
``refimpl/wire/faults.py``), and says when it runs: ``wait`` for something a client did
(a watch open, a number of lists or watches answered), then ``after`` seconds more.
docs/wire.md says why steps wait for the client rather than for the clock.
:func:`parse_scenario` checks a whole file before the server starts and names the line
of the first thing wrong; :class:`ScenarioRunner` runs the steps against a
:class:`~refimpl.wire.server.WireServer`, then waits for the wire to be quiet.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any, Final, Literal

import attrs

from refimpl.apierrors import ApiError
from refimpl.clock import Clock, RealClock
from refimpl.meta import Object
from refimpl.wire.faults import FAULT_OPS, Fault, FaultError, parse_fault
from refimpl.wire.server import WireServer

__all__ = [
    "WRITE_OPS",
    "ScenarioError",
    "ScenarioOutcome",
    "ScenarioRunner",
    "Step",
    "Wait",
    "parse_scenario",
]

WRITE_OPS: Final = ("create", "update", "delete")
#: How long a step's ``wait`` waits by default, in seconds.
DEFAULT_TIMEOUT: Final = 60.0
_CONTROL: Final = ("wait", "after", "timeout")
_WRITE_FIELDS: Final = {
    "create": ("namespace", "name", "data", "labels"),
    "update": ("namespace", "name", "data", "labels"),
    "delete": ("namespace", "name"),
}


class ScenarioError(ValueError):
    """A scenario file that is not well formed; the message starts ``FILE:LINE:``."""


@attrs.frozen
class Wait:
    """What a step waits for: a watch stream open now that matches ``path`` and
    ``resource_version`` (``watching``), or at least ``lists`` list / ``watches`` watch
    requests answered since the server started."""

    watching: bool = False
    path: str | None = None
    resource_version: str | None = None
    lists: int = 0
    watches: int = 0

    def holds(self, wire: WireServer) -> bool:
        book = wire.faults
        if self.watching and not book.open_streams(self.path, self.resource_version):
            return False
        return book.lists >= self.lists and book.watches >= self.watches


@attrs.frozen
class Step:
    """One line of a scenario: a write (``namespace``, ``name``, ``data``, ``labels``)
    or a ``fault``, run after ``wait`` holds (at most ``timeout`` seconds) and then
    ``after`` seconds."""

    line: int
    op: str
    after: float = 0.0
    wait: Wait | None = None
    timeout: float = DEFAULT_TIMEOUT
    namespace: str = ""
    name: str = ""
    data: dict[str, str] | None = None
    labels: dict[str, str] | None = None
    fault: Fault | None = None

    def describe(self) -> str:
        if self.fault is not None:
            return json.dumps(self.fault.to_json())
        return f"{self.op} {self.namespace}/{self.name}"


def _seconds(doc: Mapping[str, Any], name: str, default: float) -> float:
    value = doc.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number of seconds, not {value!r}")
    if not 0 <= value < float("inf"):
        raise ValueError(f"{name} must be a finite number >= 0, not {value!r}")
    return float(value)


def _wait(value: object) -> Wait:
    if not isinstance(value, dict) or len(value) != 1:
        raise ValueError(
            'wait must be one of {"watching": {...}}, {"lists": N}, {"watches": N}, '
            f"not {value!r}"
        )
    ((kind, arg),) = value.items()
    if kind == "watching":
        if not isinstance(arg, dict):
            raise ValueError(f"wait.watching must be an object, not {arg!r}")
        if set(arg) - {"path", "resource_version"}:
            raise ValueError("wait.watching takes only path and resource_version")
        try:  # a fault's selection: the same checks
            selector = parse_fault({"op": "watch_end", **arg})
        except FaultError as err:
            raise ValueError(f"wait.watching: {err}") from None
        return Wait(True, selector.path, selector.resource_version)
    if kind in ("lists", "watches"):
        if isinstance(arg, bool) or not isinstance(arg, int) or arg < 1:
            raise ValueError(f"wait.{kind} must be an integer >= 1, not {arg!r}")
        return Wait(lists=arg) if kind == "lists" else Wait(watches=arg)
    raise ValueError(f"wait: unknown condition {kind!r} (watching, lists, watches)")


def _string_map(doc: Mapping[str, Any], name: str) -> dict[str, str] | None:
    value = doc.get(name)
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(f"{name} must be a map of strings, not {value!r}")
    return dict(value)


def _write(line: int, op: str, doc: Mapping[str, Any], control: dict[str, Any]) -> Step:
    allowed = _WRITE_FIELDS[op]
    unknown = sorted(set(doc) - {"op", *allowed})
    if unknown:
        raise ValueError(f"{op} takes no {', '.join(unknown)} (it takes: {', '.join(allowed)})")
    for name in ("namespace", "name"):
        value = doc.get(name)
        if not isinstance(value, str) or not value:
            raise ValueError(f"{op} needs {name}, a non-empty string")
    data, labels = _string_map(doc, "data"), _string_map(doc, "labels")
    return Step(line, op, namespace=doc["namespace"], name=doc["name"], data=data,
                labels=labels, **control)  # fmt: skip


def _step(line: int, doc: object) -> Step:
    if not isinstance(doc, dict):
        raise ValueError(f"a step is a JSON object, not {doc!r}")
    control: dict[str, Any] = {
        "after": _seconds(doc, "after", 0.0),
        "timeout": _seconds(doc, "timeout", DEFAULT_TIMEOUT),
    }
    if "wait" in doc:
        control["wait"] = _wait(doc["wait"])
    rest = {k: v for k, v in doc.items() if k not in _CONTROL}
    op = rest.get("op")
    if op in WRITE_OPS:
        return _write(line, op, rest, control)
    if op in FAULT_OPS:
        return Step(line, op, fault=parse_fault(rest), **control)
    raise ValueError(f"op must be one of {[*WRITE_OPS, *FAULT_OPS]}, not {op!r}")


def parse_scenario(text: str, source: str = "scenario") -> list[Step]:
    """Every step of a scenario file; :class:`ScenarioError` names ``source`` and the
    line of the first one that is not well formed."""
    steps: list[Step] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            steps.append(_step(number, json.loads(stripped)))
        except json.JSONDecodeError as err:
            raise ScenarioError(
                f"{source}:{number}: not JSON: {err.msg} (column {err.colno})"
            ) from None
        except (ValueError, FaultError) as err:
            raise ScenarioError(f"{source}:{number}: {err}") from None
    return steps


@attrs.frozen
class ScenarioOutcome:
    """How a run ended: ``finished`` (every step ran, then the wire was quiet),
    ``stopped`` (``stop`` was set first), ``failed`` (the server refused a write, or a
    fault could not apply) or ``timed-out`` (a wait's condition never held);
    ``line``: the step it ended on (0 when finished); ``message``: what happened."""

    how: Literal["finished", "stopped", "failed", "timed-out"]
    line: int = 0
    message: str = ""


class ScenarioRunner:
    """Runs ``steps`` against ``wire``; ``clock`` times ``after``, ``timeout`` and the
    ``quiet_period`` (wire silent that long after the last step), looked at every
    ``poll`` real seconds. Each step run is logged in the request log
    (``{"step": LINE, "op": OP}``). ``at`` says where the run is: the line and
    ``"wait"``, ``"after"`` or ``"ran"``, or ``(0, "quiet")`` after the last step."""

    def __init__(
        self,
        wire: WireServer,
        steps: list[Step],
        *,
        clock: Clock | None = None,
        quiet_period: float = 1.0,
        poll: float = 0.05,
    ) -> None:
        self.wire = wire
        self.steps = steps
        self.clock: Clock = clock if clock is not None else RealClock()
        self.quiet_period = quiet_period
        self.poll = poll
        self.at: tuple[int, str] = (0, "start")

    def run(self, stop: threading.Event) -> ScenarioOutcome:
        """Run every step, then wait for a quiet wire; returns early when ``stop`` is
        set. Never raises for what a step meets (the outcome says)."""
        for step in self.steps:
            outcome = self._run_step(step, stop)
            if outcome is not None:
                return outcome
        self.at = (0, "quiet")
        activity, since = self.wire.faults.activity, self.clock.now()
        while self.clock.now() - since < self.quiet_period:
            if stop.wait(self.poll):
                return ScenarioOutcome("stopped", 0, "stopped after the last step")
            if self.wire.faults.activity != activity:
                self.at = (0, "quiet")
        activity, since = self.wire.faults.activity, self.clock.now()
        return ScenarioOutcome("finished", 0, f"{len(self.steps)} steps run, then quiet")

    def _run_step(self, step: Step, stop: threading.Event) -> ScenarioOutcome | None:
        if step.wait is not None:
            self.at = (step.line, "wait")
            wait = step.wait
            deadline = self.clock.now() + step.timeout
            while not wait.holds(self.wire):
                if self.clock.now() >= deadline:
                    what = f"waited {step.timeout:g} s for {_said(wait)}; it never held"
                    return ScenarioOutcome("timed-out", step.line, what)
                if stop.wait(self.poll):
                    return ScenarioOutcome("stopped", step.line, "stopped while waiting")
        self.at = (step.line, "after")
        ready = self.clock.now() + step.after
        while self.clock.now() < ready:
            if stop.wait(self.poll):
                return ScenarioOutcome("stopped", step.line, "stopped before the step")
        self.wire.log({"step": step.line, "op": step.op})
        try:
            self._carry_out(step)
        except (ApiError, FaultError) as err:
            reason = err.reason if isinstance(err, ApiError) else "refused"
            message = f"{step.describe()}: {reason}: {err}"
            return ScenarioOutcome("failed", step.line, message)
        self.at = (step.line, "ran")
        return None

    def _carry_out(self, step: Step) -> None:
        api = self.wire.api
        if step.fault is not None:
            self.wire.inject(step.fault)
        elif step.op == "create":
            obj = Object(step.name, step.namespace, labels=step.labels or {}, data=step.data)
            api.create(obj)
        elif step.op == "update":
            old = api.get(step.namespace, step.name)
            labels = old.labels if step.labels is None else step.labels
            data = old.data if step.data is None else step.data
            api.update(attrs.evolve(old, labels=labels, data=data, resource_version=""))
        else:
            api.delete(step.namespace, step.name)


def _said(wait: Wait) -> str:
    if wait.watching:
        selector = {"path": wait.path, "resource_version": wait.resource_version}
        chosen = {k: v for k, v in selector.items() if v is not None}
        return f"a watch to be open{' (' + json.dumps(chosen) + ')' if chosen else ''}"
    if wait.lists:
        return f"{wait.lists} list requests"
    return f"{wait.watches} watch requests"
