"""Checking peers: toolchains, build, ``hello``, seeded checks, pinned traces and walks.

:func:`run_peers` runs the peers named (default: every ``adapters/*/peer.json``), each
through :func:`run_peer` (the steps of :mod:`refimpl.conformance.peers.run`'s docstring),
keeps what they observed in docs/peers.json and renders docs/peers.md
(:mod:`refimpl.conformance.peers.render`). A check and a trace replay run as
``refimpl conform`` processes, the command docs/peers.md shows plus ``--no-progress``;
a check adds ``--json`` (its results: every finding's signature, known note and
client-go label), ``--known`` for each finding the manifest acknowledges and
``--client-go`` (client-go's adapter, built first: :func:`run_peers`). A trace replay's
verdict is read from its report (:func:`verdict_of`).
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from refimpl.conformance.peers.manifest import (
    MANIFEST,
    REFERENCE_ADAPTER,
    REFIMPL,
    Check,
    Manifest,
    ManifestError,
    check_command,
    check_key,
    discover,
    load_manifest,
    relative,
    trace_commands,
    trace_header,
)
from refimpl.conformance.peers.render import DOC, OBSERVATIONS, load_observations, render
from refimpl.conformance.peers.walks import walk_peer
from refimpl.conformance.protocol import COMPONENTS
from refimpl.conformance.search.config import BUDGET_ENDED, Config
from refimpl.conformance.search.session import RunContext
from refimpl.conformance.search.triage import CLIENT_GO_ADAPTER
from refimpl.conformance.walks.models import SPEC_MAPPINGS
from refimpl.conformance.wire.run import MAX_QUIESCENCE
from refimpl.usage import EXIT_INCONCLUSIVE

__all__ = [
    "PeerRun",
    "Say",
    "executable",
    "hello",
    "run_check",
    "run_peer",
    "run_peers",
    "run_trace",
    "verdict_of",
]

#: Lines of a failed build's output quoted in the failure line.
BUILD_TAIL = 12

_ID_RE = re.compile(r"\b([A-Z]{2,5}-\d+)\b")
#: The summary line's note when a failure was not shrunk to the end.
_CUT_SHORT_RE = re.compile(r"\[(shrinking stopped at the shrink budget|not shrunk[^\]]*)\]")


def executable(shown: Sequence[str]) -> list[str]:
    """A shown command as this interpreter runs it (``refimpl`` and the reference
    adapter's ``python`` become ``sys.executable``)."""
    argv = list(shown)
    if argv[:1] == [REFIMPL]:
        argv = [sys.executable, "-m", "refimpl.cli", *argv[1:]]
    if argv[-len(REFERENCE_ADAPTER) :] == REFERENCE_ADAPTER:
        argv[-len(REFERENCE_ADAPTER)] = sys.executable
    return argv


def verdict_of(status: int, report: str) -> tuple[str, str]:
    """The first finding a ``refimpl conform`` report names, and its message:
    ``pass``, ``difference``, an invariant ID (``INF-3``), ``invariant`` (no ID in
    the message), ``adapter failure``, or ``exit N`` for anything else."""
    if status == 0:
        ended = next((line for line in report.splitlines() if BUDGET_ENDED in line), None)
        if ended is not None:
            # Not a pass: the examples the seed would have reached were never run.
            return "inconclusive", ended.strip()
        return "pass", ""
    lines = report.splitlines()
    for n, line in enumerate(lines):
        if not line.startswith("FAIL "):
            continue
        message = lines[n + 2].strip() if n + 2 < len(lines) else ""
        if "differs from the reference" in line:
            return "difference", ""
        if "broke an invariant" in line:
            found = _ID_RE.search(message)
            return (found.group(1) if found else "invariant"), message
        return "adapter failure", message
    if status == 2:
        return "adapter failure", lines[0] if lines else ""
    return f"exit {status}", lines[-1] if lines else ""


@dataclass
class Ran:
    """One finished ``refimpl conform`` process."""

    status: int
    report: str
    seconds: float
    timed_out: bool = False


def run_conform(shown: Sequence[str], root: Path, limit: float, extra: Sequence[str] = ()) -> Ran:
    """Run a shown conform command (with ``extra`` options) from ``root``."""
    argv = executable(shown)
    where = argv.index("--")
    argv[where:where] = ["--no-progress", *extra]
    started = time.monotonic()
    try:
        done = subprocess.run(
            argv, cwd=root, capture_output=True, text=True, timeout=limit, check=False
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        return Ran(-1, out, time.monotonic() - started, timed_out=True)
    report = done.stdout + (("\n" + done.stderr) if done.stderr.strip() else "")
    return Ran(done.returncode, report, time.monotonic() - started)


def check_limit(check: Check) -> float:
    """Wall-clock limit of a check's process: its budgets, generous margins. A run
    shrinks each of up to ``max_findings`` findings within its own shrink budget, which
    the search budget does not pay for (refimpl/conformance/search/run.py)."""
    if check.wire:  # a run, each finding's shrinking and one client-go run per finding
        run = MAX_QUIESCENCE + 20 + 8 * check.timeout
        most = Config.max_findings
        return (1 + most) * run + most * (check.shrink_budget + run) + 60
    shrinking = Config.max_findings * check.shrink_budget
    return check.budget + 2 * shrinking + 4 * check.timeout + 60


# ------------------------------------------------------------------------------ running


@dataclass
class PeerRun:
    """What one peer's run observed (kept in docs/peers.json) and how long it took."""

    observed: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)
    ok: bool = True


def run_check(
    manifest: Manifest, check: Check, root: Path, client_go: Path | None = None
) -> tuple[dict[str, Any], float]:
    """Run one check; its observation (verdict, findings, ok) and its time. The peer's
    acknowledged findings of the check's component go in as ``--known``; ``client_go``
    (None: not built) labels each finding (search/triage.py)."""
    shown = check_command(manifest, check, root)
    extra = ["--client-go", str(client_go) if client_go is not None else "none"]
    for known in manifest.known:
        if known.signature.split("/")[0] == check.component:
            extra += ["--known", f"{known.signature}={known.note}"]
    with tempfile.TemporaryDirectory() as tmp:
        written = Path(tmp) / "results.json"
        ran = run_conform(shown, root, check_limit(check), ["--json", str(written), *extra])
        results = _results(written)
    if ran.timed_out:
        verdict, message = "inconclusive", f"no answer within {check_limit(check):g} s"
    elif results is not None:
        verdict, message = verdict_of_json(results)
    else:  # the run ended before its results (the adapter did not start, ...)
        verdict, message = verdict_of(ran.status, ran.report)
    findings = [] if results is None or ran.timed_out else _findings(results)
    observed: dict[str, Any] = {"verdict": verdict, "findings": findings}
    observed["ok"] = check.matches(verdict, [f["signature"] for f in findings])
    if verdict != "pass":
        observed["message"] = message
        cut_short = _CUT_SHORT_RE.search(ran.report)
        if cut_short:
            observed["shrink"] = cut_short.group(1)
        if not findings:
            observed["report_tail"] = ran.report.strip().splitlines()[-BUILD_TAIL:]
    return observed, ran.seconds


def verdict_of_json(results: dict[str, Any]) -> tuple[str, str]:
    """:func:`verdict_of` from ``refimpl conform --json``'s results."""
    components = results.get("components", [])
    for component in components:
        for found in component.get("findings", []):
            kind, message = found.get("kind"), str(found.get("message", ""))
            if kind == "disagreement":
                return "difference", ""
            if kind == "invariant":
                ids = _ID_RE.search(message)
                return (ids.group(1) if ids else "invariant"), message
            return "adapter failure", message
    if results.get("wire") and results.get("status") == EXIT_INCONCLUSIVE:
        return "inconclusive", "the adapter stopped answering"
    if results.get("status") != 0:
        return f"exit {results.get('status')}", ""
    ended = [str(c["note"]) for c in components if BUDGET_ENDED in str(c.get("note", ""))]
    # Not a pass: the examples the seed would have reached were never run.
    return ("inconclusive", ended[0]) if ended else ("pass", "")


def _results(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return None
    return loaded if isinstance(loaded, dict) else None


def _findings(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every finding of a check's results, as docs/peers.json keeps it."""
    keep = ("signature", "message", "known", "client_go", "inputs", "steps", "shrink_finished")
    return [
        {k: found[k] for k in keep if k in found}
        for component in results.get("components", [])
        for found in component.get("findings", [])
    ]


def run_trace(manifest: Manifest, trace: Path, root: Path) -> tuple[dict[str, Any], float]:
    """Replay a pinned trace against the peer and the reference; observation and time."""
    head = trace_header(trace)
    peer_cmd, ref_cmd = trace_commands(manifest, trace, root)
    peer = run_conform(peer_cmd, root, 120)
    reference = run_conform(ref_cmd, root, 120)
    peer_verdict = "inconclusive" if peer.timed_out else verdict_of(peer.status, peer.report)[0]
    ref_verdict = (
        "inconclusive" if reference.timed_out else verdict_of(reference.status, reference.report)[0]
    )
    peer_ok = peer.status == 1 and head["expect"] in peer.report
    observed = {
        "peer": peer_verdict,
        "reference": ref_verdict,
        "ok": peer_ok and ref_verdict == "pass",
    }
    return observed, peer.seconds + reference.seconds


def hello(manifest: Manifest, root: Path) -> dict[str, Any]:
    """The adapter's handshake: its name, version, implementation and components."""
    config = Config(command=manifest.adapter_command(root, absolute=True), startup_timeout=30)
    ctx = RunContext(config, io.StringIO())
    try:
        answer = ctx.start_adapter()
    finally:
        ctx.close()
    return {
        "name": answer.get("name"),
        "version": answer.get("version"),
        "implementation": answer.get("implementation"),
        "components": [c for c in COMPONENTS if c in answer.get("components", {})],
    }


Say = Callable[[str], None]


def run_peer(
    manifest: Manifest,
    root: Path,
    say: Say,
    models: Sequence[str] | None = None,
    client_go: Path | None = None,
) -> PeerRun:
    """Toolchains, build, hello, checks, traces and walks of one peer (see the module
    docstring); ``models`` narrows the walks (tests), default every driven model;
    ``client_go`` is the adapter each finding is triaged against (None: not built)."""
    result = PeerRun()
    started = time.monotonic()
    if not (_toolchains(manifest, say, result) and _build(manifest, root, say, result)):
        return result
    try:
        result.observed["hello"] = hello(manifest, root)
    except Exception as exc:  # the adapter would not start or answer: report, go on
        say(f"peer {manifest.name}: the adapter did not start: {exc}")
        result.observed["problem"] = f"the adapter did not start: {exc}"
        result.ok = False
        return result
    _run_checks(manifest, root, say, result, client_go)
    _run_traces(manifest, root, say, result)
    _run_walks(manifest, root, say, result, models)
    result.timings["total"] = round(time.monotonic() - started, 1)
    return result


def _toolchains(manifest: Manifest, say: Say, result: PeerRun) -> bool:
    """Every toolchain the manifest names is on PATH; else each missing one is named."""
    tools = dict.fromkeys(["make", *manifest.toolchains])  # make runs every build
    missing = [tool for tool in tools if shutil.which(tool) is None]
    for tool in missing:
        say(f"peer {manifest.name}: toolchain '{tool}' not found")
    if missing:
        result.observed["problem"] = (
            "toolchain " + ", ".join(f"'{t}'" for t in missing) + " not found"
        )
        result.ok = False
    return not missing


def _build(manifest: Manifest, root: Path, say: Say, result: PeerRun) -> bool:
    """``make -C adapters/NAME build``, and the file it must leave; a failure is quoted."""
    name = manifest.name
    say(f"peer {name}: building (make -C {relative(manifest.folder, root)} build)")
    build_started = time.monotonic()
    built = subprocess.run(
        ["make", "-C", str(manifest.folder), "build"],
        capture_output=True,
        text=True,
        check=False,
    )
    result.timings["build"] = round(time.monotonic() - build_started, 1)
    if built.returncode != 0 or not (manifest.folder / manifest.built).exists():
        output = (built.stdout + built.stderr).strip().splitlines()[-BUILD_TAIL:]
        if built.returncode == 0:
            output = [f"make build succeeded but {manifest.built} does not exist"]
        say(f"peer {name} did not build: " + "\n    ".join(output))
        result.observed["problem"] = "did not build: " + (output[-1] if output else "no output")
        result.ok = False
        return False
    say(f"peer {name}: built in {result.timings['build']:.1f} s")
    return True


def _run_checks(
    manifest: Manifest, root: Path, say: Say, result: PeerRun, client_go: Path | None
) -> None:
    """Each seeded check, its findings compared with its pin; then the acknowledged
    findings no check found (stale: a failure, as a stale suppression would hide one)."""
    checks: dict[str, Any] = {}
    check_times: list[float] = []
    found: set[str] = set()
    for n, check in enumerate(manifest.checks, 1):
        key = check_key(manifest, check, root)
        observed, seconds = run_check(manifest, check, root, client_go)
        checks[key] = observed
        check_times.append(round(seconds, 1))
        result.ok &= observed["ok"]
        signatures = [f["signature"] for f in observed["findings"]]
        found.update(signatures)
        mark = "ok" if observed["ok"] else f"MISMATCH (expected {check.expect_text()})"
        say(
            f"peer {manifest.name}: check {n}/{len(manifest.checks)} {check.component} "
            f"({check.variant()}): {observed['verdict']}"
            + (f" [{', '.join(signatures)}]" if signatures else "")
            + f" {mark}, {seconds:.1f} s"
        )
    stale = [k.signature for k in manifest.known if k.signature not in found]
    for signature in stale:
        say(f"peer {manifest.name}: known finding {signature} occurs in no check: stale")
    result.ok &= not stale
    result.observed["checks"] = checks
    result.observed["stale_known"] = stale
    result.timings["checks"] = check_times


def _run_traces(manifest: Manifest, root: Path, say: Say, result: PeerRun) -> None:
    """Each pinned trace replayed against the peer and the reference."""
    traces: dict[str, Any] = {}
    trace_times: list[float] = []
    for path in manifest.traces():
        try:
            observed, seconds = run_trace(manifest, path, root)
        except (ManifestError, OSError, ValueError) as exc:  # a trace that cannot be read
            observed, seconds = {"peer": f"unreadable: {exc}", "reference": "", "ok": False}, 0
        traces[path.name] = observed
        trace_times.append(round(seconds, 1))
        result.ok &= observed["ok"]
        mark = "ok" if observed["ok"] else "MISMATCH"
        say(
            f"peer {manifest.name}: trace {path.name}: peer {observed['peer']}, "
            f"reference {observed['reference']} {mark}, {seconds:.1f} s"
        )
    result.observed["traces"] = traces
    result.timings["traces"] = round(sum(trace_times), 1)


def _run_walks(
    manifest: Manifest, root: Path, say: Say, result: PeerRun, models: Sequence[str] | None
) -> None:
    """The spec-driven walks of the components the peer offers, compared with the pins."""
    name = manifest.name
    offered = result.observed["hello"]["components"]
    walks, walk_times = walk_peer(
        manifest.adapter_command(root, absolute=True), offered, 10.0, models
    )
    for model, seen in walks.items():
        pin = manifest.walks.get(model, "none")
        ok = seen["verdict"] == pin
        result.ok &= ok
        mark = "ok" if ok else f"MISMATCH (pinned: {pin})"
        say(
            f"peer {name}: walk {model}: {seen['verdict']}, {seen['covered']}/"
            f"{seen['drivable']} edges {mark}, {walk_times[model]:.1f} s"
        )
    for model in sorted(set(manifest.walks) - set(walks) - set(_narrowed(models))):
        say(f"peer {name}: walk {model} pinned but its component is not offered: MISMATCH")
        result.ok = False
    result.observed["walks"] = walks
    result.timings["walks"] = round(sum(walk_times.values()), 1)


def _narrowed(models: Sequence[str] | None) -> list[str]:
    """The driven models a narrowed run leaves out."""
    return [] if models is None else [m for m in SPEC_MAPPINGS if m not in models]


def run_peers(
    root: Path,
    names: Sequence[str] = (),
    write: bool = True,
    out: TextIO | None = None,
    where: Path | None = None,
    models: Sequence[str] | None = None,
) -> int:
    """Run the peers named (default: all) and update peers.json and peers.md in
    ``where`` (default: ``root``/docs; peers not run keep their previous observations,
    read from there or else from docs/). Exit status 0 or 1."""
    out = out if out is not None else sys.stdout
    where = where if where is not None else root / DOC.parent

    def say(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    paths = discover(root)
    known = {p.parent.name for p in paths}
    unknown = [n for n in names if n not in known]
    if unknown:
        listed = ", ".join(sorted(known))
        say(f"refimpl peers: no {MANIFEST} for {', '.join(unknown)} (known: {listed})")
        return 1
    previous = where / OBSERVATIONS.name
    store = load_observations(previous if previous.exists() else root / OBSERVATIONS)
    store["peers"] = {k: v for k, v in store["peers"].items() if k in known}
    store["timings"] = {k: v for k, v in store["timings"].items() if k in known}
    failed: list[str] = []
    client_go = _client_go(root)
    if client_go is None:
        say("peers: client-go's adapter is not built: findings get no client-go label")
    for path in paths:
        name = path.parent.name
        if names and name not in names:
            continue
        try:
            manifest = load_manifest(path)
        except ManifestError as exc:
            say(f"peer {name}: bad {MANIFEST}: {exc}")
            store["peers"][name] = {"problem": f"bad {MANIFEST}: {exc}"}
            store["timings"].pop(name, None)
            failed.append(name)
            continue
        result = run_peer(manifest, root, say, models, client_go)
        store["peers"][name] = result.observed
        store["timings"][name] = result.timings
        if not result.ok:
            failed.append(name)
        say(f"peer {name}: {'ok' if result.ok else 'FAILED'}")
    if write:
        _write(store, root, where, say)
    ran = len([p for p in paths if not names or p.parent.name in names])
    say(
        f"peers: {ran - len(failed)} ok, {len(failed)} failed"
        + (f" ({', '.join(failed)})" if failed else "")
    )
    return 1 if failed else 0


def _client_go(root: Path) -> Path | None:
    """client-go's adapter, built first so that every peer's findings are triaged
    against it (search/triage.py); None when it does not build (each finding then has
    no client-go label, and the run says so)."""
    folder = root / CLIENT_GO_ADAPTER.parent.parent
    if not (folder / MANIFEST).exists() or shutil.which("go") is None:
        return None
    subprocess.run(["make", "-C", str(folder), "build"], capture_output=True, check=False)
    adapter = root / CLIENT_GO_ADAPTER
    return adapter if adapter.exists() else None


def _write(store: dict[str, Any], root: Path, where: Path, say: Say) -> None:
    """peers.json (peers and timings by name) and the peers.md it renders to, in ``where``."""
    where.mkdir(parents=True, exist_ok=True)
    store = {
        "peers": dict(sorted(store["peers"].items())),
        "timings": dict(sorted(store["timings"].items())),
    }
    text = json.dumps(store, indent=1) + "\n"
    (where / OBSERVATIONS.name).write_text(text, encoding="utf-8")
    # Rendered from what was written, exactly as the staleness test renders it.
    (where / DOC.name).write_text(render(root, json.loads(text), where), encoding="utf-8")
    shown = relative(where, root)
    say(f"wrote {shown}/{OBSERVATIONS.name} and {shown}/{DOC.name}")
