"""Running a conformance check: ``refimpl conform`` from the handshake to the report.

:func:`run` starts the adapter, splits the budget over the components it offers, runs
each one's search (:func:`run_component`: Hypothesis drives the generator of
:mod:`~refimpl.conformance.search.machines` or
:mod:`~refimpl.conformance.search.informer_machine`), and prints the summary lines and
the report of every finding, each confirmed on a fresh adapter
(:mod:`~refimpl.conformance.search.replay`).

A component's search collects distinct findings: a Hypothesis search stops at its
first failure, which is shrunk (by Hypothesis, then
:mod:`~refimpl.conformance.search.minimize`) without slipping into another signature;
then a new search starts with the next seed, setting aside every example that fails
with a signature already found, until ``--max-findings``, the budget or
``--max-examples``. Time is bounded twice: generating stops at the search budget,
shrinking each finding at its own budget (the search budget does not pay for it); a
hung adapter ends the run at once (its trace is reported unshrunk).
"""

from __future__ import annotations

import contextlib
import io
import random
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
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
    Failure,
    HarnessError,
)
from refimpl.conformance.search.minimize import minimize
from refimpl.conformance.search.outcome import write_json
from refimpl.conformance.search.replay import confirm_replay, replay_file
from refimpl.conformance.search.report import finding_header, format_failure, save_findings
from refimpl.conformance.search.session import RunContext
from refimpl.conformance.search.triage import triage_result

__all__ = ["SEED_STRIDE", "Search", "report_findings", "run", "run_component", "summary_line"]


#: The seed of a component's n-th search is the run's seed + n * SEED_STRIDE (n from
#: 0), so a run that reports several findings is reproducible from the seed it prints.
SEED_STRIDE = 1_000_003
#: A finding's ``shrink_note`` by how the search that found it ended.
SHRINK_NOTES = {
    "budget": "shrinking stopped at the shrink budget",
    "aborted": "not shrunk (the run was aborted)",
}


@dataclass
class Search:
    """How one Hypothesis search ended: ``done`` (it ran its course), ``budget``
    (the search or shrink budget), ``aborted`` or ``failed`` (``error``), and the
    failure it found and shrank, if any."""

    outcome: str
    failure: Failure | None
    error: Exception | None = None


def _settings(config: Config, max_examples: int) -> Any:
    """Hypothesis' settings for a search: no database, no deadline, quiet."""
    from hypothesis import HealthCheck, Phase, Verbosity, settings

    hypothesis_shrinks = config.shrink and not config.quick_shrink
    phases = (Phase.generate, Phase.shrink) if hypothesis_shrinks else (Phase.generate,)
    return settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        derandomize=False,
        phases=phases,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
    )


@contextlib.contextmanager
def _only_hypothesis_constants() -> Iterator[None]:
    """A search that draws no constants from the process's own modules.

    Hypothesis (6.1xx) now and then draws a constant found in the source of the
    "local" modules the process has imported (outside site-packages and tests). So
    which refimpl modules happened to be loaded, whether refimpl is a wheel or a clone,
    and any literal edited anywhere in refimpl changed what a seed generated. Within a
    search only Hypothesis's built-in constants are drawn; a Hypothesis without that
    machinery is left as it is."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - a Hypothesis with another layout
        yield
        return
    local = getattr(providers, "_get_local_constants", None)
    cache = getattr(getattr(providers, "CONSTANTS_CACHE", None), "cache", None)
    if local is None or not isinstance(cache, dict):
        yield
        return
    none = providers.Constants()  # type: ignore[attr-defined]
    # The cache holds the constants each kind of draw may take, local ones included.
    cache.clear()
    providers._get_local_constants = lambda: none
    try:
        yield
    finally:
        providers._get_local_constants = local
        cache.clear()


def _machine(ctx: RunContext, component: str, caps: dict[str, Any]) -> Any:
    """The generator class of ``component``'s examples."""
    from refimpl.conformance.search.informer_machine import make_informer_machine
    from refimpl.conformance.search.machines import make_machine

    methods = frozenset(
        m
        for m in caps.get("methods", [])
        if m in COMPONENTS[component] and m not in ctx.config.skip
    )
    if component == "informer":
        return make_informer_machine(ctx, methods, caps)
    return make_machine(
        ctx, component, methods, caps, misuse=ctx.config.misuse, pinned=ctx.config.options
    )


def _search(ctx: RunContext, machine: Any, n: int) -> Search:
    """The component's ``n``-th Hypothesis search (seed: see :data:`SEED_STRIDE`), over
    the examples ``--max-examples`` leaves: until its first finding not yet made,
    shrunk by Hypothesis, or until the budget or the examples run out."""
    from hypothesis import seed
    from hypothesis.reporting import with_reporter

    from refimpl.conformance.search.generation import as_test

    assert ctx.config.seed is not None
    ctx.best, ctx.shrink_deadline = None, float("inf")
    settings = _settings(ctx.config, max(ctx.config.max_examples - ctx.generated, 1))
    test = as_test(machine, ctx.config.steps)
    seeded = seed(ctx.config.seed + n * SEED_STRIDE)(settings(test))
    sink = io.StringIO()
    try:
        with (
            with_reporter(lambda _msg: None),
            contextlib.redirect_stdout(sink),
            _only_hypothesis_constants(),
        ):
            seeded()
    except BudgetExhausted:
        return Search("budget", ctx.best)
    except AbortRun:
        return Search("aborted", ctx.best)
    except Exception as exc:
        # A failing example's details are in ctx.best (Hypothesis' own report is not
        # used); without one, this is a harness or Hypothesis error.
        return Search("failed", ctx.best, exc)
    return Search("done", ctx.best)


def _finish(ctx: RunContext, failure: Failure, outcome: str, since: float) -> Failure:
    """A finding made: minimized (unless the run was aborted or ``--no-shrink``),
    noted, marked known if ``--known`` names its signature, and set aside from now on
    (with the signature it had before shrinking, if that was another). The time spent
    on it since ``since`` is shrinking time: the search budget is extended by it."""
    first = failure.signature
    if outcome != "aborted" and ctx.config.shrink:
        failure = minimize(ctx, failure)
    failure.shrink_note = SHRINK_NOTES.get(outcome, "")
    failure.known = ctx.config.known.get(failure.signature)
    spent = time.monotonic() - since
    ctx.shrinking_spent += spent
    ctx.deadline += spent
    for signature in (first, failure.signature):
        ctx.found.add(signature)
        ctx.pending.pop(signature, None)
    return failure


def _new_findings(result: ComponentResult) -> int:
    """The findings ``--max-findings`` counts: those ``--known`` does not acknowledge (a
    peer with many acknowledged findings still gets its search for new ones)."""
    return sum(1 for f in result.findings if f.known is None)


def _enough(ctx: RunContext, result: ComponentResult, search: Search) -> bool:
    """No further search: the run was aborted, or the findings, examples or search
    budget are used up."""
    return (
        search.outcome == "aborted"
        or _new_findings(result) >= ctx.config.max_findings
        or ctx.generated >= ctx.config.max_examples
        or time.monotonic() > ctx.deadline
    )


def _collect(ctx: RunContext, machine: Any, result: ComponentResult) -> Search:
    """Search again after each finding, each search setting aside the findings made
    before it, until one finds nothing or :func:`_enough`; then shrink the failures seen
    only while shrinking another finding (``ctx.pending``). The last search."""
    n = 0
    while True:
        search = _search(ctx, machine, n)
        n += 1
        if search.failure is None:
            if search.error is not None:
                raise HarnessError(
                    f"the search for {result.component} stopped with "
                    f"{type(search.error).__name__}: {search.error}"
                ) from search.error
            break
        if not ctx.already_found(search.failure):
            finding = _finish(ctx, search.failure, search.outcome, ctx.best_at)
            _add_finding(result, finding)
        if _enough(ctx, result, search):
            break
    while search.outcome != "aborted" and ctx.pending:
        if _new_findings(result) >= ctx.config.max_findings:
            break
        failure = ctx.pending.pop(next(iter(ctx.pending)))
        if ctx.already_found(failure):
            continue  # told by a finding made since it was set aside
        _add_finding(result, _finish(ctx, failure, "done", time.monotonic()))
    return search


def _add_finding(result: ComponentResult, finding: Failure) -> None:
    """Keep ``finding`` unless shrinking made it one the run already has (the same
    signature): a finding is reported once."""
    if all(f.signature != finding.signature for f in result.findings):
        result.findings.append(finding)


def run_component(ctx: RunContext, component: str, budget: float) -> ComponentResult:
    """Search ``component`` for up to ``--max-findings`` distinct findings (by
    :attr:`~Failure.signature`), each shrunk on its own, within the budget and
    ``--max-examples``. Hypothesis and the generators are imported only here, so a
    replay or a usage error does not pay for loading them."""
    from refimpl.conformance.search.machines import untested

    caps = ctx.hello["components"][component]
    ctx.start_component(component, budget)
    machine = _machine(ctx, component, caps)
    result = ComponentResult(component, "pass")
    result.untested = untested(component, caps, skipped=ctx.config.skip, pinned=ctx.config.options)
    last = _collect(ctx, machine, result)
    ctx.progress(final=True)
    result.examples, result.steps = ctx.examples, ctx.steps
    result.elapsed = time.monotonic() - ctx._component_started
    if result.findings:
        result.failure = result.findings[0]
        adapter = any(f.kind == "adapter" for f in result.findings)
        result.status = "adapter failure" if adapter else "fail"
        result.note = result.failure.shrink_note
    elif last.outcome == "budget":
        # A search cut short by the clock is no statement about the examples it did not
        # reach: say so, so a pinned verdict (refimpl peers) can call it inconclusive.
        result.note = f"{BUDGET_ENDED} {ctx.config.max_examples}"
    return result


def _saved(config: Config, findings: list[Failure]) -> str:
    """Save the findings (``--save``); a file that cannot be written after all (its
    folder was checked at the start) is said, and the report above still stands."""
    assert config.save is not None
    try:
        return save_findings(config.save, findings, config)
    except OSError as exc:
        return f"  could not save to {config.save}: {exc.strerror or exc}"


def report_findings(ctx: RunContext, result: ComponentResult, out: TextIO) -> int:
    """Print each finding of ``result`` under a header naming its number and signature,
    with its replay on a fresh adapter; the exit status they call for."""
    status = EXIT_PASS
    for n, finding in enumerate(result.findings, start=1):
        out.write(finding_header(finding, n, len(result.findings)) + "\n")
        out.write(format_failure(finding, ctx.config) + "\n")
        if not isinstance(finding.adapter_error, AdapterHung):
            out.write("  " + confirm_replay(ctx, finding) + "\n")
        status = max(status, finding.exit_status)
    return status


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
        searched = 0.0  # seconds of search so far: shrinking does not use up the budget
        findings: list[Failure] = []
        results: list[ComponentResult] = []
        for index, component in enumerate(runnable):
            remaining = config.budget - searched
            budget = max(remaining / (len(runnable) - index), 0.5)
            result = run_component(ctx, component, budget)
            searched += result.elapsed - ctx.shrinking_spent
            # A signal during the search may have ended it early: no verdict from that.
            check_interrupted()
            triage_result(ctx, result)  # known notes, client-go labels (--client-go)
            results.append(result)
            out.write(summary_line(result) + "\n")
            for left_out in result.untested:
                out.write(f"  {component}: not tested: {left_out}\n")
            status = max(status, report_findings(ctx, result, out))
            findings += result.findings
            if result.findings and not config.keep_going:
                break
        if config.save and findings:
            out.write(_saved(config, findings) + "\n")
        try:
            write_json(config, hello, results, status)
        except OSError as exc:  # checked at the start; a full disk, say: the report stands
            err.write(f"refimpl conform: could not write {config.json}: {exc.strerror or exc}\n")
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
    if result.findings:
        count = len(result.findings)
        known = sum(1 for f in result.findings if f.known is not None)
        lengths = ", ".join(str(len(f.steps)) for f in result.findings)
        text += f"; {count} finding{'s' if count > 1 else ''}"
        text += f" ({known} known)" if known else ""
        text += f", shrunk to {lengths} operations"
    if result.note:
        text += f" [{result.note}]"
    return text
