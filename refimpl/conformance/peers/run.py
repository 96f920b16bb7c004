"""``refimpl peers``: build every peer adapter from its manifest, check it, write docs/peers.md.

A *peer* is another implementation checked through an adapter folder ``adapters/NAME/``
holding a ``Makefile`` (``build``, ``clean``), a ``peer.json`` manifest and pinned traces
``traces/*.jsonl`` (the manifest's fields: docs/conformance.md, "Peers and their
manifests"). For each manifest the runner

1. checks that every toolchain it names is on PATH (missing: ``peer X: toolchain 'cargo'
   not found``, a failure);
2. runs ``make -C adapters/NAME build`` (failing: ``peer X did not build: <the last
   lines of its output>``, a failure, never a skip) and checks that ``built`` exists;
3. asks the adapter's ``hello`` which components it offers;
4. runs each seeded check as a ``refimpl conform`` process and compares the first
   finding it names (an invariant ID, ``difference``, or ``pass``) with ``expect``;
5. replays each pinned trace against the peer (it must fail with the header's
   ``expect``) and against the reference adapter (it must pass);
6. walks every TLA+ model whose component the peer offers along its state graph
   (``refimpl conform --from-spec``, :mod:`refimpl.conformance.peers.walks`) and compares
   each walk's verdict with the manifest's ``walks`` pins.

What it saw is kept in ``docs/peers.json`` (observations, timings apart) and rendered
with the manifests into ``docs/peers.md``; :func:`render` is a pure function of the two,
so ``tests/test_conformance_peers.py`` can tell a stale docs/peers.md without running
anything. Exit status 1 when any peer failed (toolchain, build, start, or a verdict that
differs from its pin), else 0.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from refimpl.conformance.peers.walks import WALK_VERDICTS, render_walks, walk_peer
from refimpl.conformance.protocol import COMPONENTS
from refimpl.conformance.search.report import show_request
from refimpl.conformance.search.run import BUDGET_ENDED
from refimpl.conformance.walks.models import SPEC_MAPPINGS

__all__ = [
    "Check",
    "Manifest",
    "ManifestError",
    "check_command",
    "check_key",
    "discover",
    "load_manifest",
    "main",
    "register",
    "render",
    "run_peers",
    "verdict_of",
]

MANIFEST = "peer.json"
DOC = Path("docs") / "peers.md"
OBSERVATIONS = Path("docs") / "peers.json"
#: How the docs say the files were made (the top-level Makefile's target).
GENERATED_BY = "make peers"
#: Display form of the commands; the runner runs them with this interpreter instead.
REFIMPL = "refimpl"
PYTHON = "python"
REFERENCE_ADAPTER = [PYTHON, "-m", "refimpl.conformance.reference.adapter"]
#: Lines of a failed build's output quoted in the failure line.
BUILD_TAIL = 12

#: A check's optional fields and their defaults (the manifest format of
#: docs/conformance.md; shrink_budget, max_examples and timeout are this runner's
#: additions). Both budgets are bounds, not waits: a seeded search normally ends at
#: max_examples or at its finding well within the budget, so the verdict is the same on
#: a slower machine (a search the budget ends is "inconclusive", never a pass), and only a
#: shrink that ends by itself gives the same sequence every run.
CHECK_DEFAULTS: dict[str, Any] = {
    "flags": [],
    "skip": [],
    "options": [],
    "budget": 300,
    "shrink_budget": 60,
    "max_examples": 300,
    "timeout": 10,
    "exact": False,
    "note": "",
}

_ID_RE = re.compile(r"\b([A-Z]{2,5}-\d+)\b")
#: The summary line's note when a failure was not shrunk to the end.
_CUT_SHORT_RE = re.compile(r"\[(shrinking stopped at the shrink budget|not shrunk[^\]]*)\]")


class ManifestError(ValueError):
    """A peer.json that does not follow the format."""


@dataclass(frozen=True)
class Check:
    """One seeded ``refimpl conform`` run of a peer and the verdict pinned for it."""

    component: str
    seed: int
    expect: str
    flags: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    budget: float = 300
    shrink_budget: float = 60
    max_examples: int = 300
    timeout: float = 10
    exact: bool = False
    #: Free text shown with the check in docs/peers.md (why this seed, what it shows).
    note: str = ""

    def conform_options(self) -> list[str]:
        """The ``refimpl conform`` options of this check (before ``--``)."""
        args = ["--component", self.component, "--seed", str(self.seed)]
        args += ["--budget", _num(self.budget), "--shrink-budget", _num(self.shrink_budget)]
        args += ["--max-examples", str(self.max_examples), "--timeout", _num(self.timeout)]
        for method in self.skip:
            args += ["--skip", method]
        for option in self.options:
            args += ["--option", option]
        if self.exact:
            args.append("--exact")
        return args

    def variant(self) -> str:
        """What sets this check apart from a plain seeded run, for tables."""
        parts = [f"seed {self.seed}", *self.flags]
        parts += [f"--skip {m}" for m in self.skip]
        parts += [f"--option {o}" for o in self.options]
        return ", ".join(parts)


@dataclass(frozen=True)
class Manifest:
    """A parsed ``adapters/NAME/peer.json`` (``name`` is the folder's name)."""

    name: str
    folder: Path
    peer: str
    language: str
    toolchains: tuple[str, ...]
    implementation: str
    built: str
    command: tuple[str, ...]
    checks: tuple[Check, ...]
    #: model -> the pinned verdict of its spec-driven walk (refimpl/conformance/peers/walks.py)
    walks: Mapping[str, str] = field(default_factory=dict)

    def adapter_command(
        self, root: Path, flags: Sequence[str] = (), absolute: bool = False
    ) -> list[str]:
        """The adapter's argv: an argument holding a ``/`` or naming a file of the folder
        is resolved against the folder (relative to ``root`` unless ``absolute``)."""
        out: list[str] = []
        for arg in self.command:
            if (
                not arg.startswith("-")
                and not os.path.isabs(arg)
                and ("/" in arg or (self.folder / arg).exists())
            ):
                path = self.folder / arg
                out.append(os.path.abspath(path) if absolute else _relative(path, root))
            else:
                out.append(arg)
        return [*out, *flags]

    def traces(self) -> list[Path]:
        return sorted((self.folder / "traces").glob("*.jsonl"))


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _relative(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` (symlinks kept: a virtualenv's python is one)."""
    try:
        return str(Path(os.path.abspath(path)).relative_to(os.path.abspath(root)))
    except ValueError:
        return str(path)


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ManifestError(f"{where} must be a list of strings")
    return tuple(value)


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ManifestError(f"{where} must be a number > 0")
    return float(value)


def _check(raw: Any, where: str) -> Check:
    if not isinstance(raw, dict):
        raise ManifestError(f"{where} must be an object")
    unknown = set(raw) - {"component", "seed", "expect", *CHECK_DEFAULTS}
    if unknown:
        raise ManifestError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    values = {**CHECK_DEFAULTS, **raw}
    component = values.get("component")
    if component not in COMPONENTS:
        raise ManifestError(f"{where}.component must be one of {', '.join(COMPONENTS)}")
    seed = values.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ManifestError(f"{where}.seed must be an integer")
    expect = values.get("expect")
    if not isinstance(expect, str) or not expect:
        raise ManifestError(f"{where}.expect must be 'pass', 'difference' or an invariant ID")
    max_examples = values["max_examples"]
    if isinstance(max_examples, bool) or not isinstance(max_examples, int) or max_examples < 1:
        raise ManifestError(f"{where}.max_examples must be an integer >= 1")
    if not isinstance(values["exact"], bool):
        raise ManifestError(f"{where}.exact must be true or false")
    if not isinstance(values["note"], str):
        raise ManifestError(f"{where}.note must be a string")
    options = _strings(values["options"], f"{where}.options")
    for option in options:
        name, sep, value = option.partition("=")
        try:
            json.loads(value)
        except ValueError:
            raise ManifestError(f"{where}.options: {option!r} is not NAME=JSON") from None
        if not sep or not name:
            raise ManifestError(f"{where}.options: {option!r} is not NAME=JSON")
    return Check(
        component=component,
        seed=seed,
        expect=expect,
        flags=_strings(values["flags"], f"{where}.flags"),
        skip=_strings(values["skip"], f"{where}.skip"),
        options=options,
        budget=_number(values["budget"], f"{where}.budget"),
        shrink_budget=_number(values["shrink_budget"], f"{where}.shrink_budget"),
        max_examples=max_examples,
        timeout=_number(values["timeout"], f"{where}.timeout"),
        exact=values["exact"],
        note=values["note"],
    )


def load_manifest(path: Path) -> Manifest:
    """Parse and check one peer.json; :class:`ManifestError` says what is wrong."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ManifestError(f"cannot read {path}: {exc}") from None
    if not isinstance(raw, dict):
        raise ManifestError(f"{path}: must be a JSON object")
    for key in ("peer", "language", "implementation", "built"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise ManifestError(f"{path}: {key!r} must be a non-empty string")
    command = _strings(raw.get("command"), f"{path}: 'command'")
    if not command:
        raise ManifestError(f"{path}: 'command' must not be empty")
    checks = raw.get("checks")
    if not isinstance(checks, list):
        raise ManifestError(f"{path}: 'checks' must be a list")
    return Manifest(
        name=path.parent.name,
        folder=path.parent,
        peer=raw["peer"],
        language=raw["language"],
        toolchains=_strings(raw.get("toolchains"), f"{path}: 'toolchains'"),
        implementation=raw["implementation"],
        built=raw["built"],
        command=command,
        checks=tuple(_check(c, f"{path}: checks[{n}]") for n, c in enumerate(checks)),
        walks=_walks(raw.get("walks", {}), f"{path}: 'walks'"),
    )


def _walks(raw: Any, where: str) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise ManifestError(f"{where} must be an object: model -> verdict")
    for model, verdict in raw.items():
        if model not in SPEC_MAPPINGS:
            raise ManifestError(f"{where}: no driven model {model!r} ({', '.join(SPEC_MAPPINGS)})")
        if verdict not in WALK_VERDICTS:
            raise ManifestError(f"{where}.{model} must be one of {', '.join(WALK_VERDICTS)}")
    return dict(raw)


def discover(root: Path) -> list[Path]:
    """Every ``adapters/*/peer.json`` under ``root``, by folder name."""
    return sorted((root / "adapters").glob(f"*/{MANIFEST}"))


# ----------------------------------------------------------------------------- commands


def check_command(manifest: Manifest, check: Check, root: Path) -> list[str]:
    """The command, as shown in docs/peers.md, that reproduces ``check`` from ``root``."""
    adapter = manifest.adapter_command(root, check.flags)
    return [REFIMPL, "conform", *check.conform_options(), "--", *adapter]


def check_key(manifest: Manifest, check: Check, root: Path) -> str:
    """How docs/peers.json names a check's observation: its shown command."""
    return shlex.join(check_command(manifest, check, root))


def trace_commands(manifest: Manifest, trace: Path, root: Path) -> tuple[list[str], list[str]]:
    """The replays of ``trace`` against the peer and against the reference (as shown)."""
    head = trace_header(trace)
    replay = [REFIMPL, "conform", "--replay", _relative(trace, root), "--timeout", "10", "--"]
    peer = [*replay, *manifest.adapter_command(root, head.get("adapter_args", []))]
    return peer, [*replay, *REFERENCE_ADAPTER]


def trace_header(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        head = json.loads(fh.readline())
    if not isinstance(head, dict) or "conform_trace" not in head:
        raise ManifestError(f"{path}: the first line is not a conform trace header")
    if not isinstance(head.get("expect"), str) or not head["expect"]:
        raise ManifestError(f"{path}: the header needs a non-empty 'expect'")
    if not isinstance(head.get("adapter_args", []), list):
        raise ManifestError(f"{path}: the header's 'adapter_args' must be a list")
    return head


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
    """Wall-clock limit of a check's process: its budgets, generous margins."""
    return check.budget + 2 * check.shrink_budget + 4 * check.timeout + 60


# ------------------------------------------------------------------------------ running


@dataclass
class PeerRun:
    """What one peer's run observed (kept in docs/peers.json) and how long it took."""

    observed: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)
    ok: bool = True


def run_check(manifest: Manifest, check: Check, root: Path) -> tuple[dict[str, Any], float]:
    """Run one check; its observation (verdict, finding, ok) and its time."""
    shown = check_command(manifest, check, root)
    with tempfile.TemporaryDirectory() as tmp:
        saved = Path(tmp) / "trace.jsonl"
        ran = run_conform(shown, root, check_limit(check), ["--save", str(saved)])
        steps = _saved_requests(saved)
    if ran.timed_out:
        verdict, message = "inconclusive", f"no answer within {check_limit(check):g} s"
    else:
        verdict, message = verdict_of(ran.status, ran.report)
    observed: dict[str, Any] = {"verdict": verdict, "ok": verdict == check.expect}
    if verdict != "pass":
        observed["message"] = message
        observed["steps"] = steps
        cut_short = _CUT_SHORT_RE.search(ran.report)
        if cut_short:
            observed["shrink"] = cut_short.group(1)
        if not steps:
            observed["report_tail"] = ran.report.strip().splitlines()[-BUILD_TAIL:]
    return observed, ran.seconds


def _saved_requests(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[1:] if line.strip()]


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
    from refimpl.conformance.search.run import Config, RunContext

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
    manifest: Manifest, root: Path, say: Say, models: Sequence[str] | None = None
) -> PeerRun:
    """Toolchains, build, hello, checks, traces and walks of one peer (see the module
    docstring); ``models`` narrows the walks (tests), default every driven model."""
    result = PeerRun()
    started = time.monotonic()
    name = manifest.name
    tools = dict.fromkeys(["make", *manifest.toolchains])  # make runs every build
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        for tool in missing:
            say(f"peer {name}: toolchain '{tool}' not found")
        result.observed["problem"] = (
            "toolchain " + ", ".join(f"'{t}'" for t in missing) + " not found"
        )
        result.ok = False
        return result
    say(f"peer {name}: building (make -C {_relative(manifest.folder, root)} build)")
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
        return result
    say(f"peer {name}: built in {result.timings['build']:.1f} s")
    try:
        result.observed["hello"] = hello(manifest, root)
    except Exception as exc:  # the adapter would not start or answer: report, go on
        say(f"peer {name}: the adapter did not start: {exc}")
        result.observed["problem"] = f"the adapter did not start: {exc}"
        result.ok = False
        return result
    checks: dict[str, Any] = {}
    check_times: list[float] = []
    for n, check in enumerate(manifest.checks, 1):
        key = check_key(manifest, check, root)
        observed, seconds = run_check(manifest, check, root)
        checks[key] = observed
        check_times.append(round(seconds, 1))
        result.ok &= observed["ok"]
        mark = "ok" if observed["ok"] else f"MISMATCH (expected {check.expect})"
        say(
            f"peer {name}: check {n}/{len(manifest.checks)} {check.component} "
            f"({check.variant()}): {observed['verdict']} {mark}, {seconds:.1f} s"
        )
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
            f"peer {name}: trace {path.name}: peer {observed['peer']}, "
            f"reference {observed['reference']} {mark}, {seconds:.1f} s"
        )
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
    result.observed["checks"] = checks
    result.observed["traces"] = traces
    result.observed["walks"] = walks
    result.timings["checks"] = check_times
    result.timings["traces"] = round(sum(trace_times), 1)
    result.timings["walks"] = round(sum(walk_times.values()), 1)
    result.timings["total"] = round(time.monotonic() - started, 1)
    return result


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
    store = _load_observations(previous if previous.exists() else root / OBSERVATIONS)
    store["peers"] = {k: v for k, v in store["peers"].items() if k in known}
    store["timings"] = {k: v for k, v in store["timings"].items() if k in known}
    failed: list[str] = []
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
        result = run_peer(manifest, root, say, models)
        store["peers"][name] = result.observed
        store["timings"][name] = result.timings
        if not result.ok:
            failed.append(name)
        say(f"peer {name}: {'ok' if result.ok else 'FAILED'}")
    if write:
        where.mkdir(parents=True, exist_ok=True)
        store = {
            "peers": dict(sorted(store["peers"].items())),
            "timings": dict(sorted(store["timings"].items())),
        }
        text = json.dumps(store, indent=1) + "\n"
        (where / OBSERVATIONS.name).write_text(text, encoding="utf-8")
        # Rendered from what was written, exactly as the staleness test renders it.
        (where / DOC.name).write_text(render(root, json.loads(text), where), encoding="utf-8")
        shown = _relative(where, root)
        say(f"wrote {shown}/{OBSERVATIONS.name} and {shown}/{DOC.name}")
    ran = len([p for p in paths if not names or p.parent.name in names])
    say(
        f"peers: {ran - len(failed)} ok, {len(failed)} failed"
        + (f" ({', '.join(failed)})" if failed else "")
    )
    return 1 if failed else 0


def _load_observations(path: Path) -> dict[str, Any]:
    store: dict[str, Any] = {}
    if path.exists():
        try:
            store = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            store = {}
    return {
        "peers": dict(store.get("peers", {})) if isinstance(store, dict) else {},
        "timings": dict(store.get("timings", {})) if isinstance(store, dict) else {},
    }


# ---------------------------------------------------------------------------- rendering


def render(root: Path, store: dict[str, Any], where: Path | None = None) -> str:
    """docs/peers.md from the manifests, the traces and the observations ``store``
    (its links are relative to ``where``, default ``root``/docs).

    A pure function: equal inputs give equal text. Everything but the last section
    ("Timings") is independent of how long anything took."""
    manifests: list[Manifest | str] = []
    for path in discover(root):
        try:
            manifests.append(load_manifest(path))
        except ManifestError as exc:
            manifests.append(f"{path.parent.name}: bad {MANIFEST}: {exc}")
    peers = store.get("peers", {})
    where = where if where is not None else root / DOC.parent
    up = os.path.relpath(root, where)
    manual = os.path.relpath(root / "docs" / "conformance.md", where)
    lines = [
        "# Peers: other implementations checked against refimpl",
        "",
        f"<!-- Generated by `{GENERATED_BY}` (refimpl/conformance/peers/run.py) from",
        "     adapters/*/peer.json, adapters/*/traces/ and the run's observations in",
        "     docs/peers.json. Do not edit by hand: tests/test_conformance_peers.py fails",
        "     when this file differs from what those say. -->",
        "",
        f"Generated by `{GENERATED_BY}`: it builds every adapter folder with a `peer.json` "
        f"(format: [conformance.md]({manual}#peers-and-their-manifests)), runs each "
        "manifest's seeded checks and replays each pinned trace. Every row gives the command "
        "that reproduces it, run from the repository root after "
        "`make -C adapters/NAME build`; the runner adds only `--no-progress` and `--save`. "
        "A shrunk sequence is the same on every run when the shrinker ended by itself "
        "(within its budget); one cut short by the budget says so.",
        "",
        "## Matrix",
        "",
        "One row per peer, one column per component of the protocol: pass, the "
        "invariant ID of a finding (or *difference*: an answer that departs from the "
        "reference), *not offered* (the adapter's `hello` does not list it) or *not checked* "
        "(offered, no check in the manifest). A verdict that differs from its pin is in bold "
        "with the pin in brackets.",
        "",
        "| peer | " + " | ".join(COMPONENTS) + " |",
        "|---|" + "---|" * len(COMPONENTS),
    ]
    problems: list[str] = []
    for m in manifests:
        if isinstance(m, str):
            problems.append(m)
            continue
        seen = peers.get(m.name, {})
        if "problem" in seen or "hello" not in seen:
            why = seen.get("problem", "not run")
            problems.append(f"{m.name}: {why}")
            lines.append(f"| {m.name} | " + " | ".join(["?"] * len(COMPONENTS)) + " |")
            continue
        cells = []
        for component in COMPONENTS:
            found = [
                _cell(
                    check,
                    seen.get("checks", {}).get(check_key(m, check, root)),
                    f"{m.name}-check-{n}",
                )
                for n, check in enumerate(m.checks, 1)
                if check.component == component
            ]
            if found:
                cells.append("; ".join(found))
            elif component in seen["hello"]["components"]:
                cells.append("not checked")
            else:
                cells.append("not offered")
        lines.append(f"| {m.name} | " + " | ".join(cells) + " |")
    if problems:
        lines += ["", "Peers that could not be checked:", ""]
        lines += [f"- {p}" for p in problems]
    lines += _invariants(root, manifests, peers)
    lines += [
        "",
        "## Versions",
        "",
        "| peer | language | implementation (peer.json) | adapter (`hello`) |",
        "|---|---|---|---|",
    ]
    for m in manifests:
        if isinstance(m, str):
            continue
        said = peers.get(m.name, {}).get("hello")
        shown = (
            f"{said['name']} {said['version']}: {said.get('implementation') or ''}".rstrip(": ")
            if said
            else "not run"
        )
        lines.append(f"| {m.name} | {m.language} | {m.implementation} | {shown} |")
    lines += ["", "## Checks", ""]
    findings: list[str] = []
    for m in manifests:
        if isinstance(m, str):
            continue
        seen = peers.get(m.name, {}).get("checks", {})
        lines += [f"### {m.name}", ""]
        if not m.checks:
            lines += ["No seeded checks in its peer.json.", ""]
        for n, check in enumerate(m.checks, 1):
            key = check_key(m, check, root)
            observed = seen.get(key)
            verdict = observed["verdict"] if observed else "not run"
            pin = "as pinned" if verdict == check.expect else f"**pinned: {check.expect}**"
            anchor = f"{m.name}-check-{n}"
            link = f" ([finding](#{anchor}))" if observed and verdict != "pass" else ""
            lines.append(f"{n}. {check.component}, {check.variant()}: {verdict}{link} ({pin})")
            if check.note:
                lines += ["", f"   {check.note}"]
            lines += ["", "   ```sh", f"   {key}", "   ```", ""]
            if observed and verdict != "pass":
                findings += _finding(m.name, n, anchor, check, observed)
    lines += ["## Findings", ""]
    lines += findings or ["None.", ""]
    lines += [
        "## Pinned traces",
        "",
        "Each trace must fail against the peer with the verdict its header expects and pass "
        "against the reference adapter (so it is behaviour client-go has and the peer "
        "lacks). Replay: `refimpl conform --replay TRACE -- ADAPTER` (plus the header's "
        "`adapter_args`).",
        "",
        "| peer | trace | expected | peer | reference | as pinned |",
        "|---|---|---|---|---|---|",
    ]
    for m in manifests:
        if isinstance(m, str):
            continue
        seen = peers.get(m.name, {}).get("traces", {})
        for path in m.traces():
            try:
                expect = trace_header(path)["expect"]
            except (ManifestError, ValueError) as exc:
                lines.append(f"| {m.name} | {path.name} | {exc} | | | no |")
                continue
            observed = seen.get(path.name)
            link = f"[{path.name}]({up}/{_relative(path, root)})"
            if observed is None:
                lines.append(f"| {m.name} | {link} | `{expect}` | not run | not run | no |")
                continue
            ok = "yes" if observed["ok"] else "**no**"
            lines.append(
                f"| {m.name} | {link} | `{expect}` | {observed['peer']} | "
                f"{observed['reference']} | {ok} |"
            )
    lines += render_walks(
        [
            (m.name, m.walks, peers.get(m.name, {}).get("walks", {}))
            for m in manifests
            if not isinstance(m, str)
        ]
    )
    lines += [
        "",
        "## Timings",
        "",
        "Seconds on the machine that made this file (they vary; nothing above depends on "
        "them): the build (`make build`, near 0 when already built), each check in order, "
        "all trace replays, all spec-driven walks, and the whole peer.",
        "",
        "| peer | build | checks | traces | walks | total |",
        "|---|---|---|---|---|---|",
    ]
    for name, times in sorted(store.get("timings", {}).items()):
        checks = ", ".join(f"{t:g}" for t in times.get("checks", []))
        lines.append(
            f"| {name} | {times.get('build', '')} | {checks} | {times.get('traces', '')} | "
            f"{times.get('walks', '')} | {times.get('total', '')} |"
        )
    return "\n".join(lines).rstrip() + "\n"


def _invariants(
    root: Path, manifests: Sequence[Manifest | str], peers: dict[str, Any]
) -> list[str]:
    """The peer x invariant table: where each finding was seen (checks and traces)."""
    seen: dict[str, dict[str, list[str]]] = {}
    for m in manifests:
        if isinstance(m, str):
            continue
        observed = peers.get(m.name, {})
        for n, check in enumerate(m.checks, 1):
            verdict = observed.get("checks", {}).get(check_key(m, check, root), {}).get("verdict")
            if verdict and verdict != "pass":
                where = f"[check {n}](#{m.name}-check-{n})"
                seen.setdefault(verdict, {}).setdefault(m.name, []).append(where)
        for path in m.traces():
            verdict = observed.get("traces", {}).get(path.name, {}).get("peer")
            if verdict and verdict != "pass" and not verdict.startswith("unreadable"):
                seen.setdefault(verdict, {}).setdefault(m.name, []).append(f"trace {path.stem}")
    if not seen:
        return []
    ids = sorted(seen)
    names = [m.name for m in manifests if not isinstance(m, str)]
    lines = [
        "",
        "## Invariants",
        "",
        "Where each finding was seen: one row per peer, one column per invariant of "
        "[invariants.md](invariants.md) that some peer breaks (or *difference*), from the "
        "checks and the pinned traces below.",
        "",
        "| peer | " + " | ".join(ids) + " |",
        "|---|" + "---|" * len(ids),
    ]
    for name in names:
        cells = [", ".join(seen[i].get(name, [])) or "" for i in ids]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def _cell(check: Check, observed: dict[str, Any] | None, anchor: str) -> str:
    verdict = observed["verdict"] if observed else "not run"
    variant = [*check.flags, *(f"skip {m}" for m in check.skip), *check.options]
    shown = verdict
    if observed and verdict != "pass":
        shown = f"[{verdict}](#{anchor})"
    if verdict != check.expect:
        shown = f"**{verdict}** [{check.expect}]"
    return shown + (f" ({', '.join(variant)})" if variant else "")


def _finding(name: str, n: int, anchor: str, check: Check, observed: dict[str, Any]) -> list[str]:
    lines = [f"### {anchor}", ""]
    lines.append(f"{name}, {check.component}, {check.variant()}: **{observed['verdict']}**.")
    if observed.get("message"):
        lines += ["", f"> {observed['message']}"]
    steps = observed.get("steps", [])
    if observed.get("shrink"):
        lines += [
            "",
            f"Not shrunk to the end ({observed['shrink']}): another run may show a "
            "different sequence with the same verdict.",
        ]
    if steps:
        lines += ["", f"Shrunk to {len(steps)} operations:", ""]
        lines += [f"{k}. `{show_request(step)}`" for k, step in enumerate(steps, 1)]
        lines += [
            "",
            "<details><summary>as a trace file (save as .jsonl, replay with "
            "<code>refimpl conform --replay</code>)</summary>",
            "",
            "```json",
            json.dumps({"conform_trace": 1, "component": check.component, "seed": check.seed}),
        ]
        lines += [json.dumps(step) for step in steps]
        lines += ["```", "", "</details>"]
    elif observed.get("report_tail"):
        lines += ["", "```", *observed["report_tail"], "```"]
    return [*lines, ""]


# --------------------------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "names",
        nargs="*",
        metavar="PEER",
        help="adapter folder names to run (default: every adapters/*/peer.json)",
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=Path.cwd(),
        help="the repository root holding adapters/ and docs/ (default: the current folder)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DOC.parent,
        metavar="DIR",
        help="where to write peers.json and peers.md, relative to the root (default: docs; "
        "CI writes to build/peers so that the committed docs/ stay what the tests check)",
    )
    parser.add_argument(
        "--no-write",
        action="store_true",
        help="do not update docs/peers.json and docs/peers.md (default: update them)",
    )
    parser.add_argument(
        "--render-only",
        action="store_true",
        help="run nothing: write docs/peers.md again from docs/peers.json and the manifests "
        "(a check whose manifest entry changed shows as not run)",
    )


def execute(args: argparse.Namespace) -> int:
    root = args.root.resolve()
    where = (args.out if args.out.is_absolute() else root / args.out).resolve()
    if args.render_only:
        store = _load_observations(where / OBSERVATIONS.name)
        (where / DOC.name).write_text(render(root, store, where), encoding="utf-8")
        print(f"wrote {_relative(where / DOC.name, root)} from its peers.json (nothing run)")
        return 0
    return run_peers(root, args.names, write=not args.no_write, where=where)


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "peers",
        help="build the peer adapters (adapters/*/peer.json), check them, write docs/peers.md",
        description=(
            "For every adapter folder with a peer.json: check its toolchains, build it "
            "(make -C adapters/NAME build), run its seeded checks and replay its pinned "
            "traces; then write docs/peers.json and docs/peers.md. Exit status 1 if a peer "
            "fails to build or a verdict differs from its pin."
        ),
    )
    add_arguments(parser)
    parser.set_defaults(func=execute)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m refimpl.conformance.peers.run [PEER...]``."""
    parser = argparse.ArgumentParser(prog="refimpl peers")
    add_arguments(parser)
    return execute(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
