"""Shrinking a wire run's plan, and plan files (``refimpl conform --wire --save`` /
``--replay``).

A wire finding comes from a plan of server writes and wire faults
(refimpl/conformance/wire/run.py, ``plan``). :func:`shrink_plan` looks for a shorter
plan that still gives the finding's signature: delta debugging over the steps (drop a
chunk, keep the rest if the finding comes back, halve the chunks when no chunk can go),
each candidate one more run against a fresh server and a fresh adapter, within a budget
of seconds. A candidate is first made valid (:func:`valid`): a write of a ConfigMap the
shorter plan never created, or a create of one that exists, is dropped, as the plan
generator never writes them. What a run meets depends on timing, so a kept candidate is
one that gave the finding once; the report says so. Refines no TLA+ module.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from refimpl.wire.faults import FaultError, parse_fault

__all__ = [
    "NAMES",
    "PLAN_HEADER",
    "Shrunk",
    "Step",
    "read_plan",
    "show_step",
    "shrink_plan",
    "valid",
    "write_plan",
]

#: The ConfigMaps a plan writes (namespace "default"): few, so updates and deletes meet them.
NAMES = ("a", "b", "c")
#: The first line of a plan file.
PLAN_HEADER = "wire_plan"

Step = dict[str, Any]


def valid(steps: Sequence[Step]) -> list[Step]:
    """``steps`` without the writes the plan generator would never make: an update or a
    delete of a ConfigMap that does not exist, a create of one that does."""
    present: set[str] = set()
    out: list[Step] = []
    for step in steps:
        if "write" in step:
            name, write = step["name"], step["write"]
            if (write == "create") == (name in present):
                continue
            (present.discard if write == "delete" else present.add)(name)
        out.append(step)
    return out


@attrs.frozen
class Shrunk:
    """What shrinking gave: the plan, the runs tried, and whether it ended by itself."""

    steps: list[Step]
    tries: int
    finished: bool


def shrink_plan(
    steps: Sequence[Step],
    reproduces: Callable[[list[Step]], bool],
    budget: float,
    clock: Callable[[], float] = time.monotonic,
) -> Shrunk:
    """The shortest plan found from ``steps`` for which ``reproduces`` holds, within
    ``budget`` seconds (checked before each try)."""
    current = list(steps)
    deadline = clock() + budget
    tries = 0
    chunks = 2
    while len(current) >= 2:
        size = max(1, len(current) // chunks)
        for start in range(0, len(current), size):
            if clock() >= deadline:
                return Shrunk(current, tries, finished=False)
            candidate = valid(current[:start] + current[start + size :])
            if len(candidate) == len(current):
                continue
            tries += 1
            if reproduces(candidate):
                current = candidate
                chunks = max(chunks - 1, 2)
                break
        else:
            if size == 1:
                break
            chunks = min(chunks * 2, len(current))
    return Shrunk(current, tries, finished=True)


def show_step(step: Step) -> str:
    """One step as the report lists it: ``create a``, ``fault watch_cut target=open``."""
    if "write" in step:
        return f"{step['write']} {step['name']}"
    fault = dict(step["fault"])
    op = fault.pop("op")
    shown = " ".join(
        f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in fault.items()
    )
    return f"fault {op} {shown}".rstrip()


def write_plan(path: str, seed: int, steps: Sequence[Step]) -> None:
    """A plan file: a header line, then one step per line (JSON)."""
    lines = [json.dumps({PLAN_HEADER: 1, "seed": seed})]
    lines += [json.dumps(step) for step in steps]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def read_plan(path: str) -> list[Step]:
    """The steps of a plan file; ValueError says what is wrong with it."""
    lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines() if line]
    try:
        head = json.loads(lines[0]) if lines else None
        steps = [json.loads(line) for line in lines[1:]]
    except ValueError as exc:
        raise ValueError(f"{path}: not JSON lines ({exc})") from None
    if not isinstance(head, dict) or head.get(PLAN_HEADER) != 1:
        raise ValueError(f'{path}: the first line is not a wire plan header {{"{PLAN_HEADER}": 1}}')
    for n, step in enumerate(steps, 2):
        _check_step(step, f"{path}:{n}")
    if valid(steps) != steps:
        raise ValueError(
            f"{path}: a step creates a ConfigMap that exists or writes one that does not"
        )
    return steps


def _check_step(step: Any, where: str) -> None:
    if not isinstance(step, dict) or not isinstance(step.get("pause", 0), (int, float)):
        raise ValueError(f"{where}: not a plan step (an object with a numeric pause)")
    if "fault" in step:
        try:
            parse_fault(step["fault"])
        except FaultError as exc:
            raise ValueError(f"{where}: {exc}") from None
    elif step.get("write") not in ("create", "update", "delete") or step.get("name") not in NAMES:
        raise ValueError(
            f"{where}: a write is create, update or delete of one of {', '.join(NAMES)}"
        )
