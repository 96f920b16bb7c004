"""``refimpl conform --component informer --wire -- ADAPTER``: the informer over HTTP.

The harness owns a :class:`~refimpl.wire.server.WireServer` for the run and hands the
adapter its kubeconfig on ``start`` (docs/protocol.md, "Wire mode"); the adapter's own
informer lists and watches it through its library's REST client. The harness then
carries out a seeded plan of server writes (create, update, delete of a few ConfigMaps)
and wire faults (``WireServer.inject``), polling the adapter's observation between
steps, and waits over real time until the adapter's cache equals the server's state or
the quiescence bound passes. Checked (docs/invariants.md IDs, as the scripted informer
checks them): INF-1 and INF-2 on every handler call, INF-8 (nothing invented), FIFO-7
(``has_synced`` never goes back, true once converged), REF-1 and REF-3 on the requests
the server saw (reflector_checks.py) and INF-3 (the cache converges to
the server's state and every handler's view to the cache; past the bound this is a
liveness finding with the time waited). An adapter that stops answering makes the run
inconclusive (exit 4), never a pass or a violation. The same seed gives the same plan;
what the adapter's requests meet depends on timing, so each finding's plan is shrunk
by re-running shorter plans (shrink.py, results.py) and reported with it; a plan file
(``--replay``) runs instead of the seed's plan. Refines no TLA+ module.
"""

from __future__ import annotations

import contextlib
import random
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

import attrs

from refimpl.conformance.process import AdapterFailure, AdapterHung, AdapterProcess
from refimpl.conformance.search.informer_invariants import InformerChecker, state_diff
from refimpl.conformance.wire.reflector_checks import reflector_findings
from refimpl.conformance.wire.results import (
    RunPlan,
    WireFinding,
    distinct,
    label_for,
    results_json,
    shrink_findings,
    write_results,
)
from refimpl.conformance.wire.shrink import NAMES, Step, show_step, write_plan
from refimpl.meta import Object
from refimpl.usage import EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_NOT_RUN, EXIT_OK
from refimpl.wire.cli import write_kubeconfig
from refimpl.wire.server import WireServer
from refimpl.wire.tls import TlsUnavailable, make_certificates, server_context

__all__ = ["FAULTS", "NAMES", "QUIESCENCE_SECONDS", "WireRun", "plan", "run_wire", "serving"]

NAMESPACE = "default"
#: The faults drawn, as ``WireServer.inject`` requests (docs/protocol.md, "Wire faults").
FAULTS: tuple[dict[str, Any], ...] = (
    {"op": "watch_end", "target": "open"},
    {"op": "watch_cut", "target": "open"},
    {"op": "watch_cut", "target": "open", "mid_line": True},
    {"op": "watch_partial_line", "target": "open"},
    {"op": "watch_error", "target": "open", "as": "event", "code": 410},
    {"op": "watch_error", "code": 500},
    {"op": "list_error", "code": 500},
    {"op": "compact"},
)
#: Default seconds to wait for convergence; an adapter may declare its own
#: (``quiescence_seconds`` in its informer capabilities), at most :data:`MAX_QUIESCENCE`.
QUIESCENCE_SECONDS = 10.0
MAX_QUIESCENCE = 60.0
#: The report's width (the CLI's lines stay within 100 columns).
WIDTH = 100
#: Seconds between two observations while waiting.
POLL = 0.05


@attrs.frozen
class WireRun:
    """One wire-mode run's settings (``refimpl conform``'s, as far as they apply)."""

    command: list[str]
    seed: int
    steps: int = 30
    timeout: float = 5.0
    startup_timeout: float = 20.0
    log: TextIO | None = None
    #: ``--json``: where the results go (refimpl/conformance/wire/results.py).
    json: str | None = None
    #: ``--known``: acknowledged signatures -> their notes.
    known: dict[str, str] = attrs.field(factory=dict)
    #: ``--client-go``: client-go's adapter command (empty: do not ask it).
    client_go: list[str] = attrs.field(factory=list)
    #: ``--shrink-budget``: seconds to shrink each finding's plan (0: do not shrink).
    shrink_budget: float = 0.0
    #: ``--save``: where the findings' plans go (shrink.py's plan files).
    save: str | None = None
    #: ``--replay``: the steps of a plan file, run instead of the seed's plan.
    plan: tuple[dict[str, Any], ...] | None = None


def plan(seed: int, steps: int) -> list[dict[str, Any]]:
    """The steps of a run: ``{"write": "create"|"update"|"delete", "name": N}`` or
    ``{"fault": REQUEST}`` each, then a pause (``"pause"``, seconds). A function of
    ``seed`` and ``steps`` alone."""
    rng = random.Random(seed)
    present: set[str] = set()
    out: list[dict[str, Any]] = []
    for _ in range(steps):
        step: dict[str, Any]
        if rng.random() < 0.25:
            step = {"fault": dict(rng.choice(FAULTS))}
        else:
            name = rng.choice(NAMES)
            kind = rng.choice(("update", "delete")) if name in present else "create"
            (present.discard if kind == "delete" else present.add)(name)
            step = {"write": kind, "name": name}
        step["pause"] = round(rng.uniform(0.0, 0.05), 3)
        out.append(step)
    return out


class _Run:
    """The server, the adapter and the checks of one run."""

    def __init__(self, settings: WireRun, server: WireServer, adapter: AdapterProcess):
        self.settings = settings
        self.server = server
        self.adapter = adapter
        self.checker = InformerChecker()
        self.findings: list[str] = []
        self.calls_checked = 0
        self.synced = False
        #: The adapter's ``hello`` result.
        self.hello: dict[str, Any] = {}
        #: Seconds the convergence took (None: not reached).
        self.waited: float | None = None
        #: key -> the resourceVersions of its deletions on the server.
        self.deletions: dict[str, list[int]] = {}

    def call(self, method: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        request = {"op": "call", "instance": "i", "method": method, "args": args or {}}
        self.checker.record_request(request)  # handlers added, start
        response = self.adapter.request(request, self.settings.timeout)
        if "error" in response:
            raise AdapterFailure(f"{method} answered error: {response['error']}")
        result = response["result"]
        self._check(result)
        return dict(result)

    def _check(self, result: Any) -> None:
        if not isinstance(result, dict) or not isinstance(result.get("calls"), list):
            raise AdapterFailure(f"not an observation: {result!r}"[:300])
        for call in result["calls"]:
            self.findings.extend(self.checker.check_call(self._lagged(call)))
            self.calls_checked += 1
        synced = result.get("has_synced") is True
        if self.synced and not synced:
            self.findings.append("FIFO-7 sync is monotone: has_synced went back to false")
        self.synced = self.synced or synced

    def _lagged(self, call: Any) -> Any:
        """A listener may lag behind the cache (docs/protocol.md, "Against the
        reference"): an add or update that finds its key gone, deleted on the server
        after its resourceVersion, met the cache of a later moment, which INF-1 allows;
        it is checked as if it had found its own object."""
        if not isinstance(call, dict) or call.get("kind") == "delete" or call.get("cache"):
            return call
        rv = str(call.get("rv", ""))
        later = [
            d for d in self.deletions.get(str(call.get("key")), []) if rv.isdigit() and d > int(rv)
        ]
        return {**call, "cache": rv} if later else call

    def give(self, obj: Object) -> None:
        """What the server wrote: every resourceVersion a call may carry (INF-8)."""
        key = f"{obj.namespace}/{obj.name}"
        self.checker.given_rvs.setdefault(key, set()).add(obj.resource_version)

    def step(self, step: dict[str, Any], index: int) -> None:
        if "fault" in step:
            self.server.inject(step["fault"])
            return
        api, name = self.server.api, step["name"]
        if step["write"] == "create":
            self.give(api.create(Object(name=name, namespace=NAMESPACE)))
        elif step["write"] == "update":
            current = api.get(NAMESPACE, name)
            self.give(api.update(current.evolve(labels={"step": str(index)})))
        else:
            gone = api.delete_key(f"{NAMESPACE}/{name}")
            self.give(gone)
            self.deletions.setdefault(f"{NAMESPACE}/{name}", []).append(int(gone.resource_version))

    def server_state(self) -> dict[str, int]:
        return {
            f"{o.namespace}/{o.name}": int(o.resource_version) for o in self.server.api.list().items
        }

    def converge(self, bound: float) -> float | None:
        """Poll until the cache and every handler's view equal the server's state;
        the seconds it took, or None once ``bound`` passed (then a finding says why)."""
        began = time.monotonic()
        while True:
            result = self.call("state")
            want = self.server_state()
            cache = {f"{o['namespace']}/{o['name']}": int(o["rv"]) for o in result["cache"]}
            views = self.checker.views
            waited = time.monotonic() - began
            if cache == want and all(v == want for v in views.values()) and self.synced:
                return waited
            if waited >= bound:
                self.findings.append(_not_converged(waited, cache, want, views, self.synced))
                return None
            time.sleep(POLL)


def _not_converged(
    waited: float,
    cache: dict[str, int],
    want: dict[str, int],
    views: dict[str, dict[str, int]],
    synced: bool,
) -> str:
    head = f"INF-3 convergence (liveness): after {waited:.1f} s of quiet"
    if cache != want:
        return f"{head} the cache is not the server's state: {state_diff(cache, want)}"
    for handler, view in sorted(views.items()):
        if view != want:
            return f"{head} {handler} saw {state_diff(view, want)} (a lost notification)"
    return f"{head} has_synced is {synced} with the whole state cached"


def _say_wrapped(say: Callable[[str], None], text: str, indent: str = "") -> None:
    """Each line of ``text`` within :data:`WIDTH` columns."""
    for line in text.splitlines():
        for part in textwrap.wrap(
            line, WIDTH, initial_indent=indent, subsequent_indent=indent + "  "
        ):
            say(part)


@attrs.frozen
class _Hello:
    """What the handshake settled: the adapter's hello, its quiescence bound, and
    whether its client needs HTTPS (``"tls": true``)."""

    result: dict[str, Any]
    bound: float
    tls: bool


def _handshake(adapter: AdapterProcess, settings: WireRun) -> _Hello | str:
    """What the adapter declares, or why it cannot run in wire mode."""
    response = adapter.request({"op": "hello", "protocol": 2}, settings.startup_timeout)
    if "error" in response:
        return f"hello answered error: {response['error']}"
    informer = (response["result"].get("components") or {}).get("informer")
    if not isinstance(informer, dict) or informer.get("wire") is not True:
        return 'the adapter\'s informer does not declare "wire": true'
    bound = informer.get("quiescence_seconds", QUIESCENCE_SECONDS)
    if not isinstance(bound, (int, float)) or not 0 < bound <= MAX_QUIESCENCE:
        return f"quiescence_seconds must be in (0, {MAX_QUIESCENCE:g}], got {bound!r}"
    tls = informer.get("tls", False)
    if not isinstance(tls, bool):
        return f'"tls" must be true or false, got {tls!r}'
    return _Hello(dict(response["result"]), float(bound), tls)


@contextlib.contextmanager
def serving(folder: Path, tls: bool) -> Iterator[tuple[WireServer, Path]]:
    """A recording server for one run (HTTPS with a CA made for it when ``tls``) and
    the kubeconfig for it."""
    context, ca = None, None
    if tls:
        certificates = make_certificates(folder)
        context, ca = server_context(certificates), certificates.ca.read_bytes()
    with WireServer(record=True, tls=context) as server:
        kubeconfig = folder / "kubeconfig"
        write_kubeconfig(kubeconfig, server.url, server.token, ca)
        yield server, kubeconfig


def run_wire(settings: WireRun, say: Callable[[str], None] = print) -> int:
    """Run one wire-mode check and report it; returns the exit status (0 pass, 1 a
    finding, 2 the adapter failed, 4 inconclusive)."""
    steps = (
        list(settings.plan) if settings.plan is not None else plan(settings.seed, settings.steps)
    )
    status, run = _run_once(settings, say, steps)
    findings = [
        attrs.evolve(f, steps=tuple(steps))
        for f in distinct(run.findings if run else [], settings.known)
    ]
    if findings and settings.shrink_budget > 0:
        runner = _quiet(settings, settings.command)
        findings = shrink_findings(findings, steps, runner, settings.shrink_budget, say)
    if findings and settings.client_go:
        findings = label_for(findings, _quiet(settings, [*settings.client_go, "--wire"]))
    note = ""
    if status == EXIT_FAILED:
        assert run is not None
        say(f"informer (wire): FAIL ({run.calls_checked} handler calls checked)")
        for n, found in enumerate(findings, 1):
            _report(found, len(steps), say)
            _save(settings, found, n, say)
        if settings.plan is None:
            say(f"  the whole plan again: --wire --seed {settings.seed} --steps {settings.steps}")
    elif status == EXIT_OK and run is not None:
        note = (
            f"converged {run.waited or 0.0:.1f} s after the last step; "
            f"{run.calls_checked} handler calls checked"
        )
        say(f"informer (wire): PASS ({note})")
    hello = run.hello if run is not None else {}
    write_results(settings.json, results_json(hello, settings.seed, status, findings, note))
    return status


def _report(found: WireFinding, planned: int, say: Callable[[str], None]) -> None:
    more = f" (and {found.count - 1} more like it)" if found.count > 1 else ""
    _say_wrapped(say, found.message + more, "  ")
    marks = [f"known: {found.known}" if found.known is not None else "new"]
    if found.client_go is not None:
        marks.append(f"client-go on this plan: {found.client_go}")
    _say_wrapped(say, f"[{found.signature}: {'; '.join(marks)}]", "    ")
    if found.tries:
        how = "ended by itself" if found.finished else "stopped at the shrink budget"
        head = f"shrunk to {len(found.steps)} of {planned} steps ({found.tries} runs, {how}; "
        head += "each kept plan gave the finding once):"
    else:
        head = f"the plan ({len(found.steps)} steps):"
    _say_wrapped(say, head + " " + " · ".join(show_step(s) for s in found.steps), "    ")


def _save(settings: WireRun, found: WireFinding, n: int, say: Callable[[str], None]) -> None:
    """``--save FILE``: the first finding's plan in FILE, the n-th's in FILE-n."""
    if settings.save is None:
        return
    stem, dot, ext = settings.save.rpartition(".")
    path = settings.save if n == 1 else (f"{stem}-{n}.{ext}" if dot else f"{settings.save}-{n}")
    write_plan(path, settings.seed, found.steps)
    say(f"    saved: {path} (refimpl conform --wire --replay {path} -- ADAPTER)")


def _quiet(settings: WireRun, command: list[str]) -> RunPlan:
    """Runs a plan against ``command`` with a fresh server, reporting nothing."""

    def run_plan(steps: list[Step]) -> tuple[int, list[str]]:
        quiet = attrs.evolve(
            settings,
            command=command,
            log=None,
            json=None,
            save=None,
            known={},
            client_go=[],
            shrink_budget=0.0,
        )
        status, run = _run_once(quiet, lambda _line: None, steps)
        return status, run.findings if run is not None else []

    return run_plan


def _run_once(
    settings: WireRun, say: Callable[[str], None], steps: list[dict[str, Any]]
) -> tuple[int, _Run | None]:
    """One run of ``steps`` against a fresh server: its exit status and what it observed
    (None when the adapter did not get as far as its handshake)."""
    faults = sum("fault" in s for s in steps)
    origin = "the plan file's" if settings.plan is not None else f"seed {settings.seed}:"
    say(f"wire: {origin} {len(steps) - faults} writes, {faults} faults")
    adapter = AdapterProcess(settings.command, timeout=settings.timeout, log=settings.log)
    run: _Run | None = None
    try:
        adapter.start()
        hello = _handshake(adapter, settings)
        if isinstance(hello, str):
            say(f"informer (wire): ADAPTER FAILURE: {hello}")
            return EXIT_NOT_RUN, None
        with (
            tempfile.TemporaryDirectory(prefix="refimpl-wire-") as folder,
            serving(Path(folder), hello.tls) as (server, kubeconfig),
        ):
            run = _Run(settings, server, adapter)
            run.hello = hello.result
            try:
                return _drive(run, steps, str(kubeconfig), hello.bound), run
            finally:
                adapter.close()  # before the server stops: no reconnecting client
    except AdapterHung as exc:
        _say_wrapped(say, f"informer (wire): INCONCLUSIVE: {exc.describe()}")
        return EXIT_INCONCLUSIVE, run
    except AdapterFailure as exc:
        _say_wrapped(say, f"informer (wire): ADAPTER FAILURE: {exc.describe()}")
        return EXIT_NOT_RUN, run
    except TlsUnavailable as exc:
        say(f"informer (wire): NOT RUN: the adapter asks for TLS and {exc}")
        return EXIT_NOT_RUN, run
    finally:
        adapter.close()


def _drive(run: _Run, steps: list[dict[str, Any]], kubeconfig: str, bound: float) -> int:
    run.adapter.request(
        {"op": "create", "instance": "i", "component": "informer", "options": {"resync": 0}},
        run.settings.timeout,
    )
    run.call("add_handler", {"name": "h0", "raises": False, "resync": None})
    run.call("start", {"kubeconfig": kubeconfig})
    for index, step in enumerate(steps):
        run.step(step, index)
        time.sleep(step["pause"])
        run.call("state")
    run.waited = run.converge(bound)
    run.findings.extend(reflector_findings(list(run.server.history)))
    return EXIT_FAILED if run.findings else EXIT_OK
