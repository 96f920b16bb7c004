"""Triage against client-go: what client-go does with a finding's shrunk trace.

:func:`triage_result` takes a component's findings once they are shrunk, marks each one
the run acknowledges (``Config.known``: :attr:`Failure.known`) and sets
:attr:`Failure.client_go` to one of :data:`LABELS`:

- :data:`NOT_REPRODUCED`: the peer's own replay, on a freshly started adapter, did not
  give the finding's signature again (another failure, or none): the trace is not
  evidence, so client-go is not asked;
- :data:`SAME`: client-go's adapter fails the trace with the same signature, so the peer
  shares the behaviour with client-go (where refimpl deviates from client-go on purpose,
  the label names the deviation, :data:`DEVIATIONS`);
- :data:`DIFFERS`: client-go passes the trace: a bug relative to client-go;
- :data:`NOT_COMPARABLE`: client-go's adapter does not offer the component, does not
  start, or fails the trace differently.

Each replay is :func:`~refimpl.conformance.search.replay.try_trace` on a freshly started
adapter: the peer's own (the run's), and client-go's in a second adapter process
(``--client-go PATH``) started for the call and closed after it.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

from refimpl.conformance.process import AdapterFailure, AdapterHung
from refimpl.conformance.search.config import (
    AdapterHandshakeError,
    ComponentResult,
    Config,
    Failure,
)
from refimpl.conformance.search.outcome import findings_of
from refimpl.conformance.search.replay import REPRODUCES, confirm_replay, try_trace
from refimpl.conformance.search.session import RunContext

__all__ = [
    "DEVIATIONS",
    "DIFFERS",
    "LABELS",
    "NOT_COMPARABLE",
    "NOT_REPRODUCED",
    "SAME",
    "default_client_go",
    "label_of",
    "same_label",
    "triage",
    "triage_result",
]

SAME = "client-go does the same"
DIFFERS = "client-go differs"
NOT_COMPARABLE = "not comparable"
NOT_REPRODUCED = "did not reproduce"
LABELS = (SAME, DIFFERS, NOT_COMPARABLE, NOT_REPRODUCED)

#: Where refimpl departs from client-go on purpose, by ``component/method`` of a
#: difference's signature: a difference client-go shares may be that deviation, not the
#: peer's. docs/conformance.md ("client-go v0.37.2") documents the one kept: RL-4.
DEVIATIONS = {
    "rate_limiter/when": (
        "refimpl deviates here on purpose: its bucket limiter reads the injected clock, "
        "client-go's the wall clock (RL-4, docs/conformance.md)"
    ),
}

#: Where ``make -C adapters/client-go`` leaves client-go's adapter, from the root of a clone.
CLIENT_GO_ADAPTER = Path("adapters") / "client-go" / "bin" / "adapter"


def default_client_go(cwd: str | None = None) -> str | None:
    """client-go's adapter when it is built: in the folder the run starts from, else in
    the clone refimpl runs from; None when neither has it."""
    here = Path(cwd) if cwd is not None else Path.cwd()
    clone = Path(__file__).resolve().parents[3]
    for base in (here, clone):
        path = base / CLIENT_GO_ADAPTER
        if path.is_file() and os.access(path, os.X_OK):
            return str(path.resolve())
    return None


def label_of(text: str) -> str:
    """The label a :attr:`Failure.client_go` text starts with (it may name a deviation)."""
    return next((label for label in LABELS if text.startswith(label)), text)


def same_label(failure: Failure) -> str:
    if failure.kind != "disagreement":
        return SAME
    method = failure.signature.split("/")[-1]
    deviation = DEVIATIONS.get(f"{failure.component}/{method}")
    return f"{SAME}; {deviation}" if deviation else SAME


def _client_go_replay(config: Config, failure: Failure) -> Failure | str | None:
    """client-go's failure of ``failure``'s trace, None if it passes, or a label when it
    cannot be compared."""
    cg_config = Config(
        command=list(config.client_go),
        timeout=config.timeout,
        startup_timeout=config.startup_timeout,
        misuse=config.misuse,
        progress=False,
    )
    ctx = RunContext(cg_config, io.StringIO())
    try:
        hello = ctx.start_adapter()
        if failure.component not in hello.get("components", {}):
            return NOT_COMPARABLE
        ctx.start_component(failure.component, float("inf"))
        return try_trace(ctx, failure.component, [s.request for s in failure.steps])
    except (AdapterFailure, AdapterHandshakeError, OSError):
        return NOT_COMPARABLE
    finally:
        ctx.close()


def triage(ctx: RunContext, failure: Failure) -> str:
    """The label of ``failure`` (see the module docstring); ``ctx`` runs the peer."""
    saved = ctx.shrink_deadline
    # A fresh process, as a maintainer's replay would start; the report prints it too.
    reproduces = confirm_replay(ctx, failure) == REPRODUCES
    ctx.shrink_deadline = saved
    if not reproduces:
        return NOT_REPRODUCED
    found = _client_go_replay(ctx.config, failure)
    if isinstance(found, str):
        return found
    if found is None:
        return DIFFERS
    return same_label(failure) if found.signature == failure.signature else NOT_COMPARABLE


def triage_result(ctx: RunContext, result: ComponentResult) -> None:
    """Mark ``result``'s known findings and, with ``--client-go``, label each one. A hung
    adapter's finding is not replayed (the run was aborted on it)."""
    for failure in findings_of(result):
        failure.known = ctx.config.known.get(failure.signature)
        if not ctx.config.client_go or isinstance(failure.adapter_error, AdapterHung):
            continue
        failure.client_go = triage(ctx, failure)
