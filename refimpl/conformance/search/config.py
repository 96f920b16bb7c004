"""What a conformance run is asked and what it gives back: :class:`Config`, the trace
:class:`Step`, :class:`Failure` and :class:`ComponentResult`, the exit statuses, and the
exceptions that end an example or a run. Imports nothing else of the search, so every
other module of it may import this one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from refimpl.conformance.process import AdapterFailure

__all__ = [
    "BUDGET_ENDED",
    "EXIT_ADAPTER",
    "EXIT_DISAGREE",
    "EXIT_PASS",
    "EXIT_USAGE",
    "INVARIANT_ID",
    "AbortRun",
    "AdapterHandshakeError",
    "BudgetExhausted",
    "ComponentResult",
    "Config",
    "Failure",
    "FailureKind",
    "HarnessError",
    "Mismatch",
    "ResultStatus",
    "SetAside",
    "Step",
]

EXIT_PASS, EXIT_DISAGREE, EXIT_ADAPTER, EXIT_USAGE = 0, 1, 2, 3
#: The summary note of a component whose search the budget ended without a finding.
BUDGET_ENDED = "the budget ended the search before --max-examples"


@dataclass
class Step:
    """One request and both sides' answers (``adapter`` is None if it failed to answer)."""

    request: dict[str, Any]
    reference: dict[str, Any] | None
    adapter: dict[str, Any] | None


class BudgetExhausted(KeyboardInterrupt):
    """Stops Hypothesis between examples (it lets KeyboardInterrupt through unchanged)."""


class AbortRun(KeyboardInterrupt):
    """Stops Hypothesis at once: the adapter hung, or cannot even be restarted."""


class Mismatch(AssertionError):
    """The example failed; the details are in ``RunContext.best``."""


class SetAside(Exception):
    """The example failed, but not with the finding the search is after: its signature
    is a finding already made, or (while one is being shrunk) another one. The example
    ends there as if it passed and the search goes on (``SearchExample`` catches it)."""


#: What can be wrong with the store a FIFO's pops build (search/invariants.py,
#: ``PoppedStore.faults``), worst first: an object kept after its delete (a ghost), an
#: object missing, an object at an older version.
CONSEQUENCE_KINDS = ("ghost", "lacks", "stale")

#: What a failure is: the adapter's answer differs from the reference's, the adapter
#: broke an invariant, or the adapter itself failed (crashed, hung, spoke garbage).
FailureKind = Literal["disagreement", "invariant", "adapter"]
#: An invariant ID as docs/invariants.md writes them (``INF-3``, ``FIFO-7``, ``REF-1``).
INVARIANT_ID = re.compile(r"\b[A-Z]{2,5}-\d+\b")
#: How a component's run ended.
ResultStatus = Literal["pass", "fail", "adapter failure", "skipped"]


@dataclass
class Failure:
    """A failing example: its trace up to the failing step and what failed."""

    kind: FailureKind
    component: str
    steps: list[Step]
    message: str
    example: int
    found_after: float
    adapter_error: AdapterFailure | None = None
    #: For a FIFO whose pops feed a store as an informer's do: what the difference
    #: leads to once the FIFO is drained (a ghost, ...), or "".
    consequence: str = ""
    #: The kinds of what is wrong in that store (``ghost``, ``lacks``, ``stale``:
    #: search/invariants.py, ``PoppedStore.faults``); empty without a consequence.
    consequence_kinds: tuple[str, ...] = ()
    #: The note of a peer's acknowledgement when :attr:`signature` is in
    #: ``Config.known``; None for a new finding.
    known: str | None = None
    #: What client-go does with the same trace (search/triage.py's labels), or None
    #: when it was not asked.
    client_go: str | None = None
    #: What replaying its shrunk trace on a freshly started adapter showed
    #: (search/replay.py, ``confirm_replay``: done once, for the triage and the report),
    #: or "" before that.
    replay: str = ""
    #: Why its shrinking did not end by itself ("shrinking stopped at the shrink
    #: budget", ...), or "".
    shrink_note: str = ""

    @property
    def exit_status(self) -> int:
        return EXIT_ADAPTER if self.kind == "adapter" else EXIT_DISAGREE

    @property
    def signature(self) -> str:
        """What decides whether two failures are one finding: ``component/what/method``,
        where *what* is the first invariant ID the message names (docs/invariants.md),
        ``differs`` for a disagreement with the reference or ``adapter`` for an adapter
        that failed, and *method* is the request of the failing step. A FIFO's
        disagreement that leaves the store built from its pops wrong also names the
        worst of what is wrong there (:data:`CONSEQUENCE_KINDS`: ``differs:ghost``,
        ``differs:lacks``, ``differs:stale``): every wrong pop fails at ``pop_nowait``,
        and without it a lost re-add and a ghost would be one finding. Peers' manifests
        acknowledge findings by it (``known`` in peer.json)."""
        if self.kind == "invariant":
            found = INVARIANT_ID.search(self.message)
            what = found.group(0) if found else "invariant"
        elif self.kind == "disagreement":
            worst = [k for k in CONSEQUENCE_KINDS if k in self.consequence_kinds]
            what = f"differs:{worst[0]}" if worst else "differs"
        else:
            what = "adapter"
        method = str(self.steps[-1].request.get("method", "-")) if self.steps else "-"
        return f"{self.component}/{what}/{method}"

    @property
    def family(self) -> str:
        """The :attr:`signature` without the failing method (``component/what``): what
        shrinking keeps. A shorter trace may show the same broken invariant or difference
        at another step, so a finding's signature is the one its shrunk trace has."""
        return self.signature.rsplit("/", 1)[0]

    @property
    def unclassified(self) -> bool:
        """A disagreement without an end-to-end consequence: for a FIFO, perhaps one a
        longer or shorter trace shows as a ghost or a lost object (``differs:KIND``);
        shrinking may turn it into one, and once one is found at its method it is set
        aside (search/session.py)."""
        return self.kind == "disagreement" and not self.consequence_kinds


@dataclass
class Config:
    """What ``refimpl conform`` was asked (one field per command-line option)."""

    command: list[str]
    components: list[str] = field(default_factory=list)
    budget: float = 60.0
    shrink_budget: float = 30.0
    seed: int | None = None
    max_examples: int = 100_000
    steps: int = 30
    timeout: float = 5.0
    startup_timeout: float = 20.0
    misuse: bool = False
    #: The adapter is client-go itself: compare the orders client-go fixes exactly
    #: (equal delay-heap deadlines), whether or not its hello declares heap_order.
    exact: bool = False
    shrink: bool = True
    #: Skip Hypothesis' own shrinking; only replay-based minimize() (fast, coarser).
    quick_shrink: bool = False
    keep_going: bool = False
    restart_each: bool = False
    progress: bool | None = None  # None: only when stderr is a terminal
    save: str | None = None
    replay: str | None = None
    #: Methods never generated (to look past a difference already known).
    skip: list[str] = field(default_factory=list)
    #: Write every protocol line sent and received to this file.
    log: str | None = None
    #: Create options fixed for every example (e.g. {"known_objects": False}).
    options: dict[str, Any] = field(default_factory=dict)
    cwd: str | None = None
    #: Distinct findings (by :attr:`Failure.signature`) a component's search collects
    #: before it stops.
    max_findings: int = 5
    #: Acknowledged findings: signature -> note (peer.json ``known``, ``--known``).
    known: dict[str, str] = field(default_factory=dict)
    #: client-go's adapter command: each finding's trace is replayed on it and labelled
    #: (search/triage.py); empty: not asked.
    client_go: list[str] = field(default_factory=list)
    #: Write the components, their statuses and findings as JSON to this file.
    json: str | None = None
    #: What the piece generators send: ``realistic`` (an honest server's history,
    #: search/history.py) or ``any`` (API-legal but unusual sequences).
    inputs: Literal["realistic", "any"] = "realistic"
    #: The client-go release line the reference informer follows (``--release``; None:
    #: the adapter's declared ``release``, else the newest; refimpl/eras.py).
    release: str | None = None


@dataclass
class ComponentResult:
    """How one component's search ended, for the summary line and the report."""

    component: str
    status: ResultStatus
    examples: int = 0
    steps: int = 0
    elapsed: float = 0.0
    failure: Failure | None = None
    #: Every distinct finding of the search, each shrunk on its own, in the order found
    #: (``failure`` is the first of them).
    findings: list[Failure] = field(default_factory=list)
    note: str = ""
    #: What the run left out (narrowed or fixed options, undeclared methods, ...).
    untested: list[str] = field(default_factory=list)


class HarnessError(Exception):
    """The harness itself (or Hypothesis) failed: a bug to report, not a verdict."""


class AdapterHandshakeError(Exception):
    """The adapter started but refused or garbled the handshake (exit status 2)."""

    def describe(self) -> str:
        return str(self)
