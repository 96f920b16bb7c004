"""A peer's manifest, ``adapters/NAME/peer.json``: its format, its checks, its traces.

Owns what a manifest says and nothing that runs: :func:`load_manifest` parses and
checks one (:class:`ManifestError` says what is wrong; the fields are docs/conformance.md,
"Peers and their manifests"), :func:`discover` finds them, :func:`trace_header` reads a
pinned trace's header, and :func:`check_command` / :func:`trace_commands` give the
commands docs/peers.md shows for a check and a trace replay (a check's shown command is
also its key in docs/peers.json, :func:`check_key`).
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from refimpl.conformance.peers.walks import WALK_VERDICTS
from refimpl.conformance.protocol import COMPONENTS
from refimpl.conformance.walks.models import SPEC_MAPPINGS

__all__ = [
    "CHECK_DEFAULTS",
    "MANIFEST",
    "REFERENCE_ADAPTER",
    "REFIMPL",
    "Check",
    "Known",
    "Manifest",
    "ManifestError",
    "check_command",
    "check_key",
    "discover",
    "load_manifest",
    "relative",
    "trace_commands",
    "trace_header",
]

MANIFEST = "peer.json"
#: Display form of the commands; the runner runs them with this interpreter instead.
REFIMPL = "refimpl"
PYTHON = "python"
REFERENCE_ADAPTER = [PYTHON, "-m", "refimpl.conformance.reference.adapter"]

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
    "wire": False,
    "note": "",
}


class ManifestError(ValueError):
    """A peer.json that does not follow the format."""


@dataclass(frozen=True)
class Known:
    """A finding the peer's maintainers acknowledge (peer.json ``known``), like a
    sanitizer's suppression: still reported, marked known; one that no check finds is
    stale."""

    signature: str
    note: str
    upstream: str = ""


@dataclass(frozen=True)
class Check:
    """One seeded ``refimpl conform`` run of a peer and the verdict pinned for it:
    ``expect`` is the signatures of every finding (a tuple, empty for a pass), or in the
    older form the first finding's verdict (``pass``, an invariant ID, ``difference``)."""

    component: str
    seed: int
    expect: str | tuple[str, ...]
    flags: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    budget: float = 300
    shrink_budget: float = 60
    max_examples: int = 300
    timeout: float = 10
    exact: bool = False
    #: ``refimpl conform --wire``: the informer over HTTP (docs/wire.md); its adapter
    #: command takes the check's ``flags`` (``--wire`` for the adapters that have one).
    wire: bool = False
    #: Free text shown with the check in docs/peers.md (why this seed, what it shows).
    note: str = ""

    def conform_options(self) -> list[str]:
        """The ``refimpl conform`` options of this check (before ``--``)."""
        if self.wire:  # a seeded plan, no search: the budgets do not apply
            wire = ["--component", "informer", "--wire", "--seed", str(self.seed)]
            return [
                *wire,
                "--shrink-budget",
                _num(self.shrink_budget),
                "--timeout",
                _num(self.timeout),
            ]
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

    def expect_text(self) -> str:
        """The pin as docs/peers.md shows it."""
        if isinstance(self.expect, str):
            return self.expect
        return ", ".join(self.expect) or "pass"

    def matches(self, verdict: str, signatures: Sequence[str]) -> bool:
        """Whether a run is as pinned: its findings' signatures, or (the older pin) its
        first finding's verdict. An inconclusive search never is."""
        if isinstance(self.expect, str):
            return verdict == self.expect
        if not signatures:  # a run that ended before any result (exit 3, ...) is no pass
            return verdict == "pass" and not self.expect
        return verdict != "inconclusive" and sorted(signatures) == sorted(self.expect)

    def variant(self) -> str:
        """What sets this check apart from a plain seeded run, for tables."""
        parts = [*(["wire"] if self.wire else []), f"seed {self.seed}", *self.flags]
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
    #: The findings its maintainers acknowledge (each check runs with ``--known``).
    known: tuple[Known, ...] = ()

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
                out.append(os.path.abspath(path) if absolute else relative(path, root))
            else:
                out.append(arg)
        return [*out, *flags]

    def traces(self) -> list[Path]:
        return sorted((self.folder / "traces").glob("*.jsonl"))


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def relative(path: Path, root: Path) -> str:
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
    expect = _expect(values.get("expect"), component, f"{where}.expect")
    max_examples = values["max_examples"]
    if isinstance(max_examples, bool) or not isinstance(max_examples, int) or max_examples < 1:
        raise ManifestError(f"{where}.max_examples must be an integer >= 1")
    if not isinstance(values["exact"], bool):
        raise ManifestError(f"{where}.exact must be true or false")
    if not isinstance(values["note"], str):
        raise ManifestError(f"{where}.note must be a string")
    _check_wire(values, component, where)
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
        wire=values["wire"],
        note=values["note"],
    )


def _check_wire(values: dict[str, Any], component: str, where: str) -> None:
    """A wire check runs the informer's seeded wire plan: no search options apply."""
    if not isinstance(values["wire"], bool):
        raise ManifestError(f"{where}.wire must be true or false")
    if not values["wire"]:
        return
    if component != "informer":
        raise ManifestError(f"{where}: a wire check is an informer check")
    if values["skip"] or values["options"] or values["exact"]:
        raise ManifestError(f"{where}: a wire check takes no skip, options or exact")


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
        known=_known(raw.get("known", []), f"{path}: 'known'"),
    )


def _signature(value: Any, where: str, component: str | None = None) -> str:
    """A finding's signature, ``component/what/method`` (search/config.py, Failure)."""
    parts = value.split("/") if isinstance(value, str) else []
    if len(parts) != 3 or not all(parts) or parts[0] not in COMPONENTS:
        raise ManifestError(
            f"{where}: {value!r} is not a signature component/what/method "
            "(as the report prints it, e.g. informer/INF-3/list_reply)"
        )
    if component is not None and parts[0] != component:
        raise ManifestError(f"{where}: {value!r} is not a finding of the {component} check")
    return str(value)


def _expect(value: Any, component: str, where: str) -> str | tuple[str, ...]:
    if isinstance(value, str) and value:
        return value
    if not isinstance(value, list):
        raise ManifestError(
            f"{where} must be a list of finding signatures (component/what/method; [] for "
            "a pass), or one verdict: 'pass', 'difference' or an invariant ID"
        )
    signatures = tuple(_signature(v, f"{where}[{n}]", component) for n, v in enumerate(value))
    if len(set(signatures)) != len(signatures):
        raise ManifestError(f"{where}: a signature is listed twice")
    return signatures


def _known(raw: Any, where: str) -> tuple[Known, ...]:
    if not isinstance(raw, list):
        raise ManifestError(f"{where} must be a list of {{signature, note, upstream}}")
    known: list[Known] = []
    for n, entry in enumerate(raw):
        at = f"{where}[{n}]"
        if not isinstance(entry, dict):
            raise ManifestError(f"{at} must be an object {{signature, note, upstream}}")
        unknown = set(entry) - {"signature", "note", "upstream"}
        if unknown:
            raise ManifestError(f"{at}: unknown field(s) {', '.join(sorted(unknown))}")
        signature = _signature(entry.get("signature"), f"{at}.signature")
        note = entry.get("note")
        if not isinstance(note, str) or not note.strip():
            raise ManifestError(f"{at}.note must be a non-empty string (why it is acknowledged)")
        upstream = entry.get("upstream", "")
        if not isinstance(upstream, str) or (
            upstream and not upstream.startswith(("https://", "http://"))
        ):
            raise ManifestError(f"{at}.upstream must be a URL (http:// or https://)")
        if any(k.signature == signature for k in known):
            raise ManifestError(f"{at}: {signature} is acknowledged twice")
        known.append(Known(signature, note.strip(), upstream))
    return tuple(known)


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
    replay = [REFIMPL, "conform", "--replay", relative(trace, root), "--timeout", "10", "--"]
    peer = [*replay, *manifest.adapter_command(root, head.get("adapter_args", []))]
    return peer, [*replay, *REFERENCE_ADAPTER]


def trace_header(path: Path) -> dict[str, Any]:
    """A pinned trace's first line, checked: what it ``expect``s, its ``adapter_args``."""
    with path.open(encoding="utf-8") as fh:
        head = json.loads(fh.readline())
    if not isinstance(head, dict) or "conform_trace" not in head:
        raise ManifestError(f"{path}: the first line is not a conform trace header")
    if not isinstance(head.get("expect"), str) or not head["expect"]:
        raise ManifestError(f"{path}: the header needs a non-empty 'expect'")
    if not isinstance(head.get("adapter_args", []), list):
        raise ManifestError(f"{path}: the header's 'adapter_args' must be a list")
    return head
