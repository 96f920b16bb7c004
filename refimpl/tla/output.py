"""TLC's console output, read into a typed :class:`TlcResult`.

Owns no state and runs nothing: :func:`parse_output` takes the text TLC printed and its
exit code. It reads the outcome (pass, invariant or temporal property violated,
deadlock, error), the statistics (distinct states, states generated, depth, TLC's
own running time) and a counterexample as a list of :class:`TraceStep` (variable map
+ the action that produced it, with its arguments). Values are read by
:mod:`refimpl.tla.values`. Tested on captured real output in tests/fixtures/tlc/.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping

import attrs

from refimpl.tla.values import TlaParseError, Value, parse_value, parse_values

__all__ = ["Status", "TlcResult", "TraceStep", "parse_duration", "parse_output", "parse_state"]


class Status(enum.Enum):
    """How a TLC run ended."""

    PASS = "pass"
    INVARIANT_VIOLATED = "invariant violated"
    PROPERTY_VIOLATED = "property violated"
    DEADLOCK = "deadlock"
    ERROR = "error"

    @property
    def is_violation(self) -> bool:
        return self in (Status.INVARIANT_VIOLATED, Status.PROPERTY_VIOLATED, Status.DEADLOCK)


@attrs.frozen
class TraceStep:
    """One state of a counterexample and the action that led to it.

    ``action`` is None for an initial state; ``"Stuttering"`` marks the stuttering
    step that ends a liveness counterexample; ``back_to`` (1-based) marks the step that
    closes a lasso by returning to an earlier state (``state`` is then empty).
    """

    number: int
    action: str | None
    args: tuple[Value, ...] = ()
    state: Mapping[str, Value] = attrs.field(factory=dict)
    back_to: int | None = None


@attrs.frozen
class TlcResult:
    """A TLC run, as far as its output tells."""

    status: Status
    exit_code: int
    violated: str | None = None
    distinct_states: int | None = None
    states_generated: int | None = None
    depth: int | None = None
    seconds: float | None = None
    trace: tuple[TraceStep, ...] = ()
    message: str | None = None
    version: str | None = None
    #: (module, line, column) of a violated action property, which TLC reports by
    #: place, not name; :func:`refimpl.tla.runner.run_tlc` turns it into a name.
    location: tuple[str, int, int] | None = None
    #: Every property TLC named as violated, in its order. One liveness counterexample
    #: can violate several ("Temporal properties A and B were violated."); ``violated``
    #: is then their list joined by ", ".
    violated_all: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status is Status.PASS

    def names_violated(self, name: str) -> bool:
        """Whether TLC reported ``name`` among the violated properties."""
        return name in self.violated_all or (self.violated is not None and name == self.violated)


_INVARIANT = re.compile(r"^Error: Invariant (\S+) is violated")
_INITIAL_PROPERTY = re.compile(r"^Error: Property (\S+) is violated by the initial state")
_PROPERTY = re.compile(r"^Error: Temporal property (\S+) (?:is|was) violated")
# "Temporal properties A and B were violated." / "... A, B, and C were violated."
_PROPERTY_LIST = re.compile(r"^Error: Temporal properties (\S.*?) were violated")
_PROPERTIES = re.compile(r"^Error: Temporal properties were violated")
_ACTION_PROPERTY = re.compile(
    r"^Error: Action property (line (\d+), col (\d+) to .* of module (\w+)) is violated"
)
# A property named in the cfg that is an action formula ([][A]_v): TLC names it.
_NAMED_ACTION_PROPERTY = re.compile(r"^Error: Action property (\S+) is violated")
_LIST_SEPARATOR = re.compile(r",\s+and\s+|\s+and\s+|,\s+")
_DEADLOCK = re.compile(r"^Error: Deadlock reached")
_STATS = re.compile(
    r"^([\d,]+) states generated, ([\d,]+) distinct states found, ([\d,]+) states left"
)
_DEPTH = re.compile(r"^The depth of the complete state graph search is (\d+)")
_FINISHED = re.compile(r"^Finished in (.+?) at ")
_VERSION = re.compile(r"^TLC2 Version (\S+)")
_STATE = re.compile(r"^State (\d+): (.*)$")
_ACTION = re.compile(r"^<([A-Za-z_][A-Za-z0-9_!]*)(?:\((.*)\))? line \d+, col \d+ .*>$")
_BACK = re.compile(r"^Back to state (\d+)")
_DURATION = re.compile(r"(\d+)\s*(ms|min|h|d|s)")
_UNIT = {"ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}

# TLC's exit codes (tlc2.output.EC.ExitStatus) for outcomes the text may not name.
_EXIT_STATUS = {
    0: Status.PASS,
    11: Status.DEADLOCK,
    12: Status.INVARIANT_VIOLATED,
    13: Status.PROPERTY_VIOLATED,
}


def parse_duration(text: str) -> float | None:
    """TLC's ``01min 05s`` style durations, in seconds (None if unreadable)."""
    parts = _DURATION.findall(text)
    if not parts:
        return None
    return sum(int(n) * _UNIT[unit] for n, unit in parts)


def parse_state(lines: list[str]) -> dict[str, Value]:
    """Read a state block: ``/\\ var = value`` conjuncts, values possibly spanning lines."""
    text = "\n".join(lines).strip()
    if not text:
        return {}
    chunks = re.split(r"(?m)^/\\ ", text) if text.startswith("/\\ ") else [text]
    state: dict[str, Value] = {}
    for chunk in chunks:
        if not chunk.strip():
            continue
        name, sep, rest = chunk.partition(" = ")
        if not sep:
            raise TlaParseError(f"not a 'var = value' line: {chunk[:60]!r}")
        state[name.strip()] = parse_value(rest)
    return state


def _parse_header(number: int, header: str) -> TraceStep:
    if header.startswith("<Initial predicate>"):
        return TraceStep(number, None)
    if header.startswith("Stuttering"):
        return TraceStep(number, "Stuttering")
    back = _BACK.match(header)
    if back:
        rest = header[back.end() :].lstrip(": ")
        action = _ACTION.match(rest)
        return TraceStep(
            number,
            action.group(1) if action else None,
            parse_values(action.group(2) or "") if action else (),
            back_to=int(back.group(1)),
        )
    action = _ACTION.match(header)
    if action is None:
        # An action TLC could not name (e.g. a bare Next): keep the header text.
        return TraceStep(number, header.strip("<>").split(" line ")[0])
    return TraceStep(number, action.group(1), parse_values(action.group(2) or ""))


def _parse_trace(lines: list[str]) -> tuple[TraceStep, ...]:
    steps: list[TraceStep] = []
    current: TraceStep | None = None
    body: list[str] = []

    def flush() -> None:
        if current is not None:
            steps.append(attrs.evolve(current, state=parse_state(body)))

    for line in lines:
        m = _STATE.match(line)
        if m:
            flush()
            current = _parse_header(int(m.group(1)), m.group(2))
            body = []
        elif _BACK.match(line):
            flush()
            number = steps[-1].number + 1 if steps else 1
            current = _parse_header(number, line)
            body = []
        elif current is not None:
            if not line.strip() and body:
                flush()
                current = None
                body = []
            elif line.startswith(("/\\ ", " ", "\t")) or (not body and " = " in line):
                body.append(line)
            elif not line.strip():
                continue
            else:
                flush()
                current = None
                body = []
    flush()
    return tuple(steps)


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def parse_output(text: str, exit_code: int) -> TlcResult:
    """Read a whole TLC run's console output (``-tool`` mode not needed)."""
    lines = text.splitlines()
    status: Status | None = None
    violated: str | None = None
    message: str | None = None
    version = distinct = generated = depth = seconds = None
    trace_start: int | None = None
    location: tuple[str, int, int] | None = None
    violated_all: tuple[str, ...] = ()
    for index, line in enumerate(lines):
        if version is None and (m := _VERSION.match(line)):
            version = m.group(1)
        elif m := _INVARIANT.match(line):
            status, violated = Status.INVARIANT_VIOLATED, m.group(1)
            violated_all = (violated,)
        elif m := _ACTION_PROPERTY.match(line):
            status, violated = Status.PROPERTY_VIOLATED, m.group(1)
            location = (m.group(4), int(m.group(2)), int(m.group(3)))
        elif m := _NAMED_ACTION_PROPERTY.match(line):
            status, violated = Status.PROPERTY_VIOLATED, m.group(1)
            violated_all = (violated,)
        elif _PROPERTIES.match(line):
            status = Status.PROPERTY_VIOLATED
        elif m := _PROPERTY.match(line):
            status, violated = Status.PROPERTY_VIOLATED, m.group(1)
            violated_all = (violated,)
        elif m := _PROPERTY_LIST.match(line):
            violated_all = tuple(n for n in _LIST_SEPARATOR.split(m.group(1)) if n)
            status, violated = Status.PROPERTY_VIOLATED, ", ".join(violated_all)
        elif m := _INITIAL_PROPERTY.match(line):
            status, violated = Status.PROPERTY_VIOLATED, m.group(1)
            violated_all = (violated,)
        elif _DEADLOCK.match(line):
            status = Status.DEADLOCK
        elif m := _STATS.match(line):
            generated, distinct = _int(m.group(1)), _int(m.group(2))
        elif m := _DEPTH.match(line):
            depth = int(m.group(1))
        elif m := _FINISHED.match(line):
            seconds = parse_duration(m.group(1))
        elif line.startswith(("Error: The behavior up to", "Error: The following behavior")):
            trace_start = index + 1
        elif status is None and (
            line.startswith(("*** Errors", "Error: ", "Parse Error")) or "TLC threw" in line
        ):
            status = Status.ERROR
            message = "\n".join(lines[index : index + 12]).strip()
    if status is None:
        if exit_code == 0 and "No error has been found" in text:
            status = Status.PASS
        else:
            status = _EXIT_STATUS.get(exit_code, Status.ERROR) if exit_code else Status.ERROR
            if status is Status.ERROR and message is None:
                tail = [ln for ln in lines if ln.strip()][-12:]
                message = "\n".join(tail) or f"TLC exited with code {exit_code} and no output"
    trace = _parse_trace(lines[trace_start:]) if trace_start is not None else ()
    return TlcResult(
        status=status,
        exit_code=exit_code,
        violated=violated,
        distinct_states=distinct,
        states_generated=generated,
        depth=depth,
        seconds=seconds,
        trace=trace,
        message=message,
        version=version,
        location=location,
        violated_all=violated_all,
    )
