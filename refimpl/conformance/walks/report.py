"""What a spec walk reports: its coverage, the first deviation, and the verdict.

Owns :class:`Coverage` (edges, states, steps, requests of a run, and its summary
lines), :class:`Deviation` (the first answer the spec does not allow, with the path
that led to it, and how it is described) and :class:`SpecRun` (both, and the
verdict). Filled in by :mod:`refimpl.conformance.walks.walker` and
:mod:`refimpl.conformance.walks.run`.
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

import attrs

from refimpl.conformance.walks.spec_mapping import DrivenEdge

__all__ = ["WIDTH", "Coverage", "Deviation", "Logged", "SpecRun", "error_kind", "shown", "wrapped"]

#: A request sent and the answer it got.
Logged = tuple[dict[str, Any], Any]

#: The columns the report's sentences keep to, as the rest of the command's output does
#: (a terminal's or a CI log's width); the requests and answers of a deviation are JSON
#: lines, shown whole.
WIDTH = 100


def wrapped(text: str, indent: str) -> str:
    """``text`` broken between words into lines of at most :data:`WIDTH` columns, each
    line after the first indented by ``indent``; nothing cut."""
    return textwrap.fill(
        text, WIDTH, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
    )


@attrs.frozen
class Deviation:
    """The first answer the spec does not allow, and the steps that led to it."""

    #: the spec actions from the initial state; the last one got the wrong answer
    path: tuple[str, ...]
    request: dict[str, Any]
    expected: tuple[Any, ...]
    actual: Any
    #: every request since the last reset, with its answer
    log: tuple[Logged, ...]
    #: the steps as the walker took them (for replaying a shorter path)
    steps: tuple[DrivenEdge, ...] = ()
    #: True: ``path`` is a shorter spec path (see walker.Walker.shorten), replayed on a reset
    #: adapter, failing again; False: every shorter path tried passed
    shortened: bool | None = None

    def describe(self, show: int = 40) -> str:
        if self.shortened:
            head = "a shorter path in the spec, replayed after a reset"
        elif self.shortened is False:
            head = "the walk from the initial state (no shorter path tried failed)"
        else:
            head = "the path from the initial state"
        lines = [f"{head} (spec actions; the last one got a wrong answer):"]
        first = max(0, len(self.path) - show)
        if first:
            lines.append(f"  ... {first} earlier steps (all requests: --log FILE)")
        lines += [f"  {i + 1:>4}. {self.path[i]}" for i in range(first, len(self.path))]
        lines.append(f"request: {shown(self.request)}")
        lines.append(f"the spec allows: {' or '.join(shown(e) for e in self.expected)}")
        lines.append(f"the adapter answered: {shown(self.actual)}")
        log = self.log[-2 * show :]
        lines.append(
            "requests since the last reset (> sent, < answered)"
            + (f", the last {len(log)}:" if len(log) < len(self.log) else ":")
        )
        for request, answer in log:
            lines.append(f"  > {shown(request)}")
            lines.append(f"  < {shown(answer)}")
        return "\n".join(lines)


def error_kind(value: Any) -> Any:
    """An observed answer as a request of its own would be compared: an error by its kind."""
    if isinstance(value, dict) and set(value) == {"error"} and isinstance(value["error"], dict):
        return {"error": {"kind": value["error"].get("kind")}}
    return value


def shown(value: Any) -> str:
    """A request or an answer as the report prints it (one line of JSON)."""
    return json.dumps(value, separators=(", ", ": "))


@attrs.define
class Coverage:
    """What a run covered; ``edges`` counts graph edges (a merged step covers two)."""

    model: str
    states: int
    edges: int
    undriven: dict[str, int]
    unreachable: int = 0
    drivable: int = 0
    covered: int = 0
    states_visited: int = 0
    steps: int = 0
    requests: int = 0
    resets: int = 0
    open_order_steps: int = 0
    #: checks answered inside another request (docs/protocol.md, observations)
    observed: int = 0
    seconds: float = 0.0
    #: what the drivable part is called (the mapping's ``fragment``: the informer's is
    #: the eager one, its internal steps taken at once)
    fragment: str = "drivable"
    #: the optional methods the adapter lacks, and the drivable edges with them, where
    #: they would drive more of a graph the walk drives less than half of
    fuller: tuple[tuple[str, ...], int] | None = None

    @property
    def share(self) -> float:
        """The share of the graph's edges driven."""
        return self.covered / self.edges if self.edges else 1.0

    def scope(self) -> str | None:
        """Where the walk drove less than half of the graph's edges, what it covered and
        what the rest needs (for the verdict line); None otherwise."""
        if 2 * self.covered >= self.edges:
            return None
        out = f"on the {self.fragment} fragment: {_percent(self.share)} of the graph's edges"
        if self.fuller is not None:
            methods, drivable = self.fuller
            out += (
                f"; the rest needs {'/'.join(methods)} (which would make "
                f"{_percent(drivable / self.edges)} drivable) and steps the protocol cannot drive"
            )
        else:
            out += "; the rest cannot be driven through the protocol (not driven, below)"
        return out

    def summary(self) -> str:
        """The coverage lines below the verdict, each wrapped to :data:`WIDTH` columns."""
        first, *rest = self._summary_lines()
        return "\n".join([wrapped(first, "  "), *(wrapped(line, "    ") for line in rest)])

    def _summary_lines(self) -> list[str]:
        lines = [
            f"{self.model}: covered {self.covered} of {self.drivable} drivable edges "
            f"({self.edges} in the graph: {_percent(self.share)} of them driven), "
            f"{self.states_visited} of {self.states} states; "
            f"{self.steps} steps in {self.resets + 1} walks, {self.requests} requests, "
            f"{self.seconds:.1f} s",
        ]
        if self.observed:
            lines.append(
                f"  {self.observed} checks were answered inside those requests (observations "
                "carried by a call), not as requests of their own"
            )
        for reason, count in sorted(self.undriven.items()):
            if count:
                lines.append(f"  not driven: {count} edges ({reason})")
        if self.unreachable:
            lines.append(
                f"  not driven: {self.unreachable} edges reachable only through edges "
                "that are not driven"
            )
        if self.open_order_steps:
            lines.append(
                f"  {self.open_order_steps} steps had several allowed answers (an order the "
                "spec leaves open): any answer the spec allows was accepted"
            )
        return lines


def _percent(share: float) -> str:
    """A share as a whole percentage; under 1% is not rounded to 0%."""
    return "under 1%" if 0 < share < 0.005 else f"{share:.0%}"


@attrs.define
class SpecRun:
    coverage: Coverage
    deviation: Deviation | None = None
    refused: str | None = None

    @property
    def ok(self) -> bool:
        return self.deviation is None and self.refused is None

    @property
    def verdict(self) -> str:
        """``pass`` (every drivable edge agreed), ``deviation``, ``not run``, or
        ``inconclusive``: nothing disagreed, but the sweep's tries ran out with drivable
        edges untaken (the adapter's history kept the walk from them), so the run says
        nothing about those."""
        if self.deviation is not None:
            return "deviation"
        if self.refused is not None:
            return "not run"
        return "pass" if self.coverage.covered >= self.coverage.drivable else "inconclusive"

    @property
    def verdict_line(self) -> str:
        """The verdict as ``--from-spec`` prints it: a pass or an inconclusive run on
        less than half of the graph says how much it drove (``verdict`` stays the word
        peers pin)."""
        verdict = self.verdict
        scope = self.coverage.scope() if verdict in ("pass", "inconclusive") else None
        return verdict.upper() + (f" {scope}" if scope else "")

    def verdict_text(self, model: str) -> str:
        """The model's name and :attr:`verdict_line`, wrapped to :data:`WIDTH` columns
        under the verdict."""
        return wrapped(f"{model:<16} {self.verdict_line}", " " * 17)
