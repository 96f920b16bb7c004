"""Running a conformance check: ``refimpl conform`` from the handshake to the report.

:func:`run` starts the adapter, splits the budget over the components it offers, runs
each one's search (:func:`run_component`: Hypothesis drives the generator of
:mod:`~refimpl.conformance.search.machines` or
:mod:`~refimpl.conformance.search.informer_machine`), has a failure minimized
(:mod:`~refimpl.conformance.search.minimize`) and confirmed on a fresh adapter
(:mod:`~refimpl.conformance.search.replay`), and prints the summary lines and the
report. Time is bounded twice: generating stops at the run's budget, shrinking a failure
stops at its own budget; a hung adapter ends the run at once (its trace is reported
unshrunk).
"""

from __future__ import annotations

import contextlib
import io
import random
import sys
import time
from typing import Any, TextIO

from refimpl.conformance.interrupt import check as check_interrupted
from refimpl.conformance.process import AdapterFailure, AdapterHung
from refimpl.conformance.protocol import COMPONENTS
from refimpl.conformance.search.config import (
    BUDGET_ENDED,
    EXIT_ADAPTER,
    EXIT_PASS,
    EXIT_USAGE,
    AbortRun,
    AdapterHandshakeError,
    BudgetExhausted,
    ComponentResult,
    Config,
    HarnessError,
)
from refimpl.conformance.search.minimize import minimize
from refimpl.conformance.search.outcome import write_json
from refimpl.conformance.search.replay import confirm_replay, replay_file
from refimpl.conformance.search.report import format_failure
from refimpl.conformance.search.session import RunContext
from refimpl.conformance.search.triage import triage_result

__all__ = ["run", "run_component", "summary_line"]


def _settings(config: Config) -> Any:
    """Hypothesis' settings for a search: no database, no deadline, quiet."""
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
    """Search ``component`` until a failure, the budget or ``--max-examples``; minimize
    a failure found. Hypothesis and the generators are imported only here, so a replay
    or a usage error does not pay for loading them."""
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
            err.write(f"refimpl conform: the adapter failed to start: {exc.describe()}\n")
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
            err.write("refimpl conform: nothing to test\n")
            return EXIT_USAGE
        status = EXIT_PASS
        started = time.monotonic()
        results: list[ComponentResult] = []
        for index, component in enumerate(runnable):
            remaining = config.budget - (time.monotonic() - started)
            budget = max(remaining / (len(runnable) - index), 0.5)
            result = run_component(ctx, component, budget)
            # A signal during the search may have ended it early: no verdict from that.
            check_interrupted()
            triage_result(ctx, result)  # known notes, client-go labels (--client-go)
            results.append(result)
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
        write_json(config, hello, results, status)
        out.flush()
        return status
    finally:
        ctx.close()


def summary_line(result: ComponentResult) -> str:
    """The one line a component's result gets in the summary."""
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
