"""The shared core of trace validation (refimpl/tla/trace.py): a mapped trace line, a
whole mapped trace, TLC's verdict, the generated module, and running TLC on it.

Owns no state; runs TLC only in :func:`run_mapping`. The per-spec mappings are
:mod:`~refimpl.tla.trace_workqueue`, :mod:`~refimpl.tla.trace_fifo` and
:mod:`~refimpl.tla.trace_informer`; each builds a :class:`TraceMapping` from typed
simulator trace records (:mod:`refimpl.sim.trace_schema`).
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from refimpl.sim.trace_schema import TraceRecord, parse_record
from refimpl.tla.manifest import default_spec_dir
from refimpl.tla.output import Status, TlcResult
from refimpl.tla.runner import TlcRun, run_tlc
from refimpl.tla.values import Fn, ModelValue, Value, format_value

__all__ = [
    "FailedStep",
    "StepRule",
    "TraceCheckError",
    "TraceLine",
    "TraceMapping",
    "TraceResult",
    "read_trace",
    "run_mapping",
    "trace_lines",
    "trace_module",
    "witness_actions",
]

#: (spec actions, how many spec steps) a code step may take. The count depends on the
#: mapped state before the step: a clock advance (and a get, which fires due items
#: first) fires each waiting key at most once. Code steps not listed take no spec step.
StepRule = tuple[frozenset[str], Callable[[Mapping[str, Value]], int]]


class TraceCheckError(RuntimeError):
    """TLC ran but reached no verdict (a parse or evaluation error, a timeout)."""


@attrs.frozen
class TraceLine:
    """One trace line mapped to the spec: the state after the code step, and what the
    code step may do in spec terms."""

    index: int  # 1-based position in the trace
    step: int | None  # the simulator's step number
    action: str
    desc: str
    generation: int
    state: Mapping[str, Value]
    acts: frozenset[str]
    budget: int
    reset: bool
    #: Spec-specific hints, more fields of the record (DeltaFIFO: ``lists``; the
    #: Informer specs: ``least``, the fewest spec steps the code step must take, and
    #: ``open``, whether processing is under way at this line).
    hints: Mapping[str, Value] = attrs.field(factory=dict)

    def record(self, state: Value | None = None) -> Fn:
        """The TLA+ record Trace[index]; ``state`` replaces the state (the generated
        module names each distinct state once and refers to it)."""
        return Fn(
            {
                "state": Fn(self.state) if state is None else state,
                "acts": frozenset(self.acts),
                "budget": self.budget,
                "reset": self.reset,
                **self.hints,
            }
        )


@attrs.frozen
class TraceMapping:
    """A whole trace mapped: the lines, Init's mapped state, and the constants to bind.

    ``definitions`` are written into the generated module (name -> value);
    ``substitutions`` are the cfg's ``CONSTANTS`` lines.
    """

    spec: str
    lines: tuple[TraceLine, ...]
    initial: Mapping[str, Value]
    definitions: Mapping[str, Value]
    substitutions: tuple[str, ...]
    #: How a state is written into the module (None: as it is); the Informer specs
    #: write the server's history as its length (a prefix of ``TraceHistoryData``).
    encode: Callable[[Mapping[str, Value]], Mapping[str, Value]] | None = None

    def module_state(self, state: Mapping[str, Value]) -> Fn:
        """``state`` as the generated module holds it."""
        return Fn(state if self.encode is None else self.encode(state))


@attrs.frozen
class FailedStep:
    """The first trace line no spec behaviour reaches, and the line before it."""

    index: int
    step: int | None
    action: str
    desc: str
    acts: frozenset[str]
    budget: int
    before: Mapping[str, Value]  # mapped state of line index-1 (Init for line 1)
    after: Mapping[str, Value]  # mapped state of line index
    least: int = 0  # the fewest spec steps the code step had to take

    def changed(self) -> dict[str, tuple[Value, Value]]:
        """The mapped variables the code step changed: name -> (before, after)."""
        return {
            k: (self.before[k], self.after[k])
            for k in self.after
            if self.before[k] != self.after[k]
        }

    def describe(self) -> str:
        bound = f"{self.least} to {self.budget}" if self.least else f"up to {self.budget}"
        allowed = (
            f"{bound} of {', '.join(sorted(self.acts))}"
            if self.budget and self.acts
            else "no spec step"
        )
        lines = [
            f"line {self.index} (simulator step {self.step}, {self.action}"
            + (f": {self.desc}" if self.desc else "")
            + f") is not reached by {allowed} from "
            + (f"line {self.index - 1}" if self.index > 1 else "the initial state")
        ]
        for name, (old, new) in self.changed().items():
            if isinstance(old, Fn) and isinstance(new, Fn):
                # A function (holding, items, store): only the entries that differ.
                for key in sorted(old.keys() | new.keys(), key=format_value):
                    if old.get(key) != new.get(key):
                        lines.append(
                            f"  {name}[{format_value(key)}]: {_show(old.get(key))} -> "
                            f"{_show(new.get(key))}"
                        )
            elif isinstance(old, tuple) and isinstance(new, tuple) and new[: len(old)] == old:
                # A sequence that grew (the server's history, the notifications).
                lines.append(f"  {name}: appended {format_value(new[len(old) :])}")
            else:
                lines.append(f"  {name}: {format_value(old)} -> {format_value(new)}")
        return "\n".join(lines)


def _show(value: Value | None) -> str:
    return "(absent)" if value is None else format_value(value)


@attrs.frozen
class TraceResult:
    """TLC's verdict on a trace."""

    spec: str
    ok: bool
    lines: int  # lines in the trace
    steps_checked: int  # lines matched by a spec behaviour (all of them when ok)
    failed: FailedStep | None
    distinct_states: int | None
    wall_seconds: float
    tlc: TlcResult
    #: Spec action -> how many steps of the witness (a behaviour of the spec through
    #: every line, which TLC prints for an accepted trace) take it; empty if rejected.
    actions: Mapping[str, int] = attrs.field(factory=dict)

    def summary(self) -> str:
        head = (
            f"{self.spec}: trace of {self.lines} lines "
            + ("is a behaviour of the spec" if self.ok else "REJECTED")
            + f" ({self.steps_checked} lines matched, {self.distinct_states} TLC states, "
            f"{self.wall_seconds:.1f}s)"
        )
        return head if self.failed is None else head + "\n" + self.failed.describe()


# -- reading ------------------------------------------------------------------------------


def read_trace(lines: Iterable[str | Mapping[str, Any]]) -> list[TraceRecord]:
    """JSON lines (or already decoded objects) as typed trace records
    (:func:`refimpl.sim.trace_schema.parse_record` checks each field's structure once);
    blank lines are skipped. Raises ValueError naming the line that is not a JSON
    object or has a field of the wrong shape."""
    out: list[TraceRecord] = []
    for n, line in enumerate(lines, 1):
        if isinstance(line, Mapping):
            data: Any = dict(line)
        elif not isinstance(line, str):
            raise TypeError(f"trace line {n}: expected str or mapping, got {type(line).__name__}")
        elif not line.strip():
            continue
        else:
            try:
                data = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"trace line {n}: not JSON ({err}): {line[:80]!r}") from None
            if not isinstance(data, dict):
                raise ValueError(f"trace line {n}: expected a JSON object, got {line[:80]!r}")
        step = data.get("step")
        where = f"trace line {n}" + (f" (step {step})" if isinstance(step, int) else "")
        out.append(parse_record(data, where))
    return out


def _where(n: int, raw: TraceRecord) -> str:
    step = raw.get("step")
    return f"trace line {n}" + (f" (step {step})" if step is not None else "")


def _str(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what}: expected a string key, got {value!r}")
    return value


def _keys(value: Any, what: str) -> frozenset[Value]:
    if isinstance(value, Mapping):
        value = list(value)
    if not isinstance(value, list):
        raise ValueError(f"{what}: expected a list of keys, got {value!r}")
    return frozenset(_str(v, what) for v in value)


def _bool(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{what}: expected true or false, got {value!r}")
    return value


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what}: expected a non-negative integer, got {value!r}")
    return value


def _as_fn(value: Value) -> Fn:
    assert isinstance(value, Fn)
    return value


def _as_seq(value: Value) -> tuple[Value, ...]:
    assert isinstance(value, tuple)
    return value


# -- the lines ---------------------------------------------------------------------------


def trace_lines(
    rules: Mapping[str, StepRule],
    raws: Sequence[TraceRecord],
    states: Sequence[Mapping[str, Value]],
    initial: Mapping[str, Value],
) -> tuple[TraceLine, ...]:
    """The mapped lines: each code step (``action``) may take the spec steps ``rules``
    give it from the state before; a change of ``generation`` is a reset (a crash)."""
    out: list[TraceLine] = []
    previous = initial
    generation: int | None = None
    for n, (raw, state) in enumerate(zip(raws, states, strict=True), 1):
        gen = raw.get("generation", 0)
        action = raw.get("action", "")
        step = raw.get("step")
        reset = generation is not None and gen != generation
        acts, budget_of = rules.get(action, (frozenset(), lambda s: 0))
        budget = 0 if reset else budget_of(previous)
        out.append(
            TraceLine(
                index=n,
                step=step,
                action=action,
                desc=str(raw.get("desc", "")),
                generation=gen,
                state=state,
                acts=acts if budget else frozenset(),
                budget=budget,
                reset=reset,
            )
        )
        previous, generation = state, gen
    return tuple(out)


_ACTION_NAME = re.compile(r"[^A-Za-z0-9_-]")


def trace_module(mapping: TraceMapping, name: str | None = None) -> tuple[str, str]:
    """``(module text, cfg text)`` of the generated model ``name`` (default
    ``<Spec>TraceRun``): it EXTENDS spec/trace/<Spec>Trace.tla and defines the trace
    (``TraceData``, one record per line) and the model constants."""
    name = name if name is not None else f"{mapping.spec}TraceRun"
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(f"not a TLA+ module name: {name!r}")
    out = [
        f"{'-' * 4} MODULE {name} {'-' * 4}",
        f"(* Generated by refimpl/tla/trace.py from a simulator trace of "
        f"{len(mapping.lines)} lines. *)",
        f"EXTENDS {mapping.spec}Trace",
        "",
    ]
    for def_name, value in mapping.definitions.items():
        out.append(f"{def_name} == {format_value(value)}")
    # Each distinct state once: most code steps leave the mapped state unchanged.
    names: dict[Fn, str] = {}
    out.append("")
    for line in mapping.lines:
        state = mapping.module_state(line.state)
        if state not in names:
            names[state] = f"TraceState{len(names) + 1}"
            out.append(f"{names[state]} == {format_value(state)}")
    out += ["", "TraceData == <<"]
    for line in mapping.lines:
        sep = "," if line.index < len(mapping.lines) else ""
        label = _ACTION_NAME.sub("?", line.action)
        record = line.record(ModelValue(names[mapping.module_state(line.state)]))
        out.append(f"    {format_value(record)}{sep}  \\* {line.index}: step {line.step} {label}")
    out += [">>", "=" * 8, ""]
    cfg = [
        "CONSTANTS",
        *(f"    {s}" for s in mapping.substitutions),
        "",
        "INIT TraceInit",
        "NEXT TraceNext",
        "",
        # ReportLine prints each line reached; NotDone fails once all are, so an
        # accepted trace comes with a witness whose act values are its spec actions.
        # VIEW: act labels the witness, it does not tell states apart.
        "INVARIANT ReportLine",
        "INVARIANT NotDone",
        "VIEW traceVars",
        "",
        "CHECK_DEADLOCK FALSE",
        "",
    ]
    return "\n".join(out), "\n".join(cfg)


# -- running TLC --------------------------------------------------------------------------

_REACHED = re.compile(r'^<<"trace-line", (\d+)>>\s*$', re.MULTILINE)
_WITNESS_ACT = re.compile(r'^/\\ act = "([^"]*)"\s*$', re.MULTILINE)
_DONE = "NotDone"


def witness_actions(output: str) -> dict[str, int]:
    """Spec action -> steps of the witness TLC printed for an accepted trace (each
    state's ``act``; "-" marks a line reached without a spec step, or a restart)."""
    counts: dict[str, int] = {}
    for name in _WITNESS_ACT.findall(output):
        if name != "-":
            counts[name] = counts.get(name, 0) + 1
    return counts


def _least(line: TraceLine) -> int:
    least = line.hints.get("least", 0)
    return least if isinstance(least, int) and not isinstance(least, bool) else 0


def _verdict(mapping: TraceMapping, run: TlcRun) -> TraceResult:
    result = run.result
    reached = [int(m) for m in _REACHED.findall(run.output)]
    total = len(mapping.lines)
    accepted = result.status is Status.INVARIANT_VIOLATED and result.violated == _DONE
    if accepted:
        reached.append(total)
    elif result.status is not Status.PASS or not reached:
        hint = ""
        if "StackOverflowError" in run.output:
            # DeltaFIFO.tla's EnqAll recurses once per delta a relist or resync queues,
            # and TLC's lazy arguments make that a deep Java stack.
            hint = (
                f" (after line {max(reached, default=0)}: a relist or resync this large "
                "needs a bigger Java stack than TLC's default, e.g. java -Xss16m)"
            )
        raise TraceCheckError(
            f"TLC reached no verdict on the {mapping.spec} trace ({result.status.value}"
            + (f", {result.violated}" if result.violated else "")
            + f"){hint}: {result.message or run.output[-2000:]}"
        )
    matched = max(reached)
    failed: FailedStep | None = None
    if matched < total:
        line = mapping.lines[matched]  # the first line not reached: index matched + 1
        failed = FailedStep(
            index=line.index,
            step=line.step,
            action=line.action,
            desc=line.desc,
            acts=line.acts,
            budget=line.budget,
            before=mapping.initial if matched == 0 else mapping.lines[matched - 1].state,
            after=line.state,
            least=_least(line),
        )
    return TraceResult(
        spec=mapping.spec,
        ok=failed is None,
        lines=total,
        steps_checked=matched,
        failed=failed,
        distinct_states=result.distinct_states,
        wall_seconds=run.wall_seconds,
        tlc=result,
        actions=witness_actions(run.output) if accepted else {},
    )


def run_mapping(
    mapping: TraceMapping,
    *,
    spec_dir: Path | None = None,
    timeout: float = 300.0,
    keep: Path | None = None,
    jar: Path | None = None,
    java: Path | None = None,
) -> TraceResult:
    """Write ``mapping`` as a module (into ``keep``, else a temporary folder) and have
    TLC decide it. Raises :class:`~refimpl.tla.runner.TlcUnavailable` without a jar or
    java and :class:`TraceCheckError` when TLC ends without a verdict."""
    spec_dir = spec_dir if spec_dir is not None else default_spec_dir()
    module_text, cfg_text = trace_module(mapping)
    name = f"{mapping.spec}TraceRun"
    with tempfile.TemporaryDirectory(prefix="refimpl-trace-") as tmp:
        folder = keep if keep is not None else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        module, cfg = folder / f"{name}.tla", folder / f"{name}.cfg"
        module.write_text(module_text)
        cfg.write_text(cfg_text)
        try:
            run = run_tlc(
                module,
                cfg,
                workers="1",
                timeout=timeout,
                jar=jar,
                java=java,
                library=[spec_dir, spec_dir / "trace"],
            )
        except subprocess.TimeoutExpired as err:
            raise TraceCheckError(
                f"TLC did not finish the {mapping.spec} trace in {timeout} s"
            ) from err
    return _verdict(mapping, run)
