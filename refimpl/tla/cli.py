"""``refimpl spec``: check the TLA+ models and regenerate their state graphs.

``refimpl spec list`` shows the manifest; ``replay [MODEL...]`` replays the code over
the committed state graphs (no TLC needed); ``trace`` checks a simulator trace against
a spec with TLC (refimpl/tla/trace.py); ``check [MODEL...]`` runs TLC on each model
(none named: every model not marked ``"default": false``) and prints a table (exit 1
when any outcome is unexpected; an expected-failure model passes only when TLC finds
its violation); ``export [MODEL...]`` rewrites spec/graphs/<Model>.json.gz from TLC's
state-graph dump; ``coverage [MODEL...]`` reports which actions each main model takes
and whether each property's antecedent is reachable (refimpl/tla/coverage.py; ``--tlc``
measures it again); ``trace-coverage`` counts the seeds whose simulator runs reach the
rare relists, steered and not, and with ``--spec`` the spec actions trace validation's
witnesses take (refimpl/tla/trace_coverage.py). ``check``, ``export`` and ``trace`` need
``TLA2TOOLS_JAR`` and java (exit 5 / 6 when missing); the exit statuses are
refimpl.usage's, as in every command.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from refimpl.textable import table
from refimpl.tla import coverage as cov
from refimpl.tla import trace as trace_module
from refimpl.tla import trace_coverage
from refimpl.tla.graph import load_graph, parse_dot, spec_files, spec_hash, write_graph
from refimpl.tla.manifest import (
    Model,
    check_outcome,
    default_spec_dir,
    load_manifest,
    save_manifest,
)
from refimpl.tla.mappings import mapping_for
from refimpl.tla.replay import replay
from refimpl.tla.runner import TlcRun, TlcUnavailable, find_jar, find_java, refused, run_tlc
from refimpl.usage import EXIT_NOT_RUN, UsageError, check_at_least

__all__ = ["by_default", "check", "export", "register", "select"]


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "spec",
        help="list, replay, model-check and trace-check the TLA+ specs",
        description=(
            "The TLA+ models listed in spec/models.json: list them, replay the code over "
            "their committed state graphs, model-check them with TLC, export their graphs, "
            "check a simulator trace against a spec. check, export and trace run TLC: they "
            "need TLA2TOOLS_JAR (path to tla2tools.jar) and java, and exit 5 without the "
            "jar, 6 without java; list and replay need neither."
        ),
    )
    common, tlc = _shared_options()
    sub = parser.add_subparsers(dest="spec_command", metavar="ACTION", required=True)
    _add_list_check_export(sub, common, tlc)
    _add_coverage(sub, common)
    p_replay = sub.add_parser(
        "replay",
        parents=[common],
        help="replay the code over the committed state graphs (no TLC needed)",
        description=(
            "For each model with a committed graph: check the graph is current (its spec "
            "hash), rebuild the code in every state through the model's refinement "
            "mapping, make every code move, and compare with the graph's edges."
        ),
    )
    p_replay.add_argument("models", nargs="*", metavar="MODEL", help="default: all with graphs")
    p_replay.add_argument(
        "--show",
        type=int,
        default=5,
        metavar="N",
        help="mismatches to print per model, 0 or more (default 5)",
    )
    p_replay.set_defaults(func=_missing_files_exit_2(_run_replay))
    p_trace = sub.add_parser(
        "trace",
        help="check a simulator trace (a file or a fresh run) against a spec with TLC",
        description=(
            "Trace validation: map a simulator trace to a spec's variables, write it as a "
            "TLA+ module (spec/trace/<Spec>Trace.tla) and have TLC decide whether some "
            "behaviour of the spec passes through every line. Exit 0 accepted, 1 "
            "rejected (the first line no behaviour reaches is printed), 2 a trace that "
            "does not map, 3 a usage error, 5 / 6 no jar / no java."
        ),
    )
    trace_module.add_arguments(p_trace)
    p_trace.set_defaults(func=functools.partial(_run_trace, p_trace))
    p_tcov = sub.add_parser(
        "trace-coverage",
        help="rare paths reached across seeds; with --spec, the witnesses' spec actions",
        description=(
            "Run seeds 1..N of a simulator scenario with its generator steered toward the "
            "rare relists (refimpl/sim/rare.py) and without, and count the seeds reaching "
            "each. With --spec, check each steered trace against the spec with TLC "
            "(needs TLA2TOOLS_JAR) and count the spec actions of its witness."
        ),
    )
    trace_coverage.add_arguments(p_tcov)
    p_tcov.set_defaults(func=trace_coverage.run_command)


def _shared_options() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The option parents: ``--spec-dir`` (every action), ``--workers`` (TLC's)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--spec-dir",
        type=Path,
        default=None,
        help=(
            "folder with models.json, the .tla/.cfg files and graphs/ (default: ./spec if "
            "it holds models.json, else the spec/ installed with refimpl)"
        ),
    )
    tlc = argparse.ArgumentParser(add_help=False)
    tlc.add_argument(
        "--workers",
        default="1",
        type=_workers,
        help=(
            "TLC worker threads (default 1: the manifest's figures are those of one "
            "worker's breadth-first search; with more, only pass models' state counts "
            "are compared)"
        ),
    )
    return common, tlc


def _add_list_check_export(
    sub: Any, common: argparse.ArgumentParser, tlc: argparse.ArgumentParser
) -> None:
    p_list = sub.add_parser(
        "list",
        parents=[common],
        help="list the models of the manifest",
        description=(
            "List the models of spec/models.json: what each is expected to do (pass, or "
            "violate a named property), its recorded states and depth, and what it checks. "
            "Needs no TLC."
        ),
    )
    p_list.set_defaults(func=_missing_files_exit_2(_run_list))
    p_check = sub.add_parser(
        "check",
        parents=[common, tlc],
        help="run TLC on models and compare with the manifest",
        description=(
            "Run TLC on each model and compare its outcome, states and depth with the "
            "manifest: a pass model must pass, an expected-failure model must violate its "
            "property. Exit 1 when any outcome is unexpected."
        ),
    )
    p_check.add_argument(
        "models",
        nargs="*",
        metavar="MODEL",
        help='default: every model but those marked "default": false (larger ones)',
    )
    p_check.add_argument(
        "--record",
        action="store_true",
        help="write the measured states/depth/seconds into spec/models.json",
    )
    p_check.add_argument("-v", "--verbose", action="store_true", help="print TLC's output")
    p_check.set_defaults(func=_missing_files_exit_2(_run_check))
    p_export = sub.add_parser(
        "export",
        parents=[common, tlc],
        help="regenerate spec/graphs/*.json.gz",
        description=(
            "Run TLC on each model with a graph entry and write its state graph "
            "(spec/graphs/<Model>.json.gz), stamped with the hash of the spec files it "
            "came from. A model TLC does not pass gets no graph (exit 1)."
        ),
    )
    p_export.add_argument("models", nargs="*", metavar="MODEL", help="default: all with graphs")
    p_export.set_defaults(func=_missing_files_exit_2(_run_export))


def _run_trace(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    return trace_module.run_command(args, parser)


def _workers(text: str) -> str:
    """``--workers``: a positive count of TLC worker threads, or ``auto``."""
    if text.strip() != "auto" and not (text.strip().isdigit() and int(text) > 0):
        raise argparse.ArgumentTypeError(f"a positive number or 'auto', not {text!r}")
    return text.strip()


def select(models: list[Model], names: list[str]) -> list[Model]:
    """The named models (all when ``names`` is empty); ValueError on an unknown name."""
    if not names:
        return models
    by_name = {m.name: m for m in models}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(f"no model {', '.join(unknown)} (models: {', '.join(by_name) or 'none'})")
    return [by_name[n] for n in names]


def by_default(models: list[Model]) -> list[Model]:
    """The models ``refimpl spec check`` runs when none is named."""
    return [m for m in models if m.default]


def check(spec_dir: Path, model: Model, workers: str = "1") -> tuple[TlcRun, list[str]]:
    """Run one model; returns the run and the list of unexpected findings.

    With one worker (the default) TLC's search is breadth-first in a fixed order and
    every figure repeats; with more, only a pass model's distinct-state count is
    compared (see :func:`refimpl.tla.manifest.check_outcome`).
    """
    run = run_tlc(
        spec_dir / model.module, spec_dir / model.cfg, workers=workers, library=[spec_dir]
    )
    return run, check_outcome(model, run.result, exact=workers.strip() == "1")


def export(
    spec_dir: Path, model: Model, workers: str = "1", out: Path | None = None
) -> tuple[TlcRun, int, int]:
    """Regenerate ``model``'s graph (at ``out`` if given, else where the manifest says);
    returns the run and the numbers of states and edges written.

    Raises ValueError when the model has no graph entry or TLC did not pass (a dump
    cut short by a violation is not the reachable graph).
    """
    if not model.graph:
        raise ValueError(f"model {model.name} has no graph in the manifest")
    module, cfg = spec_dir / model.module, spec_dir / model.cfg
    run = run_tlc(module, cfg, workers=workers, dump_dot=True, library=[spec_dir])
    if not run.result.ok or run.dot is None:
        raise ValueError(
            f"model {model.name}: TLC reported {run.result.status.value}; graph not written"
        )
    graph = parse_dot(run.dot)
    files = spec_files(module, cfg, library=[spec_dir])
    graph = attrs.evolve(
        graph,
        spec_hash=spec_hash(files),
        spec_files=tuple(os.path.relpath(p, spec_dir) for p in files),
    )
    write_graph(graph, out if out is not None else spec_dir / model.graph)
    return run, len(graph.states), len(graph.edges)


def _expected(model: Model) -> str:
    return "pass" if model.expect == "pass" else f"violates {model.property}"


def _missing_files_exit_2(
    run: Callable[[argparse.Namespace], int],
) -> Callable[[argparse.Namespace], int]:
    """Report a missing manifest, module or graph in one line (exit 2), not a traceback."""

    @functools.wraps(run)
    def guarded(args: argparse.Namespace) -> int:
        try:
            return run(args)
        except FileNotFoundError as exc:
            print(f"refimpl spec: {exc}", file=sys.stderr)
            return EXIT_NOT_RUN

    return guarded


def _chosen(chooser: Callable[[], list[Model]]) -> list[Model]:
    """The models the command line names; an unknown one is a usage error."""
    try:
        return chooser()
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _models(args: argparse.Namespace) -> tuple[Path, list[Model]]:
    if args.spec_dir is not None and args.spec_dir.exists() and not args.spec_dir.is_dir():
        raise UsageError(f"--spec-dir {args.spec_dir} is a file, not a folder")
    if args.spec_dir is not None and not args.spec_dir.exists():
        # named on the command line: a usage error (exit 3), not a spec file missing (2)
        raise UsageError(f"--spec-dir {args.spec_dir}: no such folder")
    spec_dir = args.spec_dir if args.spec_dir is not None else default_spec_dir()
    return spec_dir, load_manifest(spec_dir)


def _require_tlc() -> None:
    find_java()
    find_jar()


def _run_list(args: argparse.Namespace) -> int:
    _, models = _models(args)
    rows = [
        (
            m.name,
            _expected(m) + ("" if m.default else " (only when named)"),
            f"{m.distinct_states or '?'}/{m.depth or '?'}",
            m.about,
        )
        for m in models
    ]
    # States and depth share a column: with the longest model and property names (never
    # split) the table then still fits 100 columns.
    print(table(("model", "expected", "states/depth", "about"), rows))
    return 0


def _run_check(args: argparse.Namespace) -> int:
    spec_dir, models = _models(args)
    chosen = _chosen(
        lambda: select(models, list(args.models)) if args.models else by_default(models)
    )
    if args.record and args.workers != "1":
        raise UsageError("--record needs --workers 1 (with more, TLC's depth varies)")
    try:
        _require_tlc()
    except TlcUnavailable as exc:
        return refused(exc, "refimpl spec: ")
    rows: list[tuple[str, ...]] = []
    failed = 0
    recorded = {m.name: m for m in models}
    for model in chosen:
        run, problems = check(spec_dir, model, args.workers)
        res = run.result
        if args.verbose:
            print(run.output)
        # The violated property is named when it is not the one the manifest expects
        # (the expected column names that one already).
        expected_named = model.property is not None and res.names_violated(model.property)
        outcome = res.status.value + (
            f" {res.violated}" if res.violated and not expected_named else ""
        )
        rows.append(
            (
                model.name,
                _expected(model),
                outcome,
                str(res.distinct_states if res.distinct_states is not None else "?"),
                str(res.depth if res.depth is not None else "?"),
                f"{run.wall_seconds:.1f}s",
                "OK" if not problems else "FAIL: " + "; ".join(problems),
            )
        )
        failed += bool(problems)
        passed = model.expect == "pass" and res.ok
        named = model.property is not None and res.names_violated(model.property)
        if args.record and (passed or named):
            recorded[model.name] = attrs.evolve(
                model,
                distinct_states=res.distinct_states,
                depth=res.depth,
                seconds=round(run.wall_seconds, 1),
            )
    headers = ("model", "expected", "TLC says", "states", "depth", "time", "ok")
    print(table(headers, rows))
    if args.record:
        save_manifest(spec_dir, [recorded[m.name] for m in models])
    print(f"\n{len(rows) - failed}/{len(rows)} models as expected")
    return 1 if failed else 0


def _graphed(models: list[Model], names: list[str]) -> list[Model]:
    """The named models, or every model with a committed graph when none is named."""
    return select(models, names) if names else [m for m in models if m.graph]


def _run_replay(args: argparse.Namespace) -> int:
    spec_dir, models = _models(args)
    check_at_least("--show", args.show, 0)
    chosen = _chosen(lambda: _graphed(models, list(args.models)))
    missing = [m.name for m in chosen if not m.graph]
    if missing:
        raise UsageError(f"no committed graph for {', '.join(missing)}")
    rows: list[tuple[str, ...]] = []
    notes: list[str] = []
    failed = 0
    for model in chosen:
        assert model.graph is not None
        start = time.perf_counter()
        graph = load_graph(spec_dir / model.graph)
        files = spec_files(spec_dir / model.module, spec_dir / model.cfg, library=[spec_dir])
        stale = graph.spec_hash != spec_hash(files)
        report = replay(
            graph,
            mapping_for(model.name, spec_dir / model.module),
            max_mismatches=max(args.show, 1),
        )
        seconds = time.perf_counter() - start
        verdict = "OK" if report.ok and not stale else "FAIL"
        if stale:
            verdict += " (stale graph)"
            notes.append(f"{model.name}: stale graph: run 'refimpl spec export {model.name}'")
        failed += verdict != "OK"
        rows.append(
            (
                model.name,
                str(report.states),
                str(report.edges),
                str(report.stutters),
                str(len(report.mismatches)) + ("" if report.complete else "+"),
                f"{seconds:.1f}s",
                verdict,
            )
        )
        print(f"{model.name}: {report.summary()} in {seconds:.1f}s", file=sys.stderr)
        for line in report.mismatches[: args.show]:
            print(f"  {line}", file=sys.stderr)
    headers = ("model", "states", "edges", "code stutters", "mismatches", "time", "ok")
    print(table(headers, rows))
    for note in notes:
        print(note)
    print(f"\n{len(rows) - failed}/{len(rows)} graphs replayed without a mismatch")
    return 1 if failed else 0


def _run_export(args: argparse.Namespace) -> int:
    spec_dir, models = _models(args)
    chosen = _chosen(lambda: _graphed(models, list(args.models)))
    try:
        _require_tlc()
    except TlcUnavailable as exc:
        return refused(exc, "refimpl spec: ")
    failed = 0
    for model in chosen:
        try:
            run, states, edges = export(spec_dir, model, args.workers)
        except ValueError as exc:
            print(f"refimpl spec: {exc}", file=sys.stderr)
            failed += 1
            continue
        print(f"{model.graph}: {states} states, {edges} edges ({run.wall_seconds:.1f}s)")
    return 1 if failed else 0


def _add_coverage(sub: Any, common: argparse.ArgumentParser) -> None:
    p_cov = sub.add_parser(
        "coverage",
        parents=[common],
        help="which actions each main model takes; each property's antecedent reachable",
        description=(
            "For each main model (expected to pass, checked by default): the actions of "
            "Next it takes (TLC's -coverage counts, recorded in spec/models.json), the "
            "ones its constants never enable, and for each checked property how many "
            "states or steps reach its antecedent. Without --tlc the record is checked "
            "against the committed graphs (no TLC needed); exit 1 on an action never "
            "taken, an antecedent never reached, or a record that differs."
        ),
    )
    p_cov.add_argument("models", nargs="*", metavar="MODEL", help="default: every main model")
    p_cov.add_argument(
        "--tlc", action="store_true", help="measure again with TLC (-coverage, one worker)"
    )
    p_cov.add_argument("--record", action="store_true", help="--tlc: write into models.json")
    p_cov.add_argument(
        "--markdown", action="store_true", help="print the tables as docs/07 publishes them"
    )
    p_cov.set_defaults(func=_missing_files_exit_2(_run_coverage))


def _measured(spec_dir: Path, model: Model, tlc: bool) -> tuple[Model, list[str]]:
    """``model`` as measured now (TLC, or for a graphed model its committed graph) and
    how that differs from its record."""
    if tlc:
        run, now = cov.measure(spec_dir, model)
        print(f"{model.name}: TLC {run.wall_seconds:.1f}s", file=sys.stderr)
        if now.distinct_states != run.result.distinct_states:
            now = attrs.evolve(now, distinct_states=run.result.distinct_states)
    elif model.graph:
        graph = load_graph(spec_dir / model.graph)
        counts = cov.antecedent_counts(spec_dir, model, graph)
        now = attrs.evolve(model, antecedents={a.prop: [a.count, a.of] for a in counts})
        taken = set(cov.graph_actions(graph))
        recorded = {n for n, (_, g) in (model.actions or {}).items() if g > 0}
        if model.actions is not None and taken != recorded:
            return now, [f"{model.name}: the graph takes {sorted(taken ^ recorded)} otherwise"]
    else:
        return model, []
    diffs = [
        f"{model.name}: {field} recorded {getattr(model, field)}, measured {getattr(now, field)}"
        for field in ("actions", "antecedents", "distinct_states")
        if getattr(model, field) is not None and getattr(model, field) != getattr(now, field)
    ]
    return now, diffs


def _run_coverage(args: argparse.Namespace) -> int:
    spec_dir, models = _models(args)
    mains = cov.main_models(models)
    chosen = _chosen(lambda: select(mains, list(args.models)) if args.models else mains)
    if args.record and not args.tlc:
        raise UsageError("--record needs --tlc")
    if args.tlc:
        try:
            _require_tlc()
        except TlcUnavailable as exc:
            return refused(exc, "refimpl spec: ")
    found: list[str] = []
    differs: list[str] = []  # what --record writes over
    measured: dict[str, Model] = {}
    for model in chosen:
        now, diffs = _measured(spec_dir, model, args.tlc)
        measured[model.name] = now
        differs += diffs
        found += cov.problems(now)
    shown = [measured[m.name] for m in chosen]
    if args.markdown:
        print(cov.markdown(cov.SUMMARY_HEADERS, cov.summary_rows(shown)) + "\n")
        print(cov.markdown(cov.ANTECEDENT_HEADERS, cov.antecedent_rows(shown)))
    else:
        print(table(cov.SUMMARY_HEADERS, cov.summary_rows(shown)))
        actions, antecedents = cov.action_rows(shown), cov.antecedent_rows(shown)
        if args.models and actions and antecedents:
            print()
            print(table(("model", "action", "states found", "generated"), actions))
            print()
            print(table(cov.ANTECEDENT_HEADERS, antecedents))
    if args.record:
        save_manifest(spec_dir, [measured.get(m.name, m) for m in models])
    for line in differs + found:
        print(line)
    return 1 if found or (differs and not args.record) else 0
