"""Replaying a trace on the adapter: :func:`try_trace` (the minimizer's test of an
edited trace), :func:`confirm_replay` (the shrunk trace once more, on a freshly started
adapter) and :func:`replay_file` (``refimpl conform --replay FILE``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TextIO

from refimpl.conformance.process import AdapterFailure
from refimpl.conformance.search.config import (
    EXIT_ADAPTER,
    EXIT_PASS,
    EXIT_USAGE,
    AbortRun,
    AdapterHandshakeError,
    Failure,
    Mismatch,
)
from refimpl.conformance.search.report import (
    SavedTrace,
    format_failure,
    format_table,
    load_inputs,
    load_release,
    load_traces,
    save_findings,
)
from refimpl.conformance.search.session import Example, RunContext, follow_release

__all__ = ["REPRODUCES", "confirm_replay", "replay_file", "try_trace"]


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


#: :func:`confirm_replay`'s line when the shrunk trace fails again the same way.
REPRODUCES = "replay on a fresh adapter: reproduces"


def confirm_replay(ctx: RunContext, failure: Failure) -> str:
    """Re-run the shrunk trace on a freshly started adapter and say if it reproduces:
    it must fail again with the same signature. Done once per finding (kept in
    ``failure.replay``): the triage and the report both read it."""
    if not failure.replay:
        failure.replay = _fresh_replay(ctx, failure)
    return failure.replay


def _fresh_replay(ctx: RunContext, failure: Failure) -> str:
    try:
        ctx.start_adapter()
    except (AdapterFailure, AdapterHandshakeError) as exc:
        return f"replay on a fresh adapter: could not restart it ({exc})"
    example = Example(ctx, failure.component)
    ctx.best = None
    try:
        for step in failure.steps:
            example.exchange(step.request)
    except (Mismatch, AbortRun):
        again = ctx.best
        if again is None or again.signature == failure.signature:
            return REPRODUCES
        return (
            f"replay on a fresh adapter: did NOT reproduce {failure.signature} (it fails as "
            f"{again.signature}; the adapter is not deterministic?)"
        )
    finally:
        ctx.best = failure
    return "replay on a fresh adapter: did NOT reproduce (the adapter is not deterministic?)"


def replay_file(ctx: RunContext, path: str, out: TextIO) -> int:
    """Replay each trace saved at ``path`` (all the findings of a run, or one trace)
    and print its table or its failure report; the exit status."""
    try:
        traces = load_traces(path)
        # The report says which mode found the trace, not the replay's default.
        ctx.config.inputs = load_inputs(path) or ctx.config.inputs
        # ... and the reference follows the release it followed then (--release wins).
        saved = load_release(path)
        if ctx.config.release is None and saved is not None:
            ctx.config.release = saved
            ctx.era = follow_release(ctx.hello, saved)
    except (OSError, ValueError) as exc:
        ctx.err.write(f"refimpl conform: cannot read {path}: {exc}\n")
        return EXIT_USAGE
    except AdapterHandshakeError as exc:
        ctx.err.write(f"refimpl conform: {path} was found with --release {saved}: {exc}\n")
        return EXIT_ADAPTER
    status = EXIT_PASS
    failures: list[Failure] = []
    for number, trace in enumerate(traces, start=1):
        if len(traces) > 1:
            out.write(f"trace {number} of {len(traces)} ({trace.component}):\n")
        failure = _replay_one(ctx, path, trace, out, fresh=number > 1)
        if failure is not None:
            failures.append(failure)
            status = max(status, failure.exit_status)
    if ctx.config.save and failures:
        out.write(save_findings(ctx.config.save, failures, ctx.config) + "\n")
    return status


def _replay_one(
    ctx: RunContext, path: str, trace: SavedTrace, out: TextIO, *, fresh: bool
) -> Failure | None:
    """Replay one saved trace (on a reset adapter if ``fresh``), print its table or its
    failure report, and say when it fails otherwise than the finding it was saved as."""
    ctx.start_component(trace.component, float("inf"))
    example = Example(ctx, trace.component)
    try:
        if fresh:
            ctx.fresh_adapter(trace.component)
        for request in trace.requests:
            example.exchange(request)
    except (Mismatch, AbortRun):
        assert ctx.best is not None
    if ctx.best is None:
        out.write(f"replay of {path}: all {len(trace.requests)} answers agree with the reference\n")
        out.write("\n".join(format_table(example.trace)) + "\n")
        return None
    out.write(format_failure(ctx.best, ctx.config) + "\n")
    if trace.signature is not None and ctx.best.signature != trace.signature:
        out.write(f"  saved as {trace.signature}; this replay fails as {ctx.best.signature}\n")
    return ctx.best
